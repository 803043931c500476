// shingle_set_test.cc: ShingleSet32 and ExactJaccard on a table of known
// overlaps, and against the exact Jaccard of the untruncated 64-bit hash
// sets on random sets with a fixed seed.
#include "core/text/shingle_set.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "core/text/shingle_hashes.h"
#include "core/text/splitmix64.h"
#include "gtest/gtest.h"

namespace dedupd {
namespace {

ShingleSet32 SetOf(const std::string& normalized) {
  return ShingleSet32(DistinctShingleHashes(normalized, 3).distinct);
}

TEST(ShingleSet32Test, KeepsBits8To39SortedAndDistinct) {
  const std::vector<uint64_t> hashes = {0x00000012345678ffULL, 0xff00000000000100ULL,
                                        0x00000012345678aaULL};
  const ShingleSet32 s(hashes);
  // The first and third differ only in their low 8 bits: one element.
  EXPECT_EQ(s.hashes(), (std::vector<uint32_t>{0x00000001u, 0x12345678u}));
  EXPECT_EQ(ShingleSet32(hashes, 0).hashes(),
            (std::vector<uint32_t>{0x00000100u, 0x345678aau, 0x345678ffu}));
}

// The set is sorted and distinct whatever its size (counting sort up to
// 1,024 hashes, std::sort above) and however its hashes cluster: many
// sharing their top bits, repeats, all equal.
TEST(ShingleSet32Test, SortedAndDistinctAcrossSizesAndClusters) {
  SplitMixRng rng(11);
  struct Case {
    size_t n;
    uint64_t mask;  // applied to random 64-bit hashes before the set takes bits 8..39
  };
  const Case cases[] = {
      {0, ~uint64_t{0}},
      {1, ~uint64_t{0}},
      {2, ~uint64_t{0}},
      {80, ~uint64_t{0}},
      {256, ~uint64_t{0}},
      {1024, ~uint64_t{0}},
      {1025, ~uint64_t{0}},
      {5000, ~uint64_t{0}},
      {300, 0x000000FF000FFF00ULL},
      {300, 0x0000000000000F00ULL},
      {1024, 0x0000000000000000ULL},
      {2000, 0x00000000FF000000ULL},
  };
  for (const Case& c : cases) {
    std::vector<uint64_t> hashes;
    for (size_t i = 0; i < c.n; ++i) hashes.push_back(rng.Next() & c.mask);
    std::vector<uint32_t> expected;
    for (uint64_t h : hashes) expected.push_back(static_cast<uint32_t>(h >> 8));
    std::sort(expected.begin(), expected.end());
    expected.erase(std::unique(expected.begin(), expected.end()), expected.end());
    EXPECT_EQ(ShingleSet32(hashes).hashes(), expected) << "n=" << c.n << " mask=" << c.mask;
  }
}

TEST(ShingleSet32Test, FromSortedTakesOnlyStrictlyIncreasing) {
  ASSERT_TRUE(ShingleSet32::FromSorted({}).has_value());
  ASSERT_TRUE(ShingleSet32::FromSorted({1, 2, 7}).has_value());
  EXPECT_EQ(ShingleSet32::FromSorted({1, 2, 7})->hashes(), (std::vector<uint32_t>{1, 2, 7}));
  EXPECT_FALSE(ShingleSet32::FromSorted({1, 1}).has_value());
  EXPECT_FALSE(ShingleSet32::FromSorted({2, 1}).has_value());
}

TEST(ExactJaccardTest, KnownOverlaps) {
  struct Case {
    std::vector<uint32_t> a, b;
    double want;
  };
  const Case cases[] = {
      {{}, {}, 1.0},                          // both empty
      {{1, 2, 3}, {}, 0.0},                   // one empty
      {{1, 2, 3}, {1, 2, 3}, 1.0},            // identical
      {{1, 2, 3}, {4, 5, 6}, 0.0},            // disjoint
      {{1, 2, 3}, {2, 3, 4}, 0.5},            // 2 of 4
      {{1, 2}, {1, 2, 3, 4}, 0.5},            // subset
      {{1, 5, 9, 13}, {5, 13, 20}, 2.0 / 5},  // interleaved
  };
  for (const Case& c : cases) {
    const ShingleSet32 a = *ShingleSet32::FromSorted(c.a);
    const ShingleSet32 b = *ShingleSet32::FromSorted(c.b);
    EXPECT_EQ(ExactJaccard(a, b), c.want) << c.a.size() << " vs " << c.b.size();
    EXPECT_EQ(ExactJaccard(b, a), c.want);
  }
}

TEST(ExactJaccardTest, TextsOfKnownJaccard) {
  EXPECT_EQ(ExactJaccard(SetOf("the quick brown fox jumps"), SetOf("the quick brown fox leaps")),
            0.5);
  // One word changed in the middle of 29 words (27 shingles): 3 shingles
  // of each side differ, J = 24 / 30 = 0.8 exactly.
  std::string a = "w0";
  for (int i = 1; i < 29; ++i) a += " w" + std::to_string(i);
  std::string b = a;
  b.replace(b.find(" w14 "), 5, " xx ");
  EXPECT_EQ(SetOf(a).size(), 27u);
  EXPECT_EQ(ExactJaccard(SetOf(a), SetOf(b)), 0.8);
  EXPECT_EQ(ExactJaccard(SetOf(a), SetOf(a)), 1.0);
}

// Random sets with a controlled overlap: the 32-bit sets' Jaccard equals
// the 64-bit one (a truncation collision, ~n^2 / 2^33 per pair, has
// probability ~1e-4 over the whole test at these sizes and this seed has
// none).
TEST(ExactJaccardTest, EqualsThe64BitJaccardOnRandomSets) {
  SplitMixRng rng(42);
  for (int round = 0; round < 500; ++round) {
    const size_t common = rng.Below(200);
    const size_t only_a = rng.Below(60);
    const size_t only_b = rng.Below(60);
    std::vector<uint64_t> a, b;
    for (size_t i = 0; i < common; ++i) {
      const uint64_t h = rng.Next();
      a.push_back(h);
      b.push_back(h);
    }
    for (size_t i = 0; i < only_a; ++i) a.push_back(rng.Next());
    for (size_t i = 0; i < only_b; ++i) b.push_back(rng.Next());
    std::reverse(b.begin(), b.end());  // order of first occurrence differs
    const std::set<uint64_t> sa(a.begin(), a.end()), sb(b.begin(), b.end());
    size_t inter = 0;
    for (uint64_t h : sa) inter += sb.count(h);
    const size_t uni = sa.size() + sb.size() - inter;
    const double want = uni == 0 ? 1.0 : static_cast<double>(inter) / static_cast<double>(uni);
    EXPECT_EQ(ExactJaccard(ShingleSet32(a), ShingleSet32(b)), want) << "round " << round;
  }
}

}  // namespace
}  // namespace dedupd
