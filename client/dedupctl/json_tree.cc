#include "client/dedupctl/json_tree.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "client/dedupctl/line_io.h"
#include "client/dedupctl/output_format.h"

namespace dedupd::dedupctl {
namespace {

// Bytes of input shown on either side of a syntax error.
constexpr size_t kExcerptBytes = 20;

}  // namespace

absl::StatusOr<JsonValue> ParseInputJson(absl::string_view json) {
  size_t offset = 0;
  absl::StatusOr<JsonValue> value = ParseJsonValue(json, &offset);
  if (value.ok()) return value;
  // The reader's "at byte N: what" becomes "What. (near: <excerpt>)", the
  // shape these commands' errors have always had, on one line.
  absl::string_view what = value.status().message();
  if (const size_t colon = what.find(": "); colon != absl::string_view::npos) {
    what.remove_prefix(colon + 2);
  }
  std::string reason(what);
  if (!reason.empty()) {
    reason[0] = absl::ascii_toupper(static_cast<unsigned char>(reason[0]));
    reason.push_back('.');
  }
  const size_t from = offset > kExcerptBytes ? offset - kExcerptBytes : 0;
  const std::string excerpt = absl::StrReplaceAll(json.substr(from, offset - from + kExcerptBytes),
                                                  {{"\n", " "}, {"\r", " "}});
  std::string message = absl::StrCat("invalid JSON: ", reason);
  if (!IsBlank(excerpt)) {
    absl::StrAppend(&message, " (near: ", absl::StripAsciiWhitespace(excerpt), ")");
  }
  return absl::InvalidArgumentError(message);
}

absl::string_view JsonKindName(const JsonValue& value) {
  switch (value.type) {
    case JsonValue::Type::kNull:
      return "null";
    case JsonValue::Type::kNumber:
      return "a number";
    case JsonValue::Type::kString:
      return "a string";
    case JsonValue::Type::kBool:
      return "a boolean";
    case JsonValue::Type::kObject:
      return "an object";
    case JsonValue::Type::kArray:
      return "an array";
  }
  return "nothing";
}

absl::Status WrongType(absl::string_view path, absl::string_view want, const JsonValue& got) {
  return absl::InvalidArgumentError(
      absl::StrCat("\"", path, "\" must be ", want, ", not ", JsonKindName(got)));
}

const JsonValue* Member(const JsonValue& object, absl::string_view name) {
  const JsonValue* v = object.Find(name);
  if (v == nullptr || v->type == JsonValue::Type::kNull) return nullptr;
  return v;
}

absl::Status StringMember(const JsonValue& object, absl::string_view name, absl::string_view path,
                          bool required, std::string* out) {
  const JsonValue* v = Member(object, name);
  if (v == nullptr) {
    return required ? absl::InvalidArgumentError(absl::StrCat("missing \"", path, "\""))
                    : absl::OkStatus();
  }
  if (v->type != JsonValue::Type::kString) {
    return WrongType(path, "a string", *v);
  }
  *out = v->string;
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> WholeNumber(const JsonValue& value, absl::string_view path, uint32_t min) {
  constexpr uint32_t kMax = UINT32_MAX;
  const std::string want = absl::StrCat("a whole number in ", min, "..", kMax);
  if (value.type != JsonValue::Type::kNumber) {
    return WrongType(path, want, value);
  }
  const double d = value.number;
  if (!(d >= min && d <= kMax && d == std::floor(d))) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", path, "\" must be ", want, ", not ", JsonNumber(d)));
  }
  return static_cast<uint32_t>(d);
}

absl::StatusOr<double> Number(const JsonValue& value, absl::string_view path) {
  if (value.type != JsonValue::Type::kNumber) {
    return WrongType(path, "a number", value);
  }
  return value.number;
}

}  // namespace dedupd::dedupctl
