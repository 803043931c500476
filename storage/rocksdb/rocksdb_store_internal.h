// rocksdb_store_internal.h: what the files of RocksDbStore share (its Impl,
// the write-stop state, the planners' snapshot readers, small key helpers).
// Private to storage/rocksdb/: included by the rocksdb_*.cc files of
// RocksDbStore only, never outside this folder.
// RocksDbStore's member functions live in one file per concern, as
// RocksDB's DBImpl does (db/db_impl/*.cc):
//   rocksdb_options.cc          options checks and RocksDB options
//   rocksdb_open.cc             Open, meta records, format upgrade, Close
//   rocksdb_write_guard.cc      stopped writes (a full disk) and Resume
//   rocksdb_info_log.cc         the info logger
//   rocksdb_key_locks.{h,cc}    per-key claim locks
//   rocksdb_url_records.cc      URL Claim, LookupRecords, Complete, the URL filter scan
//   rocksdb_namespaces.cc       DropNamespace, the namespaces of Stats
//   rocksdb_content_records.cc  CheckContent
//   rocksdb_chunk_records.cc    CheckChunks
//   rocksdb_forget.cc           Forget
//   rocksdb_consistency.cc      CheckConsistency
//   rocksdb_admin.cc            Stats, counts, Checkpoint
//   rocksdb_export.cc           NewExport
//   rocksdb_status.cc           the one RocksDB -> absl::Status conversion
#ifndef DEDUPD_STORAGE_ROCKSDB_ROCKSDB_STORE_INTERNAL_H_
#define DEDUPD_STORAGE_ROCKSDB_ROCKSDB_STORE_INTERNAL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/status_macros.h"
#include "core/index/simhash_index.h"
#include "rocksdb/db.h"
#include "rocksdb/iterator.h"
#include "rocksdb/options.h"
#include "rocksdb/slice.h"
#include "rocksdb/snapshot.h"
#include "rocksdb/status.h"
#include "rocksdb/write_batch.h"
#include "storage/minhash_near_index.h"
#include "storage/plan/chunk_planner.h"
#include "storage/plan/content_planner.h"
#include "storage/plan/forget_planner.h"
#include "storage/rocksdb/chunk_text_ids.h"
#include "storage/rocksdb/rocksdb_format.h"
#include "storage/rocksdb/rocksdb_key_locks.h"
#include "storage/rocksdb/rocksdb_status.h"
#include "storage/rocksdb/rocksdb_store.h"

namespace dedupd {

namespace fmt = ::dedupd::rocksdb_format;

namespace rocksdb_internal {

// The column family of the content layer's records (docs/storage_format.md).
inline constexpr char kContentColumnFamily[] = "content";

// Key bytes for messages: escaped and bounded, since keys are arbitrary.
inline std::string PrintableKey(absl::string_view url) {
  constexpr size_t kMaxPrintedBytes = 200;
  std::string out = absl::CHexEscape(url.substr(0, kMaxPrintedBytes));
  if (url.size() > kMaxPrintedBytes) absl::StrAppend(&out, "...");
  return out;
}

// The smallest key greater than every key that starts with `prefix`.
// REQUIRES: some byte of `prefix` is not 0xff (every key starts with a tag
// below 0xff).
inline std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty() && static_cast<uint8_t>(prefix.back()) == 0xff) {
    prefix.pop_back();
  }
  prefix.back() = static_cast<char>(static_cast<uint8_t>(prefix.back()) + 1);
  return prefix;
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

// NewWriteStopListener returns the listener that records RocksDB's
// background errors in `stop` (rocksdb_write_guard.cc).
std::shared_ptr<rocksdb::EventListener> NewWriteStopListener(std::shared_ptr<WriteStop> stop);
// NewTolerantInfoLogger returns RocksDB's info logger for the store at `dir`
// (rocksdb_info_log.cc): it drops lines it cannot write instead of
// asserting.
std::shared_ptr<rocksdb::Logger> NewTolerantInfoLogger(const std::string& dir, bool create_dir);

// CheckOptions returns InvalidArgument naming the first bad field of `o`.
absl::Status CheckOptions(const RocksDbStoreOptions& o);
// The database options for `o`. `stop` (may be null: no write-stop
// tracking, for ListColumnFamilies) receives the background errors.
rocksdb::Options MakeDbOptions(const RocksDbStoreOptions& o, std::shared_ptr<WriteStop> stop);
// The default column family's options: the URL records (and the meta
// record). See rocksdb_options.cc.
rocksdb::ColumnFamilyOptions UrlFamilyOptions(const rocksdb::Options& db,
                                              const RocksDbStoreOptions& o);
// The content family's options (kContentColumnFamily). See
// rocksdb_options.cc.
rocksdb::ColumnFamilyOptions ContentFamilyOptions(const rocksdb::Options& db,
                                                  const RocksDbStoreOptions& o);

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

// SnapshotReads: what the planners' readers (RocksDbStore::ContentReader
// and ::ChunkReader) share: point reads of one snapshot (or of the latest
// state when `snapshot` is null), their error messages, and the filter that
// keeps only the near-duplicate index matches the snapshot holds. The index
// is shared and live, so it can name a record deleted by a Forget or
// written after the snapshot, which the call must not see.
// Not thread-safe: one call's reader. REQUIRES: `db`, `family` and
// `snapshot` outlive it.
class SnapshotReads {
 public:
  SnapshotReads(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
                const rocksdb::Snapshot* snapshot, absl::string_view action,
                const std::string& path)
      : db_(db), family_(family), action_(action), path_(path) {
    read_.snapshot = snapshot;
  }

  // Get reads `key` of `family` (the content family when null) into
  // `value`: false when absent.
  absl::StatusOr<bool> Get(const std::string& key, std::string* value,
                           rocksdb::ColumnFamilyHandle* family = nullptr) {
    rocksdb::Status s = db_->Get(read_, family == nullptr ? family_ : family, key, value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) return Failed(s);
    return true;
  }
  // NewIterator over the content family, bounded above by `*upper` when
  // not null.
  std::unique_ptr<rocksdb::Iterator> NewIterator(const rocksdb::Slice* upper) {
    rocksdb::ReadOptions read = read_;
    read.iterate_upper_bound = upper;
    return std::unique_ptr<rocksdb::Iterator>(db_->NewIterator(read, family_));
  }
  // Failed: a RocksDB error of this reader's calls.
  absl::Status Failed(const rocksdb::Status& s) const {
    return FromRocksDbStatus(s, action_, path_);
  }
  // Damaged: DataLoss "<action> at <path>: <what>: <why>".
  absl::Status Damaged(absl::string_view what, const absl::Status& why) const {
    return absl::DataLossError(
        absl::StrCat(action_, " at ", path_, ": ", what, ": ", why.message()));
  }

  // KeepInSnapshot keeps the index's `matches` whose fingerprint record
  // `read_fingerprint(id)` finds in the snapshot (an
  // absl::StatusOr<std::optional<FingerprintRecord>>). Records read are
  // cached for CachedFingerprint; a read error keeps the match and is
  // remembered, so the reader reports it if the planner asks for that
  // fingerprint. `*total` (when non-null) drops by one per match dropped.
  // KeepIdsInSnapshot: the same for the ids a MinHashNearIndex returned
  // (LSH candidates), in their order.
  template <typename ReadFn>
  std::vector<uint32_t> KeepIdsInSnapshot(const std::vector<uint32_t>& ids,
                                          const ReadFn& read_fingerprint) {
    std::vector<SimHashIndex::Match> matches;
    matches.reserve(ids.size());
    for (uint32_t id : ids) matches.push_back({0, id, 0});
    matches = KeepInSnapshot(std::move(matches), read_fingerprint, nullptr);
    std::vector<uint32_t> kept;
    kept.reserve(matches.size());
    for (const SimHashIndex::Match& m : matches) kept.push_back(m.id);
    return kept;
  }
  template <typename ReadFn>
  std::vector<SimHashIndex::Match> KeepInSnapshot(std::vector<SimHashIndex::Match> matches,
                                                  const ReadFn& read_fingerprint, size_t* total) {
    std::vector<SimHashIndex::Match> kept;
    kept.reserve(matches.size());
    for (const SimHashIndex::Match& m : matches) {
      if (fingerprints_.contains(m.id) || failed_.contains(m.id)) {
        kept.push_back(m);
        continue;
      }
      absl::StatusOr<std::optional<FingerprintRecord>> fp = read_fingerprint(m.id);
      if (!fp.ok()) {
        failed_.emplace(m.id, fp.status());
        kept.push_back(m);
      } else if (fp->has_value()) {
        fingerprints_.emplace(m.id, **fp);
        kept.push_back(m);
      } else if (total != nullptr && *total > 0) {
        --*total;
      }
    }
    return kept;
  }
  // CachedFingerprint returns the fingerprint record of index id `id`: the
  // one KeepInSnapshot read (or its error), else `read_fingerprint(id)`'s;
  // DataLoss "<action> at <path>: <entry> <id> has no <record>" when the
  // snapshot lacks it (the message is built only then: this runs per near
  // match and per chunk).
  template <typename ReadFn>
  absl::StatusOr<FingerprintRecord> CachedFingerprint(uint32_t id, const ReadFn& read_fingerprint,
                                                      absl::string_view entry,
                                                      absl::string_view record) {
    if (auto it = fingerprints_.find(id); it != fingerprints_.end()) return it->second;
    if (auto it = failed_.find(id); it != failed_.end()) return it->second;
    DEDUPD_ASSIGN_OR_RETURN(std::optional<FingerprintRecord> fp, read_fingerprint(id));
    if (!fp.has_value()) {
      return absl::DataLossError(
          absl::StrCat(action_, " at ", path_, ": ", entry, " ", id, " has no ", record));
    }
    return *fp;
  }

  const rocksdb::ReadOptions& read_options() const { return read_; }

 private:
  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const family_;
  const absl::string_view action_;
  const std::string& path_;
  rocksdb::ReadOptions read_;
  // Fingerprint records KeepInSnapshot resolved, and the ones it failed to
  // read.
  absl::flat_hash_map<uint32_t, FingerprintRecord> fingerprints_;
  absl::flat_hash_map<uint32_t, absl::Status> failed_;
};

}  // namespace rocksdb_internal

using rocksdb_internal::FromRocksDbStatus;
using rocksdb_internal::KeyLocks;
using rocksdb_internal::PrefixEnd;
using rocksdb_internal::PrintableKey;
using rocksdb_internal::SnapshotReads;
using rocksdb_internal::SortedBatch;
using rocksdb_internal::WriteStop;

struct RocksDbStore::Impl {
  class SpaceView;  // One call's view of a namespace (below).

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
  absl::StatusOr<rocksdb::DB*> LiveDb(absl::string_view action) ABSL_SHARED_LOCKS_REQUIRED(mu) {
    if (db == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(action, " at ", options.path, ": store is closed"));
    }
    return db.get();
  }

  // Per-key claim locks (KeyLockTable): a claim holds the locks of the keys
  // it found absent while it re-reads and writes them, so the read that
  // finds a key absent and the write that records it are one atomic step
  // against every other claim of that key. Lookups never take them.
  // Acquired after `mu`.
  rocksdb_internal::KeyLockTable key_locks;

  // MultiGet of the unique keys of `batch` named by `which` (ascending
  // indices into batch.unique_keys): sets (*records)[u] for each u in
  // `which` to the stored record, nullopt when the key is absent.
  // REQUIRES: records->size() == batch.unique_keys.size().
  absl::Status MultiGet(rocksdb::DB* db, const SortedBatch& batch, absl::Span<const size_t> which,
                        absl::string_view action, std::vector<std::optional<UrlRecord>>* records);

  // Fills st->namespaces and st->more_namespaces (rocksdb_namespaces.cc);
  // CountNamespaceUrls their exact_url_count, reading `snapshot`.
  absl::Status ListNamespaces(rocksdb::DB* db, const rocksdb::Snapshot* snapshot, StoreStats* st);
  absl::Status CountNamespaceUrls(rocksdb::DB* db, const rocksdb::Snapshot* snapshot,
                                  StoreStats* st);

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
  std::vector<size_t> KeysToRead(const SortedBatch& batch, const std::vector<size_t>& candidates,
                                 std::vector<uint64_t>* hashes, std::vector<bool>* hashed) {
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
  rocksdb::Status AddChunkMutations(const ChunkMutations& m, const std::string& doc_key,
                                    const SpaceView& space, rocksdb::WriteBatch* batch) const;
  // After the write of `m`: the chunk index drops the deleted texts and
  // takes the new ones (only then, so it never names a text before its
  // records exist; readers skip the ones it still names after deletion).
  void ApplyChunkIndex(const ChunkMutations& m, const SpaceView& space);

  // ---- Forget (rocksdb_forget.cc) ----
  // The WriteBatch of one Forget, with the index entries it deletes.
  struct ForgetBatch;
  // TextsNamingUrl returns the texts whose content record names `url` as
  // owner or that have an alias record of it: a scan of every content and
  // alias record of the latest state. Sorted, distinct.
  absl::StatusOr<std::vector<Sha256Digest>> TextsNamingUrl(rocksdb::DB* db, const std::string& url);
  // ReadAliases returns every alias record of the text `sha` in `read`'s
  // snapshot, in URL byte order.
  absl::StatusOr<std::vector<AliasRecord>> ReadAliases(rocksdb::DB* db,
                                                       const rocksdb::ReadOptions& read,
                                                       const Sha256Digest& sha);
  // ForgetTexts adds to `out` what forgetting `url` does to each of `texts`
  // (PlanTextForget), read from `read`'s snapshot, and counts it in
  // `result`. REQUIRES: the texts' content keys locked.
  absl::Status ForgetTexts(rocksdb::DB* db, const rocksdb::ReadOptions& read,
                           const std::string& url, absl::Span<const Sha256Digest> texts,
                           ForgetBatch* out, ForgetResult* result);
  // ForgetChunks adds to `out` the chunk records a claim of the document
  // `url` (manifest key `doc_key`, stored `manifest`) with no chunks
  // removes or rewrites, and counts them and the promoted owners in
  // `result`. REQUIRES: manifest.has_value(); the manifest key and the
  // texts' keys locked.
  absl::Status ForgetChunks(ChunkReader* reader, const std::string& url,
                            const std::optional<ChunkManifest>& manifest,
                            const std::string& doc_key, absl::Time now, ForgetBatch* out,
                            ForgetResult* result);

  // Closes `db` (which must not be used afterwards). Returns the first error.
  absl::Status CloseDb(rocksdb::DB* db, bool sync_wal);

  // Snapshots held by ExportCursors: released by their cursor, or by Close
  // (under `mu` exclusively, before the database closes) if still held.
  absl::Mutex export_mu ABSL_ACQUIRED_AFTER(mu);
  absl::flat_hash_set<const rocksdb::Snapshot*> export_snapshots ABSL_GUARDED_BY(export_mu);

  // The content layer's column family (kContentColumnFamily): content,
  // alias, fingerprint and fetch records and the content meta record.
  // Owned. Set in Open before `db` is published; destroyed by CloseDb,
  // which runs only after Close took `db` away under `mu` exclusively, so
  // no call can be using it.
  rocksdb::ColumnFamilyHandle* content_cf = nullptr;

  // The near-duplicate index over every fingerprint record, rebuilt from
  // them at Open (it is not persisted on its own). Thread-safe itself.
  std::unique_ptr<SimHashIndex> index;
  // The signatures of the fingerprint records of version 2 (texts recorded
  // with a MinHash signature) and their LSH index, rebuilt at Open with
  // `index`. Thread-safe itself.
  std::unique_ptr<MinHashNearIndex> near;
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
    m.minhash_version = options.minhash_version;
    m.minhash_seed = options.minhash_seed;
    return m;
  }
  // ---- Namespaces of the content and chunk layers (rocksdb_namespaces.cc) ----
  // A named namespace's records sit under its key prefix (NamespacePrefix)
  // in the content family; its texts and chunk texts have their own
  // in-memory indexes. Doc ids and chunk text ids are shared by every
  // namespace (next_doc_id, next_text_id).
  struct NamedSpace {
    NamedSpace(int max_distance, int blocks)
        : index(std::make_unique<SimHashIndex>(max_distance, blocks)),
          near(std::make_unique<MinHashNearIndex>()),
          chunk_index(std::make_unique<SimHashIndex>(max_distance, blocks)),
          chunk_near(std::make_unique<MinHashNearIndex>()),
          chunk_text_ids(std::make_unique<ChunkTextIds>()) {}
    // Held shared by every content and chunk call of the namespace for as
    // long as it uses the indexes; exclusively by DropNamespace while it
    // deletes the namespace's records and replaces the indexes by empty
    // ones. Acquired after Impl::mu, before the key locks.
    absl::Mutex mu;
    std::unique_ptr<SimHashIndex> index;
    std::unique_ptr<MinHashNearIndex> near;
    std::unique_ptr<SimHashIndex> chunk_index;
    std::unique_ptr<MinHashNearIndex> chunk_near;
    std::unique_ptr<ChunkTextIds> chunk_text_ids;
  };
  absl::Mutex spaces_mu ABSL_ACQUIRED_AFTER(mu);
  // Never erased (a drop empties an entry), so pointers to entries stay
  // valid for the store's life.
  absl::flat_hash_map<std::string, std::unique_ptr<NamedSpace>> spaces ABSL_GUARDED_BY(spaces_mu);
  // The named namespace's entry: created when `create`, else nullptr when
  // the namespace has none.
  NamedSpace* FindSpace(absl::string_view name_space, bool create) {
    absl::MutexLock lock(&spaces_mu);
    auto it = spaces.find(name_space);
    if (it != spaces.end()) return it->second.get();
    if (!create) return nullptr;
    auto& space = spaces[name_space];
    space =
        std::make_unique<NamedSpace>(options.simhash_max_distance, options.simhash_index_blocks);
    return space.get();
  }
  // Every named namespace with an entry, in no order.
  std::vector<std::pair<std::string, NamedSpace*>> NamedSpaces() {
    absl::MutexLock lock(&spaces_mu);
    std::vector<std::pair<std::string, NamedSpace*>> out;
    out.reserve(spaces.size());
    for (auto& [name, space] : spaces) out.emplace_back(name, space.get());
    return out;
  }
  // Loads the named namespaces' indexes at Open: a skip scan of the
  // content family's namespace range, one seek per namespace.
  absl::Status LoadNamedSpaces(rocksdb::DB* db);
  // ForEachNamespace calls fn(name) for each named namespace that has a
  // key in `family` (read at `snapshot`, nullptr: now), in name byte
  // order, one seek per namespace. fn returning Cancelled ends the scan
  // (OK); another error ends it with that error. DataLoss for a key too
  // short for its namespace prefix; `action` starts the messages.
  absl::Status ForEachNamespace(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
                                const rocksdb::Snapshot* snapshot, absl::string_view action,
                                const std::function<absl::Status(const std::string&)>& fn);
  // Scans the fingerprint records (content) and chunk text records under
  // `prefix` (empty: the empty namespace) into the given indexes; raises
  // next_doc_id and next_text_id past every id seen.
  // Fingerprint records with a signature also go into `near`, chunk text
  // records with one (version 4) into `chunk_near`.
  absl::Status LoadSpace(rocksdb::DB* db, const std::string& prefix, SimHashIndex* index,
                         MinHashNearIndex* near, SimHashIndex* chunk_index,
                         MinHashNearIndex* chunk_near, ChunkTextIds* chunk_text_ids);

  // SpaceView: one call's view of a namespace: its key prefix and its
  // indexes (the empty namespace's are Impl's own), holding a named
  // namespace's lock shared while it lives. The indexes are nullptr for a
  // named namespace that has no records yet (only when not `create`).
  class SpaceView {
   public:
    SpaceView(Impl* impl, absl::string_view name_space, bool create)
        : prefix_(name_space.empty() ? std::string() : fmt::NamespacePrefix(name_space)) {
      if (name_space.empty()) {
        index_ = impl->index.get();
        near_ = impl->near.get();
        chunk_index_ = impl->chunk_index.get();
        chunk_near_ = impl->chunk_near.get();
        chunk_text_ids_ = &impl->chunk_text_ids;
        return;
      }
      NamedSpace* space = impl->FindSpace(name_space, create);
      if (space == nullptr) return;
      lock_ = std::make_unique<absl::ReaderMutexLock>(&space->mu);
      index_ = space->index.get();
      near_ = space->near.get();
      chunk_index_ = space->chunk_index.get();
      chunk_near_ = space->chunk_near.get();
      chunk_text_ids_ = space->chunk_text_ids.get();
    }
    SpaceView(const SpaceView&) = delete;
    SpaceView& operator=(const SpaceView&) = delete;

    // `key` (an empty-namespace key of the format) in this namespace.
    std::string Key(absl::string_view key) const { return absl::StrCat(prefix_, key); }
    // `key` of this namespace without its prefix. REQUIRES: it has it.
    absl::string_view Unscoped(absl::string_view key) const { return key.substr(prefix_.size()); }
    const std::string& prefix() const { return prefix_; }
    SimHashIndex* index() const { return index_; }
    // The texts' MinHash index; nullptr exactly when index() is.
    MinHashNearIndex* near() const { return near_; }
    SimHashIndex* chunk_index() const { return chunk_index_; }
    // The chunk texts' MinHash index; nullptr exactly when chunk_index() is.
    MinHashNearIndex* chunk_near() const { return chunk_near_; }
    ChunkTextIds* chunk_text_ids() const { return chunk_text_ids_; }

   private:
    const std::string prefix_;
    std::unique_ptr<absl::ReaderMutexLock> lock_;
    SimHashIndex* index_ = nullptr;
    MinHashNearIndex* near_ = nullptr;
    SimHashIndex* chunk_index_ = nullptr;
    MinHashNearIndex* chunk_near_ = nullptr;
    ChunkTextIds* chunk_text_ids_ = nullptr;
  };

  // ---- Open (rocksdb_open.cc) ----
  // CreateMeta makes `db` (which has no meta record) a new store: refuses
  // a non-empty database, creates the content column family and writes
  // the meta and content meta records in one synced batch; sets `created`.
  absl::Status CreateMeta(rocksdb::DB* db, const rocksdb::Options& db_options);
  // CheckMeta checks an existing store's meta record `meta_value` (format
  // and normalizer version) and content meta record against this build's,
  // sets `created`, and records the upgrade of an older format's version
  // (durably, before ConvertChunkTextsToIds converts its records).
  absl::Status CheckMeta(rocksdb::DB* db, const std::string& meta_value);
  // LoadIndexes converts older chunk text records and rebuilds both
  // in-memory indexes from the fingerprint and chunk text records.
  absl::Status LoadIndexes(rocksdb::DB* db);
  // Checks an existing store's content meta record against this build's.
  // A store of a format before 5 has no MinHash fields (and no
  // signatures): *rewrite is then set, and CheckMeta writes this build's
  // record with the format upgrade. A format-5 store must have them.
  absl::Status CheckContentMeta(rocksdb::DB* db, uint32_t format_version, bool* rewrite);

  // The chunk layer's index over every chunk text record (05 05),
  // rebuilt at Open like `index`, with the same layout options. Entries
  // are inserted after the WAL write that adds their records and removed
  // after the one that deletes them, so it may briefly name a text that
  // is not (or no longer) in a reader's snapshot: ChunkReader skips those.
  std::unique_ptr<SimHashIndex> chunk_index;
  // The signatures of the chunk text records of version 4 (texts recorded
  // with a MinHash signature) and their LSH index, rebuilt and updated
  // with `chunk_index`. Thread-safe itself.
  std::unique_ptr<MinHashNearIndex> chunk_near;
  // The next chunk text id: one more than the largest chunk text record
  // key at Open, then incremented per new text (a failed write leaves a
  // gap).
  std::atomic<uint64_t> next_text_id{0};
  // SHA-256 -> text id of every chunk text record, updated with
  // `chunk_index` (after the write, with the texts' claim locks held).
  ChunkTextIds chunk_text_ids;
  // Converts the chunk text records of storage formats 2 and 3 (keyed by
  // SHA-256, each with a fingerprint record) to text records by id, in
  // batches; a store without any is left alone after one seek. Resumable:
  // each batch converts whole texts, and Open runs it again until none is
  // left. Returns how many texts it converted.
  absl::StatusOr<uint64_t> ConvertChunkTextsToIds(rocksdb::DB* db);

  // Hands out the next id of `next` (next_doc_id or next_text_id): ids are
  // uint32 index ids, so ResourceExhausted, naming `what` and `action`,
  // once 2^32 are used up.
  absl::StatusOr<uint32_t> AllocateIndexId(std::atomic<uint64_t>* next, absl::string_view action,
                                           absl::string_view what) const {
    const uint64_t id = next->fetch_add(1);
    if (id > std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError(absl::StrCat(action, " at ", options.path,
                                                       ": the store handed out 2^32 ", what,
                                                       " ids, the most one store can"));
    }
    return static_cast<uint32_t>(id);
  }

  // Scans the content family's records of [first, end) once, in key order,
  // without filling the block cache (a pass at Open), into `into`: `decode`
  // turns a record into its index entry (and may note more of it). Returns
  // one more than the largest id (0 when there is none); a decode error
  // becomes DataLoss naming `action` and the store.
  absl::StatusOr<uint64_t> LoadIndex(rocksdb::DB* db, absl::string_view action,
                                     const std::string& first, const std::string& end,
                                     const std::function<absl::StatusOr<SimHashIndex::Entry>(
                                         absl::string_view key, absl::string_view value)>& decode,
                                     SimHashIndex* into);
};

// The chunk planner's view of the store: reads of one snapshot (or of the
// latest state when `snapshot` is null), so that a text record and its
// holder keys are seen as one claim left them even while other claims
// write. The chunk index and the text id map are not part of the snapshot:
// GetText and QueryNear drop the ids whose text record the snapshot lacks
// (texts written after it, or deleted before it by a claim that has not
// updated the index and map yet), so a text found always resolves.
// Used by CheckChunks and Forget (rocksdb_chunk_records.cc).
class RocksDbStore::ChunkReader final : public ChunkStateReader {
 public:
  // `space`: the document's namespace; it must outlive the reader.
  ChunkReader(Impl* impl, rocksdb::DB* db, const rocksdb::Snapshot* snapshot,
              const Impl::SpaceView* space);

  absl::StatusOr<std::optional<ChunkManifest>> GetManifest(absl::string_view url) override;
  absl::StatusOr<std::optional<ChunkTextRecord>> GetText(const Sha256Digest& sha) override;
  absl::StatusOr<std::vector<ChunkHolder>> ListHolders(const Sha256Digest& sha,
                                                       size_t limit) override;
  std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance, size_t limit,
                                             size_t* total) override;
  std::vector<uint32_t> QueryJaccardCandidates(const MinHashSignature& sig,
                                               double min_estimate) override;
  absl::StatusOr<FingerprintRecord> GetTextFingerprint(uint32_t text_id) override;
  absl::StatusOr<uint32_t> AllocateTextId() override;

 private:
  static constexpr absl::string_view kAction = "check chunks in store";

  absl::StatusOr<std::optional<fmt::ChunkTextByIdValue>> ReadText(uint32_t text_id);
  absl::StatusOr<std::optional<FingerprintRecord>> ReadFingerprint(uint32_t text_id);

  Impl* const impl_;
  const Impl::SpaceView* const space_;
  SnapshotReads reads_;
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_ROCKSDB_ROCKSDB_STORE_INTERNAL_H_
