// content_fingerprint_test.cc: FingerprintText is NormalizeText, then
// SHA-256 and SimHash of the normalized bytes; its errors are
// NormalizeText's.
#include "core/text/content_fingerprint.h"

#include <string>

#include "core/text/text_normalizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

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
