// RocksDbStore: the info logger that survives a full disk.

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "rocksdb/env.h"
#include "storage/rocksdb/rocksdb_store_internal.h"

namespace dedupd {

namespace rocksdb_internal {
namespace {

// TolerantInfoLogger: RocksDB's info log (the LOG file of the store
// directory), written with plain write(2) calls whose failures drop the
// line. RocksDB's own file logger cannot be used: the Debian build of
// RocksDB 7.8 keeps its assertions, and after one failed append its
// WritableFileWriter asserts (aborting the whole server) on the next log
// line, which a full disk makes certain (found by
// tests/e2e_full_disk_test.cc). The names are RocksDB's (the previous LOG
// becomes LOG.old.<micros> at Open), so keep_log_file_num still bounds them.
// Thread-safe: each line is one O_APPEND write.
class TolerantInfoLogger final : public rocksdb::Logger {
 public:
  // Opens <dir>/LOG, creating `dir` when `create_dir`. A file that cannot be
  // opened makes a logger that drops every line (the store works without).
  TolerantInfoLogger(const std::string& dir, bool create_dir)
      : rocksdb::Logger(rocksdb::InfoLogLevel::INFO_LEVEL) {
    std::error_code ec;
    if (create_dir) std::filesystem::create_directories(dir, ec);
    const std::string log = dir + "/LOG";
    if (std::filesystem::exists(log, ec)) {
      std::filesystem::rename(log, absl::StrCat(dir, "/LOG.old.", absl::ToUnixMicros(absl::Now())),
                              ec);
    }
    fd_ = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }
  ~TolerantInfoLogger() override {
    if (fd_ >= 0) ::close(fd_);
  }

  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override {
    if (fd_ < 0) return;
    char line[4096];
    const std::string stamp =
        absl::FormatTime("%Y/%m/%d-%H:%M:%E6S ", absl::Now(), absl::LocalTimeZone());
    size_t n = std::min(stamp.size(), sizeof(line) - 2);
    std::memcpy(line, stamp.data(), n);
    const int k = std::vsnprintf(line + n, sizeof(line) - n - 1, format, ap);
    if (k < 0) return;
    n = std::min(n + static_cast<size_t>(k), sizeof(line) - 2);  // truncated
    if (line[n - 1] != '\n') line[n++] = '\n';
    const ssize_t written = ::write(fd_, line, n);
    (void)written;  // why: a full disk drops log lines, never the server
  }

 private:
  int fd_ = -1;
};

}  // namespace

std::shared_ptr<rocksdb::Logger> NewTolerantInfoLogger(const std::string& dir, bool create_dir) {
  return std::make_shared<TolerantInfoLogger>(dir, create_dir);
}

}  // namespace rocksdb_internal

}  // namespace dedupd
