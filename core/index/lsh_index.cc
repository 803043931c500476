// lsh_index.cc: LSH banding over MinHash signatures; see lsh_index.h and
// docs/minhash.md.
//
// Layout: per band, 2^bucket_bits buckets selected by the top bucket_bits
// bits of the 32-bit band key; an entry keeps the key's low 16 bits (with
// bucket_bits = 16, the default, the whole key). A bucket is one allocation:
// [size, capacity: uint32 each][low 16 key bits: uint16 x cap][ids: uint32
// x cap], 6 bytes per entry, unsorted: an insert appends, an erase moves
// the last entry into the hole, and a query compares the query's 16 bits
// with the bucket's, 8 at a time (SSE2). At 10^7 entries a bucket holds
// ~150 entries, ~300 bytes of keys: scanning them costs less than the cache
// misses that reach them, so sorting (a memmove per insert, as in
// SimHashIndex) would buy nothing. A query first prefetches every band's bucket
// pointer and bucket head, so the bands' cache misses overlap instead of
// coming one after another.
#include "core/index/lsh_index.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/base/attributes.h"
#include "common/check.h"
#include "core/text/splitmix64.h"
#include "core/text/stable_hash.h"  // Load64

namespace dedupd {
namespace {

// Rough per-allocation overhead of glibc malloc, counted in MemoryBytes so
// that bytes per entry is not flattered by many small buckets (as in
// SimHashIndex).
constexpr size_t kMallocOverheadBytes = 16;

// BulkInsert's first radix pass: 2^8 partitions, few enough write streams
// for the L1 cache and the TLB.
constexpr int kPartitionBits = 8;

struct KeyAndId {
  uint32_t key;
  uint32_t id;
};

// BulkInsert appends fewer entries one at a time, without sorting them.
constexpr size_t kSortedInsertEntries = 1024;

// BulkInsert computes the keys of this many bands in one pass over the
// signatures: each pass reads every entry's cache lines once, whatever
// the bands, so fewer passes read less; each band of a pass costs 4 bytes
// per entry of temporary memory.
constexpr int kBandsPerPass = 6;

// The low `bytes` bytes of v; REQUIRES: 1 <= bytes <= 8.
inline uint64_t LowBytes(uint64_t v, int bytes) {
  return bytes == 8 ? v : v & ((uint64_t{1} << (8 * bytes)) - 1);
}

// LshIndex::BandKey (the formula is documented there), inlined into the
// loops of BulkInsert, Insert and Query. Loads the band's slots 8 at a
// time when 16 bytes of the signature start at its first (all bands of 18
// x 7 but the last), one at a time otherwise.
ABSL_ATTRIBUTE_ALWAYS_INLINE inline uint32_t BandKeyOf(const MinHashSignature& sig, int band,
                                                       int rows) {
  const size_t offset = static_cast<size_t>(band) * rows;
  const uint8_t* p = sig.data() + offset;
  uint64_t lo = 0, hi = 0;
  if (offset + 16 <= sig.size()) {
    lo = LowBytes(stable_hash_internal::Load64(p), std::min(rows, 8));
    if (rows > 8) hi = LowBytes(stable_hash_internal::Load64(p + 8), rows - 8);
  } else {
    for (int i = 0; i < rows && i < 8; ++i) lo |= uint64_t{p[i]} << (8 * i);
    for (int i = 8; i < rows; ++i) hi |= uint64_t{p[i]} << (8 * (i - 8));
  }
  uint64_t h = SplitMix64(lo ^ (LshIndex::kSeed + static_cast<uint64_t>(band)));
  if (rows > 8) h = SplitMix64(h ^ hi);
  return static_cast<uint32_t>(h >> 32);
}

}  // namespace

// One bucket: a pointer to [Head][keys: uint16 x cap][pad to 4][ids: uint32
// x cap], or null when empty. Not thread-safe; the index's owner guards it.
class LshIndex::Bucket {
 public:
  Bucket() = default;
  Bucket(const Bucket&) = delete;
  Bucket& operator=(const Bucket&) = delete;
  ~Bucket() { std::free(data_); }

  uint32_t size() const { return data_ == nullptr ? 0 : head()->size; }

  // Position of (key, id), or -1.
  int64_t Find(uint16_t key, uint32_t id) const {
    const uint32_t n = size();
    if (n == 0) return -1;
    const uint16_t* k = keys();
    const uint32_t* ids = Ids();
    for (uint32_t i = 0; i < n; ++i) {
      if (k[i] == key && ids[i] == id) return i;
    }
    return -1;
  }

  // Appends the ids of the entries with `key` to `out`.
  void AppendMatches(uint16_t key, std::vector<uint32_t>* out) const {
    const uint32_t n = size();
    if (n == 0) return;
    const uint16_t* k = keys();
    const uint32_t* ids = Ids();
    uint32_t i = 0;
#if defined(__SSE2__)
    const __m128i q = _mm_set1_epi16(static_cast<int16_t>(key));
    for (; i + 8 <= n; i += 8) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i));
      // Two mask bits per 16-bit lane; keep the even ones.
      uint32_t m = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi16(v, q))) & 0x5555;
      while (m != 0) {
        out->push_back(ids[i + static_cast<uint32_t>(__builtin_ctz(m)) / 2]);
        m &= m - 1;
      }
    }
#endif
    for (; i < n; ++i) {
      if (k[i] == key) out->push_back(ids[i]);
    }
  }

  // Appends (key, id), growing by about 1/16 so that growth slack stays
  // small (a reallocation every ~size/16 inserts copies size entries).
  void Append(uint16_t key, uint32_t id) {
    const uint32_t n = size();
    if (data_ == nullptr || n == head()->capacity) Reallocate(n + n / 16 + 4);
    keys()[n] = key;
    Ids()[n] = id;
    head()->size = n + 1;
  }

  // Makes room for `cap` entries in one allocation, exactly `cap` when it
  // has to grow (BulkInsert: a bucket's final size is known).
  // REQUIRES: cap >= 1.
  void Reserve(uint32_t cap) {
    if (data_ == nullptr || head()->capacity < cap) Reallocate(cap);
  }

  // Erases position `i` (the last entry takes its place); gives memory back
  // once less than half of it is used.
  void EraseAt(uint32_t i) {
    const uint32_t last = size() - 1;
    keys()[i] = keys()[last];
    Ids()[i] = Ids()[last];
    head()->size = last;
    if (last == 0) {
      std::free(data_);
      data_ = nullptr;
    } else if (last < head()->capacity / 2) {
      Reallocate(last + last / 16);
    }
  }

  // Prefetches the head and the first line of keys (see Query).
  void Prefetch() const {
    if (data_ != nullptr) __builtin_prefetch(data_);
  }

  size_t HeapBytes() const {
    return data_ == nullptr ? 0 : Bytes(head()->capacity) + kMallocOverheadBytes;
  }

 private:
  struct Head {
    uint32_t size;
    uint32_t capacity;
  };
  static size_t IdsOffset(uint32_t cap) { return sizeof(Head) + (size_t{cap} * 2 + 3) / 4 * 4; }
  static size_t Bytes(uint32_t cap) { return IdsOffset(cap) + size_t{cap} * 4; }

  Head* head() const { return reinterpret_cast<Head*>(data_); }
  uint16_t* keys() const { return reinterpret_cast<uint16_t*>(data_ + sizeof(Head)); }
  uint32_t* Ids() const { return reinterpret_cast<uint32_t*>(data_ + IdsOffset(head()->capacity)); }

  // REQUIRES: cap >= size() and cap >= 1.
  void Reallocate(uint32_t cap) {
    unsigned char* fresh = static_cast<unsigned char*>(std::malloc(Bytes(cap)));
    DEDUPD_CHECK(fresh != nullptr, "LshIndex: out of memory");
    const uint32_t n = size();
    Head* h = reinterpret_cast<Head*>(fresh);
    h->size = n;
    h->capacity = cap;
    if (n > 0) {
      std::memcpy(fresh + sizeof(Head), keys(), size_t{n} * 2);
      std::memcpy(fresh + IdsOffset(cap), Ids(), size_t{n} * 4);
    }
    std::free(data_);
    data_ = fresh;
  }

  unsigned char* data_ = nullptr;
};

double LshCandidateProbability(int bands, int rows, double s) {
  return 1.0 - std::pow(1.0 - std::pow(s, rows), bands);
}

bool LshIndex::IsValidLayout(int bands, int rows) {
  return bands >= 1 && rows >= 1 && rows <= kMaxRows && bands * rows <= kMinHashSlots;
}

uint32_t LshIndex::BandKey(const MinHashSignature& sig, int band, int rows) {
  return BandKeyOf(sig, band, rows);
}

LshIndex::LshIndex(int bands, int rows, int bucket_bits)
    : bands_(bands), rows_(rows), bucket_bits_(bucket_bits) {
  DEDUPD_CHECK(IsValidLayout(bands, rows), "LshIndex: invalid layout (bands, rows)");
  DEDUPD_CHECK(bucket_bits >= kMinBucketBits && bucket_bits <= kMaxBucketBits,
               "LshIndex: bucket_bits out of range");
  buckets_.reset(new Bucket[static_cast<size_t>(bands_) << bucket_bits_]);
}

LshIndex::Bucket& LshIndex::BucketOf(int band, uint32_t key) const {
  return buckets_[(static_cast<size_t>(band) << bucket_bits_) + (key >> (32 - bucket_bits_))];
}

LshIndex::~LshIndex() = default;

void LshIndex::LocateBuckets(const MinHashSignature& sig, uint32_t* keys, Bucket** buckets) const {
  for (int b = 0; b < bands_; ++b) {
    keys[b] = BandKeyOf(sig, b, rows_);
    buckets[b] = &BucketOf(b, keys[b]);
  }
  // Every band's bucket pointer, then every bucket's head, before any is
  // scanned or appended to: the bands' misses overlap instead of queueing.
  // (Loads instead of prefetches overlapped less: a load that misses holds
  // up retirement, and the misses were 2/3 of a query's time.)
  for (int b = 0; b < bands_; ++b) __builtin_prefetch(buckets[b]);
  for (int b = 0; b < bands_; ++b) buckets[b]->Prefetch();
}

bool LshIndex::Insert(const MinHashSignature& sig, uint32_t id) {
  // Add the entry to every band that lacks it; it was stored already only
  // when every band had it.
  bool added = false;
  for (int b = 0; b < bands_; ++b) {
    const uint32_t key = BandKeyOf(sig, b, rows_);
    Bucket& bucket = BucketOf(b, key);
    if (bucket.Find(static_cast<uint16_t>(key), id) < 0) {
      bucket.Append(static_cast<uint16_t>(key), id);
      added = true;
    }
  }
  if (added) ++size_;
  return added;
}

void LshIndex::BulkInsert(absl::Span<const Entry> entries) {
  const absl::Span<const Entry> parts[] = {entries};
  BulkInsertParts(absl::MakeConstSpan(parts));
}

void LshIndex::BulkInsertParts(absl::Span<const absl::Span<const Entry>> parts) {
  size_t n = 0;
  for (absl::Span<const Entry> part : parts) n += part.size();
  if (n == 0) return;
  DEDUPD_CHECK(n <= UINT32_MAX, "LshIndex: more than 2^32 entries");
  if (n < kSortedInsertEntries) {
    // Too few to pay for the sort's arrays: Insert without its scan.
    uint32_t keys[kMinHashSlots];
    Bucket* buckets[kMinHashSlots];
    for (absl::Span<const Entry> part : parts) {
      for (const Entry& e : part) {
        LocateBuckets(e.signature, keys, buckets);
        for (int b = 0; b < bands_; ++b) buckets[b]->Append(static_cast<uint16_t>(keys[b]), e.id);
      }
    }
    size_ += n;
    return;
  }
  // Per band, a two-pass radix sort by bucket whose second pass writes
  // into the buckets themselves. Appending to the 2^16 buckets of a band
  // in entry order would miss the cache on nearly every bucket head (12 MB
  // of heads and tails); instead the entries are first scattered into 2^8
  // partitions by the top bits of their key (256 write streams), and each
  // partition (~40,000 entries at 10^7, in L2) then fills its
  // 2^(bucket_bits - 8) buckets. The keys of kBandsPerPass bands are
  // computed in one pass over the signatures, the bands then sorted one at
  // a time: temporary memory 4 * kBandsPerPass + 12 bytes per entry.
  const int shift = 32 - bucket_bits_;
  const int partition_bits = std::min(kPartitionBits, bucket_bits_);
  const int partition_shift = 32 - partition_bits;
  const size_t partitions = size_t{1} << partition_bits;
  const uint32_t in_partition_mask = (uint32_t{1} << (bucket_bits_ - partition_bits)) - 1;
  // The ids once, so that each band reads 4 bytes per entry for them rather
  // than another cache line of the entry.
  std::vector<uint32_t> ids;
  ids.reserve(n);
  for (absl::Span<const Entry> part : parts) {
    for (const Entry& e : part) ids.push_back(e.id);
  }
  const int per_pass = std::min(kBandsPerPass, bands_);
  std::vector<uint32_t> keys(n * per_pass);
  std::vector<KeyAndId> partitioned(n);
  // starts[g * (partitions + 1) + p + 1]: entries of pass band g in partitions <= p.
  std::vector<size_t> starts(per_pass * (partitions + 1)), cursors(partitions);
  std::vector<uint32_t> counts(size_t{in_partition_mask} + 1);
  for (int first = 0; first < bands_; first += per_pass) {
    const int group = std::min(per_pass, bands_ - first);
    std::fill(starts.begin(), starts.end(), 0);
    size_t i = 0;
    for (absl::Span<const Entry> part : parts) {
      for (const Entry& e : part) {
        for (int g = 0; g < group; ++g) {
          const uint32_t key = BandKeyOf(e.signature, first + g, rows_);
          keys[g * n + i] = key;
          ++starts[g * (partitions + 1) + (key >> partition_shift) + 1];
        }
        ++i;
      }
    }
    for (int g = 0; g < group; ++g) {
      const uint32_t* band_keys = &keys[g * n];
      size_t* band_starts = &starts[g * (partitions + 1)];
      for (size_t p = 0; p < partitions; ++p) band_starts[p + 1] += band_starts[p];
      std::copy(band_starts, band_starts + partitions, cursors.begin());
      for (size_t i = 0; i < n; ++i) {
        partitioned[cursors[band_keys[i] >> partition_shift]++] = {band_keys[i], ids[i]};
      }
      const size_t band_first_bucket = static_cast<size_t>(first + g) << bucket_bits_;
      for (size_t p = 0; p < partitions; ++p) {
        Bucket* buckets = &buckets_[band_first_bucket + (p << (bucket_bits_ - partition_bits))];
        const KeyAndId* begin = partitioned.data() + band_starts[p];
        const KeyAndId* end = partitioned.data() + band_starts[p + 1];
        std::fill(counts.begin(), counts.end(), 0);
        for (const KeyAndId* e = begin; e != end; ++e) {
          ++counts[(e->key >> shift) & in_partition_mask];
        }
        for (size_t k = 0; k < counts.size(); ++k) {
          if (counts[k] > 0) buckets[k].Reserve(buckets[k].size() + counts[k]);
        }
        for (const KeyAndId* e = begin; e != end; ++e) {
          buckets[(e->key >> shift) & in_partition_mask].Append(static_cast<uint16_t>(e->key),
                                                                e->id);
        }
      }
    }
  }
  size_ += n;
}

bool LshIndex::Erase(const MinHashSignature& sig, uint32_t id) {
  bool all = true;
  for (int b = 0; b < bands_; ++b) {
    const uint32_t key = BandKeyOf(sig, b, rows_);
    Bucket& bucket = BucketOf(b, key);
    const int64_t pos = bucket.Find(static_cast<uint16_t>(key), id);
    if (pos < 0) {
      all = false;
    } else {
      bucket.EraseAt(static_cast<uint32_t>(pos));
    }
  }
  if (all) --size_;
  return all;
}

std::vector<uint32_t> LshIndex::Query(const MinHashSignature& sig) const {
  std::vector<uint32_t> out;
  Query(sig, &out);
  return out;
}

void LshIndex::Query(const MinHashSignature& sig, std::vector<uint32_t>* out) const {
  out->clear();
  uint32_t keys[kMinHashSlots];
  Bucket* buckets[kMinHashSlots];
  LocateBuckets(sig, keys, buckets);
  for (int b = 0; b < bands_; ++b) {
    buckets[b]->AppendMatches(static_cast<uint16_t>(keys[b]), out);
  }
  if (out->size() > 1) {
    std::sort(out->begin(), out->end());
    out->erase(std::unique(out->begin(), out->end()), out->end());
  }
}

size_t LshIndex::MemoryBytes() const {
  const size_t n = static_cast<size_t>(bands_) << bucket_bits_;
  size_t bytes = n * sizeof(Bucket) + kMallocOverheadBytes;
  for (size_t i = 0; i < n; ++i) bytes += buckets_[i].HeapBytes();
  return bytes;
}

}  // namespace dedupd
