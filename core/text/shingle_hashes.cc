// shingle_hashes.cc: word hashes, shingle hashes and their distinct set;
// see shingle_hashes.h and docs/content_fingerprint.md ("SimHash", steps
// 1-3, and "Implementation"), which this file implements to the letter.
//
// Design notes (each measured on real pages when it was SimHash's own
// code, docs/content_fingerprint.md, "Throughput"):
// - Words are found through 64-byte masks of the ' ' bytes (SSE2), one
//   iteration per ' ' (a word ends at each), not a branch per byte.
// - Each word is hashed once, words of up to 16 bytes (97% of them) by
//   StableWordHash64Lanes on two masked 8-byte loads: two 128-bit
//   multiplies and no branch on the length (word lengths are
//   unpredictable).
// - A shingle's hash combines its words' hashes with a rotate-xor-multiply
//   step and a MurmurHash3 fmix64 finalizer, so a k-word shingle costs k
//   multiplies, not a pass over its bytes; shingle j's hash overwrites
//   word j's in place.
// - Distinct shingles are found with a flat open-addressing table of 2-byte
//   indices into the shingle hashes (linear probing on the already mixed
//   hash), at most a quarter full: for a 10 KB page 16 KB, in the L1 cache
//   with the hashes, and a probe rarely meets an occupied slot (a
//   mispredicted branch). The distinct hashes are moved to the front of the
//   same array as they are found, so the callers (SimHash's bit sums,
//   MinHash's bins) read one dense span.
#include "core/text/shingle_hashes.h"

#include <array>
#include <cstddef>
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
  uint64_t h = kShingleSeed;
  for (int i = 0; i < k; ++i) h = (Rotl(h, 27) ^ w[i]) * kShingleMultiplier;
  return Fmix64(h);
}

// ShingleHash for a k known at compile time (the default k = 3), so that
// the loop is unrolled.
template <int kWords>
inline uint64_t ShingleHashK(const uint64_t* w) {
  return ShingleHash(w, kWords);
}

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
    return StableWordHash64(absl::string_view(w, len), kShingleSeed);
  }
  return StableWordHash64Lanes(LoadLane(w) & kLaneMasks[len].lo,
                               LoadLane(w + 8) & kLaneMasks[len].hi, len, kShingleSeed);
}

// WordHashes writes StableWordHash64(word, kShingleSeed) of every word of `text`
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

// Per-thread scratch space, kept between calls to avoid allocation.
struct Scratch {
  std::vector<uint64_t> hashes;   // word hashes, then shingle hashes
  std::vector<uint16_t> slots16;  // ShingleSet's table, most texts
  std::vector<uint32_t> slots32;  // ShingleSet's table, long texts
};

// ShingleSet finds the distinct values among hashes[0..n-1] (shingle
// hashes, already mixed by fmix64) and moves them to hashes[0..d-1] in
// order of first occurrence: an open-addressing table (linear probing from
// the top bits of the hash, at most a quarter full) whose slots hold 1 +
// the position of a distinct hash in the compacted prefix, or 0 when
// empty. Positions below the compacted end are never written again, so a
// slot's hash stays valid. Storing 2-byte positions rather than the 8-byte
// hashes keeps the table small, so that for a 10 KB page it and the hashes
// fit in the L1 cache together. Not thread-safe: it uses the thread's
// scratch space, and leaves it empty on destruction. `Index` is uint16_t
// for texts of fewer than 2^16 - 1 shingles, else uint32_t, or uint64_t
// from 2^31 shingles.
template <typename Index>
class ShingleSet {
 public:
  // REQUIRES: 1 <= n <= the largest Index (slots hold up to n);
  // `hashes` outlives the set.
  ShingleSet(uint64_t* hashes, size_t n, std::vector<Index>* slots)
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

  // Compacts hashes[0..n-1] to its distinct values; returns how many.
  size_t Compact(size_t n) {
    size_t distinct = 0;
    for (size_t j = 0; j < n; ++j) {
      const uint64_t h = hashes_[j];
      size_t slot = static_cast<size_t>(h >> shift_);
      bool seen = false;
      for (;;) {
        const Index entry = slots_[slot];
        if (entry == 0) break;
        if (hashes_[entry - 1] == h) {
          seen = true;
          break;
        }
        slot = (slot + 1) & mask_;
      }
      if (seen) continue;
      slots_[slot] = static_cast<Index>(distinct + 1);
      hashes_[distinct++] = h;  // distinct <= j: only already read values
    }
    return distinct;
  }

 private:
  uint64_t* hashes_;
  std::vector<Index>& slots_;
  size_t mask_;
  int shift_;
};

template <typename Index>
size_t CompactDistinct(uint64_t* hashes, size_t n, std::vector<Index>* slots) {
  ShingleSet<Index> set(hashes, n, slots);
  return set.Compact(n);
}

}  // namespace

ShingleHashes DistinctShingleHashes(absl::string_view normalized_text, int shingle_words) {
  thread_local Scratch scratch;
  std::vector<uint64_t>& hashes = scratch.hashes;
  // A text of b bytes has at most b / 2 + 1 words ("a b c").
  const size_t max_words = normalized_text.size() / 2 + 1;
  if (hashes.size() < max_words) hashes.resize(max_words);

  // 1. Word hashes.
  ShingleHashes out;
  const size_t n = WordHashes(normalized_text, hashes.data());
  out.words = n;
  if (n == 0) return out;

  // 2. Shingles. Shingle j's hash replaces the hash of word j, which no
  // later shingle needs.
  const int k = n < static_cast<size_t>(shingle_words) ? static_cast<int>(n) : shingle_words;
  const size_t shingles = n - k + 1;
  if (k == 3) {  // the default: an unrolled loop
    for (size_t j = 0; j < shingles; ++j) hashes[j] = ShingleHashK<3>(&hashes[j]);
  } else {
    for (size_t j = 0; j < shingles; ++j) hashes[j] = ShingleHash(&hashes[j], k);
  }

  // 3. Distinct shingles, moved to the front.
  size_t distinct;
  if (shingles < 0xFFFF) {
    distinct = CompactDistinct(hashes.data(), shingles, &scratch.slots16);
  } else if (shingles < (size_t{1} << 31)) {
    distinct = CompactDistinct(hashes.data(), shingles, &scratch.slots32);
  } else {  // a text of 4 GB or more: 8-byte positions
    std::vector<uint64_t> slots;
    distinct = CompactDistinct(hashes.data(), shingles, &slots);
  }
  out.distinct = absl::MakeConstSpan(hashes.data(), distinct);
  return out;
}

}  // namespace dedupd
