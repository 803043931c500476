// stable_hash.h: fixed, seeded 64-bit hashes whose values never change
// across processes, builds, compilers or machines, for anything persisted
// or compared between processes (SimHash word hashes). std::hash and
// absl::Hash are per-build or per-process and must not be used for that.
//
// StableHash64 is XXH64 (Yann Collet, xxHash 0.8 specification,
// doc/xxhash_spec.md), implemented here and pinned by golden vectors from
// the reference implementation (stable_hash_test.cc), so no library
// upgrade can change it. StableWordHash64 is our own hash for words: two
// 64x64->128-bit multiplies for up to 16 bytes (the structure of wyhash's
// short-input path, Wang Yi 2019, with our constants), XXH64 beyond;
// specified in docs/content_fingerprint.md ("Stable hash") and pinned by
// golden vectors from an independent implementation of that text
// (core/text/testdata/simhash_golden.py).
//
// Example:
//   uint64_t h = StableHash64("abc", 0);  // == 0x44bc2cf5ad770999
//   uint64_t w = StableWordHash64("abc", SimHasher::kSeed);
#ifndef DEDUPD_CORE_TEXT_STABLE_HASH_H_
#define DEDUPD_CORE_TEXT_STABLE_HASH_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/strings/string_view.h"

namespace dedupd {

// StableHash64 returns XXH64(data, seed). Total, thread-safe, the same on
// every platform (reads are little-endian regardless of the host).
// Cost: about 1 ns per 8 bytes plus ~3 ns per call.
uint64_t StableHash64(absl::string_view data, uint64_t seed);

// StableWordHash64 returns the hash of a word (SimHash, kVersion >= 2):
// for 1..16 bytes StableWordHash64Lanes of its bytes, for 0 or more than
// 16 bytes StableHash64(word, seed). Total, thread-safe, the same on every
// platform. Cost: ~2 ns for a word of up to 16 bytes.
uint64_t StableWordHash64(absl::string_view word, uint64_t seed);

// StableWordHash64Lanes is StableWordHash64 of a word of `len` bytes given
// as two little-endian 64-bit lanes: `lo` holds bytes 0..7 and `hi` bytes
// 8..15, each zero beyond `len` (byte i of the word is bits 8i..8i+7 of
// lo, or of hi for i >= 8). Inlined for SimHash's per-word loop, which
// loads and masks the lanes itself. REQUIRES: 1 <= len <= 16; lanes zero
// beyond `len`. Computes, with both products taken as 128-bit:
//   p = (lo XOR kWordA) * (hi XOR kWordB)
//   q = (low64(p) XOR kWordC XOR len) * (high64(p) XOR seed)
//   return low64(q) XOR high64(q)
// kWordA and kWordB have a zero low byte, so that neither factor of p is 0
// for a word without NUL bytes: its byte 0 (in lo), and byte 8 (in hi,
// when len > 8) are not zero, and hi XOR kWordB = kWordB when len <= 8.
inline uint64_t StableWordHash64Lanes(uint64_t lo, uint64_t hi, size_t len, uint64_t seed);

// Implementation details below.

namespace stable_hash_internal {

// StableWordHash64's constants: 2^64 / phi (golden ratio) and XXH64's
// PRIME64_2, each with its low byte cleared, and SplitMix64's first
// multiplier (Steele, Lea, Flood 2014).
inline constexpr uint64_t kWordA = 0x9E3779B97F4A7C00ULL;
inline constexpr uint64_t kWordB = 0xC2B2AE3D27D4EB00ULL;
inline constexpr uint64_t kWordC = 0xBF58476D1CE4E5B9ULL;

// 128-bit unsigned integer (GCC and Clang on 64-bit targets).
__extension__ typedef unsigned __int128 Uint128;

// Little-endian load of 8 bytes: hash values must not depend on the host.
inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

}  // namespace stable_hash_internal

inline uint64_t StableWordHash64Lanes(uint64_t lo, uint64_t hi, size_t len, uint64_t seed) {
  using namespace stable_hash_internal;  // NOLINT(build/namespaces)
  const Uint128 p = static_cast<Uint128>(lo ^ kWordA) * (hi ^ kWordB);
  const Uint128 q =
      static_cast<Uint128>(static_cast<uint64_t>(p) ^ kWordC ^ static_cast<uint64_t>(len)) *
      (static_cast<uint64_t>(p >> 64) ^ seed);
  return static_cast<uint64_t>(q) ^ static_cast<uint64_t>(q >> 64);
}

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_STABLE_HASH_H_
