// Tests of RocksDbStore::Forget ("Forget"): what it removes, what
// it promotes, that nothing dangles (CheckConsistency after every
// scenario), that it survives a restart, and that it serializes with
// concurrent claims of the same keys.

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "core/text/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "storage/chunk_store.h"
#include "storage/content_store.h"
#include "storage/rocksdb/rocksdb_format.h"
#include "storage/rocksdb/rocksdb_store.h"
#include "storage/testing/test_temp_dir.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

namespace fmt = ::dedupd::rocksdb_format;

constexpr uint32_t kNormalizerVersion = 1;

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

// A text's fingerprints: the SHA-256 of its bytes and a SimHash chosen by
// the test (so that near and far are under the test's control).
struct Text {
  std::string body;
  uint64_t simhash;
};

const Text kA{"text A", 0x00000000'0000ffffULL};
const Text kB{"text B", 0xffff0000'00000000ULL};
// One bit away from kB's SimHash: a near duplicate of it.
const Text kNearB{"text near B", 0xffff0000'00000001ULL};
const Text kC{"text C", 0x0000ffff'00000000ULL};

ContentDoc Doc(const std::string& identity, const std::string& fetched, const Text& text) {
  ContentDoc d;
  d.identity_url = identity;
  d.fetched_url = fetched;
  d.sha256 = Sha256(text.body);
  d.simhash = text.simhash;
  d.max_distance = 3;
  return d;
}
ContentDoc Doc(const std::string& url, const Text& text) { return Doc(url, url, text); }

ChunkInput Chunk(const std::string& id, const Text& text, int max_distance = 3) {
  return {id, Sha256(text.body), text.simhash, max_distance};
}

class RocksDbForgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(dir_, TestTempDir::Make());
    Open();
  }
  void TearDown() override {
    if (store_ != nullptr) {
      ExpectConsistent();
      EXPECT_THAT(store_->Close(), IsOk());
    }
  }

  void Open() {
    RocksDbStoreOptions options;
    options.path = dir_->path() + "/db";
    options.normalizer_version = kNormalizerVersion;
    options.block_cache_bytes = size_t{8} << 20;
    options.write_buffer_bytes = size_t{4} << 20;
    options.sync_writes = sync_writes_;
    // The URL Bloom front stays on (the default): Forget cannot delete from
    // it, and CheckUrl must still answer NEW.
    ASSERT_OK_AND_ASSIGN(store_, RocksDbStore::Open(options));
    ASSERT_TRUE(store_->WaitForUrlFilter(absl::Seconds(30)));
  }
  void Reopen() {
    ASSERT_THAT(store_->Close(), IsOk());
    store_.reset();
    Open();
  }

  void ExpectConsistent() {
    ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store_->CheckConsistency());
    EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
  }

  std::vector<ContentOutcome> Claim(std::vector<ContentDoc> docs, absl::Time now) {
    std::vector<ContentOutcome> out;
    EXPECT_THAT(store_->CheckContent(docs, /*claim=*/true, ContentLimits{}, now, &out), IsOk());
    return out;
  }
  ContentOutcome Peek(const ContentDoc& doc) {
    std::vector<ContentOutcome> out;
    EXPECT_THAT(store_->CheckContent({doc}, /*claim=*/false, ContentLimits{}, T(1000), &out),
                IsOk());
    return out.empty() ? ContentOutcome{} : out[0];
  }
  ChunkAnswer Chunks(const std::string& url, std::vector<ChunkInput> chunks, bool claim,
                     absl::Time now) {
    ChunkAnswer answer;
    EXPECT_THAT(store_->CheckChunks({url, std::move(chunks)}, claim, now, &answer), IsOk());
    return answer;
  }
  ForgetResult Forget(const std::string& url) {
    absl::StatusOr<ForgetResult> r = store_->Forget(url, T(2000));
    EXPECT_THAT(r.status(), IsOk());
    ExpectConsistent();
    return r.ok() ? *r : ForgetResult{};
  }
  // Whether CheckUrl's store lookup holds the URL.
  bool UrlStored(const std::string& url) {
    std::vector<std::optional<absl::Time>> out;
    EXPECT_THAT(store_->LookupUrls({url}, &out), IsOk());
    return !out.empty() && out[0].has_value();
  }
  bool ClaimUrlIsNew(const std::string& url) {
    std::vector<UrlClaim> out;
    EXPECT_THAT(store_->ClaimUrls({url}, T(3000), &out), IsOk());
    return !out.empty() && out[0].is_new;
  }

  bool sync_writes_ = false;
  std::optional<TestTempDir> dir_;
  std::unique_ptr<RocksDbStore> store_;
};

TEST_F(RocksDbForgetTest, UnknownUrlIsNotAnError) {
  ForgetResult r = Forget("http://unknown.example/");
  EXPECT_FALSE(r.found());
  EXPECT_FALSE(r.url_found);
}

TEST_F(RocksDbForgetTest, EmptyUrlIsInvalid) {
  EXPECT_THAT(store_->Forget("", T(1)).status(), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(RocksDbForgetTest, UrlOnlyIsNewAgainWithTheBloomFrontOn) {
  const std::string url = "http://a.example/page";
  ASSERT_TRUE(ClaimUrlIsNew(url));
  ASSERT_FALSE(ClaimUrlIsNew(url));
  ASSERT_TRUE(store_->url_filter_stats().ready);
  const ForgetResult r = Forget(url);
  EXPECT_TRUE(r.url_found);
  EXPECT_TRUE(r.found());
  EXPECT_FALSE(r.fetch_removed);
  EXPECT_EQ(r.contents_removed + r.aliases_removed, 0u);
  // The front still says "maybe" (it cannot delete): the read answers.
  EXPECT_FALSE(UrlStored(url));
  EXPECT_TRUE(ClaimUrlIsNew(url));
  // Forgetting it twice: the second finds only the re-claimed URL record.
  EXPECT_TRUE(Forget(url).url_found);
  EXPECT_FALSE(Forget(url).found());
}

TEST_F(RocksDbForgetTest, ApproximateUrlCountDropsAfterForget) {
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ClaimUrlIsNew(absl::StrCat("http://n.example/", i)));
  Forget("http://n.example/1");
  auto count = [&]() -> uint64_t {
    absl::StatusOr<uint64_t> n = store_->ApproximateUrlCount();
    EXPECT_THAT(n.status(), IsOk());
    return n.value_or(0);
  };
  EXPECT_EQ(count(), 2u);  // record and tombstone in the memtable
  Reopen();                // Close flushes them: the flush drops the record
  EXPECT_EQ(count(), 2u);
  Forget("http://n.example/0");
  EXPECT_EQ(count(), 1u);  // record in a table file, tombstone in the memtable
}

// The content scenarios share one store layout:
//   text A: owner O (t=10), aliases Z (t=20, "z...") and B (t=30, "b..."),
//           so the oldest alias is not the first in byte order;
//   text B: owner P alone (t=40);
//   text C: owner Q (t=50) fetched from F (alias F), and two more aliases
//           added in one batch (t=60): M2 and M1 at the same time.
// What each Forget removes and promotes is checked on every backend by
// ContentStoreConformanceTest.ForgetRemovesAliasesAndPromotesTheOldestAlias
// (same layout and cases); here what is RocksDB's own: the consistency
// checker finds the store whole after the Forget, and the fingerprint index
// loses exactly the removed texts.
struct ContentCase {
  std::string name;
  std::string forget;
  uint64_t contents_removed = 0;
};

const char kO[] = "http://o.example/";
const char kZ[] = "http://z.example/";
const char kBUrl[] = "http://b.example/";
const char kP[] = "http://p.example/";
const char kQ[] = "http://q.example/";
const char kF[] = "http://q.example/?print=1";
const char kM1[] = "http://m1.example/";
const char kM2[] = "http://m2.example/";

class ContentForgetTest : public RocksDbForgetTest,
                          public ::testing::WithParamInterface<ContentCase> {};

TEST_P(ContentForgetTest, LeavesAConsistentStoreAndIndex) {
  const ContentCase& c = GetParam();
  Claim({Doc(kO, kA)}, T(10));
  Claim({Doc(kZ, kA)}, T(20));
  Claim({Doc(kBUrl, kA)}, T(30));
  Claim({Doc(kP, kB)}, T(40));
  Claim({Doc(kQ, kF, kC)}, T(50));
  Claim({Doc(kM2, kC), Doc(kM1, kC)}, T(60));
  ExpectConsistent();
  const uint64_t fingerprints_before = store_->index_stats().fingerprints;

  const ForgetResult r = Forget(c.forget);
  EXPECT_TRUE(r.url_found);
  EXPECT_EQ(r.contents_removed, c.contents_removed);
  EXPECT_EQ(store_->index_stats().fingerprints, fingerprints_before - c.contents_removed);
  ExpectConsistent();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ContentForgetTest,
    ::testing::Values(ContentCase{"Alias", kZ, 0}, ContentCase{"OwnerWithAliases", kO, 0},
                      ContentCase{"OnlyOwner", kP, 1}, ContentCase{"OwnerFetchedElsewhere", kQ, 0},
                      ContentCase{"FetchedAlias", kF, 0}),
    [](const ::testing::TestParamInfo<ContentCase>& info) { return info.param.name; });

// The conformance suite (ContentStoreConformanceTest.Forget*) runs the
// owner-promotion cases against this store too; what is RocksDB's own:
// the fingerprint leaves the in-memory index with the record.
TEST_F(RocksDbForgetTest, OnlyOwnerLeavesNoFingerprintInTheIndex) {
  Claim({Doc(kP, kB)}, T(40));
  ASSERT_EQ(store_->index_stats().fingerprints, 1u);
  const ForgetResult r = Forget(kP);
  EXPECT_EQ(r.contents_removed, 1u);
  EXPECT_EQ(store_->index_stats().fingerprints, 0u);
  EXPECT_EQ(Peek(Doc("http://x.example/", kNearB)).verdict, ContentVerdict::kNew);
}

// Chunks: D1, D2 and D3 share a preamble; D1 also has a text of its own,
// and holds the preamble twice (two chunk ids).
TEST_F(RocksDbForgetTest, ChunksLoseHoldersAndUniqueTexts) {
  const std::string d1 = "http://docs.example/1";
  const std::string d2 = "http://docs.example/2";
  const std::string d3 = "http://docs.example/3";
  Chunks(d1, {Chunk("pre", kA), Chunk("own", kB), Chunk("pre-again", kA)}, true, T(10));
  Chunks(d2, {Chunk("p", kA), Chunk("x", kC)}, true, T(20));
  Chunks(d3, {Chunk("p", kA)}, true, T(30));
  ExpectConsistent();
  ASSERT_EQ(store_->chunk_index_stats().fingerprints, 3u);
  ChunkAnswer before = Chunks("http://new.example/", {Chunk("q", kA)}, false, T(40));
  ASSERT_EQ(before.outcomes[0].duplicate_document_url, d1);

  const ForgetResult r = Forget(d1);
  EXPECT_FALSE(r.url_found);  // chunks only: CheckChunks records no URL
  EXPECT_TRUE(r.found());
  EXPECT_TRUE(r.chunk_manifest_removed);
  EXPECT_EQ(r.chunk_holders_removed, 3u);
  EXPECT_EQ(r.chunk_texts_removed, 1u);
  ASSERT_EQ(r.chunk_owners_promoted.size(), 1u);
  EXPECT_EQ(r.chunk_owners_promoted[0].sha256, Sha256(kA.body));
  EXPECT_EQ(r.chunk_owners_promoted[0].new_owner_document_url, d2);
  EXPECT_EQ(r.chunk_owners_promoted[0].new_owner_chunk_id, "p");
  EXPECT_EQ(store_->chunk_index_stats().fingerprints, 2u);

  ChunkAnswer after =
      Chunks("http://new.example/", {Chunk("q", kA), Chunk("s", kNearB)}, false, T(40));
  ASSERT_EQ(after.outcomes.size(), 2u);
  EXPECT_EQ(after.outcomes[0].verdict, ChunkVerdict::kExactDuplicate);
  EXPECT_EQ(after.outcomes[0].duplicate_document_url, d2);
  EXPECT_EQ(after.outcomes[0].duplicate_chunk_id, "p");
  EXPECT_EQ(after.outcomes[0].other_holders, 2u);
  EXPECT_EQ(after.outcomes[1].verdict, ChunkVerdict::kNew);  // B is gone: nothing near
  EXPECT_EQ(Chunks("http://new.example/", {Chunk("r", kB)}, false, T(40)).outcomes[0].verdict,
            ChunkVerdict::kNew);

  // The document comes back: its chunks are new again except the preamble.
  ChunkAnswer back = Chunks(d1, {Chunk("pre", kA), Chunk("own", kB)}, true, T(50));
  EXPECT_EQ(back.replaced_chunks, 0u);
  EXPECT_EQ(back.outcomes[0].verdict, ChunkVerdict::kExactDuplicate);
  EXPECT_EQ(back.outcomes[0].duplicate_document_url, d2);
  EXPECT_EQ(back.outcomes[1].verdict, ChunkVerdict::kNew);
}

TEST_F(RocksDbForgetTest, PageWithContentAndChunksLosesBoth) {
  Claim({Doc(kP, kB)}, T(10));
  Chunks(kP, {Chunk("0", kC)}, true, T(11));
  const ForgetResult r = Forget(kP);
  EXPECT_TRUE(r.url_found);
  EXPECT_EQ(r.contents_removed, 1u);
  EXPECT_TRUE(r.chunk_manifest_removed);
  EXPECT_EQ(r.chunk_texts_removed, 1u);
  EXPECT_THAT(r.chunk_owners_promoted, IsEmpty());
  EXPECT_EQ(store_->index_stats().fingerprints, 0u);
  EXPECT_EQ(store_->chunk_index_stats().fingerprints, 0u);
}

// With sync_writes the Forget's batch is fsynced like a claim's (the kill -9
// case, sync off, is rocksdb_store_test's AcknowledgedForgetSurvivesKillDashNine).
TEST_F(RocksDbForgetTest, WorksWithSyncWrites) {
  sync_writes_ = true;
  Reopen();
  Claim({Doc(kP, kB)}, T(10));
  EXPECT_EQ(Forget(kP).contents_removed, 1u);
  Reopen();
  EXPECT_FALSE(UrlStored(kP));
  EXPECT_EQ(store_->index_stats().fingerprints, 0u);
  EXPECT_EQ(Peek(Doc(kP, kB)).verdict, ContentVerdict::kNew);
}

TEST_F(RocksDbForgetTest, SurvivesRestart) {
  Claim({Doc(kP, kB)}, T(10));
  Claim({Doc(kO, kA)}, T(11));
  Claim({Doc(kZ, kA)}, T(12));
  Chunks(kP, {Chunk("0", kC)}, true, T(13));
  Forget(kP);
  Forget(kO);
  Reopen();
  ExpectConsistent();
  EXPECT_EQ(store_->index_stats().fingerprints, 1u);  // A only
  EXPECT_EQ(store_->chunk_index_stats().fingerprints, 0u);
  EXPECT_FALSE(UrlStored(kP));
  EXPECT_FALSE(UrlStored(kO));
  EXPECT_TRUE(UrlStored(kZ));
  EXPECT_EQ(Peek(Doc("http://x.example/", kNearB)).verdict, ContentVerdict::kNew);
  EXPECT_EQ(Peek(Doc("http://x.example/", kA)).owner_url, kZ);
  EXPECT_TRUE(ClaimUrlIsNew(kP));
  // New ids continue; a new text is indexed and found.
  Claim({Doc(kQ, kB)}, T(20));
  EXPECT_EQ(Peek(Doc("http://x.example/", kNearB)).owner_url, kQ);
}

// Forget racing claims of the same URLs, texts and documents (and near
// texts, so that near lookups resolve index entries being deleted): every
// call succeeds and the store is consistent afterwards.
TEST_F(RocksDbForgetTest, ConcurrentForgetAndClaimsLeaveAConsistentStore) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 300;
  const std::vector<std::string> urls = {"http://c.example/0", "http://c.example/1",
                                         "http://c.example/2", "http://c.example/3"};
  const std::vector<Text> texts = {kA, kB, kNearB, kC};
  std::vector<std::thread> threads;
  std::vector<std::string> errors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1234 + t);
      auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
      for (int i = 0; i < kIterations && errors[t].empty(); ++i) {
        const absl::Time now = T(100 + i);
        const std::string& url = urls[pick(urls.size())];
        absl::Status s;
        switch (pick(4)) {
          case 0: {
            std::vector<UrlClaim> out;
            s = store_->ClaimUrls({url}, now, &out);
            break;
          }
          case 1: {
            std::vector<ContentOutcome> out;
            s = store_->CheckContent({Doc(url, urls[pick(urls.size())], texts[pick(texts.size())]),
                                      Doc(urls[pick(urls.size())], texts[pick(texts.size())])},
                                     /*claim=*/pick(4) != 0, ContentLimits{}, now, &out);
            break;
          }
          case 2: {
            ChunkAnswer answer;
            std::vector<ChunkInput> chunks;
            const size_t n = pick(3);
            for (size_t c = 0; c < n; ++c) {
              chunks.push_back(Chunk(absl::StrCat(c), texts[pick(texts.size())]));
            }
            s = store_->CheckChunks({url, chunks}, /*claim=*/pick(4) != 0, now, &answer);
            break;
          }
          default:
            s = store_->Forget(url, now).status();
            break;
        }
        if (!s.ok()) errors[t] = s.ToString();
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  ExpectConsistent();
  for (const std::string& url : urls) Forget(url);
  ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store_->CheckConsistency());
  EXPECT_EQ(report.urls + report.contents + report.aliases + report.fingerprints + report.fetches +
                report.chunk_manifests + report.chunk_texts + report.chunk_holders,
            0u)
      << "forgetting every URL leaves an empty store";
  EXPECT_EQ(store_->index_stats().fingerprints, 0u);
  EXPECT_EQ(store_->chunk_index_stats().fingerprints, 0u);
}

// The checker itself finds what Forget must never leave behind.
TEST_F(RocksDbForgetTest, CheckerReportsAConsistentStoreAsOk) {
  Claim({Doc(kO, kF, kA)}, T(10));
  Chunks(kO, {Chunk("0", kA)}, true, T(11));
  ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store_->CheckConsistency());
  EXPECT_TRUE(report.ok());
  EXPECT_EQ(report.urls, 2u);
  EXPECT_EQ(report.contents, 1u);
  EXPECT_EQ(report.aliases, 1u);
  EXPECT_EQ(report.fingerprints, 1u);
  EXPECT_EQ(report.fetches, 1u);
  EXPECT_EQ(report.chunk_manifests, 1u);
  EXPECT_EQ(report.chunk_texts, 1u);
  EXPECT_EQ(report.chunk_holders, 1u);
}

// The checker finds the dangling references Forget must never leave: each
// case forges one broken record straight into RocksDB.
struct DamageCase {
  std::string name;
  std::string key;  // written into the "content" column family
  std::string value;
  std::string problem;  // a substring of the reported problem
};

class CheckerDamageTest : public RocksDbForgetTest,
                          public ::testing::WithParamInterface<DamageCase> {};

TEST_P(CheckerDamageTest, ReportsTheBrokenInvariant) {
  const DamageCase& c = GetParam();
  Claim({Doc(kO, kA)}, T(10));
  Chunks(kO, {Chunk("0", kB)}, true, T(11));
  ExpectConsistent();
  ASSERT_THAT(store_->Close(), IsOk());
  store_.reset();
  {
    rocksdb::Options options;
    std::vector<rocksdb::ColumnFamilyDescriptor> families = {
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(options)},
        {"content", rocksdb::ColumnFamilyOptions(options)}};
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options, dir_->path() + "/db", families, &handles, &raw);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::unique_ptr<rocksdb::DB> db(raw);
    s = db->Put(rocksdb::WriteOptions(), handles[1], c.key, c.value);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (rocksdb::ColumnFamilyHandle* h : handles) {
      ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
    }
    ASSERT_TRUE(db->Close().ok());
  }
  Open();
  ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store_->CheckConsistency());
  EXPECT_FALSE(report.ok());
  EXPECT_THAT(report.problems, ::testing::Contains(::testing::HasSubstr(c.problem)));
  // Leave a store TearDown's check accepts: forget what the forged record
  // names is not possible in general, so drop the store instead.
  ASSERT_THAT(store_->Close(), IsOk());
  store_.reset();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CheckerDamageTest,
    ::testing::Values(
        DamageCase{"AliasWithoutContent", fmt::EncodeAliasKey(Sha256("none"), kZ),
                   fmt::EncodeAliasValue(T(1)), "no content record"},
        DamageCase{"AliasCountMismatch", fmt::EncodeAliasKey(Sha256(kA.body), kO),
                   fmt::EncodeAliasValue(T(1)), "is also an alias"},
        DamageCase{"FingerprintWithoutContent", fmt::EncodeFingerprintKey(7),
                   fmt::EncodeFingerprintValue(1, Sha256("none")), "has no content record"},
        DamageCase{"ContentWithoutOwnerUrl", fmt::EncodeContentKey(Sha256("none")),
                   fmt::EncodeContentValue({9, 5, T(1), 0, "http://ghost.example/"}),
                   "has no URL record"},
        DamageCase{"FetchOfAStranger", fmt::EncodeFetchKey(kZ),
                   fmt::EncodeFetchValue({Sha256(kA.body), T(1), T(1), "", ""}),
                   "neither owner nor alias"},
        DamageCase{"HolderWithoutManifest",
                   fmt::EncodeChunkHolderKey({Sha256(kB.body), T(1), kZ, "9"}),
                   fmt::EncodeChunkHolderValue(), "not an entry of its document's manifest"},
        DamageCase{"ChunkTextOwnedByAStranger", fmt::EncodeChunkTextByIdKey(7),
                   fmt::EncodeChunkTextByIdValue({Sha256("none"), 1, 1, T(1), kZ, "9"}),
                   "not an entry of its document's manifest"},
        DamageCase{"ChunkTextCountsAMissingHolder", fmt::EncodeChunkTextByIdKey(8),
                   fmt::EncodeChunkTextByIdValue({Sha256("none"), 1, 2, T(1), kZ, "9"}),
                   "holder count 2 but 1 holders"},
        DamageCase{"FormatThreeFingerprintLeft", fmt::EncodeChunkFingerprintKey(7),
                   fmt::EncodeFingerprintValue(1, Sha256("none")),
                   "a storage format 3 record left after the upgrade"}),
    [](const ::testing::TestParamInfo<DamageCase>& info) { return info.param.name; });

TEST_F(RocksDbForgetTest, AfterCloseFails) {
  ASSERT_THAT(store_->Close(), IsOk());
  EXPECT_THAT(store_->Forget(kO, T(1)).status(), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(store_->CheckConsistency().status(), StatusIs(absl::StatusCode::kFailedPrecondition));
  store_.reset();
}

}  // namespace
}  // namespace dedupd::testing
