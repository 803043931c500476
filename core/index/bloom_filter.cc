// bloom_filter.cc: the blocked Bloom filter of bloom_filter.h.
//
// Mapping (docs/bloom_filter.md, "Hash to bits"; kFormatVersion 1):
//   block = (h * num_blocks) >> 64                   (128-bit product)
//   r     = SplitMix64(h): its finalizer of h + C    (SplitMix64 step)
//   bit i = (r * C^i mod 2^64) >> 55, i = 0 .. num_probes-1,
//           C = 0x9E3779B97F4A7C15 (2^64 / golden ratio, odd)
// The block comes from the high bits of h by multiply-shift ("fastrange",
// Lemire 2019) instead of a modulo, which is slow and would reuse the low
// bits. The bit positions come from a remix of h so that they are not a
// function of the bits that chose the block (all keys of one block share
// their high bits); each position is the top 9 bits of a further
// multiplication, as in RocksDB's FastLocalBloom (Dillinger 2019). Two
// positions of one key may coincide (a key sets up to num_probes bits).
//
// Why not double hashing ((g1 + i * g2) mod 512, Kirsch-Mitzenmacher 2006)
// inside the block, the first design: a block of 512 bits leaves only
// 512 * 256 distinct (g1, odd g2) patterns, and two keys with the same g2
// and nearby g1 share most of their bits, so the false positive rate grows
// far beyond the blocked model at high bits per key (measured with 10^6
// keys: 1.34x at 12 bits/key, 2.4x at 16, 5.9x at 20). The multiplicative
// positions stay within 6% of the model at every density
// (docs/bloom_filter.md, "Why not double hashing").
#include "core/index/bloom_filter.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/coding.h"
#include "core/text/splitmix64.h"
#include "core/text/stable_hash.h"

namespace dedupd {

namespace {

__extension__ typedef unsigned __int128 Uint128;

constexpr char kMagic[8] = {'D', 'D', 'B', 'L', 'O', 'O', 'M', '\0'};
constexpr size_t kBlockBytes = BloomFilter::kBlockBits / 8;
// Allocations of at least this many bytes come from mmap: the kernel hands
// out zero pages lazily, so a 1.2 GB filter costs nothing until touched and
// needs no memset pass.
constexpr size_t kMmapMinBytes = size_t{1} << 20;
// Transparent huge page size on x86-64 Linux.
constexpr size_t kHugePageBytes = size_t{2} << 20;
// The words checksum hashes the words in pieces of this many bytes.
constexpr size_t kChecksumPieceBytes = size_t{1} << 20;

// Header field offsets (docs/bloom_filter.md, "Serialized format").
constexpr size_t kOffMagic = 0;
constexpr size_t kOffVersion = 8;
constexpr size_t kOffProbes = 12;
constexpr size_t kOffBlocks = 16;
constexpr size_t kOffInsertedKeys = 24;
constexpr size_t kOffUserTag = 32;
constexpr size_t kOffWordsChecksum = 40;
constexpr size_t kOffHeaderChecksum = 48;
constexpr size_t kOffPadding = 56;

// The per-word masks of one key's bits within its block.
struct Probe {
  uint64_t block;
  uint64_t masks[BloomFilter::kWordsPerBlock];
};

// C^i mod 2^64 for i = 0 .. kMaxProbes-1, C = 0x9E3779B97F4A7C15: the
// positions are r * C^i, computed as independent multiplications rather
// than a serial chain so that they overlap in the pipeline.
constexpr uint64_t kProbeMultiplier = 0x9E3779B97F4A7C15ULL;
struct ProbeMultipliers {
  uint64_t v[BloomFilter::kMaxProbes];
  constexpr ProbeMultipliers() : v() {
    uint64_t x = 1;
    for (int i = 0; i < BloomFilter::kMaxProbes; ++i) {
      v[i] = x;
      x *= kProbeMultiplier;
    }
  }
};
constexpr ProbeMultipliers kProbeMultipliers;

inline uint64_t BlockIndex(uint64_t h, uint64_t num_blocks) {
  return static_cast<uint64_t>((static_cast<Uint128>(h) * num_blocks) >> 64);
}

// SplitMix64's output for state h: its finalizer of h + C. Adding C first
// keeps h = 0 (a fixed point of the finalizer) from mapping to r = 0, whose
// positions would all be 0.
inline uint64_t PositionSeed(uint64_t h) { return SplitMix64(h); }

// Bit i of the key's block: the top 9 bits of r * C^i.
inline uint32_t Position(uint64_t r, int i) {
  return static_cast<uint32_t>((r * kProbeMultipliers.v[i]) >> 55);
}

// The key's block and masks. Starts fetching the block's cache line (for
// writing) before computing the masks, so the miss overlaps that work.
inline Probe MakeProbe(const std::atomic<uint64_t>* words, uint64_t h, uint64_t num_blocks,
                       int num_probes) {
  Probe p;
  p.block = BlockIndex(h, num_blocks);
  __builtin_prefetch(words + p.block * BloomFilter::kWordsPerBlock, 1);
  for (uint64_t& m : p.masks) m = 0;
  const uint64_t r = PositionSeed(h);
  for (int i = 0; i < num_probes; ++i) {
    const uint32_t pos = Position(r, i);
    p.masks[pos >> 6] |= uint64_t{1} << (pos & 63);
  }
  return p;
}

std::atomic<uint64_t>* AllocateWords(uint64_t num_blocks) {
  const size_t bytes = static_cast<size_t>(num_blocks) * kBlockBytes;
  void* p = nullptr;
  if (bytes >= kMmapMinBytes) {
    p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      p = nullptr;
    } else if (bytes >= kHugePageBytes) {
      // Every probe touches a random cache line of the array: with 4 KiB
      // pages a large filter misses the TLB on nearly every probe. Ask for
      // transparent huge pages (Linux "madvise" mode); failure only costs
      // speed, so the result is ignored.
#ifdef MADV_HUGEPAGE
      (void)madvise(p, bytes, MADV_HUGEPAGE);
#endif
    }
  } else {
    p = std::aligned_alloc(kBlockBytes, bytes);  // bytes % 64 == 0
    if (p != nullptr) std::memset(p, 0, bytes);
  }
  DEDUPD_CHECK(p != nullptr, "BloomFilter: out of memory");
  // std::atomic<uint64_t> is lock-free with the size and layout of uint64_t
  // (static_assert below), and all-zero bytes are the value 0.
  return static_cast<std::atomic<uint64_t>*>(p);
}

void FreeWords(std::atomic<uint64_t>* words, uint64_t num_blocks) {
  if (words == nullptr) return;
  const size_t bytes = static_cast<size_t>(num_blocks) * kBlockBytes;
  if (bytes >= kMmapMinBytes) {
    munmap(words, bytes);
  } else {
    std::free(words);
  }
}

static_assert(sizeof(std::atomic<uint64_t>) == sizeof(uint64_t), "words are read as bytes");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "words are read as bytes");

// P(a probe's bits are all set in a 512-bit block holding j keys), in the
// model of Putze et al. 2007: each key sets k distinct uniform bits, and
// the bits are independent. The real mapping draws positions with
// replacement and its bits are negatively correlated; measured rates sit
// within -6%..+2% of this figure (docs/bloom_filter.md, "Sizing").
double BlockHitRate(double j, int k) {
  const double clear = std::pow(1.0 - k / 512.0, j);
  return std::pow(1.0 - clear, k);
}

}  // namespace

uint64_t BloomFilter::KeyHash(absl::string_view key) { return StableHash64(key, kSeed); }

uint64_t BloomFilter::BlocksFor(uint64_t expected_keys, double bits_per_key) {
  if (!(bits_per_key > 0)) return 1;
  const double blocks = std::ceil(static_cast<double>(expected_keys) * bits_per_key /
                                  static_cast<double>(kBlockBits));
  if (!(blocks >= 1)) return 1;
  if (blocks >= static_cast<double>(kMaxBlocks)) return kMaxBlocks;
  return static_cast<uint64_t>(blocks);
}

int BloomFilter::OptimalProbes(double bits_per_key) {
  const double k = std::round(bits_per_key * std::log(2.0));
  if (!(k >= kMinProbes)) return kMinProbes;
  if (k >= kMaxProbes) return kMaxProbes;
  return static_cast<int>(k);
}

double BloomFilter::StandardFalsePositiveRate(double bits_per_key, int k) {
  return std::pow(1.0 - std::exp(-k / bits_per_key), k);
}

double BloomFilter::BlockedFalsePositiveRate(uint64_t keys, uint64_t blocks, int k) {
  if (keys == 0) return 0.0;
  if (blocks == 0) blocks = 1;
  k = std::clamp(k, kMinProbes, kMaxProbes);
  const double lambda = static_cast<double>(keys) / static_cast<double>(blocks);
  // Beyond this load every block is practically full; the sum below would
  // need ~20 * sqrt(lambda) terms for nothing.
  if (lambda > 1e6) return BlockHitRate(lambda, k);
  // Sum Poisson(lambda, j) * BlockHitRate(j, k) over j within 12 standard
  // deviations of the mean (plus a margin for small lambda): the Poisson
  // tail beyond holds less than 1e-30 of the mass, and BlockHitRate is at
  // most 1, so the truncation error is far below any rate of interest.
  const double sd = std::sqrt(lambda);
  const double lo = std::max(0.0, std::floor(lambda - 12 * sd - 12));
  const double hi = std::ceil(lambda + 12 * sd + 30);
  double sum = 0;
  for (double j = lo; j <= hi; j += 1) {
    const double log_pmf = j * std::log(lambda) - lambda - std::lgamma(j + 1);
    sum += std::exp(log_pmf) * BlockHitRate(j, k);
  }
  return std::min(sum, 1.0);
}

double BloomFilter::BitsPerKeyFor(double rate) {
  constexpr uint64_t kKeys = 1'000'000;
  // 0.1 .. 100 bits per key; at 100 bits (k = 16) the rate is ~1e-17.
  for (int tenths = 1; tenths <= 1000; ++tenths) {
    const double bits = tenths / 10.0;
    if (BlockedFalsePositiveRate(kKeys, BlocksFor(kKeys, bits), OptimalProbes(bits)) <= rate) {
      return bits;
    }
  }
  return 100.0;
}

BloomFilter::BloomFilter(uint64_t num_blocks, int num_probes)
    : num_blocks_(num_blocks), num_probes_(num_probes) {
  DEDUPD_CHECK(num_blocks >= 1 && num_blocks <= kMaxBlocks, "BloomFilter: num_blocks out of range");
  DEDUPD_CHECK(num_probes >= kMinProbes && num_probes <= kMaxProbes,
               "BloomFilter: num_probes out of range");
  words_ = AllocateWords(num_blocks_);
}

BloomFilter::BloomFilter(BloomFilter&& other) noexcept
    : num_blocks_(std::exchange(other.num_blocks_, 0)),
      num_probes_(std::exchange(other.num_probes_, 0)),
      words_(std::exchange(other.words_, nullptr)) {}

BloomFilter& BloomFilter::operator=(BloomFilter&& other) noexcept {
  if (this != &other) {
    FreeWords(words_, num_blocks_);
    num_blocks_ = std::exchange(other.num_blocks_, 0);
    num_probes_ = std::exchange(other.num_probes_, 0);
    words_ = std::exchange(other.words_, nullptr);
  }
  return *this;
}

BloomFilter::~BloomFilter() { FreeWords(words_, num_blocks_); }

void BloomFilter::Insert(uint64_t key_hash) { (void)TestAndInsert(key_hash); }

bool BloomFilter::MayContain(uint64_t key_hash) const {
  const std::atomic<uint64_t>* block = words_ + BlockIndex(key_hash, num_blocks_) * kWordsPerBlock;
  // Start the cache miss before the ~50 instructions of position math: a
  // loop of lookups on a 125 MB filter then overlaps more of its misses
  // (5.5M -> 8.3M lookups/s measured).
  __builtin_prefetch(block);
  // One load per probe, all from one cache line, tested without branches:
  // cheaper than building the per-word masks first.
  const uint64_t r = PositionSeed(key_hash);
  const int k = num_probes_;
  uint64_t all = 1;
  for (int i = 0; i < k; ++i) {
    const uint32_t pos = Position(r, i);
    all &= block[pos >> 6].load(std::memory_order_relaxed) >> (pos & 63);
  }
  // Orders later reads after these loads, as acquire loads would (and
  // lets the compiler keep k in a register).
  std::atomic_thread_fence(std::memory_order_acquire);
  return (all & 1) != 0;
}

bool BloomFilter::TestAndInsert(uint64_t key_hash) {
  const Probe p = MakeProbe(words_, key_hash, num_blocks_, num_probes_);
  std::atomic<uint64_t>* block = words_ + p.block * kWordsPerBlock;
  // A locked fetch_or costs ~20 cycles even when it changes nothing, and a
  // branch per word mispredicts often; so first find, without branches,
  // the words that miss some of the key's bits (one cache line of loads;
  // acquire costs nothing extra on x86), then fetch_or only those.
  unsigned todo = 0;
  for (size_t w = 0; w < kWordsPerBlock; ++w) {
    const uint64_t clear = p.masks[w] & ~block[w].load(std::memory_order_acquire);
    todo |= static_cast<unsigned>(clear != 0) << w;
  }
  const bool was_absent = todo != 0;
  while (todo != 0) {
    const int w = __builtin_ctz(todo);
    todo &= todo - 1;
    block[w].fetch_or(p.masks[w], std::memory_order_release);
  }
  return was_absent;
}

uint64_t BloomFilter::CountSetBits() const {
  uint64_t n = 0;
  const size_t num_words = num_blocks_ * kWordsPerBlock;
  for (size_t i = 0; i < num_words; ++i) {
    n += static_cast<uint64_t>(__builtin_popcountll(words_[i].load(std::memory_order_relaxed)));
  }
  return n;
}

double BloomFilter::EstimatedFalsePositiveRate() const {
  if (num_blocks_ == 0) return 0.0;
  const double f = static_cast<double>(CountSetBits()) / static_cast<double>(num_bits());
  return std::pow(f, num_probes_);
}

absl::string_view BloomFilter::WordBytes() const {
  return absl::string_view(reinterpret_cast<const char*>(words_), memory_bytes());
}

std::string BloomFilter::CopyWordBytes() const {
  std::string out(memory_bytes(), '\0');
  for (size_t i = 0; i < memory_bytes() / sizeof(uint64_t); ++i) {
    const uint64_t w = words_[i].load(std::memory_order_relaxed);
    std::memcpy(&out[i * sizeof(uint64_t)], &w, sizeof(w));
  }
  return out;
}

uint64_t BloomFilter::ChecksumWords(absl::string_view bytes) {
  uint64_t c = 0;
  for (size_t off = 0; off < bytes.size(); off += kChecksumPieceBytes) {
    c = StableHash64(bytes.substr(off, kChecksumPieceBytes), c);
  }
  return c;
}

namespace {

std::string EncodeHeaderBytes(uint32_t num_probes, uint64_t num_blocks, uint64_t inserted_keys,
                              uint64_t user_tag, uint64_t words_checksum) {
  std::string h(BloomFilter::kHeaderBytes, '\0');
  std::memcpy(&h[kOffMagic], kMagic, sizeof(kMagic));
  EncodeFixed32LE(&h[kOffVersion], BloomFilter::kFormatVersion);
  EncodeFixed32LE(&h[kOffProbes], num_probes);
  EncodeFixed64LE(&h[kOffBlocks], num_blocks);
  EncodeFixed64LE(&h[kOffInsertedKeys], inserted_keys);
  EncodeFixed64LE(&h[kOffUserTag], user_tag);
  EncodeFixed64LE(&h[kOffWordsChecksum], words_checksum);
  EncodeFixed64LE(
      &h[kOffHeaderChecksum],
      StableHash64(absl::string_view(h.data(), kOffHeaderChecksum), BloomFilter::kSeed));
  // Bytes kOffPadding.. stay zero.
  return h;
}

}  // namespace

std::string BloomFilter::EncodeHeader(uint64_t inserted_keys, uint64_t user_tag) const {
  // Checksum a copy taken with atomic loads, piece by piece, so that a
  // concurrent Insert is a wrong checksum at worst, never a data race.
  std::string piece;
  uint64_t c = 0;
  const size_t num_words = num_blocks_ * kWordsPerBlock;
  const size_t words_per_piece = kChecksumPieceBytes / 8;
  for (size_t start = 0; start < num_words; start += words_per_piece) {
    const size_t n = std::min(words_per_piece, num_words - start);
    piece.resize(n * 8);
    for (size_t i = 0; i < n; ++i) {
      EncodeFixed64LE(&piece[i * 8], words_[start + i].load(std::memory_order_relaxed));
    }
    c = StableHash64(piece, c);
  }
  return EncodeHeaderBytes(static_cast<uint32_t>(num_probes_), num_blocks_, inserted_keys, user_tag,
                           c);
}

std::string BloomFilter::Serialize(uint64_t inserted_keys, uint64_t user_tag) const {
  // Copy the words first, then checksum the copy: the result is
  // self-consistent even while inserts run.
  std::string out(kHeaderBytes + memory_bytes(), '\0');
  char* w = &out[kHeaderBytes];
  const size_t num_words = num_blocks_ * kWordsPerBlock;
  for (size_t i = 0; i < num_words; ++i) {
    EncodeFixed64LE(w + i * 8, words_[i].load(std::memory_order_relaxed));
  }
  const std::string header =
      EncodeHeaderBytes(static_cast<uint32_t>(num_probes_), num_blocks_, inserted_keys, user_tag,
                        ChecksumWords(absl::string_view(w, memory_bytes())));
  std::memcpy(&out[0], header.data(), kHeaderBytes);
  return out;
}

absl::StatusOr<BloomFilter::Header> BloomFilter::ParseHeader(absl::string_view bytes) {
  if (bytes.size() < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat(
        "bloom filter: ", bytes.size(), " bytes, shorter than the ", kHeaderBytes, "-byte header"));
  }
  const char* p = bytes.data();
  if (std::memcmp(p + kOffMagic, kMagic, sizeof(kMagic)) != 0) {
    return absl::DataLossError("bloom filter: bad magic (not DDBLOOM)");
  }
  const uint64_t want = StableHash64(bytes.substr(0, kOffHeaderChecksum), kSeed);
  if (DecodeFixed64LE(p + kOffHeaderChecksum) != want) {
    return absl::DataLossError("bloom filter: header checksum mismatch");
  }
  Header h;
  h.format_version = DecodeFixed32LE(p + kOffVersion);
  if (h.format_version != kFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("bloom filter: format version ", h.format_version,
                     ", this build reads only version ", kFormatVersion));
  }
  for (size_t i = kOffPadding; i < kHeaderBytes; ++i) {
    if (p[i] != 0) {
      return absl::DataLossError("bloom filter: non-zero header padding");
    }
  }
  const uint32_t probes = DecodeFixed32LE(p + kOffProbes);
  if (probes < static_cast<uint32_t>(kMinProbes) || probes > static_cast<uint32_t>(kMaxProbes)) {
    return absl::DataLossError(absl::StrCat("bloom filter: num_probes ", probes, " out of [",
                                            kMinProbes, ", ", kMaxProbes, "]"));
  }
  h.num_probes = static_cast<int>(probes);
  h.num_blocks = DecodeFixed64LE(p + kOffBlocks);
  if (h.num_blocks < 1 || h.num_blocks > kMaxBlocks) {
    return absl::DataLossError(
        absl::StrCat("bloom filter: num_blocks ", h.num_blocks, " out of [1, ", kMaxBlocks, "]"));
  }
  h.inserted_keys = DecodeFixed64LE(p + kOffInsertedKeys);
  h.user_tag = DecodeFixed64LE(p + kOffUserTag);
  h.words_checksum = DecodeFixed64LE(p + kOffWordsChecksum);
  return h;
}

absl::StatusOr<BloomFilter> BloomFilter::FromHeaderAndWords(const Header& header,
                                                            absl::string_view word_bytes) {
  if (header.format_version != kFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("bloom filter: format version ", header.format_version,
                     ", this build reads only version ", kFormatVersion));
  }
  if (header.num_probes < kMinProbes || header.num_probes > kMaxProbes || header.num_blocks < 1 ||
      header.num_blocks > kMaxBlocks) {
    return absl::DataLossError(absl::StrCat("bloom filter: num_probes ", header.num_probes,
                                            " or num_blocks ", header.num_blocks, " out of range"));
  }
  // num_blocks <= 2^31, so this cannot overflow.
  const uint64_t want_bytes = header.num_blocks * kBlockBytes;
  if (word_bytes.size() != want_bytes) {
    return absl::DataLossError(absl::StrCat("bloom filter: ", word_bytes.size(),
                                            " bytes of words, header says ", want_bytes));
  }
  if (ChecksumWords(word_bytes) != header.words_checksum) {
    return absl::DataLossError("bloom filter: words checksum mismatch");
  }
  BloomFilter filter(header.num_blocks, header.num_probes);
  const size_t num_words = header.num_blocks * kWordsPerBlock;
  for (size_t i = 0; i < num_words; ++i) {
    const uint64_t v = DecodeFixed64LE(word_bytes.data() + i * 8);
    // Leave untouched mmap pages unmaterialized: most of a sparse filter's
    // words are zero.
    if (v != 0) filter.words_[i].store(v, std::memory_order_relaxed);
  }
  return filter;
}

absl::StatusOr<BloomFilter::Loaded> BloomFilter::Deserialize(absl::string_view bytes) {
  absl::StatusOr<Header> header = ParseHeader(bytes);
  if (!header.ok()) return header.status();
  absl::StatusOr<BloomFilter> filter = FromHeaderAndWords(*header, bytes.substr(kHeaderBytes));
  if (!filter.ok()) return filter.status();
  return Loaded{std::move(filter).value(), *header};
}

}  // namespace dedupd
