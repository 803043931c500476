// End-to-end tests of dedupd front ends on a Redis Cluster
// (--store=redis_cluster): real dedupd binaries on 127.0.0.1 over one real
// 3-master, 6-replica redis-server cluster on loopback (started once for
// the binary: ctest runs it as one test, WHOLE):
//   - two front ends, eight client threads claiming overlapping URL sets
//     through both: exactly one NEW per URL overall;
//   - a front end killed (SIGKILL) mid-load, its failed batches sent again
//     to the other with their claim ids: still exactly one NEW per URL;
//     restarted, it loses nothing: every acknowledged NEW is SEEN through
//     either front end;
//   - two front ends, six client threads sending CheckContent batches of
//     overlapping texts through both: exactly one NEW per text, every
//     other answer EXACT_DUPLICATE naming that owner; a small edit of a
//     text claimed through one front end is a NEAR_DUPLICATE of it through
//     the other; Admin.Forget of a text's owner through either;
//   - CheckContent works, CheckUrl answers SEEN for the URLs it recorded;
//     CheckChunks works (tests/e2e_redis_chunks_test.cc races it), DedupResults
//     works, Admin.Stats reports the cluster (each master's keys and
//     memory), Backup and Export answer UNIMPLEMENTED naming what to use,
//     /metrics has the per node counters;
//   - Admin.DropNamespace through one front end: the namespace's URLs are
//     NEW again, its neighbours' stay SEEN;
//   - health is NOT_SERVING while the cluster cannot be reached, and while
//     a slot has no master;
//   - with --redis_min_replicas_acked=1, a master killed (kill -9)
//     mid-load: its replica takes over, claims resume (the time is
//     measured and printed), every acknowledged NEW is SEEN afterwards.
//     Last: it changes the cluster's layout.
//
// Two replicas per master, so that the promoted replica of a killed master
// still has one replica to acknowledge the WAIT.
//
// Every RPC has a deadline; every loop is bounded in count and time.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dedupd/v1/admin.grpc.pb.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/redis_cluster_fixture.h"
#include "tests/testing/redis_front_end.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/text_edits.h"

namespace dedupd {
namespace {

using ::dedupd::testing::ClaimUrls;
using ::dedupd::testing::IsOk;
using ::dedupd::testing::RedisCluster;
using ::dedupd::testing::ServerProcess;
using ::grpc::health::v1::HealthCheckRequest;
using ::grpc::health::v1::HealthCheckResponse;
using ::testing::HasSubstr;

constexpr absl::Duration kRpcDeadline = absl::Seconds(15);

// The binary's cluster: two replicas per master (see the top).
RedisCluster* TestCluster() {
  RedisCluster::Options options;
  options.replicas_per_master = 2;
  return testing::SharedCluster(options);
}

std::string FreshPrefix() {
  static std::atomic<int> next{0};
  return absl::StrCat("e2e", next.fetch_add(1), ":");
}

// FrontEnd: one dedupd on the shared cluster, with stubs.
using FrontEnd = testing::RedisFrontEndProcess;

class E2eRedisClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = TestCluster();
    ASSERT_NE(cluster_, nullptr);
    dir_ = testing::MakeTempDir("e2e_redis_");
    prefix_ = FreshPrefix();
  }
  void TearDown() override { testing::RemoveTree(dir_); }

  std::vector<std::string> Flags(const std::vector<std::string>& extra) const {
    return testing::RedisFrontEndFlags(*cluster_, prefix_, extra);
  }

  // Starts a front end (data_dir unused: the test checks none is created).
  void Start(FrontEnd* fe, const std::vector<std::string>& extra = {},
             const char* ready = ServerProcess::kServingPrefix,
             std::vector<std::string> flags = {}) {
    if (flags.empty()) flags = Flags(extra);
    ASSERT_THAT(testing::StartRedisFrontEnd(DEDUPD_BINARY, dir_ + "/unused-data", flags, fe, ready),
                IsOk());
  }

  RedisCluster* cluster_ = nullptr;
  std::string dir_;
  std::string prefix_;
};

std::string Url(int i) { return absl::StrCat("http://e2e.example/p/", i); }

// ExpectAllSeen claims `urls` again through `fe` in batches: each must be
// SEEN.
void ExpectAllSeen(FrontEnd& fe, const std::vector<std::string>& urls, const char* what) {
  constexpr size_t kBatch = 1000;
  size_t not_seen = 0;
  for (size_t i = 0; i < urls.size(); i += kBatch) {
    std::vector<std::string> batch(
        urls.begin() + static_cast<long>(i),
        urls.begin() + static_cast<long>(std::min(urls.size(), i + kBatch)));
    absl::StatusOr<std::vector<v1::UrlVerdict>> v = ClaimUrls(*fe.dedup, batch);
    ASSERT_THAT(v.status(), IsOk()) << what;
    for (v1::UrlVerdict verdict : *v) not_seen += verdict != v1::URL_VERDICT_SEEN;
  }
  EXPECT_EQ(not_seen, 0u) << what << ": acknowledged NEW URLs not SEEN afterwards";
}

HealthCheckResponse::ServingStatus Health(FrontEnd& fe) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
  HealthCheckRequest request;
  HealthCheckResponse response;
  const grpc::Status s = fe.health->Check(&context, request, &response);
  return s.ok() ? response.status() : HealthCheckResponse::UNKNOWN;
}

TEST_F(E2eRedisClusterTest, TwoFrontEndsOneNewPerUrlAndAKilledOneLosesNothing) {
  FrontEnd a, b;
  ASSERT_NO_FATAL_FAILURE(Start(&a));
  ASSERT_NO_FATAL_FAILURE(Start(&b));
  // Eight threads, 5,000 URLs each; thread t claims [2500 t, 2500 t + 5000),
  // so each URL but the first and last 2,500 is claimed by two threads; a
  // thread alternates the front ends by batch (of 500), and neighbours
  // start on different ones. Each batch carries its own claim id.
  // A quarter of the way through, front end `a` is killed (SIGKILL): a
  // batch that fails on it is sent again to `b` with the same claim id,
  // which answers NEW again for the URLs the lost call claimed (the
  // client library's retry), so exactly one NEW per URL still holds.
  constexpr int kThreads = 8;
  constexpr int kPerThread = 5000;
  constexpr int kStride = 2500;
  constexpr int kBatch = 500;
  constexpr int kDistinct = kStride * (kThreads - 1) + kPerThread;
  constexpr int kBatches = kThreads * kPerThread / kBatch;
  std::vector<std::atomic<int>> news(kDistinct);
  std::atomic<int> errors{0};
  std::atomic<int> failed_on_a{0};
  std::atomic<int> batches_done{0};
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int off = 0; off < kPerThread; off += kBatch) {
        std::vector<std::string> urls;
        for (int i = 0; i < kBatch; ++i) urls.push_back(Url(t * kStride + off + i));
        const std::string claim_id = absl::StrCat("t", t, "-", off);
        const bool on_a = (off / kBatch + t) % 2 == 0;
        absl::StatusOr<std::vector<v1::UrlVerdict>> v =
            ClaimUrls(on_a ? *a.dedup : *b.dedup, urls, claim_id);
        if (!v.ok() && on_a) {
          ++failed_on_a;
          v = ClaimUrls(*b.dedup, urls, claim_id);
        }
        ++batches_done;
        if (!v.ok()) {
          ++errors;
          continue;
        }
        for (int i = 0; i < kBatch; ++i) {
          if ((*v)[static_cast<size_t>(i)] == v1::URL_VERDICT_NEW) ++news[t * kStride + off + i];
        }
      }
    });
  }
  const absl::Time wait_until = absl::Now() + absl::Seconds(30);
  while (batches_done.load() < kBatches / 4 && absl::Now() < wait_until) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  a.process->Kill();
  const int done_at_kill = batches_done.load();
  for (std::thread& th : threads) th.join();
  std::printf(
      "e2e redis: %d claims of %d distinct URLs through two front ends in %s; one killed after "
      "%d of %d batches, %d batches failed on it and were sent again to the other\n",
      kThreads * kPerThread, kDistinct, absl::FormatDuration(absl::Now() - start).c_str(),
      done_at_kill, kBatches, failed_on_a.load());
  ASSERT_EQ(errors.load(), 0);
  EXPECT_GT(failed_on_a.load(), 0) << "the kill came after the load";
  int wrong = 0;
  for (int i = 0; i < kDistinct; ++i) wrong += news[i].load() != 1;
  EXPECT_EQ(wrong, 0) << "URLs not answered NEW exactly once";

  // Start the killed one again: nothing acknowledged is lost, through
  // either.
  std::vector<std::string> all;
  for (int i = 0; i < kDistinct; ++i) all.push_back(Url(i));
  ASSERT_NO_FATAL_FAILURE(Start(&a));
  ExpectAllSeen(a, all, "restarted front end");
  ExpectAllSeen(b, all, "other front end");
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/unused-data")) << "a data directory was created";
}

// CheckContentOf sends `texts` with their `urls` (claim mode unless
// `peek`); the results, or the error.
absl::StatusOr<std::vector<v1::ContentResult>> CheckContentOf(v1::Dedup::Stub& stub,
                                                              const std::vector<std::string>& urls,
                                                              const std::vector<std::string>& texts,
                                                              bool peek = false) {
  v1::CheckContentRequest request;
  if (peek) request.set_mode(v1::CLAIM_MODE_PEEK);
  for (size_t i = 0; i < urls.size(); ++i) {
    v1::ContentItem* item = request.add_items();
    item->set_url(urls[i]);
    item->set_text(texts[i]);
  }
  v1::CheckContentResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
  const grpc::Status s = stub.CheckContent(&context, request, &response);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }
  if (response.results_size() != request.items_size()) {
    return absl::InternalError("wrong number of results");
  }
  return std::vector<v1::ContentResult>(response.results().begin(), response.results().end());
}

// A page of `words` distinct words, different for each `seed`.
std::string PageText(int seed, int words = 200) {
  std::vector<std::string> out;
  for (int i = 0; i < words; ++i) out.push_back(absl::StrCat("w", seed, "x", i * 7919 % 10007));
  return absl::StrJoin(out, " ");
}

TEST_F(E2eRedisClusterTest, TwoFrontEndsShareContentClaimsAndNearDuplicates) {
  FrontEnd a, b;
  ASSERT_NO_FATAL_FAILURE(Start(&a));
  ASSERT_NO_FATAL_FAILURE(Start(&b));
  constexpr int kThreads = 6;
  constexpr int kTexts = 40;
  constexpr int kBatch = 8;
  absl::Mutex mu;
  std::map<int, int> news;
  std::map<int, std::string> owner;
  std::map<int, std::vector<v1::ContentResult>> answers;
  std::vector<std::thread> threads;
  std::atomic<int> failed{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      FrontEnd& fe = t % 2 == 0 ? a : b;
      for (int start = 0; start < kTexts; start += kBatch) {
        std::vector<std::string> urls, texts;
        std::vector<int> ids;
        for (int j = 0; j < kBatch; ++j) {
          const int text = (start + j + t * 5) % kTexts;
          urls.push_back(absl::StrCat("http://t", t, ".e2e.example/page/", text));
          texts.push_back(PageText(text));
          ids.push_back(text);
        }
        absl::StatusOr<std::vector<v1::ContentResult>> r = CheckContentOf(*fe.dedup, urls, texts);
        if (!r.ok()) {
          ++failed;
          ADD_FAILURE() << r.status();
          return;
        }
        absl::MutexLock lock(&mu);
        for (size_t j = 0; j < r->size(); ++j) {
          if ((*r)[j].verdict() == v1::CONTENT_VERDICT_NEW) {
            ++news[ids[j]];
            owner[ids[j]] = urls[j];
          }
          answers[ids[j]].push_back((*r)[j]);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  ASSERT_EQ(failed.load(), 0);
  for (int text = 0; text < kTexts; ++text) {
    SCOPED_TRACE(absl::StrCat("text ", text));
    ASSERT_EQ(news[text], 1);
    ASSERT_EQ(answers[text].size(), static_cast<size_t>(kThreads));
    for (const v1::ContentResult& r : answers[text]) {
      if (r.verdict() == v1::CONTENT_VERDICT_NEW) continue;
      EXPECT_EQ(r.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
      EXPECT_EQ(r.owner_url(), owner[text]);
    }
  }
  // The owners' URLs were recorded as seen, for CheckUrl through either.
  absl::StatusOr<std::vector<v1::UrlVerdict>> seen =
      ClaimUrls(*b.dedup, {owner[0], "http://never.e2e.example/"});
  ASSERT_THAT(seen.status(), IsOk());
  EXPECT_EQ((*seen)[0], v1::URL_VERDICT_SEEN);
  EXPECT_EQ((*seen)[1], v1::URL_VERDICT_NEW);

  // A near duplicate (one word in 100 replaced) claimed through A is found
  // through B, naming A's URL.
  const std::string original = PageText(1000);
  absl::StatusOr<std::vector<v1::ContentResult>> first =
      CheckContentOf(*a.dedup, {"http://near.e2e.example/original"}, {original});
  ASSERT_THAT(first.status(), IsOk());
  EXPECT_EQ((*first)[0].verdict(), v1::CONTENT_VERDICT_NEW);
  const std::string edited = testing::SubstituteWords(original, 100, 7);
  ASSERT_NE(edited, original);
  absl::StatusOr<std::vector<v1::ContentResult>> near =
      CheckContentOf(*b.dedup, {"http://near.e2e.example/mirror"}, {edited});
  ASSERT_THAT(near.status(), IsOk());
  EXPECT_EQ((*near)[0].verdict(), v1::CONTENT_VERDICT_NEAR_DUPLICATE);
  EXPECT_EQ((*near)[0].owner_url(), "http://near.e2e.example/original");
  ASSERT_GE((*near)[0].near_matches_size(), 1);
  EXPECT_EQ((*near)[0].near_matches(0).url(), "http://near.e2e.example/original");

  // Admin.Forget of the original through B: its text (no alias) is
  // deleted, its URL is NEW again through A, and a copy of it is now a near
  // duplicate of the mirror (recorded as a text of its own).
  {
    v1::ForgetRequest request;
    request.add_urls("http://near.e2e.example/original");
    v1::ForgetResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    const grpc::Status s = b.admin->Forget(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(response.results_size(), 1);
    EXPECT_TRUE(response.results(0).found());
    EXPECT_TRUE(response.results(0).url_removed());
    EXPECT_EQ(response.results(0).contents_removed(), 1u);
  }
  absl::StatusOr<std::vector<v1::UrlVerdict>> again =
      ClaimUrls(*a.dedup, {"http://near.e2e.example/original"});
  ASSERT_THAT(again.status(), IsOk());
  EXPECT_EQ((*again)[0], v1::URL_VERDICT_NEW);
  absl::StatusOr<std::vector<v1::ContentResult>> after =
      CheckContentOf(*a.dedup, {"http://near.e2e.example/third"}, {original}, /*peek=*/true);
  ASSERT_THAT(after.status(), IsOk());
  EXPECT_EQ((*after)[0].verdict(), v1::CONTENT_VERDICT_NEAR_DUPLICATE);
  EXPECT_EQ((*after)[0].owner_url(), "http://near.e2e.example/mirror");
}

TEST_F(E2eRedisClusterTest, StatsMetricsAndUnimplementedCalls) {
  FrontEnd fe;
  ASSERT_NO_FATAL_FAILURE(Start(&fe, {"--metrics_listen=127.0.0.1:0"}));
  EXPECT_EQ(Health(fe), HealthCheckResponse::SERVING);
  {
    absl::StatusOr<std::vector<v1::UrlVerdict>> v = ClaimUrls(*fe.dedup, {Url(1), Url(1)});
    ASSERT_THAT(v.status(), IsOk());
    EXPECT_EQ((*v)[0], v1::URL_VERDICT_NEW);
    EXPECT_EQ((*v)[1], v1::URL_VERDICT_SEEN);
  }
  {
    v1::CheckContentRequest request;
    v1::ContentItem* item = request.add_items();
    item->set_url("http://e2e.example/a");
    item->set_text("some text of a page");
    v1::CheckContentResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    const grpc::Status s = fe.dedup->CheckContent(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(response.results_size(), 1);
    EXPECT_EQ(response.results(0).verdict(), v1::CONTENT_VERDICT_NEW);
  }
  {
    v1::CheckChunksRequest request;
    request.set_document_url("http://e2e.example/a");
    v1::ChunkItem* chunk = request.add_chunks();
    chunk->set_chunk_id("c1");
    chunk->set_text("a chunk");
    v1::CheckChunksResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    const grpc::Status s = fe.dedup->CheckChunks(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(response.results_size(), 1);
    EXPECT_EQ(response.results(0).verdict(), v1::CHUNK_VERDICT_NEW);
  }
  {
    // DedupResults needs no store.
    v1::DedupResultsRequest request;
    for (int i = 0; i < 2; ++i) {
      v1::ResultHit* hit = request.add_hits();
      hit->set_id(absl::StrCat("h", i));
      hit->set_text("the same paragraph of text in two retrieved hits");
      hit->set_score(1.0 - 0.1 * i);
    }
    v1::DedupResultsResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    const grpc::Status s = fe.dedup->DedupResults(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.kept_size(), 1);
  }
  {
    v1::StatsResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    const grpc::Status s = fe.admin->Stats(&context, v1::StatsRequest(), &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(response.store_kind(), "redis_cluster");
    EXPECT_EQ(response.storage_format_version(), 2u);
    EXPECT_GT(response.normalizer_version(), 0u);
    EXPECT_TRUE(response.redis_cluster().slot_map_complete());
    EXPECT_EQ(response.redis_cluster().key_prefix(), prefix_);
    // The nodes this front end has talked to so far (the meta key's and the
    // claimed URL's owners).
    EXPECT_GE(response.redis_cluster().nodes_size(), 1);
    // Every master's DBSIZE and used_memory, summed: at least this
    // prefix's meta, URL and content records.
    ASSERT_EQ(response.redis_cluster().masters_size(), 3);
    uint64_t keys = 0;
    for (const v1::RedisMasterStats& m : response.redis_cluster().masters()) {
      EXPECT_EQ(m.error(), "") << m.node();
      EXPECT_GT(m.used_memory_bytes(), 0u) << m.node();
      keys += m.keys();
    }
    EXPECT_EQ(response.redis_cluster().cluster_keys(), keys);
    EXPECT_GE(keys, 3u);
    EXPECT_GT(response.redis_cluster().cluster_used_memory_bytes(), 0u);
  }
  {
    v1::BackupRequest request;
    request.set_directory(dir_ + "/backup");
    v1::BackupResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    const grpc::Status s = fe.admin->Backup(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
    EXPECT_THAT(s.error_message(), HasSubstr("--store=redis_cluster"));
    EXPECT_THAT(s.error_message(), HasSubstr("BGSAVE"));
  }
  {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    std::unique_ptr<grpc::ClientReader<v1::ExportResponse>> reader =
        fe.admin->Export(&context, v1::ExportRequest());
    v1::ExportResponse message;
    EXPECT_FALSE(reader->Read(&message));
    const grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
    EXPECT_THAT(s.error_message(), HasSubstr("redis-cli --scan"));
  }
  const int metrics_port = testing::LoggedPort(fe.process->Logs(), "metrics");
  ASSERT_GT(metrics_port, 0) << fe.process->Logs();
  const std::string metrics = testing::ScrapeMetrics(metrics_port);
  EXPECT_THAT(metrics, HasSubstr("dedupd_redis_slot_map_complete 1"));
  EXPECT_THAT(metrics, HasSubstr("dedupd_redis_commands_total{node=\"127.0.0.1:"));
  EXPECT_THAT(metrics, HasSubstr("dedupd_redis_errors_total{node="));
  EXPECT_THAT(metrics, HasSubstr("dedupd_redis_redirects_total{node="));
  EXPECT_THAT(metrics, HasSubstr("dedupd_redis_reconnects_total{node="));
  EXPECT_THAT(metrics, ::testing::Not(HasSubstr("dedupd_store_disk_bytes")));
}

absl::StatusOr<bool> DropNamespace(FrontEnd& fe, const std::string& name_space) {
  v1::DropNamespaceRequest request;
  request.set_namespace_(name_space);
  v1::DropNamespaceResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
  const grpc::Status s = fe.admin->DropNamespace(&context, request, &response);
  if (!s.ok())
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  return response.found();
}

// Admin.DropNamespace through one front end: the namespace's URLs are NEW
// again through either; its neighbours ("ab", the default one) keep theirs.
TEST_F(E2eRedisClusterTest, DropNamespaceMakesOnlyItsUrlsNewAgain) {
  FrontEnd a, b;
  ASSERT_NO_FATAL_FAILURE(Start(&a));
  ASSERT_NO_FATAL_FAILURE(Start(&b));
  std::vector<std::string> urls;
  for (int i = 0; i < 50; ++i) urls.push_back(Url(i));
  for (const std::string ns : {"a", "ab", ""}) {
    absl::StatusOr<std::vector<v1::UrlVerdict>> v = ClaimUrls(*a.dedup, urls, "", ns);
    ASSERT_THAT(v.status(), IsOk()) << ns;
    EXPECT_THAT(*v, ::testing::Each(v1::URL_VERDICT_NEW)) << ns;
  }
  absl::StatusOr<bool> found = DropNamespace(b, "a");
  ASSERT_THAT(found.status(), IsOk());
  EXPECT_TRUE(*found);
  {
    absl::StatusOr<std::vector<v1::UrlVerdict>> v = ClaimUrls(*a.dedup, urls, "", "a");
    ASSERT_THAT(v.status(), IsOk());
    EXPECT_THAT(*v, ::testing::Each(v1::URL_VERDICT_NEW));
  }
  for (const std::string ns : {"ab", ""}) {
    absl::StatusOr<std::vector<v1::UrlVerdict>> v = ClaimUrls(*b.dedup, urls, "", ns);
    ASSERT_THAT(v.status(), IsOk()) << ns;
    EXPECT_THAT(*v, ::testing::Each(v1::URL_VERDICT_SEEN)) << ns;
  }
  found = DropNamespace(a, "never-used");
  ASSERT_THAT(found.status(), IsOk());
  EXPECT_FALSE(*found);
  EXPECT_EQ(DropNamespace(a, "").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(E2eRedisClusterTest, HealthNotServingWhileTheClusterCannotBeReached) {
  // A port nothing listens on: bound, then closed.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int dead_port = ntohs(addr.sin_port);
  ::close(fd);

  FrontEnd fe;
  ASSERT_NO_FATAL_FAILURE(
      Start(&fe, {}, ServerProcess::kListeningPrefix,
            {"--store=redis_cluster", absl::StrCat("--redis_nodes=127.0.0.1:", dead_port)}));
  EXPECT_EQ(Health(fe), HealthCheckResponse::NOT_SERVING);
  // It keeps trying, and says so.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (fe.process->Logs().find("not reachable yet") == std::string::npos &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_THAT(fe.process->Logs(), HasSubstr("not reachable yet"));
  EXPECT_EQ(Health(fe), HealthCheckResponse::NOT_SERVING);
  fe.process->Kill();
}

TEST_F(E2eRedisClusterTest, BadFlagsFailWithOneLine) {
  for (const std::vector<std::string>& argv : std::vector<std::vector<std::string>>{
           {DEDUPD_BINARY, "--store=redis_cluster"},
           {DEDUPD_BINARY, "--store=memcached"},
           {DEDUPD_BINARY, "--store=redis_cluster", "--redis_nodes=nohostport"},
           {DEDUPD_BINARY, "--redis_nodes=127.0.0.1:7000"},
           {DEDUPD_BINARY, "--store=redis_cluster", "--redis_nodes=127.0.0.1:7000",
            "--redis_min_replicas_acked=-1"},
           {DEDUPD_BINARY, "--store=redis_cluster", "--redis_nodes=127.0.0.1:7000",
            "--redis_chunk_lease=1s"},
           {DEDUPD_BINARY, "--store=redis_cluster", "--redis_nodes=127.0.0.1:7000",
            "--redis_chunk_lease=2h"}}) {
    absl::StatusOr<testing::CommandResult> r = testing::RunCommand(argv, "", absl::Seconds(10));
    ASSERT_THAT(r.status(), IsOk());
    EXPECT_EQ(r->exit_code, 2) << absl::StrJoin(argv, " ");
    EXPECT_THAT(r->err, HasSubstr("dedupd: --")) << absl::StrJoin(argv, " ");
  }
}

// A slot that no node serves any more turns health NOT_SERVING (the
// readiness thread re-reads the map every second); serving it again turns
// health back to SERVING.
TEST_F(E2eRedisClusterTest, HealthFollowsTheSlotMap) {
  FrontEnd fe;
  ASSERT_NO_FATAL_FAILURE(Start(&fe));
  ASSERT_EQ(Health(fe), HealthCheckResponse::SERVING);
  constexpr int kSlot = 0;
  absl::StatusOr<size_t> owner = cluster_->SlotOwner(kSlot);
  ASSERT_THAT(owner.status(), IsOk());
  // Every node forgets the slot (a replica would still name its master).
  for (size_t i = 0; i < cluster_->size(); ++i) {
    if (!cluster_->running(i)) continue;
    ASSERT_THAT(cluster_->Cli(i, {"CLUSTER", "DELSLOTS", absl::StrCat(kSlot)}).status(), IsOk());
  }
  auto wait_for = [&fe](HealthCheckResponse::ServingStatus want) {
    const absl::Time give_up = absl::Now() + absl::Seconds(20);
    while (Health(fe) != want && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(50));
    return Health(fe);
  };
  const absl::Time deleted = absl::Now();
  EXPECT_EQ(wait_for(HealthCheckResponse::NOT_SERVING), HealthCheckResponse::NOT_SERVING)
      << fe.process->Logs();
  std::printf("e2e redis: health NOT_SERVING %s after the slot lost its owner\n",
              absl::FormatDuration(absl::Now() - deleted).c_str());
  ASSERT_THAT(cluster_->Cli(*owner, {"CLUSTER", "ADDSLOTS", absl::StrCat(kSlot)}).status(), IsOk());
  EXPECT_EQ(wait_for(HealthCheckResponse::SERVING), HealthCheckResponse::SERVING)
      << fe.process->Logs();
  EXPECT_THAT(fe.process->Logs(), HasSubstr("slot map incomplete"));
  // The cluster is whole again for the next case: every node agrees.
  const absl::Time give_up = absl::Now() + absl::Seconds(20);
  for (size_t i = 0; i < cluster_->size(); ++i) {
    if (!cluster_->running(i)) continue;
    while (absl::Now() < give_up) {
      absl::StatusOr<std::string> info = cluster_->Cli(i, {"CLUSTER", "INFO"});
      if (info.ok() && info->find("cluster_state:ok") != std::string::npos &&
          info->find("cluster_slots_assigned:16384") != std::string::npos) {
        break;
      }
      absl::SleepFor(absl::Milliseconds(50));
    }
  }
  ASSERT_LT(absl::Now(), give_up) << "the cluster did not become whole again";
}

// Last: it kills a master, so the layout changes for good.
TEST_F(E2eRedisClusterTest, MasterKilledMidLoadWithWaitLosesNoAcknowledgedNew) {
  FrontEnd fe;
  ASSERT_NO_FATAL_FAILURE(Start(&fe, {"--redis_min_replicas_acked=1"}));
  constexpr int kThreads = 4;
  constexpr int kBatch = 200;
  constexpr int kMaxBatchesPerThread = 2000;
  absl::Mutex mu;
  // Guarded by mu.
  std::vector<std::string> acknowledged;
  absl::Time killed_at = absl::InfiniteFuture();
  absl::Time last_failure = absl::InfinitePast();
  int failures = 0;
  std::atomic<bool> stop{false};
  std::atomic<int> batches_before_kill{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < kMaxBatchesPerThread && !stop.load(); ++b) {
        std::vector<std::string> urls;
        for (int i = 0; i < kBatch; ++i)
          urls.push_back(Url((t * kMaxBatchesPerThread + b) * kBatch + i));
        absl::StatusOr<std::vector<v1::UrlVerdict>> v = ClaimUrls(*fe.dedup, urls);
        if (!v.ok()) {
          {
            absl::MutexLock lock(&mu);
            ++failures;
            last_failure = absl::Now();
          }
          // A client backs off; so the failover cannot use up the batches.
          absl::SleepFor(absl::Milliseconds(20));
          continue;
        }
        absl::MutexLock lock(&mu);
        ++batches_before_kill;
        for (int i = 0; i < kBatch; ++i) {
          if ((*v)[static_cast<size_t>(i)] == v1::URL_VERDICT_NEW) acknowledged.push_back(urls[i]);
        }
      }
    });
  }
  // Mid-load: after some batches are through.
  const absl::Time wait_load = absl::Now() + absl::Seconds(10);
  while (batches_before_kill.load() < 20 && absl::Now() < wait_load) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  size_t victim = cluster_->size();
  for (size_t i = 0; i < cluster_->size(); ++i) {
    if (cluster_->started_as_master(i) && cluster_->running(i)) {
      victim = i;
      break;
    }
  }
  ASSERT_LT(victim, cluster_->size());
  killed_at = absl::Now();
  ASSERT_THAT(cluster_->KillNode(victim), IsOk());
  // Let the load run until claims have succeeded for 3 s after the last
  // failure (or 30 s in all).
  const absl::Time give_up = killed_at + absl::Seconds(30);
  for (;;) {
    absl::SleepFor(absl::Milliseconds(100));
    absl::MutexLock lock(&mu);
    const absl::Time settled_since = std::max(last_failure, killed_at);
    if (absl::Now() - settled_since > absl::Seconds(3) && last_failure > killed_at) break;
    if (absl::Now() > give_up) break;
  }
  stop = true;
  for (std::thread& th : threads) th.join();
  absl::MutexLock lock(&mu);
  const absl::Duration resumed_after =
      last_failure > killed_at ? last_failure - killed_at : absl::ZeroDuration();
  std::printf(
      "e2e redis failover: master %s killed; %d batches of %d failed; claims resumed %s after "
      "the kill; %zu acknowledged NEW URLs\n",
      cluster_->address(victim).c_str(), failures, kBatch,
      absl::FormatDuration(resumed_after).c_str(), acknowledged.size());
  // The stated bound: cluster-node-timeout 1 s, the replica's election,
  // the router's refresh; 15 s leaves room for a loaded machine.
  EXPECT_LT(resumed_after, absl::Seconds(15));
  EXPECT_GT(failures, 0) << "the kill was not seen by any claim (too little load?)";
  EXPECT_EQ(Health(fe), HealthCheckResponse::SERVING);
  ExpectAllSeen(fe, acknowledged, "after the failover");
}

}  // namespace
}  // namespace dedupd
