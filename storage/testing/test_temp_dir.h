// test_temp_dir.h: a uniquely named directory under ::testing::TempDir()
// that is removed, with everything in it, when the object is destroyed.
// For storage tests only.
//
// Example:
//   ASSERT_OK_AND_ASSIGN(TestTempDir dir, TestTempDir::Make());
//   options.path = dir.path() + "/db";
//
// Thread safety: a TestTempDir is a value; do not share one across threads
// while it is being moved or destroyed.
#ifndef DEDUPD_STORAGE_TESTING_TEST_TEMP_DIR_H_
#define DEDUPD_STORAGE_TESTING_TEST_TEMP_DIR_H_

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace dedupd::testing {

class TestTempDir {
 public:
  // Make creates the directory (mkdtemp). Errors: Internal with errno text.
  static absl::StatusOr<TestTempDir> Make() {
    std::string base = ::testing::TempDir();
    if (base.empty() || base.back() != '/') base.push_back('/');
    std::string templ = absl::StrCat(base, "dedupd_storage_XXXXXX");
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) == nullptr) {
      return absl::InternalError(absl::StrCat("mkdtemp ", templ, ": ", std::strerror(errno)));
    }
    return TestTempDir(std::string(buf.data()));
  }

  TestTempDir(TestTempDir&& other) noexcept : path_(std::exchange(other.path_, std::string())) {}
  TestTempDir& operator=(TestTempDir&& other) noexcept {
    if (this != &other) {
      Remove();
      path_ = std::exchange(other.path_, std::string());
    }
    return *this;
  }
  TestTempDir(const TestTempDir&) = delete;
  TestTempDir& operator=(const TestTempDir&) = delete;
  ~TestTempDir() { Remove(); }

  // path returns the directory's absolute path, without a trailing slash.
  const std::string& path() const { return path_; }

 private:
  explicit TestTempDir(std::string path) : path_(std::move(path)) {}

  void Remove() {
    if (path_.empty()) return;
    std::error_code ec;  // best effort: a leftover temp dir fails no test
    std::filesystem::remove_all(path_, ec);
    path_.clear();
  }

  std::string path_;
};

}  // namespace dedupd::testing

#endif  // DEDUPD_STORAGE_TESTING_TEST_TEMP_DIR_H_
