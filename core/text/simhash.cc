// simhash.cc: SimHash over distinct word shingles; see simhash.h and
// docs/content_fingerprint.md (which this file implements to the letter).
//
// Design notes (the textbook version is bench/micro/content_fingerprint_bench.cc's
// TextbookSimHash: hash every shingle string, loop over its 64 bits), each
// measured on real pages (docs/content_fingerprint.md, "Throughput"):
// - Words are found through 64-byte masks of the ' ' bytes (SSE2), one
//   iteration per ' ' (a word ends at each), not a branch per byte.
// - Each word is hashed once, words of up to 16 bytes (97% of them) by
//   StableWordHash64Lanes on two masked 8-byte loads: two 128-bit
//   multiplies and no branch on the length (word lengths are
//   unpredictable). XXH64, used before (kVersion 1), took ~10 dependent
//   multiplies and 40% of the time.
// - A shingle's hash combines its words' hashes with a rotate-xor-multiply
//   step and a MurmurHash3 fmix64 finalizer, so a k-word shingle costs k
//   multiplies, not a pass over its bytes; shingle j's hash overwrites
//   word j's in place.
// - Distinct shingles are found with a flat open-addressing table of 2-byte
//   indices into the shingle hashes (linear probing on the already mixed
//   hash), at most a quarter full: for a 10 KB page 16 KB, in the L1 cache
//   with the hashes, and a probe rarely meets an occupied slot (a
//   mispredicted branch). The same 16 KB as 4-byte indices at most half
//   full, as in version 1, was ~10% slower.
// - The bit sums are a positional population count: carry-save adders over
//   bit slices (BitCounter), ~7 bitwise operations per shingle instead of
//   64 additions.
#include "core/text/simhash.h"

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/text/stable_hash.h"

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

// ShingleHash for a k known at compile time (the default k = 3), so that
// the loop is unrolled.
template <int kWords>
inline uint64_t ShingleHashK(const uint64_t* w) {
  return ShingleHash(w, kWords);
}

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

// SpaceMask64 returns a mask with bit i set iff p[i] == ' ', for i < 64.
// REQUIRES: 64 bytes readable at p.
inline uint64_t SpaceMask64(const char* p) {
#if defined(__SSE2__)
  // x86-64 always has SSE2: 16 bytes per compare, one bit per byte.
  const __m128i space = _mm_set1_epi8(' ');
  uint64_t mask = 0;
  for (int i = 0; i < 4; ++i) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
    const uint64_t m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, space)));
    mask |= m << (16 * i);
  }
  return mask;
#else
  uint64_t mask = 0;
  for (int i = 0; i < 64; ++i) mask |= uint64_t{p[i] == ' '} << i;
  return mask;
#endif
}

// kLaneMasks[len] keeps the first `len` bytes of a word in its two 8-byte
// little-endian lanes (bytes 0..7, bytes 8..15).
struct LaneMasks {
  uint64_t lo;
  uint64_t hi;
};
constexpr std::array<LaneMasks, 17> MakeLaneMasks() {
  std::array<LaneMasks, 17> t{};
  for (int len = 0; len <= 16; ++len) {
    for (int i = 0; i < len; ++i) {
      if (i < 8) {
        t[len].lo |= uint64_t{0xFF} << (8 * i);
      } else {
        t[len].hi |= uint64_t{0xFF} << (8 * (i - 8));
      }
    }
  }
  return t;
}
constexpr std::array<LaneMasks, 17> kLaneMasks = MakeLaneMasks();

inline uint64_t LoadLane(const char* p) {
  return stable_hash_internal::Load64(reinterpret_cast<const unsigned char*>(p));
}

// HashWord returns StableWordHash64 of the `len` bytes at `w`, len >= 1;
// `end` is the end of the text. Words of up to 16 bytes with 16 bytes of
// text left at `w` (all but the last word or two) take the inline path,
// which reads 16 bytes and masks off those past the word.
inline uint64_t HashWord(const char* w, size_t len, const char* end) {
  if (__builtin_expect(len > 16 || end - w < 16, 0)) {
    return StableWordHash64(absl::string_view(w, len), SimHasher::kSeed);
  }
  return StableWordHash64Lanes(LoadLane(w) & kLaneMasks[len].lo,
                               LoadLane(w + 8) & kLaneMasks[len].hi, len, SimHasher::kSeed);
}

// WordHashes writes StableWordHash64(word, kSeed) of every word of `text`
// (maximal runs of bytes other than ' ') to out[0..], in order, and
// returns how many there are. Every ' ' ends the word before it (empty
// when the ' ' follows another or starts the text), so one iteration per
// set bit of a 64-byte space mask finds them all. REQUIRES: room for
// text.size() / 2 + 1 hashes at `out`.
size_t WordHashes(absl::string_view text, uint64_t* out) {
  const char* const base = text.data();
  const char* const end = base + text.size();
  const char* start = base;  // of the current word
  size_t n = 0;
  for (size_t block = 0; block < text.size(); block += 64) {
    uint64_t space;
    if (text.size() - block >= 64) {
      space = SpaceMask64(base + block);
    } else {  // the last bytes: pad with what is not a space
      char tail[64];
      std::memset(tail, 'x', sizeof(tail));
      std::memcpy(tail, base + block, text.size() - block);
      space = SpaceMask64(tail);
    }
    while (space != 0) {
      const char* const s = base + block + __builtin_ctzll(space);
      space &= space - 1;
      if (s != start) {
        out[n++] = HashWord(start, static_cast<size_t>(s - start), end);
      }
      start = s + 1;
    }
  }
  if (start != end) {
    out[n++] = HashWord(start, static_cast<size_t>(end - start), end);
  }
  return n;
}

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

// Per-thread scratch space, kept between calls to avoid allocation.
struct Scratch {
  std::vector<uint64_t> hashes;   // word hashes, then shingle hashes
  std::vector<uint16_t> slots16;  // ShingleSet's table, most texts
  std::vector<uint32_t> slots32;  // ShingleSet's table, long texts
};

// ShingleSet finds the distinct values among hashes[0..n-1] (shingle
// hashes, already mixed by fmix64): an open-addressing table (linear
// probing from the top bits of the hash, at most a quarter full) whose
// slots hold 1 + the index of a hash, or 0 when empty. Storing 2-byte
// indices rather than the 8-byte hashes keeps the table small, so that
// for a 10 KB page it and the hashes fit in the L1 cache together. Not
// thread-safe: it uses the thread's scratch space, and leaves it empty on
// destruction. `Index` is uint16_t for texts of fewer than 2^16 - 1
// shingles, else uint32_t, or uint64_t from 2^31 shingles.
template <typename Index>
class ShingleSet {
 public:
  // REQUIRES: 1 <= n <= the largest Index (slots hold up to n);
  // `hashes` outlives the set.
  ShingleSet(const uint64_t* hashes, size_t n, std::vector<Index>* slots)
      : hashes_(hashes), slots_(*slots) {
    size_t capacity = 16;
    shift_ = 60;  // slot = hash >> shift_; capacity = 2^(64 - shift_)
    while (capacity < 4 * n) {
      capacity *= 2;
      --shift_;
    }
    mask_ = capacity - 1;
    if (slots_.size() < capacity) slots_.assign(capacity, 0);
  }
  ~ShingleSet() { std::memset(slots_.data(), 0, (mask_ + 1) * sizeof(Index)); }
  ShingleSet(const ShingleSet&) = delete;
  ShingleSet& operator=(const ShingleSet&) = delete;

  // Inserts hashes[j]; returns true iff no equal hash was inserted before.
  bool Insert(size_t j) {
    const uint64_t h = hashes_[j];
    size_t slot = static_cast<size_t>(h >> shift_);
    for (;;) {
      const Index entry = slots_[slot];
      if (entry == 0) break;
      if (hashes_[entry - 1] == h) return false;
      slot = (slot + 1) & mask_;
    }
    slots_[slot] = static_cast<Index>(j + 1);
    return true;
  }

 private:
  const uint64_t* hashes_;
  std::vector<Index>& slots_;
  size_t mask_;
  int shift_;
};

// AddDistinct adds each distinct value of hashes[0..n-1] to `ones` once and
// returns how many there are. REQUIRES: n >= 1.
template <typename Index>
uint64_t AddDistinct(const uint64_t* hashes, size_t n, std::vector<Index>* slots,
                     BitCounter* ones) {
  ShingleSet<Index> seen(hashes, n, slots);
  uint64_t distinct = 0;
  for (size_t j = 0; j < n; ++j) {
    if (seen.Insert(j)) {
      ones->Add(hashes[j]);
      ++distinct;
    }
  }
  return distinct;
}

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
  thread_local Scratch scratch;
  std::vector<uint64_t>& hashes = scratch.hashes;
  // A text of b bytes has at most b / 2 + 1 words ("a b c").
  const size_t max_words = normalized_text.size() / 2 + 1;
  if (hashes.size() < max_words) hashes.resize(max_words);

  // 1. Word hashes.
  const size_t n = WordHashes(normalized_text, hashes.data());
  *words = n;
  if (n == 0) return 0;

  // 2. Shingles. Shingle j's hash replaces the hash of word j, which no
  // later shingle needs.
  const int k = n < static_cast<size_t>(options_.shingle_words) ? static_cast<int>(n)
                                                                : options_.shingle_words;
  const size_t shingles = n - k + 1;
  if (k == 3) {  // the default: an unrolled loop
    for (size_t j = 0; j < shingles; ++j) hashes[j] = ShingleHashK<3>(&hashes[j]);
  } else {
    for (size_t j = 0; j < shingles; ++j) hashes[j] = ShingleHash(&hashes[j], k);
  }

  // 3. Bit sums (Charikar) over the distinct shingles, each with weight 1:
  // bit b of the fingerprint is 1 iff more than half of them have bit b set.
  BitCounter ones;  // per bit: distinct shingles with bit b set
  uint64_t total;   // distinct shingles
  if (shingles < 0xFFFF) {
    total = AddDistinct(hashes.data(), shingles, &scratch.slots16, &ones);
  } else if (shingles < (size_t{1} << 31)) {
    total = AddDistinct(hashes.data(), shingles, &scratch.slots32, &ones);
  } else {  // a text of 4 GB or more: 8-byte indices
    std::vector<uint64_t> slots;
    total = AddDistinct(hashes.data(), shingles, &slots, &ones);
  }
  const std::array<uint64_t, 64>& set = ones.Totals();
  uint64_t fingerprint = 0;
  for (int b = 0; b < 64; ++b) {
    if (2 * set[b] > total) fingerprint |= uint64_t{1} << b;
  }
  return fingerprint;
}

int HammingDistance(uint64_t a, uint64_t b) { return __builtin_popcountll(a ^ b); }

}  // namespace dedupd
