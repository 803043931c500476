// file_io.h: the few POSIX file operations dedupd's own files need (the
// config file, TLS and token files, the Bloom URL store's snapshots and
// claim logs, the exact mode's saved URL filter), with one errno ->
// absl::Status conversion. RocksDB's files are RocksDB's business.
//
// Example:
//   DEDUPD_RETURN_IF_ERROR(file_io::ErrnoStatus(errno, path, "open"));
//   if (int err = file_io::WriteAll(fd, bytes); err != 0) { ... }
//   DEDUPD_RETURN_IF_ERROR(file_io::SyncDir("/data/dedupd"));
#ifndef DEDUPD_COMMON_FILE_IO_H_
#define DEDUPD_COMMON_FILE_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dedupd::file_io {

// ErrnoStatus: "<path>: <action>: <strerror>". A full disk (ENOSPC, EDQUOT)
// is ResourceExhausted (free space, then retry); anything else Unavailable:
// the store's own files fail transiently or not at all.
absl::Status ErrnoStatus(int err, absl::string_view path, absl::string_view action);

// WriteAll writes all of `data` to `fd`, retrying on EINTR and short
// writes. Returns 0, or the errno of the failed write (EIO for a write
// that wrote nothing).
int WriteAll(int fd, absl::string_view data);

// ReadFile returns the whole file at `path`. Errors: a file that does not
// exist is NotFound, one that may not be read PermissionDenied (a path to
// fix, e.g. a flag's); else ErrnoStatus of the failed open or read.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// ReadFd reads `fd` (a file, pipe or socket) to its end; `name` names it in
// errors (e.g. "standard input"). Does not close it. Errors: ErrnoStatus of
// the failed read.
absl::StatusOr<std::string> ReadFd(int fd, absl::string_view name);

// SyncDir fsyncs the directory `dir`, making renames and unlinks in it
// durable. Errors: ErrnoStatus.
absl::Status SyncDir(const std::string& dir);

// RemoveFile deletes `path`; a missing file is OK. Errors: ErrnoStatus.
absl::Status RemoveFile(const std::string& path);

}  // namespace dedupd::file_io

#endif  // DEDUPD_COMMON_FILE_IO_H_
