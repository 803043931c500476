#include "storage/redis/redis_store_test_util.h"

#include <atomic>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace dedupd::testing {

std::string FreshKeyPrefix(absl::string_view letter) {
  static std::atomic<int> next{0};
  return absl::StrCat(letter, next.fetch_add(1), ":");
}

RedisUrlStoreOptions TestUrlStoreOptions(const RedisCluster& cluster, std::string prefix) {
  RedisUrlStoreOptions options;
  options.router.seeds = cluster.addresses();
  options.router.connect_timeout = absl::Seconds(2);
  options.router.command_timeout = absl::Seconds(10);
  options.router.deadline = absl::Seconds(20);
  options.key_prefix = std::move(prefix);
  return options;
}

absl::StatusOr<std::unique_ptr<RedisUrlStore>> OpenSharedClusterUrlStore(std::string prefix) {
  RedisCluster* cluster = SharedCluster();
  if (cluster == nullptr) return absl::FailedPreconditionError("no Redis cluster");
  return RedisUrlStore::Open(TestUrlStoreOptions(*cluster, std::move(prefix)));
}

}  // namespace dedupd::testing
