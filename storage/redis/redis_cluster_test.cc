// Against a real 3-master, 3-replica redis-server cluster on loopback
// (tests/testing/redis_cluster_fixture.h; ctest label `redis`): the slot
// map parsed from CLUSTER SLOTS is complete and agrees with every node,
// KeySlot agrees with CLUSTER KEYSLOT, a key written to the node the map
// names is accepted there, and a node that does not own a key answers MOVED
// naming the owner the map names.
#include <hiredis/hiredis.h>
#include <signal.h>
#include <sys/time.h>

#include <cerrno>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/redis/cluster_slots.h"
#include "tests/testing/redis_cluster_fixture.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::redis {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::RedisCluster;

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Connection = std::unique_ptr<redisContext, ContextDeleter>;
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// Generous for a loaded 2-core machine; every call is bounded by it.
constexpr timeval kIoTimeout = {10, 0};

Connection Connect(int port) {
  Connection c(redisConnectWithTimeout("127.0.0.1", port, kIoTimeout));
  if (c == nullptr || c->err != 0) {
    ADD_FAILURE() << "connect 127.0.0.1:" << port << ": " << (c ? c->errstr : "out of memory");
    return nullptr;
  }
  redisSetTimeout(c.get(), kIoTimeout);
  return c;
}

// Pipeline sends every command, then reads every reply (one round trip per
// socket buffer, not per command). Null entries where the connection failed.
std::vector<Reply> Pipeline(redisContext* c, const std::vector<std::vector<std::string>>& cmds) {
  for (const auto& cmd : cmds) {
    std::vector<const char*> argv;
    std::vector<size_t> lens;
    for (const std::string& a : cmd) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data());
  }
  std::vector<Reply> replies;
  for (size_t i = 0; i < cmds.size(); ++i) {
    void* r = nullptr;
    if (redisGetReply(c, &r) != REDIS_OK) {
      ADD_FAILURE() << "reading reply " << i << ": " << c->errstr;
      replies.emplace_back(nullptr);
      continue;
    }
    replies.emplace_back(static_cast<redisReply*>(r));
  }
  return replies;
}

Reply Command(redisContext* c, const std::vector<std::string>& cmd) {
  std::vector<Reply> replies = Pipeline(c, {cmd});
  return std::move(replies[0]);
}

int PortOf(const std::string& host_port) {
  int port = 0;
  EXPECT_TRUE(absl::SimpleAtoi(host_port.substr(host_port.rfind(':') + 1), &port)) << host_port;
  return port;
}

// ~1000 keys: URL-like keys, keys sharing hash tags (the content claim's
// `{sha256}` shape), and the brace corner cases of the specification.
std::vector<std::string> TestKeys() {
  std::mt19937_64 rng(20261205);  // fixed: the same keys every run
  std::vector<std::string> keys = {
      "foo{}{bar}", "foo{{bar}}zap",        "foo{bar}{zap}",       "{}", "{", "}{",
      "a{b",        "{user1000}.following", "{user1000}.followers"};
  for (int i = 0; i < 600; ++i) keys.push_back(absl::StrCat("u:", absl::Hex(rng())));
  for (int i = 0; i < 300; ++i) {
    keys.push_back(
        absl::StrCat("c:{", absl::Hex(rng() % 50), "}:", i % 3 == 0 ? "alias" : "owner", ":", i));
  }
  for (int i = 0; i < 100; ++i) {
    keys.push_back(absl::StrCat(absl::Hex(rng() % 7), "{", i % 4 == 0 ? "" : "t",
                                absl::Hex(rng() % 5), "}", "}{x"));
  }
  return keys;
}

class RedisClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<RedisCluster>> cluster = RedisCluster::Start({});
    ASSERT_THAT(cluster, IsOk());
    cluster_ = *std::move(cluster);
  }

  // MapFrom parses CLUSTER SLOTS as node i answers it.
  absl::StatusOr<SlotMap> MapFrom(size_t i) {
    Connection c = Connect(cluster_->port(i));
    if (c == nullptr) return absl::UnavailableError("no connection");
    Reply reply = Command(c.get(), {"CLUSTER", "SLOTS"});
    if (reply == nullptr) return absl::UnavailableError("no reply");
    return SlotMap::FromClusterSlots(*reply, "127.0.0.1");
  }

  std::unique_ptr<RedisCluster> cluster_;
};

TEST_F(RedisClusterTest, SlotMapRoutesKeysAndOtherNodesAnswerMoved) {
  ASSERT_EQ(cluster_->size(), 6u);
  absl::StatusOr<SlotMap> map = MapFrom(0);
  ASSERT_THAT(map, IsOk());
  ASSERT_TRUE(map->complete()) << map->owned_slots() << " slots owned";

  // Three masters, each with one replica, all of them our nodes; the masters
  // are the nodes that report role:master.
  const std::vector<std::string> addresses = cluster_->addresses();
  const std::set<std::string> all(addresses.begin(), addresses.end());
  std::set<std::string> masters, want_masters;
  for (size_t i = 0; i < cluster_->size(); ++i) {
    if (cluster_->started_as_master(i)) want_masters.insert(cluster_->address(i));
  }
  for (const SlotRange& r : map->ranges()) {
    masters.insert(r.master.HostPort());
    EXPECT_EQ(r.master.id.size(), 40u);
    ASSERT_EQ(r.replicas.size(), 1u)
        << "slots " << r.first << ".." << r.last << "; CLUSTER NODES at node 0:\n"
        << cluster_->Cli(0, {"CLUSTER", "NODES"}).value_or("?") << "CLUSTER SLOTS:\n"
        << cluster_->Cli(0, {"CLUSTER", "SLOTS"}).value_or("?");
    EXPECT_EQ(all.count(r.replicas[0].HostPort()), 1u) << r.replicas[0].HostPort();
  }
  EXPECT_EQ(masters, want_masters);
  EXPECT_EQ(masters.size(), 3u);

  // Every node, replicas included, answers the same map.
  for (size_t i = 1; i < cluster_->size(); ++i) {
    absl::StatusOr<SlotMap> other = MapFrom(i);
    ASSERT_THAT(other, IsOk());
    ASSERT_TRUE(other->complete()) << cluster_->address(i);
    for (int slot = 0; slot < kSlotCount; slot += 97) {
      EXPECT_EQ(other->Owner(slot)->master, map->Owner(slot)->master) << "slot " << slot;
    }
  }

  const std::vector<std::string> keys = TestKeys();
  Connection seed = Connect(cluster_->port(0));
  ASSERT_NE(seed, nullptr);

  // KeySlot == CLUSTER KEYSLOT for every key.
  std::vector<std::vector<std::string>> keyslot;
  for (const std::string& k : keys) keyslot.push_back({"CLUSTER", "KEYSLOT", k});
  std::vector<Reply> slots = Pipeline(seed.get(), keyslot);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_NE(slots[i], nullptr);
    ASSERT_EQ(slots[i]->type, REDIS_REPLY_INTEGER) << keys[i];
    EXPECT_EQ(KeySlot(keys[i]), slots[i]->integer) << keys[i];
  }

  // A SET sent to the master the map names is accepted there, and each
  // master then holds exactly the keys routed to it (a fresh cluster).
  std::map<std::string, std::vector<std::vector<std::string>>> by_master;
  std::set<std::string> distinct(keys.begin(), keys.end());
  std::map<std::string, size_t> distinct_by_master;
  for (const std::string& k : keys) {
    by_master[map->Owner(KeySlot(k))->master.HostPort()].push_back({"SET", k, "v"});
  }
  for (const std::string& k : distinct)
    ++distinct_by_master[map->Owner(KeySlot(k))->master.HostPort()];
  ASSERT_EQ(by_master.size(), 3u) << "~1000 keys should reach every master";
  for (const auto& [master, sets] : by_master) {
    Connection c = Connect(PortOf(master));
    ASSERT_NE(c, nullptr);
    std::vector<Reply> replies = Pipeline(c.get(), sets);
    for (size_t i = 0; i < sets.size(); ++i) {
      ASSERT_NE(replies[i], nullptr);
      ASSERT_EQ(replies[i]->type, REDIS_REPLY_STATUS)
          << sets[i][1] << " at " << master << ": "
          << std::string(replies[i]->str, replies[i]->len);
      EXPECT_EQ(std::string(replies[i]->str, replies[i]->len), "OK");
    }
    Reply size = Command(c.get(), {"DBSIZE"});
    ASSERT_NE(size, nullptr);
    EXPECT_EQ(size->integer, static_cast<long long>(distinct_by_master[master])) << master;
  }

  // A node that does not own the key, master or replica, answers
  // "MOVED <slot> <owner>" with the map's slot and owner.
  int moved = 0;
  for (size_t n = 0; n < cluster_->size(); ++n) {
    Connection c = Connect(cluster_->port(n));
    ASSERT_NE(c, nullptr);
    for (size_t k = 0; k < keys.size(); k += 50) {
      const SlotRange* owner = map->Owner(KeySlot(keys[k]));
      if (owner->master.HostPort() == cluster_->address(n)) continue;
      Reply reply = Command(c.get(), {"SET", keys[k], "w"});
      ASSERT_NE(reply, nullptr);
      ASSERT_EQ(reply->type, REDIS_REPLY_ERROR) << keys[k] << " at " << cluster_->address(n);
      const std::vector<std::string> words =
          absl::StrSplit(std::string(reply->str, reply->len), ' ');
      ASSERT_EQ(words.size(), 3u) << reply->str;
      EXPECT_EQ(words[0], "MOVED");
      EXPECT_EQ(words[1], absl::StrCat(KeySlot(keys[k])));
      EXPECT_EQ(words[2], owner->master.HostPort());
      ++moved;
    }
  }
  EXPECT_GT(moved, 50);
}

TEST_F(RedisClusterTest, KillNodeStopsOnlyThatProcess) {
  size_t replica = cluster_->size();
  for (size_t i = 0; i < cluster_->size(); ++i) {
    if (!cluster_->started_as_master(i)) replica = i;
  }
  ASSERT_LT(replica, cluster_->size());
  const pid_t pid = cluster_->pid(replica);
  ASSERT_THAT(cluster_->KillNode(replica), IsOk());
  EXPECT_FALSE(cluster_->running(replica));
  errno = 0;
  EXPECT_EQ(kill(pid, 0), -1);  // reaped: no such process
  EXPECT_EQ(errno, ESRCH);
  for (size_t i = 0; i < cluster_->size(); ++i) {
    if (i == replica) continue;
    absl::StatusOr<std::string> pong = cluster_->Cli(i, {"PING"});
    ASSERT_THAT(pong, IsOk());
    EXPECT_THAT(*pong, ::testing::HasSubstr("PONG"));
  }
  EXPECT_FALSE(cluster_->KillNode(replica).ok());
}

}  // namespace
}  // namespace dedupd::redis
