// minhash.cc: one-permutation MinHash with optimal densification over the
// distinct shingle hashes; see minhash.h and docs/minhash.md (which this
// file implements to the letter).
//
// Why one permutation (Li, Owen, Zhang 2012): the textbook signature
// evaluates 128 hash functions per shingle and keeps 128 minima; here each
// shingle hash, already a well-mixed 64-bit value (fmix64), is one draw of
// a random permutation: its top 7 bits pick a bin, its low 57 bits are its
// rank, and each bin keeps the smallest rank. One compare per shingle
// instead of 128 hashes. The estimator stays unbiased with a variance no
// larger than the textbook one for texts with many more shingles than bins
// (sampling without replacement); measured in docs/minhash.md.
//
// Why optimal densification (Shrivastava 2017): a text with few shingles
// (a 50-word chunk) leaves bins empty, and two texts that are both empty in
// a bin would otherwise compare equal there. Each empty bin i copies the
// minimum of the first non-empty bin of its own fixed probe sequence
// j(i, 1), j(i, 2), ...: the same sequence for every text, so two texts
// copy from the same bin when their emptiness agrees, and the probability
// that a slot agrees is exactly the Jaccard similarity. The probes use only
// the original non-empty bins, never one filled by densification (that is
// what makes it "optimal" against the rotation scheme of Shrivastava and Li
// 2014, whose copies from neighbouring bins are correlated).
#include "core/text/minhash.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/text/shingle_hashes.h"
#include "core/text/splitmix64.h"

namespace dedupd {

namespace {

constexpr int kBinBits = 7;  // 2^7 = kMinHashSlots bins
static_assert((1 << kBinBits) == kMinHashSlots, "bins are picked by the top kBinBits bits");
constexpr int kRankBits = 64 - kBinBits;
constexpr uint64_t kRankMask = (uint64_t{1} << kRankBits) - 1;
constexpr uint64_t kEmpty = ~uint64_t{0};  // above every 57-bit rank

// Bin of empty bin i's probe number `attempt` (1, 2, ...): the top 7 bits
// of SplitMix64(kSeed XOR (i << 32 | attempt)).
inline int ProbeBin(int i, int attempt) {
  const uint64_t key = (static_cast<uint64_t>(i) << 32) | static_cast<uint32_t>(attempt);
  return static_cast<int>(SplitMix64(MinHasher::kSeed ^ key) >> kRankBits);
}

}  // namespace

namespace minhash_internal {

std::array<uint64_t, kMinHashSlots> DensifiedMinima(absl::Span<const uint64_t> distinct_shingles) {
  std::array<uint64_t, kMinHashSlots> bins;
  bins.fill(kEmpty);
  for (const uint64_t h : distinct_shingles) {
    uint64_t& bin = bins[h >> kRankBits];
    bin = std::min(bin, h & kRankMask);
  }
  int filled = 0;
  int any = -1;  // a non-empty bin
  for (int i = 0; i < kMinHashSlots; ++i) {
    if (bins[i] != kEmpty) {
      ++filled;
      any = i;
    }
  }
  if (filled == kMinHashSlots || filled == 0) return bins;
  if (filled == 1) {  // every probe sequence ends at the one non-empty bin
    bins.fill(bins[any]);
    return bins;
  }
  // Probe only the original bins, never one filled here.
  const std::array<uint64_t, kMinHashSlots> original = bins;
  for (int i = 0; i < kMinHashSlots; ++i) {
    if (original[i] != kEmpty) continue;
    int source = -1;
    for (int attempt = 1; attempt <= MinHasher::kMaxProbes; ++attempt) {
      const int j = ProbeBin(i, attempt);
      if (original[j] != kEmpty) {
        source = j;
        break;
      }
    }
    if (source < 0) {  // P < (1 - 2/128)^512 = 3e-4 per empty bin
      source = (i + 1) % kMinHashSlots;
      while (original[source] == kEmpty) source = (source + 1) % kMinHashSlots;
    }
    bins[i] = original[source];
  }
  return bins;
}

}  // namespace minhash_internal

MinHasher::MinHasher(MinHashOptions options) : options_(options) {
  if (options_.shingle_words < 1 || options_.shingle_words > 16) {
    std::fprintf(stderr, "MinHasher: shingle_words must be in 1..16, got %d\n",
                 options_.shingle_words);
    std::abort();
  }
}

MinHashSignature MinHasher::Sign(absl::string_view normalized_text) const {
  return SignShingles(DistinctShingleHashes(normalized_text, options_.shingle_words).distinct);
}

MinHashSignature MinHasher::SignShingles(absl::Span<const uint64_t> distinct_shingles) {
  MinHashSignature sig{};
  if (distinct_shingles.empty()) return sig;  // all zero
  const std::array<uint64_t, kMinHashSlots> minima =
      minhash_internal::DensifiedMinima(distinct_shingles);
  for (int i = 0; i < kMinHashSlots; ++i) sig[i] = static_cast<uint8_t>(minima[i]);
  return sig;
}

int EqualSlots(const MinHashSignature& a, const MinHashSignature& b) {
  int equal = 0;
  for (int i = 0; i < kMinHashSlots; ++i) equal += a[i] == b[i];
  return equal;
}

double EstimateJaccard(const MinHashSignature& a, const MinHashSignature& b) {
  // Two unrelated slots agree with probability C = 2^-8 (Li and König
  // 2010, for sets much smaller than the 2^57 ranks): P = J + (1 - J) C.
  constexpr double kCollision = 1.0 / (1 << kMinHashSlotBits);
  const double p = static_cast<double>(EqualSlots(a, b)) / kMinHashSlots;
  return std::clamp((p - kCollision) / (1.0 - kCollision), 0.0, 1.0);
}

}  // namespace dedupd
