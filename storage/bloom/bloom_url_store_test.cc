// Tests of BloomUrlStore: the UrlStore conformance suite (approximate
// flavour), exactly-one-NEW under concurrency, durability across Close and
// kill -9, claim-log and snapshot recovery, golden file bytes, the false
// positive rate, stats and options.
#include "storage/bloom/bloom_url_store.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/index/bloom_filter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/bloom/bloom_claim_log.h"
#include "storage/testing/test_temp_dir.h"
#include "storage/testing/url_store_conformance.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {
namespace {

namespace fs = std::filesystem;
namespace log_format = ::dedupd::bloom_claim_log;

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAre;

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

std::string UrlKey(size_t i) {
  return absl::StrCat("https://www.example.com/a/long/path/to/page-", i, "?id=", i * 31);
}

std::vector<std::string> Keys(size_t from, size_t to) {
  std::vector<std::string> keys;
  for (size_t i = from; i < to; ++i) keys.push_back(UrlKey(i));
  return keys;
}

// Small, fast stores whose false positive rate is negligible for the few
// thousand keys a test claims, with no background snapshots unless a test
// asks: the tests decide when files change.
BloomUrlStoreOptions TestOptions(const std::string& path) {
  BloomUrlStoreOptions options;
  options.path = path;
  options.expected_urls = 200'000;
  options.false_positive_rate = 1e-7;
  options.snapshot_every_keys = 0;
  options.snapshot_interval = absl::ZeroDuration();
  return options;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// The names of the files in `dir`.
std::vector<std::string> Files(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Copies every snapshot and log of `from` (a store that may be open: its
// files hold everything acknowledged) to the new directory `to`, as a
// crash at this moment would leave them.
void CopyStoreFiles(const std::string& from, const std::string& to) {
  fs::create_directories(to);
  for (const std::string& name : Files(from)) {
    if (name == "LOCK") continue;
    fs::copy_file(fs::path(from) / name, fs::path(to) / name, fs::copy_options::overwrite_existing);
  }
}

// Counts the keys LookupUrls reports present.
size_t CountPresent(UrlStore& store, const std::vector<std::string>& keys) {
  std::vector<std::optional<absl::Time>> found;
  EXPECT_THAT(store.LookupUrls(keys, &found), IsOk());
  return static_cast<size_t>(
      std::count_if(found.begin(), found.end(), [](const auto& f) { return f.has_value(); }));
}

// --- The conformance suite ------------------------------------------------

class BloomHarness : public UrlStoreHarness {
 public:
  static absl::StatusOr<std::unique_ptr<UrlStoreHarness>> Make() {
    absl::StatusOr<TestTempDir> dir = TestTempDir::Make();
    if (!dir.ok()) return dir.status();
    auto harness = std::unique_ptr<BloomHarness>(new BloomHarness(*std::move(dir)));
    absl::StatusOr<std::unique_ptr<BloomUrlStore>> store =
        BloomUrlStore::Open(TestOptions(harness->dir_.path() + "/bloom"));
    if (!store.ok()) return store.status();
    harness->store_ = *std::move(store);
    return std::unique_ptr<UrlStoreHarness>(std::move(harness));
  }
  ~BloomHarness() override { store_.reset(); }
  UrlStore& store() override { return *store_; }

 private:
  explicit BloomHarness(TestTempDir dir) : dir_(std::move(dir)) {}
  TestTempDir dir_;
  std::unique_ptr<BloomUrlStore> store_;
};

// The shared suite, with `approximate`: seen keys report InfinitePast()
// instead of their time; everything else (is_new, exactly one winner,
// presence) is asserted as for the exact backends.
INSTANTIATE_TEST_SUITE_P(Bloom, UrlStoreConformanceTest,
                         ::testing::Values(UrlStoreBackend{"Bloom", &BloomHarness::Make,
                                                           /*approximate=*/true}),
                         UrlStoreBackendName);

// --- Store tests ------------------------------------------------------------

// Waits (bounded) until the store's background thread has written `n`
// snapshots.
bool WaitForSnapshots(const BloomUrlStore& store, uint64_t n) {
  return store.WaitForSnapshots(n, absl::Seconds(20));
}

class BloomUrlStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(TestTempDir dir, TestTempDir::Make());
    dir_.emplace(std::move(dir));
    root_ = dir_->path();
    path_ = root_ + "/bloom";
  }

  absl::StatusOr<std::unique_ptr<BloomUrlStore>> Open() {
    return BloomUrlStore::Open(TestOptions(path_));
  }

  std::optional<TestTempDir> dir_;
  std::string root_;  // the temp directory
  std::string path_;  // the store's directory, inside root_
};

TEST_F(BloomUrlStoreTest, ApproximateAndSeenHasNoTime) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  EXPECT_TRUE(store->approximate());
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls({"http://a/"}, T(10), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
  EXPECT_EQ(out[0].first_seen, T(10));
  ASSERT_THAT(store->ClaimUrls({"http://a/"}, T(20), &out), IsOk());
  EXPECT_FALSE(out[0].is_new);
  EXPECT_EQ(out[0].first_seen, absl::InfinitePast());
  ASSERT_THAT(store->Close(), IsOk());
}

// Many threads claim the same keys at once (each in its own order, in
// batches of mixed sizes), while background snapshots rotate the log:
// every key is new for exactly one of them.
TEST_F(BloomUrlStoreTest, ExactlyOneNewAmongConcurrentClaimers) {
  BloomUrlStoreOptions options = TestOptions(path_);
  options.snapshot_every_keys = 700;  // several rotations during the run
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
  constexpr int kThreads = 8;
  constexpr size_t kKeys = 4'000;
  const std::vector<std::string> keys = Keys(0, kKeys);
  std::vector<std::vector<int>> wins(kThreads, std::vector<int>(kKeys, 0));
  std::vector<absl::Status> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<size_t> order(kKeys);
      for (size_t i = 0; i < kKeys; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937_64(t));
      size_t pos = 0;
      while (pos < kKeys) {
        const size_t n = std::min<size_t>(kKeys - pos, 1 + (pos * 7 + t) % 97);
        std::vector<std::string> batch;
        for (size_t i = 0; i < n; ++i) batch.push_back(keys[order[pos + i]]);
        batch.push_back(batch.front());  // a repeat in the batch
        std::vector<UrlClaim> out;
        if (absl::Status s = store->ClaimUrls(batch, T(t), &out); !s.ok()) {
          errors[t] = s;
          return;
        }
        for (size_t i = 0; i < n; ++i) wins[t][order[pos + i]] += out[i].is_new;
        if (out.back().is_new) errors[t] = absl::InternalError("repeat is new");
        pos += n;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) ASSERT_THAT(errors[t], IsOk()) << t;
  for (size_t i = 0; i < kKeys; ++i) {
    int total = 0;
    for (int t = 0; t < kThreads; ++t) total += wins[t][i];
    ASSERT_EQ(total, 1) << "key " << i;
  }
  EXPECT_EQ(store->stats().inserted_urls, kKeys);
  EXPECT_TRUE(WaitForSnapshots(*store, 1));
  ASSERT_THAT(store->Close(), IsOk());

  ASSERT_OK_AND_ASSIGN(store, Open());
  EXPECT_EQ(CountPresent(*store, keys), kKeys);
  EXPECT_EQ(store->stats().inserted_urls, kKeys);
}

TEST_F(BloomUrlStoreTest, ClaimsSurviveCloseAndOpen) {
  const std::vector<std::string> keys = Keys(0, 1'000);
  {
    ASSERT_OK_AND_ASSIGN(auto store, Open());
    std::vector<UrlClaim> out;
    ASSERT_THAT(store->ClaimUrls(keys, T(1), &out), IsOk());
    ASSERT_THAT(store->Close(), IsOk());
    // Close wrote the final snapshot: the next Open replays an empty log.
    EXPECT_EQ(store->stats().snapshots_written, 1u);
  }
  EXPECT_THAT(Files(path_), UnorderedElementsAre("LOCK", "claims-2.log", "snapshot-2.bloom"));
  EXPECT_EQ(fs::file_size(path_ + "/claims-2.log"), log_format::kHeaderBytes);

  ASSERT_OK_AND_ASSIGN(auto store, Open());
  EXPECT_EQ(store->stats().inserted_urls, keys.size());
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls(keys, T(2), &out), IsOk());
  for (size_t i = 0; i < keys.size(); ++i) ASSERT_FALSE(out[i].is_new) << i;
  ASSERT_THAT(store->ClaimUrls({"http://new/"}, T(2), &out), IsOk());
  EXPECT_TRUE(out[0].is_new);
  ASSERT_THAT(store->Close(), IsOk());
}

TEST_F(BloomUrlStoreTest, DestructorClosesAndSnapshots) {
  {
    ASSERT_OK_AND_ASSIGN(auto store, Open());
    std::vector<UrlClaim> out;
    ASSERT_THAT(store->ClaimUrls(Keys(0, 10), T(1), &out), IsOk());
  }
  EXPECT_TRUE(fs::exists(path_ + "/snapshot-2.bloom"));
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  EXPECT_EQ(CountPresent(*store, Keys(0, 10)), 10u);
}

// Snapshot rotates the log; a crash after it (simulated by copying the
// files of the open store) replays the snapshot plus the newer log.
TEST_F(BloomUrlStoreTest, SnapshotPlusLogReplayAfterRotation) {
  const std::vector<std::string> a = Keys(0, 300);
  const std::vector<std::string> b = Keys(300, 500);
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls(a, T(1), &out), IsOk());
  EXPECT_THAT(Files(path_), UnorderedElementsAre("LOCK", "claims-1.log"));
  ASSERT_THAT(store->Snapshot(), IsOk());
  // The log the snapshot covers is gone.
  EXPECT_THAT(Files(path_), UnorderedElementsAre("LOCK", "claims-2.log", "snapshot-2.bloom"));
  EXPECT_EQ(store->stats().log_bytes, log_format::kHeaderBytes);
  ASSERT_THAT(store->ClaimUrls(b, T(2), &out), IsOk());
  EXPECT_EQ(store->stats().log_bytes, log_format::kHeaderBytes + log_format::RecordBytes(b.size()));

  const std::string crashed = root_ + "/crashed";
  CopyStoreFiles(path_, crashed);
  {
    ASSERT_OK_AND_ASSIGN(auto copy, BloomUrlStore::Open(TestOptions(crashed)));
    EXPECT_EQ(CountPresent(*copy, a), a.size());
    EXPECT_EQ(CountPresent(*copy, b), b.size());
    EXPECT_EQ(copy->stats().inserted_urls, a.size() + b.size());
    EXPECT_EQ(CountPresent(*copy, Keys(500, 600)), 0u);
  }

  // A second snapshot replaces the first.
  ASSERT_THAT(store->Snapshot(), IsOk());
  EXPECT_THAT(Files(path_), UnorderedElementsAre("LOCK", "claims-3.log", "snapshot-3.bloom"));
  EXPECT_EQ(store->stats().snapshots_written, 2u);
  ASSERT_THAT(store->Close(), IsOk());
  EXPECT_THAT(Files(path_), UnorderedElementsAre("LOCK", "claims-4.log", "snapshot-4.bloom"));
}

// A store that never wrote a snapshot is rebuilt from its logs alone.
TEST_F(BloomUrlStoreTest, LogOnlyStoreIsReplayed) {
  const std::vector<std::string> keys = Keys(0, 200);
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls(keys, T(1), &out), IsOk());
  const std::string crashed = root_ + "/crashed";
  CopyStoreFiles(path_, crashed);
  ASSERT_THAT(store->Close(), IsOk());

  ASSERT_OK_AND_ASSIGN(auto copy, BloomUrlStore::Open(TestOptions(crashed)));
  EXPECT_EQ(CountPresent(*copy, keys), keys.size());
  EXPECT_EQ(copy->stats().inserted_urls, keys.size());
  // Open started a new log after the replayed one.
  EXPECT_THAT(Files(crashed), UnorderedElementsAre("LOCK", "claims-1.log", "claims-2.log"));
}

// Two claim batches in the log; the copy's log is cut inside the second.
class BloomUrlStoreLogDamageTest : public BloomUrlStoreTest {
 protected:
  void SetUp() override {
    BloomUrlStoreTest::SetUp();
    ASSERT_OK_AND_ASSIGN(auto store, Open());
    std::vector<UrlClaim> out;
    ASSERT_THAT(store->ClaimUrls(a_, T(1), &out), IsOk());
    ASSERT_THAT(store->ClaimUrls(b_, T(2), &out), IsOk());
    crashed_ = root_ + "/crashed";
    CopyStoreFiles(path_, crashed_);
    log_ = crashed_ + "/claims-1.log";
    ASSERT_EQ(fs::file_size(log_), kSecondRecordAt + log_format::RecordBytes(20));
    ASSERT_THAT(store->Close(), IsOk());
  }

  static constexpr size_t kSecondRecordAt = log_format::kHeaderBytes + log_format::RecordBytes(10);
  const std::vector<std::string> a_ = Keys(0, 10);
  const std::vector<std::string> b_ = Keys(10, 30);
  std::string crashed_;
  std::string log_;
};

TEST_F(BloomUrlStoreLogDamageTest, TornTailOfTheLastLogIsDropped) {
  fs::resize_file(log_, fs::file_size(log_) - 5);
  {
    ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(TestOptions(crashed_)));
    EXPECT_EQ(CountPresent(*store, a_), a_.size());
    EXPECT_EQ(CountPresent(*store, b_), 0u) << "the torn batch was never acked";
    EXPECT_EQ(store->stats().inserted_urls, a_.size());
    // The torn record was cut off, so the log is whole before the new one.
    EXPECT_EQ(fs::file_size(log_), kSecondRecordAt);
    std::vector<UrlClaim> out;
    ASSERT_THAT(store->ClaimUrls(b_, T(3), &out), IsOk());
    for (const UrlClaim& c : out) EXPECT_TRUE(c.is_new);
    // Leave logs 1 and 2 behind, as a crash would: no final snapshot.
    CopyStoreFiles(crashed_, crashed_ + "2");
  }
  ASSERT_OK_AND_ASSIGN(auto again, BloomUrlStore::Open(TestOptions(crashed_ + "2")));
  EXPECT_EQ(CountPresent(*again, a_), a_.size());
  EXPECT_EQ(CountPresent(*again, b_), b_.size());
}

TEST_F(BloomUrlStoreLogDamageTest, DamagedLastRecordOfTheLastLogIsTorn) {
  std::string bytes = ReadAll(log_);
  bytes[kSecondRecordAt + 9] ^= 1;  // a hash of the last record
  WriteAll(log_, bytes);
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(TestOptions(crashed_)));
  EXPECT_EQ(CountPresent(*store, a_), a_.size());
  EXPECT_EQ(CountPresent(*store, b_), 0u);
}

TEST_F(BloomUrlStoreLogDamageTest, DamagedMiddleRecordIsDataLossWithOffset) {
  std::string bytes = ReadAll(log_);
  bytes[log_format::kHeaderBytes + 7] ^= 1;  // a hash of the first record
  WriteAll(log_, bytes);
  EXPECT_THAT(
      BloomUrlStore::Open(TestOptions(crashed_)),
      StatusIs(absl::StatusCode::kDataLoss,
               AllOf(StartsWith(log_), HasSubstr(absl::StrCat("offset ", log_format::kHeaderBytes)),
                     HasSubstr("checksum"))));
  // The failed Open released the directory.
  bytes[log_format::kHeaderBytes + 7] ^= 1;
  WriteAll(log_, bytes);
  EXPECT_THAT(BloomUrlStore::Open(TestOptions(crashed_)), IsOk());
}

TEST_F(BloomUrlStoreLogDamageTest, TornRecordInAnEarlierLogIsDataLoss) {
  fs::resize_file(log_, fs::file_size(log_) - 5);
  WriteAll(crashed_ + "/claims-2.log", [] {
    log_format::LogHeader header;
    header.generation = 2;
    BloomFilter filter = [] {
      BloomUrlStoreOptions o = TestOptions("x");
      const double bpk = BloomFilter::BitsPerKeyFor(o.false_positive_rate);
      return BloomFilter(BloomFilter::BlocksFor(o.expected_urls, bpk),
                         BloomFilter::OptimalProbes(bpk));
    }();
    header.num_blocks = filter.num_blocks();
    header.num_probes = static_cast<uint32_t>(filter.num_probes());
    return log_format::EncodeLogHeader(header);
  }());
  EXPECT_THAT(BloomUrlStore::Open(TestOptions(crashed_)),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(StartsWith(log_), HasSubstr("not the last log"),
                             HasSubstr(absl::StrCat("offset ", kSecondRecordAt)))));
}

TEST_F(BloomUrlStoreLogDamageTest, MissingLogIsDataLoss) {
  fs::rename(log_, crashed_ + "/claims-2.log");
  EXPECT_THAT(BloomUrlStore::Open(TestOptions(crashed_)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("claims-1.log is missing")));
}

TEST_F(BloomUrlStoreLogDamageTest, LogOfAnotherFilterSizeIsDataLoss) {
  std::string bytes = ReadAll(log_);
  log_format::LogHeader header = *log_format::ParseLogHeader(bytes);
  header.num_blocks += 1;
  bytes.replace(0, log_format::kHeaderBytes, log_format::EncodeLogHeader(header));
  WriteAll(log_, bytes);
  ASSERT_THAT(fs::copy_file(path_ + "/snapshot-2.bloom", crashed_ + "/snapshot-1.bloom"), true);
  // snapshot-1 does not exist in real life (the first snapshot is 2), but
  // its tag says 2: a mismatch the store must reject rather than trust.
  EXPECT_THAT(BloomUrlStore::Open(TestOptions(crashed_)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("tag")));
  fs::remove(crashed_ + "/snapshot-1.bloom");
  EXPECT_THAT(BloomUrlStore::Open(TestOptions(crashed_)), IsOk())
      << "without a snapshot the first log sets the size";
}

TEST_F(BloomUrlStoreLogDamageTest, LogCreationCutShortIsIgnored) {
  WriteAll(crashed_ + "/claims-2.log", "DDCLA");
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(TestOptions(crashed_)));
  EXPECT_EQ(CountPresent(*store, a_), a_.size());
  EXPECT_EQ(CountPresent(*store, b_), b_.size());
}

TEST_F(BloomUrlStoreTest, DamagedSnapshotIsDataLoss) {
  {
    ASSERT_OK_AND_ASSIGN(auto store, Open());
    std::vector<UrlClaim> out;
    ASSERT_THAT(store->ClaimUrls(Keys(0, 100), T(1), &out), IsOk());
    ASSERT_THAT(store->Close(), IsOk());
  }
  const std::string snapshot = path_ + "/snapshot-2.bloom";
  const std::string good = ReadAll(snapshot);
  struct Case {
    std::string name;
    size_t offset;
  };
  for (const Case& c :
       {Case{"header", 20}, Case{"words", 64 + 1000}, Case{"last word", good.size() - 1}}) {
    std::string bad = good;
    bad[c.offset] ^= 0x10;
    WriteAll(snapshot, bad);
    EXPECT_THAT(Open(), StatusIs(absl::StatusCode::kDataLoss, StartsWith(snapshot))) << c.name;
  }
  WriteAll(snapshot, good.substr(0, good.size() - 64));
  EXPECT_THAT(Open(), StatusIs(absl::StatusCode::kDataLoss, StartsWith(snapshot)));
  WriteAll(snapshot, good);
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  EXPECT_EQ(CountPresent(*store, Keys(0, 100)), 100u);
}

TEST_F(BloomUrlStoreTest, LeftoverTempSnapshotIsDeleted) {
  fs::create_directories(path_);
  WriteAll(path_ + "/snapshot-5.bloom.tmp", "half a snapshot");
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  EXPECT_FALSE(fs::exists(path_ + "/snapshot-5.bloom.tmp"));
}

// The claim log's exact bytes for a fixed claim sequence (the format is
// pinned in bloom_claim_log_test.cc; this pins what the store writes).
TEST_F(BloomUrlStoreTest, GoldenLogFile) {
  BloomUrlStoreOptions options = TestOptions(path_);
  options.expected_urls = 10;
  options.memory_budget_bytes = 128;  // 2 blocks; 102 bits/key: 16 probes
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls({"http://a/", "http://b/", "http://a/"}, T(1), &out), IsOk());
  ASSERT_THAT(store->ClaimUrls({"http://b/"}, T(2), &out), IsOk());  // no record
  ASSERT_THAT(store->ClaimUrls({"http://c/"}, T(3), &out), IsOk());
  // Hashes and checksums computed with the reference xxHash library over
  // the documented layout (docs/bloom_url_store.md).
  EXPECT_EQ(absl::BytesToHexString(ReadAll(path_ + "/claims-1.log")),
            "4444434c41494d53"  // "DDCLAIMS"
            "01000000"          // version 1
            "10000000"          // 16 probes
            "0100000000000000"  // generation 1
            "0200000000000000"  // 2 blocks
            "8f6710698f77a126"
            "02000000"          // record: 2 keys
            "3ebd24c78c2dbabe"  // KeyHash("http://a/")
            "530f9a54bf498bc3"  // KeyHash("http://b/")
            "a43482ae64917dda"
            "01000000"          // record: 1 key
            "83fb1191bd876a12"  // KeyHash("http://c/")
            "ab95f6f243baad2a");
  ASSERT_THAT(store->Close(), IsOk());

  // The snapshot: BloomFilter's serialized form (docs/bloom_filter.md),
  // user_tag = its generation, inserted_keys = the claims it covers.
  const std::string snapshot = ReadAll(path_ + "/snapshot-2.bloom");
  ASSERT_EQ(snapshot.size(), BloomFilter::kHeaderBytes + 128);
  ASSERT_OK_AND_ASSIGN(BloomFilter::Header header, BloomFilter::ParseHeader(snapshot));
  EXPECT_EQ(header.num_blocks, 2u);
  EXPECT_EQ(header.num_probes, 16);
  EXPECT_EQ(header.inserted_keys, 3u);
  EXPECT_EQ(header.user_tag, 2u);
  // The words checksum depends on BloomFilter's bit mapping (pinned by
  // core/index/bloom_filter_test.cc); the header checksum was checked with the
  // reference xxHash library (XXH64 of bytes 0..47, seed BloomFilter::kSeed).
  EXPECT_EQ(absl::BytesToHexString(snapshot.substr(0, BloomFilter::kHeaderBytes)),
            "4444424c4f4f4d00"   // "DDBLOOM\0"
            "01000000"           // BloomFilter format version 1
            "10000000"           // 16 probes
            "0200000000000000"   // 2 blocks
            "0300000000000000"   // inserted_keys 3
            "0200000000000000"   // user_tag: generation 2
            "2c9e0a33ca864d68"   // words checksum
            "69708fccf40f453e"   // header checksum
            "0000000000000000")  // padding
      << "the snapshot bytes changed: see docs/bloom_url_store.md";
}

// kill -9 of a process that is claiming: every batch it acknowledged
// (reported on a pipe after ClaimUrls returned) is present after reopen.
TEST_F(BloomUrlStoreTest, AcknowledgedClaimsSurviveKillDashNine) {
  constexpr size_t kBatchKeys = 50;
  constexpr uint32_t kMaxBatches = 200'000;
  constexpr uint32_t kKillAfter = 150;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child: claim until killed. No gtest assertions here.
    ::close(fds[0]);
    BloomUrlStoreOptions options = TestOptions(path_);
    options.snapshot_every_keys = 1'000;  // snapshots race the kill too
    auto store = BloomUrlStore::Open(options);
    if (!store.ok()) _exit(2);
    for (uint32_t b = 0; b < kMaxBatches; ++b) {
      std::vector<UrlClaim> out;
      if (!(*store)
               ->ClaimUrls(Keys(b * kBatchKeys, (b + 1) * kBatchKeys), absl::Now(), &out)
               .ok()) {
        _exit(3);
      }
      if (::write(fds[1], &b, sizeof(b)) != sizeof(b)) _exit(4);
    }
    _exit(0);  // never closes the store
  }
  ::close(fds[1]);
  std::vector<uint32_t> acked;
  auto read_ack = [&]() {
    uint32_t b = 0;
    size_t got = 0;
    while (got < sizeof(b)) {
      const ssize_t n = ::read(fds[0], reinterpret_cast<char*>(&b) + got, sizeof(b) - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      got += static_cast<size_t>(n);
    }
    acked.push_back(b);
    return true;
  };
  while (acked.size() < kKillAfter && read_ack()) {
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  while (read_ack()) {  // acknowledgements already in the pipe count too
  }
  ::close(fds[0]);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << status;
  ASSERT_GE(acked.size(), kKillAfter);

  ASSERT_OK_AND_ASSIGN(auto store, Open());
  std::vector<std::string> keys;
  for (uint32_t b : acked) {
    std::vector<std::string> batch = Keys(b * kBatchKeys, (b + 1) * kBatchKeys);
    keys.insert(keys.end(), batch.begin(), batch.end());
  }
  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store->LookupUrls(keys, &found), IsOk());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(found[i].has_value()) << "lost acknowledged claim " << keys[i];
  }
  // Exact: the child's claims were all distinct keys, each new once.
  EXPECT_GE(store->stats().inserted_urls, keys.size());
  EXPECT_LE(store->stats().inserted_urls, keys.size() + 2 * kBatchKeys)
      << "at most the batch in flight and one more were logged unacknowledged";
}

// A failed log append (here: the file size limit, EFBIG, after a short
// write) answers Unavailable, sets nothing, and leaves no torn record.
TEST_F(BloomUrlStoreTest, FailedAppendSetsNothingAndLeavesTheLogWhole) {
  const std::vector<std::string> a = Keys(0, 10);
  const std::vector<std::string> b = Keys(10, 1'010);
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls(a, T(1), &out), IsOk());
  const std::string log = path_ + "/claims-1.log";
  const uintmax_t size = fs::file_size(log);

  struct rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto old_handler = signal(SIGXFSZ, SIG_IGN);
  struct rlimit limited = saved;
  limited.rlim_cur = size + 100;  // room for part of the record only
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &limited), 0);
  const absl::Status failed = store->ClaimUrls(b, T(2), &out);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
  signal(SIGXFSZ, old_handler);

  EXPECT_THAT(failed, StatusIs(absl::StatusCode::kUnavailable,
                               AllOf(StartsWith(log), HasSubstr("append"))));
  EXPECT_EQ(fs::file_size(log), size) << "the partial record was cut off";
  EXPECT_EQ(CountPresent(*store, b), 0u);
  EXPECT_EQ(store->stats().inserted_urls, a.size());
  ASSERT_THAT(store->ClaimUrls(b, T(3), &out), IsOk());
  for (const UrlClaim& c : out) ASSERT_TRUE(c.is_new);

  const std::string crashed = root_ + "/crashed";
  CopyStoreFiles(path_, crashed);
  ASSERT_OK_AND_ASSIGN(auto copy, BloomUrlStore::Open(TestOptions(crashed)));
  EXPECT_EQ(CountPresent(*copy, a), a.size());
  EXPECT_EQ(CountPresent(*copy, b), b.size());
}

// A filter at its design capacity answers about the configured share of
// new keys "probably seen", and reports them not new. Fixed key sets.
TEST_F(BloomUrlStoreTest, FalsePositiveRateAtCapacityIsNearTheDesignRate) {
  constexpr size_t kCapacity = 20'000;
  constexpr size_t kProbes = 100'000;
  constexpr double kRate = 0.01;
  BloomUrlStoreOptions options = TestOptions(path_);
  options.expected_urls = kCapacity;
  options.false_positive_rate = kRate;
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
  std::vector<UrlClaim> out;
  const std::vector<std::string> members = Keys(0, kCapacity);
  ASSERT_THAT(store->ClaimUrls(members, T(1), &out), IsOk());
  const size_t lost = static_cast<size_t>(
      std::count_if(out.begin(), out.end(), [](const UrlClaim& c) { return !c.is_new; }));
  EXPECT_LT(lost, kCapacity * kRate) << "false positives while filling";
  EXPECT_EQ(store->stats().inserted_urls, kCapacity - lost);

  const std::vector<std::string> others = Keys(kCapacity, kCapacity + kProbes);
  const size_t present = CountPresent(*store, others);
  const double measured = static_cast<double>(present) / kProbes;
  const BloomUrlStore::Stats stats = store->stats();
  EXPECT_LE(stats.design_false_positive_rate, kRate);
  EXPECT_LE(measured, 1.5 * kRate) << "measured " << measured;
  EXPECT_GE(measured, stats.design_false_positive_rate / 3)
      << "measured " << measured << ", design " << stats.design_false_positive_rate;
  // Claiming them: exactly the false positives are answered not new.
  ASSERT_THAT(store->ClaimUrls(others, T(2), &out), IsOk());
  const size_t not_new = static_cast<size_t>(
      std::count_if(out.begin(), out.end(), [](const UrlClaim& c) { return !c.is_new; }));
  EXPECT_EQ(not_new, present);
  std::printf(
      "[ figures  ] capacity %zu at %g: measured FP rate %.5f, "
      "design %.5f, estimated %.5f\n",
      kCapacity, kRate, measured, stats.design_false_positive_rate,
      stats.estimated_false_positive_rate);
  ASSERT_THAT(store->Close(), IsOk());
}

TEST_F(BloomUrlStoreTest, StatsAndOverCapacity) {
  BloomUrlStoreOptions options = TestOptions(path_);
  options.expected_urls = 100;
  options.false_positive_rate = 0.01;
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
  BloomUrlStore::Stats s = store->stats();
  EXPECT_EQ(s.capacity_urls, 100u);
  EXPECT_EQ(s.inserted_urls, 0u);
  EXPECT_FALSE(s.over_capacity);
  EXPECT_EQ(s.estimated_false_positive_rate, 0);
  EXPECT_GT(s.design_false_positive_rate, 0);
  EXPECT_LE(s.design_false_positive_rate, 0.01);
  const double bpk = BloomFilter::BitsPerKeyFor(0.01);
  EXPECT_EQ(s.memory_bytes, BloomFilter::BlocksFor(100, bpk) * 64);
  EXPECT_EQ(s.log_bytes, log_format::kHeaderBytes);
  EXPECT_EQ(s.snapshots_written, 0u);
  EXPECT_GT(s.last_open_time, absl::ZeroDuration());

  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls(Keys(0, 100), T(1), &out), IsOk());
  const uint64_t first = store->stats().inserted_urls;
  EXPECT_FALSE(store->stats().over_capacity);
  ::testing::internal::CaptureStderr();
  ASSERT_THAT(store->ClaimUrls(Keys(100, 200), T(1), &out), IsOk());
  ASSERT_THAT(store->ClaimUrls(Keys(200, 300), T(1), &out), IsOk());
  const std::string warnings = ::testing::internal::GetCapturedStderr();
  s = store->stats();
  EXPECT_TRUE(s.over_capacity);
  EXPECT_GT(s.inserted_urls, first);
  EXPECT_GT(s.estimated_false_positive_rate, 0.01);
  EXPECT_EQ(s.estimated_false_positive_rate,
            BloomFilter::BlockedFalsePositiveRate(s.inserted_urls, s.memory_bytes / 64,
                                                  BloomFilter::OptimalProbes(bpk)));
  // One warning line, when the capacity was first passed.
  EXPECT_THAT(warnings, StartsWith("dedupd: warning: " + path_));
  EXPECT_EQ(std::count(warnings.begin(), warnings.end(), '\n'), 1);
  ASSERT_THAT(store->Close(), IsOk());
}

// The size is fixed when the store is created; later options do not
// change it, with or without a snapshot.
TEST_F(BloomUrlStoreTest, SizeIsFixedAtCreation) {
  BloomUrlStoreOptions small = TestOptions(path_);
  small.expected_urls = 1'000;
  small.false_positive_rate = 0.01;
  BloomUrlStoreOptions large = small;
  large.expected_urls = 1'000'000;
  uint64_t bytes = 0;
  {
    ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(small));
    bytes = store->stats().memory_bytes;
    std::vector<UrlClaim> out;
    ASSERT_THAT(store->ClaimUrls(Keys(0, 10), T(1), &out), IsOk());
    CopyStoreFiles(path_, root_ + "/log-only");
    ASSERT_THAT(store->Close(), IsOk());
  }
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(large));
  EXPECT_EQ(store->stats().memory_bytes, bytes);
  EXPECT_EQ(CountPresent(*store, Keys(0, 10)), 10u);
  large.path = root_ + "/log-only";
  ASSERT_OK_AND_ASSIGN(auto log_only, BloomUrlStore::Open(large));
  EXPECT_EQ(log_only->stats().memory_bytes, bytes);
  EXPECT_EQ(CountPresent(*log_only, Keys(0, 10)), 10u);
}

TEST_F(BloomUrlStoreTest, MemoryBudgetSetsTheSize) {
  BloomUrlStoreOptions options = TestOptions(path_);
  options.memory_budget_bytes = 64 * 1000 + 63;  // rounded down
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
  EXPECT_EQ(store->stats().memory_bytes, 64u * 1000);
}

TEST_F(BloomUrlStoreTest, BadOptionsAreInvalidArgument) {
  struct Case {
    std::string name;
    BloomUrlStoreOptions options;
  };
  auto with = [this](auto change) {
    BloomUrlStoreOptions o = TestOptions(path_);
    change(o);
    return o;
  };
  const std::vector<Case> cases = {
      {"empty path", with([](auto& o) { o.path.clear(); })},
      {"no capacity", with([](auto& o) { o.expected_urls = 0; })},
      {"rate 0", with([](auto& o) { o.false_positive_rate = 0; })},
      {"rate above 0.5", with([](auto& o) { o.false_positive_rate = 0.6; })},
      {"rate negative", with([](auto& o) { o.false_positive_rate = -0.1; })},
      {"rate NaN",
       with([](auto& o) { o.false_positive_rate = std::numeric_limits<double>::quiet_NaN(); })},
      {"budget below a block", with([](auto& o) { o.memory_budget_bytes = 63; })},
  };
  for (const Case& c : cases) {
    EXPECT_THAT(BloomUrlStore::Open(c.options), StatusIs(absl::StatusCode::kInvalidArgument))
        << c.name;
  }
  EXPECT_FALSE(fs::exists(path_)) << "nothing created for bad options";
}

TEST_F(BloomUrlStoreTest, SecondOpenWhileOpenIsFailedPrecondition) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  EXPECT_THAT(Open(), StatusIs(absl::StatusCode::kFailedPrecondition,
                               AllOf(StartsWith(path_), HasSubstr("in use"))));
  ASSERT_THAT(store->Close(), IsOk());
  EXPECT_THAT(Open(), IsOk());
}

TEST_F(BloomUrlStoreTest, CallsAfterCloseAreFailedPrecondition) {
  ASSERT_OK_AND_ASSIGN(auto store, Open());
  ASSERT_THAT(store->Close(), IsOk());
  std::vector<UrlClaim> out;
  EXPECT_THAT(store->ClaimUrls({"http://a/"}, T(1), &out),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  std::vector<std::optional<absl::Time>> found;
  EXPECT_THAT(store->LookupUrls({"http://a/"}, &found),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(store->Snapshot(), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(store->Close(), StatusIs(absl::StatusCode::kFailedPrecondition));
}

TEST_F(BloomUrlStoreTest, BackgroundSnapshotAfterEveryKeys) {
  BloomUrlStoreOptions options = TestOptions(path_);
  options.snapshot_every_keys = 100;
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls(Keys(0, 99), T(1), &out), IsOk());
  EXPECT_EQ(store->stats().snapshots_written, 0u);
  ASSERT_THAT(store->ClaimUrls(Keys(99, 150), T(1), &out), IsOk());
  ASSERT_TRUE(WaitForSnapshots(*store, 1));
  EXPECT_TRUE(fs::exists(path_ + "/snapshot-2.bloom"));
  EXPECT_FALSE(fs::exists(path_ + "/claims-1.log"));
  ASSERT_THAT(store->Close(), IsOk());
}

TEST_F(BloomUrlStoreTest, BackgroundSnapshotAfterIntervalWithKeysLogged) {
  BloomUrlStoreOptions options = TestOptions(path_);
  options.snapshot_interval = absl::Milliseconds(20);
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls({"http://a/"}, T(1), &out), IsOk());
  ASSERT_TRUE(WaitForSnapshots(*store, 1));
  // Nothing logged since: no further snapshot in five intervals...
  EXPECT_FALSE(store->WaitForSnapshots(2, absl::Milliseconds(100)));
  EXPECT_EQ(store->stats().snapshots_written, 1u);
  // ...until a key is logged.
  ASSERT_THAT(store->ClaimUrls({"http://b/"}, T(1), &out), IsOk());
  ASSERT_TRUE(WaitForSnapshots(*store, 2));
  ASSERT_THAT(store->Close(), IsOk());
}

TEST_F(BloomUrlStoreTest, CloseStopsTheSnapshotThreadPromptly) {
  BloomUrlStoreOptions options = TestOptions(path_);
  options.snapshot_interval = absl::Hours(1);
  options.snapshot_every_keys = 1'000'000;
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->ClaimUrls({"http://a/"}, T(1), &out), IsOk());
  const absl::Time start = absl::Now();
  ASSERT_THAT(store->Close(), IsOk());
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(BloomUrlStoreTest, SyncWritesStoreWorks) {
  BloomUrlStoreOptions options = TestOptions(path_);
  options.sync_writes = true;
  {
    ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
    std::vector<UrlClaim> out;
    ASSERT_THAT(store->ClaimUrls(Keys(0, 50), T(1), &out), IsOk());
    CopyStoreFiles(path_, root_ + "/crashed");
  }
  options.path = root_ + "/crashed";
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
  EXPECT_EQ(CountPresent(*store, Keys(0, 50)), 50u);
}

// Not a test: the restart figures of docs/bloom_url_store.md ("Restart
// cost"). Run on demand with
//   DEDUPD_BLOOM_OPEN_URLS=10000000 build-h/storage/bloom_url_store_test
//       --gtest_also_run_disabled_tests --gtest_filter='*OpenTimeFigures'
// (one command line).
TEST_F(BloomUrlStoreTest, DISABLED_OpenTimeFigures) {
  const char* env = std::getenv("DEDUPD_BLOOM_OPEN_URLS");
  const size_t n = env != nullptr ? std::strtoull(env, nullptr, 10) : 1'000'000;
  BloomUrlStoreOptions options = TestOptions(path_);
  options.expected_urls = n;
  options.false_positive_rate = 0.01;
  constexpr size_t kBatch = 10'000;
  auto claim_range = [&](BloomUrlStore& store, size_t from, size_t to) {
    std::vector<UrlClaim> out;
    for (size_t i = from; i < to; i += kBatch) {
      ASSERT_THAT(store.ClaimUrls(Keys(i, std::min(to, i + kBatch)), T(1), &out), IsOk());
    }
  };
  {
    ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
    claim_range(*store, 0, n);
    const absl::Time start = absl::Now();
    ASSERT_THAT(store->Snapshot(), IsOk());
    std::printf("[ figures  ] snapshot of %zu URLs (%.1f MB filter): %.3f s\n", n,
                store->stats().memory_bytes / 1e6, absl::ToDoubleSeconds(absl::Now() - start));
    ASSERT_THAT(store->Close(), IsOk());
  }
  {
    ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
    std::printf("[ figures  ] Open after Close (snapshot, empty log): %.3f s\n",
                absl::ToDoubleSeconds(store->stats().last_open_time));
    // A crash after n/10 more claims, without a snapshot.
    claim_range(*store, n, n + n / 10);
    CopyStoreFiles(path_, root_ + "/crashed");
  }
  options.path = root_ + "/crashed";
  ASSERT_OK_AND_ASSIGN(auto store, BloomUrlStore::Open(options));
  std::printf(
      "[ figures  ] Open after a crash (snapshot + %zu logged keys in "
      "batches of %zu): %.3f s\n",
      n / 10, kBatch, absl::ToDoubleSeconds(store->stats().last_open_time));
}

}  // namespace
}  // namespace dedupd::testing
