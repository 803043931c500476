#include "storage/redis/cluster_slots.h"

#include <hiredis/hiredis.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::redis {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::Pair;

TEST(Crc16Test, SpecificationVector) {
  // Redis Cluster specification, Appendix A: "123456789" -> 0x31C3.
  EXPECT_EQ(Crc16("123456789"), 0x31C3);
  EXPECT_EQ(Crc16(""), 0);
}

TEST(HashTagTest, SpecificationTable) {
  EXPECT_EQ(HashTag("{user1000}.following"), "user1000");
  EXPECT_EQ(HashTag("{user1000}.followers"), "user1000");
  EXPECT_EQ(HashTag("foo{}{bar}"), "foo{}{bar}");  // empty tag: whole key
  EXPECT_EQ(HashTag("foo{{bar}}zap"), "{bar");     // first '{', first '}' after it
  EXPECT_EQ(HashTag("foo{bar}{zap}"), "bar");      // only the first tag
  EXPECT_EQ(HashTag("no tag"), "no tag");
  EXPECT_EQ(HashTag("a{b"), "a{b");   // no '}'
  EXPECT_EQ(HashTag("a}b{c}"), "c");  // a '}' before the '{' does not count
  EXPECT_EQ(HashTag("{}"), "{}");
}

// Slots answered by `CLUSTER KEYSLOT` of redis-server 7.0.15; the cluster
// test compares ~1000 more keys against a live node.
TEST(KeySlotTest, MatchesRedis) {
  struct Case {
    const char* key;
    uint16_t slot;
  };
  const Case cases[] = {
      {"foo", 12182},
      {"bar", 5061},
      {"hello", 866},
      {"123456789", 12739},
      {"", 0},
      {"{user1000}.following", 3443},
      {"{user1000}.followers", 3443},
      {"foo{}{bar}", 8363},
      {"foo{{bar}}zap", 4015},
      {"{bar", 4015},
      {"foo{bar}{zap}", 5061},
      {"{}", 15257},
      {"a{b", 13340},
      {"a}b{c}", 7365},
      {"user:{}", 6865},
  };
  for (const Case& c : cases) EXPECT_EQ(KeySlot(c.key), c.slot) << c.key;
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("{user1000}.followers"));
  EXPECT_EQ(KeySlot("foo{bar}{zap}"), KeySlot("bar"));
}

// Parse reads one RESP reply with hiredis's own reader, as a connection would.
struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
std::unique_ptr<redisReply, ReplyDeleter> Parse(const std::string& resp) {
  redisReader* reader = redisReaderCreate();
  redisReaderFeed(reader, resp.data(), resp.size());
  void* reply = nullptr;
  const int rc = redisReaderGetReply(reader, &reply);
  redisReaderFree(reader);
  EXPECT_EQ(rc, REDIS_OK);
  EXPECT_NE(reply, nullptr) << "incomplete RESP: " << resp;
  return std::unique_ptr<redisReply, ReplyDeleter>(static_cast<redisReply*>(reply));
}

std::string Node(const std::string& host, int port, const std::string& id) {
  return absl::StrCat("*3\r\n$", host.size(), "\r\n", host, "\r\n:", port, "\r\n$", id.size(),
                      "\r\n", id, "\r\n");
}
std::string Range(int first, int last, const std::string& master, const std::string& replica = "") {
  return absl::StrCat("*", replica.empty() ? 3 : 4, "\r\n:", first, "\r\n:", last, "\r\n", master,
                      replica);
}

TEST(SlotMapTest, ThreeMastersWithReplicasAreComplete) {
  const std::string resp =
      "*3\r\n" + Range(10923, 16383, Node("127.0.0.1", 7002, "c"), Node("127.0.0.1", 7005, "f")) +
      Range(0, 5460, Node("127.0.0.1", 7000, "a"), Node("127.0.0.1", 7003, "d")) +
      Range(5461, 10922, Node("127.0.0.1", 7001, "b"), Node("127.0.0.1", 7004, "e"));
  auto reply = Parse(resp);
  absl::StatusOr<SlotMap> map = SlotMap::FromClusterSlots(*reply, "127.0.0.1");
  ASSERT_THAT(map, IsOk());
  EXPECT_TRUE(map->complete());
  EXPECT_EQ(map->owned_slots(), kSlotCount);
  EXPECT_TRUE(map->UnownedRanges().empty());
  ASSERT_EQ(map->ranges().size(), 3u);
  EXPECT_EQ(map->ranges()[0].first, 0);  // sorted by slot
  EXPECT_EQ(map->Owner(0)->master.HostPort(), "127.0.0.1:7000");
  EXPECT_EQ(map->Owner(5460)->master.port, 7000);
  EXPECT_EQ(map->Owner(5461)->master.port, 7001);
  EXPECT_EQ(map->Owner(16383)->master.id, "c");
  ASSERT_EQ(map->Owner(16383)->replicas.size(), 1u);
  EXPECT_EQ(map->Owner(16383)->replicas[0].port, 7005);
  EXPECT_EQ(map->Owner(KeySlot("foo"))->master.port, 7002);  // 12182
}

TEST(SlotMapTest, RespBytesAreExactlyOneReply) {
  const std::string resp = "*1\r\n" + Range(0, 16383, Node("127.0.0.1", 7000, "a"));
  absl::StatusOr<SlotMap> map = SlotMap::FromClusterSlotsResp(resp, "127.0.0.1");
  ASSERT_THAT(map, IsOk());
  EXPECT_TRUE(map->complete());
  EXPECT_EQ(map->Owner(KeySlot("foo"))->master.port, 7000);
  EXPECT_THAT(SlotMap::FromClusterSlotsResp(resp.substr(0, resp.size() - 3), "h"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("truncated")));
  EXPECT_THAT(SlotMap::FromClusterSlotsResp(resp + "+OK\r\n", "h"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("5 bytes after the reply")));
  EXPECT_THAT(SlotMap::FromClusterSlotsResp("!junk\r\n", "h"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not the Redis protocol")));
  EXPECT_THAT(SlotMap::FromClusterSlotsResp("-CLUSTERDOWN The cluster is down\r\n", "h"),
              StatusIs(absl::StatusCode::kUnavailable));
}

// An array header claiming more elements than the bytes after it could
// hold is refused before hiredis's reader allocates its element vector (a
// fuzzer found "*1636210922" asking for 13 GB).
TEST(SlotMapTest, ArrayCountsBeyondTheInputAreRefusedBeforeAllocating) {
  const struct {
    std::string resp;
    std::string error;  // empty: accepted by the count check
  } cases[] = {
      {"*1636210922\r\n", "an array of 1636210922 elements in 0 bytes"},
      {"*1\r\n*3\r\n:0\r\n:1\r\n*999999999\r\n$9\r\n127.0.0.1\r\n",
       "an array of 999999999 elements in 15 bytes"},
      {"*2\r\n:1\r\n", "an array of 2 elements in 4 bytes"},  // 2 x 3 > 4
      // A '*' inside a bulk string is data, not a header.
      {"$12\r\n*99999999999\r\n", ""},
  };
  for (const auto& c : cases) {
    absl::StatusOr<SlotMap> map = SlotMap::FromClusterSlotsResp(c.resp, "h");
    if (c.error.empty()) {
      EXPECT_THAT(map.status().message(), Not(HasSubstr("elements in"))) << c.resp;
    } else {
      EXPECT_THAT(map, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.error))) << c.resp;
    }
  }
}

TEST(SlotMapTest, ReportsSlotsWithoutOwner) {
  const std::string resp = "*2\r\n" + Range(0, 99, Node("10.0.0.1", 6379, "a")) +
                           Range(200, 16000, Node("10.0.0.2", 6379, "b"));
  auto reply = Parse(resp);
  absl::StatusOr<SlotMap> map = SlotMap::FromClusterSlots(*reply, "10.0.0.1");
  ASSERT_THAT(map, IsOk());
  EXPECT_FALSE(map->complete());
  EXPECT_EQ(map->owned_slots(), 100 + 15801);
  EXPECT_EQ(map->Owner(100), nullptr);
  EXPECT_EQ(map->Owner(16383), nullptr);
  EXPECT_THAT(map->UnownedRanges(), ElementsAre(Pair(100, 199), Pair(16001, 16383)));
}

TEST(SlotMapTest, EmptyReplyOwnsNothing) {
  auto reply = Parse("*0\r\n");
  absl::StatusOr<SlotMap> map = SlotMap::FromClusterSlots(*reply, "h");
  ASSERT_THAT(map, IsOk());
  EXPECT_EQ(map->owned_slots(), 0);
  EXPECT_THAT(map->UnownedRanges(), ElementsAre(Pair(0, kSlotCount - 1)));
}

TEST(SlotMapTest, EmptyHostIsTheAskedNodeAndUnknownHostOwnsNothing) {
  const std::string resp = "*2\r\n" + Range(0, 8191, Node("", 7000, "a"), Node("?", 7003, "d")) +
                           Range(8192, 16383, Node("?", 7001, "b"));
  auto reply = Parse(resp);
  absl::StatusOr<SlotMap> map = SlotMap::FromClusterSlots(*reply, "10.1.2.3");
  ASSERT_THAT(map, IsOk());
  EXPECT_EQ(map->Owner(0)->master.HostPort(), "10.1.2.3:7000");
  EXPECT_TRUE(map->Owner(0)->replicas.empty());
  EXPECT_EQ(map->Owner(8192), nullptr);
  EXPECT_THAT(map->UnownedRanges(), ElementsAre(Pair(8192, 16383)));
}

TEST(SlotMapTest, Redis7NodeMetadataIsIgnored) {
  // Redis 7 appends a list of networking metadata (e.g. hostname) per node.
  const std::string node =
      "*4\r\n$9\r\n127.0.0.1\r\n:7000\r\n$1\r\na\r\n*2\r\n$8\r\nhostname\r\n$2\r\nh1\r\n";
  auto reply = Parse("*1\r\n*3\r\n:0\r\n:16383\r\n" + node);
  absl::StatusOr<SlotMap> map = SlotMap::FromClusterSlots(*reply, "x");
  ASSERT_THAT(map, IsOk());
  EXPECT_TRUE(map->complete());
  EXPECT_EQ(map->Owner(42)->master.HostPort(), "127.0.0.1:7000");
}

TEST(SlotMapTest, ErrorRepliesByCallerAction) {
  auto disabled = Parse("-ERR This instance has cluster support disabled\r\n");
  EXPECT_THAT(SlotMap::FromClusterSlots(*disabled, "h:1"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a cluster node")));
  auto loading = Parse("-LOADING Redis is loading the dataset in memory\r\n");
  EXPECT_THAT(SlotMap::FromClusterSlots(*loading, "h:1"),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("LOADING")));
}

TEST(SlotMapTest, RejectsMalformedReplies) {
  const std::string a = Node("h", 1, "a");
  const std::string bad[] = {
      ":1\r\n",                                                   // not an array
      "*1\r\n*2\r\n:0\r\n:5\r\n",                                 // no master
      "*1\r\n" + Range(5, 4, a),                                  // backwards
      "*1\r\n" + Range(0, 16384, a),                              // past the last slot
      "*1\r\n" + Range(-1, 3, a),                                 // negative
      "*2\r\n" + Range(0, 10, a) + Range(10, 20, a),              // overlap
      "*1\r\n" + Range(0, 1, "*2\r\n$1\r\nh\r\n:0\r\n"),          // port 0
      "*1\r\n" + Range(0, 1, "*2\r\n$1\r\nh\r\n$4\r\n6379\r\n"),  // port not an integer
      "*1\r\n" + Range(0, 1, "*1\r\n$1\r\nh\r\n"),                // no port
      "*1\r\n*3\r\n$1\r\n0\r\n:1\r\n" + a,                        // slot not an integer
  };
  for (const std::string& resp : bad) {
    auto reply = Parse(resp);
    EXPECT_THAT(SlotMap::FromClusterSlots(*reply, "h"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("CLUSTER SLOTS reply")))
        << resp;
  }
}

}  // namespace
}  // namespace dedupd::redis
