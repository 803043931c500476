#include "common/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace dedupd::file_io {

absl::Status ErrnoStatus(int err, absl::string_view path, absl::string_view action) {
  const std::string message = absl::StrCat(path, ": ", action, ": ", std::strerror(err));
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(message);
  return absl::UnavailableError(message);
}

int WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;  // a regular file never does this; do not spin
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

absl::StatusOr<std::string> ReadFd(int fd, absl::string_view name) {
  std::string out;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    out.reserve(static_cast<size_t>(st.st_size));
  }
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, name, "read");
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    // A file that is not there or not ours to read: a path to fix, not a
    // call to retry.
    const int err = errno;
    const absl::Status status = ErrnoStatus(err, path, "open");
    if (err == ENOENT) return absl::NotFoundError(status.message());
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(status.message());
    return status;
  }
  absl::StatusOr<std::string> out = ReadFd(fd, path);
  ::close(fd);
  return out;
}

absl::Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, dir, "open directory for fsync");
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoStatus(err, dir, "fsync directory");
  return absl::OkStatus();
}

absl::Status RemoveFile(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus(errno, path, "delete");
  }
  return absl::OkStatus();
}

}  // namespace dedupd::file_io
