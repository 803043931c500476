// tmpfs_mount.h: a small tmpfs mounted for one test (full-disk tests), with
// a ballast file to take most of its room and give it back. Needs root (or
// CAP_SYS_ADMIN); callers skip when Mount fails. Header-only, so storage
// and e2e tests share it without a library.
//
// Example:
//   absl::StatusOr<std::unique_ptr<TmpfsMount>> mnt = TmpfsMount::Mount(16 << 20);
//   if (!mnt.ok()) GTEST_SKIP() << mnt.status();
//   ASSERT_THAT((*mnt)->AddBallast(/*leave_bytes=*/1 << 20), IsOk());
//   ... writes fail: the disk is full ...
//   ASSERT_THAT((*mnt)->RemoveBallast(), IsOk());
//   // ~TmpfsMount unmounts (lazily if still busy) and removes the directory.
//
// Thread safety: not thread-safe; one test thread owns it.
#ifndef DEDUPD_TESTS_TESTING_TMPFS_MOUNT_H_
#define DEDUPD_TESTS_TESTING_TMPFS_MOUNT_H_

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace dedupd::testing {

class TmpfsMount {
 public:
  // Mount creates a directory under the test temp dir and mounts a tmpfs of
  // `bytes` bytes on it. Errors: FailedPrecondition when not running as root;
  // Unavailable naming errno when mkdtemp or mount(2) fails (e.g. EPERM in a
  // container without CAP_SYS_ADMIN).
  static absl::StatusOr<std::unique_ptr<TmpfsMount>> Mount(uint64_t bytes) {
    if (::geteuid() != 0) {
      return absl::FailedPreconditionError(
          "mounting a tmpfs needs root (CI runs as root); not root here");
    }
    std::string base = ::testing::TempDir();
    if (base.empty() || base.back() != '/') base.push_back('/');
    std::string templ = absl::StrCat(base, "dedupd_tmpfs_XXXXXX");
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      return absl::UnavailableError(absl::StrCat("mkdtemp ", templ, ": ", std::strerror(errno)));
    }
    const std::string dir(buf.data());
    const std::string data = absl::StrCat("size=", bytes, ",mode=0755");
    if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, data.c_str()) != 0) {
      const int err = errno;
      ::rmdir(dir.c_str());
      return absl::UnavailableError(
          absl::StrCat("mount -t tmpfs -o ", data, " tmpfs ", dir, ": ", std::strerror(err)));
    }
    return std::unique_ptr<TmpfsMount>(new TmpfsMount(dir));
  }

  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

  // Unmounts no matter what: a plain umount, else a lazy one (MNT_DETACH:
  // the mount disappears now, its memory when the last file on it closes).
  ~TmpfsMount() {
    if (::umount2(path_.c_str(), 0) != 0 && ::umount2(path_.c_str(), MNT_DETACH) != 0) {
      std::fprintf(stderr, "TmpfsMount: umount %s: %s\n", path_.c_str(), std::strerror(errno));
    }
    ::rmdir(path_.c_str());
  }

  // The mount point, without a trailing slash.
  const std::string& path() const { return path_; }

  // FreeBytes returns the bytes an unprivileged writer may still use.
  absl::StatusOr<uint64_t> FreeBytes() const {
    struct statvfs st {};
    if (::statvfs(path_.c_str(), &st) != 0) {
      return absl::UnavailableError(absl::StrCat("statvfs ", path_, ": ", std::strerror(errno)));
    }
    return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  }

  // AddBallast creates the file <path>/<name> taking all free space but
  // about `leave_bytes` (allocated, so tmpfs counts it). Errors: Unavailable
  // naming errno; FailedPrecondition when less than `leave_bytes` is free.
  absl::Status AddBallast(uint64_t leave_bytes, const std::string& name = "ballast") {
    absl::StatusOr<uint64_t> free_bytes = FreeBytes();
    if (!free_bytes.ok()) return free_bytes.status();
    if (*free_bytes < leave_bytes) {
      return absl::FailedPreconditionError(absl::StrCat("only ", *free_bytes, " bytes free on ",
                                                        path_, ", want to leave ", leave_bytes));
    }
    const std::string file = BallastPath(name);
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
      return absl::UnavailableError(absl::StrCat("open ", file, ": ", std::strerror(errno)));
    }
    const uint64_t size = *free_bytes - leave_bytes;
    const int err = size == 0 ? 0 : ::posix_fallocate(fd, 0, static_cast<off_t>(size));
    ::close(fd);
    if (err != 0) {
      return absl::UnavailableError(
          absl::StrCat("fallocate ", size, " bytes of ", file, ": ", std::strerror(err)));
    }
    return absl::OkStatus();
  }

  // RemoveBallast deletes a ballast file: its room is free at once.
  absl::Status RemoveBallast(const std::string& name = "ballast") {
    if (::unlink(BallastPath(name).c_str()) != 0) {
      return absl::UnavailableError(
          absl::StrCat("unlink ", BallastPath(name), ": ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }

 private:
  explicit TmpfsMount(std::string path) : path_(std::move(path)) {}
  std::string BallastPath(const std::string& name) const { return path_ + "/" + name; }

  std::string path_;
};

}  // namespace dedupd::testing

#endif  // DEDUPD_TESTS_TESTING_TMPFS_MOUNT_H_
