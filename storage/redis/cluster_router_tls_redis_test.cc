// ClusterRouter over TLS against a real 3-master, 3-replica redis-server
// cluster that listens with TLS only and requires client certificates
// (tests/testing/redis_cluster_fixture.h, options.tls; ctest label
// `redis`): a batch over every master and its read back, a MOVED followed
// over TLS after a slot changes owner; a wrong CA and a missing client
// certificate refused at Connect with the node and the reason named.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/redis/cluster_router.h"
#include "tests/testing/redis_cluster_fixture.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_certs.h"

namespace dedupd::redis {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::RedisCluster;
using ::dedupd::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Generous for a loaded 2-core machine, and still bounded.
RouterOptions RouterOverTls(const RedisCluster& cluster) {
  RouterOptions options;
  options.seeds = cluster.addresses();
  options.connect_timeout = absl::Seconds(5);
  options.command_timeout = absl::Seconds(10);
  options.deadline = absl::Seconds(10);
  options.tls.enabled = true;
  options.tls.ca_pem = cluster.tls().ca_pem;
  options.tls.cert_pem = cluster.tls().client_cert_pem;
  options.tls.key_pem = cluster.tls().client_key_pem;
  return options;
}

TEST(ClusterRouterTlsTest, BatchAndMovedOverTls) {
  RedisCluster* cluster = testing::SharedTlsCluster();
  ASSERT_NE(cluster, nullptr);
  absl::StatusOr<std::unique_ptr<ClusterRouter>> router =
      ClusterRouter::Connect(RouterOverTls(*cluster));
  ASSERT_THAT(router, IsOk());
  EXPECT_TRUE((*router)->SlotMapComplete());

  // 300 keys: every master gets a pipelined share.
  std::vector<Command> sets;
  std::vector<Command> gets;
  for (int i = 0; i < 300; ++i) {
    const std::string key = absl::StrCat("tls:", i);
    sets.push_back(Command::ForKey(key, {"SET", key, absl::StrCat("v", i)}));
    gets.push_back(Command::ForKey(key, {"GET", key}));
  }
  for (const absl::StatusOr<Value>& r : (*router)->Execute(sets)) {
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(*r, Value::Status("OK"));
  }
  std::vector<absl::StatusOr<Value>> got = (*router)->Execute(gets);
  for (int i = 0; i < 300; ++i) {
    ASSERT_THAT(got[i], IsOk());
    EXPECT_EQ(*got[i], Value::String(absl::StrCat("v", i)));
  }
  std::vector<NodeStats> stats = (*router)->Stats();
  int connected = 0;
  for (const NodeStats& s : stats) connected += s.connected ? 1 : 0;
  EXPECT_GE(connected, 3);

  // Give an empty slot to another master behind the router's back: the
  // router's map is stale, the old owner answers MOVED, and the router
  // follows it to the new owner (a connection of its own, over TLS).
  const std::string key = "tls-moved:{x}";
  const int slot = KeySlot(key);
  absl::StatusOr<size_t> from = cluster->SlotOwner(slot);
  ASSERT_THAT(from, IsOk());
  size_t to = 0;
  while (to == *from || !cluster->started_as_master(to)) ++to;
  ASSERT_THAT(cluster->MigrateSlot(slot, *from, to), IsOk());
  absl::StatusOr<Value> set = (*router)->ExecuteOne(Command::ForKey(key, {"SET", key, "moved"}));
  ASSERT_THAT(set, IsOk());
  EXPECT_EQ(*set, Value::Status("OK"));
  EXPECT_EQ((*router)->SlotOwner(slot), cluster->address(to));
  uint64_t redirects = 0;
  for (const NodeStats& s : (*router)->Stats()) redirects += s.redirects;
  EXPECT_GE(redirects, 1u);
  absl::StatusOr<Value> get = (*router)->ExecuteOne(Command::ForKey(key, {"GET", key}));
  ASSERT_THAT(get, IsOk());
  EXPECT_EQ(*get, Value::String("moved"));
}

TEST(ClusterRouterTlsTest, WrongCaFailsNamingTheNodeAndTheReason) {
  RedisCluster* cluster = testing::SharedTlsCluster();
  ASSERT_NE(cluster, nullptr);
  absl::StatusOr<testing::TestCert> other = testing::MakeTestCa("not the cluster's CA");
  ASSERT_THAT(other, IsOk());
  RouterOptions options = RouterOverTls(*cluster);
  options.seeds = {cluster->address(0)};
  options.tls.ca_pem = other->cert_pem;
  // redis-server sends its CA with its certificate (OpenSSL completes the
  // chain from tls-ca-cert-file): an untrusted, self-signed root.
  EXPECT_THAT(
      ClusterRouter::Connect(options),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr(absl::StrCat("redis node ", cluster->address(0), ": ")),
                     HasSubstr("TLS: the server's certificate did not verify for "
                               "127.0.0.1: self-signed certificate in certificate chain"))));
}

TEST(ClusterRouterTlsTest, MissingClientCertificateFailsClearly) {
  RedisCluster* cluster = testing::SharedTlsCluster();
  ASSERT_NE(cluster, nullptr);
  RouterOptions options = RouterOverTls(*cluster);
  options.seeds = {cluster->address(0)};
  options.tls.cert_pem.clear();
  options.tls.key_pem.clear();
  EXPECT_THAT(ClusterRouter::Connect(options),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr(absl::StrCat("redis node ", cluster->address(0), ": ")),
                             HasSubstr("TLS: the server refused the connection"),
                             HasSubstr("no client certificate was sent"))));
}

}  // namespace
}  // namespace dedupd::redis
