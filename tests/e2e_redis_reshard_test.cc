// End-to-end test of dedupd front ends while the Redis Cluster under them
// reshards: two real dedupd binaries (--store=redis_cluster) on 127.0.0.1
// over a real 3-master, 3-replica redis-server cluster, four client
// threads claiming overlapping URL batches through both, and, mid-load,
// `redis-cli --cluster reshard` moving slots (with their keys) from one
// master to another: the masters answer ASK during each slot's migration
// and MOVED after it. Checked: no batch fails, every URL is answered NEW
// exactly once over all answers, every acknowledged URL is SEEN through
// both front ends afterwards, the slots changed owner, and the front ends
// followed redirects (dedupd_redis_redirects_total) while loading.
//
// Its own binary and cluster (the reshard changes the slot layout that
// other tests' expectations may rely on). Every RPC has a deadline; every
// loop is bounded in count and time.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/redis_cluster_fixture.h"
#include "tests/testing/redis_front_end.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::RedisCluster;
using ::dedupd::testing::ServerProcess;

using ::dedupd::testing::RedisFrontEndProcess;

std::string Url(int i) { return absl::StrCat("http://reshard.example/p/", i); }

// The sum of dedupd_redis_redirects_total over the nodes, from the front
// end's /metrics.
double Redirects(const ServerProcess& process) {
  const int port = testing::MetricsPort(process.Logs());
  if (port <= 0) return -1;
  return testing::ParseExposition(testing::ScrapeMetrics(port))
      .Value("dedupd_redis_redirects_total");
}

TEST(E2eRedisReshardTest, ReshardUnderLoadAnswersEveryUrlNewOnce) {
  absl::StatusOr<std::unique_ptr<RedisCluster>> started = RedisCluster::Start({});
  ASSERT_THAT(started.status(), IsOk());
  RedisCluster& cluster = **started;
  // Slots move from the master of slot 0 to another master; redis-cli
  // takes a source's slots in ascending order, so slot 0 moves first.
  absl::StatusOr<size_t> slot0_owner = cluster.SlotOwner(0);
  ASSERT_THAT(slot0_owner.status(), IsOk());
  const size_t from = *slot0_owner;
  size_t to = cluster.size();
  for (size_t i = 0; i < cluster.size(); ++i) {
    if (i != from && cluster.started_as_master(i)) to = i;
  }
  ASSERT_LT(to, cluster.size());
  absl::StatusOr<std::string> from_id = cluster.NodeId(from);
  absl::StatusOr<std::string> to_id = cluster.NodeId(to);
  ASSERT_THAT(from_id.status(), IsOk());
  ASSERT_THAT(to_id.status(), IsOk());

  const std::string dir = testing::MakeTempDir("e2e_redis_reshard_");
  const std::vector<std::string> flags =
      testing::RedisFrontEndFlags(cluster, "reshard:", {"--metrics_listen=127.0.0.1:0"});
  RedisFrontEndProcess fronts[2];
  for (RedisFrontEndProcess& fe : fronts) {
    ASSERT_THAT(testing::StartRedisFrontEnd(DEDUPD_BINARY, dir + "/unused-data", flags, &fe),
                IsOk());
  }
  const double redirects_before = Redirects(*fronts[0].process) + Redirects(*fronts[1].process);

  // Batch b claims URLs [(b - 1) * kBatch, (b + 1) * kBatch): every URL is
  // in two consecutive batches, which different threads usually send at
  // the same time through different front ends.
  constexpr int kThreads = 4;
  constexpr int kBatch = 100;
  constexpr int kMaxBatches = 20000;
  constexpr int kBatchesAfterReshard = 200;
  std::vector<std::atomic<int>> news(static_cast<size_t>(kMaxBatches + 1) * kBatch);
  std::atomic<int> next_batch{0};
  std::atomic<int> batches_done{0};
  std::atomic<int> stop_after{kMaxBatches};  // batches at or past it are not sent
  std::atomic<int> retries{0};
  absl::Mutex mu;
  std::vector<std::string> failures;  // guarded by mu
  const absl::Time give_up = absl::Now() + absl::Seconds(90);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      v1::Dedup::Stub& stub = *fronts[t % 2].dedup;
      for (;;) {
        const int b = next_batch.fetch_add(1);
        if (b >= stop_after.load() || absl::Now() > give_up) return;
        std::vector<std::string> urls;
        const int first = std::max(0, b - 1) * kBatch;
        for (int i = first; i < (b + 1) * kBatch; ++i) urls.push_back(Url(i));
        const std::string claim_id = absl::StrCat("reshard-", b);
        // A transient failure is retried with the claim id (its claims are
        // answered NEW again); the test expects none, and says so below.
        absl::StatusOr<std::vector<v1::UrlVerdict>> v;
        for (int attempt = 0; attempt < 3; ++attempt) {
          v = testing::ClaimUrls(stub, urls, claim_id);
          if (v.ok()) break;
          retries.fetch_add(1);
          absl::SleepFor(absl::Milliseconds(50));
        }
        if (!v.ok()) {
          absl::MutexLock lock(&mu);
          failures.push_back(absl::StrCat("batch ", b, ": ", v.status().ToString()));
          continue;
        }
        for (size_t i = 0; i < urls.size(); ++i) {
          if ((*v)[i] == v1::URL_VERDICT_NEW) news[static_cast<size_t>(first) + i].fetch_add(1);
        }
        batches_done.fetch_add(1);
      }
    });
  }
  // Mid-load: once some batches are through, so the moved slots hold keys.
  const absl::Time wait_load = absl::Now() + absl::Seconds(20);
  while (batches_done.load() < 100 && absl::Now() < wait_load) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  const int batches_at_start = batches_done.load();
  constexpr int kSlotsMoved = 600;
  absl::StatusOr<std::string> reshard = cluster.Cli(
      from,
      {"--cluster", "reshard", cluster.address(from), "--cluster-from", *from_id, "--cluster-to",
       *to_id, "--cluster-slots", absl::StrCat(kSlotsMoved), "--cluster-yes"},
      absl::Seconds(60));
  const int batches_at_end = batches_done.load();
  stop_after = std::min(kMaxBatches, next_batch.load() + kBatchesAfterReshard);
  for (std::thread& th : threads) th.join();

  ASSERT_THAT(reshard.status(), IsOk());
  EXPECT_THAT(*reshard, ::testing::Not(::testing::HasSubstr("[ERR]"))) << *reshard;
  std::printf(
      "e2e redis reshard: %d slots moved from %s to %s while %d batches of up to %d URLs were "
      "claimed (%d before, %d after); %d retried calls\n",
      kSlotsMoved, cluster.address(from).c_str(), cluster.address(to).c_str(),
      batches_at_end - batches_at_start, 2 * kBatch, batches_at_start,
      batches_done.load() - batches_at_end, retries.load());
  {
    absl::MutexLock lock(&mu);
    EXPECT_THAT(failures, ::testing::IsEmpty());
  }
  EXPECT_GT(batches_at_end, batches_at_start) << "no claim ran while the slots moved";
  absl::StatusOr<size_t> owner = cluster.SlotOwner(0);
  ASSERT_THAT(owner.status(), IsOk());
  EXPECT_EQ(*owner, to);
  const double redirects_after = Redirects(*fronts[0].process) + Redirects(*fronts[1].process);
  EXPECT_GT(redirects_after, redirects_before)
      << "the front ends met no MOVED or ASK: the reshard did not touch the load";

  // Every URL a batch sent: NEW exactly once over all answers, SEEN now
  // through both front ends.
  const int sent_batches = std::min(next_batch.load(), stop_after.load());
  const size_t sent_urls = static_cast<size_t>(sent_batches) * kBatch;
  size_t not_once = 0;
  std::string example;
  for (size_t i = 0; i < sent_urls; ++i) {
    const int n = news[i].load();
    if (n != 1) {
      if (not_once++ == 0) example = absl::StrCat(Url(static_cast<int>(i)), " NEW ", n, " times");
    }
  }
  EXPECT_EQ(not_once, 0u) << "URLs not answered NEW exactly once, e.g. " << example;
  for (RedisFrontEndProcess& fe : fronts) {
    size_t not_seen = 0;
    for (size_t i = 0; i < sent_urls; i += 1000) {
      std::vector<std::string> batch;
      for (size_t j = i; j < std::min(sent_urls, i + 1000); ++j) {
        batch.push_back(Url(static_cast<int>(j)));
      }
      absl::StatusOr<std::vector<v1::UrlVerdict>> v = testing::ClaimUrls(*fe.dedup, batch);
      ASSERT_THAT(v.status(), IsOk());
      for (v1::UrlVerdict verdict : *v) not_seen += verdict != v1::URL_VERDICT_SEEN;
    }
    EXPECT_EQ(not_seen, 0u) << "claimed URLs not SEEN after the reshard";
  }
  for (RedisFrontEndProcess& fe : fronts) fe.process.reset();
  testing::RemoveTree(dir);
}

}  // namespace
}  // namespace dedupd
