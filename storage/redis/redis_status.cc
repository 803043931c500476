#include "storage/redis/redis_status.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace dedupd::redis {

absl::Status StatusFromErrorReply(absl::string_view what, const Value& reply) {
  const absl::string_view code = reply.ErrorCode();
  const std::string message = absl::StrCat(what, ": redis answered ", reply.str);
  if (code == "OOM") return absl::ResourceExhaustedError(message);
  if (code == "READONLY" || code == "LOADING" || code == "BUSY" || code == "MASTERDOWN" ||
      code == "NOREPLICAS") {
    return absl::UnavailableError(message);
  }
  if (code == "WRONGTYPE") return absl::DataLossError(message);
  return absl::InternalError(message);
}

}  // namespace dedupd::redis
