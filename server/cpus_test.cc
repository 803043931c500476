#include "server/cpus.h"

#include <sched.h>

#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace dedupd {
namespace {

TEST(ParseCgroupCpuMaxTest, Table) {
  struct Case {
    std::string contents;
    std::optional<int> want;
  };
  const Case cases[] = {
      {"max 100000\n", std::nullopt},        // no quota
      {"200000 100000\n", 2},                // a 2-CPU limit
      {"150000 100000", 2},                  // 1.5 CPUs round up
      {"50000 100000\n", 1},                 // half a CPU
      {"400000 50000\n", 8},
      {"  300000   100000  \n", 3},          // spacing
      {"", std::nullopt},
      {"max", std::nullopt},
      {"100000", std::nullopt},              // no period
      {"0 100000", std::nullopt},
      {"100000 0", std::nullopt},
      {"-100000 100000", std::nullopt},
      {"abc 100000", std::nullopt},
      {"100000 100000 7", std::nullopt},
      {"18446744073709551615 1", 1 << 20},   // clamped, not overflowed
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ParseCgroupCpuMax(c.contents), c.want) << '"' << c.contents << '"';
  }
}

TEST(UsableCpusTest, AtLeastOneAndNoMoreThanTheAffinityMask) {
  const int cpus = UsableCpus();
  EXPECT_GE(cpus, 1);
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  EXPECT_LE(cpus, CPU_COUNT(&set));
}

}  // namespace
}  // namespace dedupd
