// redis_status.h: the one conversion of a Redis error reply to an
// absl::Status, shared by the Redis Cluster stores (RedisUrlStore,
// RedisContentStore).
//
// Example:
//   if (reply.is_error()) return StatusFromErrorReply("key \"k\"", reply);
//
// Thread safety: a pure function.
#ifndef DEDUPD_STORAGE_REDIS_REDIS_STATUS_H_
#define DEDUPD_STORAGE_REDIS_REDIS_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "storage/redis/cluster_router.h"

namespace dedupd::redis {

// StatusFromErrorReply converts an error reply (other than the redirects
// the router follows) by what the caller should do: OOM is
// ResourceExhausted; READONLY, LOADING, BUSY, MASTERDOWN and NOREPLICAS are
// Unavailable (retry); WRONGTYPE is DataLoss (a key holds what it should
// not); anything else Internal. The message is `what` + ": redis answered "
// + the reply.
absl::Status StatusFromErrorReply(absl::string_view what, const Value& reply);

}  // namespace dedupd::redis

#endif  // DEDUPD_STORAGE_REDIS_REDIS_STATUS_H_
