// simhash_index.cc: Manku, Jain, Das Sarma 2007 permutation tables, laid out
// for memory (docs/simhash_index.md has the whole design).
//
// Why it is exact: the 64 bits are cut into B >= k+1 contiguous blocks. Two
// fingerprints that differ in at most d <= k bits differ in at most d blocks,
// so they agree exactly on at least B-d of them (pigeonhole). There is one
// table per combination of r = B-k blocks; its entries have their bits
// permuted so that those r blocks come first, and are sorted. Tables are in
// colexicographic order of their block sets, so the first C(m, r) tables are
// exactly those whose blocks all lie among the first m blocks. A query at
// distance d probes the first C(d+r, r) tables (all of them for d = k; the
// first d+1 for B = k+1): a fingerprint within d differs from the query in at
// most d of the first d+r blocks, so it agrees on at least r of them, i.e.
// on all blocks of one probed table. In each probed table the query looks at
// exactly the entries whose prefix (the table's blocks) equals its own and
// checks the real Hamming distance of each. Every entry within d therefore
// shows up in at least one probed table; it is reported only from the first
// probed table whose blocks it agrees on, so it is reported once.
//
// Layout: each table has 2^16 buckets keyed by the top 16 permuted bits,
// which are therefore not stored; an entry in a bucket is the remaining 48
// bits (two packed 24-bit parts) and the 32-bit id, structure of arrays in
// one allocation: 10 bytes per entry and table. A scan reads the high parts
// only (3 bytes per candidate; the low part and the id only for matches). A
// prefix longer than 16 bits (k <= 2, or B > k+1) is found inside the bucket
// by binary search; a shorter one (k >= 4) covers 2^(16 - bits) adjacent
// buckets. Inserts memmove within one bucket per table (about size / 65536
// entries), so there is no delta to merge and no O(size) step ever.
#include "core/index/simhash_index.h"

#include <sys/mman.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "absl/numeric/bits.h"
#include "common/check.h"
#include "common/coding.h"

namespace dedupd {
namespace {

constexpr int kBucketBits = 16;
constexpr uint32_t kBucketCount = uint32_t{1} << kBucketBits;
constexpr int kRemBits = 64 - kBucketBits;  // bits stored per entry
constexpr uint64_t kRemMask = (uint64_t{1} << kRemBits) - 1;
// Rough per-allocation overhead of glibc malloc, counted in MemoryBytes so
// that bytes per fingerprint is not flattered by many small buckets.
constexpr size_t kMallocOverheadBytes = 16;

uint64_t RotL(uint64_t x, int r) { return absl::rotl(x, r); }
uint64_t RotR(uint64_t x, int r) { return absl::rotr(x, r); }

constexpr size_t kCacheLineBytes = 64;
// A bucket holds about size / 65536 entries; 10^7 entries make ~600 bytes of
// high key parts per bucket. Touching beyond a few KiB ahead would only
// evict.
constexpr size_t kMaxTouchBytes = 4096;

// A stored key is 48 bits, kept as two packed 24-bit little-endian parts:
// `hi` (bits 47..24) and `lo` (bits 23..0), 3 bytes each. A part is read as
// 4 bytes and masked, so the allocation ends in one byte of padding.
constexpr size_t kPartBytes = 3;
constexpr uint32_t kPartMask = 0xFFFFFF;
constexpr int kPartBits = 24;

inline uint32_t LoadPart(const unsigned char* parts, uint32_t i) {
  return DecodeFixed32LE(reinterpret_cast<const char*>(parts) + kPartBytes * size_t{i}) & kPartMask;
}

inline void StorePart(unsigned char* parts, uint32_t i, uint32_t v) {
  unsigned char* p = parts + kPartBytes * size_t{i};
  p[0] = static_cast<unsigned char>(v);
  p[1] = static_cast<unsigned char>(v >> 8);
  p[2] = static_cast<unsigned char>(v >> 16);
}

// First index i in [begin, end) whose key (hi << 24 | lo) is within `budget`
// bits of `q48`, or `end`. This is the loop every query spends its time in,
// and its time is memory latency (a random DRAM access costs 370-560 ns on
// the KVM guest we measured on, ~40 ns when 8 overlap), so it reads the
// 24-bit high parts as a filter: a random key passes with probability
// P(Binomial(24, 1/2) <= 3) ~ 1.4e-4, so the scan streams 3 bytes per
// candidate, all loaded at once beforehand, and touches the low parts (a
// second, dependent miss) almost only for true matches. It is compiled
// three times: without and with the POPCNT instruction, because the Debian
// baseline (x86-64 v1) lacks it and the library call is several times
// slower, and as NextWithinAvx2 (below), 8 candidates at a time; the best
// one the CPU supports is picked at run time.
inline __attribute__((always_inline)) uint32_t NextWithinImpl(const unsigned char* hi,
                                                              const unsigned char* lo,
                                                              uint32_t begin, uint32_t end,
                                                              uint64_t q48, int budget) {
  const uint32_t qhi = static_cast<uint32_t>(q48 >> kPartBits);
  const uint32_t qlo = static_cast<uint32_t>(q48) & kPartMask;
  for (uint32_t i = begin; i < end; ++i) {
    const int high = __builtin_popcount(LoadPart(hi, i) ^ qhi);
    if (high <= budget && high + __builtin_popcount(LoadPart(lo, i) ^ qlo) <= budget) {
      return i;
    }
  }
  return end;
}

uint32_t NextWithinGeneric(const unsigned char* hi, const unsigned char* lo, uint32_t begin,
                           uint32_t end, uint64_t q48, int budget) {
  return NextWithinImpl(hi, lo, begin, end, q48, budget);
}

using NextWithinFn = uint32_t (*)(const unsigned char*, const unsigned char*, uint32_t, uint32_t,
                                  uint64_t, int);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("popcnt"))) uint32_t NextWithinPopcnt(const unsigned char* hi,
                                                            const unsigned char* lo, uint32_t begin,
                                                            uint32_t end, uint64_t q48,
                                                            int budget) {
  return NextWithinImpl(hi, lo, begin, end, q48, budget);
}

// The same filter, 8 candidates at a time with AVX2: each 128-bit half
// widens 4 packed 3-byte high parts to 32-bit lanes (PSHUFB), XORs them with
// the query's, and counts each lane's bits with the nibble-table method
// (Mula, Kurz, Lemire 2018, "Faster population counts using AVX2
// instructions"), summing a lane's byte counts with two multiply-adds. Only
// the lanes whose high part is within the budget (~1.4e-4 of random keys)
// go on to the scalar check of the low part, in order, so it returns what
// the scalar loop returns; the tail (< 8 candidates) is the scalar loop.
// About 2 instructions per candidate instead of 8: queries at 10^7 entries
// measured ~20 % faster (docs/simhash_index.md). Reads up to 4 bytes past
// the last high part scanned, within the allocation (the low parts follow).
__attribute__((target("avx2,popcnt"))) uint32_t NextWithinAvx2(const unsigned char* hi,
                                                               const unsigned char* lo,
                                                               uint32_t begin, uint32_t end,
                                                               uint64_t q48, int budget) {
  const uint32_t qhi = static_cast<uint32_t>(q48 >> kPartBits);
  const uint32_t qlo = static_cast<uint32_t>(q48) & kPartMask;
  // Byte j of a 32-bit lane takes byte 3 * lane + j of its half (j < 3),
  // and 0 for j = 3 (index -1: PSHUFB writes zero).
  const __m256i widen = _mm256_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1,  //
                                         0, 1, 2, -1, 3, 4, 5, -1, 6, 7, 8, -1, 9, 10, 11, -1);
  const __m256i nibble_bits = _mm256_setr_epi8(0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,  //
                                               0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4);
  const __m256i low_nibbles = _mm256_set1_epi8(0x0F);
  const __m256i ones8 = _mm256_set1_epi8(1);
  const __m256i ones16 = _mm256_set1_epi16(1);
  const __m256i q = _mm256_set1_epi32(static_cast<int>(qhi));
  const __m256i limit = _mm256_set1_epi32(budget);
  uint32_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const unsigned char* p = hi + kPartBytes * size_t{i};
    const __m256i raw = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4 * kPartBytes)), 1);
    const __m256i x = _mm256_xor_si256(_mm256_shuffle_epi8(raw, widen), q);
    const __m256i byte_counts = _mm256_add_epi8(
        _mm256_shuffle_epi8(nibble_bits, _mm256_and_si256(x, low_nibbles)),
        _mm256_shuffle_epi8(nibble_bits, _mm256_and_si256(_mm256_srli_epi16(x, 4), low_nibbles)));
    const __m256i lane_counts = _mm256_madd_epi16(_mm256_maddubs_epi16(byte_counts, ones8), ones16);
    const __m256i over = _mm256_cmpgt_epi32(lane_counts, limit);
    uint32_t pass = static_cast<uint32_t>(_mm256_movemask_ps(_mm256_castsi256_ps(over))) ^ 0xFF;
    while (pass != 0) {
      const uint32_t j = i + static_cast<uint32_t>(__builtin_ctz(pass));
      pass &= pass - 1;
      if (__builtin_popcount(LoadPart(hi, j) ^ qhi) + __builtin_popcount(LoadPart(lo, j) ^ qlo) <=
          budget) {
        return j;
      }
    }
  }
  return NextWithinImpl(hi, lo, i, end, q48, budget);
}

NextWithinFn ChooseNextWithin() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt")) {
    return NextWithinAvx2;
  }
  return __builtin_cpu_supports("popcnt") ? NextWithinPopcnt : NextWithinGeneric;
}
#else
NextWithinFn ChooseNextWithin() { return NextWithinGeneric; }
#endif

NextWithinFn NextWithin() {
  static const NextWithinFn fn = ChooseNextWithin();
  return fn;
}

// One entry of a bucket while sorting: 48 stored bits and the id.
struct Item {
  uint64_t rem;
  uint32_t id;
  bool operator<(const Item& o) const { return rem != o.rem ? rem < o.rem : id < o.id; }
  bool operator==(const Item& o) const { return rem == o.rem && id == o.id; }
};

}  // namespace

constexpr int kMaxBlocks = SimHashIndex::kMaxSupportedDistance + 1 + SimHashIndex::kMaxExtraBlocks;

// Which blocks a table keys on, and how it permutes fingerprints.
struct SimHashIndex::Layout {
  // The fields a query reads come first (one cache line with the vector).
  // >= 0 when the permutation is a rotation (always so for B = k+1):
  // rotl by this brings the table's first block to the top bits.
  int rotation = -1;
  int prefix_bits = 0;  // bits of the table's blocks, leading its keys
  // prefix_bits < 16: how many adjacent buckets share the prefix (a power of
  // 2).
  uint32_t bucket_span = 1;
  // prefix_bits > 16: the prefix's bits below the bucket prefix, within the
  // 48 stored bits, and the step that passes every value of them.
  uint64_t rem_key_mask = 0;
  uint64_t rem_key_step = 0;
  // For each earlier table u < this one: table u's blocks, in this table's
  // permuted coordinates. An entry whose XOR with the query is zero under
  // one of them was already reported from table u.
  std::vector<uint64_t> earlier_blocks;
  // When not a rotation, the permutation as runs of bits: the run starting
  // `from` bits below the top bit goes to `to` bits below it; `top_mask`
  // has the run's width in ones at the top.
  struct Run {
    int from;
    int to;
    int width;
    uint64_t top_mask;
  };
  int runs = 0;
  std::array<Run, kMaxBlocks> run{};

  uint64_t Permute(uint64_t x) const {
    if (rotation >= 0) return RotL(x, rotation);
    uint64_t out = 0;
    for (int i = 0; i < runs; ++i) {
      out |= ((x << run[i].from) & run[i].top_mask) >> run[i].to;
    }
    return out;
  }
  uint64_t Unpermute(uint64_t x) const {
    if (rotation >= 0) return RotR(x, rotation);
    uint64_t out = 0;
    for (int i = 0; i < runs; ++i) {
      out |= ((x << run[i].to) & run[i].top_mask) >> run[i].from;
    }
    return out;
  }
};

// A sorted run of entries sharing the top 16 rotated bits, in one
// allocation: [id: uint32 x cap][hi: 3 bytes x cap][lo: 3 bytes x cap][1
// byte of padding], sorted by (hi, lo, id). Not thread-safe; the index's
// mutex guards it.
class SimHashIndex::Bucket {
 public:
  Bucket() = default;
  Bucket(Bucket&&) = default;
  Bucket& operator=(Bucket&&) = default;

  uint32_t size() const { return size_; }
  const uint32_t* ids() const { return Ids(data_.get()); }
  const unsigned char* hi() const { return Hi(data_.get(), capacity_); }
  const unsigned char* lo() const { return Lo(data_.get(), capacity_); }
  uint64_t Rem(uint32_t i) const {
    return (uint64_t{LoadPart(hi(), i)} << kPartBits) | LoadPart(lo(), i);
  }

  // First position whose stored bits are >= rem.  O(log size).
  uint32_t LowerBound(uint64_t rem) const {
    uint32_t first = 0, count = size_;
    while (count > 0) {
      const uint32_t half = count / 2;
      if (Rem(first + half) < rem) {
        first += half + 1;
        count -= half + 1;
      } else {
        count = half;
      }
    }
    return first;
  }

  // First position whose high part (the top 24 of the 48 stored bits) is
  // >= hi_key (hi_key may be 2^24: then size()), given a guess [first,
  // last] (first <= last <= size()) that the answer probably lies in. Reads
  // only high parts: checks the guess against its neighbours (lines the
  // query has already loaded) and binary-searches inside it, or, when the
  // guess was wrong, in the side the answer is on. Exact whatever the guess;
  // O(log size).
  uint32_t LowerBoundHiNear(uint32_t hi_key, uint32_t first, uint32_t last) const {
    const unsigned char* h = hi();
    if (first > 0 && LoadPart(h, first - 1) >= hi_key) {
      last = first - 1;
      first = 0;
    } else if (last < size_ && LoadPart(h, last) < hi_key) {
      first = last + 1;
      last = size_;
    }
    uint32_t count = last - first;
    while (count > 0) {
      const uint32_t half = count / 2;
      if (LoadPart(h, first + half) < hi_key) {
        first += half + 1;
        count -= half + 1;
      } else {
        count = half;
      }
    }
    return first;
  }

  // First position whose (stored bits, id) is >= (rem, id).
  uint32_t LowerBound(uint64_t rem, uint32_t id) const {
    uint32_t i = LowerBound(rem);
    while (i < size_ && Rem(i) == rem && ids()[i] < id) ++i;
    return i;
  }

  bool Has(uint32_t pos, uint64_t rem, uint32_t id) const {
    return pos < size_ && Rem(pos) == rem && ids()[pos] == id;
  }

  // Inserts at `pos`, growing by about 1/16 so growth slack stays small
  // (a reallocation every ~size/16 inserts copies size entries: amortized
  // 16 entry copies per insert, cheaper than one cache miss).
  void InsertAt(uint32_t pos, uint64_t rem, uint32_t id) {
    if (size_ == capacity_) Reallocate(size_ + size_ / 16 + 4);
    unsigned char* d = data_.get();
    uint32_t* ids = Ids(d);
    unsigned char* hi = Hi(d, capacity_);
    unsigned char* lo = Lo(d, capacity_);
    const uint32_t tail = size_ - pos;
    std::memmove(ids + pos + 1, ids + pos, tail * sizeof(uint32_t));
    std::memmove(hi + kPartBytes * (pos + 1), hi + kPartBytes * pos, tail * kPartBytes);
    std::memmove(lo + kPartBytes * (pos + 1), lo + kPartBytes * pos, tail * kPartBytes);
    ids[pos] = id;
    StorePart(hi, pos, static_cast<uint32_t>(rem >> kPartBits));
    StorePart(lo, pos, static_cast<uint32_t>(rem) & kPartMask);
    ++size_;
  }

  // Erases `pos`; gives memory back once less than half of it is used.
  void EraseAt(uint32_t pos) {
    unsigned char* d = data_.get();
    uint32_t* ids = Ids(d);
    unsigned char* hi = Hi(d, capacity_);
    unsigned char* lo = Lo(d, capacity_);
    const uint32_t tail = size_ - pos - 1;
    std::memmove(ids + pos, ids + pos + 1, tail * sizeof(uint32_t));
    std::memmove(hi + kPartBytes * pos, hi + kPartBytes * (pos + 1), tail * kPartBytes);
    std::memmove(lo + kPartBytes * pos, lo + kPartBytes * (pos + 1), tail * kPartBytes);
    --size_;
    if (size_ < capacity_ / 2) Reallocate(size_ == 0 ? 0 : size_ + size_ / 16);
  }

  // Replaces the contents with `items` (sorted, no duplicates), sized
  // exactly.
  void Assign(const Item* items, uint32_t n) {
    data_.reset();
    size_ = capacity_ = 0;
    Reallocate(n);
    unsigned char* d = data_.get();
    uint32_t* ids = Ids(d);
    unsigned char* hi = Hi(d, capacity_);
    unsigned char* lo = Lo(d, capacity_);
    for (uint32_t i = 0; i < n; ++i) {
      ids[i] = items[i].id;
      StorePart(hi, i, static_cast<uint32_t>(items[i].rem >> kPartBits));
      StorePart(lo, i, static_cast<uint32_t>(items[i].rem) & kPartMask);
    }
    size_ = n;
  }

  // Appends the contents to `out` as Items.
  void AppendTo(std::vector<Item>* out) const {
    for (uint32_t i = 0; i < size_; ++i) out->push_back({Rem(i), ids()[i]});
  }

  // Loads one byte of every cache line of the high key parts [begin, end)
  // (at most kMaxTouchBytes of them), so the lines arrive in parallel
  // instead of one miss after another as a scan reaches them. These are real
  // loads, not __builtin_prefetch: on the KVM guest we measured on, software
  // prefetches of lines whose page is not in the TLB did not help (a query
  // at 10^7 entries took 4.0-5.0 us with them, 2.3-2.6 us with loads).
  void Touch(uint32_t begin, uint32_t end) const {
    if (begin >= end) return;
    const unsigned char* first = hi() + kPartBytes * size_t{begin};
    TouchBytes(first, std::min(hi() + kPartBytes * size_t{end}, first + kMaxTouchBytes));
  }

  // Loads every cache line of the bucket's allocation (for Insert and
  // Remove, which binary-search and memmove all three arrays).
  void TouchAll() const {
    if (capacity_ == 0) return;
    TouchBytes(data_.get(), data_.get() + Bytes(capacity_));
  }

  size_t HeapBytes() const { return capacity_ == 0 ? 0 : Bytes(capacity_) + kMallocOverheadBytes; }

 private:
  // Loads one byte of every cache line of [first, last), last non-empty.
  static void TouchBytes(const unsigned char* first, const unsigned char* last) {
    unsigned sink = 0;
    for (const unsigned char* p = first; p < last; p += kCacheLineBytes) {
      sink += *p;
    }
    sink += last[-1];
    // Keeps the loads: the compiler must assume the asm reads `sink`.
    asm volatile("" : : "r"(sink));
  }

  static size_t Bytes(uint32_t cap) {
    return size_t{cap} * (sizeof(uint32_t) + 2 * kPartBytes) + 1;
  }
  static uint32_t* Ids(unsigned char* d) { return reinterpret_cast<uint32_t*>(d); }
  static const uint32_t* Ids(const unsigned char* d) {
    return reinterpret_cast<const uint32_t*>(d);
  }
  static unsigned char* Hi(unsigned char* d, uint32_t cap) {
    return d + size_t{cap} * sizeof(uint32_t);
  }
  static const unsigned char* Hi(const unsigned char* d, uint32_t cap) {
    return d + size_t{cap} * sizeof(uint32_t);
  }
  static unsigned char* Lo(unsigned char* d, uint32_t cap) {
    return Hi(d, cap) + size_t{cap} * kPartBytes;
  }
  static const unsigned char* Lo(const unsigned char* d, uint32_t cap) {
    return Hi(d, cap) + size_t{cap} * kPartBytes;
  }

  // REQUIRES: new_capacity >= size_.
  void Reallocate(uint32_t new_capacity) {
    if (new_capacity == 0) {
      data_.reset();
      capacity_ = 0;
      return;
    }
    const size_t bytes = Bytes(new_capacity);
    std::unique_ptr<unsigned char[]> fresh(new unsigned char[bytes]);
    fresh[bytes - 1] = 0;  // the padding LoadPart reads (and masks off)
    if (size_ > 0) {
      const unsigned char* old = data_.get();
      std::memcpy(Ids(fresh.get()), Ids(old), size_ * sizeof(uint32_t));
      std::memcpy(Hi(fresh.get(), new_capacity), Hi(old, capacity_), size_ * kPartBytes);
      std::memcpy(Lo(fresh.get(), new_capacity), Lo(old, capacity_), size_ * kPartBytes);
    }
    data_ = std::move(fresh);
    capacity_ = new_capacity;
  }

  std::unique_ptr<unsigned char[]> data_;
  uint32_t size_ = 0;
  uint32_t capacity_ = 0;
};

// The bucket headers of every table in one allocation, on 2 MiB huge pages
// where the kernel allows (THP in "madvise" mode, the Debian default): each
// query reads one random header per probed table, and with 4 KiB pages each
// of those is also a TLB miss (a nested page walk on a virtual machine).
class SimHashIndex::Directory {
 public:
  explicit Directory(size_t buckets) : count_(buckets), bytes_(RoundUp(buckets * sizeof(Bucket))) {
    void* p = std::aligned_alloc(kHugePageBytes, bytes_);
    DEDUPD_CHECK(p != nullptr, "SimHashIndex: out of memory");
#if defined(MADV_HUGEPAGE)
    // Advice only: without it (or when refused) the pages are just small.
    madvise(p, bytes_, MADV_HUGEPAGE);
#endif
    buckets_ = static_cast<Bucket*>(p);
    for (size_t i = 0; i < count_; ++i) new (buckets_ + i) Bucket();
  }
  Directory(const Directory&) = delete;
  Directory& operator=(const Directory&) = delete;
  ~Directory() {
    for (size_t i = 0; i < count_; ++i) buckets_[i].~Bucket();
    std::free(buckets_);
  }

  Bucket* table(size_t t) { return buckets_ + t * kBucketCount; }
  size_t bytes() const { return bytes_; }

 private:
  static constexpr size_t kHugePageBytes = size_t{2} << 20;
  static size_t RoundUp(size_t n) {
    return (n + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  }

  size_t count_;
  size_t bytes_;
  Bucket* buckets_;
};

struct SimHashIndex::Table {
  Bucket* buckets;  // kBucketCount of them, owned by directory_
};

bool SimHashIndex::IsValidLayout(int max_distance, int blocks) {
  if (max_distance < 0 || max_distance > kMaxSupportedDistance) return false;
  if (blocks == 0) return true;
  if (blocks < max_distance + 1 || blocks > max_distance + 1 + kMaxExtraBlocks) {
    return false;
  }
  // C(blocks, max_distance), small: blocks <= kMaxBlocks.
  uint64_t tables = 1;
  for (int i = 1; i <= max_distance; ++i) {
    tables = tables * static_cast<uint64_t>(blocks - max_distance + i) / i;
  }
  return tables <= static_cast<uint64_t>(kMaxTables);
}

namespace {

int ResolveBlocks(int max_distance, int blocks) {
  DEDUPD_CHECK(max_distance >= 0 && max_distance <= SimHashIndex::kMaxSupportedDistance,
               "SimHashIndex: max_distance out of [0, kMaxSupportedDistance]");
  DEDUPD_CHECK(SimHashIndex::IsValidLayout(max_distance, blocks),
               "SimHashIndex: blocks must be 0 or in [max_distance + 1, "
               "max_distance + 1 + kMaxExtraBlocks] with at most "
               "kMaxTables tables");
  return blocks == 0 ? SimHashIndex::DefaultBlocks(max_distance) : blocks;
}

// probes[d] = C(min(d + r, blocks), r): the tables whose blocks all lie in
// the first d + r blocks, which in colexicographic order come first.
std::vector<int> MakeProbes(int max_distance, int blocks) {
  const int r = blocks - max_distance;
  std::vector<int> probes;
  for (int d = 0; d <= max_distance; ++d) {
    const int m = std::min(d + r, blocks);
    uint64_t c = 1;  // C(m, r) = C(m, m - r)
    for (int i = 1; i <= m - r; ++i) c = c * static_cast<uint64_t>(r + i) / i;
    probes.push_back(static_cast<int>(c));
  }
  return probes;
}

}  // namespace

// B contiguous blocks of 64 bits, widest first (widths 64 / B, the first
// 64 % B one bit wider), and one table per set of r = B - k blocks, in
// colexicographic order (the order of the sets' bitmasks). A table's key is
// its blocks in ascending order, then the other blocks cyclically from the
// one after its last: for B = k+1 that is a rotation bringing block t first
// (the layout before blocks were configurable).
std::vector<SimHashIndex::Layout> SimHashIndex::MakeLayouts(int max_distance, int blocks) {
  const int r = blocks - max_distance;
  std::array<int, kMaxBlocks> width{}, start{};
  std::array<uint64_t, kMaxBlocks> block_mask{};  // unpermuted
  for (int i = 0, bit = 0; i < blocks; ++i) {
    width[i] = 64 / blocks + (i < 64 % blocks ? 1 : 0);
    start[i] = bit;
    // Block bits sit at [64 - start - width, 64 - start).
    const uint64_t ones = width[i] == 64 ? ~uint64_t{0} : (uint64_t{1} << width[i]) - 1;
    block_mask[i] = ones << (64 - start[i] - width[i]);
    bit += width[i];
  }
  std::vector<SimHashIndex::Layout> layouts;
  std::vector<uint64_t> table_masks;  // unpermuted, per table so far
  for (uint32_t set = 0; set < (uint32_t{1} << blocks); ++set) {
    if (absl::popcount(set) != r) continue;
    SimHashIndex::Layout l;
    std::vector<int> order;
    int last = 0;
    uint64_t table_mask = 0;
    for (int i = 0; i < blocks; ++i) {
      if (set & (uint32_t{1} << i)) {
        order.push_back(i);
        last = i;
        l.prefix_bits += width[i];
        table_mask |= block_mask[i];
      }
    }
    for (int j = 1; j < blocks; ++j) {
      const int i = (last + j) % blocks;
      if (!(set & (uint32_t{1} << i))) order.push_back(i);
    }
    bool rotation = true;
    for (size_t j = 1; j < order.size(); ++j) {
      rotation = rotation && order[j] == (order[j - 1] + 1) % blocks;
    }
    if (rotation) {
      l.rotation = start[order[0]];
    } else {
      int to = 0;
      for (int i : order) {
        if (l.runs > 0 && l.run[l.runs - 1].from + l.run[l.runs - 1].width == start[i]) {
          l.run[l.runs - 1].width += width[i];  // contiguous: one run
        } else {
          l.run[l.runs++] = {start[i], to, width[i], 0};
        }
        to += width[i];
      }
      for (int i = 0; i < l.runs; ++i) {
        const int w = l.run[i].width;
        l.run[i].top_mask = w == 64 ? ~uint64_t{0} : ~(~uint64_t{0} >> w);
      }
    }
    if (l.prefix_bits > kBucketBits) {
      const int key_bits = l.prefix_bits - kBucketBits;  // 1..48
      l.rem_key_step = uint64_t{1} << (kRemBits - key_bits);
      l.rem_key_mask = kRemMask & ~(l.rem_key_step - 1);
    } else {
      l.bucket_span = uint32_t{1} << (kBucketBits - l.prefix_bits);
    }
    for (uint64_t earlier : table_masks) {
      l.earlier_blocks.push_back(l.Permute(earlier));
    }
    // The permuted prefix must be exactly the table's blocks.
    DEDUPD_CHECK(l.prefix_bits == 64 || l.Permute(table_mask) == ~(~uint64_t{0} >> l.prefix_bits),
                 "SimHashIndex: bad permutation");
    table_masks.push_back(table_mask);
    layouts.push_back(std::move(l));
  }
  return layouts;
}

SimHashIndex::SimHashIndex(int max_distance, int blocks)
    : max_distance_(max_distance),
      blocks_(ResolveBlocks(max_distance, blocks)),
      layouts_(MakeLayouts(max_distance, blocks_)),
      probes_(MakeProbes(max_distance, blocks_)) {
  DEDUPD_CHECK(probes_.back() == static_cast<int>(layouts_.size()),
               "SimHashIndex: a query at max_distance must probe all tables");
  absl::MutexLock lock(&mu_);
  directory_ = std::make_unique<Directory>(layouts_.size() * kBucketCount);
  for (size_t t = 0; t < layouts_.size(); ++t) {
    tables_.push_back(Table{directory_->table(t)});
  }
}

SimHashIndex::~SimHashIndex() = default;

int SimHashIndex::tables() const { return static_cast<int>(layouts_.size()); }

bool SimHashIndex::ContainsLocked(uint64_t fingerprint, uint32_t id) const {
  const uint64_t p = layouts_[0].Permute(fingerprint);
  const Bucket& bucket = tables_[0].buckets[p >> kRemBits];
  const uint64_t rem = p & kRemMask;
  return bucket.Has(bucket.LowerBound(rem, id), rem, id);
}

void SimHashIndex::TouchBucketsLocked(uint64_t fingerprint) const {
  for (size_t t = 0; t < tables_.size(); ++t) {
    const uint64_t p = layouts_[t].Permute(fingerprint);
    tables_[t].buckets[p >> kRemBits].TouchAll();
  }
}

void SimHashIndex::Insert(uint64_t fingerprint, uint32_t id) {
  {
    // Bring the buckets into cache under the shared lock first, so the
    // exclusive section (which blocks every query) does not wait on memory:
    // a dozen dependent misses per table otherwise (binary search, memmove).
    absl::ReaderMutexLock lock(&mu_);
    TouchBucketsLocked(fingerprint);
  }
  absl::MutexLock lock(&mu_);
  if (ContainsLocked(fingerprint, id)) return;
  for (size_t t = 0; t < tables_.size(); ++t) {
    const uint64_t p = layouts_[t].Permute(fingerprint);
    Bucket& bucket = tables_[t].buckets[p >> kRemBits];
    const uint64_t rem = p & kRemMask;
    bucket.InsertAt(bucket.LowerBound(rem, id), rem, id);
  }
  ++size_;
}

bool SimHashIndex::Remove(uint64_t fingerprint, uint32_t id) {
  {
    absl::ReaderMutexLock lock(&mu_);  // as in Insert
    TouchBucketsLocked(fingerprint);
  }
  absl::MutexLock lock(&mu_);
  if (!ContainsLocked(fingerprint, id)) return false;
  for (size_t t = 0; t < tables_.size(); ++t) {
    const uint64_t p = layouts_[t].Permute(fingerprint);
    Bucket& bucket = tables_[t].buckets[p >> kRemBits];
    const uint64_t rem = p & kRemMask;
    const uint32_t pos = bucket.LowerBound(rem, id);
    DEDUPD_CHECK(bucket.Has(pos, rem, id), "SimHashIndex: tables disagree");
    bucket.EraseAt(pos);
  }
  --size_;
  return true;
}

void SimHashIndex::BulkInsert(absl::Span<const Entry> entries) {
  if (entries.empty()) return;
  // Bucket sort per table (one counting pass, one scatter pass), then sort
  // and de-duplicate each bucket's new items and merge them with the stored
  // ones. The scratch is allocated once and reused by every table.
  std::vector<size_t> starts(kBucketCount + 1);
  std::vector<Item> scratch(entries.size());
  std::vector<Item> merged;
  absl::MutexLock lock(&mu_);
  size_t added = 0;
  for (size_t t = 0; t < tables_.size(); ++t) {
    const Layout& layout = layouts_[t];
    std::fill(starts.begin(), starts.end(), 0);
    for (const Entry& e : entries) {
      ++starts[(layout.Permute(e.fingerprint) >> kRemBits) + 1];
    }
    for (uint32_t b = 0; b < kBucketCount; ++b) starts[b + 1] += starts[b];
    {
      std::vector<size_t> next(starts.begin(), starts.end() - 1);
      for (const Entry& e : entries) {
        const uint64_t p = layout.Permute(e.fingerprint);
        scratch[next[p >> kRemBits]++] = Item{p & kRemMask, e.id};
      }
    }
    size_t table_size = 0;
    for (uint32_t b = 0; b < kBucketCount; ++b) {
      Bucket& bucket = tables_[t].buckets[b];
      Item* first = scratch.data() + starts[b];
      Item* last = scratch.data() + starts[b + 1];
      if (first != last) {
        std::sort(first, last);
        last = std::unique(first, last);
        if (bucket.size() == 0) {
          bucket.Assign(first, static_cast<uint32_t>(last - first));
        } else {
          merged.clear();
          bucket.AppendTo(&merged);
          const size_t old = merged.size();
          merged.insert(merged.end(), first, last);
          std::inplace_merge(merged.begin(), merged.begin() + old, merged.end());
          merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
          bucket.Assign(merged.data(), static_cast<uint32_t>(merged.size()));
        }
      }
      table_size += bucket.size();
    }
    // Every table holds the same set of (fingerprint, id) pairs.
    if (t == 0) added = table_size - size_;
    DEDUPD_CHECK(table_size == size_ + added, "SimHashIndex: tables disagree after BulkInsert");
  }
  size_ += added;
}

namespace {

// Where a query's prefix range probably lies in a bucket of `n` entries
// whose high parts are spread uniformly (random fingerprints; SimHash bits
// are close to that): [lo_key, hi_key) of 2^24 high-part values maps to
// positions about n * key / 2^24, give or take sqrt(n)/2 (the spread of a
// uniform order statistic). The slack is 2 sqrt(n) + 8 entries on each
// side; a wrong guess costs only a longer binary search, never an answer.
struct Window {
  uint32_t first_lo, first_hi;  // guess for the range's first position
  uint32_t end_lo, end_hi;      // guess for its end
};

Window GuessWindow(uint32_t n, uint32_t lo_key, uint32_t hi_key) {
  const uint32_t slack = 2 * static_cast<uint32_t>(std::sqrt(static_cast<double>(n))) + 8;
  const uint32_t first = static_cast<uint32_t>((uint64_t{lo_key} * n) >> 24);
  const uint32_t end =
      static_cast<uint32_t>((uint64_t{hi_key} * n + (uint64_t{1} << 24) - 1) >> 24);
  return Window{first > slack ? first - slack : 0, std::min(n, first + slack),
                end > slack ? end - slack : 0, std::min(n, end + slack)};
}

}  // namespace

std::vector<SimHashIndex::Match> SimHashIndex::Query(uint64_t fingerprint, int max_distance,
                                                     size_t limit, size_t* total) const {
  DEDUPD_CHECK(max_distance <= max_distance_,
               "SimHashIndex::Query: max_distance above the index's");
  std::vector<Match> out;
  if (max_distance >= 0) {
    const NextWithinFn next_within = NextWithin();
    // Entries within d agree with the query on all blocks of at least one
    // of the first probes_[d] tables (see the top of this file).
    const int probes = probes_[max_distance];
    std::array<uint64_t, kMaxTables> rotated;
    for (int t = 0; t < probes; ++t) {
      rotated[t] = layouts_[t].Permute(fingerprint);
    }
    absl::ReaderMutexLock lock(&mu_);
    // Every probed table costs a cache miss for the bucket header and a few
    // for its keys; loading all headers, then all keys, before scanning any
    // lets the misses of all tables overlap instead of queueing (random
    // DRAM accesses are 370-560 ns apart when dependent, ~40 ns when
    // overlapped, on the machine we measured; docs/simhash_index.md).
    for (int t = 0; t < probes; ++t) {
      const Layout& layout = layouts_[t];
      if (layout.bucket_span != 1) continue;
      const Bucket& bucket = tables_[t].buckets[rotated[t] >> kRemBits];
      if (layout.rem_key_step >= (uint64_t{1} << kPartBits)) {
        // The prefix ends within the high parts: load only the lines
        // around where its range should be, not the whole bucket (at 10^8
        // entries a bucket holds ~4.5 KB of high parts).
        const uint64_t key = (rotated[t] & kRemMask) & layout.rem_key_mask;
        const Window w =
            GuessWindow(bucket.size(), static_cast<uint32_t>(key >> kPartBits),
                        static_cast<uint32_t>((key + layout.rem_key_step) >> kPartBits));
        bucket.Touch(w.first_lo > 0 ? w.first_lo - 1 : 0, std::min(bucket.size(), w.end_hi + 1));
      } else {
        bucket.Touch(0, bucket.size());
      }
    }
    for (int t = 0; t < probes; ++t) {
      const Layout& layout = layouts_[t];
      const uint64_t q = rotated[t];
      const uint32_t qb = static_cast<uint32_t>(q >> kRemBits);
      const uint64_t q48 = q & kRemMask;
      const uint32_t first_bucket = qb & ~(layout.bucket_span - 1);
      for (uint32_t b = first_bucket; b < first_bucket + layout.bucket_span; ++b) {
        const int prefix_distance = absl::popcount(b ^ qb);
        if (prefix_distance > max_distance) continue;
        const Bucket& bucket = tables_[t].buckets[b];
        uint32_t begin = 0;
        uint32_t end = bucket.size();
        if (layout.rem_key_step >= (uint64_t{1} << kPartBits)) {
          // The prefix ends within the high parts (e.g. 25-26 bits for
          // k = 3, B = 5): search them only, already loaded.
          const uint64_t key = q48 & layout.rem_key_mask;
          const uint32_t lo_key = static_cast<uint32_t>(key >> kPartBits);
          const uint32_t hi_key = static_cast<uint32_t>((key + layout.rem_key_step) >> kPartBits);
          const Window w = GuessWindow(bucket.size(), lo_key, hi_key);
          begin = bucket.LowerBoundHiNear(lo_key, w.first_lo, w.first_hi);
          end = bucket.LowerBoundHiNear(hi_key, w.end_lo, w.end_hi);
        } else if (layout.rem_key_step != 0) {  // a prefix of 41..64 bits
          const uint64_t key = q48 & layout.rem_key_mask;
          begin = bucket.LowerBound(key);
          end = bucket.LowerBound(key + layout.rem_key_step);
        }
        const unsigned char* hi = bucket.hi();
        const unsigned char* lo = bucket.lo();
        const int budget = max_distance - prefix_distance;
        for (uint32_t i = next_within(hi, lo, begin, end, q48, budget); i < end;
             i = next_within(hi, lo, i + 1, end, q48, budget)) {
          const uint64_t stored = (uint64_t{b} << kRemBits) | bucket.Rem(i);
          const uint64_t x = stored ^ q;
          bool seen = false;
          for (uint64_t block : layout.earlier_blocks) {
            if ((x & block) == 0) {
              seen = true;
              break;
            }
          }
          if (seen) continue;
          out.push_back(Match{layout.Unpermute(stored), bucket.ids()[i], absl::popcount(x)});
        }
      }
    }
  }
  if (total != nullptr) *total = out.size();
  const auto by_rank = [](const Match& a, const Match& b) {
    if (a.distance != b.distance) return a.distance < b.distance;
    if (a.id != b.id) return a.id < b.id;
    return a.fingerprint < b.fingerprint;
  };
  if (limit < out.size()) {
    std::partial_sort(out.begin(), out.begin() + limit, out.end(), by_rank);
    out.resize(limit);
  } else {
    std::sort(out.begin(), out.end(), by_rank);
  }
  return out;
}

size_t SimHashIndex::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return size_;
}

size_t SimHashIndex::MemoryBytes() const {
  absl::ReaderMutexLock lock(&mu_);
  size_t bytes = layouts_.capacity() * sizeof(Layout) + tables_.capacity() * sizeof(Table) +
                 directory_->bytes();
  for (const Layout& l : layouts_) {
    bytes += l.earlier_blocks.capacity() * sizeof(uint64_t);
  }
  for (const Table& table : tables_) {
    for (uint32_t b = 0; b < kBucketCount; ++b) {
      bytes += table.buckets[b].HeapBytes();
    }
  }
  return bytes;
}

}  // namespace dedupd
