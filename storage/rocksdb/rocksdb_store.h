// rocksdb_store.h: the default, embedded, durable UrlStore, ContentStore and
// ChunkStore, on RocksDB.
// The key/value layout is private to this backend and defined in
// rocksdb_format.h and docs/storage_format.md. This header does not include
// RocksDB: dependents neither see nor link its headers.
//
// Example:
//   RocksDbStoreOptions options;
//   options.path = "/data/dedupd";
//   options.normalizer_version = UrlNormalizer::kVersion;
//   DEDUPD_ASSIGN_OR_RETURN(std::unique_ptr<RocksDbStore> store,
//                           RocksDbStore::Open(options));
//   std::vector<UrlClaim> out;
//   DEDUPD_RETURN_IF_ERROR(store->ClaimUrls(keys, absl::Now(), &out));
//   DEDUPD_RETURN_IF_ERROR(store->Close());
//
// Durability: ClaimUrls answers only after the batch's new records are in
// RocksDB's write-ahead log, written to the operating system before the
// call returns, so a process crash (kill -9) never loses a key answered
// is_new. Power loss can lose the last moments of claims unless
// `sync_writes` is set (then the WAL is fsynced per batch).
//
// Failed writes and a full disk: a write that RocksDB reports failed is
// never acknowledged (every call returns its error and no answer). A
// failed write-ahead-log append or sync, or a failed flush (a full disk:
// ResourceExhausted; other I/O errors: Unavailable), makes RocksDB stop
// every write until DB::Resume; reads go on. The store resumes by itself:
// the next write after options.write_resume_interval calls Resume (flush
// the memtables, start a new log), so once space is freed writes work again
// without a restart; until then writes fail at once with the stopping
// error, whose message says so. One case needs a restart: a failed log
// write while every memtable is empty (the first write after Open or after
// a flush), which RocksDB 7.8's Resume cannot repair (the message says
// "restart"). write_status() reports the state.
//
// Thread safety: thread-safe. The check-and-write of a claim batch's
// absent keys holds per-key claim locks, so claims of the same key are
// serialized while claims of disjoint keys, reads of present keys and
// lookups run concurrently. Chunk claims lock their document's key and then
// their texts' keys (CheckChunks); Forget locks the URL's own keys and then
// its texts' keys, so it serializes with every claim of those keys. Close
// may be called concurrently with other calls: it waits for calls in
// flight, and later calls fail with FailedPrecondition.
#ifndef DEDUPD_STORAGE_ROCKSDB_ROCKSDB_STORE_H_
#define DEDUPD_STORAGE_ROCKSDB_ROCKSDB_STORE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "core/text/simhash.h"
#include "core/text/text_normalizer.h"
#include "storage/bloom/url_filter_front.h"
#include "storage/chunk_store.h"
#include "storage/content_store.h"
#include "storage/url_store.h"

namespace dedupd {

struct RocksDbStoreOptions {
  // The data directory. RocksDB owns every file in it and holds its LOCK
  // file while the store is open (one process at a time).
  // Required: must be non-empty.
  std::string path;

  // Create an empty store (and the directory) when `path` holds none. When
  // false, opening a missing store fails with InvalidArgument.
  // Default: true
  bool create_if_missing = true;

  // fsync the write-ahead log once per ClaimUrls batch that records a new
  // key, before answering: survives power loss and kernel crashes, at the
  // cost of one fsync per batch (see docs/storage_format.md for measured
  // figures). When false, the WAL is still written to the OS before the
  // answer, so a process crash (kill -9) never loses an acknowledged claim.
  // Default: false
  bool sync_writes = false;

  // Capacity of the LRU block cache for data blocks, in bytes. Bloom filters
  // and index blocks are held by the open table readers, outside this cache
  // (about 1.25 bytes per stored URL at 10 bits per key).
  // Default: 256 MiB
  size_t block_cache_bytes = size_t{256} << 20;

  // Bloom filter size in bits per key (full filters over the whole key).
  // 10 gives about 1% false positives; each false positive costs a block
  // read on a miss, and most claims are misses. 0 disables filters.
  // Default: 10
  int bloom_bits_per_key = 10;

  // Size of one memtable, in bytes. Up to 3 exist at once (one being
  // written, up to two being flushed). Larger means fewer, larger L0 files.
  // Default: 64 MiB
  size_t write_buffer_bytes = size_t{64} << 20;

  // Maximum number of table files kept open (file descriptors plus their
  // filter and index blocks). Keeps Open from loading every table of a
  // large store; stay below the process's file descriptor limit.
  // Default: 1000
  int max_open_files = 1000;

  // The URL normalizer version whose output the keys are. Persisted in the
  // meta record when the store is created; opening a store created with
  // another version fails with FailedPrecondition, because its keys would
  // not match this build's.
  // Required: must be non-zero.
  uint32_t normalizer_version = 0;

  // The content layer's algorithms, persisted in the content meta record
  // when the store is created; opening a store created with other values
  // fails with FailedPrecondition, because its content hashes and
  // fingerprints would not match this build's.
  // Defaults: this build's kTextNormalizerVersion, SimHasher::kVersion,
  // 3-word shingles and SimHasher::kSeed.
  uint32_t text_normalizer_version = kTextNormalizerVersion;
  uint32_t simhash_version = SimHasher::kVersion;
  uint32_t simhash_shingle_words = 3;
  uint64_t simhash_seed = SimHasher::kSeed;
  // The MinHash signatures' algorithm, persisted in the same record and
  // checked the same way (the signatures stored with fingerprint and chunk
  // text records would not be comparable with this build's).
  // Defaults: MinHasher::kVersion and MinHasher::kSeed.
  uint32_t minhash_version = MinHasher::kVersion;
  uint64_t minhash_seed = MinHasher::kSeed;

  // The largest Hamming distance the in-memory near-duplicate index (rebuilt
  // from the fingerprint records at Open) answers exactly. Larger costs
  // memory and query time; not persisted.
  // Default: 3. Range: 0..SimHashIndex::kMaxSupportedDistance.
  int simhash_max_distance = 3;

  // The number of blocks the near-duplicate index cuts the 64 bits into
  // (SimHashIndex's `blocks`): C(blocks, simhash_max_distance) tables, 10
  // bytes per fingerprint each. 0 means the default, simhash_max_distance +
  // 1 (the smallest; docs/simhash_index.md has the measurements and when to
  // raise it). Not persisted: the index is rebuilt at Open.
  // Default: 0. Range: 0, or simhash_max_distance + 1 ..
  // simhash_max_distance + 3 with at most 20 tables
  // (SimHashIndex::IsValidLayout).
  int simhash_index_blocks = 0;

  // The in-memory Bloom front of the URL records: a claim or
  // lookup of a URL the filter says was never stored skips the store read.
  // Answers stay exact. Persisted at Close in the file kUrlFilterFileName
  // of the directory, reloaded at Open when no write happened since,
  // rebuilt in the background otherwise (and when the URL count passes its
  // design size). See UrlFilterOptions for each setting and its default.
  UrlFilterOptions url_filter;

  // Let the writers of one RocksDB write group insert into the memtable in
  // parallel (RocksDB's allow_concurrent_memtable_write). Either way a
  // batch reuses its skip-list position from key to key ("splice"), which
  // makes a batch of sorted keys (every claim batch is sorted) cheaper per
  // key; when false the group's leader inserts every batch itself.
  // Default: true.
  bool concurrent_memtable_writes = true;

  // How the URL records' memtables (the default column family's) are
  // kept. kHashVector: entries appended to a vector and indexed by key in
  // a hash table, sorted when the memtable is flushed or scanned
  // (HashVectorMemTableRepFactory): an insert costs a hash-table insert
  // instead of a skip-list search. kSkipList: RocksDB's default skip list.
  // The choice is not persisted; a store may be opened with either.
  // Default: kHashVector
  enum class UrlMemtable { kHashVector, kSkipList };
  UrlMemtable url_memtable = UrlMemtable::kHashVector;

  // How the URL records' family is compacted. kUniversal (tiered): sorted
  // runs of similar size are merged once enough of them exist, so a record
  // is rewritten a few times on its way to the oldest run; the records are
  // insert-only (Forget deletes), so the size-amplification trigger is set
  // high (newer runs are new records, not garbage). A merge that reaches
  // the oldest run rewrites the whole family once: up to its size again in
  // free disk while it runs, about each time the family doubles.
  // kLeveled: RocksDB's default leveled compaction (dynamic level sizes):
  // merges a batch into the whole next level, rewriting each record more
  // often (59.6M records read by compactions against 36.0M universal, for
  // 20M URLs; docs/benchmarks.md), with small temporary space. Not
  // persisted: a store written with either opens with the other.
  // Default: kUniversal
  enum class Compaction { kUniversal, kLeveled };
  Compaction url_compaction = Compaction::kUniversal;

  // How the content family (documents, chunk texts and their records) is
  // compacted; the styles as for url_compaction. A chunk text's record
  // with its MinHash signature and shingle set is ~560 bytes, and leveled
  // compaction's rewrites of them were 16% of CheckChunks' server CPU:
  // kUniversal makes CheckChunks 6% faster on a 1 M-chunk store and took
  // 29.5 to 25.4 µs a chunk over a fill of 3 M chunks, but CheckContent's
  // new documents 4% slower (a miss probes the filters of more sorted
  // runs), and deleted records' space comes back later (when a merge
  // reaches the oldest run); docs/minhash.md. Not persisted: a store
  // written with either opens with the other.
  // Default: kLeveled
  Compaction content_compaction = Compaction::kLeveled;

  // After a failure that makes RocksDB stop writes (see "Failed writes and
  // a full disk" above), the first write at least this long after the error
  // or the last recovery attempt tries to recover (DB::Resume, which flushes the memtables;
  // after a NoSpace error it is tried only once the volume has room for the
  // memtables plus 1 MiB, since a flush that fails for room can leave
  // RocksDB 7.8 unable to finish a later Resume); writes in between fail at
  // once. Zero: every write tries. Not persisted.
  // Default: 1 second. REQUIRES: >= 0 and finite.
  absl::Duration write_resume_interval = absl::Seconds(1);

  // Keep RocksDB's statistics (tickers), for DataBlockReads. Costs a few
  // percent of CPU; for benchmarks.
  // Default: false.
  bool collect_statistics = false;
};

// What RocksDbStore::CheckConsistency found: the records per kind, and the
// broken invariants (empty when the store is consistent).
struct ConsistencyReport {
  uint64_t urls = 0;
  uint64_t contents = 0;
  uint64_t aliases = 0;
  uint64_t fingerprints = 0;
  uint64_t fetches = 0;
  uint64_t chunk_manifests = 0;
  uint64_t chunk_texts = 0;
  uint64_t chunk_holders = 0;  // holder records plus the owners text records name
  // One line per broken invariant, naming the record ("alias <sha> <url>:
  // no content record"); at most kMaxProblems, then one line saying how
  // many more.
  static constexpr size_t kMaxProblems = 100;
  std::vector<std::string> problems;
  bool ok() const { return problems.empty(); }
};

// StoreStats: what RocksDbStore::Stats reports. Without `exact` every field
// comes from RocksDB properties, range size estimates and in-memory
// counters: O(table files) and no record read, so cheap enough for every
// Prometheus scrape. With `exact`, RecordKind::exact_count is filled by
// counting the keys of one snapshot (a pass over the whole store).
struct StoreStats {
  // One record kind of docs/storage_format.md ("Key tags").
  struct RecordKind {
    // "url", "content", "alias", "fingerprint", "fetch", "chunk_manifest",
    // "chunk_text", "chunk_holder".
    std::string name;
    // The key prefix of the kind (raw bytes: "\x01", "\x05\x03", ...).
    std::string key_prefix;
    // RocksDB's estimate of the bytes of the kind's key range in table files
    // and memtables (DB::GetApproximateSizes). An estimate, always set.
    uint64_t estimated_bytes = 0;
    // The number of records in one snapshot; set only by Stats(exact=true).
    std::optional<uint64_t> exact_count;
  };

  // Versions: the meta records' values (this build's, as Open checked).
  uint32_t storage_format_version = 0;
  uint32_t normalizer_version = 0;
  uint32_t text_normalizer_version = 0;
  uint32_t simhash_version = 0;
  uint32_t simhash_shingle_words = 0;
  uint64_t simhash_seed = 0;
  uint32_t minhash_version = 0;
  uint64_t minhash_seed = 0;
  absl::Time created;

  // URL records, from table-file entry counts minus their deletions plus
  // memtable entries (ApproximateUrlCount): exact while no flush or
  // compaction races the call and nothing was deleted since the last
  // compaction; an estimate otherwise.
  uint64_t estimated_url_records = 0;
  // Entries of the in-memory near-duplicate indexes: one per content
  // record, one per chunk text. Exact counts of the indexes.
  uint64_t content_fingerprints_indexed = 0;
  uint64_t chunk_fingerprints_indexed = 0;
  // In the order of the "Key tags" table.
  std::vector<RecordKind> kinds;

  // The named namespaces that hold records, in byte order (at most
  // kMaxListedNamespaces; `more_namespaces` when there are others).
  struct Namespace {
    std::string name;
    // RocksDB's estimate of the bytes of its key range (both families).
    uint64_t estimated_bytes = 0;
    // Its URL records in one snapshot; set only by Stats(exact=true).
    std::optional<uint64_t> exact_url_count;
  };
  std::vector<Namespace> namespaces;
  bool more_namespaces = false;
  static constexpr size_t kMaxListedNamespaces = 1000;

  // Bytes on disk: live table files + write-ahead log files (DiskBytes).
  uint64_t disk_bytes = 0;
  uint64_t live_sst_bytes = 0;
  uint64_t wal_bytes = 0;

  // RocksDB health, from the DB properties of the same names (per-family
  // ones summed over both families).
  bool write_stopped = false;              // rocksdb.is-write-stopped
  uint64_t actual_delayed_write_rate = 0;  // bytes/s; 0: not delayed
  uint64_t estimate_pending_compaction_bytes = 0;
  uint64_t num_running_compactions = 0;
  uint64_t num_running_flushes = 0;
  uint64_t cur_size_all_mem_tables = 0;  // bytes
  uint64_t block_cache_usage = 0;        // bytes
  uint64_t block_cache_capacity = 0;     // bytes
};

// ExportedRecord: one record of RocksDbStore's export, in export order.
struct ExportedRecord {
  enum class Kind { kUrl, kContent, kAlias };
  Kind kind = Kind::kUrl;
  // kUrl: the normalized URL; kContent: the owner URL; kAlias: the alias URL.
  std::string url;
  // kUrl: first seen; kContent: first seen; kAlias: when it was added.
  absl::Time time;
  // kContent, kAlias: the SHA-256 of the normalized text.
  Sha256Digest sha256{};
  // kContent only.
  uint64_t simhash = 0;
  uint64_t alias_count = 0;
};

// ExportCursor: walks one snapshot of the store (RocksDbStore::NewExport).
// Not thread-safe: one caller at a time. REQUIRES: destroyed before its
// store. Holds a RocksDB snapshot (which keeps the records it sees from
// being compacted away) until destroyed or the store is closed.
class ExportCursor {
 public:
  virtual ~ExportCursor() = default;
  // Next appends the next records to `out` until their URL bytes pass about
  // `max_bytes` (at least one record when any is left), and sets `*done`
  // once the snapshot is exhausted. Order: URL records by URL bytes, then
  // each content record (by SHA-256) followed by its aliases (by URL bytes).
  // Errors: FailedPrecondition after the store was closed; DataLoss naming
  // a record that cannot be decoded; Unavailable for I/O errors.
  virtual absl::Status Next(size_t max_bytes, std::vector<ExportedRecord>* out, bool* done) = 0;
};

// The URL filter's file in the store directory (RocksDB ignores files whose
// names it does not know).
inline constexpr char kUrlFilterFileName[] = "dedupd-url-filter.bloom";

class RocksDbStore final : public UrlStore, public ContentStore, public ChunkStore {
 public:
  // Open opens the store at options.path, creating it (with its meta record)
  // when it is missing and options.create_if_missing is set. Its one cost
  // proportional to the store's size is the near-duplicate indexes: every
  // fingerprint record (content and chunk) is scanned into memory (about
  // 0.7 s per 1,000,000 texts); WAL replay is bounded (Close flushes; after a crash at most
  // 4 memtables' worth).
  // Errors:
  //   InvalidArgument: bad options, or no store at path and
  //     !create_if_missing.
  //   FailedPrecondition: the directory is in use by another process (or
  //     already open in this one); the store was written with another
  //     storage format or normalizer version; the directory holds a RocksDB
  //     database that is not a dedupd store.
  //   DataLoss: the meta record or database files are corrupt.
  //   ResourceExhausted: no space left on the device.
  //   Unavailable: transient I/O error; retry.
  // Every message starts with the path.
  static absl::StatusOr<std::unique_ptr<RocksDbStore>> Open(const RocksDbStoreOptions& options);

  RocksDbStore(const RocksDbStore&) = delete;
  RocksDbStore& operator=(const RocksDbStore&) = delete;

  // Closes the store if Close has not been called, logging a failure to
  // stderr (call Close to see the status instead).
  ~RocksDbStore() override;

  // See UrlStore. One MultiGet of the batch's distinct keys without any
  // claim lock: a key whose plan writes nothing (SEEN, or a retry of the
  // same claim id) is answered from it (docs/storage_format.md, "Durability
  // contract", says why that is safe although records are rewritten); then,
  // with the claim locks of the other keys held, a MultiGet of those keys,
  // a fresh plan, and one WAL write of the records that change. Waits while
  // another claim holds any of those keys. Errors: as UrlStore, plus
  // FailedPrecondition after Close and DataLoss naming the key when a
  // stored value cannot be decoded.
  absl::Status Claim(const UrlClaimOptions& options, absl::Span<const std::string> keys,
                     absl::Time now, std::vector<UrlClaim>* results) override;

  // See UrlStore. Takes no lock. Errors: InvalidArgument for an empty key
  // or a bad namespace, FailedPrecondition after Close, DataLoss for an
  // undecodable value, Unavailable for transient I/O errors.
  absl::Status LookupRecords(absl::string_view name_space, absl::Span<const std::string> keys,
                             std::vector<std::optional<UrlRecord>>* records) override;

  // See UrlStore. Locks every key, reads them, writes the confirmed records
  // in one WAL write. Errors: as Claim.
  absl::Status Complete(absl::string_view name_space, uint64_t claim_id_hash,
                        absl::Span<const std::string> keys,
                        std::vector<UrlCompletion>* results) override;

  // See ContentStore. The batch's content, fetch and URL keys are locked
  // for the whole call (waiting while another claim holds any), read with
  // point lookups, and written in one WriteBatch; the new fingerprints enter
  // the in-memory index after the WAL write. Errors: as ContentStore, plus
  // FailedPrecondition after Close and DataLoss naming a damaged record.
  absl::Status CheckContent(absl::Span<const ContentDoc> docs, bool claim,
                            const ContentLimits& limits, absl::Time now,
                            std::vector<ContentOutcome>* outcomes) override;
  // max_near_distance: options.simhash_max_distance, for the content and
  // the chunk index alike.
  int max_near_distance() const override;

  // See ContentStore. One MultiGet of the fetch keys in the content family;
  // takes no lock. Errors: FailedPrecondition after Close, DataLoss naming
  // the URL for an undecodable value, Unavailable for I/O errors.
  absl::Status LookupFetches(absl::string_view name_space, absl::Span<const std::string> urls,
                             std::vector<std::optional<FetchRecord>>* fetches) override;

  // See ChunkStore. A claim locks the document's manifest key (waiting while
  // another claim holds it), reads its stored manifest, then locks the text
  // keys of every chunk text the document held or will hold; with both held
  // it reads from one snapshot, writes every changed record in one
  // WriteBatch (fsynced with sync_writes) and only then updates the
  // in-memory chunk index. Claims of different documents with disjoint
  // texts run in parallel. Peeks take no lock and read one snapshot.
  // Errors: as ChunkStore, plus InvalidArgument for a document URL with a
  // NUL byte (holder keys end the URL with one; nothing recorded),
  // FailedPrecondition after Close, ResourceExhausted when 2^32 chunk text
  // ids have been handed out, and DataLoss naming a damaged record.
  absl::Status CheckChunks(const ChunkDocument& doc, bool claim, absl::Time now,
                           ChunkAnswer* answer) override;

  // Forget removes `normalized_url` from the store, so that it can be
  // crawled again or to erase it on request, leaving no record that names
  // it and no dangling reference:
  //   - its URL record (CheckUrl answers NEW again), its fetch record, and
  //     its alias records (texts other URLs own; their alias counts drop);
  //   - each text it owns: when other URLs served the same text, the oldest
  //     alias (time added, then URL bytes) becomes the owner (same doc id,
  //     fingerprint and first-seen time); otherwise the content record, its
  //     fingerprint record and its near-duplicate index entry are deleted;
  //   - its chunks, as CheckChunks with no chunks would: the manifest and
  //     its holder records; texts no other chunk holds lose their text and
  //     chunk fingerprint records and chunk index entries; the others' next
  //     oldest holder becomes their owner.
  // Atomic: the keys are locked as claims lock them (first the URL's own
  // keys: URL, fetch and manifest; then the content keys of every text
  // that names the URL and the chunk text keys of its chunks), so concurrent
  // ClaimUrls, CheckContent and CheckChunks of the same keys serialize with
  // it, and everything is deleted or rewritten in one WriteBatch; returns
  // only after the WAL write (fsynced with sync_writes). The in-memory
  // indexes drop the deleted entries after the write. The URL Bloom front
  // cannot delete: it keeps answering "maybe" for the URL, which costs a
  // store read and never a wrong answer.
  // A URL the store does not know is not an error: the result's found() is
  // false. `now` is the time the chunk planner is given (nothing forgotten
  // records it).
  // Cost: finding the texts that name the URL scans every content and alias
  // record (no index maps a URL to its texts): O(content records), about
  // 0.6-0.8 s per million texts on the 2-core VM (docs/storage_format.md),
  // with only the URL's own keys locked meanwhile.
  // Errors: InvalidArgument for an empty URL; FailedPrecondition after
  // Close; DataLoss naming a damaged record; Unavailable/ResourceExhausted
  // from RocksDB. On error nothing was deleted.
  // Example:
  //   DEDUPD_ASSIGN_OR_RETURN(ForgetResult r,
  //                           store->Forget("https://a.example/post", absl::Now()));
  //   // r.url_found: CheckUrl("https://a.example/post") is NEW again;
  //   // r.contents_promoted[i].new_owner_url now owns a text it owned.
  absl::StatusOr<ForgetResult> Forget(const std::string& normalized_url, absl::Time now) override;

  // CheckConsistency reads every record from one snapshot and checks the
  // invariants that tie the kinds together (docs/storage_format.md,
  // "Invariants"): every record decodes; every content record has its
  // fingerprint record (same doc id, SimHash and SHA-256), an alias count
  // equal to its alias records, and an owner with a URL record that is not
  // also its alias; every alias names an existing content record and has a
  // URL record; every fingerprint names a content record with its doc id;
  // every fetch record names a text its URL owns or is an alias of; every
  // chunk manifest entry has its holder record and text record; every
  // holder is an entry of its document's manifest; every chunk text's
  // holder count equals its holder records and it has its chunk
  // fingerprint record; every chunk fingerprint names a text with its id;
  // and both in-memory indexes hold exactly the fingerprint records. For
  // tests and offline checks: it holds every key in memory, and the index
  // comparison is exact only while no write runs.
  // Errors: FailedPrecondition after Close; Unavailable from RocksDB. A
  // broken invariant is not an error: it is reported in `problems`.
  absl::StatusOr<ConsistencyReport> CheckConsistency();

  // ApproximateUrlCount returns the number of stored URLs, from the entry
  // and deletion counts of the table files' properties and the memtables:
  // exact when no flush or compaction races the call, except that a URL
  // deleted by Forget whose tombstone was flushed apart from its record
  // still counts until a compaction merges the two. For stats and
  // benchmarks, not
  // for logic. Cost: O(table files); reads the properties block of table
  // files that are not open.
  absl::StatusOr<uint64_t> ApproximateUrlCount();

  // IndexStats: the in-memory near-duplicate index's size (fingerprints
  // held) and heap bytes. For stats and benchmarks.
  struct IndexStats {
    size_t fingerprints = 0;
    size_t memory_bytes = 0;
    // The chunk layer only: the SHA-256 -> text id map's table bytes
    // (ChunkTextIds::MemoryBytes); 0 for the content index.
    size_t text_id_map_bytes = 0;
  };
  IndexStats index_stats() const;
  // chunk_index_stats: the same figures for the chunk layer's index.
  IndexStats chunk_index_stats() const;

  // url_filter_stats: the URL Bloom front's state and counters (store reads
  // skipped and made by ClaimUrls and LookupUrls).
  UrlFilterFront::Stats url_filter_stats() const;
  // WaitForUrlFilter blocks until no URL filter rebuild (Open's, when the
  // saved filter was missing or stale) runs or `timeout` passes; returns
  // whether a filter is ready. For tests and benchmarks: claims are exact
  // (and merely slower) before.
  bool WaitForUrlFilter(absl::Duration timeout) const;

  // DataBlockReads returns the number of data blocks RocksDB read from its
  // files (block cache misses) since Open. FailedPrecondition unless
  // options.collect_statistics.
  absl::StatusOr<uint64_t> DataBlockReads() const;

  // DiskBytes returns the size of the live table files plus the write-ahead
  // log files, in bytes.
  absl::StatusOr<uint64_t> DiskBytes();

  // DropNamespace deletes every record of the named namespace `name` in
  // one WriteBatch of two DeleteRange operations (one per column family:
  // docs/storage_format.md, tag 0x08), WAL on, so its cost does not depend
  // on how many records it holds; the space is reclaimed by compaction.
  // Claims of the namespace that run meanwhile are ordered before or after
  // it; the URL filter front keeps answering "maybe" for the dropped keys
  // (one store read each, answered NEW). Returns whether the namespace
  // held any record. Errors: InvalidArgument for the empty namespace (it
  // is not a key range; Forget removes its URLs one by one) or a bad name;
  // FailedPrecondition after Close; the write's errors as Claim.
  absl::StatusOr<bool> DropNamespace(absl::string_view name);

  // Stats returns the store's figures (see StoreStats). Cost: O(table
  // files) plus one seek per named namespace without `exact`; with it, one
  // pass over every key of a snapshot (not filling the block cache). Errors: FailedPrecondition
  // after Close; Internal when a RocksDB property is missing; Unavailable
  // for I/O errors of the exact scan.
  absl::StatusOr<StoreStats> Stats(bool exact);

  // Checkpoint writes a consistent copy of the store into `directory`
  // (RocksDB's Checkpoint: the memtables are flushed, table files are hard
  // linked when on the same file system and copied otherwise, the WAL
  // written since is copied) while other calls keep running. The copy is a
  // store of the same format that Open accepts, holding every record
  // written before the call started (and maybe some written during it). The
  // URL filter file is not copied (Open rebuilds it).
  // Returns RocksDB's sequence number of the checkpoint.
  // Errors: InvalidArgument for an empty path; FailedPrecondition when
  // `directory` exists, its parent does not, or after Close;
  // ResourceExhausted when the disk is full; Unavailable for other I/O
  // errors (a failed checkpoint leaves no directory behind).
  absl::StatusOr<uint64_t> Checkpoint(const std::string& directory);

  // NewExport returns a cursor over one snapshot taken now: the URL records
  // (unless !urls) and the content records with their aliases (unless
  // !content). Errors: FailedPrecondition after Close.
  absl::StatusOr<std::unique_ptr<ExportCursor>> NewExport(bool urls, bool content);

  // Close waits for calls in flight, flushes the memtables to table files
  // (so that the next Open replays no write-ahead log: a restart costs the
  // same after 10 minutes or 10 hours of writes), syncs the WAL (one fsync,
  // so that a clean shutdown also survives power loss) and closes the
  // database, releasing the directory's LOCK. Calling Close again returns OK and does nothing;
  // other calls after Close return FailedPrecondition.
  // Errors: as RocksDB reports them (Unavailable, DataLoss, Internal); the
  // directory is released even then.
  absl::Status Close();

  // write_status returns OK while the store takes writes, and while RocksDB
  // has stopped writes after a background error (a full disk) the error
  // writes fail with: ResourceExhausted for no space, Unavailable for other
  // I/O errors. Cheap (one mutex); no recovery attempt.
  absl::Status write_status() const;

  // path returns options.path as given to Open.
  const std::string& path() const;

  // created returns the creation time recorded in the meta record.
  absl::Time created() const;

 private:
  struct Impl;
  class ExportCursorImpl;
  class ContentReader;
  class ChunkReader;
  explicit RocksDbStore(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_ROCKSDB_ROCKSDB_STORE_H_
