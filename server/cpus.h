// cpus.h: how many CPUs this process may use, for defaults that scale
// with them (--worker_threads). A container's CPU limit is a cgroup quota,
// which the affinity mask (what std::thread::hardware_concurrency and
// nproc report) does not show: a pod limited to 2 CPUs on a 64-core node
// sees 64 CPUs there.
//
// Example:
//   const int workers = 2 * dedupd::UsableCpus();
#ifndef DEDUPD_SERVER_CPUS_H_
#define DEDUPD_SERVER_CPUS_H_

#include <optional>

#include "absl/strings/string_view.h"

namespace dedupd {

// ParseCgroupCpuMax reads a cgroup v2 `cpu.max` file's contents
// ("$MAX $PERIOD", both in microseconds; MAX is "max" without a quota) as
// the number of CPUs the quota allows, rounded up. nullopt without a quota
// or for contents it cannot read.
std::optional<int> ParseCgroupCpuMax(absl::string_view contents);

// UsableCpus: the smallest quota (ParseCgroupCpuMax) of this process's
// cgroup v2 and its ancestors (from /proc/self/cgroup, under
// /sys/fs/cgroup), when one is set and smaller than the CPUs of the
// process's affinity mask; else those CPUs. At least 1. Reads a few small
// files; call once at start.
int UsableCpus();

}  // namespace dedupd

#endif  // DEDUPD_SERVER_CPUS_H_
