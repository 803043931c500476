// The RocksDB backend. The only file of dedupd that includes RocksDB
// (besides its own test). Keys and values come from rocksdb_format.h only.

#include "storage/rocksdb_store.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/status_macros.h"
#include "rocksdb/cache.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/iterator.h"
#include "rocksdb/options.h"
#include "rocksdb/slice.h"
#include "rocksdb/status.h"
#include "rocksdb/table.h"
#include "rocksdb/table_properties.h"
#include "rocksdb/transaction_log.h"
#include "rocksdb/write_batch.h"
#include "storage/rocksdb_format.h"
#include "storage/rocksdb_status.h"

namespace dedupd::rocksdb_internal {
namespace {

// True when `s` says that another process (or this one) holds the
// directory's LOCK file. RocksDB reports both cases as IOError with no
// dedicated subcode, so the message is the only signal:
//   other process: "While lock file: <dir>/LOCK: Resource temporarily
//                   unavailable" (fcntl F_SETLK failed),
//   this process:  "lock hold by current process, acquire time ...".
bool IsLockHeld(const rocksdb::Status& s) {
  if (!s.IsIOError()) return false;
  const std::string message = s.ToString();
  return absl::StrContains(message, "lock hold by current process") ||
         absl::StrContains(message, "While lock file");
}

}  // namespace

// The one conversion (see rocksdb_status.h for the table). Codes follow
// what the caller should do (STYLE.md "Errors").
absl::Status FromRocksDbStatus(const rocksdb::Status& s,
                               absl::string_view action,
                               absl::string_view path) {
  if (s.ok()) return absl::OkStatus();
  if (IsLockHeld(s)) {
    return absl::FailedPreconditionError(
        absl::StrCat("data directory ", path,
                     " is in use by another process (RocksDB LOCK held): ",
                     action, ": ", s.ToString()));
  }
  const std::string message = absl::StrCat(action, " at ", path, ": ", s.ToString());
  if (s.IsNoSpace() || s.subcode() == rocksdb::Status::kSpaceLimit ||
      s.IsMemoryLimit()) {
    return absl::ResourceExhaustedError(message);
  }
  if (s.IsCorruption()) return absl::DataLossError(message);
  if (s.IsInvalidArgument()) return absl::InvalidArgumentError(message);
  if (s.IsPathNotFound()) {
    // The directory vanished or was never there: retrying will not help.
    return absl::FailedPreconditionError(message);
  }
  if (s.IsIOError() || s.IsBusy() || s.IsTimedOut() || s.IsTryAgain() ||
      s.IsShutdownInProgress()) {
    return absl::UnavailableError(message);
  }
  return absl::InternalError(message);
}

}  // namespace dedupd::rocksdb_internal

namespace dedupd {
namespace {

namespace fmt = ::dedupd::rocksdb_format;
using ::dedupd::rocksdb_internal::FromRocksDbStatus;

// Key bytes for messages: escaped and bounded, since keys are arbitrary.
std::string PrintableKey(absl::string_view url) {
  constexpr size_t kMaxPrintedBytes = 200;
  std::string out = absl::CHexEscape(url.substr(0, kMaxPrintedBytes));
  if (url.size() > kMaxPrintedBytes) absl::StrAppend(&out, "...");
  return out;
}

absl::Status CheckOptions(const RocksDbStoreOptions& o) {
  if (o.path.empty()) {
    return absl::InvalidArgumentError("RocksDbStoreOptions.path is empty");
  }
  if (o.normalizer_version == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path,
        ": RocksDbStoreOptions.normalizer_version is 0 (it is required)"));
  }
  if (o.bloom_bits_per_key < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("open store at ", o.path,
                     ": RocksDbStoreOptions.bloom_bits_per_key is negative"));
  }
  if (o.write_buffer_bytes == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("open store at ", o.path,
                     ": RocksDbStoreOptions.write_buffer_bytes is 0"));
  }
  if (o.max_open_files == 0 || o.max_open_files < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path,
        ": RocksDbStoreOptions.max_open_files must be -1 or positive"));
  }
  return absl::OkStatus();
}

// LZ4 when this RocksDB build has it: cheap to compress, very cheap to
// decompress, and URLs compress well. Snappy otherwise.
rocksdb::CompressionType PickCompression() {
  const std::vector<rocksdb::CompressionType> supported =
      rocksdb::GetSupportedCompressions();
  for (rocksdb::CompressionType want :
       {rocksdb::kLZ4Compression, rocksdb::kSnappyCompression}) {
    if (std::find(supported.begin(), supported.end(), want) != supported.end()) {
      return want;
    }
  }
  return rocksdb::kNoCompression;
}

rocksdb::Options MakeDbOptions(const RocksDbStoreOptions& o) {
  rocksdb::Options db;
  db.create_if_missing = o.create_if_missing;
  // Two cores is the deployment baseline: one flush plus one compaction.
  db.max_background_jobs = 2;
  db.bytes_per_sync = 1 << 20;  // smooth background writeback of tables
  db.write_buffer_size = o.write_buffer_bytes;
  db.max_write_buffer_number = 3;
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
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(
        static_cast<double>(o.bloom_bits_per_key)));
  }
  table.whole_key_filtering = true;
  // A hash index inside each data block saves the binary search on hits.
  table.data_block_index_type =
      rocksdb::BlockBasedTableOptions::kDataBlockBinaryAndHash;
  db.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return db;
}

// Batch keys, encoded, sorted and deduplicated: RocksDB's MultiGet is
// fastest on sorted input, and one lookup per distinct key is what makes
// "a repeated key is new at most at its first position" easy.
struct SortedBatch {
  // Encoded keys, ascending by bytes (RocksDB's BytewiseComparator order,
  // which std::string's operator< matches), distinct.
  std::vector<std::string> unique_keys;
  // first_position[u]: the smallest batch index whose key is unique_keys[u].
  std::vector<size_t> first_position;
  // slot[i]: the index into unique_keys of batch key i.
  std::vector<size_t> slot;
  // 0, 1, ..., unique_keys.size() - 1: "every unique key" for MultiGet.
  std::vector<size_t> all;
};

SortedBatch SortBatch(absl::Span<const std::string> keys) {
  std::vector<std::string> encoded;
  encoded.reserve(keys.size());
  for (const std::string& k : keys) encoded.push_back(fmt::EncodeUrlKey(k));
  std::vector<size_t> order(keys.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Stable, so that among equal keys the earliest position comes first.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return encoded[a] < encoded[b];
  });
  SortedBatch batch;
  batch.slot.resize(keys.size());
  for (size_t i : order) {
    if (batch.unique_keys.empty() || encoded[i] != batch.unique_keys.back()) {
      batch.unique_keys.push_back(std::move(encoded[i]));
      batch.first_position.push_back(i);
    }
    batch.slot[i] = batch.unique_keys.size() - 1;
  }
  batch.all.resize(batch.unique_keys.size());
  std::iota(batch.all.begin(), batch.all.end(), size_t{0});
  return batch;
}

}  // namespace

struct RocksDbStore::Impl {
  RocksDbStoreOptions options;
  rocksdb::WriteOptions write_options;
  absl::Time created;

  // Lifecycle: every call holds it shared while it uses `db`; Close holds it
  // exclusively to take `db` away.
  absl::Mutex mu;
  std::unique_ptr<rocksdb::DB> db ABSL_GUARDED_BY(mu);

  // LiveDb returns `db`, or FailedPrecondition "<action> at <path>: store
  // is closed" after Close. REQUIRES: `mu` held (shared is enough) for as
  // long as the returned pointer is used.
  absl::StatusOr<rocksdb::DB*> LiveDb(absl::string_view action)
      ABSL_SHARED_LOCKS_REQUIRED(mu) {
    if (db == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(action, " at ", options.path, ": store is closed"));
    }
    return db.get();
  }

  // Per-key claim locks. A claim registers the keys it found absent in
  // `claiming` (waiting while any of them is registered by another claim),
  // re-reads them, writes the still-absent ones and then unregisters them.
  // So the read that finds a key absent and the write that records it are
  // one atomic step against every other claim of that key, while claims of
  // disjoint keys run (and insert into the memtable) in parallel. Lookups
  // never take it. Acquired after `mu`.
  absl::Mutex claim_mu ABSL_ACQUIRED_AFTER(mu);
  // Views of keys owned by the registering call's SortedBatch, which
  // outlives the registration.
  absl::flat_hash_set<absl::string_view> claiming ABSL_GUARDED_BY(claim_mu);

  // Registers `keys` in `claiming` once none of them is registered.
  void LockKeys(absl::Span<const absl::string_view> keys);
  // Unregisters `keys`. REQUIRES: LockKeys(keys) was called.
  void UnlockKeys(absl::Span<const absl::string_view> keys);

  // MultiGet of the unique keys of `batch` named by `which` (ascending
  // indices into batch.unique_keys): sets (*first_seen)[u] for each u in
  // `which` to the stored time, leaving it nullopt when the key is absent.
  // REQUIRES: first_seen->size() == batch.unique_keys.size().
  absl::Status MultiGet(rocksdb::DB* db, const SortedBatch& batch,
                        absl::Span<const size_t> which,
                        absl::string_view action,
                        std::vector<std::optional<absl::Time>>* first_seen);

  // Closes `db` (which must not be used afterwards). Returns the first error.
  absl::Status CloseDb(rocksdb::DB* db, bool sync_wal);
};

absl::Status RocksDbStore::Impl::MultiGet(
    rocksdb::DB* db, const SortedBatch& batch, absl::Span<const size_t> which,
    absl::string_view action,
    std::vector<std::optional<absl::Time>>* first_seen) {
  const size_t n = which.size();
  if (n == 0) return absl::OkStatus();
  std::vector<rocksdb::Slice> slices;
  slices.reserve(n);
  for (size_t u : which) slices.emplace_back(batch.unique_keys[u]);
  std::vector<rocksdb::PinnableSlice> values(n);
  std::vector<rocksdb::Status> statuses(n);
  db->MultiGet(rocksdb::ReadOptions(), db->DefaultColumnFamily(), n,
               slices.data(), values.data(), statuses.data(),
               /*sorted_input=*/true);
  for (size_t j = 0; j < n; ++j) {
    const size_t u = which[j];
    (*first_seen)[u] = std::nullopt;
    if (statuses[j].IsNotFound()) continue;
    if (!statuses[j].ok()) {
      return FromRocksDbStatus(statuses[j], action, options.path);
    }
    absl::StatusOr<absl::Time> t = fmt::DecodeUrlValue(
        absl::string_view(values[j].data(), values[j].size()));
    if (!t.ok()) {
      return absl::DataLossError(absl::StrCat(
          action, " at ", options.path, ": record of URL \"",
          PrintableKey(absl::string_view(batch.unique_keys[u]).substr(1)),
          "\": ", t.status().message()));
    }
    (*first_seen)[u] = *t;
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::Impl::CloseDb(rocksdb::DB* db, bool sync_wal) {
  absl::Status result;
  if (sync_wal) {
    result = FromRocksDbStatus(db->SyncWAL(), "sync WAL of store", options.path);
  }
  absl::Status closed = FromRocksDbStatus(db->Close(), "close store", options.path);
  if (result.ok()) result = closed;
  return result;
}

RocksDbStore::RocksDbStore(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

RocksDbStore::~RocksDbStore() {
  absl::Status s = Close();
  if (!s.ok()) {
    // Handled here: a destructor has no caller to return it to.
    std::fprintf(stderr, "dedupd: %s\n", s.ToString().c_str());
  }
}

absl::StatusOr<std::unique_ptr<RocksDbStore>> RocksDbStore::Open(
    const RocksDbStoreOptions& options) {
  DEDUPD_RETURN_IF_ERROR(CheckOptions(options));
  const std::string& path = options.path;
  constexpr absl::string_view kOpen = "open store";

  rocksdb::DB* raw_db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(MakeDbOptions(options), path, &raw_db);
  if (!s.ok()) return FromRocksDbStatus(s, kOpen, path);
  std::unique_ptr<rocksdb::DB> db(raw_db);

  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->write_options.sync = options.sync_writes;
  impl->write_options.disableWAL = false;

  // On any failure below, close the database (releasing its LOCK) and
  // report the first error.
  auto fail = [&](const absl::Status& error) -> absl::Status {
    absl::Status closed = impl->CloseDb(db.get(), /*sync_wal=*/false);
    if (closed.ok()) return error;
    return absl::Status(
        error.code(),
        absl::StrCat(error.message(), " (closing after that error failed too: ",
                     closed.message(), ")"));
  };

  const std::string meta_key = fmt::EncodeMetaKey();
  std::string meta_value;
  s = db->Get(rocksdb::ReadOptions(), meta_key, &meta_value);
  if (s.IsNotFound()) {
    // A new store, unless the directory holds someone else's database.
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
    it->SeekToFirst();
    const bool empty = !it->Valid();
    rocksdb::Status it_status = it->status();
    it.reset();
    if (!it_status.ok()) return fail(FromRocksDbStatus(it_status, kOpen, path));
    if (!empty) {
      return fail(absl::FailedPreconditionError(absl::StrCat(
          "store at ", path,
          " holds a RocksDB database without a dedupd meta record: not a "
          "dedupd store; point the store at an empty or dedupd directory")));
    }
    fmt::StoreMeta meta;
    meta.format_version = fmt::kStorageFormatVersion;
    meta.normalizer_version = options.normalizer_version;
    meta.created = absl::FromUnixMicros(absl::ToUnixMicros(absl::Now()));
    rocksdb::WriteOptions sync_write;
    sync_write.sync = true;  // once per store: always durable
    s = db->Put(sync_write, meta_key, fmt::EncodeMeta(meta));
    if (!s.ok()) return fail(FromRocksDbStatus(s, kOpen, path));
    impl->created = meta.created;
  } else if (!s.ok()) {
    return fail(FromRocksDbStatus(s, kOpen, path));
  } else {
    absl::StatusOr<uint32_t> version = fmt::DecodeMetaFormatVersion(meta_value);
    if (!version.ok()) {
      return fail(absl::DataLossError(absl::StrCat(
          "store at ", path, ": ", version.status().message())));
    }
    if (*version != fmt::kStorageFormatVersion) {
      return fail(absl::FailedPreconditionError(absl::StrCat(
          "store at ", path, " was written with storage format version ",
          *version, ", this build reads version ", fmt::kStorageFormatVersion,
          ": run the matching dedupd version or rebuild the store")));
    }
    absl::StatusOr<fmt::StoreMeta> meta = fmt::DecodeMeta(meta_value);
    if (!meta.ok()) {
      return fail(absl::Status(
          meta.status().code(),
          absl::StrCat("store at ", path, ": ", meta.status().message())));
    }
    if (meta->normalizer_version != options.normalizer_version) {
      return fail(absl::FailedPreconditionError(absl::StrCat(
          "store at ", path, " was written with normalizer version ",
          meta->normalizer_version, ", this build uses ",
          options.normalizer_version,
          "; keys would not match: rebuild the store or run the matching "
          "dedupd version")));
    }
    impl->created = meta->created;
  }

  {
    absl::MutexLock lock(&impl->mu);
    impl->db = std::move(db);
  }
  return std::unique_ptr<RocksDbStore>(new RocksDbStore(std::move(impl)));
}

void RocksDbStore::Impl::LockKeys(absl::Span<const absl::string_view> keys) {
  absl::MutexLock lock(&claim_mu);
  auto all_free = [this, keys]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(claim_mu) {
    for (absl::string_view k : keys) {
      if (claiming.contains(k)) return false;
    }
    return true;
  };
  // Waiting while holding nothing else cannot deadlock: a call registers
  // all its keys at once, and only after they are all free.
  claim_mu.Await(absl::Condition(&all_free));
  claiming.insert(keys.begin(), keys.end());
}

void RocksDbStore::Impl::UnlockKeys(absl::Span<const absl::string_view> keys) {
  absl::MutexLock lock(&claim_mu);
  for (absl::string_view k : keys) claiming.erase(k);
}

absl::Status RocksDbStore::ClaimUrls(absl::Span<const std::string> keys,
                                     absl::Time now,
                                     std::vector<UrlClaim>* results) {
  constexpr absl::string_view kAction = "claim URLs in store";
  results->assign(keys.size(), UrlClaim{});
  if (keys.empty()) return absl::OkStatus();
  DEDUPD_RETURN_IF_ERROR(CheckUrlKeys(keys));

  // Everything that does not need the store happens before the locks.
  const absl::Time first_seen = absl::FromUnixMicros(absl::ToUnixMicros(now));
  const std::string new_value = fmt::EncodeUrlValue(first_seen);
  const SortedBatch batch = SortBatch(keys);
  const size_t n = batch.unique_keys.size();
  std::vector<std::optional<absl::Time>> stored(n);
  std::vector<bool> recorded(n, false);

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  // 1. Read every key without any claim lock. Records are never
  //    overwritten or deleted, so a key found here is SEEN for good, with
  //    its final first-seen time; hits (re-crawled outlinks) then cost no
  //    serialized time, and their block reads run in parallel.
  DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, batch.all, kAction, &stored));
  std::vector<size_t> absent;
  for (size_t u = 0; u < n; ++u) {
    if (!stored[u].has_value()) absent.push_back(u);
  }
  if (!absent.empty()) {
    // 2. With the absent keys locked, read them again (a claim that
    //    finished since step 1 may have recorded some; Bloom filters make
    //    this cheap for the truly new ones), record the rest in one
    //    WriteBatch, and answer only after the WAL write.
    std::vector<absl::string_view> locked;
    locked.reserve(absent.size());
    for (size_t u : absent) locked.push_back(batch.unique_keys[u]);
    impl_->LockKeys(locked);
    struct Unlock {
      Impl* impl;
      const std::vector<absl::string_view>& keys;
      ~Unlock() { impl->UnlockKeys(keys); }
    } unlock{impl_.get(), locked};
    DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, absent, kAction, &stored));
    rocksdb::WriteBatch write_batch;
    for (size_t u : absent) {
      if (stored[u].has_value()) continue;
      rocksdb::Status s = write_batch.Put(batch.unique_keys[u], new_value);
      if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
      recorded[u] = true;
    }
    if (write_batch.Count() > 0) {
      // Returns after the WAL write (and fsync when sync_writes): only then
      // may any key be answered new.
      rocksdb::Status s = db->Write(impl_->write_options, &write_batch);
      if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
    }
  }

  for (size_t i = 0; i < keys.size(); ++i) {
    const size_t u = batch.slot[i];
    UrlClaim& out = (*results)[i];
    if (recorded[u]) {
      out.is_new = batch.first_position[u] == i;
      out.first_seen = first_seen;
    } else {
      out.first_seen = *stored[u];
    }
  }
  return absl::OkStatus();
}

absl::Status RocksDbStore::LookupUrls(
    absl::Span<const std::string> keys,
    std::vector<std::optional<absl::Time>>* results) {
  constexpr absl::string_view kAction = "look up URLs in store";
  results->assign(keys.size(), std::nullopt);
  if (keys.empty()) return absl::OkStatus();
  DEDUPD_RETURN_IF_ERROR(CheckUrlKeys(keys));
  const SortedBatch batch = SortBatch(keys);
  std::vector<std::optional<absl::Time>> stored(batch.unique_keys.size());

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, batch.all, kAction, &stored));
  for (size_t i = 0; i < keys.size(); ++i) {
    (*results)[i] = stored[batch.slot[i]];
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RocksDbStore::ApproximateUrlCount() {
  constexpr absl::string_view kAction = "count URLs in store";
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  // Not rocksdb.estimate-num-keys: it extrapolates from the files whose
  // statistics were loaded, and Open loads none (skip_stats_update_on_db_open),
  // so it is far off after a restart. Records are never overwritten or
  // deleted, so every key lives in exactly one table file or memtable, and
  // summing entries is exact up to a flush racing this call.
  rocksdb::TablePropertiesCollection tables;
  rocksdb::Status s = db->GetPropertiesOfAllTables(&tables);
  if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
  uint64_t keys = 0;
  for (const auto& [file, props] : tables) {
    if (props == nullptr) continue;
    const uint64_t dead = props->num_deletions + props->num_range_deletions;
    keys += props->num_entries > dead ? props->num_entries - dead : 0;
  }
  for (const std::string* property :
       {&rocksdb::DB::Properties::kNumEntriesActiveMemTable,
        &rocksdb::DB::Properties::kNumEntriesImmMemTables}) {
    uint64_t entries = 0;
    if (!db->GetIntProperty(*property, &entries)) {
      return absl::InternalError(absl::StrCat(kAction, " at ",
                                              impl_->options.path,
                                              ": RocksDB property ", *property,
                                              " is unavailable"));
    }
    keys += entries;
  }
  // The meta record is one of the keys.
  return keys > 0 ? keys - 1 : 0;
}

absl::StatusOr<uint64_t> RocksDbStore::DiskBytes() {
  constexpr absl::string_view kAction = "measure disk use of store";
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  uint64_t sst_bytes = 0;
  if (!db->GetIntProperty(rocksdb::DB::Properties::kLiveSstFilesSize,
                          &sst_bytes)) {
    return absl::InternalError(
        absl::StrCat(kAction, " at ", impl_->options.path,
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

absl::Status RocksDbStore::Close() {
  std::unique_ptr<rocksdb::DB> db;
  {
    // Exclusive: waits for every call in flight to finish.
    absl::MutexLock lifecycle(&impl_->mu);
    db = std::move(impl_->db);
  }
  if (db == nullptr) return absl::OkStatus();
  // SyncWAL is one fsync; skip it when every write was synced already.
  return impl_->CloseDb(db.get(), /*sync_wal=*/!impl_->options.sync_writes);
}

const std::string& RocksDbStore::path() const { return impl_->options.path; }

absl::Time RocksDbStore::created() const { return impl_->created; }

}  // namespace dedupd
