// log.h: one line per event on stderr: time, level, message.
//
// Example:
//   Log(LogLevel::kError, absl::StrCat("open store: ", s.message()));
//   // 2026-11-30T09:58:01.123456Z E open store: ...
#ifndef DEDUPD_SERVER_LOG_H_
#define DEDUPD_SERVER_LOG_H_

#include "absl/strings/string_view.h"

namespace dedupd {

enum class LogLevel { kInfo, kWarning, kError };

// Log writes one line to stderr. Thread-safe (one write(2) per line).
void Log(LogLevel level, absl::string_view message);

}  // namespace dedupd

#endif  // DEDUPD_SERVER_LOG_H_
