// End-to-end test of per-URL store errors on a Redis Cluster
// (--store=redis_cluster): the real dedupd binary on 127.0.0.1 over its own
// 3-master, 3-replica redis-server cluster on loopback, whose node timeout
// (60 s) is far longer than the test keeps a master stopped, so that no
// failover and no CLUSTERDOWN happens meanwhile. One master is stopped
// (SIGSTOP: it keeps its port, answers nothing, as a hung or partitioned
// node would), then:
//   - CheckUrl with per_item_store_errors answers the stopped master's URLs
//     INVALID with ERROR_REASON_STORE_UNAVAILABLE and a message naming the
//     master, the others NEW, a bad URL still BAD_URL;
//   - without per_item_store_errors the call fails UNAVAILABLE naming the
//     master, as before the field existed;
//   - CompleteUrls with per_item_store_errors likewise fails only those
//     URLs;
//   - /metrics counts them as store_unavailable;
// and once it runs again (SIGCONT), the retry with the same claim_id
// answers every URL NEW, and another claim_id every URL SEEN.
// The C++ client (client/client.h) against the same stopped master: it
// sends the failed URLs again, hands back in their places those still
// failing after its bound, and once the master runs again its re-sends,
// carrying the request's claim id, are answered NEW.
//
// Every RPC has a deadline; every loop is bounded; the server and the
// Redis nodes are stopped by PID.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "storage/redis/cluster_slots.h"
#include "storage/redis/redis_url_format.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/redis_cluster_fixture.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::RedisCluster;
using ::dedupd::testing::ServerProcess;
using ::testing::HasSubstr;

// A call that meets the stopped master waits out the router's command
// timeout (2 s) once or twice; generous for a loaded machine.
constexpr absl::Duration kRpcDeadline = absl::Seconds(30);
constexpr char kPrefix[] = "e2eu:";

grpc::Status CheckUrl(v1::Dedup::Stub& stub, const std::vector<std::string>& urls,
                      const std::string& claim_id, bool per_item, v1::CheckUrlResponse* response) {
  v1::CheckUrlRequest request;
  request.set_claim_id(claim_id);
  request.set_per_item_store_errors(per_item);
  for (const std::string& u : urls) request.add_items()->set_url(u);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
  return stub.CheckUrl(&context, request, response);
}

class E2eRedisUnreachableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RedisCluster::Options options;
    options.node_timeout_ms = 60000;  // no failover while a master is stopped
    absl::StatusOr<std::unique_ptr<RedisCluster>> cluster = RedisCluster::Start(options);
    ASSERT_THAT(cluster.status(), IsOk());
    cluster_ = *std::move(cluster);
    dir_ = testing::MakeTempDir("e2e_redis_unreachable_");
    absl::StatusOr<std::unique_ptr<ServerProcess>> p = ServerProcess::Start(
        DEDUPD_BINARY, dir_ + "/unused-data",
        {"--store=redis_cluster", "--redis_nodes=" + absl::StrJoin(cluster_->addresses(), ","),
         absl::StrCat("--redis_key_prefix=", kPrefix), "--metrics_listen=127.0.0.1:0"},
        absl::Seconds(30));
    ASSERT_THAT(p.status(), IsOk());
    server_ = *std::move(p);
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    dedup_ = v1::Dedup::NewStub(channel_);
  }
  void TearDown() override {
    server_.reset();  // stopped by PID
    cluster_.reset();
    if (!dir_.empty()) testing::RemoveTree(dir_);
  }

  std::unique_ptr<RedisCluster> cluster_;
  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Dedup::Stub> dedup_;
};

TEST_F(E2eRedisUnreachableTest, AStoppedMasterFailsOnlyItsUrlsAndTheRetryAnswersThemAll) {
  std::vector<std::string> urls;
  for (int i = 0; i < 60; ++i) urls.push_back(absl::StrCat("http://unreachable.example/p/", i));

  // Which master holds each URL's record (the URLs are normalized as
  // given; the slot map is the cluster's own).
  size_t victim = cluster_->size();
  for (size_t i = 0; i < cluster_->size() && victim == cluster_->size(); ++i) {
    if (cluster_->started_as_master(i)) victim = i;
  }
  ASSERT_LT(victim, cluster_->size());
  const std::string stopped = cluster_->address(victim);
  std::vector<bool> on_victim;
  std::set<size_t> masters;
  for (const std::string& u : urls) {
    absl::StatusOr<size_t> owner =
        cluster_->SlotOwner(redis::KeySlot(redis::UrlRecordKey(kPrefix, "", u)));
    ASSERT_THAT(owner.status(), IsOk());
    masters.insert(*owner);
    on_victim.push_back(*owner == victim);
  }
  ASSERT_EQ(masters.size(), 3u) << "the batch must span every master";

  std::vector<std::string> batch = urls;
  batch.push_back("not a url");  // a bad item stays BAD_URL
  ASSERT_THAT(cluster_->StopNode(victim), IsOk());
  const absl::Time stopped_at = absl::Now();

  v1::CheckUrlResponse response;
  grpc::Status s = CheckUrl(*dedup_, batch, "batch-1", /*per_item=*/true, &response);
  ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message() << "\n" << server_->Logs();
  ASSERT_EQ(response.results_size(), static_cast<int>(batch.size()));
  int failed = 0;
  for (size_t i = 0; i < urls.size(); ++i) {
    const v1::UrlResult& r = response.results(static_cast<int>(i));
    EXPECT_EQ(r.normalized_url(), urls[i]);
    if (on_victim[i]) {
      ++failed;
      EXPECT_EQ(r.verdict(), v1::URL_VERDICT_INVALID) << urls[i];
      EXPECT_EQ(r.error_reason(), v1::ERROR_REASON_STORE_UNAVAILABLE) << urls[i];
      EXPECT_THAT(r.error(), HasSubstr(absl::StrCat("redis node ", stopped, ": "))) << urls[i];
      EXPECT_THAT(r.error(), HasSubstr("retry it with the same claim_id")) << urls[i];
    } else {
      EXPECT_EQ(r.verdict(), v1::URL_VERDICT_NEW) << urls[i] << ": " << r.error();
    }
  }
  EXPECT_GT(failed, 5);
  EXPECT_LT(failed, 40);
  const v1::UrlResult& bad = response.results(static_cast<int>(urls.size()));
  EXPECT_EQ(bad.verdict(), v1::URL_VERDICT_INVALID);
  EXPECT_EQ(bad.error_reason(), v1::ERROR_REASON_BAD_URL);

  // A client that did not ask for per-URL errors sees the call fail, as
  // before: UNAVAILABLE, naming the master.
  response.Clear();
  s = CheckUrl(*dedup_, urls, "batch-1", /*per_item=*/false, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr(absl::StrCat("redis node ", stopped, ": ")));
  EXPECT_THAT(s.error_message(), HasSubstr(absl::StrCat(failed, " of ", urls.size(), " URLs")));

  // CompleteUrls per URL: nothing was leased, so the others are already
  // confirmed.
  v1::CompleteUrlsRequest complete;
  complete.set_claim_id("batch-1");
  complete.set_per_item_store_errors(true);
  for (const std::string& u : urls) complete.add_items()->set_url(u);
  v1::CompleteUrlsResponse completed;
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    s = dedup_->CompleteUrls(&context, complete, &completed);
  }
  ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
  ASSERT_EQ(completed.results_size(), static_cast<int>(urls.size()));
  for (size_t i = 0; i < urls.size(); ++i) {
    const v1::CompleteResult& r = completed.results(static_cast<int>(i));
    if (on_victim[i]) {
      EXPECT_EQ(r.verdict(), v1::COMPLETE_VERDICT_INVALID) << urls[i];
      EXPECT_EQ(r.error_reason(), v1::ERROR_REASON_STORE_UNAVAILABLE) << urls[i];
      EXPECT_THAT(r.error(), HasSubstr(absl::StrCat("redis node ", stopped, ": "))) << urls[i];
    } else {
      EXPECT_EQ(r.verdict(), v1::COMPLETE_VERDICT_ALREADY_CONFIRMED) << urls[i] << r.error();
    }
  }

  const absl::Duration stopped_for = absl::Now() - stopped_at;
  ASSERT_THAT(cluster_->ContinueNode(victim), IsOk());
  std::printf("e2e redis unreachable: master %s stopped for %s (3 calls)\n", stopped.c_str(),
              absl::FormatDuration(stopped_for).c_str());
  ASSERT_LT(stopped_for, absl::Seconds(50)) << "too close to the node timeout";

  const int metrics_port = testing::LoggedPort(server_->Logs(), "metrics");
  ASSERT_GT(metrics_port, 0) << server_->Logs();
  const testing::Exposition e = testing::ParseExposition(testing::ScrapeMetrics(metrics_port));
  EXPECT_EQ(e.Value("dedupd_url_verdicts_total", {{"verdict", "store_unavailable"}}), failed);
  EXPECT_EQ(e.Value("dedupd_url_verdicts_total", {{"verdict", "invalid"}}), 1);
  EXPECT_EQ(e.Value("dedupd_url_completions_total", {{"outcome", "store_unavailable"}}), failed);

  // Running again: the retry with the same claim_id answers every URL NEW
  // (those the stopped master recorded when it woke as the first claim,
  // the others now), and nobody else gets any of them.
  response.Clear();
  s = CheckUrl(*dedup_, urls, "batch-1", /*per_item=*/true, &response);
  ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
  for (size_t i = 0; i < urls.size(); ++i) {
    const v1::UrlResult& r = response.results(static_cast<int>(i));
    EXPECT_EQ(r.verdict(), v1::URL_VERDICT_NEW) << urls[i] << ": " << r.error();
  }
  response.Clear();
  s = CheckUrl(*dedup_, urls, "batch-2", /*per_item=*/true, &response);
  ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
  for (size_t i = 0; i < urls.size(); ++i) {
    const v1::UrlResult& r = response.results(static_cast<int>(i));
    EXPECT_EQ(r.verdict(), v1::URL_VERDICT_SEEN) << urls[i] << ": " << r.error();
  }
}

TEST_F(E2eRedisUnreachableTest, TheClientSendsFailedUrlsAgainAndAnswersThemInPlace) {
  std::vector<std::string> urls;
  for (int i = 0; i < 40; ++i) urls.push_back(absl::StrCat("http://client-retry.example/p/", i));
  size_t victim = cluster_->size();
  for (size_t i = 0; i < cluster_->size() && victim == cluster_->size(); ++i) {
    if (cluster_->started_as_master(i)) victim = i;
  }
  ASSERT_LT(victim, cluster_->size());
  const std::string stopped = cluster_->address(victim);
  std::vector<bool> on_victim;
  int failed = 0;
  for (const std::string& u : urls) {
    absl::StatusOr<size_t> owner =
        cluster_->SlotOwner(redis::KeySlot(redis::UrlRecordKey(kPrefix, "", u)));
    ASSERT_THAT(owner.status(), IsOk());
    on_victim.push_back(*owner == victim);
    failed += on_victim.back() ? 1 : 0;
  }
  ASSERT_GT(failed, 3);
  ASSERT_LT(failed, 30);
  std::vector<v1::UrlItem> items(urls.size());
  for (size_t i = 0; i < urls.size(); ++i) items[i].set_url(urls[i]);

  ClientOptions options;
  options.deadline = kRpcDeadline;
  options.max_attempts = 1;  // a whole-call UNAVAILABLE would fail the call
  options.initial_backoff = absl::Milliseconds(10);
  options.max_backoff = absl::Milliseconds(20);
  options.max_store_attempts = 2;
  absl::StatusOr<std::unique_ptr<DedupClient>> client =
      DedupClient::Connect(server_->address(), options);
  ASSERT_THAT(client.status(), IsOk());
  UrlCheckOptions claim;
  claim.claim_id = "client-1";

  // Stopped through both sends: its URLs come back STORE_UNAVAILABLE in
  // their places, the others NEW.
  ASSERT_THAT(cluster_->StopNode(victim), IsOk());
  const absl::Time stopped_at = absl::Now();
  absl::StatusOr<std::vector<v1::UrlResult>> results =
      (*client)->CheckUrls(items, v1::CLAIM_MODE_CLAIM, claim);
  ASSERT_THAT(results.status(), IsOk()) << server_->Logs();
  ASSERT_EQ(results->size(), urls.size());
  for (size_t i = 0; i < urls.size(); ++i) {
    const v1::UrlResult& r = (*results)[i];
    EXPECT_EQ(r.normalized_url(), urls[i]);
    if (on_victim[i]) {
      EXPECT_EQ(r.verdict(), v1::URL_VERDICT_INVALID) << urls[i];
      EXPECT_EQ(r.error_reason(), v1::ERROR_REASON_STORE_UNAVAILABLE) << urls[i];
      EXPECT_THAT(r.error(), HasSubstr(absl::StrCat("redis node ", stopped, ": "))) << urls[i];
      EXPECT_THAT(r.error(), HasSubstr("(CheckUrl: still unavailable after 2 attempts)"));
    } else {
      EXPECT_EQ(r.verdict(), v1::URL_VERDICT_NEW) << urls[i] << ": " << r.error();
    }
  }

  // Still stopped when the call is made again with the same claim id; the
  // master runs again once the server has answered its URLs
  // STORE_UNAVAILABLE once more, and the client's next re-send, with the
  // request's claim id, is answered NEW for them (as the first claim of
  // the URLs the master recorded when it woke), like the others.
  const int metrics_port = testing::LoggedPort(server_->Logs(), "metrics");
  ASSERT_GT(metrics_port, 0) << server_->Logs();
  const auto store_unavailable = [&] {
    return testing::ParseExposition(testing::ScrapeMetrics(metrics_port))
        .Value("dedupd_url_verdicts_total", {{"verdict", "store_unavailable"}});
  };
  const double before = store_unavailable();
  EXPECT_EQ(before, 2 * failed);
  options.max_store_attempts = 100;
  options.max_store_retry_time = absl::Seconds(60);
  options.initial_backoff = absl::Milliseconds(50);
  options.max_backoff = absl::Milliseconds(200);
  absl::StatusOr<std::unique_ptr<DedupClient>> patient =
      DedupClient::Connect(server_->address(), options);
  ASSERT_THAT(patient.status(), IsOk());
  absl::Status continued = absl::UnknownError("not continued");
  absl::Time continued_at;
  std::thread resume([&] {
    // Bounded: at most 60 s of 20 ms scrapes.
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    while (store_unavailable() < before + failed && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    continued = cluster_->ContinueNode(victim);
    continued_at = absl::Now();
  });
  results = (*patient)->CheckUrls(items, v1::CLAIM_MODE_CLAIM, claim);
  resume.join();
  ASSERT_THAT(continued, IsOk());
  const absl::Duration stopped_for = continued_at - stopped_at;
  std::printf("e2e redis unreachable (client): master %s stopped for %s\n", stopped.c_str(),
              absl::FormatDuration(stopped_for).c_str());
  ASSERT_LT(stopped_for, absl::Seconds(50)) << "too close to the node timeout";
  ASSERT_THAT(results.status(), IsOk()) << server_->Logs();
  for (size_t i = 0; i < urls.size(); ++i) {
    EXPECT_EQ((*results)[i].verdict(), v1::URL_VERDICT_NEW)
        << urls[i] << ": " << (*results)[i].error();
  }
  EXPECT_GE(store_unavailable(), before + failed) << "the master was stopped for the first send";

  // Nobody else gets any of them.
  claim.claim_id = "client-2";
  results = (*client)->CheckUrls(items, v1::CLAIM_MODE_CLAIM, claim);
  ASSERT_THAT(results.status(), IsOk());
  for (size_t i = 0; i < urls.size(); ++i) {
    EXPECT_EQ((*results)[i].verdict(), v1::URL_VERDICT_SEEN) << urls[i];
  }
}

}  // namespace
}  // namespace dedupd
