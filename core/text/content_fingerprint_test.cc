// content_fingerprint_test.cc: FingerprintText is NormalizeText, then
// SHA-256 and SimHash of the normalized bytes (and MinHash and the shingle
// set when asked); its errors are NormalizeText's.
#include "core/text/content_fingerprint.h"

#include <string>

#include "core/text/shingle_hashes.h"
#include "core/text/text_normalizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;

TEST(FingerprintTextTest, HashesTheNormalizedText) {
  const SimHasher hasher;
  const std::string input = "  Hello,\xC2\xA0WORLD!\n\tCaf\x65\xCC\x81 ";
  ASSERT_OK_AND_ASSIGN(const std::string normalized, NormalizeText(input));
  EXPECT_EQ(normalized, "hello, world! caf\xC3\xA9");
  ASSERT_OK_AND_ASSIGN(const ContentFingerprint fp, FingerprintText(input, hasher));
  EXPECT_EQ(fp.sha256, Sha256(normalized));
  EXPECT_EQ(fp.simhash, hasher.Fingerprint(normalized));
  EXPECT_EQ(fp.normalized_bytes, normalized.size());
  EXPECT_EQ(fp.words, 3u);
}

TEST(FingerprintTextTest, CountsTheWordsOfTheNormalizedText) {
  const SimHasher hasher;
  struct Case {
    std::string input;
    size_t words;
  };
  const Case cases[] = {
      {"x", 1},
      {"  one\n", 1},
      {"Hello,\xC2\xA0World!", 2},
      {"a\tb\n\nc \xE3\x80\x80 d", 4},
      {"Stra\xC3\x9F"
       "e  Nummer 1",
       3},
  };
  for (const Case& c : cases) {
    ASSERT_OK_AND_ASSIGN(const ContentFingerprint fp, FingerprintText(c.input, hasher));
    EXPECT_EQ(fp.words, c.words) << c.input;
  }
}

TEST(FingerprintTextTest, EquivalentTextsGetEqualFingerprints) {
  const SimHasher hasher;
  ASSERT_OK_AND_ASSIGN(const ContentFingerprint a, FingerprintText("Stra\xC3\x9F"
                                                                   "e  Nummer 1",
                                                                   hasher));
  ASSERT_OK_AND_ASSIGN(const ContentFingerprint b, FingerprintText("STRASSE\tnummer\xC2\xA0"
                                                                   "1\n",
                                                                   hasher));
  EXPECT_EQ(a.sha256, b.sha256);
  EXPECT_EQ(a.simhash, b.simhash);
}

TEST(FingerprintTextTest, GivesTheShingleSetOfTheSignedShinglesWithinTheLimit) {
  const SimHasher hasher;
  const MinHasher minhasher;
  const std::string input = "  Hello,\xC2\xA0WORLD!\n\tCaf\x65\xCC\x81 and more words";
  ASSERT_OK_AND_ASSIGN(const std::string normalized, NormalizeText(input));
  ShingleSet32 set;
  ASSERT_OK_AND_ASSIGN(const ContentFingerprint fp,
                       FingerprintText(input, hasher, minhasher, &set));
  EXPECT_EQ(*fp.minhash, minhasher.Sign(normalized));
  EXPECT_EQ(set, ShingleSet32(DistinctShingleHashes(normalized, 3).distinct));
  EXPECT_EQ(set.size(), 4u);
  // Signed with other shingles than SimHash's: the set is the signature's.
  const MinHasher minhasher2({2});
  ASSERT_THAT(FingerprintText(input, hasher, minhasher2, &set).status(), IsOk());
  EXPECT_EQ(set, ShingleSet32(DistinctShingleHashes(normalized, 2).distinct));
  // kMaxExactShingles shingles keep a set; one more keeps none.
  std::string words = "w0 w1";
  for (size_t i = 2; i < kMaxExactShingles + 2; ++i) words += " w" + std::to_string(i);
  ASSERT_THAT(FingerprintText(words, hasher, minhasher, &set).status(), IsOk());
  EXPECT_EQ(set.size(), kMaxExactShingles);
  ASSERT_THAT(FingerprintText(words + " w", hasher, minhasher, &set).status(), IsOk());
  EXPECT_TRUE(set.empty());
}

TEST(FingerprintTextTest, ErrorsAreNormalizeTextErrors) {
  const SimHasher hasher;
  EXPECT_THAT(FingerprintText(" \n ", hasher),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty or only whitespace")));
  EXPECT_THAT(FingerprintText("ab\xFF", hasher),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("invalid UTF-8 at byte 2")));
  EXPECT_THAT(FingerprintText(std::string("a\0b", 3), hasher),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NUL byte at byte 1")));
}

}  // namespace
}  // namespace dedupd
