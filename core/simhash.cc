// simhash.cc: SimHash over weighted word shingles; see simhash.h and
// docs/content_fingerprint.md (which this file implements to the letter).
//
// Design notes (the textbook version is bench/content_fingerprint_bench.cc's
// TextbookSimHash: hash every shingle string, loop over its 64 bits):
// - Each word is hashed once (StableHash64); a shingle's hash combines its
//   words' hashes with a rotate-xor-multiply step and a MurmurHash3 fmix64
//   finalizer, so a k-word shingle costs k multiplies, not a pass over its
//   bytes.
// - Distinct shingles are counted in a flat open-addressing table (linear
//   probing, keyed by the already well-mixed shingle hash), reused across
//   calls on the same thread.
// - Accumulation is table-driven: kSpread[byte] has bit i of the byte in
//   byte lane i of a uint64, so one multiply-add by the weight adds the
//   weight to 8 bit counters at once; 8 such adds cover the 64 bits. Lanes
//   are 8 bits wide, so they are flushed into 64-bit totals before the sum
//   of weights added since the last flush can exceed 255.
#include "core/simhash.h"

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/stable_hash.h"

namespace dedupd {

namespace {

constexpr uint64_t kShingleMultiplier = 0x9FB21C651E98DF25ULL;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// MurmurHash3's 64-bit finalizer (Appleby): full avalanche.
inline uint64_t Fmix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDULL;
  h ^= h >> 33;
  h *= 0xC4CEB9FE1A85EC53ULL;
  h ^= h >> 33;
  return h;
}

// Hash of the shingle made of the words whose hashes are w[0..k-1].
inline uint64_t ShingleHash(const uint64_t* w, int k) {
  uint64_t h = SimHasher::kSeed;
  for (int i = 0; i < k; ++i) h = (Rotl(h, 27) ^ w[i]) * kShingleMultiplier;
  return Fmix64(h);
}

// Weight of a distinct shingle that occurs `count` (>= 1) times: 1, i.e.
// every distinct shingle counts once (Broder's resemblance works on the
// set of shingles too). Measured against 1 + floor(log2(count)) and
// min(count, 2) on real pages (docs/content_fingerprint.md, "Weighting"):
// with log2 weights a license pasted 50 times into two unrelated 300-word
// pages still pulls them to distance 6 and makes each page 6 bits from the
// bare license; with weight 1 they stay 25 bits apart, and a one-word edit
// in a 980-word page is within distance 3 at 97% of positions (88% with
// log2 weights). Integer weights keep fingerprints free of floating-point
// rounding; the accumulator below takes any weight 1..255.
inline uint32_t Weight(uint32_t count) {
  static_cast<void>(count);
  return 1;
}

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

// Per-thread scratch space, kept between calls to avoid allocation.
struct Scratch {
  std::vector<uint64_t> words;     // word hashes
  std::vector<uint64_t> keys;      // table: shingle hashes
  std::vector<uint32_t> counts;    // table: 0 = empty slot
  std::vector<size_t> occupied;    // table slots in use, in insertion order
};

}  // namespace

SimHasher::SimHasher(SimHashOptions options) : options_(options) {
  if (options_.shingle_words < 1 || options_.shingle_words > 16) {
    std::fprintf(stderr,
                 "SimHasher: shingle_words must be in 1..16, got %d\n",
                 options_.shingle_words);
    std::abort();
  }
}

uint64_t SimHasher::Fingerprint(absl::string_view normalized_text) const {
  thread_local Scratch scratch;
  std::vector<uint64_t>& words = scratch.words;
  words.clear();

  // 1. Word hashes.
  const char* p = normalized_text.data();
  const char* const end = p + normalized_text.size();
  while (p < end) {
    while (p < end && *p == ' ') ++p;
    const char* w = p;
    while (p < end && *p != ' ') ++p;
    if (p > w) {
      words.push_back(StableHash64(absl::string_view(w, p - w), kSeed));
    }
  }
  if (words.empty()) return 0;

  // 2. Shingles, counted per distinct hash.
  const int k = words.size() < static_cast<size_t>(options_.shingle_words)
                    ? static_cast<int>(words.size())
                    : options_.shingle_words;
  const size_t shingles = words.size() - k + 1;
  size_t capacity = 16;
  int shift = 60;  // slot = hash >> shift; capacity = 2^(64 - shift)
  while (capacity < 2 * shingles) {
    capacity *= 2;
    --shift;
  }
  std::vector<uint64_t>& keys = scratch.keys;
  std::vector<uint32_t>& counts = scratch.counts;
  std::vector<size_t>& occupied = scratch.occupied;
  if (keys.size() < capacity) {
    keys.resize(capacity);
    counts.resize(capacity);
  }
  occupied.clear();
  const size_t mask = capacity - 1;
  for (size_t j = 0; j < shingles; ++j) {
    const uint64_t h = ShingleHash(&words[j], k);
    size_t slot = static_cast<size_t>(h >> shift);
    while (counts[slot] != 0 && keys[slot] != h) slot = (slot + 1) & mask;
    if (counts[slot] == 0) {
      keys[slot] = h;
      occupied.push_back(slot);
    }
    ++counts[slot];
  }

  // 3. Weighted bit sums (Charikar): bit b of the fingerprint is 1 iff the
  // weights of shingles with bit b set outweigh those with it clear.
  std::array<uint64_t, 64> ones{};  // sum of weights with bit b set
  std::array<uint64_t, 8> lanes{};  // byte lane i of lanes[j]: bit 8j+i
  uint64_t total = 0;               // sum of all weights
  uint32_t in_lanes = 0;            // sum of weights since the last flush
  auto flush = [&] {
    for (int j = 0; j < 8; ++j) {
      for (int i = 0; i < 8; ++i) ones[8 * j + i] += (lanes[j] >> (8 * i)) & 0xFF;
      lanes[j] = 0;
    }
    in_lanes = 0;
  };
  for (const size_t slot : occupied) {
    const uint32_t w = Weight(counts[slot]);
    counts[slot] = 0;  // leave the table empty for the next call
    if (in_lanes + w > 255) flush();
    const uint64_t h = keys[slot];
    for (int j = 0; j < 8; ++j) lanes[j] += kSpread[(h >> (8 * j)) & 0xFF] * w;
    in_lanes += w;
    total += w;
  }
  flush();
  uint64_t fingerprint = 0;
  for (int b = 0; b < 64; ++b) {
    if (2 * ones[b] > total) fingerprint |= uint64_t{1} << b;
  }
  return fingerprint;
}

int HammingDistance(uint64_t a, uint64_t b) {
  return __builtin_popcountll(a ^ b);
}

}  // namespace dedupd
