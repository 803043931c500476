// near_text_engine_test.cc: MinHash near matching through Engine::
// CheckContent over the in-memory stores: edits SimHash at distance 3
// misses are found by estimated Jaccard, each match says which measure
// found it, the item's min_jaccard and the server's default and floor
// apply, short texts are matched by SimHash only, and bad thresholds are
// the item's own error.
#include <cmath>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/text/simhash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine.h"
#include "storage/memory/memory_content_store.h"
#include "storage/memory/memory_url_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/text_edits.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::ReadTextFile;
using ::dedupd::testing::SubstituteWords;
using ::testing::HasSubstr;

std::string ReadTestdata(const std::string& name) {
  return ReadTextFile(std::string(DEDUPD_SERVER_TESTDATA_DIR) + "/" + name);
}

class NearTextEngineTest : public ::testing::Test {
 protected:
  NearTextEngineTest() : NearTextEngineTest(EngineOptions{}) {}
  explicit NearTextEngineTest(EngineOptions options)
      : content_store_(&url_store_, /*max_near_distance=*/3),
        engine_(&normalizer_, &url_store_, &hasher_, &content_store_, WithClock(options)) {}

  EngineOptions WithClock(EngineOptions o) {
    o.clock = [this] { return now_; };
    return o;
  }

  static v1::ContentItem Item(const std::string& url, const std::string& text) {
    v1::ContentItem item;
    item.set_url(url);
    item.set_text(text);
    return item;
  }

  std::vector<v1::ContentResult> Check(const std::vector<v1::ContentItem>& items,
                                       v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    v1::CheckContentRequest request;
    request.set_mode(mode);
    for (const v1::ContentItem& item : items) *request.add_items() = item;
    v1::CheckContentResponse response;
    EXPECT_THAT(engine_.CheckContent(request, &response), IsOk());
    now_ += absl::Seconds(1);
    return {response.results().begin(), response.results().end()};
  }
  v1::ContentResult CheckOne(const v1::ContentItem& item,
                             v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    std::vector<v1::ContentResult> r = Check({item}, mode);
    return r.size() == 1 ? r[0] : v1::ContentResult{};
  }

  absl::Time now_ = absl::FromUnixMicros(1764496800123456);
  UrlNormalizer normalizer_;
  SimHasher hasher_;
  MemoryUrlStore url_store_;
  MemoryContentStore content_store_;
  Engine engine_;
};

// 2% of the words substituted (J ~0.89 of 3-word shingles): SimHash moves
// far beyond 3 bits, MinHash finds it.
TEST_F(NearTextEngineTest, TwoPercentSubstitutionIsFoundByJaccardAlone) {
  const std::string original = ReadTestdata("python_policy_packaging.txt");
  ASSERT_GT(original.size(), 5000u) << "missing testdata";
  const std::string edited = SubstituteWords(original, 50, 7);
  ASSERT_EQ(CheckOne(Item("https://docs.example/policy", original)).verdict(),
            v1::CONTENT_VERDICT_NEW);

  v1::ContentItem item = Item("https://mirror.example/policy", edited);
  item.set_min_jaccard(0.8);
  v1::ContentResult r = CheckOne(item, v1::CLAIM_MODE_PEEK);
  ASSERT_EQ(r.verdict(), v1::CONTENT_VERDICT_NEAR_DUPLICATE) << r.DebugString();
  EXPECT_EQ(r.applied_min_jaccard(), 0.8);
  EXPECT_EQ(r.owner_url(), "https://docs.example/policy");
  ASSERT_EQ(r.near_matches_size(), 1);
  const v1::NearMatch& m = r.near_matches(0);
  std::cout << "2% substituted: SimHash distance " << m.distance() << ", estimated Jaccard "
            << m.estimated_jaccard() << "\n";
  EXPECT_GT(m.distance(), 3u);
  EXPECT_EQ(m.measure(), v1::NEAR_MEASURE_JACCARD);
  EXPECT_GE(m.estimated_jaccard(), 0.8);
  EXPECT_LT(m.estimated_jaccard(), 0.97);

  // A threshold the estimate does not reach: NEW.
  item.set_min_jaccard(0.99);
  r = CheckOne(item, v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(r.verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r.near_match_count(), 0u);
}

TEST_F(NearTextEngineTest, BadMinJaccardIsTheItemsErrorAndTheRestSucceed) {
  const std::string text = "a page of text long enough to have a MinHash signature of its own";
  const double bad[] = {0,
                        -0.1,
                        0.5,
                        0.79,
                        1.0000001,
                        1.5,
                        std::numeric_limits<double>::quiet_NaN(),
                        std::numeric_limits<double>::infinity()};
  std::vector<v1::ContentItem> items;
  for (double j : bad) {
    v1::ContentItem item = Item("https://bad.example/" + std::to_string(items.size()), text);
    item.set_min_jaccard(j);
    items.push_back(item);
  }
  v1::ContentItem good = Item("https://good.example/", text);
  good.set_min_jaccard(1);
  items.push_back(good);
  std::vector<v1::ContentResult> r = Check(items);
  ASSERT_EQ(r.size(), items.size());
  for (size_t i = 0; i < std::size(bad); ++i) {
    EXPECT_EQ(r[i].verdict(), v1::CONTENT_VERDICT_INVALID) << bad[i];
    EXPECT_EQ(r[i].error_reason(), v1::ERROR_REASON_BAD_MIN_JACCARD) << bad[i];
    EXPECT_THAT(r[i].error(), HasSubstr("is not in [0.8, 1]")) << bad[i];
    EXPECT_THAT(r[i].error(), HasSubstr("--min_jaccard_floor")) << bad[i];
  }
  EXPECT_EQ(r.back().verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r.back().applied_min_jaccard(), 1);
}

// Texts under 8 words: SimHash only (one-shingle signatures collide).
TEST_F(NearTextEngineTest, ShortTextsAreNotMatchedByMinHash) {
  v1::ContentResult a = CheckOne(Item("https://a.example/", "red apples for sale"));
  EXPECT_EQ(a.verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(a.applied_min_jaccard(), 0);
  v1::ContentResult b = CheckOne(Item("https://b.example/", "green pears on offer"));
  EXPECT_EQ(b.applied_min_jaccard(), 0);
  if (HammingDistance(a.simhash(), b.simhash()) > 3) {
    EXPECT_EQ(b.verdict(), v1::CONTENT_VERDICT_NEW);
  }
  v1::ContentResult c =
      CheckOne(Item("https://c.example/", "eight words make a text long enough here"));
  EXPECT_EQ(c.applied_min_jaccard(), 0.85);
}

class MinHashOffEngineTest : public NearTextEngineTest {
 protected:
  static EngineOptions Off() {
    EngineOptions o;
    o.content_min_jaccard = 0;
    return o;
  }
  MinHashOffEngineTest() : NearTextEngineTest(Off()) {}
};

// A server default of 0: SimHash only for items that set no min_jaccard;
// an item may still ask for MinHash, and finds texts stored meanwhile
// (they keep their signatures whatever their own threshold).
TEST_F(MinHashOffEngineTest, ServerDefaultZeroIsSimHashOnlyUnlessTheItemAsks) {
  const std::string original = ReadTestdata("python_policy_packaging.txt");
  const std::string edited = SubstituteWords(original, 50, 7);
  v1::ContentResult first = CheckOne(Item("https://docs.example/policy", original));
  ASSERT_EQ(first.verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(first.applied_min_jaccard(), 0);

  v1::ContentResult off =
      CheckOne(Item("https://mirror.example/policy", edited), v1::CLAIM_MODE_PEEK);
  ASSERT_GT(HammingDistance(off.simhash(), first.simhash()), 3);
  EXPECT_EQ(off.verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(off.applied_min_jaccard(), 0);

  v1::ContentItem asks = Item("https://mirror.example/policy", edited);
  asks.set_min_jaccard(0.8);
  v1::ContentResult on = CheckOne(asks, v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(on.verdict(), v1::CONTENT_VERDICT_NEAR_DUPLICATE);
  ASSERT_EQ(on.near_matches_size(), 1);
  EXPECT_EQ(on.near_matches(0).measure(), v1::NEAR_MEASURE_JACCARD);
}

// Many near variants in one batch and across batches: each is NEW once or
// a near duplicate of an earlier one, never of itself, and a re-sent
// variant is an exact duplicate.
TEST_F(NearTextEngineTest, VariantsInOneBatchMatchEarlierItems) {
  const std::string original = ReadTestdata("python_policy_packaging.txt");
  std::vector<v1::ContentItem> items;
  items.push_back(Item("https://v.example/0", original));
  for (int i = 1; i <= 4; ++i) {
    items.push_back(
        Item("https://v.example/" + std::to_string(i), SubstituteWords(original, 60, i)));
  }
  std::vector<v1::ContentResult> r = Check(items);
  ASSERT_EQ(r.size(), items.size());
  EXPECT_EQ(r[0].verdict(), v1::CONTENT_VERDICT_NEW);
  for (size_t i = 1; i < r.size(); ++i) {
    EXPECT_EQ(r[i].verdict(), v1::CONTENT_VERDICT_NEAR_DUPLICATE) << i;
    EXPECT_NE(r[i].owner_url(), items[i].url()) << i;
  }
  std::vector<v1::ContentResult> again = Check({items[2]});
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(again[0].owner_url(), "https://v.example/2");
}

}  // namespace
}  // namespace dedupd
