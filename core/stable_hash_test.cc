// stable_hash_test.cc: StableHash64 == XXH64, pinned by golden values that
// were produced by the reference implementation (libxxhash 0.8.1,
// XXH64()). These values are part of the SimHash format: if this test
// fails, stored fingerprints are wrong, whatever the code change was.
#include "core/stable_hash.h"

#include <cstdint>
#include <string>

#include "gtest/gtest.h"

namespace dedupd {
namespace {

struct Golden {
  std::string data;
  uint64_t seed;
  uint64_t want;
};

TEST(StableHash64Test, GoldenXxh64Values) {
  constexpr uint64_t kS = 0x6465647570645348ULL;  // SimHasher::kSeed
  const Golden golden[] = {
      {"", 0, 0xef46db3751d8e999ULL},
      {"", kS, 0x1007c9cbe615fcdbULL},
      {"a", 0, 0xd24ec4f1a98c6e5bULL},
      {"a", kS, 0x545733254cc7bfd1ULL},
      {"abc", 0, 0x44bc2cf5ad770999ULL},
      {"abc", kS, 0xe32d0a1ef1887d97ULL},
      {"dedupd", 0, 0xde0f37e8f12ad2acULL},
      {"dedupd", kS, 0xc7ef356edaba2ad6ULL},
      {"The quick brown fox jumps over the lazy dog", 0,
       0x0b242d361fda71bcULL},
      {"The quick brown fox jumps over the lazy dog", kS,
       0x018ae8de105db2ddULL},
      {"0123456789abcdef0123456789abcdef0123456789", 0, 0xa76190c3acf08a1cULL},
      {"0123456789abcdef0123456789abcdef0123456789", kS,
       0x8182712565c618c5ULL},
  };
  for (const Golden& g : golden) {
    SCOPED_TRACE(g.data);
    EXPECT_EQ(StableHash64(g.data, g.seed), g.want);
  }
}

TEST(StableHash64Test, SeedAndEveryLengthMatter) {
  const std::string bytes(100, 'x');
  for (size_t len = 1; len < bytes.size(); ++len) {
    EXPECT_NE(StableHash64(bytes.substr(0, len), 1),
              StableHash64(bytes.substr(0, len - 1), 1));
    EXPECT_NE(StableHash64(bytes.substr(0, len), 1),
              StableHash64(bytes.substr(0, len), 2));
  }
}

}  // namespace
}  // namespace dedupd
