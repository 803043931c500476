// Tests of RocksDbStore's operator calls: Stats (counts after known writes,
// exact and estimated), Checkpoint (open the copy as a store, find every
// record; online while claims run), NewExport (order, contents, bounded
// messages, Close with a cursor open). And BloomUrlStore::BackupTo.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/text/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/bloom/bloom_url_store.h"
#include "storage/rocksdb/rocksdb_store.h"
#include "storage/testing/test_temp_dir.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

RocksDbStoreOptions SmallOptions(const std::string& path) {
  RocksDbStoreOptions options;
  options.path = path;
  options.normalizer_version = 1;
  options.block_cache_bytes = size_t{8} << 20;
  options.write_buffer_bytes = size_t{4} << 20;
  return options;
}

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

ContentDoc Doc(const std::string& url, const std::string& text) {
  ContentDoc doc;
  doc.identity_url = url;
  doc.fetched_url = url;
  doc.sha256 = Sha256(text);
  doc.simhash = Sha256(text)[0] * 0x0101010101010101ULL;  // distinct per text
  doc.max_distance = 0;
  return doc;
}

// Writes a known set: 3 URL claims, 2 texts from 3 URLs (one alias), one
// chunked document with 2 chunks.
void WriteKnownSet(RocksDbStore* store) {
  std::vector<UrlClaim> claims;
  ASSERT_THAT(store->ClaimUrls({"http://a/1", "http://a/2", "http://a/3"}, T(10), &claims), IsOk());
  std::vector<ContentOutcome> outcomes;
  ASSERT_THAT(store->CheckContent({Doc("http://c/1", "text one"), Doc("http://c/2", "text two"),
                                   Doc("http://c/3", "text one")},
                                  /*claim=*/true, ContentLimits{}, T(20), &outcomes),
              IsOk());
  ChunkDocument doc;
  doc.document_url = "http://d/1";
  for (int i = 0; i < 2; ++i) {
    ChunkInput chunk;
    chunk.chunk_id = absl::StrCat("c", i);
    chunk.sha256 = Sha256(absl::StrCat("chunk ", i));
    chunk.simhash = 0x1111111111111111ULL * (i + 1);
    chunk.max_distance = -1;
    doc.chunks.push_back(chunk);
  }
  ChunkAnswer answer;
  ASSERT_THAT(store->CheckChunks(doc, /*claim=*/true, T(30), &answer), IsOk());
  UrlClaimOptions named;
  named.name_space = "n";
  ASSERT_THAT(store->Claim(named, {"http://a/", "http://n/"}, T(40), &claims), IsOk());
}

std::map<std::string, StoreStats::RecordKind> ByName(const StoreStats& st) {
  std::map<std::string, StoreStats::RecordKind> out;
  for (const StoreStats::RecordKind& k : st.kinds) out[k.name] = k;
  return out;
}

TEST(RocksDbStoreStatsTest, CountsEveryKindAfterKnownWrites) {
  ASSERT_OK_AND_ASSIGN(TestTempDir dir, TestTempDir::Make());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store,
                       RocksDbStore::Open(SmallOptions(dir.path() + "/db")));
  WriteKnownSet(store.get());

  ASSERT_OK_AND_ASSIGN(const StoreStats exact, store->Stats(/*exact=*/true));
  const auto kinds = ByName(exact);
  // URLs: 3 claimed + 3 content URLs (a content claim records its URLs);
  // 2 more in namespace "n".
  // Chunk holder records: none, each text's one holder is its owner, named
  // in the text record.
  const std::map<std::string, uint64_t> want = {
      {"url", 6},         {"content", 2},      {"alias", 1},
      {"fingerprint", 2}, {"fetch", 3},        {"chunk_manifest", 1},
      {"chunk_text", 2},  {"chunk_holder", 0}, {"namespaced_url", 2}};
  ASSERT_EQ(kinds.size(), want.size());
  for (const auto& [name, count] : want) {
    ASSERT_TRUE(kinds.count(name)) << name;
    EXPECT_THAT(kinds.at(name).exact_count, Optional(count)) << name;
  }
  EXPECT_EQ(kinds.at("url").key_prefix, "\x01");
  EXPECT_EQ(kinds.at("chunk_holder").key_prefix, std::string("\x05\x03", 2));
  EXPECT_EQ(kinds.at("chunk_text").key_prefix, std::string("\x05\x05", 2));
  EXPECT_EQ(exact.estimated_url_records, 8u) << "every namespace's URL records";
  EXPECT_EQ(exact.content_fingerprints_indexed, 2u);
  EXPECT_EQ(exact.chunk_fingerprints_indexed, 2u);
  EXPECT_EQ(exact.storage_format_version, 5u);
  EXPECT_EQ(exact.normalizer_version, 1u);
  EXPECT_EQ(exact.simhash_shingle_words, 3u);
  EXPECT_EQ(exact.created, store->created());
  EXPECT_EQ(exact.block_cache_capacity, size_t{8} << 20);
  EXPECT_FALSE(exact.write_stopped);
  EXPECT_GT(exact.wal_bytes, 0u);
  EXPECT_EQ(exact.disk_bytes, exact.live_sst_bytes + exact.wal_bytes);
  EXPECT_GT(exact.cur_size_all_mem_tables, 0u);
  // Still in the memtables only: their part of the estimate is counted.
  EXPECT_GT(ByName(exact).at("url").estimated_bytes, 0u);

  // The cheap form leaves exact counts out; after a reopen (flushed to
  // table files) the URL estimate is still the count, and sizes are seen.
  ASSERT_THAT(store->Close(), IsOk());
  ASSERT_OK_AND_ASSIGN(store, RocksDbStore::Open(SmallOptions(dir.path() + "/db")));
  ASSERT_OK_AND_ASSIGN(const StoreStats cheap, store->Stats(/*exact=*/false));
  for (const StoreStats::RecordKind& k : cheap.kinds) {
    EXPECT_FALSE(k.exact_count.has_value()) << k.name;
  }
  EXPECT_EQ(cheap.estimated_url_records, 8u);
  EXPECT_GT(cheap.live_sst_bytes, 0u);
  // A key range inside one data block of a table file is estimated at 0
  // bytes; the URL records of the family end in the namespaced range.
  EXPECT_GT(
      ByName(cheap).at("url").estimated_bytes + ByName(cheap).at("namespaced_url").estimated_bytes,
      0u);
  ASSERT_EQ(cheap.namespaces.size(), 1u);
  EXPECT_EQ(cheap.namespaces[0].name, "n");
  EXPECT_FALSE(cheap.namespaces[0].exact_url_count.has_value());
  EXPECT_EQ(cheap.content_fingerprints_indexed, 2u);

  ASSERT_THAT(store->Close(), IsOk());
  EXPECT_THAT(store->Stats(false), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(RocksDbStoreCheckpointTest, CopyOpensAsAStoreWithEveryRecord) {
  ASSERT_OK_AND_ASSIGN(TestTempDir dir, TestTempDir::Make());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store,
                       RocksDbStore::Open(SmallOptions(dir.path() + "/db")));
  WriteKnownSet(store.get());
  const std::string backup = dir.path() + "/backup";
  ASSERT_OK_AND_ASSIGN(uint64_t sequence, store->Checkpoint(backup));
  EXPECT_GT(sequence, 0u);
  // Writes after the checkpoint are not in it.
  std::vector<UrlClaim> claims;
  ASSERT_THAT(store->ClaimUrls({"http://after/"}, T(40), &claims), IsOk());

  // Errors: exists, empty, parent missing.
  EXPECT_THAT(store->Checkpoint(backup),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("already exists")));
  EXPECT_THAT(store->Checkpoint(""), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(store->Checkpoint(dir.path() + "/no/such/parent/b"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("does not exist")));
  ASSERT_OK_AND_ASSIGN(const StoreStats before, store->Stats(true));
  ASSERT_THAT(store->Close(), IsOk());

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> copy,
                       RocksDbStore::Open(SmallOptions(backup)));
  EXPECT_EQ(copy->created(), store->created());
  std::vector<std::optional<absl::Time>> seen;
  ASSERT_THAT(copy->LookupUrls(
                  {"http://a/1", "http://a/2", "http://a/3", "http://c/3", "http://after/"}, &seen),
              IsOk());
  EXPECT_THAT(seen, ElementsAre(Optional(T(10)), Optional(T(10)), Optional(T(10)), Optional(T(20)),
                                std::nullopt));
  std::vector<ContentOutcome> outcomes;
  ASSERT_THAT(copy->CheckContent({Doc("http://x/", "text two")}, /*claim=*/false, ContentLimits{},
                                 T(50), &outcomes),
              IsOk());
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(outcomes[0].owner_url, "http://c/2");
  ASSERT_OK_AND_ASSIGN(const StoreStats after, copy->Stats(true));
  auto counts = [](const StoreStats& st) {
    std::map<std::string, uint64_t> out;
    for (const auto& k : st.kinds) out[k.name] = k.exact_count.value_or(0);
    return out;
  };
  std::map<std::string, uint64_t> want = counts(before);
  want["url"] -= 1;  // http://after/
  EXPECT_EQ(counts(after), want);
  EXPECT_EQ(after.chunk_fingerprints_indexed, 2u);
}

TEST(RocksDbStoreCheckpointTest, OnlineWhileClaimingHoldsEveryAcknowledgedClaim) {
  ASSERT_OK_AND_ASSIGN(TestTempDir dir, TestTempDir::Make());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store,
                       RocksDbStore::Open(SmallOptions(dir.path() + "/db")));
  std::atomic<int> acknowledged{0};  // batches [0, acknowledged) answered
  std::atomic<bool> stop{false};
  constexpr int kMaxBatches = 2000;
  constexpr int kBatch = 50;
  auto batch_keys = [](int b) {
    std::vector<std::string> keys;
    for (int i = 0; i < kBatch; ++i) keys.push_back(absl::StrCat("http://h/", b, "/", i));
    return keys;
  };
  std::thread claimer([&] {
    std::vector<UrlClaim> out;
    for (int b = 0; b < kMaxBatches && !stop.load(); ++b) {
      if (!store->ClaimUrls(batch_keys(b), T(b), &out).ok()) return;
      acknowledged.store(b + 1);
    }
  });
  // Wait (bounded) until some batches are in, then back up.
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (acknowledged.load() < 20 && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
  const int before_backup = acknowledged.load();
  ASSERT_OK_AND_ASSIGN(uint64_t sequence, store->Checkpoint(dir.path() + "/backup"));
  (void)sequence;
  stop.store(true);
  claimer.join();
  ASSERT_THAT(store->Close(), IsOk());

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> copy,
                       RocksDbStore::Open(SmallOptions(dir.path() + "/backup")));
  for (int b = 0; b < before_backup; ++b) {
    std::vector<std::optional<absl::Time>> seen;
    ASSERT_THAT(copy->LookupUrls(batch_keys(b), &seen), IsOk());
    for (size_t i = 0; i < seen.size(); ++i) {
      ASSERT_THAT(seen[i], Optional(T(b))) << "batch " << b << " key " << i;
    }
  }
}

TEST(RocksDbStoreExportTest, ListsUrlsThenContentWithAliasesInOrder) {
  ASSERT_OK_AND_ASSIGN(TestTempDir dir, TestTempDir::Make());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store,
                       RocksDbStore::Open(SmallOptions(dir.path() + "/db")));
  WriteKnownSet(store.get());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ExportCursor> cursor,
                       store->NewExport(/*urls=*/true, /*content=*/true));
  // Written after the snapshot: not exported.
  std::vector<UrlClaim> claims;
  ASSERT_THAT(store->ClaimUrls({"http://after/"}, T(40), &claims), IsOk());

  // max_bytes 1: one record per call, so every resume point is exercised.
  std::vector<ExportedRecord> all;
  bool done = false;
  for (int calls = 0; !done && calls < 100; ++calls) {
    std::vector<ExportedRecord> some;
    ASSERT_THAT(cursor->Next(1, &some, &done), IsOk());
    ASSERT_LE(some.size(), 1u);
    for (auto& r : some) all.push_back(std::move(r));
  }
  ASSERT_TRUE(done);
  std::vector<std::string> lines;
  for (const ExportedRecord& r : all) {
    const char* kind = r.kind == ExportedRecord::Kind::kUrl       ? "url"
                       : r.kind == ExportedRecord::Kind::kContent ? "content"
                                                                  : "alias";
    std::string line = absl::StrCat(kind, " ", r.url, " ", absl::ToUnixSeconds(r.time));
    if (r.kind != ExportedRecord::Kind::kUrl) {
      absl::StrAppend(&line, " ", r.sha256 == Sha256("text one") ? "one" : "two");
    }
    if (r.kind == ExportedRecord::Kind::kContent) absl::StrAppend(&line, " ", r.alias_count);
    lines.push_back(line);
  }
  // Content records come in SHA-256 order.
  const bool one_first = Sha256("text one") < Sha256("text two");
  std::vector<std::string> content_one = {"content http://c/1 20 one 1", "alias http://c/3 20 one"};
  std::vector<std::string> content_two = {"content http://c/2 20 two 0"};
  std::vector<std::string> want = {"url http://a/1 10", "url http://a/2 10", "url http://a/3 10",
                                   "url http://c/1 20", "url http://c/2 20", "url http://c/3 20"};
  for (const auto& part :
       one_first ? std::vector{content_one, content_two} : std::vector{content_two, content_one}) {
    want.insert(want.end(), part.begin(), part.end());
  }
  EXPECT_EQ(lines, want);

  // Only content; a large budget gives everything in one call.
  ASSERT_OK_AND_ASSIGN(cursor, store->NewExport(/*urls=*/false, /*content=*/true));
  std::vector<ExportedRecord> content;
  ASSERT_THAT(cursor->Next(1 << 20, &content, &done), IsOk());
  EXPECT_TRUE(done);
  EXPECT_EQ(content.size(), 3u);

  // Close with a cursor open: the cursor fails cleanly afterwards.
  ASSERT_OK_AND_ASSIGN(cursor, store->NewExport(true, true));
  ASSERT_THAT(store->Close(), IsOk());
  std::vector<ExportedRecord> none;
  EXPECT_THAT(cursor->Next(1 << 20, &none, &done), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST(BloomUrlStoreBackupTest, BackupOpensWithEveryClaimedKey) {
  ASSERT_OK_AND_ASSIGN(TestTempDir dir, TestTempDir::Make());
  BloomUrlStoreOptions options;
  options.path = dir.path() + "/bloom";
  options.expected_urls = 10000;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<BloomUrlStore> store, BloomUrlStore::Open(options));
  std::vector<std::string> keys;
  for (int i = 0; i < 500; ++i) keys.push_back(absl::StrCat("http://b/", i));
  std::vector<UrlClaim> claims;
  ASSERT_THAT(store->ClaimUrls(keys, T(1), &claims), IsOk());
  ASSERT_THAT(store->Snapshot(), IsOk());  // some keys before a rotation ...
  std::vector<std::string> more;
  for (int i = 0; i < 100; ++i) more.push_back(absl::StrCat("http://m/", i));
  ASSERT_THAT(store->ClaimUrls(more, T(2), &claims), IsOk());  // ... some after

  const std::string backup = dir.path() + "/backup-bloom";
  ASSERT_THAT(store->BackupTo(backup), IsOk());
  EXPECT_THAT(store->BackupTo(backup),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("already exists")));
  EXPECT_THAT(store->BackupTo(""), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_THAT(store->Close(), IsOk());

  BloomUrlStoreOptions copy_options = options;
  copy_options.path = backup;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<BloomUrlStore> copy, BloomUrlStore::Open(copy_options));
  EXPECT_EQ(copy->stats().inserted_urls, 600u);
  keys.insert(keys.end(), more.begin(), more.end());
  std::vector<std::optional<absl::Time>> seen;
  ASSERT_THAT(copy->LookupUrls(keys, &seen), IsOk());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_TRUE(seen[i].has_value()) << keys[i];
  // The copy is a working store: a new key is new, then seen.
  ASSERT_THAT(copy->ClaimUrls({"http://new/"}, T(3), &claims), IsOk());
  EXPECT_TRUE(claims[0].is_new);
  ASSERT_THAT(copy->Close(), IsOk());
}

}  // namespace
}  // namespace dedupd::testing
