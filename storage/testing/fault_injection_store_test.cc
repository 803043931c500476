// Tests of FaultInjectionStore over the in-memory stores: with no fault
// firing it passes the three conformance suites; each fault hits exactly
// the operations it names, with its status, before or after the wrapped
// call, for its count or seeded share of calls, until cleared.

#include "storage/testing/fault_injection_store.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/text/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/memory/memory_chunk_store.h"
#include "storage/memory/memory_content_store.h"
#include "storage/memory/memory_url_store.h"
#include "storage/testing/chunk_store_conformance.h"
#include "storage/testing/content_store_conformance.h"
#include "storage/testing/url_store_conformance.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {
namespace {

using ::testing::HasSubstr;

// The three memory stores behind one wrapper; `idle_fault` adds a fault
// that applies to every call and never fires (probability 0), so the
// conformance suites also run through the decision path.
class Wrapped {
 public:
  explicit Wrapped(bool idle_fault = false) {
    if (idle_fault) {
      StoreFault never;
      never.ops = StoreOpSet::All();
      never.probability = 0.0;
      never.seed = 7;
      EXPECT_THAT(store.InjectFault(never), IsOk());
    }
  }
  MemoryUrlStore urls;
  MemoryContentStore content{&urls, 3};
  MemoryChunkStore chunks{3};
  FaultInjectionStore store{&urls, &content, &chunks};
};

// --- Conformance with no fault firing ---------------------------------------

class WrappedUrlHarness : public UrlStoreHarness {
 public:
  explicit WrappedUrlHarness(bool idle) : w_(idle) {}
  UrlStore& store() override { return w_.store; }

 private:
  Wrapped w_;
};

class WrappedContentHarness : public ContentStoreHarness {
 public:
  explicit WrappedContentHarness(bool idle) : w_(idle) {}
  ContentStore& content() override { return w_.store; }
  UrlStore& urls() override { return w_.store; }
  absl::StatusOr<bool> Reopen() override { return false; }

 private:
  Wrapped w_;
};

class WrappedChunkHarness : public ChunkStoreHarness {
 public:
  explicit WrappedChunkHarness(bool idle) : w_(idle) {}
  ChunkStore& chunks() override { return w_.store; }
  absl::StatusOr<bool> Reopen() override { return false; }

 private:
  Wrapped w_;
};

INSTANTIATE_TEST_SUITE_P(
    FaultInjection, UrlStoreConformanceTest,
    ::testing::Values(UrlStoreBackend{"NoFault",
                                      []() -> absl::StatusOr<std::unique_ptr<UrlStoreHarness>> {
                                        return std::make_unique<WrappedUrlHarness>(false);
                                      }},
                      UrlStoreBackend{"IdleFault",
                                      []() -> absl::StatusOr<std::unique_ptr<UrlStoreHarness>> {
                                        return std::make_unique<WrappedUrlHarness>(true);
                                      }}),
    UrlStoreBackendName);

INSTANTIATE_TEST_SUITE_P(
    FaultInjection, ContentStoreConformanceTest,
    ::testing::Values(
        ContentStoreBackend{"NoFault",
                            []() -> absl::StatusOr<std::unique_ptr<ContentStoreHarness>> {
                              return std::make_unique<WrappedContentHarness>(false);
                            }},
        ContentStoreBackend{"IdleFault",
                            []() -> absl::StatusOr<std::unique_ptr<ContentStoreHarness>> {
                              return std::make_unique<WrappedContentHarness>(true);
                            }}),
    ContentStoreBackendName);

INSTANTIATE_TEST_SUITE_P(
    FaultInjection, ChunkStoreConformanceTest,
    ::testing::Values(ChunkStoreBackend{"NoFault",
                                        []() -> absl::StatusOr<std::unique_ptr<ChunkStoreHarness>> {
                                          return std::make_unique<WrappedChunkHarness>(false);
                                        }},
                      ChunkStoreBackend{"IdleFault",
                                        []() -> absl::StatusOr<std::unique_ptr<ChunkStoreHarness>> {
                                          return std::make_unique<WrappedChunkHarness>(true);
                                        }}),
    ChunkStoreBackendName);

// --- Helpers -------------------------------------------------------------------

const absl::Time kNow = absl::FromUnixSeconds(1'700'000'000);

ContentDoc Doc(const std::string& url, int text) {
  ContentDoc d;
  d.identity_url = url;
  d.fetched_url = url;
  d.sha256 = Sha256(absl::StrCat("text ", text));
  d.simhash = 0x0123456789abcdefULL * static_cast<uint64_t>(text + 1);
  return d;
}

ChunkDocument ChunkDoc(const std::string& url, int text) {
  ChunkDocument d;
  d.document_url = url;
  ChunkInput c;
  c.chunk_id = "0";
  c.sha256 = Sha256(absl::StrCat("chunk ", text));
  c.simhash = 0xfedcba9876543210ULL * static_cast<uint64_t>(text + 1);
  d.chunks.push_back(c);
  return d;
}

// Call runs one call of kind `op` against `store` with fresh inputs keyed
// by `i` and returns its status.
absl::Status Call(FaultInjectionStore& store, StoreOp op, int i) {
  const std::string url = absl::StrCat("https://a.example/", StoreOpName(op), "/", i);
  switch (op) {
    case StoreOp::kUrlRead: {
      std::vector<std::optional<absl::Time>> out;
      return store.LookupUrls({url}, &out);
    }
    case StoreOp::kUrlWrite: {
      std::vector<UrlClaim> out;
      return store.ClaimUrls({url}, kNow, &out);
    }
    case StoreOp::kContentRead:
    case StoreOp::kContentWrite: {
      std::vector<ContentOutcome> out;
      return store.CheckContent({Doc(url, i)}, op == StoreOp::kContentWrite, ContentLimits{}, kNow,
                                &out);
    }
    case StoreOp::kChunkRead:
    case StoreOp::kChunkWrite: {
      ChunkAnswer answer;
      return store.CheckChunks(ChunkDoc(url, i), op == StoreOp::kChunkWrite, kNow, &answer);
    }
  }
  return absl::InternalError("unknown op");
}

constexpr StoreOp kAllOps[] = {StoreOp::kUrlRead,      StoreOp::kUrlWrite,  StoreOp::kContentRead,
                               StoreOp::kContentWrite, StoreOp::kChunkRead, StoreOp::kChunkWrite};

// --- Which calls fail ----------------------------------------------------------

TEST(StoreOpSetTest, ReadsWritesAndUnions) {
  EXPECT_TRUE(StoreOpSet().empty());
  for (StoreOp op : kAllOps) {
    const bool is_write =
        op == StoreOp::kUrlWrite || op == StoreOp::kContentWrite || op == StoreOp::kChunkWrite;
    EXPECT_EQ(StoreOpSet::Writes().contains(op), is_write) << StoreOpName(op);
    EXPECT_EQ(StoreOpSet::Reads().contains(op), !is_write) << StoreOpName(op);
    EXPECT_TRUE(StoreOpSet::All().contains(op));
    EXPECT_TRUE(StoreOpSet(op).contains(op));
  }
  const StoreOpSet two = StoreOp::kUrlWrite | StoreOp::kChunkRead;
  EXPECT_TRUE(two.contains(StoreOp::kUrlWrite));
  EXPECT_TRUE(two.contains(StoreOp::kChunkRead));
  EXPECT_FALSE(two.contains(StoreOp::kUrlRead));
}

// Table: a fault on one operation fails that operation only, with the
// fault's code and message, and counts it; clearing it restores the call.
TEST(FaultInjectionStoreTest, FaultHitsExactlyItsOperation) {
  const absl::StatusCode codes[] = {absl::StatusCode::kUnavailable, absl::StatusCode::kInternal,
                                    absl::StatusCode::kResourceExhausted,
                                    absl::StatusCode::kDataLoss};
  int i = 0;
  for (StoreOp target : kAllOps) {
    for (absl::StatusCode code : codes) {
      SCOPED_TRACE(absl::StrCat(StoreOpName(target), " ", absl::StatusCodeToString(code)));
      Wrapped w;
      StoreFault fault;
      fault.ops = target;
      fault.code = code;
      fault.message = "injected: disk on fire";
      absl::StatusOr<int> id = w.store.InjectFault(fault);
      ASSERT_THAT(id, IsOk());
      for (StoreOp op : kAllOps) {
        const absl::Status s = Call(w.store, op, ++i);
        if (op == target) {
          EXPECT_THAT(s, StatusIs(code, "injected: disk on fire")) << StoreOpName(op);
          EXPECT_EQ(w.store.injected(op), 1u);
        } else {
          EXPECT_THAT(s, IsOk()) << StoreOpName(op);
          EXPECT_EQ(w.store.injected(op), 0u);
        }
        EXPECT_EQ(w.store.calls(op), 1u);
      }
      w.store.ClearFault(*id);
      EXPECT_EQ(w.store.active_faults(), 0u);
      EXPECT_THAT(Call(w.store, target, ++i), IsOk());
    }
  }
}

TEST(FaultInjectionStoreTest, FailedClaimBeforeCallRecordsNothing) {
  Wrapped w;
  StoreFault fault;
  fault.ops = StoreOpSet::Writes();
  ASSERT_THAT(w.store.InjectFault(fault), IsOk());
  std::vector<UrlClaim> claims;
  EXPECT_THAT(w.store.ClaimUrls({"u"}, kNow, &claims), StatusIs(absl::StatusCode::kUnavailable));
  std::vector<ContentOutcome> outcomes;
  EXPECT_THAT(w.store.CheckContent({Doc("d", 1)}, true, ContentLimits{}, kNow, &outcomes),
              StatusIs(absl::StatusCode::kUnavailable));
  // Reads go on while writes fail, and see nothing of the failed writes.
  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(w.store.LookupUrls({"u", "d"}, &found), IsOk());
  EXPECT_EQ(found[0], std::nullopt);
  EXPECT_EQ(found[1], std::nullopt);
  EXPECT_EQ(w.urls.size(), 0u);

  w.store.ClearFaults();
  // The retry is the first claim: NEW, once.
  ASSERT_THAT(w.store.ClaimUrls({"u"}, kNow, &claims), IsOk());
  EXPECT_TRUE(claims[0].is_new);
  ASSERT_THAT(w.store.ClaimUrls({"u"}, kNow, &claims), IsOk());
  EXPECT_FALSE(claims[0].is_new);
  ASSERT_THAT(w.store.CheckContent({Doc("d", 1)}, true, ContentLimits{}, kNow, &outcomes), IsOk());
  EXPECT_EQ(outcomes[0].verdict, ContentVerdict::kNew);
}

// kAfterCall: the write lands, the caller gets the error. A retry then
// finds the record: nobody is told NEW for it.
TEST(FaultInjectionStoreTest, FailedClaimAfterCallLandsButIsNotAcknowledged) {
  Wrapped w;
  StoreFault fault;
  fault.ops = StoreOp::kUrlWrite | StoreOp::kContentWrite;
  fault.code = absl::StatusCode::kInternal;
  fault.message = "injected: fsync failed";
  fault.when = StoreFault::When::kAfterCall;
  ASSERT_THAT(w.store.InjectFault(fault), IsOk());
  std::vector<UrlClaim> claims;
  EXPECT_THAT(w.store.ClaimUrls({"u"}, kNow, &claims),
              StatusIs(absl::StatusCode::kInternal, "injected: fsync failed"));
  std::vector<ContentOutcome> outcomes;
  EXPECT_THAT(w.store.CheckContent({Doc("d", 1)}, true, ContentLimits{}, kNow, &outcomes),
              StatusIs(absl::StatusCode::kInternal));
  EXPECT_EQ(w.store.injected_after_call(StoreOp::kUrlWrite), 1u);
  EXPECT_EQ(w.store.injected_after_call(StoreOp::kContentWrite), 1u);
  EXPECT_EQ(w.urls.size(), 2u);  // "u", and "d" through the content claim

  w.store.ClearFaults();
  ASSERT_THAT(w.store.ClaimUrls({"u"}, kNow + absl::Seconds(5), &claims), IsOk());
  EXPECT_FALSE(claims[0].is_new);
  EXPECT_EQ(claims[0].first_seen, kNow);  // the failed call's time
  ASSERT_THAT(w.store.CheckContent({Doc("d", 1)}, true, ContentLimits{}, kNow, &outcomes), IsOk());
  EXPECT_EQ(outcomes[0].verdict, ContentVerdict::kExactDuplicate);
}

TEST(FaultInjectionStoreTest, CountFaultFailsTheNextNThenGoes) {
  Wrapped w;
  StoreFault fault;
  fault.ops = StoreOp::kUrlWrite;
  fault.count = 3;
  ASSERT_THAT(w.store.InjectFault(fault), IsOk());
  // Other operations do not use up the count.
  for (int i = 0; i < 5; ++i) ASSERT_THAT(Call(w.store, StoreOp::kUrlRead, i), IsOk());
  for (int i = 0; i < 3; ++i) {
    EXPECT_THAT(Call(w.store, StoreOp::kUrlWrite, i), StatusIs(absl::StatusCode::kUnavailable));
  }
  EXPECT_EQ(w.store.active_faults(), 0u);
  for (int i = 3; i < 10; ++i) EXPECT_THAT(Call(w.store, StoreOp::kUrlWrite, i), IsOk());
  EXPECT_EQ(w.store.injected(StoreOp::kUrlWrite), 3u);
  EXPECT_EQ(w.store.calls(StoreOp::kUrlWrite), 10u);
}

// The failure pattern of a probability fault: a function of the seed and
// the call sequence, near p on average.
std::vector<bool> Pattern(double p, uint64_t seed, int n) {
  Wrapped w;
  StoreFault fault;
  fault.ops = StoreOp::kUrlRead;
  fault.probability = p;
  fault.seed = seed;
  EXPECT_THAT(w.store.InjectFault(fault), IsOk());
  std::vector<bool> failed;
  for (int i = 0; i < n; ++i) failed.push_back(!Call(w.store, StoreOp::kUrlRead, i).ok());
  return failed;
}

TEST(FaultInjectionStoreTest, ProbabilityFaultIsSeededAndNearP) {
  constexpr int kCalls = 2000;
  const std::vector<bool> a = Pattern(0.3, 42, kCalls);
  EXPECT_EQ(a, Pattern(0.3, 42, kCalls));  // same seed, same failures
  EXPECT_NE(a, Pattern(0.3, 43, kCalls));
  int failed = 0;
  for (bool f : a) failed += f ? 1 : 0;
  // Binomial(2000, 0.3): mean 600, sd 20.5; +/- 5 sd.
  EXPECT_GT(failed, 600 - 103);
  EXPECT_LT(failed, 600 + 103);
  for (bool f : Pattern(0.0, 1, 200)) EXPECT_FALSE(f);
}

TEST(FaultInjectionStoreTest, CountAndProbabilityCountOnlyFailures) {
  Wrapped w;
  StoreFault fault;
  fault.ops = StoreOp::kChunkWrite;
  fault.count = 5;
  fault.probability = 0.5;
  fault.seed = 9;
  ASSERT_THAT(w.store.InjectFault(fault), IsOk());
  int failed = 0;
  for (int i = 0; i < 200 && w.store.active_faults() > 0; ++i) {
    if (!Call(w.store, StoreOp::kChunkWrite, i).ok()) ++failed;
  }
  EXPECT_EQ(failed, 5);
  EXPECT_EQ(w.store.active_faults(), 0u);
  EXPECT_GT(w.store.calls(StoreOp::kChunkWrite), 5u);  // some were spared
}

TEST(FaultInjectionStoreTest, FirstInjectedFaultThatFiresDecides) {
  Wrapped w;
  StoreFault first;
  first.ops = StoreOp::kUrlWrite;
  first.code = absl::StatusCode::kResourceExhausted;
  first.message = "first";
  first.count = 1;
  StoreFault second;
  second.ops = StoreOpSet::Writes();
  second.code = absl::StatusCode::kInternal;
  second.message = "second";
  ASSERT_THAT(w.store.InjectFault(first), IsOk());
  absl::StatusOr<int> second_id = w.store.InjectFault(second);
  ASSERT_THAT(second_id, IsOk());
  EXPECT_THAT(Call(w.store, StoreOp::kUrlWrite, 1),
              StatusIs(absl::StatusCode::kResourceExhausted, "first"));
  EXPECT_THAT(Call(w.store, StoreOp::kUrlWrite, 2),
              StatusIs(absl::StatusCode::kInternal, "second"));
  EXPECT_THAT(Call(w.store, StoreOp::kContentWrite, 3),
              StatusIs(absl::StatusCode::kInternal, "second"));
  w.store.ClearFault(*second_id);
  w.store.ClearFault(*second_id);  // gone already: nothing
  EXPECT_THAT(Call(w.store, StoreOp::kUrlWrite, 4), IsOk());
}

TEST(FaultInjectionStoreTest, RejectsFaultsThatBreakTheirRequires) {
  Wrapped w;
  StoreFault ok_code;
  ok_code.code = absl::StatusCode::kOk;
  EXPECT_THAT(w.store.InjectFault(ok_code), StatusIs(absl::StatusCode::kInvalidArgument));
  for (double p : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    StoreFault f;
    f.probability = p;
    EXPECT_THAT(w.store.InjectFault(f), StatusIs(absl::StatusCode::kInvalidArgument)) << p;
  }
  EXPECT_EQ(w.store.active_faults(), 0u);
}

TEST(FaultInjectionStoreTest, MissingLayerFailsAndLimitsAreTheWrappedOnes) {
  MemoryUrlStore urls;
  MemoryChunkStore chunks(2);
  FaultInjectionStore store(&urls, nullptr, &chunks);
  std::vector<ContentOutcome> outcomes;
  EXPECT_THAT(store.CheckContent({Doc("d", 1)}, true, ContentLimits{}, kNow, &outcomes),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("content")));
  EXPECT_EQ(store.max_near_distance(), 2);
  EXPECT_FALSE(store.approximate());

  MemoryContentStore content(&urls, 3);
  FaultInjectionStore both(&urls, &content, &chunks);
  EXPECT_EQ(both.max_near_distance(), 2);  // the smaller
}

// Faults injected and cleared while claims run on other threads: every
// claim either succeeds (and its key is recorded) or fails with the
// injected status (and, before the call, its key is not); the failures
// are exactly the injected count.
TEST(FaultInjectionStoreTest, ConcurrentCallsAndToggling) {
  Wrapped w;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 400;
  std::vector<std::vector<int>> outcome(kThreads, std::vector<int>(kPerThread, -1));
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&w, &outcome, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::vector<UrlClaim> claims;
        const absl::Status s = w.store.ClaimUrls({absl::StrCat("k/", t, "/", i)}, kNow, &claims);
        if (s.ok()) {
          outcome[t][i] = claims[0].is_new ? 1 : 2;
        } else if (s.code() == absl::StatusCode::kUnavailable) {
          outcome[t][i] = 0;
        } else {
          outcome[t][i] = 3;
        }
      }
    });
  }
  std::thread toggler([&w, &done] {
    StoreFault fault;
    fault.ops = StoreOp::kUrlWrite;
    for (int round = 0; round < 10000 && !done.load(); ++round) {
      absl::StatusOr<int> id = w.store.InjectFault(fault);
      if (!id.ok()) return;
      std::this_thread::yield();
      w.store.ClearFault(*id);
      std::this_thread::yield();
    }
  });
  for (std::thread& t : threads) t.join();
  done.store(true);
  toggler.join();

  uint64_t failed = 0;
  std::vector<std::optional<absl::Time>> found;
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      const int o = outcome[t][i];
      ASSERT_TRUE(o == 0 || o == 1) << "claim " << t << "/" << i << " outcome " << o;
      ASSERT_THAT(w.urls.LookupUrls({absl::StrCat("k/", t, "/", i)}, &found), IsOk());
      EXPECT_EQ(found[0].has_value(), o == 1) << t << "/" << i;
      if (o == 0) ++failed;
    }
  }
  EXPECT_EQ(failed, w.store.injected(StoreOp::kUrlWrite));
  EXPECT_EQ(w.store.calls(StoreOp::kUrlWrite), uint64_t{kThreads * kPerThread});
}

}  // namespace
}  // namespace dedupd::testing
