#include "client/json.h"

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

struct EscapeCase {
  const char* name;
  std::string input;
  std::string want;  // the JSON literal, quotes included
};
void PrintTo(const EscapeCase& c, std::ostream* os) { *os << c.name; }

class JsonStringTest : public ::testing::TestWithParam<EscapeCase> {};

TEST_P(JsonStringTest, Escapes) { EXPECT_EQ(JsonString(GetParam().input), GetParam().want); }

// Builds a std::string from bytes that may contain NUL.
std::string Bytes(absl::string_view s) { return std::string(s); }

INSTANTIATE_TEST_SUITE_P(
    Table, JsonStringTest,
    ::testing::Values(
        EscapeCase{"Empty", "", R"("")"},
        EscapeCase{"PlainAscii", "https://example.com/a?b=1", R"("https://example.com/a?b=1")"},
        EscapeCase{"Quote", "a\"b", R"("a\"b")"}, EscapeCase{"Backslash", "a\\b", R"("a\\b")"},
        EscapeCase{"Slash", "a/b", R"("a/b")"},
        EscapeCase{"ShortForms", "\b\f\n\r\t", R"("\b\f\n\r\t")"},
        EscapeCase{"Nul", Bytes(absl::string_view("a\0b", 3)), R"("a\u0000b")"},
        EscapeCase{"OtherControls", "\x01\x1f\x0b", R"("\u0001\u001f\u000b")"},
        EscapeCase{"Del", "\x7f", R"("\u007f")"}, EscapeCase{"Space", " ", R"(" ")"},
        EscapeCase{"TwoByteUtf8", "caf\xc3\xa9", "\"caf\xc3\xa9\""},
        EscapeCase{"ThreeByteUtf8", "\xe4\xbe\x8b", "\"\xe4\xbe\x8b\""},
        EscapeCase{"FourByteUtf8", "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\""},
        EscapeCase{"MaxCodePoint", "\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\""},
        EscapeCase{"LineSeparators", "\xe2\x80\xa8\xe2\x80\xa9", R"("\u2028\u2029")"},
        EscapeCase{"LoneContinuation", "a\x80z", R"("a\ufffdz")"},
        EscapeCase{"InvalidLeadBytes", "\xc0\xc1\xf5\xff", R"("\ufffd\ufffd\ufffd\ufffd")"},
        EscapeCase{"OverlongSlash", "\xc0\xaf", R"("\ufffd\ufffd")"},
        EscapeCase{"OverlongThreeByte", "\xe0\x80\xaf", R"("\ufffd\ufffd\ufffd")"},
        EscapeCase{"Surrogate", "\xed\xa0\x80", R"("\ufffd\ufffd\ufffd")"},
        EscapeCase{"AboveMaxCodePoint", "\xf4\x90\x80\x80", R"("\ufffd\ufffd\ufffd\ufffd")"},
        EscapeCase{"TruncatedAtEnd", "ok\xe4\xbe", R"("ok\ufffd\ufffd")"},
        EscapeCase{"TruncatedBeforeAscii", "\xe4\xbe\"", R"("\ufffd\ufffd\"")"},
        EscapeCase{"Latin1Byte", "caf\xe9", R"("caf\ufffd")"},
        EscapeCase{"BadThenGood", "\xff\xc3\xa9", "\"\\ufffd\xc3\xa9\""}),
    [](const ::testing::TestParamInfo<EscapeCase>& info) { return std::string(info.param.name); });

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

TEST(JsonObjectWriterTest, EmptyObject) { EXPECT_EQ(std::move(JsonObjectWriter()).Finish(), "{}"); }

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

TEST(JsonObjectWriterTest, NumbersNullAndRawArrays) {
  const std::vector<std::string> objects = {std::move(JsonObjectWriter().Int("d", 2)).Finish(),
                                            "{}"};
  JsonObjectWriter w;
  w.Int("min", INT64_MIN)
      .Uint("max", UINT64_MAX)
      .Null("none")
      .Bool("yes", true)
      .Bool("no", false)
      .RawArray("objs", objects)
      .RawArray("empty", {});
  EXPECT_EQ(std::move(w).Finish(), R"({"min":-9223372036854775808,"max":18446744073709551615,)"
                                   R"("none":null,"yes":true,"no":false,"objs":[{"d":2},{}],)"
                                   R"("empty":[]})");
}

// ------------------------------------------------------------ the reader

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

JsonScalar Str(std::string s) {
  JsonScalar v;
  v.type = JsonScalar::Type::kString;
  v.string = std::move(s);
  return v;
}
JsonScalar Int(int64_t i) {
  JsonScalar v;
  v.type = JsonScalar::Type::kInteger;
  v.integer = i;
  return v;
}
JsonScalar Num(double d) {
  JsonScalar v;
  v.type = JsonScalar::Type::kNumber;
  v.number = d;
  return v;
}
JsonScalar Null() { return JsonScalar(); }

struct ParseCase {
  const char* name;
  std::string input;
  JsonFlatObject want;
};
void PrintTo(const ParseCase& c, std::ostream* os) { *os << c.name; }

class ParseJsonFlatObjectTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseJsonFlatObjectTest, Parses) {
  absl::StatusOr<JsonFlatObject> got = ParseJsonFlatObject(GetParam().input);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseJsonFlatObjectTest,
    ::testing::Values(
        ParseCase{"Empty", "{}", {}}, ParseCase{"EmptyWithSpace", " \t{ \r\n} \r\n", {}},
        ParseCase{"Document",
                  R"({"url": "https://a.example/", "text": "hi", "max_hamming_distance": 3})",
                  {{"url", Str("https://a.example/")},
                   {"text", Str("hi")},
                   {"max_hamming_distance", Int(3)}}},
        ParseCase{"Null", R"({"canonical_url":null})", {{"canonical_url", Null()}}},
        ParseCase{"ShortEscapes", R"({"s":"\"\\\/\b\f\n\r\t"})", {{"s", Str("\"\\/\b\f\n\r\t")}}},
        ParseCase{"UnicodeEscapes",
                  R"({"s":"\u0041\u00e9\u4F8B"})",
                  {{"s", Str("A\xc3\xa9\xe4\xbe\x8b")}}},
        ParseCase{"NulEscape", R"({"s":"a\u0000b"})", {{"s", Str(std::string("a\0b", 3))}}},
        ParseCase{"SurrogatePair", R"({"s":"\ud83d\ude00"})", {{"s", Str("\xf0\x9f\x98\x80")}}},
        ParseCase{"MaxCodePointPair", R"({"s":"\uDBFF\uDFFF"})", {{"s", Str("\xf4\x8f\xbf\xbf")}}},
        ParseCase{"RawUtf8",
                  "{\"s\":\"caf\xc3\xa9 \xf0\x9f\x98\x80\"}",
                  {{"s", Str("caf\xc3\xa9 \xf0\x9f\x98\x80")}}},
        ParseCase{"EscapedKey", R"({"\u0075rl":"x"})", {{"url", Str("x")}}},
        ParseCase{"Zero", R"({"n":0})", {{"n", Int(0)}}},
        ParseCase{"NegativeZero", R"({"n":-0})", {{"n", Int(0)}}},
        ParseCase{"Int64Max", R"({"n":9223372036854775807})", {{"n", Int(INT64_MAX)}}},
        ParseCase{"Int64Min", R"({"n":-9223372036854775808})", {{"n", Int(INT64_MIN)}}},
        ParseCase{"Fraction", R"({"j":0.9})", {{"j", Num(0.9)}}},
        ParseCase{"Exponent", R"({"j":-1E3})", {{"j", Num(-1000)}}},
        ParseCase{"WholeFraction", R"({"j":1.0})", {{"j", Num(1)}}},
        ParseCase{"DelIsRaw", "{\"s\":\"\x7f\"}", {{"s", Str("\x7f")}}}),
    [](const ::testing::TestParamInfo<ParseCase>& info) { return std::string(info.param.name); });

struct RejectCase {
  const char* name;
  std::string input;
  const char* want;  // in the message, after "at byte N: "
};
void PrintTo(const RejectCase& c, std::ostream* os) { *os << c.name; }

class ParseJsonFlatObjectRejectTest : public ::testing::TestWithParam<RejectCase> {};

TEST_P(ParseJsonFlatObjectRejectTest, IsInvalidArgument) {
  EXPECT_THAT(ParseJsonFlatObject(GetParam().input),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(GetParam().want)));
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseJsonFlatObjectRejectTest,
    ::testing::Values(
        RejectCase{"EmptyInput", "", "at byte 0: expected '{'"},
        RejectCase{"NotAnObject", "[1]", "at byte 0: expected '{'"},
        RejectCase{"Unclosed", R"({"a":1)", "at byte 6: expected ',' or '}'"},
        RejectCase{"TrailingComma", R"({"a":1,})", "member name"},
        RejectCase{"TrailingData", R"({"a":1} x)", "at byte 8: unexpected data"},
        RejectCase{"TwoObjects", R"({}{})", "unexpected data"},
        RejectCase{"UnquotedKey", R"({a:1})", "member name"},
        RejectCase{"SingleQuotes", R"({'a':1})", "member name"},
        RejectCase{"MissingColon", R"({"a" 1})", "expected ':'"},
        RejectCase{"MissingValue", R"({"a":})", "expected a value"},
        RejectCase{"DuplicateKey", R"({"a":1,"a":2})", "at byte 7: duplicate member name"},
        RejectCase{"True", R"({"a":true})", "only string, number and null"},
        RejectCase{"Array", R"({"a":[]})", "only string, number and null"},
        RejectCase{"Nested", R"({"a":{}})", "only string, number and null"},
        RejectCase{"BareFraction", R"({"a":1.})", "expected a digit"},
        RejectCase{"BeyondDouble", R"({"a":1e400})", "double range"},
        RejectCase{"LeadingZero", R"({"a":01})", "leading zeros"},
        RejectCase{"Plus", R"({"a":+1})", "expected a value"},
        RejectCase{"LoneMinus", R"({"a":-})", "expected a digit"},
        RejectCase{"Overflow", R"({"a":9223372036854775808})", "out of the 64-bit range"},
        RejectCase{"Underflow", R"({"a":-9223372036854775809})", "out of the 64-bit range"},
        RejectCase{"HugeNumber", R"({"a":99999999999999999999999})", "out of the 64-bit range"},
        RejectCase{"UnterminatedString", R"({"a":"xyz)", "at byte 5: unterminated string"},
        RejectCase{"RawNewline", "{\"a\":\"x\ny\"}", "control character"},
        RejectCase{"RawTab", "{\"a\":\"x\ty\"}", "control character"},
        RejectCase{"RawNul", std::string("{\"a\":\"\0\"}", 9), "control character"},
        RejectCase{"BadEscape", R"({"a":"\x41"})", "at byte 6: bad escape"},
        RejectCase{"EscapeAtEnd", "{\"a\":\"\\", "bad escape"},
        RejectCase{"ShortUnicode", R"({"a":"\u12"})", "bad \\u escape"},
        RejectCase{"NonHexUnicode", R"({"a":"\u12g4"})", "bad \\u escape"},
        RejectCase{"LoneHigh", R"({"a":"\ud83d"})", "without a low one"},
        RejectCase{"HighThenText", R"({"a":"\ud83dx"})", "without a low one"},
        RejectCase{"HighThenHigh", R"({"a":"\ud83d\ud83d"})", "without a low one"},
        RejectCase{"LoneLow", R"({"a":"\ude00"})", "lone low surrogate"},
        RejectCase{"InvalidUtf8", "{\"a\":\"\xff\"}", "invalid UTF-8"},
        RejectCase{"OverlongUtf8", "{\"a\":\"\xc0\xaf\"}", "invalid UTF-8"},
        RejectCase{"SurrogateUtf8", "{\"a\":\"\xed\xa0\x80\"}", "invalid UTF-8"},
        RejectCase{"TruncatedUtf8", "{\"a\":\"\xe4\xbe\"}", "invalid UTF-8"},
        RejectCase{"Bom", "\xef\xbb\xbf{}", "expected '{'"}),
    [](const ::testing::TestParamInfo<RejectCase>& info) { return std::string(info.param.name); });

// The writer's output always parses back to what was written: the reader
// and writer agree on every escape (the fuzzer checks the same invariant
// from the reader's side).
TEST(ParseJsonFlatObjectTest, ReadsWhatTheWriterWrites) {
  std::string all_bytes_utf8;
  for (int b = 1; b < 0x80; ++b) all_bytes_utf8.push_back(static_cast<char>(b));
  all_bytes_utf8 += std::string("\0\xe2\x80\xa8\xe2\x80\xa9\xf0\x9f\x98\x80", 11);
  JsonObjectWriter w;
  w.String("text", all_bytes_utf8).Int("n", -7).Null("z").String("", "");
  ASSERT_OK_AND_ASSIGN(JsonFlatObject got, ParseJsonFlatObject(std::move(w).Finish()));
  EXPECT_EQ(got, (JsonFlatObject{
                     {"text", Str(all_bytes_utf8)}, {"n", Int(-7)}, {"z", Null()}, {"", Str("")}}));
}

// ---------------------------------------------------------- ParseJsonValue

TEST(ParseJsonValueTest, ReadsEveryKindNested) {
  ASSERT_OK_AND_ASSIGN(
      JsonValue v,
      ParseJsonValue(R"( {"b":[1,-0.5,2.5e3,"x\u00e9",true,false,null],"a":{"c":{}}} )"));
  ASSERT_EQ(v.type, JsonValue::Type::kObject);
  // Members are sorted by name, whatever their input order.
  ASSERT_EQ(v.object.size(), 2u);
  EXPECT_EQ(v.object[0].first, "a");
  EXPECT_EQ(v.object[1].first, "b");
  const JsonValue* b = v.Find("b");
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(b->type, JsonValue::Type::kArray);
  ASSERT_EQ(b->array.size(), 7u);
  EXPECT_EQ(b->array[0].number, 1);
  EXPECT_EQ(b->array[1].number, -0.5);
  EXPECT_EQ(b->array[2].number, 2500);
  EXPECT_EQ(b->array[3].string, "x\xc3\xa9");
  EXPECT_EQ(b->array[4].type, JsonValue::Type::kBool);
  EXPECT_TRUE(b->array[4].boolean);
  EXPECT_FALSE(b->array[5].boolean);
  EXPECT_EQ(b->array[6].type, JsonValue::Type::kNull);
  ASSERT_NE(v.Find("a"), nullptr);
  ASSERT_NE(v.Find("a")->Find("c"), nullptr);
  EXPECT_EQ(v.Find("a")->Find("c")->type, JsonValue::Type::kObject);
  EXPECT_EQ(v.Find("z"), nullptr);
  EXPECT_EQ(b->Find("b"), nullptr);  // not an object
}

TEST(ParseJsonValueTest, AcceptsSingleQuotesAndATrailingComma) {
  ASSERT_OK_AND_ASSIGN(JsonValue v, ParseJsonValue(R"({'a':'it\'s "x"','b':[1,2,],})"));
  ASSERT_NE(v.Find("a"), nullptr);
  EXPECT_EQ(v.Find("a")->string, "it's \"x\"");
  ASSERT_NE(v.Find("b"), nullptr);
  EXPECT_EQ(v.Find("b")->array.size(), 2u);
}

TEST(ParseJsonValueTest, ScalarsAtTheTop) {
  ASSERT_OK_AND_ASSIGN(JsonValue n, ParseJsonValue("  -0 "));
  EXPECT_EQ(n.type, JsonValue::Type::kNumber);
  ASSERT_OK_AND_ASSIGN(JsonValue s, ParseJsonValue(R"("\ud83d\ude00")"));
  EXPECT_EQ(s.string, "\xf0\x9f\x98\x80");
  ASSERT_OK_AND_ASSIGN(JsonValue e, ParseJsonValue("[]"));
  EXPECT_TRUE(e.array.empty());
}

TEST(ParseJsonValueTest, NestingIsBounded) {
  const std::string ok = std::string(kMaxJsonDepth, '[') + std::string(kMaxJsonDepth, ']');
  EXPECT_THAT(ParseJsonValue(ok), IsOk());
  const std::string deep =
      std::string(kMaxJsonDepth + 1, '[') + std::string(kMaxJsonDepth + 1, ']');
  EXPECT_THAT(ParseJsonValue(deep),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nesting deeper than 100")));
}

struct TreeRejectCase {
  const char* name;
  std::string input;
  std::string message;  // a substring of the error
  size_t offset;        // where the error is
};
void PrintTo(const TreeRejectCase& c, std::ostream* os) { *os << c.name; }

class ParseJsonValueRejectTest : public ::testing::TestWithParam<TreeRejectCase> {};

TEST_P(ParseJsonValueRejectTest, Rejects) {
  size_t offset = 12345;
  EXPECT_THAT(ParseJsonValue(GetParam().input, &offset),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith(absl::StrCat("at byte ", GetParam().offset, ": ")),
                             HasSubstr(GetParam().message))));
  EXPECT_EQ(offset, GetParam().offset);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ParseJsonValueRejectTest,
    ::testing::Values(TreeRejectCase{"Empty", "", "unexpected token (end of input)", 0},
                      TreeRejectCase{"NotJson", "not json", "unexpected token", 0},
                      TreeRejectCase{"TwoValues", "[1]\n[2]", "unexpected data", 4},
                      TreeRejectCase{"DoubleComma", "[1,,2]", "unexpected token", 3},
                      TreeRejectCase{"OnlyComma", "[,]", "unexpected token", 1},
                      TreeRejectCase{"MissingColon", R"({"a" 1})", "expected ':'", 5},
                      TreeRejectCase{"MissingComma", R"({"a":1 "b":2})", "expected ',' or '}'", 7},
                      TreeRejectCase{"ArrayMissingComma", "[1 2]", "expected ',' or ']'", 3},
                      TreeRejectCase{"UnquotedName", "{a:1}", "member name", 1},
                      TreeRejectCase{"Duplicate", R"({"a":1,"b":2,"a":3})",
                                     "duplicate member name \"a\"", 13},
                      TreeRejectCase{"LeadingZero", "01", "leading zeros", 1},
                      TreeRejectCase{"BareFraction", "1.", "expected a digit", 2},
                      TreeRejectCase{"BareExponent", "1e", "expected a digit", 2},
                      TreeRejectCase{"Plus", "+1", "unexpected token", 0},
                      TreeRejectCase{"NaN", "NaN", "unexpected token", 0},
                      TreeRejectCase{"Infinity", "[Infinity]", "unexpected token", 1},
                      TreeRejectCase{"BeyondDouble", "[1e400]", "double range", 1},
                      TreeRejectCase{"QuoteEscapeInDoubleQuotes", R"(["\'"])", "bad escape", 2},
                      TreeRejectCase{"InvalidUtf8", "[\"\xff\"]", "invalid UTF-8", 2},
                      TreeRejectCase{"LoneSurrogate", R"(["\ud83d"])", "without a low one", 2},
                      TreeRejectCase{"ControlCharacter", "[\"\t\"]", "control character", 2},
                      TreeRejectCase{"Unterminated", "['abc", "unterminated string", 1}),
    [](const ::testing::TestParamInfo<TreeRejectCase>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace dedupd
