// RocksDbStore: the checks of RocksDbStoreOptions and the RocksDB options
// they turn into.

#include <algorithm>
#include <memory>
#include <vector>

#include "rocksdb/cache.h"
#include "rocksdb/comparator.h"
#include "rocksdb/convenience.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/statistics.h"
#include "rocksdb/table.h"
#include "storage/rocksdb/hash_vector_memtable.h"
#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {

namespace rocksdb_internal {

absl::Status CheckOptions(const RocksDbStoreOptions& o) {
  if (o.path.empty()) {
    return absl::InvalidArgumentError("RocksDbStoreOptions.path is empty");
  }
  if (o.normalizer_version == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("open store at ", o.path,
                     ": RocksDbStoreOptions.normalizer_version is 0 (it is required)"));
  }
  if (o.bloom_bits_per_key < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path, ": RocksDbStoreOptions.bloom_bits_per_key is negative"));
  }
  if (o.write_buffer_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("open store at ", o.path, ": RocksDbStoreOptions.write_buffer_bytes is 0"));
  }
  if (o.simhash_max_distance < 0 || o.simhash_max_distance > SimHashIndex::kMaxSupportedDistance) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path, ": RocksDbStoreOptions.simhash_max_distance ",
        o.simhash_max_distance, " is outside [0, ", SimHashIndex::kMaxSupportedDistance, "]"));
  }
  if (!SimHashIndex::IsValidLayout(o.simhash_max_distance, o.simhash_index_blocks)) {
    return absl::InvalidArgumentError(
        absl::StrCat("open store at ", o.path, ": RocksDbStoreOptions.simhash_index_blocks ",
                     o.simhash_index_blocks, " is not 0 or in [simhash_max_distance + 1, ",
                     "simhash_max_distance + ", SimHashIndex::kMaxExtraBlocks + 1, "] = [",
                     o.simhash_max_distance + 1, ", ",
                     o.simhash_max_distance + 1 + SimHashIndex::kMaxExtraBlocks, "] with at most ",
                     SimHashIndex::kMaxTables, " tables (C(blocks, simhash_max_distance))"));
  }
  if (!(o.url_filter.false_positive_rate > 0 && o.url_filter.false_positive_rate <= 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat("open store at ", o.path,
                                                   ": RocksDbStoreOptions.url_filter."
                                                   "false_positive_rate ",
                                                   o.url_filter.false_positive_rate,
                                                   " is outside (0, 0.5]"));
  }
  if (o.url_filter.expected_urls == 0 || o.url_filter.expected_urls > (uint64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat("open store at ", o.path,
                                                   ": RocksDbStoreOptions.url_filter."
                                                   "expected_urls ",
                                                   o.url_filter.expected_urls,
                                                   " is outside [1, 2^40]"));
  }
  if (o.simhash_shingle_words < 1 || o.simhash_shingle_words > 16) {
    return absl::InvalidArgumentError(absl::StrCat("open store at ", o.path,
                                                   ": RocksDbStoreOptions.simhash_shingle_words ",
                                                   o.simhash_shingle_words, " is outside [1, 16]"));
  }
  if (o.max_open_files == 0 || o.max_open_files < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path, ": RocksDbStoreOptions.max_open_files must be -1 or positive"));
  }
  if (o.write_resume_interval < absl::ZeroDuration() ||
      o.write_resume_interval == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("open store at ", o.path, ": RocksDbStoreOptions.write_resume_interval ",
                     absl::FormatDuration(o.write_resume_interval), " is negative or infinite"));
  }
  return absl::OkStatus();
}

namespace {

// LZ4 when this RocksDB build has it: cheap to compress, very cheap to
// decompress, and URLs compress well. Snappy otherwise.
rocksdb::CompressionType PickCompression() {
  const std::vector<rocksdb::CompressionType> supported = rocksdb::GetSupportedCompressions();
  for (rocksdb::CompressionType want : {rocksdb::kLZ4Compression, rocksdb::kSnappyCompression}) {
    if (std::find(supported.begin(), supported.end(), want) != supported.end()) {
      return want;
    }
  }
  return rocksdb::kNoCompression;
}

}  // namespace

// The database options for `o`. `stop` (may be null: no write-stop
// tracking, for ListColumnFamilies) receives the background errors.
rocksdb::Options MakeDbOptions(const RocksDbStoreOptions& o, std::shared_ptr<WriteStop> stop) {
  rocksdb::Options db;
  if (stop != nullptr) {
    db.listeners.push_back(NewWriteStopListener(std::move(stop)));
    db.info_log = NewTolerantInfoLogger(o.path, o.create_if_missing);
  }
  db.create_if_missing = o.create_if_missing;
  // Two cores is the deployment baseline: one flush plus one compaction.
  db.max_background_jobs = 2;
  db.bytes_per_sync = 1 << 20;  // smooth background writeback of tables
  db.write_buffer_size = o.write_buffer_bytes;
  db.max_write_buffer_number = 3;
  // Bound the WAL: with two column families, a WAL file lives until both
  // have flushed what it holds, and the URL family may fill its memtable
  // far more slowly than the content family. Past this size RocksDB flushes
  // the family holding the oldest WAL, which bounds the replay after a
  // crash (a clean Close flushes everything and replays nothing).
  db.max_total_wal_size = 4 * o.write_buffer_bytes;
  db.level_compaction_dynamic_level_bytes = true;
  db.compression = PickCompression();
  // A finite table cache makes Open load at most a handful of table readers
  // instead of every file (max_open_files = -1 opens them all up front).
  db.max_open_files = o.max_open_files;
  // Do not read table properties of many files at Open.
  db.skip_stats_update_on_db_open = true;
  // Every Write appends to the WAL file before it returns (the default, made
  // explicit): that is what lets ClaimUrls answer NEW without an fsync and
  // still survive a process crash.
  db.manual_wal_flush = false;
  db.keep_log_file_num = 10;  // RocksDB's own info logs in the directory
  if (o.collect_statistics) db.statistics = rocksdb::CreateDBStatistics();
  db.allow_concurrent_memtable_write = o.concurrent_memtable_writes;
  // Most claims are misses, so filters must exist on every level.
  db.optimize_filters_for_hits = false;
  // A Bloom filter over the memtable's whole keys: a claim of a new URL then
  // skips the memtable's skip-list search (dozens of cache misses in a
  // large memtable) before its insert.
  db.memtable_prefix_bloom_size_ratio = 0.02;
  db.memtable_whole_key_filtering = true;

  rocksdb::BlockBasedTableOptions table;
  table.block_cache = rocksdb::NewLRUCache(o.block_cache_bytes);
  if (o.bloom_bits_per_key > 0) {
    // Full (not block-based) filters over whole keys: what MultiGet's
    // batched filter probes are built for.
    table.filter_policy.reset(
        rocksdb::NewBloomFilterPolicy(static_cast<double>(o.bloom_bits_per_key)));
  }
  table.whole_key_filtering = true;
  // A hash index inside each data block saves the binary search on hits.
  table.data_block_index_type = rocksdb::BlockBasedTableOptions::kDataBlockBinaryAndHash;
  db.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return db;
}

namespace {

// Universal (tiered) compaction for a family whose records are mostly
// inserted, never expired.
void UseUniversalCompaction(rocksdb::ColumnFamilyOptions* cf) {
  cf->compaction_style = rocksdb::kCompactionStyleUniversal;
  // Merge once 8 sorted runs exist (4 merges more often: for the URL
  // family, little fewer lookups, since a claim of a new URL is answered by
  // the URL filter and reads no run at all; for the content family, 14-18%
  // slower CheckChunks than 8).
  cf->level0_file_num_compaction_trigger = 8;
  // Claims only insert: the runs newer than the oldest are new records,
  // not garbage. At the default of 200% a merge of everything would start
  // whenever the newer runs hold twice the oldest; at 1000% that trigger
  // stays out of the way, and merges into the oldest run come from the
  // size-ratio rule, about once each time the family doubles.
  cf->compaction_options_universal.max_size_amplification_percent = 1000;
  // RocksDB 7.8 gives every non-FIFO family a 30-day ttl, which universal
  // compaction turns into a periodic merge of everything: a full rewrite
  // of the family (and its size again in free disk) every month, and
  // right after the first open of an older store. Records never expire
  // here, so neither applies.
  cf->ttl = 0;
  cf->periodic_compaction_seconds = 0;
}

}  // namespace

// The default column family's options: the URL records (and the meta
// record). Claims write URL keys in random order and read them only by
// whole key (scans are rare: export, the URL filter's rebuild, Stats), so
// unless o.url_memtable says otherwise its memtables are hash-indexed
// vectors sorted at flush (HashVectorMemTableRepFactory) instead of skip
// lists, and need no memtable Bloom filter: a Get is one hash lookup. The
// records are only inserted (and rarely deleted by Forget), so unless
// o.url_compaction says otherwise the family is compacted universal
// (tiered): fewer rewrites per record than leveled compaction's merges of
// each batch into the whole next level.
rocksdb::ColumnFamilyOptions UrlFamilyOptions(const rocksdb::Options& db,
                                              const RocksDbStoreOptions& o) {
  rocksdb::ColumnFamilyOptions cf(db);
  // The representation sorts by bytewise chunks of the keys, and its
  // iterators do not follow later writes (HashVectorMemTableRepFactory's
  // limits): only with the bytewise comparator and none of the options
  // that need live memtable iterators.
  const bool hash_vector_fits = cf.comparator == rocksdb::BytewiseComparator() &&
                                cf.max_successive_merges == 0 && !cf.inplace_update_support;
  if (o.url_memtable == RocksDbStoreOptions::UrlMemtable::kHashVector && hash_vector_fits) {
    cf.memtable_factory = std::make_shared<HashVectorMemTableRepFactory>();
    cf.memtable_prefix_bloom_size_ratio = 0;
    cf.memtable_whole_key_filtering = false;
  }
  if (o.url_compaction == RocksDbStoreOptions::Compaction::kUniversal) UseUniversalCompaction(&cf);
  return cf;
}

// The content family's options: RocksDB's defaults from `db` (skip-list
// memtables: the content records are read by key and scanned by prefix),
// compacted as o.content_compaction says.
rocksdb::ColumnFamilyOptions ContentFamilyOptions(const rocksdb::Options& db,
                                                  const RocksDbStoreOptions& o) {
  rocksdb::ColumnFamilyOptions cf(db);
  if (o.content_compaction == RocksDbStoreOptions::Compaction::kUniversal) {
    UseUniversalCompaction(&cf);
  }
  return cf;
}

}  // namespace rocksdb_internal

}  // namespace dedupd
