// shingle_set32.h: a text's distinct shingle hashes truncated to 32 bits, a
// set small enough to keep per stored chunk, and the exact Jaccard of two
// such sets: the "exact verification" that chunk_quality's --verify=exact
// measures as a proposal for the chunk store (docs/benchmarks.md, "Exact
// verification").
//
// Which 32 bits: bits 8..39 (kShingleSet32Shift). A MinHash signature
// (minhash.h) keeps the low 8 bits of a bin's minimum and picks the bin by
// the top 7, so two texts that LSH proposes already agree in those bits
// more often than chance: two one-shingle texts are candidates exactly
// when their hashes' low 8 bits agree. Bits 8..39 are neither, so among
// candidates two distinct shingles still share a set element with
// probability 2^-32; the low 32 bits would make that 2^-24 for them
// (measured: docs/benchmarks.md, "Exact verification"). Then two sets of n
// and m shingles gain a false common element with probability about
// n * m / 2^32 (1.5e-5 at n = m = 256) and a set loses one of its own with
// about n^2 / 2^33.
//
// Example:
//   ShingleSet32 a = ShingleSet32Of("the quick brown fox jumps", 3);  // 3 shingles
//   ShingleSet32 b = ShingleSet32Of("the quick brown fox leaps", 3);
//   ExactJaccard(a, b, 256);  // 0.5: 2 of 4 distinct shingles shared
//   ExactJaccard(a, b, 2);    // -1: more than 2 shingles, no set kept
#ifndef DEDUPD_BENCH_QUALITY_SHINGLE_SET32_H_
#define DEDUPD_BENCH_QUALITY_SHINGLE_SET32_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "bench/quality/sorted_sets.h"
#include "core/text/shingle_hashes.h"

namespace dedupd::bench {

// The right shift that picks a shingle hash's 32 bits for the set.
inline constexpr int kShingleSet32Shift = 8;

struct ShingleSet32 {
  // The distinct shingle hashes' bits 8..39 (or as ShingleSet32Of's
  // hash_shift says), sorted, without duplicates
  // (two 64-bit hashes may truncate to one).
  std::vector<uint32_t> hashes;
  // Distinct 64-bit shingle hashes: what a size limit applies to.
  size_t shingles = 0;
};

// ShingleSet32Of returns the set of `normalized_text` (NormalizeText's
// output) for `shingle_words`-word shingles (DistinctShingleHashes; a text
// shorter than a shingle is one shingle of all its words), each hash
// shifted right by hash_shift before truncation (0: its low 32 bits).
// REQUIRES: 1 <= shingle_words <= 16, 0 <= hash_shift <= 32.
inline ShingleSet32 ShingleSet32Of(absl::string_view normalized_text, int shingle_words,
                                   int hash_shift = kShingleSet32Shift) {
  const ShingleHashes s = DistinctShingleHashes(normalized_text, shingle_words);
  ShingleSet32 out;
  out.shingles = s.distinct.size();
  out.hashes.reserve(s.distinct.size());
  for (uint64_t h : s.distinct) out.hashes.push_back(static_cast<uint32_t>(h >> hash_shift));
  std::sort(out.hashes.begin(), out.hashes.end());
  out.hashes.erase(std::unique(out.hashes.begin(), out.hashes.end()), out.hashes.end());
  return out;
}

// ExactJaccard returns |a ∩ b| / |a ∪ b| of the two sets, or -1 when
// either text has more than max_shingles shingles (a store limited to
// max_shingles keeps no set for it). O(|a| + |b|).
inline double ExactJaccard(const ShingleSet32& a, const ShingleSet32& b, size_t max_shingles) {
  if (a.shingles > max_shingles || b.shingles > max_shingles) return -1;
  return SortedJaccard(a.hashes, b.hashes);
}

// ExpectedFalseCommon returns how many common elements a and b are
// expected to have by truncation alone: |a| * |b| / 2^32.
inline double ExpectedFalseCommon(const ShingleSet32& a, const ShingleSet32& b) {
  return static_cast<double>(a.hashes.size()) * static_cast<double>(b.hashes.size()) / 4294967296.0;
}

}  // namespace dedupd::bench

#endif  // DEDUPD_BENCH_QUALITY_SHINGLE_SET32_H_
