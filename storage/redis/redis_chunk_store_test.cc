// RedisChunkStore against a real 3-master, 3-replica redis-server cluster on
// loopback (tests/testing/redis_cluster_fixture.h; ctest label `redis`): the
// chunk store conformance suite (Reopen is a new front end on the same key
// prefix), two front ends racing over overlapping chunk texts, a text
// recorded by another front end between a claim's planning and its
// scripts, a claim stopped after its journal (replayed by the next claim),
// and golden keys and values read back raw.
//
// One cluster serves every case (started on first use; the binary is one
// ctest test); each case works under a key prefix of its own.
#include "storage/redis/redis_chunk_store.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "core/text/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/redis/redis_chunk_format.h"
#include "storage/redis/redis_content_format.h"
#include "storage/redis/redis_store_test_util.h"
#include "storage/testing/chunk_store_conformance.h"
#include "tests/testing/redis_cluster_fixture.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::redis::Command;
using ::dedupd::redis::Value;
using ::dedupd::testing::IsOk;
using ::dedupd::testing::RedisCluster;
using ::dedupd::testing::SharedCluster;
using ::dedupd::testing::StatusIs;
using ::dedupd::testing::TestUrlStoreOptions;

std::string FreshPrefix() { return testing::FreshKeyPrefix("k"); }

// One front end: a URL store (the meta, the router) and the chunk store.
using FrontEnd = testing::RedisFrontEnd<RedisChunkStore>;

class RedisChunkHarness : public testing::ChunkStoreHarness {
 public:
  static absl::StatusOr<std::unique_ptr<testing::ChunkStoreHarness>> Make() {
    auto harness = std::make_unique<RedisChunkHarness>();
    harness->prefix_ = FreshPrefix();
    absl::Status s = harness->front_.Reopen(harness->prefix_);
    if (!s.ok()) return s;
    return harness;
  }
  ChunkStore& chunks() override { return *front_.layer; }
  // A new front end on the same prefix: everything is in the cluster.
  absl::StatusOr<bool> Reopen() override {
    absl::Status s = front_.Reopen(prefix_);
    if (!s.ok()) return s;
    return true;
  }

 private:
  std::string prefix_;
  FrontEnd front_;
};

using ::dedupd::testing::ChunkStoreConformanceTest;
INSTANTIATE_TEST_SUITE_P(Redis, ChunkStoreConformanceTest,
                         ::testing::Values(testing::ChunkStoreBackend{"Redis",
                                                                      &RedisChunkHarness::Make}),
                         testing::ChunkStoreBackendName);

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

ChunkInput Chunk(const std::string& id, const std::string& text, uint64_t simhash) {
  return ChunkInput{id, Sha256(text), simhash, /*max_distance=*/3};
}

Value Cmd(RedisUrlStore& store, const std::string& key, std::vector<std::string> argv) {
  absl::StatusOr<Value> v = store.router().ExecuteOne(Command::ForKey(key, std::move(argv)));
  EXPECT_THAT(v, IsOk());
  return v.ok() ? *v : Value::Error("failed");
}

// Two front ends, eight threads, each sending documents whose chunks are
// 40 shared texts in its own order: exactly one NEW per text, every other
// chunk of the text the exact duplicate of that owner's document and chunk.
TEST(RedisChunkStoreTest, TwoFrontEndsRacingOverOverlappingChunksHaveOneNewPerText) {
  const std::string prefix = FreshPrefix();
  ASSERT_OK_AND_ASSIGN(FrontEnd a, FrontEnd::Open(prefix));
  ASSERT_OK_AND_ASSIGN(FrontEnd b, FrontEnd::Open(prefix));
  constexpr int kThreads = 8;
  constexpr int kTexts = 40;
  constexpr int kPerDoc = 5;
  struct Seen {
    std::string doc, chunk;
    ChunkOutcome outcome;
  };
  absl::Mutex mu;
  std::vector<std::vector<Seen>> answers(kTexts);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ChunkStore& store = t % 2 == 0 ? *a.layer : *b.layer;
      for (int start = 0; start < kTexts; start += kPerDoc) {
        ChunkDocument doc;
        doc.document_url = absl::StrCat("https://w", t, ".example/", start);
        std::vector<int> ids;
        for (int j = 0; j < kPerDoc; ++j) {
          const int text = (start + j + t * 7) % kTexts;
          doc.chunks.push_back(Chunk(absl::StrCat("c", j), absl::StrCat("racing chunk ", text),
                                     (text + 1) * 0x9E3779B97F4A7C15ULL));
          ids.push_back(text);
        }
        ChunkAnswer answer;
        ASSERT_THAT(store.CheckChunks(doc, true, T(100 + t), &answer), IsOk());
        absl::MutexLock lock(&mu);
        for (int j = 0; j < kPerDoc; ++j) {
          answers[ids[j]].push_back({doc.document_url, doc.chunks[j].chunk_id, answer.outcomes[j]});
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int text = 0; text < kTexts; ++text) {
    SCOPED_TRACE(absl::StrCat("text ", text));
    int news = 0;
    std::string owner_doc, owner_chunk;
    for (const Seen& s : answers[text]) {
      if (s.outcome.verdict == ChunkVerdict::kNew) {
        ++news;
        owner_doc = s.doc;
        owner_chunk = s.chunk;
      }
    }
    ASSERT_EQ(news, 1);
    for (const Seen& s : answers[text]) {
      if (s.outcome.verdict == ChunkVerdict::kNew) continue;
      EXPECT_EQ(s.outcome.verdict, ChunkVerdict::kExactDuplicate);
      EXPECT_EQ(s.outcome.duplicate_document_url, owner_doc);
      EXPECT_EQ(s.outcome.duplicate_chunk_id, owner_chunk);
    }
    // A later reader agrees on the owner.
    ChunkDocument probe{"https://probe/", {Chunk("p", absl::StrCat("racing chunk ", text), 0)}};
    ChunkAnswer peek;
    ASSERT_THAT(a.layer->CheckChunks(probe, false, T(1000), &peek), IsOk());
    EXPECT_EQ(peek.outcomes[0].duplicate_document_url, owner_doc);
    EXPECT_EQ(peek.outcomes[0].duplicate_chunk_id, owner_chunk);
    EXPECT_EQ(peek.outcomes[0].other_holders, static_cast<uint64_t>(kThreads));
  }
}

// The planner saw the text absent; another front end records it before the
// scripts run: the call is the exact duplicate the script saw, never a
// second NEW, even with an older clock.
TEST(RedisChunkStoreTest, ATextRecordedBetweenPlanAndScriptIsTheDuplicateTheScriptSaw) {
  const std::string prefix = FreshPrefix();
  ASSERT_OK_AND_ASSIGN(FrontEnd a, FrontEnd::Open(prefix));
  ASSERT_OK_AND_ASSIGN(FrontEnd b, FrontEnd::Open(prefix));
  ChunkDocument winner{"https://b/", {Chunk("x", "contested", 7)}};
  a.layer->SetBeforeTextScriptsHookForTesting([&]() -> absl::Status {
    ChunkAnswer won;
    absl::Status s = b.layer->CheckChunks(winner, true, T(200), &won);
    EXPECT_EQ(won.outcomes.size(), 1u);
    if (!won.outcomes.empty()) {
      EXPECT_EQ(won.outcomes[0].verdict, ChunkVerdict::kNew);
    }
    return s;
  });
  ChunkDocument late{"https://a/", {Chunk("0", "contested", 7), Chunk("1", "near it", 7 ^ 1)}};
  ChunkAnswer answer;
  ASSERT_THAT(a.layer->CheckChunks(late, true, T(100), &answer), IsOk());
  a.layer->SetBeforeTextScriptsHookForTesting(nullptr);
  EXPECT_EQ(answer.outcomes[0].verdict, ChunkVerdict::kExactDuplicate);
  EXPECT_EQ(answer.outcomes[0].duplicate_document_url, "https://b/");
  EXPECT_EQ(answer.outcomes[0].duplicate_chunk_id, "x");
  EXPECT_EQ(answer.outcomes[0].first_seen, T(200));
  // The near chunk named this call's chunk 0; it names the real owner.
  EXPECT_EQ(answer.outcomes[1].verdict, ChunkVerdict::kNearDuplicate);
  EXPECT_EQ(answer.outcomes[1].duplicate_document_url, "https://b/");
  EXPECT_EQ(answer.outcomes[1].duplicate_chunk_id, "x");
  // And b stays the owner for everyone.
  ChunkAnswer peek;
  ASSERT_THAT(
      a.layer->CheckChunks({"https://c/", {Chunk("z", "contested", 7)}}, false, T(300), &peek),
      IsOk());
  EXPECT_EQ(peek.outcomes[0].duplicate_document_url, "https://b/");
  EXPECT_EQ(peek.outcomes[0].other_holders, 2u);
}

// A front end that stops after writing its journal (before any text
// script) leaves the lease and journal; once the lease ends, the next claim
// of the document (any front end) replays the journal, and a retry with the
// same claim id is answered as the first attempt would have been.
TEST(RedisChunkStoreTest, AClaimStoppedAfterItsJournalIsReplayedByTheNextClaim) {
  const std::string prefix = FreshPrefix();
  RedisCluster* cluster = SharedCluster();
  ASSERT_NE(cluster, nullptr);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> urls,
                       RedisUrlStore::Open(TestUrlStoreOptions(*cluster, prefix)));
  RedisChunkStoreOptions short_lease;
  short_lease.lease = absl::Milliseconds(300);
  std::unique_ptr<RedisChunkStore> dying = RedisChunkStore::Open(urls.get(), short_lease);
  std::unique_ptr<RedisChunkStore> next = RedisChunkStore::Open(urls.get(), short_lease);
  constexpr uint64_t kFirst = 0xF0F0F0F0F0F0F0F0ULL;
  constexpr uint64_t kSecond = 0x0F0F0F0F0F0F0F0FULL;
  constexpr uint64_t kThird = 0x00FF00FF00FF00FFULL;
  ChunkDocument v1{"https://d/", {Chunk("0", "first", kFirst), Chunk("1", "second", kSecond)}};
  ChunkAnswer answer;
  ASSERT_THAT(next->CheckChunks(v1, true, T(100), &answer), IsOk());
  ChunkDocument v2{"https://d/", {Chunk("0", "first", kFirst), Chunk("1", "third", kThird)}};
  v2.claim_id_hash = 42;
  dying->SetBeforeTextScriptsHookForTesting(
      [] { return absl::UnavailableError("front end died"); });
  ASSERT_THAT(dying->CheckChunks(v2, true, T(200), &answer),
              StatusIs(absl::StatusCode::kUnavailable));
  const std::string jkey = redis::ChunkJournalKey(prefix, "", "https://d/");
  EXPECT_EQ(Cmd(*urls, jkey, {"EXISTS", jkey}).integer, 1);
  // A peek meanwhile refuses rather than mixing the two versions.
  EXPECT_THAT(next->CheckChunks(v2, false, T(210), &answer),
              StatusIs(absl::StatusCode::kUnavailable));
  // The retry (another front end) waits out the lease, replays, and is a
  // retry of the stopped claim: its answer is that claim's.
  ASSERT_THAT(next->CheckChunks(v2, true, T(220), &answer), IsOk());
  EXPECT_TRUE(answer.retry);
  EXPECT_EQ(answer.replaced_chunks, 2u);
  EXPECT_THAT(answer.removed_chunk_ids, ::testing::ElementsAre("1"));
  EXPECT_EQ(answer.outcomes[1].verdict, ChunkVerdict::kNew);
  EXPECT_EQ(answer.outcomes[1].first_seen, T(200));
  EXPECT_EQ(Cmd(*urls, jkey, {"EXISTS", jkey}).integer, 0);
  // "second" is gone with its holder; "third" is held by d/1.
  const std::string gone = redis::ChunkTextKey(prefix, "", Sha256("second"));
  EXPECT_EQ(Cmd(*urls, gone, {"EXISTS", gone}).integer, 0);
  ChunkAnswer peek;
  ASSERT_THAT(
      next->CheckChunks({"https://e/", {Chunk("q", "third", kThird)}}, false, T(300), &peek),
      IsOk());
  EXPECT_EQ(peek.outcomes[0].duplicate_document_url, "https://d/");
  EXPECT_EQ(peek.outcomes[0].duplicate_chunk_id, "1");
}

// Two front ends, four threads sending new versions of the SAME document
// at once: the document's lease serializes them, so every call succeeds,
// each is planned against the version committed before it (its
// replaced_chunks is that version's size), and deleting the document at
// the end leaves no chunk text record at all: no holder was orphaned by
// an interleaving.
TEST(RedisChunkStoreTest, ConcurrentVersionsOfOneDocumentAreSerializedAndLeaveNoOrphans) {
  const std::string prefix = FreshPrefix();
  ASSERT_OK_AND_ASSIGN(FrontEnd a, FrontEnd::Open(prefix));
  ASSERT_OK_AND_ASSIGN(FrontEnd b, FrontEnd::Open(prefix));
  constexpr int kThreads = 4;
  constexpr int kVersions = 10;
  std::atomic<int> replaced_total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ChunkStore& store = t % 2 == 0 ? *a.layer : *b.layer;
      for (int v = 0; v < kVersions; ++v) {
        ChunkDocument doc;
        doc.document_url = "https://same.example/doc";
        // 1 to 4 chunks; texts shared between versions and threads.
        const int n = 1 + (t + v) % 4;
        for (int j = 0; j < n; ++j) {
          const int text = (t * 3 + v + j) % 9;
          doc.chunks.push_back(Chunk(absl::StrCat("c", j), absl::StrCat("version text ", text),
                                     (text + 1) * 0x9E3779B97F4A7C15ULL));
        }
        ChunkAnswer answer;
        ASSERT_THAT(store.CheckChunks(doc, true, T(100 + v), &answer), IsOk());
        replaced_total += static_cast<int>(answer.replaced_chunks);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_GT(replaced_total.load(), 0);
  ChunkAnswer answer;
  ASSERT_THAT(a.layer->CheckChunks({"https://same.example/doc", {}}, true, T(500), &answer),
              IsOk());
  // No text record, holder set or journal is left under the prefix.
  size_t left = 0;
  for (int text = 0; text < 9; ++text) {
    const Sha256Digest sha = Sha256(absl::StrCat("version text ", text));
    for (const std::string& key :
         {redis::ChunkTextKey(prefix, "", sha), redis::ChunkHoldersKey(prefix, "", sha),
          redis::ChunkHolderTimesKey(prefix, "", sha)}) {
      left += static_cast<size_t>(Cmd(*a.urls, key, {"EXISTS", key}).integer);
    }
  }
  const std::string jkey = redis::ChunkJournalKey(prefix, "", "https://same.example/doc");
  const std::string lkey = redis::ChunkLeaseKey(prefix, "", "https://same.example/doc");
  left += static_cast<size_t>(Cmd(*a.urls, jkey, {"EXISTS", jkey, lkey}).integer);
  EXPECT_EQ(left, 0u);
}

// The keys and values of docs/redis_format.md, "Chunk records", read back.
TEST(RedisChunkStoreTest, KeysAndValuesAreGolden) {
  const std::string prefix = FreshPrefix();
  ASSERT_OK_AND_ASSIGN(FrontEnd f, FrontEnd::Open(prefix));
  ChunkDocument doc{"http://a/", {Chunk("c0", "abc", 0x0123456789abcdefULL)}};
  ChunkAnswer answer;
  ASSERT_THAT(f.layer->CheckChunks(doc, true, absl::FromUnixMicros(1700000000123456), &answer),
              IsOk());
  const Sha256Digest sha = Sha256("abc");
  const std::string tkey = redis::ChunkTextKey(prefix, "", sha);
  EXPECT_EQ(absl::BytesToHexString(Cmd(*f.urls, tkey, {"GET", tkey}).str),
            "0100000000010123456789abcdef");
  const std::string hkey = redis::ChunkHoldersKey(prefix, "", sha);
  Value holders = Cmd(*f.urls, hkey, {"ZRANGE", hkey, "0", "-1"});
  ASSERT_EQ(holders.elements.size(), 1u);
  EXPECT_EQ(absl::BytesToHexString(holders.elements[0].str),
            "00060a2418202240687474703a2f2f612f006330");
  const std::string mkey = redis::ChunkManifestKey(prefix, "", "http://a/");
  EXPECT_EQ(
      absl::BytesToHexString(Cmd(*f.urls, mkey, {"GET", mkey}).str),
      absl::StrCat("010000000001", Sha256Hex(sha), "0123456789abcdef00060a2418202240000000026330"));
  const std::string ikey = redis::ChunkTextIdKey(prefix, "", 1);
  EXPECT_EQ(Cmd(*f.urls, ikey, {"GET", ikey}).str,
            std::string(reinterpret_cast<const char*>(sha.data()), 32));
  const std::string bkey = redis::ChunkSimHashBucketKey(prefix, "", 4, 0, 0x0123456789abcdefULL);
  EXPECT_EQ(bkey, absl::StrCat(prefix, "ksh::0:0123"));
  EXPECT_EQ(
      Cmd(*f.urls, bkey, {"SISMEMBER", bkey, redis::SimHashBucketMember(1, 0x0123456789abcdefULL)})
          .integer,
      1);
  const std::string lkey = redis::ChunkLeaseKey(prefix, "", "http://a/");
  const std::string jkey = redis::ChunkJournalKey(prefix, "", "http://a/");
  EXPECT_EQ(Cmd(*f.urls, lkey, {"EXISTS", lkey, jkey}).integer, 0);
}

}  // namespace
}  // namespace dedupd
