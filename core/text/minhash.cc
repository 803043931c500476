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

#include "absl/numeric/bits.h"
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

namespace {

// The first kTabledProbes bins of every empty bin's probe sequence,
// computed once: a text of 80 shingles leaves ~69 of the 128 bins empty and
// each takes ~2 probes, which would otherwise cost a SplitMix64 and a
// mispredicted branch apiece. A bin fills with probability >= 1/128 per
// shingle, so a probe beyond the table is needed with probability below
// (1 - filled/128)^16 per empty bin: ProbeBin computes it then.
constexpr int kTabledProbes = 16;
constexpr int kFirstProbes = 4;

struct ProbeTable {
  uint8_t bin[kMinHashSlots][kTabledProbes];
};

const ProbeTable& Probes() {
  static const ProbeTable table = [] {
    ProbeTable t{};
    for (int i = 0; i < kMinHashSlots; ++i) {
      for (int a = 1; a <= kTabledProbes; ++a)
        t.bin[i][a - 1] = static_cast<uint8_t>(ProbeBin(i, a));
    }
    return t;
  }();
  return table;
}

}  // namespace

std::array<uint64_t, kMinHashSlots> DensifiedMinima(absl::Span<const uint64_t> distinct_shingles) {
  std::array<uint64_t, kMinHashSlots> bins;
  bins.fill(kEmpty);
  // filled[w] bit b: bin 64 * w + b was filled by a shingle.
  uint64_t filled[2] = {0, 0};
  for (const uint64_t h : distinct_shingles) {
    const uint64_t i = h >> kRankBits;
    uint64_t& bin = bins[i];
    bin = std::min(bin, h & kRankMask);
    filled[i >> 6] |= uint64_t{1} << (i & 63);
  }
  const int count = absl::popcount(filled[0]) + absl::popcount(filled[1]);
  if (count == kMinHashSlots || count == 0) return bins;
  const auto is_filled = [&filled](int j) { return (filled[j >> 6] >> (j & 63)) & 1; };
  if (count == 1) {  // every probe sequence ends at the one non-empty bin
    const int any =
        filled[0] != 0 ? absl::countr_zero(filled[0]) : 64 + absl::countr_zero(filled[1]);
    bins.fill(bins[any]);
    return bins;
  }
  // Probe only the original bins, never one filled here: a bin probed is
  // one the shingles filled, whose value this loop never changes. The
  // empty bins are visited by their bits and the tabled probes tested
  // without branches (whether a probe hits is a coin toss the branch
  // predictor would lose half the time).
  const ProbeTable& probes = Probes();
  for (int w = 0; w < 2; ++w) {
    for (uint64_t empty = ~filled[w]; empty != 0; empty &= empty - 1) {
      const int i = 64 * w + absl::countr_zero(empty);
      const uint8_t* p = probes.bin[i];
      // Four probes first: with at least a third of the bins filled (a
      // chunk of 50 shingles fills 40%) one of them hits 8 times in 10.
      uint32_t hits = 0;
      for (int a = 0; a < kFirstProbes; ++a) {
        hits |= static_cast<uint32_t>(is_filled(p[a])) << a;
      }
      if (hits == 0) {
        for (int a = kFirstProbes; a < kTabledProbes; ++a) {
          hits |= static_cast<uint32_t>(is_filled(p[a])) << a;
        }
      }
      int source = -1;
      if (hits != 0) {
        source = p[absl::countr_zero(hits)];
      } else {
        for (int attempt = kTabledProbes + 1; source < 0 && attempt <= MinHasher::kMaxProbes;
             ++attempt) {
          const int j = ProbeBin(i, attempt);
          if (is_filled(j)) source = j;
        }
        if (source < 0) {  // P < (1 - 2/128)^512 = 3e-4 per empty bin
          source = (i + 1) % kMinHashSlots;
          while (!is_filled(source)) source = (source + 1) % kMinHashSlots;
        }
      }
      bins[i] = bins[source];
    }
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
