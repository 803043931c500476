#include "storage/redis/redis_replies.h"

#include <cstdint>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/coding.h"
#include "storage/redis/redis_status.h"

namespace dedupd::redis {

std::string KeyForHumans(absl::string_view key) {
  if (key.size() > 200) return absl::StrCat(absl::CHexEscape(key.substr(0, 200)), "...");
  return absl::CHexEscape(key);
}

std::optional<uint64_t> InfoField(absl::string_view info, absl::string_view field) {
  for (absl::string_view line : absl::StrSplit(info, '\n')) {
    absl::ConsumeSuffix(&line, "\r");
    if (!absl::ConsumePrefix(&line, field) || !absl::ConsumePrefix(&line, ":")) continue;
    uint64_t value = 0;
    if (line.empty() || !absl::c_all_of(line, absl::ascii_isdigit) ||
        !absl::SimpleAtoi(line, &value)) {
      return std::nullopt;
    }
    return value;
  }
  return std::nullopt;
}

std::string Micros64(absl::Time t) {
  std::string out;
  PutFixed64BE(&out, static_cast<uint64_t>(absl::ToUnixMicros(t)));
  return out;
}

absl::StatusOr<Value> ReplyOr(absl::StatusOr<Value> reply, absl::string_view key) {
  if (!reply.ok()) return reply.status();
  if (reply->is_error()) {
    return StatusFromErrorReply(absl::StrCat("key \"", KeyForHumans(key), "\""), *reply);
  }
  return reply;
}

absl::Status Malformed(absl::string_view key, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("key \"", KeyForHumans(key), "\": ", what));
}

void Failures::Add(const absl::Status& s) {
  ++count_;
  if (worst_.ok() || (worst_.code() == absl::StatusCode::kUnavailable &&
                      s.code() != absl::StatusCode::kUnavailable)) {
    worst_ = s;  // a non-transient failure is what the caller must see
  }
  if (messages_.size() < 3) messages_.push_back(std::string(s.message()));
}

absl::Status Failures::Status(absl::string_view what, size_t total) const {
  return absl::Status(worst_.code(),
                      absl::StrCat(what, ": ", count_, " of ", total,
                                   " commands failed: ", absl::StrJoin(messages_, "; ")));
}

}  // namespace dedupd::redis
