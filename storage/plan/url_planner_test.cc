// Tests of url_planner's decisions on plain records (no backend). The URL
// store conformance suite checks the same rules through every backend.
#include "storage/plan/url_planner.h"

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/memory/memory_url_store.h"

namespace dedupd {
namespace {

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

constexpr uint64_t kMine = 11;
constexpr uint64_t kOther = 22;

UrlRecord Record(int64_t first, int64_t last, UrlClaimKind kind, uint64_t id,
                 std::optional<int64_t> lease_until) {
  UrlRecord r;
  r.first_seen = T(first);
  r.last_claim = T(last);
  r.last_kind = kind;
  r.claim_id_hash = id;
  if (lease_until) r.lease_until = T(*lease_until);
  return r;
}

enum class Want { kNew, kReclaimed, kDue, kSeen };

TEST(PlanUrlClaimTest, Table) {
  struct Case {
    const char* name;
    std::optional<UrlRecord> stored;
    uint64_t claim_id;
    int64_t lease_seconds;  // 0: none
    int64_t revisit_after;  // seconds; -1: never
    int64_t now;
    Want want;
    bool writes;
    int64_t want_last_claim;
    std::optional<int64_t> want_lease_until;
  };
  const UrlRecord plain = Record(100, 100, UrlClaimKind::kNew, 0, std::nullopt);
  const UrlRecord mine = Record(100, 100, UrlClaimKind::kNew, kMine, std::nullopt);
  const UrlRecord leased = Record(100, 100, UrlClaimKind::kNew, kOther, 160);
  const UrlRecord my_due = Record(100, 500, UrlClaimKind::kDue, kMine, 560);
  const UrlRecord my_reclaim = Record(100, 200, UrlClaimKind::kReclaimed, kMine, std::nullopt);
  const Case cases[] = {
      {"absent: new", std::nullopt, 0, 0, -1, 100, Want::kNew, true, 100, std::nullopt},
      {"absent, leased", std::nullopt, kMine, 60, -1, 100, Want::kNew, true, 100, 160},
      {"stored: seen", plain, 0, 0, -1, 200, Want::kSeen, false, 100, std::nullopt},
      {"stored, another id: seen", mine, kOther, 0, -1, 200, Want::kSeen, false, 100, std::nullopt},
      {"same id within retention: new again", mine, kMine, 0, -1, 100 + 86400, Want::kNew, false,
       100, std::nullopt},
      {"same id past retention: seen", mine, kMine, 0, -1, 100 + 86401, Want::kSeen, false, 100,
       std::nullopt},
      {"live lease of another: seen with its lease", leased, kMine, 60, -1, 159, Want::kSeen, false,
       100, 160},
      {"ended lease: reclaimed", leased, kMine, 60, -1, 160, Want::kReclaimed, true, 160, 220},
      {"ended lease, no new lease", leased, 0, 0, -1, 170, Want::kReclaimed, true, 170,
       std::nullopt},
      {"revisit not yet", plain, 0, 0, 1000, 1099, Want::kSeen, false, 100, std::nullopt},
      {"revisit due", plain, 0, 0, 1000, 1100, Want::kDue, true, 100, std::nullopt},
      {"revisit waits for a pending lease", leased, 0, 0, 10, 150, Want::kSeen, false, 100, 160},
      {"due answered again to its claim id", my_due, kMine, 60, 10, 520, Want::kDue, false, 500,
       560},
      {"reclaim answered again to its claim id", my_reclaim, kMine, 0, -1, 300, Want::kReclaimed,
       false, 200, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    UrlClaimOptions options;
    options.claim_id_hash = c.claim_id;
    options.lease = absl::Seconds(c.lease_seconds);
    const absl::Duration revisit =
        c.revisit_after < 0 ? absl::InfiniteDuration() : absl::Seconds(c.revisit_after);
    const UrlPlan p = PlanUrlClaim(c.stored, options, revisit, T(c.now));
    EXPECT_EQ(p.answer.is_new, c.want != Want::kSeen);
    EXPECT_EQ(p.answer.due, c.want == Want::kDue);
    EXPECT_EQ(p.answer.reclaimed, c.want == Want::kReclaimed);
    EXPECT_EQ(p.write.has_value(), c.writes);
    EXPECT_EQ(p.answer.first_seen, c.stored ? c.stored->first_seen : T(c.now));
    EXPECT_EQ(p.answer.last_claim, T(c.want_last_claim));
    EXPECT_EQ(p.answer.lease_until, c.want_lease_until
                                        ? std::optional<absl::Time>(T(*c.want_lease_until))
                                        : std::nullopt);
    if (p.write) {
      EXPECT_EQ(p.write->first_seen, p.answer.first_seen);
      EXPECT_EQ(p.write->last_claim, T(c.now));
      EXPECT_EQ(p.write->claim_id_hash, c.claim_id);
      EXPECT_EQ(p.write->lease_until, p.answer.lease_until);
      const UrlClaimKind kind = c.want == Want::kDue         ? UrlClaimKind::kDue
                                : c.want == Want::kReclaimed ? UrlClaimKind::kReclaimed
                                                             : UrlClaimKind::kNew;
      EXPECT_EQ(p.write->last_kind, kind);
    }
  }
}

TEST(PlanUrlClaimTest, TimesAreTruncatedToMicroseconds) {
  UrlClaimOptions options;
  options.lease = absl::Nanoseconds(1500);
  const UrlPlan p =
      PlanUrlClaim(std::nullopt, options, absl::InfiniteDuration(), T(5) + absl::Nanoseconds(999));
  EXPECT_EQ(p.answer.first_seen, T(5));
  ASSERT_TRUE(p.answer.lease_until.has_value());
  EXPECT_EQ(*p.answer.lease_until, T(5) + absl::Microseconds(1))
      << "now, truncated, plus the lease";
}

TEST(PlanUrlCompleteTest, Table) {
  struct Case {
    const char* name;
    std::optional<UrlRecord> stored;
    uint64_t claim_id;
    UrlCompletion want;
  };
  const UrlRecord leased = Record(100, 100, UrlClaimKind::kNew, kMine, 160);
  const UrlRecord confirmed = Record(100, 100, UrlClaimKind::kNew, kMine, std::nullopt);
  const Case cases[] = {
      {"never claimed", std::nullopt, kMine, UrlCompletion::kNotClaimed},
      {"pending lease, its id", leased, kMine, UrlCompletion::kConfirmed},
      {"pending lease, no id given", leased, 0, UrlCompletion::kConfirmed},
      {"pending lease, another id", leased, kOther, UrlCompletion::kLeaseLost},
      {"confirmed, its id", confirmed, kMine, UrlCompletion::kAlreadyConfirmed},
      {"confirmed, another id", confirmed, kOther, UrlCompletion::kLeaseLost},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const UrlCompletePlan p = PlanUrlComplete(c.stored, c.claim_id);
    EXPECT_EQ(p.outcome, c.want);
    EXPECT_EQ(p.write.has_value(), c.want == UrlCompletion::kConfirmed);
    if (p.write) {
      EXPECT_FALSE(p.write->lease_until.has_value());
      EXPECT_EQ(p.write->last_claim, c.stored->last_claim);
      EXPECT_EQ(p.write->claim_id_hash, c.stored->claim_id_hash);
    }
  }
}

TEST(PeekUrlsTest, AnswersAsAClaimWouldAndRecordsNothing) {
  MemoryUrlStore store;
  std::vector<UrlClaim> out;
  ASSERT_TRUE(store.ClaimUrls({"http://a/"}, T(10), &out).ok());
  UrlClaimOptions options;
  ASSERT_TRUE(PeekUrls(&store, options, {"http://a/", "http://b/", "http://b/"}, T(20), &out).ok());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FALSE(out[0].is_new);
  EXPECT_EQ(out[0].first_seen, T(10));
  EXPECT_TRUE(out[1].is_new);
  EXPECT_FALSE(out[2].is_new) << "a repeat is new at its first position only";
  EXPECT_EQ(out[2].first_seen, T(20));
  std::vector<std::optional<absl::Time>> found;
  ASSERT_TRUE(store.LookupUrls({"http://b/"}, &found).ok());
  EXPECT_FALSE(found[0].has_value()) << "a peek records nothing";
}

TEST(ClaimIdHashTest, IsFixedAndNeverZero) {
  EXPECT_EQ(ClaimIdHash(""), 0u);
  EXPECT_NE(ClaimIdHash("a"), 0u);
  EXPECT_NE(ClaimIdHash("a"), ClaimIdHash("b"));
  // Persisted in URL records: pinned (XXH64 with seed 0x6465647570644349).
  EXPECT_EQ(ClaimIdHash("retry-1"), 0x91a86be53941dd9bu);
}

TEST(CheckNamespaceTest, Table) {
  EXPECT_TRUE(CheckNamespace("").ok());
  EXPECT_TRUE(CheckNamespace("crawl-2026.12_a").ok());
  EXPECT_TRUE(CheckNamespace(std::string(kMaxNamespaceBytes, 'n')).ok());
  EXPECT_THAT(std::string(CheckNamespace(std::string(kMaxNamespaceBytes + 1, 'n')).message()),
              testing::HasSubstr("is 65 bytes; the limit is 64"));
  EXPECT_THAT(std::string(CheckNamespace("a b").message()),
              testing::HasSubstr("byte 1 (0x20) is not"));
  EXPECT_FALSE(CheckNamespace(std::string("a\0b", 3)).ok());
  EXPECT_FALSE(CheckNamespace("tenant/x").ok());
}

}  // namespace
}  // namespace dedupd
