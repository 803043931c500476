// chunk_near_rule_test.cc: ChunkNearDistance's table (chunk_near_rule.h) at
// and around every boundary, and its invariants: never above the request,
// never widening as a chunk gets shorter.
#include "core/text/chunk_near_rule.h"

#include <cstddef>

#include "gtest/gtest.h"

namespace dedupd {
namespace {

struct Case {
  size_t words;
  int requested;
  int want;
};

TEST(ChunkNearDistanceTest, Table) {
  const Case cases[] = {
      // Under kMinWordsForNearMatch: exact only, whatever is requested.
      {0, 3, kExactMatchOnly},
      {1, 3, kExactMatchOnly},
      {7, 3, kExactMatchOnly},
      {7, 0, kExactMatchOnly},
      {7, 6, kExactMatchOnly},
      // 8-15 words: at most kShortChunkMaxDistance (4).
      {8, 0, 0},
      {8, 3, 3},
      {8, 4, 4},
      {8, 6, 4},
      {15, 3, 3},
      {15, 7, 4},
      // 16-63 words: at most kMediumChunkMaxDistance (5).
      {16, 3, 3},
      {16, 5, 5},
      {16, 6, 5},
      {63, 6, 5},
      {63, 2, 2},
      // 64 words and more: the request.
      {64, 3, 3},
      {64, 6, 6},
      {80, 3, 3},
      {80, 7, 7},
      {1000000, 0, 0},
      // A negative request matches nothing near, at any length.
      {80, -1, kExactMatchOnly},
      {80, -5, kExactMatchOnly},
      {12, -1, kExactMatchOnly},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ChunkNearDistance(c.words, c.requested), c.want)
        << "words=" << c.words << " requested=" << c.requested;
  }
}

TEST(ChunkNearDistanceTest, DefaultDistanceOnlyTurnsOffShortChunks) {
  // At CheckChunks' default k = 3 the rule is "exact only under 8 words".
  for (size_t words = 0; words < 200; ++words) {
    EXPECT_EQ(ChunkNearDistance(words, 3), words < kMinWordsForNearMatch ? kExactMatchOnly : 3)
        << "words=" << words;
  }
}

TEST(ChunkNearDistanceTest, NeverAboveRequestAndMonotoneInLength) {
  for (int requested = -2; requested <= 10; ++requested) {
    int previous = kExactMatchOnly;
    for (size_t words = 0; words < 300; ++words) {
      const int d = ChunkNearDistance(words, requested);
      EXPECT_LE(d, requested < 0 ? kExactMatchOnly : requested);
      EXPECT_GE(d, kExactMatchOnly);
      EXPECT_GE(d, previous) << "words=" << words << " requested=" << requested;
      previous = d;
    }
  }
}

TEST(MinHashNearThresholdTest, OffUnderEightWords) {
  const struct {
    size_t words;
    double requested;
    double want;
  } cases[] = {
      {0, 0.8, 0},   {1, 0.8, 0},     {3, 0.9, 0},     {7, 0.85, 0},
      {8, 0.8, 0.8}, {9, 0.85, 0.85}, {500, 1.0, 1.0}, {64, 0, 0},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(MinHashNearThreshold(c.words, c.requested), c.want)
        << "words=" << c.words << " requested=" << c.requested;
  }
}

}  // namespace
}  // namespace dedupd
