// RocksDbStore on a full disk, on a real file system: a small
// tmpfs whose room a ballast file takes. Writes fail with ResourceExhausted
// and are never acknowledged, reads go on, writes resume by themselves once
// the ballast is gone, and Close on a still-full disk neither aborts nor
// loses an acknowledged write. Needs root to mount (CI runs as root); skips
// with the reason otherwise.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/text/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/rocksdb/rocksdb_store.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/tmpfs_mount.h"

namespace dedupd::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr uint64_t kDiskBytes = uint64_t{16} << 20;
constexpr uint64_t kLeaveBytes = uint64_t{512} << 10;
constexpr int kBatch = 100;
// 1000 batches of 100 URLs are ~9 MB of log: more than the disk holds.
constexpr int kMaxBatches = 1000;

RocksDbStoreOptions Options(const std::string& path, absl::Duration resume_interval) {
  RocksDbStoreOptions o;
  o.path = path;
  o.normalizer_version = 1;
  o.block_cache_bytes = size_t{8} << 20;
  o.write_buffer_bytes = size_t{4} << 20;
  o.url_filter.expected_urls = 100'000;  // its file must fit the small disk
  o.write_resume_interval = resume_interval;
  return o;
}

std::vector<std::string> Batch(int b) {
  std::vector<std::string> keys;
  for (int i = 0; i < kBatch; ++i) {
    keys.push_back(absl::StrCat("https://full.example/some/path/of/a/page/", b, "-", i,
                                "?id=", b * kBatch + i));
  }
  return keys;
}

class RocksDbFullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<TmpfsMount>> mnt = TmpfsMount::Mount(kDiskBytes);
    if (!mnt.ok()) {
      GTEST_SKIP() << "full-disk test skipped: " << mnt.status().ToString();
    }
    mnt_ = *std::move(mnt);
  }

  // Opens the store, takes the disk's room but kLeaveBytes, and claims
  // batches until a claim fails. Sets acked_ (keys answered NEW) and
  // failed_ (the batch whose claim failed) and returns that failure.
  absl::Status FillUntilFull(RocksDbStore& store) {
    absl::Status ballast = mnt_->AddBallast(kLeaveBytes);
    if (!ballast.ok()) return ballast;
    for (int b = 0; b < kMaxBatches; ++b) {
      std::vector<std::string> keys = Batch(b);
      std::vector<UrlClaim> claims;
      absl::Status s = store.ClaimUrls(keys, absl::Now(), &claims);
      if (!s.ok()) {
        failed_ = std::move(keys);
        return s;
      }
      for (size_t i = 0; i < keys.size(); ++i) {
        EXPECT_TRUE(claims[i].is_new) << keys[i];
        acked_.push_back(keys[i]);
      }
    }
    return absl::InternalError(absl::StrCat(kMaxBatches, " batches fit on the disk"));
  }

  // Every acknowledged key is found; every key of the failed batch is not.
  void ExpectAckedOnly(RocksDbStore& store) {
    std::vector<std::optional<absl::Time>> found;
    ASSERT_THAT(store.LookupUrls(acked_, &found), IsOk());
    size_t missing = 0;
    for (const auto& f : found) missing += f.has_value() ? 0 : 1;
    EXPECT_EQ(missing, 0u) << "of " << acked_.size() << " acknowledged keys";
    ASSERT_THAT(store.LookupUrls(failed_, &found), IsOk());
    size_t present = 0;
    for (const auto& f : found) present += f.has_value() ? 1 : 0;
    EXPECT_EQ(present, 0u) << "keys of the failed claim are recorded";
  }

  std::string DbPath() const { return mnt_->path() + "/db"; }

  std::unique_ptr<TmpfsMount> mnt_;
  std::vector<std::string> acked_;
  std::vector<std::string> failed_;
};

// Writes stop with a clear ResourceExhausted, reads go on, and with
// write_resume_interval 0 the first write after the space is freed
// resumes writes: no restart.
TEST_F(RocksDbFullDiskTest, WritesStopReadsGoOnWritesResumeWhenSpaceIsFreed) {
  absl::StatusOr<std::unique_ptr<RocksDbStore>> opened =
      RocksDbStore::Open(Options(DbPath(), absl::ZeroDuration()));
  ASSERT_THAT(opened, IsOk());
  RocksDbStore& store = **opened;

  EXPECT_THAT(FillUntilFull(store),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("claim URLs in store at " + DbPath()),
                             HasSubstr("No space left on device"), HasSubstr("free disk space"))));
  ASSERT_FALSE(acked_.empty());
  EXPECT_THAT(store.write_status(), StatusIs(absl::StatusCode::kResourceExhausted));
  // Resume's flush can free room by itself (the flushed log is deleted, and
  // a table is smaller than its log): take what is left too, so the disk
  // stays full until the test frees it.
  ASSERT_THAT(mnt_->AddBallast(0, "ballast2"), IsOk());

  // Still full: every write kind fails (each tries Resume, which fails),
  // nothing is acknowledged, and reads answer.
  std::vector<UrlClaim> claims;
  EXPECT_THAT(store.ClaimUrls({"https://full.example/one-more"}, absl::Now(), &claims),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("free disk space")));
  ContentDoc doc;
  doc.identity_url = doc.fetched_url = "https://full.example/doc";
  doc.sha256 = Sha256("a text");
  doc.simhash = 0x1234;
  std::vector<ContentOutcome> outcomes;
  EXPECT_THAT(store.CheckContent({doc}, /*claim=*/true, ContentLimits{}, absl::Now(), &outcomes),
              StatusIs(absl::StatusCode::kResourceExhausted));
  ChunkDocument chunks;
  chunks.document_url = "https://full.example/doc";
  chunks.chunks.push_back({"0", Sha256("a chunk"), 0x5678, 3});
  ChunkAnswer answer;
  EXPECT_THAT(store.CheckChunks(chunks, /*claim=*/true, absl::Now(), &answer),
              StatusIs(absl::StatusCode::kResourceExhausted));
  ASSERT_THAT(store.CheckContent({doc}, /*claim=*/false, ContentLimits{}, absl::Now(), &outcomes),
              IsOk());
  EXPECT_EQ(outcomes[0].verdict, ContentVerdict::kNew);
  ExpectAckedOnly(store);

  ASSERT_THAT(mnt_->RemoveBallast(), IsOk());
  ASSERT_THAT(mnt_->RemoveBallast("ballast2"), IsOk());
  // The next write resumes: NEW for the keys whose claim failed, once.
  ASSERT_THAT(store.ClaimUrls(failed_, absl::Now(), &claims), IsOk());
  for (const UrlClaim& c : claims) EXPECT_TRUE(c.is_new);
  EXPECT_THAT(store.write_status(), IsOk());
  ASSERT_THAT(store.ClaimUrls(failed_, absl::Now(), &claims), IsOk());
  for (const UrlClaim& c : claims) EXPECT_FALSE(c.is_new);
  ASSERT_THAT(store.ClaimUrls(acked_, absl::Now(), &claims), IsOk());
  for (const UrlClaim& c : claims) EXPECT_FALSE(c.is_new);
  ASSERT_THAT(store.CheckContent({doc}, /*claim=*/true, ContentLimits{}, absl::Now(), &outcomes),
              IsOk());
  EXPECT_EQ(outcomes[0].verdict, ContentVerdict::kNew);
  ASSERT_THAT(store.CheckChunks(chunks, /*claim=*/true, absl::Now(), &answer), IsOk());
  EXPECT_EQ(answer.outcomes[0].verdict, ChunkVerdict::kNew);

  // Nothing lost or broken across a restart.
  ASSERT_THAT(store.Close(), IsOk());
  opened = RocksDbStore::Open(Options(DbPath(), absl::ZeroDuration()));
  ASSERT_THAT(opened, IsOk());
  acked_.insert(acked_.end(), failed_.begin(), failed_.end());
  failed_.clear();
  ExpectAckedOnly(**opened);
  absl::StatusOr<ConsistencyReport> report = (*opened)->CheckConsistency();
  ASSERT_THAT(report, IsOk());
  EXPECT_TRUE(report->ok()) << report->problems.front();
  EXPECT_THAT((*opened)->Close(), IsOk());
}

// With a long resume interval a write in the interval fails at once (no
// Resume); Close on the still-full disk reports the stop instead of
// flushing (a flush or WAL sync there aborts with this RocksDB build), and
// the next Open, once space is back, replays every acknowledged claim.
TEST_F(RocksDbFullDiskTest, CloseOnAFullDiskKeepsEveryAcknowledgedWrite) {
  absl::StatusOr<std::unique_ptr<RocksDbStore>> opened =
      RocksDbStore::Open(Options(DbPath(), absl::Hours(1)));
  ASSERT_THAT(opened, IsOk());
  EXPECT_THAT(FillUntilFull(**opened), StatusIs(absl::StatusCode::kResourceExhausted));
  ASSERT_FALSE(acked_.empty());
  ASSERT_THAT(mnt_->AddBallast(0, "ballast2"), IsOk());  // as above
  std::vector<UrlClaim> claims;
  EXPECT_THAT(
      (*opened)->ClaimUrls({"https://full.example/x"}, absl::Now(), &claims),
      StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("recovery is tried every 1h")));
  // A backup would flush: refused while writes are stopped.
  EXPECT_THAT((*opened)->Checkpoint(mnt_->path() + "/backup"),
              StatusIs(absl::StatusCode::kResourceExhausted));
  ExpectAckedOnly(**opened);

  EXPECT_THAT((*opened)->Close(),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("closed without flushing")));
  opened->reset();

  ASSERT_THAT(mnt_->RemoveBallast(), IsOk());
  ASSERT_THAT(mnt_->RemoveBallast("ballast2"), IsOk());
  opened = RocksDbStore::Open(Options(DbPath(), absl::Hours(1)));
  ASSERT_THAT(opened, IsOk());
  ExpectAckedOnly(**opened);
  ASSERT_THAT((*opened)->ClaimUrls(failed_, absl::Now(), &claims), IsOk());
  for (const UrlClaim& c : claims) EXPECT_TRUE(c.is_new);
  EXPECT_THAT((*opened)->Close(), IsOk());
}

// The one case Resume cannot repair in RocksDB 7.8: the log write fails
// while every memtable is empty (here: the first write after a reopen).
// Writes stay stopped with a message that asks for a restart, even once
// space is back; they never reach the failed log writer (which aborted the
// process); Close works; the reopened store takes writes.
TEST_F(RocksDbFullDiskTest, FailedFirstLogWriteNeedsARestartAndNeverAborts) {
  absl::StatusOr<std::unique_ptr<RocksDbStore>> opened =
      RocksDbStore::Open(Options(DbPath(), absl::ZeroDuration()));
  ASSERT_THAT(opened, IsOk());
  std::vector<UrlClaim> claims;
  acked_ = Batch(0);
  ASSERT_THAT((*opened)->ClaimUrls(acked_, absl::Now(), &claims), IsOk());
  ASSERT_THAT((*opened)->Close(), IsOk());  // flushes: the next memtable is empty
  opened->reset();

  ASSERT_THAT(mnt_->AddBallast(/*leave_bytes=*/64 << 10), IsOk());
  opened = RocksDbStore::Open(Options(DbPath(), absl::ZeroDuration()));
  ASSERT_THAT(opened, IsOk());
  RocksDbStore& store = **opened;
  // ~90 KB of log in one write: more than the disk has left.
  for (int b = 1; b <= 10; ++b) {
    std::vector<std::string> keys = Batch(b);
    failed_.insert(failed_.end(), keys.begin(), keys.end());
  }
  EXPECT_THAT(store.ClaimUrls(failed_, absl::Now(), &claims),
              StatusIs(absl::StatusCode::kResourceExhausted));
  EXPECT_THAT(store.ClaimUrls(failed_, absl::Now(), &claims),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("restart")));
  ExpectAckedOnly(store);

  ASSERT_THAT(mnt_->RemoveBallast(), IsOk());
  EXPECT_THAT(store.ClaimUrls(failed_, absl::Now(), &claims),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("restart")));
  EXPECT_THAT(store.write_status(), StatusIs(absl::StatusCode::kResourceExhausted));
  ExpectAckedOnly(store);
  EXPECT_THAT(store.Close(),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("closed without flushing")));
  opened->reset();

  opened = RocksDbStore::Open(Options(DbPath(), absl::ZeroDuration()));
  ASSERT_THAT(opened, IsOk());
  ExpectAckedOnly(**opened);
  ASSERT_THAT((*opened)->ClaimUrls(failed_, absl::Now(), &claims), IsOk());
  for (const UrlClaim& c : claims) EXPECT_TRUE(c.is_new);
  EXPECT_THAT((*opened)->Close(), IsOk());
}

}  // namespace
}  // namespace dedupd::testing
