// near_texts.h: normalized texts with a known share of 3-word shingles, for
// the conformance suites' MinHash near-matching tests (content and chunk):
// a 400-word text, edits of it, an unrelated text, and a checked input
// (ContentDoc or ChunkInput) signed with a text's MinHash. Deterministic (a
// fixed linear congruential generator), so every backend sees the same
// signatures.
//
// Example:
//   const double j = EstimateJaccard(MinHasher().Sign(NearTextOriginal()),
//                                    MinHasher().Sign(NearTextEdited(20)));
//   // ~0.9
//
// Thread safety: pure functions.
#ifndef DEDUPD_STORAGE_TESTING_NEAR_TEXTS_H_
#define DEDUPD_STORAGE_TESTING_NEAR_TEXTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "core/text/minhash.h"

namespace dedupd::testing {

// NearTextWords returns `words` words drawn from a 500-word vocabulary by
// a fixed generator seeded with `seed`.
inline std::vector<std::string> NearTextWords(uint64_t seed, int words) {
  std::vector<std::string> out;
  uint64_t x = seed;
  for (int i = 0; i < words; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    out.push_back(absl::StrCat("w", (x >> 33) % 500));
  }
  return out;
}

// The 400-word text the others are edits of.
inline std::string NearTextOriginal() { return absl::StrJoin(NearTextWords(1, 400), " "); }

// NearTextOriginal with `edited` words (one run from word 100) replaced:
// 20 of them (5%) leave ~90% of the 3-word shingles shared.
// REQUIRES: 0 <= edited <= 300.
inline std::string NearTextEdited(int edited) {
  std::vector<std::string> w = NearTextWords(1, 400);
  for (int i = 100; i < 100 + edited; ++i) w[i] = absl::StrCat("edit", i);
  return absl::StrJoin(w, " ");
}

// A 400-word text that shares (almost) no shingle with the others.
inline std::string NearTextUnrelated() { return absl::StrJoin(NearTextWords(2, 400), " "); }

// WithSignature returns `in` (a ContentDoc or a ChunkInput) with the
// MinHash signature of `text` and `min_jaccard`.
template <typename Input>
Input WithSignature(Input in, absl::string_view text, double min_jaccard) {
  in.minhash = MinHasher().Sign(text);
  in.min_jaccard = min_jaccard;
  return in;
}

}  // namespace dedupd::testing

#endif  // DEDUPD_STORAGE_TESTING_NEAR_TEXTS_H_
