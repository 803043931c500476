// results_dedup_test.cc: DedupResults keeps the best-scoring hit of each
// duplicate cluster (exact text, SimHash or Jaccard, cosine), caps hits per
// source, stops at top_k (or keeps every survivor without one), rejects a
// bad hit alone and a bad request as a whole.
#include "core/results/results_dedup.h"

#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/text/simhash.h"
#include "core/text/text_normalizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Real-ish retrieved passages: three unrelated paragraphs.
constexpr char kVenv[] =
    "The venv module supports creating lightweight virtual environments, "
    "each with their own independent set of Python packages installed in "
    "their site directories. A virtual environment is created on top of an "
    "existing Python installation, known as the virtual environment's base "
    "Python, and may optionally be isolated from the packages in the base "
    "environment, so only those explicitly installed in the virtual "
    "environment are available. When used from within a virtual "
    "environment, common installation tools such as pip will install "
    "Python packages into a virtual environment without needing to be told "
    "to do so explicitly. A virtual environment is used to contain a "
    "specific Python interpreter and software libraries and binaries which "
    "are needed to support a project, and is contained in a directory, "
    "conventionally named venv or .venv in the project directory, or under "
    "a container directory for lots of virtual environments. It is not "
    "checked into source control systems such as Git, and is considered as "
    "disposable: it should be simple to delete and recreate it from scratch. "
    "You should not place any project code in the environment, and you "
    "should not modify its files by hand.";
constexpr char kVacuum[] =
    "VACUUM reclaims storage occupied by dead tuples. In normal PostgreSQL "
    "operation, tuples that are deleted or obsoleted by an update are not "
    "physically removed from their table; they remain present until a "
    "VACUUM is done. Therefore it is necessary to do VACUUM periodically, "
    "especially on frequently-updated tables. Without a table list, VACUUM "
    "processes every table and materialized view in the current database "
    "that the current user has permission to vacuum.";
constexpr char kAsyncio[] =
    "asyncio is a library to write concurrent code using the async and "
    "await syntax. It is used as a foundation for multiple Python "
    "asynchronous frameworks that provide high-performance network and web "
    "servers, database connection libraries, distributed task queues, and "
    "so on. It is often a perfect fit for IO-bound and high-level "
    "structured network code.";

// ReplaceWord returns `text` with its `n`th space-separated word (from 0)
// replaced by `word`.
std::string ReplaceWord(const std::string& text, size_t n, const std::string& word) {
  std::vector<std::string> words = absl::StrSplit(text, ' ');
  words.at(n) = word;
  return absl::StrJoin(words, " ");
}

// Distance returns the SimHash distance of two texts as DedupResults
// computes it (3-word shingles of the normalized text).
int Distance(const std::string& a, const std::string& b) {
  const SimHasher hasher;
  return HammingDistance(hasher.Fingerprint(*NormalizeText(a)),
                         hasher.Fingerprint(*NormalizeText(b)));
}

// OracleJaccard is the shingle-set Jaccard computed the obvious way, on
// shingle strings: an independent check of the hashed merge.
double OracleJaccard(const std::string& a, const std::string& b) {
  auto shingles = [](const std::string& text) {
    const std::vector<std::string> w = absl::StrSplit(*NormalizeText(text), ' ', absl::SkipEmpty());
    std::set<std::string> s;
    for (size_t j = 0; j + 3 <= w.size(); ++j) {
      s.insert(w[j] + " " + w[j + 1] + " " + w[j + 2]);
    }
    return s;
  };
  const std::set<std::string> sa = shingles(a), sb = shingles(b);
  size_t common = 0;
  for (const std::string& s : sa) common += sb.count(s);
  return static_cast<double>(common) / static_cast<double>(sa.size() + sb.size() - common);
}

ResultHit Hit(std::string id, std::string text, double score, std::string source = "",
              std::vector<float> embedding = {}) {
  return ResultHit{std::move(id), std::move(text), score, std::move(source), std::move(embedding)};
}

ResultsDedupOptions TopK(size_t k) {
  ResultsDedupOptions o;
  o.top_k = k;
  return o;
}

// Checks the invariant every result has: each hit index appears exactly
// once in kept, dropped, not_examined or rejected; duplicates point at kept
// hits with a score at least theirs; kept is in descending score order;
// rejected is in index order, each with a message.
void ExpectPartition(const std::vector<ResultHit>& hits, const ResultsDedupResult& r) {
  std::vector<int> seen(hits.size(), 0);
  for (size_t j = 0; j < r.rejected.size(); ++j) {
    ++seen.at(r.rejected[j].index);
    EXPECT_FALSE(r.rejected[j].error.empty()) << r.rejected[j].index;
    if (j > 0) {
      EXPECT_LT(r.rejected[j - 1].index, r.rejected[j].index);
    }
  }
  for (size_t i : r.kept) ++seen.at(i);
  for (const DroppedHit& d : r.dropped) {
    ++seen.at(d.index);
    if (d.reason == DropReason::kDuplicate) {
      EXPECT_NE(std::find(r.kept.begin(), r.kept.end(), d.duplicate_of), r.kept.end());
      EXPECT_GE(hits[d.duplicate_of].score, hits[d.index].score);
    }
  }
  for (size_t i : r.not_examined) ++seen.at(i);
  for (size_t i = 0; i < hits.size(); ++i) EXPECT_EQ(seen[i], 1) << i;
  for (size_t j = 1; j < r.kept.size(); ++j) {
    EXPECT_GE(hits[r.kept[j - 1]].score, hits[r.kept[j]].score);
  }
}

absl::StatusOr<ResultsDedupResult> Dedup(const std::vector<ResultHit>& hits,
                                         const ResultsDedupOptions& o) {
  absl::StatusOr<ResultsDedupResult> r = DedupResults(hits, o);
  if (r.ok()) ExpectPartition(hits, *r);
  return r;
}

TEST(DedupResultsTest, ExactDuplicateAfterNormalization) {
  const std::vector<ResultHit> hits = {
      Hit("a", kVenv, 0.9, "https://docs.python.org/3/library/venv.html"),
      Hit("b", kVacuum, 0.85, "https://www.postgresql.org/docs/15/vacuum"),
      // Case, NBSP and whitespace differences only.
      Hit("c", "  THE\xC2\xA0venv   module" + std::string(kVenv).substr(15), 0.8,
          "https://mirror.test/venv"),
  };
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, TopK(10)));
  EXPECT_THAT(r.kept, ElementsAre(0, 1));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].index, 2u);
  EXPECT_EQ(r.dropped[0].reason, DropReason::kDuplicate);
  EXPECT_EQ(r.dropped[0].duplicate_of, 0u);
  EXPECT_EQ(r.dropped[0].measure, DuplicateMeasure::kExactText);
  EXPECT_EQ(r.dropped[0].value, 1);
  EXPECT_THAT(r.not_examined, IsEmpty());
}

TEST(DedupResultsTest, NearDuplicateBySimHash) {
  // One word changed in a 188-word paragraph. Whether a one-word edit
  // lands within distance 3 depends on the position (SimHash is a random
  // projection; with SimHasher kVersion 1, 67 of the 188 positions do): take
  // the first position from word 100 on that does, so the test does not
  // depend on the exact fingerprint algorithm.
  std::string edited;
  int distance = -1;
  for (size_t pos = 100; pos < 188 && distance < 1; ++pos) {
    edited = ReplaceWord(kVenv, pos, "alter");
    distance = Distance(kVenv, edited);
    if (distance > 3) distance = -1;
  }
  ASSERT_GE(distance, 1) << "precondition: some one-word edit is near";
  const std::vector<ResultHit> hits = {Hit("orig", kVenv, 0.9), Hit("other", kAsyncio, 0.7),
                                       Hit("edit", edited, 0.8)};
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, TopK(10)));
  EXPECT_THAT(r.kept, ElementsAre(0, 1));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].index, 2u);
  EXPECT_EQ(r.dropped[0].duplicate_of, 0u);
  EXPECT_EQ(r.dropped[0].measure, DuplicateMeasure::kSimHash);
  EXPECT_EQ(r.dropped[0].value, distance);

  // A tighter threshold than the pair's distance keeps both.
  ResultsDedupOptions tight = TopK(10);
  tight.max_hamming_distance = distance - 1;
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult t, Dedup(hits, tight));
  EXPECT_THAT(t.kept, ElementsAre(0, 2, 1));
  EXPECT_THAT(t.dropped, IsEmpty());
}

TEST(DedupResultsTest, JaccardModeCatchesWhatSimHashMisses) {
  // Four words changed at spread positions: Jaccard ~0.9, SimHash far.
  std::string edited = kVenv;
  for (size_t pos : {20, 70, 120, 170}) edited = ReplaceWord(edited, pos, "x");
  const double j = OracleJaccard(kVenv, edited);
  ASSERT_GT(j, 0.8);
  ASSERT_LT(j, 0.95);
  ASSERT_GT(Distance(kVenv, edited), 3) << "precondition";
  const std::vector<ResultHit> hits = {Hit("orig", kVenv, 0.9), Hit("edit", edited, 0.8),
                                       Hit("other", kVacuum, 0.7)};

  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult s, Dedup(hits, TopK(10)));
  EXPECT_THAT(s.kept, ElementsAre(0, 1, 2)) << "SimHash at 3 misses it";

  ResultsDedupOptions o = TopK(10);
  o.near_text_measure = NearTextMeasure::kJaccard;
  o.min_jaccard = 0.8;
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, o));
  EXPECT_THAT(r.kept, ElementsAre(0, 2));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].index, 1u);
  EXPECT_EQ(r.dropped[0].duplicate_of, 0u);
  EXPECT_EQ(r.dropped[0].measure, DuplicateMeasure::kJaccard);
  EXPECT_DOUBLE_EQ(r.dropped[0].value, j);

  // Above the pair's similarity: both kept. Exact text is still exact.
  o.min_jaccard = 0.95;
  std::vector<ResultHit> with_copy = hits;
  with_copy.push_back(Hit("copy", kVacuum, 0.6));
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult u, Dedup(with_copy, o));
  EXPECT_THAT(u.kept, ElementsAre(0, 1, 2));
  ASSERT_EQ(u.dropped.size(), 1u);
  EXPECT_EQ(u.dropped[0].index, 3u);
  EXPECT_EQ(u.dropped[0].duplicate_of, 2u);
  EXPECT_EQ(u.dropped[0].measure, DuplicateMeasure::kExactText);
}

TEST(DedupResultsTest, CosineCatchesParaphrasesWhenEmbeddingsAreGiven) {
  // Different texts; embeddings say hits 0 and 2 mean the same thing.
  // cos(e0, e2) = 0.96 / sqrt(0.96^2 + 0.28^2) = 0.96; cos(e0, e1) = 0.
  const std::vector<ResultHit> hits = {
      Hit("a", kVenv, 0.9, "", {1, 0, 0, 0}),
      Hit("b", kVacuum, 0.8, "", {0, 1, 0, 0}),
      Hit("c", kAsyncio, 0.7, "", {0.96f * 2, 0, 0.28f * 2, 0}),
  };
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, TopK(10)));
  EXPECT_THAT(r.kept, ElementsAre(0, 1));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].index, 2u);
  EXPECT_EQ(r.dropped[0].duplicate_of, 0u);
  EXPECT_EQ(r.dropped[0].measure, DuplicateMeasure::kCosine);
  EXPECT_NEAR(r.dropped[0].value, 0.96, 1e-6);

  ResultsDedupOptions strict = TopK(10);
  strict.min_cosine = 0.97;
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult s, Dedup(hits, strict));
  EXPECT_THAT(s.kept, ElementsAre(0, 1, 2));
}

TEST(DedupResultsTest, CosineOnLongEmbeddingsMatchesDoubleArithmetic) {
  // 1,027 dimensions: the vector loop and its tail.
  std::vector<float> a(1027), b(1027);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = std::sin(static_cast<float>(i));
    b[i] = a[i] + 0.2f * std::cos(static_cast<float>(3 * i));
  }
  double dot = 0, na = 0, nb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += double{a[i]} * b[i];
    na += double{a[i]} * a[i];
    nb += double{b[i]} * b[i];
  }
  const double expected = dot / std::sqrt(na * nb);
  ASSERT_GT(expected, 0.95);
  const std::vector<ResultHit> hits = {Hit("a", kVenv, 2, "", a), Hit("b", kVacuum, 1, "", b)};
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, TopK(10)));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].measure, DuplicateMeasure::kCosine);
  EXPECT_NEAR(r.dropped[0].value, expected, 1e-5);
}

TEST(DedupResultsTest, TextMeasuresAreReportedBeforeCosine) {
  // Same text and parallel embeddings: reported as exact text.
  const std::vector<ResultHit> hits = {Hit("a", kVenv, 0.9, "", {1, 2}),
                                       Hit("b", kVenv, 0.8, "", {2, 4})};
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, TopK(10)));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].measure, DuplicateMeasure::kExactText);
}

TEST(DedupResultsTest, RepresentativeIsTheBestScoreWhateverTheInputOrder) {
  const std::vector<ResultHit> hits = {Hit("low", kVenv, 0.2), Hit("other", kVacuum, 0.5),
                                       Hit("high", kVenv, 0.9), Hit("mid", kVenv, 0.6)};
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, TopK(10)));
  EXPECT_THAT(r.kept, ElementsAre(2, 1));
  ASSERT_EQ(r.dropped.size(), 2u);
  // Processing order: score descending.
  EXPECT_EQ(r.dropped[0].index, 3u);
  EXPECT_EQ(r.dropped[0].duplicate_of, 2u);
  EXPECT_EQ(r.dropped[1].index, 0u);
  EXPECT_EQ(r.dropped[1].duplicate_of, 2u);
}

TEST(DedupResultsTest, EqualScoresKeepInputOrder) {
  const std::vector<ResultHit> hits = {Hit("a", kAsyncio, 0.5), Hit("b", kVenv, 0.5),
                                       Hit("c", kVacuum, 0.7), Hit("d", kVenv, 0.5)};
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, TopK(10)));
  EXPECT_THAT(r.kept, ElementsAre(2, 0, 1));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].index, 3u);
  EXPECT_EQ(r.dropped[0].duplicate_of, 1u);
}

TEST(DedupResultsTest, DuplicateOfTheFirstKeptHitItMatches) {
  // e0 and e1 are 0.6 apart in cosine (both kept); e2 matches both at
  // >= 0.9: it is a duplicate of the better-scoring one, hit 0.
  const std::vector<ResultHit> hits = {Hit("a", kVenv, 0.9, "", {1, 0}),
                                       Hit("b", kVacuum, 0.8, "", {0.6f, 0.8f}),
                                       Hit("c", kAsyncio, 0.7, "", {0.9f, 0.45f})};
  ResultsDedupOptions o = TopK(10);
  o.min_cosine = 0.85;
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, o));
  EXPECT_THAT(r.kept, ElementsAre(0, 1));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].duplicate_of, 0u);
}

// Hits 0..n-1 from one source, distinct texts, descending scores.
std::vector<ResultHit> SameSource(int n, const std::string& source) {
  std::vector<ResultHit> hits;
  for (int i = 0; i < n; ++i) {
    hits.push_back(Hit(std::to_string(i),
                       "passage number " + std::to_string(i) + " of the page about " + source,
                       1.0 - 0.01 * i, source));
  }
  return hits;
}

TEST(DedupResultsTest, PerSourceCapDefaults) {
  struct Case {
    std::optional<size_t> top_k;
    int per_source_cap;
    size_t expected_kept;
    int expected_cap;
  };
  for (const Case& c : std::vector<Case>{
           {1, -1, 1, 2},  // top_k stops first
           {5, -1, 2, 2},  // default: 2 when top_k <= 5
           {6, -1, 3, 3},  // default: 3 otherwise
           {100, -1, 3, 3},
           {std::nullopt, -1, 3, 3},  // and 3 without top_k
           {10, 1, 1, 1},             // explicit
           {10, 5, 5, 5},
           {10, 0, 8, 0},  // no cap
           {std::nullopt, 0, 8, 0},
       }) {
    SCOPED_TRACE(::testing::Message() << "top_k=" << (c.top_k ? std::to_string(*c.top_k) : "unset")
                                      << " cap=" << c.per_source_cap);
    ResultsDedupOptions o;
    o.top_k = c.top_k;
    o.per_source_cap = c.per_source_cap;
    EXPECT_EQ(EffectivePerSourceCap(o), c.expected_cap);
    const std::vector<ResultHit> hits = SameSource(8, "https://a.test/");
    ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, o));
    EXPECT_EQ(r.per_source_cap, c.expected_cap);
    ASSERT_EQ(r.kept.size(), c.expected_kept);
    for (size_t j = 0; j < r.kept.size(); ++j) EXPECT_EQ(r.kept[j], j);
    for (const DroppedHit& d : r.dropped) {
      EXPECT_EQ(d.reason, DropReason::kSourceCap);
    }
  }
}

TEST(DedupResultsTest, PerSourceCapCountsEachSourceAndSkipsUnknownSources) {
  std::vector<ResultHit> hits = {
      Hit("a1", "alpha one about sources", 0.9, "https://a.test/"),
      Hit("a2", "alpha two about sources", 0.8, "https://a.test/"),
      Hit("b1", "beta one about sources", 0.75, "https://b.test/"),
      Hit("a3", "alpha three about sources", 0.7, "https://a.test/"),
      Hit("n1", "no source one", 0.6, ""),
      Hit("n2", "no source two", 0.5, ""),
      Hit("n3", "no source three", 0.4, ""),
      // Byte-compared: another spelling is another source.
      Hit("A", "alpha four about sources", 0.3, "https://A.test/"),
  };
  ResultsDedupOptions o = TopK(5);  // cap 2
  o.top_k = 100;
  o.per_source_cap = 2;
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, o));
  EXPECT_THAT(r.kept, ElementsAre(0, 1, 2, 4, 5, 6, 7));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].index, 3u);
  EXPECT_EQ(r.dropped[0].reason, DropReason::kSourceCap);
}

TEST(DedupResultsTest, DuplicatesAreCheckedBeforeTheCapAndCappedHitsAreNotRepresentatives) {
  const std::vector<ResultHit> hits = {
      Hit("a1", kVenv, 0.9, "https://a.test/"),
      Hit("a2", kVacuum, 0.8, "https://a.test/"),
      // Over the cap of a.test.
      Hit("a3", kAsyncio, 0.7, "https://a.test/"),
      // A copy of a kept hit from a.test: a duplicate, not a cap drop.
      Hit("a4", kVenv, 0.65, "https://a.test/"),
      // A copy of the capped hit from another source: kept.
      Hit("b1", kAsyncio, 0.6, "https://b.test/"),
  };
  ResultsDedupOptions o = TopK(10);
  o.per_source_cap = 2;
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, o));
  EXPECT_THAT(r.kept, ElementsAre(0, 1, 4));
  ASSERT_EQ(r.dropped.size(), 2u);
  EXPECT_EQ(r.dropped[0].index, 2u);
  EXPECT_EQ(r.dropped[0].reason, DropReason::kSourceCap);
  EXPECT_EQ(r.dropped[1].index, 3u);
  EXPECT_EQ(r.dropped[1].reason, DropReason::kDuplicate);
  EXPECT_EQ(r.dropped[1].duplicate_of, 0u);
}

TEST(DedupResultsTest, StopsAtTopK) {
  const std::vector<ResultHit> hits = {Hit("a", kVenv, 0.9), Hit("a-copy", kVenv, 0.85),
                                       Hit("b", kVacuum, 0.8), Hit("c", kAsyncio, 0.7),
                                       Hit("a-copy2", kVenv, 0.6)};
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, TopK(2)));
  EXPECT_THAT(r.kept, ElementsAre(0, 2));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].index, 1u);
  // Hit 4 is a copy of hit 0 but was never examined.
  EXPECT_THAT(r.not_examined, ElementsAre(3, 4));
}

TEST(DedupResultsTest, WithoutTopKEverySurvivorIsKeptAndNoneIsLeftUnexamined) {
  std::vector<ResultHit> hits;
  for (int i = 0; i < 40; ++i) {
    hits.push_back(Hit(absl::StrCat("h", i), absl::StrCat("passage ", i, " about topic ", i),
                       1.0 - 0.01 * i, absl::StrCat("https://s", i % 20, ".test/")));
  }
  hits.push_back(Hit("copy", "passage 3 about topic 3", 0.001));
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, ResultsDedupOptions()));
  // 40 distinct texts from 20 sources, two each (under the cap of 3).
  ASSERT_EQ(r.kept.size(), 40u);
  for (size_t j = 0; j < r.kept.size(); ++j) EXPECT_EQ(r.kept[j], j);
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].index, 40u);
  EXPECT_EQ(r.dropped[0].duplicate_of, 3u);
  EXPECT_THAT(r.not_examined, IsEmpty());
  EXPECT_THAT(r.rejected, IsEmpty());
  EXPECT_EQ(r.per_source_cap, 3);

  // The same with a top_k of 10 stops there.
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult t, Dedup(hits, TopK(10)));
  EXPECT_EQ(t.kept.size(), 10u);
  EXPECT_EQ(t.not_examined.size(), 31u);
}

TEST(DedupResultsTest, EmptyRequestAndDuplicateIds) {
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult empty, Dedup({}, TopK(3)));
  EXPECT_THAT(empty.kept, IsEmpty());
  EXPECT_THAT(empty.dropped, IsEmpty());
  EXPECT_THAT(empty.not_examined, IsEmpty());
  // One chunk returned twice (hybrid retrieval): the second is a duplicate.
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r,
                       Dedup({Hit("x", kVenv, 0.9), Hit("x", kVenv, 0.4)}, TopK(3)));
  EXPECT_THAT(r.kept, ElementsAre(0));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].measure, DuplicateMeasure::kExactText);
}

TEST(DedupResultsTest, BadRequestsFailAsAWhole) {
  const double dnan = std::numeric_limits<double>::quiet_NaN();
  auto opts = [](auto change) {
    ResultsDedupOptions o = TopK(10);
    change(o);
    return o;
  };
  struct Case {
    std::string name;
    std::vector<ResultHit> hits;
    ResultsDedupOptions options;
    std::string message;
  };
  const std::vector<ResultHit> ok = {Hit("a", kVenv, 1)};
  // Bad hits too: a request-wide error wins over them.
  const std::vector<ResultHit> with_bad = {Hit("a", kVenv, 1), Hit("b", "", dnan)};
  const std::vector<Case> cases = {
      {"top_k 0", ok, TopK(0), "top_k: must be at least 1; omit it to keep all hits"},
      {"top_k 0 with bad hits", with_bad, TopK(0), "top_k: must be at least 1"},
      {"distance -1", ok, opts([](auto& o) { o.max_hamming_distance = -1; }),
       "max_hamming_distance -1 is outside 0..64"},
      {"distance 65", ok, opts([](auto& o) { o.max_hamming_distance = 65; }),
       "max_hamming_distance 65 is outside 0..64"},
      {"jaccard 0", ok, opts([](auto& o) { o.min_jaccard = 0; }),
       "min_jaccard 0 is outside (0, 1]"},
      {"jaccard 1.5", with_bad, opts([](auto& o) { o.min_jaccard = 1.5; }),
       "min_jaccard 1.5 is outside (0, 1]"},
      {"jaccard NaN", ok, opts([&](auto& o) { o.min_jaccard = dnan; }),
       "min_jaccard nan is outside (0, 1]"},
      {"cosine -1.1", ok, opts([](auto& o) { o.min_cosine = -1.1; }),
       "min_cosine -1.1 is outside [-1, 1]"},
      {"cosine NaN", ok, opts([&](auto& o) { o.min_cosine = dnan; }),
       "min_cosine nan is outside [-1, 1]"},
      {"cap -2", ok, opts([](auto& o) { o.per_source_cap = -2; }), "per_source_cap -2 is negative"},
      {"measure", ok, opts([](auto& o) { o.near_text_measure = NearTextMeasure{7}; }),
       "near_text_measure 7 is unknown"},
      {"too many hits", std::vector<ResultHit>(kMaxResultHits + 1, Hit("a", "x", 1)), TopK(1),
       "10001 hits, more than the limit of 10000"},
      {"too many bad hits", std::vector<ResultHit>(kMaxResultHits + 1, Hit("", "", 1)),
       ResultsDedupOptions(), "10001 hits, more than the limit of 10000"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(DedupResults(c.hits, c.options),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)));
  }
  // At the limit: accepted.
  EXPECT_THAT(DedupResults(std::vector<ResultHit>(kMaxResultHits, Hit("a", "x", 1)), TopK(1)),
              IsOk());
}

TEST(DedupResultsTest, BadHitsAreRejectedAloneAndTheRestDeduplicated) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const double dnan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    std::string name;
    ResultHit bad;
    RejectReason reason;
    std::string error;  // exactly
  };
  // Each case: the bad hit between two good ones, with the best score so
  // that it would be kept first if it took part, and the text of hit 0 so
  // that hit 0 would be its duplicate.
  const std::vector<Case> text_cases = {
      {"empty id", Hit("", kVenv, 2), RejectReason::kBadHit, "empty id"},
      {"empty text", Hit("b", "", 2), RejectReason::kBadText,
       "text: text is empty or only whitespace"},
      {"whitespace text", Hit("b", " \t\n\xC2\xA0 ", 2), RejectReason::kBadText,
       "text: text is empty or only whitespace"},
      {"invalid UTF-8", Hit("b", "ab\xFF", 2), RejectReason::kBadText,
       "text: invalid UTF-8 at byte 2"},
      {"NUL", Hit("b", std::string("a\0b", 3), 2), RejectReason::kBadText,
       "text: text contains a NUL byte at byte 1"},
      {"NaN score", Hit("b", kVenv, dnan), RejectReason::kBadHit, "score is NaN"},
      {"+inf score", Hit("b", kVenv, HUGE_VAL), RejectReason::kBadHit, "score is infinite"},
      {"-inf score", Hit("b", kVenv, -HUGE_VAL), RejectReason::kBadHit, "score is infinite"},
  };
  for (const Case& c : text_cases) {
    SCOPED_TRACE(c.name);
    ResultHit bad = c.bad;
    bad.source_url = "https://a.test/";
    const std::vector<ResultHit> hits = {Hit("a", kVenv, 1, "https://a.test/"), bad,
                                         Hit("c", kVacuum, 0.5, "https://a.test/")};
    ResultsDedupOptions o = TopK(2);
    o.per_source_cap = 1;
    ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, o));
    ASSERT_EQ(r.rejected.size(), 1u);
    EXPECT_EQ(r.rejected[0].index, 1u);
    EXPECT_EQ(r.rejected[0].reason, c.reason);
    EXPECT_EQ(r.rejected[0].error, c.error);
    // As if absent: hit 0 kept (not a duplicate of it), hit 2 capped by
    // hit 0 alone (the rejected hit is not counted for a.test).
    EXPECT_THAT(r.kept, ElementsAre(0));
    ASSERT_EQ(r.dropped.size(), 1u);
    EXPECT_EQ(r.dropped[0].index, 2u);
    EXPECT_EQ(r.dropped[0].reason, DropReason::kSourceCap);
    EXPECT_THAT(r.not_examined, IsEmpty());
  }

  // Embedding problems, among hits that carry 2-dimension embeddings.
  const std::vector<Case> embedding_cases = {
      {"NaN element", Hit("b", kAsyncio, 2, "", {1, nan}), RejectReason::kBadHit,
       "embedding element 1 is NaN"},
      {"inf element", Hit("b", kAsyncio, 2, "", {-inf, 2}), RejectReason::kBadHit,
       "embedding element 0 is infinite"},
      {"zero norm", Hit("b", kAsyncio, 2, "", {0, 0}), RejectReason::kBadHit,
       "embedding has norm 0 (cosine is undefined)"},
      {"other size", Hit("b", kAsyncio, 2, "", {1, 0, 0}), RejectReason::kBadHit,
       "embedding has 3 dimensions, hit 0 has 2"},
      {"missing", Hit("b", kAsyncio, 2), RejectReason::kBadHit,
       "has no embedding but hit 0 has one (2 dimensions); send embeddings on all hits or none"},
      {"too many dimensions",
       Hit("b", kAsyncio, 2, "", std::vector<float>(kMaxEmbeddingDimensions + 1, 1.0f)),
       RejectReason::kBadHit, "embedding has 4097 dimensions, more than the limit of 4096"},
      // Bad text and a bad embedding: one problem, the text's.
      {"text first", Hit("b", "", 2, "", {1, nan}), RejectReason::kBadText,
       "text: text is empty or only whitespace"},
  };
  for (const Case& c : embedding_cases) {
    SCOPED_TRACE(c.name);
    // Hit 2's embedding is parallel to hit 0's: a cosine duplicate of it.
    const std::vector<ResultHit> hits = {Hit("a", kVenv, 1, "", {1, 0}), c.bad,
                                         Hit("c", kVacuum, 0.5, "", {3, 0})};
    ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, ResultsDedupOptions()));
    ASSERT_EQ(r.rejected.size(), 1u);
    EXPECT_EQ(r.rejected[0].index, 1u);
    EXPECT_EQ(r.rejected[0].reason, c.reason);
    EXPECT_EQ(r.rejected[0].error, c.error);
    EXPECT_THAT(r.kept, ElementsAre(0));
    ASSERT_EQ(r.dropped.size(), 1u);
    EXPECT_EQ(r.dropped[0].index, 2u);
    EXPECT_EQ(r.dropped[0].duplicate_of, 0u);
    EXPECT_EQ(r.dropped[0].measure, DuplicateMeasure::kCosine);
  }
}

TEST(DedupResultsTest, EmbeddingSizeIsSetByTheFirstValidHitWithOne) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    std::string name;
    std::vector<ResultHit> hits;
    std::vector<size_t> rejected;
    std::vector<std::string> errors;
    std::vector<size_t> kept;
  };
  const std::vector<Case> cases = {
      {"hit 0 has none: it is the odd one out",
       {Hit("a", kVenv, 1), Hit("b", kVacuum, 0.9, "", {1, 0}),
        Hit("c", kAsyncio, 0.8, "", {0, 1})},
       {0},
       {"has no embedding but hit 1 has one (2 dimensions); send embeddings on all hits or none"},
       {1, 2}},
      {"a bad hit's embedding does not set the size",
       {Hit("a", "", 1, "", {1, 2, 3}), Hit("b", kVenv, 0.9, "", {1, 0}),
        Hit("c", kVacuum, 0.8, "", {0, 1})},
       {0},
       {"text: text is empty or only whitespace"},
       {1, 2}},
      {"nor does a NaN embedding of another size",
       {Hit("a", kVenv, 1, "", {nan, 2, 3}), Hit("b", kVacuum, 0.9, "", {1, 0}),
        Hit("c", kAsyncio, 0.8, "", {0, 1, 0})},
       {0, 2},
       {"embedding element 0 is NaN", "embedding has 3 dimensions, hit 1 has 2"},
       {1}},
      {"several wrong sizes, each named",
       {Hit("a", kVenv, 1, "", {1, 0}), Hit("b", kVacuum, 0.9, "", {1}),
        Hit("c", kAsyncio, 0.8, "", {0, 1}), Hit("d", "fourth text", 0.7, "", {1, 2, 3}),
        Hit("e", "fifth text", 0.6)},
       {1, 3, 4},
       {"embedding has 1 dimensions, hit 0 has 2", "embedding has 3 dimensions, hit 0 has 2",
        "has no embedding but hit 0 has one (2 dimensions); send embeddings on all hits or none"},
       {0, 2}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(c.hits, ResultsDedupOptions()));
    std::vector<size_t> rejected;
    std::vector<std::string> errors;
    for (const RejectedHit& h : r.rejected) {
      rejected.push_back(h.index);
      errors.push_back(h.error);
      EXPECT_EQ(h.reason,
                h.error.rfind("text:", 0) == 0 ? RejectReason::kBadText : RejectReason::kBadHit);
    }
    EXPECT_THAT(rejected, ElementsAreArray(c.rejected));
    EXPECT_THAT(errors, ElementsAreArray(c.errors));
    EXPECT_THAT(r.kept, ElementsAreArray(c.kept));
  }
}

TEST(DedupResultsTest, HitsPastTopKAreCheckedToo) {
  const std::vector<ResultHit> hits = {Hit("a", kVenv, 1), Hit("b", kVacuum, 0.5),
                                       Hit("c", "", 0.1)};
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, TopK(1)));
  EXPECT_THAT(r.kept, ElementsAre(0));
  EXPECT_THAT(r.not_examined, ElementsAre(1));
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].index, 2u);
}

TEST(DedupResultsTest, EveryHitRejectedIsAnAnswerNotAnError) {
  const std::vector<ResultHit> hits = {Hit("a", "", 1), Hit("", kVenv, 0.5),
                                       Hit("c", kVacuum, std::nan(""))};
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, TopK(2)));
  EXPECT_THAT(r.kept, IsEmpty());
  EXPECT_THAT(r.dropped, IsEmpty());
  EXPECT_THAT(r.not_examined, IsEmpty());
  ASSERT_EQ(r.rejected.size(), 3u);
  EXPECT_EQ(r.rejected[0].reason, RejectReason::kBadText);
  EXPECT_EQ(r.rejected[1].error, "empty id");
  EXPECT_EQ(r.rejected[2].error, "score is NaN");
  EXPECT_EQ(r.per_source_cap, 2);
}

TEST(DedupResultsTest, HugeAndTinyEmbeddingElementsAreNotErrors) {
  // Squares overflow or underflow float; the norm is computed in double.
  const std::vector<ResultHit> hits = {Hit("a", kVenv, 1, "", {3e30f, 4e30f}),
                                       Hit("b", kVacuum, 0.5, "", {4e-30f, -3e-30f}),
                                       Hit("c", kAsyncio, 0.2, "", {8e-30f, -6e-30f})};
  ASSERT_OK_AND_ASSIGN(const ResultsDedupResult r, Dedup(hits, TopK(10)));
  EXPECT_THAT(r.kept, ElementsAre(0, 1));
  ASSERT_EQ(r.dropped.size(), 1u);
  EXPECT_EQ(r.dropped[0].index, 2u);
  EXPECT_EQ(r.dropped[0].duplicate_of, 1u);
  EXPECT_EQ(r.dropped[0].measure, DuplicateMeasure::kCosine);
  EXPECT_NEAR(r.dropped[0].value, 1.0, 1e-6);
}

TEST(DedupResultsTest, Names) {
  EXPECT_STREQ(DropReasonName(DropReason::kDuplicate), "duplicate");
  EXPECT_STREQ(DropReasonName(DropReason::kSourceCap), "source_cap");
  EXPECT_STREQ(DuplicateMeasureName(DuplicateMeasure::kExactText), "exact_text");
  EXPECT_STREQ(DuplicateMeasureName(DuplicateMeasure::kSimHash), "simhash");
  EXPECT_STREQ(DuplicateMeasureName(DuplicateMeasure::kJaccard), "jaccard");
  EXPECT_STREQ(DuplicateMeasureName(DuplicateMeasure::kCosine), "cosine");
}

}  // namespace
}  // namespace dedupd
