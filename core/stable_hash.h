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

#include <cstdint>

#include "absl/strings/string_view.h"

namespace dedupd {

// StableHash64 returns XXH64(data, seed). Total, thread-safe, the same on
// every platform (reads are little-endian regardless of the host).
// Cost: about 1 ns per 8 bytes plus ~3 ns per call.
uint64_t StableHash64(absl::string_view data, uint64_t seed);

}  // namespace dedupd

#endif  // DEDUPD_CORE_STABLE_HASH_H_
