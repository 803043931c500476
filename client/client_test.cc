#include "client/client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <fstream>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/testing/fake_dedup_service.h"
#include "gmock/gmock.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;

// Options that keep retry tests fast: backoff of about a millisecond.
ClientOptions FastOptions() {
  ClientOptions options;
  options.deadline = absl::Seconds(20);
  options.initial_backoff = absl::Milliseconds(1);
  options.max_backoff = absl::Milliseconds(2);
  return options;
}

std::vector<dedupd::v1::UrlItem> Items(size_t n,
                                       absl::string_view prefix = "https://example.com/") {
  std::vector<dedupd::v1::UrlItem> items(n);
  for (size_t i = 0; i < n; ++i) items[i].set_url(absl::StrCat(prefix, i));
  return items;
}

class ClientTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK_AND_ASSIGN(server_, FakeDedupServer::Start()); }

  std::unique_ptr<DedupClient> Connect(const ClientOptions& options) {
    absl::StatusOr<std::unique_ptr<DedupClient>> client =
        DedupClient::Connect(server_->address(), options);
    EXPECT_THAT(client, IsOk());
    return client.ok() ? std::move(client).value() : nullptr;
  }

  FakeDedupService& fake() { return server_->service(); }

  std::unique_ptr<FakeDedupServer> server_;
};

struct BatchCase {
  size_t items;
  size_t max_items;
  size_t want_requests;  // ceil(items / max_items)
};
void PrintTo(const BatchCase& c, std::ostream* os) {
  *os << c.items << " items, max " << c.max_items;
}

class ClientBatchingTest : public ClientTest, public ::testing::WithParamInterface<BatchCase> {};

TEST_P(ClientBatchingTest, SplitsIntoCeilRequestsAndKeepsOrder) {
  const BatchCase& c = GetParam();
  ClientOptions options = FastOptions();
  options.max_items_per_request = c.max_items;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  const std::vector<dedupd::v1::UrlItem> items = Items(c.items);

  std::vector<size_t> progress;
  ASSERT_OK_AND_ASSIGN(
      std::vector<dedupd::v1::UrlResult> results,
      client->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM, [&](size_t done, size_t total) {
        EXPECT_EQ(total, c.items);
        progress.push_back(done);
      }));

  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(c.want_requests));
  std::vector<std::string> sent;
  for (const FakeDedupService::Call& call : calls) {
    EXPECT_LE(call.urls.size(), c.max_items);
    EXPECT_FALSE(call.urls.empty());
    EXPECT_EQ(call.mode, dedupd::v1::CLAIM_MODE_CLAIM);
    sent.insert(sent.end(), call.urls.begin(), call.urls.end());
  }
  ASSERT_THAT(results, SizeIs(c.items));
  ASSERT_THAT(sent, SizeIs(c.items));
  for (size_t i = 0; i < c.items; ++i) {
    EXPECT_EQ(sent[i], items[i].url()) << "request order at " << i;
    EXPECT_EQ(results[i].normalized_url(), items[i].url()) << "result order at " << i;
    EXPECT_EQ(results[i].verdict(), dedupd::v1::URL_VERDICT_NEW);
  }
  ASSERT_THAT(progress, SizeIs(c.want_requests));
  for (size_t i = 0; i < progress.size(); ++i) {
    EXPECT_EQ(progress[i], std::min(c.items, (i + 1) * c.max_items));
  }
}

INSTANTIATE_TEST_SUITE_P(Table, ClientBatchingTest,
                         ::testing::Values(BatchCase{0, 3, 0}, BatchCase{1, 3, 1},
                                           BatchCase{3, 3, 1}, BatchCase{4, 3, 2},
                                           BatchCase{10, 3, 4}, BatchCase{7, 1, 7},
                                           BatchCase{2500, 1000, 3}, BatchCase{1000, 1000, 1}),
                         [](const ::testing::TestParamInfo<BatchCase>& info) {
                           return absl::StrCat(info.param.items, "ItemsMax", info.param.max_items);
                         });

TEST_F(ClientTest, DefaultOptionsAreDocumentedValues) {
  const ClientOptions options;
  EXPECT_EQ(options.deadline, absl::Seconds(30));
  EXPECT_EQ(options.max_attempts, 4);
  EXPECT_EQ(options.initial_backoff, absl::Milliseconds(100));
  EXPECT_EQ(options.max_items_per_request, 1000u);
  EXPECT_EQ(options.max_store_attempts, 4);
  EXPECT_EQ(options.max_store_retry_time, absl::Seconds(10));
  EXPECT_EQ(options.credentials, nullptr);
}

TEST_F(ClientTest, ByteLimitCutsRequestsButNeverSendsAnEmptyOne) {
  ClientOptions options = FastOptions();
  options.max_request_bytes = 100;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  std::vector<dedupd::v1::UrlItem> items = Items(5, std::string(30, 'a'));
  items[2].set_url(std::string(500, 'b'));  // alone over the limit

  ASSERT_OK_AND_ASSIGN(std::vector<dedupd::v1::UrlResult> results,
                       client->CheckUrls(items, dedupd::v1::CLAIM_MODE_PEEK));
  ASSERT_THAT(results, SizeIs(5));
  std::vector<size_t> sizes;
  for (const FakeDedupService::Call& call : fake().calls()) {
    sizes.push_back(call.urls.size());
  }
  EXPECT_THAT(sizes, ElementsAre(2, 1, 2));
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(results[i].normalized_url(), items[i].url());
  }
}

TEST_F(ClientTest, SendsModeAndBaseUrl) {
  std::unique_ptr<DedupClient> client = Connect(FastOptions());
  ASSERT_NE(client, nullptr);
  std::vector<dedupd::v1::UrlItem> items = Items(1);
  items[0].set_base_url("https://example.com/dir/");

  ASSERT_OK_AND_ASSIGN(auto peek, client->CheckUrls(items, dedupd::v1::CLAIM_MODE_PEEK));
  ASSERT_OK_AND_ASSIGN(auto claim, client->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM));
  ASSERT_OK_AND_ASSIGN(auto again, client->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM));
  EXPECT_EQ(peek[0].verdict(), dedupd::v1::URL_VERDICT_NEW);
  EXPECT_EQ(claim[0].verdict(), dedupd::v1::URL_VERDICT_NEW);
  EXPECT_EQ(again[0].verdict(), dedupd::v1::URL_VERDICT_SEEN);
  EXPECT_EQ(again[0].first_seen_time().seconds(), FakeDedupService::kFirstSeenSeconds);

  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(3));
  EXPECT_EQ(calls[0].mode, dedupd::v1::CLAIM_MODE_PEEK);
  EXPECT_EQ(calls[1].mode, dedupd::v1::CLAIM_MODE_CLAIM);
  EXPECT_THAT(calls[0].base_urls, ElementsAre("https://example.com/dir/"));
}

TEST_F(ClientTest, InvalidItemIsAResultNotAnError) {
  std::unique_ptr<DedupClient> client = Connect(FastOptions());
  ASSERT_NE(client, nullptr);
  std::vector<dedupd::v1::UrlItem> items = Items(3);
  items[1].set_url("bad:url");
  ASSERT_OK_AND_ASSIGN(auto results, client->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM));
  ASSERT_THAT(results, SizeIs(3));
  EXPECT_EQ(results[1].verdict(), dedupd::v1::URL_VERDICT_INVALID);
  EXPECT_EQ(results[1].error(), "fake: invalid url");
  EXPECT_EQ(results[2].verdict(), dedupd::v1::URL_VERDICT_NEW);
}

TEST_F(ClientTest, UnavailableIsRetriedThenSucceeds) {
  std::unique_ptr<DedupClient> client = Connect(FastOptions());  // 4 attempts
  ASSERT_NE(client, nullptr);
  fake().FailNext(absl::UnavailableError("restarting"));
  fake().FailNext(absl::UnavailableError("restarting"));

  ASSERT_OK_AND_ASSIGN(auto results, client->CheckUrls(Items(2), dedupd::v1::CLAIM_MODE_CLAIM));
  EXPECT_THAT(results, SizeIs(2));
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(3));
  EXPECT_EQ(calls[2].urls, calls[0].urls);  // the same request, resent
  // With the same claim id, so a retry after a lost reply is answered NEW.
  EXPECT_EQ(calls[0].url_request.claim_id().size(), 16u);
  EXPECT_EQ(calls[1].url_request.claim_id(), calls[0].url_request.claim_id());
  EXPECT_EQ(calls[2].url_request.claim_id(), calls[0].url_request.claim_id());
  ASSERT_OK_AND_ASSIGN(results, client->CheckUrls(Items(2), dedupd::v1::CLAIM_MODE_CLAIM));
  ASSERT_THAT(fake().calls(), SizeIs(4));
  EXPECT_NE(fake().calls()[3].url_request.claim_id(), calls[0].url_request.claim_id())
      << "another request, another claim id";
}

TEST_F(ClientTest, UrlCheckOptionsReachEveryRequest) {
  ClientOptions options = FastOptions();
  options.max_items_per_request = 2;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  UrlCheckOptions url_options;
  url_options.name_space = "crawl-9";
  url_options.lease_seconds = 120;
  url_options.claim_id = "job-7";
  ASSERT_OK_AND_ASSIGN(auto results,
                       client->CheckUrls(Items(5), dedupd::v1::CLAIM_MODE_CLAIM, url_options));
  EXPECT_THAT(results, SizeIs(5));
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(3));
  for (size_t k = 0; k < calls.size(); ++k) {
    EXPECT_EQ(calls[k].url_request.namespace_(), "crawl-9");
    EXPECT_EQ(calls[k].url_request.lease_seconds(), 120u);
    EXPECT_EQ(calls[k].url_request.claim_id(), absl::StrCat("job-7#", k));
    EXPECT_TRUE(calls[k].url_request.per_item_store_errors());
  }
  url_options.claim_id = std::string(49, 'c');
  EXPECT_THAT(client->CheckUrls(Items(1), dedupd::v1::CLAIM_MODE_CLAIM, url_options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the limit is 48")));
}

TEST_F(ClientTest, CompleteUrlsConfirmsInBatchesAndRetries) {
  ClientOptions options = FastOptions();
  options.max_items_per_request = 2;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  const std::vector<dedupd::v1::UrlItem> items = Items(3);
  ASSERT_OK_AND_ASSIGN(auto claimed, client->CheckUrls(absl::MakeConstSpan(items).subspan(0, 2),
                                                       dedupd::v1::CLAIM_MODE_CLAIM));
  fake().FailNext(absl::UnavailableError("blip"));
  ASSERT_OK_AND_ASSIGN(auto done, client->CompleteUrls(items, "ns", "id"));
  ASSERT_THAT(done, SizeIs(3));
  EXPECT_EQ(done[0].verdict(), dedupd::v1::COMPLETE_VERDICT_CONFIRMED);
  EXPECT_EQ(done[1].verdict(), dedupd::v1::COMPLETE_VERDICT_CONFIRMED);
  EXPECT_EQ(done[2].error_reason(), dedupd::v1::ERROR_REASON_NOT_CLAIMED);
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(4));  // the claim, a failed and a retried request, the rest
  EXPECT_EQ(calls[1].method, "CompleteUrls");
  EXPECT_EQ(calls[2].complete_request.namespace_(), "ns");
  EXPECT_EQ(calls[3].complete_request.claim_id(), "id");
  EXPECT_THAT(calls[3].urls, SizeIs(1));
}

// ------------------------------------------- per-URL store errors (Redis)

TEST_F(ClientTest, StoreUnavailableUrlsAreSentAgainAndAnsweredInTheirPlaces) {
  ClientOptions options = FastOptions();
  options.max_items_per_request = 3;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  const std::vector<dedupd::v1::UrlItem> items = Items(6);
  fake().StoreDown(items[1].url(), 1);  // answered on the second send
  fake().StoreDown(items[2].url(), 2);  // on the third
  fake().StoreDown(items[4].url(), 1);  // in the call's second request
  UrlCheckOptions url_options;
  url_options.name_space = "crawl-9";
  url_options.lease_seconds = 60;

  ASSERT_OK_AND_ASSIGN(std::vector<dedupd::v1::UrlResult> results,
                       client->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM, url_options));
  ASSERT_THAT(results, SizeIs(6));
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(results[i].normalized_url(), items[i].url()) << "result order at " << i;
    EXPECT_EQ(results[i].verdict(), dedupd::v1::URL_VERDICT_NEW) << i;
    EXPECT_EQ(results[i].error_reason(), dedupd::v1::ERROR_REASON_UNSPECIFIED) << i;
  }

  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(5));
  EXPECT_THAT(calls[0].urls, ElementsAre(items[0].url(), items[1].url(), items[2].url()));
  EXPECT_THAT(calls[1].urls, ElementsAre(items[1].url(), items[2].url()));
  EXPECT_THAT(calls[2].urls, ElementsAre(items[2].url()));
  EXPECT_THAT(calls[3].urls, ElementsAre(items[3].url(), items[4].url(), items[5].url()));
  EXPECT_THAT(calls[4].urls, ElementsAre(items[4].url()));
  for (size_t c = 0; c < calls.size(); ++c) {
    const dedupd::v1::CheckUrlRequest& sent = calls[c].url_request;
    EXPECT_TRUE(sent.per_item_store_errors()) << c;
    EXPECT_EQ(sent.mode(), dedupd::v1::CLAIM_MODE_CLAIM) << c;
    EXPECT_EQ(sent.namespace_(), "crawl-9") << c;
    EXPECT_EQ(sent.lease_seconds(), 60u) << c;
  }
  // A re-send carries its request's claim id; the next request has its own.
  EXPECT_EQ(calls[1].url_request.claim_id(), calls[0].url_request.claim_id());
  EXPECT_EQ(calls[2].url_request.claim_id(), calls[0].url_request.claim_id());
  EXPECT_EQ(calls[4].url_request.claim_id(), calls[3].url_request.claim_id());
  EXPECT_NE(calls[3].url_request.claim_id(), calls[0].url_request.claim_id());
}

TEST_F(ClientTest, ClaimWrittenBeforeTheStoreFailedIsNewOnTheResend) {
  std::unique_ptr<DedupClient> client = Connect(FastOptions());
  ASSERT_NE(client, nullptr);
  const std::vector<dedupd::v1::UrlItem> items = Items(2);
  // The node recorded the claim and its reply was lost: only the same claim
  // id gets NEW again; a re-send under a new id would be told SEEN.
  fake().StoreDown(items[0].url(), 1, /*after_write=*/true);
  ASSERT_OK_AND_ASSIGN(auto results, client->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM));
  EXPECT_EQ(results[0].verdict(), dedupd::v1::URL_VERDICT_NEW);
  EXPECT_EQ(results[1].verdict(), dedupd::v1::URL_VERDICT_NEW);
  ASSERT_THAT(fake().calls(), SizeIs(2));
  ASSERT_OK_AND_ASSIGN(auto again, client->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM));
  EXPECT_EQ(again[0].verdict(), dedupd::v1::URL_VERDICT_SEEN) << "another caller's claim";
}

TEST_F(ClientTest, UrlStillUnavailableAfterMaxStoreAttemptsComesBackAsSuch) {
  ClientOptions options = FastOptions();
  options.max_store_attempts = 3;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  std::vector<dedupd::v1::UrlItem> items = Items(4);
  items[3].set_url("bad:url");
  fake().StoreDown(items[1].url(), 0);  // down for good

  ASSERT_OK_AND_ASSIGN(auto results, client->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM));
  ASSERT_THAT(results, SizeIs(4));
  EXPECT_EQ(results[0].verdict(), dedupd::v1::URL_VERDICT_NEW);
  EXPECT_EQ(results[1].verdict(), dedupd::v1::URL_VERDICT_INVALID);
  EXPECT_EQ(results[1].error_reason(), dedupd::v1::ERROR_REASON_STORE_UNAVAILABLE);
  EXPECT_EQ(results[1].normalized_url(), items[1].url());
  EXPECT_EQ(results[1].error(),
            "fake: store node down (CheckUrl: still unavailable after 3 attempts)");
  EXPECT_EQ(results[2].verdict(), dedupd::v1::URL_VERDICT_NEW);
  EXPECT_EQ(results[3].error_reason(), dedupd::v1::ERROR_REASON_BAD_URL) << "a bad URL stays bad";
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(3));
  EXPECT_THAT(calls[1].urls, ElementsAre(items[1].url()));
  EXPECT_THAT(calls[2].urls, ElementsAre(items[1].url()));
}

TEST_F(ClientTest, StoreRetryTimeBoundsTheResends) {
  ClientOptions options = FastOptions();
  options.max_store_attempts = 1000;
  options.max_store_retry_time = absl::ZeroDuration();  // no round fits in it
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  const std::vector<dedupd::v1::UrlItem> items = Items(2);
  fake().StoreDown(items[0].url(), 0);
  ASSERT_OK_AND_ASSIGN(auto results, client->CheckUrls(items, dedupd::v1::CLAIM_MODE_PEEK));
  EXPECT_EQ(results[0].error_reason(), dedupd::v1::ERROR_REASON_STORE_UNAVAILABLE);
  EXPECT_THAT(results[0].error(), HasSubstr("after 1 attempts"));
  EXPECT_EQ(results[1].verdict(), dedupd::v1::URL_VERDICT_NEW);
  EXPECT_THAT(fake().calls(), SizeIs(1));

  // 50 ms of rounds 1-2 ms apart: more than one send, far fewer than 1,000.
  std::unique_ptr<DedupClient> bounded = [&] {
    ClientOptions o = options;
    o.max_store_retry_time = absl::Milliseconds(50);
    return Connect(o);
  }();
  ASSERT_NE(bounded, nullptr);
  const absl::Time start = absl::Now();
  ASSERT_OK_AND_ASSIGN(results, bounded->CheckUrls(items, dedupd::v1::CLAIM_MODE_PEEK));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(results[0].error_reason(), dedupd::v1::ERROR_REASON_STORE_UNAVAILABLE);
  const size_t sends = fake().calls().size() - 1;
  EXPECT_GT(sends, 1u);
  EXPECT_LT(sends, 1000u);
}

TEST_F(ClientTest, ResendThatFailsUnavailableLeavesTheUrlUnanswered) {
  ClientOptions options = FastOptions();
  options.max_attempts = 2;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  const std::vector<dedupd::v1::UrlItem> items = Items(3);
  fake().StoreDown(items[2].url(), 1);
  fake().AnswerNext();
  fake().FailNext(absl::UnavailableError("front end restarting"));
  fake().FailNext(absl::UnavailableError("front end restarting"));

  ASSERT_OK_AND_ASSIGN(auto results, client->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM));
  EXPECT_EQ(results[0].verdict(), dedupd::v1::URL_VERDICT_NEW);
  EXPECT_EQ(results[1].verdict(), dedupd::v1::URL_VERDICT_NEW);
  EXPECT_EQ(results[2].error_reason(), dedupd::v1::ERROR_REASON_STORE_UNAVAILABLE);
  EXPECT_THAT(fake().calls(), SizeIs(3));  // the request, one re-send tried twice

  // Any other error of a re-send fails the call.
  fake().StoreDown(items[0].url(), 1);
  fake().AnswerNext();
  fake().FailNext(absl::InvalidArgumentError("no"));
  EXPECT_THAT(client->CheckUrls(items, dedupd::v1::CLAIM_MODE_PEEK),
              StatusIs(absl::StatusCode::kInvalidArgument, "CheckUrl: no"));
}

TEST_F(ClientTest, CompleteUrlsSendsStoreUnavailableUrlsAgain) {
  ClientOptions options = FastOptions();
  options.max_store_attempts = 2;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  const std::vector<dedupd::v1::UrlItem> items = Items(3);
  ASSERT_OK_AND_ASSIGN(auto claimed, client->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM));
  fake().StoreDown(items[0].url(), 1);
  fake().StoreDown(items[2].url(), 0);

  ASSERT_OK_AND_ASSIGN(auto done, client->CompleteUrls(items, "ns", "id"));
  ASSERT_THAT(done, SizeIs(3));
  EXPECT_EQ(done[0].verdict(), dedupd::v1::COMPLETE_VERDICT_CONFIRMED);
  EXPECT_EQ(done[1].verdict(), dedupd::v1::COMPLETE_VERDICT_CONFIRMED);
  EXPECT_EQ(done[2].verdict(), dedupd::v1::COMPLETE_VERDICT_INVALID);
  EXPECT_EQ(done[2].error_reason(), dedupd::v1::ERROR_REASON_STORE_UNAVAILABLE);
  EXPECT_THAT(done[2].error(), HasSubstr("CompleteUrls: still unavailable after 2 attempts"));
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(3));  // the claim, the confirmation, one re-send
  EXPECT_THAT(calls[2].urls, ElementsAre(items[0].url(), items[2].url()));
  for (size_t c = 1; c < calls.size(); ++c) {
    EXPECT_TRUE(calls[c].complete_request.per_item_store_errors());
    EXPECT_EQ(calls[c].complete_request.namespace_(), "ns");
    EXPECT_EQ(calls[c].complete_request.claim_id(), "id");
  }
}

TEST(FakeDedupServiceTest, ARequestWithoutPerItemStoreErrorsFailsWhole) {
  // What a client that predates per_item_store_errors gets from the fake,
  // as from the server: the whole request UNAVAILABLE (which it retries).
  std::unique_ptr<FakeDedupServer> server;
  ASSERT_OK_AND_ASSIGN(server, FakeDedupServer::Start());
  server->service().StoreDown("https://example.com/0", 1);
  auto channel = grpc::CreateChannel(server->address(), grpc::InsecureChannelCredentials());
  auto stub = dedupd::v1::Dedup::NewStub(channel);
  dedupd::v1::CheckUrlRequest request;
  request.add_items()->set_url("https://example.com/0");
  request.add_items()->set_url("https://example.com/1");
  dedupd::v1::CheckUrlResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::Status status = stub->CheckUrl(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(status.error_message(), "fake: the store could not answer 1 URLs");
}

class ClientMaxAttemptsTest : public ClientTest, public ::testing::WithParamInterface<int> {};

TEST_P(ClientMaxAttemptsTest, UnavailableSurfacesAfterMaxAttempts) {
  const int max_attempts = GetParam();
  ClientOptions options = FastOptions();
  options.max_attempts = max_attempts;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < max_attempts + 5; ++i) {
    fake().FailNext(absl::UnavailableError("overloaded node"));
  }

  EXPECT_THAT(client->CheckUrls(Items(3), dedupd::v1::CLAIM_MODE_CLAIM),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(StartsWith("CheckUrl: overloaded node"),
                             HasSubstr(absl::StrCat("after ", max_attempts, " attempts")))));
  EXPECT_THAT(fake().calls(), SizeIs(max_attempts));
}

INSTANTIATE_TEST_SUITE_P(Table, ClientMaxAttemptsTest, ::testing::Values(1, 2, 4, 6));

class ClientNoRetryTest : public ClientTest,
                          public ::testing::WithParamInterface<absl::StatusCode> {};

TEST_P(ClientNoRetryTest, OtherCodesAreNotRetriedAndKeepTheirCode) {
  const absl::StatusCode code = GetParam();
  std::unique_ptr<DedupClient> client = Connect(FastOptions());
  ASSERT_NE(client, nullptr);
  for (int i = 0; i < 5; ++i) {
    fake().FailNext(absl::Status(code, "too many items: max 10000"));
  }

  EXPECT_THAT(client->CheckUrls(Items(3), dedupd::v1::CLAIM_MODE_CLAIM),
              StatusIs(code, "CheckUrl: too many items: max 10000"));
  EXPECT_THAT(fake().calls(), SizeIs(1));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ClientNoRetryTest,
    ::testing::Values(absl::StatusCode::kInvalidArgument, absl::StatusCode::kResourceExhausted,
                      absl::StatusCode::kInternal, absl::StatusCode::kFailedPrecondition,
                      absl::StatusCode::kPermissionDenied, absl::StatusCode::kUnauthenticated,
                      absl::StatusCode::kDeadlineExceeded, absl::StatusCode::kAborted,
                      absl::StatusCode::kUnknown, absl::StatusCode::kDataLoss),
    [](const ::testing::TestParamInfo<absl::StatusCode>& info) {
      std::string name = absl::StatusCodeToString(info.param);
      name.erase(std::remove(name.begin(), name.end(), '_'), name.end());
      return name;
    });

TEST_F(ClientTest, ErrorInALaterRequestFailsTheCall) {
  ClientOptions options = FastOptions();
  options.max_items_per_request = 2;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  fake().AnswerNext();
  fake().FailNext(absl::InvalidArgumentError("bad request"));

  EXPECT_THAT(client->CheckUrls(Items(5), dedupd::v1::CLAIM_MODE_CLAIM),
              StatusIs(absl::StatusCode::kInvalidArgument, "CheckUrl: bad request"));
  EXPECT_THAT(fake().calls(), SizeIs(2));  // the third request is not sent
}

TEST_F(ClientTest, DeadlineIsSetOnEveryCallIncludingRetries) {
  ClientOptions options = FastOptions();
  options.deadline = absl::Seconds(7);
  options.max_items_per_request = 2;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  fake().FailNext(absl::UnavailableError("blip"));

  ASSERT_OK_AND_ASSIGN(auto results, client->CheckUrls(Items(5), dedupd::v1::CLAIM_MODE_CLAIM));
  EXPECT_THAT(results, SizeIs(5));
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(4));  // 3 requests, the first one twice
  for (const FakeDedupService::Call& call : calls) {
    ASSERT_TRUE(call.deadline_left.has_value());
    // grpc-timeout is sent rounded up, hence the slack above 7 s.
    EXPECT_GT(*call.deadline_left, absl::Seconds(6));
    EXPECT_LE(*call.deadline_left, absl::Seconds(7) + absl::Milliseconds(100));
  }
}

TEST_F(ClientTest, DeadlineExceededSurfacesAndIsNotRetried) {
  ClientOptions options = FastOptions();
  options.deadline = absl::Milliseconds(200);
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  fake().HangNext();
  fake().HangNext();

  EXPECT_THAT(client->CheckUrls(Items(1), dedupd::v1::CLAIM_MODE_CLAIM),
              StatusIs(absl::StatusCode::kDeadlineExceeded, StartsWith("CheckUrl: ")));
  EXPECT_THAT(fake().calls(), SizeIs(1));
}

TEST_F(ClientTest, WrongResultCountIsInternal) {
  std::unique_ptr<DedupClient> client = Connect(FastOptions());
  ASSERT_NE(client, nullptr);
  fake().WrongCountNext();
  EXPECT_THAT(
      client->CheckUrls(Items(3), dedupd::v1::CLAIM_MODE_CLAIM),
      StatusIs(absl::StatusCode::kInternal, "CheckUrl: server answered 2 results for 3 items"));
}

TEST_F(ClientTest, EmptySpanMakesNoCall) {
  std::unique_ptr<DedupClient> client = Connect(FastOptions());
  ASSERT_NE(client, nullptr);
  ASSERT_OK_AND_ASSIGN(auto results, client->CheckUrls({}, dedupd::v1::CLAIM_MODE_CLAIM));
  EXPECT_TRUE(results.empty());
  EXPECT_TRUE(fake().calls().empty());
}

TEST_F(ClientTest, ConcurrentCallsOnOneClient) {
  ClientOptions options = FastOptions();
  options.max_items_per_request = 3;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  constexpr int kThreads = 4;
  constexpr int kCallsPerThread = 20;
  std::vector<std::thread> threads;
  std::vector<int> mismatches(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int c = 0; c < kCallsPerThread; ++c) {
        const std::vector<dedupd::v1::UrlItem> items =
            Items(7, absl::StrCat("https://t", t, ".example/", c, "/"));
        absl::StatusOr<std::vector<dedupd::v1::UrlResult>> results =
            client->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM);
        if (!results.ok() || results->size() != items.size()) {
          ++mismatches[t];
          continue;
        }
        for (size_t i = 0; i < items.size(); ++i) {
          if ((*results)[i].normalized_url() != items[i].url() ||
              (*results)[i].verdict() != dedupd::v1::URL_VERDICT_NEW) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(mismatches, ::testing::Each(0));
  EXPECT_THAT(fake().calls(), SizeIs(kThreads * kCallsPerThread * 3));
}

// ---------------------------------------------------------- CheckContent

std::vector<dedupd::v1::ContentItem> Docs(
    std::vector<std::pair<std::string, std::string>> url_text) {
  std::vector<dedupd::v1::ContentItem> docs;
  for (auto& [url, text] : url_text) {
    dedupd::v1::ContentItem& doc = docs.emplace_back();
    doc.set_url(url);
    doc.set_text(text);
  }
  return docs;
}

TEST_F(ClientTest, CheckContentRoundTrip) {
  ClientOptions options = FastOptions();
  options.max_items_per_request = 2;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  std::vector<dedupd::v1::ContentItem> docs = Docs({{"https://a.example/1", "hello world"},
                                                    {"https://a.example/2", "hello world"},
                                                    {"bad:x", "text"},
                                                    {"https://a.example/3", "hello world!!"},
                                                    {"https://a.example/1", "changed text"}});
  docs[1].set_canonical_url("https://a.example/canonical");
  docs[3].set_max_hamming_distance(2);

  std::vector<size_t> progress;
  ASSERT_OK_AND_ASSIGN(
      std::vector<dedupd::v1::ContentResult> r,
      client->CheckContent(docs, dedupd::v1::CLAIM_MODE_CLAIM,
                           [&](size_t done, size_t) { progress.push_back(done); }));
  ASSERT_THAT(r, SizeIs(5));
  EXPECT_EQ(r[0].verdict(), dedupd::v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r[0].owner_url(), "https://a.example/1");
  EXPECT_EQ(r[0].simhash(), FakeDedupService::FakeHash("hello world"));
  EXPECT_EQ(r[0].recrawl(), dedupd::v1::RECRAWL_STATUS_FIRST_SEEN);
  EXPECT_EQ(r[1].verdict(), dedupd::v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  EXPECT_EQ(r[1].canonical_url(), "https://a.example/canonical");
  EXPECT_EQ(r[1].owner_url(), "https://a.example/1");
  EXPECT_THAT(r[1].alias_urls(), ElementsAre("https://a.example/canonical"));
  EXPECT_EQ(r[1].content_hash(), r[0].content_hash());
  EXPECT_EQ(r[2].verdict(), dedupd::v1::CONTENT_VERDICT_INVALID);
  EXPECT_EQ(r[2].error(), "fake: invalid url");
  EXPECT_EQ(r[3].verdict(), dedupd::v1::CONTENT_VERDICT_NEAR_DUPLICATE);
  ASSERT_THAT(r[3].near_matches(), SizeIs(1));
  EXPECT_EQ(r[3].near_matches(0).url(), "https://a.example/1");
  EXPECT_EQ(r[3].near_matches(0).distance(), 2u);
  EXPECT_EQ(r[4].verdict(), dedupd::v1::CONTENT_VERDICT_NEW);
  EXPECT_EQ(r[4].recrawl(), dedupd::v1::RECRAWL_STATUS_CHANGED);
  EXPECT_THAT(progress, ElementsAre(2, 4, 5));

  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(3));
  std::vector<dedupd::v1::ContentItem> sent;
  for (const FakeDedupService::Call& call : calls) {
    EXPECT_EQ(call.method, "CheckContent");
    EXPECT_EQ(call.mode, dedupd::v1::CLAIM_MODE_CLAIM);
    sent.insert(sent.end(), call.content_items.begin(), call.content_items.end());
  }
  ASSERT_THAT(sent, SizeIs(docs.size()));
  for (size_t i = 0; i < docs.size(); ++i) {
    EXPECT_EQ(sent[i].SerializeAsString(), docs[i].SerializeAsString())
        << "item " << i << " sent as given, in order";
  }
  EXPECT_FALSE(sent[0].has_max_hamming_distance());
  EXPECT_TRUE(sent[3].has_max_hamming_distance());
}

TEST_F(ClientTest, CheckContentPeekRecordsNothing) {
  std::unique_ptr<DedupClient> client = Connect(FastOptions());
  ASSERT_NE(client, nullptr);
  const auto docs = Docs({{"https://a.example/", "same"}});
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK_AND_ASSIGN(auto r, client->CheckContent(docs, dedupd::v1::CLAIM_MODE_PEEK));
    ASSERT_THAT(r, SizeIs(1));
    EXPECT_EQ(r[0].verdict(), dedupd::v1::CONTENT_VERDICT_NEW);
    EXPECT_FALSE(r[0].has_first_seen_time());
  }
  EXPECT_EQ(fake().calls()[0].mode, dedupd::v1::CLAIM_MODE_PEEK);
}

TEST_F(ClientTest, CheckContentCutsRequestsByBytes) {
  ClientOptions options = FastOptions();
  options.max_request_bytes = 1000;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  const auto docs = Docs({{"https://a.example/1", std::string(400, 'a')},
                          {"https://a.example/2", std::string(400, 'b')},
                          {"https://a.example/3", std::string(5000, 'c')},
                          {"https://a.example/4", "d"}});
  ASSERT_OK_AND_ASSIGN(auto r, client->CheckContent(docs, dedupd::v1::CLAIM_MODE_CLAIM));
  EXPECT_THAT(r, SizeIs(4));
  std::vector<size_t> sizes;
  for (const FakeDedupService::Call& call : fake().calls()) {
    sizes.push_back(call.content_items.size());
  }
  EXPECT_THAT(sizes, ElementsAre(2, 1, 1));
}

TEST_F(ClientTest, CheckContentRetriesUnavailable) {
  std::unique_ptr<DedupClient> client = Connect(FastOptions());
  ASSERT_NE(client, nullptr);
  fake().FailNext(absl::UnavailableError("restarting"));
  fake().FailNext(absl::UnavailableError("restarting"));
  ASSERT_OK_AND_ASSIGN(auto r, client->CheckContent(Docs({{"https://a.example/", "t"}}),
                                                    dedupd::v1::CLAIM_MODE_CLAIM));
  EXPECT_EQ(r[0].verdict(), dedupd::v1::CONTENT_VERDICT_NEW);
  const std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(3));
  // Every attempt with the request's claim id, so a retry after a lost
  // reply is answered NEW.
  EXPECT_EQ(calls[0].content_request.claim_id().size(), 16u);
  EXPECT_EQ(calls[1].content_request.claim_id(), calls[0].content_request.claim_id());
  EXPECT_EQ(calls[2].content_request.claim_id(), calls[0].content_request.claim_id());
}

TEST_F(ClientTest, CheckContentRequestsCarryTheirOwnOrTheCallersClaimIds) {
  ClientOptions options = FastOptions();
  options.max_items_per_request = 1;
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  const std::vector<dedupd::v1::ContentItem> docs =
      Docs({{"https://a.example/1", "x"}, {"https://a.example/2", "y"}});
  ASSERT_OK_AND_ASSIGN(auto r, client->CheckContent(docs, dedupd::v1::CLAIM_MODE_CLAIM));
  std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_NE(calls[0].content_request.claim_id(), calls[1].content_request.claim_id())
      << "another request, another claim id";
  ContentCheckOptions content_options;
  content_options.name_space = "crawl-3";
  content_options.claim_id = "job-8";
  ASSERT_OK_AND_ASSIGN(r,
                       client->CheckContent(docs, dedupd::v1::CLAIM_MODE_CLAIM, content_options));
  calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(4));
  EXPECT_EQ(calls[2].content_request.claim_id(), "job-8#0");
  EXPECT_EQ(calls[3].content_request.claim_id(), "job-8#1");
  EXPECT_EQ(calls[3].content_request.namespace_(), "crawl-3");
  content_options.claim_id = std::string(49, 'c');
  EXPECT_THAT(client->CheckContent(docs, dedupd::v1::CLAIM_MODE_CLAIM, content_options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the limit is 48")));
}

TEST_F(ClientTest, CheckChunksSendsOneClaimIdOnEveryAttempt) {
  std::unique_ptr<DedupClient> client = Connect(FastOptions());
  ASSERT_NE(client, nullptr);
  dedupd::v1::CheckChunksRequest request;
  request.set_document_url("https://docs.example/a");
  request.add_chunks()->set_text("a chunk");
  fake().FailNext(absl::UnavailableError("restarting"));
  ASSERT_OK_AND_ASSIGN(auto response, client->CheckChunks(request));
  std::vector<FakeDedupService::Call> calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(2));
  EXPECT_EQ(calls[0].chunks_request.claim_id().size(), 16u);
  EXPECT_EQ(calls[1].chunks_request.claim_id(), calls[0].chunks_request.claim_id());
  // A claim id the caller sets is sent unchanged.
  request.set_claim_id("doc-a-v2");
  ASSERT_OK_AND_ASSIGN(response, client->CheckChunks(request));
  calls = fake().calls();
  ASSERT_THAT(calls, SizeIs(3));
  EXPECT_EQ(calls[2].chunks_request.claim_id(), "doc-a-v2");
}

struct ContentErrorCase {
  const char* name;
  void (*script)(FakeDedupService&);
  absl::StatusCode code;
  const char* message;
  size_t calls;
};
void PrintTo(const ContentErrorCase& c, std::ostream* os) { *os << c.name; }

class ClientCheckContentErrorTest : public ClientTest,
                                    public ::testing::WithParamInterface<ContentErrorCase> {};

TEST_P(ClientCheckContentErrorTest, Surfaces) {
  const ContentErrorCase& c = GetParam();
  ClientOptions options = FastOptions();
  options.max_attempts = 2;
  options.deadline = absl::Milliseconds(500);
  std::unique_ptr<DedupClient> client = Connect(options);
  ASSERT_NE(client, nullptr);
  c.script(fake());
  EXPECT_THAT(
      client->CheckContent(Docs({{"https://a.example/1", "x"}, {"https://a.example/2", "y"}}),
                           dedupd::v1::CLAIM_MODE_CLAIM),
      StatusIs(c.code, AllOf(StartsWith("CheckContent: "), HasSubstr(c.message))));
  EXPECT_THAT(fake().calls(), SizeIs(c.calls));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ClientCheckContentErrorTest,
    ::testing::Values(
        ContentErrorCase{"UnavailableGivesUp",
                         [](FakeDedupService& f) {
                           f.FailNext(absl::UnavailableError("down"));
                           f.FailNext(absl::UnavailableError("down"));
                         },
                         absl::StatusCode::kUnavailable, "down (gave up after 2 attempts)", 2},
        ContentErrorCase{"TooManyItemsNotRetried",
                         [](FakeDedupService& f) {
                           f.FailNext(absl::InvalidArgumentError("too many items: 2 > max 1"));
                         },
                         absl::StatusCode::kInvalidArgument, "too many items: 2 > max 1", 1},
        ContentErrorCase{"MessageTooLarge",
                         [](FakeDedupService& f) {
                           f.FailNext(absl::ResourceExhaustedError("message larger than max"));
                         },
                         absl::StatusCode::kResourceExhausted, "message larger than max", 1},
        ContentErrorCase{
            "NoContentLayer",
            [](FakeDedupService& f) { f.FailNext(absl::UnimplementedError("no content")); },
            absl::StatusCode::kUnimplemented, "no content", 1},
        ContentErrorCase{"WrongCount", [](FakeDedupService& f) { f.WrongCountNext(); },
                         absl::StatusCode::kInternal, "server answered 1 results for 2 items", 1},
        ContentErrorCase{"Deadline", [](FakeDedupService& f) { f.HangNext(); },
                         absl::StatusCode::kDeadlineExceeded, "", 1}),
    [](const ::testing::TestParamInfo<ContentErrorCase>& info) {
      return std::string(info.param.name);
    });

TEST_F(ClientTest, CheckContentEmptySpanMakesNoCall) {
  std::unique_ptr<DedupClient> client = Connect(FastOptions());
  ASSERT_NE(client, nullptr);
  ASSERT_OK_AND_ASSIGN(auto r, client->CheckContent({}, dedupd::v1::CLAIM_MODE_CLAIM));
  EXPECT_TRUE(r.empty());
  EXPECT_TRUE(fake().calls().empty());
}

TEST(ClientConnectTest, UnreachableServerIsUnavailableAfterRetries) {
  std::string address;
  {
    ASSERT_OK_AND_ASSIGN(auto server, FakeDedupServer::Start());
    address = server->address();
  }  // shut down: nothing listens on the port now
  ClientOptions options = FastOptions();
  options.max_attempts = 2;
  ASSERT_OK_AND_ASSIGN(auto client, DedupClient::Connect(address, options));
  EXPECT_THAT(client->CheckUrls(Items(1), dedupd::v1::CLAIM_MODE_PEEK),
              StatusIs(absl::StatusCode::kUnavailable,
                       AllOf(StartsWith("CheckUrl: "), HasSubstr("after 2 attempts"))));
}

TEST(ClientConnectTest, UnreadableTlsFileNamesIt) {
  ClientOptions options;
  options.tls_ca_file = "/nonexistent/dedupd-ca.pem";
  EXPECT_THAT(DedupClient::Connect("127.0.0.1:1", options),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/dedupd-ca.pem")));
}

TEST(ClientConnectTest, ReadBearerTokenFile) {
  const std::string dir = ::testing::TempDir();
  struct Case {
    const char* contents;
    absl::StatusCode want;
    const char* token;
  };
  const Case cases[] = {{"t0k\n", absl::StatusCode::kOk, "t0k"},
                        {"t0k\r\n", absl::StatusCode::kOk, "t0k"},
                        {"t0k", absl::StatusCode::kOk, "t0k"},
                        {"", absl::StatusCode::kInvalidArgument, ""},
                        {"\n", absl::StatusCode::kInvalidArgument, ""},
                        {"t 0k\n", absl::StatusCode::kInvalidArgument, ""}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.contents);
    const std::string path = dir + "/client_test_token";
    {
      std::ofstream out(path, std::ios::trunc | std::ios::binary);
      out << c.contents;
    }
    absl::StatusOr<std::string> got = ReadBearerTokenFile(path);
    EXPECT_EQ(got.status().code(), c.want) << got.status();
    if (got.ok()) {
      EXPECT_EQ(*got, c.token);
    }
  }
  EXPECT_THAT(ReadBearerTokenFile(dir + "/no_such_token"), StatusIs(absl::StatusCode::kNotFound));
}

struct BadOptionsCase {
  const char* name;
  std::string address;
  ClientOptions options;
};
void PrintTo(const BadOptionsCase& c, std::ostream* os) { *os << c.name; }

class ClientConnectBadOptionsTest : public ::testing::TestWithParam<BadOptionsCase> {};

TEST_P(ClientConnectBadOptionsTest, IsInvalidArgument) {
  EXPECT_THAT(DedupClient::Connect(GetParam().address, GetParam().options),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

BadOptionsCase Bad(const char* name, void (*edit)(ClientOptions&),
                   std::string address = "127.0.0.1:1") {
  ClientOptions options;
  edit(options);
  return BadOptionsCase{name, std::move(address), options};
}

INSTANTIATE_TEST_SUITE_P(
    Table, ClientConnectBadOptionsTest,
    ::testing::Values(
        Bad(
            "EmptyAddress", [](ClientOptions&) {}, ""),
        Bad("ZeroDeadline", [](ClientOptions& o) { o.deadline = absl::ZeroDuration(); }),
        Bad("InfiniteDeadline", [](ClientOptions& o) { o.deadline = absl::InfiniteDuration(); }),
        Bad("ZeroAttempts", [](ClientOptions& o) { o.max_attempts = 0; }),
        Bad("NegativeBackoff", [](ClientOptions& o) { o.initial_backoff = absl::Seconds(-1); }),
        Bad("MaxBelowInitialBackoff",
            [](ClientOptions& o) { o.max_backoff = absl::Milliseconds(1); }),
        Bad("ShrinkingBackoff", [](ClientOptions& o) { o.backoff_multiplier = 0.5; }),
        Bad("ZeroStoreAttempts", [](ClientOptions& o) { o.max_store_attempts = 0; }),
        Bad("NegativeStoreRetryTime",
            [](ClientOptions& o) { o.max_store_retry_time = absl::Milliseconds(-1); }),
        Bad("ZeroItems", [](ClientOptions& o) { o.max_items_per_request = 0; }),
        Bad("ZeroBytes", [](ClientOptions& o) { o.max_request_bytes = 0; }),
        Bad("ClientCertWithoutKey", [](ClientOptions& o) { o.tls_cert_file = "/c.pem"; }),
        Bad("ClientKeyWithoutCert", [](ClientOptions& o) { o.tls_key_file = "/c.key"; }),
        Bad("CredentialsAndTls",
            [](ClientOptions& o) {
              o.credentials = grpc::InsecureChannelCredentials();
              o.tls = true;
            }),
        Bad("TokenWithSpace", [](ClientOptions& o) { o.bearer_token = "a b"; }),
        Bad("TokenWithNewline", [](ClientOptions& o) { o.bearer_token = "ab\n"; })),
    [](const ::testing::TestParamInfo<BadOptionsCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace dedupd
