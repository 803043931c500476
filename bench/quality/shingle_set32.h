// shingle_set32.h: the chunk store's exact verification as chunk_quality's
// --verify=exact replays it: a chunk's ShingleSet32 (core/text/
// shingle_set.h, where the choice of bits is explained) with its count of
// distinct 64-bit shingles, which --exact_max_shingles limits as
// kMaxExactShingles does in the store, and how many false common elements
// truncation alone predicts (docs/benchmarks.md, "Exact verification").
//
// Example:
//   ExactSet a = ExactSetOf("the quick brown fox jumps", 3);  // 3 shingles
//   ExactSet b = ExactSetOf("the quick brown fox leaps", 3);
//   ExactJaccardWithin(a, b, 256);  // 0.5: 2 of 4 distinct shingles shared
//   ExactJaccardWithin(a, b, 2);    // -1: more than 2 shingles, no set kept
#ifndef DEDUPD_BENCH_QUALITY_SHINGLE_SET32_H_
#define DEDUPD_BENCH_QUALITY_SHINGLE_SET32_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "core/text/shingle_hashes.h"
#include "core/text/shingle_set.h"

namespace dedupd::bench {

struct ExactSet {
  // Bits hash_shift..hash_shift+31 of the distinct shingle hashes (two
  // 64-bit hashes may truncate to one element).
  ShingleSet32 set;
  // Distinct 64-bit shingle hashes: what a size limit applies to.
  size_t shingles = 0;
};

// ExactSetOf returns the set of `normalized_text` (NormalizeText's output)
// for `shingle_words`-word shingles (DistinctShingleHashes), each hash
// shifted right by hash_shift before truncation (0: its low 32 bits).
// REQUIRES: 1 <= shingle_words <= 16, 0 <= hash_shift <= 32.
inline ExactSet ExactSetOf(absl::string_view normalized_text, int shingle_words,
                           int hash_shift = kShingleSet32Shift) {
  const ShingleHashes s = DistinctShingleHashes(normalized_text, shingle_words);
  return {ShingleSet32(s.distinct, hash_shift), s.distinct.size()};
}

// ExactJaccardWithin returns ExactJaccard of the two sets, or -1 when
// either text has more than max_shingles shingles (a store limited to
// max_shingles keeps no set for it).
inline double ExactJaccardWithin(const ExactSet& a, const ExactSet& b, size_t max_shingles) {
  if (a.shingles > max_shingles || b.shingles > max_shingles) return -1;
  return ExactJaccard(a.set, b.set);
}

// ExpectedFalseCommon returns how many common elements a and b are
// expected to have by truncation alone: |a| * |b| / 2^32.
inline double ExpectedFalseCommon(const ExactSet& a, const ExactSet& b) {
  return static_cast<double>(a.set.size()) * static_cast<double>(b.set.size()) / 4294967296.0;
}

}  // namespace dedupd::bench

#endif  // DEDUPD_BENCH_QUALITY_SHINGLE_SET32_H_
