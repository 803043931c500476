// minhash_near_index.h: one namespace's MinHash near-text index for the
// store backends: an LshIndex (core/index/lsh_index.h) over the stored
// texts' signatures plus the signatures themselves (kept in RAM, so an
// entry can be erased by id alone). The planners verify each candidate
// with EstimateJaccard against the signature of its stored fingerprint
// record.
//
// The LshIndex's buckets per band follow the count: BulkLoad (a store's
// Open) sizes them for the texts loaded, and online inserts rebuild the
// index with more buckets when the count outgrows them (see
// kGrowTextsPerBucket). A namespace without signatures allocates nothing.
//
// The content layer keeps one per namespace over its texts' fingerprint
// records, the chunk layer one per namespace over its chunk text records.
//
// Example:
//   MinHashNearIndex near;
//   near.BulkLoad(std::move(entries_read_at_open));  // {signature, id} each
//   near.Insert(/*id=*/7, minhasher.Sign(text));
//   std::vector<uint32_t> candidates = near.Query(minhasher.Sign(other));
//   near.Erase(7);
//
// Thread safety: thread-safe (an internal reader/writer lock: shared for
// Query, size, bucket_bits, MemoryBytes; exclusive for Insert, BulkLoad,
// Erase).
#ifndef DEDUPD_STORAGE_MINHASH_NEAR_INDEX_H_
#define DEDUPD_STORAGE_MINHASH_NEAR_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/index/lsh_index.h"
#include "core/text/minhash.h"

namespace dedupd {

class MinHashNearIndex {
 public:
  // Bounds of the LshIndex's bucket_bits. The least, 2^8 buckets per band,
  // costs 36 KB once a namespace has a signature.
  static constexpr int kMinBucketBits = 8;
  static constexpr int kMaxBucketBits = LshIndex::kMaxBucketBits;  // 16
  // A built index has kTextsPerBucket to twice that texts per bucket
  // (BucketBitsFor), below kMinBucketBits' and above kMaxBucketBits' range
  // fewer and more. 32 keeps a bucket's keys within one or two cache lines,
  // so that a query's 18 bucket scans cost about two cache misses each (at
  // 100 to 400 texts per bucket the scans were 11% of CheckChunks' server
  // CPU); a bucket's fixed cost (32 bytes when not empty, 8 when empty)
  // against the 6 bytes of each entry stays ~1 byte per text and band
  // (docs/minhash.md, "Buckets that follow the count").
  static constexpr size_t kTextsPerBucket = 32;
  // An Insert that takes size() past kGrowTextsPerBucket << bucket_bits()
  // (while bucket_bits() < kMaxBucketBits) rebuilds the index with
  // BucketBitsFor(size()), i.e. two more bits, 32 texts per bucket again.
  // So a bucket holds at most 128 texts below 2^16 buckets, queries scan at
  // most ~4x what a bulk-built index of the same size would, and rebuilds
  // come each time the count has quadrupled: the rebuild at 4n entries is
  // paid by the 3n Inserts since the last, so amortized each Insert pays
  // 4/3 of a bulk-inserted entry, a fraction of its own cost. The rebuild
  // runs inside one Insert under the exclusive lock: that Insert (and
  // every Query meanwhile) waits for it (docs/minhash.md, "Measured").
  static constexpr size_t kGrowTextsPerBucket = 4 * kTextsPerBucket;

  // BucketBitsFor returns floor(log2(texts / kTextsPerBucket)) clamped to
  // [kMinBucketBits, kMaxBucketBits]: the bucket_bits of an index built for
  // `texts` texts. Example: BucketBitsFor(10^6) == 14, BucketBitsFor(0) == 8,
  // BucketBitsFor(10^7) == 16.
  static int BucketBitsFor(size_t texts);

  MinHashNearIndex() = default;
  MinHashNearIndex(const MinHashNearIndex&) = delete;
  MinHashNearIndex& operator=(const MinHashNearIndex&) = delete;

  // Insert stores text `id` with signature `sig`, replacing the signature
  // the id had. O(bands * texts per bucket), plus now and then a rebuild
  // (kGrowTextsPerBucket).
  void Insert(uint32_t id, const MinHashSignature& sig);
  // Insert of every {signature, id} of `texts`, in order (a later entry of
  // an id replaces an earlier one), under one acquisition of the lock: a
  // store inserts a claim's texts with one call.
  void Insert(absl::Span<const LshIndex::Entry> texts);

  // BulkLoad stores every entry of `entries` as Insert would (a later
  // entry of an id replaces an earlier one and the one stored), then
  // rebuilds the LshIndex with BucketBitsFor(size()) buckets per band by
  // LshIndex::BulkInsert: for a store's Open, which reads the stored
  // signatures and hands them over in one call. O(size()); figures in
  // docs/minhash.md, "Measured". Takes `entries`' storage as its
  // own when nothing is stored yet (releasing its unused capacity, by a
  // copy, when that is more than 1/8 of it); an empty `entries` changes
  // nothing.
  // Example:
  //   std::vector<LshIndex::Entry> entries;
  //   entries.push_back({*value.minhash, id});  // per fingerprint record
  //   near.BulkLoad(std::move(entries));
  void BulkLoad(std::vector<LshIndex::Entry> entries);

  // Erase removes text `id`; false when it was not stored. Memory is not
  // given back (nor are buckets merged) until the next BulkLoad.
  bool Erase(uint32_t id);

  // Query returns the ids of the stored texts that share an LSH band with
  // `sig` (candidates, to verify), ascending.
  std::vector<uint32_t> Query(const MinHashSignature& sig) const;
  // Query, keeping only the candidates whose stored signature's
  // EstimateJaccard with `sig` is at least `min_estimate`: a verification
  // by the estimate done here, on the signatures in RAM, so that a store
  // reads the records of the texts that pass only.
  std::vector<uint32_t> Query(const MinHashSignature& sig, double min_estimate) const;
  // Find returns the signature stored for text `id`, if any (for
  // consistency checks against the stored records).
  std::optional<MinHashSignature> Find(uint32_t id) const;
  // The number of texts stored.
  size_t size() const;

  // The LshIndex's bucket_bits; 0 before the first signature.
  int bucket_bits() const;

  // Heap bytes held: the LshIndex (LshIndex::MemoryBytes), the signatures
  // and ids (132 bytes per text, plus at most one block of
  // EntryBlocks::kBlockEntries not yet filled) and the id map (9 bytes per
  // slot, up to twice the texts).
  size_t MemoryBytes() const;

 private:
  // EntryBlocks: the stored texts' {signature, id}, indexed 0..size()-1 like
  // a vector, but kept as the array BulkLoad adopted (or, while no block
  // exists, a vector that grows to kBlockEntries) followed by blocks of
  // kBlockEntries entries. Appending never moves what is stored: with one
  // vector, each growth copied every signature under the exclusive lock
  // (132 MB at 10^6 texts, a stall of every call of the namespace, and a
  // second copy in memory while it ran).
  class EntryBlocks {
   public:
    // 528 KiB a block: enough that a rebuild's parts are few, little
    // enough that a namespace's unfilled block costs little.
    static constexpr size_t kBlockEntries = 4096;

    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    LshIndex::Entry& operator[](size_t i);
    const LshIndex::Entry& operator[](size_t i) const;
    void push_back(const LshIndex::Entry& e);
    // Removes the last entry. REQUIRES: !empty().
    void pop_back();
    // Makes `entries` the stored entries, taking its storage.
    // REQUIRES: empty().
    void Adopt(std::vector<LshIndex::Entry> entries);
    // Releases the first array's unused capacity, by a copy, when that is
    // more than 1/8 of it and no block exists.
    void ShrinkFirst();
    // The entries from position `from` on, as spans in order.
    std::vector<absl::Span<const LshIndex::Entry>> Parts(size_t from = 0) const;
    // Heap bytes held (capacity, not size).
    size_t MemoryBytes() const;

   private:
    std::vector<LshIndex::Entry> first_;
    std::vector<std::unique_ptr<LshIndex::Entry[]>> blocks_;
    // One emptied block kept for the next push_back, so that an erase
    // and an insert at a block's boundary do not free and allocate it.
    std::unique_ptr<LshIndex::Entry[]> spare_;
    size_t size_ = 0;
  };

  // Replaces lsh_ with an index of BucketBitsFor(entries_.size()) bits
  // holding entries_; null when entries_ is empty.
  void RebuildLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  // Null until the first signature.
  std::unique_ptr<LshIndex> lsh_ ABSL_GUARDED_BY(mu_);
  // The stored texts, in no order: an erase moves the last one into the
  // hole. Dense rather than a map of id to signature, so that a rebuild
  // hands them to LshIndex::BulkInsert as they are.
  EntryBlocks entries_ ABSL_GUARDED_BY(mu_);
  // id -> position in entries_.
  absl::flat_hash_map<uint32_t, uint32_t> positions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_MINHASH_NEAR_INDEX_H_
