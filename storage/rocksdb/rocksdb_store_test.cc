// Tests of RocksDbStore: the UrlStore conformance suite, plus what only a
// durable store has (reopen, versions, locking, corruption, kill -9).
// Includes RocksDB directly (as storage/rocksdb_*.cc may) to forge records
// that the store itself never writes.

#include "storage/rocksdb/rocksdb_store.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/text/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "rocksdb/options.h"
#include "rocksdb/status.h"
#include "rocksdb/utilities/options_util.h"
#include "rocksdb/write_batch.h"
#include "storage/document_key.h"
#include "storage/memory/memory_chunk_store.h"
#include "storage/rocksdb/rocksdb_format.h"
#include "storage/rocksdb/rocksdb_status.h"
#include "storage/rocksdb/rocksdb_store_internal.h"
#include "storage/testing/chunk_store_conformance.h"
#include "storage/testing/content_store_conformance.h"
#include "storage/testing/test_temp_dir.h"
#include "storage/testing/url_store_conformance.h"
#include "tests/testing/status_matchers.h"

extern char** environ;

namespace dedupd::testing {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Optional;
using ::testing::StartsWith;

namespace fmt = ::dedupd::rocksdb_format;

constexpr uint32_t kNormalizerVersion = 1;

RocksDbStoreOptions SmallOptions(const std::string& path,
                                 uint32_t normalizer_version = kNormalizerVersion) {
  RocksDbStoreOptions options;
  options.path = path;
  options.normalizer_version = normalizer_version;
  options.block_cache_bytes = size_t{8} << 20;
  options.write_buffer_bytes = size_t{4} << 20;
  return options;
}

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

std::string UrlKey(size_t i) {
  return absl::StrCat("https://www.example.com/a/long/path/to/page-", i, "?id=", i * 31);
}

// --- The conformance suite ------------------------------------------------

class RocksDbHarness : public UrlStoreHarness, public ContentStoreHarness {
 public:
  static absl::StatusOr<std::unique_ptr<RocksDbHarness>> Make() {
    absl::StatusOr<TestTempDir> dir = TestTempDir::Make();
    if (!dir.ok()) return dir.status();
    auto harness = std::unique_ptr<RocksDbHarness>(new RocksDbHarness(*std::move(dir)));
    absl::StatusOr<std::unique_ptr<RocksDbStore>> store =
        RocksDbStore::Open(SmallOptions(harness->dir_.path() + "/db"));
    if (!store.ok()) return store.status();
    harness->store_ = *std::move(store);
    return harness;
  }

  UrlStore& store() override { return *store_; }
  ContentStore& content() override { return *store_; }
  UrlStore& urls() override { return *store_; }
  absl::StatusOr<bool> Reopen() override {
    absl::Status s = store_->Close();
    if (!s.ok()) return s;
    store_.reset();
    absl::StatusOr<std::unique_ptr<RocksDbStore>> store =
        RocksDbStore::Open(SmallOptions(dir_.path() + "/db"));
    if (!store.ok()) return store.status();
    store_ = *std::move(store);
    return true;
  }

 private:
  explicit RocksDbHarness(TestTempDir dir) : dir_(std::move(dir)) {}

  TestTempDir dir_;                      // destroyed after store_
  std::unique_ptr<RocksDbStore> store_;  // destroyed first
};

INSTANTIATE_TEST_SUITE_P(RocksDb, UrlStoreConformanceTest,
                         ::testing::Values(UrlStoreBackend{
                             "RocksDb",
                             []() -> absl::StatusOr<std::unique_ptr<UrlStoreHarness>> {
                               return RocksDbHarness::Make();
                             }}),
                         UrlStoreBackendName);

INSTANTIATE_TEST_SUITE_P(RocksDb, ContentStoreConformanceTest,
                         ::testing::Values(ContentStoreBackend{
                             "RocksDb",
                             []() -> absl::StatusOr<std::unique_ptr<ContentStoreHarness>> {
                               return RocksDbHarness::Make();
                             }}),
                         ContentStoreBackendName);

// A chunk store on a fresh directory; Reopen closes it and opens the same
// directory again (the index is rebuilt from the records).
class RocksDbChunkHarness : public ChunkStoreHarness {
 public:
  static absl::StatusOr<std::unique_ptr<RocksDbChunkHarness>> Make() {
    absl::StatusOr<TestTempDir> dir = TestTempDir::Make();
    if (!dir.ok()) return dir.status();
    auto harness = std::unique_ptr<RocksDbChunkHarness>(new RocksDbChunkHarness(*std::move(dir)));
    absl::Status s = harness->Open();
    if (!s.ok()) return s;
    return harness;
  }

  ChunkStore& chunks() override { return *store_; }
  absl::StatusOr<bool> Reopen() override {
    absl::Status s = store_->Close();
    if (!s.ok()) return s;
    store_.reset();
    s = Open();
    if (!s.ok()) return s;
    return true;
  }

 private:
  explicit RocksDbChunkHarness(TestTempDir dir) : dir_(std::move(dir)) {}
  absl::Status Open() {
    absl::StatusOr<std::unique_ptr<RocksDbStore>> store =
        RocksDbStore::Open(SmallOptions(dir_.path() + "/db"));
    if (!store.ok()) return store.status();
    store_ = *std::move(store);
    return absl::OkStatus();
  }

  TestTempDir dir_;                      // destroyed after store_
  std::unique_ptr<RocksDbStore> store_;  // destroyed first
};

INSTANTIATE_TEST_SUITE_P(RocksDb, ChunkStoreConformanceTest,
                         ::testing::Values(ChunkStoreBackend{
                             "RocksDb",
                             []() -> absl::StatusOr<std::unique_ptr<ChunkStoreHarness>> {
                               return RocksDbChunkHarness::Make();
                             }}),
                         ChunkStoreBackendName);

// --- RocksDB-specific -----------------------------------------------------

class RocksDbStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(dir_, TestTempDir::Make());
    path_ = dir_->path() + "/db";
  }

  // Runs fn on the database opened without the store, with every column
  // family it has, by name. REQUIRES: the store is closed.
  using Families = std::map<std::string, rocksdb::ColumnFamilyHandle*>;
  void WithRawDb(bool create, const std::function<void(rocksdb::DB*, const Families&)>& fn) {
    rocksdb::Options options;
    options.create_if_missing = create;
    // Every column family the directory has must be opened.
    std::vector<std::string> names;
    if (!rocksdb::DB::ListColumnFamilies(options, path_, &names).ok()) {
      names = {rocksdb::kDefaultColumnFamilyName};
    }
    std::vector<rocksdb::ColumnFamilyDescriptor> families;
    for (const std::string& name : names) {
      families.push_back({name, rocksdb::ColumnFamilyOptions(options)});
    }
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    rocksdb::Status s = rocksdb::DB::Open(options, path_, families, &handles, &raw);
    ASSERT_TRUE(s.ok()) << s.ToString();
    std::unique_ptr<rocksdb::DB> db(raw);
    Families by_name;
    for (size_t i = 0; i < names.size(); ++i) by_name[names[i]] = handles[i];
    fn(db.get(), by_name);
    for (rocksdb::ColumnFamilyHandle* h : handles) {
      ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
    }
    s = db->Close();
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Writes key → value straight into the database, as a damaged or foreign
  // store would hold it. REQUIRES: the store is closed.
  // `family` names the column family (the default one unless given).
  void PutRaw(const std::string& key, const std::string& value, bool create = false,
              const std::string& family = rocksdb::kDefaultColumnFamilyName) {
    WithRawDb(create, [&](rocksdb::DB* db, const Families& families) {
      auto f = families.find(family);
      rocksdb::ColumnFamilyHandle* target =
          f != families.end() ? f->second : families.at(rocksdb::kDefaultColumnFamilyName);
      rocksdb::Status s = db->Put(rocksdb::WriteOptions(), target, key, value);
      ASSERT_TRUE(s.ok()) << s.ToString();
    });
  }

  // Rewrites chunk text records of the closed store as storage formats 2
  // and 3 wrote them: the texts in `by_sha` become a text record keyed by
  // SHA-256 plus a fingerprint record (value version 2, with the owner;
  // version 1, the owner a holder record like every other holder, for the
  // texts also in `without_owner`); the meta record says `format_version`.
  // Texts not named stay records by id, as a conversion interrupted
  // between two batches leaves them.
  void DowngradeChunkTexts(uint32_t format_version, const std::set<std::string>& by_sha,
                           const std::set<std::string>& without_owner) {
    std::set<Sha256Digest> shas, ownerless;
    for (const std::string& body : by_sha) shas.insert(Sha256(body));
    for (const std::string& body : without_owner) ownerless.insert(Sha256(body));
    WithRawDb(false, [&](rocksdb::DB* db, const Families& families) {
      rocksdb::ColumnFamilyHandle* content = families.at("content");
      rocksdb::WriteBatch batch;
      std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions(), content));
      const std::string begin = fmt::ChunkTextByIdKeysBegin();
      for (it->Seek(begin); it->Valid() && it->key().starts_with(begin); it->Next()) {
        ASSERT_OK_AND_ASSIGN(uint32_t id, fmt::DecodeChunkTextByIdKey(it->key().ToString()));
        ASSERT_OK_AND_ASSIGN(fmt::ChunkTextByIdValue v,
                             fmt::DecodeChunkTextByIdValue(it->value().ToString()));
        if (shas.count(v.sha256) == 0) continue;
        fmt::ChunkTextValue old{id,          v.simhash,       v.holders, true, v.owner_added,
                                v.owner_url, v.owner_chunk_id};
        if (ownerless.count(v.sha256) != 0) {
          ASSERT_TRUE(batch
                          .Put(content,
                               fmt::EncodeChunkHolderKey(
                                   {v.sha256, v.owner_added, v.owner_url, v.owner_chunk_id}),
                               fmt::EncodeChunkHolderValue())
                          .ok());
          old.has_owner = false;
        }
        ASSERT_TRUE(batch.Delete(content, it->key()).ok());
        ASSERT_TRUE(
            batch.Put(content, fmt::EncodeChunkTextKey(v.sha256), fmt::EncodeChunkTextValue(old))
                .ok());
        ASSERT_TRUE(batch
                        .Put(content, fmt::EncodeChunkFingerprintKey(id),
                             fmt::EncodeFingerprintValue(v.simhash, v.sha256))
                        .ok());
      }
      ASSERT_TRUE(it->status().ok());
      it.reset();
      std::string meta;
      ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), fmt::EncodeMetaKey(), &meta).ok());
      ASSERT_OK_AND_ASSIGN(fmt::StoreMeta m, fmt::DecodeMeta(meta));
      m.format_version = format_version;
      ASSERT_TRUE(batch.Put(fmt::EncodeMetaKey(), fmt::EncodeMeta(m)).ok());
      ASSERT_TRUE(db->Write(rocksdb::WriteOptions(), &batch).ok());
    });
  }

  // The number of keys of the content family that start with `prefix`.
  size_t RawCount(const std::string& prefix) {
    size_t n = 0;
    WithRawDb(false, [&](rocksdb::DB* db, const Families& families) {
      std::unique_ptr<rocksdb::Iterator> it(
          db->NewIterator(rocksdb::ReadOptions(), families.at("content")));
      for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) ++n;
      ASSERT_TRUE(it->status().ok());
    });
    return n;
  }

  uint32_t RawFormatVersion() {
    uint32_t version = 0;
    WithRawDb(false, [&](rocksdb::DB* db, const Families&) {
      std::string meta;
      ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), fmt::EncodeMetaKey(), &meta).ok());
      ASSERT_OK_AND_ASSIGN(version, fmt::DecodeMetaFormatVersion(meta));
    });
    return version;
  }

  // Creates an empty store at path_ with `options` and closes it.
  void CreateClosedStore(const RocksDbStoreOptions& options) {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(options));
    ASSERT_THAT(store->Close(), IsOk());
  }
  // Rewrites the closed store's content meta record as formats 2 to 4
  // wrote it: value version 1, without the MinHash fields.
  void PutContentMetaWithoutMinHash() {
    const fmt::ContentMeta v1{kTextNormalizerVersion, SimHasher::kVersion, 3, SimHasher::kSeed};
    PutRaw(fmt::EncodeContentMetaKey(), fmt::EncodeContentMeta(v1), false, "content");
  }

  std::optional<TestTempDir> dir_;
  std::string path_;
};

TEST_F(RocksDbStoreTest, ReopenKeepsEveryRecordAndFirstSeen) {
  constexpr size_t kBatches = 5;
  constexpr size_t kBatchKeys = 2'000;
  absl::Time created;
  {
    const absl::Time before = absl::Now();
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    created = store->created();
    EXPECT_GE(created, before - absl::Microseconds(1));
    EXPECT_LE(created, absl::Now());
    for (size_t b = 0; b < kBatches; ++b) {
      std::vector<std::string> keys;
      for (size_t i = 0; i < kBatchKeys; ++i) keys.push_back(UrlKey(b * kBatchKeys + i));
      std::vector<UrlClaim> out;
      ASSERT_THAT(store->ClaimUrls(keys, T(100 + b), &out), IsOk());
    }
    // Closed by the destructor, not Close: both must keep everything.
  }
  for (int round = 0; round < 2; ++round) {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    EXPECT_EQ(store->created(), created);
    ASSERT_OK_AND_ASSIGN(uint64_t count, store->ApproximateUrlCount());
    EXPECT_EQ(count, kBatches * kBatchKeys);
    std::vector<std::string> keys;
    for (size_t i = 0; i < kBatches * kBatchKeys; ++i) keys.push_back(UrlKey(i));
    std::vector<std::optional<absl::Time>> found;
    ASSERT_THAT(store->LookupUrls(keys, &found), IsOk());
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(found[i], T(100 + i / kBatchKeys)) << i;
    }
    std::vector<UrlClaim> out;
    ASSERT_THAT(store->ClaimUrls(keys, T(999), &out), IsOk());
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_FALSE(out[i].is_new) << i;
      ASSERT_EQ(out[i].first_seen, T(100 + i / kBatchKeys)) << i;
    }
    ASSERT_THAT(store->Close(), IsOk());
  }
}

// The options RocksDB wrote for family `family` (default: the URL family)
// at the last Open (its newest OPTIONS file, read by RocksDB's own loader;
// the URL memtable's factory is ours and unknown to it, hence ignored).
absl::StatusOr<rocksdb::ColumnFamilyOptions> WrittenFamilyOptions(
    const std::string& path, const std::string& family = rocksdb::kDefaultColumnFamilyName) {
  rocksdb::ConfigOptions config;
  config.ignore_unknown_options = true;
  config.ignore_unsupported_options = true;
  rocksdb::DBOptions db;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  const rocksdb::Status s = rocksdb::LoadLatestOptions(config, path, &db, &families);
  if (!s.ok()) return absl::InternalError(s.ToString());
  for (const rocksdb::ColumnFamilyDescriptor& f : families) {
    if (f.name == family) return f.options;
  }
  return absl::NotFoundError("no column family " + family + " in " + path);
}

// The compaction style is not persisted: a store written under one opens
// under the other, in both directions, and keeps every record (leveled
// files in levels 1+ are sorted runs to universal; universal's runs are
// time-ordered levels to leveled). Small memtables make both styles flush
// and compact while the batches go in (RocksDB's LOG showed the layouts:
// leveled leaves files in L0 and L6, universal then adds runs in L0 and L5
// on top of them, and so on).
TEST_F(RocksDbStoreTest, UrlCompactionStylesOpenEachOthersStores) {
  constexpr size_t kBatchKeys = 2'000;
  constexpr size_t kBatchesPerRound = 40;
  using Style = RocksDbStoreOptions::Compaction;
  const Style rounds[] = {Style::kLeveled, Style::kUniversal, Style::kLeveled, Style::kUniversal};
  size_t stored = 0;
  for (size_t r = 0; r < std::size(rounds); ++r) {
    RocksDbStoreOptions options = SmallOptions(path_);
    options.write_buffer_bytes = size_t{1} << 20;
    options.url_compaction = rounds[r];
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(options));
    // The style asked for is the one RocksDB runs; universal without the
    // ttl that would turn into a monthly full merge.
    ASSERT_OK_AND_ASSIGN(const rocksdb::ColumnFamilyOptions written, WrittenFamilyOptions(path_));
    if (rounds[r] == Style::kUniversal) {
      EXPECT_EQ(written.compaction_style, rocksdb::kCompactionStyleUniversal);
      EXPECT_EQ(written.ttl, 0u);
      EXPECT_EQ(written.periodic_compaction_seconds, 0u);
    } else {
      EXPECT_EQ(written.compaction_style, rocksdb::kCompactionStyleLevel);
    }
    // Everything the earlier rounds stored, with its first-seen time.
    std::vector<std::string> old_keys;
    for (size_t i = 0; i < stored; ++i) old_keys.push_back(UrlKey(i));
    std::vector<std::optional<absl::Time>> found;
    ASSERT_THAT(store->LookupUrls(old_keys, &found), IsOk());
    for (size_t i = 0; i < stored; ++i) {
      ASSERT_EQ(found[i], T(100 + i / kBatchKeys)) << "round " << r << " key " << i;
    }
    for (size_t b = 0; b < kBatchesPerRound; ++b) {
      const size_t batch = stored / kBatchKeys;
      std::vector<std::string> keys;
      for (size_t i = 0; i < kBatchKeys; ++i) keys.push_back(UrlKey(stored + i));
      std::vector<UrlClaim> out;
      ASSERT_THAT(store->ClaimUrls(keys, T(100 + batch), &out), IsOk());
      for (size_t i = 0; i < kBatchKeys; ++i) {
        ASSERT_TRUE(out[i].is_new) << "round " << r << " key " << stored + i;
      }
      stored += kBatchKeys;
    }
    ASSERT_THAT(store->Close(), IsOk());
  }
}

TEST_F(RocksDbStoreTest, SyncWritesStoreReopens) {
  RocksDbStoreOptions options = SmallOptions(path_);
  options.sync_writes = true;
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(options));
    std::vector<UrlClaim> out;
    ASSERT_THAT(store->ClaimUrls({"http://a/"}, T(1), &out), IsOk());
    EXPECT_TRUE(out[0].is_new);
    ASSERT_THAT(store->Close(), IsOk());
  }
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(options));
  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store->LookupUrls({"http://a/"}, &found), IsOk());
  EXPECT_THAT(found, ElementsAre(Optional(T(1))));
}

TEST_F(RocksDbStoreTest, NormalizerVersionMismatchIsFailedPrecondition) {
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_, 1)));
    ASSERT_THAT(store->Close(), IsOk());
  }
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_, 2)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       absl::StrCat("store at ", path_,
                                    " was written with normalizer version 1, this "
                                    "build uses 2; keys would not match: rebuild the "
                                    "store or run the matching dedupd version")));
  // The failed Open released the directory.
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_, 1)), IsOk());
}

TEST_F(RocksDbStoreTest, ContentAlgorithmMismatchSaysWhatToDo) {
  {
    RocksDbStoreOptions old = SmallOptions(path_);
    old.simhash_version = 1;  // a store written before SimHash version 2
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(old));
    ASSERT_THAT(store->Close(), IsOk());
  }
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("SimHash version 1"),
                             HasSubstr("serve it with the dedupd release that wrote it"),
                             Not(HasSubstr("--simhash_shingle_words")))));
  // Only the shingle size differs: the flag is the fix.
  RocksDbStoreOptions other_shingles = SmallOptions(path_);
  other_shingles.simhash_version = 1;
  other_shingles.simhash_shingle_words = 4;
  EXPECT_THAT(RocksDbStore::Open(other_shingles),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("set --simhash_shingle_words to the store's value")));
}

TEST_F(RocksDbStoreTest, MinHashMismatchIsFailedPrecondition) {
  RocksDbStoreOptions old = SmallOptions(path_);
  old.minhash_version = MinHasher::kVersion + 1;
  CreateClosedStore(old);
  EXPECT_THAT(
      RocksDbStore::Open(SmallOptions(path_)),
      StatusIs(
          absl::StatusCode::kFailedPrecondition,
          AllOf(StartsWith("store at " + path_),
                HasSubstr(absl::StrCat("written with MinHash version ", MinHasher::kVersion + 1)),
                HasSubstr("signatures would not be comparable"))));
  RocksDbStoreOptions other_seed = SmallOptions(path_);
  other_seed.minhash_version = MinHasher::kVersion + 1;
  other_seed.minhash_seed = 7;
  EXPECT_THAT(RocksDbStore::Open(other_seed),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("MinHash seed")));
  RocksDbStoreOptions same = SmallOptions(path_);
  same.minhash_version = MinHasher::kVersion + 1;
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(same));
  EXPECT_EQ(store->Stats(false)->minhash_version, MinHasher::kVersion + 1);
}

TEST_F(RocksDbStoreTest, FormatFiveContentMetaWithoutMinHashIsRefused) {
  CreateClosedStore(SmallOptions(path_));
  // A development build's format-5 store: content meta value version 1.
  PutContentMetaWithoutMinHash();
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(StartsWith("store at " + path_),
                             HasSubstr("content meta record has no MinHash version"),
                             HasSubstr("rebuild the store"))));
}

TEST_F(RocksDbStoreTest, FormatFourContentMetaGainsTheMinHashVersion) {
  CreateClosedStore(SmallOptions(path_));
  fmt::StoreMeta v4;
  v4.format_version = 4;
  v4.normalizer_version = kNormalizerVersion;
  PutRaw(fmt::EncodeMetaKey(), fmt::EncodeMeta(v4));
  PutContentMetaWithoutMinHash();
  CreateClosedStore(SmallOptions(path_));  // opens, and so upgrades, it
  EXPECT_EQ(RawFormatVersion(), 5u);
  std::string value;
  WithRawDb(false, [&](rocksdb::DB* db, const Families& families) {
    ASSERT_TRUE(
        db->Get(rocksdb::ReadOptions(), families.at("content"), fmt::EncodeContentMetaKey(), &value)
            .ok());
  });
  ASSERT_OK_AND_ASSIGN(fmt::ContentMeta upgraded, fmt::DecodeContentMeta(value));
  EXPECT_EQ(upgraded.minhash_version, MinHasher::kVersion);
  EXPECT_EQ(upgraded.minhash_seed, MinHasher::kSeed);
  // Now a format-5 store with the fields: another MinHash version is refused.
  RocksDbStoreOptions other = SmallOptions(path_);
  other.minhash_version = MinHasher::kVersion + 1;
  EXPECT_THAT(RocksDbStore::Open(other), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(RocksDbStoreTest, ChunkSignaturesAreConsistentAcrossReplaceDropAndReopen) {
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  constexpr uint64_t kFp = 0x0123456789abcdefULL;
  std::vector<std::string> words;
  for (int i = 0; i < 200; ++i) words.push_back(absl::StrCat("w", (i * 7919) % 311));
  const std::string original = absl::StrJoin(words, " ");
  for (int i = 50; i < 58; ++i) words[i] = absl::StrCat("edit", i);
  const std::string edited = absl::StrJoin(words, " ");
  auto signed_chunk = [](const std::string& text, uint64_t simhash) {
    ChunkInput c{"0", Sha256(text), simhash, 3};
    c.minhash = MinHasher().Sign(text);
    c.min_jaccard = 0.8;
    return c;
  };
  auto check = [&](const std::string& space, const std::string& url, const ChunkInput& c,
                   bool claim) {
    ChunkAnswer answer;
    EXPECT_THAT(store->CheckChunks(ChunkDocument{url, {c}, space}, claim, T(10), &answer), IsOk());
    return answer.outcomes.empty() ? ChunkOutcome{} : answer.outcomes[0];
  };
  auto consistent = [&] {
    ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
    EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
  };
  for (const std::string space : {"", "drop", "keep"}) {
    EXPECT_EQ(check(space, "https://a/", signed_chunk(original, kFp), true).verdict,
              ChunkVerdict::kNew);
    EXPECT_EQ(check(space, "https://b/", signed_chunk("replaced text", ~kFp), true).verdict,
              ChunkVerdict::kNew);
    // b's text is replaced: its record and signature go.
    EXPECT_EQ(check(space, "https://b/", ChunkInput{"0", Sha256("plain"), kFp ^ 0xff0000, 3}, true)
                  .verdict,
              ChunkVerdict::kNew);
  }
  consistent();
  ASSERT_OK_AND_ASSIGN(bool found, store->DropNamespace("drop"));
  EXPECT_TRUE(found);
  for (int reopen = 0; reopen < 2; ++reopen) {
    SCOPED_TRACE(reopen == 0 ? "before reopen" : "after reopen");
    consistent();
    for (const std::string space : {"", "keep"}) {
      const ChunkOutcome o = check(space, "https://q/", signed_chunk(edited, ~kFp ^ 1), false);
      EXPECT_EQ(o.verdict, ChunkVerdict::kNearDuplicate);
      EXPECT_EQ(o.duplicate_document_url, "https://a/");
      EXPECT_EQ(o.measure, NearMeasure::kJaccard);
    }
    EXPECT_EQ(check("drop", "https://q/", signed_chunk(edited, ~kFp ^ 1), false).verdict,
              ChunkVerdict::kNew);
    ASSERT_THAT(store->Close(), IsOk());
    store.reset();
    ASSERT_OK_AND_ASSIGN(store, RocksDbStore::Open(SmallOptions(path_)));
  }
  // The dropped namespace takes signatures again, consistently.
  EXPECT_EQ(check("drop", "https://a/", signed_chunk(original, kFp), true).verdict,
            ChunkVerdict::kNew);
  EXPECT_EQ(check("drop", "https://q/", signed_chunk(edited, ~kFp), false).measure,
            NearMeasure::kJaccard);
  consistent();
}

TEST_F(RocksDbStoreTest, FormatFourStoreIsReadAndUpgraded) {
  // A format-4 store: the meta record says 4, URL values are version 1.
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    ASSERT_THAT(store->Close(), IsOk());
  }
  fmt::StoreMeta v4;
  v4.format_version = 4;
  v4.normalizer_version = kNormalizerVersion;
  PutRaw(fmt::EncodeMetaKey(), fmt::EncodeMeta(v4));
  PutRaw(fmt::EncodeUrlKey("http://old/"), absl::HexStringToBytes("0100060a2418202240"));
  ASSERT_EQ(RawFormatVersion(), 4u);
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    std::vector<UrlClaim> out;
    UrlClaimOptions leased;
    leased.claim_id_hash = ClaimIdHash("c");
    leased.lease = absl::Seconds(30);
    ASSERT_THAT(store->Claim(leased, {"http://old/", "http://new/"}, T(5), &out), IsOk());
    EXPECT_FALSE(out[0].is_new) << "a format-4 record is a confirmed claim";
    EXPECT_EQ(out[0].first_seen, absl::FromUnixMicros(1700000000123456));
    EXPECT_FALSE(out[0].lease_until.has_value());
    EXPECT_TRUE(out[1].is_new);
    ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
    EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
    ASSERT_THAT(store->Close(), IsOk());
  }
  EXPECT_EQ(RawFormatVersion(), 5u) << "older builds must refuse the store now";
}

TEST_F(RocksDbStoreTest, LeasesClaimIdsAndNamespacesSurviveAReopen) {
  UrlClaimOptions leased;
  leased.name_space = "crawl";
  leased.claim_id_hash = ClaimIdHash("req");
  leased.lease = absl::Seconds(60);
  std::vector<UrlClaim> out;
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    ASSERT_THAT(store->Claim(leased, {"http://a/", "http://b/"}, T(100), &out), IsOk());
    std::vector<UrlCompletion> done;
    ASSERT_THAT(store->Complete("crawl", 0, {"http://b/"}, &done), IsOk());
    ASSERT_THAT(store->Close(), IsOk());
  }
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  // The retry of the same request is answered as before the restart.
  ASSERT_THAT(store->Claim(leased, {"http://a/"}, T(110), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
  EXPECT_EQ(out[0].first_seen, T(100));
  EXPECT_EQ(out[0].lease_until, T(160));
  // Another claimant after the lease: a is reclaimed, b (confirmed) is not.
  UrlClaimOptions other = leased;
  other.claim_id_hash = ClaimIdHash("other");
  ASSERT_THAT(store->Claim(other, {"http://a/", "http://b/"}, T(161), &out), IsOk());
  EXPECT_TRUE(out[0].reclaimed);
  EXPECT_FALSE(out[1].is_new);
  // The empty namespace never saw them.
  ASSERT_THAT(store->ClaimUrls({"http://a/"}, T(200), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
  ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
  EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
}

// A text claimed NEW with a claim id and a manifest written by a chunk
// claim with one are stored in value version 2 (docs/storage_format.md);
// the others stay version 1, Forget's promotion drops the text's claim id,
// and the store is consistent throughout.
TEST_F(RocksDbStoreTest, ClaimIdsOfTextsAndChunksAreStoredInVersionTwoValues) {
  const Sha256Digest claimed_text = Sha256("claimed text");
  const Sha256Digest plain_text = Sha256("plain text");
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    ContentDoc claimed;
    claimed.identity_url = "http://a/";
    claimed.fetched_url = "http://a/?print";
    claimed.sha256 = claimed_text;
    claimed.simhash = 0x0123456789abcdefULL;
    claimed.claim_id_hash = ClaimIdHash("content-request");
    ContentDoc plain = claimed;
    plain.identity_url = plain.fetched_url = "http://b/";
    plain.sha256 = plain_text;
    plain.simhash = ~claimed.simhash;
    plain.claim_id_hash = 0;
    std::vector<ContentOutcome> out;
    ASSERT_THAT(store->CheckContent({claimed, plain}, true, ContentLimits(), T(100), &out), IsOk());
    ChunkAnswer answer;
    ChunkDocument doc{"http://c/",
                      {{"0", Sha256("c0"), 1, 3}, {"1", Sha256("c1"), ~uint64_t{1}, 3}}};
    ASSERT_THAT(store->CheckChunks(doc, true, T(100), &answer), IsOk());
    doc.chunks.pop_back();
    doc.claim_id_hash = ClaimIdHash("chunk-request");
    ASSERT_THAT(store->CheckChunks(doc, true, T(200), &answer), IsOk());
    ASSERT_THAT(answer.removed_chunk_ids, ElementsAre("1"));
    ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
    EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
    ASSERT_THAT(store->Close(), IsOk());
  }
  auto raw_value = [&](const std::string& key) {
    std::string value;
    WithRawDb(false, [&](rocksdb::DB* db, const Families& families) {
      ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), families.at("content"), key, &value).ok());
    });
    return value;
  };
  std::string value = raw_value(fmt::EncodeContentKey(claimed_text));
  ASSERT_FALSE(value.empty());
  EXPECT_EQ(value[0], '\x02');
  ASSERT_OK_AND_ASSIGN(fmt::ContentValue content, fmt::DecodeContentValue(value));
  EXPECT_EQ(content.claim_id_hash, ClaimIdHash("content-request"));
  EXPECT_EQ(raw_value(fmt::EncodeContentKey(plain_text))[0], '\x01');
  value = raw_value(fmt::EncodeChunkManifestKey("http://c/"));
  ASSERT_FALSE(value.empty());
  EXPECT_EQ(value[0], '\x02');
  ASSERT_OK_AND_ASSIGN(fmt::ChunkManifestValue manifest, fmt::DecodeChunkManifestValue(value));
  ASSERT_TRUE(manifest.claim.has_value());
  EXPECT_EQ(manifest.claim->claim_id_hash, ClaimIdHash("chunk-request"));
  EXPECT_EQ(manifest.claim->claimed, T(200));
  EXPECT_EQ(manifest.claim->replaced_chunks, 2u);
  EXPECT_THAT(manifest.claim->removed_chunk_ids, ElementsAre("1"));

  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    ASSERT_OK_AND_ASSIGN(ForgetResult forgotten, store->Forget("http://a/", T(300)));
    ASSERT_EQ(forgotten.contents_promoted.size(), 1u);
    ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
    EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
    ASSERT_THAT(store->Close(), IsOk());
  }
  ASSERT_OK_AND_ASSIGN(content,
                       fmt::DecodeContentValue(raw_value(fmt::EncodeContentKey(claimed_text))));
  EXPECT_EQ(content.owner_url, "http://a/?print");
  EXPECT_EQ(content.claim_id_hash, 0u) << "the claim was the forgotten owner's";
}

TEST_F(RocksDbStoreTest, DropNamespaceRemovesOneNamespaceAndNothingElse) {
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) keys.push_back(absl::StrCat("https://a.example/", i));
  UrlClaimOptions keep, drop, lease;
  keep.name_space = "keep";
  drop.name_space = "drop";
  lease.name_space = "drop-2";  // a prefix of no other name, and named like one
  lease.lease = absl::Seconds(30);
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->Claim(keep, keys, T(1), &out), IsOk());
  ASSERT_THAT(store->Claim(drop, keys, T(2), &out), IsOk());
  ASSERT_THAT(store->Claim(lease, {"https://l/"}, T(2), &out), IsOk());
  ASSERT_THAT(store->ClaimUrls({"https://a.example/0"}, T(3), &out), IsOk());
  ASSERT_OK_AND_ASSIGN(StoreStats before, store->Stats(/*exact=*/true));
  ASSERT_EQ(before.namespaces.size(), 3u);
  EXPECT_EQ(before.namespaces[0].name, "drop");
  EXPECT_EQ(before.namespaces[1].name, "drop-2");
  EXPECT_EQ(before.namespaces[2].name, "keep");
  EXPECT_EQ(before.namespaces[2].exact_url_count, 2000u);
  EXPECT_FALSE(before.more_namespaces);

  ASSERT_OK_AND_ASSIGN(bool found, store->DropNamespace("drop"));
  EXPECT_TRUE(found);
  ASSERT_OK_AND_ASSIGN(found, store->DropNamespace("drop"));
  EXPECT_FALSE(found) << "a second drop finds nothing";
  ASSERT_OK_AND_ASSIGN(found, store->DropNamespace("never"));
  EXPECT_FALSE(found);

  ASSERT_THAT(store->Claim(drop, {keys[0], keys[1999]}, T(4), &out), IsOk());
  EXPECT_TRUE(out[0].is_new) << "a dropped namespace starts empty";
  EXPECT_TRUE(out[1].is_new);
  ASSERT_THAT(store->Claim(keep, {keys[0], keys[1999]}, T(4), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  EXPECT_EQ(out[0].first_seen, T(1));
  ASSERT_THAT(store->Claim(lease, {"https://l/"}, T(5), &out), IsOk());
  EXPECT_FALSE(out[0].is_new) << "drop-2 is another namespace";
  ASSERT_THAT(store->ClaimUrls({"https://a.example/0"}, T(5), &out), IsOk());
  EXPECT_FALSE(out[0].is_new) << "the empty namespace is untouched";

  ASSERT_OK_AND_ASSIGN(StoreStats after, store->Stats(/*exact=*/true));
  ASSERT_EQ(after.namespaces.size(), 3u);
  EXPECT_EQ(after.namespaces[0].exact_url_count, 2u);
  EXPECT_EQ(after.namespaces[2].exact_url_count, 2000u);
  EXPECT_THAT(store->DropNamespace(""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the empty namespace cannot be dropped")));
  EXPECT_THAT(store->DropNamespace("no/slash"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("namespace: byte 2")));
  ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
  EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
  // The drop is durable.
  ASSERT_THAT(store->Close(), IsOk());
  store.reset();
  ASSERT_OK_AND_ASSIGN(store, RocksDbStore::Open(SmallOptions(path_)));
  ASSERT_THAT(store->Claim(drop, {keys[5]}, T(6), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
}

TEST_F(RocksDbStoreTest, DropNamespaceTakesItsTextsChunksAndIndexesAndKeepsTheOthers) {
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  constexpr uint64_t kFp = 0x0123456789abcdefULL;
  auto doc = [](const std::string& space, const std::string& url, const std::string& text,
                uint64_t simhash) {
    ContentDoc d;
    d.name_space = space;
    d.identity_url = url;
    d.fetched_url = url;
    d.sha256 = Sha256(text);
    d.simhash = simhash;
    d.max_distance = 3;
    return d;
  };
  auto content = [&](const ContentDoc& d, bool claim) {
    std::vector<ContentOutcome> out;
    EXPECT_THAT(store->CheckContent({d}, claim, ContentLimits(), T(10), &out), IsOk());
    return out.empty() ? ContentVerdict::kNew : out[0].verdict;
  };
  auto chunk = [&](const std::string& space, const std::string& url, const std::string& text,
                   uint64_t simhash, bool claim) {
    ChunkDocument d{url, {ChunkInput{"0", Sha256(text), simhash, 3}}, space};
    ChunkAnswer answer;
    EXPECT_THAT(store->CheckChunks(d, claim, T(10), &answer), IsOk());
    return answer.outcomes.empty() ? ChunkVerdict::kNew : answer.outcomes[0].verdict;
  };
  for (const std::string space : {"drop", "keep"}) {
    EXPECT_EQ(content(doc(space, "https://a/", "page text", kFp), true), ContentVerdict::kNew);
    EXPECT_EQ(chunk(space, "https://a/", "chunk text", kFp, true), ChunkVerdict::kNew);
    // A text a document id owns, and the id as an alias of a URL's text:
    // neither has a URL record, and the store is consistent without.
    EXPECT_EQ(content(doc(space, DocumentKeyOfId("s3://b/k"), "id text", ~kFp), true),
              ContentVerdict::kNew);
    EXPECT_EQ(content(doc(space, DocumentKeyOfId("row-1"), "page text", kFp), true),
              ContentVerdict::kExactDuplicate);
  }
  // Before the drop, both namespaces find their own page and chunk, exactly and near.
  for (const std::string space : {"drop", "keep"}) {
    EXPECT_EQ(content(doc(space, "https://b/", "page text", kFp), false),
              ContentVerdict::kExactDuplicate);
    EXPECT_EQ(content(doc(space, "https://b/", "other", kFp ^ 1), false),
              ContentVerdict::kNearDuplicate);
    EXPECT_EQ(chunk(space, "https://b/", "chunk text", kFp, false), ChunkVerdict::kExactDuplicate);
    EXPECT_EQ(chunk(space, "https://b/", "other", kFp ^ 1, false), ChunkVerdict::kNearDuplicate);
  }
  ASSERT_OK_AND_ASSIGN(bool found, store->DropNamespace("drop"));
  EXPECT_TRUE(found);
  for (int reopen = 0; reopen < 2; ++reopen) {
    // "drop" is empty: its records and its index entries are gone.
    EXPECT_EQ(content(doc("drop", "https://b/", "page text", kFp), false), ContentVerdict::kNew);
    EXPECT_EQ(content(doc("drop", "https://b/", "other", kFp ^ 1), false), ContentVerdict::kNew);
    EXPECT_EQ(chunk("drop", "https://b/", "chunk text", kFp, false), ChunkVerdict::kNew);
    EXPECT_EQ(chunk("drop", "https://b/", "other", kFp ^ 1, false), ChunkVerdict::kNew);
    // "keep" is whole.
    EXPECT_EQ(content(doc("keep", "https://b/", "other", kFp ^ 1), false),
              ContentVerdict::kNearDuplicate);
    EXPECT_EQ(chunk("keep", "https://b/", "other", kFp ^ 1, false), ChunkVerdict::kNearDuplicate);
    ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
    EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
    ASSERT_THAT(store->Close(), IsOk());
    store.reset();
    ASSERT_OK_AND_ASSIGN(store, RocksDbStore::Open(SmallOptions(path_)));
  }
  // The dropped namespace takes new records again.
  EXPECT_EQ(content(doc("drop", "https://c/", "page text", kFp), true), ContentVerdict::kNew);
  EXPECT_EQ(content(doc("drop", "https://d/", "page text", kFp), false),
            ContentVerdict::kExactDuplicate);
  // The consistency check reads the named namespaces too: an alias of a
  // text "keep" does not hold is reported, with its namespace.
  ASSERT_THAT(store->Close(), IsOk());
  store.reset();
  PutRaw(fmt::NamespacePrefix("keep") + fmt::EncodeAliasKey(Sha256("no such text"), "https://x/"),
         fmt::EncodeAliasValue(T(1)), false, "content");
  ASSERT_OK_AND_ASSIGN(store, RocksDbStore::Open(SmallOptions(path_)));
  ASSERT_OK_AND_ASSIGN(ConsistencyReport damaged, store->CheckConsistency());
  EXPECT_THAT(damaged.problems, Contains(AllOf(StartsWith("namespace \"keep\": alias "),
                                               HasSubstr("no content record"))));
}

TEST_F(RocksDbStoreTest, FormatVersionMismatchIsFailedPrecondition) {
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    ASSERT_THAT(store->Close(), IsOk());
  }
  fmt::StoreMeta future;
  future.format_version = 6;
  future.normalizer_version = kNormalizerVersion;
  PutRaw(fmt::EncodeMetaKey(), fmt::EncodeMeta(future) + "more v6 fields");
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(StartsWith("store at " + path_),
                             HasSubstr("written with storage format version 6, "
                                       "this build reads versions 2 to 5"))));
  fmt::StoreMeta before_content;
  before_content.format_version = 1;
  before_content.normalizer_version = kNormalizerVersion;
  PutRaw(fmt::EncodeMetaKey(), fmt::EncodeMeta(before_content));
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("written with storage format version 1, ")));
}

TEST_F(RocksDbStoreTest, DamagedMetaIsDataLoss) {
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    ASSERT_THAT(store->Close(), IsOk());
  }
  PutRaw(fmt::EncodeMetaKey(), std::string("NOTDEDUP\0\0\0\1", 12));
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("magic")));
}

TEST_F(RocksDbStoreTest, ForeignDatabaseIsRefused) {
  PutRaw("some other application's key", "value", /*create=*/true);
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_)),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a dedupd store")));
}

TEST_F(RocksDbStoreTest, SecondOpenInThisProcessIsInUse) {
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  EXPECT_THAT(
      RocksDbStore::Open(SmallOptions(path_)),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr(absl::StrCat("data directory ", path_,
                                      " is in use by another process (RocksDB LOCK held)"))));
  // The refused Open did not disturb the open store.
  std::vector<UrlClaim> out;
  EXPECT_THAT(store->ClaimUrls({"http://a/"}, T(1), &out), IsOk());
}

TEST_F(RocksDbStoreTest, MissingStoreWithoutCreateIsInvalidArgument) {
  RocksDbStoreOptions options = SmallOptions(path_);
  options.create_if_missing = false;
  EXPECT_THAT(RocksDbStore::Open(options), StatusIs(absl::StatusCode::kInvalidArgument,
                                                    StartsWith("open store at " + path_ + ": ")));
}

TEST_F(RocksDbStoreTest, BadOptionsAreInvalidArgument) {
  EXPECT_THAT(RocksDbStore::Open(SmallOptions("")),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("path")));
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("normalizer_version")));
  RocksDbStoreOptions options = SmallOptions(path_);
  options.bloom_bits_per_key = -1;
  EXPECT_THAT(RocksDbStore::Open(options), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_F(RocksDbStoreTest, CorruptValueIsDataLossNotACrash) {
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    std::vector<UrlClaim> out;
    ASSERT_THAT(store->ClaimUrls({"http://a/", "http://b/"}, T(1), &out), IsOk());
    ASSERT_THAT(store->Close(), IsOk());
  }
  PutRaw(fmt::EncodeUrlKey("http://a/"), "\x07garbage");
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));

  std::vector<std::optional<absl::Time>> found;
  EXPECT_THAT(store->LookupUrls({"http://b/", "http://a/"}, &found),
              StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr(path_), HasSubstr("http://a/"),
                                                          HasSubstr("unknown value version 7"))));
  std::vector<UrlClaim> out;
  EXPECT_THAT(store->ClaimUrls({"http://a/", "http://c/"}, T(2), &out),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("http://a/")));

  // Other records are unaffected, and the failed claim recorded nothing.
  ASSERT_THAT(store->LookupUrls({"http://b/", "http://c/"}, &found), IsOk());
  EXPECT_THAT(found, ElementsAre(Optional(T(1)), std::nullopt));
}

TEST_F(RocksDbStoreTest, CallsAfterCloseAreFailedPrecondition) {
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  ASSERT_THAT(store->Close(), IsOk());
  EXPECT_THAT(store->Close(), IsOk());
  std::vector<UrlClaim> out;
  EXPECT_THAT(store->ClaimUrls({"http://a/"}, T(1), &out),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("closed")));
  std::vector<std::optional<absl::Time>> found;
  EXPECT_THAT(store->LookupUrls({"http://a/"}, &found),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(store->ApproximateUrlCount(), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(store->DiskBytes(), StatusIs(absl::StatusCode::kFailedPrecondition));
  // The directory is free again.
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_)), IsOk());
}

TEST_F(RocksDbStoreTest, CountAndDiskBytes) {
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  ASSERT_OK_AND_ASSIGN(uint64_t count, store->ApproximateUrlCount());
  EXPECT_EQ(count, 0u);
  std::vector<std::string> keys;
  for (size_t i = 0; i < 1'000; ++i) keys.push_back(UrlKey(i));
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls(keys, T(1), &out), IsOk());
  ASSERT_OK_AND_ASSIGN(count, store->ApproximateUrlCount());
  EXPECT_EQ(count, 1'000u);
  ASSERT_OK_AND_ASSIGN(uint64_t bytes, store->DiskBytes());
  EXPECT_GT(bytes, 1'000u * 50) << "the WAL holds every key";
  ASSERT_THAT(store->Close(), IsOk());

  // After reopen the records are in table files (recovery flushes the WAL),
  // and the count must not depend on statistics Open skips loading.
  ASSERT_OK_AND_ASSIGN(store, RocksDbStore::Open(SmallOptions(path_)));
  ASSERT_OK_AND_ASSIGN(count, store->ApproximateUrlCount());
  EXPECT_EQ(count, 1'000u);
  keys.clear();
  for (size_t i = 1'000; i < 1'500; ++i) keys.push_back(UrlKey(i));
  ASSERT_THAT(store->ClaimUrls(keys, T(2), &out), IsOk());
  ASSERT_OK_AND_ASSIGN(count, store->ApproximateUrlCount());
  EXPECT_EQ(count, 1'500u) << "table files plus memtable";
  ASSERT_OK_AND_ASSIGN(bytes, store->DiskBytes());
  EXPECT_GT(bytes, 0u);
}

// --- Chunk layer ------------------------------------------------------------

ChunkInput TestChunk(const std::string& id, const std::string& text, uint64_t simhash,
                     int max_distance = 3) {
  return ChunkInput{id, Sha256(text), simhash, max_distance};
}

void ExpectSameChunkAnswer(const ChunkAnswer& got, const ChunkAnswer& want) {
  EXPECT_EQ(got.replaced_chunks, want.replaced_chunks);
  ASSERT_EQ(got.outcomes.size(), want.outcomes.size());
  for (size_t i = 0; i < got.outcomes.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("chunk ", i));
    const ChunkOutcome& g = got.outcomes[i];
    const ChunkOutcome& w = want.outcomes[i];
    EXPECT_EQ(g.verdict, w.verdict);
    EXPECT_EQ(g.duplicate_document_url, w.duplicate_document_url);
    EXPECT_EQ(g.duplicate_chunk_id, w.duplicate_chunk_id);
    EXPECT_EQ(g.distance, w.distance);
    EXPECT_EQ(g.duplicate_simhash, w.duplicate_simhash);
    EXPECT_EQ(g.first_seen, w.first_seen);
    EXPECT_EQ(g.other_holders, w.other_holders);
  }
}

// Many claims, replacements and deletions with near and exact duplicates,
// answered like the reference (in-memory) store, before and after reopens.
// Each reopen switches the content family's compaction style (not
// persisted: a store written under one opens under the other and answers
// the same), and the style asked for is the one RocksDB runs.
TEST_F(RocksDbStoreTest, ChunkAnswersMatchTheMemoryStoreAcrossReopens) {
  constexpr int kDocs = 30;
  constexpr int kTexts = 40;
  constexpr int kSteps = 800;
  std::mt19937_64 rng(20240901);
  std::vector<uint64_t> simhash(kTexts);
  for (int t = 0; t < kTexts; ++t) {
    // Every other text is 1 to 3 bits from the one before: near duplicates.
    simhash[t] = t % 2 == 0 ? rng()
                            : simhash[t - 1] ^ (uint64_t{1} << (rng() % 64)) ^
                                  (uint64_t{1} << (rng() % 64)) ^ (uint64_t{1} << (rng() % 64));
  }
  using Style = RocksDbStoreOptions::Compaction;
  int opens = 0;
  auto open = [&]() -> absl::StatusOr<std::unique_ptr<RocksDbStore>> {
    RocksDbStoreOptions options = SmallOptions(path_);
    options.content_compaction = opens++ % 2 == 0 ? Style::kUniversal : Style::kLeveled;
    absl::StatusOr<std::unique_ptr<RocksDbStore>> store = RocksDbStore::Open(options);
    absl::StatusOr<rocksdb::ColumnFamilyOptions> written =
        WrittenFamilyOptions(path_, rocksdb_internal::kContentColumnFamily);
    EXPECT_THAT(written, IsOk());
    if (written.ok()) {
      EXPECT_EQ(written->compaction_style, options.content_compaction == Style::kUniversal
                                               ? rocksdb::kCompactionStyleUniversal
                                               : rocksdb::kCompactionStyleLevel);
    }
    return store;
  };
  MemoryChunkStore memory(3);
  ASSERT_OK_AND_ASSIGN(auto store, open());
  for (int step = 0; step < kSteps; ++step) {
    if (step > 0 && step % 200 == 0) {
      ASSERT_THAT(store->Close(), IsOk());
      store.reset();
      ASSERT_OK_AND_ASSIGN(store, open());
    }
    ChunkDocument doc;
    doc.document_url = absl::StrCat("https://d", rng() % kDocs, "/");
    const int chunks = static_cast<int>(rng() % 5);  // 0: deletes when claimed
    for (int c = 0; c < chunks; ++c) {
      const int t = static_cast<int>(rng() % kTexts);
      doc.chunks.push_back(TestChunk(absl::StrCat("c", c), absl::StrCat("text", t), simhash[t],
                                     static_cast<int>(rng() % 5) - 1));
    }
    const bool claim = rng() % 4 != 0;
    const absl::Time now = T(1000 + step / 2);  // pairs of steps share a time
    SCOPED_TRACE(absl::StrCat("step ", step, " ", doc.document_url, claim ? " claim" : " peek"));
    ChunkAnswer want, got;
    ASSERT_THAT(memory.CheckChunks(doc, claim, now, &want), IsOk());
    ASSERT_THAT(store->CheckChunks(doc, claim, now, &got), IsOk());
    ExpectSameChunkAnswer(got, want);
    if (::testing::Test::HasFailure()) return;
  }
  ASSERT_THAT(store->Close(), IsOk());
  store.reset();
  ASSERT_OK_AND_ASSIGN(store, open());
  EXPECT_EQ(opens, 5);  // universal, leveled, universal, leveled, universal
  // Every text, exact and near, from a document that holds nothing.
  ChunkDocument probe;
  probe.document_url = "https://probe/";
  for (int t = 0; t < kTexts; ++t) {
    probe.chunks.push_back(TestChunk(absl::StrCat("e", t), absl::StrCat("text", t), simhash[t]));
    probe.chunks.push_back(
        TestChunk(absl::StrCat("n", t), absl::StrCat("other", t), simhash[t] ^ 0b101));
  }
  ChunkAnswer want, got;
  ASSERT_THAT(memory.CheckChunks(probe, false, T(5000), &want), IsOk());
  ASSERT_THAT(store->CheckChunks(probe, false, T(5000), &got), IsOk());
  ExpectSameChunkAnswer(got, want);
  EXPECT_GT(store->chunk_index_stats().fingerprints, 0u);
  EXPECT_GT(store->chunk_index_stats().memory_bytes, 0u);
}

// Claims of shared texts from many threads, with peeks running alongside:
// no call fails (a peek reading while claims replace texts must not see
// half of a claim), and afterwards, reopened, every text counts exactly
// the chunks the documents' last versions hold.
TEST_F(RocksDbStoreTest, ConcurrentChunkClaimsAndPeeksKeepTheRecordsConsistent) {
  constexpr int kThreads = 4;
  constexpr int kDocsPerThread = 4;
  constexpr int kTexts = 12;
  constexpr int kSteps = 150;
  auto simhash = [](int t) { return (uint64_t(t) + 1) * 0x9e3779b97f4a7c15ULL; };
  auto doc_of = [](int thread, int d) { return absl::StrCat("https://t", thread, "/d", d); };
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  // last[thread][d]: the texts of the document's last claimed version.
  std::vector<std::vector<std::vector<int>>> last(kThreads,
                                                  std::vector<std::vector<int>>(kDocsPerThread));
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      std::mt19937_64 rng(100 + th);
      for (int step = 0; step < kSteps; ++step) {
        const int d = static_cast<int>(rng() % kDocsPerThread);
        const bool claim = rng() % 3 != 0;
        ChunkDocument doc{claim ? doc_of(th, d) : absl::StrCat("https://peek", th, "/"), {}};
        std::vector<int> texts;
        const int n = static_cast<int>(rng() % 4);
        for (int c = 0; c < n; ++c) {
          const int t = static_cast<int>(rng() % kTexts);
          texts.push_back(t);
          doc.chunks.push_back(
              TestChunk(absl::StrCat(c), absl::StrCat("text", t), simhash(t) ^ (rng() % 4)));
        }
        ChunkAnswer answer;
        absl::Status s = store->CheckChunks(doc, claim, absl::Now(), &answer);
        if (!s.ok()) {
          ADD_FAILURE() << s;
          ++errors;
          continue;
        }
        if (claim) last[th][d] = texts;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(errors.load(), 0);
  ASSERT_THAT(store->Close(), IsOk());
  store.reset();
  ASSERT_OK_AND_ASSIGN(store, RocksDbStore::Open(SmallOptions(path_)));
  std::vector<uint64_t> holders(kTexts, 0);
  for (const auto& docs : last) {
    for (const auto& texts : docs) {
      for (int t : texts) ++holders[t];
    }
  }
  ChunkDocument probe{"https://probe/", {}};
  size_t held = 0;
  for (int t = 0; t < kTexts; ++t) {
    probe.chunks.push_back(TestChunk(absl::StrCat(t), absl::StrCat("text", t), simhash(t), -1));
    held += holders[t] > 0 ? 1 : 0;
  }
  ChunkAnswer answer;
  ASSERT_THAT(store->CheckChunks(probe, false, absl::Now(), &answer), IsOk());
  for (int t = 0; t < kTexts; ++t) {
    EXPECT_EQ(answer.outcomes[t].other_holders, holders[t]) << "text " << t;
    EXPECT_EQ(answer.outcomes[t].verdict,
              holders[t] > 0 ? ChunkVerdict::kExactDuplicate : ChunkVerdict::kNew)
        << "text " << t;
  }
  EXPECT_EQ(store->chunk_index_stats().fingerprints, held);
}

TEST_F(RocksDbStoreTest, ChunkIndexStatsCountTextsAcrossReopen) {
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    EXPECT_EQ(store->chunk_index_stats().fingerprints, 0u);
    ChunkAnswer answer;
    ASSERT_THAT(store->CheckChunks(
                    {"https://a/",
                     {TestChunk("0", "t1", 1), TestChunk("1", "t2", 2), TestChunk("2", "t1", 1)}},
                    true, T(1), &answer),
                IsOk());
    EXPECT_EQ(store->chunk_index_stats().fingerprints, 2u);
    EXPECT_EQ(store->index_stats().fingerprints, 0u) << "chunks are not pages";
    ASSERT_THAT(store->CheckChunks({"https://a/", {TestChunk("0", "t3", 3)}}, true, T(2), &answer),
                IsOk());
    EXPECT_EQ(store->chunk_index_stats().fingerprints, 1u);
  }
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  EXPECT_EQ(store->chunk_index_stats().fingerprints, 1u);
  // A new text after the reopen gets an id of its own: both stay findable.
  ChunkAnswer answer;
  ASSERT_THAT(store->CheckChunks({"https://b/", {TestChunk("0", "t4", 4)}}, true, T(3), &answer),
              IsOk());
  ASSERT_THAT(store->CheckChunks({"https://q/", {TestChunk("0", "t3", 3), TestChunk("1", "t4", 4)}},
                                 false, T(4), &answer),
              IsOk());
  EXPECT_EQ(answer.outcomes[0].duplicate_document_url, "https://a/");
  EXPECT_EQ(answer.outcomes[1].duplicate_document_url, "https://b/");
}

TEST_F(RocksDbStoreTest, ChunkDocumentUrlWithNulIsInvalidArgument) {
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  ChunkAnswer answer;
  EXPECT_THAT(store->CheckChunks({std::string("https://a/\0b", 11), {TestChunk("0", "t", 1)}}, true,
                                 T(1), &answer),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NUL")));
  EXPECT_EQ(store->chunk_index_stats().fingerprints, 0u);
}

// The in-memory SHA-256 -> text id map keys on the digest's first 8 bytes:
// texts whose digests share them (forged here; ~3e-6 for 10 million real
// texts) must still be told apart, before and after a restart (which
// rebuilds the map from the records) and when one of them goes.
TEST_F(RocksDbStoreTest, ChunkTextsSharingADigestPrefixStayApart) {
  auto digest = [](uint8_t tail) {
    Sha256Digest d = Sha256("shared prefix");
    d[31] = tail;
    return d;
  };
  // SimHashes 32 or more bits apart: no near matches among them.
  auto chunk = [&](uint8_t tail) {
    constexpr uint64_t kSimHash[] = {0, 0, ~0ULL, 0x00000000ffffffffULL, 0xffffffff00000000ULL};
    return ChunkInput{"0", digest(tail), kSimHash[tail], 3};
  };
  auto outcome = [](RocksDbStore* store, const std::string& url, const ChunkInput& c, bool claim) {
    ChunkAnswer a;
    EXPECT_THAT(store->CheckChunks({url, {c}}, claim, T(30), &a), IsOk());
    return a.outcomes.empty() ? ChunkOutcome{} : a.outcomes[0];
  };
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    EXPECT_EQ(outcome(store.get(), "https://a/", chunk(1), true).verdict, ChunkVerdict::kNew);
    EXPECT_EQ(outcome(store.get(), "https://b/", chunk(2), true).verdict, ChunkVerdict::kNew);
    ASSERT_THAT(store->Close(), IsOk());
  }
  for (int open = 0; open < 2; ++open) {
    SCOPED_TRACE(open == 0 ? "after a restart" : "after another");
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    ChunkOutcome o = outcome(store.get(), "https://c/", chunk(1), false);
    EXPECT_EQ(o.verdict, ChunkVerdict::kExactDuplicate);
    EXPECT_EQ(o.duplicate_document_url, "https://a/");
    o = outcome(store.get(), "https://c/", chunk(2), false);
    EXPECT_EQ(o.verdict, ChunkVerdict::kExactDuplicate);
    EXPECT_EQ(o.duplicate_document_url, "https://b/");
    EXPECT_EQ(outcome(store.get(), "https://c/", chunk(3), false).verdict, ChunkVerdict::kNew);
    ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
    EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
    EXPECT_EQ(report.chunk_texts, 2u);
    ASSERT_THAT(store->Close(), IsOk());
  }
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  // a's text goes (a now holds a third one), b's stays; and the other way.
  EXPECT_EQ(outcome(store.get(), "https://a/", chunk(3), true).verdict, ChunkVerdict::kNew);
  EXPECT_EQ(outcome(store.get(), "https://c/", chunk(1), false).verdict, ChunkVerdict::kNew);
  EXPECT_EQ(outcome(store.get(), "https://c/", chunk(2), false).duplicate_document_url,
            "https://b/");
  EXPECT_EQ(outcome(store.get(), "https://b/", chunk(4), true).verdict, ChunkVerdict::kNew);
  EXPECT_EQ(outcome(store.get(), "https://c/", chunk(2), false).verdict, ChunkVerdict::kNew);
  EXPECT_EQ(outcome(store.get(), "https://c/", chunk(3), false).duplicate_document_url,
            "https://a/");
  ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
  EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
  EXPECT_EQ(report.chunk_texts, 2u);
}

TEST_F(RocksDbStoreTest, DamagedChunkRecordsAreDataLossNamingThem) {
  const std::string content = "content";
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    ChunkAnswer answer;
    ASSERT_THAT(store->CheckChunks(
                    {"https://a/", {TestChunk("0", "t1", 1), TestChunk("1", "t2", 1ULL << 40)}},
                    true, T(10), &answer),
                IsOk());
    // t3: owned by c (named in its text record), held by d too (a holder
    // record).
    ASSERT_THAT(store->CheckChunks({"https://c/", {TestChunk("0", "t3", 1ULL << 50)}}, true, T(10),
                                   &answer),
                IsOk());
    ASSERT_THAT(store->CheckChunks({"https://d/", {TestChunk("0", "t3", 1ULL << 50)}}, true, T(15),
                                   &answer),
                IsOk());
    ASSERT_THAT(store->Close(), IsOk());
  }
  auto check = [&](const std::string& url, const std::string& text, bool claim) {
    absl::StatusOr<std::unique_ptr<RocksDbStore>> store = RocksDbStore::Open(SmallOptions(path_));
    EXPECT_THAT(store, IsOk());
    if (!store.ok()) return absl::Status(store.status());
    ChunkAnswer answer;
    return (*store)->CheckChunks({url, {TestChunk("0", text, 1ULL << 20)}}, claim, T(20), &answer);
  };
  // A manifest.
  PutRaw(fmt::EncodeChunkManifestKey("https://a/"), "\x07junk", false, content);
  EXPECT_THAT(check("https://a/", "t9", true),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr(path_), HasSubstr("chunk manifest of \"https://a/\""),
                             HasSubstr("unknown value version 7"))));
  // A holder record: read when c drops t3 and its next owner is looked up.
  PutRaw(fmt::EncodeChunkHolderKey({Sha256("t3"), T(15), "https://d/", "0"}), "\x09", false,
         content);
  EXPECT_THAT(check("https://c/", "t9", true),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("chunk holder 0 of " + Sha256Hex(Sha256("t3"))),
                             HasSubstr("unknown value version 9"))));
  // A text record: read into the text id map and the chunk index at open.
  PutRaw(fmt::EncodeChunkTextByIdKey(0), "\x03short", false, content);
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_)),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("load chunk texts of store at " + path_),
                             HasSubstr("chunk text value has 6 bytes"))));
  // A format-3 text record left to convert.
  PutRaw(fmt::EncodeChunkTextKey(Sha256("t1")), "\x01short", false, content);
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_)),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("convert chunk texts of store at " + path_),
                             HasSubstr("chunk text record of " + Sha256Hex(Sha256("t1"))),
                             HasSubstr("6 bytes"))));
}

// Stores of formats 2 and 3 (chunk text records keyed by SHA-256, each with
// a fingerprint record; format 2's without an owner) open as format 4: Open
// converts every text to a record by id and the store answers as before.
// A store whose conversion was interrupted (meta already 4, some texts
// still by SHA-256) finishes it at the next Open.
class RocksDbStoreConversionTest : public RocksDbStoreTest,
                                   public ::testing::WithParamInterface<int> {};

TEST_P(RocksDbStoreConversionTest, OldChunkTextsAreConvertedAtOpen) {
  const uint32_t format = static_cast<uint32_t>(GetParam());
  ChunkAnswer answer;
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    ASSERT_THAT(store->CheckChunks({"https://a/", {TestChunk("0", "t1", 1)}}, true, T(10), &answer),
                IsOk());
    ASSERT_THAT(store->CheckChunks(
                    {"https://b/", {TestChunk("0", "t1", 1), TestChunk("1", "t2", 1ULL << 40)}},
                    true, T(20), &answer),
                IsOk());
    ASSERT_THAT(store->Close(), IsOk());
  }
  // Format 2: every text without an owner. Format 3: t1 as format 2 wrote
  // it (never rewritten since), t2 with its owner. "Format 4": t1 left by
  // SHA-256, t2 already converted.
  const std::set<std::string> by_sha =
      format == 4 ? std::set<std::string>{"t1"} : std::set<std::string>{"t1", "t2"};
  const std::set<std::string> without_owner =
      format == 2 ? std::set<std::string>{"t1", "t2"} : std::set<std::string>{"t1"};
  DowngradeChunkTexts(format, by_sha, without_owner);
  ASSERT_EQ(RawFormatVersion(), format);
  ASSERT_EQ(RawCount(fmt::ChunkTextKeysBegin()), by_sha.size());
  ASSERT_EQ(RawCount(fmt::ChunkFingerprintKeysBegin()), by_sha.size());

  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
  EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
  EXPECT_EQ(report.chunk_texts, 2u);
  EXPECT_EQ(report.chunk_holders, 3u);
  auto first = [&](const std::string& url, const std::string& text, bool claim, int t) {
    ChunkAnswer a;
    EXPECT_THAT(store->CheckChunks({url, {TestChunk("0", text, 1ULL << 20)}}, claim, T(t), &a),
                IsOk());
    return a.outcomes.empty() ? ChunkOutcome{} : a.outcomes[0];
  };
  // a, the oldest holder, owns t1; b owns t2.
  ChunkOutcome o = first("https://c/", "t1", false, 30);
  EXPECT_EQ(o.verdict, ChunkVerdict::kExactDuplicate);
  EXPECT_EQ(o.duplicate_document_url, "https://a/");
  EXPECT_EQ(o.first_seen, T(10));
  o = first("https://d/", "t2", false, 30);
  EXPECT_EQ(o.verdict, ChunkVerdict::kExactDuplicate);
  EXPECT_EQ(o.duplicate_document_url, "https://b/");
  EXPECT_EQ(o.duplicate_chunk_id, "1");
  // Near matches resolve through the converted records too.
  ChunkAnswer near;
  ASSERT_THAT(
      store->CheckChunks({"https://d/", {TestChunk("0", "t2-near", (1ULL << 40) | (1ULL << 41))}},
                         false, T(30), &near),
      IsOk());
  ASSERT_EQ(near.outcomes.size(), 1u);
  EXPECT_EQ(near.outcomes[0].verdict, ChunkVerdict::kNearDuplicate);
  EXPECT_EQ(near.outcomes[0].duplicate_document_url, "https://b/");
  // a drops t1: b, the oldest that stays, owns it now.
  ASSERT_THAT(
      store->CheckChunks({"https://a/", {TestChunk("0", "t3", 1ULL << 60)}}, true, T(40), &answer),
      IsOk());
  EXPECT_EQ(first("https://e/", "t1", false, 50).duplicate_document_url, "https://b/");
  ASSERT_OK_AND_ASSIGN(report, store->CheckConsistency());
  EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
  EXPECT_EQ(report.chunk_texts, 3u);
  EXPECT_EQ(report.chunk_holders, 3u);  // b's t1 and t2, a's t3
  ASSERT_THAT(store->Close(), IsOk());
  store.reset();
  EXPECT_EQ(RawFormatVersion(), fmt::kStorageFormatVersion)
      << "older builds must not open the store any more";
  EXPECT_EQ(RawCount(fmt::ChunkTextKeysBegin()), 0u);
  EXPECT_EQ(RawCount(fmt::ChunkFingerprintKeysBegin()), 0u);
  EXPECT_EQ(RawCount(fmt::ChunkTextByIdKeysBegin()), 3u);
}

INSTANTIATE_TEST_SUITE_P(Formats, RocksDbStoreConversionTest, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return absl::StrCat("Format", info.param);
                         });

// Owners move between a text record and the holder records as documents
// are re-sent with texts dropped, added, repeated and renamed: after every
// claim the store must be consistent (CheckConsistency: each owner older
// than its text's holder records, counts, manifests and holders agree) and
// answer like the in-memory backend fed the same calls.
TEST_F(RocksDbStoreTest, RandomResendsKeepOwnersConsistent) {
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  MemoryChunkStore memory;
  std::mt19937 rng(20261201);
  const std::vector<uint64_t> simhash = {1, 1ULL << 16, 1ULL << 32};
  for (int step = 0; step < 1500; ++step) {
    ChunkDocument doc;
    doc.document_url = absl::StrCat("https://d", rng() % 4, "/");
    const int n = static_cast<int>(rng() % 5);  // 0: the document drops every chunk
    std::vector<int> ids = {0, 1, 2, 3, 4};
    std::shuffle(ids.begin(), ids.end(), rng);
    for (int c = 0; c < n; ++c) {
      const size_t t = rng() % simhash.size();
      doc.chunks.push_back(
          TestChunk(absl::StrCat("c", ids[c]), absl::StrCat("text", t), simhash[t]));
    }
    const bool claim = rng() % 4 != 0;
    // Some calls share a timestamp: ties are broken by URL and chunk id.
    const absl::Time now = T(100 + step / 2);
    ChunkAnswer got;
    ChunkAnswer want;
    ASSERT_THAT(store->CheckChunks(doc, claim, now, &got), IsOk()) << "step " << step;
    ASSERT_THAT(memory.CheckChunks(doc, claim, now, &want), IsOk()) << "step " << step;
    SCOPED_TRACE(absl::StrCat("step ", step));
    ExpectSameChunkAnswer(got, want);
    ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
    ASSERT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
  }
}

TEST(FromRocksDbStatusTest, MapsByCallerActionWithContext) {
  using ::dedupd::rocksdb_internal::FromRocksDbStatus;
  using rocksdb::Status;
  struct Case {
    Status in;
    absl::StatusCode want;
  };
  const Case cases[] = {
      {Status::NoSpace("write", "No space left on device"), absl::StatusCode::kResourceExhausted},
      {Status::SpaceLimit(), absl::StatusCode::kResourceExhausted},
      {Status::MemoryLimit(), absl::StatusCode::kResourceExhausted},
      {Status::Corruption("block checksum mismatch"), absl::StatusCode::kDataLoss},
      {Status::InvalidArgument("bad option"), absl::StatusCode::kInvalidArgument},
      {Status::PathNotFound("/x/CURRENT"), absl::StatusCode::kFailedPrecondition},
      {Status::IOError("read", "Input/output error"), absl::StatusCode::kUnavailable},
      {Status::Busy(), absl::StatusCode::kUnavailable},
      {Status::TimedOut(), absl::StatusCode::kUnavailable},
      {Status::TryAgain(), absl::StatusCode::kUnavailable},
      {Status::ShutdownInProgress(), absl::StatusCode::kUnavailable},
      {Status::NotSupported("compression"), absl::StatusCode::kInternal},
      {Status::Incomplete(), absl::StatusCode::kInternal},
      {Status::Aborted(), absl::StatusCode::kInternal},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(FromRocksDbStatus(c.in, "claim URLs in store", "/data"),
                StatusIs(c.want, StartsWith("claim URLs in store at /data: ")))
        << c.in.ToString();
  }
  EXPECT_THAT(FromRocksDbStatus(Status::OK(), "x", "/data"), IsOk());

  // RocksDB's two LOCK messages: held by another process, and by this one.
  for (const Status& lock :
       {Status::IOError("While lock file: /data/LOCK", "Resource temporarily unavailable"),
        Status::IOError("lock hold by current process, acquire time 1 "
                        "acquiring thread 2: /data/LOCK",
                        "No locks available")}) {
    EXPECT_THAT(FromRocksDbStatus(lock, "open store", "/data"),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         StartsWith("data directory /data is in use by another "
                                    "process (RocksDB LOCK held)")));
  }
}

// --- Other processes ----------------------------------------------------

// A running rocksdb_crash_helper with pipes to its stdin and stdout. Killed
// (SIGKILL) and reaped on destruction at the latest.
class HelperProcess {
 public:
  // `mode`: empty (claim URLs), "chunks" or "forget" (see
  // rocksdb_crash_helper.cc).
  static absl::StatusOr<std::unique_ptr<HelperProcess>> Start(const std::string& store_path,
                                                              const std::string& mode = "") {
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
      return absl::InternalError(absl::StrCat("pipe2: ", std::strerror(errno)));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    std::string helper = DEDUPD_ROCKSDB_CRASH_HELPER;
    std::string version = std::to_string(kNormalizerVersion);
    std::string mode_arg = mode;
    char* argv[] = {helper.data(), const_cast<char*>(store_path.c_str()), version.data(),
                    mode.empty() ? nullptr : mode_arg.data(), nullptr};
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, helper.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(in[0]);
    close(out[1]);
    if (rc != 0) {
      close(in[1]);
      close(out[0]);
      return absl::InternalError(absl::StrCat("posix_spawn ", helper, ": ", std::strerror(rc)));
    }
    return std::unique_ptr<HelperProcess>(new HelperProcess(pid, in[1], out[0]));
  }

  ~HelperProcess() {
    Kill();
    close(stdin_);
    close(stdout_);
  }

  // Writes `text` to the child's stdin. False when the child is gone.
  bool Write(const std::string& text) {
    size_t done = 0;
    while (done < text.size()) {
      ssize_t n = write(stdin_, text.data() + done, text.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // Reads one line from the child's stdout, without the newline; empty at
  // EOF (the child exited).
  std::string ReadLine() {
    std::string line;
    char c;
    while (true) {
      ssize_t n = read(stdout_, &c, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0 || c == '\n') return line;
      line.push_back(c);
    }
  }

  // SIGKILLs the child (no chance to close anything) and reaps it.
  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

 private:
  HelperProcess(pid_t pid, int in, int out) : pid_(pid), stdin_(in), stdout_(out) {}

  pid_t pid_;
  int stdin_;
  int stdout_;
};

class RocksDbStoreProcessTest : public RocksDbStoreTest {
 protected:
  void SetUp() override {
    RocksDbStoreTest::SetUp();
    // A child that dies early must fail the test, not kill it with SIGPIPE.
    signal(SIGPIPE, SIG_IGN);
  }
};

TEST_F(RocksDbStoreProcessTest, DirectoryOpenInAnotherProcessIsInUse) {
  ASSERT_OK_AND_ASSIGN(auto child, HelperProcess::Start(path_));
  ASSERT_TRUE(child->Write("go\n"));  // claim nothing, keep the store open
  ASSERT_EQ(child->ReadLine(), "claimed 0");
  EXPECT_THAT(
      RocksDbStore::Open(SmallOptions(path_)),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr(absl::StrCat("data directory ", path_,
                                      " is in use by another process (RocksDB LOCK held)"))));
  child->Kill();
  // The kernel released the child's lock with the process.
  EXPECT_THAT(RocksDbStore::Open(SmallOptions(path_)), IsOk());
}

// The durability contract: a key answered is_new survives kill -9 of the
// process that claimed it, with sync_writes off.
TEST_F(RocksDbStoreProcessTest, AnsweredClaimsSurviveKillDashNine) {
  constexpr size_t kKeys = 1'000;
  std::vector<std::string> keys;
  std::string input;
  for (size_t i = 0; i < kKeys; ++i) {
    keys.push_back(UrlKey(i));
    absl::StrAppend(&input, keys.back(), "\n");
  }
  const absl::Time before = absl::Now();
  {
    ASSERT_OK_AND_ASSIGN(auto child, HelperProcess::Start(path_));
    ASSERT_TRUE(child->Write(input + "go\n"));
    ASSERT_EQ(child->ReadLine(), absl::StrCat("claimed ", kKeys));
    child->Kill();
  }
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls(keys, absl::Now(), &out), IsOk());
  for (size_t i = 0; i < kKeys; ++i) {
    ASSERT_FALSE(out[i].is_new) << "lost acknowledged claim " << i;
    ASSERT_GE(out[i].first_seen, before - absl::Microseconds(1)) << i;
  }
}

// The same for chunk claims: every chunk answered kNew by the killed
// process is still there, with its text, holder and index entry.
TEST_F(RocksDbStoreProcessTest, AnsweredChunkClaimsSurviveKillDashNine) {
  constexpr size_t kDocs = 300;
  auto simhash = [](size_t i) { return (i + 1) * 0x9e3779b97f4a7c15ULL; };
  std::string input;
  for (size_t i = 0; i < kDocs; ++i) {
    absl::StrAppend(&input, "https://d", i, "/\ttext", i, "\t", absl::Hex(simhash(i)), "\n");
  }
  const absl::Time before = absl::Now();
  {
    ASSERT_OK_AND_ASSIGN(auto child, HelperProcess::Start(path_, "chunks"));
    ASSERT_TRUE(child->Write(input + "go\n"));
    ASSERT_EQ(child->ReadLine(), absl::StrCat("claimed ", kDocs));
    child->Kill();
  }
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  EXPECT_EQ(store->chunk_index_stats().fingerprints, kDocs);
  ChunkDocument exact{"https://q/", {}};
  ChunkDocument near{"https://r/", {}};
  for (size_t i = 0; i < kDocs; ++i) {
    exact.chunks.push_back(TestChunk(absl::StrCat(i), absl::StrCat("text", i), simhash(i)));
    near.chunks.push_back(TestChunk(absl::StrCat(i), absl::StrCat("other", i), simhash(i) ^ 0b11));
  }
  ChunkAnswer answer;
  ASSERT_THAT(store->CheckChunks(exact, true, absl::Now(), &answer), IsOk());
  for (size_t i = 0; i < kDocs; ++i) {
    const ChunkOutcome& o = answer.outcomes[i];
    ASSERT_EQ(o.verdict, ChunkVerdict::kExactDuplicate) << "lost acknowledged chunk " << i;
    ASSERT_EQ(o.duplicate_document_url, absl::StrCat("https://d", i, "/"));
    ASSERT_GE(o.first_seen, before - absl::Microseconds(1)) << i;
    ASSERT_EQ(o.other_holders, 1u) << i;
  }
  ASSERT_THAT(store->CheckChunks(near, false, absl::Now(), &answer), IsOk());
  for (size_t i = 0; i < kDocs; ++i) {
    ASSERT_EQ(answer.outcomes[i].verdict, ChunkVerdict::kNearDuplicate) << i;
    ASSERT_EQ(answer.outcomes[i].distance, 2) << i;
  }
}

// The same for Forget: a Forget acknowledged by the killed process is still
// in effect after the restart (records gone, index rebuilt without them,
// promotions kept), and the store is consistent.
TEST_F(RocksDbStoreProcessTest, AcknowledgedForgetSurvivesKillDashNine) {
  constexpr size_t kDocs = 200;
  auto url = [](size_t i) { return absl::StrCat("https://f", i, "/"); };
  {
    ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
    std::vector<ContentDoc> docs;
    for (size_t i = 0; i < kDocs; ++i) {
      ContentDoc d;
      d.identity_url = d.fetched_url = url(i);
      // Even documents own a text alone; odd ones share their text with
      // the even one before them (its alias).
      d.sha256 = Sha256(absl::StrCat("text", i / 2 * 2));
      d.simhash = (i / 2 + 1) * 0x9e3779b97f4a7c15ULL;
      docs.push_back(d);
    }
    std::vector<ContentOutcome> out;
    ASSERT_THAT(store->CheckContent(docs, true, ContentLimits{}, T(1), &out), IsOk());
    ChunkAnswer answer;
    ASSERT_THAT(store->CheckChunks({url(0), {TestChunk("0", "chunk", 7)}}, true, T(2), &answer),
                IsOk());
    ASSERT_THAT(store->Close(), IsOk());
  }
  // The child forgets every fourth document: owners of shared texts (i % 4
  // == 0, their alias i + 1 takes over).
  std::string input;
  for (size_t i = 0; i < kDocs; i += 4) absl::StrAppend(&input, url(i), "\n");
  {
    ASSERT_OK_AND_ASSIGN(auto child, HelperProcess::Start(path_, "forget"));
    ASSERT_TRUE(child->Write(input + "go\n"));
    ASSERT_EQ(child->ReadLine(), absl::StrCat("forgot ", kDocs / 4));
    child->Kill();
  }
  ASSERT_OK_AND_ASSIGN(auto store, RocksDbStore::Open(SmallOptions(path_)));
  ASSERT_OK_AND_ASSIGN(ConsistencyReport report, store->CheckConsistency());
  EXPECT_TRUE(report.ok()) << absl::StrJoin(report.problems, "\n");
  EXPECT_EQ(report.urls, kDocs - kDocs / 4);
  EXPECT_EQ(report.contents, kDocs / 2) << "every text still has an owner";
  EXPECT_EQ(report.chunk_texts, 0u);
  EXPECT_EQ(store->index_stats().fingerprints, kDocs / 2);
  std::vector<std::optional<absl::Time>> found;
  std::vector<std::string> urls;
  for (size_t i = 0; i < kDocs; ++i) urls.push_back(url(i));
  ASSERT_THAT(store->LookupUrls(urls, &found), IsOk());
  for (size_t i = 0; i < kDocs; ++i) {
    ASSERT_EQ(found[i].has_value(), i % 4 != 0) << "forget of " << url(i) << " lost";
  }
  std::vector<ContentOutcome> out;
  ContentDoc probe;
  probe.identity_url = probe.fetched_url = "https://probe/";
  probe.sha256 = Sha256("text0");
  probe.simhash = 0x9e3779b97f4a7c15ULL;
  ASSERT_THAT(store->CheckContent({probe}, false, ContentLimits{}, T(3), &out), IsOk());
  EXPECT_EQ(out[0].owner_url, url(1));
}

}  // namespace
}  // namespace dedupd::testing
