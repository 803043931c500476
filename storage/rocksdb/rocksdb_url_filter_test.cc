// Tests of the URL Bloom front inside RocksDbStore: answers stay exact while
// the filter is missing, rebuilt, grown or reloaded; store reads are skipped
// for new URLs; the file is reused only when no write happened since.
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/rocksdb/rocksdb_store.h"
#include "storage/testing/test_temp_dir.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr absl::Duration kWait = absl::Seconds(60);

RocksDbStoreOptions Options(const std::string& path) {
  RocksDbStoreOptions o;
  o.path = path;
  o.normalizer_version = 1;
  o.block_cache_bytes = size_t{8} << 20;
  o.write_buffer_bytes = size_t{4} << 20;
  o.url_filter.expected_urls = 100'000;
  return o;
}

std::vector<std::string> Urls(int from, int to) {
  std::vector<std::string> urls;
  for (int i = from; i < to; ++i) {
    urls.push_back(absl::StrCat("https://www.example.com/page-", i));
  }
  return urls;
}

absl::Time T(int64_t s) { return absl::UnixEpoch() + absl::Seconds(s); }

// Claims `urls` and returns how many were new.
int ClaimCountNew(RocksDbStore* store, const std::vector<std::string>& urls, absl::Time now) {
  std::vector<UrlClaim> out;
  const absl::Status s = store->ClaimUrls(urls, now, &out);
  EXPECT_THAT(s, IsOk());
  int n = 0;
  for (const UrlClaim& c : out) n += c.is_new;
  return n;
}

class RocksDbUrlFilterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<TestTempDir> dir = TestTempDir::Make();
    ASSERT_THAT(dir.status(), IsOk());
    dir_.emplace(*std::move(dir));
    path_ = dir_->path() + "/db";
  }
  std::string FilterFile() const { return path_ + "/" + kUrlFilterFileName; }
  std::optional<TestTempDir> dir_;
  std::string path_;
};

TEST_F(RocksDbUrlFilterTest, NewUrlsSkipTheStoreRead) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store, RocksDbStore::Open(Options(path_)));
  ASSERT_TRUE(store->WaitForUrlFilter(kWait));
  EXPECT_EQ(ClaimCountNew(store.get(), Urls(0, 1000), T(1)), 1000);
  UrlFilterFront::Stats st = store->url_filter_stats();
  // Two looks per new key (before and under the claim lock); with 1,000
  // keys in a filter for 100,000 nearly all are skipped.
  EXPECT_GE(st.keys_skipped, 1990u);
  EXPECT_LE(st.keys_read, 10u);
  // Seen keys are read, and answered with their time.
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls(Urls(0, 10), T(2), &out), IsOk());
  for (const UrlClaim& c : out) {
    EXPECT_FALSE(c.is_new);
    EXPECT_EQ(c.first_seen, T(1));
  }
  EXPECT_EQ(store->url_filter_stats().keys_read, st.keys_read + 10);
  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store->LookupUrls({Urls(5, 6)[0], "https://never.example/"}, &found), IsOk());
  EXPECT_EQ(found[0], T(1));
  EXPECT_EQ(found[1], std::nullopt);
  EXPECT_EQ(store->url_filter_stats().keys, 1000u);
}

TEST_F(RocksDbUrlFilterTest, CleanCloseSavesTheFilterAndOpenLoadsIt) {
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store, RocksDbStore::Open(Options(path_)));
    ASSERT_TRUE(store->WaitForUrlFilter(kWait));
    EXPECT_THAT(store->url_filter_stats().load_result, StartsWith("rebuilding: no filter file"));
    EXPECT_EQ(ClaimCountNew(store.get(), Urls(0, 500), T(1)), 500);
    ASSERT_THAT(store->Close(), IsOk());
  }
  ASSERT_TRUE(std::filesystem::exists(FilterFile()));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store, RocksDbStore::Open(Options(path_)));
  const UrlFilterFront::Stats st = store->url_filter_stats();
  EXPECT_EQ(st.load_result, "loaded");
  EXPECT_TRUE(st.ready);
  EXPECT_EQ(st.keys, 500u);
  EXPECT_EQ(ClaimCountNew(store.get(), Urls(0, 600), T(2)), 100);
}

TEST_F(RocksDbUrlFilterTest, StaleFileIsRebuiltAndAnswersStayExact) {
  // Session 1 saves a filter holding 0..499.
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store, RocksDbStore::Open(Options(path_)));
    ASSERT_TRUE(store->WaitForUrlFilter(kWait));
    EXPECT_EQ(ClaimCountNew(store.get(), Urls(0, 500), T(1)), 500);
    ASSERT_THAT(store->Close(), IsOk());
  }
  const std::string saved = dir_->path() + "/saved.bloom";
  std::filesystem::copy_file(FilterFile(), saved);
  // Session 2 records 500..999, then "crashes": its filter file is the old
  // one (what a kill -9 leaves: the file of the last clean stop).
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store, RocksDbStore::Open(Options(path_)));
    EXPECT_EQ(ClaimCountNew(store.get(), Urls(500, 1000), T(2)), 500);
    ASSERT_THAT(store->Close(), IsOk());
  }
  std::filesystem::copy_file(saved, FilterFile(),
                             std::filesystem::copy_options::overwrite_existing);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store, RocksDbStore::Open(Options(path_)));
  EXPECT_THAT(store->url_filter_stats().load_result, HasSubstr("stale filter file"));
  // Exact at once, even before the rebuild finishes: nothing is new again.
  EXPECT_EQ(ClaimCountNew(store.get(), Urls(0, 1000), T(3)), 0);
  ASSERT_TRUE(store->WaitForUrlFilter(kWait));
  EXPECT_EQ(ClaimCountNew(store.get(), Urls(0, 1000), T(3)), 0);
  EXPECT_EQ(ClaimCountNew(store.get(), Urls(1000, 1100), T(3)), 100);
  EXPECT_EQ(store->url_filter_stats().keys, 1100u);
}

TEST_F(RocksDbUrlFilterTest, GrowsWithoutLosingKeys) {
  RocksDbStoreOptions o = Options(path_);
  o.url_filter.expected_urls = 1000;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store, RocksDbStore::Open(o));
  ASSERT_TRUE(store->WaitForUrlFilter(kWait));
  int fresh = 0;
  for (int b = 0; b < 20; ++b) {
    fresh += ClaimCountNew(store.get(), Urls(b * 500, (b + 1) * 500), T(1));
  }
  EXPECT_EQ(fresh, 10000);
  ASSERT_TRUE(store->WaitForUrlFilter(kWait));
  const UrlFilterFront::Stats st = store->url_filter_stats();
  // Grown by segments (1,000 + 2,000 + 4,000 + 8,000), without a scan.
  EXPECT_EQ(st.rebuilds, 1u);  // the first build only
  EXPECT_EQ(st.segments, 4u);
  EXPECT_GE(st.design_keys, 10000u);
  EXPECT_EQ(st.keys, 10000u);
  EXPECT_EQ(ClaimCountNew(store.get(), Urls(0, 10000), T(2)), 0);
  // The filter skipped the store read for most of the 10,000 new URLs, at
  // every size it passed through.
  EXPECT_GT(st.keys_skipped, 9000u);

  // Every segment is saved at Close and loaded at the next Open.
  ASSERT_THAT(store->Close(), IsOk());
  store.reset();
  ASSERT_OK_AND_ASSIGN(store, RocksDbStore::Open(o));
  const UrlFilterFront::Stats again = store->url_filter_stats();
  EXPECT_EQ(again.load_result, "loaded");
  EXPECT_EQ(again.segments, 4u);
  EXPECT_EQ(again.keys, 10000u);
  EXPECT_EQ(ClaimCountNew(store.get(), Urls(0, 10000), T(3)), 0);
  EXPECT_EQ(ClaimCountNew(store.get(), Urls(10000, 10100), T(3)), 100);
}

TEST_F(RocksDbUrlFilterTest, ClaimsRacingTheRebuildAreExact) {
  {
    RocksDbStoreOptions o = Options(path_);
    o.url_filter.enabled = false;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store, RocksDbStore::Open(o));
    EXPECT_EQ(store->url_filter_stats().load_result, "disabled");
    for (int b = 0; b < 40; ++b) {
      ASSERT_EQ(ClaimCountNew(store.get(), Urls(b * 1000, (b + 1) * 1000), T(1)), 1000);
    }
    ASSERT_THAT(store->Close(), IsOk());
  }
  EXPECT_FALSE(std::filesystem::exists(FilterFile()));
  // The rebuild scans 40,000 keys while 4 threads claim old and new ones;
  // every new key is new for exactly one of them.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store, RocksDbStore::Open(Options(path_)));
  std::atomic<int> fresh{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int b = 0; b < 20; ++b) {
        // Old keys 0..39,999 and new keys 40,000..49,999, overlapping.
        std::vector<std::string> urls = Urls(b * 2000 + t * 100, b * 2000 + t * 100 + 500);
        std::vector<std::string> more = Urls(40000 + b * 500, 40000 + (b + 1) * 500);
        urls.insert(urls.end(), more.begin(), more.end());
        fresh += ClaimCountNew(store.get(), urls, T(2));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(fresh, 10000);
  ASSERT_TRUE(store->WaitForUrlFilter(kWait));
  EXPECT_EQ(ClaimCountNew(store.get(), Urls(0, 50000), T(3)), 0);
}

TEST_F(RocksDbUrlFilterTest, ContentUrlsEnterTheFilter) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RocksDbStore> store, RocksDbStore::Open(Options(path_)));
  ASSERT_TRUE(store->WaitForUrlFilter(kWait));
  ContentDoc doc;
  doc.identity_url = "https://canonical.example/a";
  doc.fetched_url = "https://mirror.example/a";
  doc.sha256.fill(7);
  doc.simhash = 0x1234;
  doc.max_distance = 3;
  std::vector<ContentOutcome> outcomes;
  ASSERT_THAT(store->CheckContent({doc}, /*claim=*/true, ContentLimits(), T(1), &outcomes), IsOk());
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls({doc.identity_url, doc.fetched_url}, T(2), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  EXPECT_FALSE(out[1].is_new);
}

TEST_F(RocksDbUrlFilterTest, BadOptionsAreRejected) {
  RocksDbStoreOptions o = Options(path_);
  o.url_filter.false_positive_rate = 0;
  EXPECT_THAT(RocksDbStore::Open(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("false_positive_rate")));
  o = Options(path_);
  o.url_filter.expected_urls = 0;
  EXPECT_THAT(RocksDbStore::Open(o).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected_urls")));
}

}  // namespace
}  // namespace dedupd::testing
