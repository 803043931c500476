// simhash_test.cc: SimHasher against a literal implementation of the
// algorithm in docs/content_fingerprint.md, its golden vectors
// (core/text/testdata/simhash_golden.tsv, which also pin NormalizeText and
// SHA-256 through FingerprintText), and the near-duplicate properties the
// content layer relies on, on real text (Python tutorial pages, the BSD
// license).
#include "core/text/simhash.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/text/content_fingerprint.h"
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

std::string FirstWords(absl::string_view text, size_t n) {
  std::vector<std::string> w = Words(text);
  w.resize(std::min(n, w.size()));
  return absl::StrJoin(w, " ");
}

// The algorithm exactly as docs/content_fingerprint.md states it, written
// for clarity: an ordered map of shingle hash -> count and a loop over
// the 64 bits of every distinct shingle.
uint64_t SpecFingerprint(absl::string_view text, int shingle_words) {
  std::vector<uint64_t> word_hashes;
  for (const std::string& w : Words(text)) {
    word_hashes.push_back(StableWordHash64(w, SimHasher::kSeed));
  }
  if (word_hashes.empty()) return 0;
  const size_t k = std::min<size_t>(shingle_words, word_hashes.size());
  std::map<uint64_t, int> counts;
  for (size_t j = 0; j + k <= word_hashes.size(); ++j) {
    uint64_t h = SimHasher::kSeed;
    for (size_t i = 0; i < k; ++i) {
      h = ((h << 27 | h >> 37) ^ word_hashes[j + i]) * 0x9FB21C651E98DF25ULL;
    }
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 33;
    ++counts[h];
  }
  int64_t v[64] = {};
  for (const auto& [h, count] : counts) {
    const int64_t weight = 1;  // every distinct shingle once
    static_cast<void>(count);
    for (int b = 0; b < 64; ++b) v[b] += (h >> b & 1) ? weight : -weight;
  }
  uint64_t fingerprint = 0;
  for (int b = 0; b < 64; ++b) {
    if (v[b] > 0) fingerprint |= uint64_t{1} << b;
  }
  return fingerprint;
}

TEST(SimHasherTest, MatchesTheSpecOnRealText) {
  const std::string text = Normalized("python_tutorial_venv.txt");
  for (int k = 1; k <= 16; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(SimHasher({k}).Fingerprint(text), SpecFingerprint(text, k));
  }
}

TEST(SimHasherTest, MatchesTheSpecOnRandomWordsWithRepeats) {
  // Few distinct words: many repeated shingles; long texts: the byte lanes
  // of the accumulator are flushed many times. Words of 1..17 bytes and
  // more: both word-hash paths.
  std::mt19937 rng(7);
  const std::vector<std::string> vocab = {"a",
                                          "b",
                                          "the",
                                          "license",
                                          "x",
                                          "\xC3\xA9t\xC3\xA9",
                                          "1",
                                          "exactly8",
                                          "sixteen-bytes-xx",
                                          "seventeen-bytes-x",
                                          "internationalization-and-localization"};
  for (int iter = 0; iter < 300; ++iter) {
    std::string text;
    const int n = std::uniform_int_distribution<int>(0, 2000)(rng);
    for (int i = 0; i < n; ++i) {
      absl::StrAppend(&text, i ? " " : "", vocab[rng() % vocab.size()]);
    }
    const int k = 1 + iter % 5;
    ASSERT_EQ(SimHasher({k}).Fingerprint(text), SpecFingerprint(text, k))
        << "n=" << n << " k=" << k;
  }
}

// More than 2^16 shingles: the distinct-shingle table's wider indices.
TEST(SimHasherTest, MatchesTheSpecOnALongText) {
  std::mt19937 rng(11);
  std::string text;
  for (int i = 0; i < 70000; ++i) {
    absl::StrAppend(&text, i ? " " : "", "w", rng() % 300);
  }
  EXPECT_EQ(SimHasher().Fingerprint(text), SpecFingerprint(text, 3));
}

TEST(SimHasherTest, EdgeCases) {
  const SimHasher h;
  EXPECT_EQ(h.Fingerprint(""), 0u);
  EXPECT_EQ(h.Fingerprint("   "), 0u);
  // Fewer words than a shingle: one shingle of all the words.
  EXPECT_EQ(h.Fingerprint("two words"), SpecFingerprint("two words", 2));
  EXPECT_NE(h.Fingerprint("two words"), h.Fingerprint("words two"));
  // Empty words are skipped.
  EXPECT_EQ(h.Fingerprint(" a  b c "), h.Fingerprint("a b c"));
  EXPECT_EQ(h.options().shingle_words, 3);
}

TEST(SimHasherTest, CountsWords) {
  const SimHasher h;
  size_t words = 99;
  EXPECT_EQ(h.Fingerprint("", &words), 0u);
  EXPECT_EQ(words, 0u);
  EXPECT_EQ(h.Fingerprint("   ", &words), 0u);
  EXPECT_EQ(words, 0u);
  EXPECT_EQ(h.Fingerprint("to be or not to be", &words), h.Fingerprint("to be or not to be"));
  EXPECT_EQ(words, 6u);
  h.Fingerprint(" a  b c ", &words);
  EXPECT_EQ(words, 3u);
  // Words that cross the 64-byte blocks of the space masks, and the last
  // bytes of a text (read from a padded copy).
  for (size_t len : {1, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200}) {
    std::string text;
    size_t want = 0;
    for (size_t i = 0; text.size() < len; ++i) {
      if (!text.empty()) text += ' ';
      text += std::string(1 + i % 19, static_cast<char>('a' + i % 26));
      ++want;
    }
    h.Fingerprint(text, &words);
    EXPECT_EQ(words, want) << text;
    EXPECT_EQ(h.Fingerprint(text), SpecFingerprint(text, 3)) << text;
  }
  const std::string page = Normalized("python_tutorial_venv.txt");
  h.Fingerprint(page, &words);
  EXPECT_EQ(words, Words(page).size());
}

TEST(SimHasherDeathTest, ShingleWordsOutOfRange) {
  EXPECT_DEATH(SimHasher({0}), "shingle_words must be in 1..16");
  EXPECT_DEATH(SimHasher({17}), "shingle_words must be in 1..16");
}

TEST(HammingDistanceTest, CountsDifferingBits) {
  EXPECT_EQ(HammingDistance(0, 0), 0);
  EXPECT_EQ(HammingDistance(0, ~uint64_t{0}), 64);
  EXPECT_EQ(HammingDistance(0b1011, 0b0110), 3);
}

TEST(SimHasherTest, IdenticalTextIdenticalFingerprint) {
  const SimHasher h;
  const std::string text = Normalized("python_tutorial_venv.txt");
  const std::string copy = text;
  EXPECT_EQ(h.Fingerprint(text), h.Fingerprint(copy));
  EXPECT_EQ(h.Fingerprint(text), SimHasher().Fingerprint(text));
}

// One word replaced in a 980-word real page. SimHash gives a probabilistic
// bound, not a guarantee: 3 of ~970 shingles change, which flips each bit
// with small probability. The example edit must stay within 3; over every
// position, at least 90% must (measured: 97%) and none beyond 8.
TEST(SimHasherTest, OneWordEditInARealPageStaysClose) {
  const SimHasher h;
  const std::string text = Normalized("python_tutorial_venv.txt");
  std::vector<std::string> words = Words(text);
  ASSERT_GE(words.size(), 950u);
  const uint64_t base = h.Fingerprint(text);

  std::string edited = text;
  const size_t at = edited.find("virtual environment");
  ASSERT_NE(at, std::string::npos);
  edited.replace(at, 7, "virtuel");
  EXPECT_LE(HammingDistance(base, h.Fingerprint(edited)), 3);

  int within3 = 0;
  int worst = 0;
  for (size_t i = 0; i < words.size(); ++i) {
    std::vector<std::string> copy = words;
    copy[i] = "zebra";
    const int d = HammingDistance(base, h.Fingerprint(absl::StrJoin(copy, " ")));
    within3 += d <= 3;
    worst = std::max(worst, d);
  }
  EXPECT_GE(within3, static_cast<int>(words.size() * 9 / 10));
  EXPECT_LE(worst, 8);
}

// A license paragraph pasted 50 times must not dominate the page.
TEST(SimHasherTest, RepeatedLicenseDoesNotDominate) {
  const SimHasher h;
  const std::string license = Normalized("bsd_license.txt");
  std::string license50;
  for (int i = 0; i < 50; ++i) absl::StrAppend(&license50, " ", license);
  const std::string a = FirstWords(Normalized("python_tutorial_interactive.txt"), 300);
  const std::string b = FirstWords(Normalized("python_tutorial_whatnow.txt"), 300);
  ASSERT_EQ(Words(a).size(), 300u);
  ASSERT_EQ(Words(b).size(), 300u);

  const uint64_t a50 = h.Fingerprint(a + license50);
  const uint64_t b50 = h.Fingerprint(b + license50);
  const uint64_t a1 = h.Fingerprint(a + " " + license);
  const uint64_t b1 = h.Fingerprint(b + " " + license);
  // Two different pages that both carry the license 50 times are not near
  // duplicates (measured: 25 bits; 6 with 1 + log2(count) weights).
  EXPECT_GT(HammingDistance(a50, b50), 12);
  // The license's 50 copies count as about one copy (measured: 3)...
  EXPECT_LE(HammingDistance(a50, a1), 4);
  // ...so the two pages differ about as much as with the license once.
  EXPECT_LE(std::abs(HammingDistance(a50, b50) - HammingDistance(a1, b1)), 6);
  // And the page is not mistaken for the bare license.
  EXPECT_GT(HammingDistance(a50, h.Fingerprint(license)), 6);
}

// ---------------------------------------------------------------------------
// Golden vectors.

constexpr char kBumpVersion[] =
    "changing fingerprints requires bumping SimHasher::kVersion (or "
    "kTextNormalizerVersion when the normalized text changed) and the "
    "version lines of core/text/testdata/simhash_golden.tsv";

TEST(SimHashGoldenTest, FingerprintsArePinned) {
  const std::string golden = ReadTestdata("simhash_golden.tsv");
  int simhash_version = -1;
  int normalizer_version = -1;
  int rows = 0;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(golden, '\n')) {
    ++line_number;
    if (line.empty()) continue;
    if (line[0] == '#') {
      absl::string_view rest = line;
      if (absl::ConsumePrefix(&rest, "# SimHasher::kVersion=")) {
        EXPECT_TRUE(absl::SimpleAtoi(rest, &simhash_version)) << line;
      } else if (absl::ConsumePrefix(&rest, "# kTextNormalizerVersion=")) {
        EXPECT_TRUE(absl::SimpleAtoi(rest, &normalizer_version)) << line;
      }
      continue;
    }
    const std::vector<std::string> cols = absl::StrSplit(line, '\t');
    ASSERT_EQ(cols.size(), 4u) << "line " << line_number;
    int k = 0;
    ASSERT_TRUE(absl::SimpleAtoi(cols[0], &k)) << "line " << line_number;
    std::string input;
    if (absl::StartsWith(cols[1], "@")) {
      input = ReadTestdata(cols[1].substr(1));
    } else {
      ASSERT_TRUE(absl::CUnescape(cols[1], &input)) << "line " << line_number;
    }
    ASSERT_OK_AND_ASSIGN(const ContentFingerprint fp, FingerprintText(input, SimHasher({k})));
    const std::string got_simhash = absl::StrFormat("%016x", fp.simhash);
    const std::string got_sha = Sha256Hex(fp.sha256);
    EXPECT_EQ(got_simhash, cols[2]) << "simhash_golden.tsv:" << line_number << "; " << kBumpVersion;
    EXPECT_EQ(got_sha, cols[3]) << "simhash_golden.tsv:" << line_number << "; " << kBumpVersion;
    if (got_simhash != cols[2] || got_sha != cols[3]) {
      std::cout << "got\t" << cols[0] << "\t" << cols[1] << "\t" << got_simhash << "\t" << got_sha
                << "\n";
    }
    ++rows;
  }
  EXPECT_GE(rows, 20) << "golden file missing or truncated";
  EXPECT_EQ(simhash_version, static_cast<int>(SimHasher::kVersion)) << kBumpVersion;
  EXPECT_EQ(normalizer_version, static_cast<int>(kTextNormalizerVersion)) << kBumpVersion;
}

}  // namespace
}  // namespace dedupd
