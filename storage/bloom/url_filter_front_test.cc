// Tests of UrlFilterFront with a fake store scan: load / stale / damaged /
// missing file, background rebuild fed by inserts that race it, growth by
// segments (exact under concurrent inserts, persisted, the false positive
// rate bounded), and the memory budget.
#include "storage/bloom/url_filter_front.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "common/file_io.h"
#include "core/index/bloom_filter.h"
#include "core/text/stable_hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/testing/test_temp_dir.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr absl::Duration kWait = absl::Seconds(30);

std::string Key(int i) { return absl::StrCat("\x01http://a.example/", i); }

// A fake store: its keys, and a scan that emits them and counts its calls.
struct FakeStore {
  std::vector<std::string> keys;
  std::atomic<int> scans{0};
  // When set, the scan emits half its keys, notifies `halfway` and waits
  // for `resume` before the rest.
  absl::Notification* halfway = nullptr;
  absl::Notification* resume = nullptr;

  UrlFilterFront::ScanFn Scan() {
    return [this](const std::function<void(absl::string_view)>& emit,
                  const std::atomic<bool>& cancel) -> absl::Status {
      ++scans;
      for (size_t i = 0; i < keys.size(); ++i) {
        if (halfway != nullptr && i == keys.size() / 2) {
          halfway->Notify();
          resume->WaitForNotification();
        }
        if (cancel) return absl::CancelledError("cancelled");
        emit(keys[i]);
      }
      return absl::OkStatus();
    };
  }
};

UrlFilterOptions SmallOptions() {
  UrlFilterOptions o;
  o.expected_urls = 10'000;
  o.false_positive_rate = 0.01;
  return o;
}

class UrlFilterFrontTest : public ::testing::Test {
 protected:
  // A front over store_ with `o`, started at store state `tag`, once its
  // rebuild (the scan of store_) is done.
  std::unique_ptr<UrlFilterFront> Built(const UrlFilterOptions& o, uint64_t tag) {
    auto front = std::make_unique<UrlFilterFront>(o, store_.Scan(), file_);
    front->Start(tag);
    EXPECT_TRUE(front->WaitForRebuild(kWait));
    return front;
  }

  void SetUp() override {
    absl::StatusOr<TestTempDir> dir = TestTempDir::Make();
    ASSERT_THAT(dir.status(), IsOk());
    dir_.emplace(*std::move(dir));
    file_ = dir_->path() + "/filter.bloom";
    for (int i = 0; i < 1000; ++i) store_.keys.push_back(Key(i));
  }
  std::optional<TestTempDir> dir_;
  std::string file_;
  FakeStore store_;
};

TEST_F(UrlFilterFrontTest, DisabledNeverAnswers) {
  UrlFilterOptions o = SmallOptions();
  o.enabled = false;
  UrlFilterFront front(o, store_.Scan(), file_);
  front.Start(1);
  EXPECT_FALSE(front.WaitForRebuild(kWait));
  EXPECT_FALSE(front.Acquire().ready());
  EXPECT_EQ(store_.scans, 0);
  EXPECT_EQ(front.stats().load_result, "disabled");
  EXPECT_THAT(front.Persist(1), IsOk());
  EXPECT_FALSE(std::filesystem::exists(file_));
}

TEST_F(UrlFilterFrontTest, NoFileRebuildsFromTheScan) {
  std::unique_ptr<UrlFilterFront> front_owner = Built(SmallOptions(), 7);
  UrlFilterFront& front = *front_owner;
  EXPECT_EQ(store_.scans, 1);
  const UrlFilterFront::View view = front.Acquire();
  for (const std::string& k : store_.keys) {
    ASSERT_TRUE(view.MayContain(UrlFilterFront::KeyHash(k))) << k;
  }
  const UrlFilterFront::Stats st = front.stats();
  EXPECT_THAT(st.load_result, StartsWith("rebuilding: no filter file"));
  EXPECT_EQ(st.keys, 1000u);
  EXPECT_EQ(st.rebuilds, 1u);
  EXPECT_GE(st.design_keys, 10'000u);
  EXPECT_LT(st.estimated_false_positive_rate, 0.01);
  // Most never-stored keys are ruled out (1% false positives at design size,
  // far fewer at a tenth of it).
  int maybe = 0;
  for (int i = 1000; i < 11000; ++i) {
    maybe += view.MayContain(UrlFilterFront::KeyHash(Key(i)));
  }
  EXPECT_LT(maybe, 100);
}

TEST_F(UrlFilterFrontTest, PersistedFilterLoadsWhenTheTagMatches) {
  {
    std::unique_ptr<UrlFilterFront> front_owner = Built(SmallOptions(), 42);
    UrlFilterFront& front = *front_owner;
    front.Inserted({UrlFilterFront::KeyHash("\x01http://late.example/")});
    ASSERT_THAT(front.Persist(42), IsOk());
  }
  ASSERT_TRUE(std::filesystem::exists(file_));
  EXPECT_FALSE(std::filesystem::exists(file_ + ".tmp"));
  UrlFilterFront again(SmallOptions(), store_.Scan(), file_);
  again.Start(42);
  // Ready at once, without a scan.
  EXPECT_TRUE(again.Acquire().ready());
  EXPECT_EQ(store_.scans, 1);
  EXPECT_EQ(again.stats().load_result, "loaded");
  EXPECT_EQ(again.stats().keys, 1001u);
  const UrlFilterFront::View view = again.Acquire();
  EXPECT_TRUE(view.MayContain(UrlFilterFront::KeyHash("\x01http://late.example/")));
  for (const std::string& k : store_.keys) {
    ASSERT_TRUE(view.MayContain(UrlFilterFront::KeyHash(k)));
  }
}

TEST_F(UrlFilterFrontTest, StaleOrDamagedFileIsRebuilt) {
  {
    std::unique_ptr<UrlFilterFront> front_owner = Built(SmallOptions(), 42);
    UrlFilterFront& front = *front_owner;
    ASSERT_THAT(front.Persist(42), IsOk());
  }
  {
    // Another tag: writes happened after the file (e.g. a crash).
    UrlFilterFront front(SmallOptions(), store_.Scan(), file_);
    front.Start(43);
    EXPECT_THAT(front.stats().load_result, HasSubstr("stale filter file"));
    EXPECT_TRUE(front.WaitForRebuild(kWait));
    EXPECT_EQ(store_.scans, 2);
  }
  // One flipped byte in the words: the checksum catches it.
  {
    std::fstream f(file_, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40 + BloomFilter::kHeaderBytes + 5);  // file header, segment 0's header
    f.put('\x7f');
  }
  UrlFilterFront front(SmallOptions(), store_.Scan(), file_);
  front.Start(42);
  EXPECT_THAT(front.stats().load_result, StartsWith("rebuilding: segment 0: "));
  EXPECT_THAT(front.stats().load_result, HasSubstr("checksum"));
  EXPECT_THAT(front.stats().load_result, Not(HasSubstr("stale")));
  ASSERT_TRUE(front.WaitForRebuild(kWait));
  EXPECT_EQ(store_.scans, 3);
  for (const std::string& k : store_.keys) {
    ASSERT_TRUE(front.Acquire().MayContain(UrlFilterFront::KeyHash(k)));
  }
}

TEST_F(UrlFilterFrontTest, InsertsDuringTheRebuildAreKept) {
  absl::Notification halfway, resume;
  store_.halfway = &halfway;
  store_.resume = &resume;
  UrlFilterFront front(SmallOptions(), store_.Scan(), file_);
  front.Start(1);
  halfway.WaitForNotification();
  // Not ready yet: every key must be read from the store.
  EXPECT_FALSE(front.Acquire().ready());
  EXPECT_TRUE(front.stats().rebuilding);
  std::vector<uint64_t> late;
  for (int i = 5000; i < 5100; ++i) late.push_back(UrlFilterFront::KeyHash(Key(i)));
  front.Inserted(late);
  resume.Notify();
  ASSERT_TRUE(front.WaitForRebuild(kWait));
  const UrlFilterFront::View view = front.Acquire();
  for (uint64_t h : late) ASSERT_TRUE(view.MayContain(h));
  for (const std::string& k : store_.keys) {
    ASSERT_TRUE(view.MayContain(UrlFilterFront::KeyHash(k)));
  }
  EXPECT_EQ(front.stats().keys, 1100u);
}

TEST_F(UrlFilterFrontTest, RebuildAndInsertsGrowBySegments) {
  UrlFilterOptions o = SmallOptions();
  o.expected_urls = 500;  // the store already holds 1,000
  std::unique_ptr<UrlFilterFront> front_owner = Built(o, 1);
  UrlFilterFront& front = *front_owner;
  // The scan filled the first segment (~500) and went on in a second one
  // for twice as many at half the rate, instead of overfilling the first.
  const UrlFilterFront::Stats first = front.stats();
  EXPECT_EQ(first.segments, 2u);
  EXPECT_EQ(first.keys, 1000u);
  EXPECT_EQ(first.rebuilds, 1u);
  EXPECT_GE(first.design_keys, 1500u);
  EXPECT_LT(first.estimated_false_positive_rate, 0.02);
  // The second segment (~1,000) holds ~500: 700 more keys pass it and add
  // a third, without another scan.
  std::vector<uint64_t> batch;
  for (int i = 1000; i < 1700; ++i) {
    store_.keys.push_back(Key(i));
    batch.push_back(UrlFilterFront::KeyHash(Key(i)));
    if (batch.size() == 10) {
      front.Inserted(batch);
      batch.clear();
    }
  }
  const UrlFilterFront::Stats st = front.stats();
  EXPECT_EQ(st.segments, 3u);
  EXPECT_FALSE(st.rebuilding);
  EXPECT_EQ(st.rebuilds, 1u);  // no second rebuild
  EXPECT_EQ(store_.scans, 1);  // and no second scan
  EXPECT_EQ(st.keys, 1700u);
  EXPECT_GT(st.design_keys, 2 * first.design_keys);
  EXPECT_GT(st.memory_bytes, 2 * first.memory_bytes);
  EXPECT_LT(st.estimated_false_positive_rate, 0.02);
  const UrlFilterFront::View view = front.Acquire();
  for (const std::string& k : store_.keys) {
    ASSERT_TRUE(view.MayContain(UrlFilterFront::KeyHash(k))) << k;
  }
}

TEST_F(UrlFilterFrontTest, StaleFileSizesTheRebuildFromEverySegment) {
  UrlFilterOptions o = SmallOptions();
  o.expected_urls = 500;
  {
    std::unique_ptr<UrlFilterFront> front_owner = Built(o, 5);
    UrlFilterFront& front = *front_owner;
    ASSERT_EQ(front.stats().segments, 2u);
    ASSERT_THAT(front.Persist(5), IsOk());
  }
  // Stale (a write after the file): the rebuild's first segment is for
  // twice the 1,000 keys of both segments' headers, so it holds them all.
  UrlFilterFront front(o, store_.Scan(), file_);
  front.Start(6);
  EXPECT_THAT(front.stats().load_result, HasSubstr("stale filter file"));
  ASSERT_TRUE(front.WaitForRebuild(kWait));
  EXPECT_EQ(front.stats().segments, 1u);
  EXPECT_GE(front.stats().design_keys, 2000u);
  EXPECT_EQ(front.stats().keys, 1000u);
}

TEST_F(UrlFilterFrontTest, FalsePositiveRateStaysBelowTwiceTheSetting) {
  UrlFilterOptions o = SmallOptions();
  o.expected_urls = 2000;
  store_.keys.clear();
  std::unique_ptr<UrlFilterFront> front_owner = Built(o, 1);
  UrlFilterFront& front = *front_owner;
  // Fill three segments to about 95% of their design sizes (~2,000 +
  // 4,000 + 8,000 at 1%, 0.5%, 0.25%: 1.75% together when full), a batch
  // of 100 at a time (a batch may overfill a segment by up to 99 keys).
  const uint64_t full = front.stats().design_keys * 7 * 95 / 100;
  std::vector<uint64_t> batch;
  for (uint64_t i = 0; i < full; ++i) {
    batch.push_back(UrlFilterFront::KeyHash(Key(static_cast<int>(i))));
    if (batch.size() == 100 || i + 1 == full) {
      front.Inserted(batch);
      batch.clear();
    }
  }
  const UrlFilterFront::Stats st = front.stats();
  EXPECT_EQ(st.segments, 3u);
  EXPECT_EQ(st.keys, full);
  const UrlFilterFront::View view = front.Acquire();
  constexpr int kProbes = 200'000;
  int passed = 0;
  for (int i = 0; i < kProbes; ++i) {
    passed += view.MayContain(UrlFilterFront::KeyHash(absl::StrCat("\x01http://new.example/", i)));
  }
  const double measured = static_cast<double>(passed) / kProbes;
  EXPECT_LT(measured, 0.02);
  EXPECT_GT(measured, 0.005);  // the segments do fill up
  EXPECT_LT(st.estimated_false_positive_rate, 0.02);
  EXPECT_NEAR(st.estimated_false_positive_rate, measured, 0.004);
}

TEST_F(UrlFilterFrontTest, InsertsRacingARebuildThatGrowsAreKept) {
  // The scan of 20,000 stored keys grows the building chain from ~100
  // while four writers insert batches of 5 before, during and after the
  // rebuild, up to its end (building_ becoming active_) and beyond.
  for (int i = 1000; i < 20'000; ++i) store_.keys.push_back(Key(i));
  UrlFilterOptions o = SmallOptions();
  o.expected_urls = 100;
  UrlFilterFront front(o, store_.Scan(), file_);
  constexpr int kThreads = 4;
  constexpr int kMaxBatches = 20'000;  // per writer: the loop's bound
  std::atomic<bool> after_start{false};
  std::atomic<bool> stop{false};
  // Per writer: the keys inserted once Start had returned (so the
  // building chain was registered): each must be in the final filter.
  std::vector<std::vector<uint64_t>> must(kThreads);
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int b = 0; b < kMaxBatches && !stop; ++b) {
        std::vector<uint64_t> batch;
        for (int j = 0; j < 5; ++j) {
          batch.push_back(UrlFilterFront::KeyHash(Key(1'000'000 * (t + 1) + 5 * b + j)));
        }
        const bool registered = after_start;
        front.Inserted(batch);
        if (registered) must[t].insert(must[t].end(), batch.begin(), batch.end());
      }
    });
  }
  front.Start(1);
  after_start = true;
  ASSERT_TRUE(front.WaitForRebuild(kWait));
  // A few more batches each after the rebuild's end, then stop.
  absl::SleepFor(absl::Milliseconds(20));
  stop = true;
  for (std::thread& w : writers) w.join();
  const UrlFilterFront::View view = front.Acquire();
  for (const std::string& k : store_.keys) {
    ASSERT_TRUE(view.MayContain(UrlFilterFront::KeyHash(k))) << k;
  }
  size_t checked = 0;
  for (const std::vector<uint64_t>& keys : must) {
    for (uint64_t h : keys) ASSERT_TRUE(view.MayContain(h));
    checked += keys.size();
  }
  EXPECT_GT(checked, 0u);
  const UrlFilterFront::Stats st = front.stats();
  EXPECT_GE(st.segments, 6u);  // ~100, 200, ..., 6,400 for 20,000+ keys
  EXPECT_GE(st.keys, 20'000u + checked);
}

TEST_F(UrlFilterFrontTest, InsertsRacingGrowthAreKept) {
  UrlFilterOptions o = SmallOptions();
  o.expected_urls = 100;
  std::unique_ptr<UrlFilterFront> front_owner = Built(o, 1);
  UrlFilterFront& front = *front_owner;
  // Four writers insert 5,000 keys each in small batches while the front
  // grows from 1,000 keys through several segments.
  const uint64_t segments_before = front.stats().segments;
  constexpr int kThreads = 4;
  constexpr int kPerThread = 5000;
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&front, t] {
      std::vector<uint64_t> batch;
      for (int i = 0; i < kPerThread; ++i) {
        batch.push_back(UrlFilterFront::KeyHash(Key(100'000 * (t + 1) + i)));
        if (batch.size() == 7) {
          front.Inserted(batch);
          batch.clear();
        }
      }
      front.Inserted(batch);
    });
  }
  for (std::thread& w : writers) w.join();
  const UrlFilterFront::Stats st = front.stats();
  // ~100, 200, 400, ...: 21,000 keys fill about 8, but the writers keep
  // inserting into the full segment while one of them allocates the next
  // (on 2 cores, a descheduled allocator lets the others run through all
  // their batches), so only "at least one more" is certain.
  EXPECT_GT(st.segments, segments_before);
  EXPECT_EQ(st.keys, 1000u + kThreads * kPerThread);
  const UrlFilterFront::View view = front.Acquire();
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      ASSERT_TRUE(view.MayContain(UrlFilterFront::KeyHash(Key(100'000 * (t + 1) + i))))
          << t << " " << i;
    }
  }
  for (const std::string& k : store_.keys) {
    ASSERT_TRUE(view.MayContain(UrlFilterFront::KeyHash(k)));
  }
}

// The file header's bytes for `segments` segments in a file of
// `file_bytes`, built from docs/storage_format.md's layout, not from the
// code under test.
std::string FileHeader(uint32_t segments, uint64_t file_bytes, double rate = 0.01,
                       uint32_t version = 1) {
  std::string h("DDURLSEG");
  auto put = [&h](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) h.push_back(static_cast<char>(v >> (8 * i)));
  };
  put(version, 4);
  put(segments, 4);
  put(file_bytes, 8);
  uint64_t rate_bits = 0;
  std::memcpy(&rate_bits, &rate, sizeof(rate_bits));
  put(rate_bits, 8);
  put(StableHash64(h, 0x5552'4c53'4547'0001), 8);
  return h;
}

TEST_F(UrlFilterFrontTest, FileHeaderGolden) {
  // Pinned bytes: changing the header's layout or checksum must show here.
  EXPECT_EQ(absl::BytesToHexString(FileHeader(3, 4096, 0.01)),
            "444455524c534547"    // "DDURLSEG"
            "01000000"            // version 1
            "03000000"            // 3 segments
            "0010000000000000"    // 4,096 bytes
            "7b14ae47e17a843f"    // 0.01, IEEE 754 double
            "08228137070f4f2b");  // StableHash64 of the 32 bytes above
  EXPECT_EQ(UrlFilterFront::EncodeFileHeader(3, 4096, 0.01), FileHeader(3, 4096, 0.01));
  UrlFilterOptions o = SmallOptions();
  o.expected_urls = 500;
  std::unique_ptr<UrlFilterFront> front_owner = Built(o, 9);
  UrlFilterFront& front = *front_owner;
  ASSERT_THAT(front.Persist(9), IsOk());
  const std::string bytes = *file_io::ReadFile(file_);
  const UrlFilterFront::Stats st = front.stats();
  ASSERT_EQ(st.segments, 2u);
  EXPECT_EQ(bytes.size(), 40 + 2 * BloomFilter::kHeaderBytes + st.memory_bytes);
  EXPECT_EQ(bytes.substr(0, 40), FileHeader(2, bytes.size(), 0.01));
  // Each segment is a serialized BloomFilter tagged with the store state.
  absl::StatusOr<BloomFilter::Header> first = BloomFilter::ParseHeader(bytes.substr(40));
  ASSERT_THAT(first.status(), IsOk());
  EXPECT_EQ(first->user_tag, 9u);
}

TEST_F(UrlFilterFrontTest, EverySegmentIsPersistedAndCheckedAtLoad) {
  UrlFilterOptions o = SmallOptions();
  o.expected_urls = 500;
  std::vector<uint64_t> more;
  for (int i = 1000; i < 3000; ++i) more.push_back(UrlFilterFront::KeyHash(Key(i)));
  {
    std::unique_ptr<UrlFilterFront> front_owner = Built(o, 9);
    UrlFilterFront& front = *front_owner;
    for (size_t i = 0; i < more.size(); i += 10) {
      front.Inserted(absl::MakeConstSpan(more).subspan(i, 10));
    }
    ASSERT_EQ(front.stats().segments, 3u);
    ASSERT_THAT(front.Persist(9), IsOk());
  }
  {
    UrlFilterFront again(o, store_.Scan(), file_);
    again.Start(9);
    const UrlFilterFront::Stats st = again.stats();
    EXPECT_EQ(st.load_result, "loaded");
    EXPECT_EQ(st.segments, 3u);
    EXPECT_EQ(st.keys, 3000u);
    EXPECT_EQ(store_.scans, 1);
    const UrlFilterFront::View view = again.Acquire();
    for (uint64_t h : more) ASSERT_TRUE(view.MayContain(h));
    for (const std::string& k : store_.keys) {
      ASSERT_TRUE(view.MayContain(UrlFilterFront::KeyHash(k)));
    }
  }
  const std::string bytes = *file_io::ReadFile(file_);
  // Where segments 1 and 2 start: after the file header, and each
  // segment's header and bit array.
  absl::StatusOr<BloomFilter::Header> seg0 = BloomFilter::ParseHeader(bytes.substr(40));
  ASSERT_THAT(seg0.status(), IsOk());
  const size_t seg1 = 40 + BloomFilter::kHeaderBytes + seg0->num_blocks * 64;
  absl::StatusOr<BloomFilter::Header> seg1_header = BloomFilter::ParseHeader(bytes.substr(seg1));
  ASSERT_THAT(seg1_header.status(), IsOk());
  const size_t seg2 = seg1 + BloomFilter::kHeaderBytes + seg1_header->num_blocks * 64;
  const std::string body = bytes.substr(40);
  // A file that lost segments or gained bytes is damaged: rebuilt, never
  // loaded without the keys it lost.
  struct Case {
    std::string name;
    std::string contents;
    std::string why;
  };
  const std::vector<Case> cases = {
      {"cut at the end of segment 0", bytes.substr(0, seg1), "its header says"},
      {"cut at the end of segment 1 (header rewritten to match the length)",
       FileHeader(3, seg2) + body.substr(0, seg2 - 40), "segment 2: "},
      {"cut inside segment 1's header (header rewritten to match)",
       FileHeader(3, seg1 + 10) + body.substr(0, seg1 + 10 - 40), "segment 1: "},
      {"one segment fewer in the header", FileHeader(2, bytes.size()) + body,
       "after the last of 2 segments"},
      {"cut inside segment 2's bit array", bytes.substr(0, bytes.size() - 64), "its header says"},
      {"trailing bytes", bytes + std::string(10, '\0'), "its header says"},
      {"header checksum", FileHeader(3, bytes.size()).substr(0, 32) + std::string(8, 'x') + body,
       "header checksum"},
      {"another version", FileHeader(3, bytes.size(), 0.01, 2) + body, "version 2"},
      {"a rate out of range", FileHeader(3, bytes.size(), 0.75) + body, "rate 0.75"},
      {"unknown magic", "XX" + bytes.substr(2), "unknown magic"},
      {"empty", "", "empty filter file"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    {
      std::ofstream f(file_, std::ios::binary | std::ios::trunc);
      f << c.contents;
    }
    const int scans = store_.scans;
    UrlFilterFront front(o, store_.Scan(), file_);
    front.Start(9);
    EXPECT_THAT(front.stats().load_result, StartsWith("rebuilding: "));
    EXPECT_THAT(front.stats().load_result, HasSubstr(c.why));
    ASSERT_TRUE(front.WaitForRebuild(kWait));
    EXPECT_EQ(store_.scans, scans + 1);
  }
}

TEST_F(UrlFilterFrontTest, OneFilterFileOfEarlierBuildsLoads) {
  // Before segments the file was one serialized BloomFilter.
  BloomFilter filter(100, 7);
  for (const std::string& k : store_.keys) filter.Insert(UrlFilterFront::KeyHash(k));
  {
    std::ofstream f(file_, std::ios::binary | std::ios::trunc);
    f << filter.Serialize(/*inserted_keys=*/1000, /*user_tag=*/4);
  }
  {
    UrlFilterFront front(SmallOptions(), store_.Scan(), file_);
    front.Start(4);
    EXPECT_EQ(front.stats().load_result, "loaded");
    EXPECT_EQ(front.stats().segments, 1u);
    EXPECT_EQ(front.stats().keys, 1000u);
    for (const std::string& k : store_.keys) {
      ASSERT_TRUE(front.Acquire().MayContain(UrlFilterFront::KeyHash(k)));
    }
    EXPECT_EQ(store_.scans, 0);
  }
  // With anything after the filter it is damaged.
  {
    std::ofstream f(file_, std::ios::binary | std::ios::trunc);
    f << filter.Serialize(1000, 4) << "x";
  }
  UrlFilterFront front(SmallOptions(), store_.Scan(), file_);
  front.Start(4);
  EXPECT_THAT(front.stats().load_result, HasSubstr("1 bytes after the last of 1 segments"));
}

TEST_F(UrlFilterFrontTest, MemoryBudgetSetsTheFirstFilter) {
  UrlFilterOptions o = SmallOptions();
  o.memory_budget_bytes = 64 * 1000 + 10;  // rounded down to 1,000 blocks
  std::unique_ptr<UrlFilterFront> front_owner = Built(o, 1);
  UrlFilterFront& front = *front_owner;
  EXPECT_EQ(front.stats().memory_bytes, 64u * 1000);
}

TEST_F(UrlFilterFrontTest, CountsProbes) {
  UrlFilterFront front(SmallOptions(), store_.Scan(), file_);
  front.CountProbes(3, 4);
  front.CountProbes(1, 0);
  EXPECT_EQ(front.stats().keys_skipped, 4u);
  EXPECT_EQ(front.stats().keys_read, 4u);
}

}  // namespace
}  // namespace dedupd::testing
