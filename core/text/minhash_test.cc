// minhash_test.cc: MinHasher against a literal implementation of
// docs/minhash.md, its golden vectors (core/text/testdata/minhash_golden.tsv,
// from the independent minhash_golden.py), and the estimator's accuracy
// against exact shingle Jaccard on random pairs with a fixed seed.
#include "core/text/minhash.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/text/content_fingerprint.h"
#include "core/text/shingle_hashes.h"
#include "core/text/simhash.h"
#include "core/text/splitmix64.h"
#include "core/text/stable_hash.h"
#include "core/text/text_normalizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

#ifndef DEDUPD_CORE_TESTDATA_DIR
#error "DEDUPD_CORE_TESTDATA_DIR must name core/text/testdata"
#endif

namespace dedupd {
namespace {

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(DEDUPD_CORE_TESTDATA_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open testdata/" << name;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Normalized(const std::string& name) {
  absl::StatusOr<std::string> t = NormalizeText(ReadTestdata(name));
  EXPECT_TRUE(t.ok()) << name << ": " << t.status();
  return t.ok() ? *t : std::string();
}

std::vector<std::string> Words(absl::string_view text) {
  return absl::StrSplit(text, ' ', absl::SkipEmpty());
}

// The distinct shingle hashes exactly as docs/content_fingerprint.md
// states them (steps 1-3), in a std::set.
std::set<uint64_t> SpecShingles(absl::string_view text, int shingle_words) {
  std::vector<uint64_t> w;
  for (const std::string& word : Words(text)) w.push_back(StableWordHash64(word, kShingleSeed));
  std::set<uint64_t> out;
  if (w.empty()) return out;
  const size_t k = std::min<size_t>(shingle_words, w.size());
  for (size_t j = 0; j + k <= w.size(); ++j) {
    uint64_t h = kShingleSeed;
    for (size_t i = 0; i < k; ++i) h = ((h << 27 | h >> 37) ^ w[j + i]) * 0x9FB21C651E98DF25ULL;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 33;
    out.insert(h);
  }
  return out;
}

// The signature exactly as docs/minhash.md states it, written for clarity.
MinHashSignature SpecSignature(absl::string_view text, int shingle_words) {
  const std::set<uint64_t> shingles = SpecShingles(text, shingle_words);
  MinHashSignature sig{};
  if (shingles.empty()) return sig;
  std::vector<std::optional<uint64_t>> bins(128);
  for (uint64_t h : shingles) {
    const uint64_t bin = h >> 57, rank = h & ((uint64_t{1} << 57) - 1);
    if (!bins[bin] || rank < *bins[bin]) bins[bin] = rank;
  }
  for (int i = 0; i < 128; ++i) {
    int src = bins[i] ? i : -1;
    for (int attempt = 1; src < 0 && attempt <= 512; ++attempt) {
      const int j = static_cast<int>(
          SplitMix64(MinHasher::kSeed ^ (uint64_t(i) << 32 | uint64_t(attempt))) >> 57);
      if (bins[j]) src = j;
    }
    for (int j = (i + 1) % 128; src < 0; j = (j + 1) % 128) {
      if (bins[j]) src = j;
    }
    sig[i] = static_cast<uint8_t>(*bins[src] & 0xFF);
  }
  return sig;
}

double ExactJaccard(absl::string_view a, absl::string_view b, int k = 3) {
  const std::set<uint64_t> x = SpecShingles(a, k), y = SpecShingles(b, k);
  size_t inter = 0;
  for (uint64_t h : x) inter += y.count(h);
  const size_t uni = x.size() + y.size() - inter;
  return uni == 0 ? 1.0 : static_cast<double>(inter) / uni;
}

// A random text of `n` words over a vocabulary of `vocab` words.
std::string RandomText(std::mt19937_64& rng, int n, int vocab) {
  std::string text;
  for (int i = 0; i < n; ++i) absl::StrAppend(&text, i ? " " : "", "w", rng() % vocab);
  return text;
}

// `text` with each word replaced, with probability `p`, by a fresh word.
std::string Mutate(std::mt19937_64& rng, absl::string_view text, double p) {
  std::vector<std::string> words = Words(text);
  std::uniform_real_distribution<double> u(0, 1);
  for (std::string& w : words) {
    if (u(rng) < p) w = absl::StrCat("x", rng());
  }
  return absl::StrJoin(words, " ");
}

TEST(MinHasherTest, MatchesTheSpecOnRealText) {
  const std::string text = Normalized("python_tutorial_venv.txt");
  for (int k = 1; k <= 16; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(MinHasher({k}).Sign(text), SpecSignature(text, k));
  }
}

// Short texts leave most bins empty: densification, its fallback and the
// one-bin case all run.
TEST(MinHasherTest, MatchesTheSpecOnRandomTextsOfEveryLength) {
  std::mt19937_64 rng(5);
  for (int iter = 0; iter < 400; ++iter) {
    const int n = iter < 100 ? iter : static_cast<int>(rng() % 3000);
    const std::string text = RandomText(rng, n, 1 + static_cast<int>(rng() % 500));
    const int k = 1 + iter % 4;
    ASSERT_EQ(MinHasher({k}).Sign(text), SpecSignature(text, k)) << "n=" << n << " k=" << k;
  }
}

TEST(MinHasherTest, EdgeCases) {
  const MinHasher h;
  const MinHashSignature zero{};
  EXPECT_EQ(h.Sign(""), zero);
  EXPECT_EQ(h.Sign("   "), zero);
  EXPECT_EQ(EstimateJaccard(h.Sign(""), h.Sign("")), 1.0);
  EXPECT_LT(EstimateJaccard(h.Sign(""), h.Sign(Normalized("bsd_license.txt"))), 0.05);
  // Fewer words than a shingle: one shingle of all the words, so every
  // slot holds its rank's low byte.
  const MinHashSignature two = h.Sign("two words");
  EXPECT_EQ(two, SpecSignature("two words", 2));
  EXPECT_TRUE(std::all_of(two.begin(), two.end(), [&](uint8_t s) { return s == two[0]; }));
  EXPECT_NE(two, h.Sign("words two"));
  // Empty words are skipped; repeats do not count.
  EXPECT_EQ(h.Sign(" a  b c "), h.Sign("a b c"));
  EXPECT_EQ(h.Sign("a b c a b c"), h.Sign("a b c a b c a b c"));
  EXPECT_EQ(h.options().shingle_words, 3);
}

TEST(MinHasherDeathTest, ShingleWordsOutOfRange) {
  EXPECT_DEATH(MinHasher({0}), "shingle_words must be in 1..16");
  EXPECT_DEATH(MinHasher({17}), "shingle_words must be in 1..16");
}

TEST(EstimateJaccardTest, Table) {
  struct Case {
    int equal_slots;
    double want;
  };
  // J = (E/128 - 1/256) / (1 - 1/256), clamped to [0, 1].
  for (const Case& c :
       {Case{128, 1.0}, Case{0, 0.0}, Case{1, (1.0 / 128 - 1.0 / 256) / (255.0 / 256)},
        Case{64, (0.5 - 1.0 / 256) / (255.0 / 256)},
        Case{103, (103.0 / 128 - 1.0 / 256) / (255.0 / 256)}}) {
    MinHashSignature a{}, b{};
    for (int i = c.equal_slots; i < 128; ++i) b[i] = 1;
    EXPECT_EQ(EqualSlots(a, b), c.equal_slots);
    EXPECT_DOUBLE_EQ(EstimateJaccard(a, b), c.want) << c.equal_slots;
  }
}

TEST(MinHasherTest, IdenticalTextsEstimateOne) {
  const MinHasher h;
  for (const char* name : {"python_tutorial_venv.txt", "bsd_license.txt"}) {
    const std::string t = Normalized(name);
    EXPECT_EQ(EstimateJaccard(h.Sign(t), h.Sign(t)), 1.0) << name;
  }
}

TEST(MinHasherTest, DisjointTextsEstimateNearZero) {
  const MinHasher h;
  std::mt19937_64 rng(3);
  for (int n : {5, 50, 1500}) {
    // Different vocabularies: no shared shingle. Expected equal slots:
    // 128 / 256 = 0.5 from 8-bit collisions alone.
    std::string a = RandomText(rng, n, 1000), b = Mutate(rng, RandomText(rng, n, 1000), 1.0);
    EXPECT_EQ(ExactJaccard(a, b), 0.0);
    EXPECT_LE(EqualSlots(h.Sign(a), h.Sign(b)), 5) << n;
    EXPECT_LE(EstimateJaccard(h.Sign(a), h.Sign(b)), 0.04) << n;
  }
}

// Over random pairs with every Jaccard similarity, of page length and of
// chunk length (where densification fills most bins), the estimate is
// within 4 binomial standard deviations sqrt(J (1 - J) / 128) of the exact
// shingle Jaccard, and unbiased on average.
TEST(MinHasherTest, EstimateWithinExpectedErrorOfExactJaccard) {
  const MinHasher h;
  std::mt19937_64 rng(20170713);
  for (int words : {40, 200, 1500}) {
    SCOPED_TRACE(words);
    double sum_error = 0;
    double sum_var = 0;
    int pairs = 0;
    for (int i = 0; i < 150; ++i) {
      const std::string a = RandomText(rng, words, 100000);
      const double p = (i % 15) / 40.0;  // 0 .. 0.35 of the words replaced
      const std::string b = Mutate(rng, a, p);
      const double exact = ExactJaccard(a, b);
      const double estimate = EstimateJaccard(h.Sign(a), h.Sign(b));
      // The 8-bit slots add collision noise: sd of the corrected estimator
      // is sqrt(P (1 - P) / 128) / (1 - C), P = J + (1 - J) C.
      const double c = 1.0 / 256, q = exact + (1 - exact) * c;
      const double sd = std::sqrt(q * (1 - q) / 128) / (1 - c);
      EXPECT_LE(std::abs(estimate - exact), 4 * sd + 1e-9)
          << "exact=" << exact << " estimate=" << estimate;
      sum_error += estimate - exact;
      sum_var += sd * sd;
      ++pairs;
    }
    // The mean error of `pairs` independent estimates: sd sqrt(sum_var) / pairs.
    EXPECT_LE(std::abs(sum_error / pairs), 4 * std::sqrt(sum_var) / pairs + 0.005);
  }
}

TEST(MinHasherTest, SignShinglesMatchesSign) {
  const std::string text = Normalized("python_tutorial_interactive.txt");
  const ShingleHashes s = DistinctShingleHashes(text, 3);
  EXPECT_EQ(MinHasher::SignShingles(s.distinct), MinHasher().Sign(text));
}

TEST(FingerprintTextTest, WithMinHasherAddsTheSignature) {
  const std::string raw = ReadTestdata("python_tutorial_whatnow.txt");
  const std::string text = Normalized("python_tutorial_whatnow.txt");
  for (int mk : {3, 2}) {  // same shingles as SimHash, and not
    const SimHasher simhasher;
    const MinHasher minhasher({mk});
    ASSERT_OK_AND_ASSIGN(ContentFingerprint with, FingerprintText(raw, simhasher, minhasher));
    ASSERT_OK_AND_ASSIGN(ContentFingerprint without, FingerprintText(raw, simhasher));
    EXPECT_EQ(with.sha256, without.sha256);
    EXPECT_EQ(with.simhash, without.simhash);
    EXPECT_EQ(with.words, without.words);
    EXPECT_EQ(with.normalized_bytes, without.normalized_bytes);
    EXPECT_FALSE(without.minhash.has_value());
    ASSERT_TRUE(with.minhash.has_value());
    EXPECT_EQ(*with.minhash, minhasher.Sign(text)) << mk;
  }
}

TEST(MinHashGoldenTest, SignaturesArePinned) {
  const std::string golden = ReadTestdata("minhash_golden.tsv");
  const std::string version = absl::StrCat("# MinHasher::kVersion=", MinHasher::kVersion);
  EXPECT_NE(golden.find(version + "\n"), std::string::npos)
      << "MinHasher::kVersion changed: regenerate minhash_golden.tsv (minhash_golden.py)";
  int rows = 0, line_number = 0;
  for (absl::string_view line : absl::StrSplit(golden, '\n')) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> cols = absl::StrSplit(line, '\t');
    ASSERT_EQ(cols.size(), 3u) << "minhash_golden.tsv:" << line_number;
    int k = 0;
    ASSERT_TRUE(absl::SimpleAtoi(cols[0], &k)) << line_number;
    std::string raw;
    if (absl::StartsWith(cols[1], "@")) {
      raw = ReadTestdata(cols[1].substr(1));
    } else {
      ASSERT_TRUE(absl::CUnescape(cols[1], &raw)) << line_number;
    }
    ASSERT_OK_AND_ASSIGN(std::string normalized, NormalizeText(raw));
    const MinHashSignature sig = MinHasher({k}).Sign(normalized);
    const std::string hex =
        absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(sig.data()), 128));
    EXPECT_EQ(hex, cols[2]) << "minhash_golden.tsv:" << line_number
                            << "; a changed signature needs a new MinHasher::kVersion";
    ++rows;
  }
  EXPECT_GE(rows, 20) << "golden file missing or truncated";
}

}  // namespace
}  // namespace dedupd
