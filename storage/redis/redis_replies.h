// redis_replies.h: the small pieces every Redis-backed store uses to turn
// router answers into statuses (redis_content_store.cc and
// redis_chunk_store.cc share them, so that their errors read alike).
//
// Example:
//   Failures failures;
//   for (size_t i = 0; i < replies.size(); ++i) {
//     absl::StatusOr<Value> v = ReplyOr(std::move(replies[i]), keys[i]);
//     if (!v.ok()) failures.Add(v.status());
//   }
//   if (!failures.empty()) return failures.Status("redis chunk read", replies.size());
//
// Thread safety: pure functions; a Failures is thread-compatible.
#ifndef DEDUPD_STORAGE_REDIS_REDIS_REPLIES_H_
#define DEDUPD_STORAGE_REDIS_REDIS_REPLIES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "storage/redis/cluster_router.h"

namespace dedupd::redis {

// KeyForHumans returns `key` C-escaped, cut after 200 bytes, for messages.
std::string KeyForHumans(absl::string_view key);

// Micros64 returns t's microseconds since the epoch as 8 big-endian bytes
// (how every time travels to the Lua scripts and sits in keys and values).
std::string Micros64(absl::Time t);

// ReplyOr returns the reply of a command, or the status it is (a router
// failure, or an error reply: StatusFromErrorReply naming `key`).
absl::StatusOr<Value> ReplyOr(absl::StatusOr<Value> reply, absl::string_view key);

// Malformed returns DataLoss naming `key` and what is wrong with its value.
absl::Status Malformed(absl::string_view key, absl::string_view what);

// InfoField returns the value of `field` in the text of an INFO reply
// ("field:value" lines, CRLF-terminated) when it is an unsigned decimal
// integer; nullopt when the field is absent or not one.
// Example: InfoField("# Memory\r\nused_memory:1024\r\n", "used_memory") == 1024.
std::optional<uint64_t> InfoField(absl::string_view info, absl::string_view field);

// Failures collects the failed items of a pipelined round into one status:
// the first non-transient failure's code (else Unavailable), the count and
// the first three messages.
class Failures {
 public:
  void Add(const absl::Status& s);
  bool empty() const { return count_ == 0; }
  // "what: n of total commands failed: m1; m2; m3".
  absl::Status Status(absl::string_view what, size_t total) const;

 private:
  size_t count_ = 0;
  absl::Status worst_;
  std::vector<std::string> messages_;
};

}  // namespace dedupd::redis

#endif  // DEDUPD_STORAGE_REDIS_REDIS_REPLIES_H_
