#include "storage/testing/content_store_conformance.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "gmock/gmock.h"
#include "storage/document_key.h"
#include "storage/testing/near_texts.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {

void ContentStoreConformanceTest::SetUp() {
  ASSERT_OK_AND_ASSIGN(harness_, GetParam().make());
  ASSERT_NE(harness_, nullptr);
}

void ContentStoreConformanceTest::TearDown() { harness_.reset(); }

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

// A document whose text is identified by `text_id` (its digest is the
// SHA-256 of that string) with SimHash `simhash`.
ContentDoc Doc(const std::string& identity, const std::string& fetched, const std::string& text_id,
               uint64_t simhash) {
  ContentDoc d;
  d.identity_url = identity;
  d.fetched_url = fetched;
  d.sha256 = Sha256(text_id);
  d.simhash = simhash;
  return d;
}

ContentDoc Doc(const std::string& url, const std::string& text_id, uint64_t simhash) {
  return Doc(url, url, text_id, simhash);
}

constexpr uint64_t kFp = 0x0123456789abcdefULL;

// `d` sent by a request with the claim id whose hash is `claim_id_hash`.
ContentDoc WithClaim(ContentDoc d, uint64_t claim_id_hash) {
  d.claim_id_hash = claim_id_hash;
  return d;
}

class Checker {
 public:
  explicit Checker(ContentStore* store) : store_(store) {}
  std::vector<ContentOutcome> Claim(std::vector<ContentDoc> docs, absl::Time now) {
    return Run(docs, true, now);
  }
  std::vector<ContentOutcome> Peek(std::vector<ContentDoc> docs) { return Run(docs, false, T(0)); }
  std::vector<ContentOutcome> Peek(std::vector<ContentDoc> docs, absl::Time now) {
    return Run(docs, false, now);
  }
  ContentLimits limits;

 private:
  std::vector<ContentOutcome> Run(const std::vector<ContentDoc>& docs, bool claim, absl::Time now) {
    std::vector<ContentOutcome> out;
    absl::Status s = store_->CheckContent(docs, claim, limits, now, &out);
    EXPECT_THAT(s, IsOk());
    EXPECT_THAT(out, SizeIs(docs.size()));
    out.resize(docs.size());
    return out;
  }
  ContentStore* store_;
};

TEST_P(ContentStoreConformanceTest, NewThenExactDuplicateWithAliases) {
  Checker c(&content());
  std::vector<ContentOutcome> out = c.Claim({Doc("https://a/", "text", kFp)}, T(100));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(out[0].owner_url, "https://a/");
  EXPECT_EQ(out[0].first_seen, T(100));
  EXPECT_THAT(out[0].aliases, IsEmpty());
  EXPECT_EQ(out[0].alias_count, 0u);
  EXPECT_EQ(out[0].recrawl, RecrawlStatus::kFirstSeen);

  out = c.Claim({Doc("https://b/", "text", kFp)}, T(200));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[0].owner_url, "https://a/");
  EXPECT_EQ(out[0].first_seen, T(100));
  EXPECT_THAT(out[0].aliases, ElementsAre("https://b/"));
  EXPECT_EQ(out[0].alias_count, 1u);
  EXPECT_EQ(out[0].recrawl, RecrawlStatus::kFirstSeen);

  // The same alias again is not counted twice; the owner is never an alias.
  out = c.Claim({Doc("https://b/", "text", kFp), Doc("https://a/", "text", kFp)}, T(300));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[0].alias_count, 1u);
  EXPECT_EQ(out[0].recrawl, RecrawlStatus::kUnchanged);
  EXPECT_EQ(out[1].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[1].owner_url, "https://a/");
  EXPECT_THAT(out[1].aliases, ElementsAre("https://b/"));
}

TEST_P(ContentStoreConformanceTest, CanonicalIsTheIdentityAndBothUrlsAreSeen) {
  Checker c(&content());
  std::vector<ContentOutcome> out =
      c.Claim({Doc("https://c/canon", "https://c/canon?print=1", "t", kFp)}, T(100));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(out[0].owner_url, "https://c/canon");
  EXPECT_THAT(out[0].aliases, ElementsAre("https://c/canon?print=1"));
  EXPECT_EQ(out[0].alias_count, 1u);

  std::vector<std::optional<absl::Time>> seen;
  ASSERT_THAT(
      urls().LookupUrls({"https://c/canon", "https://c/canon?print=1", "https://c/other"}, &seen),
      IsOk());
  EXPECT_EQ(seen[0], T(100));
  EXPECT_EQ(seen[1], T(100));
  EXPECT_EQ(seen[2], std::nullopt);

  // A URL already seen through CheckUrl keeps its first-seen time.
  std::vector<UrlClaim> claims;
  ASSERT_THAT(urls().ClaimUrls({"https://d/"}, T(50), &claims), IsOk());
  c.Claim({Doc("https://d/", "other text", kFp ^ 0xFFFF)}, T(400));
  ASSERT_THAT(urls().LookupUrls({"https://d/"}, &seen), IsOk());
  EXPECT_EQ(seen[0], T(50));
}

TEST_P(ContentStoreConformanceTest, RecrawlStatusFollowsTheFetchedUrl) {
  Checker c(&content());
  struct Step {
    std::string text;
    RecrawlStatus want;
  };
  const std::vector<Step> steps = {
      {"v1", RecrawlStatus::kFirstSeen}, {"v1", RecrawlStatus::kUnchanged},
      {"v2", RecrawlStatus::kChanged},   {"v2", RecrawlStatus::kUnchanged},
      {"v1", RecrawlStatus::kChanged},
  };
  int64_t t = 100;
  for (const Step& step : steps) {
    // Far-apart fingerprints, so versions are not near each other.
    const uint64_t fp = step.text == "v1" ? 0 : ~uint64_t{0};
    std::vector<ContentOutcome> out = c.Claim({Doc("https://u/", step.text, fp)}, T(t++));
    EXPECT_EQ(out[0].recrawl, step.want) << step.text << " at " << t;
  }
  // Peek reports the status without recording the fetch.
  EXPECT_EQ(c.Peek({Doc("https://u/", "v2", ~uint64_t{0})})[0].recrawl, RecrawlStatus::kChanged);
  EXPECT_EQ(c.Peek({Doc("https://u/", "v1", 0)})[0].recrawl, RecrawlStatus::kUnchanged);
}

TEST_P(ContentStoreConformanceTest, FetchRecordsKeepTheLastChangeAndTheValidators) {
  Checker c(&content());
  std::vector<std::optional<FetchRecord>> fetches;
  ASSERT_THAT(content().LookupFetches("", {"https://u/"}, &fetches), IsOk());
  EXPECT_FALSE(fetches[0].has_value());
  struct Step {
    std::string text, etag, last_modified;
    int64_t want_since;  // the first fetch of the current text
  };
  const std::vector<Step> steps = {
      {"v1", "\"a\"", "Mon, 01 Jan 2024 00:00:00 GMT", 100},
      {"v1", "\"a\"", "Mon, 01 Jan 2024 00:00:00 GMT", 100},  // unchanged
      {"v1", "\"b\"", "", 100},                               // new validators, same text
      {"v2", "", "", 103},                                    // the text changed
  };
  int64_t t = 100;
  for (const Step& step : steps) {
    ContentDoc d = Doc("https://u/", step.text, step.text == "v1" ? 0 : ~uint64_t{0});
    d.etag = step.etag;
    d.last_modified = step.last_modified;
    c.Claim({d}, T(t++));
    ASSERT_THAT(content().LookupFetches("", {"https://u/", "https://other/"}, &fetches), IsOk());
    ASSERT_TRUE(fetches[0].has_value()) << step.text;
    EXPECT_FALSE(fetches[1].has_value());
    EXPECT_EQ(fetches[0]->etag, step.etag);
    EXPECT_EQ(fetches[0]->last_modified, step.last_modified);
    EXPECT_EQ(fetches[0]->hash_since, T(step.want_since)) << step.text << " at " << t;
    EXPECT_EQ(fetches[0]->first_fetch, T(100));
    EXPECT_EQ(fetches[0]->sha256, d.sha256);
  }
  // A peek records no validators.
  ContentDoc peek = Doc("https://u/", "v2", ~uint64_t{0});
  peek.etag = "\"peeked\"";
  c.Peek({peek});
  ASSERT_THAT(content().LookupFetches("", {"https://u/"}, &fetches), IsOk());
  EXPECT_EQ(fetches[0]->etag, "");
}

TEST_P(ContentStoreConformanceTest, NearDuplicatesWithinTheDistanceOnly) {
  Checker c(&content());
  c.Claim({Doc("https://orig/", "orig", kFp)}, T(100));
  struct Case {
    uint64_t flip;
    int max_distance;
    ContentVerdict want;
  };
  const std::vector<Case> cases = {
      {0b1, 3, ContentVerdict::kNearDuplicate},
      {0b111, 3, ContentVerdict::kNearDuplicate},
      {0b1111, 3, ContentVerdict::kNew},
      {0b111, 2, ContentVerdict::kNew},
      {0b111ULL << 61, 3, ContentVerdict::kNearDuplicate},
      {0, 0, ContentVerdict::kNearDuplicate},  // same SimHash, other text
  };
  for (const Case& k : cases) {
    ContentDoc d = Doc("https://probe/", absl::StrCat("probe", k.flip), kFp ^ k.flip);
    d.max_distance = k.max_distance;
    ContentOutcome o = c.Peek({d})[0];
    EXPECT_EQ(o.verdict, k.want) << "flip " << k.flip << " k " << k.max_distance;
    if (k.want == ContentVerdict::kNearDuplicate) {
      ASSERT_THAT(o.near_matches, SizeIs(1));
      EXPECT_EQ(o.near_matches[0].owner_url, "https://orig/");
      EXPECT_EQ(o.near_matches[0].simhash, kFp);
      EXPECT_EQ(o.near_matches[0].distance, __builtin_popcountll(k.flip));
      EXPECT_EQ(o.near_matches[0].sha256, Sha256("orig"));
      EXPECT_EQ(o.owner_url, "https://orig/");
      EXPECT_EQ(o.first_seen, T(100));
      EXPECT_EQ(o.near_match_count, 1u);
    } else {
      EXPECT_THAT(o.near_matches, IsEmpty());
    }
  }
}

TEST_P(ContentStoreConformanceTest, NearMatchesNearestFirstBoundedWithTotal) {
  Checker c(&content());
  // Stored at distances 3, 1, 2, 1 from the probe, in that order.
  c.Claim({Doc("https://d3/", "d3", kFp ^ 0b111), Doc("https://d1a/", "d1a", kFp ^ 0b1000),
           Doc("https://d2/", "d2", kFp ^ 0b110000), Doc("https://d1b/", "d1b", kFp ^ 0b1000000)},
          T(100));
  c.limits.max_near_matches = 3;
  ContentOutcome o = c.Peek({Doc("https://p/", "p", kFp)})[0];
  EXPECT_EQ(o.verdict, ContentVerdict::kNearDuplicate);
  EXPECT_EQ(o.near_match_count, 4u);
  ASSERT_THAT(o.near_matches, SizeIs(3));
  // Ties by age: d1a was recorded before d1b.
  EXPECT_EQ(o.near_matches[0].owner_url, "https://d1a/");
  EXPECT_EQ(o.near_matches[1].owner_url, "https://d1b/");
  EXPECT_EQ(o.near_matches[2].owner_url, "https://d2/");
  EXPECT_EQ(o.owner_url, "https://d1a/");
}

TEST_P(ContentStoreConformanceTest, NearOwnerIsNamedEvenWhenNoMatchIsListed) {
  Checker c(&content());
  c.Claim({Doc("https://orig/", "orig", kFp)}, T(100));
  c.limits.max_near_matches = 0;
  ContentOutcome o = c.Peek({Doc("https://p/", "p", kFp ^ 1)})[0];
  EXPECT_EQ(o.verdict, ContentVerdict::kNearDuplicate);
  EXPECT_THAT(o.near_matches, IsEmpty());
  EXPECT_EQ(o.near_match_count, 1u);
  EXPECT_EQ(o.owner_url, "https://orig/");
  EXPECT_EQ(o.first_seen, T(100));
}

TEST_P(ContentStoreConformanceTest, ANearDuplicateIsRecordedToo) {
  Checker c(&content());
  c.Claim({Doc("https://a/", "a", kFp)}, T(100));
  EXPECT_EQ(c.Claim({Doc("https://b/", "b", kFp ^ 1)}, T(200))[0].verdict,
            ContentVerdict::kNearDuplicate);
  ContentOutcome o = c.Claim({Doc("https://c/", "b", kFp ^ 1)}, T(300))[0];
  EXPECT_EQ(o.verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(o.owner_url, "https://b/");
  EXPECT_EQ(o.first_seen, T(200));
}

TEST_P(ContentStoreConformanceTest, DuplicatesInsideOneClaimBatch) {
  Checker c(&content());
  std::vector<ContentOutcome> out =
      c.Claim({Doc("https://a/", "x", kFp), Doc("https://b/", "x", kFp),
               Doc("https://c/", "y", kFp ^ 0b11), Doc("https://a/", "x", kFp)},
              T(100));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(out[1].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[1].owner_url, "https://a/");
  EXPECT_THAT(out[1].aliases, ElementsAre("https://b/"));
  EXPECT_EQ(out[2].verdict, ContentVerdict::kNearDuplicate);
  ASSERT_THAT(out[2].near_matches, SizeIs(1));
  EXPECT_EQ(out[2].near_matches[0].owner_url, "https://a/");
  EXPECT_EQ(out[2].near_matches[0].distance, 2);
  EXPECT_EQ(out[3].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[3].recrawl, RecrawlStatus::kUnchanged);
  EXPECT_EQ(out[3].alias_count, 1u);
}

TEST_P(ContentStoreConformanceTest, PeekRecordsNothing) {
  Checker c(&content());
  std::vector<ContentOutcome> out =
      c.Peek({Doc("https://a/", "x", kFp), Doc("https://b/", "x", kFp)});
  // Like CheckUrl's peek: each answered against the store alone.
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(out[1].verdict, ContentVerdict::kNew);
  EXPECT_EQ(c.Peek({Doc("https://a/", "x", kFp)})[0].verdict, ContentVerdict::kNew);
  std::vector<std::optional<absl::Time>> seen;
  ASSERT_THAT(urls().LookupUrls({"https://a/"}, &seen), IsOk());
  EXPECT_EQ(seen[0], std::nullopt);
  EXPECT_EQ(c.Claim({Doc("https://a/", "x", kFp)}, T(1))[0].verdict, ContentVerdict::kNew);
}

TEST_P(ContentStoreConformanceTest, AliasListIsBoundedInByteOrderWithTotal) {
  Checker c(&content());
  c.Claim({Doc("https://owner/", "x", kFp)}, T(1));
  std::vector<ContentDoc> docs;
  for (int i = 14; i >= 0; --i) {
    docs.push_back(Doc(absl::StrCat("https://alias/", i < 10 ? "0" : "", i), "x", kFp));
  }
  c.Claim({docs.begin(), docs.begin() + 7}, T(2));
  c.limits.max_aliases = 4;
  std::vector<ContentOutcome> out = c.Claim({docs.begin() + 7, docs.end()}, T(3));
  const ContentOutcome& last = out.back();
  EXPECT_EQ(last.alias_count, 15u);
  EXPECT_THAT(last.aliases, ElementsAre("https://alias/00", "https://alias/01", "https://alias/02",
                                        "https://alias/03"));
  c.limits.max_aliases = 0;
  ContentOutcome o = c.Peek({Doc("https://x/", "x", kFp)})[0];
  EXPECT_THAT(o.aliases, IsEmpty());
  EXPECT_EQ(o.alias_count, 15u);
}

TEST_P(ContentStoreConformanceTest, ConcurrentClaimsOfOneTextHaveOneOwner) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    const std::string text = absl::StrCat("shared text ", round);
    // Far from every other round's fingerprint (a multiplicative hash).
    const uint64_t fp = (round + 1) * 0x9E3779B97F4A7C15ULL;
    std::vector<ContentOutcome> got(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        std::vector<ContentOutcome> out;
        absl::Status s =
            content().CheckContent({Doc(absl::StrCat("https://w", t, "/r", round), text, fp)}, true,
                                   ContentLimits{}, T(round), &out);
        EXPECT_THAT(s, IsOk());
        if (out.size() == 1) got[t] = out[0];
      });
    }
    for (std::thread& th : threads) th.join();
    int news = 0;
    std::string owner;
    for (const ContentOutcome& o : got) {
      if (o.verdict == ContentVerdict::kNew) {
        ++news;
        owner = o.owner_url;
      }
    }
    ASSERT_EQ(news, 1) << "round " << round;
    for (const ContentOutcome& o : got) {
      if (o.verdict != ContentVerdict::kNew) {
        EXPECT_EQ(o.verdict, ContentVerdict::kExactDuplicate);
        EXPECT_EQ(o.owner_url, owner);
      }
    }
    // Every other URL ended up on the alias list.
    ContentOutcome o = Checker(&content()).Peek({Doc("https://probe/", text, 0)})[0];
    EXPECT_EQ(o.alias_count, kThreads - 1u) << "round " << round;
  }
}

TEST_P(ContentStoreConformanceTest, BadDocsAreInvalidArgumentAndRecordNothing) {
  std::vector<ContentOutcome> out;
  ContentDoc good = Doc("https://a/", "x", kFp);
  ContentDoc no_identity = Doc("", "https://a/", "y", kFp);
  EXPECT_THAT(content().CheckContent({good, no_identity}, true, ContentLimits{}, T(1), &out),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("doc 1")));
  ContentDoc far = good;
  far.max_distance = content().max_near_distance() + 1;
  EXPECT_THAT(content().CheckContent({far}, true, ContentLimits{}, T(1), &out),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("max_distance")));
  EXPECT_EQ(Checker(&content()).Peek({good})[0].verdict, ContentVerdict::kNew);
  EXPECT_THAT(content().CheckContent({}, true, ContentLimits{}, T(1), &out), IsOk());
  EXPECT_THAT(out, IsEmpty());
}

// ---- Forget (forget_planner.h's decisions, as every backend makes them) ----

// The texts of the Forget cases: far apart, except kNearB (one bit from B).
struct ForgetText {
  const char* id;
  uint64_t simhash;
};
constexpr ForgetText kTextA{"forget text a", 0x1111111111111111ULL};
constexpr ForgetText kTextB{"forget text b", 0x2222222222222222ULL};
constexpr ForgetText kTextC{"forget text c", 0x4444444444444444ULL};
constexpr ForgetText kNearB{"forget text near b", 0x2222222222222223ULL};

ContentDoc Doc(const std::string& identity, const std::string& fetched, const ForgetText& t) {
  return Doc(identity, fetched, t.id, t.simhash);
}
ContentDoc Doc(const std::string& url, const ForgetText& t) { return Doc(url, url, t); }

const char kO[] = "http://o.example/";
const char kZ[] = "http://z.example/";
const char kBUrl[] = "http://b.example/";
const char kP[] = "http://p.example/";
const char kQ[] = "http://q.example/";
const char kF[] = "http://q.example/?print=1";
const char kM1[] = "http://m1.example/";
const char kM2[] = "http://m2.example/";

ForgetResult ForgetOk(ContentStore& store, const std::string& url) {
  absl::StatusOr<ForgetResult> r = store.Forget(url, T(2000));
  EXPECT_THAT(r.status(), IsOk());
  return r.ok() ? *r : ForgetResult{};
}

bool UrlStored(UrlStore& urls, const std::string& url) {
  std::vector<std::optional<absl::Time>> out;
  EXPECT_THAT(urls.LookupUrls({url}, &out), IsOk());
  return !out.empty() && out[0].has_value();
}

std::vector<std::string> NewOwners(const ForgetResult& r) {
  std::vector<std::string> owners;
  for (const ForgetResult::ContentPromotion& p : r.contents_promoted) {
    owners.push_back(p.new_owner_url);
  }
  return owners;
}

TEST_P(ContentStoreConformanceTest, ForgetOfAnUnknownUrlFindsNothing) {
  const ForgetResult r = ForgetOk(content(), "http://unknown.example/");
  EXPECT_FALSE(r.found());
  EXPECT_THAT(content().Forget("", T(1)).status(), StatusIs(absl::StatusCode::kInvalidArgument));
}

// One store layout, forgotten in turn by each case (a fresh store each):
//   text A: owner O (t=10), aliases Z (t=20) and B (t=30), so the oldest
//           alias is not the first in byte order;
//   text B: owner P alone (t=40);
//   text C: owner Q (t=50) fetched from F (alias F), then aliases M2 and M1
//           added in one batch (t=60, the same time).
TEST_P(ContentStoreConformanceTest, ForgetRemovesAliasesAndPromotesTheOldestAlias) {
  struct Case {
    const char* name;
    std::string forget;
    uint64_t aliases_removed;
    uint64_t contents_removed;
    std::vector<std::string> promoted_to;  // new owners, in SHA-256 order
    bool fetch_removed;
    // After: each text's owner ("" when it is gone) and aliases.
    std::string owner_a, owner_b, owner_c;
    std::vector<std::string> aliases_a, aliases_c;
  };
  const std::vector<Case> cases = {
      {"Alias", kZ, 1, 0, {}, true, kO, kP, kQ, {kBUrl}, {kM1, kM2, kF}},
      // The oldest alias (Z, t=20) wins over the first in byte order (B).
      {"OwnerWithAliases", kO, 0, 0, {kZ}, true, kZ, kP, kQ, {kBUrl}, {kM1, kM2, kF}},
      {"OnlyOwner", kP, 0, 1, {}, true, kO, "", kQ, {kBUrl, kZ}, {kM1, kM2, kF}},
      // Q's fetched URL F is its alias (t=50): the oldest.
      {"OwnerFetchedElsewhere", kQ, 0, 0, {kF}, false, kO, kP, kF, {kBUrl, kZ}, {kM1, kM2}},
      // The fetched URL itself: an alias with a fetch record.
      {"FetchedAlias", kF, 1, 0, {}, true, kO, kP, kQ, {kBUrl, kZ}, {kM1, kM2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ContentStoreHarness> h, GetParam().make());
    Checker check(&h->content());
    check.Claim({Doc(kO, kTextA)}, T(10));
    check.Claim({Doc(kZ, kTextA)}, T(20));
    check.Claim({Doc(kBUrl, kTextA)}, T(30));
    check.Claim({Doc(kP, kTextB)}, T(40));
    check.Claim({Doc(kQ, kF, kTextC)}, T(50));
    check.Claim({Doc(kM2, kTextC), Doc(kM1, kTextC)}, T(60));

    const ForgetResult r = ForgetOk(h->content(), c.forget);
    EXPECT_TRUE(r.url_found);
    EXPECT_TRUE(r.found());
    EXPECT_EQ(r.aliases_removed, c.aliases_removed);
    EXPECT_EQ(r.contents_removed, c.contents_removed);
    EXPECT_EQ(r.fetch_removed, c.fetch_removed);
    EXPECT_EQ(NewOwners(r), c.promoted_to);
    EXPECT_FALSE(UrlStored(h->urls(), c.forget));

    // Each text as a newcomer sees it now.
    const std::vector<std::string> none;
    const struct {
      const ForgetText& text;
      const std::string& owner;
      const std::vector<std::string>& aliases;
    } expected[] = {{kTextA, c.owner_a, c.aliases_a},
                    {kTextB, c.owner_b, none},
                    {kTextC, c.owner_c, c.aliases_c}};
    for (const auto& e : expected) {
      SCOPED_TRACE(e.text.id);
      const ContentOutcome out = check.Peek({Doc("http://newcomer.example/", e.text)})[0];
      if (e.owner.empty()) {
        EXPECT_EQ(out.verdict, ContentVerdict::kNew);
      } else {
        EXPECT_EQ(out.verdict, ContentVerdict::kExactDuplicate);
        EXPECT_EQ(out.owner_url, e.owner);
        EXPECT_EQ(out.aliases, e.aliases);
        EXPECT_EQ(out.alias_count, e.aliases.size());
      }
    }
  }
}

TEST_P(ContentStoreConformanceTest, ForgetPromotesSameTimeAliasesInUrlByteOrder) {
  Checker c(&content());
  c.Claim({Doc(kQ, kTextC)}, T(50));
  c.Claim({Doc(kM2, kTextC), Doc(kM1, kTextC)}, T(60));
  const ForgetResult r = ForgetOk(content(), kQ);
  ASSERT_EQ(r.contents_promoted.size(), 1u);
  EXPECT_EQ(r.contents_promoted[0].new_owner_url, kM1);
  EXPECT_EQ(r.contents_promoted[0].sha256, Sha256(kTextC.id));
  const ContentOutcome out = c.Peek({Doc("http://x.example/", kTextC)})[0];
  EXPECT_EQ(out.owner_url, kM1);
  EXPECT_THAT(out.aliases, ElementsAre(kM2));
  EXPECT_EQ(out.alias_count, 1u);
}

TEST_P(ContentStoreConformanceTest, ForgetOfTheOnlyOwnerLeavesNoNearMatch) {
  Checker c(&content());
  c.Claim({Doc(kP, kTextB)}, T(40));
  const ContentOutcome near = c.Peek({Doc("http://x.example/", kNearB)})[0];
  ASSERT_EQ(near.verdict, ContentVerdict::kNearDuplicate);
  ASSERT_EQ(near.owner_url, kP);

  const ForgetResult r = ForgetOk(content(), kP);
  EXPECT_EQ(r.contents_removed, 1u);
  EXPECT_TRUE(r.fetch_removed);
  EXPECT_EQ(c.Peek({Doc("http://x.example/", kNearB)})[0].verdict, ContentVerdict::kNew);
  const ContentOutcome same = c.Peek({Doc(kP, kTextB)})[0];
  EXPECT_EQ(same.verdict, ContentVerdict::kNew);
  EXPECT_EQ(same.recrawl, RecrawlStatus::kFirstSeen);

  // Re-claimed: NEW again, a fresh record, and near matches find it again.
  const std::vector<ContentOutcome> again = c.Claim({Doc(kP, kTextB)}, T(70));
  EXPECT_EQ(again[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(again[0].first_seen, T(70));
  EXPECT_EQ(c.Peek({Doc("http://x.example/", kNearB)})[0].owner_url, kP);
}

TEST_P(ContentStoreConformanceTest, ForgetOfAnOwnerOfSeveralTextsRemovesOrPromotesEach) {
  Checker c(&content());
  c.Claim({Doc(kP, kTextB)}, T(40));
  c.Claim({Doc(kP, kTextC)}, T(41));  // re-crawled with another text
  c.Claim({Doc(kO, kTextC)}, T(42));  // C has an alias, B does not
  const ForgetResult r = ForgetOk(content(), kP);
  EXPECT_EQ(r.contents_removed, 1u);
  EXPECT_THAT(NewOwners(r), ElementsAre(kO));
  EXPECT_TRUE(r.fetch_removed);
  EXPECT_EQ(c.Peek({Doc("http://x.example/", kTextB)})[0].verdict, ContentVerdict::kNew);
  const ContentOutcome out = c.Peek({Doc("http://x.example/", kTextC)})[0];
  EXPECT_EQ(out.owner_url, kO);
  EXPECT_THAT(out.aliases, IsEmpty());
  EXPECT_EQ(out.alias_count, 0u);
}

TEST_P(ContentStoreConformanceTest, ForgottenOwnerComesBackAsAnAlias) {
  Checker c(&content());
  c.Claim({Doc(kO, kTextA)}, T(10));
  c.Claim({Doc(kZ, kTextA)}, T(20));
  EXPECT_THAT(NewOwners(ForgetOk(content(), kO)), ElementsAre(kZ));
  EXPECT_FALSE(UrlStored(urls(), kO));
  const std::vector<ContentOutcome> out = c.Claim({Doc(kO, kTextA)}, T(30));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[0].owner_url, kZ);
  EXPECT_THAT(out[0].aliases, ElementsAre(kO));
  EXPECT_EQ(out[0].recrawl, RecrawlStatus::kFirstSeen);
  EXPECT_TRUE(UrlStored(urls(), kO));
  // Forgetting it again finds it as an alias only.
  const ForgetResult again = ForgetOk(content(), kO);
  EXPECT_EQ(again.aliases_removed, 1u);
  EXPECT_THAT(again.contents_promoted, IsEmpty());
}

ContentDoc InSpace(ContentDoc d, const std::string& name_space) {
  d.name_space = name_space;
  return d;
}

TEST_P(ContentStoreConformanceTest, NamespacesNeverSeeEachOthersTexts) {
  Checker c(&content());
  std::vector<ContentOutcome> out =
      c.Claim({InSpace(Doc("https://a/", "text", kFp), "crawl-a")}, T(100));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  // The same text in the empty namespace and in another one: NEW there.
  out = c.Claim({Doc("https://b/", "text", kFp)}, T(110));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(out[0].owner_url, "https://b/");
  out = c.Claim({InSpace(Doc("https://c/", "text", kFp), "crawl-b")}, T(120));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(out[0].owner_url, "https://c/");
  // Within a namespace, exact and near duplicates find its own texts only.
  out = c.Claim({InSpace(Doc("https://d/", "text", kFp), "crawl-a"),
                 InSpace(Doc("https://e/", "near", kFp ^ 0x3), "crawl-a")},
                T(130));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[0].owner_url, "https://a/");
  EXPECT_EQ(out[0].first_seen, T(100));
  EXPECT_THAT(out[0].aliases, ElementsAre("https://d/"));
  EXPECT_EQ(out[1].verdict, ContentVerdict::kNearDuplicate);
  ASSERT_THAT(out[1].near_matches, SizeIs(1));
  EXPECT_EQ(out[1].near_matches[0].owner_url, "https://a/");
  // A namespace nothing was recorded in peeks NEW.
  out = c.Peek({InSpace(Doc("https://f/", "text", kFp), "crawl-z")});
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_THAT(out[0].near_matches, IsEmpty());
  // The empty namespace's owner is unchanged by the others.
  out = c.Peek({Doc("https://g/", "text", kFp)});
  EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[0].owner_url, "https://b/");
  EXPECT_THAT(out[0].aliases, IsEmpty());
}

TEST_P(ContentStoreConformanceTest, UrlsAndFetchesAreRecordedInTheTextsNamespace) {
  Checker c(&content());
  ContentDoc d = InSpace(Doc("https://a/", "text", kFp), "crawl-a");
  d.etag = "\"v1\"";
  c.Claim({d}, T(100));
  std::vector<std::optional<UrlRecord>> records;
  ASSERT_THAT(urls().LookupRecords("crawl-a", {"https://a/"}, &records), IsOk());
  ASSERT_TRUE(records[0].has_value());
  EXPECT_EQ(records[0]->first_seen, T(100));
  ASSERT_THAT(urls().LookupRecords("", {"https://a/"}, &records), IsOk());
  EXPECT_FALSE(records[0].has_value());

  std::vector<std::optional<FetchRecord>> fetches;
  ASSERT_THAT(content().LookupFetches("crawl-a", {"https://a/"}, &fetches), IsOk());
  ASSERT_TRUE(fetches[0].has_value());
  EXPECT_EQ(fetches[0]->etag, "\"v1\"");
  ASSERT_THAT(content().LookupFetches("", {"https://a/"}, &fetches), IsOk());
  EXPECT_FALSE(fetches[0].has_value());
  ASSERT_THAT(content().LookupFetches("crawl-b", {"https://a/"}, &fetches), IsOk());
  EXPECT_FALSE(fetches[0].has_value());
  // The re-crawl status follows the fetch record of the namespace.
  std::vector<ContentOutcome> out = c.Claim({Doc("https://a/", "text", kFp)}, T(110));
  EXPECT_EQ(out[0].recrawl, RecrawlStatus::kFirstSeen);
  out = c.Claim({InSpace(Doc("https://a/", "text", kFp), "crawl-a")}, T(120));
  EXPECT_EQ(out[0].recrawl, RecrawlStatus::kUnchanged);
}

TEST_P(ContentStoreConformanceTest, DocumentIdKeysOwnTextsButAreNeverSeenUrls) {
  Checker c(&content());
  const std::string id = DocumentKeyOfId("https://a/");  // an id that looks like a URL
  ContentDoc d = Doc(id, "text", kFp);
  d.etag = "\"v1\"";
  std::vector<ContentOutcome> out = c.Claim({d}, T(100));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(out[0].owner_url, id);
  // The URL it looks like is another document, and was never seen.
  std::vector<std::optional<UrlRecord>> records;
  ASSERT_THAT(urls().LookupRecords("", {"https://a/", id}, &records), IsOk());
  EXPECT_FALSE(records[0].has_value());
  EXPECT_FALSE(records[1].has_value());
  out = c.Claim({Doc("https://a/", "text", kFp)}, T(110));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[0].owner_url, id);
  EXPECT_THAT(out[0].aliases, ElementsAre("https://a/"));
  // Re-crawl status and validators are kept per document id.
  out = c.Claim({Doc(id, "text", kFp)}, T(120));
  EXPECT_EQ(out[0].recrawl, RecrawlStatus::kUnchanged);
  std::vector<std::optional<FetchRecord>> fetches;
  ASSERT_THAT(content().LookupFetches("", {id}, &fetches), IsOk());
  ASSERT_TRUE(fetches[0].has_value());
  EXPECT_EQ(fetches[0]->first_fetch, T(100));
}

TEST_P(ContentStoreConformanceTest, BadOrMixedNamespacesFailTheBatch) {
  std::vector<ContentOutcome> out;
  EXPECT_THAT(content().CheckContent({InSpace(Doc("https://a/", "t", kFp), "bad space")}, true,
                                     ContentLimits(), T(1), &out),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("namespace")));
  EXPECT_THAT(content().CheckContent({InSpace(Doc("https://a/", "t", kFp), std::string(65, 'n'))},
                                     true, ContentLimits(), T(1), &out),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the limit is 64")));
  EXPECT_THAT(content().CheckContent({InSpace(Doc("https://a/", "t", kFp), "one"),
                                      InSpace(Doc("https://b/", "u", kFp), "two")},
                                     true, ContentLimits(), T(1), &out),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("one namespace per batch")));
  // Nothing was recorded.
  std::vector<std::optional<UrlRecord>> records;
  ASSERT_THAT(urls().LookupRecords("one", {"https://a/"}, &records), IsOk());
  EXPECT_FALSE(records[0].has_value());
}

// A claim's retry (same claim id, same identity URL, within the
// retention) is answered NEW again as the claim was; every other request
// gets the text as an exact duplicate.
TEST_P(ContentStoreConformanceTest, ClaimRetryIsNewAgainWithTheClaimsTimes) {
  Checker c(&content());
  const uint64_t id = ClaimIdHash("request-1");
  const ContentDoc doc = WithClaim(Doc("https://a/canon", "https://a/page", "text", kFp), id);
  std::vector<ContentOutcome> out = c.Claim({doc}, T(100));
  ASSERT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_FALSE(out[0].retry);

  for (absl::Time t : {T(101), T(100) + absl::Hours(24)}) {
    out = c.Claim({doc}, t);
    EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
    EXPECT_TRUE(out[0].retry);
    EXPECT_EQ(out[0].owner_url, "https://a/canon");
    EXPECT_EQ(out[0].first_seen, T(100));
    EXPECT_THAT(out[0].aliases, ElementsAre("https://a/page"));
    EXPECT_EQ(out[0].alias_count, 1u);
    EXPECT_EQ(out[0].recrawl, RecrawlStatus::kFirstSeen) << "the claim's own";
  }
  out = c.Peek({doc}, T(200));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_TRUE(out[0].retry);
  EXPECT_EQ(out[0].first_seen, T(100));
  // The retries recorded nothing: the URLs keep the claim's time.
  std::vector<std::optional<absl::Time>> seen;
  ASSERT_THAT(urls().LookupUrls({"https://a/canon", "https://a/page"}, &seen), IsOk());
  EXPECT_EQ(seen[0], T(100));
  EXPECT_EQ(seen[1], T(100));

  // Another claim id, or none: the claim's text, as an exact duplicate.
  for (uint64_t other : {ClaimIdHash("request-2"), uint64_t{0}}) {
    out = c.Claim({WithClaim(doc, other)}, T(300));
    EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
    EXPECT_FALSE(out[0].retry);
    EXPECT_EQ(out[0].owner_url, "https://a/canon");
    EXPECT_EQ(out[0].first_seen, T(100));
    EXPECT_EQ(out[0].recrawl, RecrawlStatus::kUnchanged);
  }
  // The same claim id for another identity URL is not the claim's retry.
  out = c.Claim({WithClaim(Doc("https://b/", "text", kFp), id)}, T(300));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[0].owner_url, "https://a/canon");
  EXPECT_EQ(out[0].alias_count, 2u);

  // After the retention, an exact duplicate too; a request may shorten it.
  out = c.Claim({doc}, T(100) + absl::Hours(24) + absl::Seconds(1));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
  ContentDoc brief = doc;
  brief.claim_id_retention = absl::Seconds(10);
  EXPECT_EQ(c.Peek({brief}, T(110))[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(c.Peek({brief}, T(111))[0].verdict, ContentVerdict::kExactDuplicate);

  // The claim id is persisted with the text.
  ASSERT_OK_AND_ASSIGN(bool reopened, harness().Reopen());
  if (!reopened) return;
  Checker after(&content());
  out = after.Claim({doc}, T(150));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_TRUE(out[0].retry);
  EXPECT_EQ(out[0].first_seen, T(100));
  EXPECT_EQ(after.Claim({WithClaim(doc, 0)}, T(150))[0].verdict, ContentVerdict::kExactDuplicate);
}

// A retried batch gets the batch's answers: a repeat of a text after its
// first position stays an exact duplicate, and a text the claim recorded
// as a near duplicate keeps no claim id (its retry is an exact duplicate of
// its own identity URL).
TEST_P(ContentStoreConformanceTest, ClaimRetryOfABatchRepeatsItsExactDuplicates) {
  Checker c(&content());
  const uint64_t id = ClaimIdHash("batch-1");
  const std::vector<ContentDoc> batch = {WithClaim(Doc("https://a/", "x", kFp), id),
                                         WithClaim(Doc("https://a/", "x", kFp), id),
                                         WithClaim(Doc("https://n/", "y", kFp ^ 0b11), id)};
  std::vector<ContentOutcome> out = c.Claim(batch, T(100));
  ASSERT_EQ(out[0].verdict, ContentVerdict::kNew);
  ASSERT_EQ(out[1].verdict, ContentVerdict::kExactDuplicate);
  ASSERT_EQ(out[2].verdict, ContentVerdict::kNearDuplicate);

  out = c.Claim(batch, T(200));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_TRUE(out[0].retry);
  EXPECT_EQ(out[0].first_seen, T(100));
  EXPECT_EQ(out[0].recrawl, RecrawlStatus::kFirstSeen);
  EXPECT_EQ(out[1].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[1].owner_url, "https://a/");
  EXPECT_EQ(out[1].recrawl, RecrawlStatus::kUnchanged);
  EXPECT_EQ(out[2].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[2].owner_url, "https://n/") << "its own identity: the claim recorded it";
  EXPECT_EQ(out[2].first_seen, T(100));
  // A peek answers each document against the store alone: both are the
  // retry.
  out = c.Peek(batch, T(200));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(out[1].verdict, ContentVerdict::kNew);
}

TEST_P(ContentStoreConformanceTest, ClaimRetryKeepsTheClaimsChangedRecrawlStatus) {
  Checker c(&content());
  c.Claim({Doc("https://a/", "v1", kFp ^ 0xffffffff00000000ULL)}, T(100));
  const ContentDoc v2 =
      WithClaim(Doc("https://a/", "v2", kFp ^ 0x00000000ffffffffULL), ClaimIdHash("r"));
  std::vector<ContentOutcome> out = c.Claim({v2}, T(200));
  ASSERT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(out[0].recrawl, RecrawlStatus::kChanged);
  out = c.Claim({v2}, T(300));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(out[0].recrawl, RecrawlStatus::kChanged);
  // Without the claim id the same fetch is unchanged since the claim.
  EXPECT_EQ(c.Peek({WithClaim(v2, 0)})[0].recrawl, RecrawlStatus::kUnchanged);
}

TEST_P(ContentStoreConformanceTest, ForgetOfTheClaimsOwnerEndsItsRetries) {
  Checker c(&content());
  const ContentDoc doc =
      WithClaim(Doc("https://a/canon", "https://a/page", "text", kFp), ClaimIdHash("r"));
  ASSERT_EQ(c.Claim({doc}, T(100))[0].verdict, ContentVerdict::kNew);
  ASSERT_OK_AND_ASSIGN(ForgetResult forgotten, content().Forget("https://a/canon", T(150)));
  ASSERT_THAT(forgotten.contents_promoted, SizeIs(1));
  std::vector<ContentOutcome> out = c.Peek({doc}, T(200));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[0].owner_url, "https://a/page");
  EXPECT_EQ(out[0].first_seen, T(100));
}

// ---- MinHash near matching (ContentDoc::min_jaccard) ----

// The 400-word text and the same with 5% of its words (20, one run)
// replaced: Jaccard of their 3-word shingles ~0.9 (near_texts.h).
std::string Original() { return NearTextOriginal(); }
std::string Edited() { return NearTextEdited(20); }

// A doc of `text` (its SHA-256 and signature) with SimHash `simhash`:
// the tests pick SimHashes far apart (16 bits) so that only Jaccard can
// match, or close (1 bit) for both.
ContentDoc SignedDoc(const std::string& url, const std::string& text, uint64_t simhash,
                     double min_jaccard) {
  return WithSignature(Doc(url, text, simhash), text, min_jaccard);
}

constexpr uint64_t kFarFp = kFp ^ 0xffff;  // distance 16 from kFp

TEST_P(ContentStoreConformanceTest, JaccardFindsAnEditedTextHammingMisses) {
  ASSERT_GE(EstimateJaccard(MinHasher().Sign(Original()), MinHasher().Sign(Edited())), 0.8);
  std::vector<ContentOutcome> out =
      Checker(&content()).Claim({SignedDoc("https://a/", Original(), kFp, 0.8)}, T(100));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round == 0 ? "before reopen" : "after reopen");
    Checker c(&content());  // the reopened store in round 1
    // min_jaccard 0.8: near by Jaccard alone.
    out = c.Peek({SignedDoc("https://b/", Edited(), kFarFp, 0.8)});
    EXPECT_EQ(out[0].verdict, ContentVerdict::kNearDuplicate);
    EXPECT_EQ(out[0].owner_url, "https://a/");
    EXPECT_EQ(out[0].first_seen, T(100));
    EXPECT_EQ(out[0].near_match_count, 1u);
    ASSERT_THAT(out[0].near_matches, SizeIs(1));
    EXPECT_EQ(out[0].near_matches[0].measure, NearMeasure::kJaccard);
    EXPECT_GE(out[0].near_matches[0].estimated_jaccard, 0.8);
    EXPECT_EQ(out[0].near_matches[0].distance, 16);
    EXPECT_EQ(out[0].near_matches[0].sha256, Sha256(Original()));
    // Off (min_jaccard 0, the default): SimHash only, as before.
    out = c.Peek({SignedDoc("https://b/", Edited(), kFarFp, 0)});
    EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
    EXPECT_THAT(out[0].near_matches, IsEmpty());
    // Near by both measures: listed once, as kBoth.
    out = c.Peek({SignedDoc("https://b/", Edited(), kFp ^ 1, 0.8)});
    EXPECT_EQ(out[0].verdict, ContentVerdict::kNearDuplicate);
    EXPECT_EQ(out[0].near_match_count, 1u);
    ASSERT_THAT(out[0].near_matches, SizeIs(1));
    EXPECT_EQ(out[0].near_matches[0].measure, NearMeasure::kBoth);
    EXPECT_EQ(out[0].near_matches[0].distance, 1);
    EXPECT_GE(out[0].near_matches[0].estimated_jaccard, 0.8);
    // A far text is not near.
    out = c.Peek({SignedDoc("https://f/", NearTextUnrelated(), kFarFp, 0.8)});
    EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
    EXPECT_THAT(out[0].near_matches, IsEmpty());
    // A threshold above the estimate: not near.
    out = c.Peek({SignedDoc("https://b/", Edited(), kFarFp, 0.99)});
    EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
    if (round == 0) {
      ASSERT_OK_AND_ASSIGN(bool reopened, harness().Reopen());
      if (!reopened) break;
    }
  }
}

TEST_P(ContentStoreConformanceTest, JaccardMatchesRankAfterSimHashOnesAndWithinABatch) {
  Checker c(&content());
  // One claim batch: the edited text finds the original claimed before it
  // in the batch, by Jaccard.
  std::vector<ContentOutcome> out = c.Claim({SignedDoc("https://a/", Original(), kFp, 0.8),
                                             SignedDoc("https://b/", Edited(), kFarFp, 0.8)},
                                            T(100));
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_EQ(out[1].verdict, ContentVerdict::kNearDuplicate);
  ASSERT_THAT(out[1].near_matches, SizeIs(1));
  EXPECT_EQ(out[1].near_matches[0].measure, NearMeasure::kJaccard);
  EXPECT_EQ(out[1].near_matches[0].owner_url, "https://a/");
  // A third text: SimHash-near the edited one (1 bit), Jaccard-near the
  // original only through the edit. SimHash matches come first.
  out = c.Peek({SignedDoc("https://c/", Edited() + " tail", kFarFp ^ 1, 0.8)});
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNearDuplicate);
  EXPECT_EQ(out[0].near_match_count, 2u);
  ASSERT_THAT(out[0].near_matches, SizeIs(2));
  EXPECT_EQ(out[0].near_matches[0].owner_url, "https://b/");
  EXPECT_EQ(out[0].near_matches[0].measure, NearMeasure::kBoth);
  EXPECT_EQ(out[0].near_matches[1].owner_url, "https://a/");
  EXPECT_EQ(out[0].near_matches[1].measure, NearMeasure::kJaccard);
  EXPECT_EQ(out[0].owner_url, "https://b/");
}

TEST_P(ContentStoreConformanceTest, TextsWithoutSignatureAreFoundBySimHashOnly) {
  Checker c(&content());
  ContentDoc unsigned_doc = Doc("https://a/", Original(), kFp);
  c.Claim({unsigned_doc}, T(100));
  std::vector<ContentOutcome> out = c.Peek({SignedDoc("https://b/", Edited(), kFarFp, 0.8)});
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  out = c.Peek({SignedDoc("https://b/", Edited(), kFp ^ 1, 0.8)});
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNearDuplicate);
  ASSERT_THAT(out[0].near_matches, SizeIs(1));
  EXPECT_EQ(out[0].near_matches[0].measure, NearMeasure::kSimHash);
  EXPECT_EQ(out[0].near_matches[0].estimated_jaccard, 0);
}

TEST_P(ContentStoreConformanceTest, NamespacesNeverSeeEachOthersSignatures) {
  Checker c(&content());
  c.Claim({InSpace(SignedDoc("https://a/", Original(), kFp, 0.8), "crawl-a")}, T(100));
  std::vector<ContentOutcome> out =
      c.Peek({InSpace(SignedDoc("https://b/", Edited(), kFarFp, 0.8), "crawl-a")});
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNearDuplicate);
  out = c.Peek({InSpace(SignedDoc("https://b/", Edited(), kFarFp, 0.8), "crawl-b")});
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  out = c.Peek({SignedDoc("https://b/", Edited(), kFarFp, 0.8)});
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  ASSERT_OK_AND_ASSIGN(bool reopened, harness().Reopen());
  if (!reopened) return;
  Checker r(&content());
  out = r.Peek({InSpace(SignedDoc("https://b/", Edited(), kFarFp, 0.8), "crawl-a")});
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNearDuplicate);
  out = r.Peek({InSpace(SignedDoc("https://b/", Edited(), kFarFp, 0.8), "crawl-b")});
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
}

TEST_P(ContentStoreConformanceTest, ForgetRemovesTheSignature) {
  Checker c(&content());
  c.Claim({SignedDoc("https://a/", Original(), kFp, 0.8)}, T(100));
  ForgetOk(content(), "https://a/");
  std::vector<ContentOutcome> out = c.Peek({SignedDoc("https://b/", Edited(), kFarFp, 0.8)});
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
}

TEST_P(ContentStoreConformanceTest, MinJaccardOutsideZeroToOneIsInvalid) {
  for (double bad : {-0.1, 1.5}) {
    std::vector<ContentOutcome> out;
    EXPECT_THAT(content().CheckContent({SignedDoc("https://a/", Original(), kFp, bad)}, true,
                                       ContentLimits{}, T(100), &out),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("min_jaccard")));
  }
}

}  // namespace
}  // namespace dedupd::testing
