// json.h: the little JSON that dedupctl writes: one flat object per line,
// with string and string-array values. Strings are escaped so that any
// input bytes, including invalid UTF-8 and control characters, give valid
// JSON (RFC 8259) that still shows where the input was bad.
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
#ifndef DEDUPD_CLIENT_JSON_H_
#define DEDUPD_CLIENT_JSON_H_

#include <string>

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
  JsonObjectWriter& StringArray(absl::string_view key,
                                absl::Span<const absl::string_view> values);

  // Finish closes the object and returns it, without a trailing newline.
  std::string Finish() &&;

 private:
  void Key(absl::string_view key);

  std::string json_;
  bool empty_ = true;
};

}  // namespace dedupd

#endif  // DEDUPD_CLIENT_JSON_H_
