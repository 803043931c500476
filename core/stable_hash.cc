// stable_hash.cc: XXH64 per the xxHash specification (doc/xxhash_spec.md,
// "XXH64 Algorithm Description"); see stable_hash.h. Only the scalar
// algorithm is needed: SimHash hashes words, which are short.
#include "core/stable_hash.h"

#include <cstddef>
#include <cstring>

namespace dedupd {

namespace {

using stable_hash_internal::Avalanche;
using stable_hash_internal::kPrime1;
using stable_hash_internal::kPrime2;
using stable_hash_internal::kPrime3;
using stable_hash_internal::kPrime4;
using stable_hash_internal::kPrime5;
using stable_hash_internal::Load32;
using stable_hash_internal::Load64;
using stable_hash_internal::Rotl;
using stable_hash_internal::Round;

inline uint64_t MergeRound(uint64_t acc, uint64_t val) {
  acc ^= Round(0, val);
  return acc * kPrime1 + kPrime4;
}

}  // namespace

uint64_t StableHash64(absl::string_view data, uint64_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t len = data.size();
  uint64_t h;
  if (len >= 32) {
    uint64_t v1 = seed + kPrime1 + kPrime2;
    uint64_t v2 = seed + kPrime2;
    uint64_t v3 = seed;
    uint64_t v4 = seed - kPrime1;
    do {
      v1 = Round(v1, Load64(p));
      v2 = Round(v2, Load64(p + 8));
      v3 = Round(v3, Load64(p + 16));
      v4 = Round(v4, Load64(p + 24));
      p += 32;
      len -= 32;
    } while (len >= 32);
    h = Rotl(v1, 1) + Rotl(v2, 7) + Rotl(v3, 12) + Rotl(v4, 18);
    h = MergeRound(h, v1);
    h = MergeRound(h, v2);
    h = MergeRound(h, v3);
    h = MergeRound(h, v4);
  } else {
    h = seed + kPrime5;
  }
  h += static_cast<uint64_t>(data.size());
  while (len >= 8) {
    h ^= Round(0, Load64(p));
    h = Rotl(h, 27) * kPrime1 + kPrime4;
    p += 8;
    len -= 8;
  }
  if (len >= 4) {
    h ^= static_cast<uint64_t>(Load32(p)) * kPrime1;
    h = Rotl(h, 23) * kPrime2 + kPrime3;
    p += 4;
    len -= 4;
  }
  while (len > 0) {
    h ^= static_cast<uint64_t>(*p) * kPrime5;
    h = Rotl(h, 11) * kPrime1;
    ++p;
    --len;
  }
  return Avalanche(h);
}

}  // namespace dedupd
