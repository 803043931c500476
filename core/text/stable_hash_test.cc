// stable_hash_test.cc: StableHash64 == XXH64, pinned by golden values that
// were produced by the reference implementation (libxxhash 0.8.1,
// XXH64()); StableWordHash64 pinned by golden values from an independent
// implementation of its specification in docs/content_fingerprint.md
// (`python3 core/text/testdata/simhash_golden.py --word_vectors`). These values
// are part of the SimHash format: if this test fails, stored fingerprints
// are wrong, whatever the code change was.
#include "core/text/stable_hash.h"

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
      {"The quick brown fox jumps over the lazy dog", 0, 0x0b242d361fda71bcULL},
      {"The quick brown fox jumps over the lazy dog", kS, 0x018ae8de105db2ddULL},
      {"0123456789abcdef0123456789abcdef0123456789", 0, 0xa76190c3acf08a1cULL},
      {"0123456789abcdef0123456789abcdef0123456789", kS, 0x8182712565c618c5ULL},
  };
  for (const Golden& g : golden) {
    SCOPED_TRACE(g.data);
    EXPECT_EQ(StableHash64(g.data, g.seed), g.want);
  }
}

TEST(StableWordHash64Test, GoldenValues) {
  constexpr uint64_t kS = 0x6465647570645348ULL;  // SimHasher::kSeed
  const Golden golden[] = {
      {"a", kS, 0x5c0917e16ce29c66ULL},
      {"abc", kS, 0x9503ca133ee0c417ULL},
      {"dedupd", kS, 0x8329f238f9b0ad79ULL},
      {"12345678", kS, 0xff1a9c4fd9b5d4f4ULL},
      {"123456789", kS, 0x4ea261c429728861ULL},
      {"0123456789abcdef", kS, 0xe34e9c5531b4bcdeULL},
      {"stra\xC3\x9F"
       "e",
       kS, 0x107b98dced415afbULL},
      // Not 1..16 bytes: XXH64.
      {"0123456789abcdefg", kS, 0x947e2d16821b41e1ULL},
      {"", kS, 0x1007c9cbe615fcdbULL},
  };
  for (const Golden& g : golden) {
    SCOPED_TRACE(g.data);
    EXPECT_EQ(StableWordHash64(g.data, g.seed), g.want);
  }
  EXPECT_EQ(StableWordHash64("0123456789abcdefg", kS), StableHash64("0123456789abcdefg", kS));
}

// The lanes form is the same function when given the masked lanes.
TEST(StableWordHash64Test, LanesMatchTheWord) {
  const std::string text = "0123456789abcdefXXXXXXXX";
  for (size_t len = 1; len <= 16; ++len) {
    uint64_t lo = 0;
    uint64_t hi = 0;
    for (size_t i = 0; i < len; ++i) {
      const uint64_t byte = static_cast<unsigned char>(text[i]);
      if (i < 8) {
        lo |= byte << (8 * i);
      } else {
        hi |= byte << (8 * (i - 8));
      }
    }
    EXPECT_EQ(StableWordHash64Lanes(lo, hi, len, 7), StableWordHash64(text.substr(0, len), 7))
        << len;
  }
}

// Every byte, the length and the seed change the hash; a trailing NUL
// (a zero byte, the same lanes) is told apart by the length.
TEST(StableWordHash64Test, EveryByteLengthAndSeedMatter) {
  const std::string word = "abcdefghijklmnop";
  for (size_t len = 1; len <= word.size(); ++len) {
    const std::string w = word.substr(0, len);
    const uint64_t h = StableWordHash64(w, 1);
    EXPECT_NE(h, StableWordHash64(w, 2)) << len;
    EXPECT_NE(h, StableWordHash64(w + std::string(1, '\0'), 1)) << len;
    for (size_t i = 0; i < len; ++i) {
      std::string changed = w;
      changed[i] ^= 1;
      EXPECT_NE(h, StableWordHash64(changed, 1)) << len << " " << i;
    }
  }
}

TEST(StableHash64Test, SeedAndEveryLengthMatter) {
  const std::string bytes(100, 'x');
  for (size_t len = 1; len < bytes.size(); ++len) {
    EXPECT_NE(StableHash64(bytes.substr(0, len), 1), StableHash64(bytes.substr(0, len - 1), 1));
    EXPECT_NE(StableHash64(bytes.substr(0, len), 1), StableHash64(bytes.substr(0, len), 2));
  }
}

}  // namespace
}  // namespace dedupd
