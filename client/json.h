// json.h: the JSON that dedupctl writes and reads. It writes one object per
// line (string, integer, string-array and object-array values); strings are
// escaped so that any input bytes, including invalid UTF-8 and control
// characters, give valid JSON (RFC 8259) that still shows where the input
// was bad. It reads one *flat* object per line (string, number and null
// values only), strictly (ParseJsonFlatObject), and nested values into a
// tree (ParseJsonValue), with the same lexer.
//
// Escaping (JsonString / AppendJsonString):
// - `"` and `\` become \" and \\; \b \f \n \r \t use their short forms;
//   other bytes below 0x20, and DEL (0x7F), become \u00XX (lowercase hex);
// - U+2028 and U+2029 become \u2028 and \u2029 (safe to embed in
//   JavaScript);
// - well-formed UTF-8 (no overlong forms, no surrogates, <= U+10FFFF) is
//   copied as is;
// - every byte that is not part of a well-formed UTF-8 sequence becomes
//   \ufffd (U+FFFD REPLACEMENT CHARACTER), one per bad byte. The output is
//   therefore always valid UTF-8; the original bytes are not recoverable.
//
// Example:
//   JsonObjectWriter w;
//   w.String("url", "a\"b\xff").StringArray("rules", {"x", "y"});
//   std::string line = std::move(w).Finish();
//   // line == R"({"url":"a\"b\ufffd","rules":["x","y"]})"
//
//   absl::StatusOr<JsonFlatObject> doc =
//       ParseJsonFlatObject(R"({"url":"https://a.example/","n":3})");
//   // doc->at("url").string == "https://a.example/", doc->at("n").integer == 3
#ifndef DEDUPD_CLIENT_JSON_H_
#define DEDUPD_CLIENT_JSON_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace dedupd {

// AppendJsonString appends `s` to `*out` as a quoted, escaped JSON string
// (rules in the file comment). Total; O(s.size()).
void AppendJsonString(absl::string_view s, std::string* out);

// JsonString returns `s` as a quoted, escaped JSON string.
//
// Example:
//   JsonString("tab\there") == R"("tab\there")"
std::string JsonString(absl::string_view s);

// JsonObjectWriter builds one JSON object on one line, members in the
// order they are added, compact (no spaces, as `jq -c` prints):
// {"key":"value","k2":["a","b"]}.
// Keys are escaped like values; duplicate keys are the caller's problem.
// Not thread-safe (a value type; use one per line).
//
// Example:
//   std::string line = std::move(JsonObjectWriter().String("a", "b")).Finish();
//   // line == R"({"a":"b"})"
class JsonObjectWriter {
 public:
  JsonObjectWriter() : json_("{") {}

  // String adds `"key":"value"`. Returns *this for chaining.
  JsonObjectWriter& String(absl::string_view key, absl::string_view value);

  // StringArray adds `"key":["v1","v2",...]` (`[]` when empty).
  JsonObjectWriter& StringArray(absl::string_view key, absl::Span<const absl::string_view> values);

  // Int / Uint add `"key":123` (decimal, exact for every value).
  JsonObjectWriter& Int(absl::string_view key, int64_t value);
  JsonObjectWriter& Uint(absl::string_view key, uint64_t value);

  // Bool adds `"key":true` or `"key":false`.
  JsonObjectWriter& Bool(absl::string_view key, bool value);

  // Null adds `"key":null`.
  JsonObjectWriter& Null(absl::string_view key);

  // RawArray adds `"key":[v1,v2,...]` with each value copied as is, e.g.
  // objects from other writers' Finish().
  // REQUIRES: every value is one valid JSON value.
  JsonObjectWriter& RawArray(absl::string_view key, absl::Span<const std::string> json_values);

  // Finish closes the object and returns it, without a trailing newline.
  std::string Finish() &&;

 private:
  void Key(absl::string_view key);

  std::string json_;
  bool empty_ = true;
};

// One value of a flat JSON object.
struct JsonScalar {
  enum class Type { kString, kInteger, kNumber, kNull };
  Type type = Type::kNull;
  // kString: the decoded string, always well-formed UTF-8 (it may contain
  // NUL from \u0000).
  std::string string;
  // kInteger: the value of a number written without fraction or exponent.
  int64_t integer = 0;
  // kNumber: the value of a number written with a fraction or an exponent
  // ("0.9", "1e0"); finite.
  double number = 0;

  bool operator==(const JsonScalar& o) const {
    return type == o.type && string == o.string && integer == o.integer && number == o.number;
  }
};

// A flat JSON object: member name (decoded, well-formed UTF-8) -> value.
using JsonFlatObject = std::map<std::string, JsonScalar>;

// ParseJsonFlatObject parses `json` as exactly one JSON object (RFC 8259)
// whose values are strings, numbers or null: the format of one line of
// `dedupctl content` input. Strict:
// - whitespace (space, tab, CR, LF) may surround tokens; nothing else may
//   follow the closing brace;
// - strings: raw bytes must be well-formed UTF-8 (same rules as the writer:
//   no overlongs, no surrogates, <= U+10FFFF) with no control characters
//   below U+0020; escapes are \" \\ \/ \b \f \n \r \t and \uXXXX (any
//   hex case); a high surrogate escape must be followed by a low surrogate
//   escape (the pair becomes one code point); a lone surrogate is an error;
// - numbers: RFC 8259's grammar. Without fraction or exponent
//   (-?(0|[1-9][0-9]*)) an integer (kInteger) within int64, so ids and
//   counts keep every digit; with one a finite double (kNumber: "0.9",
//   "1e3"), and one beyond the double range is an error;
// - true/false, arrays and nested objects are errors, as are duplicate
//   member names.
// Returns InvalidArgument "at byte N: <what>" (N counts from 0) for any
// input that breaks these rules. Total; O(json.size()), no recursion.
//
// Example:
//   ParseJsonFlatObject(R"({"t":"\ud83d\ude00"})")->at("t").string
//       == "\xf0\x9f\x98\x80"
//   ParseJsonFlatObject(R"({"a":1.5})")->at("a").number == 1.5
//   ParseJsonFlatObject(R"({"a":[1]})").status().code()
//       == absl::StatusCode::kInvalidArgument
absl::StatusOr<JsonFlatObject> ParseJsonFlatObject(absl::string_view json);

// One value of a JSON tree (ParseJsonValue). A value type; not
// thread-safe to mutate, safe to read from many threads.
struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;          // kBool
  double number = 0;             // kNumber: finite
  std::string string;            // kString: decoded, well-formed UTF-8
  std::vector<JsonValue> array;  // kArray: in input order
  // kObject: members sorted by name (byte order); names are unique.
  std::vector<std::pair<std::string, JsonValue>> object;

  // Find returns the member `name` of an object, or nullptr (also when
  // this is not an object). O(log members); the pointer lives as long as
  // this value is not changed.
  const JsonValue* Find(absl::string_view name) const;
};

// The deepest nesting of arrays and objects ParseJsonValue accepts (bounds
// its recursion).
constexpr int kMaxJsonDepth = 100;

// ParseJsonValue parses `json` as exactly one JSON value of any shape: the
// nested input of `dedupctl chunks` and `dedupctl results`. The same
// strictness as ParseJsonFlatObject for whitespace, strings (UTF-8,
// escapes, surrogate pairs) and duplicate member names, plus what those
// commands have always accepted: single-quoted strings (where \' is an
// escape too) and one trailing comma before a closing bracket or brace.
// Numbers follow RFC 8259's grammar and are read as doubles; one beyond the
// double range is an error, as are NaN and Infinity (not JSON). At most
// kMaxJsonDepth nested arrays and objects.
// Returns InvalidArgument "at byte N: <what>" (N counts from 0), and sets
// `*error_offset` to N when given. Total; O(json.size() log) time.
//
// Example:
//   absl::StatusOr<JsonValue> v = ParseJsonValue(R"({"a":[1,"x",null],})");
//   // v->Find("a")->array[0].number == 1
//   ParseJsonValue("not json").status().message()
//       == "at byte 0: unexpected token"
absl::StatusOr<JsonValue> ParseJsonValue(absl::string_view json, size_t* error_offset = nullptr);

}  // namespace dedupd

#endif  // DEDUPD_CLIENT_JSON_H_
