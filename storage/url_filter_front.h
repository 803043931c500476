// url_filter_front.h: the exact URL store's in-memory Bloom front (issue 5,
// default mode). A BloomFilter over the stored URL keys answers "definitely
// not stored" so that a claim of a new URL skips the store read; "maybe
// stored" goes to the store, so answers stay exact. The front owns the
// filter's life: loading the persisted copy at startup, rebuilding it in the
// background (from a scan of the store) when the copy is missing or stale,
// growing it when the URL count passes its design size, and persisting it
// at a clean shutdown. It knows nothing of RocksDB: the store hands it a
// scan function. docs/storage_format.md ("URL filter file") has the file.
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
#ifndef DEDUPD_STORAGE_URL_FILTER_FRONT_H_
#define DEDUPD_STORAGE_URL_FILTER_FRONT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/bloom_filter.h"

namespace dedupd {

struct UrlFilterOptions {
  // Put the filter in front of the store. When false the front stays empty
  // and every key is read from the store.
  // Default: true.
  bool enabled = true;

  // The design size: URLs the first filter is sized for. When the stored
  // URL count passes a filter's design size, a filter for twice the count
  // is built in the background (the old one keeps answering meanwhile).
  // Default: 10,000,000 (about 12 MB at 1%).
  uint64_t expected_urls = 10'000'000;

  // False positive rate at the design size: the share of new URLs that
  // still cost a store read. Default: 0.01. Range: (0, 0.5].
  double false_positive_rate = 0.01;

  // When non-zero, the first filter's size in bytes instead of the one
  // expected_urls and false_positive_rate give; its design size is then
  // the keys it holds at false_positive_rate. Default: 0.
  size_t memory_budget_bytes = 0;
};

class UrlFilterFront {
 public:
  // ScanFn emits every stored URL key, from a consistent view of the store
  // taken after the call begins, and returns OK; it stops early (returning
  // Cancelled) once `cancel` is set. Called on the rebuild thread.
  using ScanFn = std::function<absl::Status(
      const std::function<void(absl::string_view key)>& emit,
      const std::atomic<bool>& cancel)>;

  // `file` is where Persist writes the filter and Start looks for it.
  UrlFilterFront(const UrlFilterOptions& options, ScanFn scan, std::string file);
  UrlFilterFront(const UrlFilterFront&) = delete;
  UrlFilterFront& operator=(const UrlFilterFront&) = delete;
  // Stops a rebuild in flight (without persisting).
  ~UrlFilterFront();

  // Start loads the persisted filter when its tag equals `store_tag` (the
  // store's state when it was written, e.g. RocksDB's last sequence number:
  // equal means no write happened since) and its checksums hold; otherwise
  // (missing, stale, damaged, other version) it starts a rebuild in the
  // background and the front answers "maybe" for every key until the
  // rebuild is done. Never fails: a bad file only costs a rebuild, and the
  // reason is in stats().load_result. Does nothing when disabled.
  void Start(uint64_t store_tag);

  // A moment's view of the front; cheap to copy, keeps its filter alive.
  class View {
   public:
    // False while no filter is ready (disabled, or the first rebuild runs):
    // then every key must be read from the store.
    bool ready() const { return filter_ != nullptr; }
    // REQUIRES: ready().
    bool MayContain(uint64_t key_hash) const {
      return filter_->MayContain(key_hash);
    }

   private:
    friend class UrlFilterFront;
    std::shared_ptr<const BloomFilter> filter_;
  };
  View Acquire() const;

  // KeyHash is BloomFilter::KeyHash of a stored key (its encoded bytes).
  static uint64_t KeyHash(absl::string_view key) {
    return BloomFilter::KeyHash(key);
  }

  // Inserted records keys just written to the store (their hashes). May
  // start a growth rebuild. Thread-safe.
  void Inserted(absl::Span<const uint64_t> key_hashes);

  // Counts of store reads the front decided, for stats and benchmarks.
  void CountProbes(uint64_t skipped, uint64_t read) {
    keys_skipped_.fetch_add(skipped, std::memory_order_relaxed);
    keys_read_.fetch_add(read, std::memory_order_relaxed);
  }

  // StopRebuilds cancels and joins a rebuild in flight and starts no more
  // (a growing filter stays the old, correct one). Inserted keeps working.
  // Call before the store stops serving scans.
  void StopRebuilds();

  // Persist calls StopRebuilds, then, when a filter is ready, writes it to
  // the file (temporary file, fsync, rename, directory fsync) tagged
  // `store_tag`. REQUIRES: no Inserted runs concurrently or later (the
  // store takes no more writes). Returns the write's error: the store
  // stays correct without the file (the next Start rebuilds).
  absl::Status Persist(uint64_t store_tag);

  // WaitForRebuild blocks until no rebuild runs (the first one, or a growth
  // rebuild) or `timeout` passes; returns whether a filter is ready. For
  // tests and benchmarks.
  bool WaitForRebuild(absl::Duration timeout) const;

  struct Stats {
    bool enabled = false;
    bool ready = false;            // a filter answers
    bool rebuilding = false;       // a rebuild runs
    uint64_t rebuilds = 0;         // rebuilds finished by this process
    std::string load_result;       // what Start did: "loaded", "rebuilding: <why>"
    uint64_t keys = 0;             // keys in the answering filter (approx.)
    uint64_t design_keys = 0;      // its design size
    uint64_t memory_bytes = 0;     // its bit array (plus one being built)
    double estimated_false_positive_rate = 0;  // at `keys`
    uint64_t keys_skipped = 0;     // store reads skipped (definitely absent)
    uint64_t keys_read = 0;        // keys read from the store
    absl::Duration last_rebuild_time;
  };
  Stats stats() const;

 private:
  // Sizes a filter for `design_keys` keys (or the memory budget for the
  // first one).
  std::shared_ptr<BloomFilter> NewFilter(uint64_t design_keys, bool first) const;
  // Starts the rebuild thread for a filter of `design_keys`.
  // REQUIRES: mu_ held, !rebuilding_.
  void StartRebuildLocked(uint64_t design_keys) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunRebuild();
  void JoinRebuild();

  const UrlFilterOptions options_;
  const ScanFn scan_;
  const std::string file_;

  mutable absl::Mutex mu_;
  std::shared_ptr<BloomFilter> active_ ABSL_GUARDED_BY(mu_);
  uint64_t active_design_keys_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<BloomFilter> building_ ABSL_GUARDED_BY(mu_);
  uint64_t building_design_keys_ ABSL_GUARDED_BY(mu_) = 0;
  bool rebuilding_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t rebuilds_ ABSL_GUARDED_BY(mu_) = 0;
  std::string load_result_ ABSL_GUARDED_BY(mu_);
  absl::Duration last_rebuild_time_ ABSL_GUARDED_BY(mu_);
  std::thread rebuild_thread_;  // joined by JoinRebuild; touched under join_mu_
  absl::Mutex join_mu_;

  // Keys in active_ / inserted into building_ during its rebuild.
  std::atomic<uint64_t> active_keys_{0};
  std::atomic<uint64_t> building_keys_{0};
  std::atomic<bool> cancel_{false};
  std::atomic<uint64_t> keys_skipped_{0};
  std::atomic<uint64_t> keys_read_{0};
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_URL_FILTER_FRONT_H_
