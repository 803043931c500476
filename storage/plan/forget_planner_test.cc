// Tests of forget_planner's decisions on plain data (no backend). The
// content conformance suite checks the same rules through every backend.
#include "storage/plan/forget_planner.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dedupd {
namespace {

using Action = TextForgetPlan::Action;

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

ContentRecord Owned(const std::string& owner, uint64_t alias_count) {
  ContentRecord r;
  r.doc_id = 7;
  r.simhash = 0x55;
  r.first_seen = T(1);
  r.alias_count = alias_count;
  r.owner_url = owner;
  return r;
}

TEST(PlanTextForgetTest, AliasIsDroppedAndTheCountFalls) {
  const TextForgetPlan p = PlanTextForget("http://z/", Owned("http://o/", 2),
                                          {{"http://b/", T(3)}, {"http://z/", T(2)}});
  EXPECT_EQ(p.action, Action::kDropAlias);
  EXPECT_TRUE(p.remove_url_alias);
  EXPECT_EQ(p.record.owner_url, "http://o/");
  EXPECT_EQ(p.record.alias_count, 1u);
  EXPECT_EQ(p.record.doc_id, 7u);
}

TEST(PlanTextForgetTest, OwnerAloneDeletesTheText) {
  const TextForgetPlan p = PlanTextForget("http://o/", Owned("http://o/", 0), {});
  EXPECT_EQ(p.action, Action::kDeleteText);
  EXPECT_FALSE(p.remove_url_alias);
}

TEST(PlanTextForgetTest, OldestAliasIsPromotedNotTheFirstInByteOrder) {
  const std::vector<AliasRecord> aliases = {{"http://b/", T(30)}, {"http://z/", T(20)}};
  const TextForgetPlan p = PlanTextForget("http://o/", Owned("http://o/", 2), aliases);
  EXPECT_EQ(p.action, Action::kPromoteAlias);
  EXPECT_EQ(p.new_owner, "http://z/");
  EXPECT_EQ(p.record.owner_url, "http://z/");
  EXPECT_EQ(p.record.alias_count, 1u);
  // Same doc id, fingerprint and first-seen time.
  EXPECT_EQ(p.record.doc_id, 7u);
  EXPECT_EQ(p.record.simhash, 0x55u);
  EXPECT_EQ(p.record.first_seen, T(1));
}

TEST(PlanTextForgetTest, SameTimeAliasesTieByUrlBytesWhateverTheirOrder) {
  for (const std::vector<AliasRecord>& aliases :
       {std::vector<AliasRecord>{{"http://m2/", T(60)}, {"http://m1/", T(60)}},
        std::vector<AliasRecord>{{"http://m1/", T(60)}, {"http://m2/", T(60)}}}) {
    EXPECT_EQ(PlanTextForget("http://q/", Owned("http://q/", 2), aliases).new_owner, "http://m1/");
  }
}

TEST(PlanTextForgetTest, StaleHitChangesNothing) {
  const TextForgetPlan p =
      PlanTextForget("http://x/", Owned("http://o/", 1), {{"http://b/", T(3)}});
  EXPECT_EQ(p.action, Action::kNone);
  EXPECT_FALSE(p.remove_url_alias);
  ForgetResult r;
  p.Count(Sha256Digest{}, &r);
  EXPECT_FALSE(r.found());
}

TEST(PlanTextForgetTest, OwnerThatIsAlsoAnAliasLosesBoth) {
  // A damaged store: the owner is listed as an alias too.
  const TextForgetPlan p = PlanTextForget("http://o/", Owned("http://o/", 2),
                                          {{"http://o/", T(5)}, {"http://b/", T(6)}});
  EXPECT_TRUE(p.remove_url_alias);
  EXPECT_EQ(p.action, Action::kPromoteAlias);
  EXPECT_EQ(p.new_owner, "http://b/");
  EXPECT_EQ(p.record.alias_count, 0u);
  ForgetResult r;
  p.Count(Sha256Digest{}, &r);
  EXPECT_EQ(r.aliases_removed, 1u);
  ASSERT_EQ(r.contents_promoted.size(), 1u);
  EXPECT_EQ(r.contents_promoted[0].new_owner_url, "http://b/");
}

}  // namespace
}  // namespace dedupd
