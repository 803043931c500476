// dedupctl_test_util.h: how the dedupctl tests run the real binary.
// Test-only; the including target defines DEDUPCTL_PATH (the binary).
//
// Example:
//   CommandResult r = Dedupctl({"normalize", "HTTP://A/"});
//   EXPECT_THAT(Lines(r.out), SizeIs(1));
#ifndef DEDUPD_CLIENT_DEDUPCTL_DEDUPCTL_TEST_UTIL_H_
#define DEDUPD_CLIENT_DEDUPCTL_DEDUPCTL_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"

#ifndef DEDUPCTL_PATH
#error "DEDUPCTL_PATH must name the dedupctl binary"
#endif

namespace dedupd::testing {

// Dedupctl runs dedupctl with `args` and `in` on its standard input (50 s
// at most); a failure to run it fails the test and gives an empty result.
inline CommandResult Dedupctl(std::vector<std::string> args, const std::string& in = "") {
  args.insert(args.begin(), DEDUPCTL_PATH);
  absl::StatusOr<CommandResult> r = RunCommand(args, in, absl::Seconds(50));
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : CommandResult();
}

// Lines: the non-empty lines of `out`.
inline std::vector<std::string> Lines(const std::string& out) {
  return absl::StrSplit(out, '\n', absl::SkipEmpty());
}

}  // namespace dedupd::testing

#endif  // DEDUPD_CLIENT_DEDUPCTL_DEDUPCTL_TEST_UTIL_H_
