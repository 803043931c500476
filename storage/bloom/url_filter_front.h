// url_filter_front.h: the exact URL store's in-memory Bloom front (used by
// the default, exact URL mode). A BloomFilter over the stored URL keys answers "definitely
// not stored" so that a claim of a new URL skips the store read; "maybe
// stored" goes to the store, so answers stay exact. The front owns the
// filter's life: loading the persisted copy at startup, rebuilding it in the
// background (from a scan of the store) when the copy is missing or stale,
// growing it when the URL count passes its design size, and persisting it
// at a clean shutdown. It knows nothing of RocksDB: the store hands it a
// scan function. docs/storage_format.md ("URL filter file") has the file.
//
// Growth adds a segment instead of rebuilding (a scalable Bloom filter,
// Almeida et al. 2007): when the newest segment holds its design size, a
// new one for twice as many keys at half the false positive rate takes the
// inserts, and lookups ask every segment. No scan, no second copy of the
// keys in memory, and the false positive rate of the whole stays below
// twice the configured one (rate r, then r/2, r/4, ...). A rebuild grows
// the same way while it scans, so it ends with the segments the keys need
// whatever size it started from.
//
// The one rule that keeps answers exact: every key is handed to Inserted
// after its write is durable and before anyone else may claim it (while
// the claimer still holds the key's claim lock), and a reader that needs
// an exact "absent" re-acquires the view after taking that lock. A rebuild
// registers its new filter (so Inserted also feeds it) before the scan's
// snapshot is taken; a key is therefore either in the scan or inserted.
//
// Example:
//   UrlFilterFront front(options, scan, "/data/dedupd/URL_FILTER");
//   front.Start(/*store_tag=*/db_sequence);   // load or rebuild in background
//   UrlFilterFront::View view = front.Acquire();
//   if (view.ready() && !view.MayContain(hash)) { /* definitely absent */ }
//   ... write the new key ...
//   front.Inserted({hash});
//   front.StopRebuilds();                     // before the store closes
//   front.Persist(/*store_tag=*/db_sequence);  // after its last write
#ifndef DEDUPD_STORAGE_BLOOM_URL_FILTER_FRONT_H_
#define DEDUPD_STORAGE_BLOOM_URL_FILTER_FRONT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/index/bloom_filter.h"

namespace dedupd {

struct UrlFilterOptions {
  // Put the filter in front of the store. When false the front stays empty
  // and every key is read from the store.
  // Default: true.
  bool enabled = true;

  // The design size: URLs the first segment is sized for. When the newest
  // segment's URL count passes its design size, a segment for twice as
  // many URLs at half the false positive rate is added (see the file
  // comment). Default: 10,000,000 (about 12 MB at 1%).
  uint64_t expected_urls = 10'000'000;

  // False positive rate of the first segment at its design size: the
  // share of new URLs that still cost a store read. Later segments halve
  // it, so the whole stays below twice this. A saved filter keeps the
  // rates it was built with (the file holds them); this applies to filters
  // built from now on (first start, rebuilds). Default: 0.01.
  // Range: (0, 0.5].
  double false_positive_rate = 0.01;

  // When non-zero, the first segment's size in bytes instead of the one
  // expected_urls and false_positive_rate give; its design size is then
  // the keys it holds at false_positive_rate. Default: 0.
  size_t memory_budget_bytes = 0;
};

class UrlFilterFront {
 public:
  // ScanFn emits every stored URL key, from a consistent view of the store
  // taken after the call begins, and returns OK; it stops early (returning
  // Cancelled) once `cancel` is set. Called on the rebuild thread.
  using ScanFn = std::function<absl::Status(const std::function<void(absl::string_view key)>& emit,
                                            const std::atomic<bool>& cancel)>;

  // `file` is where Persist writes the filter and Start looks for it.
  UrlFilterFront(const UrlFilterOptions& options, ScanFn scan, std::string file);
  UrlFilterFront(const UrlFilterFront&) = delete;
  UrlFilterFront& operator=(const UrlFilterFront&) = delete;
  // Stops a rebuild in flight (without persisting).
  ~UrlFilterFront();

  // Start loads the persisted segments when their tag equals `store_tag`
  // (the store's state when they were written, e.g. RocksDB's last
  // sequence number: equal means no write happened since) and every
  // checksum holds; otherwise (missing, stale, damaged, other version) it
  // starts a rebuild in the background, from a first segment for twice
  // the key count the file's segment headers give (at least
  // expected_urls; segments are added as the scan passes their design
  // sizes), and the front answers "maybe" for every key until the rebuild
  // is done. Never fails: a bad file only costs a rebuild, and the reason
  // is in stats().load_result. Does nothing when disabled.
  //
  // The file (docs/storage_format.md, "URL filter file"): a 40-byte header
  // (magic "DDURLSEG", version, segment count, file length, first
  // segment's rate, checksum),
  // then each segment in BloomFilter's serialized form, oldest first. A
  // file of one bare serialized filter (what builds before segments
  // wrote) loads as one segment.
  void Start(uint64_t store_tag);

  // One segment of the filter: a Bloom filter, its design size (the keys
  // it holds at its rate) and that false positive rate.
  struct Segment {
    std::shared_ptr<BloomFilter> filter;
    uint64_t design_keys = 0;
    double rate = 0;
  };
  // The segments, oldest first: every one but the last is full and takes
  // no more inserts. Immutable once published; growth publishes a longer
  // copy.
  struct Chain {
    std::vector<Segment> segments;
    // Keys inserted into each segment but the last (the last one's count
    // is UrlFilterFront::newest_keys_).
    std::vector<uint64_t> sealed_keys;
  };

  // A moment's view of the front; cheap to copy, keeps its segments alive.
  // Keys inserted later may be in a segment added later, so a reader that
  // needs an exact "absent" acquires its view after the key's claim lock.
  class View {
   public:
    // False while no filter is ready (disabled, or the first rebuild runs):
    // then every key must be read from the store.
    bool ready() const { return chain_ != nullptr; }
    // REQUIRES: ready().
    bool MayContain(uint64_t key_hash) const {
      for (const Segment& s : chain_->segments) {
        if (s.filter->MayContain(key_hash)) return true;
      }
      return false;
    }

   private:
    friend class UrlFilterFront;
    std::shared_ptr<const Chain> chain_;
  };
  View Acquire() const;

  // The contents of a filter file: its segments' filters and key counts,
  // oldest first (at least one).
  struct FileContents {
    std::vector<BloomFilter> filters;
    std::vector<uint64_t> keys;
    // The first segment's false positive rate (segment i: first_rate /
    // 2^i); 0 for a bare filter of an earlier build, which has none.
    double first_rate = 0;
  };
  // ParseFile parses the bytes of a whole filter file, usable for a store
  // at `store_tag`. Sets *key_hint to the sum of the key counts of the
  // segment headers that parse, stale or not (a rebuild sizes from it).
  // Errors: DataLoss for damage (bad magic, checksum, count, length, a
  // segment's header or words); FailedPrecondition for another file or
  // filter version, or a segment whose tag is not `store_tag` (stale).
  // Never crashes on any input.
  static absl::StatusOr<FileContents> ParseFile(absl::string_view bytes, uint64_t store_tag,
                                                uint64_t* key_hint);
  // The 40-byte file header for `segments` segments in a file of
  // `file_bytes` bytes whose first segment was built at `first_rate` (what
  // Persist writes before the segments).
  static std::string EncodeFileHeader(uint32_t segments, uint64_t file_bytes, double first_rate);
  static constexpr size_t kFileHeaderBytes = 40;

  // KeyHash is BloomFilter::KeyHash of a stored key (its encoded bytes).
  static uint64_t KeyHash(absl::string_view key) { return BloomFilter::KeyHash(key); }

  // Inserted records keys just written to the store (their hashes), in the
  // newest segment (and in a filter being rebuilt); may add a segment.
  // Thread-safe.
  void Inserted(absl::Span<const uint64_t> key_hashes);

  // Counts of store reads the front decided, for stats and benchmarks.
  void CountProbes(uint64_t skipped, uint64_t read) {
    keys_skipped_.fetch_add(skipped, std::memory_order_relaxed);
    keys_read_.fetch_add(read, std::memory_order_relaxed);
  }

  // StopRebuilds cancels and joins a rebuild in flight and starts no more.
  // Inserted keeps working. Call before the store stops serving scans.
  void StopRebuilds();

  // Persist calls StopRebuilds, then, when a filter is ready, writes its
  // segments to the file (temporary file, fsync, rename, directory fsync)
  // tagged `store_tag`. REQUIRES: no Inserted runs concurrently or later (the
  // store takes no more writes). Returns the write's error: the store
  // stays correct without the file (the next Start rebuilds).
  absl::Status Persist(uint64_t store_tag);

  // WaitForRebuild blocks until no rebuild runs or `timeout` passes;
  // returns whether a filter is ready. For tests and benchmarks.
  bool WaitForRebuild(absl::Duration timeout) const;

  struct Stats {
    bool enabled = false;
    bool ready = false;         // a filter answers
    bool rebuilding = false;    // a rebuild runs
    uint64_t rebuilds = 0;      // rebuilds finished by this process
    std::string load_result;    // what Start did: "loaded", "rebuilding: <why>"
    uint64_t keys = 0;          // keys in the answering filter (approx.)
    uint64_t design_keys = 0;   // the sum of its segments' design sizes
    uint64_t segments = 0;      // its segments
    uint64_t memory_bytes = 0;  // its bit arrays (plus one being built)
    // The chance that a never-stored key passes some segment, each at its
    // key count: 1 - prod(1 - rate_i).
    double estimated_false_positive_rate = 0;
    uint64_t keys_skipped = 0;  // store reads skipped (definitely absent)
    uint64_t keys_read = 0;     // keys read from the store
    absl::Duration last_rebuild_time;
  };
  Stats stats() const;

 private:
  // A segment for `design_keys` keys at `rate` (or the memory budget, when
  // set, for a first segment).
  Segment NewSegment(uint64_t design_keys, double rate, bool first) const;
  // Starts the rebuild thread, into a chain whose first segment is for
  // `design_keys`. REQUIRES: mu_ held, no rebuild running (building_ null).
  void StartRebuildLocked(uint64_t design_keys) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunRebuild();
  void JoinRebuild();
  // The two chains that take inserts: the answering one and the one a
  // rebuild fills.
  enum class Which { kActive, kBuilding };
  // Inserts `key_hashes` into the newest segment of `which`'s chain (when
  // it exists); returns that chain when the segment passed its design size
  // (the caller then calls Grow without the lock), else null.
  std::shared_ptr<const Chain> InsertLocked(Which which, absl::Span<const uint64_t> key_hashes)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The chain of `which`, and the key count of its newest segment.
  std::shared_ptr<const Chain>& ChainOf(Which which) ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return which == Which::kActive ? active_ : building_;
  }
  std::atomic<uint64_t>& NewestKeysOf(Which which) {
    return which == Which::kActive ? newest_keys_ : building_newest_keys_;
  }
  // A rebuild's scanned keys, into the building chain.
  void AddScanned(absl::Span<const uint64_t> key_hashes);
  // Adds a segment after `full`, the chain of `which` whose newest segment
  // passed its design size, unless the chain changed meanwhile. One call
  // at a time allocates (growing_); the others return false at once, and a
  // later insert into the still-full segment calls again. Returns true
  // when this call did the check (and grew the chain if it was still
  // `full`).
  bool Grow(Which which, const std::shared_ptr<const Chain>& full);

  const UrlFilterOptions options_;
  const ScanFn scan_;
  const std::string file_;

  mutable absl::Mutex mu_;
  // The answering segments; null while none is ready.
  std::shared_ptr<const Chain> active_ ABSL_GUARDED_BY(mu_);
  // The chain a rebuild fills from its scan and from inserts; null when
  // no rebuild runs (so non-null means "rebuilding").
  std::shared_ptr<const Chain> building_ ABSL_GUARDED_BY(mu_);
  uint64_t rebuilds_ ABSL_GUARDED_BY(mu_) = 0;
  std::string load_result_ ABSL_GUARDED_BY(mu_);
  absl::Duration last_rebuild_time_ ABSL_GUARDED_BY(mu_);
  std::thread rebuild_thread_ ABSL_GUARDED_BY(mu_);  // joined by JoinRebuild

  // Keys in the newest segment of active_ / of building_.
  std::atomic<uint64_t> newest_keys_{0};
  std::atomic<uint64_t> building_newest_keys_{0};
  // Set while a Grow allocates a segment. One flag for both chains: only
  // the rebuild at Start fills building_, while active_ is still null, so
  // the two never grow at the same time.
  std::atomic<bool> growing_{false};
  std::atomic<bool> cancel_{false};
  std::atomic<uint64_t> keys_skipped_{0};
  std::atomic<uint64_t> keys_read_{0};
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_BLOOM_URL_FILTER_FRONT_H_
