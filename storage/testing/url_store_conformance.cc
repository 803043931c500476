#include "storage/testing/url_store_conformance.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {

void UrlStoreConformanceTest::SetUp() {
  ASSERT_OK_AND_ASSIGN(harness_, GetParam().make());
  ASSERT_NE(harness_, nullptr);
}

void UrlStoreConformanceTest::TearDown() { harness_.reset(); }

namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;
using ::testing::SizeIs;

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

// A ~100-byte key, the size of a typical normalized URL.
std::string UrlKey(size_t i) {
  return absl::StrCat("https://www.example.com/section/articles/2024/",
                      "some-fairly-long-slug-for-the-page-number-", i, "?id=", i * 7919);
}

TEST_P(UrlStoreConformanceTest, NewThenSeen) {
  std::vector<UrlClaim> out;
  ASSERT_THAT(store().ClaimUrls({"http://a/", "http://b/"}, T(100), &out), IsOk());
  ASSERT_THAT(out, SizeIs(2));
  EXPECT_TRUE(out[0].is_new);
  EXPECT_TRUE(out[1].is_new);
  EXPECT_EQ(out[0].first_seen, T(100));
  EXPECT_EQ(out[1].first_seen, T(100));

  ASSERT_THAT(store().ClaimUrls({"http://a/", "http://c/"}, T(200), &out), IsOk());
  ASSERT_THAT(out, SizeIs(2));
  EXPECT_FALSE(out[0].is_new);
  EXPECT_EQ(out[0].first_seen, Seen(T(100))) << "SEEN must return the first time";
  EXPECT_TRUE(out[1].is_new);
  EXPECT_EQ(out[1].first_seen, T(200));
}

TEST_P(UrlStoreConformanceTest, FirstSeenIsPreservedAndTruncatedToMicros) {
  const absl::Time now = absl::FromUnixNanos(1'700'000'000'123'456'789);
  const absl::Time want = absl::FromUnixMicros(1'700'000'000'123'456);
  std::vector<UrlClaim> out;
  ASSERT_THAT(store().ClaimUrls({"http://a/"}, now, &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
  EXPECT_EQ(out[0].first_seen, want);

  ASSERT_THAT(store().ClaimUrls({"http://a/"}, now + absl::Hours(24), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  EXPECT_EQ(out[0].first_seen, Seen(want));

  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store().LookupUrls({"http://a/"}, &found), IsOk());
  EXPECT_THAT(found, ElementsAre(Optional(Seen(want))));
}

TEST_P(UrlStoreConformanceTest, TimesBeforeTheEpochAndFarFutureRoundTrip) {
  const absl::Time past = absl::FromUnixMicros(-1'234'567);
  const absl::Time future = absl::FromUnixMicros(int64_t{4'102'444'800} * 1'000'000);
  std::vector<UrlClaim> out;
  ASSERT_THAT(store().ClaimUrls({"http://past/"}, past, &out), IsOk());
  ASSERT_THAT(store().ClaimUrls({"http://future/"}, future, &out), IsOk());
  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store().LookupUrls({"http://past/", "http://future/"}, &found), IsOk());
  EXPECT_THAT(found, ElementsAre(Optional(Seen(past)), Optional(Seen(future))));
}

TEST_P(UrlStoreConformanceTest, DuplicatesWithinABatchAreNewOnlyAtFirstPosition) {
  std::vector<UrlClaim> out;
  ASSERT_THAT(store().ClaimUrls({"http://b/", "http://a/", "http://b/", "http://a/", "http://b/"},
                                T(5), &out),
              IsOk());
  ASSERT_THAT(out, SizeIs(5));
  EXPECT_TRUE(out[0].is_new);
  EXPECT_TRUE(out[1].is_new);
  EXPECT_FALSE(out[2].is_new);
  EXPECT_FALSE(out[3].is_new);
  EXPECT_FALSE(out[4].is_new);
  for (const UrlClaim& c : out) EXPECT_EQ(c.first_seen, c.is_new ? T(5) : Seen(T(5)));
}

TEST_P(UrlStoreConformanceTest, RepeatedStoredKeyInABatchIsNeverNew) {
  std::vector<UrlClaim> out;
  ASSERT_THAT(store().ClaimUrls({"http://a/"}, T(1), &out), IsOk());
  ASSERT_THAT(store().ClaimUrls({"http://a/", "http://a/"}, T(2), &out), IsOk());
  ASSERT_THAT(out, SizeIs(2));
  EXPECT_FALSE(out[0].is_new);
  EXPECT_FALSE(out[1].is_new);
  EXPECT_EQ(out[0].first_seen, Seen(T(1)));
  EXPECT_EQ(out[1].first_seen, Seen(T(1)));
}

TEST_P(UrlStoreConformanceTest, LookupAnswersAbsentAndPresentAndRecordsNothing) {
  std::vector<UrlClaim> out;
  ASSERT_THAT(store().ClaimUrls({"http://a/"}, T(7), &out), IsOk());

  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store().LookupUrls({"http://x/", "http://a/", "http://x/"}, &found), IsOk());
  EXPECT_THAT(found, ElementsAre(std::nullopt, Optional(Seen(T(7))), std::nullopt));

  // The lookup did not record http://x/.
  ASSERT_THAT(store().ClaimUrls({"http://x/"}, T(8), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
}

TEST_P(UrlStoreConformanceTest, EmptyBatchesAnswerEmpty) {
  std::vector<UrlClaim> out(3);  // stale contents must be replaced
  ASSERT_THAT(store().ClaimUrls({}, T(1), &out), IsOk());
  EXPECT_THAT(out, IsEmpty());
  std::vector<std::optional<absl::Time>> found(3, T(1));
  ASSERT_THAT(store().LookupUrls({}, &found), IsOk());
  EXPECT_THAT(found, IsEmpty());
}

TEST_P(UrlStoreConformanceTest, EmptyKeyIsInvalidAndRecordsNothing) {
  std::vector<UrlClaim> out;
  EXPECT_THAT(store().ClaimUrls({"http://a/", ""}, T(1), &out),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  std::vector<std::optional<absl::Time>> found;
  EXPECT_THAT(store().LookupUrls({""}, &found), StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_THAT(store().LookupUrls({"http://a/"}, &found), IsOk());
  EXPECT_THAT(found, ElementsAre(std::nullopt));
}

TEST_P(UrlStoreConformanceTest, LargeBatch) {
  constexpr size_t kKeys = 10'000;
  std::vector<std::string> keys;
  for (size_t i = 0; i < kKeys; ++i) keys.push_back(UrlKey(i));

  std::vector<UrlClaim> out;
  ASSERT_THAT(store().ClaimUrls(keys, T(1), &out), IsOk());
  ASSERT_THAT(out, SizeIs(kKeys));
  for (size_t i = 0; i < kKeys; ++i) ASSERT_TRUE(out[i].is_new) << i;

  ASSERT_THAT(store().ClaimUrls(keys, T(2), &out), IsOk());
  ASSERT_THAT(out, SizeIs(kKeys));
  for (size_t i = 0; i < kKeys; ++i) {
    ASSERT_FALSE(out[i].is_new) << i;
    ASSERT_EQ(out[i].first_seen, Seen(T(1))) << i;
  }

  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store().LookupUrls(keys, &found), IsOk());
  ASSERT_THAT(found, SizeIs(kKeys));
  for (size_t i = 0; i < kKeys; ++i) ASSERT_EQ(found[i], Seen(T(1))) << i;
}

TEST_P(UrlStoreConformanceTest, BinaryAndLongKeysAreDistinctAndExact) {
  const std::vector<std::string> keys = {
      std::string("a\0b", 3),
      std::string("a\0c", 3),
      std::string("a", 1),
      std::string("\0", 1),
      std::string("\xff\xfe\x80", 3),
      std::string("\x01", 1),  // the URL tag byte itself
      std::string(65'536, 'x'),
      std::string(65'536, 'x') + "y",
      "http://a/ ",
      "http://a/",
  };
  std::vector<UrlClaim> out;
  ASSERT_THAT(store().ClaimUrls(keys, T(3), &out), IsOk());
  ASSERT_THAT(out, SizeIs(keys.size()));
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_TRUE(out[i].is_new) << i;

  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store().LookupUrls(keys, &found), IsOk());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(found[i], Seen(T(3))) << i;

  // Prefixes and near misses of stored keys are absent.
  ASSERT_THAT(store().LookupUrls({std::string("a\0", 2), std::string(65'535, 'x'), "http://a",
                                  std::string("\xff", 1)},
                                 &found),
              IsOk());
  EXPECT_THAT(found, ElementsAre(std::nullopt, std::nullopt, std::nullopt, std::nullopt));
}

// Many threads claim overlapping random sets; every key must be new for
// exactly one of them, and everyone must be told the winner's time.
TEST_P(UrlStoreConformanceTest, ConcurrentClaimsHaveExactlyOneWinnerPerKey) {
  constexpr int kThreads = 8;
  constexpr int kBatches = 20;
  constexpr int kBatchKeys = 500;
  constexpr size_t kPool = 20'000;

  std::vector<std::string> pool;
  pool.reserve(kPool);
  for (size_t i = 0; i < kPool; ++i) pool.push_back(UrlKey(i));

  struct Observation {
    size_t key;
    bool is_new;
    absl::Time first_seen;
    absl::Time now;
  };
  std::vector<std::vector<Observation>> seen(kThreads);
  std::vector<absl::Status> errors(kThreads);
  // A reader racing the writers: once it sees a key, the key's time must
  // never change.
  std::vector<std::pair<size_t, absl::Time>> peeked;
  absl::Status peek_error;
  std::atomic<bool> writers_done{false};

  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(1000 + t);
      std::uniform_int_distribution<size_t> pick(0, kPool - 1);
      for (int b = 0; b < kBatches; ++b) {
        std::vector<size_t> idx(kBatchKeys);
        std::vector<std::string> keys(kBatchKeys);
        for (int k = 0; k < kBatchKeys; ++k) {
          idx[k] = pick(rng);
          keys[k] = pool[idx[k]];
        }
        // Distinct per call, so a first_seen names the call that won.
        const absl::Time now = T(1 + t * 1000 + b);
        std::vector<UrlClaim> out;
        absl::Status s = FrontEnd(t).ClaimUrls(keys, now, &out);
        if (!s.ok()) {
          errors[t] = s;
          return;
        }
        for (int k = 0; k < kBatchKeys; ++k) {
          seen[t].push_back({idx[k], out[k].is_new, out[k].first_seen, now});
        }
      }
    });
  }
  std::thread reader([&] {
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<size_t> pick(0, kPool - 1);
    while (!writers_done.load()) {
      std::vector<size_t> idx(100);
      std::vector<std::string> keys(100);
      for (size_t k = 0; k < idx.size(); ++k) {
        idx[k] = pick(rng);
        keys[k] = pool[idx[k]];
      }
      std::vector<std::optional<absl::Time>> found;
      absl::Status s = FrontEnd(1).LookupUrls(keys, &found);
      if (!s.ok()) {
        peek_error = s;
        return;
      }
      for (size_t k = 0; k < idx.size(); ++k) {
        if (found[k].has_value()) peeked.emplace_back(idx[k], *found[k]);
      }
    }
  });
  for (std::thread& th : threads) th.join();
  writers_done.store(true);
  reader.join();
  for (int t = 0; t < kThreads; ++t) ASSERT_THAT(errors[t], IsOk()) << t;
  ASSERT_THAT(peek_error, IsOk());

  // key → the winning call's time; and the number of wins.
  absl::flat_hash_map<size_t, absl::Time> winner_time;
  absl::flat_hash_map<size_t, int> wins;
  for (const auto& thread_seen : seen) {
    for (const Observation& o : thread_seen) {
      if (!o.is_new) continue;
      ++wins[o.key];
      winner_time[o.key] = o.now;
      EXPECT_EQ(o.first_seen, o.now);
    }
  }
  size_t claimed_keys = 0;
  for (const auto& thread_seen : seen) {
    for (const Observation& o : thread_seen) {
      auto it = winner_time.find(o.key);
      ASSERT_NE(it, winner_time.end()) << "key " << o.key << " was claimed but nobody got is_new";
      EXPECT_EQ(o.first_seen, o.is_new ? it->second : Seen(it->second)) << "key " << o.key;
    }
  }
  for (const auto& [key, n] : wins) {
    ++claimed_keys;
    EXPECT_EQ(n, 1) << "key " << key << " was new for " << n << " callers";
  }
  EXPECT_GT(claimed_keys, kPool / 2);
  for (const auto& [key, t] : peeked) {
    auto it = winner_time.find(key);
    ASSERT_NE(it, winner_time.end()) << "lookup saw unclaimed key " << key;
    EXPECT_EQ(t, Seen(it->second)) << "key " << key;
  }

  // Afterwards every claimed key is present with its winner's time, and no
  // other key is.
  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store().LookupUrls(pool, &found), IsOk());
  for (size_t i = 0; i < kPool; ++i) {
    auto it = winner_time.find(i);
    if (it == winner_time.end()) {
      EXPECT_EQ(found[i], std::nullopt) << i;
    } else {
      EXPECT_EQ(found[i], Seen(it->second)) << i;
    }
  }
}

}  // namespace
}  // namespace dedupd::testing

namespace dedupd::testing {
namespace {

// Options of a claim in `name_space` with claim id `id` ("" for none) and a
// lease of `lease_seconds` (0 for none).
UrlClaimOptions Opts(absl::string_view name_space, absl::string_view id, int lease_seconds = 0) {
  UrlClaimOptions o;
  o.name_space = name_space;
  o.claim_id_hash = ClaimIdHash(id);
  o.lease = absl::Seconds(lease_seconds);
  return o;
}

TEST_P(UrlStoreConformanceTest, NamespacesNeverSeeEachOther) {
  std::vector<UrlClaim> out;
  for (absl::string_view ns : {"", "crawl-a", "crawl-b", "c"}) {
    SCOPED_TRACE(ns);
    ASSERT_THAT(store().Claim(Opts(ns, ""), {"http://a/", "http://b/"}, T(10), &out), IsOk());
    EXPECT_TRUE(out[0].is_new);
    EXPECT_TRUE(out[1].is_new);
  }
  ASSERT_THAT(store().Claim(Opts("crawl-a", ""), {"http://a/", "http://z/"}, T(20), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  EXPECT_EQ(out[0].first_seen, Seen(T(10)));
  EXPECT_TRUE(out[1].is_new);
  std::vector<std::optional<UrlRecord>> records;
  ASSERT_THAT(store().LookupRecords("crawl-b", {"http://z/", "http://a/"}, &records), IsOk());
  EXPECT_FALSE(records[0].has_value()) << "z was claimed in crawl-a only";
  EXPECT_TRUE(records[1].has_value());
  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store().LookupUrls({"http://z/"}, &found), IsOk());
  EXPECT_FALSE(found[0].has_value()) << "nor in the empty namespace";
}

TEST_P(UrlStoreConformanceTest, BadNamespaceIsInvalidArgumentAndRecordsNothing) {
  std::vector<UrlClaim> out;
  EXPECT_THAT(store().Claim(Opts(std::string(65, 'n'), ""), {"http://a/"}, T(1), &out),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the limit is 64")));
  EXPECT_THAT(store().Claim(Opts("a/b", ""), {"http://a/"}, T(1), &out),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("namespace: byte 1")));
  std::vector<std::optional<UrlRecord>> records;
  EXPECT_THAT(store().LookupRecords("a b", {"http://a/"}, &records),
              StatusIs(absl::StatusCode::kInvalidArgument));
  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store().LookupUrls({"http://a/"}, &found), IsOk());
  EXPECT_FALSE(found[0].has_value());
}

TEST_P(UrlStoreConformanceTest, ARetryWithTheSameClaimIdIsNewAgainWithTheSameTimes) {
  if (GetParam().approximate) GTEST_SKIP() << "an approximate store keeps no claim ids";
  std::vector<UrlClaim> out;
  const std::vector<std::string> keys = {"http://a/", "http://b/", "http://a/"};
  ASSERT_THAT(store().Claim(Opts("n", "req-1"), keys, T(100), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
  EXPECT_TRUE(out[1].is_new);
  EXPECT_FALSE(out[2].is_new) << "a repeat in the batch is new at its first position only";
  // The reply was lost: the retry, a minute later, gets the same answers.
  ASSERT_THAT(store().Claim(Opts("n", "req-1"), keys, T(160), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
  EXPECT_TRUE(out[1].is_new);
  EXPECT_FALSE(out[2].is_new);
  EXPECT_EQ(out[0].first_seen, T(100));
  EXPECT_EQ(out[1].last_claim, T(100));
  // Any other request, or none, sees them.
  ASSERT_THAT(store().Claim(Opts("n", "req-2"), {"http://a/"}, T(170), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  EXPECT_EQ(out[0].first_seen, T(100));
  ASSERT_THAT(store().Claim(Opts("n", ""), {"http://b/"}, T(170), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  // Past the retention window the id is forgotten.
  UrlClaimOptions short_retention = Opts("n", "req-1");
  short_retention.claim_id_retention = absl::Seconds(100);
  ASSERT_THAT(store().Claim(short_retention, {"http://a/"}, T(201), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  // The same id in another namespace claims there, independently.
  ASSERT_THAT(store().Claim(Opts("m", "req-1"), {"http://a/"}, T(300), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
  EXPECT_EQ(out[0].first_seen, T(300));
}

TEST_P(UrlStoreConformanceTest, AnUnconfirmedLeaseIsReclaimedAfterItEnds) {
  if (GetParam().approximate) {
    std::vector<UrlClaim> out;
    EXPECT_THAT(store().Claim(Opts("", "w1", 60), {"http://a/"}, T(100), &out),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("exact URL mode")));
    GTEST_SKIP() << "an approximate store keeps no leases";
  }
  std::vector<UrlClaim> out;
  ASSERT_THAT(store().Claim(Opts("", "w1", 60), {"http://a/", "http://b/"}, T(100), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
  EXPECT_EQ(out[0].lease_until, T(160));
  // While the lease is live, every other claimant sees it held.
  ASSERT_THAT(store().Claim(Opts("", "w2", 60), {"http://a/", "http://b/"}, T(159), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  EXPECT_EQ(out[0].lease_until, T(160));
  // w1 confirms b only, then crashes.
  std::vector<UrlCompletion> done;
  ASSERT_THAT(store().Complete("", ClaimIdHash("w1"), {"http://b/"}, &done), IsOk());
  EXPECT_THAT(done, ElementsAre(UrlCompletion::kConfirmed));
  // After the lease, a is re-offered to the next claimant; b stays seen.
  ASSERT_THAT(store().Claim(Opts("", "w2", 60), {"http://a/", "http://b/"}, T(160), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
  EXPECT_TRUE(out[0].reclaimed);
  EXPECT_EQ(out[0].first_seen, T(100));
  EXPECT_EQ(out[0].lease_until, T(220));
  EXPECT_FALSE(out[1].is_new);
  EXPECT_FALSE(out[1].lease_until.has_value()) << "b is confirmed";
  // A third claimant, while w2 holds it: seen.
  ASSERT_THAT(store().Claim(Opts("", "w3", 60), {"http://a/"}, T(161), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  // w1 comes back: its lease is lost; w2 confirms exactly once.
  ASSERT_THAT(store().Complete("", ClaimIdHash("w1"), {"http://a/"}, &done), IsOk());
  EXPECT_THAT(done, ElementsAre(UrlCompletion::kLeaseLost));
  ASSERT_THAT(store().Complete("", ClaimIdHash("w2"), {"http://a/", "http://a/"}, &done), IsOk());
  EXPECT_THAT(done, ElementsAre(UrlCompletion::kConfirmed, UrlCompletion::kAlreadyConfirmed));
  ASSERT_THAT(store().Complete("", ClaimIdHash("w2"), {"http://a/"}, &done), IsOk());
  EXPECT_THAT(done, ElementsAre(UrlCompletion::kAlreadyConfirmed));
  // Confirmed: seen for good, long after the lease.
  ASSERT_THAT(store().Claim(Opts("", "w4", 60), {"http://a/"}, T(100000), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  EXPECT_EQ(out[0].last_claim, T(160));
}

TEST_P(UrlStoreConformanceTest, CompleteOfANeverClaimedUrlIsNotClaimed) {
  if (GetParam().approximate) {
    std::vector<UrlCompletion> done;
    EXPECT_THAT(store().Complete("", 0, {"http://a/"}, &done),
                StatusIs(absl::StatusCode::kUnimplemented));
    GTEST_SKIP() << "an approximate store keeps no leases";
  }
  std::vector<UrlClaim> out;
  ASSERT_THAT(store().Claim(Opts("x", "w", 30), {"http://a/"}, T(1), &out), IsOk());
  std::vector<UrlCompletion> done;
  ASSERT_THAT(store().Complete("y", 0, {"http://a/", "http://never/"}, &done), IsOk());
  EXPECT_THAT(done, ElementsAre(UrlCompletion::kNotClaimed, UrlCompletion::kNotClaimed))
      << "a lease of namespace x is not confirmed from y";
  // Without a claim id any pending lease is confirmed; a plain claim had none.
  ASSERT_THAT(store().ClaimUrls({"http://plain/"}, T(1), &out), IsOk());
  ASSERT_THAT(store().Complete("x", 0, {"http://a/"}, &done), IsOk());
  EXPECT_THAT(done, ElementsAre(UrlCompletion::kConfirmed));
  ASSERT_THAT(store().Complete("", 0, {"http://plain/"}, &done), IsOk());
  EXPECT_THAT(done, ElementsAre(UrlCompletion::kAlreadyConfirmed));
  EXPECT_THAT(store().Complete("", 0, {""}, &done), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST_P(UrlStoreConformanceTest, AConfirmedUrlIsDueAfterItsRevisitInterval) {
  if (GetParam().approximate) GTEST_SKIP() << "an approximate store keeps no claim times";
  std::vector<UrlClaim> out;
  ASSERT_THAT(store().ClaimUrls({"http://a/", "http://b/"}, T(100), &out), IsOk());
  const std::vector<absl::Duration> revisit = {absl::Seconds(50), absl::InfiniteDuration()};
  UrlClaimOptions o = Opts("", "r1");
  o.revisit_after = revisit;
  ASSERT_THAT(store().Claim(o, {"http://a/", "http://b/"}, T(149), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  ASSERT_THAT(store().Claim(o, {"http://a/", "http://b/"}, T(150), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
  EXPECT_TRUE(out[0].due);
  EXPECT_EQ(out[0].first_seen, T(100));
  EXPECT_EQ(out[0].last_claim, T(100)) << "DUE reports the claim before this one";
  EXPECT_FALSE(out[1].is_new) << "b is never revisited";
  // The DUE claim is the last claim now: not due again until 50 s later.
  o.claim_id_hash = ClaimIdHash("r2");
  ASSERT_THAT(store().Claim(o, {"http://a/"}, T(199), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  EXPECT_EQ(out[0].last_claim, T(150));
  ASSERT_THAT(store().Claim(o, {"http://a/"}, T(200), &out), IsOk());
  EXPECT_TRUE(out[0].due);
}

// Claimants with leases and their own claim ids race over one key set:
// each key is held by exactly one of them at a time, and a retry of a
// request is never a second winner.
TEST_P(UrlStoreConformanceTest, ConcurrentLeasedClaimsHaveExactlyOneWinnerPerKey) {
  if (GetParam().approximate) GTEST_SKIP() << "an approximate store keeps no leases";
  constexpr int kThreads = 6;
  constexpr size_t kKeys = 3000;
  std::vector<std::string> keys;
  for (size_t i = 0; i < kKeys; ++i) keys.push_back(UrlKey(i));
  std::vector<std::vector<size_t>> won(kThreads);
  std::vector<absl::Status> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const UrlClaimOptions o = Opts("race", absl::StrCat("worker-", t), 600);
      std::vector<UrlClaim> out;
      for (int attempt = 0; attempt < 2; ++attempt) {  // the second is a retry
        errors[t] = FrontEnd(t).Claim(o, keys, T(10), &out);
        if (!errors[t].ok()) return;
        if (attempt == 1) break;
        for (size_t k = 0; k < kKeys; ++k) {
          if (out[k].is_new) won[t].push_back(k);
        }
      }
      // The retry answers exactly the first attempt's winners as new.
      size_t again = 0;
      for (size_t k = 0; k < kKeys; ++k) again += out[k].is_new ? 1 : 0;
      if (again != won[t].size()) {
        errors[t] = absl::InternalError(
            absl::StrCat("retry of worker ", t, ": ", again, " new, first ", won[t].size()));
      }
    });
  }
  for (std::thread& th : threads) th.join();
  std::vector<int> winners(kKeys, 0);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_THAT(errors[t], IsOk()) << t;
    for (size_t k : won[t]) ++winners[k];
  }
  for (size_t k = 0; k < kKeys; ++k) ASSERT_EQ(winners[k], 1) << k;
}

}  // namespace
}  // namespace dedupd::testing
