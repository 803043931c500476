// minhash_near_index_test.cc: MinHashNearIndex against an LshIndex built
// one Insert at a time with the same bucket_bits, on random signatures with
// a fixed seed: bulk load, growth by online inserts, erase, replacement,
// empty loads; and the bucket sizing rule.
#include "storage/minhash_near_index.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/types/span.h"
#include "core/index/lsh_index.h"
#include "core/text/minhash.h"
#include "core/text/splitmix64.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/minhash_signatures.h"

namespace dedupd {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Optional;

// n signatures, every fourth a near duplicate (j = 0.9) of an earlier one,
// with ids first_id, first_id + 1, ...
std::vector<LshIndex::Entry> Corpus(size_t n, uint32_t first_id, SplitMixRng& rng) {
  std::vector<LshIndex::Entry> entries;
  for (size_t i = 0; i < n; ++i) {
    const MinHashSignature sig = i % 4 == 3
                                     ? SimilarSignature(entries[rng.Below(i)].signature, 0.9, rng)
                                     : RandomSignature(rng);
    entries.push_back({sig, first_id + static_cast<uint32_t>(i)});
  }
  return entries;
}

// An LshIndex of the default layout and `bucket_bits`, built one Insert at
// a time: what `near` should answer (band-key collisions depend on the
// bucket bits, so the reference has the same).
void ExpectAnswersAsInserted(const MinHashNearIndex& near,
                             const std::vector<LshIndex::Entry>& stored,
                             const std::vector<LshIndex::Entry>& queries, SplitMixRng& rng) {
  LshIndex reference(LshIndex::kDefaultBands, LshIndex::kDefaultRows, near.bucket_bits());
  for (const LshIndex::Entry& e : stored) reference.Insert(e.signature, e.id);
  for (size_t i = 0; i < queries.size(); i += 3) {
    const MinHashSignature& sig = queries[i].signature;
    for (const MinHashSignature& q : {sig, SimilarSignature(sig, 0.7, rng), RandomSignature(rng)}) {
      ASSERT_EQ(near.Query(q), reference.Query(q));
    }
  }
}

TEST(MinHashNearIndexTest, BucketBitsFor) {
  EXPECT_EQ(MinHashNearIndex::BucketBitsFor(0), 8);
  EXPECT_EQ(MinHashNearIndex::BucketBitsFor(16383), 8);
  EXPECT_EQ(MinHashNearIndex::BucketBitsFor(16384), 9);
  EXPECT_EQ(MinHashNearIndex::BucketBitsFor(409600), 13);
  EXPECT_EQ(MinHashNearIndex::BucketBitsFor(1000000), 14);
  EXPECT_EQ(MinHashNearIndex::BucketBitsFor(2097151), 15);
  EXPECT_EQ(MinHashNearIndex::BucketBitsFor(2097152), 16);
  EXPECT_EQ(MinHashNearIndex::BucketBitsFor(10000000), 16);
  EXPECT_EQ(MinHashNearIndex::BucketBitsFor(size_t{1} << 40), 16);
}

TEST(MinHashNearIndexTest, EmptyBulkLoad) {
  MinHashNearIndex near;
  near.BulkLoad({});
  EXPECT_EQ(near.size(), 0u);
  EXPECT_EQ(near.bucket_bits(), 0);
  EXPECT_EQ(near.MemoryBytes(), 0u);  // a namespace without signatures allocates nothing
  EXPECT_THAT(near.Query(MinHashSignature{}), IsEmpty());
  EXPECT_FALSE(near.Erase(1));
  // Nor does an empty load disturb what is stored.
  SplitMixRng rng(1);
  const MinHashSignature a = RandomSignature(rng);
  near.Insert(7, a);
  near.BulkLoad({});
  EXPECT_EQ(near.size(), 1u);
  EXPECT_EQ(near.bucket_bits(), MinHashNearIndex::kMinBucketBits);
  EXPECT_THAT(near.Query(a), ElementsAre(7));
}

TEST(MinHashNearIndexTest, BulkLoadAnswersAsInsert) {
  SplitMixRng rng(2);
  const std::vector<LshIndex::Entry> corpus = Corpus(30000, 1000, rng);
  MinHashNearIndex bulk;
  bulk.BulkLoad(corpus);
  EXPECT_EQ(bulk.size(), corpus.size());
  EXPECT_EQ(bulk.bucket_bits(), MinHashNearIndex::BucketBitsFor(30000));  // 9
  ExpectAnswersAsInserted(bulk, corpus, corpus, rng);
  MinHashNearIndex online;
  for (const LshIndex::Entry& e : corpus) online.Insert(e.id, e.signature);
  EXPECT_EQ(online.bucket_bits(), MinHashNearIndex::kMinBucketBits);  // below the growth point
  ExpectAnswersAsInserted(online, corpus, corpus, rng);
  // Near duplicates find their sources either way.
  EXPECT_THAT(bulk.Query(corpus[3].signature), Contains(corpus[3].id));
  EXPECT_THAT(online.Query(corpus[3].signature), Contains(corpus[3].id));
}

// Insert of a batch answers as its entries inserted one at a time: a
// repeated id within the batch keeps its last signature, an id stored
// before gets the batch's, and a batch that crosses the growth point
// rebuilds the index once.
TEST(MinHashNearIndexTest, BatchInsertAnswersAsOneByOne) {
  SplitMixRng rng(5);
  const size_t grow_at = MinHashNearIndex::kGrowTextsPerBucket << MinHashNearIndex::kMinBucketBits;
  std::vector<LshIndex::Entry> corpus = Corpus(grow_at + 100, 500, rng);
  MinHashNearIndex batched;
  MinHashNearIndex single;
  const size_t first = grow_at - 50;
  batched.Insert(absl::MakeConstSpan(corpus).subspan(0, first));
  for (size_t i = 0; i < first; ++i) single.Insert(corpus[i].id, corpus[i].signature);
  // The second batch: the rest, a replacement of a stored id, and an id
  // listed twice.
  std::vector<LshIndex::Entry> second(corpus.begin() + first, corpus.end());
  const MinHashSignature replaced = RandomSignature(rng);
  const MinHashSignature first_of_twice = RandomSignature(rng);
  second.push_back({replaced, corpus[7].id});
  second.push_back({first_of_twice, corpus.back().id});
  second.push_back({corpus.back().signature, corpus.back().id});
  batched.Insert(second);
  for (const LshIndex::Entry& e : second) single.Insert(e.id, e.signature);
  EXPECT_EQ(batched.size(), corpus.size());
  EXPECT_EQ(batched.size(), single.size());
  EXPECT_EQ(batched.bucket_bits(), MinHashNearIndex::kMinBucketBits + 2);
  EXPECT_EQ(batched.bucket_bits(), single.bucket_bits());
  EXPECT_THAT(batched.Find(corpus[7].id), Optional(replaced));
  EXPECT_THAT(batched.Find(corpus.back().id), Optional(corpus.back().signature));
  EXPECT_THAT(batched.Query(replaced), Contains(corpus[7].id));
  EXPECT_THAT(batched.Query(first_of_twice), Not(Contains(corpus.back().id)));
  corpus[7].signature = replaced;
  ExpectAnswersAsInserted(batched, corpus, corpus, rng);
  for (int i = 0; i < 200; ++i) {
    const MinHashSignature& q = corpus[rng.Next() % corpus.size()].signature;
    EXPECT_EQ(batched.Query(q), single.Query(q));
  }
  batched.Insert(absl::Span<const LshIndex::Entry>());  // nothing
  EXPECT_EQ(batched.size(), corpus.size());
}

// Online inserts past kGrowTextsPerBucket per bucket rebuild the index with
// more buckets; it answers as an index built for that size, before and
// after.
TEST(MinHashNearIndexTest, GrowKeepsAnswers) {
  SplitMixRng rng(3);
  const size_t grow_at = MinHashNearIndex::kGrowTextsPerBucket << MinHashNearIndex::kMinBucketBits;
  const std::vector<LshIndex::Entry> corpus = Corpus(grow_at + 1, 0, rng);
  MinHashNearIndex near;
  for (size_t i = 0; i < grow_at; ++i) near.Insert(corpus[i].id, corpus[i].signature);
  EXPECT_EQ(near.bucket_bits(), MinHashNearIndex::kMinBucketBits);
  const std::vector<LshIndex::Entry> before(corpus.begin(), corpus.begin() + grow_at);
  ExpectAnswersAsInserted(near, before, before, rng);
  near.Insert(corpus.back().id, corpus.back().signature);
  EXPECT_EQ(near.size(), grow_at + 1);
  EXPECT_EQ(near.bucket_bits(), MinHashNearIndex::kMinBucketBits + 2);
  ExpectAnswersAsInserted(near, corpus, corpus, rng);
  // Inserts, replacements and erases keep working on the rebuilt index.
  const MinHashSignature fresh = RandomSignature(rng);
  near.Insert(corpus[5].id, fresh);
  EXPECT_THAT(near.Query(fresh), ElementsAre(corpus[5].id));
  EXPECT_THAT(near.Query(corpus[5].signature), Not(Contains(corpus[5].id)));
  EXPECT_TRUE(near.Erase(corpus[5].id));
  EXPECT_THAT(near.Query(fresh), IsEmpty());
}

// Erases every stored text whose id is a multiple of 3 (each must be
// stored) and returns the others, in order.
std::vector<LshIndex::Entry> EraseEveryThird(MinHashNearIndex& near,
                                             const std::vector<LshIndex::Entry>& stored) {
  std::vector<LshIndex::Entry> kept;
  for (const LshIndex::Entry& e : stored) {
    if (e.id % 3 == 0) {
      EXPECT_TRUE(near.Erase(e.id)) << e.id;
    } else {
      kept.push_back(e);
    }
  }
  return kept;
}

// Online inserts past several of the entry store's blocks, after a bulk
// load and without one, with erases across block boundaries: the answers
// stay those of an index built from what is stored, signatures are found
// by id, and memory stays within a few blocks of what the texts need.
TEST(MinHashNearIndexTest, InsertsAndErasesAcrossBlocks) {
  SplitMixRng rng(9);
  const size_t block = 4096;  // MinHashNearIndex::EntryBlocks::kBlockEntries
  const std::vector<LshIndex::Entry> corpus = Corpus(5 * block + 123, 0, rng);
  for (const size_t loaded : {size_t{0}, block + 7}) {
    SCOPED_TRACE(loaded);
    MinHashNearIndex near;
    near.BulkLoad(std::vector<LshIndex::Entry>(corpus.begin(), corpus.begin() + loaded));
    std::vector<LshIndex::Entry> stored(corpus.begin(), corpus.begin() + loaded);
    for (size_t i = loaded; i < corpus.size(); i += 20) {
      const size_t end = std::min(corpus.size(), i + 20);
      near.Insert(absl::MakeConstSpan(corpus).subspan(i, end - i));
      stored.insert(stored.end(), corpus.begin() + i, corpus.begin() + end);
    }
    EXPECT_EQ(near.size(), corpus.size());
    // Signatures and ids: 132 bytes each, plus at most two blocks not
    // filled (the last and the spare) and the first array's slack.
    EXPECT_LT(near.MemoryBytes(),
              corpus.size() * (132 + 18 * 12 + 18) + 3 * block * 132 + (1 << 20));
    // Erase every third text (each erase moves the last entry, from the
    // last block, into the hole), then insert a few back with new
    // signatures, crossing the last block's boundary both ways.
    std::vector<LshIndex::Entry> kept = EraseEveryThird(near, stored);
    ASSERT_FALSE(::testing::Test::HasFailure());
    for (uint32_t id = 0; id < 300; id += 3) {
      const LshIndex::Entry e{RandomSignature(rng), id};
      near.Insert(e.id, e.signature);
      kept.push_back(e);
    }
    EXPECT_EQ(near.size(), kept.size());
    for (const LshIndex::Entry& e : kept) ASSERT_THAT(near.Find(e.id), Optional(e.signature));
    EXPECT_EQ(near.Find(3 * 1000), std::nullopt);
    ExpectAnswersAsInserted(near, kept, corpus, rng);
  }
}

TEST(MinHashNearIndexTest, EraseAfterBulkLoad) {
  SplitMixRng rng(4);
  const std::vector<LshIndex::Entry> corpus = Corpus(30000, 0, rng);
  MinHashNearIndex near;
  near.BulkLoad(corpus);
  std::vector<LshIndex::Entry> kept = EraseEveryThird(near, corpus);
  ASSERT_FALSE(::testing::Test::HasFailure());
  EXPECT_FALSE(near.Erase(0));
  EXPECT_EQ(near.size(), kept.size());
  EXPECT_THAT(near.Query(corpus[3].signature), Not(Contains(3u)));
  ExpectAnswersAsInserted(near, kept, corpus, rng);
  // An erased id comes back with another signature.
  const MinHashSignature fresh = RandomSignature(rng);
  near.Insert(3, fresh);
  EXPECT_THAT(near.Query(fresh), ElementsAre(3));
  // Erasing everything leaves an index that answers nothing.
  for (const LshIndex::Entry& e : kept) ASSERT_TRUE(near.Erase(e.id));
  ASSERT_TRUE(near.Erase(3));
  EXPECT_EQ(near.size(), 0u);
  EXPECT_THAT(near.Query(fresh), IsEmpty());
  EXPECT_THAT(near.Query(corpus[1].signature), IsEmpty());
}

// BulkLoad stores as Insert would: a later signature of an id replaces an
// earlier one, in the same load or stored before it.
TEST(MinHashNearIndexTest, BulkLoadReplacesSignatures) {
  SplitMixRng rng(5);
  const MinHashSignature a = RandomSignature(rng), b = RandomSignature(rng),
                         c = RandomSignature(rng), d = RandomSignature(rng);
  MinHashNearIndex near;
  near.Insert(1, a);
  near.Insert(2, b);
  near.BulkLoad({{c, 3}, {d, 1}, {a, 3}});  // 1 becomes d; 3 is c, then a
  EXPECT_EQ(near.size(), 3u);
  EXPECT_THAT(near.Query(a), ElementsAre(3));
  EXPECT_THAT(near.Query(b), ElementsAre(2));
  EXPECT_THAT(near.Query(c), IsEmpty());
  EXPECT_THAT(near.Query(d), ElementsAre(1));
  EXPECT_TRUE(near.Erase(3));
  EXPECT_THAT(near.Query(a), IsEmpty());
  // A load into the empty index takes the vector.
  MinHashNearIndex fresh;
  std::vector<LshIndex::Entry> entries = {{a, 10}, {b, 11}, {a, 10}};
  fresh.BulkLoad(std::move(entries));
  EXPECT_EQ(fresh.size(), 2u);
  EXPECT_THAT(fresh.Query(a), ElementsAre(10));
  EXPECT_THAT(fresh.Query(b), ElementsAre(11));
}

// Query(sig, t) is Query(sig) less the candidates whose stored signature
// estimates below t, on every query of a random corpus with planted near
// pairs.
TEST(MinHashNearIndexTest, QueryWithAnEstimateFloorKeepsExactlyThoseThatReachIt) {
  SplitMixRng rng(11);
  MinHashNearIndex near;
  std::vector<MinHashSignature> stored;
  for (uint32_t id = 0; id < 2000; ++id) {
    stored.push_back(id % 2 == 1 ? SimilarSignature(stored[id - 1], 0.6, rng)
                                 : RandomSignature(rng));
    near.Insert(id, stored.back());
  }
  size_t kept = 0, dropped = 0;
  for (uint32_t q = 0; q < 2000; q += 7) {
    const MinHashSignature query = SimilarSignature(stored[q], 0.85, rng);
    for (double floor : {0.0, 0.5, 0.8, 0.95}) {
      std::vector<uint32_t> want;
      for (uint32_t id : near.Query(query)) {
        if (EstimateJaccard(query, stored[id]) >= floor) {
          want.push_back(id);
          ++kept;
        } else {
          ++dropped;
        }
      }
      EXPECT_EQ(near.Query(query, floor), want) << "query " << q << " floor " << floor;
    }
  }
  EXPECT_GT(kept, 0u);
  EXPECT_GT(dropped, 0u);
}

}  // namespace
}  // namespace dedupd
