// End-to-end tests of CheckChunks on a Redis Cluster (--store=redis_cluster):
// two real dedupd front ends on 127.0.0.1 over one real 3-master cluster on
// loopback (the content tests' SharedCluster options; started once for the
// binary: ctest runs it as one test, WHOLE):
//   - six client threads send documents of overlapping chunk texts through
//     both front ends: exactly one NEW per text, every other chunk of it an
//     EXACT_DUPLICATE naming the owner's document and chunk id;
//   - a long chunk recorded through one front end, and the same chunk with
//     one word changed sent through the other: a NEAR_DUPLICATE of it;
//   - one front end killed (SIGKILL) mid-load, its failed requests sent
//     again to the other with their claim ids (retried while the dead
//     one's document leases last): still exactly one NEW per text.
//
// Every RPC has a deadline; every loop is bounded.
#include <atomic>
#include <cstdio>
#include <map>
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
#include "tests/testing/redis_cluster_fixture.h"
#include "tests/testing/redis_front_end.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::RedisCluster;
using ::dedupd::testing::ServerProcess;

constexpr absl::Duration kRpcDeadline = absl::Seconds(15);

using FrontEnd = testing::RedisFrontEndProcess;

class E2eRedisChunksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = testing::SharedCluster();
    ASSERT_NE(cluster_, nullptr);
    dir_ = testing::MakeTempDir("e2e_redis_chunks_");
    static std::atomic<int> next{0};
    prefix_ = absl::StrCat("e2ek", next.fetch_add(1), ":");
  }
  void TearDown() override { testing::RemoveTree(dir_); }

  void Start(FrontEnd* fe) {
    ASSERT_THAT(
        testing::StartRedisFrontEnd(
            DEDUPD_BINARY, dir_ + "/unused-data",
            testing::RedisFrontEndFlags(*cluster_, prefix_, {"--redis_chunk_lease=20s"}), fe),
        IsOk());
  }

  RedisCluster* cluster_ = nullptr;
  std::string dir_;
  std::string prefix_;
};

// Text returns chunk text n: 40 words no other n shares (so that different
// texts are neither exact nor near duplicates of each other).
std::string Text(int n) {
  std::vector<std::string> words;
  for (int i = 0; i < 40; ++i) {
    words.push_back(absl::StrCat("w", (n * 1000003LL + i * 7919LL) % 999983));
  }
  return absl::StrJoin(words, " ");
}

absl::StatusOr<v1::CheckChunksResponse> Send(v1::Dedup::Stub& stub, const std::string& url,
                                             const std::map<std::string, std::string>& chunks,
                                             const std::string& claim_id = "") {
  v1::CheckChunksRequest request;
  request.set_document_url(url);
  request.set_claim_id(claim_id);
  for (const auto& [id, text] : chunks) {
    v1::ChunkItem* c = request.add_chunks();
    c->set_chunk_id(id);
    c->set_text(text);
  }
  v1::CheckChunksResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
  const grpc::Status s = stub.CheckChunks(&context, request, &response);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }
  if (response.results_size() != request.chunks_size()) {
    return absl::InternalError("wrong number of results");
  }
  return response;
}

TEST_F(E2eRedisChunksTest, OverlappingChunksThroughTwoFrontEndsHaveOneNewPerText) {
  FrontEnd a, b;
  ASSERT_NO_FATAL_FAILURE(Start(&a));
  ASSERT_NO_FATAL_FAILURE(Start(&b));
  // Thread t sends 6 documents of 5 chunks: texts (5 d + j + 3 t) mod 30,
  // so every text is sent by every thread, each time in another document
  // and position; even threads through a, odd ones through b.
  constexpr int kThreads = 6;
  constexpr int kDocs = 6;
  constexpr int kPerDoc = 5;
  constexpr int kTexts = kDocs * kPerDoc;
  struct Seen {
    std::string doc, chunk;
    v1::ChunkResult result;
  };
  absl::Mutex mu;
  std::vector<std::vector<Seen>> seen(kTexts);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      v1::Dedup::Stub& stub = t % 2 == 0 ? *a.dedup : *b.dedup;
      for (int d = 0; d < kDocs; ++d) {
        const std::string url = absl::StrCat("http://chunks.example/t", t, "/d", d);
        std::map<std::string, std::string> chunks;
        std::map<std::string, int> text_of;
        for (int j = 0; j < kPerDoc; ++j) {
          const int n = (kPerDoc * d + j + 3 * t) % kTexts;
          const std::string id = absl::StrCat("c", j);
          chunks[id] = Text(n);
          text_of[id] = n;
        }
        absl::StatusOr<v1::CheckChunksResponse> r = Send(stub, url, chunks);
        ASSERT_THAT(r.status(), IsOk());
        absl::MutexLock lock(&mu);
        for (const v1::ChunkResult& res : r->results()) {
          seen[text_of[res.chunk_id()]].push_back({url, res.chunk_id(), res});
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int n = 0; n < kTexts; ++n) {
    SCOPED_TRACE(absl::StrCat("text ", n));
    int news = 0;
    std::string owner_doc, owner_chunk;
    for (const Seen& s : seen[n]) {
      if (s.result.verdict() == v1::CHUNK_VERDICT_NEW) {
        ++news;
        owner_doc = s.doc;
        owner_chunk = s.chunk;
      }
    }
    ASSERT_EQ(news, 1);
    ASSERT_EQ(seen[n].size(), static_cast<size_t>(kThreads));
    for (const Seen& s : seen[n]) {
      if (s.result.verdict() == v1::CHUNK_VERDICT_NEW) continue;
      EXPECT_EQ(s.result.verdict(), v1::CHUNK_VERDICT_EXACT_DUPLICATE);
      EXPECT_EQ(s.result.duplicate_of_document_url(), owner_doc);
      EXPECT_EQ(s.result.duplicate_of_chunk_id(), owner_chunk);
    }
  }
}

TEST_F(E2eRedisChunksTest, AFrontEndKilledMidLoadStillGivesOneNewPerText) {
  FrontEnd a, b;
  ASSERT_NO_FATAL_FAILURE(Start(&a));
  ASSERT_NO_FATAL_FAILURE(Start(&b));
  // Thread t sends 8 documents of 5 chunks, texts (5 d + j + 3 t) mod 40,
  // alternating the front ends; each request has its own claim id. A
  // request that fails is sent to b with the same claim id until it is
  // answered: a claim a's death left between its steps holds its
  // document's lease (30 s), then b replays it and answers the retry.
  constexpr int kThreads = 4;
  constexpr int kDocs = 8;
  constexpr int kPerDoc = 5;
  constexpr int kTexts = kDocs * kPerDoc;
  std::vector<std::atomic<int>> news(kTexts);
  std::atomic<int> done{0};
  std::atomic<int> failed{0};
  std::atomic<int> errors{0};
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int d = 0; d < kDocs; ++d) {
        const std::string url = absl::StrCat("http://killed.example/t", t, "/d", d);
        const std::string claim_id = absl::StrCat("k", t, "-", d);
        std::map<std::string, std::string> chunks;
        std::map<std::string, int> text_of;
        for (int j = 0; j < kPerDoc; ++j) {
          const int n = (kPerDoc * d + j + 3 * t) % kTexts;
          chunks[absl::StrCat("c", j)] = Text(1000 + n);
          text_of[absl::StrCat("c", j)] = n;
        }
        const bool on_a = (d + t) % 2 == 0;
        absl::StatusOr<v1::CheckChunksResponse> r =
            Send(on_a ? *a.dedup : *b.dedup, url, chunks, claim_id);
        const absl::Time give_up = absl::Now() + absl::Seconds(60);
        while (!r.ok() && absl::Now() < give_up) {
          ++failed;
          absl::SleepFor(absl::Milliseconds(200));
          r = Send(*b.dedup, url, chunks, claim_id);
        }
        ++done;
        if (!r.ok()) {
          ++errors;
          continue;
        }
        for (const v1::ChunkResult& res : r->results()) {
          if (res.verdict() == v1::CHUNK_VERDICT_NEW) ++news[text_of[res.chunk_id()]];
        }
      }
    });
  }
  const absl::Time wait_until = absl::Now() + absl::Seconds(30);
  while (done.load() < kThreads * kDocs / 4 && absl::Now() < wait_until) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  a.process->Kill();
  const int done_at_kill = done.load();
  for (std::thread& th : threads) th.join();
  std::printf(
      "e2e redis chunks: %d documents through two front ends in %s; one killed after %d, %d "
      "failed sends retried on the other\n",
      kThreads * kDocs, absl::FormatDuration(absl::Now() - start).c_str(), done_at_kill,
      failed.load());
  ASSERT_EQ(errors.load(), 0);
  EXPECT_GT(failed.load(), 0) << "the kill came after the load";
  int wrong = 0;
  for (int n = 0; n < kTexts; ++n) wrong += news[n].load() != 1;
  EXPECT_EQ(wrong, 0) << "chunk texts not answered NEW exactly once";
}

TEST_F(E2eRedisChunksTest, ANearChunkIsFoundThroughTheOtherFrontEnd) {
  FrontEnd a, b;
  ASSERT_NO_FATAL_FAILURE(Start(&a));
  ASSERT_NO_FATAL_FAILURE(Start(&b));
  std::vector<std::string> words;
  for (int i = 0; i < 80; ++i) words.push_back(absl::StrCat("term", (i * 37) % 1009));
  const std::string original = absl::StrJoin(words, " ");
  words[40] = "changed";
  const std::string edited = absl::StrJoin(words, " ");
  absl::StatusOr<v1::CheckChunksResponse> first =
      Send(*a.dedup, "http://near.example/a", {{"p1", original}});
  ASSERT_THAT(first.status(), IsOk());
  EXPECT_EQ(first->results(0).verdict(), v1::CHUNK_VERDICT_NEW);
  absl::StatusOr<v1::CheckChunksResponse> second =
      Send(*b.dedup, "http://near.example/b", {{"q7", edited}});
  ASSERT_THAT(second.status(), IsOk());
  const v1::ChunkResult& r = second->results(0);
  EXPECT_EQ(r.verdict(), v1::CHUNK_VERDICT_NEAR_DUPLICATE);
  EXPECT_EQ(r.duplicate_of_document_url(), "http://near.example/a");
  EXPECT_EQ(r.duplicate_of_chunk_id(), "p1");
  EXPECT_GT(r.estimated_jaccard(), 0.8);
}

}  // namespace
}  // namespace dedupd
