// text_normalizer_test.cc: the rules of NormalizeText, table-driven, plus
// its invariants (idempotence; the ASCII fast path agrees with normalizing
// the whole text in ICU).
#include "core/text/text_normalizer.h"

#include <unicode/casemap.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

#ifndef DEDUPD_CORE_TESTDATA_DIR
#error "DEDUPD_CORE_TESTDATA_DIR must name core/text/testdata"
#endif

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;

struct Case {
  const char* name;
  std::string input;
  std::string want;
};

const std::vector<Case>& Cases() {
  static const auto* const cases = new std::vector<Case>{
      {"ascii_lowercased", "Hello, World!", "hello, world!"},
      {"ascii_punctuation_kept", "a-b_c.d/e?f=1&g", "a-b_c.d/e?f=1&g"},
      {"nfc_input", "Caf\xC3\xA9", "caf\xC3\xA9"},
      {"nfd_input_composed", "Cafe\xCC\x81", "caf\xC3\xA9"},
      {"nfd_uppercase",
       "E\xCC\x81"
       "COLE",
       "\xC3\xA9"
       "cole"},
      {"nfc_uppercase",
       "\xC3\x89"
       "COLE",
       "\xC3\xA9"
       "cole"},
      {"combining_after_space_kept", "a \xCC\x81", "a \xCC\x81"},
      {"combining_at_start",
       "\xCC\x81"
       "a",
       "\xCC\x81"
       "a"},
      {"nbsp",
       "a\xC2\xA0"
       "b",
       "a b"},
      {"nbsp_runs",
       "a\xC2\xA0\xC2\xA0 \xC2\xA0"
       "b",
       "a b"},
      {"tabs_newlines", "\t a\r\n\nb \f\v c", "a b c"},
      {"line_paragraph_separators",
       "a\xE2\x80\xA8"
       "b\xE2\x80\xA9"
       "c",
       "a b c"},
      {"other_zs",
       "a\xE3\x80\x80"
       "b\xE2\x80\x83"
       "c\xE2\x80\xAF"
       "d"
       "\xE2\x81\x9F"
       "e\xE1\x9A\x80"
       "f\xE2\x80\x8A"
       "g",
       "a b c d e f g"},
      {"zero_width_space_is_not_space",
       "a\xE2\x80\x8B"
       "b",
       "a\xE2\x80\x8B"
       "b"},
      {"trimmed", "  \n hello \t ", "hello"},
      {"german_sharp_s",
       "Stra\xC3\x9F"
       "e",
       "strasse"},
      {"german_upper", "STRASSE", "strasse"},
      {"capital_sharp_s", "\xE1\xBA\x9E", "ss"},
      {"turkish_dotless_i_stays", "\xC4\xB1", "\xC4\xB1"},
      {"turkish_capital_i_folds_to_i", "I", "i"},
      {"turkish_dotted_capital_i", "D\xC4\xB0YARBAKIR", "di\xCC\x87yarbakir"},
      {"greek_final_sigma",
       "\xCE\xA3\xCE\x8A\xCE\xA3\xCE\xA5\xCE\xA6\xCE\x9F"
       "\xCE\xA3",
       "\xCF\x83\xCE\xAF\xCF\x83\xCF\x85\xCF\x86\xCE\xBF\xCF\x83"},
      {"ypogegrammeni", "\xCE\xB1\xCD\x85", "\xCE\xB1\xCE\xB9"},
      {"fi_ligature_folds",
       "\xEF\xAC\x81"
       "le",
       "file"},
      {"fullwidth_kept_not_nfkc", "\xEF\xBC\xA1", "\xEF\xBD\x81"},
      {"angstrom_sign", "\xE2\x84\xAB", "\xC3\xA5"},
      {"kelvin_sign", "\xE2\x84\xAA", "k"},
      {"hangul_jamo_composed", "\xE1\x84\x80\xE1\x85\xA1", "\xEA\xB0\x80"},
      {"cjk_unchanged", "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E",
       "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"},
      {"emoji_kept", "Hi \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD  THERE",
       "hi \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD there"},
      {"emoji_zwj_sequence", "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB",
       "\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x92\xBB"},
      {"deseret_supplementary_case", "\xF0\x90\x90\x80", "\xF0\x90\x90\xA8"},
      {"noncharacter_allowed", "a\xEF\xBF\xBE", "a\xEF\xBF\xBE"},
      {"max_code_point", "\xF4\x8F\xBF\xBF", "\xF4\x8F\xBF\xBF"},
      {"other_controls_kept",
       "a\x01"
       "b\x7F",
       "a\x01"
       "b\x7F"},
  };
  return *cases;
}

TEST(NormalizeTextTest, Table) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::string> got = NormalizeText(c.input);
    ASSERT_THAT(got, IsOk());
    EXPECT_EQ(absl::CHexEscape(*got), absl::CHexEscape(c.want));
  }
}

TEST(NormalizeTextTest, TableIsIdempotent) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    ASSERT_OK_AND_ASSIGN(const std::string once, NormalizeText(c.input));
    ASSERT_OK_AND_ASSIGN(const std::string twice, NormalizeText(once));
    EXPECT_EQ(twice, once);
  }
}

struct ErrorCase {
  const char* name;
  std::string input;
  std::string message;
};

TEST(NormalizeTextTest, Errors) {
  const std::vector<ErrorCase> cases = {
      {"empty", "", "text is empty or only whitespace"},
      {"only_whitespace", " \t\n\xC2\xA0\xE3\x80\x80 ", "text is empty or only whitespace"},
      {"nul", std::string("hello\0world", 11), "text contains a NUL byte at byte 5"},
      {"nul_first", std::string("\0a", 2), "text contains a NUL byte at byte 0"},
      {"nul_after_unicode", std::string("\xC3\xA9\0", 3), "text contains a NUL byte at byte 2"},
      {"overlong_2", "a\xC0\xAF", "invalid UTF-8 at byte 1"},
      {"overlong_2_c1", "\xC1\xBF", "invalid UTF-8 at byte 0"},
      {"overlong_3", "ab\xE0\x80\xAF", "invalid UTF-8 at byte 2"},
      {"overlong_4", "\xF0\x8F\xBF\xBF", "invalid UTF-8 at byte 0"},
      {"surrogate_high", "x\xED\xA0\x80", "invalid UTF-8 at byte 1"},
      {"surrogate_low", "x\xED\xBF\xBF", "invalid UTF-8 at byte 1"},
      {"truncated_2", "abc\xC3", "invalid UTF-8 at byte 3"},
      {"truncated_3", "ab\xE2\x82", "invalid UTF-8 at byte 2"},
      {"truncated_4_then_ascii", "\xF0\x9F\x91z", "invalid UTF-8 at byte 0"},
      {"above_10ffff", "\xF4\x90\x80\x80", "invalid UTF-8 at byte 0"},
      {"lead_f5", "\xF5\x80\x80\x80", "invalid UTF-8 at byte 0"},
      {"byte_ff", "ok \xFF", "invalid UTF-8 at byte 3"},
      {"lone_continuation", "abc\x80", "invalid UTF-8 at byte 3"},
      {"continuation_after_valid", "\xC3\xA9\xA9", "invalid UTF-8 at byte 2"},
      {"offset_17", "seventeen bytes..\x80", "invalid UTF-8 at byte 17"},
      {"first_error_wins", std::string("\x80\0", 2), "invalid UTF-8 at byte 0"},
  };
  for (const ErrorCase& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(NormalizeText(c.input),
                StatusIs(absl::StatusCode::kInvalidArgument, ::testing::Eq(c.message)));
  }
}

TEST(NormalizeTextTest, SpacesAreExactlyZsAndTheListedControls) {
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    const bool want = u_charType(static_cast<UChar32>(c)) == U_SPACE_SEPARATOR || c == '\t' ||
                      c == '\n' || c == '\v' || c == '\f' || c == '\r' || c == 0x2028 ||
                      c == 0x2029;
    ASSERT_EQ(IsTextSpace(c), want) << std::hex << static_cast<uint32_t>(c);
  }
}

// Reference: the rules applied to the whole text in ICU, without the ASCII
// fast path or run splitting (valid UTF-8 without NUL only).
std::string ReferenceNormalize(const std::string& utf8) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  icu::UnicodeString s = nfc->normalize(icu::UnicodeString::fromUTF8(utf8), status);
  for (int round = 0; round < 8; ++round) {
    icu::UnicodeString folded = s;
    folded.foldCase(U_FOLD_CASE_DEFAULT);
    folded = nfc->normalize(folded, status);
    if (folded == s) break;
    s = folded;
  }
  EXPECT_TRUE(U_SUCCESS(status));
  std::string out;
  bool pending = false;
  for (int32_t i = 0; i < s.length();) {
    const UChar32 c = s.char32At(i);
    i += U16_LENGTH(c);
    if (IsTextSpace(static_cast<char32_t>(c))) {
      pending = !out.empty();
      continue;
    }
    if (pending) out += ' ';
    pending = false;
    icu::UnicodeString(c).toUTF8String(out);
  }
  return out;
}

// Random strings over an alphabet chosen to put ASCII next to combining
// marks, case-changing and space characters: the fast path must agree with
// the reference, and the output must be a fixed point.
TEST(NormalizeTextTest, FastPathMatchesWholeTextReferenceAndIsIdempotent) {
  const std::vector<std::string> alphabet = {
      "a",
      "E",
      "I",
      "i",
      "s",
      "S",
      "k",
      " ",
      "\t",
      "\n",
      ".",
      "1",
      "\xC2\xA0",          // NBSP
      "\xCC\x81",          // combining acute
      "\xCC\xA3",          // combining dot below (ccc 220)
      "\xCD\x85",          // combining ypogegrammeni (folds to a starter)
      "\xCC\x87",          // combining dot above
      "\xC3\x89",          // É
      "\xC3\x9F",          // ß
      "\xC4\xB0",          // İ
      "\xC4\xB1",          // ı
      "\xCE\xA3",          // Σ
      "\xE1\xBE\x88",      // ᾈ (folds to two characters)
      "\xE2\x84\xAB",      // Angstrom sign
      "\xE1\x84\x80",      // Hangul choseong
      "\xE1\x85\xA1",      // Hangul jungseong
      "\xE3\x80\x80",      // ideographic space
      "\xE2\x80\xA8",      // line separator
      "\xEF\xAC\x81",      // fi ligature
      "\xF0\x9F\x91\x8B",  // emoji
      "\xF0\x90\x90\x80",  // Deseret capital
  };
  std::mt19937 rng(20240603);
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  std::uniform_int_distribution<int> length(1, 24);
  for (int iter = 0; iter < 20000; ++iter) {
    std::string input;
    for (int n = length(rng); n > 0; --n) input += alphabet[pick(rng)];
    SCOPED_TRACE(absl::CHexEscape(input));
    const std::string want = ReferenceNormalize(input);
    absl::StatusOr<std::string> got = NormalizeText(input);
    if (want.empty()) {
      EXPECT_THAT(got, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty")));
      continue;
    }
    ASSERT_THAT(got, IsOk());
    ASSERT_EQ(absl::CHexEscape(*got), absl::CHexEscape(want));
    ASSERT_OK_AND_ASSIGN(const std::string twice, NormalizeText(*got));
    ASSERT_EQ(absl::CHexEscape(twice), absl::CHexEscape(*got));
  }
}

std::string ReadTestdata(const std::string& name) {
  std::ifstream in(std::string(DEDUPD_CORE_TESTDATA_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << name;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(NormalizeTextTest, RealTextIsIdempotentAndMatchesReference) {
  for (const char* name : {"python_tutorial_venv.txt", "python_tutorial_interactive.txt",
                           "python_tutorial_whatnow.txt", "bsd_license.txt"}) {
    SCOPED_TRACE(name);
    const std::string text = ReadTestdata(name);
    ASSERT_OK_AND_ASSIGN(const std::string once, NormalizeText(text));
    EXPECT_EQ(once, ReferenceNormalize(text));
    ASSERT_OK_AND_ASSIGN(const std::string twice, NormalizeText(once));
    EXPECT_EQ(twice, once);
    EXPECT_EQ(once.find("  "), std::string::npos);
  }
}

}  // namespace
}  // namespace dedupd
