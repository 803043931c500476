// simhash.cc: SimHash over distinct word shingles; see simhash.h and
// docs/content_fingerprint.md (which this file implements to the letter).
//
// Design notes (the textbook version is bench/micro/content_fingerprint_bench.cc's
// TextbookSimHash: hash every shingle string, loop over its 64 bits), each
// measured on real pages (docs/content_fingerprint.md, "Throughput"):
// - Words, shingle hashes and the distinct set come from
//   DistinctShingleHashes (shingle_hashes.cc, whose notes say why it is
//   fast), shared with MinHash.
// - The bit sums are a positional population count: carry-save adders over
//   bit slices (BitCounter), ~7 bitwise operations per shingle instead of
//   64 additions.
#include "core/text/simhash.h"

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>

#include "core/text/shingle_hashes.h"

namespace dedupd {

namespace {

// Every distinct shingle has weight 1, however often it occurs (Broder's
// resemblance works on the set of shingles too). Measured against
// 1 + floor(log2(count)) and min(count, 2) on real pages
// (docs/content_fingerprint.md, "Weighting"): with log2 weights a license
// pasted 50 times into two unrelated 300-word pages still pulls them to
// distance 6 and makes each page 6 bits from the bare license; with weight 1
// they stay 25 bits apart, and a one-word edit in a 980-word page is within
// distance 3 at 97% of positions (88% with log2 weights). So only set
// membership is tracked, not counts: a count-dependent weighting would need
// a count per table slot (and a new kVersion).

constexpr std::array<uint64_t, 256> MakeSpread() {
  std::array<uint64_t, 256> t{};
  for (int b = 0; b < 256; ++b) {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) {
      if (b & (1 << i)) v |= uint64_t{1} << (8 * i);
    }
    t[b] = v;
  }
  return t;
}
constexpr std::array<uint64_t, 256> kSpread = MakeSpread();

// BitCounter counts, for each of the 64 bit positions, how many of the
// values added have that bit set (a "positional population count").
// Values go into bit-sliced 4-bit counters through a chain of carry-save
// adders (Harley-Seal; Mula, Kurz and Lemire 2018, "Faster population
// counts using AVX2 instructions"): 7 bitwise operations per value instead
// of 64 per-bit additions. Every 15 values, before a 4-bit counter can
// overflow, the slices are spread into 8-bit lanes (kSpread[byte] has bit i
// of the byte in byte lane i, so 8 lookups per slice cover 64 bits), and
// before a lane can overflow the lanes go into 64-bit totals.
class BitCounter {
 public:
  void Add(uint64_t x) {
    const uint64_t carry1 = ones_ & x;
    ones_ ^= x;
    const uint64_t carry2 = twos_ & carry1;
    twos_ ^= carry1;
    const uint64_t carry4 = fours_ & carry2;
    fours_ ^= carry2;
    eights_ ^= carry4;  // no carry out: at most 15 values per slice round
    if (++in_slices_ == kSliceValues) FlushSlices();
  }

  // Returns the 64 counts (index b: values with bit b set).
  const std::array<uint64_t, 64>& Totals() {
    FlushSlices();
    FlushLanes();
    return totals_;
  }

 private:
  static constexpr uint32_t kSliceValues = 15;  // 4-bit slice counters
  static constexpr uint32_t kLaneValues = 255;  // 8-bit lanes

  void FlushSlices() {
    for (int j = 0; j < 8; ++j) {
      const int s = 8 * j;
      lanes_[j] += kSpread[(ones_ >> s) & 0xFF] + 2 * kSpread[(twos_ >> s) & 0xFF] +
                   4 * kSpread[(fours_ >> s) & 0xFF] + 8 * kSpread[(eights_ >> s) & 0xFF];
    }
    ones_ = twos_ = fours_ = eights_ = 0;
    in_lanes_ += in_slices_;
    in_slices_ = 0;
    if (in_lanes_ > kLaneValues - kSliceValues) FlushLanes();
  }

  void FlushLanes() {
    for (int j = 0; j < 8; ++j) {
      for (int i = 0; i < 8; ++i) {
        totals_[8 * j + i] += (lanes_[j] >> (8 * i)) & 0xFF;
      }
      lanes_[j] = 0;
    }
    in_lanes_ = 0;
  }

  uint64_t ones_ = 0, twos_ = 0, fours_ = 0, eights_ = 0;  // bit slices
  uint32_t in_slices_ = 0;                                 // values added since FlushSlices
  std::array<uint64_t, 8> lanes_{};                        // byte lane i of lanes_[j]: bit 8j+i
  uint32_t in_lanes_ = 0;                                  // values in lanes_ since FlushLanes
  std::array<uint64_t, 64> totals_{};
};

}  // namespace

SimHasher::SimHasher(SimHashOptions options) : options_(options) {
  if (options_.shingle_words < 1 || options_.shingle_words > 16) {
    std::fprintf(stderr, "SimHasher: shingle_words must be in 1..16, got %d\n",
                 options_.shingle_words);
    std::abort();
  }
}

uint64_t SimHasher::Fingerprint(absl::string_view normalized_text) const {
  size_t words;
  return Fingerprint(normalized_text, &words);
}

uint64_t SimHasher::Fingerprint(absl::string_view normalized_text, size_t* words) const {
  const ShingleHashes shingles = DistinctShingleHashes(normalized_text, options_.shingle_words);
  *words = shingles.words;
  return FingerprintShingles(shingles.distinct);
}

uint64_t SimHasher::FingerprintShingles(absl::Span<const uint64_t> distinct_shingles) {
  if (distinct_shingles.empty()) return 0;
  // Bit sums (Charikar) over the distinct shingles, each with weight 1:
  // bit b of the fingerprint is 1 iff more than half of them have bit b set.
  BitCounter ones;  // per bit: distinct shingles with bit b set
  for (const uint64_t h : distinct_shingles) ones.Add(h);
  const uint64_t total = distinct_shingles.size();
  const std::array<uint64_t, 64>& set = ones.Totals();
  uint64_t fingerprint = 0;
  for (int b = 0; b < 64; ++b) {
    if (2 * set[b] > total) fingerprint |= uint64_t{1} << b;
  }
  return fingerprint;
}

int HammingDistance(uint64_t a, uint64_t b) { return __builtin_popcountll(a ^ b); }

}  // namespace dedupd
