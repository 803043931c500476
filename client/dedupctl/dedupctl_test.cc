// Runs the built dedupctl binary (DEDUPCTL_PATH, injected by CMake):
// `normalize` offline, and `url check|peek`, `content check|peek`, `chunks
// check|peek` and `results dedup` against the in-process fake Dedup service
// on 127.0.0.1:<ephemeral>.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/dedupctl/dedupctl_test_util.h"
#include "client/testing/fake_dedup_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::CommandResult;
using ::dedupd::testing::Dedupctl;
using ::dedupd::testing::Lines;
using ::dedupd::testing::MakeTempDir;
using ::dedupd::testing::RemoveTree;
using ::dedupd::testing::RunCommand;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;
using ::testing::StartsWith;

// ------------------------------------------------------------ normalize

TEST(DedupctlNormalizeTest, UrlsFromArguments) {
  CommandResult r = Dedupctl(
      {"normalize", "HTTP://Example.COM:80/a/./b/?utm_source=x&b=2&a=1#top", "https://b.example"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          R"({"url":"HTTP://Example.COM:80/a/./b/?utm_source=x&b=2&a=1#top","normalized":"http://example.com/a/b?a=1&b=2"})",
          R"({"url":"https://b.example","normalized":"https://b.example/"})"));
}

TEST(DedupctlNormalizeTest, UrlsFromStdinOnePerLine) {
  // CRLF line ends, blank and whitespace-only lines, no final newline.
  CommandResult r = Dedupctl({"normalize"},
                             "https://a.example/x\r\n\n  \t\r\nhttps://b.example/Y/\n"
                             "\nhttps://c.example/#frag");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(R"({"url":"https://a.example/x","normalized":"https://a.example/x"})",
                  R"({"url":"https://b.example/Y/","normalized":"https://b.example/Y"})",
                  R"({"url":"https://c.example/#frag","normalized":"https://c.example/"})"));
}

TEST(DedupctlNormalizeTest, EmptyStdinPrintsNothing) {
  CommandResult r = Dedupctl({"normalize"}, "");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, IsEmpty());
}

TEST(DedupctlNormalizeTest, ExplainListsTheRulesThatFired) {
  CommandResult r = Dedupctl(
      {"normalize", "--explain", "https://A.example/x?utm_source=s#frag", "https://a.example/x"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(2));
  EXPECT_THAT(
      lines[0],
      AllOf(
          StartsWith(
              R"({"url":"https://A.example/x?utm_source=s#frag","normalized":"https://a.example/x","rules":[)"),
          HasSubstr(R"("host_lowercased")"), HasSubstr(R"("tracking_params_dropped")"),
          HasSubstr(R"("fragment_dropped")")));
  EXPECT_EQ(lines[1],
            R"({"url":"https://a.example/x","normalized":"https://a.example/x","rules":[]})");

  CommandResult plain = Dedupctl({"normalize", "https://A.example/x#frag"});
  EXPECT_THAT(plain.out, Not(HasSubstr("rules")));
}

TEST(DedupctlNormalizeTest, BaseResolvesRelativeReferences) {
  CommandResult r = Dedupctl({"normalize", "--base", "https://a.example/dir/page", "../x", "y?b=1",
                              "https://other.example/z"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(R"({"url":"../x","normalized":"https://a.example/x"})",
                  R"({"url":"y?b=1","normalized":"https://a.example/dir/y?b=1"})",
                  R"({"url":"https://other.example/z","normalized":"https://other.example/z"})"));

  // The same, with --base=VALUE and the URLs on stdin.
  CommandResult in = Dedupctl({"normalize", "--base=https://a.example/dir/page"}, "../x\n");
  EXPECT_EQ(in.exit_code, 0) << in.err;
  EXPECT_THAT(Lines(in.out), ElementsAre(R"({"url":"../x","normalized":"https://a.example/x"})"));
}

TEST(DedupctlNormalizeTest, RelativeWithoutBaseIsInvalid) {
  CommandResult r = Dedupctl({"normalize", "../x"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(Lines(r.out), ElementsAre(StartsWith(R"({"url":"../x","error":")")));
}

TEST(DedupctlNormalizeTest, ConfigFileAppliesHostPolicy) {
  const std::string dir = MakeTempDir("dedupctl_test_");
  ASSERT_FALSE(dir.empty());
  const std::string path = dir + "/dedupd.conf";
  std::ofstream(path) << "host_rules {\n"
                         "  hosts: \"*.shop.example\"\n"
                         "  allow_params: \"id\"\n"
                         "}\n"
                         "drop_params: \"ref\"\n";
  const std::vector<std::string> urls = {"https://www.shop.example/p?color=red&id=7",
                                         "https://blog.example/p?ref=home&q=1"};

  CommandResult with = Dedupctl({"normalize", "--config", path, urls[0], urls[1]});
  EXPECT_EQ(with.exit_code, 0) << with.err;
  EXPECT_THAT(Lines(with.out),
              ElementsAre(HasSubstr(R"("normalized":"https://www.shop.example/p?id=7")"),
                          HasSubstr(R"("normalized":"https://blog.example/p?q=1")")));

  CommandResult without = Dedupctl({"normalize", urls[0], urls[1]});
  EXPECT_EQ(without.exit_code, 0) << without.err;
  EXPECT_THAT(Lines(without.out),
              ElementsAre(HasSubstr(R"("normalized":"https://www.shop.example/p?color=red&id=7")"),
                          HasSubstr(R"("normalized":"https://blog.example/p?q=1&ref=home")")));

  std::ofstream(dir + "/bad.conf") << "host_rules { no_such_field: 1 }\n";
  CommandResult bad = Dedupctl({"normalize", "--config", dir + "/bad.conf", urls[0]});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out, IsEmpty());
  EXPECT_THAT(Lines(bad.err), ElementsAre(AllOf(StartsWith("dedupctl: "), HasSubstr("bad.conf"))));

  CommandResult missing = Dedupctl({"normalize", "--config", dir + "/missing.conf", urls[0]});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("missing.conf"));
  RemoveTree(dir);
}

TEST(DedupctlNormalizeTest, InvalidUrlExits1WithAnErrorLine) {
  CommandResult r = Dedupctl({"normalize"},
                             "https://ok.example/\nmailto:someone@example.com\n"
                             "https://ok.example/2\n");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_THAT(lines[0], HasSubstr(R"("normalized":)"));
  EXPECT_THAT(lines[1], StartsWith(R"({"url":"mailto:someone@example.com","error":")"));
  EXPECT_THAT(lines[1], Not(HasSubstr("normalized")));
  EXPECT_THAT(lines[2], HasSubstr(R"("normalized":)"));
}

TEST(DedupctlNormalizeTest, BadBytesInInputStillGiveValidJson) {
  // Invalid UTF-8 and a control character: the line reports an error and
  // echoes the input escaped (\ufffd per bad byte, \u00XX for controls).
  CommandResult r = Dedupctl({"normalize"},
                             "https://a.example/\xff\xfe\nhttps://a.example/\x01x\n"
                             "https://a.example/\"q\\\n");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_THAT(lines[0], StartsWith(R"({"url":"https://a.example/\ufffd\ufffd","error":")"));
  EXPECT_THAT(lines[1], StartsWith(R"({"url":"https://a.example/\u0001x","error":")"));
  EXPECT_THAT(lines[2], StartsWith(R"({"url":"https://a.example/\"q\\",)"));
  for (const std::string& line : lines) {
    for (char c : line) {
      EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20) << line;
    }
  }
}

TEST(DedupctlNormalizeTest, OverlongLineIsAnErrorNotAnAllocation) {
  const std::string huge(200 << 10, 'a');
  CommandResult r = Dedupctl({"normalize"}, "https://a.example/" + huge + "\nhttps://b.example/\n");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(2));
  EXPECT_THAT(lines[0], HasSubstr(R"("error":"input line longer than 65536 bytes")"));
  EXPECT_THAT(lines[1], HasSubstr(R"("normalized":"https://b.example/")"));
}

// ----------------------------------------------------------- usage, help

TEST(DedupctlUsageTest, HelpPrintsUsageAndExits0) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"help"},
                                             {"--help"},
                                             {"-h"},
                                             {"normalize", "--help"},
                                             {"url", "check", "--help"},
                                             {"chunks", "peek", "--help"},
                                             {"results", "dedup", "--help"}}) {
    CommandResult r = Dedupctl(args);
    EXPECT_EQ(r.exit_code, 0) << absl::StrJoin(args, " ");
    EXPECT_THAT(r.out, StartsWith("usage: dedupctl"));
  }
}

struct UsageCase {
  const char* name;
  std::vector<std::string> args;
  const char* want;  // in the one-line message
};
void PrintTo(const UsageCase& c, std::ostream* os) { *os << c.name; }

class DedupctlUsageErrorTest : public ::testing::TestWithParam<UsageCase> {};

TEST_P(DedupctlUsageErrorTest, Exits2WithOneLineAndUsage) {
  CommandResult r = Dedupctl(GetParam().args, "https://a.example/\n");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.out, IsEmpty());
  std::vector<std::string> lines = Lines(r.err);
  ASSERT_THAT(lines, Not(IsEmpty()));
  EXPECT_THAT(lines[0], AllOf(StartsWith("dedupctl: "), HasSubstr(GetParam().want)));
  ASSERT_THAT(lines, SizeIs(::testing::Gt(1)));
  EXPECT_THAT(lines[1], StartsWith("usage: dedupctl"));
}

INSTANTIATE_TEST_SUITE_P(
    Table, DedupctlUsageErrorTest,
    ::testing::Values(
        UsageCase{"NoCommand", {}, "missing command"},
        UsageCase{"UnknownCommand", {"frobnicate"}, "unknown command"},
        UsageCase{"UnknownFlag", {"normalize", "--frob"}, "--frob"},
        UsageCase{"SingleDashFlag", {"normalize", "-x"}, "-x"},
        UsageCase{"FlagOfOtherCommand", {"normalize", "--server", "a:1"}, "--server"},
        UsageCase{"MissingValue", {"normalize", "--config"}, "--config needs a value"},
        UsageCase{"ExplainWithValue", {"normalize", "--explain=yes"}, "--explain"},
        UsageCase{"BadBase", {"normalize", "--base", "../rel", "x"}, "--base"},
        UsageCase{"UrlWithoutSubcommand", {"url"}, "check or peek"},
        UsageCase{"UrlUnknownSubcommand", {"url", "claim"}, "claim"},
        UsageCase{"MissingServer", {"url", "check", "https://a.example/"}, "--server"},
        UsageCase{
            "BatchZero", {"url", "check", "--server", "127.0.0.1:1", "--batch", "0"}, "--batch"},
        UsageCase{
            "BatchNotANumber", {"url", "peek", "--server=127.0.0.1:1", "--batch=ten"}, "--batch"},
        UsageCase{"BatchTooLarge",
                  {"url", "check", "--server", "127.0.0.1:1", "--batch", "100001"},
                  "--batch"},
        UsageCase{"DeadlineNegative",
                  {"url", "check", "--server", "127.0.0.1:1", "--deadline", "-1"},
                  "--deadline"},
        UsageCase{"DeadlineNotANumber",
                  {"url", "check", "--server", "127.0.0.1:1", "--deadline", "soon"},
                  "--deadline"},
        UsageCase{"ContentWithoutSubcommand", {"content"}, "check or peek"},
        UsageCase{"ContentMissingServer", {"content", "check"}, "--server"},
        UsageCase{"ContentTextFileWithoutUrl",
                  {"content", "check", "--server", "127.0.0.1:1", "--text_file", "t.txt"},
                  "need --url"},
        UsageCase{"ContentUrlAndFile",
                  {"content", "peek", "--server", "127.0.0.1:1", "--url", "https://a.example/",
                   "docs.jsonl"},
                  "FILE"},
        UsageCase{"ContentTwoFiles",
                  {"content", "check", "--server", "127.0.0.1:1", "a", "b"},
                  "at most one FILE"},
        UsageCase{"ContentBadDistance",
                  {"content", "check", "--server", "127.0.0.1:1", "--max_hamming_distance", "-1"},
                  "--max_hamming_distance"},
        UsageCase{"ContentJaccardAboveOne",
                  {"content", "check", "--server", "127.0.0.1:1", "--min_jaccard", "1.5"},
                  "--min_jaccard must be a number in (0, 1]"},
        UsageCase{"ContentJaccardNotANumber",
                  {"content", "peek", "--server", "127.0.0.1:1", "--min_jaccard", "high"},
                  "--min_jaccard must be a number in (0, 1]"},
        UsageCase{"ContentUrlFlagOnUrlCommand",
                  {"url", "check", "--server", "127.0.0.1:1", "--url", "x"},
                  "--url"},
        UsageCase{"ChunksWithoutSubcommand", {"chunks"}, "check or peek"},
        UsageCase{"ChunksUnknownSubcommand", {"chunks", "dedup"}, "dedup"},
        UsageCase{"ChunksMissingServer", {"chunks", "check"}, "--server"},
        UsageCase{"ChunksNoBatchFlag",
                  {"chunks", "check", "--server", "127.0.0.1:1", "--batch", "2"},
                  "--batch"},
        UsageCase{"ChunksTwoFiles",
                  {"chunks", "peek", "--server", "127.0.0.1:1", "a", "b"},
                  "at most one FILE"},
        UsageCase{"ChunksBadDistance",
                  {"chunks", "check", "--server", "127.0.0.1:1", "--max_hamming_distance", "1.5"},
                  "--max_hamming_distance"},
        UsageCase{"ChunksJaccardZero",
                  {"chunks", "check", "--server", "127.0.0.1:1", "--min_jaccard", "0"},
                  "--min_jaccard must be a number in (0, 1]"},
        UsageCase{"ResultsWithoutSubcommand", {"results"}, "needs dedup"},
        UsageCase{"ResultsUnknownSubcommand", {"results", "check"}, "check"},
        UsageCase{"ResultsMissingServer", {"results", "dedup"}, "--server"},
        UsageCase{"ResultsTopKZero",
                  {"results", "dedup", "--server", "127.0.0.1:1", "--top_k", "0"},
                  "--top_k must be an integer in 1..4294967295"},
        UsageCase{"ResultsBadCap",
                  {"results", "dedup", "--server", "127.0.0.1:1", "--per_source_cap", "-1"},
                  "--per_source_cap"},
        UsageCase{"ResultsBadJaccard",
                  {"results", "dedup", "--server", "127.0.0.1:1", "--min_jaccard", "most"},
                  "--min_jaccard must be a number"},
        UsageCase{"ResultsBadCosine",
                  {"results", "dedup", "--server", "127.0.0.1:1", "--min_cosine", "nan"},
                  "--min_cosine must be a number"},
        UsageCase{"ResultsBothMeasures",
                  {"results", "dedup", "--server", "127.0.0.1:1", "--min_jaccard", "0.5",
                   "--max_hamming_distance", "3"},
                  "exclude each other"},
        UsageCase{"ResultsTwoFiles",
                  {"results", "dedup", "--server", "127.0.0.1:1", "a", "b"},
                  "at most one FILE"},
        UsageCase{"ResultsBaseFlag",
                  {"results", "dedup", "--server", "127.0.0.1:1", "--base", "https://a.example/"},
                  "--base"},
        UsageCase{"AdminWithoutSubcommand", {"admin"}, "stats or backup or export or forget"},
        UsageCase{"AdminUnknownSubcommand", {"admin", "erase"}, "erase"},
        UsageCase{"AdminForgetMissingServer", {"admin", "forget", "http://a.example/"}, "--server"},
        UsageCase{"AdminForgetExact",
                  {"admin", "forget", "--server", "127.0.0.1:1", "--exact", "http://a/"},
                  "--exact is for admin stats"},
        UsageCase{"AdminForgetSkipUrls",
                  {"admin", "forget", "--server", "127.0.0.1:1", "--skip_urls", "http://a/"},
                  "--skip_urls"},
        UsageCase{"AdminForgetBatchFlag",
                  {"admin", "forget", "--server", "127.0.0.1:1", "--batch", "2", "http://a/"},
                  "--batch"},
        UsageCase{"AdminForgetBadDeadline",
                  {"admin", "forget", "--server", "127.0.0.1:1", "--deadline", "x", "http://a/"},
                  "--deadline"},
        UsageCase{"AdminMissingServer", {"admin", "stats"}, "--server"},
        UsageCase{"AdminBackupWithoutDir",
                  {"admin", "backup", "--server", "127.0.0.1:1"},
                  "exactly one DIR"},
        UsageCase{"AdminBackupTwoDirs",
                  {"admin", "backup", "--server", "127.0.0.1:1", "/a", "/b"},
                  "exactly one DIR"},
        UsageCase{"AdminStatsArgument",
                  {"admin", "stats", "--server", "127.0.0.1:1", "x"},
                  "takes no arguments"},
        UsageCase{"AdminExactOnExport",
                  {"admin", "export", "--server", "127.0.0.1:1", "--exact"},
                  "--exact is for admin stats"},
        UsageCase{"AdminSkipOnStats",
                  {"admin", "stats", "--server", "127.0.0.1:1", "--skip_urls"},
                  "--skip_urls"},
        UsageCase{"AdminExactWithValue",
                  {"admin", "stats", "--server", "127.0.0.1:1", "--exact=1"},
                  "--exact takes no value"},
        UsageCase{"AdminBatchFlag",
                  {"admin", "export", "--server", "127.0.0.1:1", "--batch", "2"},
                  "--batch"}),
    [](const ::testing::TestParamInfo<UsageCase>& info) { return std::string(info.param.name); });

TEST(DedupctlUsageTest, DoubleDashEndsFlags) {
  CommandResult r = Dedupctl({"normalize", "--", "--explain"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // "--explain" is a (bad) URL here
  EXPECT_THAT(Lines(r.out), ElementsAre(StartsWith(R"({"url":"--explain","error":)")));
}

// ---------------------------------------------------- url, fake server

class DedupctlUrlTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(server_, FakeDedupServer::Start()); }
  FakeDedupService& fake() { return server_->service(); }
  std::unique_ptr<FakeDedupServer> server_;
};

TEST_F(DedupctlUrlTest, NamespaceAndLeaseReachTheServerAndCompleteConfirms) {
  CommandResult r = Dedupctl({"url", "check", "--server", server_->address(), "--namespace",
                              "crawl-1", "--lease_seconds", "300", "https://a.example/1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_THAT(fake().calls(), SizeIs(1));
  EXPECT_EQ(fake().calls()[0].url_request.namespace_(), "crawl-1");
  EXPECT_EQ(fake().calls()[0].url_request.lease_seconds(), 300u);
  EXPECT_EQ(fake().calls()[0].url_request.claim_id().size(), 16u);
  r = Dedupctl({"url", "complete", "--server", server_->address(), "--namespace", "crawl-1"},
               "https://a.example/1\nhttps://never.example/\n");
  EXPECT_EQ(r.exit_code, 1) << "one URL was never claimed";
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          R"({"url":"https://a.example/1","normalized":"https://a.example/1","verdict":"CONFIRMED"})",
          R"({"url":"https://never.example/","normalized":"https://never.example/","verdict":"INVALID","error":"fake: not claimed","reason":"NOT_CLAIMED"})"));
  EXPECT_EQ(fake().calls().back().complete_request.namespace_(), "crawl-1");
}

TEST_F(DedupctlUrlTest, LeaseFlagIsForCheckOnly) {
  for (const char* sub : {"peek", "complete"}) {
    CommandResult r = Dedupctl({"url", sub, "--server", server_->address(), "--lease_seconds", "10",
                                "https://a.example/"});
    EXPECT_EQ(r.exit_code, 2) << sub;
    EXPECT_THAT(r.err, HasSubstr(absl::StrCat("--lease_seconds is for url check, not url ", sub)));
  }
  CommandResult r = Dedupctl({"url", "check", "--server", server_->address(), "--lease_seconds",
                              "0", "https://a.example/"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--lease_seconds must be an integer in 1..4294967295"));
  EXPECT_THAT(fake().calls(), IsEmpty());
}

TEST_F(DedupctlUrlTest, CheckPrintsVerdictsInOrderAndBatches) {
  CommandResult r = Dedupctl({"url", "check", "--server", server_->address(), "--batch", "2",
                              "https://a.example/1", "bad:x", "https://a.example/1",
                              "https://a.example/2", "https://a.example/3"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // one INVALID
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          R"({"url":"https://a.example/1","normalized":"https://a.example/1","verdict":"NEW"})",
          R"({"url":"bad:x","verdict":"INVALID","error":"fake: invalid url","reason":"BAD_URL"})",
          R"({"url":"https://a.example/1","normalized":"https://a.example/1","verdict":"SEEN","first_seen":"2024-05-06T07:08:09.5Z"})",
          R"({"url":"https://a.example/2","normalized":"https://a.example/2","verdict":"NEW"})",
          R"({"url":"https://a.example/3","normalized":"https://a.example/3","verdict":"NEW"})"));
  std::vector<size_t> sizes;
  for (const FakeDedupService::Call& call : fake().calls()) {
    sizes.push_back(call.urls.size());
    EXPECT_EQ(call.mode, dedupd::v1::CLAIM_MODE_CLAIM);
    ASSERT_TRUE(call.deadline_left.has_value());
  }
  EXPECT_THAT(sizes, ElementsAre(2, 2, 1));
}

TEST_F(DedupctlUrlTest, StoreUnavailableUrlIsSentAgainThenPrintedWithItsReason) {
  fake().StoreDown("https://a.example/2", 1);  // a node back after one failure
  fake().StoreDown("https://a.example/3", 0);  // down for good
  CommandResult r = Dedupctl({"url", "check", "--server", server_->address(), "https://a.example/1",
                              "https://a.example/2", "https://a.example/3"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // one URL not answered
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          R"({"url":"https://a.example/1","normalized":"https://a.example/1","verdict":"NEW"})",
          R"({"url":"https://a.example/2","normalized":"https://a.example/2","verdict":"NEW"})",
          R"json({"url":"https://a.example/3","normalized":"https://a.example/3","verdict":"INVALID","error":"fake: store node down (CheckUrl: still unavailable after 4 attempts)","reason":"STORE_UNAVAILABLE"})json"));
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(4));  // the request, then 2 and 3, then 3 twice
  for (const FakeDedupService::Call& call : calls) {
    EXPECT_TRUE(call.url_request.per_item_store_errors());
    EXPECT_EQ(call.url_request.claim_id(), calls[0].url_request.claim_id());
  }
}

TEST_F(DedupctlUrlTest, PeekRecordsNothingAndSendsBaseAndDeadline) {
  CommandResult peek = Dedupctl({"url", "peek", "--server", server_->address(), "--base",
                                 "https://a.example/dir/", "--deadline", "9", "x"});
  EXPECT_EQ(peek.exit_code, 0) << peek.err;
  EXPECT_THAT(peek.out, HasSubstr(R"("verdict":"NEW")"));
  CommandResult again = Dedupctl({"url", "peek", "--server", server_->address(), "x"});
  EXPECT_THAT(again.out, HasSubstr(R"("verdict":"NEW")"));

  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(calls[0].mode, dedupd::v1::CLAIM_MODE_PEEK);
  EXPECT_THAT(calls[0].base_urls, ElementsAre("https://a.example/dir/"));
  EXPECT_THAT(calls[1].base_urls, ElementsAre(""));
  ASSERT_TRUE(calls[0].deadline_left.has_value());
  EXPECT_GT(*calls[0].deadline_left, absl::Seconds(5));
  EXPECT_LE(*calls[0].deadline_left, absl::Seconds(9) + absl::Milliseconds(100));
}

TEST_F(DedupctlUrlTest, StdinSkipsBlankLinesAndStripsCr) {
  CommandResult r = Dedupctl({"url", "check", "--server", server_->address()},
                             "https://a.example/1\r\n\n \nhttps://a.example/2\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_THAT(fake().calls(), SizeIs(1));
  EXPECT_THAT(fake().calls()[0].urls, ElementsAre("https://a.example/1", "https://a.example/2"));
  EXPECT_THAT(Lines(r.out), SizeIs(2));
}

TEST_F(DedupctlUrlTest, ServerErrorExits2WithOneLine) {
  fake().FailNext(absl::InvalidArgumentError("too many items: 3 > max 2"));
  CommandResult r = Dedupctl({"url", "check", "--server", server_->address(), "https://a.example/1",
                              "https://a.example/2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err), ElementsAre("dedupctl: CheckUrl: too many items: 3 > max 2"));
  EXPECT_THAT(r.out, IsEmpty());
}

TEST(DedupctlUrlConnectTest, UnreachableServerExits2) {
  std::string address;
  {
    ASSERT_OK_AND_ASSIGN(auto server, FakeDedupServer::Start());
    address = server->address();
  }
  CommandResult r =
      Dedupctl({"url", "check", "--server", address, "--deadline", "5", "https://a.example/"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err),
              ElementsAre(AllOf(StartsWith("dedupctl: CheckUrl: "), HasSubstr("attempts"))));
}

// Streaming: dedupctl must send what it has read before standard input
// ends, instead of reading everything first.
TEST_F(DedupctlUrlTest, SendsBeforeStdinEnds) {
  int in[2];
  ASSERT_EQ(pipe(in), 0);
  const int out = open("/dev/null", O_WRONLY);
  ASSERT_GE(out, 0);
  const std::string address = server_->address();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    close(in[0]);
    close(in[1]);
    execl(DEDUPCTL_PATH, DEDUPCTL_PATH, "url", "check", "--server", address.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out);
  const auto write_all = [&](absl::string_view s) {
    return write(in[1], s.data(), s.size()) == static_cast<ssize_t>(s.size());
  };
  ASSERT_TRUE(write_all("https://a.example/1\nhttps://a.example/2\n"));
  const bool first = fake().WaitForCalls(1, absl::Seconds(30));
  const bool wrote = write_all("https://a.example/3\n");
  const bool second = first && wrote && fake().WaitForCalls(2, absl::Seconds(30));
  close(in[1]);
  if (!second) kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(first) << "nothing sent while stdin was still open";
  ASSERT_TRUE(second);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_THAT(calls[0].urls, ElementsAre("https://a.example/1", "https://a.example/2"));
  EXPECT_THAT(calls[1].urls, ElementsAre("https://a.example/3"));
}

// -------------------------------------------------- content, fake server

TEST_F(DedupctlUrlTest, ContentCheckJsonLinesWithABadLine) {
  const std::string in =
      R"({"url":"https://a.example/1","text":"hello world"})"
      "\n"
      R"({"url":"https://a.example/2","canonical_url":"https://a.example/c","text":"hello world"})"
      "\r\n"
      "not json\n"
      "\n"
      R"({"url":"https://a.example/3"})"
      "\n"
      R"({"url":"bad:x","text":"t"})"
      "\n"
      R"({"url":"https://a.example/4","text":"hello world!!","max_hamming_distance":2,"min_jaccard":0.9,"extra":1})"
      "\n"
      R"({"url":"https://a.example/5","text":"t","min_jaccard":"high"})"
      "\n";
  CommandResult r =
      Dedupctl({"content", "check", "--server", server_->address(), "--batch", "2"}, in);
  EXPECT_EQ(r.exit_code, 1) << r.err;  // bad lines and an INVALID
  EXPECT_THAT(r.err, IsEmpty());
  const std::string hash = absl::StrFormat("%016x", FakeDedupService::FakeHash("hello world"));
  const std::string near_hash =
      absl::StrFormat("%016x", FakeDedupService::FakeHash("hello world!!"));
  const std::string content_hash = absl::StrCat(hash, hash, hash, hash);
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          absl::StrCat(
              R"({"verdict":"NEW","url":"https://a.example/1","canonical_url":"https://a.example/1","content_hash":")",
              content_hash, R"(","simhash":")", hash,
              R"(","owner_url":"https://a.example/1","alias_urls":[],"alias_count":0,"near_matches":[],"near_match_count":0,"recrawl":"FIRST_SEEN","first_seen_time":"2024-05-06T07:08:09.5Z","applied_min_jaccard":0})"),
          absl::StrCat(
              R"({"verdict":"EXACT_DUPLICATE","url":"https://a.example/2","canonical_url":"https://a.example/c","content_hash":")",
              content_hash, R"(","simhash":")", hash,
              R"(","owner_url":"https://a.example/1","alias_urls":["https://a.example/c"],"alias_count":1,"near_matches":[],"near_match_count":0,"recrawl":"FIRST_SEEN","first_seen_time":"2024-05-06T07:08:09.5Z","applied_min_jaccard":0})"),
          R"({"verdict":"INVALID","line":3,"error":"line 3: invalid JSON: at byte 0: expected '{'"})",
          R"({"verdict":"INVALID","line":5,"url":"https://a.example/3","error":"line 5: missing \"text\""})",
          R"({"verdict":"INVALID","line":6,"url":"bad:x","error":"fake: invalid url","reason":"BAD_URL"})",
          absl::StrCat(
              R"({"verdict":"NEAR_DUPLICATE","url":"https://a.example/4","canonical_url":"https://a.example/4","content_hash":")",
              absl::StrCat(near_hash, near_hash, near_hash, near_hash), R"(","simhash":")",
              near_hash,
              R"(","owner_url":"https://a.example/1","alias_urls":[],"alias_count":0,"near_matches":[{"url":"https://a.example/1","simhash":")",
              hash, R"(","distance":2,"content_hash":")", content_hash,
              R"(","estimated_jaccard":0,"measure":"SIMHASH"}],"near_match_count":1,"recrawl":"FIRST_SEEN","applied_min_jaccard":0.9})"),
          R"({"verdict":"INVALID","line":8,"url":"https://a.example/5","error":"line 8: \"min_jaccard\" must be a number"})"));
  // Bad lines are not sent; good ones are. A batch is --batch input
  // documents, bad lines included (lines 3 and 5 made a batch of nothing).
  std::vector<std::vector<std::string>> sent;
  for (const FakeDedupService::Call& call : fake().calls()) {
    EXPECT_EQ(call.method, "CheckContent");
    EXPECT_EQ(call.mode, dedupd::v1::CLAIM_MODE_CLAIM);
    sent.push_back(call.urls);
  }
  EXPECT_THAT(sent, ElementsAre(ElementsAre("https://a.example/1", "https://a.example/2"),
                                ElementsAre("bad:x", "https://a.example/4")));
}

TEST_F(DedupctlUrlTest, ContentUrlFormReadsTextFileOrStdin) {
  const std::string dir = MakeTempDir("dedupctl_test_");
  ASSERT_FALSE(dir.empty());
  const std::string path = dir + "/page.txt";
  std::ofstream(path) << "line one\nline two\n";
  CommandResult file =
      Dedupctl({"content", "check", "--server", server_->address(), "--url", "https://a.example/p",
                "--canonical_url", "https://a.example/canon", "--max_hamming_distance", "5",
                "--min_jaccard", "0.95", "--text_file", path});
  EXPECT_EQ(file.exit_code, 0) << file.err;
  EXPECT_THAT(Lines(file.out),
              ElementsAre(AllOf(StartsWith(R"({"verdict":"NEW","url":"https://a.example/p",)"
                                           R"("canonical_url":"https://a.example/canon",)"),
                                HasSubstr(R"("recrawl":"FIRST_SEEN")"),
                                HasSubstr(R"("applied_min_jaccard":0.95})"))));

  // The same text from stdin, peeked: an exact duplicate, nothing recorded.
  CommandResult in =
      Dedupctl({"content", "peek", "--server", server_->address(), "--url", "https://b.example/q"},
               "line one\nline two\n");
  EXPECT_EQ(in.exit_code, 0) << in.err;
  EXPECT_THAT(Lines(in.out),
              ElementsAre(AllOf(StartsWith(R"({"verdict":"EXACT_DUPLICATE",)"),
                                HasSubstr(R"("owner_url":"https://a.example/canon")"),
                                HasSubstr(R"("alias_urls":[])"))));

  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(2));
  ASSERT_THAT(calls[0].content_items, SizeIs(1));
  const dedupd::v1::ContentItem& doc = calls[0].content_items[0];
  EXPECT_EQ(doc.text(), "line one\nline two\n");  // as is
  EXPECT_EQ(doc.canonical_url(), "https://a.example/canon");
  EXPECT_EQ(doc.max_hamming_distance(), 5u);
  EXPECT_EQ(doc.min_jaccard(), 0.95);
  EXPECT_EQ(calls[1].mode, dedupd::v1::CLAIM_MODE_PEEK);
  EXPECT_FALSE(calls[1].content_items[0].has_max_hamming_distance());
  EXPECT_FALSE(calls[1].content_items[0].has_min_jaccard());

  CommandResult missing = Dedupctl({"content", "check", "--server", server_->address(), "--url",
                                    "https://a.example/p", "--text_file", dir + "/missing.txt"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(Lines(missing.err),
              ElementsAre(AllOf(StartsWith("dedupctl: "), HasSubstr("missing.txt"))));
  RemoveTree(dir);
}

TEST_F(DedupctlUrlTest, ContentJsonLinesFromAFileAllValidExits0) {
  const std::string dir = MakeTempDir("dedupctl_test_");
  ASSERT_FALSE(dir.empty());
  const std::string path = dir + "/docs.jsonl";
  std::ofstream(path) << R"({"url":"https://a.example/1","text":"x\u00e9","min_jaccard":1})"
                      << "\n"
                      << R"({"url":"https://a.example/2","text":"y","canonical_url":null,)"
                      << R"("min_jaccard":null})"
                      << "\n";
  // --min_jaccard is for the lines that set none (null is none).
  CommandResult r = Dedupctl(
      {"content", "peek", "--server", server_->address(), "--min_jaccard", "8.5e-1", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(Lines(r.out), SizeIs(2));
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(1));
  ASSERT_THAT(calls[0].content_items, SizeIs(2));
  EXPECT_EQ(calls[0].content_items[0].text(), "x\xc3\xa9");
  EXPECT_EQ(calls[0].content_items[1].canonical_url(), "");
  EXPECT_EQ(calls[0].content_items[0].min_jaccard(), 1.0);
  EXPECT_EQ(calls[0].content_items[1].min_jaccard(), 0.85);
  RemoveTree(dir);
}

TEST_F(DedupctlUrlTest, ContentServerErrorExits2) {
  fake().FailNext(absl::InvalidArgumentError("too many items: 3 > max 2"));
  CommandResult r = Dedupctl({"content", "check", "--server", server_->address()},
                             R"({"url":"https://a.example/1","text":"t"})"
                             "\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err), ElementsAre("dedupctl: CheckContent: too many items: 3 > max 2"));
  EXPECT_THAT(r.out, IsEmpty());
}

TEST(DedupctlContentConnectTest, UnreachableServerExits2) {
  std::string address;
  {
    ASSERT_OK_AND_ASSIGN(auto server, FakeDedupServer::Start());
    address = server->address();
  }
  CommandResult r = Dedupctl(
      {"content", "check", "--server", address, "--deadline", "5", "--url", "https://a.example/"},
      "text");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err),
              ElementsAre(AllOf(StartsWith("dedupctl: CheckContent: "), HasSubstr("attempts"))));
}

// --------------------------------------------------- chunks, fake server

// What the fake prints for a chunk's text: simhash and content_hash.
std::string FakeSimHash(absl::string_view text) {
  return absl::StrFormat("%016x", FakeDedupService::FakeHash(text));
}
std::string FakeContentHash(absl::string_view text) {
  const std::string h = FakeSimHash(text);
  return absl::StrCat(h, h, h, h);
}
constexpr char kFirstSeen[] = "2024-05-06T07:08:09.5Z";

// The output object of a NEW chunk (first_seen: with CLAIM; applied: the
// request's min_jaccard as printed, which the fake echoes).
std::string NewChunk(absl::string_view id, absl::string_view text, bool first_seen = true,
                     absl::string_view applied = "0") {
  return absl::StrCat(R"({"chunk_id":")", id, R"(","verdict":"NEW","content_hash":")",
                      FakeContentHash(text), R"(","simhash":")", FakeSimHash(text), "\"",
                      first_seen ? absl::StrCat(R"(,"first_seen":")", kFirstSeen, "\"") : "",
                      R"(,"applied_min_jaccard":)", applied, "}");
}

// The output object of a duplicate chunk (the fake's near ones are all
// SimHash's).
std::string DupChunk(absl::string_view id, absl::string_view text, absl::string_view document_url,
                     absl::string_view of_id, int distance, absl::string_view applied = "0") {
  return absl::StrCat(R"({"chunk_id":")", id, R"(","verdict":")",
                      distance == 0 ? "EXACT_DUPLICATE" : "NEAR_DUPLICATE", R"(","content_hash":")",
                      FakeContentHash(text), R"(","simhash":")", FakeSimHash(text),
                      R"(","duplicate_of":{"document_url":")", document_url, R"(","chunk_id":")",
                      of_id, R"(","distance":)", distance, R"(},"first_seen":")", kFirstSeen, "\"",
                      distance == 0 ? "" : R"(,"estimated_jaccard":0,"near_measure":"SIMHASH")",
                      R"(,"applied_min_jaccard":)", applied, "}");
}

std::string DocumentLine(absl::string_view url, int replaced,
                         const std::vector<std::string>& chunks) {
  return absl::StrCat(R"({"document_url":")", url, R"(","replaced_chunks":)", replaced,
                      R"(,"removed_chunk_ids":[],"chunks":[)", absl::StrJoin(chunks, ","), "]}");
}

class DedupctlChunksTest : public DedupctlUrlTest {
 protected:
  CommandResult Chunks(const std::string& sub, const std::string& in,
                       std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"chunks", sub, "--server", server_->address()};
    args.insert(args.end(), flags.begin(), flags.end());
    return Dedupctl(args, in);
  }
};

TEST_F(DedupctlChunksTest, CheckPrintsOneLinePerDocument) {
  const std::string in =
      R"({"document_url":"https://a.example/1","chunks":["alpha","beta","alpha"]})"
      "\n"
      R"({"document_url":"https://b.example/2","chunks":[{"text":"beta","chunk_id":"b-1"},{"text":"alpha!!","chunk_id":null},{"text":"gamma","chunk_id":"b-3","extra":true}],"max_hamming_distance":2,"meta":{"x":[1]}})"
      "\n"
      R"({"document_url":"https://c.example/3","chunks":["","delta"]})"
      "\n";
  CommandResult r = Chunks("check", in);
  EXPECT_EQ(r.exit_code, 1) << r.err;  // one INVALID chunk
  EXPECT_THAT(r.err, IsEmpty());
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          DocumentLine("https://a.example/1", 0,
                       {NewChunk("0", "alpha"), NewChunk("1", "beta"),
                        DupChunk("2", "alpha", "https://a.example/1", "0", 0)}),
          DocumentLine(
              "https://b.example/2", 0,
              {DupChunk("b-1", "beta", "https://a.example/1", "1", 0),
               DupChunk("1", "alpha!!", "https://a.example/1", "0", 2), NewChunk("b-3", "gamma")}),
          DocumentLine(
              "https://c.example/3", 0,
              {R"({"chunk_id":"0","verdict":"INVALID","error":"fake: empty text","reason":"BAD_TEXT"})",
               NewChunk("1", "delta")})));
  // One request per document, with its chunks as given.
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(3));
  for (const FakeDedupService::Call& call : calls) {
    EXPECT_EQ(call.method, "CheckChunks");
    EXPECT_EQ(call.mode, dedupd::v1::CLAIM_MODE_CLAIM);
    EXPECT_TRUE(call.deadline_left.has_value());
  }
  const dedupd::v1::CheckChunksRequest& second = calls[1].chunks_request;
  ASSERT_EQ(second.chunks_size(), 3);
  EXPECT_EQ(second.chunks(0).chunk_id(), "b-1");
  EXPECT_FALSE(second.chunks(1).has_chunk_id());  // null: absent
  EXPECT_EQ(second.chunks(1).text(), "alpha!!");
  EXPECT_EQ(second.max_hamming_distance(), 2u);
  EXPECT_FALSE(calls[0].chunks_request.has_max_hamming_distance());
  EXPECT_FALSE(calls[0].chunks_request.chunks(0).has_chunk_id());
}

TEST_F(DedupctlChunksTest, RecheckReplacesAndPeekRecordsNothing) {
  CommandResult first =
      Chunks("check", R"({"document_url":"https://a.example/1","chunks":["one","two"]})");
  EXPECT_EQ(first.exit_code, 0) << first.err;
  // A re-crawl replaces the document's chunks and never matches itself.
  CommandResult again =
      Chunks("check", R"({"document_url":"https://a.example/1","chunks":["one","three"]})");
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_THAT(Lines(again.out),
              ElementsAre(DocumentLine("https://a.example/1", 2,
                                       {NewChunk("0", "one"), NewChunk("1", "three")})));
  // Peek: "two" is no longer held; nothing is recorded, no first_seen.
  CommandResult peek = Chunks(
      "peek",
      R"({"document_url":"https://b.example/2","chunks":["two","one!"]})"
      "\n"
      R"({"document_url":"https://b.example/2","chunks":["one!!"],"max_hamming_distance":5,"min_jaccard":0.95})"
      "\n",
      {"--max_hamming_distance", "1", "--min_jaccard", "0.9", "--deadline", "9"});
  EXPECT_EQ(peek.exit_code, 0) << peek.err;
  EXPECT_THAT(
      Lines(peek.out),
      ElementsAre(DocumentLine("https://b.example/2", 0,
                               {NewChunk("0", "two", false, "0.9"),
                                DupChunk("1", "one!", "https://a.example/1", "0", 1, "0.9")}),
                  DocumentLine("https://b.example/2", 0,
                               {DupChunk("0", "one!!", "https://a.example/1", "0", 2, "0.95")})));
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(4));
  EXPECT_EQ(calls[2].mode, dedupd::v1::CLAIM_MODE_PEEK);
  // The flag is the default: a document's own distance wins.
  EXPECT_EQ(calls[2].chunks_request.max_hamming_distance(), 1u);
  EXPECT_EQ(calls[3].chunks_request.max_hamming_distance(), 5u);
  EXPECT_EQ(calls[2].chunks_request.min_jaccard(), 0.9);
  EXPECT_EQ(calls[3].chunks_request.min_jaccard(), 0.95);
  EXPECT_FALSE(calls[0].chunks_request.has_min_jaccard());
  ASSERT_TRUE(calls[2].deadline_left.has_value());
  EXPECT_GT(*calls[2].deadline_left, absl::Seconds(5));
  EXPECT_LE(*calls[2].deadline_left, absl::Seconds(9) + absl::Milliseconds(100));
}

TEST_F(DedupctlChunksTest, JsonLinesFromAFileSkipBlankLinesAndCr) {
  const std::string dir = MakeTempDir("dedupctl_test_");
  ASSERT_FALSE(dir.empty());
  const std::string path = dir + "/chunks.jsonl";
  std::ofstream(path) << R"({"document_url":"https://a.example/1","chunks":["x\u00e9"]})"
                      << "\r\n\n  \n"
                      << R"({"document_url":"https://a.example/2","chunks":[{"text":"y"}]})";
  CommandResult r = Dedupctl({"chunks", "peek", "--server", server_->address(), path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(Lines(r.out), ElementsAre(StartsWith(R"({"document_url":"https://a.example/1",)"),
                                        StartsWith(R"({"document_url":"https://a.example/2",)")));
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(calls[0].chunks_request.chunks(0).text(), "x\xc3\xa9");
  RemoveTree(dir);
}

// Syntax errors are in the words of protobuf's parser: pinned only as far
// as dedupctl shapes them (prefix, one line, an excerpt of the input).
::testing::Matcher<std::string> InvalidJson(absl::string_view prefix, absl::string_view excerpt) {
  return AllOf(StartsWith(absl::StrCat(prefix, "invalid JSON: ")), HasSubstr(" (near: "),
               HasSubstr(excerpt), ::testing::EndsWith(R"j()"})j"), Not(HasSubstr("\\n")),
               Not(HasSubstr("^")));
}

struct BadLineCase {
  const char* name;
  std::string line;
  // The whole output line for it (it is input line 2).
  ::testing::Matcher<std::string> want;
};
void PrintTo(const BadLineCase& c, std::ostream* os) { *os << c.name; }

class DedupctlChunksBadLineTest : public DedupctlChunksTest,
                                  public ::testing::WithParamInterface<BadLineCase> {};

// A bad line prints its error line, is not sent, and the run goes on.
TEST_P(DedupctlChunksBadLineTest, PrintsAnErrorLineAndGoesOn) {
  const std::string good1 = R"({"document_url":"https://g.example/1","chunks":["g1"]})";
  const std::string good3 = R"({"document_url":"https://g.example/3","chunks":["g3"]})";
  CommandResult r = Chunks("check", absl::StrCat(good1, "\n", GetParam().line, "\n", good3, "\n"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(DocumentLine("https://g.example/1", 0, {NewChunk("0", "g1")}), GetParam().want,
                  DocumentLine("https://g.example/3", 0, {NewChunk("0", "g3")})));
  std::vector<std::string> sent;
  for (const FakeDedupService::Call& call : fake().calls()) {
    sent.push_back(call.chunks_request.document_url());
  }
  EXPECT_THAT(sent, ElementsAre("https://g.example/1", "https://g.example/3"));
}

INSTANTIATE_TEST_SUITE_P(
    Table, DedupctlChunksBadLineTest,
    ::testing::Values(
        BadLineCase{
            "NotJson", "not json",
            // The one pinned whole, with protobuf 3.21's words.
            R"j({"line":2,"error":"line 2: invalid JSON: Unexpected token. (near: not json)"})j"},
        BadLineCase{"TrailingGarbage", R"({"document_url":"u","chunks":["a"]} x)",
                    InvalidJson(R"({"line":2,"error":"line 2: )", "} x")},
        BadLineCase{"InvalidUtf8", "{\"document_url\":\"u\",\"chunks\":[\"\xff\"]}",
                    InvalidJson(R"({"line":2,"error":"line 2: )", R"(\ufffd\"]})")},
        BadLineCase{"DuplicateMember", R"({"document_url":"u","document_url":"v","chunks":["a"]})",
                    AllOf(StartsWith(R"({"line":2,"error":"line 2: invalid JSON: )"),
                          HasSubstr("document_url"))},
        BadLineCase{"NotAnObject", R"(["a"])",
                    R"({"line":2,"error":"line 2: a line must be a JSON object, not an array"})"},
        BadLineCase{"MissingDocumentUrl", R"({"chunks":["a"]})",
                    R"({"line":2,"error":"line 2: missing \"document_url\""})"},
        BadLineCase{"NullDocumentUrl", R"({"document_url":null,"chunks":["a"]})",
                    R"({"line":2,"error":"line 2: missing \"document_url\""})"},
        BadLineCase{
            "DocumentUrlNumber", R"({"document_url":7,"chunks":["a"]})",
            R"({"line":2,"error":"line 2: \"document_url\" must be a string, not a number"})"},
        BadLineCase{
            "MissingChunks", R"({"document_url":"https://x.example/"})",
            R"({"line":2,"document_url":"https://x.example/","error":"line 2: missing \"chunks\""})"},
        BadLineCase{
            "ChunksNotAnArray", R"({"document_url":"https://x.example/","chunks":"a b c"})",
            R"({"line":2,"document_url":"https://x.example/","error":"line 2: \"chunks\" must be an array, not a string"})"},
        BadLineCase{
            "ChunksEmpty", R"({"document_url":"https://x.example/","chunks":[]})",
            R"j({"line":2,"document_url":"https://x.example/","error":"line 2: \"chunks\" is empty (a document has at least one chunk)"})j"},
        BadLineCase{
            "ChunkANumber", R"({"document_url":"https://x.example/","chunks":["a",3]})",
            R"({"line":2,"document_url":"https://x.example/","error":"line 2: \"chunks[1]\" must be a string or an object, not a number"})"},
        BadLineCase{
            "ChunkIdANumber",
            R"({"document_url":"https://x.example/","chunks":[{"text":"a","chunk_id":7}]})",
            R"({"line":2,"document_url":"https://x.example/","error":"line 2: \"chunks[0].chunk_id\" must be a string, not a number"})"},
        BadLineCase{
            "TextMissing",
            R"({"document_url":"https://x.example/","chunks":["a",{"chunk_id":"c"}]})",
            R"({"line":2,"document_url":"https://x.example/","error":"line 2: missing \"chunks[1].text\""})"},
        BadLineCase{
            "TextNotAString", R"({"document_url":"https://x.example/","chunks":[{"text":["a"]}]})",
            R"({"line":2,"document_url":"https://x.example/","error":"line 2: \"chunks[0].text\" must be a string, not an array"})"},
        BadLineCase{
            "DistanceAFraction",
            R"({"document_url":"https://x.example/","chunks":["a"],"max_hamming_distance":2.5})",
            R"({"line":2,"document_url":"https://x.example/","error":"line 2: \"max_hamming_distance\" must be a whole number in 0..4294967295, not 2.5"})"},
        BadLineCase{
            "DistanceNegative",
            R"({"document_url":"https://x.example/","chunks":["a"],"max_hamming_distance":-1})",
            R"({"line":2,"document_url":"https://x.example/","error":"line 2: \"max_hamming_distance\" must be a whole number in 0..4294967295, not -1"})"},
        BadLineCase{
            "DistanceTooLarge",
            R"({"document_url":"https://x.example/","chunks":["a"],"max_hamming_distance":4294967296})",
            R"({"line":2,"document_url":"https://x.example/","error":"line 2: \"max_hamming_distance\" must be a whole number in 0..4294967295, not 4294967296"})"},
        BadLineCase{
            "DistanceAString",
            R"({"document_url":"https://x.example/","chunks":["a"],"max_hamming_distance":"3"})",
            R"({"line":2,"document_url":"https://x.example/","error":"line 2: \"max_hamming_distance\" must be a whole number in 0..4294967295, not a string"})"},
        BadLineCase{
            "JaccardAString",
            R"({"document_url":"https://x.example/","chunks":["a"],"min_jaccard":"0.9"})",
            R"({"line":2,"document_url":"https://x.example/","error":"line 2: \"min_jaccard\" must be a number, not a string"})"}),
    [](const ::testing::TestParamInfo<BadLineCase>& info) { return std::string(info.param.name); });

TEST_F(DedupctlChunksTest, DocumentTheServerRejectsPrintsAnErrorLine) {
  CommandResult r = Chunks("check", R"({"document_url":"https://a.example/1","chunks":["a"]})"
                                    "\n"
                                    R"({"document_url":"bad:x","chunks":["b"]})"
                                    "\n"
                                    R"({"document_url":"https://a.example/3","chunks":["c"]})"
                                    "\n");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          DocumentLine("https://a.example/1", 0, {NewChunk("0", "a")}),
          R"({"line":2,"document_url":"bad:x","error":"CheckChunks: fake: invalid document_url"})",
          DocumentLine("https://a.example/3", 0, {NewChunk("0", "c")})));
  EXPECT_THAT(fake().calls(), SizeIs(3));
}

TEST_F(DedupctlChunksTest, ServerErrorExits2AndStops) {
  fake().AnswerNext();
  fake().FailNext(absl::InternalError("boom"));
  CommandResult r = Chunks("check", R"({"document_url":"https://a.example/1","chunks":["a"]})"
                                    "\n"
                                    R"({"document_url":"https://a.example/2","chunks":["b"]})"
                                    "\n"
                                    R"({"document_url":"https://a.example/3","chunks":["c"]})"
                                    "\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err), ElementsAre("dedupctl: CheckChunks: boom"));
  // Lines already printed stand; the rest of the input is not sent.
  EXPECT_THAT(Lines(r.out),
              ElementsAre(DocumentLine("https://a.example/1", 0, {NewChunk("0", "a")})));
  EXPECT_THAT(fake().calls(), SizeIs(2));
}

TEST_F(DedupctlChunksTest, WrongResultCountExits2) {
  fake().WrongCountNext();
  CommandResult r = Chunks("peek", R"({"document_url":"https://a.example/1","chunks":["a","b"]})");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err), ElementsAre(AllOf(StartsWith("dedupctl: CheckChunks: "),
                                              HasSubstr("1 results for 2 chunks"))));
  EXPECT_THAT(r.out, IsEmpty());
}

TEST(DedupctlChunksConnectTest, UnreachableServerExits2) {
  std::string address;
  {
    ASSERT_OK_AND_ASSIGN(auto server, FakeDedupServer::Start());
    address = server->address();
  }
  CommandResult r = Dedupctl({"chunks", "check", "--server", address, "--deadline", "5"},
                             R"({"document_url":"https://a.example/","chunks":["a"]})");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err),
              ElementsAre(AllOf(StartsWith("dedupctl: CheckChunks: "), HasSubstr("attempts"))));
}

// ---------------------------------------------- results, fake server

class DedupctlResultsTest : public DedupctlUrlTest {
 protected:
  CommandResult Results(const std::string& in, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"results", "dedup", "--server", server_->address()};
    args.insert(args.end(), flags.begin(), flags.end());
    return Dedupctl(args, in);
  }
};

TEST_F(DedupctlResultsTest, ListOfHits) {
  const std::string in = R"([
    {"id": "a", "text": "same", "score": 0.5, "source_url": "s1"},
    {"id": "b", "text": "same", "score": 0.9},
    {"id": "c", "text": "other", "score": 0.25, "source_url": "s1", "extra": {"k": [1]}},
    {"id": "d", "text": "third", "score": 0.1, "source_url": "s1", "embedding": null},
    {"id": "e", "text": "fourth", "score": -1e-7, "source_url": "s1"},
    {"id": "f", "text": "fifth", "score": -2, "source_url": "s1"}
  ])";
  CommandResult r = Results(in);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  // No top_k is sent: every survivor is kept, under the default cap for an
  // unset top_k, 3.
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          R"({"kept":[{"index":1,"id":"b","score":0.9},{"index":2,"id":"c","score":0.25},{"index":3,"id":"d","score":0.1},{"index":4,"id":"e","score":-1e-07}],)"
          R"("dropped":[{"index":0,"id":"a","reason":"DUPLICATE","duplicate_of":{"index":1,"id":"b"},"measure":"EXACT_TEXT","value":1},)"
          R"({"index":5,"id":"f","reason":"SOURCE_CAP"}],"not_examined":[],"rejected":[],"per_source_cap":3})"));
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(1));
  const dedupd::v1::DedupResultsRequest& req = calls[0].results_request;
  EXPECT_EQ(calls[0].method, "DedupResults");
  EXPECT_FALSE(req.has_top_k());
  EXPECT_FALSE(req.has_per_source_cap());
  EXPECT_FALSE(req.has_max_hamming_distance());
  EXPECT_FALSE(req.has_min_jaccard());
  EXPECT_FALSE(req.has_min_cosine());
  EXPECT_EQ(req.near_text_measure(), dedupd::v1::NEAR_TEXT_MEASURE_UNSPECIFIED);
  ASSERT_EQ(req.hits_size(), 6);
  EXPECT_EQ(req.hits(0).source_url(), "s1");
  EXPECT_EQ(req.hits(1).source_url(), "");
  EXPECT_EQ(req.hits(4).score(), -1e-7);
  EXPECT_THAT(req.hits(3).embedding(), IsEmpty());
}

TEST_F(DedupctlResultsTest, ObjectWithSettingsAndFlagsOverride) {
  const std::string in = R"({"hits": [
    {"id": "x", "text": "t1", "score": 3, "embedding": [0.5, -1, 2e-3]},
    {"id": "y", "text": "t2", "score": 2, "embedding": [1, 0, 0]},
    {"id": "z", "text": "t3", "score": 1, "embedding": [0, 1, 0]}],
    "top_k": 2, "per_source_cap": 0, "min_jaccard": 0.7, "min_cosine": 0.9})";
  CommandResult r = Results(in);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          R"({"kept":[{"index":0,"id":"x","score":3},{"index":1,"id":"y","score":2}],"dropped":[],"not_examined":[2],"rejected":[],"per_source_cap":0})"));

  // The same input from a FILE, with flags over the object's settings.
  const std::string dir = MakeTempDir("dedupctl_test_");
  ASSERT_FALSE(dir.empty());
  const std::string path = dir + "/hits.json";
  std::ofstream(path) << in;
  CommandResult f = Results("", {"--top_k", "1", "--max_hamming_distance=5", "--min_cosine", "0.5",
                                 "--per_source_cap", "4", "--deadline", "9", path});
  EXPECT_EQ(f.exit_code, 0) << f.err;
  EXPECT_THAT(
      Lines(f.out),
      ElementsAre(
          R"({"kept":[{"index":0,"id":"x","score":3}],"dropped":[],"not_examined":[1,2],"rejected":[],"per_source_cap":4})"));
  RemoveTree(dir);

  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(2));
  const dedupd::v1::DedupResultsRequest& a = calls[0].results_request;
  EXPECT_TRUE(a.has_top_k());
  EXPECT_EQ(a.top_k(), 2u);
  EXPECT_TRUE(a.has_per_source_cap());
  EXPECT_EQ(a.per_source_cap(), 0u);
  EXPECT_EQ(a.near_text_measure(), dedupd::v1::NEAR_TEXT_MEASURE_JACCARD);
  EXPECT_EQ(a.min_jaccard(), 0.7);
  EXPECT_FALSE(a.has_max_hamming_distance());
  EXPECT_EQ(a.min_cosine(), 0.9);
  EXPECT_THAT(a.hits(0).embedding(), ElementsAre(0.5f, -1.0f, 2e-3f));
  const dedupd::v1::DedupResultsRequest& b = calls[1].results_request;
  EXPECT_EQ(b.top_k(), 1u);
  EXPECT_EQ(b.per_source_cap(), 4u);
  EXPECT_EQ(b.near_text_measure(), dedupd::v1::NEAR_TEXT_MEASURE_SIMHASH);
  EXPECT_EQ(b.max_hamming_distance(), 5u);
  EXPECT_FALSE(b.has_min_jaccard());
  EXPECT_EQ(b.min_cosine(), 0.5);
  ASSERT_TRUE(calls[1].deadline_left.has_value());
  EXPECT_LE(*calls[1].deadline_left, absl::Seconds(9) + absl::Milliseconds(100));
}

struct BadResultsCase {
  const char* name;
  std::string in;
  // The one output line.
  ::testing::Matcher<std::string> want;
};
::testing::Matcher<std::string> ErrorLine(absl::string_view error) {
  return ::testing::Eq(absl::StrCat(R"({"error":")", error, R"("})"));
}
void PrintTo(const BadResultsCase& c, std::ostream* os) { *os << c.name; }

class DedupctlResultsBadInputTest : public DedupctlResultsTest,
                                    public ::testing::WithParamInterface<BadResultsCase> {};

// A bad input is one line {"error": ...}, exit code 1, and no request.
TEST_P(DedupctlResultsBadInputTest, PrintsAnErrorLineAndExits1) {
  CommandResult r = Results(GetParam().in);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  EXPECT_THAT(Lines(r.out), ElementsAre(GetParam().want));
  EXPECT_THAT(fake().calls(), IsEmpty());
}

constexpr char kHit[] = R"({"id":"a","text":"t","score":1})";

INSTANTIATE_TEST_SUITE_P(
    Table, DedupctlResultsBadInputTest,
    ::testing::Values(
        BadResultsCase{"NotJson", "hits please", InvalidJson(R"({"error":")", "hits please")},
        BadResultsCase{"Empty", "", StartsWith(R"({"error":"invalid JSON: )")},
        BadResultsCase{"TwoValues", absl::StrCat("[", kHit, "]\n[", kHit, "]"),
                       // The excerpt spans the line break, as a space.
                       InvalidJson(R"({"error":")", R"(1}] [{\"id\")")},
        BadResultsCase{
            "ANumber", "3",
            ErrorLine(
                R"(the input must be a JSON array of hits or an object with \"hits\", not a number)")},
        BadResultsCase{"NoHits", "[]", ErrorLine(R"(no hits (\"hits\" is empty))")},
        BadResultsCase{"HitsMissing", R"({"top_k":3})", ErrorLine(R"(missing \"hits\")")},
        BadResultsCase{"HitsNotAList", R"({"hits":{"id":"a"}})",
                       ErrorLine(R"(\"hits\" must be an array, not an object)")},
        BadResultsCase{"HitNotAnObject", R"(["a"])",
                       ErrorLine(R"(\"hits[0]\" must be an object, not a string)")},
        BadResultsCase{"IdANumber", absl::StrCat("[", kHit, R"(,{"id":1,"text":"t","score":1}])"),
                       ErrorLine(R"(\"hits[1].id\" must be a string, not a number)")},
        BadResultsCase{"TextMissing", R"([{"id":"a","score":1}])",
                       ErrorLine(R"(missing \"hits[0].text\")")},
        BadResultsCase{"ScoreMissing", R"([{"id":"a","text":"t"}])",
                       ErrorLine(R"(missing \"hits[0].score\")")},
        BadResultsCase{"ScoreAString", R"([{"id":"a","text":"t","score":"NaN"}])",
                       ErrorLine(R"(\"hits[0].score\" must be a number, not a string)")},
        BadResultsCase{"ScoreNaNIsNotJson", R"([{"id":"a","text":"t","score":NaN}])",
                       InvalidJson(R"({"error":")", "NaN}]")},
        BadResultsCase{"ScoreOverDoubleRange", R"([{"id":"a","text":"t","score":1e400}])",
                       InvalidJson(R"({"error":")", "1e400}]")},
        BadResultsCase{"SourceUrlANumber", R"([{"id":"a","text":"t","score":1,"source_url":2}])",
                       ErrorLine(R"(\"hits[0].source_url\" must be a string, not a number)")},
        BadResultsCase{
            "EmbeddingNotAList", R"([{"id":"a","text":"t","score":1,"embedding":"0.1"}])",
            ErrorLine(R"(\"hits[0].embedding\" must be an array of numbers, not a string)")},
        BadResultsCase{"EmbeddingElementNull",
                       R"([{"id":"a","text":"t","score":1,"embedding":[0.1,null]}])",
                       ErrorLine(R"(\"hits[0].embedding[1]\" must be a number, not null)")},
        BadResultsCase{"EmbeddingOutsideFloat",
                       R"([{"id":"a","text":"t","score":1,"embedding":[1e39]}])",
                       ErrorLine(R"(\"hits[0].embedding[0]\" is outside the float range: 1e+39)")},
        BadResultsCase{"TopKZero", absl::StrCat(R"({"hits":[)", kHit, R"(],"top_k":0})"),
                       ErrorLine(R"(\"top_k\" must be a whole number in 1..4294967295, not 0)")},
        BadResultsCase{"TopKAFraction", absl::StrCat(R"({"hits":[)", kHit, R"(],"top_k":1.5})"),
                       ErrorLine(R"(\"top_k\" must be a whole number in 1..4294967295, not 1.5)")},
        BadResultsCase{
            "CapAString", absl::StrCat(R"({"hits":[)", kHit, R"(],"per_source_cap":"2"})"),
            ErrorLine(
                R"(\"per_source_cap\" must be a whole number in 0..4294967295, not a string)")},
        BadResultsCase{"JaccardAString",
                       absl::StrCat(R"({"hits":[)", kHit, R"(],"min_jaccard":"high"})"),
                       ErrorLine(R"(\"min_jaccard\" must be a number, not a string)")},
        BadResultsCase{
            "BothMeasures",
            absl::StrCat(R"({"hits":[)", kHit, R"(],"min_jaccard":0.5,"max_hamming_distance":2})"),
            ErrorLine(R"(set \"max_hamming_distance\" or \"min_jaccard\", not both)")},
        BadResultsCase{"UnknownMember", absl::StrCat(R"({"hits":[)", kHit, R"(],"topk":3,"zz":1})"),
                       ErrorLine(R"(unknown member \"topk\" (the object takes hits, )"
                                 R"(top_k, per_source_cap, max_hamming_distance, )"
                                 R"(min_jaccard, min_cosine))")}),
    [](const ::testing::TestParamInfo<BadResultsCase>& info) {
      return std::string(info.param.name);
    });

TEST_F(DedupctlResultsTest, RejectedHitsArePrintedWithTheDecisionAndExit1) {
  CommandResult r =
      Results(R"([{"id":"a","text":"t","score":1},{"id":"b","text":"","score":2},)"
              R"({"id":"","text":"t2","score":3},{"id":"d","text":"t","score":0.5}])");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  // The rejected hits take no part: a is kept (b's higher score does not
  // count), d is its duplicate.
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          R"({"kept":[{"index":0,"id":"a","score":1}],)"
          R"("dropped":[{"index":3,"id":"d","reason":"DUPLICATE","duplicate_of":{"index":0,"id":"a"},"measure":"EXACT_TEXT","value":1}],)"
          R"("not_examined":[],"rejected":[{"index":1,"id":"b","reason":"BAD_TEXT","error":"fake: empty text"},)"
          R"({"index":2,"id":"","reason":"BAD_HIT","error":"fake: empty id"}],"per_source_cap":3})"));
}

TEST_F(DedupctlResultsTest, RequestTheServerRejectsExits1) {
  fake().FailNext(absl::InvalidArgumentError("min_jaccard 0 is outside (0, 1]"));
  CommandResult r = Results(absl::StrCat(R"({"hits":[)", kHit, R"(],"min_jaccard":0})"));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  EXPECT_THAT(Lines(r.out),
              ElementsAre(R"({"error":"DedupResults: min_jaccard 0 is outside (0, 1]"})"));
  ASSERT_THAT(fake().calls(), SizeIs(1));
  EXPECT_EQ(fake().calls()[0].results_request.min_jaccard(), 0);
}

TEST_F(DedupctlResultsTest, ServerErrorExits2) {
  fake().FailNext(absl::InternalError("boom"));
  CommandResult r = Results(absl::StrCat("[", kHit, "]"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err), ElementsAre("dedupctl: DedupResults: boom"));
  EXPECT_THAT(r.out, IsEmpty());
}

TEST_F(DedupctlResultsTest, InputOverTheLimitIsAnErrorNotAnAllocation) {
  const std::string dir = MakeTempDir("dedupctl_test_");
  ASSERT_FALSE(dir.empty());
  const std::string path = dir + "/huge.json";
  {
    std::ofstream out(path);
    out << "[" << kHit << std::string((64 << 20) - 10, ' ') << "]";
  }
  CommandResult r = Results("", {path});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(Lines(r.out), ElementsAre(R"({"error":"the input is longer than 67108864 bytes"})"));
  EXPECT_THAT(fake().calls(), IsEmpty());

  CommandResult missing = Results("", {dir + "/missing.json"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(Lines(missing.err),
              ElementsAre(AllOf(StartsWith("dedupctl: "), HasSubstr("missing.json"))));
  RemoveTree(dir);
}

TEST(DedupctlResultsConnectTest, UnreachableServerExits2) {
  std::string address;
  {
    ASSERT_OK_AND_ASSIGN(auto server, FakeDedupServer::Start());
    address = server->address();
  }
  CommandResult r = Dedupctl({"results", "dedup", "--server", address, "--deadline", "5"},
                             absl::StrCat("[", kHit, "]"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err),
              ElementsAre(AllOf(StartsWith("dedupctl: DedupResults: "), HasSubstr("attempts"))));
}

}  // namespace
}  // namespace dedupd
