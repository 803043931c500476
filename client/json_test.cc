#include "client/json.h"

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dedupd {
namespace {

struct EscapeCase {
  const char* name;
  std::string input;
  std::string want;  // the JSON literal, quotes included
};
void PrintTo(const EscapeCase& c, std::ostream* os) { *os << c.name; }

class JsonStringTest : public ::testing::TestWithParam<EscapeCase> {};

TEST_P(JsonStringTest, Escapes) {
  EXPECT_EQ(JsonString(GetParam().input), GetParam().want);
}

// Builds a std::string from bytes that may contain NUL.
std::string Bytes(absl::string_view s) { return std::string(s); }

INSTANTIATE_TEST_SUITE_P(
    Table, JsonStringTest,
    ::testing::Values(
        EscapeCase{"Empty", "", R"("")"},
        EscapeCase{"PlainAscii", "https://example.com/a?b=1",
                   R"("https://example.com/a?b=1")"},
        EscapeCase{"Quote", "a\"b", R"("a\"b")"},
        EscapeCase{"Backslash", "a\\b", R"("a\\b")"},
        EscapeCase{"Slash", "a/b", R"("a/b")"},
        EscapeCase{"ShortForms", "\b\f\n\r\t", R"("\b\f\n\r\t")"},
        EscapeCase{"Nul", Bytes(absl::string_view("a\0b", 3)), R"("a\u0000b")"},
        EscapeCase{"OtherControls", "\x01\x1f\x0b", R"("\u0001\u001f\u000b")"},
        EscapeCase{"Del", "\x7f", R"("\u007f")"},
        EscapeCase{"Space", " ", R"(" ")"},
        EscapeCase{"TwoByteUtf8", "caf\xc3\xa9", "\"caf\xc3\xa9\""},
        EscapeCase{"ThreeByteUtf8", "\xe4\xbe\x8b", "\"\xe4\xbe\x8b\""},
        EscapeCase{"FourByteUtf8", "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""},
        EscapeCase{"MaxCodePoint", "\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\""},
        EscapeCase{"LineSeparators", "\xe2\x80\xa8\xe2\x80\xa9",
                   R"("\u2028\u2029")"},
        EscapeCase{"LoneContinuation", "a\x80z", R"("a\ufffdz")"},
        EscapeCase{"InvalidLeadBytes", "\xc0\xc1\xf5\xff",
                   R"("\ufffd\ufffd\ufffd\ufffd")"},
        EscapeCase{"OverlongSlash", "\xc0\xaf", R"("\ufffd\ufffd")"},
        EscapeCase{"OverlongThreeByte", "\xe0\x80\xaf",
                   R"("\ufffd\ufffd\ufffd")"},
        EscapeCase{"Surrogate", "\xed\xa0\x80", R"("\ufffd\ufffd\ufffd")"},
        EscapeCase{"AboveMaxCodePoint", "\xf4\x90\x80\x80",
                   R"("\ufffd\ufffd\ufffd\ufffd")"},
        EscapeCase{"TruncatedAtEnd", "ok\xe4\xbe", R"("ok\ufffd\ufffd")"},
        EscapeCase{"TruncatedBeforeAscii", "\xe4\xbe\"", R"("\ufffd\ufffd\"")"},
        EscapeCase{"Latin1Byte", "caf\xe9", R"("caf\ufffd")"},
        EscapeCase{"BadThenGood", "\xff\xc3\xa9", "\"\\ufffd\xc3\xa9\""}),
    [](const ::testing::TestParamInfo<EscapeCase>& info) {
      return std::string(info.param.name);
    });

TEST(JsonStringTest, AppendKeepsExistingContent) {
  std::string out = "x=";
  AppendJsonString("\"", &out);
  EXPECT_EQ(out, R"(x="\"")");
}

TEST(JsonStringTest, EveryByteGivesPrintableAsciiOrValidUtf8) {
  // Every single byte value, alone: the output never contains a raw byte
  // below 0x20 nor a byte >= 0x80 (a lone byte is never valid non-ASCII).
  for (int b = 0; b < 256; ++b) {
    const std::string in(1, static_cast<char>(b));
    const std::string out = JsonString(in);
    for (char c : out) {
      const unsigned char u = static_cast<unsigned char>(c);
      EXPECT_TRUE(u >= 0x20 && u < 0x7F) << "byte " << b << " gave " << out;
    }
  }
}

TEST(JsonObjectWriterTest, EmptyObject) {
  EXPECT_EQ(std::move(JsonObjectWriter()).Finish(), "{}");
}

TEST(JsonObjectWriterTest, MembersInOrder) {
  JsonObjectWriter w;
  w.String("url", "a\"b").String("normalized", "n");
  EXPECT_EQ(std::move(w).Finish(), R"({"url":"a\"b","normalized":"n"})");
}

TEST(JsonObjectWriterTest, StringArrays) {
  const std::vector<absl::string_view> rules = {"x", "y\n"};
  JsonObjectWriter w;
  w.StringArray("rules", rules).StringArray("none", {});
  EXPECT_EQ(std::move(w).Finish(), R"({"rules":["x","y\n"],"none":[]})");
}

TEST(JsonObjectWriterTest, KeysAreEscaped) {
  JsonObjectWriter w;
  w.String("k\"", "v");
  EXPECT_EQ(std::move(w).Finish(), R"({"k\"":"v"})");
}

}  // namespace
}  // namespace dedupd
