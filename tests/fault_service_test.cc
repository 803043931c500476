// Store faults through the real request path: DedupClient ->
// gRPC on 127.0.0.1:0 -> DedupService -> Engine -> FaultInjectionStore ->
// RocksDbStore in a temp directory. While a fault is set, the affected RPCs
// answer its code (UNAVAILABLE, INTERNAL, RESOURCE_EXHAUSTED, ...) and the
// others keep working; a failed write is never acknowledged; clearing the
// fault restores everything without a restart.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "core/text/simhash.h"
#include "core/url/url_normalizer.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "server/engine.h"
#include "server/service.h"
#include "server/worker_pool.h"
#include "storage/rocksdb/rocksdb_store.h"
#include "storage/testing/fault_injection_store.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr absl::Duration kDeadline = absl::Seconds(20);

// A StatusOr that is OK and holds `value`.
MATCHER_P(IsOkAndHolds, value, "is OK and holds " + ::testing::PrintToString(value)) {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status().ToString();
    return false;
  }
  *result_listener << "holds " << ::testing::PrintToString(*arg);
  return *arg == value;
}

class FaultServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("fault_service_");
    RocksDbStoreOptions options;
    options.path = dir_ + "/db";
    options.normalizer_version = UrlNormalizer::kVersion;
    options.block_cache_bytes = size_t{8} << 20;
    options.write_buffer_bytes = size_t{4} << 20;
    options.url_filter.expected_urls = 100'000;
    absl::StatusOr<std::unique_ptr<RocksDbStore>> store = RocksDbStore::Open(options);
    ASSERT_THAT(store, IsOk());
    store_ = *std::move(store);
    faults_ = std::make_unique<FaultInjectionStore>(store_.get(), store_.get(), store_.get());
    engine_ = std::make_unique<Engine>(&normalizer_, faults_.get(), &hasher_, faults_.get(),
                                       faults_.get(), EngineOptions{});
    workers_ = std::make_unique<WorkerPool>(2);
    service_ =
        std::make_unique<DedupService>(engine_.get(), /*max_concurrent_rpcs=*/64, workers_.get());
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    address_ = absl::StrCat("127.0.0.1:", port);
    client_ = Connect(/*max_attempts=*/1);
  }

  void TearDown() override {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
      server_->Wait();
    }
    if (workers_ != nullptr) workers_->Stop();
    if (store_ != nullptr) {
      EXPECT_THAT(store_->Close(), IsOk());
    }
    RemoveTree(dir_);
  }

  std::unique_ptr<DedupClient> Connect(int max_attempts) {
    ClientOptions options;
    options.deadline = kDeadline;
    options.max_attempts = max_attempts;
    options.initial_backoff = absl::Milliseconds(10);
    options.max_backoff = absl::Milliseconds(50);
    absl::StatusOr<std::unique_ptr<DedupClient>> c = DedupClient::Connect(address_, options);
    EXPECT_THAT(c, IsOk());
    return c.ok() ? *std::move(c) : nullptr;
  }

  int Inject(StoreFault fault) {
    absl::StatusOr<int> id = faults_->InjectFault(std::move(fault));
    EXPECT_THAT(id, IsOk());
    return id.ok() ? *id : 0;
  }

  // One URL claimed or peeked: its verdict, or the call's error.
  absl::StatusOr<v1::UrlVerdict> Url(const DedupClient& c, const std::string& url,
                                     v1::ClaimMode mode) {
    std::vector<v1::UrlItem> items(1);
    items[0].set_url(url);
    absl::StatusOr<std::vector<v1::UrlResult>> r = c.CheckUrls(items, mode);
    if (!r.ok()) return r.status();
    return (*r)[0].verdict();
  }
  absl::StatusOr<v1::ContentVerdict> Content(const std::string& url, const std::string& text,
                                             v1::ClaimMode mode) {
    std::vector<v1::ContentItem> items(1);
    items[0].set_url(url);
    items[0].set_text(text);
    absl::StatusOr<std::vector<v1::ContentResult>> r = client_->CheckContent(items, mode);
    if (!r.ok()) return r.status();
    return (*r)[0].verdict();
  }
  absl::StatusOr<v1::ChunkVerdict> Chunk(const std::string& url, const std::string& text,
                                         v1::ClaimMode mode) {
    v1::CheckChunksRequest request;
    request.set_document_url(url);
    request.add_chunks()->set_text(text);
    request.set_mode(mode);
    absl::StatusOr<v1::CheckChunksResponse> r = client_->CheckChunks(request);
    if (!r.ok()) return r.status();
    return r->results(0).verdict();
  }

  std::string dir_;
  UrlNormalizer normalizer_;
  SimHasher hasher_;
  std::unique_ptr<RocksDbStore> store_;
  std::unique_ptr<FaultInjectionStore> faults_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<WorkerPool> workers_;
  std::unique_ptr<DedupService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<DedupClient> client_;
};

// What one fault does to each RPC kind while it is set.
struct FaultCase {
  std::string name;
  StoreOpSet ops;
  absl::StatusCode code;
  StoreFault::When when;
};

void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.name; }

class FaultTableTest : public FaultServiceTest, public ::testing::WithParamInterface<FaultCase> {};

// For every RPC kind (URL, content, chunk; claim and peek): while the fault
// is set, the call fails with the fault's code exactly when the fault
// covers its store operation, and works otherwise; after it is cleared
// every call works. A claim that failed before its write is NEW on the
// retry, exactly once; one whose write landed (kAfterCall) is SEEN /
// EXACT_DUPLICATE: nobody is told NEW for it.
TEST_P(FaultTableTest, AffectedRpcsFailOthersWorkClearingRecovers) {
  const FaultCase& c = GetParam();
  // Records that exist before the fault, for the peeks.
  ASSERT_THAT(Url(*client_, "https://a.example/old", v1::CLAIM_MODE_CLAIM),
              IsOkAndHolds(v1::URL_VERDICT_NEW));
  ASSERT_THAT(Content("https://a.example/old-doc", "an old text of a page", v1::CLAIM_MODE_CLAIM),
              IsOkAndHolds(v1::CONTENT_VERDICT_NEW));
  ASSERT_THAT(Chunk("https://a.example/old-doc", "an old chunk of a page", v1::CLAIM_MODE_CLAIM),
              IsOkAndHolds(v1::CHUNK_VERDICT_NEW));

  StoreFault fault;
  fault.ops = c.ops;
  fault.code = c.code;
  fault.message = "injected: " + c.name;
  fault.when = c.when;
  const int id = Inject(fault);
  const bool after = c.when == StoreFault::When::kAfterCall;
  auto expect = [&](StoreOp op, const auto& result, const auto& ok_value) {
    if (c.ops.contains(op)) {
      EXPECT_THAT(result, StatusIs(c.code, AllOf(HasSubstr("injected: " + c.name))))
          << StoreOpName(op);
    } else {
      EXPECT_THAT(result, IsOkAndHolds(ok_value)) << StoreOpName(op);
    }
  };
  expect(StoreOp::kUrlWrite, Url(*client_, "https://a.example/new", v1::CLAIM_MODE_CLAIM),
         v1::URL_VERDICT_NEW);
  expect(StoreOp::kUrlRead, Url(*client_, "https://a.example/old", v1::CLAIM_MODE_PEEK),
         v1::URL_VERDICT_SEEN);
  expect(StoreOp::kContentWrite,
         Content("https://a.example/new-doc", "a new text of a page", v1::CLAIM_MODE_CLAIM),
         v1::CONTENT_VERDICT_NEW);
  expect(StoreOp::kContentRead,
         Content("https://a.example/x", "an old text of a page", v1::CLAIM_MODE_PEEK),
         v1::CONTENT_VERDICT_EXACT_DUPLICATE);
  expect(StoreOp::kChunkWrite,
         Chunk("https://a.example/new-doc", "a new chunk of a page", v1::CLAIM_MODE_CLAIM),
         v1::CHUNK_VERDICT_NEW);
  expect(StoreOp::kChunkRead,
         Chunk("https://a.example/y", "an old chunk of a page", v1::CLAIM_MODE_PEEK),
         v1::CHUNK_VERDICT_EXACT_DUPLICATE);
  // DedupResults needs no store: never affected.
  v1::DedupResultsRequest results;
  v1::ResultHit* hit = results.add_hits();
  hit->set_id("h1");
  hit->set_text("a hit");
  results.set_top_k(1);
  EXPECT_THAT(client_->DedupResults(results), IsOk());

  faults_->ClearFault(id);
  // No restart: the same server answers, and the writes that failed are
  // NEW now, once, unless they landed before failing.
  const bool url_failed = c.ops.contains(StoreOp::kUrlWrite);
  EXPECT_THAT(Url(*client_, "https://a.example/new", v1::CLAIM_MODE_CLAIM),
              IsOkAndHolds(url_failed && !after ? v1::URL_VERDICT_NEW : v1::URL_VERDICT_SEEN));
  EXPECT_THAT(Url(*client_, "https://a.example/new", v1::CLAIM_MODE_CLAIM),
              IsOkAndHolds(v1::URL_VERDICT_SEEN));
  const bool content_failed = c.ops.contains(StoreOp::kContentWrite);
  EXPECT_THAT(Content("https://a.example/new-doc", "a new text of a page", v1::CLAIM_MODE_CLAIM),
              IsOkAndHolds(content_failed && !after ? v1::CONTENT_VERDICT_NEW
                                                    : v1::CONTENT_VERDICT_EXACT_DUPLICATE));
  // A chunk claim's answer is the same for a re-sent document (its own
  // stored chunks never match), so a landed chunk write shows as NEW again;
  // what matters is that the call works.
  EXPECT_THAT(Chunk("https://a.example/new-doc", "a new chunk of a page", v1::CLAIM_MODE_CLAIM),
              IsOkAndHolds(v1::CHUNK_VERDICT_NEW));
  EXPECT_THAT(Url(*client_, "https://a.example/old", v1::CLAIM_MODE_PEEK),
              IsOkAndHolds(v1::URL_VERDICT_SEEN));
  absl::StatusOr<ConsistencyReport> report = store_->CheckConsistency();
  ASSERT_THAT(report, IsOk());
  EXPECT_TRUE(report->ok()) << report->problems.front();
}

INSTANTIATE_TEST_SUITE_P(
    Faults, FaultTableTest,
    ::testing::Values(
        FaultCase{"UrlWritesUnavailable", StoreOp::kUrlWrite, absl::StatusCode::kUnavailable,
                  StoreFault::When::kBeforeCall},
        FaultCase{"AllWritesInternal", StoreOpSet::Writes(), absl::StatusCode::kInternal,
                  StoreFault::When::kBeforeCall},
        FaultCase{"AllWritesDiskFull", StoreOpSet::Writes(), absl::StatusCode::kResourceExhausted,
                  StoreFault::When::kBeforeCall},
        FaultCase{"AllReadsUnavailable", StoreOpSet::Reads(), absl::StatusCode::kUnavailable,
                  StoreFault::When::kBeforeCall},
        FaultCase{"ContentAndChunkWritesDataLoss", StoreOp::kContentWrite | StoreOp::kChunkWrite,
                  absl::StatusCode::kDataLoss, StoreFault::When::kBeforeCall},
        FaultCase{"WritesLandThenFailInternal", StoreOpSet::Writes(), absl::StatusCode::kInternal,
                  StoreFault::When::kAfterCall},
        FaultCase{"WritesLandThenFailUnavailable", StoreOp::kUrlWrite | StoreOp::kContentWrite,
                  absl::StatusCode::kUnavailable, StoreFault::When::kAfterCall},
        FaultCase{"EverythingUnavailable", StoreOpSet::All(), absl::StatusCode::kUnavailable,
                  StoreFault::When::kBeforeCall}),
    [](const ::testing::TestParamInfo<FaultCase>& info) { return info.param.name; });

// The gRPC codes on the wire (server/grpc_status.cc), read with the raw
// stub: the injected absl code arrives as the gRPC code of the same name,
// with the engine's context and the store's message.
TEST_F(FaultServiceTest, WireCodesAreTheStoreCodes) {
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
  std::unique_ptr<v1::Dedup::Stub> stub = v1::Dedup::NewStub(channel);
  const struct {
    absl::StatusCode in;
    grpc::StatusCode out;
  } cases[] = {
      {absl::StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
      {absl::StatusCode::kInternal, grpc::StatusCode::INTERNAL},
      {absl::StatusCode::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
      {absl::StatusCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
  };
  for (const auto& c : cases) {
    StoreFault fault;
    fault.ops = StoreOp::kUrlWrite;
    fault.code = c.in;
    fault.message = "disk said no";
    const int id = Inject(fault);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    v1::CheckUrlRequest request;
    request.add_items()->set_url("https://wire.example/a");
    request.set_mode(v1::CLAIM_MODE_CLAIM);
    v1::CheckUrlResponse response;
    const grpc::Status s = stub->CheckUrl(&context, request, &response);
    EXPECT_EQ(s.error_code(), c.out) << absl::StatusCodeToString(c.in);
    EXPECT_EQ(s.error_message(), "claim URLs: disk said no");
    EXPECT_EQ(response.results_size(), 0);  // no answer rides on an error
    faults_->ClearFault(id);
  }
}

// The client retries UNAVAILABLE (and only that): a transient fault of the
// next two claims is invisible to a caller with 4 attempts, and the claim
// is NEW once; INTERNAL is not retried.
TEST_F(FaultServiceTest, ClientRetriesTransientFaultsOnly) {
  std::unique_ptr<DedupClient> retrying = Connect(/*max_attempts=*/4);
  StoreFault fault;
  fault.ops = StoreOp::kUrlWrite;
  fault.count = 2;
  Inject(fault);
  EXPECT_THAT(Url(*retrying, "https://retry.example/a", v1::CLAIM_MODE_CLAIM),
              IsOkAndHolds(v1::URL_VERDICT_NEW));
  EXPECT_EQ(faults_->injected(StoreOp::kUrlWrite), 2u);
  EXPECT_EQ(faults_->calls(StoreOp::kUrlWrite), 3u);

  fault.code = absl::StatusCode::kInternal;
  fault.count = 1;
  Inject(fault);
  EXPECT_THAT(Url(*retrying, "https://retry.example/b", v1::CLAIM_MODE_CLAIM),
              StatusIs(absl::StatusCode::kInternal));
  EXPECT_EQ(faults_->calls(StoreOp::kUrlWrite), 4u);  // not retried
  EXPECT_THAT(Url(*retrying, "https://retry.example/b", v1::CLAIM_MODE_CLAIM),
              IsOkAndHolds(v1::URL_VERDICT_NEW));
}

// The nasty case: the write landed, the error was reported after it (a
// failed fsync, a reply lost with the connection). The server answers the
// error, never NEW; the client's automatic retry of the UNAVAILABLE carries
// the same claim id, so it is answered NEW, with the failed attempt's
// first-seen time: the URL is neither lost (SEEN to the only caller that
// claimed it) nor told NEW to two callers.
TEST_F(FaultServiceTest, WriteThatLandedBeforeFailingIsNewToItsRetryOnly) {
  std::unique_ptr<DedupClient> retrying = Connect(/*max_attempts=*/4);
  StoreFault fault;
  fault.ops = StoreOp::kUrlWrite;
  fault.when = StoreFault::When::kAfterCall;
  fault.count = 1;
  Inject(fault);
  std::vector<v1::UrlItem> items(1);
  items[0].set_url("https://landed.example/a");
  absl::StatusOr<std::vector<v1::UrlResult>> r = retrying->CheckUrls(items, v1::CLAIM_MODE_CLAIM);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ((*r)[0].verdict(), v1::URL_VERDICT_NEW);
  EXPECT_GT((*r)[0].first_seen_time().seconds(), 0);
  // Any other request is answered SEEN, with the same first-seen time.
  absl::StatusOr<std::vector<v1::UrlResult>> again =
      retrying->CheckUrls(items, v1::CLAIM_MODE_CLAIM);
  ASSERT_THAT(again, IsOk());
  EXPECT_EQ((*again)[0].verdict(), v1::URL_VERDICT_SEEN);
  EXPECT_EQ((*again)[0].first_seen_time().seconds(), (*r)[0].first_seen_time().seconds());
  EXPECT_EQ((*again)[0].first_seen_time().nanos(), (*r)[0].first_seen_time().nanos());
  EXPECT_EQ(faults_->injected_after_call(StoreOp::kUrlWrite), 1u);
}

// A seeded 30% fault on every write under a stream of single-URL claims:
// each claim is NEW or fails UNAVAILABLE; after clearing, a second pass
// answers NEW exactly for the URLs whose claim failed. Across both passes
// every URL is NEW exactly once.
TEST_F(FaultServiceTest, RandomFaultsNeverLoseOrDoubleANew) {
  constexpr int kUrls = 150;
  StoreFault fault;
  fault.ops = StoreOpSet::Writes();
  fault.probability = 0.3;
  fault.seed = 2026;
  Inject(fault);
  std::vector<int> news(kUrls, 0);
  int failed = 0;
  for (int i = 0; i < kUrls; ++i) {
    absl::StatusOr<v1::UrlVerdict> v =
        Url(*client_, absl::StrCat("https://random.example/", i), v1::CLAIM_MODE_CLAIM);
    if (v.ok()) {
      ASSERT_EQ(*v, v1::URL_VERDICT_NEW) << i;
      ++news[i];
    } else {
      ASSERT_THAT(v, StatusIs(absl::StatusCode::kUnavailable)) << i;
      ++failed;
    }
  }
  EXPECT_EQ(static_cast<uint64_t>(failed), faults_->injected(StoreOp::kUrlWrite));
  EXPECT_GT(failed, 0);
  EXPECT_LT(failed, kUrls);
  faults_->ClearFaults();
  for (int i = 0; i < kUrls; ++i) {
    absl::StatusOr<v1::UrlVerdict> v =
        Url(*client_, absl::StrCat("https://random.example/", i), v1::CLAIM_MODE_CLAIM);
    ASSERT_THAT(v, IsOk()) << i;
    if (*v == v1::URL_VERDICT_NEW) ++news[i];
  }
  for (int i = 0; i < kUrls; ++i) EXPECT_EQ(news[i], 1) << "URL " << i;
}

}  // namespace
}  // namespace dedupd::testing
