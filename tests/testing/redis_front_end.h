// redis_front_end.h: a real dedupd front end on a Redis Cluster for e2e
// tests (--store=redis_cluster on a RedisCluster fixture), with its
// stubs, and a CheckUrl claim with a deadline.
//
// Example:
//   RedisFrontEndProcess fe;
//   ASSERT_THAT(StartRedisFrontEnd(DEDUPD_BINARY, dir + "/unused-data",
//                                  RedisFrontEndFlags(*cluster, "e2e0:", {}), &fe),
//               IsOk());
//   absl::StatusOr<std::vector<v1::UrlVerdict>> v = ClaimUrls(*fe.dedup, {"http://a/"});
//
// Thread safety: the stubs are thread-safe; the rest is not.
#ifndef DEDUPD_TESTS_TESTING_REDIS_FRONT_END_H_
#define DEDUPD_TESTS_TESTING_REDIS_FRONT_END_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "dedupd/v1/admin.grpc.pb.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tests/testing/redis_cluster_fixture.h"
#include "tests/testing/server_process.h"

namespace dedupd::testing {

// Every RPC these helpers send has this deadline.
inline constexpr absl::Duration kRedisE2eRpcDeadline = absl::Seconds(15);

// One dedupd process and stubs on its channel.
struct RedisFrontEndProcess {
  std::unique_ptr<ServerProcess> process;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Dedup::Stub> dedup;
  std::unique_ptr<v1::Admin::Stub> admin;
  std::unique_ptr<grpc::health::v1::Health::Stub> health;
};

// The flags of a front end on `cluster` under `key_prefix`, then `extra`.
std::vector<std::string> RedisFrontEndFlags(const RedisCluster& cluster,
                                            const std::string& key_prefix,
                                            const std::vector<std::string>& extra);

// StartRedisFrontEnd starts `binary` with `flags` (data_dir unused by a
// Redis front end) on 127.0.0.1 and waits up to 30 s for `ready` in its
// log; fills *fe. Errors: ServerProcess::Start's.
absl::Status StartRedisFrontEnd(const std::string& binary, const std::string& data_dir,
                                const std::vector<std::string>& flags, RedisFrontEndProcess* fe,
                                const char* ready = ServerProcess::kServingPrefix);

// ClaimUrls claims `urls` through `stub` (with `claim_id` when not empty,
// in namespace `name_space`): the verdicts in order; the call's error, or
// Internal when the answer has another number of results or an item
// carries an error.
absl::StatusOr<std::vector<v1::UrlVerdict>> ClaimUrls(v1::Dedup::Stub& stub,
                                                      const std::vector<std::string>& urls,
                                                      const std::string& claim_id = "",
                                                      const std::string& name_space = "");

}  // namespace dedupd::testing

#endif  // DEDUPD_TESTS_TESTING_REDIS_FRONT_END_H_
