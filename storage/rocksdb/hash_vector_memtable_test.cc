// HashVectorMemTableRepFactory: the same operations on two RocksDB
// databases, one whose default column family uses it and one with RocksDB's
// skip list, must read the same (Get, MultiGet, iteration both ways, Seek,
// SeekForPrev), at the latest state and at every snapshot, before and after
// flushes; plus concurrent writers and readers.
#include "storage/rocksdb/hash_vector_memtable.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "rocksdb/merge_operator.h"
#include "rocksdb/options.h"
#include "rocksdb/slice.h"
#include "rocksdb/write_batch.h"
#include "tests/testing/server_process.h"

namespace dedupd {
namespace {

using ::dedupd::testing::MakeTempDir;
using ::dedupd::testing::RemoveTree;

struct Db {
  std::unique_ptr<rocksdb::DB> db;
  std::vector<const rocksdb::Snapshot*> snapshots;

  ~Db() {
    for (const rocksdb::Snapshot* s : snapshots) db->ReleaseSnapshot(s);
  }
};

// Appends operands with ",": a Get of a merged key reads back through its
// older entries (the memtable's callback goes on past the newest one).
class AppendOperator : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice& /*key*/, const rocksdb::Slice* existing,
             const rocksdb::Slice& value, std::string* new_value,
             rocksdb::Logger* /*logger*/) const override {
    *new_value = existing == nullptr ? value.ToString()
                                     : absl::StrCat(existing->ToString(), ",", value.ToString());
    return true;
  }
  const char* Name() const override { return "DedupdTestAppend"; }
};

std::unique_ptr<Db> OpenDb(const std::string& path, bool hash_vector, bool concurrent) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.merge_operator = std::make_shared<AppendOperator>();
  options.allow_concurrent_memtable_write = concurrent;
  options.write_buffer_size = 64 << 20;  // flushes happen when the test asks
  if (hash_vector) {
    options.memtable_factory = std::make_shared<HashVectorMemTableRepFactory>(4);
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
  EXPECT_TRUE(s.ok()) << s.ToString();
  auto db = std::make_unique<Db>();
  db->db.reset(raw);
  return db;
}

// Every read the test compares, as text.
std::vector<std::string> ReadAll(rocksdb::DB* db, const rocksdb::Snapshot* snapshot,
                                 const std::vector<std::string>& keys,
                                 const std::vector<std::string>& targets) {
  std::vector<std::string> out;
  rocksdb::ReadOptions read;
  read.snapshot = snapshot;
  for (const std::string& k : keys) {
    std::string value;
    rocksdb::Status s = db->Get(read, k, &value);
    out.push_back(absl::StrCat("get ", k, " ", s.ok() ? value : s.ToString()));
  }
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<std::string> values;
  std::vector<rocksdb::Status> statuses = db->MultiGet(read, slices, &values);
  for (size_t i = 0; i < keys.size(); ++i) {
    out.push_back(absl::StrCat("multiget ", keys[i], " ",
                               statuses[i].ok() ? values[i] : statuses[i].ToString()));
  }
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    out.push_back(absl::StrCat("next ", it->key().ToString(), "=", it->value().ToString()));
  }
  for (it->SeekToLast(); it->Valid(); it->Prev()) {
    out.push_back(absl::StrCat("prev ", it->key().ToString()));
  }
  for (const std::string& t : targets) {
    it->Seek(t);
    for (int step = 0; step < 3 && it->Valid(); ++step, it->Next()) {
      out.push_back(absl::StrCat("seek ", t, " ", it->key().ToString()));
    }
    it->SeekForPrev(t);
    for (int step = 0; step < 3 && it->Valid(); ++step, it->Prev()) {
      out.push_back(absl::StrCat("seekforprev ", t, " ", it->key().ToString()));
    }
    it->Seek(t);
    if (it->Valid()) {
      it->Prev();
      out.push_back(absl::StrCat("seek-prev ", t, " ", it->Valid() ? it->key().ToString() : "end"));
    }
  }
  EXPECT_TRUE(it->status().ok()) << it->status().ToString();
  return out;
}

struct Config {
  const char* name;
  bool concurrent;      // allow_concurrent_memtable_write
  int flush_every;      // a Flush every this many operations (0: none)
  int keys;             // size of the key space (small: keys repeat)
  int immutable_every;  // every this many operations, reads with an
                        // immutable memtable not yet flushed (0: never)
};

class HashVectorMemTableDifferentialTest : public ::testing::TestWithParam<Config> {};

TEST_P(HashVectorMemTableDifferentialTest, ReadsLikeTheSkipList) {
  const Config& config = GetParam();
  const std::string dir = MakeTempDir("hash_vector_memtable_");
  std::unique_ptr<Db> hashed = OpenDb(dir + "/hashed", true, config.concurrent);
  std::unique_ptr<Db> skip = OpenDb(dir + "/skip", false, config.concurrent);
  ASSERT_NE(hashed->db, nullptr);
  ASSERT_NE(skip->db, nullptr);

  // Keys with shared prefixes, different lengths, the empty key and bytes
  // that sort before and after ASCII.
  std::vector<std::string> keys = {"", "a", std::string("a\0b", 3), "ab", "\xff", "\xff\xff"};
  // Long keys (a length varint of two and three bytes), one a prefix of
  // another, sharing 120+ bytes.
  keys.push_back(std::string(130, 'l'));
  keys.push_back(std::string(299, 'l'));
  keys.push_back(std::string(300, 'l') + "x");
  keys.push_back(std::string(20000, 'm'));
  for (int i = 0; static_cast<int>(keys.size()) < config.keys; ++i) {
    keys.push_back(absl::StrCat("https://h", i % 7, ".example/p/", i * 7919 % 1000));
  }
  std::vector<std::string> targets = {
      "", "a", "aa", "https://h3", "https://h3.example/p/5", "z", "\xff\xff\xff"};

  std::mt19937_64 rng(1234 + config.keys);
  auto key = [&] { return keys[rng() % keys.size()]; };
  const rocksdb::WriteOptions write;
  auto both = [&](const std::function<rocksdb::Status(rocksdb::DB*)>& op) {
    rocksdb::Status a = op(hashed->db.get());
    rocksdb::Status b = op(skip->db.get());
    ASSERT_TRUE(a.ok()) << a.ToString();
    ASSERT_TRUE(b.ok()) << b.ToString();
  };
  auto compare = [&](int op) {
    ASSERT_EQ(hashed->snapshots.size(), skip->snapshots.size());
    EXPECT_EQ(ReadAll(hashed->db.get(), nullptr, keys, targets),
              ReadAll(skip->db.get(), nullptr, keys, targets))
        << "latest, after operation " << op;
    for (size_t s = 0; s < hashed->snapshots.size(); ++s) {
      EXPECT_EQ(ReadAll(hashed->db.get(), hashed->snapshots[s], keys, targets),
                ReadAll(skip->db.get(), skip->snapshots[s], keys, targets))
          << "snapshot " << s << ", after operation " << op;
    }
  };

  constexpr int kOperations = 1500;
  for (int op = 1; op <= kOperations; ++op) {
    const uint64_t r = rng() % 100;
    if (r < 45) {
      const std::string k = key();
      const std::string v = absl::StrCat("v", op);
      both([&](rocksdb::DB* db) { return db->Put(write, k, v); });
    } else if (r < 50) {
      const std::string k = key();
      const std::string v = absl::StrCat("m", op);
      both([&](rocksdb::DB* db) { return db->Merge(write, k, v); });
    } else if (r < 70) {
      const std::string k = key();
      both([&](rocksdb::DB* db) { return db->Delete(write, k); });
    } else if (r < 85) {
      // A batch: several keys, some twice (the same user key twice in one
      // memtable at consecutive sequence numbers).
      rocksdb::WriteBatch batch;
      const int n = 1 + static_cast<int>(rng() % 8);
      for (int i = 0; i < n; ++i) {
        const std::string k = key();
        if (rng() % 4 == 0) {
          ASSERT_TRUE(batch.Delete(k).ok());
        } else {
          ASSERT_TRUE(batch.Put(k, absl::StrCat("b", op, ".", i)).ok());
        }
      }
      both([&](rocksdb::DB* db) {
        rocksdb::WriteBatch copy = batch;
        return db->Write(write, &copy);
      });
    } else if (r < 90) {
      hashed->snapshots.push_back(hashed->db->GetSnapshot());
      skip->snapshots.push_back(skip->db->GetSnapshot());
      if (hashed->snapshots.size() > 4) {
        hashed->db->ReleaseSnapshot(hashed->snapshots.front());
        skip->db->ReleaseSnapshot(skip->snapshots.front());
        hashed->snapshots.erase(hashed->snapshots.begin());
        skip->snapshots.erase(skip->snapshots.begin());
      }
    }
    if (config.flush_every > 0 && op % config.flush_every == 0) {
      both([&](rocksdb::DB* db) { return db->Flush(rocksdb::FlushOptions()); });
    }
    if (config.immutable_every > 0 && op % config.immutable_every == 0) {
      // Switch the memtable without flushing it (background work paused),
      // read through the immutable one, then let the flush run.
      both([&](rocksdb::DB* db) { return db->PauseBackgroundWork(); });
      rocksdb::FlushOptions no_wait;
      no_wait.wait = false;
      no_wait.allow_write_stall = true;
      both([&](rocksdb::DB* db) { return db->Flush(no_wait); });
      uint64_t immutable = 0;
      ASSERT_TRUE(hashed->db->GetIntProperty("rocksdb.num-immutable-mem-table", &immutable));
      EXPECT_GE(immutable, 1u);
      compare(op);
      both([&](rocksdb::DB* db) { return db->ContinueBackgroundWork(); });
    }
    if (op % 300 == 0) {
      compare(op);
      if (HasFatalFailure() || HasFailure()) break;
    }
  }
  compare(kOperations);
  hashed.reset();
  skip.reset();
  RemoveTree(dir);
}

INSTANTIATE_TEST_SUITE_P(Configs, HashVectorMemTableDifferentialTest,
                         ::testing::Values(Config{"few_keys", false, 0, 16, 0},
                                           Config{"few_keys_concurrent", true, 0, 16, 0},
                                           Config{"many_keys", true, 0, 400, 0},
                                           Config{"flushes", true, 400, 60, 0},
                                           Config{"flushes_serial", false, 250, 400, 0},
                                           Config{"immutable", true, 0, 60, 170},
                                           Config{"immutable_and_flushes", false, 500, 400, 230}),
                         [](const ::testing::TestParamInfo<Config>& info) {
                           return info.param.name;
                         });

// Through RocksDB (not under ThreadSanitizer: Debian's RocksDB is not
// TSan-built, see tests/tsan.supp; RepConcurrentTest below is): writers in
// parallel (concurrent memtable inserts within write groups) while readers
// Get what was written and iterate: every key written is
// read back with its value, iteration is in order and complete.
TEST(HashVectorMemTableDbTest, ParallelWritersAndReaders) {
  const std::string dir = MakeTempDir("hash_vector_memtable_concurrent_");
  {
    std::unique_ptr<Db> db = OpenDb(dir + "/db", true, /*concurrent=*/true);
    ASSERT_NE(db->db, nullptr);
    constexpr int kWriters = 4;
    constexpr int kBatches = 40;
    constexpr int kPerBatch = 50;
    auto key_of = [](int w, int i) { return absl::StrCat("w", w, "/", i * 7 % 1000, "/", i); };
    std::atomic<int> written[kWriters];
    for (auto& w : written) w.store(0);
    std::atomic<bool> stop{false};
    std::atomic<int> read_errors{0};

    std::vector<std::thread> threads;
    for (int w = 0; w < kWriters; ++w) {
      threads.emplace_back([&, w] {
        for (int b = 0; b < kBatches; ++b) {
          rocksdb::WriteBatch batch;
          for (int j = 0; j < kPerBatch; ++j) {
            const int i = b * kPerBatch + j;
            EXPECT_TRUE(batch.Put(key_of(w, i), absl::StrCat(i)).ok());
          }
          rocksdb::Status s = db->db->Write(rocksdb::WriteOptions(), &batch);
          EXPECT_TRUE(s.ok()) << s.ToString();
          written[w].store((b + 1) * kPerBatch);
        }
      });
    }
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        std::mt19937 rng(r);
        int rounds = 0;
        while (!stop.load() && rounds < 100000) {
          ++rounds;
          const int w = static_cast<int>(rng() % kWriters);
          const int n = written[w].load();
          if (n > 0) {
            const int i = static_cast<int>(rng() % n);
            std::string value;
            rocksdb::Status s = db->db->Get(rocksdb::ReadOptions(), key_of(w, i), &value);
            if (!s.ok() || value != absl::StrCat(i)) read_errors.fetch_add(1);
          }
          if (rounds % 200 == 0) {
            std::unique_ptr<rocksdb::Iterator> it(db->db->NewIterator(rocksdb::ReadOptions()));
            std::string last;
            bool first = true;
            for (it->SeekToFirst(); it->Valid(); it->Next()) {
              if (!first && !(last < it->key().ToString())) read_errors.fetch_add(1);
              last = it->key().ToString();
              first = false;
            }
          }
        }
      });
    }
    for (int w = 0; w < kWriters; ++w) threads[static_cast<size_t>(w)].join();
    stop.store(true);
    for (size_t t = kWriters; t < threads.size(); ++t) threads[t].join();
    EXPECT_EQ(read_errors.load(), 0);

    std::vector<std::string> want;
    for (int w = 0; w < kWriters; ++w) {
      for (int i = 0; i < kBatches * kPerBatch; ++i) want.push_back(key_of(w, i));
    }
    std::sort(want.begin(), want.end());
    std::vector<std::string> got;
    std::unique_ptr<rocksdb::Iterator> it(db->db->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) got.push_back(it->key().ToString());
    EXPECT_EQ(got, want);
    // And the same after a flush (the immutable memtable sorted once).
    ASSERT_TRUE(db->db->Flush(rocksdb::FlushOptions()).ok());
    got.clear();
    it.reset(db->db->NewIterator(rocksdb::ReadOptions()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) got.push_back(it->key().ToString());
    EXPECT_EQ(got, want);
  }
  RemoveTree(dir);
}

// The memtable's size grows with its entries (what makes RocksDB flush it
// at write_buffer_size) and a full memtable is flushed by itself.
TEST(HashVectorMemTableDbTest, FlushesWhenFull) {
  const std::string dir = MakeTempDir("hash_vector_memtable_full_");
  {
    rocksdb::Options options;
    options.create_if_missing = true;
    options.write_buffer_size = 1 << 20;
    options.memtable_factory = std::make_shared<HashVectorMemTableRepFactory>();
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(options, dir + "/db", &raw).ok());
    std::unique_ptr<rocksdb::DB> db(raw);
    uint64_t before = 0;
    ASSERT_TRUE(db->GetIntProperty("rocksdb.cur-size-active-mem-table", &before));
    for (int i = 0; i < 1000; ++i) {
      ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), absl::StrCat("key", i), "v").ok());
    }
    uint64_t after = 0;
    ASSERT_TRUE(db->GetIntProperty("rocksdb.cur-size-active-mem-table", &after));
    EXPECT_GT(after, before);
    // 4 MiB of 100-byte values through a 1 MiB memtable: several flushes.
    const std::string value(100, 'x');
    for (int i = 0; i < 40000; ++i) {
      ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), absl::StrCat("big", i), value).ok());
    }
    // The active memtable was switched (it filled up), and its
    // predecessors reach table files (flushes run in the background:
    // waited for, up to a minute).
    uint64_t active_entries = 0;
    ASSERT_TRUE(db->GetIntProperty("rocksdb.num-entries-active-mem-table", &active_entries));
    EXPECT_LT(active_entries, 41000u);
    std::vector<rocksdb::LiveFileMetaData> files;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (files.empty() && std::chrono::steady_clock::now() < deadline) {
      db->GetLiveFilesMetaData(&files);
      if (files.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_FALSE(files.empty());
    std::string value_read;
    ASSERT_TRUE(db->Get(rocksdb::ReadOptions(), "big123", &value_read).ok());
    EXPECT_EQ(value_read, value);
  }
  RemoveTree(dir);
}

// The representation alone, driven the way RocksDB drives it: entries
// built here in RocksDB's memtable entry format, compared by an internal
// key comparator written here (user key ascending, then sequence number
// descending).
std::string Entry(absl::string_view user_key, uint64_t sequence, absl::string_view value) {
  std::string e;
  auto varint = [&e](uint32_t v) {
    while (v >= 0x80) {
      e.push_back(static_cast<char>(v | 0x80));
      v >>= 7;
    }
    e.push_back(static_cast<char>(v));
  };
  varint(static_cast<uint32_t>(user_key.size() + 8));
  e.append(user_key.data(), user_key.size());
  const uint64_t tag = (sequence << 8) | 1;  // kTypeValue
  for (int i = 0; i < 8; ++i) e.push_back(static_cast<char>(tag >> (8 * i)));
  varint(static_cast<uint32_t>(value.size()));
  e.append(value.data(), value.size());
  return e;
}

rocksdb::Slice InternalKey(const char* entry) {
  const auto* p = reinterpret_cast<const unsigned char*>(entry);
  uint32_t length = 0;
  for (int shift = 0;; shift += 7) {
    const uint32_t byte = *p++;
    length |= (byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) break;
  }
  return rocksdb::Slice(reinterpret_cast<const char*>(p), length);
}

class TestComparator : public rocksdb::MemTableRep::KeyComparator {
 public:
  int operator()(const char* a, const char* b) const override {
    return Compare(InternalKey(a), InternalKey(b));
  }
  int operator()(const char* a, const rocksdb::Slice& b) const override {
    return Compare(InternalKey(a), b);
  }

 private:
  static int Compare(const rocksdb::Slice& a, const rocksdb::Slice& b) {
    const rocksdb::Slice ua(a.data(), a.size() - 8);
    const rocksdb::Slice ub(b.data(), b.size() - 8);
    if (const int c = ua.compare(ub); c != 0) return c;
    uint64_t ta = 0;
    uint64_t tb = 0;
    for (int i = 7; i >= 0; --i) {
      ta = (ta << 8) | static_cast<unsigned char>(a.data()[a.size() - 8 + static_cast<size_t>(i)]);
      tb = (tb << 8) | static_cast<unsigned char>(b.data()[b.size() - 8 + static_cast<size_t>(i)]);
    }
    return ta > tb ? -1 : ta < tb ? 1 : 0;
  }
};

std::vector<std::string> Keys(rocksdb::MemTableRep::Iterator* it) {
  std::vector<std::string> keys;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    keys.push_back(InternalKey(it->key()).ToString());
  }
  return keys;
}

// A representation from the factory, over `cmp`, with no allocator (the
// tests allocate their entries themselves).
std::unique_ptr<rocksdb::MemTableRep> NewRep(const rocksdb::MemTableRep::KeyComparator& cmp,
                                             int shards = 16) {
  return std::unique_ptr<rocksdb::MemTableRep>(
      HashVectorMemTableRepFactory(shards).CreateMemTableRep(cmp, nullptr, nullptr, nullptr));
}

TEST(HashVectorMemTableRepTest, IteratorsContainsAndSize) {
  TestComparator cmp;
  std::unique_ptr<rocksdb::MemTableRep> rep = NewRep(cmp, 3);
  // Out of order, one user key three times.
  std::vector<std::string> entries = {Entry("m", 5, "x"), Entry("b", 2, "x"), Entry("m", 9, "y"),
                                      Entry("z", 1, "x"), Entry("m", 7, "z")};
  const size_t empty_bytes = rep->ApproximateMemoryUsage();
  for (std::string& e : entries) rep->InsertConcurrently(e.data());
  EXPECT_GT(rep->ApproximateMemoryUsage(), empty_bytes);
  for (const std::string& e : entries) EXPECT_TRUE(rep->Contains(e.data()));
  EXPECT_FALSE(rep->Contains(Entry("m", 6, "x").data()));
  EXPECT_FALSE(rep->Contains(Entry("c", 2, "x").data()));

  auto ik = [](absl::string_view user_key, uint64_t seq) {
    return InternalKey(Entry(user_key, seq, "").data()).ToString();
  };
  std::unique_ptr<rocksdb::MemTableRep::Iterator> it(rep->GetIterator(nullptr));
  EXPECT_THAT(Keys(it.get()),
              ::testing::ElementsAre(ik("b", 2), ik("m", 9), ik("m", 7), ik("m", 5), ik("z", 1)));
  // Range counts (exact at this size): [start, end) in internal key order.
  EXPECT_EQ(rep->ApproximateNumEntries(ik("a", 1), ik("zz", 1)), 5u);
  EXPECT_EQ(rep->ApproximateNumEntries(ik("m", 99), ik("n", 99)), 3u);
  EXPECT_EQ(rep->ApproximateNumEntries(ik("m", 8), ik("z", 1)), 2u);
  EXPECT_EQ(rep->ApproximateNumEntries(ik("c", 1), ik("l", 1)), 0u);
  struct SeekCase {
    std::string target;
    const char* seek;           // first entry >= target, "" for none
    const char* seek_for_prev;  // last entry <= target, "" for none
  };
  const std::string m8 = ik("m", 8);
  const SeekCase cases[] = {
      {ik("a", 1), "b", ""},   {ik("b", 2), "b", "b"}, {ik("b", 1), "m", "b"},
      {ik("m", 99), "m", "b"}, {m8, "m", "m"},         {ik("m", 1), "z", "m"},
      {ik("z", 1), "z", "z"},  {ik("zz", 1), "", "z"},
  };
  for (const SeekCase& c : cases) {
    std::string tmp = c.target;
    it->Seek(rocksdb::Slice(tmp), nullptr);
    EXPECT_EQ(it->Valid() ? InternalKey(it->key()).ToString().substr(0, 1) : "", c.seek);
    it->SeekForPrev(rocksdb::Slice(tmp), nullptr);
    EXPECT_EQ(it->Valid() ? InternalKey(it->key()).ToString().substr(0, 1) : "", c.seek_for_prev);
  }
  it->Seek(rocksdb::Slice(m8), nullptr);  // m@7
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(InternalKey(it->key()).ToString(), ik("m", 7));
  it->Prev();
  EXPECT_EQ(InternalKey(it->key()).ToString(), ik("m", 9));
  it->SeekToFirst();
  it->Prev();
  EXPECT_FALSE(it->Valid());
  it->SeekToLast();
  EXPECT_EQ(InternalKey(it->key()).ToString(), ik("z", 1));
  it->Next();
  EXPECT_FALSE(it->Valid());

  // An iterator sees what was inserted before it was made; later entries
  // are merged into the next one's sorted run.
  std::string late = Entry("c", 3, "x");
  rep->InsertConcurrently(late.data());
  EXPECT_EQ(Keys(it.get()).size(), 5u);
  // With an arena (never dereferenced): RocksDB then only destroys it.
  alignas(8) char fake_arena[8];
  rocksdb::MemTableRep::Iterator* arena_it =
      rep->GetIterator(reinterpret_cast<rocksdb::Arena*>(fake_arena));
  EXPECT_THAT(Keys(arena_it), ::testing::ElementsAre(ik("b", 2), ik("c", 3), ik("m", 9), ik("m", 7),
                                                     ik("m", 5), ik("z", 1)));
  arena_it->~Iterator();
  // One more (placed by binary search into the previous sorted run), then
  // many (merged with it).
  std::vector<std::string> more = {Entry("n", 4, "x")};
  for (int i = 0; i < 12; ++i) more.push_back(Entry(absl::StrCat("k", i % 5), 20 + i, "x"));
  std::vector<const char*> all;
  for (const std::string& e : entries) all.push_back(e.data());
  all.push_back(late.data());
  for (size_t batch = 0; batch < 2; ++batch) {
    for (size_t i = batch == 0 ? 0 : 1; i < (batch == 0 ? 1 : more.size()); ++i) {
      rep->InsertConcurrently(more[i].data());
      all.push_back(more[i].data());
    }
    std::sort(all.begin(), all.end(), [&](const char* a, const char* b) { return cmp(a, b) < 0; });
    std::vector<std::string> want;
    for (const char* e : all) want.push_back(InternalKey(e).ToString());
    std::unique_ptr<rocksdb::MemTableRep::Iterator> next(rep->GetIterator(nullptr));
    EXPECT_EQ(Keys(next.get()), want) << "after batch " << batch;
  }
  // Once read-only, its size no longer changes, iterators or not.
  rep->MarkReadOnly();
  const size_t bytes = rep->ApproximateMemoryUsage();
  std::unique_ptr<rocksdb::MemTableRep::Iterator> last(rep->GetIterator(nullptr));
  EXPECT_EQ(Keys(last.get()).size(), all.size());
  EXPECT_EQ(rep->ApproximateMemoryUsage(), bytes);
}

// User keys descending, then sequence numbers descending: not bytewise.
class ReverseComparator : public rocksdb::MemTableRep::KeyComparator {
 public:
  int operator()(const char* a, const char* b) const override { return -TestComparator()(a, b); }
  int operator()(const char* a, const rocksdb::Slice& b) const override {
    return -TestComparator()(a, b);
  }
};

// Iterators sort a memtable by 8-byte chunks of the keys, level by level;
// the order must be the comparator's whatever the keys share: long common
// prefixes (past 8 and 16 bytes), zero bytes inside and at the end, keys
// that are prefixes of others, the empty key, a key written many times.
TEST(HashVectorMemTableRepTest, SortsInTheComparatorsOrder) {
  std::mt19937_64 rng(7);
  const std::vector<std::string> stems = {
      "", "https://", "https://host-1.example/", "https://host-1.example/docs/3/library/",
      std::string("zero\0\0\0\0\0\0\0\0bytes", 17), "a",
      // Past a one-byte length varint (internal keys of 128 bytes and more).
      std::string(125, 'p') + "/", std::string(300, 'q')};
  std::vector<std::string> entries;
  entries.reserve(6000);
  for (int i = 0; i < 6000; ++i) {
    std::string key = stems[rng() % stems.size()];
    const int tail = static_cast<int>(rng() % 24);
    for (int t = 0; t < tail; ++t) {
      const uint64_t r = rng() % 10;
      key.push_back(r == 0 ? '\0' : r == 1 ? '\xff' : static_cast<char>('a' + r));
    }
    if (rng() % 10 == 0) key.append(static_cast<size_t>(rng() % 10), '\0');
    if (i % 50 == 0) key = "repeated";
    entries.push_back(Entry(key, static_cast<uint64_t>(i + 1), "v"));
  }
  TestComparator bytewise;
  ReverseComparator reverse;
  for (const rocksdb::MemTableRep::KeyComparator* cmp :
       std::vector<const rocksdb::MemTableRep::KeyComparator*>{&bytewise, &reverse}) {
    std::unique_ptr<rocksdb::MemTableRep> rep = NewRep(*cmp);
    std::vector<const char*> want;
    for (std::string& e : entries) {
      rep->Insert(e.data());
      want.push_back(e.data());
    }
    std::sort(want.begin(), want.end(),
              [cmp](const char* a, const char* b) { return (*cmp)(a, b) < 0; });
    std::unique_ptr<rocksdb::MemTableRep::Iterator> it(rep->GetIterator(nullptr));
    std::vector<const char*> got;
    for (it->SeekToFirst(); it->Valid(); it->Next()) got.push_back(it->key());
    EXPECT_TRUE(got == want) << (cmp == &bytewise ? "bytewise" : "reverse");
  }
}

// New entries after a sorted run: a few are placed into it by binary
// search (new versions of stored keys, keys before the first and after
// the last), many are merged with it; either way the order is the
// comparator's.
TEST(HashVectorMemTableRepTest, EntriesAddedAfterAnIteratorAreMergedInOrder) {
  TestComparator cmp;
  std::unique_ptr<rocksdb::MemTableRep> rep = NewRep(cmp);
  std::vector<std::string> entries;
  entries.reserve(4000);
  uint64_t seq = 0;
  for (int i = 0; i < 2000; ++i) {
    entries.push_back(Entry(absl::StrCat("key/", i * 7 % 2000), ++seq, "v"));
    rep->Insert(entries.back().data());
  }
  auto check = [&](const char* when) {
    std::vector<const char*> want;
    for (std::string& e : entries) want.push_back(e.data());
    std::sort(want.begin(), want.end(),
              [&](const char* a, const char* b) { return cmp(a, b) < 0; });
    std::unique_ptr<rocksdb::MemTableRep::Iterator> it(rep->GetIterator(nullptr));
    std::vector<const char*> got;
    for (it->SeekToFirst(); it->Valid(); it->Next()) got.push_back(it->key());
    EXPECT_TRUE(got == want) << when;
  };
  check("first sort");
  // Few: placed by binary search (3 * log2(2000) < 2000).
  for (const char* k : {"key/5", "key/1999", "a-first", "z-last"}) {
    entries.push_back(Entry(k, ++seq, "v"));
    rep->Insert(entries.back().data());
  }
  check("after 4 new entries");
  entries.push_back(Entry("key/5", ++seq, "v"));  // a third version
  rep->Insert(entries.back().data());
  check("after 1 more");
  // Many: merged.
  for (int i = 0; i < 1500; ++i) {
    entries.push_back(Entry(absl::StrCat("key/", i * 13 % 3000), ++seq, "v"));
    rep->Insert(entries.back().data());
  }
  check("after 1,500 new entries");
}

// A large memtable's range count is estimated from a sample (2,048 of its
// 20,000 entries: a standard deviation of ~190 here): within 20%.
TEST(HashVectorMemTableRepTest, RangeEstimateOfALargeMemtable) {
  TestComparator cmp;
  std::unique_ptr<rocksdb::MemTableRep> rep = NewRep(cmp);
  std::vector<std::string> entries;
  entries.reserve(20000);
  for (int i = 0; i < 20000; ++i) {
    // A quarter "a..." keys, the rest "b...".
    entries.push_back(
        Entry(absl::StrCat(i % 4 == 0 ? "a" : "b", i), static_cast<uint64_t>(i + 1), "v"));
    rep->Insert(entries.back().data());
  }
  auto ik = [](absl::string_view user_key) {
    return InternalKey(Entry(user_key, 1, "").data()).ToString();
  };
  const uint64_t a = rep->ApproximateNumEntries(ik("a"), ik("b"));
  const uint64_t all = rep->ApproximateNumEntries(ik(""), ik("c"));
  EXPECT_NEAR(static_cast<double>(a), 5000.0, 1000.0);
  EXPECT_EQ(all, 20000u);
}

// Under ThreadSanitizer too: inserters, iterators and lookups at once.
TEST(HashVectorMemTableRepConcurrentTest, InsertsIteratorsAndLookups) {
  TestComparator cmp;
  std::unique_ptr<rocksdb::MemTableRep> rep = NewRep(cmp);
  constexpr int kWriters = 3;
  constexpr int kPerWriter = 2000;
  std::vector<std::vector<std::string>> entries(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < kPerWriter; ++i) {
      entries[static_cast<size_t>(w)].push_back(Entry(absl::StrCat("k", i % 500, "/", w, "/", i),
                                                      static_cast<uint64_t>(w * kPerWriter + i + 1),
                                                      "v"));
    }
  }
  std::atomic<bool> finished[kWriters];
  for (auto& f : finished) f.store(false);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (std::string& e : entries[static_cast<size_t>(w)]) rep->InsertConcurrently(e.data());
      finished[w].store(true);
    });
  }
  threads.emplace_back([&] {
    for (int round = 0; round < 200; ++round) {
      std::unique_ptr<rocksdb::MemTableRep::Iterator> it(rep->GetIterator(nullptr));
      const char* previous = nullptr;
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        if (previous != nullptr && cmp(previous, it->key()) >= 0) errors.fetch_add(1);
        previous = it->key();
      }
      // A finished writer's entries are all found, and every one of them
      // is in an iterator made after it finished.
      bool done[kWriters];
      for (int w = 0; w < kWriters; ++w) done[w] = finished[w].load();
      std::unique_ptr<rocksdb::MemTableRep::Iterator> after(rep->GetIterator(nullptr));
      size_t seen_of_done = 0;
      for (after->SeekToFirst(); after->Valid(); after->Next()) {
        // Keys are "k<i>/<writer>/<j>".
        const std::string key = InternalKey(after->key()).ToString();
        const size_t slash = key.find('/');
        const int w = key[slash + 1] - '0';
        if (w >= 0 && w < kWriters && done[w]) ++seen_of_done;
      }
      size_t want_of_done = 0;
      for (int w = 0; w < kWriters; ++w) {
        if (!done[w]) continue;
        want_of_done += static_cast<size_t>(kPerWriter);
        if (!rep->Contains(entries[static_cast<size_t>(w)].back().data())) errors.fetch_add(1);
      }
      if (seen_of_done != want_of_done) errors.fetch_add(1);
    }
  });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  std::unique_ptr<rocksdb::MemTableRep::Iterator> it(rep->GetIterator(nullptr));
  EXPECT_EQ(Keys(it.get()).size(), static_cast<size_t>(kWriters * kPerWriter));
  for (const auto& w : entries) {
    for (const std::string& e : w) ASSERT_TRUE(rep->Contains(e.data()));
  }
}

}  // namespace
}  // namespace dedupd
