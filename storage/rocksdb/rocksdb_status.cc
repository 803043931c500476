// The one RocksDB -> absl::Status conversion (rocksdb_status.h).

#include "storage/rocksdb/rocksdb_status.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "rocksdb/status.h"

namespace dedupd::rocksdb_internal {
namespace {

// True when `s` says that another process (or this one) holds the
// directory's LOCK file. RocksDB reports both cases as IOError with no
// dedicated subcode, so the message is the only signal:
//   other process: "While lock file: <dir>/LOCK: Resource temporarily
//                   unavailable" (fcntl F_SETLK failed),
//   this process:  "lock hold by current process, acquire time ...".
bool IsLockHeld(const rocksdb::Status& s) {
  if (!s.IsIOError()) return false;
  const std::string message = s.ToString();
  return absl::StrContains(message, "lock hold by current process") ||
         absl::StrContains(message, "While lock file");
}

}  // namespace

// The one conversion (see rocksdb_status.h for the table). Codes follow
// what the caller should do (STYLE.md "Errors").
absl::Status FromRocksDbStatus(const rocksdb::Status& s, absl::string_view action,
                               absl::string_view path) {
  if (s.ok()) return absl::OkStatus();
  if (IsLockHeld(s)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "data directory ", path, " is in use by another process (RocksDB LOCK held): ", action,
        ": ", s.ToString()));
  }
  const std::string message = absl::StrCat(action, " at ", path, ": ", s.ToString());
  if (s.IsNoSpace() || s.subcode() == rocksdb::Status::kSpaceLimit || s.IsMemoryLimit()) {
    return absl::ResourceExhaustedError(message);
  }
  if (s.IsCorruption()) return absl::DataLossError(message);
  if (s.IsInvalidArgument()) return absl::InvalidArgumentError(message);
  if (s.IsPathNotFound()) {
    // The directory vanished or was never there: retrying will not help.
    return absl::FailedPreconditionError(message);
  }
  if (s.IsIOError() || s.IsBusy() || s.IsTimedOut() || s.IsTryAgain() || s.IsShutdownInProgress()) {
    return absl::UnavailableError(message);
  }
  return absl::InternalError(message);
}

}  // namespace dedupd::rocksdb_internal
