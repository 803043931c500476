// minhash.h: MinHash signatures of normalized text, for estimating the
// Jaccard similarity of two texts' word-shingle sets ("0.9 alike") without
// the sets (Broder 1997, "On the resemblance and containment of
// documents"), and for finding stored texts above a Jaccard threshold with
// LSH banding (core/index/lsh_index.h).
//
// The shingles are SimHash's: the distinct 3-word shingle hashes of
// shingle_hashes.h (same word hash, same combiner, same seed), so both
// measures see the same feature set. The signature is one-permutation
// hashing (Li, Owen, Zhang 2012, "One permutation hashing") with optimal
// densification (Shrivastava 2017, "Optimal densification for fast and
// accurate minwise hashing"): each shingle hash picks one of kSlots bins by
// its top 7 bits and the bin keeps the smallest of its remaining 57 bits;
// an empty bin copies the bin its fixed probe sequence first meets among
// the non-empty ones. Each slot keeps only the low kSlotBits (8) bits of
// its minimum (b-bit minwise hashing, Li and König 2010). Chosen over k
// independent hash functions by measurement: ~3 ns instead of ~230 ns per
// shingle for the same accuracy on pages (docs/minhash.md). The exact algorithm,
// constants and estimator are in docs/minhash.md; golden vectors in
// core/text/testdata/minhash_golden.tsv pin them. Any change to the output
// bumps MinHasher::kVersion.
//
// Example:
//   const MinHasher hasher;  // 3-word shingles
//   MinHashSignature a = hasher.Sign("the quick brown fox jumps over the lazy dog");
//   MinHashSignature b = hasher.Sign("the quick brown fox leaps over the lazy dog");
//   double j = EstimateJaccard(a, b);  // ~0.4: 4 of 10 distinct shingles shared
#ifndef DEDUPD_CORE_TEXT_MINHASH_H_
#define DEDUPD_CORE_TEXT_MINHASH_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace dedupd {

// Slots of a signature. LSH bands take rows from it (lsh_index.h).
inline constexpr int kMinHashSlots = 128;
// Bits kept per slot (b-bit minwise hashing).
inline constexpr int kMinHashSlotBits = 8;

// A MinHash signature: slot i holds the low 8 bits of bin i's minimum.
// 128 bytes. Compare two with EstimateJaccard.
using MinHashSignature = std::array<uint8_t, kMinHashSlots>;

struct MinHashOptions {
  // Words per shingle. REQUIRES: 1 <= shingle_words <= 16. Signatures made
  // with different values are not comparable. Default: 3 (SimHash's).
  int shingle_words = 3;
};

// MinHasher: immutable after construction; thread-safe (per-call scratch
// space is thread_local).
class MinHasher {
 public:
  // Version of the signature algorithm, persisted in the store's meta
  // record next to SimHasher::kVersion and kTextNormalizerVersion.
  // 1: one-permutation hashing, optimal densification, 128 slots of 8 bits.
  static constexpr uint32_t kVersion = 1;
  // Seed of the densification probe sequences. ASCII "dedupdMH". The
  // shingle hashes themselves use kShingleSeed (shingle_hashes.h). Part of
  // the format: changing it bumps kVersion.
  static constexpr uint64_t kSeed = 0x646564757064'4D48ULL;
  // Densification probes per empty bin before falling back to the next
  // non-empty bin to the right (cyclically); docs/minhash.md.
  static constexpr int kMaxProbes = 512;

  // Aborts with a message when `options` violates its REQUIRES (a caller
  // bug: validate flags before constructing).
  explicit MinHasher(MinHashOptions options = {});

  // Sign returns the signature of `normalized_text`, which should be
  // NormalizeText's output (words are split on ' ', nothing else is
  // normalized here). A text with fewer words than a shingle is one
  // shingle of all its words. A text with no words (NormalizeText rejects
  // it, so only a direct call can give one) has the all-zero signature:
  // EstimateJaccard gives 1 for two of them, ~0 against a real text.
  // Cost: that of DistinctShingleHashes (~12 ns per word) plus ~1 ns per
  // distinct shingle.
  MinHashSignature Sign(absl::string_view normalized_text) const;

  // SignShingles returns the signature of a text whose distinct shingle
  // hashes are `distinct_shingles` (DistinctShingleHashes(text,
  // options().shingle_words).distinct): Sign after finding them, for
  // callers that also compute SimHash from them (FingerprintText).
  // REQUIRES: the values are distinct.
  static MinHashSignature SignShingles(absl::Span<const uint64_t> distinct_shingles);

  const MinHashOptions& options() const { return options_; }

 private:
  MinHashOptions options_;
};

// EqualSlots returns how many of the kMinHashSlots slots of `a` and `b`
// are equal (0..128).
int EqualSlots(const MinHashSignature& a, const MinHashSignature& b);

// EstimateJaccard returns the estimated Jaccard similarity of the shingle
// sets of the texts whose signatures are `a` and `b`, in [0, 1]:
//   P = EqualSlots(a, b) / 128;  C = 2^-8 (two different 8-bit values
//   collide with probability C);  J = clamp((P - C) / (1 - C), 0, 1)
// (Li and König 2010). Unbiased before the clamp; standard deviation about
// sqrt(J (1 - J) / 128): 0.035 at J = 0.8. Identical signatures give
// exactly 1. This is how a caller verifies an LSH candidate against its
// stored signature.
double EstimateJaccard(const MinHashSignature& a, const MinHashSignature& b);

namespace minhash_internal {

// The densified 57-bit bin minima before truncation to kMinHashSlotBits
// (all ones for a text with no shingles), for the benchmarks' accuracy
// comparison of slot widths. Signature slot i is the low 8 bits of [i].
std::array<uint64_t, kMinHashSlots> DensifiedMinima(absl::Span<const uint64_t> distinct_shingles);

}  // namespace minhash_internal

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_MINHASH_H_
