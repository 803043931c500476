#include "server/engine.h"

#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"
#include "core/results/results_dedup.h"
#include "core/text/simhash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/memory/memory_content_store.h"
#include "storage/memory/memory_url_store.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Le;
using ::testing::Not;

// A store that fails every call with a chosen status: nothing is recorded.
class FailingUrlStore : public UrlStore {
 public:
  explicit FailingUrlStore(absl::Status status) : status_(std::move(status)) {}
  absl::Status Claim(const UrlClaimOptions&, absl::Span<const std::string>, absl::Time,
                     std::vector<UrlClaim>*) override {
    return status_;
  }
  absl::Status LookupRecords(absl::string_view, absl::Span<const std::string>,
                             std::vector<std::optional<UrlRecord>>*) override {
    return status_;
  }
  absl::Status Complete(absl::string_view, uint64_t, absl::Span<const std::string>,
                        std::vector<UrlCompletion>*) override {
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

  static v1::CheckUrlRequest Request(std::vector<std::pair<std::string, std::string>> items,
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
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("6 items; the limit is 5")));
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
  EXPECT_EQ(response.results(1).error_reason(), v1::ERROR_REASON_BAD_URL);
  EXPECT_EQ(response.results(0).error_reason(), v1::ERROR_REASON_UNSPECIFIED);
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
  ASSERT_THAT(engine_.CheckUrl(Request({{"http://a.example/q", ""}}, v1::CLAIM_MODE_PEEK), &peek1),
              IsOk());
  EXPECT_EQ(peek1.results(0).verdict(), v1::URL_VERDICT_NEW);
  // Had the peek recorded, this claim would be SEEN.
  ASSERT_THAT(engine_.CheckUrl(Request({{"http://a.example/q", ""}}), &claim), IsOk());
  EXPECT_EQ(claim.results(0).verdict(), v1::URL_VERDICT_NEW);
  ASSERT_THAT(engine_.CheckUrl(Request({{"http://a.example/q", ""}}, v1::CLAIM_MODE_PEEK), &peek2),
              IsOk());
  EXPECT_EQ(peek2.results(0).verdict(), v1::URL_VERDICT_SEEN);
  EXPECT_TRUE(peek2.results(0).has_first_seen_time());
}

TEST_F(EngineTest, UnspecifiedModeClaims) {
  v1::CheckUrlResponse r1, r2;
  ASSERT_THAT(
      engine_.CheckUrl(Request({{"http://a.example/u", ""}}, v1::CLAIM_MODE_UNSPECIFIED), &r1),
      IsOk());
  ASSERT_THAT(
      engine_.CheckUrl(Request({{"http://a.example/u", ""}}, v1::CLAIM_MODE_UNSPECIFIED), &r2),
      IsOk());
  EXPECT_EQ(r1.results(0).verdict(), v1::URL_VERDICT_NEW);
  EXPECT_EQ(r2.results(0).verdict(), v1::URL_VERDICT_SEEN);
}

TEST_F(EngineTest, EveryBadItemGetsItsOwnErrorAndTheRestSucceed) {
  const std::string bad[] = {
      "",                                       // empty
      std::string(1 << 20, 'a'),                // 1 MB
      "http://a.example/\xff\xfe",              // invalid UTF-8
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
  for (absl::Status cause :
       {absl::UnavailableError("disk busy"), absl::ResourceExhaustedError("no space"),
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

// A distributed store's partial failure: keys with "down" in them are on
// a node that cannot be reached (a per-key Unavailable naming it); the
// others are answered by an in-memory store.
class PartlyDownUrlStore : public UrlStore {
 public:
  absl::Status Claim(const UrlClaimOptions& options, absl::Span<const std::string> keys,
                     absl::Time now, std::vector<UrlClaim>* results) override {
    std::vector<std::string> up = Up(keys);
    std::vector<UrlClaim> answered;
    DEDUPD_RETURN_IF_ERROR(memory_.Claim(options, up, now, &answered));
    results->assign(keys.size(), UrlClaim{});
    for (size_t i = 0, j = 0; i < keys.size(); ++i) {
      if (Down(keys[i])) {
        (*results)[i].status = kDown;
      } else {
        (*results)[i] = answered[j++];
      }
    }
    return absl::OkStatus();
  }
  absl::Status LookupRecords(absl::string_view, absl::Span<const std::string>,
                             std::vector<std::optional<UrlRecord>>*) override {
    return absl::InternalError("the engine peeks through LookupRecordsPerKey");
  }
  absl::Status LookupRecordsPerKey(absl::string_view name_space, absl::Span<const std::string> keys,
                                   std::vector<std::optional<UrlRecord>>* records,
                                   std::vector<absl::Status>* statuses) override {
    std::vector<std::optional<UrlRecord>> answered;
    DEDUPD_RETURN_IF_ERROR(memory_.LookupRecords(name_space, Up(keys), &answered));
    records->assign(keys.size(), std::nullopt);
    statuses->assign(keys.size(), absl::OkStatus());
    for (size_t i = 0, j = 0; i < keys.size(); ++i) {
      if (Down(keys[i])) {
        (*statuses)[i] = kDown;
      } else {
        (*records)[i] = answered[j++];
      }
    }
    return absl::OkStatus();
  }
  absl::Status Complete(absl::string_view, uint64_t, absl::Span<const std::string>,
                        std::vector<UrlCompletion>*) override {
    return absl::InternalError("the engine confirms through CompletePerKey");
  }
  absl::Status CompletePerKey(absl::string_view name_space, uint64_t claim_id_hash,
                              absl::Span<const std::string> keys,
                              std::vector<UrlCompletion>* results,
                              std::vector<absl::Status>* statuses) override {
    std::vector<UrlCompletion> answered;
    DEDUPD_RETURN_IF_ERROR(memory_.Complete(name_space, claim_id_hash, Up(keys), &answered));
    results->assign(keys.size(), UrlCompletion::kNotClaimed);
    statuses->assign(keys.size(), absl::OkStatus());
    for (size_t i = 0, j = 0; i < keys.size(); ++i) {
      if (Down(keys[i])) {
        (*statuses)[i] = kDown;
      } else {
        (*results)[i] = answered[j++];
      }
    }
    return absl::OkStatus();
  }

 private:
  static bool Down(absl::string_view key) { return absl::StrContains(key, "down"); }
  static std::vector<std::string> Up(absl::Span<const std::string> keys) {
    std::vector<std::string> up;
    for (const std::string& k : keys) {
      if (!Down(k)) up.push_back(k);
    }
    return up;
  }
  const absl::Status kDown = absl::UnavailableError("redis node 10.0.0.7:6379: connection refused");
  MemoryUrlStore memory_;
};

TEST(EnginePerItemStoreErrorTest, AStoreNodeDownFailsOnlyItsUrlsWhenTheRequestAsks) {
  UrlNormalizer normalizer;
  PartlyDownUrlStore store;
  Engine engine(&normalizer, &store, EngineOptions{});
  v1::CheckUrlRequest claim;
  claim.set_claim_id("c1");
  for (const char* url : {"http://up.example/a", "http://down.example/b", "mailto:x@example.com"}) {
    claim.add_items()->set_url(url);
  }
  // Not asked for: the call fails as before, naming the node.
  v1::CheckUrlResponse response;
  EXPECT_THAT(engine.CheckUrl(claim, &response),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("claim URLs: the store could not answer 1 of 2 URLs")));
  EXPECT_THAT(engine.CheckUrl(claim, &response),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("redis node 10.0.0.7:6379")));

  claim.set_per_item_store_errors(true);
  ASSERT_THAT(engine.CheckUrl(claim, &response), IsOk());
  ASSERT_EQ(response.results_size(), 3);
  EXPECT_EQ(response.results(0).verdict(), v1::URL_VERDICT_NEW)
      << "a retry of claim id c1: the failed call above claimed it";
  EXPECT_EQ(response.results(1).verdict(), v1::URL_VERDICT_INVALID);
  EXPECT_EQ(response.results(1).error_reason(), v1::ERROR_REASON_STORE_UNAVAILABLE);
  EXPECT_EQ(response.results(1).normalized_url(), "http://down.example/b");
  EXPECT_EQ(response.results(1).error(),
            "store unavailable for this URL (retry it with the same claim_id): redis node "
            "10.0.0.7:6379: connection refused");
  EXPECT_EQ(response.results(2).error_reason(), v1::ERROR_REASON_BAD_URL);

  // A peek: the same URLs fail; no claim id to keep.
  claim.set_mode(v1::CLAIM_MODE_PEEK);
  claim.clear_claim_id();
  ASSERT_THAT(engine.CheckUrl(claim, &response), IsOk());
  EXPECT_EQ(response.results(0).verdict(), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(response.results(1).error_reason(), v1::ERROR_REASON_STORE_UNAVAILABLE);
  EXPECT_THAT(response.results(1).error(),
              HasSubstr("store unavailable for this URL (retry it): redis node"));

  v1::CompleteUrlsRequest complete;
  for (const char* url : {"http://up.example/a", "http://down.example/b"}) {
    complete.add_items()->set_url(url);
  }
  v1::CompleteUrlsResponse completed;
  EXPECT_THAT(engine.CompleteUrls(complete, &completed),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("confirm URLs: the store could not answer 1 of 2 URLs")));
  complete.set_per_item_store_errors(true);
  ASSERT_THAT(engine.CompleteUrls(complete, &completed), IsOk());
  EXPECT_EQ(completed.results(0).verdict(), v1::COMPLETE_VERDICT_ALREADY_CONFIRMED);
  EXPECT_EQ(completed.results(1).verdict(), v1::COMPLETE_VERDICT_INVALID);
  EXPECT_EQ(completed.results(1).error_reason(), v1::ERROR_REASON_STORE_UNAVAILABLE);
  EXPECT_THAT(completed.results(1).error(), HasSubstr("redis node 10.0.0.7:6379"));
}

// ---- CheckContent: the engine over the in-memory URL and content fakes.

// ~980 words of real prose (the "Python Packaging" chapter of the Debian
// Python Policy, /usr/share/doc/python3/python-policy.html, tags stripped).
std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(DEDUPD_SERVER_TESTDATA_DIR) + "/" + name, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

class ContentEngineTest : public ::testing::Test {
 protected:
  static constexpr size_t kMaxTextBytes = 16384;
  static constexpr size_t kMaxBatchItems = 20;

  ContentEngineTest()
      : content_store_(&url_store_, /*max_near_distance=*/3),
        engine_(&normalizer_, &url_store_, &hasher_, &content_store_, Options()) {}

  EngineOptions Options() {
    EngineOptions o;
    o.max_batch_items = kMaxBatchItems;
    o.max_text_bytes = kMaxTextBytes;
    o.clock = [this] { return now_; };
    return o;
  }

  static v1::ContentItem Item(const std::string& url, const std::string& text,
                              const std::string& canonical = "") {
    v1::ContentItem item;
    item.set_url(url);
    item.set_text(text);
    item.set_canonical_url(canonical);
    return item;
  }

  static v1::CheckContentRequest Request(std::vector<v1::ContentItem> items,
                                         v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    v1::CheckContentRequest r;
    r.set_mode(mode);
    for (v1::ContentItem& item : items) *r.add_items() = std::move(item);
    return r;
  }

  // Check sends one request that must succeed and answer every item.
  std::vector<v1::ContentResult> Check(std::vector<v1::ContentItem> items,
                                       v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    const size_t n = items.size();
    v1::CheckContentResponse response;
    absl::Status s = engine_.CheckContent(Request(std::move(items), mode), &response);
    EXPECT_THAT(s, IsOk());
    EXPECT_EQ(static_cast<size_t>(response.results_size()), n);
    return {response.results().begin(), response.results().end()};
  }

  v1::ContentResult CheckOne(const std::string& url, const std::string& text,
                             v1::ClaimMode mode = v1::CLAIM_MODE_CLAIM) {
    std::vector<v1::ContentResult> r = Check({Item(url, text)}, mode);
    return r.empty() ? v1::ContentResult{} : r[0];
  }

  // UrlVerdict peeks `url` through Engine::CheckUrl.
  v1::UrlVerdict UrlVerdict(const std::string& url) {
    v1::CheckUrlRequest r;
    r.set_mode(v1::CLAIM_MODE_PEEK);
    r.add_items()->set_url(url);
    v1::CheckUrlResponse response;
    EXPECT_THAT(engine_.CheckUrl(r, &response), IsOk());
    return response.results_size() == 1 ? response.results(0).verdict()
                                        : v1::URL_VERDICT_UNSPECIFIED;
  }

  absl::Time now_ = absl::FromUnixMicros(1764496800123456);  // 2025-11-30
  UrlNormalizer normalizer_;
  SimHasher hasher_;
  MemoryUrlStore url_store_;
  MemoryContentStore content_store_;
  Engine engine_;
};

TEST_F(ContentEngineTest, BadItemsAreInvalidInOneBatchAndGoodOnesSucceed) {
  v1::ContentItem far = Item("https://bad.example/distance", "some fine text");
  far.set_max_hamming_distance(4);
  v1::ContentItem huge_distance = Item("https://bad.example/huge", "more fine text");
  huge_distance.set_max_hamming_distance(4000000000u);
  struct Case {
    const char* name;
    v1::ContentItem item;
    std::string want_error;
    v1::ErrorReason want_reason;
  } cases[] = {
      {"empty text", Item("https://bad.example/1", ""), "text: text is empty or only whitespace",
       v1::ERROR_REASON_BAD_TEXT},
      {"whitespace only", Item("https://bad.example/2", " \t\r\n \u00a0 \n"),
       "empty or only whitespace", v1::ERROR_REASON_BAD_TEXT},
      {"invalid UTF-8", Item("https://bad.example/3", "caf\xc3\x28 au lait"),
       "invalid UTF-8 at byte 3", v1::ERROR_REASON_BAD_TEXT},
      {"lone continuation byte", Item("https://bad.example/4", "ok \x80"), "invalid UTF-8",
       v1::ERROR_REASON_BAD_TEXT},
      {"NUL byte", Item("https://bad.example/5", std::string("before\0after", 12)),
       "NUL byte at byte 6", v1::ERROR_REASON_BAD_TEXT},
      {"text over max_text_bytes",
       Item("https://bad.example/6", std::string(kMaxTextBytes + 1, 'a')),
       "text: is 16385 bytes; the limit is 16384 (--max_text_bytes)",
       v1::ERROR_REASON_TEXT_TOO_LARGE},
      {"empty url", Item("", "a document without a URL"), "url: is empty",
       v1::ERROR_REASON_BAD_URL},
      {"mailto url", Item("mailto:x@example.com", "a document from a mailbox"),
       "url: ", v1::ERROR_REASON_BAD_URL},
      {"relative url", Item("relative/path.html", "relative fetched URL"),
       "url: ", v1::ERROR_REASON_BAD_URL},
      {"invalid UTF-8 url", Item("https://bad.example/\xff", "bad bytes in URL"),
       "url: ", v1::ERROR_REASON_BAD_URL},
      {"javascript canonical",
       Item("https://bad.example/7", "bad canonical", "javascript:alert(1)"),
       "canonical_url: ", v1::ERROR_REASON_BAD_URL},
      {"distance over index limit", far,
       "max_hamming_distance 4 is above this server's limit of 3 (--simhash_max_distance)",
       v1::ERROR_REASON_DISTANCE_TOO_LARGE},
      {"huge distance", huge_distance, "max_hamming_distance 4000000000 is above",
       v1::ERROR_REASON_DISTANCE_TOO_LARGE},
  };
  // Good documents first, between the bad ones, and last.
  std::vector<v1::ContentItem> items;
  std::vector<int> good, bad;
  auto add_good = [&](int i) {
    good.push_back(static_cast<int>(items.size()));
    items.push_back(Item(absl::StrCat("https://good.example/", i),
                         absl::StrCat("good document number ", i, " has its own words")));
  };
  add_good(0);
  for (const Case& c : cases) {
    bad.push_back(static_cast<int>(items.size()));
    items.push_back(c.item);
  }
  add_good(1);
  // Exactly the text limit is fine.
  good.push_back(static_cast<int>(items.size()));
  items.push_back(Item("https://good.example/limit", std::string(kMaxTextBytes, 'b')));
  ASSERT_LE(items.size(), kMaxBatchItems);

  std::vector<v1::ContentResult> r = Check(items);
  ASSERT_EQ(r.size(), items.size());
  for (int i : good) {
    EXPECT_EQ(r[i].verdict(), v1::CONTENT_VERDICT_NEW) << i << ": " << r[i].error();
    EXPECT_THAT(r[i].error(), IsEmpty());
    EXPECT_EQ(r[i].owner_url(), r[i].url());
    EXPECT_EQ(r[i].content_hash().size(), 64u);
    EXPECT_EQ(r[i].recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);
  }
  for (size_t k = 0; k < bad.size(); ++k) {
    const v1::ContentResult& res = r[bad[k]];
    SCOPED_TRACE(cases[k].name);
    EXPECT_EQ(res.verdict(), v1::CONTENT_VERDICT_INVALID);
    EXPECT_THAT(res.error(), HasSubstr(cases[k].want_error));
    EXPECT_EQ(res.error_reason(), cases[k].want_reason);
    EXPECT_THAT(res.content_hash(), IsEmpty());
    EXPECT_THAT(res.owner_url(), IsEmpty());
    EXPECT_FALSE(res.has_first_seen_time());
  }
  // Nothing of a bad item was recorded: its URL is not seen.
  for (const char* url :
       {"https://bad.example/1", "https://bad.example/6", "https://bad.example/distance"}) {
    EXPECT_EQ(UrlVerdict(url), v1::URL_VERDICT_NEW) << url;
  }
  EXPECT_EQ(UrlVerdict("https://good.example/0"), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(UrlVerdict("https://good.example/limit"), v1::URL_VERDICT_SEEN);
}

TEST_F(ContentEngineTest, ExplicitDistanceWithinTheLimitIsAccepted) {
  std::vector<v1::ContentItem> items;
  for (uint32_t d : {0u, 1u, 3u}) {
    items.push_back(
        Item(absl::StrCat("https://d.example/", d), absl::StrCat("distance ", d, " text")));
    items.back().set_max_hamming_distance(d);
  }
  for (const v1::ContentResult& r : Check(items)) {
    EXPECT_EQ(r.verdict(), v1::CONTENT_VERDICT_NEW) << r.error();
  }
}

TEST_F(ContentEngineTest, NewThenExactDuplicateWithOwnerAndAliases) {
  const absl::Time t0 = now_;
  v1::ContentResult first = CheckOne("https://a.example/post", "Hello, World! A short post.");
  EXPECT_EQ(first.verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(first.url(), "https://a.example/post");
  EXPECT_EQ(first.canonical_url(), "https://a.example/post");
  EXPECT_EQ(first.owner_url(), "https://a.example/post");
  EXPECT_THAT(first.alias_urls(), IsEmpty());
  EXPECT_EQ(first.alias_count(), 0u);
  EXPECT_EQ(first.recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);
  EXPECT_EQ(first.first_seen_time().seconds(), absl::ToUnixSeconds(t0));
  EXPECT_EQ(first.first_seen_time().nanos(), 123456000);

  now_ += absl::Hours(2);
  // The same text after normalization (case, whitespace): an exact duplicate.
  v1::ContentResult second =
      CheckOne("https://mirror.example/copy", "  HELLO,   world!\n\nA short POST.  ");
  EXPECT_EQ(second.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(second.content_hash(), first.content_hash());
  EXPECT_EQ(second.simhash(), first.simhash());
  EXPECT_EQ(second.owner_url(), "https://a.example/post");
  EXPECT_THAT(second.alias_urls(), ElementsAre("https://mirror.example/copy"));
  EXPECT_EQ(second.alias_count(), 1u);
  EXPECT_EQ(second.recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);
  EXPECT_EQ(second.first_seen_time().seconds(), absl::ToUnixSeconds(t0));

  // Two more in one batch: the batch sees its own earlier items.
  std::vector<v1::ContentResult> more =
      Check({Item("https://z.example/c", "hello, world! a short post."),
             Item("https://b.example/c", "hello, world! a short post.")});
  ASSERT_EQ(more.size(), 2u);
  EXPECT_EQ(more[1].verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_THAT(
      more[1].alias_urls(),
      ElementsAre("https://b.example/c", "https://mirror.example/copy", "https://z.example/c"));
  EXPECT_EQ(more[1].alias_count(), 3u);

  // The owner re-fetching its own text is not its own alias.
  v1::ContentResult again = CheckOne("https://a.example/post", "hello, world! a short post.");
  EXPECT_EQ(again.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(again.owner_url(), "https://a.example/post");
  EXPECT_EQ(again.alias_count(), 3u);
  EXPECT_EQ(again.recrawl(), v1::RECRAWL_STATUS_UNCHANGED);
}

TEST_F(ContentEngineTest, AliasListIsBoundedButTheCountIsNot) {
  EngineOptions o = Options();
  o.content_limits.max_aliases = 2;
  Engine engine(&normalizer_, &url_store_, &hasher_, &content_store_, o);
  v1::CheckContentRequest r;
  for (int i = 0; i < 6; ++i) {
    *r.add_items() = Item(absl::StrCat("https://alias.example/", i), "one text served six times");
  }
  v1::CheckContentResponse response;
  ASSERT_THAT(engine.CheckContent(r, &response), IsOk());
  const v1::ContentResult& last = response.results(5);
  EXPECT_EQ(last.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(last.owner_url(), "https://alias.example/0");
  EXPECT_EQ(last.alias_urls_size(), 2);
  EXPECT_EQ(last.alias_count(), 5u);
}

TEST_F(ContentEngineTest, CanonicalUrlIsTheIdentityAndBothUrlsBecomeSeen) {
  const std::string fetched = "https://site.example/amp/post.html";
  const std::string canonical = "https://site.example/post.html";
  EXPECT_EQ(UrlVerdict(fetched), v1::URL_VERDICT_NEW);
  EXPECT_EQ(UrlVerdict(canonical), v1::URL_VERDICT_NEW);

  // Relative rel=canonical resolves against the fetched URL.
  std::vector<v1::ContentResult> r =
      Check({Item("https://SITE.example:443/amp/post.html#top", "The canonical story.",
                  "../post.html?utm_source=feed")});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r[0].url(), fetched);
  EXPECT_EQ(r[0].canonical_url(), canonical);
  EXPECT_EQ(r[0].owner_url(), canonical);
  EXPECT_THAT(r[0].alias_urls(), ElementsAre(fetched));
  EXPECT_EQ(r[0].alias_count(), 1u);

  // Both URLs are now seen for CheckUrl; an unrelated one is not.
  EXPECT_EQ(UrlVerdict(fetched), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(UrlVerdict(canonical), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(UrlVerdict("https://site.example/other.html"), v1::URL_VERDICT_NEW);

  // The same text fetched from the canonical URL itself: owned by it.
  v1::ContentResult direct = CheckOne(canonical, "the canonical story.");
  EXPECT_EQ(direct.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(direct.owner_url(), canonical);
  EXPECT_THAT(direct.alias_urls(), ElementsAre(fetched));
  EXPECT_EQ(direct.alias_count(), 1u);
  // Re-crawl state is per fetched URL: the canonical URL was never fetched.
  EXPECT_EQ(direct.recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);

  // Another page naming the same canonical URL with the same text.
  std::vector<v1::ContentResult> print =
      Check({Item("https://site.example/print/post.html", "The canonical story.", canonical)});
  EXPECT_EQ(print[0].verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(print[0].owner_url(), canonical);
  EXPECT_THAT(print[0].alias_urls(), ElementsAre(fetched, "https://site.example/print/post.html"));
  EXPECT_EQ(print[0].alias_count(), 2u);
  EXPECT_EQ(UrlVerdict("https://site.example/print/post.html"), v1::URL_VERDICT_SEEN);
}

v1::ContentItem IdItem(const std::string& document_id, const std::string& text) {
  v1::ContentItem item;
  item.set_document_id(document_id);
  item.set_text(text);
  return item;
}

TEST_F(ContentEngineTest, DocumentIdsNameDocumentsAsGivenBesideUrls) {
  // An id that looks like a URL is still an opaque id: not normalized, not
  // the URL's document, never in the URL seen-set.
  std::vector<v1::ContentResult> r =
      Check({IdItem("s3://bucket/Key?v=1", "An ingested report about rivers."),
             IdItem("HTTPS://Site.example/a", "A second, different report about lakes."),
             Item("https://site.example/a", "A second, different report about lakes.")});
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r[0].document_id(), "s3://bucket/Key?v=1");
  EXPECT_EQ(r[0].url(), "");
  EXPECT_EQ(r[0].canonical_url(), "");
  EXPECT_EQ(r[0].owner_document_id(), "s3://bucket/Key?v=1");
  EXPECT_EQ(r[0].owner_url(), "");
  EXPECT_EQ(r[0].recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);
  EXPECT_EQ(r[1].verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r[1].owner_document_id(), "HTTPS://Site.example/a");
  // The URL's copy of the text: a duplicate of the id, which it names.
  EXPECT_EQ(r[2].verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(r[2].owner_document_id(), "HTTPS://Site.example/a");
  EXPECT_EQ(r[2].owner_url(), "");
  EXPECT_THAT(r[2].alias_urls(), ElementsAre("https://site.example/a"));
  EXPECT_THAT(r[2].alias_document_ids(), IsEmpty());
  EXPECT_EQ(UrlVerdict("https://site.example/a"), v1::URL_VERDICT_SEEN);
  EXPECT_EQ(UrlVerdict("https://site.example/other"), v1::URL_VERDICT_NEW);
  // A URL owner, and a second id with its text: the id is an alias, listed
  // apart from the URLs and counted with them.
  r = Check({Item("https://owner.example/", "A text a URL owns, then an id holds too."),
             IdItem("db:row/7", "a text a url owns, then an id holds too.")});
  EXPECT_EQ(r[1].verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(r[1].owner_url(), "https://owner.example/");
  EXPECT_THAT(r[1].alias_document_ids(), ElementsAre("db:row/7"));
  EXPECT_THAT(r[1].alias_urls(), IsEmpty());
  EXPECT_EQ(r[1].alias_count(), 1u);
  // Re-ingesting an id: its own text, unchanged.
  r = Check({IdItem("s3://bucket/Key?v=1", "An ingested report about rivers.")});
  EXPECT_EQ(r[0].verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(r[0].owner_document_id(), "s3://bucket/Key?v=1");
  EXPECT_EQ(r[0].recrawl(), v1::RECRAWL_STATUS_UNCHANGED);
}

TEST_F(ContentEngineTest, BadDocumentIdsAreInvalidItemsWithTheLimit) {
  v1::ContentItem both = IdItem("doc-1", "some fine text");
  both.set_url("https://a.example/");
  v1::ContentItem with_canonical = IdItem("doc-2", "some fine text");
  with_canonical.set_canonical_url("https://a.example/");
  struct Case {
    v1::ContentItem item;
    std::string want_error;
  } cases[] = {
      {IdItem(std::string(1025, 'd'), "text"), "document_id: is 1025 bytes; the limit is 1024"},
      {IdItem(std::string("a\0b", 3), "text"), "document_id: byte 1 is NUL"},
      {IdItem("bad \xc3", "text"), "document_id: is not valid UTF-8"},
      {both, "document_id: is given with url or canonical_url"},
      {with_canonical, "document_id: is given with url or canonical_url"},
  };
  std::vector<v1::ContentItem> items;
  for (const Case& c : cases) items.push_back(c.item);
  items.push_back(IdItem("good-id", "the one good item"));
  std::vector<v1::ContentResult> r = Check(items);
  ASSERT_EQ(r.size(), std::size(cases) + 1);
  for (size_t i = 0; i < std::size(cases); ++i) {
    EXPECT_EQ(r[i].verdict(), v1::CONTENT_VERDICT_INVALID) << i;
    EXPECT_EQ(r[i].error_reason(), v1::ERROR_REASON_BAD_DOCUMENT_ID) << i;
    EXPECT_THAT(r[i].error(), HasSubstr(cases[i].want_error)) << i;
  }
  EXPECT_EQ(r.back().verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r.back().owner_document_id(), "good-id");
}

TEST_F(ContentEngineTest, OneWordEditOfARealPageIsANearDuplicate) {
  const std::string original = ReadTestdata("python_policy_packaging.txt");
  ASSERT_GT(original.size(), 5000u) << "missing testdata";
  const std::vector<std::string> words =
      absl::StrSplit(original, absl::ByAnyChar(" \n"), absl::SkipWhitespace());
  ASSERT_GT(words.size(), 950u);
  // One word replaced, about half way through the page.
  const std::string from = "As far as is reasonable";
  const size_t at = original.find(from);
  ASSERT_NE(at, std::string::npos);
  std::string edited = original;
  edited.replace(at, from.size(), "As far as is appropriate");

  v1::ContentResult first = CheckOne("https://docs.example/policy", original);
  ASSERT_EQ(first.verdict(), v1::CONTENT_VERDICT_NEW) << first.error();
  now_ += absl::Minutes(1);
  v1::ContentResult near = CheckOne("https://mirror.example/policy", edited);
  const int distance = HammingDistance(first.simhash(), near.simhash());
  std::cout << "one-word edit of " << words.size() << " words: SimHash distance " << distance
            << "\n";
  ASSERT_THAT(distance, Le(3));
  EXPECT_NE(near.content_hash(), first.content_hash());
  EXPECT_EQ(near.verdict(), v1::CONTENT_VERDICT_NEAR_DUPLICATE);
  EXPECT_EQ(near.owner_url(), "https://docs.example/policy");
  ASSERT_EQ(near.near_matches_size(), 1);
  EXPECT_EQ(near.near_match_count(), 1u);
  EXPECT_EQ(near.near_matches(0).url(), "https://docs.example/policy");
  EXPECT_EQ(near.near_matches(0).simhash(), first.simhash());
  EXPECT_EQ(near.near_matches(0).distance(), static_cast<uint32_t>(distance));
  EXPECT_EQ(near.near_matches(0).content_hash(), first.content_hash());
  // ~980 words, one changed: Jaccard ~0.994, found by both measures.
  EXPECT_EQ(near.near_matches(0).measure(), v1::NEAR_MEASURE_BOTH);
  EXPECT_GE(near.near_matches(0).estimated_jaccard(), 0.85);
  EXPECT_EQ(near.first_seen_time().seconds(), first.first_seen_time().seconds());
  EXPECT_EQ(near.recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);

  // With CLAIM the edited text was recorded too: an exact repeat of it is
  // an EXACT_DUPLICATE owned by the mirror.
  v1::ContentResult repeat = CheckOne("https://third.example/policy", edited);
  EXPECT_EQ(repeat.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(repeat.owner_url(), "https://mirror.example/policy");

  // An unrelated page is not near either of them.
  v1::ContentResult other = CheckOne("https://garden.example/",
                                     "An entirely different page "
                                     "about gardening: tomatoes, soil and spring weather.");
  EXPECT_EQ(other.verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(other.near_match_count(), 0u);
}

// The item's distance limits the SimHash measure only; MinHash (on by
// default, 0.85) still finds the one-word edit, by Jaccard alone.
TEST_F(ContentEngineTest, NearDuplicateRespectsTheItemsDistance) {
  const std::string original = ReadTestdata("python_policy_packaging.txt");
  const std::string from = "As far as is reasonable";
  const size_t at = original.find(from);
  ASSERT_NE(at, std::string::npos);
  std::string edited = original;
  edited.replace(at, from.size(), "As far as is appropriate");
  v1::ContentResult first = CheckOne("https://docs.example/policy", original);
  ASSERT_EQ(first.verdict(), v1::CONTENT_VERDICT_NEW);
  v1::ContentItem strict = Item("https://strict.example/policy", edited);
  strict.set_max_hamming_distance(0);
  std::vector<v1::ContentResult> r = Check({strict}, v1::CLAIM_MODE_PEEK);
  ASSERT_EQ(r.size(), 1u);
  if (r[0].simhash() == first.simhash()) GTEST_SKIP() << "the edit did not move the SimHash";
  EXPECT_EQ(r[0].verdict(), v1::CONTENT_VERDICT_NEAR_DUPLICATE);
  ASSERT_EQ(r[0].near_matches_size(), 1);
  EXPECT_EQ(r[0].near_matches(0).measure(), v1::NEAR_MEASURE_JACCARD);
  EXPECT_GT(r[0].near_matches(0).distance(), 0u);
  EXPECT_GE(r[0].near_matches(0).estimated_jaccard(), 0.85);
  EXPECT_EQ(r[0].applied_min_jaccard(), 0.85);  // the server's default
  // SimHash alone (MinHash off by the server's default):
  // near_text_engine_test.
}

TEST_F(ContentEngineTest, RecrawlIsFirstSeenThenUnchangedOrChanged) {
  const std::string url = "https://news.example/front";
  v1::ContentResult r1 = CheckOne(url, "Monday's front page: the river flooded the town.");
  EXPECT_EQ(r1.recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);
  now_ += absl::Hours(1);
  v1::ContentResult r2 = CheckOne(url, "monday's front page: the river flooded the town.");
  EXPECT_EQ(r2.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(r2.recrawl(), v1::RECRAWL_STATUS_UNCHANGED);
  now_ += absl::Hours(24);
  v1::ContentResult r3 = CheckOne(url, "Tuesday: the bakery reopened and the mayor cut a ribbon.");
  EXPECT_EQ(r3.verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r3.recrawl(), v1::RECRAWL_STATUS_CHANGED);
  v1::ContentResult r4 = CheckOne(url, "Tuesday: the bakery reopened and the mayor cut a ribbon.");
  EXPECT_EQ(r4.recrawl(), v1::RECRAWL_STATUS_UNCHANGED);
  // Back to Monday's text: changed again, and still the stored text's duplicate.
  v1::ContentResult r5 = CheckOne(url, "Monday's front page: the river flooded the town.");
  EXPECT_EQ(r5.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(r5.recrawl(), v1::RECRAWL_STATUS_CHANGED);
  // A peek reports the status against the last claim and does not move it.
  v1::ContentResult p = CheckOne(url, "Wednesday: nothing happened.", v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(p.recrawl(), v1::RECRAWL_STATUS_CHANGED);
  v1::ContentResult r6 = CheckOne(url, "Monday's front page: the river flooded the town.");
  EXPECT_EQ(r6.recrawl(), v1::RECRAWL_STATUS_UNCHANGED);
}

TEST_F(ContentEngineTest, PeekRecordsNothing) {
  const std::string text = "A page that is only peeked at first.";
  v1::ContentResult p1 = CheckOne("https://p.example/a", text, v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(p1.verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(p1.recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);
  EXPECT_EQ(p1.content_hash().size(), 64u);
  EXPECT_FALSE(p1.has_first_seen_time());
  EXPECT_EQ(UrlVerdict("https://p.example/a"), v1::URL_VERDICT_NEW);

  // A repeat within one peek gets the same answer.
  std::vector<v1::ContentResult> twice = Check(
      {Item("https://p.example/b", text), Item("https://p.example/c", text)}, v1::CLAIM_MODE_PEEK);
  ASSERT_EQ(twice.size(), 2u);
  EXPECT_EQ(twice[0].verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(twice[1].verdict(), v1::CONTENT_VERDICT_NEW);

  // Had a peek recorded, this claim would be a duplicate.
  v1::ContentResult claim = CheckOne("https://p.example/a", text);
  EXPECT_EQ(claim.verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(claim.recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);

  // Peeks of the stored text from another URL: a duplicate, but no alias is
  // added and the URL does not become seen.
  for (int i = 0; i < 2; ++i) {
    v1::ContentResult p = CheckOne("https://p.example/other", text, v1::CLAIM_MODE_PEEK);
    EXPECT_EQ(p.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
    EXPECT_EQ(p.owner_url(), "https://p.example/a");
    EXPECT_EQ(p.alias_count(), 0u);
    EXPECT_EQ(p.recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);
    EXPECT_EQ(p.first_seen_time().seconds(), claim.first_seen_time().seconds());
  }
  EXPECT_EQ(UrlVerdict("https://p.example/other"), v1::URL_VERDICT_NEW);
  v1::ContentResult p3 = CheckOne("https://p.example/a", text, v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(p3.recrawl(), v1::RECRAWL_STATUS_UNCHANGED);
}

TEST_F(ContentEngineTest, UnspecifiedModeClaims) {
  v1::ContentResult r1 =
      CheckOne("https://u.example/1", "unspecified mode", v1::CLAIM_MODE_UNSPECIFIED);
  v1::ContentResult r2 =
      CheckOne("https://u.example/2", "unspecified mode", v1::CLAIM_MODE_UNSPECIFIED);
  EXPECT_EQ(r1.verdict(), v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r2.verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
}

TEST_F(ContentEngineTest, WholeRequestErrorsAreInvalidArgument) {
  v1::CheckContentResponse response;
  EXPECT_THAT(engine_.CheckContent(Request({}), &response),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no items")));
  std::vector<v1::ContentItem> items;
  for (size_t i = 0; i <= kMaxBatchItems; ++i) {
    items.push_back(Item(absl::StrCat("https://over.example/", i), "text"));
  }
  EXPECT_THAT(engine_.CheckContent(Request(items), &response),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("21 items; the limit is 20 per request (--max_batch_items)")));
  // Nothing of the rejected batch was recorded.
  EXPECT_EQ(UrlVerdict("https://over.example/0"), v1::URL_VERDICT_NEW);
  EXPECT_EQ(CheckOne("https://over.example/0", "text").verdict(), v1::CONTENT_VERDICT_NEW);
}

// The request's claim_id reaches the store: the retry of a claim is NEW
// again with the claim's time (a peek's too), any other request a
// duplicate; the retention is the engine's; an over-long id fails the
// request.
TEST_F(ContentEngineTest, ClaimIdRetriesAreNewAgainWithinTheRetention) {
  const std::string text = "A page whose reply the crawler never received.";
  v1::CheckContentRequest request = Request({Item("https://r.example/a", text)});
  request.set_claim_id("request-1");
  v1::CheckContentResponse first;
  ASSERT_THAT(engine_.CheckContent(request, &first), IsOk());
  ASSERT_EQ(first.results(0).verdict(), v1::CONTENT_VERDICT_NEW);
  const absl::Time claimed = now_;

  now_ += absl::Minutes(5);
  for (v1::ClaimMode mode : {v1::CLAIM_MODE_CLAIM, v1::CLAIM_MODE_PEEK}) {
    request.set_mode(mode);
    v1::CheckContentResponse again;
    ASSERT_THAT(engine_.CheckContent(request, &again), IsOk());
    EXPECT_EQ(again.results(0).verdict(), v1::CONTENT_VERDICT_NEW) << mode;
    EXPECT_EQ(again.results(0).owner_url(), "https://r.example/a");
    ASSERT_TRUE(again.results(0).has_first_seen_time()) << mode;
    EXPECT_EQ(again.results(0).first_seen_time().seconds(), absl::ToUnixSeconds(claimed));
    EXPECT_EQ(again.results(0).recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);
  }
  request.set_mode(v1::CLAIM_MODE_CLAIM);
  v1::CheckContentRequest other = request;
  other.set_claim_id("request-2");
  v1::CheckContentResponse response;
  ASSERT_THAT(engine_.CheckContent(other, &response), IsOk());
  EXPECT_EQ(response.results(0).verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);

  now_ = claimed + absl::Hours(24) + absl::Seconds(1);  // the default retention
  ASSERT_THAT(engine_.CheckContent(request, &response), IsOk());
  EXPECT_EQ(response.results(0).verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);

  request.set_claim_id(std::string(65, 'x'));
  EXPECT_THAT(engine_.CheckContent(request, &response),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("claim_id: is 65 bytes; the limit is 64")));
}

TEST(ContentEngineNoStoreTest, WithoutAContentStoreIsUnimplemented) {
  UrlNormalizer normalizer;
  MemoryUrlStore store;
  Engine engine(&normalizer, &store, EngineOptions{});
  v1::CheckContentRequest r;
  *r.add_items() = v1::ContentItem();
  r.mutable_items(0)->set_url("https://a.example/");
  r.mutable_items(0)->set_text("text");
  v1::CheckContentResponse response;
  EXPECT_THAT(engine.CheckContent(r, &response), StatusIs(absl::StatusCode::kUnimplemented));
}

// ---------------------------------------------------------------- DedupResults

class ResultsEngineTest : public ::testing::Test {
 protected:
  ResultsEngineTest() : engine_(&normalizer_, &store_, EngineOptions{}) {}

  static v1::ResultHit Hit(const std::string& id, const std::string& text, double score,
                           std::vector<float> embedding = {}, const std::string& source = "") {
    v1::ResultHit h;
    h.set_id(id);
    h.set_text(text);
    h.set_score(score);
    h.set_source_url(source);
    for (float x : embedding) h.add_embedding(x);
    return h;
  }

  absl::StatusOr<v1::DedupResultsResponse> Dedup(const v1::DedupResultsRequest& request) const {
    v1::DedupResultsResponse response;
    absl::Status s = engine_.DedupResults(request, &response);
    if (!s.ok()) return s;
    return response;
  }

  static std::vector<uint32_t> KeptIndices(const v1::DedupResultsResponse& r) {
    std::vector<uint32_t> out;
    for (const v1::KeptHit& k : r.kept()) out.push_back(k.index());
    return out;
  }

  UrlNormalizer normalizer_;
  MemoryUrlStore store_;
  Engine engine_;
};

constexpr char kOtters[] = "Otters eat fish and crabs in the river, and sleep in dens.";
constexpr char kWeather[] = "The weather in the mountains changes quickly in spring.";

TEST_F(ResultsEngineTest, BadHitsAreRejectedWithTheirReasonAndTheRestAnswered) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  v1::DedupResultsRequest request;
  *request.add_hits() = Hit("a", kOtters, 0.9);
  *request.add_hits() = Hit("b", "", 5);
  *request.add_hits() = Hit("c", " \t\n ", 5);
  *request.add_hits() = Hit("d", "caf\xc3\x28", 5);
  *request.add_hits() = Hit("e", kWeather, nan);
  *request.add_hits() = Hit("f", kWeather, -std::numeric_limits<double>::infinity());
  *request.add_hits() = Hit("", kWeather, 5);
  *request.add_hits() = Hit("g", kOtters, 0.8);
  *request.add_hits() = Hit("h", kWeather, 0.7);
  ASSERT_OK_AND_ASSIGN(const v1::DedupResultsResponse r, Dedup(request));

  struct Want {
    uint32_t index;
    const char* id;
    v1::ErrorReason reason;
    const char* error;
  };
  const Want want[] = {
      {1, "b", v1::ERROR_REASON_BAD_TEXT, "text: text is empty or only whitespace"},
      {2, "c", v1::ERROR_REASON_BAD_TEXT, "text: text is empty or only whitespace"},
      {3, "d", v1::ERROR_REASON_BAD_TEXT, "text: invalid UTF-8 at byte 3"},
      {4, "e", v1::ERROR_REASON_BAD_HIT, "score is NaN"},
      {5, "f", v1::ERROR_REASON_BAD_HIT, "score is infinite"},
      {6, "", v1::ERROR_REASON_BAD_HIT, "empty id"},
  };
  ASSERT_EQ(r.rejected_size(), 6);
  for (int j = 0; j < 6; ++j) {
    SCOPED_TRACE(j);
    EXPECT_EQ(r.rejected(j).index(), want[j].index);
    EXPECT_EQ(r.rejected(j).id(), want[j].id);
    EXPECT_EQ(r.rejected(j).error_reason(), want[j].reason);
    EXPECT_EQ(r.rejected(j).error(), want[j].error);
  }
  // The rest, as if the rejected hits were absent (indices stay the
  // request's): g is a copy of a.
  EXPECT_THAT(KeptIndices(r), ElementsAre(0, 8));
  ASSERT_EQ(r.dropped_size(), 1);
  EXPECT_EQ(r.dropped(0).index(), 7u);
  EXPECT_EQ(r.dropped(0).id(), "g");
  EXPECT_EQ(r.dropped(0).reason(), v1::DROP_REASON_DUPLICATE);
  EXPECT_EQ(r.dropped(0).duplicate_of_index(), 0u);
  EXPECT_EQ(r.dropped(0).duplicate_of(), "a");
  EXPECT_THAT(r.not_examined(), IsEmpty());
}

TEST_F(ResultsEngineTest, BadEmbeddingsAreRejectedAndTheOthersStillUseCosine) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  v1::DedupResultsRequest request;
  *request.add_hits() = Hit("a", kOtters, 0.9, {1, 0, 0});
  *request.add_hits() = Hit("nan", kWeather, 0.85, {nan, 0, 0});
  *request.add_hits() = Hit("inf", kWeather, 0.84, {0, inf, 0});
  *request.add_hits() = Hit("short", kWeather, 0.83, {0, 1});
  *request.add_hits() = Hit("none", kWeather, 0.82);
  *request.add_hits() = Hit("para", "A paraphrase of the otter text.", 0.8, {2, 0.1f, 0});
  *request.add_hits() = Hit("other", kWeather, 0.7, {0, 0, 1});
  ASSERT_OK_AND_ASSIGN(const v1::DedupResultsResponse r, Dedup(request));
  std::vector<std::string> errors;
  for (const v1::RejectedHit& h : r.rejected()) {
    EXPECT_EQ(h.error_reason(), v1::ERROR_REASON_BAD_HIT) << h.id();
    errors.push_back(absl::StrCat(h.index(), " ", h.id(), ": ", h.error()));
  }
  EXPECT_THAT(errors, ElementsAre("1 nan: embedding element 0 is NaN",
                                  "2 inf: embedding element 1 is infinite",
                                  "3 short: embedding has 2 dimensions, hit 0 has 3",
                                  "4 none: has no embedding but hit 0 has one (3 dimensions); send "
                                  "embeddings on all hits or none"));
  EXPECT_THAT(KeptIndices(r), ElementsAre(0, 6));
  ASSERT_EQ(r.dropped_size(), 1);
  EXPECT_EQ(r.dropped(0).index(), 5u);
  EXPECT_EQ(r.dropped(0).measure(), v1::DUPLICATE_MEASURE_COSINE);
}

TEST_F(ResultsEngineTest, TopKUnsetKeepsEverySurvivorAndZeroIsInvalid) {
  v1::DedupResultsRequest request;
  for (int i = 0; i < 8; ++i) {
    *request.add_hits() = Hit(absl::StrCat("h", i), absl::StrCat("passage number ", i, " here"),
                              1.0 - 0.1 * i, {}, i < 4 ? "https://one.example/" : "");
  }
  ASSERT_FALSE(request.has_top_k());
  ASSERT_OK_AND_ASSIGN(v1::DedupResultsResponse r, Dedup(request));
  // Default cap without top_k: 3, so h3 (the 4th of one.example) is dropped.
  EXPECT_EQ(r.per_source_cap(), 3u);
  EXPECT_THAT(KeptIndices(r), ElementsAre(0, 1, 2, 4, 5, 6, 7));
  ASSERT_EQ(r.dropped_size(), 1);
  EXPECT_EQ(r.dropped(0).index(), 3u);
  EXPECT_EQ(r.dropped(0).reason(), v1::DROP_REASON_SOURCE_CAP);
  EXPECT_THAT(r.not_examined(), IsEmpty());

  request.set_top_k(2);
  ASSERT_OK_AND_ASSIGN(r, Dedup(request));
  EXPECT_EQ(r.per_source_cap(), 2u);
  EXPECT_THAT(KeptIndices(r), ElementsAre(0, 1));
  EXPECT_THAT(r.not_examined(), ElementsAre(2, 3, 4, 5, 6, 7));

  request.set_top_k(0);
  EXPECT_THAT(Dedup(request),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("top_k: must be at least 1; omit it to keep all hits")));
}

TEST_F(ResultsEngineTest, RequestWideProblemsFailTheRequest) {
  auto with_bad_hit = [](v1::DedupResultsRequest r) {
    *r.add_hits() = Hit("ok", kOtters, 1);
    *r.add_hits() = Hit("bad", "", 1);
    return r;
  };
  struct Case {
    const char* name;
    v1::DedupResultsRequest request;
    const char* message;
  };
  v1::DedupResultsRequest jaccard;
  jaccard.set_min_jaccard(1.5);
  v1::DedupResultsRequest measure;
  measure.set_near_text_measure(static_cast<v1::NearTextMeasure>(7));
  v1::DedupResultsRequest cosine;
  cosine.set_min_cosine(-2);
  v1::DedupResultsRequest distance;
  distance.set_max_hamming_distance(65);
  v1::DedupResultsRequest too_many;
  for (size_t i = 0; i <= kMaxResultHits; ++i) *too_many.add_hits() = Hit("x", "", 1);
  const Case cases[] = {
      {"no hits", v1::DedupResultsRequest(), "the request has no hits"},
      {"too many hits", too_many, "10001 hits, more than the limit of 10000"},
      {"min_jaccard", with_bad_hit(jaccard), "min_jaccard 1.5 is outside (0, 1]"},
      {"min_cosine", with_bad_hit(cosine), "min_cosine -2 is outside [-1, 1]"},
      {"max_hamming_distance", with_bad_hit(distance), "max_hamming_distance 65 is outside 0..64"},
      {"measure", with_bad_hit(measure), "near_text_measure: unknown value 7"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(Dedup(c.request),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
  }
}

TEST_F(ResultsEngineTest, EveryHitRejectedIsStillAnAnswer) {
  v1::DedupResultsRequest request;
  *request.add_hits() = Hit("a", "", 1);
  *request.add_hits() = Hit("b", "\xff", 1);
  ASSERT_OK_AND_ASSIGN(const v1::DedupResultsResponse r, Dedup(request));
  EXPECT_EQ(r.kept_size(), 0);
  EXPECT_EQ(r.dropped_size(), 0);
  ASSERT_EQ(r.rejected_size(), 2);
  EXPECT_EQ(r.rejected(1).id(), "b");
  EXPECT_EQ(r.rejected(1).error(), "text: invalid UTF-8 at byte 0");
}

}  // namespace
}  // namespace dedupd
