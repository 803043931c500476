// simhash.h: 64-bit SimHash fingerprints of normalized text, for finding
// near-duplicate pages: texts that differ by a few words get fingerprints a
// small Hamming distance apart (Charikar 2002, "Similarity estimation
// techniques from rounding algorithms"; used for web pages by Manku, Jain
// and Das Sarma 2007, "Detecting near-duplicates for web crawling").
//
// Features are word shingles (Broder 1997): every run of
// `shingle_words` consecutive words. Each DISTINCT shingle contributes its
// 64-bit hash once with weight 1, however often it occurs (the limit of
// sub-linear frequency weighting), so that one paragraph pasted 50 times
// (a license, a cookie banner) weighs what it weighs once; the docs show
// the measurements that chose this over 1 + log2(count). The exact algorithm,
// constants and seed are in docs/content_fingerprint.md; golden vectors in
// core/text/testdata/simhash_golden.tsv pin them. Any change to the output bumps
// SimHasher::kVersion.
//
// Example:
//   SimHasher hasher;  // 3-word shingles
//   uint64_t a = hasher.Fingerprint("the quick brown fox jumps over the dog");
//   uint64_t b = hasher.Fingerprint("the quick brown fox leaps over the dog");
//   int d = HammingDistance(a, b);  // small: 3 of 6 shingles are shared
//   size_t words;
//   hasher.Fingerprint("to be or not to be", &words);  // words == 6
#ifndef DEDUPD_CORE_TEXT_SIMHASH_H_
#define DEDUPD_CORE_TEXT_SIMHASH_H_

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/text/shingle_hashes.h"

namespace dedupd {

struct SimHashOptions {
  // Words per shingle. REQUIRES: 1 <= shingle_words <= 16. Fingerprints made
  // with different values are not comparable. Default: 3.
  int shingle_words = 3;
};

// SimHasher: immutable after construction; thread-safe (per-call scratch
// space is thread_local).
class SimHasher {
 public:
  // Version of the fingerprint algorithm. Persisted in the store's meta
  // record next to kTextNormalizerVersion.
  // 1: words hashed with XXH64 (StableHash64). 2: words hashed with
  // StableWordHash64 (XXH64 only beyond 16 bytes).
  static constexpr uint32_t kVersion = 2;
  // Seed of the word hashes (StableWordHash64) and of the shingle combiner.
  // ASCII "dedupdSH". Part of the format: changing it bumps kVersion.
  // The shingle hashes' seed (shingle_hashes.h), shared with MinHash.
  static constexpr uint64_t kSeed = kShingleSeed;

  // Aborts with a message when `options` violates its REQUIRES (a caller
  // bug: validate flags before constructing).
  explicit SimHasher(SimHashOptions options = {});

  // Fingerprint returns the SimHash of `normalized_text`, which should be
  // NormalizeText's output: words are split on ' ' (empty words from
  // repeated or edge spaces are skipped; nothing else is normalized here).
  // A text with fewer words than a shingle is one shingle of all its
  // words; a text with no words has fingerprint 0.
  // Cost: O(bytes + words * shingle_words); ~16 ns per word (docs).
  uint64_t Fingerprint(absl::string_view normalized_text) const;

  // Fingerprint(normalized_text), also setting `*words` to the number of
  // words of the text (maximal runs of bytes other than ' '): for
  // NormalizeText's output, the number of ' ' plus 1. REQUIRES: `words`
  // is not null.
  uint64_t Fingerprint(absl::string_view normalized_text, size_t* words) const;

  // FingerprintShingles returns the SimHash of a text whose distinct
  // shingle hashes are `distinct_shingles` (DistinctShingleHashes(text,
  // options().shingle_words).distinct), 0 when there are none: what
  // Fingerprint computes after finding them, for callers that also need
  // them for MinHash (FingerprintText). REQUIRES: the values are distinct.
  static uint64_t FingerprintShingles(absl::Span<const uint64_t> distinct_shingles);

  const SimHashOptions& options() const { return options_; }

 private:
  SimHashOptions options_;
};

// HammingDistance returns the number of bits in which `a` and `b` differ
// (0..64): popcount(a ^ b).
int HammingDistance(uint64_t a, uint64_t b);

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_SIMHASH_H_
