// shingle_set.h: a text's distinct shingle hashes truncated to 32 bits, a
// set small enough to keep per stored chunk, and the exact Jaccard of two
// such sets. The chunk store verifies an LSH candidate with it instead of
// the MinHash estimate when both chunks kept a set: at the edits' typical
// J ~ 0.8 the estimate passes a threshold of 0.8 only half the time
// (docs/benchmarks.md, "Exact verification for chunks").
//
// Which 32 bits: bits 8..39 (kShingleSet32Shift). A MinHash signature
// (minhash.h) keeps the low 8 bits of a bin's minimum and picks the bin by
// the top 7, so two texts that LSH proposes already agree in those bits
// more often than chance: two one-shingle texts are candidates exactly
// when their hashes' low 8 bits agree. Bits 8..39 are neither, so among
// candidates two distinct shingles still share a set element with
// probability 2^-32; the low 32 bits would make that 2^-24 for them
// (measured: docs/benchmarks.md). Two sets of n and m shingles then gain a
// false common element with probability about n * m / 2^32 (1.5e-5 at
// n = m = 256) and a set loses one of its own with about n^2 / 2^33.
//
// Example:
//   ShingleHashes s = DistinctShingleHashes("the quick brown fox jumps", 3);
//   ShingleSet32 a(s.distinct);  // 3 shingles (copy before the next call)
//   ShingleSet32 b(DistinctShingleHashes("the quick brown fox leaps", 3).distinct);
//   ExactJaccard(a, b);  // 0.5: 2 of 4 distinct shingles shared
#ifndef DEDUPD_CORE_TEXT_SHINGLE_SET_H_
#define DEDUPD_CORE_TEXT_SHINGLE_SET_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace dedupd {

// The right shift that picks a shingle hash's 32 bits for the set.
inline constexpr int kShingleSet32Shift = 8;

// A text with more distinct shingles keeps no set: its near matches are
// verified by the MinHash estimate. 256 covers the store's ~500-byte
// chunks (p99 86 shingles) and chunks up to ~1,500 bytes at <= 1 KB per
// set; one changed word in more shingles is J > 0.97, where the estimate
// loses little (docs/benchmarks.md).
inline constexpr size_t kMaxExactShingles = 256;

// ShingleSet32: sorted, duplicate-free 32-bit truncations of a text's
// distinct shingle hashes. Empty means "no set" to the chunk store (every
// text has at least one shingle). A value type; thread-compatible.
class ShingleSet32 {
 public:
  ShingleSet32() = default;
  // The set of `distinct_shingles` (DistinctShingleHashes(...).distinct):
  // bits hash_shift..hash_shift+31 of each, sorted, duplicates (two hashes
  // that truncate alike) merged. hash_shift other than kShingleSet32Shift
  // is for measurement only (bench/quality/chunk_quality.cc).
  // REQUIRES: 0 <= hash_shift <= 32. O(n log n).
  explicit ShingleSet32(absl::Span<const uint64_t> distinct_shingles,
                        int hash_shift = kShingleSet32Shift);

  // FromSorted returns the set holding `hashes`, or nullopt unless they
  // are strictly increasing (a decoder's check: DataLoss to its caller).
  static std::optional<ShingleSet32> FromSorted(std::vector<uint32_t> hashes);

  // The elements, ascending. Valid while the set lives and is not changed.
  const std::vector<uint32_t>& hashes() const { return hashes_; }
  size_t size() const { return hashes_.size(); }
  bool empty() const { return hashes_.empty(); }

  bool operator==(const ShingleSet32& o) const { return hashes_ == o.hashes_; }
  bool operator!=(const ShingleSet32& o) const { return !(*this == o); }

 private:
  std::vector<uint32_t> hashes_;
};

// ExactJaccard returns |a ∩ b| / |a ∪ b| (1 when both are empty), by a
// merge of the two sorted sets: O(|a| + |b|).
double ExactJaccard(const ShingleSet32& a, const ShingleSet32& b);

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_SHINGLE_SET_H_
