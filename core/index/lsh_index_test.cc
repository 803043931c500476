// lsh_index_test.cc: LshIndex against a brute-force banding scan and the
// S-curve it should follow, on random signatures with a fixed seed; insert,
// erase and duplicate handling; golden band keys.
#include "core/index/lsh_index.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/text/minhash.h"
#include "core/text/splitmix64.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/minhash_signatures.h"

namespace dedupd {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Whether a and b share all rows of some band: the brute-force answer.
bool ShareABand(const MinHashSignature& a, const MinHashSignature& b, int bands, int rows) {
  for (int band = 0; band < bands; ++band) {
    if (std::equal(a.begin() + band * rows, a.begin() + (band + 1) * rows,
                   b.begin() + band * rows)) {
      return true;
    }
  }
  return false;
}

TEST(LshCandidateProbabilityTest, Table) {
  struct Case {
    int bands, rows;
    double s, want;
  };
  for (const Case& c :
       {Case{1, 1, 0.5, 0.5}, Case{2, 1, 0.5, 0.75}, Case{1, 2, 0.5, 0.25}, Case{18, 7, 0.0, 0.0},
        Case{18, 7, 1.0, 1.0}, Case{18, 7, 0.8, 1 - std::pow(1 - std::pow(0.8, 7), 18)}}) {
    EXPECT_DOUBLE_EQ(LshCandidateProbability(c.bands, c.rows, c.s), c.want)
        << c.bands << "x" << c.rows << " s=" << c.s;
  }
  // The default layout's S-curve (docs/minhash.md).
  EXPECT_NEAR(LshCandidateProbability(18, 7, 0.5), 0.131, 0.001);
  EXPECT_NEAR(LshCandidateProbability(18, 7, 0.7), 0.787, 0.001);
  EXPECT_NEAR(LshCandidateProbability(18, 7, 0.8), 0.986, 0.001);
  EXPECT_GT(LshCandidateProbability(18, 7, 0.9), 0.99999);
}

TEST(LshIndexTest, Layouts) {
  EXPECT_TRUE(LshIndex::IsValidLayout(18, 7));
  EXPECT_TRUE(LshIndex::IsValidLayout(128, 1));
  EXPECT_TRUE(LshIndex::IsValidLayout(8, 16));
  EXPECT_FALSE(LshIndex::IsValidLayout(0, 7));
  EXPECT_FALSE(LshIndex::IsValidLayout(7, 17));
  EXPECT_FALSE(LshIndex::IsValidLayout(19, 7));  // 133 slots
  const LshIndex index;
  EXPECT_EQ(index.bands(), 18);
  EXPECT_EQ(index.rows(), 7);
}

TEST(LshIndexDeathTest, InvalidLayout) { EXPECT_DEATH(LshIndex(20, 7), "invalid layout"); }

// Band keys may be persisted (a distributed store's bucket sets): pinned.
TEST(LshIndexTest, BandKeysArePinned) {
  MinHashSignature s;
  for (int i = 0; i < kMinHashSlots; ++i) s[i] = static_cast<uint8_t>(i);
  // Values of the function as lsh_index.h documents it, computed from that
  // text with Python integers, not with this code: a change means stored
  // band keys no longer match.
  EXPECT_EQ(absl::StrCat(absl::Hex(LshIndex::BandKey(s, 0, 7), absl::kZeroPad8), " ",
                         absl::Hex(LshIndex::BandKey(s, 17, 7), absl::kZeroPad8), " ",
                         absl::Hex(LshIndex::BandKey(s, 1, 16), absl::kZeroPad8), " ",
                         absl::Hex(LshIndex::BandKey(MinHashSignature{}, 0, 7), absl::kZeroPad8)),
            "1f0bbe34 32abee8d a1481dc0 84674cb2");
  // Only the band's own slots matter.
  MinHashSignature t = s;
  t[7] ^= 1;
  EXPECT_EQ(LshIndex::BandKey(s, 0, 7), LshIndex::BandKey(t, 0, 7));
  EXPECT_NE(LshIndex::BandKey(s, 1, 7), LshIndex::BandKey(t, 1, 7));
  // The band number is part of the key.
  MinHashSignature z{};
  EXPECT_NE(LshIndex::BandKey(z, 0, 7), LshIndex::BandKey(z, 1, 7));
}

TEST(LshIndexTest, InsertQueryErase) {
  SplitMixRng rng(1);
  LshIndex index;
  const MinHashSignature a = RandomSignature(rng), b = RandomSignature(rng);
  EXPECT_THAT(index.Query(a), IsEmpty());
  EXPECT_TRUE(index.Insert(a, 7));
  EXPECT_TRUE(index.Insert(b, 3));
  EXPECT_EQ(index.size(), 2u);
  EXPECT_THAT(index.Query(a), ElementsAre(7));
  EXPECT_THAT(index.Query(SimilarSignature(a, 0.95, rng)), ElementsAre(7));
  EXPECT_THAT(index.Query(RandomSignature(rng)), IsEmpty());
  // Two ids with one signature (two texts with the same shingle set):
  // both are candidates, ascending, each once although all bands match.
  EXPECT_TRUE(index.Insert(a, 5));
  EXPECT_THAT(index.Query(a), ElementsAre(5, 7));
  // The same pair again: a no-op.
  EXPECT_FALSE(index.Insert(a, 7));
  EXPECT_EQ(index.size(), 3u);
  EXPECT_TRUE(index.Erase(a, 7));
  EXPECT_FALSE(index.Erase(a, 7));
  EXPECT_FALSE(index.Erase(b, 4));  // never stored
  EXPECT_EQ(index.size(), 2u);
  EXPECT_THAT(index.Query(a), ElementsAre(5));
  EXPECT_TRUE(index.Erase(a, 5));
  EXPECT_TRUE(index.Erase(b, 3));
  EXPECT_EQ(index.size(), 0u);
  EXPECT_THAT(index.Query(a), IsEmpty());
  EXPECT_THAT(index.Query(b), IsEmpty());
}

// Many entries per bucket and per band key (slots of 16 values make 4,096
// values of a 3-row band, so 30,000 entries repeat each ~7 times), erased
// in a shuffled order: before and during the erasing, the index answers as
// the brute-force scan over what remains.
TEST(LshIndexTest, MatchesBruteForceThroughInsertsAndErases) {
  SplitMixRng rng(2);
  const int bands = 42, rows = 3;
  LshIndex index(bands, rows);
  std::vector<MinHashSignature> sigs;
  for (int i = 0; i < 30000; ++i) {
    sigs.push_back(RandomSignature(rng));
    for (uint8_t& v : sigs.back()) v &= 15;
    ASSERT_TRUE(index.Insert(sigs.back(), static_cast<uint32_t>(i)));
  }
  std::vector<uint32_t> order(sigs.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  std::vector<bool> stored(sigs.size(), true);
  auto check = [&](int queries) {
    for (int q = 0; q < queries; ++q) {
      const MinHashSignature& query = sigs[rng.Below(sigs.size())];
      std::vector<uint32_t> want;
      for (uint32_t i = 0; i < sigs.size(); ++i) {
        if (stored[i] && ShareABand(query, sigs[i], bands, rows)) want.push_back(i);
      }
      const std::vector<uint32_t> got = index.Query(query);
      // Band-key collisions (2^-32 per entry and band) could add ids, but
      // with a fixed seed there are none.
      ASSERT_EQ(got, want);
    }
  };
  check(20);
  for (size_t i = 0; i < order.size(); ++i) {
    ASSERT_TRUE(index.Erase(sigs[order[i]], order[i]));
    stored[order[i]] = false;
    if (i % 10000 == 0) check(5);
  }
  EXPECT_EQ(index.size(), 0u);
  check(5);
}

// Query answers of `a` and `b` for every 5th stored signature, a near
// duplicate of it and a random signature.
void ExpectSameAnswers(const LshIndex& a, const LshIndex& b,
                       const std::vector<MinHashSignature>& sigs, SplitMixRng& rng) {
  std::vector<uint32_t> got_a, got_b;
  for (size_t i = 0; i < sigs.size(); i += 5) {
    const MinHashSignature& stored = sigs[i];
    for (const MinHashSignature& q :
         {stored, SimilarSignature(stored, 0.7, rng), RandomSignature(rng)}) {
      a.Query(q, &got_a);
      b.Query(q, &got_b);
      ASSERT_EQ(got_a, got_b);
    }
  }
}

// BulkInsert answers as one-by-one Insert, on an empty index and on one
// holding entries already, with small buckets (2^4 per band: ~750
// entries each) and many equal band keys (slots of 16 values, 3 rows);
// and so does every Erase after it.
TEST(LshIndexTest, BulkInsertAnswersAsInsert) {
  SplitMixRng rng(5);
  const int bands = 42, rows = 3, bucket_bits = 4;
  std::vector<MinHashSignature> sigs;
  std::vector<LshIndex::Entry> entries;
  LshIndex one_by_one(bands, rows, bucket_bits);
  for (uint32_t i = 0; i < 12000; ++i) {
    sigs.push_back(RandomSignature(rng));
    for (uint8_t& v : sigs.back()) v &= 15;
    entries.push_back({sigs.back(), i});
    ASSERT_TRUE(one_by_one.Insert(sigs.back(), i));
  }
  LshIndex bulk(bands, rows, bucket_bits);
  bulk.BulkInsert(entries);
  // A third by Insert, half sorted in one bulk, the rest in bulks small
  // enough to be appended one by one (of 1,000 entries and of 1).
  LshIndex mixed(bands, rows, bucket_bits);
  for (uint32_t i = 0; i < 4000; ++i) ASSERT_TRUE(mixed.Insert(sigs[i], i));
  const absl::Span<const LshIndex::Entry> all(entries);
  mixed.BulkInsert(all.subspan(4000, 6000));
  mixed.BulkInsert(all.subspan(10000, 1000));
  for (size_t i = 11000; i < all.size(); ++i) mixed.BulkInsert(all.subspan(i, 1));
  EXPECT_EQ(bulk.size(), 12000u);
  EXPECT_EQ(mixed.size(), 12000u);
  ExpectSameAnswers(one_by_one, bulk, sigs, rng);
  ExpectSameAnswers(one_by_one, mixed, sigs, rng);
  // A bulk-inserted pair is stored: Insert of it is a no-op.
  EXPECT_FALSE(bulk.Insert(sigs[123], 123));

  std::vector<uint32_t> order(sigs.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  for (size_t i = 0; i < order.size(); ++i) {
    ASSERT_TRUE(one_by_one.Erase(sigs[order[i]], order[i]));
    ASSERT_TRUE(bulk.Erase(sigs[order[i]], order[i]));
    ASSERT_TRUE(mixed.Erase(sigs[order[i]], order[i]));
    if (i == order.size() / 2) {
      ExpectSameAnswers(one_by_one, bulk, sigs, rng);
      ExpectSameAnswers(one_by_one, mixed, sigs, rng);
    }
  }
  EXPECT_EQ(bulk.size(), 0u);
  EXPECT_EQ(bulk.MemoryBytes(), LshIndex(bands, rows, bucket_bits).MemoryBytes());
  EXPECT_THAT(bulk.Query(sigs[0]), IsEmpty());
}

// BulkInsertParts answers as BulkInsert of their concatenation, for
// parts of every size (empty, below and above the one-by-one threshold).
TEST(LshIndexTest, BulkInsertOfPartsAnswersAsOneArray) {
  SplitMixRng rng(15);
  const int bands = 42, rows = 3, bucket_bits = 4;
  std::vector<MinHashSignature> sigs;
  std::vector<LshIndex::Entry> entries;
  for (uint32_t i = 0; i < 9000; ++i) {
    sigs.push_back(RandomSignature(rng));
    for (uint8_t& v : sigs.back()) v &= 15;
    entries.push_back({sigs.back(), i});
  }
  LshIndex whole(bands, rows, bucket_bits);
  whole.BulkInsert(entries);
  const absl::Span<const LshIndex::Entry> all(entries);
  LshIndex parts(bands, rows, bucket_bits);
  const absl::Span<const LshIndex::Entry> cut[] = {all.subspan(0, 0), all.subspan(0, 5000),
                                                   all.subspan(5000, 1), all.subspan(5001, 0),
                                                   all.subspan(5001, 3999)};
  parts.BulkInsertParts(absl::MakeConstSpan(cut));
  // Fewer entries than the sort needs, in two parts.
  LshIndex small(bands, rows, bucket_bits);
  const absl::Span<const LshIndex::Entry> few[] = {all.subspan(0, 300), all.subspan(300, 200)};
  small.BulkInsertParts(absl::MakeConstSpan(few));
  LshIndex small_whole(bands, rows, bucket_bits);
  small_whole.BulkInsert(all.subspan(0, 500));
  EXPECT_EQ(parts.size(), 9000u);
  EXPECT_EQ(small.size(), 500u);
  ExpectSameAnswers(whole, parts, sigs, rng);
  ExpectSameAnswers(small_whole, small, sigs, rng);
}

// The default layout, near duplicates planted among random signatures:
// the same candidate sets either way, the planted sources among them.
TEST(LshIndexTest, BulkInsertFindsWhatInsertFinds) {
  SplitMixRng rng(6);
  std::vector<MinHashSignature> sigs;
  std::vector<LshIndex::Entry> entries;
  LshIndex one_by_one(18, 7, /*bucket_bits=*/8);
  for (uint32_t i = 0; i < 20000; ++i) {
    // Every fourth a near duplicate of an earlier one.
    sigs.push_back(i % 4 == 3 ? SimilarSignature(sigs[rng.Below(i)], 0.9, rng)
                              : RandomSignature(rng));
    entries.push_back({sigs.back(), i});
    one_by_one.Insert(sigs.back(), i);
  }
  LshIndex bulk(18, 7, /*bucket_bits=*/8);
  bulk.BulkInsert(entries);
  ExpectSameAnswers(one_by_one, bulk, sigs, rng);
  EXPECT_THAT(bulk.Query(sigs[3]), ::testing::Contains(3u));
  // Exact capacities: less memory than one-by-one growth.
  EXPECT_LT(bulk.MemoryBytes(), one_by_one.MemoryBytes());
}

TEST(LshIndexTest, EmptyBulkInsert) {
  LshIndex index;
  const size_t empty = index.MemoryBytes();
  index.BulkInsert({});
  EXPECT_EQ(index.size(), 0u);
  EXPECT_EQ(index.MemoryBytes(), empty);
  EXPECT_THAT(index.Query(MinHashSignature{}), IsEmpty());
}

// Recall of planted near duplicates against the S-curve: for each
// similarity j, the share of queries whose source is a candidate is
// within 4 binomial standard deviations of
// LshCandidateProbability(18, 7, j + (1 - j) / 256). And random
// signatures are (almost) never candidates, as the brute-force scan says.
TEST(LshIndexTest, RecallFollowsTheSCurve) {
  SplitMixRng rng(20240501);
  LshIndex index;
  std::vector<MinHashSignature> stored;
  for (uint32_t i = 0; i < 20000; ++i) {
    stored.push_back(RandomSignature(rng));
    index.Insert(stored.back(), i);
  }
  const int trials = 2000;
  for (double j : {0.3, 0.5, 0.6, 0.7, 0.8, 0.9}) {
    int found = 0;
    for (int t = 0; t < trials; ++t) {
      const uint32_t source = static_cast<uint32_t>(rng.Below(stored.size()));
      const MinHashSignature q = SimilarSignature(stored[source], j, rng);
      const std::vector<uint32_t> ids = index.Query(q);
      found += std::binary_search(ids.begin(), ids.end(), source);
      // Brute force agrees on the source.
      ASSERT_EQ(std::binary_search(ids.begin(), ids.end(), source),
                ShareABand(q, stored[source], 18, 7));
    }
    const double p = LshCandidateProbability(18, 7, j + (1 - j) / 256);
    const double sd = std::sqrt(p * (1 - p) / trials);
    EXPECT_NEAR(static_cast<double>(found) / trials, p, 4 * sd + 0.002) << "j=" << j;
  }
  size_t random_candidates = 0;
  for (int t = 0; t < 2000; ++t) random_candidates += index.Query(RandomSignature(rng)).size();
  EXPECT_EQ(random_candidates, 0u);
}

TEST(LshIndexTest, FindsNearDuplicateTexts) {
  const MinHasher hasher;
  SplitMixRng rng(9);
  std::vector<std::string> words;
  for (int i = 0; i < 1000; ++i) words.push_back(absl::StrCat("w", rng.Next() % 5000));
  const std::string page = absl::StrJoin(words, " ");
  words[500] = "changed";  // J = 994 / 1006 ~ 0.988
  const std::string edited = absl::StrJoin(words, " ");
  LshIndex index;
  index.Insert(hasher.Sign(page), 1);
  for (int i = 0; i < 100; ++i) {
    std::vector<std::string> other;
    for (int w = 0; w < 1000; ++w) other.push_back(absl::StrCat("w", rng.Next() % 5000));
    index.Insert(hasher.Sign(absl::StrJoin(other, " ")), 100 + i);
  }
  const std::vector<uint32_t> ids = index.Query(hasher.Sign(edited));
  EXPECT_THAT(ids, ElementsAre(1));
  EXPECT_GE(EstimateJaccard(hasher.Sign(page), hasher.Sign(edited)), 0.9);
}

// With buckets sized for the entries (~100 per bucket), an entry costs
// close to its 6 bytes per band.
TEST(LshIndexTest, MemoryBytesCountsEntries) {
  LshIndex index(18, 7, /*bucket_bits=*/10);
  EXPECT_EQ(index.bucket_bits(), 10);
  const size_t empty = index.MemoryBytes();
  EXPECT_GE(empty, 18u * 1024 * 8);  // the bucket pointers
  SplitMixRng rng(4);
  std::vector<MinHashSignature> sigs;
  for (uint32_t i = 0; i < 100000; ++i) {
    sigs.push_back(RandomSignature(rng));
    index.Insert(sigs.back(), i);
  }
  const double per_entry = static_cast<double>(index.MemoryBytes()) / index.size();
  EXPECT_GE(per_entry, 18 * 6.0);  // 6 bytes per band at least
  EXPECT_LE(per_entry, 18 * 6.0 * 1.15);
  // Small buckets work the same way.
  EXPECT_THAT(index.Query(sigs[123]), ElementsAre(123));
  for (uint32_t i = 0; i < sigs.size(); ++i) ASSERT_TRUE(index.Erase(sigs[i], i));
  EXPECT_EQ(index.MemoryBytes(), empty);
}

TEST(LshIndexDeathTest, BucketBitsOutOfRange) {
  EXPECT_DEATH(LshIndex(18, 7, 3), "bucket_bits out of range");
  EXPECT_DEATH(LshIndex(18, 7, 17), "bucket_bits out of range");
}

}  // namespace
}  // namespace dedupd
