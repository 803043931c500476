// RedisUrlStore against a real 3-master, 3-replica redis-server cluster on
// loopback (tests/testing/redis_cluster_fixture.h; ctest label `redis`):
// the URL store conformance suite (its concurrency tests racing two front
// ends over one cluster), the Lua script held to the URL planner on random records, the
// meta record (written once, refused when foreign or of another version),
// golden keys and values, WAIT for replicas, and per-key failures of a
// killed and of a hung (SIGSTOP) master.
//
// One cluster serves every case but the killed and hung masters' (each
// starts its own; started on first use, about 7 s; the binary is one ctest
// test); each case works under a key prefix of its own, so no case sees
// another's records.
#include "storage/redis/redis_url_store.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/plan/url_planner.h"
#include "storage/redis/cluster_slots.h"
#include "storage/redis/redis_store_test_util.h"
#include "storage/testing/url_store_conformance.h"
#include "storage/url_value.h"
#include "tests/testing/redis_cluster_fixture.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::redis::Command;
using ::dedupd::redis::Value;
using ::dedupd::testing::IsOk;
using ::dedupd::testing::RedisCluster;
using ::dedupd::testing::SharedCluster;
using ::dedupd::testing::StatusIs;
using ::dedupd::testing::TestUrlStoreOptions;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// A key prefix no other case of this process uses.
std::string FreshPrefix() { return testing::FreshKeyPrefix("t"); }

absl::StatusOr<std::unique_ptr<RedisUrlStore>> OpenFresh() {
  return testing::OpenSharedClusterUrlStore(FreshPrefix());
}

// Two front ends (two stores, two routers) on one fresh key prefix: the
// conformance suite's concurrency tests race them against each other.
class RedisHarness : public testing::UrlStoreHarness {
 public:
  static absl::StatusOr<std::unique_ptr<testing::UrlStoreHarness>> Make() {
    RedisCluster* cluster = SharedCluster();
    if (cluster == nullptr) return absl::FailedPreconditionError("no Redis cluster");
    const std::string prefix = FreshPrefix();
    auto harness = std::make_unique<RedisHarness>();
    for (std::unique_ptr<RedisUrlStore>* store : {&harness->first_, &harness->second_}) {
      absl::StatusOr<std::unique_ptr<RedisUrlStore>> opened =
          RedisUrlStore::Open(TestUrlStoreOptions(*cluster, prefix));
      if (!opened.ok()) return opened.status();
      *store = *std::move(opened);
    }
    return harness;
  }
  UrlStore& store() override { return *first_; }
  UrlStore* second_front_end() override { return second_.get(); }

 private:
  std::unique_ptr<RedisUrlStore> first_, second_;
};

using ::dedupd::testing::UrlStoreConformanceTest;
INSTANTIATE_TEST_SUITE_P(Redis, UrlStoreConformanceTest,
                         ::testing::Values(testing::UrlStoreBackend{"Redis", &RedisHarness::Make}),
                         testing::UrlStoreBackendName);

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

std::string Hex(absl::string_view bytes) { return absl::BytesToHexString(bytes); }

// Get returns the raw value of `key` ("" for none).
std::string Get(RedisUrlStore& store, const std::string& key) {
  absl::StatusOr<Value> v = store.router().ExecuteOne(Command::ForKey(key, {"GET", key}));
  EXPECT_THAT(v, IsOk());
  return v.ok() ? v->str : "";
}

void Set(RedisUrlStore& store, const std::string& key, const std::string& value) {
  absl::StatusOr<Value> v = store.router().ExecuteOne(Command::ForKey(key, {"SET", key, value}));
  ASSERT_THAT(v, IsOk());
  ASSERT_EQ(*v, Value::Status("OK"));
}

// The golden values of docs/storage_format.md ("URL record"), which
// docs/redis_format.md adopts, read back raw from the cluster under the
// documented key names.
TEST(RedisUrlStoreTest, KeysAndValuesAreGolden) {
  RedisCluster* cluster = SharedCluster();
  ASSERT_NE(cluster, nullptr);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> store,
                       RedisUrlStore::Open(TestUrlStoreOptions(*cluster, "golden:")));
  const absl::Time f = absl::FromUnixMicros(1'700'000'000'123'456);
  std::vector<UrlClaim> out;
  UrlClaimOptions leased_1s;
  leased_1s.lease = absl::Seconds(1);
  UrlClaimOptions reclaim;
  reclaim.claim_id_hash = 0x0102030405060708;
  reclaim.lease = absl::Seconds(60);
  UrlClaimOptions leased_61s;
  leased_61s.lease = absl::Seconds(61);
  const std::vector<absl::Duration> one_second = {absl::Seconds(1)};
  UrlClaimOptions revisit;
  revisit.revisit_after = one_second;
  ASSERT_THAT(store->ClaimUrls({"http://a/", "http://d/"}, f, &out), IsOk());
  ASSERT_THAT(store->Claim(leased_1s, {"http://c/"}, f, &out), IsOk());
  ASSERT_THAT(store->Claim(leased_61s, {"http://b/"}, f, &out), IsOk());
  ASSERT_THAT(store->Claim(reclaim, {"http://c/"}, f + absl::Seconds(1), &out), IsOk());
  ASSERT_TRUE(out[0].reclaimed);
  ASSERT_THAT(store->Claim(revisit, {"http://d/"}, f + absl::Seconds(1), &out), IsOk());
  ASSERT_TRUE(out[0].due);

  EXPECT_EQ(Hex(Get(*store, "golden:u::{694bd104}http://a/")),
            "01"
            "00060a2418202240");
  EXPECT_EQ(Hex(Get(*store, redis::UrlRecordKey("golden:", "", "http://b/"))),
            "02"
            "04"
            "00060a2418202240"
            "00060a241bc2eb80");
  EXPECT_EQ(Hex(Get(*store, redis::UrlRecordKey("golden:", "", "http://c/"))),
            "02"
            "0f"
            "00060a2418202240"
            "00060a24182f6480"
            "0102030405060708"
            "00060a241bc2eb80");
  EXPECT_EQ(Hex(Get(*store, redis::UrlRecordKey("golden:", "", "http://d/"))),
            "02"
            "11"
            "00060a2418202240"
            "00060a24182f6480");
  EXPECT_THAT(Get(*store, "golden:meta"),
              StartsWith(absl::StrCat(
                  "dedupd-redis format=2 url_normalizer=1 text_normalizer=1 "
                  "simhash=2 minhash=1 simhash_max_distance=3 shingle_words=3 created_us=")));
  // The server agrees with KeySlot on the documented keys, braces in URLs
  // included.
  for (const std::string& key :
       {std::string("golden:u::{694bd104}http://a/"),
        redis::UrlRecordKey("g:", "n", "http://a/{b}"), std::string("golden:meta")}) {
    absl::StatusOr<Value> slot =
        store->router().ExecuteOne(Command::ForSlot(0, {"CLUSTER", "KEYSLOT", key}));
    ASSERT_THAT(slot, IsOk());
    EXPECT_EQ(*slot, Value::Integer(redis::KeySlot(key))) << key;
  }
}

TEST(RedisUrlStoreTest, AnEmptyPrefixGetsItsMetaOnceAndAgreeingStoresOpen) {
  RedisCluster* cluster = SharedCluster();
  ASSERT_NE(cluster, nullptr);
  const std::string prefix = FreshPrefix();
  // Four front ends open the empty prefix at once: one SET NX wins, the
  // others read and check it.
  std::vector<absl::Status> opened(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < opened.size(); ++t) {
    threads.emplace_back([&, t] {
      opened[t] = RedisUrlStore::Open(TestUrlStoreOptions(*cluster, prefix)).status();
    });
  }
  for (std::thread& th : threads) th.join();
  for (const absl::Status& s : opened) EXPECT_THAT(s, IsOk());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> store,
                       RedisUrlStore::Open(TestUrlStoreOptions(*cluster, prefix)));
  ASSERT_OK_AND_ASSIGN(redis::RedisMeta meta,
                       redis::DecodeRedisMeta(Get(*store, redis::MetaKey(prefix))));
  EXPECT_THAT(redis::CheckRedisMeta(meta, redis::RedisMeta::ThisBuild(absl::Now())), IsOk());
  EXPECT_LE(meta.created, absl::Now());
}

TEST(RedisUrlStoreTest, AMetaOfAnotherFormatOrVersionOrProgramIsRefused) {
  RedisCluster* cluster = SharedCluster();
  ASSERT_NE(cluster, nullptr);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> store, OpenFresh());

  const std::string future = FreshPrefix();
  Set(*store, redis::MetaKey(future), "dedupd-redis format=3 url_normalizer=1 shards=9");
  EXPECT_THAT(RedisUrlStore::Open(TestUrlStoreOptions(*cluster, future)).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(absl::StrCat("redis meta record \"", future,
                                              "meta\": the cluster holds dedupd Redis format 3; "
                                              "this build reads formats 1 and 2"))));

  const std::string other_distance = FreshPrefix();
  ASSERT_THAT(RedisUrlStore::Open(TestUrlStoreOptions(*cluster, other_distance)).status(), IsOk());
  RedisUrlStoreOptions wider = TestUrlStoreOptions(*cluster, other_distance);
  wider.meta.simhash_max_distance = 4;
  EXPECT_THAT(RedisUrlStore::Open(wider).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("written for simhash_max_distance 3; this store uses 4")));

  const std::string foreign = FreshPrefix();
  Set(*store, redis::MetaKey(foreign), "somebody else's data");
  EXPECT_THAT(
      RedisUrlStore::Open(TestUrlStoreOptions(*cluster, foreign)).status(),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("not a dedupd meta record")));

  const std::string other_simhash = FreshPrefix();
  ASSERT_THAT(RedisUrlStore::Open(TestUrlStoreOptions(*cluster, other_simhash)).status(), IsOk());
  RedisUrlStoreOptions newer = TestUrlStoreOptions(*cluster, other_simhash);
  newer.meta.simhash_version += 1;
  EXPECT_THAT(RedisUrlStore::Open(newer).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr(absl::StrCat("written with SimHash version ",
                                              newer.meta.simhash_version - 1))));
}

// A format-1 prefix (URL records only, written by an earlier build) is
// upgraded in place: its meta is rewritten, its URL records are kept.
// Several front ends upgrading at once all open; one of another algorithm
// version is refused and upgrades nothing.
TEST(RedisUrlStoreTest, AFormatOnePrefixIsUpgradedInPlace) {
  RedisCluster* cluster = SharedCluster();
  ASSERT_NE(cluster, nullptr);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> store, OpenFresh());
  const std::string prefix = FreshPrefix();
  redis::RedisMeta v1 = redis::RedisMeta::ThisBuild(absl::FromUnixMicros(1'700'000'000'123'456));
  v1.format_version = redis::kRedisFormatVersionUrlsOnly;
  const std::string v1_value = redis::EncodeRedisMeta(v1);
  ASSERT_THAT(v1_value, Not(HasSubstr("simhash_max_distance")));
  Set(*store, redis::MetaKey(prefix), v1_value);
  Set(*store, redis::UrlRecordKey(prefix, "", "http://old/"),
      EncodeUrlValue(absl::FromUnixMicros(1'700'000'000'123'456)));

  RedisUrlStoreOptions other = TestUrlStoreOptions(*cluster, prefix);
  other.meta.minhash_version += 1;
  EXPECT_THAT(RedisUrlStore::Open(other).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("MinHash version")));
  EXPECT_EQ(Get(*store, redis::MetaKey(prefix)), v1_value);

  std::vector<absl::Status> opened(3);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < opened.size(); ++t) {
    threads.emplace_back([&, t] {
      opened[t] = RedisUrlStore::Open(TestUrlStoreOptions(*cluster, prefix)).status();
    });
  }
  for (std::thread& th : threads) th.join();
  for (const absl::Status& s : opened) EXPECT_THAT(s, IsOk());
  ASSERT_OK_AND_ASSIGN(redis::RedisMeta meta,
                       redis::DecodeRedisMeta(Get(*store, redis::MetaKey(prefix))));
  EXPECT_EQ(meta.format_version, redis::kRedisFormatVersion);
  EXPECT_EQ(meta.simhash_max_distance, 3);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> upgraded,
                       RedisUrlStore::Open(TestUrlStoreOptions(*cluster, prefix)));
  std::vector<std::optional<absl::Time>> seen;
  ASSERT_THAT(upgraded->LookupUrls({"http://old/"}, &seen), IsOk());
  EXPECT_EQ(seen[0], absl::FromUnixMicros(1'700'000'000'123'456));
}

TEST(RedisUrlStoreTest, BadOptionsAreInvalidArgument) {
  RedisCluster* cluster = SharedCluster();
  ASSERT_NE(cluster, nullptr);
  EXPECT_THAT(RedisUrlStore::Open(TestUrlStoreOptions(*cluster, "a{b}:")).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("key prefix")));
  RedisUrlStoreOptions negative = TestUrlStoreOptions(*cluster, "x:");
  negative.min_replicas_acked = -1;
  EXPECT_THAT(RedisUrlStore::Open(negative).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("min_replicas_acked")));
  RedisUrlStoreOptions long_wait = TestUrlStoreOptions(*cluster, "x:");
  long_wait.min_replicas_acked = 1;
  long_wait.replica_ack_timeout = long_wait.router.command_timeout;
  EXPECT_THAT(RedisUrlStore::Open(long_wait).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("replica_ack_timeout")));
}

// A value that is not a URL value is DataLoss naming its key, and is left
// as it was.
TEST(RedisUrlStoreTest, ACorruptValueIsDataLossAndLeftAlone) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> store, OpenFresh());
  const std::string key = redis::UrlRecordKey(store->key_prefix(), "", "http://bad/");
  for (const std::string& bad : {std::string("\x03xyz"), std::string("\x01\x00", 2),
                                 std::string("\x02\x00") + std::string(8, 'a')}) {
    Set(*store, key, bad);
    std::vector<UrlClaim> out;
    EXPECT_THAT(store->ClaimUrls({"http://ok/", "http://bad/"}, T(1), &out),
                StatusIs(absl::StatusCode::kDataLoss, HasSubstr("http://bad/")));
    std::vector<UrlCompletion> done;
    EXPECT_THAT(store->Complete("", 0, {"http://bad/"}, &done),
                StatusIs(absl::StatusCode::kDataLoss));
    std::vector<std::optional<absl::Time>> found;
    EXPECT_THAT(store->LookupUrls({"http://bad/"}, &found), StatusIs(absl::StatusCode::kDataLoss));
    EXPECT_EQ(Get(*store, key), bad);
  }
  // Another program's hash at a URL key: WRONGTYPE, DataLoss too.
  ASSERT_THAT(store->router().ExecuteOne(Command::ForKey(key, {"DEL", key})), IsOk());
  ASSERT_THAT(store->router().ExecuteOne(Command::ForKey(key, {"HSET", key, "f", "v"})), IsOk());
  std::vector<UrlClaim> out;
  EXPECT_THAT(store->ClaimUrls({"http://bad/"}, T(1), &out),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("WRONGTYPE")));
}

UrlRecord RandomRecord(std::mt19937_64& rng, absl::Time base) {
  std::uniform_int_distribution<int> secs(-100, 100), pick(0, 3);
  UrlRecord r;
  r.first_seen = base + absl::Seconds(secs(rng));
  r.last_claim = pick(rng) == 0 ? r.first_seen : r.first_seen + absl::Seconds(secs(rng) + 100);
  r.last_kind = static_cast<UrlClaimKind>(pick(rng) % 3);
  const uint64_t ids[] = {0, ClaimIdHash("w1"), ClaimIdHash("w2"), 0xff00000000000001};
  r.claim_id_hash = ids[pick(rng)];
  if (pick(rng) < 2) r.lease_until = base + absl::Seconds(secs(rng));
  return r;
}

bool SameClaim(const UrlClaim& a, const UrlClaim& b) {
  return a.is_new == b.is_new && a.due == b.due && a.reclaimed == b.reclaimed &&
         a.first_seen == b.first_seen && a.last_claim == b.last_claim &&
         a.lease_until == b.lease_until;
}

// The Lua scripts decide what PlanUrlClaim and PlanUrlComplete decide, on
// random records (every lease, claim id and kind; times before the epoch
// and at the cutoffs) and random options. The store itself checks every
// write against the planner (Internal on disagreement); this also checks
// the answers and the records left.
TEST(RedisUrlStoreTest, TheLuaScriptsDecideWhatThePlannerDecides) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> store, OpenFresh());
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<int> secs(-100, 100), pick(0, 3);
  const absl::Time base = absl::FromUnixMicros(-5'000'000) + absl::Nanoseconds(700);
  for (int i = 0; i < 400; ++i) {
    SCOPED_TRACE(i);
    const std::string url = absl::StrCat("http://case/", i);
    const std::string key = redis::UrlRecordKey(store->key_prefix(), "p", url);
    std::optional<UrlRecord> stored;
    if (pick(rng) != 0) {
      const std::string value = EncodeUrlRecord(RandomRecord(rng, base));
      ASSERT_OK_AND_ASSIGN(stored, DecodeUrlRecord(value));  // times in whole microseconds
      Set(*store, key, value);
    }
    const std::string ids[] = {"", "w1", "w2", "w3"};
    UrlClaimOptions o;
    o.name_space = "p";
    o.claim_id_hash = ClaimIdHash(ids[pick(rng)]);
    o.claim_id_retention = pick(rng) == 0 ? absl::InfiniteDuration()
                                          : absl::Seconds(50) + absl::Nanoseconds(pick(rng) * 300);
    o.lease = absl::Seconds(pick(rng) * 10);
    const absl::Duration revisit_options[] = {absl::InfiniteDuration(), absl::Seconds(30),
                                              absl::Seconds(30) + absl::Nanoseconds(1),
                                              absl::ZeroDuration()};
    const std::vector<absl::Duration> revisit = {revisit_options[pick(rng)]};
    o.revisit_after = revisit;
    const absl::Time now =
        base + absl::Seconds(secs(rng) + 50) + absl::Nanoseconds(pick(rng) * 400);

    if (pick(rng) == 0) {  // a confirmation instead
      const uint64_t id = ClaimIdHash(ids[pick(rng)]);
      const UrlCompletePlan want = PlanUrlComplete(stored, id);
      std::vector<UrlCompletion> done;
      ASSERT_THAT(store->Complete("p", id, {url}, &done), IsOk());
      EXPECT_EQ(done[0], want.outcome);
      const std::optional<UrlRecord> left = want.write.has_value() ? want.write : stored;
      EXPECT_EQ(Hex(Get(*store, key)), left.has_value() ? Hex(EncodeUrlRecord(*left)) : "");
      continue;
    }
    const UrlPlan want = PlanUrlClaim(stored, o, revisit[0], now);
    std::vector<UrlClaim> out;
    ASSERT_THAT(store->Claim(o, {url}, now, &out), IsOk());
    EXPECT_TRUE(SameClaim(out[0], want.answer))
        << "is_new " << out[0].is_new << " due " << out[0].due << " reclaimed " << out[0].reclaimed;
    const UrlRecord left = want.write.has_value() ? *want.write : *stored;
    EXPECT_EQ(Hex(Get(*store, key)), Hex(EncodeUrlRecord(left)));
  }
}

// WAIT: with 1 replica per master, min_replicas_acked 1 is met; 2 cannot
// be, and the call says so within its timeouts. The records are written
// either way, so a retry with the same claim id is answered as the first
// time.
TEST(RedisUrlStoreTest, WaitForReplicasAnswersOnlyWhenEnoughReplicasAcknowledged) {
  RedisCluster* cluster = SharedCluster();
  ASSERT_NE(cluster, nullptr);
  const std::string prefix = FreshPrefix();
  std::vector<std::string> first, second;  // claimed with and without enough replicas
  for (int i = 0; i < 30; ++i) first.push_back(absl::StrCat("http://durable/", i));
  for (int i = 30; i < 60; ++i) second.push_back(absl::StrCat("http://durable/", i));

  RedisUrlStoreOptions one = TestUrlStoreOptions(*cluster, prefix);
  one.min_replicas_acked = 1;
  one.replica_ack_timeout = absl::Seconds(5);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> acked, RedisUrlStore::Open(one));
  std::vector<UrlClaim> out;
  ASSERT_THAT(acked->ClaimUrls(first, T(1), &out), IsOk());
  for (const UrlClaim& c : out) EXPECT_TRUE(c.is_new);
  // Nothing written: no WAIT needed, and none is sent.
  ASSERT_THAT(acked->ClaimUrls(first, T(2), &out), IsOk());

  RedisUrlStoreOptions two = TestUrlStoreOptions(*cluster, prefix);
  two.min_replicas_acked = 2;
  two.replica_ack_timeout = absl::Milliseconds(300);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> short_of_replicas, RedisUrlStore::Open(two));
  UrlClaimOptions with_id;
  with_id.claim_id_hash = ClaimIdHash("req-9");
  const absl::Time start = absl::Now();
  // Each key fails on its own (every master is short of replicas here),
  // naming its node; the call itself is answered.
  ASSERT_THAT(short_of_replicas->Claim(with_id, second, T(3), &out), IsOk());
  ASSERT_EQ(out.size(), second.size());
  for (const UrlClaim& c : out) {
    EXPECT_THAT(
        c.status,
        StatusIs(
            absl::StatusCode::kUnavailable,
            HasSubstr("1 replica(s) acknowledged within 300 ms, fewer than min_replicas_acked 2")));
    EXPECT_THAT(std::string(c.status.message()), StartsWith("redis node 127.0.0.1:"));
    EXPECT_FALSE(c.is_new) << "not answered";
  }
  // One WAIT per master written to, one after another.
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  // Complete fails as a whole when a WAIT is short; CompletePerKey per key.
  UrlClaimOptions leased = with_id;
  leased.claim_id_hash = ClaimIdHash("req-10");
  leased.lease = absl::Minutes(5);
  const std::vector<std::string> leased_keys = {"http://durable/leased"};
  ASSERT_THAT(acked->Claim(leased, leased_keys, T(3), &out), IsOk());
  ASSERT_TRUE(out[0].is_new);
  std::vector<absl::Status> statuses;
  std::vector<UrlCompletion> confirmed;
  ASSERT_THAT(short_of_replicas->CompletePerKey("", 0, leased_keys, &confirmed, &statuses), IsOk());
  EXPECT_THAT(statuses[0],
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("fewer than min_replicas_acked")));
  ASSERT_THAT(acked->Complete("", 0, leased_keys, &confirmed), IsOk());
  EXPECT_EQ(confirmed[0], UrlCompletion::kAlreadyConfirmed)
      << "the unacknowledged confirmation was written all the same; confirming again is harmless";
  std::vector<UrlCompletion> done;
  EXPECT_THAT(short_of_replicas->Complete("", 0, {first[0]}, &done), IsOk())
      << "nothing to confirm, nothing written, no WAIT";

  ASSERT_THAT(acked->Claim(with_id, second, T(4), &out), IsOk());
  for (const UrlClaim& c : out) {
    EXPECT_TRUE(c.is_new) << "the retry is answered as the first claim";
    EXPECT_EQ(c.first_seen, T(3));
  }
  ASSERT_THAT(acked->ClaimUrls(second, T(5), &out), IsOk());
  for (const UrlClaim& c : out) EXPECT_FALSE(c.is_new);
}

// A master killed (before its replica takes over) fails its own keys,
// each Unavailable naming it; the keys of the other masters are claimed
// and answered NEW, and once the replica has taken over the retry with the
// same claim id is answered NEW for every key: nothing is claimed twice,
// nothing lost.
TEST(RedisUrlStoreFailoverTest, AKilledMasterFailsItsKeysNamingItAndTheRetryCompletesThem) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCluster> cluster, RedisCluster::Start({}));
  RedisUrlStoreOptions options = TestUrlStoreOptions(*cluster, "dedupd:");
  options.router.deadline = absl::Seconds(3);
  options.min_replicas_acked = 1;
  options.replica_ack_timeout = absl::Seconds(5);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> store, RedisUrlStore::Open(options));
  std::vector<std::string> keys;
  for (int i = 0; i < 300; ++i) keys.push_back(absl::StrCat("https://f.example/", i));

  size_t victim = cluster->size();
  for (size_t i = 0; i < cluster->size() && victim == cluster->size(); ++i) {
    if (cluster->started_as_master(i)) victim = i;
  }
  const std::string dead = cluster->address(victim);
  std::vector<bool> on_victim;
  for (const std::string& k : keys) {
    on_victim.push_back(
        store->router().SlotOwner(redis::KeySlot(redis::UrlRecordKey("dedupd:", "", k))) == dead);
  }
  ASSERT_THAT(cluster->KillNode(victim), IsOk());

  UrlClaimOptions o;
  o.claim_id_hash = ClaimIdHash("batch-1");
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->Claim(o, keys, T(10), &out), IsOk());
  size_t failed = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (out[i].status.ok()) {
      // A key of another master (or of the victim's slots, had the map
      // moved already: not with a 1 s node timeout and no refresh yet).
      EXPECT_FALSE(on_victim[i]) << keys[i];
      EXPECT_TRUE(out[i].is_new) << keys[i];
      continue;
    }
    ++failed;
    EXPECT_TRUE(on_victim[i]) << keys[i];
    EXPECT_THAT(out[i].status, StatusIs(absl::StatusCode::kUnavailable));
    EXPECT_THAT(std::string(out[i].status.message()),
                StartsWith(absl::StrCat("redis node ", dead, ": ")));
  }
  EXPECT_GT(failed, 50u);
  EXPECT_LT(failed, 200u);
  // The other masters' keys were recorded (and reached a replica: WAIT 1).
  std::vector<std::string> survivors;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!on_victim[i]) survivors.push_back(keys[i]);
  }
  ASSERT_GT(survivors.size(), 100u);
  ASSERT_LT(survivors.size(), 250u);
  std::vector<std::optional<absl::Time>> found;
  ASSERT_THAT(store->LookupUrls(survivors, &found), IsOk());
  for (size_t i = 0; i < survivors.size(); ++i) EXPECT_EQ(found[i], T(10)) << survivors[i];

  // The replica takes over (node timeout 1 s, then its election): retry
  // until every key is answered, bounded.
  const absl::Time give_up = absl::Now() + absl::Seconds(40);
  bool all_answered = false;
  do {
    absl::SleepFor(absl::Milliseconds(200));
    ASSERT_THAT(store->Claim(o, keys, T(11), &out), IsOk());
    all_answered = true;
    for (const UrlClaim& c : out) all_answered = all_answered && c.status.ok();
  } while (!all_answered && absl::Now() < give_up);
  ASSERT_TRUE(all_answered);
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_TRUE(out[i].is_new) << keys[i];
    EXPECT_EQ(out[i].first_seen, on_victim[i] ? T(11) : T(10)) << keys[i];
  }
  UrlClaimOptions someone_else;
  someone_else.claim_id_hash = ClaimIdHash("batch-2");
  ASSERT_THAT(store->Claim(someone_else, keys, T(12), &out), IsOk());
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_FALSE(out[i].is_new) << keys[i];
}

// A master that hangs (SIGSTOP) on a cluster whose node timeout is long
// enough that nothing fails over meanwhile: a claim, a peek and a
// confirmation of a batch spread over every master fail only the hung
// master's keys, each Unavailable naming it, and answer the others. Once
// it runs again (SIGCONT) the retry with the same claim id answers every
// key NEW (the hung master may have run the first claim's scripts when it
// woke: they were in its socket buffer) and anyone else's claim SEEN.
TEST(RedisUrlStoreFailoverTest, AHungMasterFailsOnlyItsKeysAndTheRetryAnswersAll) {
  RedisCluster::Options cluster_options;
  cluster_options.node_timeout_ms = 60000;  // no failover, no CLUSTERDOWN
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisCluster> cluster, RedisCluster::Start(cluster_options));
  RedisUrlStoreOptions options = TestUrlStoreOptions(*cluster, "dedupd:");
  // A hung node costs one command_timeout per round (and one more when
  // the slot map refresh asks it first).
  options.router.connect_timeout = absl::Seconds(2);
  options.router.command_timeout = absl::Seconds(2);
  options.router.deadline = absl::Seconds(4);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> store, RedisUrlStore::Open(options));
  std::vector<std::string> keys;
  for (int i = 0; i < 90; ++i) keys.push_back(absl::StrCat("https://hung.example/", i));
  keys.push_back(keys[0]);  // a repeat of a key that fails (or not) with it

  size_t victim = cluster->size();
  for (size_t i = 0; i < cluster->size() && victim == cluster->size(); ++i) {
    if (cluster->started_as_master(i)) victim = i;
  }
  const std::string hung = cluster->address(victim);
  std::vector<bool> on_victim;
  std::set<std::string> masters;
  for (const std::string& k : keys) {
    const std::string owner =
        store->router().SlotOwner(redis::KeySlot(redis::UrlRecordKey("dedupd:", "", k)));
    masters.insert(owner);
    on_victim.push_back(owner == hung);
  }
  ASSERT_EQ(masters.size(), 3u) << "the batch must span every master";

  // Leased keys to confirm while it hangs, claimed before.
  UrlClaimOptions leased;
  leased.claim_id_hash = ClaimIdHash("lease-1");
  leased.lease = absl::Minutes(5);
  std::vector<UrlClaim> out;
  ASSERT_THAT(store->Claim(leased, keys, T(5), &out), IsOk());
  std::vector<std::string> fresh;
  for (const std::string& k : keys) fresh.push_back(absl::StrCat(k, "?fresh"));
  std::vector<bool> fresh_on_victim;
  for (const std::string& k : fresh) {
    fresh_on_victim.push_back(
        store->router().SlotOwner(redis::KeySlot(redis::UrlRecordKey("dedupd:", "", k))) == hung);
  }

  ASSERT_THAT(cluster->StopNode(victim), IsOk());
  const absl::Time stopped = absl::Now();
  auto expect_failed_naming = [&hung](const absl::Status& s, const std::string& key) {
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kUnavailable)) << key;
    EXPECT_THAT(std::string(s.message()), StartsWith(absl::StrCat("redis node ", hung, ": ")))
        << key;
  };

  UrlClaimOptions o;
  o.claim_id_hash = ClaimIdHash("batch-1");
  ASSERT_THAT(store->Claim(o, fresh, T(10), &out), IsOk());
  ASSERT_EQ(out.size(), fresh.size());
  size_t failed = 0;
  for (size_t i = 0; i < fresh.size(); ++i) {
    if (fresh_on_victim[i]) {
      ++failed;
      expect_failed_naming(out[i].status, fresh[i]);
      EXPECT_FALSE(out[i].is_new);
    } else {
      EXPECT_THAT(out[i].status, IsOk()) << fresh[i];
      EXPECT_EQ(out[i].is_new, i + 1 != fresh.size()) << fresh[i] << " (the last is a repeat)";
    }
  }
  EXPECT_GT(failed, 10u);
  EXPECT_LT(failed, 60u);

  // A peek (PeekUrls over LookupRecordsPerKey) fails the same keys.
  ASSERT_THAT(PeekUrls(store.get(), o, keys, T(10), &out), IsOk());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (on_victim[i]) {
      expect_failed_naming(out[i].status, keys[i]);
    } else {
      EXPECT_THAT(out[i].status, IsOk()) << keys[i];
      EXPECT_FALSE(out[i].is_new) << keys[i];
    }
  }
  std::vector<std::optional<UrlRecord>> records;
  EXPECT_THAT(store->LookupRecords("", keys, &records),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr(hung)))
      << "LookupRecords itself still fails as a whole";

  // So does a confirmation.
  std::vector<UrlCompletion> done;
  std::vector<absl::Status> statuses;
  ASSERT_THAT(store->CompletePerKey("", leased.claim_id_hash, keys, &done, &statuses), IsOk());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (on_victim[i]) {
      expect_failed_naming(statuses[i], keys[i]);
    } else {
      EXPECT_THAT(statuses[i], IsOk()) << keys[i];
      EXPECT_EQ(done[i],
                i + 1 == keys.size() ? UrlCompletion::kAlreadyConfirmed : UrlCompletion::kConfirmed)
          << keys[i];
    }
  }
  const absl::Duration hung_for = absl::Now() - stopped;
  ASSERT_THAT(cluster->ContinueNode(victim), IsOk());
  std::printf("redis_url_store: master %s hung for %s (claim, peek, lookup, confirm)\n",
              hung.c_str(), absl::FormatDuration(hung_for).c_str());
  ASSERT_LT(hung_for, absl::Seconds(50)) << "too close to the node timeout: a failover may run";

  // The retry with the same claim id: every key answered, all NEW.
  ASSERT_THAT(store->Claim(o, fresh, T(11), &out), IsOk());
  for (size_t i = 0; i < fresh.size(); ++i) {
    ASSERT_THAT(out[i].status, IsOk()) << fresh[i];
    EXPECT_EQ(out[i].is_new, i + 1 != fresh.size()) << fresh[i];
    if (i + 1 == fresh.size()) continue;
    if (fresh_on_victim[i]) {
      // T(10) if the hung master ran the first claim when it woke.
      EXPECT_TRUE(out[i].first_seen == T(10) || out[i].first_seen == T(11)) << fresh[i];
    } else {
      EXPECT_EQ(out[i].first_seen, T(10)) << fresh[i];
    }
  }
  UrlClaimOptions someone_else;
  someone_else.claim_id_hash = ClaimIdHash("batch-2");
  ASSERT_THAT(store->Claim(someone_else, fresh, T(12), &out), IsOk());
  for (size_t i = 0; i < fresh.size(); ++i) {
    EXPECT_THAT(out[i].status, IsOk()) << fresh[i];
    EXPECT_FALSE(out[i].is_new) << fresh[i];
  }
  ASSERT_THAT(store->CompletePerKey("", leased.claim_id_hash, keys, &done, &statuses), IsOk());
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_THAT(statuses[i], IsOk()) << keys[i];
    if (!on_victim[i]) {
      EXPECT_EQ(done[i], UrlCompletion::kAlreadyConfirmed) << keys[i];
    }
  }
}

// UsedMemory returns the sum of used_memory over the masters serving
// slots 0, 8000 and 16000 (one per master of the 3-master cluster).
int64_t UsedMemory(RedisUrlStore& store) {
  int64_t total = 0;
  for (int slot : {0, 8000, 16000}) {
    absl::StatusOr<Value> info =
        store.router().ExecuteOne(Command::ForSlot(slot, {"INFO", "memory"}));
    if (!info.ok()) return -1;
    const size_t at = info->str.find("used_memory:");
    if (at == std::string::npos) return -1;
    total += std::strtoll(info->str.c_str() + at + 12, nullptr, 10);
  }
  return total;
}

// Not a test: claims/s through one store on the loopback cluster, batches
// of 1000 ~100-byte URLs, and the masters' memory per record (run with
// --gtest_also_run_disabled_tests --gtest_filter='*Throughput*').
TEST(RedisUrlStoreTest, DISABLED_Throughput) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> store, OpenFresh());
  constexpr int kBatches = 50;
  constexpr int kBatchKeys = 1000;
  const int64_t memory_before = UsedMemory(*store);
  for (const bool again : {false, true}) {
    const absl::Time start = absl::Now();
    for (int b = 0; b < kBatches; ++b) {
      std::vector<std::string> keys;
      for (int k = 0; k < kBatchKeys; ++k) {
        keys.push_back(absl::StrCat("https://www.example.com/section/articles/2024/",
                                    "some-fairly-long-slug-for-the-page-number-", b, "-", k));
      }
      std::vector<UrlClaim> out;
      ASSERT_THAT(store->ClaimUrls(keys, T(1), &out), IsOk());
    }
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    std::printf("redis_url_store claim %s batch=%d claims=%d seconds=%.3f claims/s=%.0f\n",
                again ? "seen" : "new", kBatchKeys, kBatches * kBatchKeys, seconds,
                kBatches * kBatchKeys / seconds);
  }
  std::printf("redis_url_store used_memory per record=%.0f bytes (masters only)\n",
              static_cast<double>(UsedMemory(*store) - memory_before) / (kBatches * kBatchKeys));
}

}  // namespace
}  // namespace dedupd
