#include "client/dedupctl/output_format.h"

#include <cmath>
#include <cstdio>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/json.h"

namespace dedupd::dedupctl {

std::string FormatTimestamp(const google::protobuf::Timestamp& t) {
  const absl::Time time = absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
  return absl::FormatTime("%Y-%m-%d%ET%H:%M:%E*SZ", time, absl::UTCTimeZone());
}

std::string SimHashHex(uint64_t simhash) { return absl::StrFormat("%016x", simhash); }

std::string JsonNumber(double value) {
  if (!std::isfinite(value)) return "null";
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    double back = 0;
    if (absl::SimpleAtod(buffer, &back) && back == value) break;
  }
  return buffer;
}

std::string WithRawMember(std::string object, absl::string_view key, absl::string_view raw_value) {
  object.pop_back();  // the closing '}'
  if (object.size() > 1) object.push_back(',');
  AppendJsonString(key, &object);
  object.push_back(':');
  object.append(raw_value.data(), raw_value.size());
  object.push_back('}');
  return object;
}

std::string WithMembers(std::string object, absl::string_view members) {
  if (members.size() <= 2) return object;  // "{}"
  object.pop_back();                       // the closing '}'
  if (object.size() > 1) object.push_back(',');
  object.append(members.data() + 1, members.size() - 1);
  return object;
}

}  // namespace dedupd::dedupctl
