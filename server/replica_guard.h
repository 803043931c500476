// replica_guard.h: refuses to run a second replica of the embedded store.
// deploy/base runs dedupd as a StatefulSet whose store (RocksDB) lives in the
// pod's own volume; a second replica would open a second, empty store, and
// clients spread across both would be told every URL is NEW once per
// replica. The StatefulSet passes the pod's name (the downward API's
// metadata.name, e.g. "dedupd-1") in --statefulset_pod_name, and a pod
// whose ordinal is not 0 stops before it serves.
//
// Example:
//   absl::Status s = CheckSingleReplica("dedupd-1");
//   // s.code() == absl::StatusCode::kFailedPrecondition
#ifndef DEDUPD_SERVER_REPLICA_GUARD_H_
#define DEDUPD_SERVER_REPLICA_GUARD_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dedupd {

// CheckSingleReplica returns OK when `pod_name` is empty (no check), has no
// ordinal suffix ("-" and digits at the end: not a StatefulSet pod), or has
// ordinal 0 ("dedupd-0"); FailedPrecondition otherwise, with a one-line
// message that names the pod, says why the embedded store cannot be shared
// and what to do (scale to 1 replica, or deploy/overlays/cluster).
// REQUIRES: `pod_name` names a StatefulSet pod when it is not empty — a
// Deployment's random pod suffix can be all digits. Pure; thread-safe.
absl::Status CheckSingleReplica(absl::string_view pod_name);

}  // namespace dedupd

#endif  // DEDUPD_SERVER_REPLICA_GUARD_H_
