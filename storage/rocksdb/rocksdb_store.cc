// The RocksDB backend. The only file of dedupd that includes RocksDB
// (besides its own test). Keys and values come from rocksdb_format.h only.

#include "storage/rocksdb/rocksdb_store.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdint>
#include <limits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <numeric>
#include <string>
#include <system_error>
#include <tuple>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "rocksdb/cache.h"
#include "rocksdb/comparator.h"
#include "rocksdb/convenience.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/filter_policy.h"
#include "rocksdb/iterator.h"
#include "rocksdb/listener.h"
#include "rocksdb/options.h"
#include "rocksdb/slice.h"
#include "rocksdb/snapshot.h"
#include "rocksdb/statistics.h"
#include "rocksdb/status.h"
#include "rocksdb/table.h"
#include "rocksdb/table_properties.h"
#include "rocksdb/transaction_log.h"
#include "rocksdb/utilities/checkpoint.h"
#include "rocksdb/write_batch.h"
#include "storage/plan/chunk_planner.h"
#include "storage/rocksdb/chunk_text_ids.h"
#include "storage/plan/content_planner.h"
#include "storage/rocksdb/hash_vector_memtable.h"
#include "storage/rocksdb/rocksdb_format.h"
#include "storage/rocksdb/rocksdb_status.h"

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

// The column family of the content layer's records (docs/storage_format.md).
constexpr char kContentColumnFamily[] = "content";

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
  if (o.simhash_max_distance < 0 ||
      o.simhash_max_distance > SimHashIndex::kMaxSupportedDistance) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path, ": RocksDbStoreOptions.simhash_max_distance ",
        o.simhash_max_distance, " is outside [0, ",
        SimHashIndex::kMaxSupportedDistance, "]"));
  }
  if (!SimHashIndex::IsValidLayout(o.simhash_max_distance,
                                   o.simhash_index_blocks)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path, ": RocksDbStoreOptions.simhash_index_blocks ",
        o.simhash_index_blocks, " is not 0 or in [simhash_max_distance + 1, ",
        "simhash_max_distance + ", SimHashIndex::kMaxExtraBlocks + 1,
        "] = [", o.simhash_max_distance + 1, ", ",
        o.simhash_max_distance + 1 + SimHashIndex::kMaxExtraBlocks,
        "] with at most ", SimHashIndex::kMaxTables,
        " tables (C(blocks, simhash_max_distance))"));
  }
  if (!(o.url_filter.false_positive_rate > 0 &&
        o.url_filter.false_positive_rate <= 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path, ": RocksDbStoreOptions.url_filter."
        "false_positive_rate ", o.url_filter.false_positive_rate,
        " is outside (0, 0.5]"));
  }
  if (o.url_filter.expected_urls == 0 ||
      o.url_filter.expected_urls > (uint64_t{1} << 40)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path, ": RocksDbStoreOptions.url_filter."
        "expected_urls ", o.url_filter.expected_urls, " is outside [1, 2^40]"));
  }
  if (o.simhash_shingle_words < 1 || o.simhash_shingle_words > 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path, ": RocksDbStoreOptions.simhash_shingle_words ",
        o.simhash_shingle_words, " is outside [1, 16]"));
  }
  if (o.max_open_files == 0 || o.max_open_files < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path,
        ": RocksDbStoreOptions.max_open_files must be -1 or positive"));
  }
  if (o.write_resume_interval < absl::ZeroDuration() ||
      o.write_resume_interval == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "open store at ", o.path, ": RocksDbStoreOptions.write_resume_interval ",
        absl::FormatDuration(o.write_resume_interval), " is negative or infinite"));
  }
  return absl::OkStatus();
}

// WriteStop: whether RocksDB refuses writes after a background error, shared
// by the store and the listener RocksDB notifies. RocksDB 7.8 stops every
// write (its "read-only mode", reads go on) after a hard error: a failed
// write-ahead-log append or sync (a full disk: NoSpace), a failed flush.
// Only DB::Resume (or reopening) clears it; RocksDbStore::Impl::BeforeWrite
// calls Resume.
struct WriteStop {
  absl::Mutex mu;
  // Set by a background error of severity hard or worse; cleared when a
  // recovery succeeds.
  bool stopped ABSL_GUARDED_BY(mu) = false;
  // The error that stopped writes, or the last failed Resume's.
  rocksdb::Status error ABSL_GUARDED_BY(mu);
  // Bumped by every stopping error, so that a Resume that succeeded does
  // not clear an error recorded while it ran.
  uint64_t generation ABSL_GUARDED_BY(mu) = 0;
  // One Resume at a time, at most one per write_resume_interval.
  bool resuming ABSL_GUARDED_BY(mu) = false;
  absl::Time last_resume ABSL_GUARDED_BY(mu) = absl::InfinitePast();
  // A write-ahead-log append or sync failed (BackgroundErrorReason::
  // kWriteCallback): the log writer remembers the failure, and only a
  // Resume that flushes a memtable replaces it (see BeforeWrite).
  bool log_failed ABSL_GUARDED_BY(mu) = false;
  // Writes stay stopped until the store is reopened (BeforeWrite).
  bool needs_reopen ABSL_GUARDED_BY(mu) = false;
};

// WriteStopListener records RocksDB's background errors in a WriteStop.
// RocksDB calls it with its own mutex held: it must not call the database.
class WriteStopListener final : public rocksdb::EventListener {
 public:
  explicit WriteStopListener(std::shared_ptr<WriteStop> stop) : stop_(std::move(stop)) {}

  void OnBackgroundError(rocksdb::BackgroundErrorReason reason,
                         rocksdb::Status* error) override {
    if (error == nullptr || error->ok() ||
        error->severity() < rocksdb::Status::Severity::kHardError) {
      return;  // a soft error (e.g. a compaction short of space) stops nothing
    }
    absl::MutexLock lock(&stop_->mu);
    stop_->stopped = true;
    stop_->error = *error;
    ++stop_->generation;
    // The first recovery attempt comes write_resume_interval after the
    // error, not at once.
    stop_->last_resume = absl::Now();
    if (reason == rocksdb::BackgroundErrorReason::kWriteCallback) stop_->log_failed = true;
  }

  // RocksDB's own recovery from NoSpace waits until the volume's free space
  // reaches its reserved buffer (the whole memtable budget, 3 x
  // write_buffer_bytes: 192 MiB by default), which a small or shared volume
  // may never have, and makes DB::Resume answer Busy meanwhile. The store
  // resumes by itself instead (BeforeWrite), as soon as a flush fits.
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason /*reason*/,
                            rocksdb::Status error, bool* auto_recovery) override {
    if (error.IsNoSpace()) *auto_recovery = false;
  }

  void OnErrorRecoveryEnd(const rocksdb::BackgroundErrorRecoveryInfo& info) override {
    if (!info.new_bg_error.ok()) return;
    absl::MutexLock lock(&stop_->mu);
    if (stop_->needs_reopen) return;  // RocksDB's view; the log writer is still bad
    stop_->stopped = false;
    stop_->error = rocksdb::Status::OK();
  }

 private:
  const std::shared_ptr<WriteStop> stop_;
};

// TolerantInfoLogger: RocksDB's info log (the LOG file of the store
// directory), written with plain write(2) calls whose failures drop the
// line. RocksDB's own file logger cannot be used: the Debian build of
// RocksDB 7.8 keeps its assertions, and after one failed append its
// WritableFileWriter asserts (aborting the whole server) on the next log
// line, which a full disk makes certain (found by
// tests/e2e_full_disk_test.cc). The names are RocksDB's (the previous LOG
// becomes LOG.old.<micros> at Open), so keep_log_file_num still bounds them.
// Thread-safe: each line is one O_APPEND write.
class TolerantInfoLogger final : public rocksdb::Logger {
 public:
  // Opens <dir>/LOG, creating `dir` when `create_dir`. A file that cannot be
  // opened makes a logger that drops every line (the store works without).
  TolerantInfoLogger(const std::string& dir, bool create_dir)
      : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL) {
    std::error_code ec;
    if (create_dir) std::filesystem::create_directories(dir, ec);
    const std::string log = dir + "/LOG";
    if (std::filesystem::exists(log, ec)) {
      std::filesystem::rename(
          log, absl::StrCat(dir, "/LOG.old.", absl::ToUnixMicros(absl::Now())), ec);
    }
    fd_ = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  ~TolerantInfoLogger() override {
    if (fd_ >= 0) ::close(fd_);
  }

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    if (fd_ < 0) return;
    char line[4096];
    const std::string stamp =
        absl::FormatTime("%Y/%m/%d-%H:%M:%E6S ", absl::Now(), absl::LocalTimeZone());
    size_t n = std::min(stamp.size(), sizeof(line) - 2);
    std::memcpy(line, stamp.data(), n);
    const int k = std::vsnprintf(line + n, sizeof(line) - n - 1, format, ap);
    if (k < 0) return;
    n = std::min(n + static_cast<size_t>(k), sizeof(line) - 2);  // truncated
    if (line[n - 1] != '\n') line[n++] = '\n';
    const ssize_t written = ::write(fd_, line, n);
    (void)written;  // why: a full disk drops log lines, never the server
  }

 private:
  int fd_ = -1;
};

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

// The database options for `o`. `stop` (may be null: no write-stop
// tracking, for ListColumnFamilies) receives the background errors.
rocksdb::Options MakeDbOptions(const RocksDbStoreOptions& o,
                               std::shared_ptr<WriteStop> stop) {
  rocksdb::Options db;
  if (stop != nullptr) {
    db.listeners.push_back(std::make_shared<WriteStopListener>(std::move(stop)));
    db.info_log = std::make_shared<TolerantInfoLogger>(o.path, o.create_if_missing);
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
                                cf.max_successive_merges == 0 &&
                                !cf.inplace_update_support;
  if (o.url_memtable == RocksDbStoreOptions::UrlMemtable::kHashVector && hash_vector_fits) {
    cf.memtable_factory = std::make_shared<HashVectorMemTableRepFactory>();
    cf.memtable_prefix_bloom_size_ratio = 0;
    cf.memtable_whole_key_filtering = false;
  }
  if (o.url_compaction == RocksDbStoreOptions::UrlCompaction::kUniversal) {
    cf.compaction_style = rocksdb::kCompactionStyleUniversal;
    // Merge once 8 sorted runs exist (4 merges more often, for little
    // fewer lookups: a claim of a new URL is answered by the URL filter and
    // reads no run at all).
    cf.level0_file_num_compaction_trigger = 8;
    // Claims only insert: the runs newer than the oldest are new records,
    // not garbage. At the default of 200% a merge of everything would start
    // whenever the newer runs hold twice the oldest; at 1000% that trigger
    // stays out of the way, and merges into the oldest run come from the
    // size-ratio rule, about once each time the family doubles.
    cf.compaction_options_universal.max_size_amplification_percent = 1000;
    // RocksDB 7.8 gives every non-FIFO family a 30-day ttl, which universal
    // compaction turns into a periodic merge of everything: a full rewrite
    // of the URL records (and their size again in free disk) every month,
    // and right after the first open of an older store. Records never
    // expire here, so neither applies.
    cf.ttl = 0;
    cf.periodic_compaction_seconds = 0;
  }
  return cf;
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

  // Whether RocksDB stopped writes after a background error (a full disk);
  // shared with the listener RocksDB notifies.
  std::shared_ptr<WriteStop> write_stop = std::make_shared<WriteStop>();

  // BeforeWrite returns OK when writes may be attempted. While RocksDB has
  // stopped writes after a background error, it calls DB::Resume (at most
  // once per options.write_resume_interval, one call at a time; Resume
  // flushes the memtables and starts a new write-ahead log, so it succeeds
  // once the disk has room for that flush) and returns OK when that
  // succeeded; otherwise the stopping error (StoppedError), at once.
  // REQUIRES: `mu` held shared; `db` from LiveDb.
  absl::Status BeforeWrite(rocksdb::DB* db, absl::string_view action);
  // WriteFailed converts the failed write status `s` (FromRocksDbStatus),
  // saying so when the failure stopped writes.
  absl::Status WriteFailed(const rocksdb::Status& s, absl::string_view action);
  // StoppedError: `error` (the stopping one) as FromRocksDbStatus maps it,
  // plus what happens now: writes stopped, reads work, retried every
  // write_resume_interval.
  // With `needs_reopen` it says a restart is needed instead.
  absl::Status StoppedError(const rocksdb::Status& error, absl::string_view action,
                            bool needs_reopen) const;
  // StopCause: `error` (the stopping one; an IOError "writes are stopped"
  // when none was kept) as FromRocksDbStatus maps it, without the rest.
  absl::Status StopCause(const rocksdb::Status& error, absl::string_view action) const;
  // AllMemtablesEmpty: whether every column family's active memtable holds
  // no entry (then Resume cannot replace a failed log writer).
  bool AllMemtablesEmpty(rocksdb::DB* db) const;
  // MemtableBytes: the memtables' bytes, active and immutable, of both
  // column families. FreeBytes sets what the store's volume has free for an
  // unprivileged writer; false when statvfs fails.
  uint64_t MemtableBytes(rocksdb::DB* db) const;
  bool FreeBytes(uint64_t* free_bytes) const;
  // Room a Resume after NoSpace wants beyond the memtables: the new log,
  // the MANIFEST and OPTIONS files, table overhead.
  static constexpr uint64_t kResumeMarginBytes = uint64_t{1} << 20;
  // TryResume: one DB::Resume now, whatever the interval. Returns whether
  // writes are (again) allowed. For Close.
  bool TryResume(rocksdb::DB* db);

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

  // KeyLocks holds the claim locks of `keys` (none when empty) from its
  // construction to its destruction. The views must outlive it.
  class KeyLocks {
   public:
    KeyLocks(Impl* impl, std::vector<absl::string_view> keys)
        : impl_(impl), keys_(std::move(keys)) {
      if (!keys_.empty()) impl_->LockKeys(keys_);
    }
    ~KeyLocks() {
      if (!keys_.empty()) impl_->UnlockKeys(keys_);
    }
    KeyLocks(const KeyLocks&) = delete;
    KeyLocks& operator=(const KeyLocks&) = delete;

   private:
    Impl* const impl_;
    const std::vector<absl::string_view> keys_;
  };

  // MultiGet of the unique keys of `batch` named by `which` (ascending
  // indices into batch.unique_keys): sets (*first_seen)[u] for each u in
  // `which` to the stored time, leaving it nullopt when the key is absent.
  // REQUIRES: first_seen->size() == batch.unique_keys.size().
  absl::Status MultiGet(rocksdb::DB* db, const SortedBatch& batch,
                        absl::Span<const size_t> which,
                        absl::string_view action,
                        std::vector<std::optional<absl::Time>>* first_seen);

  // The Bloom front of the URL records; created in Open after `db` is
  // published (its rebuild scans through `db`).
  std::unique_ptr<UrlFilterFront> url_front;
  // Emits every URL record key (encoded) from one snapshot, for the
  // front's rebuild. Holds `mu` shared; Cancelled once `cancel` is set.
  absl::Status ScanUrlKeys(const std::function<void(absl::string_view)>& emit,
                           const std::atomic<bool>& cancel);
  // Hashes of the unique keys of `batch` named by `which`, into `hashes`
  // (computed once per key: `hashed` marks which are).
  void HashKeys(const SortedBatch& batch, absl::Span<const size_t> which,
                std::vector<uint64_t>* hashes, std::vector<bool>* hashed) const {
    for (size_t u : which) {
      if ((*hashed)[u]) continue;
      (*hashes)[u] = UrlFilterFront::KeyHash(batch.unique_keys[u]);
      (*hashed)[u] = true;
    }
  }
  // The keys of `candidates` that must be read from the store: all of them
  // when the front has no filter, else those it may contain. Counts both.
  std::vector<size_t> KeysToRead(const SortedBatch& batch,
                                 const std::vector<size_t>& candidates,
                                 std::vector<uint64_t>* hashes,
                                 std::vector<bool>* hashed) {
    const UrlFilterFront::View view = url_front->Acquire();
    if (!view.ready()) {
      url_front->CountProbes(0, candidates.size());
      return candidates;
    }
    HashKeys(batch, candidates, hashes, hashed);
    std::vector<size_t> read;
    read.reserve(candidates.size());
    for (size_t u : candidates) {
      if (view.MayContain((*hashes)[u])) read.push_back(u);
    }
    url_front->CountProbes(candidates.size() - read.size(), read.size());
    return read;
  }

  // Adds the records of a chunk plan's mutations `m`, for the document whose
  // manifest key is `doc_key`, to `batch`: deletions, then puts
  // (ChunkMutations' contract). Returns the first WriteBatch error.
  rocksdb::Status AddChunkMutations(const ChunkMutations& m,
                                    const std::string& doc_key,
                                    rocksdb::WriteBatch* batch) const;
  // After the write of `m`: the chunk index drops the deleted texts and
  // takes the new ones (only then, so it never names a text before its
  // records exist; readers skip the ones it still names after deletion).
  void ApplyChunkIndex(const ChunkMutations& m);

  // Closes `db` (which must not be used afterwards). Returns the first error.
  absl::Status CloseDb(rocksdb::DB* db, bool sync_wal);

  // Snapshots held by ExportCursors: released by their cursor, or by Close
  // (under `mu` exclusively, before the database closes) if still held.
  absl::Mutex export_mu ABSL_ACQUIRED_AFTER(mu);
  absl::flat_hash_set<const rocksdb::Snapshot*> export_snapshots
      ABSL_GUARDED_BY(export_mu);

  // The content layer's column family (kContentColumnFamily): content,
  // alias, fingerprint and fetch records and the content meta record.
  // Owned. Set in Open before `db` is published; destroyed by CloseDb,
  // which runs only after Close took `db` away under `mu` exclusively, so
  // no call can be using it.
  rocksdb::ColumnFamilyHandle* content_cf = nullptr;

  // The near-duplicate index over every fingerprint record, rebuilt from
  // them at Open (it is not persisted on its own). Thread-safe itself.
  std::unique_ptr<SimHashIndex> index;
  // The next doc id to hand out: one more than the largest fingerprint key
  // at Open, then incremented per new text (a failed write leaves a gap).
  std::atomic<uint64_t> next_doc_id{0};

  // The content meta record this build writes and accepts.
  fmt::ContentMeta WantedContentMeta() const {
    fmt::ContentMeta m;
    m.text_normalizer_version = options.text_normalizer_version;
    m.simhash_version = options.simhash_version;
    m.shingle_words = options.simhash_shingle_words;
    m.simhash_seed = options.simhash_seed;
    return m;
  }
  // Checks an existing store's content meta record against this build's.
  absl::Status CheckContentMeta(rocksdb::DB* db);
  // Scans every fingerprint record into `index` and sets next_doc_id.
  absl::Status LoadFingerprints(rocksdb::DB* db);

  // The chunk layer's index over every chunk text record (05 05),
  // rebuilt at Open like `index`, with the same layout options. Entries
  // are inserted after the WAL write that adds their records and removed
  // after the one that deletes them, so it may briefly name a text that
  // is not (or no longer) in a reader's snapshot: ChunkReader skips those.
  std::unique_ptr<SimHashIndex> chunk_index;
  // The next chunk text id: one more than the largest chunk text record
  // key at Open, then incremented per new text (a failed write leaves a
  // gap).
  std::atomic<uint64_t> next_text_id{0};
  // SHA-256 -> text id of every chunk text record, updated with
  // `chunk_index` (after the write, with the texts' claim locks held).
  ChunkTextIds chunk_text_ids;
  // Scans every chunk text record into `chunk_index` and
  // `chunk_text_ids` and sets next_text_id.
  absl::Status LoadChunkTexts(rocksdb::DB* db);
  // Converts the chunk text records of storage formats 2 and 3 (keyed by
  // SHA-256, each with a fingerprint record) to text records by id, in
  // batches; a store without any is left alone after one seek. Resumable:
  // each batch converts whole texts, and Open runs it again until none is
  // left. Returns how many texts it converted.
  absl::StatusOr<uint64_t> ConvertChunkTextsToIds(rocksdb::DB* db);

  // Hands out the next id of `next` (next_doc_id or next_text_id): ids are
  // uint32 index ids, so ResourceExhausted, naming `what` and `action`,
  // once 2^32 are used up.
  absl::StatusOr<uint32_t> AllocateIndexId(std::atomic<uint64_t>* next,
                                           absl::string_view action,
                                           absl::string_view what) const {
    const uint64_t id = next->fetch_add(1);
    if (id > std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError(absl::StrCat(
          action, " at ", options.path, ": the store handed out 2^32 ", what,
          " ids, the most one store can"));
    }
    return static_cast<uint32_t>(id);
  }

  // Scans the content family's records of [first, end) once, in key order,
  // without filling the block cache (a pass at Open), into `into`: `decode`
  // turns a record into its index entry (and may note more of it). Returns
  // one more than the largest id (0 when there is none); a decode error
  // becomes DataLoss naming `action` and the store.
  absl::StatusOr<uint64_t> LoadIndex(
      rocksdb::DB* db, absl::string_view action, const std::string& first,
      const std::string& end,
      const std::function<absl::StatusOr<SimHashIndex::Entry>(
          absl::string_view key, absl::string_view value)>& decode,
      SimHashIndex* into);
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
  if (content_cf != nullptr) {
    // Handles must go before the database closes.
    result = FromRocksDbStatus(db->DestroyColumnFamilyHandle(content_cf),
                               "close store", options.path);
    content_cf = nullptr;
  }
  if (sync_wal && result.ok()) {
    result = FromRocksDbStatus(db->SyncWAL(), "sync WAL of store", options.path);
  }
  absl::Status closed = FromRocksDbStatus(db->Close(), "close store", options.path);
  if (result.ok()) result = closed;
  return result;
}

uint64_t RocksDbStore::Impl::MemtableBytes(rocksdb::DB* db) const {
  std::vector<rocksdb::ColumnFamilyHandle*> families = {db->DefaultColumnFamily()};
  if (content_cf != nullptr) families.push_back(content_cf);
  uint64_t total = 0;
  for (rocksdb::ColumnFamilyHandle* cf : families) {
    uint64_t bytes = 0;
    if (db->GetIntProperty(cf, "rocksdb.cur-size-all-mem-tables", &bytes)) total += bytes;
  }
  return total;
}

bool RocksDbStore::Impl::FreeBytes(uint64_t* free_bytes) const {
  struct statvfs st {};
  if (::statvfs(options.path.c_str(), &st) != 0) return false;
  *free_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  return true;
}

bool RocksDbStore::Impl::AllMemtablesEmpty(rocksdb::DB* db) const {
  std::vector<rocksdb::ColumnFamilyHandle*> families = {db->DefaultColumnFamily()};
  if (content_cf != nullptr) families.push_back(content_cf);
  for (rocksdb::ColumnFamilyHandle* cf : families) {
    uint64_t entries = 0;
    if (!db->GetIntProperty(cf, "rocksdb.num-entries-active-mem-table", &entries) ||
        entries != 0) {
      return false;  // unknown counts as "not empty": Resume as usual
    }
  }
  return true;
}

absl::Status RocksDbStore::Impl::StopCause(const rocksdb::Status& error,
                                           absl::string_view action) const {
  return FromRocksDbStatus(error.ok() ? rocksdb::Status::IOError("writes are stopped") : error,
                           action, options.path);
}

absl::Status RocksDbStore::Impl::StoppedError(const rocksdb::Status& error,
                                              absl::string_view action,
                                              bool needs_reopen) const {
  const absl::Status base = StopCause(error, action);
  if (needs_reopen) {
    return absl::Status(
        base.code(),
        absl::StrCat(base.message(),
                     " (the store stopped taking writes after this error; reads still "
                     "work; this failure needs a restart to clear (the failed "
                     "write-ahead log cannot be replaced in place): fix the cause",
                     error.IsNoSpace() ? " (free disk space)" : "",
                     ", then restart dedupd)"));
  }
  return absl::Status(
      base.code(),
      absl::StrCat(base.message(), " (the store stopped taking writes after this "
                   "error; reads still work; writes resume by themselves once the "
                   "cause is fixed",
                   error.IsNoSpace() ? ": free disk space" : "",
                   "; recovery is tried every ",
                   absl::FormatDuration(options.write_resume_interval), ")"));
}

absl::Status RocksDbStore::Impl::WriteFailed(const rocksdb::Status& s,
                                             absl::string_view action) {
  {
    absl::MutexLock lock(&write_stop->mu);
    if (write_stop->stopped) return StoppedError(s, action, write_stop->needs_reopen);
  }
  return FromRocksDbStatus(s, action, options.path);
}

absl::Status RocksDbStore::Impl::BeforeWrite(rocksdb::DB* db,
                                             absl::string_view action) {
  WriteStop& st = *write_stop;
  uint64_t generation = 0;
  bool log_failed = false;
  {
    absl::MutexLock lock(&st.mu);
    if (!st.stopped) return absl::OkStatus();
    const absl::Time now = absl::Now();
    if (st.needs_reopen || st.resuming ||
        now - st.last_resume < options.write_resume_interval) {
      return StoppedError(st.error, action, st.needs_reopen);
    }
    st.resuming = true;
    st.last_resume = now;
    generation = st.generation;
    log_failed = st.log_failed;
  }
  // RocksDB 7.8's Resume replaces the write-ahead-log writer only by
  // switching memtables, which it does only for a memtable that holds
  // something. After a failed log write with every memtable empty (the
  // first write after Open or after a flush failed), Resume "succeeds",
  // keeps the failed writer, and the next write trips an assertion of this
  // RocksDB build (the process aborts; a build without assertions fails
  // every later write instead; facebook/rocksdb#11643). Then writes stay
  // stopped until the store is reopened (a restart), reads go on.
  if (log_failed && AllMemtablesEmpty(db)) {
    absl::MutexLock lock(&st.mu);
    st.resuming = false;
    st.needs_reopen = true;
    return StoppedError(st.error, action, /*needs_reopen=*/true);
  }
  // Resume flushes the memtables. On a disk without room for that, the
  // flush fails and rolls its memtable back, and a later Resume can then
  // wait forever for that memtable's flush (RocksDB 7.8; seen in
  // rocksdb_full_disk_test). So after a NoSpace error, Resume only once
  // the volume has room for every memtable plus a margin.
  {
    bool no_space = false;
    {
      absl::MutexLock lock(&st.mu);
      no_space = st.error.IsNoSpace();
    }
    uint64_t free_bytes = 0;
    const bool known = FreeBytes(&free_bytes);
    const uint64_t need = MemtableBytes(db) + kResumeMarginBytes;
    if (no_space && known && free_bytes < need) {
      absl::MutexLock lock(&st.mu);
      st.resuming = false;
      const absl::Status stopped = StoppedError(st.error, action, st.needs_reopen);
      return absl::Status(stopped.code(),
                          absl::StrCat(stopped.message(), "; waiting for ", need,
                                       " bytes free, ", free_bytes, " now"));
    }
  }
  // Without st.mu: RocksDB calls the listener (which takes it) from Resume.
  const rocksdb::Status resumed = db->Resume();
  absl::MutexLock lock(&st.mu);
  st.resuming = false;
  if (resumed.ok() && st.generation == generation) {
    st.stopped = false;
    st.log_failed = false;
    st.error = rocksdb::Status::OK();
  }
  if (!st.stopped) return absl::OkStatus();
  // A failed flush during Resume records its own error through the
  // listener; Busy (RocksDB's own recovery runs) leaves the first one.
  if (!resumed.ok() && !resumed.IsBusy() && st.generation == generation) {
    st.error = resumed;
  }
  return StoppedError(st.error, action, st.needs_reopen);
}

bool RocksDbStore::Impl::TryResume(rocksdb::DB* db) {
  {
    absl::MutexLock lock(&write_stop->mu);
    if (!write_stop->stopped) return true;
    write_stop->last_resume = absl::InfinitePast();
  }
  return BeforeWrite(db, "resume writes").ok();
}

RocksDbStore::RocksDbStore(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

absl::Status RocksDbStore::write_status() const {
  absl::MutexLock lock(&impl_->write_stop->mu);
  if (!impl_->write_stop->stopped) return absl::OkStatus();
  return impl_->StoppedError(impl_->write_stop->error, "write to store",
                             impl_->write_stop->needs_reopen);
}

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

  // The content layer's records live in their own column family, so that
  // the default one (meta + URL records) keeps exact per-layer counts. A
  // new store gets it after its meta record is written; a store that has
  // a meta record must have it already.
  auto write_stop = std::make_shared<WriteStop>();
  const rocksdb::Options db_options = MakeDbOptions(options, write_stop);
  std::vector<std::string> families;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(db_options, path, &families);
  // No database there yet is the one expected failure (DB::Open then creates
  // it or reports it missing); any other is the store's problem to report.
  std::error_code ec;
  if (!s.ok() && std::filesystem::exists(path + "/CURRENT", ec)) {
    return FromRocksDbStatus(s, kOpen, path);
  }
  const bool has_content_family =
      s.ok() && std::find(families.begin(), families.end(),
                          kContentColumnFamily) != families.end();
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors = {
      {rocksdb::kDefaultColumnFamilyName, UrlFamilyOptions(db_options, options)}};
  if (has_content_family) {
    descriptors.push_back(
        {kContentColumnFamily, rocksdb::ColumnFamilyOptions(db_options)});
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw_db = nullptr;
  s = rocksdb::DB::Open(rocksdb::DBOptions(db_options), path, descriptors,
                        &handles, &raw_db);
  if (!s.ok()) return FromRocksDbStatus(s, kOpen, path);
  std::unique_ptr<rocksdb::DB> db(raw_db);

  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->write_stop = std::move(write_stop);
  impl->write_options.sync = options.sync_writes;
  impl->write_options.disableWAL = false;
  // Each batch keeps its last skip-list position per memtable ("splice")
  // from key to key while inserting concurrently, instead of searching
  // from the top for every key. A claim's URL keys are sorted
  // (SortedBatch), so the next key's search starts near the last one: on
  // 5 alternated pairs of 2,000,000 claims the server's CPU per URL went
  // from 8.09 to 7.18 us (medians; docs/benchmarks.md, "Memtable
  // inserts"). Ignored without concurrent memtable writes, and by the
  // URL family's hash memtables (--url_memtable=hash, the default): it
  // serves the content family and --url_memtable=skiplist.
  impl->write_options.memtable_insert_hint_per_batch = true;
  if (has_content_family) impl->content_cf = handles[1];

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

  // The default family is reached through db->DefaultColumnFamily().
  s = db->DestroyColumnFamilyHandle(handles[0]);
  if (!s.ok()) return fail(FromRocksDbStatus(s, kOpen, path));

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
    if (impl->content_cf == nullptr) {
      s = db->CreateColumnFamily(rocksdb::ColumnFamilyOptions(db_options),
                                 kContentColumnFamily, &impl->content_cf);
      if (!s.ok()) return fail(FromRocksDbStatus(s, kOpen, path));
    }
    rocksdb::WriteBatch metas;
    s = metas.Put(impl->content_cf, fmt::EncodeContentMetaKey(),
                  fmt::EncodeContentMeta(impl->WantedContentMeta()));
    // The meta record last in the batch, and the batch atomic: a store with
    // a meta record always has its content meta record too.
    if (s.ok()) s = metas.Put(meta_key, fmt::EncodeMeta(meta));
    if (s.ok()) s = db->Write(sync_write, &metas);
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
    if (*version < fmt::kOldestUpgradableFormatVersion ||
        *version > fmt::kStorageFormatVersion) {
      return fail(absl::FailedPreconditionError(absl::StrCat(
          "store at ", path, " was written with storage format version ",
          *version, ", this build reads versions ", fmt::kOldestUpgradableFormatVersion,
          " to ", fmt::kStorageFormatVersion,
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
    if (absl::Status c = impl->CheckContentMeta(db.get()); !c.ok()) {
      return fail(c);
    }
    if (meta->format_version < fmt::kStorageFormatVersion) {
      // Formats 2 and 3 differ from 4 only in the chunk text records, which
      // ConvertChunkTextsToIds rewrites below. The version goes first (and
      // durably), so that older builds, which cannot read a half-converted
      // store, refuse it from now on.
      fmt::StoreMeta upgraded = *meta;
      upgraded.format_version = fmt::kStorageFormatVersion;
      rocksdb::WriteOptions sync_write;
      sync_write.sync = true;
      s = db->Put(sync_write, meta_key, fmt::EncodeMeta(upgraded));
      if (!s.ok()) return fail(FromRocksDbStatus(s, kOpen, path));
    }
  }
  impl->index = std::make_unique<SimHashIndex>(options.simhash_max_distance,
                                               options.simhash_index_blocks);
  if (absl::Status l = impl->LoadFingerprints(db.get()); !l.ok()) {
    return fail(l);
  }
  impl->chunk_index = std::make_unique<SimHashIndex>(options.simhash_max_distance,
                                                     options.simhash_index_blocks);
  if (absl::StatusOr<uint64_t> c = impl->ConvertChunkTextsToIds(db.get()); !c.ok()) {
    return fail(c.status());
  }
  if (absl::Status l = impl->LoadChunkTexts(db.get()); !l.ok()) {
    return fail(l);
  }

  uint64_t store_tag = 0;
  {
    absl::MutexLock lock(&impl->mu);
    store_tag = db->GetLatestSequenceNumber();
    impl->db = std::move(db);
  }
  // After `db` is published: a rebuild scans through it.
  Impl* const raw = impl.get();
  impl->url_front = std::make_unique<UrlFilterFront>(
      options.url_filter,
      [raw](const std::function<void(absl::string_view)>& emit,
            const std::atomic<bool>& cancel) { return raw->ScanUrlKeys(emit, cancel); },
      (std::filesystem::path(path) / kUrlFilterFileName).string());
  impl->url_front->Start(store_tag);
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

  std::vector<uint64_t> hashes(n);
  std::vector<bool> hashed(n, false);

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  // 1. Read every key the URL filter may contain, without any claim lock
  //    (the others were never stored: no read). Records are never
  //    overwritten, so a key found here is SEEN with its final first-seen
  //    time; hits (re-crawled outlinks) then cost no serialized time, and
  //    their block reads run in parallel. Only Forget deletes a URL record,
  //    under the key's claim lock: a claim that found the key before the
  //    delete is ordered before that Forget (it answers SEEN as the store
  //    was when it read), one that did not finds it absent and claims it.
  {
    const std::vector<size_t> read =
        impl_->KeysToRead(batch, batch.all, &hashes, &hashed);
    DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, read, kAction, &stored));
  }
  std::vector<size_t> absent;
  for (size_t u = 0; u < n; ++u) {
    if (!stored[u].has_value()) absent.push_back(u);
  }
  if (!absent.empty()) {
    // 2. With the absent keys locked, look again (a claim that finished
    //    since step 1 may have recorded some): through a fresh view of the
    //    filter, which holds every key recorded by a claim that released
    //    its locks, and the store for the keys it may contain. Record the
    //    rest in one WriteBatch, answer only after the WAL write, and hand
    //    the new keys to the filter before the locks are released.
    std::vector<absl::string_view> locked;
    locked.reserve(absent.size());
    for (size_t u : absent) locked.push_back(batch.unique_keys[u]);
    const Impl::KeyLocks locks(impl_.get(), std::move(locked));
    const std::vector<size_t> read =
        impl_->KeysToRead(batch, absent, &hashes, &hashed);
    DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, read, kAction, &stored));
    rocksdb::WriteBatch write_batch;
    std::vector<uint64_t> new_hashes;
    for (size_t u : absent) {
      if (stored[u].has_value()) continue;
      rocksdb::Status s = write_batch.Put(batch.unique_keys[u], new_value);
      if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
      recorded[u] = true;
    }
    if (write_batch.Count() > 0) {
      // Returns after the WAL write (and fsync when sync_writes): only then
      // may any key be answered new.
      DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kAction));
      rocksdb::Status s = db->Write(impl_->write_options, &write_batch);
      if (!s.ok()) return impl_->WriteFailed(s, kAction);
      new_hashes.reserve(write_batch.Count());
      for (size_t u : absent) {
        if (!recorded[u]) continue;
        if (!hashed[u]) hashes[u] = UrlFilterFront::KeyHash(batch.unique_keys[u]);
        new_hashes.push_back(hashes[u]);
      }
      impl_->url_front->Inserted(new_hashes);
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

absl::Status RocksDbStore::Impl::CheckContentMeta(rocksdb::DB* db) {
  const std::string& path = options.path;
  std::string value;
  if (content_cf == nullptr) {
    return absl::DataLossError(absl::StrCat(
        "store at ", path, " has no \"", kContentColumnFamily,
        "\" column family, which every format-2 store has: the store is damaged"));
  }
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), content_cf,
                              fmt::EncodeContentMetaKey(), &value);
  if (s.IsNotFound()) {
    return absl::DataLossError(absl::StrCat(
        "store at ", path, " has no content meta record (key 00 01), which "
        "every format-2 store has: the store is damaged"));
  }
  if (!s.ok()) return FromRocksDbStatus(s, "open store", path);
  absl::StatusOr<fmt::ContentMeta> have = fmt::DecodeContentMeta(value);
  if (!have.ok()) {
    return absl::DataLossError(
        absl::StrCat("store at ", path, ": ", have.status().message()));
  }
  const fmt::ContentMeta want = WantedContentMeta();
  if (*have == want) return absl::OkStatus();
  // Only the shingle size is a setting of this build; the versions and the
  // seed are fixed by the code that wrote the store.
  fmt::ContentMeta same_shingles = *have;
  same_shingles.shingle_words = want.shingle_words;
  const bool only_shingles_differ = same_shingles == want;
  return absl::FailedPreconditionError(absl::StrCat(
      "store at ", path, " was written with text normalizer version ",
      have->text_normalizer_version, ", SimHash version ",
      have->simhash_version, ", ", have->shingle_words,
      "-word shingles and SimHash seed ", have->simhash_seed,
      "; this server uses ", want.text_normalizer_version, ", ",
      want.simhash_version, ", ", want.shingle_words, " and ",
      want.simhash_seed, ": content hashes and fingerprints would not match (",
      only_shingles_differ
          ? "set --simhash_shingle_words to the store's value, or rebuild the store"
          : "serve it with the dedupd release that wrote it, or rebuild the store "
            "from the source documents",
      ")"));
}

absl::StatusOr<uint64_t> RocksDbStore::Impl::LoadIndex(
    rocksdb::DB* db, absl::string_view action, const std::string& first,
    const std::string& end,
    const std::function<absl::StatusOr<SimHashIndex::Entry>(absl::string_view,
                                                            absl::string_view)>& decode,
    SimHashIndex* into) {
  rocksdb::ReadOptions read;
  read.fill_cache = false;  // one sequential pass; keep the cache for claims
  read.readahead_size = 4 << 20;
  rocksdb::Slice upper(end);
  read.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, content_cf));
  std::vector<SimHashIndex::Entry> entries;
  uint64_t next = 0;
  for (it->Seek(first); it->Valid(); it->Next()) {
    absl::StatusOr<SimHashIndex::Entry> e =
        decode(absl::string_view(it->key().data(), it->key().size()),
               absl::string_view(it->value().data(), it->value().size()));
    if (!e.ok()) {
      return absl::DataLossError(
          absl::StrCat(action, " at ", options.path, ": ", e.status().message()));
    }
    entries.push_back(*e);
    next = uint64_t{e->id} + 1;  // keys ascend
  }
  if (!it->status().ok()) {
    return FromRocksDbStatus(it->status(), action, options.path);
  }
  into->BulkInsert(entries);
  return next;
}

absl::Status RocksDbStore::Impl::LoadFingerprints(rocksdb::DB* db) {
  DEDUPD_ASSIGN_OR_RETURN(
      uint64_t next,
      LoadIndex(db, "load fingerprints of store", std::string(1, fmt::kTagFingerprint),
                std::string(1, static_cast<char>(fmt::kTagFingerprint + 1)),
                [](absl::string_view key,
                   absl::string_view value) -> absl::StatusOr<SimHashIndex::Entry> {
                  DEDUPD_ASSIGN_OR_RETURN(uint32_t id, fmt::DecodeFingerprintKey(key));
                  DEDUPD_ASSIGN_OR_RETURN(fmt::FingerprintValue v,
                                          fmt::DecodeFingerprintValue(value));
                  return SimHashIndex::Entry{v.simhash, id};
                },
                index.get()));
  next_doc_id.store(next);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RocksDbStore::Impl::ConvertChunkTextsToIds(rocksdb::DB* db) {
  constexpr absl::string_view kConvert = "convert chunk texts of store";
  auto damaged = [&](absl::string_view what, const absl::Status& why) {
    return absl::DataLossError(
        absl::StrCat(kConvert, " at ", options.path, ": ", what, ": ", why.message()));
  };
  const std::string begin = fmt::ChunkTextKeysBegin();
  const std::string end = fmt::ChunkTextKeysEnd();
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  read.readahead_size = 4 << 20;
  rocksdb::Slice upper(end);
  read.iterate_upper_bound = &upper;
  // Iterators read the state at their creation: the deletes below do not
  // disturb the pass.
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, content_cf));
  it->Seek(begin);
  if (!it->Valid()) {
    if (!it->status().ok()) return FromRocksDbStatus(it->status(), kConvert, options.path);
    return uint64_t{0};
  }
  constexpr size_t kTextsPerBatch = 10000;
  rocksdb::WriteOptions write;
  write.sync = true;  // a handful of batches per million texts
  rocksdb::WriteBatch batch;
  size_t in_batch = 0;
  uint64_t converted = 0;
  rocksdb::Status s;
  for (; it->Valid(); it->Next()) {
    const absl::string_view key(it->key().data(), it->key().size());
    if (key.size() != 2 + 32) {
      return damaged(absl::StrCat("chunk text key of ", key.size(), " bytes"),
                     absl::DataLossError("not 05 02 + SHA-256"));
    }
    Sha256Digest sha{};
    std::memcpy(sha.data(), key.data() + 2, sha.size());
    absl::StatusOr<fmt::ChunkTextValue> v = fmt::DecodeChunkTextValue(
        absl::string_view(it->value().data(), it->value().size()));
    if (!v.ok()) return damaged("chunk text record of " + Sha256Hex(sha), v.status());
    fmt::ChunkTextByIdValue out{sha, v->simhash, v->holders, v->owner_added,
                                v->owner_url, v->owner_chunk_id};
    if (!v->has_owner) {
      // Format 2: every holder has a record; the oldest becomes the owner.
      const std::string prefix = fmt::EncodeChunkHolderPrefix(sha);
      std::unique_ptr<rocksdb::Iterator> h(db->NewIterator(rocksdb::ReadOptions(), content_cf));
      h->Seek(prefix);
      if (!h->Valid() || !h->key().starts_with(prefix)) {
        if (!h->status().ok()) return FromRocksDbStatus(h->status(), kConvert, options.path);
        return damaged("chunk text " + Sha256Hex(sha),
                       absl::DataLossError("a format-2 text record without holder records"));
      }
      const absl::string_view hk(h->key().data(), h->key().size());
      absl::StatusOr<fmt::ChunkHolderKey> owner = fmt::DecodeChunkHolderKey(hk);
      if (!owner.ok()) return damaged("chunk holder of " + Sha256Hex(sha), owner.status());
      out.owner_added = owner->added;
      out.owner_url = std::move(owner->document_url);
      out.owner_chunk_id = std::move(owner->chunk_id);
      if (s.ok()) s = batch.Delete(content_cf, h->key());
    }
    if (s.ok()) s = batch.Delete(content_cf, it->key());
    if (s.ok()) s = batch.Delete(content_cf, fmt::EncodeChunkFingerprintKey(v->text_id));
    if (s.ok()) {
      s = batch.Put(content_cf, fmt::EncodeChunkTextByIdKey(v->text_id),
                    fmt::EncodeChunkTextByIdValue(out));
    }
    if (!s.ok()) return FromRocksDbStatus(s, kConvert, options.path);
    ++converted;
    if (++in_batch == kTextsPerBatch) {
      s = db->Write(write, &batch);
      if (!s.ok()) return FromRocksDbStatus(s, kConvert, options.path);
      batch.Clear();
      in_batch = 0;
    }
  }
  if (!it->status().ok()) return FromRocksDbStatus(it->status(), kConvert, options.path);
  if (in_batch > 0) {
    s = db->Write(write, &batch);
    if (!s.ok()) return FromRocksDbStatus(s, kConvert, options.path);
  }
  return converted;
}

absl::Status RocksDbStore::Impl::LoadChunkTexts(rocksdb::DB* db) {
  DEDUPD_ASSIGN_OR_RETURN(
      uint64_t next,
      LoadIndex(db, "load chunk texts of store", fmt::ChunkTextByIdKeysBegin(),
                fmt::ChunkTextByIdKeysEnd(),
                [this](absl::string_view key,
                       absl::string_view value) -> absl::StatusOr<SimHashIndex::Entry> {
                  DEDUPD_ASSIGN_OR_RETURN(uint32_t id, fmt::DecodeChunkTextByIdKey(key));
                  DEDUPD_ASSIGN_OR_RETURN(fmt::ChunkTextByIdValue v,
                                          fmt::DecodeChunkTextByIdValue(value));
                  chunk_text_ids.Insert(v.sha256, id);
                  return SimHashIndex::Entry{v.simhash, id};
                },
                chunk_index.get()));
  next_text_id.store(next);
  return absl::OkStatus();
}

// KeepMatchesInSnapshot keeps the near-duplicate index's matches whose
// fingerprint record is in a reader's snapshot: the index is shared and
// live, so it can name a record deleted by a Forget or written after the
// snapshot, which the call must not see. Records read are cached in
// `fingerprints`; a read error keeps the match and is remembered in
// `failed`, so the reader reports it if the planner asks for that
// fingerprint. `*total` (when non-null) drops by one per match dropped.
template <typename ReadFn>
static std::vector<SimHashIndex::Match> KeepMatchesInSnapshot(
    std::vector<SimHashIndex::Match> matches, ReadFn read_fingerprint,
    absl::flat_hash_map<uint32_t, FingerprintRecord>* fingerprints,
    absl::flat_hash_map<uint32_t, absl::Status>* failed, size_t* total) {
  std::vector<SimHashIndex::Match> kept;
  kept.reserve(matches.size());
  for (const SimHashIndex::Match& m : matches) {
    if (fingerprints->contains(m.id) || failed->contains(m.id)) {
      kept.push_back(m);
      continue;
    }
    absl::StatusOr<std::optional<FingerprintRecord>> fp = read_fingerprint(m.id);
    if (!fp.ok()) {
      failed->emplace(m.id, fp.status());
      kept.push_back(m);
    } else if (fp->has_value()) {
      fingerprints->emplace(m.id, **fp);
      kept.push_back(m);
    } else if (total != nullptr && *total > 0) {
      --*total;
    }
  }
  return kept;
}

// The planner's view of the store: reads of one snapshot, taken after the
// batch's claim locks (when claiming), so it holds every write of the calls
// that held them before. Nothing else writes the locked keys (content,
// fetch and URL records) while the batch runs; the snapshot also keeps the
// records of *other* texts that a near match resolves (fingerprint, content
// record) consistent while Forget deletes texts. The index is not part of
// the snapshot: QueryNear drops the matches whose fingerprint record the
// snapshot lacks (texts written after it, or deleted by a Forget that has
// not updated the index yet), as ChunkReader does.
class RocksDbStore::ContentReader final : public ContentStateReader {
 public:
  ContentReader(Impl* impl, rocksdb::DB* db, const rocksdb::Snapshot* snapshot)
      : impl_(impl), db_(db) {
    read_.snapshot = snapshot;
  }

  absl::StatusOr<std::optional<ContentRecord>> GetContent(
      const Sha256Digest& sha) override {
    std::string value;
    DEDUPD_ASSIGN_OR_RETURN(bool found, Get(fmt::EncodeContentKey(sha), &value));
    if (!found) return std::nullopt;
    absl::StatusOr<fmt::ContentValue> v = fmt::DecodeContentValue(value);
    if (!v.ok()) return Damaged("content record of text " + Sha256Hex(sha), v.status());
    ContentRecord r;
    r.doc_id = v->doc_id;
    r.simhash = v->simhash;
    r.first_seen = v->first_seen;
    r.alias_count = v->alias_count;
    r.owner_url = std::move(v->owner_url);
    return r;
  }
  absl::StatusOr<bool> HasAlias(const Sha256Digest& sha,
                                absl::string_view url) override {
    std::string value;
    return Get(fmt::EncodeAliasKey(sha, url), &value);
  }
  absl::StatusOr<std::vector<std::string>> ListAliases(const Sha256Digest& sha,
                                                       size_t limit) override {
    std::vector<std::string> out;
    const std::string prefix = fmt::EncodeAliasPrefix(sha);
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read_, impl_->content_cf));
    for (it->Seek(prefix); it->Valid() && out.size() < limit; it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      if (!absl::StartsWith(key, prefix)) break;
      absl::StatusOr<absl::string_view> url = fmt::DecodeAliasKeyUrl(key);
      if (!url.ok()) return Damaged("alias list of text " + Sha256Hex(sha), url.status());
      out.emplace_back(*url);
    }
    if (!it->status().ok()) {
      return FromRocksDbStatus(it->status(), kAction, impl_->options.path);
    }
    return out;
  }
  absl::StatusOr<std::optional<FetchRecord>> GetFetch(
      absl::string_view url) override {
    std::string value;
    DEDUPD_ASSIGN_OR_RETURN(bool found, Get(fmt::EncodeFetchKey(url), &value));
    if (!found) return std::nullopt;
    absl::StatusOr<fmt::FetchValue> v = fmt::DecodeFetchValue(value);
    if (!v.ok()) {
      return Damaged(absl::StrCat("fetch record of \"", PrintableKey(url), "\""),
                     v.status());
    }
    return FetchRecord{v->sha256, v->first_fetch, v->hash_since};
  }
  absl::StatusOr<bool> HasUrl(absl::string_view url) override {
    std::string value;
    return Get(fmt::EncodeUrlKey(url), &value, /*urls=*/true);
  }
  std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance,
                                             size_t limit, size_t* total) override {
    return KeepMatchesInSnapshot(
        impl_->index->Query(simhash, max_distance, limit, total),
        [this](uint32_t id) { return ReadFingerprint(id); }, &fingerprints_, &failed_, total);
  }
  absl::StatusOr<FingerprintRecord> GetFingerprint(uint32_t doc_id) override {
    if (auto it = fingerprints_.find(doc_id); it != fingerprints_.end()) {
      return it->second;
    }
    if (auto it = failed_.find(doc_id); it != failed_.end()) return it->second;
    DEDUPD_ASSIGN_OR_RETURN(std::optional<FingerprintRecord> fp, ReadFingerprint(doc_id));
    if (!fp.has_value()) {
      return absl::DataLossError(absl::StrCat(
          kAction, " at ", impl_->options.path, ": index entry ", doc_id,
          " has no fingerprint record"));
    }
    return *fp;
  }
  absl::StatusOr<uint32_t> AllocateDocId() override {
    return impl_->AllocateIndexId(&impl_->next_doc_id, kAction, "text");
  }

 private:
  static constexpr absl::string_view kAction = "check content in store";

  absl::StatusOr<std::optional<FingerprintRecord>> ReadFingerprint(uint32_t doc_id) {
    std::string value;
    DEDUPD_ASSIGN_OR_RETURN(bool found, Get(fmt::EncodeFingerprintKey(doc_id), &value));
    if (!found) return std::nullopt;
    absl::StatusOr<fmt::FingerprintValue> v = fmt::DecodeFingerprintValue(value);
    if (!v.ok()) return Damaged(absl::StrCat("fingerprint ", doc_id), v.status());
    return FingerprintRecord{v->simhash, v->sha256};
  }
  // Reads `key` from the content column family, or from the default one
  // (URL records) when `urls`.
  absl::StatusOr<bool> Get(const std::string& key, std::string* value,
                           bool urls = false) {
    rocksdb::Status s = db_->Get(
        read_, urls ? db_->DefaultColumnFamily() : impl_->content_cf, key, value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
    return true;
  }
  absl::Status Damaged(absl::string_view what, const absl::Status& why) {
    return absl::DataLossError(absl::StrCat(kAction, " at ", impl_->options.path,
                                            ": ", what, ": ", why.message()));
  }

  Impl* impl_;
  rocksdb::DB* db_;
  rocksdb::ReadOptions read_;
  // Fingerprint records QueryNear resolved, and the ones it failed to read.
  absl::flat_hash_map<uint32_t, FingerprintRecord> fingerprints_;
  absl::flat_hash_map<uint32_t, absl::Status> failed_;
};

absl::Status RocksDbStore::CheckContent(absl::Span<const ContentDoc> docs,
                                        bool claim, const ContentLimits& limits,
                                        absl::Time now,
                                        std::vector<ContentOutcome>* outcomes) {
  constexpr absl::string_view kAction = "check content in store";
  outcomes->clear();
  if (docs.empty()) return absl::OkStatus();
  DEDUPD_RETURN_IF_ERROR(CheckContentDocs(docs, max_near_distance()));

  // The keys a claim reads and writes, locked for the whole batch: the
  // texts' content records (first writer wins, alias counts), the fetched
  // URLs' fetch records, and both URLs' seen-set records (the same locks
  // ClaimUrls takes, so exactly one of a content claim and a URL claim
  // records a URL). Alias records change only under their text's lock.
  std::vector<std::string> keys;
  std::vector<absl::string_view> locked;
  if (claim) {
    keys.reserve(docs.size() * 4);
    for (const ContentDoc& d : docs) {
      keys.push_back(fmt::EncodeContentKey(d.sha256));
      keys.push_back(fmt::EncodeFetchKey(d.fetched_url));
      keys.push_back(fmt::EncodeUrlKey(d.identity_url));
      keys.push_back(fmt::EncodeUrlKey(d.fetched_url));
    }
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    locked.assign(keys.begin(), keys.end());
  }

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  const Impl::KeyLocks locks(impl_.get(), std::move(locked));
  // After the locks: see ContentReader.
  rocksdb::ManagedSnapshot snapshot(db);
  ContentReader reader(impl_.get(), db, snapshot.snapshot());
  ContentPlan plan;
  DEDUPD_RETURN_IF_ERROR(PlanContentBatch(docs, claim, limits, now, &reader, &plan));
  const ContentMutations& m = plan.mutations;
  if (claim && !m.empty()) {
    rocksdb::WriteBatch batch;
    rocksdb::Status s;
    auto put = [&](const std::string& k, const std::string& v) {
      if (s.ok()) s = batch.Put(impl_->content_cf, k, v);
    };
    for (const auto& [sha, r] : m.contents) {
      put(fmt::EncodeContentKey(sha),
          fmt::EncodeContentValue(
              {r.doc_id, r.simhash, r.first_seen, r.alias_count, r.owner_url}));
    }
    for (const ContentMutations::Alias& a : m.aliases) {
      put(fmt::EncodeAliasKey(a.sha256, a.url), fmt::EncodeAliasValue(a.added));
    }
    for (const auto& [url, f] : m.fetches) {
      put(fmt::EncodeFetchKey(url),
          fmt::EncodeFetchValue({f.sha256, f.first_fetch, f.hash_since}));
    }
    for (const auto& [url, t] : m.urls) {
      if (s.ok()) s = batch.Put(fmt::EncodeUrlKey(url), fmt::EncodeUrlValue(t));
    }
    for (const auto& [id, fp] : m.fingerprints) {
      put(fmt::EncodeFingerprintKey(id),
          fmt::EncodeFingerprintValue(fp.simhash, fp.sha256));
    }
    if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
    DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kAction));
    s = db->Write(impl_->write_options, &batch);
    if (!s.ok()) return impl_->WriteFailed(s, kAction);
    // Only after the write: the index never names a text the store lacks.
    for (const auto& [id, fp] : m.fingerprints) impl_->index->Insert(fp.simhash, id);
    // The URL records, to the URL filter while their claim locks are held
    // (as ClaimUrls does).
    if (!m.urls.empty()) {
      std::vector<uint64_t> url_hashes;
      url_hashes.reserve(m.urls.size());
      for (const auto& [url, t] : m.urls) {
        url_hashes.push_back(UrlFilterFront::KeyHash(fmt::EncodeUrlKey(url)));
      }
      impl_->url_front->Inserted(url_hashes);
    }
  }
  *outcomes = std::move(plan.outcomes);
  return absl::OkStatus();
}

// ---- Chunk layer ----

namespace {

// The smallest key greater than every key that starts with `prefix`.
// REQUIRES: some byte of `prefix` is not 0xff (every key starts with a tag
// below 0xff).
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty() && static_cast<uint8_t>(prefix.back()) == 0xff) {
    prefix.pop_back();
  }
  prefix.back() = static_cast<char>(static_cast<uint8_t>(prefix.back()) + 1);
  return prefix;
}

}  // namespace

// The chunk planner's view of the store: reads of one snapshot (or of the
// latest state when `snapshot` is null), so that a text record and its
// holder keys are seen as one claim left them even while other claims
// write. The chunk index and the text id map are not part of the snapshot:
// GetText and QueryNear drop the ids whose text record the snapshot lacks
// (texts written after it, or deleted before it by a claim that has not
// updated the index and map yet), so a text found always resolves.
class RocksDbStore::ChunkReader final : public ChunkStateReader {
 public:
  ChunkReader(Impl* impl, rocksdb::DB* db, const rocksdb::Snapshot* snapshot)
      : impl_(impl), db_(db) {
    read_.snapshot = snapshot;
  }

  absl::StatusOr<std::optional<ChunkManifest>> GetManifest(
      absl::string_view url) override {
    std::string value;
    DEDUPD_ASSIGN_OR_RETURN(bool found, Get(fmt::EncodeChunkManifestKey(url), &value));
    if (!found) return std::nullopt;
    absl::StatusOr<std::vector<fmt::ChunkManifestEntry>> v =
        fmt::DecodeChunkManifestValue(value);
    if (!v.ok()) {
      return Damaged(absl::StrCat("chunk manifest of \"", PrintableKey(url), "\""),
                     v.status());
    }
    ChunkManifest m;
    m.chunks.reserve(v->size());
    for (fmt::ChunkManifestEntry& e : *v) {
      m.chunks.push_back({std::move(e.chunk_id), e.sha256, e.simhash, e.added});
    }
    return m;
  }
  absl::StatusOr<std::optional<ChunkTextRecord>> GetText(const Sha256Digest& sha) override {
    const std::optional<uint32_t> id = impl_->chunk_text_ids.Find(sha);
    if (!id.has_value()) return std::nullopt;
    DEDUPD_ASSIGN_OR_RETURN(std::optional<fmt::ChunkTextByIdValue> v, ReadText(*id));
    // Not in the snapshot (a peek's, older than the claim that wrote it),
    // or another text that shares the digest's first 8 bytes.
    if (!v.has_value() || v->sha256 != sha) return std::nullopt;
    return ChunkTextRecord{*id, v->simhash, v->holders,
                           ChunkHolder{v->owner_added, std::move(v->owner_url),
                                       std::move(v->owner_chunk_id)}};
  }
  absl::StatusOr<std::vector<ChunkHolder>> ListHolders(const Sha256Digest& sha,
                                                       size_t limit) override {
    std::vector<ChunkHolder> out;
    const std::string prefix = fmt::EncodeChunkHolderPrefix(sha);
    // Bounded above, so that a text without holders does not scan on
    // through the (deleted) holders of the texts after it.
    const std::string end = PrefixEnd(prefix);
    const rocksdb::Slice upper(end);
    rocksdb::ReadOptions read = read_;
    read.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(read, impl_->content_cf));
    for (it->Seek(prefix); it->Valid() && out.size() < limit; it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      absl::StatusOr<fmt::ChunkHolderKey> h = fmt::DecodeChunkHolderKey(key);
      absl::Status value = fmt::CheckChunkHolderValue(
          absl::string_view(it->value().data(), it->value().size()));
      if (!h.ok() || !value.ok() || h->sha256 != sha) {
        return Damaged(absl::StrCat("chunk holder ", out.size(), " of ", Sha256Hex(sha)),
                       !h.ok() ? h.status()
                       : !value.ok()
                           ? value
                           : absl::DataLossError("its key names another text"));
      }
      out.push_back({h->added, std::move(h->document_url), std::move(h->chunk_id)});
    }
    if (!it->status().ok()) {
      return FromRocksDbStatus(it->status(), kAction, impl_->options.path);
    }
    return out;
  }
  std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance,
                                             size_t limit, size_t* total) override {
    return KeepMatchesInSnapshot(
        impl_->chunk_index->Query(simhash, max_distance, limit, total),
        [this](uint32_t id) { return ReadFingerprint(id); }, &fingerprints_, &failed_, total);
  }
  absl::StatusOr<FingerprintRecord> GetTextFingerprint(uint32_t text_id) override {
    if (auto it = fingerprints_.find(text_id); it != fingerprints_.end()) {
      return it->second;
    }
    if (auto it = failed_.find(text_id); it != failed_.end()) return it->second;
    DEDUPD_ASSIGN_OR_RETURN(std::optional<FingerprintRecord> fp, ReadFingerprint(text_id));
    if (!fp.has_value()) {
      return absl::DataLossError(absl::StrCat(kAction, " at ", impl_->options.path,
                                              ": chunk index entry ", text_id,
                                              " has no chunk text record"));
    }
    return *fp;
  }
  absl::StatusOr<uint32_t> AllocateTextId() override {
    return impl_->AllocateIndexId(&impl_->next_text_id, kAction, "chunk text");
  }

 private:
  static constexpr absl::string_view kAction = "check chunks in store";

  absl::StatusOr<std::optional<fmt::ChunkTextByIdValue>> ReadText(uint32_t text_id) {
    std::string value;
    DEDUPD_ASSIGN_OR_RETURN(bool found, Get(fmt::EncodeChunkTextByIdKey(text_id), &value));
    if (!found) return std::nullopt;
    absl::StatusOr<fmt::ChunkTextByIdValue> v = fmt::DecodeChunkTextByIdValue(value);
    if (!v.ok()) return Damaged(absl::StrCat("chunk text ", text_id), v.status());
    return *std::move(v);
  }
  absl::StatusOr<std::optional<FingerprintRecord>> ReadFingerprint(uint32_t text_id) {
    DEDUPD_ASSIGN_OR_RETURN(std::optional<fmt::ChunkTextByIdValue> v, ReadText(text_id));
    if (!v.has_value()) return std::nullopt;
    return FingerprintRecord{v->simhash, v->sha256};
  }
  absl::StatusOr<bool> Get(const std::string& key, std::string* value) {
    rocksdb::Status s = db_->Get(read_, impl_->content_cf, key, value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
    return true;
  }
  absl::Status Damaged(absl::string_view what, const absl::Status& why) {
    return absl::DataLossError(absl::StrCat(kAction, " at ", impl_->options.path,
                                            ": ", what, ": ", why.message()));
  }

  Impl* impl_;
  rocksdb::DB* db_;
  rocksdb::ReadOptions read_;
  // Fingerprint records QueryNear resolved, and the ones it failed to read.
  absl::flat_hash_map<uint32_t, FingerprintRecord> fingerprints_;
  absl::flat_hash_map<uint32_t, absl::Status> failed_;
};

rocksdb::Status RocksDbStore::Impl::AddChunkMutations(const ChunkMutations& m,
                                                      const std::string& doc_key,
                                                      rocksdb::WriteBatch* batch) const {
  rocksdb::Status s;
  rocksdb::ColumnFamilyHandle* cf = content_cf;
  auto del = [&](const std::string& k) {
    if (s.ok()) s = batch->Delete(cf, k);
  };
  auto put = [&](const std::string& k, const std::string& v) {
    if (s.ok()) s = batch->Put(cf, k, v);
  };
  auto holder_key = [](const Sha256Digest& sha, const ChunkHolder& h) {
    return fmt::EncodeChunkHolderKey({sha, h.added, h.document_url, h.chunk_id});
  };
  // Deletions first, then puts (ChunkMutations' contract; the planner
  // never deletes and puts one key).
  for (const auto& [sha, h] : m.holders_removed) del(holder_key(sha, h));
  for (const auto& [sha, r] : m.texts_deleted) del(fmt::EncodeChunkTextByIdKey(r.text_id));
  if (m.delete_manifest) del(doc_key);
  if (m.manifest.has_value()) {
    std::vector<fmt::ChunkManifestEntry> entries;
    entries.reserve(m.manifest->chunks.size());
    for (const StoredChunk& c : m.manifest->chunks) {
      entries.push_back({c.chunk_id, c.sha256, c.simhash, c.added});
    }
    put(doc_key, fmt::EncodeChunkManifestValue(entries));
  }
  for (const auto& [sha, h] : m.holders_added) {
    put(holder_key(sha, h), fmt::EncodeChunkHolderValue());
  }
  for (const auto& [sha, r] : m.texts_put) {
    // The planner names an owner in every record it writes.
    put(fmt::EncodeChunkTextByIdKey(r.text_id),
        fmt::EncodeChunkTextByIdValue({sha, r.simhash, r.holders, r.owner->added,
                                       r.owner->document_url, r.owner->chunk_id}));
  }
  return s;
}

void RocksDbStore::Impl::ApplyChunkIndex(const ChunkMutations& m) {
  for (const SimHashIndex::Entry& e : m.fingerprints_removed) {
    chunk_index->Remove(e.fingerprint, e.id);
  }
  for (const auto& [sha, r] : m.texts_deleted) chunk_text_ids.Erase(sha, r.text_id);
  for (const auto& [id, fp] : m.fingerprints_added) {
    chunk_text_ids.Insert(fp.sha256, id);
    chunk_index->Insert(fp.simhash, id);
  }
}

absl::Status RocksDbStore::CheckChunks(const ChunkDocument& doc, bool claim,
                                       absl::Time now, ChunkAnswer* answer) {
  constexpr absl::string_view kAction = "check chunks in store";
  *answer = ChunkAnswer{};
  DEDUPD_RETURN_IF_ERROR(CheckChunkDocument(doc, max_near_distance()));
  if (doc.document_url.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        "document_url contains a NUL byte (chunk holder keys end the URL with one)");
  }

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  ChunkPlan plan;
  if (!claim) {
    rocksdb::ManagedSnapshot snapshot(db);
    ChunkReader reader(impl_.get(), db, snapshot.snapshot());
    DEDUPD_RETURN_IF_ERROR(PlanChunkDocument(doc, false, now, &reader, &plan));
    *answer = std::move(plan.answer);
    return absl::OkStatus();
  }

  // Two lock steps: the document's key, then (once its stored manifest
  // says which texts it held) the keys of every text it held or will hold.
  // This cannot deadlock although the second step waits while the first
  // lock is held: a call waits for text locks only while it holds no text
  // lock (it registers all of them at once), and nothing that holds a text
  // lock ever waits for a document lock (the document lock is always taken
  // first). So a call holding text locks never waits, and finishes. The
  // manifest read between the steps is stable: only a claim holding the
  // document's lock writes it.
  const std::string doc_key = fmt::EncodeChunkManifestKey(doc.document_url);
  const Impl::KeyLocks doc_lock(impl_.get(), {absl::string_view(doc_key)});
  std::optional<ChunkManifest> stored;
  {
    ChunkReader latest(impl_.get(), db, /*snapshot=*/nullptr);
    DEDUPD_ASSIGN_OR_RETURN(stored, latest.GetManifest(doc.document_url));
  }
  std::vector<std::string> text_keys;
  for (const Sha256Digest& sha : ChunkLockShas(doc, stored)) {
    text_keys.push_back(fmt::EncodeChunkTextKey(sha));
  }
  const Impl::KeyLocks text_locks(
      impl_.get(), std::vector<absl::string_view>(text_keys.begin(), text_keys.end()));
  // Taken after the locks: it holds every write of the claims that held
  // them before (they wrote before unlocking), and nothing writes the
  // locked texts' records, holders or this manifest until we unlock.
  rocksdb::ManagedSnapshot snapshot(db);
  ChunkReader reader(impl_.get(), db, snapshot.snapshot());
  DEDUPD_RETURN_IF_ERROR(PlanChunkDocument(doc, true, now, &reader, &plan));
  const ChunkMutations& m = plan.mutations;
  if (!m.empty()) {
    rocksdb::WriteBatch batch;
    rocksdb::Status s = impl_->AddChunkMutations(m, doc_key, &batch);
    if (!s.ok()) return FromRocksDbStatus(s, kAction, impl_->options.path);
    DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kAction));
    s = db->Write(impl_->write_options, &batch);
    if (!s.ok()) return impl_->WriteFailed(s, kAction);
    impl_->ApplyChunkIndex(m);
  }
  *answer = std::move(plan.answer);
  return absl::OkStatus();
}

// ---- Forget ----

absl::StatusOr<ForgetResult> RocksDbStore::Forget(const std::string& normalized_url,
                                                  absl::Time now) {
  constexpr absl::string_view kAction = "forget URL in store";
  const std::string& url = normalized_url;
  if (url.empty()) {
    return absl::InvalidArgumentError("forget: the URL is empty");
  }
  ForgetResult result;
  const std::string& path = impl_->options.path;
  auto damaged = [&](absl::string_view what, const absl::Status& why) {
    return absl::DataLossError(
        absl::StrCat(kAction, " at ", path, ": ", what, ": ", why.message()));
  };

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  rocksdb::ColumnFamilyHandle* const cf = impl_->content_cf;

  // Step 1: the URL's own keys, as claims lock them (ClaimUrls and
  // CheckContent lock the URL key, CheckContent the fetch key, CheckChunks
  // the manifest key). A text or chunk comes to name the URL (as content
  // owner, alias, fetch, manifest or holder) only through a claim holding
  // one of these, so while they are held no new one appears. (Another
  // Forget may turn this URL from an alias of a text into its owner: the
  // text named it already, and is re-read under its lock below.)
  const std::string url_key = fmt::EncodeUrlKey(url);
  const std::string fetch_key = fmt::EncodeFetchKey(url);
  // A URL with a NUL byte never has chunks (CheckChunks refuses it).
  const bool may_have_chunks = url.find('\0') == std::string::npos;
  const std::string doc_key = fmt::EncodeChunkManifestKey(url);
  std::vector<absl::string_view> own_keys = {url_key, fetch_key};
  if (may_have_chunks) own_keys.push_back(doc_key);
  const Impl::KeyLocks own_locks(impl_.get(), std::move(own_keys));

  // The texts that name the URL, as owner or alias: a scan of the content
  // and alias records (nothing maps a URL to its texts). Taken after the
  // locks, so it holds every claim that named the URL. A text found here
  // may change (another Forget promoting this URL from alias to owner, a
  // claim adding aliases) until its lock is held below: it is re-read then.
  std::vector<Sha256Digest> texts;
  {
    const std::string first(1, fmt::kTagContent);
    const std::string end(1, fmt::kTagFingerprint);  // [02, 04): content, alias
    const rocksdb::Slice upper(end);
    rocksdb::ReadOptions read;
    read.iterate_upper_bound = &upper;
    read.fill_cache = false;  // a one-off pass must not evict the working set
    read.readahead_size = size_t{2} << 20;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, cf));
    constexpr size_t kShaBytes = std::tuple_size<Sha256Digest>::value;
    for (it->Seek(first); it->Valid(); it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      if (key.size() < 1 + kShaBytes) {
        return damaged(absl::StrCat("key ", PrintableKey(key)),
                       absl::DataLossError("shorter than a tag and a SHA-256"));
      }
      bool names_url = false;
      if (key[0] == fmt::kTagContent) {
        absl::StatusOr<fmt::ContentValue> v = fmt::DecodeContentValue(
            absl::string_view(it->value().data(), it->value().size()));
        if (!v.ok()) {
          return damaged(absl::StrCat("content record ", PrintableKey(key)), v.status());
        }
        names_url = v->owner_url == url;
      } else {
        names_url = key.substr(1 + kShaBytes) == url;
      }
      if (names_url) {
        Sha256Digest sha;
        std::copy(key.begin() + 1, key.begin() + 1 + kShaBytes, sha.begin());
        texts.push_back(sha);
      }
    }
    if (!it->status().ok()) return FromRocksDbStatus(it->status(), kAction, path);
  }
  std::sort(texts.begin(), texts.end());
  texts.erase(std::unique(texts.begin(), texts.end()), texts.end());

  // The document's chunks (stable: only a claim holding its manifest lock
  // writes them).
  std::optional<ChunkManifest> manifest;
  if (may_have_chunks) {
    ChunkReader latest(impl_.get(), db, /*snapshot=*/nullptr);
    DEDUPD_ASSIGN_OR_RETURN(manifest, latest.GetManifest(url));
  }
  const ChunkDocument no_chunks{url, {}};

  // Step 2: the texts' keys, all at once (as CheckChunks' second step):
  // a call holding them never waits, so this cannot deadlock.
  std::vector<std::string> text_keys;
  for (const Sha256Digest& sha : texts) text_keys.push_back(fmt::EncodeContentKey(sha));
  if (manifest.has_value()) {
    for (const Sha256Digest& sha : ChunkLockShas(no_chunks, manifest)) {
      text_keys.push_back(fmt::EncodeChunkTextKey(sha));
    }
  }
  const Impl::KeyLocks text_locks(
      impl_.get(), std::vector<absl::string_view>(text_keys.begin(), text_keys.end()));
  // After every lock: nothing writes what is read below until we unlock.
  rocksdb::ManagedSnapshot snapshot(db);
  rocksdb::ReadOptions read;
  read.snapshot = snapshot.snapshot();
  auto get = [&](rocksdb::ColumnFamilyHandle* family, const std::string& key,
                 std::string* value) -> absl::StatusOr<bool> {
    rocksdb::Status s = db->Get(read, family, key, value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) return FromRocksDbStatus(s, kAction, path);
    return true;
  };

  rocksdb::WriteBatch batch;
  rocksdb::Status ws;
  auto del = [&](rocksdb::ColumnFamilyHandle* family, const std::string& k) {
    if (ws.ok()) ws = batch.Delete(family, k);
  };
  auto put = [&](const std::string& k, const std::string& v) {
    if (ws.ok()) ws = batch.Put(cf, k, v);
  };
  std::vector<SimHashIndex::Entry> index_removed;

  std::string value;
  DEDUPD_ASSIGN_OR_RETURN(result.url_found, get(db->DefaultColumnFamily(), url_key, &value));
  if (result.url_found) del(db->DefaultColumnFamily(), url_key);
  DEDUPD_ASSIGN_OR_RETURN(result.fetch_removed, get(cf, fetch_key, &value));
  if (result.fetch_removed) del(cf, fetch_key);

  for (const Sha256Digest& sha : texts) {
    const std::string content_key = fmt::EncodeContentKey(sha);
    DEDUPD_ASSIGN_OR_RETURN(bool found, get(cf, content_key, &value));
    if (!found) continue;  // deleted by another Forget since the scan
    absl::StatusOr<fmt::ContentValue> record = fmt::DecodeContentValue(value);
    if (!record.ok()) {
      return damaged("content record of text " + Sha256Hex(sha), record.status());
    }
    // Every alias of the text, with the time it was added.
    struct Alias {
      absl::Time added;
      std::string url;
    };
    std::vector<Alias> aliases;
    bool url_is_alias = false;
    {
      const std::string prefix = fmt::EncodeAliasPrefix(sha);
      const std::string end = PrefixEnd(prefix);
      const rocksdb::Slice upper(end);
      rocksdb::ReadOptions range = read;
      range.iterate_upper_bound = &upper;
      std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(range, cf));
      for (it->Seek(prefix); it->Valid(); it->Next()) {
        const absl::string_view key(it->key().data(), it->key().size());
        absl::StatusOr<absl::string_view> alias = fmt::DecodeAliasKeyUrl(key);
        absl::StatusOr<absl::Time> added = fmt::DecodeAliasValue(
            absl::string_view(it->value().data(), it->value().size()));
        if (!alias.ok() || !added.ok()) {
          return damaged("alias list of text " + Sha256Hex(sha),
                         !alias.ok() ? alias.status() : added.status());
        }
        if (*alias == url) {
          url_is_alias = true;
        } else {
          aliases.push_back({*added, std::string(*alias)});
        }
      }
      if (!it->status().ok()) return FromRocksDbStatus(it->status(), kAction, path);
    }
    if (url_is_alias) {
      del(cf, fmt::EncodeAliasKey(sha, url));
      ++result.aliases_removed;
    }
    if (record->owner_url != url) {
      if (!url_is_alias) continue;  // a stale scan hit: nothing names the URL now
      record->alias_count = aliases.size();
      put(content_key, fmt::EncodeContentValue(*record));
      continue;
    }
    if (aliases.empty()) {
      del(cf, content_key);
      del(cf, fmt::EncodeFingerprintKey(record->doc_id));
      index_removed.push_back({record->simhash, record->doc_id});
      ++result.contents_removed;
      continue;
    }
    // The oldest alias becomes the owner; ties by URL bytes (the order the
    // alias list is in), so the choice is deterministic.
    auto next = std::min_element(aliases.begin(), aliases.end(),
                                 [](const Alias& a, const Alias& b) {
                                   return a.added != b.added ? a.added < b.added
                                                             : a.url < b.url;
                                 });
    del(cf, fmt::EncodeAliasKey(sha, next->url));
    record->owner_url = next->url;
    record->alias_count = aliases.size() - 1;
    put(content_key, fmt::EncodeContentValue(*record));
    result.contents_promoted.push_back({sha, next->url});
  }

  // The chunks: exactly what a claim of the document with no chunks does.
  ChunkMutations chunk_mutations;
  if (manifest.has_value()) {
    ChunkReader reader(impl_.get(), db, snapshot.snapshot());
    // The owners before, to report the texts whose owner changes.
    std::vector<std::pair<Sha256Digest, size_t>> held;  // sha, chunks of this doc
    for (const StoredChunk& c : manifest->chunks) {
      auto it = std::find_if(held.begin(), held.end(),
                             [&](const auto& h) { return h.first == c.sha256; });
      if (it == held.end()) {
        held.emplace_back(c.sha256, 1);
      } else {
        ++it->second;
      }
    }
    for (const auto& [sha, mine] : held) {
      // This document's holders of the text are at most `mine`, so the
      // first mine + 1 holders name the next owner when there is one.
      DEDUPD_ASSIGN_OR_RETURN(std::optional<ChunkTextRecord> text, reader.GetText(sha));
      if (!text.has_value()) continue;  // the plan below reports the damage
      // Owned by another document (named in the record): no holder scan.
      if (text->owner.has_value() && text->owner->document_url != url) continue;
      DEDUPD_ASSIGN_OR_RETURN(std::vector<ChunkHolder> holders,
                              ListAllHolders(&reader, sha, *text, mine + 1));
      if (holders.empty() || holders.front().document_url != url) continue;
      for (const ChunkHolder& h : holders) {
        if (h.document_url == url) continue;
        result.chunk_owners_promoted.push_back({sha, h.document_url, h.chunk_id});
        break;
      }
    }
    ChunkPlan plan;
    DEDUPD_RETURN_IF_ERROR(PlanChunkDocument(no_chunks, /*claim=*/true, now, &reader, &plan));
    chunk_mutations = std::move(plan.mutations);
    result.chunk_manifest_removed = chunk_mutations.delete_manifest;
    result.chunk_holders_removed = manifest->chunks.size();
    result.chunk_texts_removed = chunk_mutations.texts_deleted.size();
    if (ws.ok()) ws = impl_->AddChunkMutations(chunk_mutations, doc_key, &batch);
  }

  if (!ws.ok()) return FromRocksDbStatus(ws, kAction, path);
  if (batch.Count() == 0) return result;
  // Returns after the WAL write (and fsync with sync_writes).
  DEDUPD_RETURN_IF_ERROR(impl_->BeforeWrite(db, kAction));
  rocksdb::Status s = db->Write(impl_->write_options, &batch);
  if (!s.ok()) return impl_->WriteFailed(s, kAction);
  // Only after the write, as claims do: readers skip index entries whose
  // fingerprint record their snapshot lacks.
  for (const SimHashIndex::Entry& e : index_removed) {
    impl_->index->Remove(e.fingerprint, e.id);
  }
  impl_->ApplyChunkIndex(chunk_mutations);
  return result;
}

// ---- Consistency check ----

absl::StatusOr<ConsistencyReport> RocksDbStore::CheckConsistency() {
  constexpr absl::string_view kAction = "check consistency of store";
  ConsistencyReport report;
  size_t more = 0;
  auto problem = [&](std::string line) {
    if (report.problems.size() < ConsistencyReport::kMaxProblems) {
      report.problems.push_back(std::move(line));
    } else {
      ++more;
    }
  };
  auto hex = [](absl::string_view bytes) { return PrintableKey(bytes); };

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  rocksdb::ManagedSnapshot snapshot(db);
  rocksdb::ReadOptions read;
  read.snapshot = snapshot.snapshot();
  read.fill_cache = false;

  absl::flat_hash_set<std::string> urls;
  {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, db->DefaultColumnFamily()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      if (key == fmt::EncodeMetaKey()) continue;
      absl::StatusOr<absl::string_view> url = fmt::DecodeUrlKey(key);
      absl::StatusOr<absl::Time> t = fmt::DecodeUrlValue(
          absl::string_view(it->value().data(), it->value().size()));
      if (!url.ok() || !t.ok()) {
        problem(absl::StrCat("URL record ", hex(key), ": ",
                             (!url.ok() ? url.status() : t.status()).message()));
        continue;
      }
      urls.emplace(*url);
    }
    if (!it->status().ok()) return FromRocksDbStatus(it->status(), kAction, impl_->options.path);
  }
  report.urls = urls.size();

  absl::flat_hash_map<std::string, fmt::ContentValue> contents;  // by DigestKey
  absl::flat_hash_map<std::string, std::vector<std::string>> aliases;
  absl::flat_hash_map<uint32_t, fmt::FingerprintValue> fingerprints;
  absl::flat_hash_map<std::string, fmt::FetchValue> fetches;
  absl::flat_hash_map<std::string, std::vector<fmt::ChunkManifestEntry>> manifests;
  absl::flat_hash_map<std::string, fmt::ChunkTextByIdValue> chunk_texts;  // by DigestKey
  absl::flat_hash_map<std::string, uint32_t> chunk_text_ids;              // by DigestKey
  std::vector<fmt::ChunkHolderKey> holders;
  // The chunk index's entries as the text records imply them.
  absl::flat_hash_map<uint32_t, fmt::FingerprintValue> chunk_fingerprints;
  constexpr size_t kShaBytes = std::tuple_size<Sha256Digest>::value;
  {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, impl_->content_cf));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      const absl::string_view value(it->value().data(), it->value().size());
      auto bad = [&](absl::string_view what, const absl::Status& why) {
        problem(absl::StrCat(what, " ", hex(key), ": ", why.message()));
      };
      const char tag = key.empty() ? '\xff' : key[0];
      const char sub = key.size() < 2 ? '\xff' : key[1];
      if (key == fmt::EncodeContentMetaKey()) continue;
      if (tag == fmt::kTagContent) {
        absl::StatusOr<fmt::ContentValue> v = fmt::DecodeContentValue(value);
        if (key.size() != 1 + kShaBytes) {
          bad("content record", absl::DataLossError("key is not 02 + SHA-256"));
        } else if (!v.ok()) {
          bad("content record", v.status());
        } else {
          contents.emplace(std::string(key.substr(1)), *std::move(v));
        }
      } else if (tag == fmt::kTagAlias) {
        absl::StatusOr<absl::string_view> url = fmt::DecodeAliasKeyUrl(key);
        absl::StatusOr<absl::Time> added = fmt::DecodeAliasValue(value);
        if (!url.ok() || !added.ok()) {
          bad("alias record", !url.ok() ? url.status() : added.status());
        } else {
          aliases[std::string(key.substr(1, kShaBytes))].emplace_back(*url);
          ++report.aliases;
        }
      } else if (tag == fmt::kTagFingerprint) {
        absl::StatusOr<uint32_t> id = fmt::DecodeFingerprintKey(key);
        absl::StatusOr<fmt::FingerprintValue> v = fmt::DecodeFingerprintValue(value);
        if (!id.ok() || !v.ok()) {
          bad("fingerprint record", !id.ok() ? id.status() : v.status());
        } else {
          fingerprints.emplace(*id, *v);
        }
      } else if (tag == fmt::kTagFetch) {
        absl::StatusOr<fmt::FetchValue> v = fmt::DecodeFetchValue(value);
        if (key.size() < 2 || !v.ok()) {
          bad("fetch record", v.ok() ? absl::DataLossError("no URL") : v.status());
        } else {
          fetches.emplace(std::string(key.substr(1)), *v);
        }
      } else if (tag == fmt::kTagChunk && sub == fmt::kChunkManifest) {
        absl::StatusOr<std::vector<fmt::ChunkManifestEntry>> v =
            fmt::DecodeChunkManifestValue(value);
        if (key.size() < 3 || !v.ok()) {
          bad("chunk manifest", v.ok() ? absl::DataLossError("no URL") : v.status());
        } else {
          manifests.emplace(std::string(key.substr(2)), *std::move(v));
        }
      } else if (tag == fmt::kTagChunk && sub == fmt::kChunkTextById) {
        absl::StatusOr<uint32_t> id = fmt::DecodeChunkTextByIdKey(key);
        absl::StatusOr<fmt::ChunkTextByIdValue> v = fmt::DecodeChunkTextByIdValue(value);
        if (!id.ok() || !v.ok()) {
          bad("chunk text", !id.ok() ? id.status() : v.status());
          continue;
        }
        const std::string sha = DigestKey(v->sha256);
        auto [other, inserted] = chunk_text_ids.emplace(sha, *id);
        if (!inserted) {
          bad("chunk text", absl::DataLossError(absl::StrCat(
                                "text ", Sha256Hex(v->sha256), " also has text id ",
                                other->second)));
          continue;
        }
        chunk_fingerprints.emplace(*id, fmt::FingerprintValue{v->simhash, v->sha256});
        chunk_texts.emplace(sha, *std::move(v));
      } else if (tag == fmt::kTagChunk &&
                 (sub == fmt::kChunkText || sub == fmt::kChunkFingerprint)) {
        // Open converts every one of them to a text record by id.
        bad(sub == fmt::kChunkText ? "chunk text record by SHA-256"
                                   : "chunk fingerprint record",
            absl::DataLossError("a storage format 3 record left after the upgrade"));
      } else if (tag == fmt::kTagChunk && sub == fmt::kChunkHolder) {
        absl::StatusOr<fmt::ChunkHolderKey> h = fmt::DecodeChunkHolderKey(key);
        absl::Status v = fmt::CheckChunkHolderValue(value);
        if (!h.ok() || !v.ok()) {
          bad("chunk holder", !h.ok() ? h.status() : v);
        } else {
          holders.push_back(*std::move(h));
        }
      } else {
        bad("key", absl::DataLossError("no record kind has this tag"));
      }
    }
    if (!it->status().ok()) return FromRocksDbStatus(it->status(), kAction, impl_->options.path);
  }
  report.contents = contents.size();
  report.fingerprints = fingerprints.size();
  report.fetches = fetches.size();
  report.chunk_manifests = manifests.size();
  report.chunk_texts = chunk_texts.size();
  report.chunk_holders = holders.size();

  auto sha_hex = [](absl::string_view digest_key) {
    return absl::BytesToHexString(digest_key);
  };
  // Content layer.
  for (const auto& [sha, c] : contents) {
    const std::string what = absl::StrCat("content ", sha_hex(sha));
    if (!urls.contains(c.owner_url)) {
      problem(absl::StrCat(what, ": owner \"", hex(c.owner_url), "\" has no URL record"));
    }
    auto fp = fingerprints.find(c.doc_id);
    if (fp == fingerprints.end()) {
      problem(absl::StrCat(what, ": no fingerprint record ", c.doc_id));
    } else if (DigestKey(fp->second.sha256) != sha || fp->second.simhash != c.simhash) {
      problem(absl::StrCat(what, ": fingerprint record ", c.doc_id, " names another text"));
    }
    auto a = aliases.find(sha);
    const size_t n = a == aliases.end() ? 0 : a->second.size();
    if (n != c.alias_count) {
      problem(absl::StrCat(what, ": alias count ", c.alias_count, " but ", n,
                           " alias records"));
    }
    if (a != aliases.end() &&
        std::find(a->second.begin(), a->second.end(), c.owner_url) != a->second.end()) {
      problem(absl::StrCat(what, ": owner \"", hex(c.owner_url), "\" is also an alias"));
    }
  }
  for (const auto& [sha, list] : aliases) {
    for (const std::string& url : list) {
      const std::string what = absl::StrCat("alias ", sha_hex(sha), " \"", hex(url), "\"");
      if (!contents.contains(sha)) problem(absl::StrCat(what, ": no content record"));
      if (!urls.contains(url)) problem(absl::StrCat(what, ": no URL record"));
    }
  }
  for (const auto& [id, fp] : fingerprints) {
    auto c = contents.find(DigestKey(fp.sha256));
    if (c == contents.end() || c->second.doc_id != id) {
      problem(absl::StrCat("fingerprint ", id, ": text ", Sha256Hex(fp.sha256),
                           c == contents.end() ? " has no content record"
                                               : " has another doc id"));
    }
    if (id >= impl_->next_doc_id.load()) {
      problem(absl::StrCat("fingerprint ", id, ": not below the next doc id"));
    }
  }
  for (const auto& [url, f] : fetches) {
    const std::string what = absl::StrCat("fetch \"", hex(url), "\"");
    const std::string sha = DigestKey(f.sha256);
    auto c = contents.find(sha);
    if (c == contents.end()) {
      problem(absl::StrCat(what, ": text ", sha_hex(sha), " has no content record"));
      continue;
    }
    auto a = aliases.find(sha);
    const bool alias = a != aliases.end() &&
                       std::find(a->second.begin(), a->second.end(), url) != a->second.end();
    if (c->second.owner_url != url && !alias) {
      problem(absl::StrCat(what, ": neither owner nor alias of text ", sha_hex(sha)));
    }
  }

  // Chunk layer. A text record's owner is a holder without a record: it
  // must sort before every holder record of its text.
  auto digest_of = [](const std::string& key) {
    Sha256Digest d{};
    std::memcpy(d.data(), key.data(), d.size());
    return d;
  };
  absl::flat_hash_map<std::string, std::string> owner_keys;  // by DigestKey
  for (const auto& [sha, t] : chunk_texts) {
    owner_keys.emplace(sha, fmt::EncodeChunkHolderKey(
                                {digest_of(sha), t.owner_added, t.owner_url, t.owner_chunk_id}));
  }
  for (const fmt::ChunkHolderKey& h : holders) {
    auto o = owner_keys.find(DigestKey(h.sha256));
    if (o != owner_keys.end() && fmt::EncodeChunkHolderKey(h) <= o->second) {
      problem(absl::StrCat("chunk holder ", sha_hex(o->first), " \"", hex(h.document_url),
                           "\" ", hex(h.chunk_id),
                           ": a holder record that is not younger than its text's owner"));
    }
  }
  for (const auto& [sha, t] : chunk_texts) {
    holders.push_back({digest_of(sha), t.owner_added, t.owner_url, t.owner_chunk_id});
  }
  report.chunk_holders = holders.size();
  absl::flat_hash_map<std::string, uint64_t> holder_counts;  // by DigestKey
  for (const fmt::ChunkHolderKey& h : holders) {
    const std::string sha = DigestKey(h.sha256);
    ++holder_counts[sha];
    const std::string what = absl::StrCat("chunk holder ", sha_hex(sha), " \"",
                                          hex(h.document_url), "\" ", hex(h.chunk_id));
    if (!chunk_texts.contains(sha)) problem(absl::StrCat(what, ": no text record"));
    auto m = manifests.find(h.document_url);
    const bool listed =
        m != manifests.end() &&
        std::any_of(m->second.begin(), m->second.end(), [&](const fmt::ChunkManifestEntry& e) {
          return e.chunk_id == h.chunk_id && e.sha256 == h.sha256 && e.added == h.added;
        });
    if (!listed) problem(absl::StrCat(what, ": not an entry of its document's manifest"));
  }
  absl::flat_hash_set<std::string> holder_keys;
  for (const fmt::ChunkHolderKey& h : holders) holder_keys.insert(fmt::EncodeChunkHolderKey(h));
  for (const auto& [url, entries] : manifests) {
    for (const fmt::ChunkManifestEntry& e : entries) {
      const std::string what = absl::StrCat("chunk manifest \"", hex(url), "\" entry ",
                                            hex(e.chunk_id));
      if (!holder_keys.contains(fmt::EncodeChunkHolderKey(
              {e.sha256, e.added, url, e.chunk_id}))) {
        problem(absl::StrCat(what, ": no holder record"));
      }
      if (!chunk_texts.contains(DigestKey(e.sha256))) {
        problem(absl::StrCat(what, ": no text record"));
      }
    }
  }
  for (const auto& [sha, t] : chunk_texts) {
    const std::string what = absl::StrCat("chunk text ", sha_hex(sha));
    auto n = holder_counts.find(sha);
    const uint64_t held = n == holder_counts.end() ? 0 : n->second;
    if (held != t.holders) {
      problem(absl::StrCat(what, ": holder count ", t.holders, " but ", held,
                           " holders (owner and holder records)"));
    }
    const uint32_t id = chunk_text_ids.at(sha);
    if (id >= impl_->next_text_id.load()) {
      problem(absl::StrCat(what, ": text id ", id, " is not below the next text id"));
    }
    // The in-memory SHA-256 -> id map names the record (Find's candidate
    // is the text's own id).
    if (impl_->chunk_text_ids.Find(t.sha256) != std::optional<uint32_t>(id)) {
      problem(absl::StrCat(what, ": the in-memory text id map lacks text id ", id));
    }
  }
  if (impl_->chunk_text_ids.size() != chunk_texts.size()) {
    problem(absl::StrCat("the in-memory text id map holds ", impl_->chunk_text_ids.size(),
                         " entries for ", chunk_texts.size(), " chunk text records"));
  }

  // The in-memory indexes hold exactly the fingerprint records: each record
  // is found at distance 0, and the sizes agree (the index is a set).
  auto check_index = [&](absl::string_view name, const SimHashIndex& index,
                         const absl::flat_hash_map<uint32_t, fmt::FingerprintValue>& records) {
    for (const auto& [id, fp] : records) {
      const std::vector<SimHashIndex::Match> same =
          index.Query(fp.simhash, 0, std::numeric_limits<size_t>::max());
      const bool held = std::any_of(same.begin(), same.end(),
                                    [id = id](const SimHashIndex::Match& m) { return m.id == id; });
      if (!held) problem(absl::StrCat(name, " lacks fingerprint record ", id));
    }
    if (index.size() != records.size()) {
      problem(absl::StrCat(name, " holds ", index.size(), " entries for ", records.size(),
                           " fingerprint records"));
    }
  };
  check_index("near-duplicate index", *impl_->index, fingerprints);
  check_index("chunk index", *impl_->chunk_index, chunk_fingerprints);

  if (more > 0) report.problems.push_back(absl::StrCat("... and ", more, " more"));
  return report;
}

RocksDbStore::IndexStats RocksDbStore::chunk_index_stats() const {
  return {impl_->chunk_index->size(), impl_->chunk_index->MemoryBytes(),
          impl_->chunk_text_ids.MemoryBytes()};
}

RocksDbStore::IndexStats RocksDbStore::index_stats() const {
  return {impl_->index->size(), impl_->index->MemoryBytes()};
}

int RocksDbStore::max_near_distance() const {
  return impl_->options.simhash_max_distance;
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

  std::vector<uint64_t> hashes(batch.unique_keys.size());
  std::vector<bool> hashed(batch.unique_keys.size(), false);

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  // Keys the URL filter rules out were never stored: no read.
  const std::vector<size_t> read =
      impl_->KeysToRead(batch, batch.all, &hashes, &hashed);
  DEDUPD_RETURN_IF_ERROR(impl_->MultiGet(db, batch, read, kAction, &stored));
  for (size_t i = 0; i < keys.size(); ++i) {
    (*results)[i] = stored[batch.slot[i]];
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RocksDbStore::DataBlockReads() const {
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb("count block reads"));
  const std::shared_ptr<rocksdb::Statistics> stats = db->GetDBOptions().statistics;
  if (stats == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "count block reads of store at ", impl_->options.path,
        ": opened without collect_statistics"));
  }
  return stats->getTickerCount(rocksdb::BLOCK_CACHE_DATA_MISS);
}

UrlFilterFront::Stats RocksDbStore::url_filter_stats() const {
  return impl_->url_front->stats();
}

bool RocksDbStore::WaitForUrlFilter(absl::Duration timeout) const {
  return impl_->url_front->WaitForRebuild(timeout);
}

absl::Status RocksDbStore::Impl::ScanUrlKeys(
    const std::function<void(absl::string_view)>& emit,
    const std::atomic<bool>& cancel) {
  constexpr absl::string_view kAction = "rebuild the URL filter of store";
  absl::ReaderMutexLock lifecycle(&mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, LiveDb(kAction));
  const std::string first(1, fmt::kTagUrl);
  const std::string end(1, static_cast<char>(fmt::kTagUrl + 1));
  rocksdb::Slice upper(end);
  rocksdb::ReadOptions read;
  read.iterate_upper_bound = &upper;
  read.fill_cache = false;  // a one-off pass must not evict the working set
  read.readahead_size = size_t{2} << 20;
  // The iterator's implicit snapshot is taken here, after the front
  // registered the filter being built (UrlFilterFront's rule).
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read));
  uint64_t n = 0;
  for (it->Seek(first); it->Valid(); it->Next()) {
    const rocksdb::Slice key = it->key();
    emit(absl::string_view(key.data(), key.size()));
    if ((++n & 4095) == 0 && cancel.load(std::memory_order_relaxed)) {
      return absl::CancelledError(absl::StrCat(kAction, " at ", options.path,
                                               ": cancelled by Close"));
    }
  }
  if (!it->status().ok()) {
    return FromRocksDbStatus(it->status(), kAction, options.path);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> RocksDbStore::ApproximateUrlCount() {
  constexpr absl::string_view kAction = "count URLs in store";
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
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
    for (auto [property, value] : {std::pair{entries_property, &entries},
                                   std::pair{deletes_property, &deletes}}) {
      if (!db->GetIntProperty(*property, value)) {
        return absl::InternalError(absl::StrCat(kAction, " at ",
                                                impl_->options.path,
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
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  uint64_t sst_bytes = 0;
  if (!db->GetAggregatedIntProperty(rocksdb::DB::Properties::kLiveSstFilesSize,
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
  // A rebuild scan holds `mu` shared: cancel it before waiting for `mu`.
  if (impl_->url_front != nullptr) impl_->url_front->StopRebuilds();
  std::unique_ptr<rocksdb::DB> db;
  {
    // Exclusive: waits for every call in flight to finish.
    absl::MutexLock lifecycle(&impl_->mu);
    if (impl_->db != nullptr) {
      // Export cursors still open: their snapshots must go before the
      // database (their next call fails with FailedPrecondition).
      absl::MutexLock exports(&impl_->export_mu);
      for (const rocksdb::Snapshot* snapshot : impl_->export_snapshots) {
        impl_->db->ReleaseSnapshot(snapshot);
      }
      impl_->export_snapshots.clear();
    }
    db = std::move(impl_->db);
  }
  if (db == nullptr) return absl::OkStatus();
  // With writes stopped by a background error (a full disk), neither a
  // flush nor a WAL sync may be asked for: a flush request then makes
  // RocksDB's error fatal, and a sync of the failed log writer trips an
  // assertion of this RocksDB build (aborting the process). So one last
  // Resume, and when that fails, close without either: every acknowledged
  // write is in the WAL, which the next Open replays.
  if (!impl_->TryResume(db.get())) {
    rocksdb::Status error;
    {
      absl::MutexLock lock(&impl_->write_stop->mu);
      error = impl_->write_stop->error;
    }
    const absl::Status stopped = impl_->StopCause(error, "close store");
    const absl::Status closed = impl_->CloseDb(db.get(), /*sync_wal=*/false);
    return absl::Status(
        stopped.code(),
        absl::StrCat(stopped.message(),
                     " (writes were stopped by this error: closed without flushing; "
                     "the write-ahead log holds every acknowledged write and the "
                     "next open replays it",
                     closed.ok() ? "" : absl::StrCat("; closing failed too: ", closed.message()),
                     ")"));
  }
  // Flush every column family, so the next Open replays no WAL (replay
  // re-inserts every record into a memtable: seconds per 100 MB). A failed
  // flush loses nothing (the WAL still holds the data), so the close goes
  // on and reports the failure.
  absl::Status flushed;
  {
    rocksdb::FlushOptions flush;
    flush.wait = true;
    std::vector<rocksdb::ColumnFamilyHandle*> families = {db->DefaultColumnFamily()};
    if (impl_->content_cf != nullptr) families.push_back(impl_->content_cf);
    flushed = FromRocksDbStatus(db->Flush(flush, families), "flush store",
                                impl_->options.path);
  }
  // The URL filter, tagged with the store's last sequence number: the next
  // Open uses it only if no write happened since. Its loss costs a rebuild,
  // never a wrong answer, so a failure is logged, not returned.
  if (impl_->url_front != nullptr && flushed.ok()) {
    absl::Status persisted = impl_->url_front->Persist(db->GetLatestSequenceNumber());
    if (!persisted.ok()) {
      std::fprintf(stderr, "dedupd: warning: URL filter not saved (the next start rebuilds it): %s\n",
                   persisted.ToString().c_str());
    }
  }
  // SyncWAL is one fsync; skip it when every write was synced already.
  absl::Status closed =
      impl_->CloseDb(db.get(), /*sync_wal=*/!impl_->options.sync_writes);
  return flushed.ok() ? closed : flushed;
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
  st.created = impl_->created;
  st.content_fingerprints_indexed = impl_->index->size();
  st.chunk_fingerprints_indexed = impl_->chunk_index->size();
  DEDUPD_ASSIGN_OR_RETURN(st.estimated_url_records, ApproximateUrlCount());

  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
  const std::string& path = impl_->options.path;
  auto missing = [&](const std::string& property) {
    return absl::InternalError(absl::StrCat(kAction, " at ", path, ": RocksDB property ",
                                            property, " is unavailable"));
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
  if (!exact) return st;

  // One snapshot for both families, so the counts agree with each other.
  const rocksdb::Snapshot* snapshot = db->GetSnapshot();
  absl::Status scanned;
  for (size_t i = 0; i < st.kinds.size() && scanned.ok(); ++i) {
    StoreStats::RecordKind& kind = st.kinds[i];
    const std::string end = PrefixEnd(kind.key_prefix);
    const rocksdb::Slice upper(end);
    rocksdb::ReadOptions read;
    read.snapshot = snapshot;
    read.iterate_upper_bound = &upper;
    read.fill_cache = false;  // a one-off pass must not evict the working set
    std::unique_ptr<rocksdb::Iterator> it(
        db->NewIterator(read, family(ranges[i].content_family)));
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
  if (std::filesystem::symlink_status(target, ec).type() !=
      std::filesystem::file_type::not_found) {
    return absl::FailedPreconditionError(absl::StrCat(
        "back up store at ", path, ": ", directory,
        " already exists (a backup goes into a new directory; remove it or "
        "choose another)"));
  }
  const std::filesystem::path parent =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  if (!std::filesystem::is_directory(parent, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "back up store at ", path, ": the parent directory ", parent.string(), " of ",
        directory, " does not exist"));
  }
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb("back up store"));
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
      return absl::PermissionDeniedError(
          absl::StrCat(action, " at ", path, ": ", s.ToString()));
    }
    return FromRocksDbStatus(s, action, path);
  }
  return sequence;
}

class RocksDbStore::ExportCursorImpl final : public ExportCursor {
 public:
  ExportCursorImpl(Impl* impl, const rocksdb::Snapshot* snapshot, bool urls,
                   bool content)
      : impl_(impl), snapshot_(snapshot), urls_(urls), content_(content) {
    phase_ = urls_ ? Phase::kUrls : content_ ? Phase::kContent : Phase::kDone;
  }

  ~ExportCursorImpl() override {
    absl::ReaderMutexLock lifecycle(&impl_->mu);
    if (impl_->db == nullptr) return;  // Close released the snapshot
    absl::MutexLock exports(&impl_->export_mu);
    if (impl_->export_snapshots.erase(snapshot_) > 0) {
      impl_->db->ReleaseSnapshot(snapshot_);
    }
  }

  absl::Status Next(size_t max_bytes, std::vector<ExportedRecord>* out,
                    bool* done) override {
    constexpr absl::string_view kAction = "export store";
    absl::ReaderMutexLock lifecycle(&impl_->mu);
    DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb(kAction));
    size_t bytes = 0;
    // Per record: its URL plus a fixed allowance for the other fields.
    auto full = [&] { return bytes >= max_bytes; };
    auto add = [&](ExportedRecord r) {
      bytes += r.url.size() + 64;
      out->push_back(std::move(r));
    };
    while (phase_ != Phase::kDone && !full()) {
      if (phase_ == Phase::kUrls) {
        DEDUPD_RETURN_IF_ERROR(Scan(
            db, db->DefaultColumnFamily(), std::string(1, fmt::kTagUrl), &url_resume_,
            full, [&](absl::string_view key, absl::string_view value) -> absl::Status {
              absl::StatusOr<absl::Time> t = fmt::DecodeUrlValue(value);
              if (!t.ok()) return Damaged("URL", key, t.status());
              ExportedRecord r;
              r.kind = ExportedRecord::Kind::kUrl;
              r.url = std::string(key.substr(1));
              r.time = *t;
              add(std::move(r));
              return absl::OkStatus();
            }));
        if (!full()) phase_ = content_ ? Phase::kContent : Phase::kDone;
        continue;
      }
      if (in_aliases_) {
        DEDUPD_RETURN_IF_ERROR(Scan(
            db, impl_->content_cf, fmt::EncodeAliasPrefix(current_sha_),
            &alias_resume_, full,
            [&](absl::string_view key, absl::string_view value) -> absl::Status {
              absl::StatusOr<absl::string_view> url = fmt::DecodeAliasKeyUrl(key);
              absl::StatusOr<absl::Time> t = fmt::DecodeAliasValue(value);
              if (!url.ok()) return Damaged("alias", key, url.status());
              if (!t.ok()) return Damaged("alias", key, t.status());
              ExportedRecord r;
              r.kind = ExportedRecord::Kind::kAlias;
              r.url = std::string(*url);
              r.time = *t;
              r.sha256 = current_sha_;
              add(std::move(r));
              return absl::OkStatus();
            }));
        if (!full()) in_aliases_ = false;
        continue;
      }
      // The next content record after content_resume_, then its aliases.
      bool found = false;
      auto stop_after_one = [&] { return found; };
      DEDUPD_RETURN_IF_ERROR(Scan(
          db, impl_->content_cf, std::string(1, fmt::kTagContent), &content_resume_,
          stop_after_one,
          [&](absl::string_view key, absl::string_view value) -> absl::Status {
            absl::StatusOr<fmt::ContentValue> v = fmt::DecodeContentValue(value);
            if (!v.ok()) return Damaged("content", key, v.status());
            if (key.size() != 1 + current_sha_.size()) {
              return Damaged("content", key,
                             absl::DataLossError("key is not 02 + 32 bytes"));
            }
            std::copy(key.begin() + 1, key.end(), current_sha_.begin());
            ExportedRecord r;
            r.kind = ExportedRecord::Kind::kContent;
            r.url = v->owner_url;
            r.time = v->first_seen;
            r.sha256 = current_sha_;
            r.simhash = v->simhash;
            r.alias_count = v->alias_count;
            add(std::move(r));
            found = true;
            return absl::OkStatus();
          }));
      if (!found) {
        phase_ = Phase::kDone;
      } else {
        in_aliases_ = true;
        alias_resume_.clear();
      }
    }
    *done = phase_ == Phase::kDone;
    return absl::OkStatus();
  }

 private:
  enum class Phase { kUrls, kContent, kDone };

  absl::Status Damaged(absl::string_view what, absl::string_view key,
                       const absl::Status& cause) const {
    return absl::DataLossError(absl::StrCat("export store at ", impl_->options.path,
                                            ": ", what, " record with key \"",
                                            PrintableKey(key), "\": ", cause.message()));
  }

  // Scan visits the keys of `family` that start with `prefix` and come
  // after `*resume` (all of them when it is empty), in order, from the
  // cursor's snapshot, until `stop()` says so after a visit; `*resume` is
  // left at the last key visited.
  template <typename Stop, typename Visit>
  absl::Status Scan(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
                    const std::string& prefix, std::string* resume, const Stop& stop,
                    const Visit& visit) {
    const std::string end = PrefixEnd(prefix);
    const rocksdb::Slice upper(end);
    rocksdb::ReadOptions read;
    read.snapshot = snapshot_;
    read.iterate_upper_bound = &upper;
    read.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, family));
    if (resume->empty()) {
      it->Seek(prefix);
    } else {
      it->Seek(*resume);
      if (it->Valid() && it->key() == rocksdb::Slice(*resume)) it->Next();
    }
    for (; it->Valid(); it->Next()) {
      const absl::string_view key(it->key().data(), it->key().size());
      DEDUPD_RETURN_IF_ERROR(
          visit(key, absl::string_view(it->value().data(), it->value().size())));
      resume->assign(key.data(), key.size());
      if (stop()) return absl::OkStatus();
    }
    if (!it->status().ok()) {
      return FromRocksDbStatus(it->status(), "export store", impl_->options.path);
    }
    return absl::OkStatus();
  }

  Impl* const impl_;
  const rocksdb::Snapshot* const snapshot_;
  const bool urls_;
  const bool content_;
  Phase phase_;
  std::string url_resume_;
  std::string content_resume_;
  bool in_aliases_ = false;
  Sha256Digest current_sha_{};
  std::string alias_resume_;
};

absl::StatusOr<std::unique_ptr<ExportCursor>> RocksDbStore::NewExport(bool urls,
                                                                      bool content) {
  absl::ReaderMutexLock lifecycle(&impl_->mu);
  DEDUPD_ASSIGN_OR_RETURN(rocksdb::DB* db, impl_->LiveDb("export store"));
  const rocksdb::Snapshot* snapshot = db->GetSnapshot();
  {
    absl::MutexLock exports(&impl_->export_mu);
    impl_->export_snapshots.insert(snapshot);
  }
  return std::unique_ptr<ExportCursor>(
      new ExportCursorImpl(impl_.get(), snapshot, urls, content));
}

const std::string& RocksDbStore::path() const { return impl_->options.path; }

absl::Time RocksDbStore::created() const { return impl_->created; }

}  // namespace dedupd
