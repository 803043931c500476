// RocksDbStore: operator calls. Stats, counts and sizes, Checkpoint.

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "rocksdb/statistics.h"
#include "rocksdb/table_properties.h"
#include "rocksdb/transaction_log.h"
#include "rocksdb/utilities/checkpoint.h"
#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {

RocksDbStore::IndexStats RocksDbStore::chunk_index_stats() const {
  return {impl_->chunk_index->size(), impl_->chunk_index->MemoryBytes(),
          impl_->chunk_text_ids.MemoryBytes()};
}

RocksDbStore::IndexStats RocksDbStore::index_stats() const {
  return {impl_->index->size(), impl_->index->MemoryBytes()};
}

absl::StatusOr<uint64_t> RocksDbStore::DataBlockReads() const {
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb("count block reads"));
  const std::shared_ptr<rocksdb::Statistics> stats = db->GetDBOptions().statistics;
  if (stats == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("count block reads of store at ",
                                                      impl_->options.path,
                                                      ": opened without collect_statistics"));
  }
  return stats->getTickerCount(rocksdb::BLOCK_CACHE_DATA_MISS);
}

absl::StatusOr<uint64_t> RocksDbStore::ApproximateUrlCount() {
  constexpr absl::string_view kAction = "count URLs in store";
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  // Not rocksdb.estimate-num-keys: it extrapolates from the files whose
  // statistics were loaded, and Open loads none (skip_stats_update_on_db_open),
  // so it is far off after a restart. URL records are never overwritten,
  // and deleted only by Forget, which deletes only a stored key: every
  // record lives in exactly one table file or memtable. A tombstone in a
  // memtable shadows a record counted elsewhere (an older table, or the
  // same memtable), so it counts -1 (entries include tombstones: entries -
  // 2 * deletes). A tombstone in a table file counts 0: the flush or
  // compaction that wrote it may have dropped its record already (then 0
  // is right), or the record may still sit in an older table (then the
  // count is one too high until a compaction merges the two).
  rocksdb::TablePropertiesCollection tables;
  rocksdb::Status s = db->GetPropertiesOfAllTables(&tables);
  if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
  int64_t keys = 0;
  for (const auto& [file, props] : tables) {
    if (props == nullptr) continue;
    const uint64_t dead = props->num_deletions + props->num_range_deletions;
    keys += static_cast<int64_t>(props->num_entries) - static_cast<int64_t>(dead);
  }
  for (const auto& [entries_property, deletes_property] :
       {std::pair{&rocksdb::DB::Properties::kNumEntriesActiveMemTable,
                  &rocksdb::DB::Properties::kNumDeletesActiveMemTable},
        std::pair{&rocksdb::DB::Properties::kNumEntriesImmMemTables,
                  &rocksdb::DB::Properties::kNumDeletesImmMemTables}}) {
    uint64_t entries = 0;
    uint64_t deletes = 0;
    for (auto [property, value] :
         {std::pair{entries_property, &entries}, std::pair{deletes_property, &deletes}}) {
      if (!db->GetIntProperty(*property, value)) {
        return absl::InternalError(absl::StrCat(kAction, " at ", impl_->options.path,
                                                ": RocksDB property ", *property,
                                                " is unavailable"));
      }
    }
    keys += static_cast<int64_t>(entries) - 2 * static_cast<int64_t>(deletes);
  }
  // The meta record is one of the keys.
  return keys > 1 ? static_cast<uint64_t>(keys - 1) : 0;
}

absl::StatusOr<uint64_t> RocksDbStore::DiskBytes() {
  constexpr absl::string_view kAction = "measure disk use of store";
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  uint64_t sst_bytes = 0;
  if (!db->GetAggregatedIntProperty(rocksdb::DB::Properties::kLiveSstFilesSize, &sst_bytes)) {
    return absl::InternalError(absl::StrCat(kAction, " at ", impl_->options.path,
                                            ": RocksDB property rocksdb.live-sst-files-size is "
                                            "unavailable"));
  }
  rocksdb::VectorLogPtr wal_files;
  rocksdb::Status s = db->GetSortedWalFiles(wal_files);
  if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
  uint64_t wal_bytes = 0;
  for (const auto& f : wal_files) wal_bytes += f->SizeFileBytes();
  return sst_bytes + wal_bytes;
}

namespace {

// The record kinds of docs/storage_format.md ("Key tags"): name, column
// family (false: default, true: content) and key prefix.
struct KindRange {
  const char* name;
  bool content_family;
  std::string prefix;
};

std::vector<KindRange> KindRanges() {
  auto tag = [](char t) { return std::string(1, t); };
  auto chunk = [](char second) { return std::string{fmt::kTagChunk, second}; };
  return {
      {"url", false, tag(fmt::kTagUrl)},
      {"content", true, tag(fmt::kTagContent)},
      {"alias", true, tag(fmt::kTagAlias)},
      {"fingerprint", true, tag(fmt::kTagFingerprint)},
      {"fetch", true, tag(fmt::kTagFetch)},
      {"chunk_manifest", true, chunk(fmt::kChunkManifest)},
      {"chunk_text", true, chunk(fmt::kChunkTextById)},
      {"chunk_holder", true, chunk(fmt::kChunkHolder)},
      {"namespaced_url", false, tag(fmt::kTagNamespace)},
  };
}

}  // namespace

absl::StatusOr<StoreStats> RocksDbStore::Stats(bool exact) {
  constexpr absl::string_view kAction = "read stats of store";
  StoreStats st;
  st.storage_format_version = fmt::kStorageFormatVersion;
  st.normalizer_version = impl_->options.normalizer_version;
  st.text_normalizer_version = impl_->options.text_normalizer_version;
  st.simhash_version = impl_->options.simhash_version;
  st.simhash_shingle_words = impl_->options.simhash_shingle_words;
  st.simhash_seed = impl_->options.simhash_seed;
  st.minhash_version = impl_->options.minhash_version;
  st.minhash_seed = impl_->options.minhash_seed;
  st.created = impl_->created;
  st.content_fingerprints_indexed = impl_->index->size();
  st.chunk_fingerprints_indexed = impl_->chunk_index->size();
  DEDUPD_ASSIGN_OR_RETURN(st.estimated_url_records, ApproximateUrlCount());

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb(kAction));
  const std::string& path = impl_->options.path;
  auto missing = [&](const std::string& property) {
    return absl::InternalError(
        absl::StrCat(kAction, " at ", path, ": RocksDB property ", property, " is unavailable"));
  };
  // Per-family properties, summed over both families.
  const std::pair<const std::string*, uint64_t*> summed[] = {
      {&rocksdb::DB::Properties::kLiveSstFilesSize, &st.live_sst_bytes},
      {&rocksdb::DB::Properties::kEstimatePendingCompactionBytes,
       &st.estimate_pending_compaction_bytes},
      {&rocksdb::DB::Properties::kCurSizeAllMemTables, &st.cur_size_all_mem_tables},
  };
  for (const auto& [property, out] : summed) {
    if (!db->GetAggregatedIntProperty(*property, out)) return missing(*property);
  }
  // Database-wide properties (the block cache is shared by both families):
  // read once, through the default family.
  uint64_t write_stopped = 0;
  const std::pair<const std::string*, uint64_t*> single[] = {
      {&rocksdb::DB::Properties::kIsWriteStopped, &write_stopped},
      {&rocksdb::DB::Properties::kActualDelayedWriteRate, &st.actual_delayed_write_rate},
      {&rocksdb::DB::Properties::kNumRunningCompactions, &st.num_running_compactions},
      {&rocksdb::DB::Properties::kNumRunningFlushes, &st.num_running_flushes},
      {&rocksdb::DB::Properties::kBlockCacheUsage, &st.block_cache_usage},
      {&rocksdb::DB::Properties::kBlockCacheCapacity, &st.block_cache_capacity},
  };
  for (const auto& [property, out] : single) {
    if (!db->GetIntProperty(*property, out)) return missing(*property);
  }
  st.write_stopped = write_stopped != 0;
  rocksdb::VectorLogPtr wal_files;
  rocksdb::Status s = db->GetSortedWalFiles(wal_files);
  if (!s.ok()) return FromRocksDbStatus(s, kAction, path);
  for (const auto& f : wal_files) st.wal_bytes += f->SizeFileBytes();
  st.disk_bytes = st.live_sst_bytes + st.wal_bytes;

  auto family = [&](bool content) {
    return content ? impl_->content_cf : db->DefaultColumnFamily();
  };
  rocksdb::SizeApproximationOptions size_options;
  size_options.include_memtables = true;
  size_options.include_files = true;
  const std::vector<KindRange> ranges = KindRanges();
  for (const KindRange& k : ranges) {
    StoreStats::RecordKind kind;
    kind.name = k.name;
    kind.key_prefix = k.prefix;
    const std::string end = PrefixEnd(k.prefix);
    const rocksdb::Range range(k.prefix, end);
    s = db->GetApproximateSizes(size_options, family(k.content_family), &range, 1,
                                &kind.estimated_bytes);
    if (!s.ok()) return FromRocksDbStatus(s, kAction, path);
    st.kinds.push_back(std::move(kind));
  }
  if (!exact) {
    DEDUPD_RETURN_IF_ERROR(impl_->ListNamespaces(db, nullptr, &st));
    return st;
  }

  // One snapshot for both families, so the counts agree with each other.
  const rocksdb::Snapshot* snapshot = db->GetSnapshot();
  absl::Status scanned = impl_->ListNamespaces(db, snapshot, &st);
  if (scanned.ok()) scanned = impl_->CountNamespaceUrls(db, snapshot, &st);
  for (size_t i = 0; i < st.kinds.size() && scanned.ok(); ++i) {
    StoreStats::RecordKind& kind = st.kinds[i];
    const std::string end = PrefixEnd(kind.key_prefix);
    const rocksdb::Slice upper(end);
    rocksdb::ReadOptions read;
    read.snapshot = snapshot;
    read.iterate_upper_bound = &upper;
    read.fill_cache = false;  // a one-off pass must not evict the working set
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, family(ranges[i].content_family)));
    uint64_t n = 0;
    for (it->Seek(kind.key_prefix); it->Valid(); it->Next()) ++n;
    if (!it->status().ok()) {
      scanned = FromRocksDbStatus(it->status(), "count records of store", path);
    }
    kind.exact_count = n;
  }
  db->ReleaseSnapshot(snapshot);
  if (!scanned.ok()) return scanned;
  return st;
}

absl::StatusOr<uint64_t> RocksDbStore::Checkpoint(const std::string& directory) {
  const std::string action = absl::StrCat("back up store to ", directory, ": store");
  const std::string& path = impl_->options.path;
  if (directory.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("back up store at ", path, ": the backup directory is empty"));
  }
  std::error_code ec;
  const std::filesystem::path target(directory);
  if (std::filesystem::symlink_status(target, ec).type() != std::filesystem::file_type::not_found) {
    return absl::FailedPreconditionError(
        absl::StrCat("back up store at ", path, ": ", directory,
                     " already exists (a backup goes into a new directory; remove it or "
                     "choose another)"));
  }
  const std::filesystem::path parent =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(parent, ec)) {
    return absl::FailedPreconditionError(absl::StrCat("back up store at ", path,
                                                      ": the parent directory ", parent.string(),
                                                      " of ", directory, " does not exist"));
  }
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB * db, impl_->LiveDb("back up store"));
  // A checkpoint flushes the memtables; with writes stopped that flush
  // would fail (and a flush request in that state makes RocksDB's error
  // fatal), so resume first or refuse.
  DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, action));
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(db, &raw);
  if (!s.ok()) return FromRocksDbStatus(s, action, path);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  uint64_t sequence = 0;
  // log_size_for_flush 0: always flush first, so that the backup needs no
  // WAL replay to hold the latest records.
  s = checkpoint->CreateCheckpoint(directory, /*log_size_for_flush=*/0, &sequence);
  if (!s.ok()) {
    // RocksDB works in DIR.tmp and renames at the end; it removes the
    // temporary directory itself on failure.
    if (s.IsIOError() && absl::StrContains(s.ToString(), "ermission denied")) {
      return absl::PermissionDeniedError(absl::StrCat(action, " at ", path, ": ", s.ToString()));
    }
    return FromRocksDbStatus(s, action, path);
  }
  return sequence;
}

}  // namespace dedupd
