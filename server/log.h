// log.h: one line per event on stderr: time, level, message; a minimum
// level (--log_level); and a rate limiter so that one noisy source (a client
// spamming bad requests) cannot flood the log.
//
// Example:
//   Log(LogLevel::kError, absl::StrCat("open store: ", s.message()));
//   // 2026-11-30T09:58:01.123456Z E open store: ...
//
//   LogRateLimiter limiter(/*lines_per_second=*/5);
//   uint64_t suppressed = 0;
//   if (limiter.Allow(method, absl::Now(), &suppressed)) {
//     Log(LogLevel::kWarning, absl::StrCat(method, " failed: ...",
//         suppressed > 0 ? absl::StrCat(" (", suppressed, " suppressed)") : ""));
//   }
#ifndef DEDUPD_SERVER_LOG_H_
#define DEDUPD_SERVER_LOG_H_

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace dedupd {

enum class LogLevel { kInfo = 0, kWarning = 1, kError = 2 };

// Log writes one line to stderr when `level` is at least the minimum level.
// Thread-safe (one write(2) per line).
void Log(LogLevel level, absl::string_view message);

// SetMinLogLevel drops lines below `level` from now on. Default: kInfo.
// Thread-safe.
void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();

// ParseLogLevel reads "info", "warning" or "error" (any case); false
// otherwise.
bool ParseLogLevel(absl::string_view text, LogLevel* level);

// LogRateLimiter lets at most `lines_per_second` lines per key through in
// each one-second window, and counts the rest, so the next line that goes
// through can say how many were suppressed. Keys are few (RPC method
// names); the map is never pruned. Thread-safe.
class LogRateLimiter {
 public:
  // REQUIRES: lines_per_second >= 1.
  explicit LogRateLimiter(int lines_per_second);

  // Allow answers whether a line for `key` may be written at `now`. When it
  // may, *suppressed is the number of lines for `key` refused since the last
  // one allowed (then reset to 0); otherwise it is left alone.
  bool Allow(absl::string_view key, absl::Time now, uint64_t* suppressed);

 private:
  struct Window {
    absl::Time start = absl::InfinitePast();
    int allowed = 0;
    uint64_t suppressed = 0;
  };
  const int lines_per_second_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, Window> windows_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dedupd

#endif  // DEDUPD_SERVER_LOG_H_
