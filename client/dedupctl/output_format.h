// output_format.h: how dedupctl spells values in its output lines
// (docs/dedupctl.md): enum names without their type prefix, RFC 3339
// timestamps, SimHashes as hex, shortest round-trip numbers, and nested
// members appended to a JsonObjectWriter's object.
//
// Example:
//   EnumName(dedupd::v1::URL_VERDICT_NEW) == "NEW"
//   JsonNumber(0.5) == "0.5"
//   WithRawMember(R"({"a":1})", "b", "[]") == R"({"a":1,"b":[]})"
//   WithMembers(R"({"a":1})", R"({"b":2,"c":3})") == R"({"a":1,"b":2,"c":3})"
//
// Thread-safe: pure functions.
#ifndef DEDUPD_CLIENT_DEDUPCTL_OUTPUT_FORMAT_H_
#define DEDUPD_CLIENT_DEDUPCTL_OUTPUT_FORMAT_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "google/protobuf/generated_enum_reflection.h"
#include "google/protobuf/timestamp.pb.h"

namespace dedupd::dedupctl {

// EnumName returns a dedupd.v1 enum value's name without its type's prefix
// (URL_VERDICT_NEW -> "NEW"), "UNSPECIFIED" for a number this build does not
// know. The prefix is what the type's zero value, X_UNSPECIFIED, has before
// "UNSPECIFIED" (the proto style guide's rule every dedupd enum follows).
template <typename Enum>
std::string EnumName(Enum value) {
  const google::protobuf::EnumDescriptor* type = google::protobuf::GetEnumDescriptor<Enum>();
  const google::protobuf::EnumValueDescriptor* v = type->FindValueByNumber(value);
  if (v == nullptr) return "UNSPECIFIED";
  absl::string_view prefix = type->FindValueByNumber(0)->name();
  absl::ConsumeSuffix(&prefix, "UNSPECIFIED");
  return std::string(absl::StripPrefix(v->name(), prefix));
}

// FormatTimestamp: RFC 3339 in UTC with a "Z", fractional seconds only when
// non-zero.
std::string FormatTimestamp(const google::protobuf::Timestamp& t);

// SimHashHex: 16 lowercase hex digits (a JSON number would lose bits above
// 2^53 in most readers).
std::string SimHashHex(uint64_t simhash);

// JsonNumber formats `value` as the shortest JSON number that reads back
// as the same double ("0.5", "3", "1e+20"); null when not finite.
std::string JsonNumber(double value);

// WithRawMember returns `object` (one JSON object, e.g. from
// JsonObjectWriter::Finish) with `"key":raw_value` added at its end: how
// nested objects and numbers that are not integers get into a line.
// REQUIRES: raw_value is one valid JSON value.
std::string WithRawMember(std::string object, absl::string_view key, absl::string_view raw_value);

// WithMembers returns `object` with the members of `members` (another
// JSON object) added at its end, in their order.
// REQUIRES: both are JSON objects, e.g. from JsonObjectWriter::Finish.
std::string WithMembers(std::string object, absl::string_view members);

}  // namespace dedupd::dedupctl

#endif  // DEDUPD_CLIENT_DEDUPCTL_OUTPUT_FORMAT_H_
