// The router's pure parts, without a cluster: reply conversion, redirect
// parsing, backoff bounds, splitting a batch by node on a fake slot map,
// script slots and digests, and option checks. The cluster behaviour is in
// cluster_router_redis_test.cc (ctest label `redis`).
#include "storage/redis/cluster_router.h"

#include <hiredis/hiredis.h>

#include <memory>
#include <string>
#include <vector>

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
using ::testing::IsEmpty;
using ::testing::Pair;

// ParseResp reads one reply from `resp` the way a connection does.
Value ParseResp(const std::string& resp) {
  std::unique_ptr<redisReader, void (*)(redisReader*)> reader(redisReaderCreate(),
                                                              &redisReaderFree);
  void* out = nullptr;
  EXPECT_EQ(redisReaderFeed(reader.get(), resp.data(), resp.size()), REDIS_OK);
  EXPECT_EQ(redisReaderGetReply(reader.get(), &out), REDIS_OK);
  if (out == nullptr) {
    ADD_FAILURE() << "no complete reply in " << resp;
    return Value::Nil();
  }
  Value v = ValueFromReply(*static_cast<redisReply*>(out));
  freeReplyObject(out);
  return v;
}

TEST(ValueFromReplyTest, EveryRespType) {
  struct Case {
    std::string resp;
    Value want;
  };
  const Case cases[] = {
      {"$-1\r\n", Value::Nil()},
      {"*-1\r\n", Value::Nil()},  // a nil array (e.g. BLPOP timeout)
      {":42\r\n", Value::Integer(42)},
      {":-7\r\n", Value::Integer(-7)},
      {"$3\r\nabc\r\n", Value::String("abc")},
      {"$0\r\n\r\n", Value::String("")},
      {std::string("$3\r\na\0b\r\n", 9), Value::String(std::string("a\0b", 3))},
      {"+OK\r\n", Value::Status("OK")},
      {"-NOSCRIPT No matching script.\r\n", Value::Error("NOSCRIPT No matching script.")},
      {"*0\r\n", Value::Array({})},
      {"*3\r\n$1\r\na\r\n:1\r\n*1\r\n$-1\r\n",
       Value::Array({Value::String("a"), Value::Integer(1), Value::Array({Value::Nil()})})},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ParseResp(c.resp), c.want) << c.resp;
  }
}

TEST(ValueTest, ErrorCodeIsTheFirstWordOfAnError) {
  EXPECT_EQ(Value::Error("NOSCRIPT No matching script.").ErrorCode(), "NOSCRIPT");
  EXPECT_EQ(Value::Error("WRONGTYPE Operation against a key").ErrorCode(), "WRONGTYPE");
  EXPECT_EQ(Value::Error("ERR").ErrorCode(), "ERR");
  EXPECT_EQ(Value::String("NOSCRIPT x").ErrorCode(), "");
  EXPECT_EQ(Value::Status("OK").ErrorCode(), "");
  EXPECT_TRUE(Value::Error("ERR x").is_error());
  EXPECT_FALSE(Value::Nil().is_error());
}

TEST(ParseRedirectTest, Table) {
  struct Case {
    Value reply;
    RedirectKind kind;
    int slot;
    std::string node;
  };
  const Case cases[] = {
      {Value::Error("MOVED 3999 127.0.0.1:6381"), RedirectKind::kMoved, 3999, "127.0.0.1:6381"},
      {Value::Error("ASK 3999 10.0.0.7:7000"), RedirectKind::kAsk, 3999, "10.0.0.7:7000"},
      // Redis 7's unknown endpoint: the node that answered.
      {Value::Error("MOVED 0 :6380"), RedirectKind::kMoved, 0, "10.0.0.1:6380"},
      {Value::Error("MOVED 16383 node-a.svc:6379"), RedirectKind::kMoved, 16383, "node-a.svc:6379"},
      {Value::Error("TRYAGAIN Multiple keys request during rehashing of slot"),
       RedirectKind::kTryAgain, -1, ""},
      {Value::Error("CLUSTERDOWN The cluster is down"), RedirectKind::kClusterDown, -1, ""},
      {Value::Error("CLUSTERDOWN Hash slot not served"), RedirectKind::kClusterDown, -1, ""},
      // Not redirects: handled by the caller as replies.
      {Value::Error("NOSCRIPT No matching script."), RedirectKind::kNone, -1, ""},
      {Value::Error("ERR unknown command"), RedirectKind::kNone, -1, ""},
      {Value::String("MOVED 1 127.0.0.1:1"), RedirectKind::kNone, -1, ""},
      {Value::Status("OK"), RedirectKind::kNone, -1, ""},
      // Malformed MOVED/ASK: left as error replies.
      {Value::Error("MOVED 16384 127.0.0.1:1"), RedirectKind::kNone, -1, ""},
      {Value::Error("MOVED x 127.0.0.1:1"), RedirectKind::kNone, -1, ""},
      {Value::Error("MOVED 1 127.0.0.1"), RedirectKind::kNone, -1, ""},
      {Value::Error("ASK 1 127.0.0.1:0"), RedirectKind::kNone, -1, ""},
      {Value::Error("MOVED 1"), RedirectKind::kNone, -1, ""},
  };
  for (const Case& c : cases) {
    const Redirect r = ParseRedirect(c.reply, "10.0.0.1");
    EXPECT_EQ(r.kind, c.kind) << c.reply;
    EXPECT_EQ(r.slot, c.slot) << c.reply;
    EXPECT_EQ(r.node, c.node) << c.reply;
  }
}

TEST(BackoffDelayTest, WithinHalfToFullOfTheCappedExponential) {
  const absl::Duration base = absl::Milliseconds(20);
  const absl::Duration cap = absl::Milliseconds(500);
  for (int retry = 0; retry < 40; ++retry) {
    absl::Duration d = base;
    for (int i = 0; i < retry && d < cap; ++i) d *= 2;
    d = std::min(d, cap);
    for (double unit : {0.0, 0.25, 0.5, 0.999999, 1.0}) {
      const absl::Duration wait = BackoffDelay(retry, base, cap, unit);
      EXPECT_GE(wait, d / 2) << retry << " " << unit;
      EXPECT_LE(wait, d) << retry << " " << unit;
      EXPECT_LE(wait, cap);
    }
  }
  EXPECT_EQ(BackoffDelay(0, base, cap, 0), absl::Milliseconds(10));
  EXPECT_EQ(BackoffDelay(1, base, cap, 1), absl::Milliseconds(40));
  EXPECT_EQ(BackoffDelay(1000, base, cap, 0), absl::Milliseconds(250));  // no overflow
  EXPECT_EQ(BackoffDelay(3, base, cap, -5), absl::Milliseconds(80));     // unit clamped
}

// A fake map: slots 0..5460 at :7000, 5461..10922 at :7001, the rest owned
// by a master whose endpoint is unknown ("?").
SlotMap FakeMap() {
  const auto range = [](int first, int last, const std::string& host, int port) {
    return absl::StrCat("*3\r\n:", first, "\r\n:", last, "\r\n*2\r\n$", host.size(), "\r\n", host,
                        "\r\n:", port, "\r\n");
  };
  const std::string resp =
      absl::StrCat("*3\r\n", range(0, 5460, "127.0.0.1", 7000),
                   range(5461, 10922, "127.0.0.1", 7001), range(10923, 16383, "?", 7002));
  absl::StatusOr<SlotMap> map = SlotMap::FromClusterSlotsResp(resp, "127.0.0.1");
  EXPECT_THAT(map, IsOk());
  return map.ok() ? *std::move(map) : SlotMap();
}

TEST(GroupByNodeTest, SplitsByOwnerKeepingOrderAndReportsUnowned) {
  const SlotMap map = FakeMap();
  ASSERT_FALSE(map.complete());
  std::vector<size_t> unowned;
  const auto groups = GroupByNode(map, {0, 16383, 5461, 5460, 10922, 10923, 1}, &unowned);
  EXPECT_THAT(groups, ElementsAre(Pair("127.0.0.1:7000", ElementsAre(0u, 3u, 6u)),
                                  Pair("127.0.0.1:7001", ElementsAre(2u, 4u))));
  EXPECT_THAT(unowned, ElementsAre(1u, 5u));

  unowned.clear();
  EXPECT_THAT(GroupByNode(map, {}, &unowned), IsEmpty());
  EXPECT_THAT(unowned, IsEmpty());
}

TEST(CommandTest, RoutesByKeyUnlessASlotIsGiven) {
  EXPECT_EQ(Command::ForKey("{user1000}.following", {"GET", "x"}).RoutingSlot(), 3443);
  EXPECT_EQ(Command::ForSlot(77, {"PING"}).RoutingSlot(), 77);
}

TEST(ScriptSlotTest, KeysMustShareASlot) {
  EXPECT_THAT(ScriptSlot({}), IsOk());
  EXPECT_EQ(*ScriptSlot({}), 0);
  EXPECT_EQ(*ScriptSlot({"{user1000}.following", "{user1000}.followers"}), 3443);
  EXPECT_EQ(*ScriptSlot({"foo"}), 12182);
  EXPECT_THAT(ScriptSlot({"{a}x", "{b}x"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("hash tag")));
  EXPECT_THAT(ScriptSlot({"{a}1", "{a}2", "a3"}), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(ScriptTest, Sha1IsWhatScriptLoadAnswers) {
  // SCRIPT LOAD "return 1" answers this digest.
  EXPECT_EQ(Script("return 1").sha1(), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
  EXPECT_EQ(Script("").sha1(), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(Script("return 1").source(), "return 1");
}

TEST(ClusterRouterConnectTest, RejectsBadOptions) {
  RouterOptions options;
  EXPECT_THAT(ClusterRouter::Connect(options), StatusIs(absl::StatusCode::kInvalidArgument));
  for (const char* seed : {"127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", ":6379", "host:x"}) {
    options.seeds = {seed};
    EXPECT_THAT(ClusterRouter::Connect(options),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(seed)));
  }
  options.seeds = {"127.0.0.1:6379"};
  options.max_attempts = 0;
  EXPECT_THAT(ClusterRouter::Connect(options), StatusIs(absl::StatusCode::kInvalidArgument));
  options.max_attempts = 5;
  options.tls.ca_pem = "-----BEGIN CERTIFICATE-----";
  EXPECT_THAT(ClusterRouter::Connect(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("without TLS enabled")));
  options.tls.enabled = true;
  EXPECT_THAT(ClusterRouter::Connect(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no PEM certificate")));
}

TEST(ClusterRouterConnectTest, NoReachableSeedIsUnavailableNamingIt) {
  RouterOptions options;
  // Port 1 on loopback: nothing listens there (a privileged port no test
  // binds), so the connect is refused at once.
  options.seeds = {"127.0.0.1:1"};
  EXPECT_THAT(ClusterRouter::Connect(options),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr("redis node 127.0.0.1:1: connection refused")));
}

}  // namespace
}  // namespace dedupd::redis
