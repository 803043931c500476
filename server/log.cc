#include "server/log.h"

#include <unistd.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace dedupd {

void Log(LogLevel level, absl::string_view message) {
  const char* tag = level == LogLevel::kInfo      ? " I "
                    : level == LogLevel::kWarning ? " W "
                                                  : " E ";
  std::string line = absl::StrCat(
      absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::Now(), absl::UTCTimeZone()),
      tag, message, "\n");
  // One write keeps concurrent lines whole; a failed log write has nowhere
  // to be reported.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace dedupd
