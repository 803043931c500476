// End-to-end tests of the URL layer: the real dedupd binary on 127.0.0.1
// port 0, driven by the client library, raw gRPC stubs and dedupctl.
#include <atomic>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/client.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/client_server_test.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::ClientServerTest;
using ::dedupd::testing::IsOk;
using ::dedupd::testing::MakeTempDir;
using ::dedupd::testing::RemoveTree;
using ::dedupd::testing::RunCommand;
using ::dedupd::testing::ServerProcess;
using ::dedupd::testing::ServerTest;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

class E2eTest : public ClientServerTest {
 protected:
  E2eTest() : ClientServerTest(DEDUPD_BINARY, "e2e_url_") {}

  std::unique_ptr<v1::Dedup::Stub> RawStub() {
    return v1::Dedup::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  static std::vector<v1::UrlItem> Items(const std::vector<std::string>& urls,
                                        const std::string& base = "") {
    std::vector<v1::UrlItem> items(urls.size());
    for (size_t i = 0; i < urls.size(); ++i) {
      items[i].set_url(urls[i]);
      items[i].set_base_url(base);
    }
    return items;
  }

  std::vector<v1::UrlResult> Check(const std::vector<std::string>& urls,
                                   v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    absl::StatusOr<std::vector<v1::UrlResult>> r = client_->CheckUrls(Items(urls), mode);
    EXPECT_THAT(r, IsOk());
    return r.ok() ? *r : std::vector<v1::UrlResult>{};
  }
};

TEST_F(E2eTest, ClaimThenSeenWithNormalization) {
  std::vector<v1::UrlResult> first =
      Check({"https://Docs.Example.com:443/a/./b/?utm_source=x&b=2&a=1#top",
             "https://docs.example.com/a/b?a=1&b=2"});
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].verdict(), v1::URL_VERDICT_NEW);
  EXPECT_EQ(first[0].normalized_url(), "https://docs.example.com/a/b?a=1&b=2");
  EXPECT_EQ(first[1].verdict(), v1::URL_VERDICT_SEEN);
  std::vector<v1::UrlResult> again = Check({"https://docs.example.com/a/b?b=2&a=1"});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].verdict(), v1::URL_VERDICT_SEEN);
  EXPECT_GT(again[0].first_seen_time().seconds(), 1700000000);
}

TEST_F(E2eTest, RelativeUrlsResolveAgainstTheBase) {
  absl::StatusOr<std::vector<v1::UrlResult>> r =
      client_->CheckUrls(Items({"../c/d.html", "/root", "?q=1", "//other.example/x"},
                               "http://site.example/a/b/page.html"),
                         v1::CLAIM_MODE_CLAIM);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ((*r)[0].normalized_url(), "http://site.example/a/c/d.html");
  EXPECT_EQ((*r)[1].normalized_url(), "http://site.example/root");
  EXPECT_EQ((*r)[2].normalized_url(), "http://site.example/a/b/page.html?q=1");
  EXPECT_EQ((*r)[3].normalized_url(), "http://other.example/x");
}

TEST_F(E2eTest, BadItemsGetTheirOwnErrorsAndTheServerKeepsServing) {
  const std::vector<std::string> bad = {
      "",
      std::string(1 << 20, 'x'),
      "http://a.example/\xc3\x28",
      std::string("http://a.example/\0x", 19),
      "javascript:alert(1)",
      "mailto:a@example.com",
      "file:///etc/passwd",
      "\xde\xad\xbe\xef garbage \x01",
      "http://",
      "http://exa mple.com:99999/",
  };
  std::vector<std::string> batch = {"http://ok.example/1"};
  batch.insert(batch.end(), bad.begin(), bad.end());
  batch.push_back("http://ok.example/2");
  std::vector<v1::UrlResult> r = Check(batch);
  ASSERT_EQ(r.size(), batch.size());
  EXPECT_EQ(r.front().verdict(), v1::URL_VERDICT_NEW);
  EXPECT_EQ(r.back().verdict(), v1::URL_VERDICT_NEW);
  for (size_t i = 1; i + 1 < r.size(); ++i) {
    EXPECT_EQ(r[i].verdict(), v1::URL_VERDICT_INVALID) << i;
    EXPECT_THAT(r[i].error(), Not(IsEmpty())) << i;
  }
  // Still serving.
  EXPECT_EQ(Check({"http://ok.example/3"})[0].verdict(), v1::URL_VERDICT_NEW);
}

TEST_F(E2eTest, WholeRequestLimitsNameTheLimit) {
  auto stub = RawStub();
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::CheckUrlRequest req;
    v1::CheckUrlResponse resp;
    grpc::Status s = stub->CheckUrl(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("no items"));
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::CheckUrlRequest req;
    for (int i = 0; i < 10001; ++i)
      req.add_items()->set_url("http://a.example/" + std::to_string(i));
    v1::CheckUrlResponse resp;
    grpc::Status s = stub->CheckUrl(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("limit is 10000"));
  }
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::CheckUrlRequest req;
    for (int i = 0; i < 17; ++i) req.add_items()->set_url(std::string(1 << 20, 'a'));
    v1::CheckUrlResponse resp;
    grpc::Status s = stub->CheckUrl(&ctx, req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_THAT(s.error_message(), HasSubstr(std::to_string(16 << 20)));
  }
  EXPECT_EQ(Check({"http://still.example/"})[0].verdict(), v1::URL_VERDICT_NEW);
}

TEST_F(E2eTest, ConcurrentClaimsGiveExactlyOneNewPerUrl) {
  constexpr int kThreads = 8, kBatches = 10, kBatch = 300, kPool = 5000;
  std::vector<std::vector<std::string>> news(kThreads);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1000 + t);
      std::uniform_int_distribution<int> pick(0, kPool - 1);
      for (int b = 0; b < kBatches; ++b) {
        std::vector<std::string> urls;
        for (int i = 0; i < kBatch; ++i) {
          urls.push_back(absl::StrCat("http://c.example/p/", pick(rng)));
        }
        auto r = client_->CheckUrls(Items(urls), v1::CLAIM_MODE_CLAIM);
        if (!r.ok()) {
          ++errors;
          continue;
        }
        for (const v1::UrlResult& res : *r) {
          if (res.verdict() == v1::URL_VERDICT_NEW) news[t].push_back(res.normalized_url());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(errors.load(), 0);
  std::multiset<std::string> all;
  for (const auto& v : news) all.insert(v.begin(), v.end());
  std::set<std::string> distinct(all.begin(), all.end());
  EXPECT_EQ(all.size(), distinct.size()) << "some URL was answered NEW twice";
  // Every URL anybody sent is now recorded: a peek of the pool answers SEEN
  // exactly for the claimed ones.
  std::vector<std::string> pool;
  for (int i = 0; i < kPool; ++i) pool.push_back(absl::StrCat("http://c.example/p/", i));
  size_t seen = 0;
  for (const v1::UrlResult& r : Check(pool, v1::CLAIM_MODE_PEEK)) {
    if (r.verdict() == v1::URL_VERDICT_SEEN) {
      ++seen;
      EXPECT_TRUE(distinct.count(r.normalized_url())) << r.normalized_url();
    }
  }
  EXPECT_EQ(seen, distinct.size());
}

TEST_F(E2eTest, RestartKeepsEverySeen) {
  std::vector<std::string> urls;
  for (int i = 0; i < 3000; ++i) urls.push_back(absl::StrCat("https://r.example/doc/", i));
  for (const v1::UrlResult& r : Check(urls)) ASSERT_EQ(r.verdict(), v1::URL_VERDICT_NEW);
  absl::StatusOr<int> code = server_->Terminate();
  ASSERT_THAT(code, IsOk());
  EXPECT_EQ(*code, 0) << server_->Logs();
  EXPECT_THAT(server_->Logs(), HasSubstr("stopped cleanly"));
  StartServer();
  for (const v1::UrlResult& r : Check(urls, v1::CLAIM_MODE_PEEK)) {
    EXPECT_EQ(r.verdict(), v1::URL_VERDICT_SEEN) << r.normalized_url();
  }
}

TEST_F(E2eTest, KillMinus9LosesNoAcknowledgedNew) {
  // Several clients claim as fast as they can; the server is SIGKILLed
  // while they run. Every URL answered NEW before the kill must be SEEN
  // after the restart.
  constexpr int kThreads = 4, kMaxBatches = 400, kBatch = 200;
  std::vector<std::vector<std::string>> acked(kThreads);
  std::atomic<int> batches_done{0};
  std::vector<std::thread> threads;
  ClientOptions no_retry;
  no_retry.max_attempts = 1;
  no_retry.deadline = absl::Seconds(10);
  auto client = DedupClient::Connect(server_->address(), no_retry);
  ASSERT_THAT(client, IsOk());
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kMaxBatches; ++b) {
        std::vector<std::string> urls;
        for (int i = 0; i < kBatch; ++i) {
          urls.push_back(absl::StrCat("http://k.example/", t, "/", b, "/", i));
        }
        auto r = (*client)->CheckUrls(Items(urls), v1::CLAIM_MODE_CLAIM);
        if (!r.ok()) return;  // the server is gone
        for (const v1::UrlResult& res : *r) {
          if (res.verdict() == v1::URL_VERDICT_NEW) acked[t].push_back(res.normalized_url());
        }
        ++batches_done;
      }
    });
  }
  // Kill once some work is acknowledged (bounded wait on the counter).
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (batches_done.load() < 20 && absl::Now() < give_up) std::this_thread::yield();
  server_->Kill();
  for (auto& th : threads) th.join();
  size_t total = 0;
  for (const auto& v : acked) total += v.size();
  ASSERT_GT(total, 0u);
  StartServer();
  std::vector<std::string> all;
  for (const auto& v : acked) all.insert(all.end(), v.begin(), v.end());
  size_t lost = 0;
  for (const v1::UrlResult& r : Check(all, v1::CLAIM_MODE_PEEK)) {
    if (r.verdict() != v1::URL_VERDICT_SEEN) ++lost;
  }
  EXPECT_EQ(lost, 0u) << "of " << total << " acknowledged NEW";
}

TEST_F(E2eTest, HealthIsServing) {
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  ASSERT_TRUE(stub->Check(&ctx, req, &resp).ok());
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(E2eTest, ReflectionListsTheService) {
  auto stub = grpc::reflection::v1alpha::ServerReflection::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  auto stream = stub->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest req;
  req.set_list_services("");
  ASSERT_TRUE(stream->Write(req));
  grpc::reflection::v1alpha::ServerReflectionResponse resp;
  ASSERT_TRUE(stream->Read(&resp));
  std::vector<std::string> names;
  for (const auto& s : resp.list_services_response().service()) names.push_back(s.name());
  EXPECT_THAT(names, ::testing::Contains("dedupd.v1.Dedup"));
  req.set_file_containing_symbol("dedupd.v1.Dedup");
  ASSERT_TRUE(stream->Write(req));
  ASSERT_TRUE(stream->Read(&resp));
  EXPECT_GT(resp.file_descriptor_response().file_descriptor_proto_size(), 0);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());
}

TEST_F(E2eTest, DedupctlChecksAgainstTheServer) {
  const std::string input =
      "https://d.example/x?utm_medium=a\nmailto:z@example.com\nhttps://d.example/x\n";
  auto r = RunCommand({DEDUPCTL_BINARY, "url", "check", "--server", server_->address()}, input);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->exit_code, 1) << r->err;  // one item invalid
  std::vector<std::string> lines = absl::StrSplit(r->out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 3u) << r->out;
  EXPECT_THAT(lines[0], HasSubstr("\"verdict\":\"NEW\""));
  EXPECT_THAT(lines[0], HasSubstr("\"normalized\":\"https://d.example/x\""));
  EXPECT_THAT(lines[1], HasSubstr("\"verdict\":\"INVALID\""));
  EXPECT_THAT(lines[2], HasSubstr("\"verdict\":\"SEEN\""));
  auto peek = RunCommand({DEDUPCTL_BINARY, "url", "peek", "--server", server_->address(),
                          "https://d.example/x", "https://d.example/new"},
                         "");
  ASSERT_THAT(peek, IsOk());
  EXPECT_EQ(peek->exit_code, 0) << peek->err;
  EXPECT_THAT(peek->out, HasSubstr("\"verdict\":\"SEEN\""));
  EXPECT_THAT(peek->out, HasSubstr("\"verdict\":\"NEW\""));
}

TEST_F(E2eTest, DedupctlConnectionErrorExits2) {
  server_->Kill();
  auto r = RunCommand({DEDUPCTL_BINARY, "url", "check", "--server", "127.0.0.1:1", "--deadline",
                       "5", "http://a.example/"},
                      "");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->exit_code, 2);
  EXPECT_THAT(r->err, Not(IsEmpty()));
}

TEST_F(E2eTest, SecondServerOnTheSameDataDirFailsClearly) {
  auto second = RunCommand({DEDUPD_BINARY, "--listen=127.0.0.1:0", "--data_dir=" + DataDir()}, "");
  ASSERT_THAT(second, IsOk());
  EXPECT_NE(second->exit_code, 0);
  EXPECT_THAT(second->err, HasSubstr("in use by another process"));
}

TEST(E2eStartupTest, BadFlagsAndConfigGiveOneLineErrors) {
  const std::string dir = MakeTempDir("e2e_flags_");
  struct Case {
    std::vector<std::string> args;
    const char* want;
  } cases[] = {
      {{"--no_such_flag=1"}, "no_such_flag"},
      {{"--max_batch_items=0"}, "max_batch_items"},
      {{"--write_buffer_mb=0"}, "write_buffer_mb"},
      {{"--url_memtable=btree"}, "--url_memtable=btree must be hash or skiplist"},
      {{"--url_compaction=fifo"}, "--url_compaction=fifo must be universal or leveled"},
      {{"--content_compaction=tiered"}, "--content_compaction=tiered must be universal or leveled"},
      {{"--listen=nonsense"}, "--listen=nonsense"},
      {{"--config=" + dir + "/missing.conf"}, "missing.conf"},
      {{"stray"}, "unexpected argument"},
      // A second StatefulSet replica of the embedded store stops before serving.
      {{"--statefulset_pod_name=dedupd-1"}, "embedded store cannot be shared"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {DEDUPD_BINARY, "--data_dir=" + dir + "/d",
                                     "--listen=127.0.0.1:0"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto r = RunCommand(argv, "");
    ASSERT_THAT(r, IsOk());
    EXPECT_NE(r->exit_code, 0) << c.want;
    EXPECT_THAT(r->err, HasSubstr(c.want));
    // Refused before the port is bound, let alone served.
    EXPECT_THAT(r->err, Not(HasSubstr("listening on"))) << c.want;
  }
  {
    std::FILE* f = std::fopen((dir + "/bad.conf").c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs("host_rules {\n  hosts: \"a.example\"\n  bogus_field: 1\n}\n", f);
    std::fclose(f);
    auto r = RunCommand({DEDUPD_BINARY, "--data_dir=" + dir + "/d", "--listen=127.0.0.1:0",
                         "--config=" + dir + "/bad.conf"},
                        "");
    ASSERT_THAT(r, IsOk());
    EXPECT_NE(r->exit_code, 0);
    EXPECT_THAT(r->err, HasSubstr("bad.conf:3:"));
  }
  RemoveTree(dir);
}

}  // namespace
}  // namespace dedupd
