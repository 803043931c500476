// e2e_full_disk_test: the real dedupd on a full disk. Its data
// directory is on a small tmpfs; a ballast file takes the room. Claims then
// fail with RESOURCE_EXHAUSTED and a message that says what to do, nothing
// failed is acknowledged, the server stays up and keeps answering reads
// (peeks, health SERVING), and once the ballast is deleted writes work
// again without a restart. A SIGTERM on a full disk shuts down cleanly and
// the restart has every acknowledged claim. Needs root to mount (CI runs as
// root); skips with the reason otherwise.

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tmpfs_mount.h"

namespace dedupd::testing {
namespace {

using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr uint64_t kDiskBytes = uint64_t{48} << 20;
constexpr uint64_t kLeaveBytes = uint64_t{1} << 20;
constexpr int kBatch = 500;
// ~45 KB of log per batch: 400 batches are far more than kLeaveBytes.
constexpr int kMaxBatches = 400;

std::vector<v1::UrlItem> Items(const std::vector<std::string>& urls) {
  std::vector<v1::UrlItem> items(urls.size());
  for (size_t i = 0; i < urls.size(); ++i) items[i].set_url(urls[i]);
  return items;
}

class E2eFullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TmpfsMount>> mnt = TmpfsMount::Mount(kDiskBytes);
    if (!mnt.ok()) {
      GTEST_SKIP() << "full-disk e2e test skipped: " << mnt.status().ToString();
    }
    mnt_ = *std::move(mnt);
  }

  void TearDown() override {
    // The server first: the mount is busy while it runs.
    server_.reset();
    mnt_.reset();
  }

  void Start() {
    absl::StatusOr<std::unique_ptr<ServerProcess>> s =
        ServerProcess::Start(DEDUPD_BINARY, mnt_->path() + "/data",
                             {"--block_cache_mb=16", "--url_filter_expected_urls=100000",
                              "--worker_threads=2", "--metrics_listen=127.0.0.1:0"},
                             absl::Seconds(60));
    ASSERT_THAT(s, IsOk());
    server_ = *std::move(s);
    metrics_port_ = ::dedupd::testing::MetricsPort(server_->Logs());
    ASSERT_GT(metrics_port_, 0) << server_->Logs();
    ClientOptions options;
    options.deadline = absl::Seconds(20);
    options.max_attempts = 1;  // see every error as it is
    absl::StatusOr<std::unique_ptr<DedupClient>> c =
        DedupClient::Connect(server_->address(), options);
    ASSERT_THAT(c, IsOk());
    client_ = *std::move(c);
    health_ = grpc::health::v1::Health::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  HealthCheckResponse::ServingStatus Health(const std::string& service) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    HealthCheckRequest request;
    request.set_service(service);
    HealthCheckResponse response;
    const grpc::Status s = health_->Check(&context, request, &response);
    return s.ok() ? response.status() : HealthCheckResponse::UNKNOWN;
  }

  std::vector<std::string> Batch(int b) {
    std::vector<std::string> urls;
    for (int i = 0; i < kBatch; ++i) {
      urls.push_back(
          absl::StrCat("https://full.example/a/path/to/page/", round_, "/", b, "/", i, "?id=", i));
    }
    return urls;
  }

  // Takes the disk's room but kLeaveBytes and claims batches until a claim
  // fails; adds the claimed URLs to acked_, sets failed_ and returns the
  // failure.
  absl::Status FillUntilFull() {
    ++round_;
    absl::Status ballast = mnt_->AddBallast(kLeaveBytes);
    if (!ballast.ok()) return ballast;
    for (int b = 0; b < kMaxBatches; ++b) {
      std::vector<std::string> urls = Batch(b);
      absl::StatusOr<std::vector<v1::UrlResult>> r =
          client_->CheckUrls(Items(urls), v1::CLAIM_MODE_CLAIM);
      if (!r.ok()) {
        failed_ = std::move(urls);
        return r.status();
      }
      for (size_t i = 0; i < urls.size(); ++i) {
        EXPECT_EQ((*r)[i].verdict(), v1::URL_VERDICT_NEW) << urls[i];
      }
      acked_.insert(acked_.end(), urls.begin(), urls.end());
    }
    return absl::InternalError(absl::StrCat(kMaxBatches, " batches fit on the disk"));
  }

  // The dedupd_store_writes_refused gauge; -1 when the scrape fails.
  double WritesRefused() {
    return ::dedupd::testing::ParseExposition(::dedupd::testing::ScrapeMetrics(metrics_port_))
        .Value("dedupd_store_writes_refused");
  }

  // Peeks `urls`; returns how many have `verdict`.
  size_t CountPeek(const std::vector<std::string>& urls, v1::UrlVerdict verdict) {
    absl::StatusOr<std::vector<v1::UrlResult>> r =
        client_->CheckUrls(Items(urls), v1::CLAIM_MODE_PEEK);
    EXPECT_THAT(r, IsOk());
    if (!r.ok()) return 0;
    size_t n = 0;
    for (const v1::UrlResult& x : *r) n += x.verdict() == verdict ? 1 : 0;
    return n;
  }

  std::unique_ptr<TmpfsMount> mnt_;
  std::unique_ptr<ServerProcess> server_;
  int metrics_port_ = 0;
  std::unique_ptr<DedupClient> client_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_;
  int round_ = 0;
  std::vector<std::string> acked_;
  std::vector<std::string> failed_;
};

TEST_F(E2eFullDiskTest, WritesFailReadsGoOnRecoversWithoutRestart) {
  Start();
  EXPECT_EQ(WritesRefused(), 0);
  const absl::Status full = FillUntilFull();
  ASSERT_THAT(full, StatusIs(absl::StatusCode::kResourceExhausted,
                             AllOf(HasSubstr("No space left on device"),
                                   HasSubstr("free disk space"), HasSubstr("reads still work"))))
      << server_->Logs();
  ASSERT_FALSE(acked_.empty());

  // Full: more writes fail the same way; reads answer; health stays
  // SERVING (reads are served; a restart would not free the disk).
  EXPECT_THAT(client_->CheckUrls(Items({"https://full.example/one-more"}), v1::CLAIM_MODE_CLAIM),
              StatusIs(absl::StatusCode::kResourceExhausted));
  std::vector<v1::ContentItem> doc(1);
  doc[0].set_url("https://full.example/doc");
  doc[0].set_text("The text of a page that arrives while the disk is full.");
  EXPECT_THAT(client_->CheckContent(doc, v1::CLAIM_MODE_CLAIM),
              StatusIs(absl::StatusCode::kResourceExhausted));
  absl::StatusOr<std::vector<v1::ContentResult>> peeked =
      client_->CheckContent(doc, v1::CLAIM_MODE_PEEK);
  ASSERT_THAT(peeked, IsOk());
  EXPECT_EQ((*peeked)[0].verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(CountPeek(acked_, v1::URL_VERDICT_SEEN), acked_.size());
  EXPECT_EQ(CountPeek(failed_, v1::URL_VERDICT_NEW), failed_.size())
      << "a failed claim was recorded";
  EXPECT_EQ(Health(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("dedupd.v1.Dedup"), HealthCheckResponse::SERVING);
  EXPECT_EQ(WritesRefused(), 1) << "a full disk must show on /metrics";

  // Free the room: writes resume within a few of the store's 1 s retries,
  // with no restart; the failed batch is NEW once.
  ASSERT_THAT(mnt_->RemoveBallast(), IsOk());
  absl::StatusOr<std::vector<v1::UrlResult>> retried;
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  for (int attempt = 0; attempt < 100; ++attempt) {
    retried = client_->CheckUrls(Items(failed_), v1::CLAIM_MODE_CLAIM);
    if (retried.ok() || retried.status().code() != absl::StatusCode::kResourceExhausted ||
        absl::Now() > give_up) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_THAT(retried, IsOk()) << server_->Logs();
  for (const v1::UrlResult& r : *retried) EXPECT_EQ(r.verdict(), v1::URL_VERDICT_NEW);
  EXPECT_EQ(WritesRefused(), 0);
  EXPECT_EQ(CountPeek(failed_, v1::URL_VERDICT_SEEN), failed_.size());
  absl::StatusOr<std::vector<v1::ContentResult>> claimed =
      client_->CheckContent(doc, v1::CLAIM_MODE_CLAIM);
  ASSERT_THAT(claimed, IsOk());
  EXPECT_EQ((*claimed)[0].verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(::kill(server_->pid(), 0), 0) << "the server is gone";
}

TEST_F(E2eFullDiskTest, ShutdownOnAFullDiskIsCleanAndLosesNothing) {
  Start();
  ASSERT_THAT(FillUntilFull(), StatusIs(absl::StatusCode::kResourceExhausted));
  ASSERT_FALSE(acked_.empty());
  // SIGTERM while full: the store closes without the flush and WAL sync it
  // cannot do (with RocksDB's own logger and a WAL sync, this aborted).
  absl::StatusOr<int> code = server_->Terminate(absl::Seconds(30));
  ASSERT_THAT(code, IsOk());
  EXPECT_EQ(*code, 0) << server_->Logs();
  EXPECT_THAT(server_->Logs(), HasSubstr("closed without flushing"));
  server_.reset();

  ASSERT_THAT(mnt_->RemoveBallast(), IsOk());
  Start();
  EXPECT_EQ(CountPeek(acked_, v1::URL_VERDICT_SEEN), acked_.size());
  absl::StatusOr<std::vector<v1::UrlResult>> r =
      client_->CheckUrls(Items(failed_), v1::CLAIM_MODE_CLAIM);
  ASSERT_THAT(r, IsOk());
  for (const v1::UrlResult& x : *r) EXPECT_EQ(x.verdict(), v1::URL_VERDICT_NEW);
}

}  // namespace
}  // namespace dedupd::testing
