// simhash_index_test.cc: SimHashIndex answers exactly what a brute-force scan
// answers, for every supported (max_distance, blocks) layout, under Insert /
// Remove / BulkInsert mixes and concurrent readers and writers.
#include "core/index/simhash_index.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dedupd {

// Found by ADL (Match lives in dedupd), so failures print readably.
void PrintTo(const SimHashIndex::Match& m, std::ostream* os) {
  *os << "{0x" << std::hex << m.fingerprint << std::dec << ", id " << m.id << ", d " << m.distance
      << "}";
}

namespace {

using Entry = SimHashIndex::Entry;
using Match = SimHashIndex::Match;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr size_t kNoLimit = ~size_t{0};

// KPlusOneBlocksMatchesThePreviousResults' figures, computed by the same
// loop against core/index/simhash_index.cc of commit 163cf3a (before blocks were
// configurable), indexed by k (1, 3, 5 used).
constexpr uint64_t kPreviousMatches[] = {0, 1495, 0, 1915, 0, 2221};
constexpr uint64_t kPreviousChecksums[] = {0, 15184163404554941884ULL, 0, 4083457107938537857ULL,
                                           0, 1302277503077800500ULL};

// The reference: every stored pair within d, ordered by (distance, id, fp).
class BruteForce {
 public:
  void Insert(uint64_t fp, uint32_t id) { set_.insert({fp, id}); }
  bool Remove(uint64_t fp, uint32_t id) { return set_.erase({fp, id}) > 0; }
  size_t size() const { return set_.size(); }
  std::vector<Match> Query(uint64_t fp, int d) const {
    std::vector<Match> out;
    for (const auto& [stored, id] : set_) {
      const int distance = __builtin_popcountll(stored ^ fp);
      if (distance <= d) out.push_back({stored, id, distance});
    }
    std::sort(out.begin(), out.end(), [](const Match& a, const Match& b) {
      if (a.distance != b.distance) return a.distance < b.distance;
      if (a.id != b.id) return a.id < b.id;
      return a.fingerprint < b.fingerprint;
    });
    return out;
  }

 private:
  std::set<std::pair<uint64_t, uint32_t>> set_;
};

// `fp` with `bits` distinct random bits flipped.
uint64_t FlipBits(uint64_t fp, int bits, std::mt19937_64& rng) {
  uint64_t mask = 0;
  while (__builtin_popcountll(mask) < bits) mask |= uint64_t{1} << (rng() % 64);
  return fp ^ mask;
}

// Every (k, blocks) an index can be built for, blocks explicit (not 0).
std::vector<std::pair<int, int>> AllLayouts() {
  std::vector<std::pair<int, int>> out;
  for (int k = 0; k <= SimHashIndex::kMaxSupportedDistance; ++k) {
    for (int b = k + 1; b <= k + 1 + SimHashIndex::kMaxExtraBlocks; ++b) {
      if (SimHashIndex::IsValidLayout(k, b)) out.push_back({k, b});
    }
  }
  return out;
}

// Compares Query(q, d) with the reference for every d in 0..index k.
void ExpectSameAsBruteForce(const SimHashIndex& index, const BruteForce& ref, uint64_t q) {
  ASSERT_EQ(index.size(), ref.size());
  for (int d = 0; d <= index.max_distance(); ++d) {
    size_t total = 12345;
    const std::vector<Match> want = ref.Query(q, d);
    EXPECT_EQ(index.Query(q, d, kNoLimit, &total), want)
        << "query 0x" << std::hex << q << std::dec << " d=" << d << " k=" << index.max_distance()
        << " blocks=" << index.blocks();
    EXPECT_EQ(total, want.size());
  }
}

TEST(SimHashIndexTest, HeaderExample) {
  SimHashIndex index(3);
  index.Insert(0x0123456789abcdefULL, 42);
  size_t total = 0;
  EXPECT_THAT(index.Query(0x0123456789abcdeeULL, 3, 10, &total),
              ElementsAre(Match{0x0123456789abcdefULL, 42, 1}));
  EXPECT_EQ(total, 1u);
  EXPECT_EQ(index.max_distance(), 3);
}

TEST(SimHashIndexTest, EmptyIndexFindsNothing) {
  for (int k = 0; k <= SimHashIndex::kMaxSupportedDistance; ++k) {
    SimHashIndex index(k);
    size_t total = 7;
    EXPECT_THAT(index.Query(0, k, kNoLimit, &total), IsEmpty());
    EXPECT_EQ(total, 0u);
    EXPECT_EQ(index.size(), 0u);
    EXPECT_GT(index.MemoryBytes(), 0u);  // the bucket directories
  }
}

// Table: stored pairs, a query, the distance asked, the matches expected.
// Fingerprints sit at block boundaries (bits 15/16, 31/32, 47/48 for k = 3)
// and at both ends, where an off-by-one in the layout would show.
TEST(SimHashIndexTest, TableOfQueries) {
  const uint64_t base = 0xF0F0F0F0F0F0F0F0ULL;
  const auto bit = [](int i) { return uint64_t{1} << i; };
  const struct {
    const char* name;
    int index_k;
    std::vector<Entry> stored;
    uint64_t query;
    int d;
    std::vector<Match> want;
  } cases[] = {
      {"exact only at d=0", 3, {{base, 1}, {base ^ bit(0), 2}}, base, 0, {{base, 1, 0}}},
      {"one bit in each of the 4 blocks is distance 4, not 3",
       3,
       {{base ^ bit(0) ^ bit(16) ^ bit(32) ^ bit(48), 1}},
       base,
       3,
       {}},
      {"three blocks differ, the fourth agrees",
       3,
       {{base ^ bit(15) ^ bit(16) ^ bit(63), 9}},
       base,
       3,
       {{base ^ bit(15) ^ bit(16) ^ bit(63), 9, 3}}},
      {"three bits in one block",
       3,
       {{base ^ bit(47) ^ bit(46) ^ bit(32), 5}},
       base,
       3,
       {{base ^ bit(47) ^ bit(46) ^ bit(32), 5, 3}}},
      {"ordered by distance then id",
       3,
       {{base ^ bit(1), 3}, {base, 7}, {base ^ bit(40), 1}, {base, 2}},
       base,
       1,
       {{base, 2, 0}, {base, 7, 0}, {base ^ bit(40), 1, 1}, {base ^ bit(1), 3, 1}}},
      {"a smaller d than the index's",
       3,
       {{base ^ bit(1) ^ bit(2), 1}, {base ^ bit(63), 2}},
       base,
       1,
       {{base ^ bit(63), 2, 1}}},
      {"negative d matches nothing", 3, {{base, 1}}, base, -1, {}},
      {"k=0 is an exact lookup", 0, {{base, 1}, {base ^ bit(5), 2}}, base, 0, {{base, 1, 0}}},
      {"k=1 across the two 32-bit blocks",
       1,
       {{base ^ bit(31), 1}, {base ^ bit(32), 2}, {base ^ bit(31) ^ bit(32), 3}},
       base,
       1,
       {{base ^ bit(31), 1, 1}, {base ^ bit(32), 2, 1}}},
      {"k=7: seven bits in seven of the eight 8-bit blocks",
       7,
       {{base ^ bit(0) ^ bit(8) ^ bit(16) ^ bit(24) ^ bit(32) ^ bit(40) ^ bit(48), 4}},
       base,
       7,
       {{base ^ bit(0) ^ bit(8) ^ bit(16) ^ bit(24) ^ bit(32) ^ bit(40) ^ bit(48), 4, 7}}},
      {"all zeros and all ones",
       2,
       {{0, 1}, {~uint64_t{0}, 2}, {bit(63), 3}},
       0,
       2,
       {{0, 1, 0}, {bit(63), 3, 1}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    SimHashIndex index(c.index_k);
    for (const Entry& e : c.stored) index.Insert(e.fingerprint, e.id);
    size_t total = 0;
    EXPECT_EQ(index.Query(c.query, c.d, kNoLimit, &total), c.want);
    EXPECT_EQ(total, c.want.size());
  }
}

// The same pairs loaded in bulk give the same answers.
TEST(SimHashIndexTest, BulkInsertEqualsInserts) {
  std::mt19937_64 rng(11);
  std::vector<Entry> entries;
  for (int i = 0; i < 2000; ++i) entries.push_back({rng(), uint32_t(i)});
  for (int i = 0; i < 2000; i += 3) {  // planted neighbours
    entries.push_back({FlipBits(entries[i].fingerprint, i % 5, rng), uint32_t(10000 + i)});
  }
  SimHashIndex bulk(3), one_by_one(3);
  bulk.BulkInsert(entries);
  for (const Entry& e : entries) one_by_one.Insert(e.fingerprint, e.id);
  EXPECT_EQ(bulk.size(), entries.size());
  EXPECT_EQ(one_by_one.size(), entries.size());
  for (int i = 0; i < 2000; i += 7) {
    const uint64_t q = FlipBits(entries[i].fingerprint, i % 4, rng);
    EXPECT_EQ(bulk.Query(q, 3, kNoLimit), one_by_one.Query(q, 3, kNoLimit));
  }
}

// Random and clustered data, planted neighbours at distance 0..k+1 of the
// queries, every (k, blocks) layout the index supports.
TEST(SimHashIndexTest, RandomizedExactAgainstBruteForceForEveryLayout) {
  for (const auto& [k, blocks] : AllLayouts()) {
    SCOPED_TRACE(testing::Message() << "k=" << k << " blocks=" << blocks);
    std::mt19937_64 rng(20070508 + k * 16 + blocks);
    SimHashIndex index(k, blocks);
    ASSERT_EQ(index.blocks(), blocks);
    BruteForce ref;
    std::vector<Entry> bulk;
    // Far random points, loaded in bulk.
    for (uint32_t i = 0; i < 3000; ++i) bulk.push_back({rng(), i});
    // A dense cluster: only 20 fixed bit positions vary, so buckets hold
    // many entries (binary searches and multi-bucket spans get exercised).
    const uint64_t cluster_base = rng();
    std::vector<int> free_bits;
    while (free_bits.size() < 20) {
      const int b = static_cast<int>(rng() % 64);
      if (std::find(free_bits.begin(), free_bits.end(), b) == free_bits.end())
        free_bits.push_back(b);
    }
    for (uint32_t i = 0; i < 2000; ++i) {
      uint64_t fp = cluster_base;
      for (int b : free_bits) {
        if (rng() % 8 == 0) fp ^= uint64_t{1} << b;
      }
      bulk.push_back({fp, 100000 + i});
    }
    bulk.push_back(bulk[5]);  // a duplicate inside the bulk load
    index.BulkInsert(bulk);
    for (const Entry& e : bulk) ref.Insert(e.fingerprint, e.id);

    // Queries with neighbours at every distance 0..k+1, inserted online.
    std::vector<uint64_t> queries;
    for (int i = 0; i < 40; ++i) {
      const uint64_t q = i % 2 == 0 ? rng() : bulk[rng() % bulk.size()].fingerprint;
      queries.push_back(q);
      for (int d = 0; d <= k + 1; ++d) {
        const uint64_t fp = FlipBits(q, d, rng);
        const uint32_t id = 200000 + i * 16 + d;
        index.Insert(fp, id);
        ref.Insert(fp, id);
      }
    }
    for (uint64_t q : queries) ExpectSameAsBruteForce(index, ref, q);
    for (int i = 0; i < 20; ++i) {
      ExpectSameAsBruteForce(index, ref, bulk[rng() % bulk.size()].fingerprint);
    }
  }
}

// Planted neighbours at distance exactly 0..k and k+1 from a query, with
// the differing bits placed on block boundaries and spread over as many
// blocks as possible (the cases the pigeonhole argument is tight on), plus
// random placements: found exactly when within the distance asked, once.
TEST(SimHashIndexTest, PlantedNeighboursAtEveryDistanceForEveryLayout) {
  for (const auto& [k, blocks] : AllLayouts()) {
    SCOPED_TRACE(testing::Message() << "k=" << k << " blocks=" << blocks);
    std::mt19937_64 rng(4242 + k * 16 + blocks);
    // Bit positions (from the top) that start or end a block.
    std::vector<int> edges;
    for (int i = 0, start = 0; i < blocks; ++i) {
      const int width = 64 / blocks + (i < 64 % blocks ? 1 : 0);
      edges.push_back(start);
      edges.push_back(start + width - 1);
      start += width;
    }
    for (int trial = 0; trial < 30; ++trial) {
      SimHashIndex index(k, blocks);
      BruteForce ref;
      const uint64_t q = rng();
      // Background noise.
      for (uint32_t i = 0; i < 200; ++i) {
        const uint64_t fp = rng();
        index.Insert(fp, i);
        ref.Insert(fp, i);
      }
      for (int d = 0; d <= k + 1; ++d) {
        // One on block edges (different blocks first), one at random.
        uint64_t mask = 0;
        for (size_t j = 0; __builtin_popcountll(mask) < d; ++j) {
          const size_t pick = (trial % 2 == 0 ? 2 * j : rng()) % edges.size();
          mask |= uint64_t{1} << (63 - edges[(pick + trial) % edges.size()]);
        }
        index.Insert(q ^ mask, 1000 + d);
        ref.Insert(q ^ mask, 1000 + d);
        const uint64_t random_fp = FlipBits(q, d, rng);
        index.Insert(random_fp, 2000 + d);
        ref.Insert(random_fp, 2000 + d);
      }
      ExpectSameAsBruteForce(index, ref, q);
      // Directly: at d = k both planted k-neighbours are there, no k+1 one.
      std::set<uint32_t> ids;
      for (const Match& m : index.Query(q, k, kNoLimit)) {
        EXPECT_TRUE(ids.insert(m.id).second) << "reported twice: " << m.id;
      }
      for (int d = 0; d <= k; ++d) {
        EXPECT_EQ(ids.count(1000 + d), 1u) << "d=" << d;
        EXPECT_EQ(ids.count(2000 + d), 1u) << "d=" << d;
      }
      EXPECT_EQ(ids.count(1000 + k + 1), 0u);
      EXPECT_EQ(ids.count(2000 + k + 1), 0u);
    }
  }
}

// blocks = k+1 (and 0, the default) is the layout from before blocks were
// configurable: k+1 tables; and every layout gives the same answers.
TEST(SimHashIndexTest, DefaultLayoutIsOneTablePerBlockAndAllLayoutsAgree) {
  for (int k = 0; k <= SimHashIndex::kMaxSupportedDistance; ++k) {
    SimHashIndex by_default(k), explicit_layout(k, k + 1);
    EXPECT_EQ(by_default.blocks(), k + 1);
    EXPECT_EQ(by_default.tables(), k + 1);
    EXPECT_EQ(explicit_layout.tables(), k + 1);
    EXPECT_EQ(SimHashIndex::DefaultBlocks(k), k + 1);
  }
  EXPECT_EQ(SimHashIndex(3, 5).tables(), 10);
  EXPECT_EQ(SimHashIndex(3, 6).tables(), 20);
  EXPECT_EQ(SimHashIndex(2, 5).tables(), 10);
  EXPECT_EQ(SimHashIndex(0, 3).tables(), 1);

  std::mt19937_64 rng(5);
  std::vector<Entry> entries;
  for (uint32_t i = 0; i < 4000; ++i) entries.push_back({rng(), i});
  for (uint32_t i = 0; i < 4000; i += 2) {
    entries.push_back({FlipBits(entries[i].fingerprint, i % 6, rng), 10000 + i});
  }
  SimHashIndex base(3, 4), b5(3, 5), b6(3, 6);
  base.BulkInsert(entries);
  b5.BulkInsert(entries);
  b6.BulkInsert(entries);
  for (uint32_t i = 0; i < 4000; i += 3) {
    const uint64_t q = FlipBits(entries[i].fingerprint, i % 4, rng);
    for (int d = 0; d <= 3; ++d) {
      const std::vector<Match> want = base.Query(q, d, kNoLimit);
      EXPECT_EQ(b5.Query(q, d, kNoLimit), want);
      EXPECT_EQ(b6.Query(q, d, kNoLimit), want);
    }
  }
}

// Golden answers recorded with the layout before blocks were configurable
// (k+1 tables, commit 163cf3a): a fixed-seed index and fixed queries give
// the same match counts and the same checksum of ids and distances.
TEST(SimHashIndexTest, KPlusOneBlocksMatchesThePreviousResults) {
  std::mt19937_64 rng(163);
  std::vector<Entry> entries;
  for (uint32_t i = 0; i < 20000; ++i) entries.push_back({rng(), i});
  for (uint32_t i = 0; i < 20000; i += 4) {
    entries.push_back({FlipBits(entries[i].fingerprint, i % 5, rng), 50000 + i});
  }
  for (int k : {1, 3, 5}) {
    SimHashIndex index(k, k + 1);
    index.BulkInsert(entries);
    uint64_t matches = 0, checksum = 0;
    std::mt19937_64 qrng(k);
    for (int i = 0; i < 2000; ++i) {
      const uint64_t q = FlipBits(entries[qrng() % entries.size()].fingerprint, i % (k + 2), qrng);
      for (const Match& m : index.Query(q, k, kNoLimit)) {
        ++matches;
        checksum = checksum * 1000003 + m.id * 64 + m.distance;
      }
    }
    EXPECT_EQ(matches, kPreviousMatches[k]) << "k=" << k;
    EXPECT_EQ(checksum, kPreviousChecksums[k]) << "k=" << k;
  }
}

// Clusters of n fingerprints a few bits from one center fill a bucket of
// each table with up to n entries whose stored bits differ from the query's
// in both 24-bit parts, at every position modulo 8: the AVX2 scan
// (NextWithinAvx2, 8 candidates a step, on CPUs that have it), its
// high-part filter passing lanes whose low part then fails, and the scalar
// tail must together give the brute-force answer.
TEST(SimHashIndexTest, DenseBucketsOfEverySizeAgreeWithBruteForce) {
  std::mt19937_64 rng(8);
  for (uint32_t n : {1u, 2u, 7u, 8u, 9u, 15u, 16u, 17u, 23u, 24u, 25u, 63u, 64u, 65u, 300u}) {
    const uint64_t center = rng();
    std::vector<Entry> entries;
    BruteForce ref;
    for (uint32_t i = 0; i < n; ++i) {
      const uint64_t fp = FlipBits(center, static_cast<int>(rng() % 7), rng);
      entries.push_back({fp, i});
      ref.Insert(fp, i);
    }
    SimHashIndex index(3);
    index.BulkInsert(entries);
    ExpectSameAsBruteForce(index, ref, center);
    for (int q = 0; q < 40; ++q) {
      ExpectSameAsBruteForce(index, ref, FlipBits(center, static_cast<int>(rng() % 6), rng));
    }
    for (uint32_t i = 0; i < n; i += 1 + n / 10) {
      ExpectSameAsBruteForce(index, ref, entries[i].fingerprint);
    }
  }
}

TEST(SimHashIndexTest, InsertOfAStoredPairIsANoOp) {
  SimHashIndex index(3);
  index.Insert(5, 1);
  index.Insert(5, 1);
  index.Insert(5, 2);  // same fingerprint, other id: a second entry
  index.Insert(6, 1);  // same id, other fingerprint: a second entry
  index.BulkInsert(std::vector<Entry>{{5, 1}, {6, 1}, {5, 1}});
  EXPECT_EQ(index.size(), 3u);
  EXPECT_THAT(index.Query(5, 0, kNoLimit), ElementsAre(Match{5, 1, 0}, Match{5, 2, 0}));
}

TEST(SimHashIndexTest, RemoveReportsPresenceAndForgets) {
  SimHashIndex index(3);
  index.Insert(0xABCD, 1);
  index.Insert(0xABCD, 2);
  EXPECT_FALSE(index.Remove(0xABCD, 3));
  EXPECT_FALSE(index.Remove(0xABCE, 1));
  EXPECT_TRUE(index.Remove(0xABCD, 1));
  EXPECT_FALSE(index.Remove(0xABCD, 1));
  EXPECT_EQ(index.size(), 1u);
  EXPECT_THAT(index.Query(0xABCD, 3, kNoLimit), ElementsAre(Match{0xABCD, 2, 0}));
  EXPECT_TRUE(index.Remove(0xABCD, 2));
  EXPECT_THAT(index.Query(0xABCD, 3, kNoLimit), IsEmpty());
  EXPECT_EQ(index.size(), 0u);
}

// BulkInsert into a loaded index, Inserts between bulk loads, Removes of
// bulk-loaded and inserted pairs, reinserts: always the same as the model.
TEST(SimHashIndexTest, BulkInsertInsertRemoveMix) {
  const std::pair<int, int> layouts[] = {{1, 2}, {1, 4}, {2, 5}, {3, 4},
                                         {3, 5}, {3, 6}, {4, 6}, {5, 6}};
  for (const auto& [k, blocks] : layouts) {
    SCOPED_TRACE(testing::Message() << "k=" << k << " blocks=" << blocks);
    std::mt19937_64 rng(77 + k);
    SimHashIndex index(k, blocks);
    BruteForce ref;
    std::vector<Entry> all;
    const auto neighbour = [&](int d) {
      return all.empty() ? rng() : FlipBits(all[rng() % all.size()].fingerprint, d, rng);
    };
    for (int round = 0; round < 4; ++round) {
      std::vector<Entry> batch;
      for (int i = 0; i < 1500; ++i) {
        batch.push_back(
            {neighbour(static_cast<int>(rng() % (k + 3))), static_cast<uint32_t>(rng() % 5000)});
      }
      // Some pairs already stored.
      for (int i = 0; i < 50 && !all.empty(); ++i) {
        batch.push_back(all[rng() % all.size()]);
      }
      index.BulkInsert(batch);
      for (const Entry& e : batch) ref.Insert(e.fingerprint, e.id);
      all.insert(all.end(), batch.begin(), batch.end());
      for (int i = 0; i < 500; ++i) {
        const Entry e{neighbour(static_cast<int>(rng() % (k + 2))),
                      static_cast<uint32_t>(rng() % 5000)};
        index.Insert(e.fingerprint, e.id);
        ref.Insert(e.fingerprint, e.id);
        all.push_back(e);
      }
      for (int i = 0; i < 400; ++i) {
        const Entry& e = all[rng() % all.size()];
        EXPECT_EQ(index.Remove(e.fingerprint, e.id), ref.Remove(e.fingerprint, e.id));
      }
      for (int i = 0; i < 25; ++i) ExpectSameAsBruteForce(index, ref, neighbour(1));
    }
  }
}

TEST(SimHashIndexTest, LimitKeepsTheNearestAndTotalCountsAll) {
  SimHashIndex index(3);
  const uint64_t q = 0x1234567890ABCDEFULL;
  // ids 0..9 at distance 3, 10..19 at distance 1, 20 at distance 0.
  for (uint32_t id = 0; id < 10; ++id) index.Insert(q ^ 0x7, id);
  for (uint32_t id = 10; id < 20; ++id) index.Insert(q ^ (uint64_t{1} << 60), id);
  index.Insert(q, 20);
  size_t total = 0;
  const std::vector<Match> top = index.Query(q, 3, 3, &total);
  EXPECT_EQ(total, 21u);
  EXPECT_THAT(top, ElementsAre(Match{q, 20, 0}, Match{q ^ (uint64_t{1} << 60), 10, 1},
                               Match{q ^ (uint64_t{1} << 60), 11, 1}));
  EXPECT_THAT(index.Query(q, 3, 0, &total), IsEmpty());
  EXPECT_EQ(total, 21u);
  EXPECT_EQ(index.Query(q, 2, kNoLimit, &total).size(), 11u);
  EXPECT_EQ(total, 11u);
  EXPECT_EQ(index.Query(q, 3, 100).size(), 21u);  // total is optional
}

TEST(SimHashIndexTest, MemoryIsAboutTenBytesPerEntryAndTable) {
  std::mt19937_64 rng(3);
  std::vector<Entry> entries;
  for (uint32_t i = 0; i < 300000; ++i) entries.push_back({rng(), i});
  SimHashIndex index(3);
  const size_t empty_bytes = index.MemoryBytes();
  index.BulkInsert(entries);
  const double per_entry = static_cast<double>(index.MemoryBytes() - empty_bytes) / index.size();
  // 4 tables x 10 bytes, plus per bucket (4 x 65,536 of them) 1 byte of
  // padding and 16 of malloc overhead; no growth slack after a bulk load.
  EXPECT_GE(per_entry, 40.0);
  EXPECT_LE(per_entry, 40.0 + 17.0 * 4 * 65536 / index.size());
  for (uint32_t i = 0; i < 20000; ++i) index.Insert(rng(), i);
  EXPECT_GT(index.MemoryBytes(), empty_bytes);
}

TEST(SimHashIndexDeathTest, RequiresAreChecked) {
  EXPECT_DEATH(SimHashIndex index(-1), "max_distance");
  EXPECT_DEATH(SimHashIndex index(SimHashIndex::kMaxSupportedDistance + 1), "max_distance");
  EXPECT_DEATH(SimHashIndex index(3, 3), "blocks");  // fewer than k+1
  EXPECT_DEATH(SimHashIndex index(3, 7), "blocks");  // more than k+3
  EXPECT_DEATH(SimHashIndex index(3, -1), "blocks");
  EXPECT_DEATH(SimHashIndex index(5, 7), "blocks");  // C(7, 5) = 21 tables
  EXPECT_FALSE(SimHashIndex::IsValidLayout(4, 7));   // C(7, 4) = 35
  EXPECT_TRUE(SimHashIndex::IsValidLayout(4, 6));    // C(6, 4) = 15
  EXPECT_TRUE(SimHashIndex::IsValidLayout(3, 0));
  EXPECT_FALSE(SimHashIndex::IsValidLayout(8, 0));
  SimHashIndex index(2);
  EXPECT_DEATH(index.Query(0, 3, 1), "max_distance");
}

// Readers query while writers insert (and remove their own scratch pairs);
// afterwards every inserted pair is there, and readers never saw a match
// farther than asked or a pair that was never inserted.
TEST(SimHashIndexTest, ConcurrentReadersAndWritersLoseNothing) {
  constexpr int kWriters = 2;
  constexpr int kReaders = 3;
  constexpr uint32_t kPerWriter = 3000;
  SimHashIndex index(3);
  std::mt19937_64 seed_rng(99);
  std::vector<Entry> base;
  for (uint32_t i = 0; i < 20000; ++i) base.push_back({seed_rng(), i});
  index.BulkInsert(base);
  // Writer w inserts neighbours of base entries with ids w*1e6 + i.
  std::vector<std::vector<Entry>> planned(kWriters);
  for (int w = 0; w < kWriters; ++w) {
    for (uint32_t i = 0; i < kPerWriter; ++i) {
      planned[w].push_back({FlipBits(base[seed_rng() % base.size()].fingerprint,
                                     static_cast<int>(seed_rng() % 4), seed_rng),
                            static_cast<uint32_t>((w + 1) * 1000000 + i)});
    }
  }
  absl::Notification start;
  std::atomic<int> writers_left{kWriters};
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      start.WaitForNotification();
      for (uint32_t i = 0; i < kPerWriter; ++i) {
        const Entry& e = planned[w][i];
        index.Insert(e.fingerprint, e.id);
        // A scratch pair, inserted and removed again.
        index.Insert(~e.fingerprint, 4000000 + w);
        if (!index.Remove(~e.fingerprint, 4000000 + w)) bad.fetch_add(1);
      }
      writers_left.fetch_sub(1);
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&, r] {
      std::mt19937_64 rng(1000 + r);
      start.WaitForNotification();
      int iterations = 0;
      while (writers_left.load() > 0 || iterations < 200) {
        ++iterations;
        const uint64_t q = base[rng() % base.size()].fingerprint;
        for (const Match& m : index.Query(q, 3, 50)) {
          if (m.distance != __builtin_popcountll(m.fingerprint ^ q) || m.distance > 3) {
            bad.fetch_add(1);
          }
        }
        if (iterations > 200000) break;  // bound the test
      }
    });
  }
  start.Notify();
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(index.size(), base.size() + kWriters * kPerWriter);
  for (int w = 0; w < kWriters; ++w) {
    for (const Entry& e : planned[w]) {
      bool found = false;
      for (const Match& m : index.Query(e.fingerprint, 0, kNoLimit)) {
        found = found || m.id == e.id;
      }
      ASSERT_TRUE(found) << "lost id " << e.id;
    }
  }
}

}  // namespace
}  // namespace dedupd
