// bloom_filter.h: a blocked Bloom filter over 64-bit key hashes, for the URL
// layer's "definitely not seen" tier. It answers "definitely not
// inserted" or "maybe inserted", never "not inserted" for an inserted key,
// from a fixed amount of memory.
//
// Layout (Putze, Sanders, Singler 2007, "Cache-, hash- and space-efficient
// Bloom filters"): the bits are cut into 512-bit blocks (one cache line); a
// key sets and tests `num_probes` bits of one block, so a probe costs one
// cache miss. Inside the block, position i is the top 9 bits of
// SplitMix64(hash) * C^i (multiplicative hashing as in RocksDB's
// FastLocalBloom, Dillinger 2019; double hashing, Kirsch-Mitzenmacher 2006,
// has too few distinct patterns in 512 bits: docs/bloom_filter.md). Which
// block and which bits a key hash maps to is specified in
// docs/bloom_filter.md and pinned by golden vectors; keys are hashed with
// BloomFilter::KeyHash (XXH64 with the fixed seed kSeed), never std::hash.
//
// Example:
//   BloomFilter filter(BloomFilter::BlocksFor(/*expected_keys=*/10'000'000,
//                                             /*bits_per_key=*/10.0),
//                      BloomFilter::OptimalProbes(10.0));
//   const uint64_t h = BloomFilter::KeyHash("http://a.example/x");
//   filter.Insert(h);
//   filter.MayContain(h);  // true, always
//   filter.MayContain(BloomFilter::KeyHash("http://b.example/"));  // ~1%: true
//
//   std::string bytes = filter.Serialize(/*inserted_keys=*/1);
//   absl::StatusOr<BloomFilter::Loaded> back = BloomFilter::Deserialize(bytes);
#ifndef DEDUPD_CORE_INDEX_BLOOM_FILTER_H_
#define DEDUPD_CORE_INDEX_BLOOM_FILTER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dedupd {

// BloomFilter: a fixed-size set of 64-bit key hashes with one-sided error.
//
// Thread safety: thread-safe. Insert and MayContain may run concurrently from
// any number of threads (the words are std::atomic<uint64_t>; Insert is a
// fetch_or with release order, MayContain loads with acquire order), so a
// MayContain that happens after an Insert of the same hash (through any
// synchronization, e.g. a mutex or a reply on a socket) returns true. A
// MayContain racing an Insert of the same hash may return either answer.
// TestAndInsert is not atomic as a whole: callers that need "exactly one
// caller saw it absent" serialize it themselves. Serialize and CountSetBits
// read a moment-to-moment view while inserts run: every bit set before the
// call began is in the result.
class BloomFilter {
 public:
  // Bits per block (one 64-byte cache line) and 64-bit words per block.
  static constexpr size_t kBlockBits = 512;
  static constexpr size_t kWordsPerBlock = kBlockBits / 64;
  // The seed of KeyHash. Part of the format: changing it bumps
  // kFormatVersion.
  static constexpr uint64_t kSeed = 0x6465647570642d62ULL;  // "dedupd-b"
  // Version of the hash-to-bits mapping and of the serialized layout
  // (docs/bloom_filter.md). Deserialize accepts only this version.
  static constexpr uint32_t kFormatVersion = 1;
  // Size of the serialized header, in bytes.
  static constexpr size_t kHeaderBytes = 64;
  // Limits accepted by the constructor and Deserialize.
  static constexpr int kMinProbes = 1;
  static constexpr int kMaxProbes = 16;
  // 2^31 blocks = 128 GiB of bits: far beyond any machine this serves.
  static constexpr uint64_t kMaxBlocks = uint64_t{1} << 31;

  // KeyHash returns the 64-bit hash of a key: StableHash64(key, kSeed).
  // Total, thread-safe, the same on every platform and build.
  static uint64_t KeyHash(absl::string_view key);

  // BlocksFor returns the number of blocks holding expected_keys keys at
  // bits_per_key bits each, rounded up; at least 1, at most kMaxBlocks.
  // REQUIRES: bits_per_key > 0.
  static uint64_t BlocksFor(uint64_t expected_keys, double bits_per_key);

  // OptimalProbes returns round(bits_per_key * ln 2), clamped to
  // [kMinProbes, kMaxProbes]: the probe count that minimizes the false
  // positive rate of a standard Bloom filter at that density.
  static int OptimalProbes(double bits_per_key);

  // BitsPerKeyFor returns the bits per key that give a false positive rate
  // of at most `rate` for this blocked layout at its optimal probe count
  // (BlockedFalsePositiveRate), searched in steps of 0.1 bit; a blocked
  // filter needs somewhat more than a standard one's -log2(rate) / ln 2.
  // REQUIRES: 0 < rate < 1.
  static double BitsPerKeyFor(double rate);

  // StandardFalsePositiveRate returns (1 - e^(-k / bits_per_key))^k, the
  // textbook rate of an unblocked filter with k probes.
  static double StandardFalsePositiveRate(double bits_per_key, int k);

  // BlockedFalsePositiveRate returns the expected false positive rate of
  // this layout holding `keys` keys in `blocks` blocks with k probes: the
  // block loads are Poisson with mean keys / blocks, and a block holding j
  // keys answers a foreign probe "maybe" with the probability that all k
  // probed positions are set, (1 - (1 - k/512)^j)^k (Putze et al. 2007,
  // section 3). Measured rates sit within a few percent of it.
  // Returns 0 when keys == 0. REQUIRES: blocks >= 1, 1 <= k <= kMaxProbes.
  static double BlockedFalsePositiveRate(uint64_t keys, uint64_t blocks, int k);

  // An all-zero filter of `num_blocks` blocks testing `num_probes` bits per
  // key. REQUIRES: 1 <= num_blocks <= kMaxBlocks,
  // kMinProbes <= num_probes <= kMaxProbes. Allocates num_blocks * 64
  // bytes, 64-byte aligned (zeroed by the OS for large sizes).
  BloomFilter(uint64_t num_blocks, int num_probes);

  BloomFilter(BloomFilter&&) noexcept;
  BloomFilter& operator=(BloomFilter&&) noexcept;
  BloomFilter(const BloomFilter&) = delete;
  BloomFilter& operator=(const BloomFilter&) = delete;
  ~BloomFilter();

  // Insert sets the key's bits. Thread-safe; see the class comment.
  void Insert(uint64_t key_hash);

  // MayContain returns false when the key was definitely never inserted,
  // true when it may have been. Never false for an inserted key.
  bool MayContain(uint64_t key_hash) const;

  // TestAndInsert sets the key's bits and returns true when at least one of
  // them was clear before, i.e. MayContain would have returned false.
  // Not atomic against a concurrent TestAndInsert of the same key: both may
  // return true.
  bool TestAndInsert(uint64_t key_hash);

  uint64_t num_blocks() const { return num_blocks_; }
  int num_probes() const { return num_probes_; }
  uint64_t num_bits() const { return num_blocks_ * kBlockBits; }
  // Bytes of the bit array (the object's own few bytes aside).
  size_t memory_bytes() const { return num_blocks_ * (kBlockBits / 8); }

  // CountSetBits returns the number of set bits. O(num_bits / 64).
  uint64_t CountSetBits() const;

  // EstimatedFalsePositiveRate returns the rate implied by the fraction of
  // set bits f = CountSetBits() / num_bits(): f^k. Useful when the number
  // of inserted keys is not known (e.g. after duplicate inserts).
  // O(num_bits / 64).
  double EstimatedFalsePositiveRate() const;

  // Serialized form (docs/bloom_filter.md): a kHeaderBytes header (magic
  // "DDBLOOM\0", kFormatVersion, num_probes, num_blocks, inserted_keys,
  // user_tag, a checksum of the words and a checksum of the header), then
  // the words, little-endian. `inserted_keys` and `user_tag` are the
  // caller's figures, stored and returned as given (the URL store keeps
  // its insert count and a store sequence number there).
  std::string Serialize(uint64_t inserted_keys, uint64_t user_tag = 0) const;

  // The parsed header.
  struct Header {
    uint32_t format_version = 0;
    int num_probes = 0;
    uint64_t num_blocks = 0;
    uint64_t inserted_keys = 0;
    uint64_t user_tag = 0;
    uint64_t words_checksum = 0;
  };

  // ParseHeader parses the first kHeaderBytes of a serialized filter.
  // Errors: DataLoss for a short input, a wrong magic or a header checksum
  // mismatch; FailedPrecondition for another format version; DataLoss for
  // probes or blocks out of range. Never crashes on any input.
  static absl::StatusOr<Header> ParseHeader(absl::string_view bytes);

  // Streaming serialization for filters too large to copy (a 10^9-key
  // filter is ~1.2 GB): EncodeHeader, then the words as WordBytes() in any
  // number of pieces. The words checksum covers the words as they are when
  // EncodeHeader runs, so call it when no Insert runs concurrently, or
  // accept that Deserialize will reject the copy (callers that snapshot
  // while inserting copy the words first).
  std::string EncodeHeader(uint64_t inserted_keys, uint64_t user_tag) const;
  // The bit array as bytes: num_blocks() * 64 bytes, little-endian words.
  // Valid as long as the filter. REQUIRES: a little-endian host.
  absl::string_view WordBytes() const;
  // CopyWordBytes returns a copy of WordBytes() read one atomic word at a
  // time (relaxed), so it may run while Insert runs on other threads (a
  // memcpy of the words would race with Insert). O(memory_bytes()).
  std::string CopyWordBytes() const;

  // ChecksumWords returns the words checksum of `bytes` (the WordBytes
  // layout): StableHash64 chained over 1 MiB pieces (docs/bloom_filter.md).
  static uint64_t ChecksumWords(absl::string_view bytes);

  struct Loaded;
  // Deserialize parses Serialize's output. Errors: as ParseHeader, plus
  // DataLoss when the length does not match the header or the words
  // checksum does not match. Never crashes on any input.
  static absl::StatusOr<Loaded> Deserialize(absl::string_view bytes);

  // FromHeaderAndWords builds a filter from a parsed header and its words
  // (e.g. read from a file in pieces). DataLoss when the size or the words
  // checksum does not match the header.
  static absl::StatusOr<BloomFilter> FromHeaderAndWords(const Header& header,
                                                        absl::string_view word_bytes);

 private:
  uint64_t num_blocks_ = 0;
  int num_probes_ = 0;
  // num_blocks_ * kWordsPerBlock words, 64-byte aligned.
  std::atomic<uint64_t>* words_ = nullptr;
};

struct BloomFilter::Loaded {
  BloomFilter filter;
  Header header;
};

}  // namespace dedupd

#endif  // DEDUPD_CORE_INDEX_BLOOM_FILTER_H_
