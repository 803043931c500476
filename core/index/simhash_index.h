// simhash_index.h: an exact in-memory near-duplicate index over 64-bit
// SimHash fingerprints (Manku, Jain, Das Sarma 2007, "Detecting
// near-duplicates for web crawling"). Query returns every stored entry within
// a Hamming distance, exactly as a brute-force scan would, in roughly
// (k+1) * N / 2^16 fingerprint comparisons instead of N with the default
// layout (k+1 blocks); more blocks (C(B, k) tables with longer keys) trade
// memory for fewer comparisons. Design, memory layout and measured figures:
// docs/simhash_index.md.
//
// Example:
//   SimHashIndex index(/*max_distance=*/3);  // blocks: default (4 tables)
//   index.BulkInsert(entries_from_the_store);        // startup load
//   index.Insert(0x0123456789abcdefULL, /*id=*/42);   // online
//   size_t total = 0;
//   std::vector<SimHashIndex::Match> near =
//       index.Query(0x0123456789abcdeeULL, /*max_distance=*/3, /*limit=*/10,
//                   &total);
//   // near[0] == {0x0123456789abcdefULL, 42, /*distance=*/1}; total == 1.
#ifndef DEDUPD_CORE_INDEX_SIMHASH_INDEX_H_
#define DEDUPD_CORE_INDEX_SIMHASH_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"

namespace dedupd {

// SimHashIndex: a set of (fingerprint, id) entries answering "which stored
// fingerprints are within Hamming distance d of this one".
//
// The entry set is a set: one (fingerprint, id) pair is stored at most once,
// but one id may be stored with several fingerprints and one fingerprint with
// several ids.
//
// Thread safety: thread-safe. Internally synchronized by one absl::Mutex:
// Query, size, MemoryBytes run concurrently with each other (shared lock);
// Insert, Remove, BulkInsert are exclusive.
//
// Memory: 10 * tables() bytes per stored entry, up to 1/16 more as growth
// slack after online inserts, 16 bytes of allocator overhead per non-empty
// bucket, and a fixed 1 MiB per table (65,536 buckets each). With the
// default layout (blocks = max_distance + 1, one table per block): 40.9 bytes
// per entry at k = 3 and 10^7 entries after a bulk load, at most ~44 after
// online inserts (see MemoryBytes). More blocks mean C(blocks, max_distance)
// tables: 100 bytes per entry at k = 3, blocks = 5.
class SimHashIndex {
 public:
  // The largest max_distance an index can be built for. Beyond it the
  // pigeonhole blocks get shorter than 8 bits and a query reads more than
  // 1/256 of every one of its k+1 tables, i.e. approaches a brute-force scan.
  static constexpr int kMaxSupportedDistance = 7;

  // Limits on the number of blocks B (Manku et al.'s layouts): at most
  // kMaxExtraBlocks more than max_distance + 1, and at most kMaxTables tables
  // (C(B, max_distance) of them; 10 bytes per entry each, and 1 MiB of bucket
  // headers each). So k = 3 allows B = 4, 5, 6 (4, 10, 20 tables: 40, 100,
  // 200 bytes per entry); k = 4 allows 5, 6 (5, 15 tables); k >= 5 only
  // k + 1 (C(k+2, k) > 20).
  static constexpr int kMaxExtraBlocks = 2;
  static constexpr int kMaxTables = 20;

  // Whether an index can be built for (max_distance, blocks): blocks == 0
  // (the default layout) or max_distance + 1 <= blocks <= max_distance + 1 +
  // kMaxExtraBlocks with C(blocks, max_distance) <= kMaxTables; and
  // 0 <= max_distance <= kMaxSupportedDistance.
  // Example: IsValidLayout(3, 5) is true; IsValidLayout(3, 3) and
  // IsValidLayout(5, 7) are false.
  static bool IsValidLayout(int max_distance, int blocks);

  // The number of blocks `blocks == 0` stands for: max_distance + 1, i.e.
  // max_distance + 1 tables, the fewest and the smallest (measured at 10^6,
  // 10^7 and 10^8 entries for k = 3 in docs/simhash_index.md: more blocks
  // cost 2.5x the memory, over the 48 bytes per fingerprint target).
  static int DefaultBlocks(int max_distance) { return max_distance + 1; }

  // The index answers Query exactly for every distance <= max_distance. The
  // 64 bits are cut into `blocks` contiguous blocks, and there is one table
  // per combination of blocks - max_distance of them (their bits lead the
  // table's permuted key): C(blocks, max_distance) tables. blocks == 0 means
  // DefaultBlocks(max_distance) (one table per block, k + 1 tables). More
  // blocks mean longer table keys, so fewer candidates per probe, but more
  // tables: more memory (10 bytes per entry per table), slower inserts and
  // bulk loads.
  // Default: max_distance 3 (Manku et al.'s choice for 64-bit SimHash of web
  // pages), blocks 0.
  // REQUIRES: IsValidLayout(max_distance, blocks) (checked: aborts).
  explicit SimHashIndex(int max_distance = 3, int blocks = 0);

  SimHashIndex(const SimHashIndex&) = delete;
  SimHashIndex& operator=(const SimHashIndex&) = delete;
  ~SimHashIndex();

  struct Entry {
    uint64_t fingerprint;
    uint32_t id;
  };
  struct Match {
    uint64_t fingerprint;
    uint32_t id;
    int distance;  // Hamming distance to the queried fingerprint
    bool operator==(const Match& o) const {
      return fingerprint == o.fingerprint && id == o.id && distance == o.distance;
    }
  };

  // Insert stores (fingerprint, id). Inserting a pair that is already stored
  // is a no-op. O(tables() * m) where m, the entries in one bucket, is
  // about size() / 65536 (a memmove of m * 10 bytes per table); no O(size())
  // work. Loads the buckets into cache under the shared lock first, so the
  // exclusive section, which blocks queries, does not wait on memory.
  void Insert(uint64_t fingerprint, uint32_t id);

  // Remove deletes (fingerprint, id); returns true when it was stored.
  // Same cost as Insert.
  bool Remove(uint64_t fingerprint, uint32_t id);

  // BulkInsert stores every entry of `entries` (duplicates, within `entries`
  // or of stored pairs, are stored once). One bucket sort per table instead
  // of one memmove per entry and table: use it for startup loads of millions
  // of entries. O(tables() * (size() + n log(n / 65536))) for n entries
  // (about 3 CPU seconds for 10^7 entries at k = 3), with 16 bytes of scratch
  // per entry, holding the exclusive lock throughout. Buckets it fills are
  // sized exactly (no growth slack).
  void BulkInsert(absl::Span<const Entry> entries);

  // Query returns the stored entries within Hamming distance `max_distance`
  // of `fingerprint` -- exactly those a brute-force scan would -- ordered by
  // (distance, id, fingerprint), at most `limit` of them. When `total` is
  // non-null it receives how many entries are within the distance before the
  // limit is applied. A negative max_distance matches nothing.
  // Cost: C(max_distance + r, r) bucket lookups, r = blocks() -
  // this->max_distance() (max_distance + 1 of them with the default layout;
  // all tables() when max_distance is the index's), each reading about
  // size() / 2^min(16, prefix bits) entries (prefix bits: the r blocks' bits,
  // 16 for k = 3 and the default layout) after a binary search when the
  // prefix is longer than 16 bits, plus sorting the matches.
  // REQUIRES: max_distance <= this->max_distance() (checked: aborts).
  std::vector<Match> Query(uint64_t fingerprint, int max_distance, size_t limit,
                           size_t* total = nullptr) const;

  // The number of stored entries.
  size_t size() const;

  // Heap bytes held: bucket arrays at their capacity (growth slack
  // included), the bucket directories, and an estimate of 16 bytes of
  // allocator overhead per bucket allocation. O(tables() * 65536).
  size_t MemoryBytes() const;

  // The max_distance the index was built for.
  int max_distance() const { return max_distance_; }

  // The number of blocks the 64 bits are cut into (the constructor's
  // `blocks`, with 0 resolved to DefaultBlocks(max_distance())).
  int blocks() const { return blocks_; }

  // The number of tables: C(blocks(), max_distance()).
  int tables() const;

 private:
  class Bucket;
  class Directory;
  struct Layout;
  struct Table;

  // One layout per table: the tables' block combinations in colexicographic
  // order, and their permutations (aborts unless IsValidLayout).
  static std::vector<Layout> MakeLayouts(int max_distance, int blocks);

  // Loads the bucket of `fingerprint` in every table into cache.
  void TouchBucketsLocked(uint64_t fingerprint) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  // Whether (fingerprint, id) is stored (looked up in table 0).
  bool ContainsLocked(uint64_t fingerprint, uint32_t id) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const int max_distance_;
  const int blocks_;
  // One per table: which block it keys on and how it permutes the bits.
  // Fixed at construction, so read without the lock.
  const std::vector<Layout> layouts_;
  // probes_[d]: how many tables (the first ones) a query at distance d
  // probes, d in 0..max_distance_. Fixed at construction.
  const std::vector<int> probes_;
  mutable absl::Mutex mu_;
  // Owns every table's 65,536 buckets (one allocation, for huge pages).
  std::unique_ptr<Directory> directory_ ABSL_GUARDED_BY(mu_);
  // One per layout: its buckets, of entries sorted by permuted bits.
  std::vector<Table> tables_ ABSL_GUARDED_BY(mu_);
  size_t size_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace dedupd

#endif  // DEDUPD_CORE_INDEX_SIMHASH_INDEX_H_
