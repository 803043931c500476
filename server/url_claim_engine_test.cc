// Engine::CheckUrl's claim ids, leases, namespaces and revisits, and
// Engine::CompleteUrls, over the in-memory store (the store conformance
// suite holds every backend to the same decisions).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/engine.h"
#include "storage/memory/memory_content_store.h"
#include "storage/memory/memory_url_store.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;

class UrlClaimEngineTest : public ::testing::Test {
 protected:
  UrlClaimEngineTest()
      : content_store_(&store_),
        engine_(&normalizer_, &store_, &hasher_, &content_store_, Options()) {}

  EngineOptions Options() {
    EngineOptions o;
    o.clock = [this] { return now_; };
    o.claim_id_retention = absl::Hours(1);
    absl::StatusOr<RevisitPolicy> revisit =
        RevisitPolicy::Create({{{"news"}, {"*.daily.example"}, absl::Hours(2)}});
    EXPECT_TRUE(revisit.ok());
    o.revisit_policy = *revisit;
    return o;
  }

  static v1::CheckUrlRequest Request(std::vector<std::string> urls, const std::string& ns,
                                     const std::string& claim_id, int lease_seconds = -1) {
    v1::CheckUrlRequest r;
    for (const std::string& url : urls) r.add_items()->set_url(url);
    r.set_namespace_(ns);
    r.set_claim_id(claim_id);
    if (lease_seconds >= 0) r.set_lease_seconds(static_cast<uint32_t>(lease_seconds));
    return r;
  }

  v1::CheckUrlResponse Check(const v1::CheckUrlRequest& r) {
    v1::CheckUrlResponse response;
    EXPECT_THAT(engine_.CheckUrl(r, &response), IsOk());
    return response;
  }

  v1::CompleteUrlsResponse Complete(std::vector<std::string> urls, const std::string& ns,
                                    const std::string& claim_id) {
    v1::CompleteUrlsRequest r;
    for (const std::string& url : urls) r.add_items()->set_url(url);
    r.set_namespace_(ns);
    r.set_claim_id(claim_id);
    v1::CompleteUrlsResponse response;
    EXPECT_THAT(engine_.CompleteUrls(r, &response), IsOk());
    return response;
  }

  static int64_t Seconds(const google::protobuf::Timestamp& t) { return t.seconds(); }

  absl::Time now_ = absl::FromUnixSeconds(1'700'000'000);
  UrlNormalizer normalizer_;
  SimHasher hasher_;
  MemoryUrlStore store_;
  MemoryContentStore content_store_;
  Engine engine_;
};

TEST_F(UrlClaimEngineTest, BadRequestFieldsFailTheRequestNamingTheLimit) {
  struct Case {
    const char* name;
    v1::CheckUrlRequest request;
    const char* want;
  } cases[] = {
      {"overlong namespace", Request({"http://a/"}, std::string(65, 'n'), ""),
       "namespace: is 65 bytes; the limit is 64"},
      {"bad namespace byte", Request({"http://a/"}, "a/b", ""), "namespace: byte 1 (0x2f)"},
      {"overlong claim id", Request({"http://a/"}, "", std::string(65, 'c')),
       "claim_id: is 65 bytes; the limit is 64"},
      {"lease of 0", Request({"http://a/"}, "", "c", 0),
       "lease_seconds: 0 is out of range; a lease is 1 to 604800 seconds"},
      {"lease of 10 years", Request({"http://a/"}, "", "c", 315360000),
       "lease_seconds: 315360000 is out of range"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    v1::CheckUrlResponse response;
    EXPECT_THAT(engine_.CheckUrl(c.request, &response),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.want)));
  }
  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store_.LookupUrls({"http://a/"}, &found), IsOk());
  EXPECT_FALSE(found[0].has_value()) << "a failed request records nothing";
}

TEST_F(UrlClaimEngineTest, ARetryOfALostReplyIsNewWithTheSameTimes) {
  v1::CheckUrlResponse first = Check(Request({"http://a.example/x", "mailto:x@y"}, "", "req-1"));
  ASSERT_EQ(first.results(0).verdict(), v1::URL_VERDICT_NEW);
  EXPECT_EQ(first.results(1).error_reason(), v1::ERROR_REASON_BAD_URL);
  now_ += absl::Seconds(30);
  v1::CheckUrlResponse retry = Check(Request({"http://a.example/x"}, "", "req-1"));
  EXPECT_EQ(retry.results(0).verdict(), v1::URL_VERDICT_NEW);
  EXPECT_EQ(Seconds(retry.results(0).first_seen_time()), 1'700'000'000);
  v1::CheckUrlResponse other = Check(Request({"http://a.example/x"}, "", "req-2"));
  EXPECT_EQ(other.results(0).verdict(), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(Seconds(other.results(0).last_claim_time()), 1'700'000'000);
  now_ += absl::Hours(1);  // past --claim_id_retention
  EXPECT_EQ(Check(Request({"http://a.example/x"}, "", "req-1")).results(0).verdict(),
            v1::URL_VERDICT_SEEN);
}

TEST_F(UrlClaimEngineTest, LeasesAreReclaimedAndConfirmedExactlyOnce) {
  v1::CheckUrlResponse a =
      Check(Request({"http://a.example/1", "http://a.example/2"}, "c", "w1", 60));
  EXPECT_EQ(a.results(0).verdict(), v1::URL_VERDICT_NEW);
  EXPECT_EQ(Seconds(a.results(0).lease_expire_time()), 1'700'000'060);
  // w1 confirms one URL and crashes.
  v1::CompleteUrlsResponse done = Complete({"http://a.example/2", "mailto:q@r"}, "c", "w1");
  EXPECT_EQ(done.results(0).verdict(), v1::COMPLETE_VERDICT_CONFIRMED);
  EXPECT_EQ(done.results(1).verdict(), v1::COMPLETE_VERDICT_INVALID);
  EXPECT_EQ(done.results(1).error_reason(), v1::ERROR_REASON_BAD_URL);
  now_ += absl::Seconds(59);
  v1::CheckUrlResponse held = Check(Request({"http://a.example/1"}, "c", "w2", 60));
  EXPECT_EQ(held.results(0).verdict(), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(Seconds(held.results(0).lease_expire_time()), 1'700'000'060);
  now_ += absl::Seconds(1);
  v1::CheckUrlResponse re =
      Check(Request({"http://a.example/1", "http://a.example/2"}, "c", "w2", 60));
  EXPECT_EQ(re.results(0).verdict(), v1::URL_VERDICT_NEW);
  EXPECT_TRUE(re.results(0).reclaimed());
  EXPECT_EQ(re.results(1).verdict(), v1::URL_VERDICT_SEEN);
  EXPECT_FALSE(re.results(1).has_lease_expire_time());
  v1::CompleteUrlsResponse late = Complete({"http://a.example/1"}, "c", "w1");
  EXPECT_EQ(late.results(0).verdict(), v1::COMPLETE_VERDICT_INVALID);
  EXPECT_EQ(late.results(0).error_reason(), v1::ERROR_REASON_LEASE_LOST);
  EXPECT_EQ(Complete({"http://a.example/1"}, "c", "w2").results(0).verdict(),
            v1::COMPLETE_VERDICT_CONFIRMED);
  v1::CompleteUrlsResponse never = Complete({"http://never.example/"}, "c", "");
  EXPECT_EQ(never.results(0).error_reason(), v1::ERROR_REASON_NOT_CLAIMED);
  EXPECT_THAT(never.results(0).error(), HasSubstr("not claimed in namespace \"c\""));
}

TEST_F(UrlClaimEngineTest, CheckContentConfirmsTheLeaseOfItsUrl) {
  Check(Request({"https://page.example/a"}, "", "w1", 60));
  v1::CheckContentRequest content;
  v1::ContentItem* item = content.add_items();
  item->set_url("https://page.example/a");
  item->set_text("the extracted text of the page, with enough words to fingerprint it");
  v1::CheckContentResponse response;
  ASSERT_THAT(engine_.CheckContent(content, &response), IsOk());
  now_ += absl::Hours(1);
  EXPECT_EQ(Check(Request({"https://page.example/a"}, "", "w2", 60)).results(0).verdict(),
            v1::URL_VERDICT_SEEN)
      << "the fetch was confirmed: no re-offer after the lease";
}

TEST_F(UrlClaimEngineTest, SeenAndDueAnswersCarryTheLastFetchAndItsValidators) {
  const std::string url = "https://www.daily.example/today";
  Check(Request({url}, "", "c1"));
  v1::CheckContentRequest content;
  v1::ContentItem* item = content.add_items();
  item->set_url(url);
  item->set_text("today's front page, with more than enough words for a fingerprint");
  item->set_etag("\"abc123\"");
  item->set_last_modified("Fri, 04 Dec 2026 03:00:00 GMT");
  v1::ContentItem* bad = content.add_items();
  bad->set_url("https://www.daily.example/bad");
  bad->set_text("another page with its own words");
  bad->set_etag("line\nbreak");
  v1::ContentItem* long_validator = content.add_items();
  long_validator->set_url("https://www.daily.example/long");
  long_validator->set_text("a third page with its own words");
  long_validator->set_last_modified(std::string(1025, 'x'));
  v1::CheckContentResponse checked;
  ASSERT_THAT(engine_.CheckContent(content, &checked), IsOk());
  EXPECT_EQ(checked.results(1).error_reason(), v1::ERROR_REASON_BAD_VALIDATOR);
  EXPECT_THAT(checked.results(1).error(), HasSubstr("etag: byte 4 (0x0a) is not printable ASCII"));
  EXPECT_EQ(checked.results(2).error_reason(), v1::ERROR_REASON_BAD_VALIDATOR);
  EXPECT_THAT(checked.results(2).error(),
              HasSubstr("last_modified: is 1025 bytes; the limit is 1024"));

  now_ += absl::Minutes(5);
  v1::CheckUrlResponse seen =
      Check(Request({url, "https://www.daily.example/never-fetched"}, "", "c2"));
  ASSERT_EQ(seen.results(0).verdict(), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(seen.results(0).etag(), "\"abc123\"");
  EXPECT_EQ(seen.results(0).last_modified(), "Fri, 04 Dec 2026 03:00:00 GMT");
  EXPECT_EQ(seen.results(0).content_hash(), checked.results(0).content_hash());
  EXPECT_EQ(Seconds(seen.results(0).last_changed_time()), 1'700'000'000);
  EXPECT_EQ(seen.results(1).verdict(), v1::URL_VERDICT_NEW);
  EXPECT_FALSE(seen.results(1).has_last_changed_time());
  // Due in namespace "news" only. Its answers carry the fetches of
  // namespace "news", never the empty namespace's: none before a
  // CheckContent of "news", then that one's validators.
  Check(Request({url}, "news", ""));
  now_ += absl::Hours(2);
  v1::CheckUrlResponse due = Check(Request({url}, "news", ""));
  EXPECT_EQ(due.results(0).verdict(), v1::URL_VERDICT_DUE);
  EXPECT_TRUE(due.results(0).etag().empty());
  EXPECT_FALSE(due.results(0).has_last_changed_time());
  v1::CheckContentRequest news;
  news.set_namespace_("news");
  *news.add_items() = content.items(0);
  news.mutable_items(0)->set_etag("\"news-etag\"");
  ASSERT_THAT(engine_.CheckContent(news, &checked), IsOk());
  ASSERT_EQ(checked.results(0).verdict(), v1::CONTENT_VERDICT_NEW) << "another namespace's text";
  now_ += absl::Hours(2);
  due = Check(Request({url}, "news", ""));
  EXPECT_EQ(due.results(0).verdict(), v1::URL_VERDICT_DUE);
  EXPECT_EQ(due.results(0).etag(), "\"news-etag\"");
  EXPECT_EQ(due.results(0).content_hash(), checked.results(0).content_hash());
  EXPECT_EQ(Check(Request({url}, "", "")).results(0).etag(), "\"abc123\"")
      << "the empty namespace keeps its own fetch";
}

TEST_F(UrlClaimEngineTest, RevisitRulesMakeOldClaimsDue) {
  const std::string url = "https://www.daily.example/front";
  Check(Request({url, "https://other.example/"}, "news", ""));
  now_ += absl::Hours(2);
  v1::CheckUrlResponse peek = Check([&] {
    v1::CheckUrlRequest r = Request({url}, "news", "");
    r.set_mode(v1::CLAIM_MODE_PEEK);
    return r;
  }());
  EXPECT_EQ(peek.results(0).verdict(), v1::URL_VERDICT_DUE);
  v1::CheckUrlResponse due = Check(Request({url, "https://other.example/"}, "news", "r", 30));
  EXPECT_EQ(due.results(0).verdict(), v1::URL_VERDICT_DUE);
  EXPECT_EQ(Seconds(due.results(0).first_seen_time()), 1'700'000'000);
  EXPECT_EQ(Seconds(due.results(0).last_claim_time()), 1'700'000'000);
  EXPECT_EQ(Seconds(due.results(0).lease_expire_time()), 1'700'007'230);
  EXPECT_EQ(due.results(1).verdict(), v1::URL_VERDICT_SEEN) << "no rule for other.example";
  // The rule is for namespace news only.
  Check(Request({url}, "", ""));
  now_ += absl::Hours(3);
  EXPECT_EQ(Check(Request({url}, "", "")).results(0).verdict(), v1::URL_VERDICT_SEEN);
}

TEST_F(UrlClaimEngineTest, CompleteUrlsBadRequests) {
  v1::CompleteUrlsRequest r;
  v1::CompleteUrlsResponse response;
  EXPECT_THAT(engine_.CompleteUrls(r, &response),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no items")));
  r.add_items()->set_url("http://a/");
  r.set_namespace_("bad ns");
  EXPECT_THAT(engine_.CompleteUrls(r, &response),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("namespace: byte 3")));
}

}  // namespace
}  // namespace dedupd
