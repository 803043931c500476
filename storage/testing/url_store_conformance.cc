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
        absl::Status s = store().ClaimUrls(keys, now, &out);
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
      absl::Status s = store().LookupUrls(keys, &found);
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
