// minhash_signatures.h: random MinHash signatures for the tests of the LSH
// index and the stores' near-text index, from a fixed-seed SplitMixRng.
//
// Example:
//   SplitMixRng rng(1);
//   const MinHashSignature a = RandomSignature(rng);
//   const MinHashSignature b = SimilarSignature(a, 0.9, rng);  // J ~ 0.9
#ifndef DEDUPD_TESTS_TESTING_MINHASH_SIGNATURES_H_
#define DEDUPD_TESTS_TESTING_MINHASH_SIGNATURES_H_

#include <cstdint>

#include "core/text/minhash.h"
#include "core/text/splitmix64.h"

namespace dedupd {

// A signature of independent uniform 8-bit slots.
inline MinHashSignature RandomSignature(SplitMixRng& rng) {
  MinHashSignature s;
  for (uint8_t& v : s) v = static_cast<uint8_t>(rng.Next());
  return s;
}

// `base` with each slot kept with probability `j`, else redrawn: slots
// then agree with probability j + (1 - j) / 256, as those of two texts of
// Jaccard similarity j do.
inline MinHashSignature SimilarSignature(const MinHashSignature& base, double j, SplitMixRng& rng) {
  MinHashSignature s = base;
  for (uint8_t& v : s) {
    if (rng.Unit() >= j) v = static_cast<uint8_t>(rng.Next());
  }
  return s;
}

}  // namespace dedupd

#endif  // DEDUPD_TESTS_TESTING_MINHASH_SIGNATURES_H_
