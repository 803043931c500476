// Runs the built dedupctl binary (DEDUPCTL_PATH, injected by CMake):
// `normalize` offline, and `url check|peek` against the in-process fake
// Dedup service on 127.0.0.1:<ephemeral>.
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
            "--deadline"}),
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

}  // namespace
}  // namespace dedupd
