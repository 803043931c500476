// lsh_index.h: an in-memory LSH banding index over MinHash signatures
// (core/text/minhash.h), for finding the stored texts whose shingle
// Jaccard similarity with a new one is above a threshold (Indyk and Motwani
// 1998; banding as in Leskovec, Rajaraman, Ullman, "Mining of Massive
// Datasets", ch. 3.4). The signature's first bands * rows slots are cut
// into `bands` bands of `rows` slots; a stored text is a candidate for a
// query when all rows of at least one band are equal, which for two texts
// of Jaccard similarity s happens with probability
// LshCandidateProbability(bands, rows, s) = 1 - (1 - s^rows)^bands: the
// S-curve. The index only finds candidates; the caller verifies each with
// EstimateJaccard against its stored signature. Design, the choice of
// 18 x 7 and measured figures: docs/minhash.md.
//
// Example:
//   LshIndex index;                        // 18 bands x 7 rows
//   index.BulkInsert(entries_from_the_store);  // startup load
//   index.Insert(minhasher.Sign(page_a), /*id=*/1);  // online
//   std::vector<uint32_t> ids = index.Query(minhasher.Sign(page_b));
//   for (uint32_t id : ids) {
//     if (EstimateJaccard(stored_signature(id), sig_b) >= 0.8) { /* near */ }
//   }
#ifndef DEDUPD_CORE_INDEX_LSH_INDEX_H_
#define DEDUPD_CORE_INDEX_LSH_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"
#include "core/text/minhash.h"

namespace dedupd {

// LshCandidateProbability returns 1 - (1 - s^rows)^bands: the probability
// that two signatures whose slots agree with probability `s` (their
// Jaccard similarity; with 8-bit slots, J + (1 - J) / 256) share all rows
// of at least one of `bands` bands. REQUIRES: bands, rows >= 1; 0 <= s <= 1.
// Example: LshCandidateProbability(18, 7, 0.8) == 0.986...
double LshCandidateProbability(int bands, int rows, double s);

// LshIndex: a set of (signature, id) entries answering "which stored
// signatures share a band with this one".
//
// The index keeps, per band, the pair (band key, id): a 32-bit hash of the
// band's rows (BandKey) and the id. One (signature, id) pair is stored at
// most once. An id should be stored with one signature at a time (the
// store's text ids are): two signatures of one id that share a band key
// share that band's entry, so erasing one would erase it for both.
//
// Thread safety: thread-compatible, not internally synchronized. Const
// methods (Query, size, MemoryBytes) may run concurrently with each
// other; Insert, BulkInsert and Erase need exclusive access. The store
// guards it with a reader/writer lock (shared for Query, exclusive for
// the others), as it guards its other per-namespace state.
//
// Memory: per band, 6 bytes per entry (the low 16 bits of the band key and
// the 32-bit id; the top bits select one of 2^bucket_bits buckets) plus up
// to 1/16 growth slack after Insert (none after BulkInsert), 8 bytes per
// bucket, and one allocation per non-empty bucket (8 bytes of head, 16 of
// allocator overhead counted). Default layout, one-by-one Insert: 116
// bytes per entry at 10^7 entries, 159 at 10^6 (117 there with
// bucket_bits 13); BulkInsert: 112 at 10^7, 113 at 10^6 with bucket_bits
// 13 (MemoryBytes; docs/minhash.md). Signatures are not held.
class LshIndex {
 public:
  // The default layout, for a Jaccard threshold of 0.8: candidate
  // probability 0.986 at s = 0.8, 0.999 at 0.85, 0.79 at 0.7, 0.13 at 0.5,
  // 0.004 at 0.3 and 2e-4 at 0.2 (docs/minhash.md compares 16 x 6, 21 x 6,
  // 25 x 5, 16 x 8). 126 of the 128 slots; EstimateJaccard uses all 128.
  static constexpr int kDefaultBands = 18;
  static constexpr int kDefaultRows = 7;
  // Most rows per band: a band key hashes at most 16 one-byte slots.
  static constexpr int kMaxRows = 16;
  // Seed of the band keys, ASCII "dedupdLS". Band keys can be persisted
  // (a distributed store keeps bucket sets per band key): part of the
  // format, pinned by golden values in lsh_index_test.cc.
  static constexpr uint64_t kSeed = 0x646564757064'4C53ULL;

  // Whether an index can be built for (bands, rows): bands >= 1,
  // 1 <= rows <= kMaxRows, bands * rows <= kMinHashSlots.
  static bool IsValidLayout(int bands, int rows);

  // BandKey returns the 32-bit key of band `band` (slots band * rows ..
  // band * rows + rows - 1) of `sig`: with lo and hi the slots' bytes as
  // little-endian 64-bit integers (slot band * rows + i is byte i; bytes 0-7
  // in lo, 8-15 in hi, zero beyond rows),
  //   h = SplitMix64(lo XOR (kSeed + band)); if rows > 8: h = SplitMix64(h XOR hi)
  //   key = h >> 32
  // REQUIRES: IsValidLayout(band + 1 ... , rows): (band + 1) * rows <=
  // kMinHashSlots, 1 <= rows <= kMaxRows.
  static uint32_t BandKey(const MinHashSignature& sig, int band, int rows);

  // Bounds and default of the constructor's bucket_bits.
  static constexpr int kMinBucketBits = 4;
  static constexpr int kMaxBucketBits = 16;
  static constexpr int kDefaultBucketBits = 16;

  // An index of `bands` bands of `rows` rows, each band with
  // 2^bucket_bits buckets. A bucket costs 8 bytes, and 32 more (its
  // allocation's head and malloc overhead) when it is not empty: memory
  // wants buckets of 100 entries or more, queries want few (each entry
  // scanned is 2 bytes of keys): the store's MinHashNearIndex::BucketBitsFor
  // picks about log2(expected entries / 32), 16 (the default) from
  // ~2 * 10^6 entries. Fewer bits also mean fewer key bits compared: a
  // random entry shares a band's bucket and 16-bit key with probability
  // 2^-(16 + bucket_bits).
  // REQUIRES: IsValidLayout(bands, rows); kMinBucketBits <= bucket_bits <=
  // kMaxBucketBits (checked: aborts).
  // Default: kDefaultBands x kDefaultRows, kDefaultBucketBits.
  explicit LshIndex(int bands = kDefaultBands, int rows = kDefaultRows,
                    int bucket_bits = kDefaultBucketBits);
  LshIndex(const LshIndex&) = delete;
  LshIndex& operator=(const LshIndex&) = delete;
  ~LshIndex();

  // One (signature, id) pair: what BulkInsert takes. 132 bytes.
  struct Entry {
    MinHashSignature signature;
    uint32_t id;
  };

  // Insert stores (sig, id); returns false (and changes nothing) when the
  // pair is already stored. O(bands * m), m the entries of one bucket:
  // about size() / 2^bucket_bits.
  bool Insert(const MinHashSignature& sig, uint32_t id);

  // BulkInsert stores every entry of `entries`: afterwards the index
  // answers every Query as if each had been Insert-ed (on an empty index
  // or one already holding entries), but without Insert's scan for a
  // stored pair. It sorts the entries by bucket, band by band (a two-pass
  // radix sort), grows each bucket that receives entries once to its exact
  // new size (no growth slack) and fills it. O(bands * (entries.size() +
  // 2^bucket_bits)); reads every signature once per 6 bands; 36 bytes per
  // entry of temporary memory (360 MB for 10^7). Fewer than 1,024 entries
  // are appended one at a time, with Insert's growth slack but not its
  // scan: an Insert for a caller that knows the pair is new.
  // REQUIRES: no pair of `entries` is stored already or listed twice
  // (distinct ids that are not stored suffice). Not checked: such a pair
  // is kept twice, and while Query still returns its id once, size()
  // counts it twice and Erase removes one copy per call.
  // Example:
  //   std::vector<LshIndex::Entry> entries = ...;  // read from the store
  //   LshIndex index(18, 7, /*bucket_bits=*/16);
  //   index.BulkInsert(entries);  // 10^7 entries: see docs/minhash.md
  void BulkInsert(absl::Span<const Entry> entries);
  // BulkInsert of the entries of every part, in order, as if concatenated:
  // for a caller that keeps its entries in blocks rather than one array.
  // Example: index.BulkInsertParts({absl::MakeConstSpan(a), absl::MakeConstSpan(b)});
  void BulkInsertParts(absl::Span<const absl::Span<const Entry>> parts);

  // Erase removes (sig, id); returns true when it was stored. `sig` must be
  // the signature the id was inserted with. Same cost as Insert.
  bool Erase(const MinHashSignature& sig, uint32_t id);

  // Query returns the ids of the stored entries that share at least one
  // band key with `sig`, ascending, each once: every entry sharing all rows
  // of a band (the S-curve's candidates), and rarely (probability about
  // bands * 2^-32 per stored entry) one whose band key merely collides.
  // Cost: bands bucket scans of about size() / 2^bucket_bits 16-bit keys
  // each, plus sorting the candidates.
  std::vector<uint32_t> Query(const MinHashSignature& sig) const;

  // Query into `out` (cleared first), reusing its capacity.
  void Query(const MinHashSignature& sig, std::vector<uint32_t>* out) const;

  // The number of stored entries.
  size_t size() const { return size_; }

  // Heap bytes held: bucket pointers, bucket allocations at their capacity
  // (growth slack included) and 16 bytes of allocator overhead per
  // allocation. O(bands * 2^bucket_bits).
  size_t MemoryBytes() const;

  int bands() const { return bands_; }
  int rows() const { return rows_; }
  int bucket_bits() const { return bucket_bits_; }

 private:
  class Bucket;

  Bucket& BucketOf(int band, uint32_t key) const;
  // Sets keys[b] to band b's key of `sig` and buckets[b] to its bucket, for
  // every band, and prefetches each bucket's pointer, then each bucket's
  // head, so that the bands' cache misses overlap (Query, small BulkInsert).
  void LocateBuckets(const MinHashSignature& sig, uint32_t* keys, Bucket** buckets) const;

  const int bands_;
  const int rows_;
  const int bucket_bits_;
  // bands_ << bucket_bits_ buckets, band-major.
  std::unique_ptr<Bucket[]> buckets_;
  size_t size_ = 0;
};

}  // namespace dedupd

#endif  // DEDUPD_CORE_INDEX_LSH_INDEX_H_
