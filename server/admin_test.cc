// Tests of AdminOps::Forget against a real RocksDbStore (no gRPC): the
// batch limit, URLs normalized by the server's normalizer, a per-URL error
// that leaves the rest forgotten, a URL the store does not know, and a
// cancelled call that stops between URLs. The promotions and the texts are
// covered by storage/rocksdb/rocksdb_forget_test.cc and tests/e2e_admin_test.cc.
#include "server/admin.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/url/url_normalizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/rocksdb/rocksdb_store.h"
#include "storage/testing/test_temp_dir.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::dedupd::testing::TestTempDir;
using ::testing::HasSubstr;

class AdminForgetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(dir_, TestTempDir::Make());
    RocksDbStoreOptions options;
    options.path = dir_->path() + "/db";
    options.normalizer_version = UrlNormalizer::kVersion;
    options.block_cache_bytes = size_t{8} << 20;
    options.write_buffer_bytes = size_t{4} << 20;
    ASSERT_OK_AND_ASSIGN(store_, RocksDbStore::Open(options));
    ops_ = std::make_unique<AdminOps>(store_.get(), nullptr, &normalizer_, absl::Now());
  }
  void TearDown() override {
    if (store_ != nullptr) {
      EXPECT_THAT(store_->Close(), IsOk());
    }
  }

  void Claim(const std::vector<std::string>& keys) {
    std::vector<UrlClaim> out;
    ASSERT_THAT(store_->ClaimUrls(keys, absl::Now(), &out), IsOk());
  }
  bool Seen(const std::string& key) {
    std::vector<std::optional<absl::Time>> out;
    EXPECT_THAT(store_->LookupUrls({key}, &out), IsOk());
    return out.size() == 1 && out[0].has_value();
  }

  std::optional<TestTempDir> dir_;
  UrlNormalizer normalizer_;
  std::unique_ptr<RocksDbStore> store_;
  std::unique_ptr<AdminOps> ops_;
};

TEST_F(AdminForgetTest, BatchLimits) {
  v1::ForgetResponse response;
  EXPECT_THAT(ops_->Forget(v1::ForgetRequest(), &response),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
  v1::ForgetRequest request;
  for (int i = 0; i < kMaxForgetUrls; ++i) request.add_urls(absl::StrCat("http://a.example/", i));
  EXPECT_THAT(ops_->Forget(request, &response), IsOk());
  EXPECT_EQ(response.results_size(), kMaxForgetUrls);
  request.add_urls("http://a.example/one-too-many");
  Claim({"http://a.example/0"});
  EXPECT_THAT(ops_->Forget(request, &response),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit of 100")));
  EXPECT_TRUE(Seen("http://a.example/0"));  // nothing forgotten
}

TEST_F(AdminForgetTest, NormalizesAndReportsEachUrl) {
  Claim({"http://a.example/x", "http://a.example/y"});
  v1::ForgetRequest request;
  request.add_urls("HTTP://A.example:80/x#frag");  // normalizes to http://a.example/x
  request.add_urls("mailto:someone@a.example");    // does not normalize
  request.add_urls("http://a.example/never-seen");
  request.add_urls("http://a.example/y");
  v1::ForgetResponse response;
  ASSERT_THAT(ops_->Forget(request, &response), IsOk());
  ASSERT_EQ(response.results_size(), 4);
  EXPECT_EQ(response.results(0).normalized_url(), "http://a.example/x");
  EXPECT_TRUE(response.results(0).found());
  EXPECT_TRUE(response.results(0).url_removed());
  EXPECT_FALSE(response.results(0).url_stays_seen_probably());
  EXPECT_EQ(response.results(1).url(), "mailto:someone@a.example");
  EXPECT_THAT(response.results(1).error(), HasSubstr("scheme"));
  EXPECT_EQ(response.results(1).normalized_url(), "");
  EXPECT_FALSE(response.results(2).found());
  EXPECT_EQ(response.results(2).error(), "");
  EXPECT_TRUE(response.results(3).url_removed());
  EXPECT_FALSE(Seen("http://a.example/x"));
  EXPECT_FALSE(Seen("http://a.example/y"));
}

TEST_F(AdminForgetTest, CancelledStopsBetweenUrls) {
  Claim({"http://a.example/1", "http://a.example/2"});
  v1::ForgetRequest request;
  request.add_urls("http://a.example/1");
  request.add_urls("http://a.example/2");
  int asked = 0;
  v1::ForgetResponse response;
  EXPECT_THAT(ops_->Forget(request, &response, [&] { return ++asked > 1; }),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("after 1 of 2")));
  EXPECT_FALSE(Seen("http://a.example/1"));
  EXPECT_TRUE(Seen("http://a.example/2"));
}

// RestoreBackup only needs a directory with RocksDB's CURRENT file to copy.
TEST(RestoreBackupTest, TrailingSlashAndEmptyTargets) {
  ASSERT_OK_AND_ASSIGN(TestTempDir dir, TestTempDir::Make());
  const std::filesystem::path backup = std::filesystem::path(dir.path()) / "backup";
  std::filesystem::create_directories(backup);
  { std::ofstream(backup / "CURRENT") << "MANIFEST-000001\n"; }
  struct Case {
    const char* name;
    bool create_empty_target;
    const char* suffix;  // appended to the data dir given to RestoreBackup
  };
  const Case cases[] = {
      {"new", false, ""},
      {"new-slash", false, "/"},
      {"empty", true, ""},
      {"empty-slash", true, "/"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::filesystem::path target = std::filesystem::path(dir.path()) / c.name;
    if (c.create_empty_target) std::filesystem::create_directories(target);
    ASSERT_THAT(RestoreBackup(backup.string(), target.string() + c.suffix), IsOk());
    EXPECT_TRUE(std::filesystem::is_regular_file(target / "CURRENT"));
    EXPECT_FALSE(std::filesystem::exists(target / ".restore-tmp"));
    EXPECT_FALSE(std::filesystem::exists(target.string() + ".restore-tmp"));
    // Not empty any more: a second restore is refused and changes nothing.
    EXPECT_THAT(RestoreBackup(backup.string(), target.string() + c.suffix),
                StatusIs(absl::StatusCode::kFailedPrecondition));
    EXPECT_TRUE(std::filesystem::is_regular_file(target / "CURRENT"));
  }
}

}  // namespace
}  // namespace dedupd
