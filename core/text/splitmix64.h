// splitmix64.h: splitmix64 (Steele, Lea, Flood 2014), a fast, well-mixed
// 64-bit hash, and a deterministic random stream built on it, for the load
// generators and tests that must make item i a pure function of (seed, i)
// and replay a run from its seed, and for the Bloom filter's bit positions
// (core/index/bloom_filter.cc). Frozen: the positions are persisted in
// filter snapshots and files, and bloom_filter_test's golden vectors pin
// them. Keys are hashed with stable_hash.h, not this. Not cryptographic.
//
// Example:
//   const uint64_t h = dedupd::SplitMix64(seed ^ i);
//   dedupd::SplitMixRng rng(seed);
//   const size_t pick = rng.Below(10);   // 0..9
//   const double u = rng.Unit();         // [0, 1)
//
// Thread safety: SplitMix64 is pure; a SplitMixRng is thread-compatible.
#ifndef DEDUPD_CORE_TEXT_SPLITMIX64_H_
#define DEDUPD_CORE_TEXT_SPLITMIX64_H_

#include <cstddef>
#include <cstdint>

namespace dedupd {

inline constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A small deterministic stream of random numbers from one seed.
class SplitMixRng {
 public:
  explicit SplitMixRng(uint64_t seed) : state_(seed) {}
  uint64_t Next() { return state_ = SplitMix64(state_); }
  // Uniform enough in [0, n) for test and load mixes (modulo bias < n / 2^64).
  // REQUIRES: n > 0.
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  // In [0, 1), 53 random bits.
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_SPLITMIX64_H_
