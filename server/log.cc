#include "server/log.h"

#include <unistd.h>

#include <atomic>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace dedupd {
namespace {

std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};

}  // namespace

void SetMinLogLevel(LogLevel level) {
  min_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

LogLevel MinLogLevel() { return static_cast<LogLevel>(min_level.load(std::memory_order_relaxed)); }

bool ParseLogLevel(absl::string_view text, LogLevel* level) {
  const std::string lower = absl::AsciiStrToLower(text);
  if (lower == "info") {
    *level = LogLevel::kInfo;
  } else if (lower == "warning") {
    *level = LogLevel::kWarning;
  } else if (lower == "error") {
    *level = LogLevel::kError;
  } else {
    return false;
  }
  return true;
}

void Log(LogLevel level, absl::string_view message) {
  if (static_cast<int>(level) < min_level.load(std::memory_order_relaxed)) return;
  const char* tag = level == LogLevel::kInfo ? " I " : level == LogLevel::kWarning ? " W " : " E ";
  std::string line =
      absl::StrCat(absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone()), tag,
                   message, "\n");
  // One write keeps concurrent lines whole; a failed log write has nowhere
  // to be reported.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

LogRateLimiter::LogRateLimiter(int lines_per_second)
    : lines_per_second_(lines_per_second < 1 ? 1 : lines_per_second) {}

bool LogRateLimiter::Allow(absl::string_view key, absl::Time now, uint64_t* suppressed) {
  absl::MutexLock lock(&mu_);
  Window& w = windows_[key];
  // A fixed window per key: simple, and a burst at a window's edge can at
  // most double the rate for a moment, which is fine for a log.
  if (now - w.start >= absl::Seconds(1) || now < w.start) {
    w.start = now;
    w.allowed = 0;
  }
  if (w.allowed >= lines_per_second_) {
    ++w.suppressed;
    return false;
  }
  ++w.allowed;
  *suppressed = w.suppressed;
  w.suppressed = 0;
  return true;
}

}  // namespace dedupd
