// Runs the built dedupctl binary (DEDUPCTL_PATH, injected by CMake):
// `normalize` offline, and `url check|peek` and `content check|peek`
// against the in-process fake Dedup service on 127.0.0.1:<ephemeral>.
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
#include "client/fake_dedup_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

#ifndef DEDUPCTL_PATH
#error "DEDUPCTL_PATH must name the dedupctl binary"
#endif

namespace dedupd {
namespace {

using ::dedupd::testing::CommandResult;
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

CommandResult Dedupctl(std::vector<std::string> args,
                       const std::string& in = "") {
  args.insert(args.begin(), DEDUPCTL_PATH);
  absl::StatusOr<CommandResult> r = RunCommand(args, in, absl::Seconds(50));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : CommandResult();
}

std::vector<std::string> Lines(const std::string& out) {
  return absl::StrSplit(out, '\n', absl::SkipEmpty());
}

// ------------------------------------------------------------ normalize

TEST(DedupctlNormalizeTest, UrlsFromArguments) {
  CommandResult r = Dedupctl(
      {"normalize", "HTTP://Example.COM:80/a/./b/?utm_source=x&b=2&a=1#top",
       "https://b.example"});
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
  CommandResult r =
      Dedupctl({"normalize"},
               "https://a.example/x\r\n\n  \t\r\nhttps://b.example/Y/\n"
               "\nhttps://c.example/#frag");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          R"({"url":"https://a.example/x","normalized":"https://a.example/x"})",
          R"({"url":"https://b.example/Y/","normalized":"https://b.example/Y"})",
          R"({"url":"https://c.example/#frag","normalized":"https://c.example/"})"));
}

TEST(DedupctlNormalizeTest, EmptyStdinPrintsNothing) {
  CommandResult r = Dedupctl({"normalize"}, "");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, IsEmpty());
}

TEST(DedupctlNormalizeTest, ExplainListsTheRulesThatFired) {
  CommandResult r = Dedupctl({"normalize", "--explain",
                              "https://A.example/x?utm_source=s#frag",
                              "https://a.example/x"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(2));
  EXPECT_THAT(
      lines[0],
      AllOf(
          StartsWith(
              R"({"url":"https://A.example/x?utm_source=s#frag","normalized":"https://a.example/x","rules":[)"),
          HasSubstr(R"("host_lowercased")"),
          HasSubstr(R"("tracking_params_dropped")"),
          HasSubstr(R"("fragment_dropped")")));
  EXPECT_EQ(
      lines[1],
      R"({"url":"https://a.example/x","normalized":"https://a.example/x","rules":[]})");

  CommandResult plain = Dedupctl({"normalize", "https://A.example/x#frag"});
  EXPECT_THAT(plain.out, Not(HasSubstr("rules")));
}

TEST(DedupctlNormalizeTest, BaseResolvesRelativeReferences) {
  CommandResult r =
      Dedupctl({"normalize", "--base", "https://a.example/dir/page", "../x",
                "y?b=1", "https://other.example/z"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          R"({"url":"../x","normalized":"https://a.example/x"})",
          R"({"url":"y?b=1","normalized":"https://a.example/dir/y?b=1"})",
          R"({"url":"https://other.example/z","normalized":"https://other.example/z"})"));

  // The same, with --base=VALUE and the URLs on stdin.
  CommandResult in =
      Dedupctl({"normalize", "--base=https://a.example/dir/page"}, "../x\n");
  EXPECT_EQ(in.exit_code, 0) << in.err;
  EXPECT_THAT(
      Lines(in.out),
      ElementsAre(R"({"url":"../x","normalized":"https://a.example/x"})"));
}

TEST(DedupctlNormalizeTest, RelativeWithoutBaseIsInvalid) {
  CommandResult r = Dedupctl({"normalize", "../x"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(Lines(r.out),
              ElementsAre(StartsWith(R"({"url":"../x","error":")")));
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
  const std::vector<std::string> urls = {
      "https://www.shop.example/p?color=red&id=7",
      "https://blog.example/p?ref=home&q=1"};

  CommandResult with =
      Dedupctl({"normalize", "--config", path, urls[0], urls[1]});
  EXPECT_EQ(with.exit_code, 0) << with.err;
  EXPECT_THAT(
      Lines(with.out),
      ElementsAre(
          HasSubstr(R"("normalized":"https://www.shop.example/p?id=7")"),
          HasSubstr(R"("normalized":"https://blog.example/p?q=1")")));

  CommandResult without = Dedupctl({"normalize", urls[0], urls[1]});
  EXPECT_EQ(without.exit_code, 0) << without.err;
  EXPECT_THAT(
      Lines(without.out),
      ElementsAre(
          HasSubstr(
              R"("normalized":"https://www.shop.example/p?color=red&id=7")"),
          HasSubstr(R"("normalized":"https://blog.example/p?q=1&ref=home")")));

  std::ofstream(dir + "/bad.conf") << "host_rules { no_such_field: 1 }\n";
  CommandResult bad =
      Dedupctl({"normalize", "--config", dir + "/bad.conf", urls[0]});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_THAT(bad.out, IsEmpty());
  EXPECT_THAT(Lines(bad.err), ElementsAre(AllOf(StartsWith("dedupctl: "),
                                                HasSubstr("bad.conf"))));

  CommandResult missing =
      Dedupctl({"normalize", "--config", dir + "/missing.conf", urls[0]});
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
  EXPECT_THAT(lines[1],
              StartsWith(R"({"url":"mailto:someone@example.com","error":")"));
  EXPECT_THAT(lines[1], Not(HasSubstr("normalized")));
  EXPECT_THAT(lines[2], HasSubstr(R"("normalized":)"));
}

TEST(DedupctlNormalizeTest, BadBytesInInputStillGiveValidJson) {
  // Invalid UTF-8 and a control character: the line reports an error and
  // echoes the input escaped (\ufffd per bad byte, \u00XX for controls).
  CommandResult r =
      Dedupctl({"normalize"},
               "https://a.example/\xff\xfe\nhttps://a.example/\x01x\n"
               "https://a.example/\"q\\\n");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_THAT(
      lines[0],
      StartsWith(R"({"url":"https://a.example/\ufffd\ufffd","error":")"));
  EXPECT_THAT(lines[1],
              StartsWith(R"({"url":"https://a.example/\u0001x","error":")"));
  EXPECT_THAT(lines[2], StartsWith(R"({"url":"https://a.example/\"q\\",)"));
  for (const std::string& line : lines) {
    for (char c : line) {
      EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20) << line;
    }
  }
}

TEST(DedupctlNormalizeTest, OverlongLineIsAnErrorNotAnAllocation) {
  const std::string huge(200 << 10, 'a');
  CommandResult r = Dedupctl(
      {"normalize"}, "https://a.example/" + huge + "\nhttps://b.example/\n");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(2));
  EXPECT_THAT(lines[0],
              HasSubstr(R"("error":"input line longer than 65536 bytes")"));
  EXPECT_THAT(lines[1], HasSubstr(R"("normalized":"https://b.example/")"));
}

// ----------------------------------------------------------- usage, help

TEST(DedupctlUsageTest, HelpPrintsUsageAndExits0) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"help"},
                                             {"--help"},
                                             {"-h"},
                                             {"normalize", "--help"},
                                             {"url", "check", "--help"}}) {
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
  EXPECT_THAT(lines[0],
              AllOf(StartsWith("dedupctl: "), HasSubstr(GetParam().want)));
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
        UsageCase{
            "FlagOfOtherCommand", {"normalize", "--server", "a:1"}, "--server"},
        UsageCase{"MissingValue",
                  {"normalize", "--config"},
                  "--config needs a value"},
        UsageCase{
            "ExplainWithValue", {"normalize", "--explain=yes"}, "--explain"},
        UsageCase{"BadBase", {"normalize", "--base", "../rel", "x"}, "--base"},
        UsageCase{"UrlWithoutSubcommand", {"url"}, "check or peek"},
        UsageCase{"UrlUnknownSubcommand", {"url", "claim"}, "claim"},
        UsageCase{"MissingServer",
                  {"url", "check", "https://a.example/"},
                  "--server"},
        UsageCase{"BatchZero",
                  {"url", "check", "--server", "127.0.0.1:1", "--batch", "0"},
                  "--batch"},
        UsageCase{"BatchNotANumber",
                  {"url", "peek", "--server=127.0.0.1:1", "--batch=ten"},
                  "--batch"},
        UsageCase{
            "BatchTooLarge",
            {"url", "check", "--server", "127.0.0.1:1", "--batch", "100001"},
            "--batch"},
        UsageCase{
            "DeadlineNegative",
            {"url", "check", "--server", "127.0.0.1:1", "--deadline", "-1"},
            "--deadline"},
        UsageCase{
            "DeadlineNotANumber",
            {"url", "check", "--server", "127.0.0.1:1", "--deadline", "soon"},
            "--deadline"},
        UsageCase{"ContentWithoutSubcommand", {"content"}, "check or peek"},
        UsageCase{"ContentMissingServer", {"content", "check"}, "--server"},
        UsageCase{"ContentTextFileWithoutUrl",
                  {"content", "check", "--server", "127.0.0.1:1",
                   "--text_file", "t.txt"},
                  "need --url"},
        UsageCase{"ContentUrlAndFile",
                  {"content", "peek", "--server", "127.0.0.1:1", "--url",
                   "https://a.example/", "docs.jsonl"},
                  "FILE"},
        UsageCase{"ContentTwoFiles",
                  {"content", "check", "--server", "127.0.0.1:1", "a", "b"},
                  "at most one FILE"},
        UsageCase{"ContentBadDistance",
                  {"content", "check", "--server", "127.0.0.1:1",
                   "--max_hamming_distance", "-1"},
                  "--max_hamming_distance"},
        UsageCase{"ContentUrlFlagOnUrlCommand",
                  {"url", "check", "--server", "127.0.0.1:1", "--url", "x"},
                  "--url"}),
    [](const ::testing::TestParamInfo<UsageCase>& info) {
      return std::string(info.param.name);
    });

TEST(DedupctlUsageTest, DoubleDashEndsFlags) {
  CommandResult r = Dedupctl({"normalize", "--", "--explain"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // "--explain" is a (bad) URL here
  EXPECT_THAT(Lines(r.out),
              ElementsAre(StartsWith(R"({"url":"--explain","error":)")));
}

// ---------------------------------------------------- url, fake server

class DedupctlUrlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, FakeDedupServer::Start());
  }
  FakeDedupService& fake() { return server_->service(); }
  std::unique_ptr<FakeDedupServer> server_;
};

TEST_F(DedupctlUrlTest, CheckPrintsVerdictsInOrderAndBatches) {
  CommandResult r =
      Dedupctl({"url", "check", "--server", server_->address(), "--batch", "2",
                "https://a.example/1", "bad:x", "https://a.example/1",
                "https://a.example/2", "https://a.example/3"});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // one INVALID
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          R"({"url":"https://a.example/1","normalized":"https://a.example/1","verdict":"NEW"})",
          R"({"url":"bad:x","verdict":"INVALID","error":"fake: invalid url"})",
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

TEST_F(DedupctlUrlTest, PeekRecordsNothingAndSendsBaseAndDeadline) {
  CommandResult peek =
      Dedupctl({"url", "peek", "--server", server_->address(), "--base",
                "https://a.example/dir/", "--deadline", "9", "x"});
  EXPECT_EQ(peek.exit_code, 0) << peek.err;
  EXPECT_THAT(peek.out, HasSubstr(R"("verdict":"NEW")"));
  CommandResult again =
      Dedupctl({"url", "peek", "--server", server_->address(), "x"});
  EXPECT_THAT(again.out, HasSubstr(R"("verdict":"NEW")"));

  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(calls[0].mode, dedupd::v1::CLAIM_MODE_PEEK);
  EXPECT_THAT(calls[0].base_urls, ElementsAre("https://a.example/dir/"));
  EXPECT_THAT(calls[1].base_urls, ElementsAre(""));
  ASSERT_TRUE(calls[0].deadline_left.has_value());
  EXPECT_GT(*calls[0].deadline_left, absl::Seconds(5));
  EXPECT_LE(*calls[0].deadline_left,
            absl::Seconds(9) + absl::Milliseconds(100));
}

TEST_F(DedupctlUrlTest, StdinSkipsBlankLinesAndStripsCr) {
  CommandResult r =
      Dedupctl({"url", "check", "--server", server_->address()},
               "https://a.example/1\r\n\n \nhttps://a.example/2\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_THAT(fake().calls(), SizeIs(1));
  EXPECT_THAT(fake().calls()[0].urls,
              ElementsAre("https://a.example/1", "https://a.example/2"));
  EXPECT_THAT(Lines(r.out), SizeIs(2));
}

TEST_F(DedupctlUrlTest, ServerErrorExits2WithOneLine) {
  fake().FailNext(absl::InvalidArgumentError("too many items: 3 > max 2"));
  CommandResult r = Dedupctl({"url", "check", "--server", server_->address(),
                              "https://a.example/1", "https://a.example/2"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err),
              ElementsAre("dedupctl: CheckUrl: too many items: 3 > max 2"));
  EXPECT_THAT(r.out, IsEmpty());
}

TEST(DedupctlUrlConnectTest, UnreachableServerExits2) {
  std::string address;
  {
    ASSERT_OK_AND_ASSIGN(auto server, FakeDedupServer::Start());
    address = server->address();
  }
  CommandResult r = Dedupctl({"url", "check", "--server", address, "--deadline",
                              "5", "https://a.example/"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err),
              ElementsAre(AllOf(StartsWith("dedupctl: CheckUrl: "),
                                HasSubstr("attempts"))));
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
    execl(DEDUPCTL_PATH, DEDUPCTL_PATH, "url", "check", "--server",
          address.c_str(), static_cast<char*>(nullptr));
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
  const bool second =
      first && wrote && fake().WaitForCalls(2, absl::Seconds(30));
  close(in[1]);
  if (!second) kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(first) << "nothing sent while stdin was still open";
  ASSERT_TRUE(second);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_THAT(calls[0].urls,
              ElementsAre("https://a.example/1", "https://a.example/2"));
  EXPECT_THAT(calls[1].urls, ElementsAre("https://a.example/3"));
}

// -------------------------------------------------- content, fake server

TEST_F(DedupctlUrlTest, ContentCheckJsonLinesWithABadLine) {
  const std::string in =
      R"({"url":"https://a.example/1","text":"hello world"})" "\n"
      R"({"url":"https://a.example/2","canonical_url":"https://a.example/c","text":"hello world"})"
      "\r\n"
      "not json\n"
      "\n"
      R"({"url":"https://a.example/3"})" "\n"
      R"({"url":"bad:x","text":"t"})" "\n"
      R"({"url":"https://a.example/4","text":"hello world!!","max_hamming_distance":2,"extra":1})"
      "\n";
  CommandResult r = Dedupctl(
      {"content", "check", "--server", server_->address(), "--batch", "2"},
      in);
  EXPECT_EQ(r.exit_code, 1) << r.err;  // bad lines and an INVALID
  EXPECT_THAT(r.err, IsEmpty());
  const std::string hash = absl::StrFormat(
      "%016x", FakeDedupService::FakeHash("hello world"));
  const std::string near_hash = absl::StrFormat(
      "%016x", FakeDedupService::FakeHash("hello world!!"));
  const std::string content_hash = absl::StrCat(hash, hash, hash, hash);
  EXPECT_THAT(
      Lines(r.out),
      ElementsAre(
          absl::StrCat(
              R"({"verdict":"NEW","url":"https://a.example/1","canonical_url":"https://a.example/1","content_hash":")",
              content_hash, R"(","simhash":")", hash,
              R"(","owner_url":"https://a.example/1","alias_urls":[],"alias_count":0,"near_matches":[],"near_match_count":0,"recrawl":"FIRST_SEEN","first_seen_time":"2024-05-06T07:08:09.5Z"})"),
          absl::StrCat(
              R"({"verdict":"EXACT_DUPLICATE","url":"https://a.example/2","canonical_url":"https://a.example/c","content_hash":")",
              content_hash, R"(","simhash":")", hash,
              R"(","owner_url":"https://a.example/1","alias_urls":["https://a.example/c"],"alias_count":1,"near_matches":[],"near_match_count":0,"recrawl":"FIRST_SEEN","first_seen_time":"2024-05-06T07:08:09.5Z"})"),
          R"({"verdict":"INVALID","line":3,"error":"line 3: invalid JSON: at byte 0: expected '{'"})",
          R"({"verdict":"INVALID","line":5,"url":"https://a.example/3","error":"line 5: missing \"text\""})",
          R"({"verdict":"INVALID","line":6,"url":"bad:x","error":"fake: invalid url"})",
          absl::StrCat(
              R"({"verdict":"NEAR_DUPLICATE","url":"https://a.example/4","canonical_url":"https://a.example/4","content_hash":")",
              absl::StrCat(near_hash, near_hash, near_hash, near_hash),
              R"(","simhash":")", near_hash,
              R"(","owner_url":"https://a.example/1","alias_urls":[],"alias_count":0,"near_matches":[{"url":"https://a.example/1","simhash":")",
              hash, R"(","distance":2,"content_hash":")", content_hash,
              R"("}],"near_match_count":1,"recrawl":"FIRST_SEEN"})")));
  // Bad lines are not sent; good ones are. A batch is --batch input
  // documents, bad lines included (lines 3 and 5 made a batch of nothing).
  std::vector<std::vector<std::string>> sent;
  for (const FakeDedupService::Call& call : fake().calls()) {
    EXPECT_EQ(call.method, "CheckContent");
    EXPECT_EQ(call.mode, dedupd::v1::CLAIM_MODE_CLAIM);
    sent.push_back(call.urls);
  }
  EXPECT_THAT(sent,
              ElementsAre(ElementsAre("https://a.example/1",
                                      "https://a.example/2"),
                          ElementsAre("bad:x", "https://a.example/4")));
}

TEST_F(DedupctlUrlTest, ContentUrlFormReadsTextFileOrStdin) {
  const std::string dir = MakeTempDir("dedupctl_test_");
  ASSERT_FALSE(dir.empty());
  const std::string path = dir + "/page.txt";
  std::ofstream(path) << "line one\nline two\n";
  CommandResult file = Dedupctl(
      {"content", "check", "--server", server_->address(), "--url",
       "https://a.example/p", "--canonical_url", "https://a.example/canon",
       "--max_hamming_distance", "5", "--text_file", path});
  EXPECT_EQ(file.exit_code, 0) << file.err;
  EXPECT_THAT(Lines(file.out),
              ElementsAre(AllOf(
                  StartsWith(R"({"verdict":"NEW","url":"https://a.example/p",)"
                             R"("canonical_url":"https://a.example/canon",)"),
                  HasSubstr(R"("recrawl":"FIRST_SEEN")"))));

  // The same text from stdin, peeked: an exact duplicate, nothing recorded.
  CommandResult in =
      Dedupctl({"content", "peek", "--server", server_->address(), "--url",
                "https://b.example/q"},
               "line one\nline two\n");
  EXPECT_EQ(in.exit_code, 0) << in.err;
  EXPECT_THAT(Lines(in.out),
              ElementsAre(AllOf(
                  StartsWith(R"({"verdict":"EXACT_DUPLICATE",)"),
                  HasSubstr(R"("owner_url":"https://a.example/canon")"),
                  HasSubstr(R"("alias_urls":[])"))));

  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(2));
  ASSERT_THAT(calls[0].content_items, SizeIs(1));
  const dedupd::v1::ContentItem& doc = calls[0].content_items[0];
  EXPECT_EQ(doc.text(), "line one\nline two\n");  // as is
  EXPECT_EQ(doc.canonical_url(), "https://a.example/canon");
  EXPECT_EQ(doc.max_hamming_distance(), 5u);
  EXPECT_EQ(calls[1].mode, dedupd::v1::CLAIM_MODE_PEEK);
  EXPECT_FALSE(calls[1].content_items[0].has_max_hamming_distance());

  CommandResult missing =
      Dedupctl({"content", "check", "--server", server_->address(), "--url",
                "https://a.example/p", "--text_file", dir + "/missing.txt"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(Lines(missing.err),
              ElementsAre(AllOf(StartsWith("dedupctl: "),
                                HasSubstr("missing.txt"))));
  RemoveTree(dir);
}

TEST_F(DedupctlUrlTest, ContentJsonLinesFromAFileAllValidExits0) {
  const std::string dir = MakeTempDir("dedupctl_test_");
  ASSERT_FALSE(dir.empty());
  const std::string path = dir + "/docs.jsonl";
  std::ofstream(path) << R"({"url":"https://a.example/1","text":"x\u00e9"})"
                      << "\n"
                      << R"({"url":"https://a.example/2","text":"y","canonical_url":null})"
                      << "\n";
  CommandResult r = Dedupctl(
      {"content", "peek", "--server", server_->address(), path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(Lines(r.out), SizeIs(2));
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(1));
  ASSERT_THAT(calls[0].content_items, SizeIs(2));
  EXPECT_EQ(calls[0].content_items[0].text(), "x\xc3\xa9");
  EXPECT_EQ(calls[0].content_items[1].canonical_url(), "");
  RemoveTree(dir);
}

TEST_F(DedupctlUrlTest, ContentServerErrorExits2) {
  fake().FailNext(absl::InvalidArgumentError("too many items: 3 > max 2"));
  CommandResult r =
      Dedupctl({"content", "check", "--server", server_->address()},
               R"({"url":"https://a.example/1","text":"t"})" "\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err),
              ElementsAre("dedupctl: CheckContent: too many items: 3 > max 2"));
  EXPECT_THAT(r.out, IsEmpty());
}

TEST(DedupctlContentConnectTest, UnreachableServerExits2) {
  std::string address;
  {
    ASSERT_OK_AND_ASSIGN(auto server, FakeDedupServer::Start());
    address = server->address();
  }
  CommandResult r = Dedupctl({"content", "check", "--server", address,
                              "--deadline", "5", "--url", "https://a.example/"},
                             "text");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(Lines(r.err),
              ElementsAre(AllOf(StartsWith("dedupctl: CheckContent: "),
                                HasSubstr("attempts"))));
}

}  // namespace
}  // namespace dedupd
