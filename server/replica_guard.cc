#include "server/replica_guard.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace dedupd {

absl::Status CheckSingleReplica(absl::string_view pod_name) {
  // A StatefulSet names its pods <name>-<ordinal>, ordinals from 0.
  const size_t dash = pod_name.rfind('-');
  if (dash == absl::string_view::npos) return absl::OkStatus();
  const absl::string_view ordinal = pod_name.substr(dash + 1);
  if (ordinal.empty()) return absl::OkStatus();
  bool zero = true;
  for (const char c : ordinal) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return absl::OkStatus();
    // Compared digit by digit: an ordinal of any length cannot overflow.
    if (c != '0') zero = false;
  }
  if (zero) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "--statefulset_pod_name=", pod_name, ": this is replica ", ordinal,
      " of a StatefulSet, but the embedded store cannot be shared: each replica would open its "
      "own store, and every URL would be NEW once per replica. Scale the StatefulSet to 1 "
      "replica, or run stateless front ends over Redis Cluster (deploy/overlays/cluster)"));
}

}  // namespace dedupd
