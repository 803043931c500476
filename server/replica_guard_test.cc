#include "server/replica_guard.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(CheckSingleReplicaTest, OnlyOrdinalZeroOrNoOrdinalRuns) {
  struct Case {
    const char* pod_name;
    bool ok;
  } cases[] = {
      {"", true},                                 // flag unset: no check
      {"dedupd-0", true},                         // the one replica
      {"dedupd-00", true},                        // still ordinal 0
      {"dedupd", true},                           // no ordinal suffix
      {"dedupd-", true},                          // a dash, no digits
      {"dedupd-abc", true},                       // suffix not numeric
      {"dedupd-7d9f8-x2k4p", true},               // a Deployment-style name
      {"0", true},                                // no dash
      {"dedupd-1", false},                        // a second replica
      {"dedupd-12", false},                       // two digits
      {"my-dedupd-prod-3", false},                // dashes in the StatefulSet's name
      {"dedupd-10", false},                       // a zero digit, not ordinal 0
      {"dedupd-99999999999999999999999", false},  // longer than any integer
  };
  for (const Case& c : cases) {
    if (c.ok) {
      EXPECT_THAT(CheckSingleReplica(c.pod_name), IsOk()) << c.pod_name;
    } else {
      EXPECT_THAT(CheckSingleReplica(c.pod_name),
                  StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(c.pod_name)))
          << c.pod_name;
    }
  }
}

TEST(CheckSingleReplicaTest, MessageSaysWhyAndWhatToDo) {
  EXPECT_THAT(CheckSingleReplica("dedupd-1"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("--statefulset_pod_name=dedupd-1"), HasSubstr("replica 1"),
                             HasSubstr("embedded store cannot be shared"),
                             HasSubstr("every URL would be NEW once per replica"),
                             HasSubstr("Scale the StatefulSet to 1 replica"),
                             HasSubstr("deploy/overlays/cluster"))));
}

}  // namespace
}  // namespace dedupd
