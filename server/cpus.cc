#include "server/cpus.h"

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace dedupd {
namespace {

std::optional<std::string> ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

std::optional<int> ParseCgroupCpuMax(absl::string_view contents) {
  const std::vector<absl::string_view> fields =
      absl::StrSplit(absl::StripAsciiWhitespace(contents), ' ', absl::SkipEmpty());
  if (fields.size() != 2 || fields[0] == "max") return std::nullopt;
  uint64_t quota = 0;
  uint64_t period = 0;
  if (!absl::SimpleAtoi(fields[0], &quota) || !absl::SimpleAtoi(fields[1], &period) ||
      quota == 0 || period == 0) {
    return std::nullopt;
  }
  const uint64_t cpus = (quota + period - 1) / period;
  return static_cast<int>(std::min<uint64_t>(cpus, 1 << 20));
}

int UsableCpus() {
  int cpus = 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) cpus = CPU_COUNT(&set);
  if (cpus <= 0) cpus = 1;
  // cgroup v2: the line "0::/path" of /proc/self/cgroup names the
  // process's group; every ancestor's quota applies too.
  const std::optional<std::string> groups = ReadSmallFile("/proc/self/cgroup");
  if (!groups.has_value()) return cpus;
  for (absl::string_view line : absl::StrSplit(*groups, '\n')) {
    if (!absl::ConsumePrefix(&line, "0::")) continue;
    std::string dir(line);
    for (;;) {
      if (std::optional<std::string> max =
              ReadSmallFile("/sys/fs/cgroup" + (dir == "/" ? "" : dir) + "/cpu.max")) {
        if (std::optional<int> quota = ParseCgroupCpuMax(*max)) {
          cpus = std::min(cpus, std::max(*quota, 1));
        }
      }
      if (dir.empty() || dir == "/") break;
      const size_t slash = dir.rfind('/');
      dir = slash == 0 || slash == std::string::npos ? "/" : dir.substr(0, slash);
    }
  }
  return cpus;
}

}  // namespace dedupd
