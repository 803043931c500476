#include "server/engine.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/memory_url_store.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// A store that fails every call with a chosen status: nothing is recorded.
class FailingUrlStore : public UrlStore {
 public:
  explicit FailingUrlStore(absl::Status status) : status_(std::move(status)) {}
  absl::Status ClaimUrls(absl::Span<const std::string>, absl::Time,
                         std::vector<UrlClaim>*) override {
    return status_;
  }
  absl::Status LookupUrls(absl::Span<const std::string>,
                          std::vector<std::optional<absl::Time>>*) override {
    return status_;
  }

 private:
  absl::Status status_;
};

class EngineTest : public ::testing::Test {
 protected:
  EngineTest() : engine_(&normalizer_, &store_, Options()) {}

  EngineOptions Options() {
    EngineOptions o;
    o.max_batch_items = 5;
    o.clock = [this] { return now_; };
    return o;
  }

  static v1::CheckUrlRequest Request(
      std::vector<std::pair<std::string, std::string>> items,
      v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    v1::CheckUrlRequest r;
    r.set_mode(mode);
    for (auto& [url, base] : items) {
      v1::UrlItem* item = r.add_items();
      item->set_url(url);
      item->set_base_url(base);
    }
    return r;
  }

  absl::Time now_ = absl::FromUnixMicros(1764496800123456);  // 2025-11-30
  UrlNormalizer normalizer_;
  MemoryUrlStore store_;
  Engine engine_;
};

TEST_F(EngineTest, EmptyRequestIsInvalidArgument) {
  v1::CheckUrlResponse response;
  EXPECT_THAT(engine_.CheckUrl(Request({}), &response),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no items")));
}

TEST_F(EngineTest, OversizedBatchNamesTheLimit) {
  v1::CheckUrlResponse response;
  std::vector<std::pair<std::string, std::string>> items(6, {"http://a.example/", ""});
  EXPECT_THAT(engine_.CheckUrl(Request(items), &response),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("6 items; the limit is 5")));
}

TEST_F(EngineTest, OneResultPerItemInOrderWithVerdicts) {
  v1::CheckUrlResponse response;
  ASSERT_THAT(engine_.CheckUrl(Request({{"HTTP://A.example:80/x?utm_source=t", ""},
                                        {"mailto:someone@example.com", ""},
                                        {"../y", "http://a.example/dir/page"},
                                        {"http://a.example/x#frag", ""}}),
                               &response),
              IsOk());
  ASSERT_EQ(response.results_size(), 4);
  EXPECT_EQ(response.results(0).verdict(), v1::URL_VERDICT_NEW);
  EXPECT_EQ(response.results(0).normalized_url(), "http://a.example/x");
  EXPECT_EQ(response.results(1).verdict(), v1::URL_VERDICT_INVALID);
  EXPECT_THAT(response.results(1).error(), HasSubstr("mailto"));
  EXPECT_THAT(response.results(1).normalized_url(), IsEmpty());
  EXPECT_EQ(response.results(2).verdict(), v1::URL_VERDICT_NEW);
  EXPECT_EQ(response.results(2).normalized_url(), "http://a.example/y");
  // The same normalized URL later in the same batch is already claimed.
  EXPECT_EQ(response.results(3).verdict(), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(response.results(3).first_seen_time().seconds(), 1764496800);
  EXPECT_EQ(response.results(3).first_seen_time().nanos(), 123456000);
}

TEST_F(EngineTest, ClaimRecordsAndAnswersSeenWithFirstSeenTime) {
  v1::CheckUrlResponse first, second;
  ASSERT_THAT(engine_.CheckUrl(Request({{"http://a.example/p", ""}}), &first), IsOk());
  now_ += absl::Hours(5);
  ASSERT_THAT(engine_.CheckUrl(Request({{"http://A.EXAMPLE/p#x", ""}}), &second), IsOk());
  EXPECT_EQ(first.results(0).verdict(), v1::URL_VERDICT_NEW);
  EXPECT_EQ(second.results(0).verdict(), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(second.results(0).first_seen_time().seconds(), 1764496800);
}

TEST_F(EngineTest, PeekRecordsNothing) {
  v1::CheckUrlResponse peek1, claim, peek2;
  ASSERT_THAT(engine_.CheckUrl(Request({{"http://a.example/q", ""}}, v1::CLAIM_MODE_PEEK), &peek1), IsOk());
  EXPECT_EQ(peek1.results(0).verdict(), v1::URL_VERDICT_NEW);
  // Had the peek recorded, this claim would be SEEN.
  ASSERT_THAT(engine_.CheckUrl(Request({{"http://a.example/q", ""}}), &claim), IsOk());
  EXPECT_EQ(claim.results(0).verdict(), v1::URL_VERDICT_NEW);
  ASSERT_THAT(engine_.CheckUrl(Request({{"http://a.example/q", ""}}, v1::CLAIM_MODE_PEEK), &peek2), IsOk());
  EXPECT_EQ(peek2.results(0).verdict(), v1::URL_VERDICT_SEEN);
  EXPECT_TRUE(peek2.results(0).has_first_seen_time());
}

TEST_F(EngineTest, UnspecifiedModeClaims) {
  v1::CheckUrlResponse r1, r2;
  ASSERT_THAT(engine_.CheckUrl(Request({{"http://a.example/u", ""}}, v1::CLAIM_MODE_UNSPECIFIED), &r1), IsOk());
  ASSERT_THAT(engine_.CheckUrl(Request({{"http://a.example/u", ""}}, v1::CLAIM_MODE_UNSPECIFIED), &r2), IsOk());
  EXPECT_EQ(r1.results(0).verdict(), v1::URL_VERDICT_NEW);
  EXPECT_EQ(r2.results(0).verdict(), v1::URL_VERDICT_SEEN);
}

TEST_F(EngineTest, EveryBadItemGetsItsOwnErrorAndTheRestSucceed) {
  const std::string bad[] = {
      "",                                  // empty
      std::string(1 << 20, 'a'),           // 1 MB
      "http://a.example/\xff\xfe",          // invalid UTF-8
      std::string("http://a.example/\0x", 19),  // NUL byte
      "javascript:alert(1)",
      "mailto:x@example.com",
      "file:///etc/passwd",
      "\x01\x02garbage\x7f",
      "relative/without/base",
  };
  int i = 0;
  for (const std::string& b : bad) {
    const std::string good = "http://good.example/" + std::to_string(i++);
    v1::CheckUrlResponse response;
    ASSERT_THAT(engine_.CheckUrl(Request({{good, ""}, {b, ""}}), &response), IsOk());
    ASSERT_EQ(response.results_size(), 2);
    EXPECT_EQ(response.results(0).verdict(), v1::URL_VERDICT_NEW) << i;
    EXPECT_EQ(response.results(1).verdict(), v1::URL_VERDICT_INVALID) << i;
    EXPECT_THAT(response.results(1).error(), Not(IsEmpty())) << i;
  }
}

TEST(EngineStoreFailureTest, StoreErrorsKeepTheirCodeAndGainContext) {
  UrlNormalizer normalizer;
  for (absl::Status cause : {absl::UnavailableError("disk busy"),
                             absl::ResourceExhaustedError("no space"),
                             absl::DataLossError("bad block")}) {
    FailingUrlStore store(cause);
    Engine engine(&normalizer, &store, EngineOptions{});
    v1::CheckUrlRequest claim;
    claim.add_items()->set_url("http://a.example/");
    v1::CheckUrlResponse response;
    EXPECT_THAT(engine.CheckUrl(claim, &response),
                StatusIs(cause.code(), HasSubstr("claim URLs: " + std::string(cause.message()))));
    claim.set_mode(v1::CLAIM_MODE_PEEK);
    EXPECT_THAT(engine.CheckUrl(claim, &response),
                StatusIs(cause.code(), HasSubstr("look up URLs")));
  }
}

TEST(EngineStoreFailureTest, AllInvalidBatchDoesNotTouchTheStore) {
  UrlNormalizer normalizer;
  FailingUrlStore store(absl::InternalError("must not be called"));
  Engine engine(&normalizer, &store, EngineOptions{});
  v1::CheckUrlRequest r;
  r.add_items()->set_url("mailto:x@example.com");
  v1::CheckUrlResponse response;
  EXPECT_THAT(engine.CheckUrl(r, &response), IsOk());
  EXPECT_EQ(response.results(0).verdict(), v1::URL_VERDICT_INVALID);
}

}  // namespace
}  // namespace dedupd
