// stable_hash.h: a fixed, seeded 64-bit hash whose values never change
// across processes, builds, compilers or machines, for anything persisted
// or compared between processes (SimHash word hashes). std::hash and
// absl::Hash are per-build or per-process and must not be used for that.
//
// The function is XXH64 (Yann Collet, xxHash 0.8 specification,
// doc/xxhash_spec.md), implemented here and pinned by golden vectors from
// the reference implementation (stable_hash_test.cc), so no library
// upgrade can change it.
//
// Example:
//   uint64_t h = StableHash64("abc", 0);  // == 0x44bc2cf5ad770999
#ifndef DEDUPD_CORE_STABLE_HASH_H_
#define DEDUPD_CORE_STABLE_HASH_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/strings/string_view.h"

namespace dedupd {

// StableHash64 returns XXH64(data, seed). Total, thread-safe, the same on
// every platform (reads are little-endian regardless of the host).
// Cost: about 1 ns per 8 bytes plus ~3 ns per call.
uint64_t StableHash64(absl::string_view data, uint64_t seed);

// StableHash64Short returns StableHash64(absl::string_view(data, len), seed)
// for a short input, without branches on `len` (a word's length is
// unpredictable, and a mispredicted branch costs more than the few extra
// multiplies), inlined for SimHash's per-word loop.
// REQUIRES: len < 16, and 16 bytes readable at `data` (bytes past `len`
// are read and ignored).
inline uint64_t StableHash64Short(const char* data, size_t len, uint64_t seed);

// Implementation details below.

namespace stable_hash_internal {

inline constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
inline constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
inline constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;
inline constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
inline constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;

inline uint64_t Rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Little-endian loads: the hash value must not depend on the host.
inline uint64_t Load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}
inline uint32_t Load32(const unsigned char* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

inline uint64_t Round(uint64_t acc, uint64_t input) {
  acc += input * kPrime2;
  acc = Rotl(acc, 31);
  return acc * kPrime1;
}

// XXH64's final mix ("avalanche").
inline uint64_t Avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

// Returns `take ? then : otherwise`; compilers emit a conditional move.
inline uint64_t Select(bool take, uint64_t then, uint64_t otherwise) {
  return take ? then : otherwise;
}

}  // namespace stable_hash_internal

inline uint64_t StableHash64Short(const char* data, size_t len, uint64_t seed) {
  using namespace stable_hash_internal;  // NOLINT(build/namespaces)
  // XXH64 for len < 32 consumes one 8-byte lane per 8 bytes, then one
  // 4-byte lane if 4 or more bytes remain, then single bytes. With
  // len < 16 each lane runs at most once (a byte lane at most 3 times):
  // every step is computed and kept only when the length calls for it.
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  uint64_t h = seed + kPrime5 + static_cast<uint64_t>(len);
  const uint64_t t8 = Rotl(h ^ Round(0, Load64(p)), 27) * kPrime1 + kPrime4;
  h = Select(len >= 8, t8, h);
  p += len & 8;
  const uint64_t t4 =
      Rotl(h ^ static_cast<uint64_t>(Load32(p)) * kPrime1, 23) * kPrime2 +
      kPrime3;
  h = Select((len & 4) != 0, t4, h);
  p += len & 4;
  const size_t bytes = len & 3;
  for (size_t i = 0; i < 3; ++i) {
    const uint64_t t1 =
        Rotl(h ^ static_cast<uint64_t>(p[i]) * kPrime5, 11) * kPrime1;
    h = Select(i < bytes, t1, h);
  }
  return Avalanche(h);
}

}  // namespace dedupd

#endif  // DEDUPD_CORE_STABLE_HASH_H_
