// shingle_hashes.h: the distinct word-shingle hashes of a normalized text,
// the one feature set both near-duplicate measures are computed from:
// SimHash (simhash.h) and MinHash (minhash.h). Computing them once per text
// and handing the same span to both keeps the two measures over exactly the
// same shingles, and lets FingerprintText pay for the words once.
//
// Words are split on ' ', hashed with StableWordHash64(word, kShingleSeed);
// shingle j of k words hashes w[j..j+k-1] with a rotate-xor-multiply
// combiner and MurmurHash3's fmix64 (docs/content_fingerprint.md, "SimHash",
// steps 1-3). A text with fewer words than a shingle is one shingle of all
// its words; a text with no words has no shingles.
//
// Example:
//   ShingleHashes s = DistinctShingleHashes("to be or not to be", 3);
//   // s.words == 6; s.distinct.size() == 4: "to be or", "be or not",
//   // "or not to", "not to be"
//   ShingleHashes t = DistinctShingleHashes("a b a b a b", 2);
//   // t.words == 6; t.distinct.size() == 2: "a b", "b a"
#ifndef DEDUPD_CORE_TEXT_SHINGLE_HASHES_H_
#define DEDUPD_CORE_TEXT_SHINGLE_HASHES_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace dedupd {

// Seed of the word hashes and of the shingle combiner, ASCII "dedupdSH".
// Part of SimHash's and MinHash's formats (SimHasher::kSeed is this value).
inline constexpr uint64_t kShingleSeed = 0x6465647570645348ULL;

struct ShingleHashes {
  // The distinct shingle hashes, in order of first occurrence. A view of
  // per-thread scratch space: valid until the next DistinctShingleHashes
  // call on the same thread.
  absl::Span<const uint64_t> distinct;
  // Words of the text (maximal runs of bytes other than ' ').
  size_t words = 0;
};

// DistinctShingleHashes returns the distinct hashes of the
// `shingle_words`-word shingles of `normalized_text` (NormalizeText's
// output; nothing but ' ' splitting happens here) and its word count.
// REQUIRES: 1 <= shingle_words <= 16. Thread-safe (per-thread scratch).
// Cost: O(bytes + words * shingle_words), ~12 ns per word (docs).
ShingleHashes DistinctShingleHashes(absl::string_view normalized_text, int shingle_words);

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_SHINGLE_HASHES_H_
