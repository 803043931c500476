// ClusterRouter against a real 3-master, 3-replica redis-server cluster on
// loopback (tests/testing/redis_cluster_fixture.h; ctest label `redis`):
// one batch over all 16384 slots, a 1000-command pipeline, error replies
// as data, EVALSHA falling back to EVAL, cross-slot scripts refused; a slot
// migration followed through ASK and then MOVED; a killed master failing
// only its own items until its replica takes over; the masters listed and
// commands run on one named node (ExecuteOnNode).
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/redis/cluster_router.h"
#include "tests/testing/redis_cluster_fixture.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::redis {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::RedisCluster;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;

// Generous for a loaded 2-core machine, and still bounded.
RouterOptions TestOptions(const RedisCluster& cluster) {
  RouterOptions options;
  // Retries span about 10 s (100 ms cap): enough for a failover here.
  options.max_attempts = 100;
  options.retry_backoff_cap = absl::Milliseconds(100);
  options.seeds = cluster.addresses();
  options.connect_timeout = absl::Seconds(2);
  options.command_timeout = absl::Seconds(10);
  options.deadline = absl::Seconds(10);
  return options;
}

std::unique_ptr<ClusterRouter> ConnectOrFail(const RouterOptions& options) {
  absl::StatusOr<std::unique_ptr<ClusterRouter>> router = ClusterRouter::Connect(options);
  EXPECT_THAT(router, IsOk());
  return router.ok() ? *std::move(router) : nullptr;
}

// KeyPerSlot returns one key for each of the 16384 slots ("k:<n>", the
// first n that lands in the slot).
std::vector<std::string> KeyPerSlot() {
  std::vector<std::string> keys(kSlotCount);
  int found = 0;
  for (int n = 0; found < kSlotCount; ++n) {
    std::string key = absl::StrCat("k:", n);
    std::string& slot_key = keys[KeySlot(key)];
    if (slot_key.empty()) {
      slot_key = std::move(key);
      ++found;
    }
  }
  return keys;
}

NodeStats StatsOf(const ClusterRouter& router, const std::string& node) {
  for (NodeStats& s : router.Stats()) {
    if (s.node == node) return s;
  }
  return NodeStats{};
}

// The cases that leave the cluster's layout alone share one cluster per
// process (ctest runs the binary as one test: dedupd_test WHOLE).
class ClusterRouterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<RedisCluster>> cluster = RedisCluster::Start({});
    ASSERT_THAT(cluster, IsOk());
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    router_ = ConnectOrFail(TestOptions(*cluster_));
    ASSERT_NE(router_, nullptr);
  }

  static RedisCluster* cluster_;
  std::unique_ptr<ClusterRouter> router_;
};
RedisCluster* ClusterRouterTest::cluster_ = nullptr;

TEST_F(ClusterRouterTest, OneBatchSetsAndGetsAKeyInEverySlot) {
  EXPECT_TRUE(router_->SlotMapComplete());
  const std::vector<std::string> keys = KeyPerSlot();
  std::vector<Command> sets, gets;
  for (const std::string& k : keys) {
    sets.push_back(Command::ForKey(k, {"SET", k, absl::StrCat("v", k)}));
    gets.push_back(Command::ForKey(k, {"GET", k}));
  }
  std::vector<absl::StatusOr<Value>> set_replies = router_->Execute(sets);
  ASSERT_EQ(set_replies.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_THAT(set_replies[i], IsOk()) << keys[i];
    ASSERT_EQ(*set_replies[i], Value::Status("OK")) << keys[i];
  }
  std::vector<absl::StatusOr<Value>> get_replies = router_->Execute(gets);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_THAT(get_replies[i], IsOk()) << keys[i];
    ASSERT_EQ(*get_replies[i], Value::String(absl::StrCat("v", keys[i]))) << keys[i];
  }
  // Routed by the map: each master took its third, none redirected.
  std::set<std::string> masters;
  for (const NodeStats& s : router_->Stats()) {
    if (s.commands_sent < 5000) continue;  // seeds asked only for CLUSTER SLOTS
    masters.insert(s.node);
    EXPECT_EQ(s.redirects, 0u) << s.node;
    EXPECT_EQ(s.errors, 0u) << s.node;
    EXPECT_TRUE(s.connected) << s.node;
  }
  EXPECT_EQ(masters.size(), 3u);
}

TEST_F(ClusterRouterTest, PipelinesAThousandCommandsToOneNodeInOrder) {
  const std::string key = "{pipe}:counter";
  ASSERT_THAT(router_->ExecuteOne(Command::ForKey(key, {"DEL", key})), IsOk());
  const std::string owner = router_->SlotOwner(KeySlot(key));
  const uint64_t sent_before = StatsOf(*router_, owner).commands_sent;
  std::vector<Command> incrs(1000, Command::ForKey(key, {"INCR", key}));
  const absl::Time start = absl::Now();
  std::vector<absl::StatusOr<Value>> replies = router_->Execute(incrs);
  const absl::Duration took = absl::Now() - start;
  for (size_t i = 0; i < replies.size(); ++i) {
    ASSERT_THAT(replies[i], IsOk());
    ASSERT_EQ(*replies[i], Value::Integer(static_cast<long long>(i + 1)));
  }
  EXPECT_EQ(StatsOf(*router_, owner).commands_sent - sent_before, 1000u);
  // One pipeline, not 1000 round trips of up to a command_timeout each.
  EXPECT_LT(took, absl::Seconds(5));
}

TEST_F(ClusterRouterTest, ErrorRepliesAreRepliesAndBadCommandsFailAlone) {
  std::vector<absl::StatusOr<Value>> replies = router_->Execute({
      Command::ForKey("{e}:s", {"SET", "{e}:s", "x"}),
      Command::ForKey("{e}:s", {"LPUSH", "{e}:s", "y"}),
      Command::ForKey("{e}:s", {"NOSUCHCOMMAND"}),
      Command::ForKey("{e}:s", {}),
      Command::ForSlot(kSlotCount, {"PING"}),
      Command::ForSlot(0, {"PING"}),
  });
  ASSERT_EQ(replies.size(), 6u);
  EXPECT_THAT(replies[0], IsOk());
  ASSERT_THAT(replies[1], IsOk());
  EXPECT_EQ(replies[1]->ErrorCode(), "WRONGTYPE") << *replies[1];
  ASSERT_THAT(replies[2], IsOk());
  EXPECT_EQ(replies[2]->ErrorCode(), "ERR") << *replies[2];
  EXPECT_THAT(replies[3], StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(replies[4], StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("slot")));
  ASSERT_THAT(replies[5], IsOk());
  EXPECT_EQ(*replies[5], Value::Status("PONG"));
}

TEST_F(ClusterRouterTest, EvalShaFallsBackToEvalOnNoScriptThenHits) {
  static const Script kClaim(
      "if redis.call('SET', KEYS[1], ARGV[1], 'NX') then "
      "redis.call('RPUSH', KEYS[2], ARGV[1]) return 1 end "
      "redis.call('RPUSH', KEYS[2], ARGV[1]) return 0");
  for (size_t i = 0; i < cluster_->size(); ++i) {
    ASSERT_THAT(cluster_->Cli(i, {"SCRIPT", "FLUSH"}), IsOk());
  }
  // Tags spread over the masters, so every node sees NOSCRIPT once.
  std::vector<ScriptCall> calls;
  std::set<std::string> nodes;
  for (int t = 0; t < 30; ++t) {
    const std::string tag = absl::StrCat("{h", t, "}");
    calls.push_back({{tag + ":owner", tag + ":aliases"}, {"w1"}});
    nodes.insert(router_->SlotOwner(KeySlot(tag)));
  }
  ASSERT_EQ(nodes.size(), 3u);
  std::vector<absl::StatusOr<Value>> first = router_->EvalBatch(kClaim, calls);
  std::vector<absl::StatusOr<Value>> second = router_->EvalBatch(kClaim, calls);
  for (size_t i = 0; i < calls.size(); ++i) {
    ASSERT_THAT(first[i], IsOk());
    EXPECT_EQ(*first[i], Value::Integer(1)) << calls[i].keys[0];
    ASSERT_THAT(second[i], IsOk());
    EXPECT_EQ(*second[i], Value::Integer(0)) << calls[i].keys[0];
  }
  // EVAL cached the script on each master: SCRIPT EXISTS answers 1.
  for (int t = 0; t < 30; ++t) {
    const std::string tag = absl::StrCat("{h", t, "}");
    absl::StatusOr<Value> exists =
        router_->ExecuteOne(Command::ForKey(tag, {"SCRIPT", "EXISTS", kClaim.sha1()}));
    ASSERT_THAT(exists, IsOk());
    EXPECT_EQ(*exists, Value::Array({Value::Integer(1)})) << tag;
    absl::StatusOr<Value> aliases =
        router_->ExecuteOne(Command::ForKey(tag, {"LRANGE", tag + ":aliases", "0", "-1"}));
    ASSERT_THAT(aliases, IsOk());
    EXPECT_EQ(*aliases, Value::Array({Value::String("w1"), Value::String("w1")}));
  }
}

TEST_F(ClusterRouterTest, ScriptKeysInDifferentSlotsAreInvalidArgument) {
  static const Script kGet("return redis.call('GET', KEYS[1])");
  EXPECT_THAT(router_->Eval(kGet, {"{a}:x", "{b}:x"}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("different cluster slots")));
  // In a batch, only that call fails.
  std::vector<absl::StatusOr<Value>> replies =
      router_->EvalBatch(kGet, {{{"{a}:x", "{b}:x"}, {}}, {{"{a}:missing"}, {}}});
  EXPECT_THAT(replies[0], StatusIs(absl::StatusCode::kInvalidArgument));
  ASSERT_THAT(replies[1], IsOk());
  EXPECT_EQ(*replies[1], Value::Nil());
}

TEST_F(ClusterRouterTest, ConcurrentCallersShareTheRouter) {
  constexpr int kThreads = 4, kBatches = 25, kTags = 8;
  std::vector<Command> dels;
  for (int t = 0; t < kTags; ++t) {
    const std::string key = absl::StrCat("{c", t, "}:n");
    dels.push_back(Command::ForKey(key, {"DEL", key}));
  }
  for (const auto& r : router_->Execute(dels)) ASSERT_THAT(r, IsOk());
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      for (int b = 0; b < kBatches; ++b) {
        std::vector<Command> batch;
        for (int i = 0; i < 5 * kTags; ++i) {
          const std::string key = absl::StrCat("{c", i % kTags, "}:n");
          batch.push_back(Command::ForKey(key, {"INCR", key}));
        }
        for (const auto& r : router_->Execute(std::move(batch))) failures[th] += !r.ok();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int th = 0; th < kThreads; ++th) EXPECT_EQ(failures[th], 0) << "thread " << th;
  for (int t = 0; t < kTags; ++t) {
    const std::string key = absl::StrCat("{c", t, "}:n");
    absl::StatusOr<Value> n = router_->ExecuteOne(Command::ForKey(key, {"GET", key}));
    ASSERT_THAT(n, IsOk());
    EXPECT_EQ(*n, Value::String(absl::StrCat(kThreads * kBatches * 5))) << key;
  }
}

// AUTH after every connect: the default user's password (requirepass) or
// an ACL user; a node that needs AUTH and does not get it, or refuses it,
// is a configuration to fix (FailedPrecondition), not a retry.
TEST_F(ClusterRouterTest, MastersAndCommandsRunOnOneNode) {
  const std::vector<std::string> masters = router_->Masters();
  ASSERT_EQ(masters.size(), 3u);
  EXPECT_TRUE(std::is_sorted(masters.begin(), masters.end()));
  // A key's master answers it; another master redirects, and the MOVED is
  // the answer (no redirect is followed).
  const std::string key = "on-node:1";
  ASSERT_THAT(router_->ExecuteOne(Command::ForKey(key, {"SET", key, "v"})), IsOk());
  const std::string owner = router_->SlotOwner(KeySlot(key));
  for (const std::string& m : masters) {
    absl::StatusOr<Value> got = router_->ExecuteOnNode(m, {"GET", key});
    ASSERT_THAT(got, IsOk()) << m;
    if (m == owner) {
      EXPECT_EQ(*got, Value::String("v")) << m;
    } else {
      EXPECT_EQ(got->ErrorCode(), "MOVED") << m << ": " << *got;
    }
  }
  // A node-wide command: every master answers DBSIZE with an integer.
  for (const std::string& m : masters) {
    absl::StatusOr<Value> size = router_->ExecuteOnNode(m, {"DBSIZE"});
    ASSERT_THAT(size, IsOk()) << m;
    EXPECT_EQ(size->type, Value::Type::kInteger) << m << ": " << *size;
  }
  EXPECT_THAT(router_->ExecuteOnNode(masters[0], {}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(router_->ExecuteOnNode("no-port", {"PING"}),
              StatusIs(absl::StatusCode::kInvalidArgument));
  // Nothing listens on port 1 of loopback.
  EXPECT_THAT(router_->ExecuteOnNode("127.0.0.1:1", {"PING"}),
              StatusIs(absl::StatusCode::kUnavailable));
}

TEST(ClusterRouterAuthTest, PasswordAndAclUser) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCluster> cluster, RedisCluster::Start({}));
  for (size_t i = 0; i < cluster->size(); ++i) {
    ASSERT_OK_AND_ASSIGN(std::string out, cluster->Cli(i, {"ACL", "SETUSER", "router", "on",
                                                           ">router-pw", "~*", "&*", "+@all"}));
    ASSERT_EQ(out, "OK\n");
    // Last: from here on redis-cli (no password) is refused by this node.
    ASSERT_OK_AND_ASSIGN(out, cluster->Cli(i, {"CONFIG", "SET", "requirepass", "default-pw"}));
    ASSERT_EQ(out, "OK\n");
  }
  RouterOptions options = TestOptions(*cluster);
  EXPECT_THAT(ClusterRouter::Connect(options),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("NOAUTH")));
  options.password = "wrong";
  EXPECT_THAT(ClusterRouter::Connect(options),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("AUTH refused")));

  for (const auto& [user, password] : std::vector<std::pair<std::string, std::string>>{
           {"", "default-pw"}, {"router", "router-pw"}}) {
    options.user = user;
    options.password = password;
    std::unique_ptr<ClusterRouter> router = ConnectOrFail(options);
    ASSERT_NE(router, nullptr) << user;
    EXPECT_TRUE(router->SlotMapComplete());
    std::vector<Command> batch;
    for (int i = 0; i < 30; ++i) {
      const std::string key = absl::StrCat("a:", user, i);
      batch.push_back(Command::ForKey(key, {"SET", key, "v"}));
    }
    for (const auto& r : router->Execute(batch)) {
      ASSERT_THAT(r, IsOk()) << user;
      EXPECT_EQ(*r, Value::Status("OK")) << user;
    }
  }
}

// CLUSTERDOWN is retried with backoff, bounded: a master that stops
// serving one of its slots answers CLUSTERDOWN for it; a router with few
// attempts gives up UNAVAILABLE quoting it, a patient one succeeds once the
// slot is served again.
TEST(ClusterRouterRetryTest, ClusterDownIsRetriedUntilTheSlotIsServedAgain) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCluster> cluster, RedisCluster::Start({}));
  RouterOptions options = TestOptions(*cluster);
  std::unique_ptr<ClusterRouter> router = ConnectOrFail(options);
  ASSERT_NE(router, nullptr);
  const std::string key = "{down}:k";
  const int slot = KeySlot(key);
  ASSERT_THAT(router->ExecuteOne(Command::ForKey(key, {"SET", key, "v"})), IsOk());
  ASSERT_OK_AND_ASSIGN(size_t owner, cluster->SlotOwner(slot));
  ASSERT_OK_AND_ASSIGN(std::string out,
                       cluster->Cli(owner, {"CLUSTER", "DELSLOTS", absl::StrCat(slot)}));
  ASSERT_EQ(out, "OK\n");

  options.max_attempts = 3;
  std::unique_ptr<ClusterRouter> impatient = ConnectOrFail(options);
  ASSERT_NE(impatient, nullptr);
  EXPECT_THAT(impatient->ExecuteOne(Command::ForKey(key, {"GET", key})),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("CLUSTERDOWN")));

  // The slot is served again a second from now, while the patient router
  // retries (the fixture is used by this thread alone meanwhile).
  std::thread restore([&] {
    absl::SleepFor(absl::Seconds(1));
    EXPECT_THAT(cluster->Cli(owner, {"CLUSTER", "ADDSLOTS", absl::StrCat(slot)}), IsOk());
  });
  const uint64_t retries_before = StatsOf(*router, cluster->address(owner)).retries;
  absl::StatusOr<Value> got = router->ExecuteOne(Command::ForKey(key, {"GET", key}));
  restore.join();
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(*got, Value::String("v"));
  EXPECT_GT(StatsOf(*router, cluster->address(owner)).retries, retries_before);
}

// A slot moving from one master to another while the router runs: during
// the migration the source answers ASK for a key it gave away (the router
// sends ASKING there and keeps its map); after it the source answers MOVED
// (the router follows it and refreshes its map).
TEST(ClusterRouterMigrationTest, AskDuringMigrationMovedAfter) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCluster> cluster, RedisCluster::Start({}));
  std::unique_ptr<ClusterRouter> router = ConnectOrFail(TestOptions(*cluster));
  ASSERT_NE(router, nullptr);
  const std::string a = "{mig}:a", b = "{mig}:b", c = "{mig}:c";
  const int slot = KeySlot(a);
  ASSERT_OK_AND_ASSIGN(size_t from, cluster->SlotOwner(slot));
  size_t to = from;
  for (size_t i = 0; i < cluster->size(); ++i) {
    if (i != from && cluster->started_as_master(i)) to = i;
  }
  ASSERT_NE(to, from);
  ASSERT_EQ(router->SlotOwner(slot), cluster->address(from));
  for (const auto& key : {a, b}) {
    ASSERT_THAT(router->ExecuteOne(Command::ForKey(key, {"SET", key, key + "-v"})), IsOk());
  }

  ASSERT_THAT(cluster->BeginSlotMigration(slot, from, to), IsOk());
  ASSERT_THAT(cluster->MigrateKey(from, to, a), IsOk());
  std::vector<absl::StatusOr<Value>> during = router->Execute({
      Command::ForKey(a, {"GET", a}),         // moved: ASK -> ASKING at `to`
      Command::ForKey(b, {"GET", b}),         // still at `from`
      Command::ForKey(c, {"SET", c, "c-v"}),  // new key: ASK -> created at `to`
  });
  ASSERT_THAT(during[0], IsOk());
  EXPECT_EQ(*during[0], Value::String(a + "-v"));
  ASSERT_THAT(during[1], IsOk());
  EXPECT_EQ(*during[1], Value::String(b + "-v"));
  ASSERT_THAT(during[2], IsOk());
  EXPECT_EQ(*during[2], Value::Status("OK"));
  EXPECT_EQ(router->SlotOwner(slot), cluster->address(from)) << "ASK must not change the map";
  EXPECT_EQ(StatsOf(*router, cluster->address(from)).redirects, 2u);
  ASSERT_OK_AND_ASSIGN(std::string on_target,
                       cluster->Cli(to, {"CLUSTER", "COUNTKEYSINSLOT", absl::StrCat(slot)}));
  EXPECT_EQ(on_target, "2\n");  // a and c

  ASSERT_THAT(cluster->FinishSlotMigration(slot, from, to), IsOk());
  std::vector<absl::StatusOr<Value>> after = router->Execute({
      Command::ForKey(a, {"GET", a}),
      Command::ForKey(b, {"GET", b}),
      Command::ForKey(c, {"GET", c}),
  });
  for (size_t i = 0; i < after.size(); ++i) ASSERT_THAT(after[i], IsOk());
  EXPECT_EQ(*after[0], Value::String(a + "-v"));
  EXPECT_EQ(*after[1], Value::String(b + "-v"));
  EXPECT_EQ(*after[2], Value::String("c-v"));
  EXPECT_EQ(router->SlotOwner(slot), cluster->address(to)) << "MOVED must refresh the map";
  EXPECT_TRUE(router->SlotMapComplete());
  // The fresh map routes straight to the new owner: no more redirects.
  const uint64_t redirects = StatsOf(*router, cluster->address(from)).redirects;
  ASSERT_THAT(router->ExecuteOne(Command::ForKey(b, {"GET", b})), IsOk());
  EXPECT_EQ(StatsOf(*router, cluster->address(from)).redirects, redirects);
}

// A master killed as a crash would: its items fail UNAVAILABLE naming it
// while the other masters' items succeed; once its replica is promoted
// (bounded wait), the router finds the new owner and they succeed again.
TEST(ClusterRouterFailoverTest, KilledMasterFailsOnlyItsItemsUntilItsReplicaTakesOver) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCluster> cluster, RedisCluster::Start({}));
  RouterOptions options = TestOptions(*cluster);
  options.deadline = absl::Seconds(3);  // per attempt of the wait below
  std::unique_ptr<ClusterRouter> router = ConnectOrFail(options);
  ASSERT_NE(router, nullptr);

  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) keys.push_back(absl::StrCat("f:", i));
  std::vector<Command> sets, gets;
  for (const std::string& k : keys) {
    sets.push_back(Command::ForKey(k, {"SET", k, "v"}));
    gets.push_back(Command::ForKey(k, {"GET", k}));
  }
  for (const auto& r : router->Execute(sets)) ASSERT_THAT(r, IsOk());
  // WAIT: the replicas have the writes before the master dies.
  for (int s : {0, 8000, 16000}) {
    ASSERT_THAT(router->ExecuteOne(Command::ForSlot(s, {"WAIT", "1", "5000"})), IsOk());
  }

  size_t victim = cluster->size();
  for (size_t i = 0; i < cluster->size() && victim == cluster->size(); ++i) {
    if (cluster->started_as_master(i)) victim = i;
  }
  const std::string dead = cluster->address(victim);
  std::vector<bool> on_victim;
  for (const std::string& k : keys) on_victim.push_back(router->SlotOwner(KeySlot(k)) == dead);
  ASSERT_THAT(cluster->KillNode(victim), IsOk());

  std::vector<absl::StatusOr<Value>> replies = router->Execute(gets);
  int failed = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (on_victim[i]) {
      EXPECT_THAT(replies[i], StatusIs(absl::StatusCode::kUnavailable,
                                       HasSubstr(absl::StrCat("redis node ", dead, ": "))))
          << keys[i];
      ++failed;
    } else {
      ASSERT_THAT(replies[i], IsOk()) << keys[i];
      EXPECT_EQ(*replies[i], Value::String("v")) << keys[i];
    }
  }
  EXPECT_GT(failed, 50);
  EXPECT_GE(StatsOf(*router, dead).errors, 1u);

  // Failover: node timeout 1 s, then the replica's election; bounded.
  const absl::Time give_up = absl::Now() + absl::Seconds(40);
  bool all_ok = false;
  while (!all_ok && absl::Now() < give_up) {
    replies = router->Execute(gets);
    all_ok = true;
    for (const auto& r : replies) all_ok = all_ok && r.ok();
    if (!all_ok) absl::SleepFor(absl::Milliseconds(200));
  }
  ASSERT_TRUE(all_ok) << "no failover within 40 s: "
                      << cluster->Cli(0 == victim ? 1 : 0, {"CLUSTER", "NODES"}).value_or("?");
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(*replies[i], Value::String("v")) << keys[i];
  for (size_t i = 0; i < keys.size(); ++i) {
    if (on_victim[i]) {
      EXPECT_NE(router->SlotOwner(KeySlot(keys[i])), dead) << keys[i];
    }
  }
  EXPECT_TRUE(router->SlotMapComplete());
}

}  // namespace
}  // namespace dedupd::redis
