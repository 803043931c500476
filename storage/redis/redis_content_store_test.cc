// RedisContentStore against a real 3-master, 3-replica redis-server
// cluster on loopback (tests/testing/redis_cluster_fixture.h; ctest label
// `redis`): the content store conformance suite (Reopen is a new front end
// on the same key prefix; its concurrency case races eight threads, so
// texts planned NEW but claimed before their script ran are answered as
// the script saw them), two front ends racing over overlapping texts,
// golden keys and values read back raw, and a text left index-pending by
// a writer that stopped between its steps.
//
// One cluster serves every case (started on first use, about 7 s; the
// binary is one ctest test); each case works under a key prefix of its own.
#include "storage/redis/redis_content_store.h"

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/text/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/redis/redis_content_format.h"
#include "storage/redis/redis_store_test_util.h"
#include "storage/redis/redis_url_format.h"
#include "storage/testing/content_store_conformance.h"
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
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string FreshPrefix() { return testing::FreshKeyPrefix("c"); }

// One front end: a URL store (the meta, the router) and the content store.
using FrontEnd = testing::RedisFrontEnd<RedisContentStore>;

class RedisContentHarness : public testing::ContentStoreHarness {
 public:
  static absl::StatusOr<std::unique_ptr<testing::ContentStoreHarness>> Make() {
    auto harness = std::make_unique<RedisContentHarness>();
    harness->prefix_ = FreshPrefix();
    absl::Status s = harness->front_.Reopen(harness->prefix_);
    if (!s.ok()) return s;
    return harness;
  }
  ContentStore& content() override { return *front_.layer; }
  UrlStore& urls() override { return *front_.urls; }
  // A new front end on the same prefix: everything a claim recorded is in
  // the cluster, nothing in the process.
  absl::StatusOr<bool> Reopen() override {
    absl::Status s = front_.Reopen(prefix_);
    if (!s.ok()) return s;
    return true;
  }

 private:
  std::string prefix_;
  FrontEnd front_;
};

using ::dedupd::testing::ContentStoreConformanceTest;
INSTANTIATE_TEST_SUITE_P(Redis, ContentStoreConformanceTest,
                         ::testing::Values(testing::ContentStoreBackend{
                             "Redis", &RedisContentHarness::Make}),
                         testing::ContentStoreBackendName);

absl::Time T(int64_t seconds) { return absl::UnixEpoch() + absl::Seconds(seconds); }

ContentDoc Doc(const std::string& identity, const std::string& fetched, const std::string& text,
               uint64_t simhash) {
  ContentDoc d;
  d.identity_url = identity;
  d.fetched_url = fetched;
  d.sha256 = Sha256(text);
  d.simhash = simhash;
  return d;
}

std::string Get(RedisUrlStore& store, const std::string& key) {
  absl::StatusOr<Value> v = store.router().ExecuteOne(Command::ForKey(key, {"GET", key}));
  EXPECT_THAT(v, IsOk());
  return v.ok() ? v->str : "";
}

Value Cmd(RedisUrlStore& store, const std::string& key, std::vector<std::string> argv) {
  absl::StatusOr<Value> v = store.router().ExecuteOne(Command::ForKey(key, std::move(argv)));
  EXPECT_THAT(v, IsOk());
  return v.ok() ? *v : Value::Error("failed");
}

// Two front ends, eight threads, 60 texts each claimed by every thread
// under its own URL, in shuffled batches: exactly one NEW per text, every
// other answer the exact duplicate naming that owner, and every other URL
// on the alias list.
TEST(RedisContentStoreTest, TwoFrontEndsRacingOverOverlappingTextsHaveOneNewPerText) {
  const std::string prefix = FreshPrefix();
  ASSERT_OK_AND_ASSIGN(FrontEnd a, FrontEnd::Open(prefix));
  ASSERT_OK_AND_ASSIGN(FrontEnd b, FrontEnd::Open(prefix));
  constexpr int kThreads = 8;
  constexpr int kTexts = 60;
  constexpr int kBatch = 10;
  absl::Mutex mu;
  std::vector<int> news(kTexts, 0);
  std::vector<std::vector<ContentOutcome>> answers(kTexts);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ContentStore& store = t % 2 == 0 ? *a.layer : *b.layer;
      // Each thread walks the texts from its own offset.
      for (int start = 0; start < kTexts; start += kBatch) {
        std::vector<ContentDoc> docs;
        std::vector<int> ids;
        for (int j = 0; j < kBatch; ++j) {
          const int text = (start + j + t * 7) % kTexts;
          const std::string url = absl::StrCat("https://w", t, ".example/", text);
          docs.push_back(Doc(url, url, absl::StrCat("racing text ", text),
                             (text + 1) * 0x9E3779B97F4A7C15ULL));
          ids.push_back(text);
        }
        std::vector<ContentOutcome> out;
        absl::Status s = store.CheckContent(docs, true, ContentLimits{}, T(100 + t), &out);
        ASSERT_THAT(s, IsOk());
        absl::MutexLock lock(&mu);
        for (size_t j = 0; j < out.size(); ++j) {
          if (out[j].verdict == ContentVerdict::kNew) ++news[ids[j]];
          answers[ids[j]].push_back(out[j]);
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int text = 0; text < kTexts; ++text) {
    SCOPED_TRACE(absl::StrCat("text ", text));
    ASSERT_EQ(news[text], 1);
    std::string owner;
    for (const ContentOutcome& o : answers[text]) {
      if (o.verdict == ContentVerdict::kNew) owner = o.owner_url;
    }
    for (const ContentOutcome& o : answers[text]) {
      if (o.verdict == ContentVerdict::kNew) continue;
      EXPECT_EQ(o.verdict, ContentVerdict::kExactDuplicate);
      EXPECT_EQ(o.owner_url, owner);
    }
    std::vector<ContentOutcome> peek;
    ASSERT_THAT(a.layer->CheckContent({Doc("https://probe/", "https://probe/",
                                           absl::StrCat("racing text ", text), 0)},
                                      false, ContentLimits{}, T(1000), &peek),
                IsOk());
    EXPECT_EQ(peek[0].owner_url, owner);
    EXPECT_EQ(peek[0].alias_count, kThreads - 1u);
  }
}

// The keys and values of docs/redis_format.md, read back raw.
TEST(RedisContentStoreTest, KeysAndValuesAreGolden) {
  ASSERT_OK_AND_ASSIGN(FrontEnd f, FrontEnd::Open("cgolden:"));
  const absl::Time t = absl::FromUnixMicros(1'700'000'000'123'456);
  ContentDoc d = Doc("http://a/", "http://a/?print=1", "abc", 0x0123456789abcdefULL);
  d.claim_id_hash = 0x0102030405060708ULL;
  d.etag = "\"v1\"";
  std::vector<ContentOutcome> out;
  ASSERT_THAT(f.layer->CheckContent({d}, true, ContentLimits{}, t, &out), IsOk());
  ASSERT_EQ(out[0].verdict, ContentVerdict::kNew);
  const std::string abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  // Doc id 1: the namespace's first; claimed with a claim id, indexed.
  EXPECT_EQ(absl::BytesToHexString(Get(*f.urls, absl::StrCat("cgolden:c::{", abc, "}"))),
            "01"
            "01"
            "00000001"
            "0123456789abcdef"
            "00060a2418202240"
            "0102030405060708"
            "687474703a2f2f612f");
  EXPECT_EQ(Get(*f.urls, "cgolden:n:"), "1");
  EXPECT_EQ(absl::BytesToHexString(Get(*f.urls, "cgolden:f::1")),
            std::string("01") + "0123456789abcdef" + abc);
  const std::string alias_key = absl::StrCat("cgolden:a::{", abc, "}");
  EXPECT_THAT(Cmd(*f.urls, alias_key, {"ZRANGE", alias_key, "0", "-1", "WITHSCORES"}).elements,
              ElementsAre(Value::String("http://a/?print=1"), Value::String("0")));
  const std::string time_key = absl::StrCat("cgolden:at::{", abc, "}");
  EXPECT_EQ(
      absl::BytesToHexString(Cmd(*f.urls, time_key, {"HGET", time_key, "http://a/?print=1"}).str),
      "00060a2418202240");
  EXPECT_EQ(
      absl::BytesToHexString(Get(*f.urls, redis::FetchKey("cgolden:", "", "http://a/?print=1"))),
      "02" + abc + "00060a2418202240" + "00060a2418202240" + "0004" + "22763122" + "0000");
  for (const char* url : {"http://a/", "http://a/?print=1"}) {
    EXPECT_EQ(absl::BytesToHexString(Get(*f.urls, redis::UrlRecordKey("cgolden:", "", url))),
              "0100060a2418202240");
  }
  for (const char* bucket :
       {"cgolden:sh::0:0123", "cgolden:sh::1:4567", "cgolden:sh::2:89ab", "cgolden:sh::3:cdef"}) {
    EXPECT_THAT(Cmd(*f.urls, bucket, {"SMEMBERS", bucket}).elements,
                ElementsAre(Value::String(redis::SimHashBucketMember(1, 0x0123456789abcdefULL))))
        << bucket;
  }
  EXPECT_THAT(Get(*f.urls, "cgolden:meta"), HasSubstr("format=2 "));
}

// A writer that stopped after its claim script (the content record is
// there, marked index-pending, but no fingerprint or bucket entry): the
// next claim of the text writes them, so near duplicates find it again.
TEST(RedisContentStoreTest, AnIndexPendingTextIsIndexedByTheNextClaim) {
  const std::string prefix = FreshPrefix();
  ASSERT_OK_AND_ASSIGN(FrontEnd f, FrontEnd::Open(prefix));
  const uint64_t fp = 0x1111222233334444ULL;
  std::vector<ContentOutcome> out;
  ASSERT_THAT(f.layer->CheckContent({Doc("https://a/", "https://a/", "t", fp)}, true,
                                    ContentLimits{}, T(10), &out),
              IsOk());
  // Undo steps 2 and 3 as a crash before them would have left the text.
  const Sha256Digest sha = Sha256("t");
  const std::string key = redis::ContentKey(prefix, "", sha);
  absl::StatusOr<redis::RedisContentValue> v = redis::DecodeRedisContentValue(Get(*f.urls, key));
  ASSERT_THAT(v, IsOk());
  v->index_pending = true;
  Cmd(*f.urls, key, {"SET", key, redis::EncodeRedisContentValue(*v)});
  const std::string fp_key = redis::FingerprintKey(prefix, "", v->record.doc_id);
  Cmd(*f.urls, fp_key, {"DEL", fp_key});
  for (int b = 0; b < 4; ++b) {
    const std::string bucket = redis::SimHashBucketKey(prefix, "", 4, b, fp);
    Cmd(*f.urls, bucket, {"DEL", bucket});
  }
  const ContentDoc near = Doc("https://n/", "https://n/", "near", fp ^ 1);
  ASSERT_THAT(f.layer->CheckContent({near}, false, ContentLimits{}, T(20), &out), IsOk());
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew) << "not indexed: not found";
  // A peek repairs nothing; a claim of the text does.
  ASSERT_THAT(f.layer->CheckContent({Doc("https://b/", "https://b/", "t", fp)}, true,
                                    ContentLimits{}, T(30), &out),
              IsOk());
  EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
  ASSERT_THAT(f.layer->CheckContent({near}, false, ContentLimits{}, T(40), &out), IsOk());
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNearDuplicate);
  EXPECT_EQ(out[0].owner_url, "https://a/");
  v = redis::DecodeRedisContentValue(Get(*f.urls, key));
  ASSERT_THAT(v, IsOk());
  EXPECT_FALSE(v->index_pending);
}

// The race the claim script settles, made to happen: between this call's
// reads and its scripts, another front end claims the same text. The call
// answers the exact duplicate the script saw (never a second NEW), lists
// its own URLs as aliases, names the real owner for a near text of the
// batch, and indexes nothing for the text it lost.
TEST(RedisContentStoreTest, ATextClaimedBetweenReadAndScriptIsTheDuplicateTheScriptSaw) {
  const std::string prefix = FreshPrefix();
  ASSERT_OK_AND_ASSIGN(FrontEnd a, FrontEnd::Open(prefix));
  ASSERT_OK_AND_ASSIGN(FrontEnd b, FrontEnd::Open(prefix));
  const uint64_t fp = 0x5555666677778888ULL;
  bool raced = false;
  a.layer->SetBeforeClaimScriptsHookForTesting([&] {
    if (raced) return;
    raced = true;
    std::vector<ContentOutcome> out;
    ASSERT_THAT(b.layer->CheckContent({Doc("https://b/", "https://b/", "contested", fp)}, true,
                                      ContentLimits{}, T(50), &out),
                IsOk());
    ASSERT_EQ(out[0].verdict, ContentVerdict::kNew);
  });
  std::vector<ContentOutcome> out;
  ASSERT_THAT(a.layer->CheckContent({Doc("https://a/", "https://a/?p=1", "contested", fp),
                                     Doc("https://a2/", "https://a2/", "contested", fp),
                                     Doc("https://n/", "https://n/", "near it", fp ^ 1)},
                                    true, ContentLimits{}, T(60), &out),
              IsOk());
  ASSERT_TRUE(raced);
  EXPECT_EQ(out[0].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[0].owner_url, "https://b/");
  EXPECT_EQ(out[0].first_seen, T(50));
  EXPECT_EQ(out[1].verdict, ContentVerdict::kExactDuplicate);
  EXPECT_EQ(out[1].owner_url, "https://b/");
  EXPECT_EQ(out[1].alias_count, 3u);
  EXPECT_THAT(out[1].aliases, ElementsAre("https://a/", "https://a/?p=1", "https://a2/"));
  // The near text, planned against this call's own claim of the text,
  // names the text's real owner.
  EXPECT_EQ(out[2].verdict, ContentVerdict::kNearDuplicate);
  EXPECT_EQ(out[2].owner_url, "https://b/");
  ASSERT_FALSE(out[2].near_matches.empty());
  EXPECT_EQ(out[2].near_matches[0].owner_url, "https://b/");
  // Stored: b's entry for the text and the near text's, no third one for
  // the text this call lost; a peek agrees.
  a.layer->SetBeforeClaimScriptsHookForTesting(nullptr);
  for (int block = 0; block < 4; ++block) {
    const std::string bucket = redis::SimHashBucketKey(prefix, "", 4, block, fp);
    const size_t members = Cmd(*a.urls, bucket, {"SMEMBERS", bucket}).elements.size();
    EXPECT_EQ(members, block == 3 ? 1u : 2u) << bucket;  // fp ^ 1 differs in block 3 only
  }
  ASSERT_THAT(a.layer->CheckContent({Doc("https://p/", "https://p/", "contested", 0)}, false,
                                    ContentLimits{}, T(70), &out),
              IsOk());
  EXPECT_EQ(out[0].owner_url, "https://b/");
  EXPECT_EQ(out[0].alias_count, 3u);
}

// WAIT: content claims wait for replicas as URL claims do (one replica
// per master here): 1 is met; 2 is not, and the claim fails UNAVAILABLE
// with its records written, so its retry (same claim id) is NEW again.
TEST(RedisContentStoreTest, ClaimsWaitForReplicas) {
  RedisCluster* cluster = SharedCluster();
  ASSERT_NE(cluster, nullptr);
  const std::string prefix = FreshPrefix();
  RedisUrlStoreOptions one = TestUrlStoreOptions(*cluster, prefix);
  one.min_replicas_acked = 1;
  one.replica_ack_timeout = absl::Seconds(5);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> acked_urls, RedisUrlStore::Open(one));
  std::unique_ptr<RedisContentStore> acked = RedisContentStore::Open(acked_urls.get());
  std::vector<ContentOutcome> out;
  ASSERT_THAT(
      acked->CheckContent({Doc("https://a/", "https://a/", "durable", 0x1111111111111111ULL)}, true,
                          ContentLimits{}, T(1), &out),
      IsOk());
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);

  RedisUrlStoreOptions two = TestUrlStoreOptions(*cluster, prefix);
  two.min_replicas_acked = 2;
  two.replica_ack_timeout = absl::Milliseconds(300);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RedisUrlStore> short_urls, RedisUrlStore::Open(two));
  std::unique_ptr<RedisContentStore> short_of_replicas = RedisContentStore::Open(short_urls.get());
  ContentDoc d = Doc("https://b/", "https://b/", "durable too", 0x2222222222222222ULL);
  d.claim_id_hash = 0x77;
  EXPECT_THAT(
      short_of_replicas->CheckContent({d}, true, ContentLimits{}, T(2), &out),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("fewer than min_replicas_acked 2")));
  ASSERT_THAT(acked->CheckContent({d}, true, ContentLimits{}, T(3), &out), IsOk());
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  EXPECT_TRUE(out[0].retry);
  EXPECT_EQ(out[0].first_seen, T(2));
}

// Forget leaves no key of a text it deletes, nor of the URL; a text
// claimed again after it gets a new doc id, and the old one's entries (as a
// crash in Forget's last step would leave them) are not matched.
TEST(RedisContentStoreTest, ForgetLeavesNoKeysAndLeftoverEntriesAreNotMatched) {
  const std::string prefix = FreshPrefix();
  ASSERT_OK_AND_ASSIGN(FrontEnd f, FrontEnd::Open(prefix));
  const uint64_t fp = 0x0f0f0f0f0f0f0f0fULL;
  std::vector<ContentOutcome> out;
  ASSERT_THAT(f.layer->CheckContent({Doc("https://a/", "https://a/", "gone", fp)}, true,
                                    ContentLimits{}, T(10), &out),
              IsOk());
  ASSERT_OK_AND_ASSIGN(ForgetResult r, f.layer->Forget("https://a/", T(20)));
  EXPECT_TRUE(r.url_found);
  EXPECT_TRUE(r.fetch_removed);
  EXPECT_EQ(r.contents_removed, 1u);
  const Value left = Cmd(*f.urls, redis::FingerprintKey(prefix, "", 1),
                         {"EXISTS", redis::FingerprintKey(prefix, "", 1)});
  EXPECT_EQ(left, Value::Integer(0));
  for (int b = 0; b < 4; ++b) {
    const std::string bucket = redis::SimHashBucketKey(prefix, "", 4, b, fp);
    EXPECT_EQ(Cmd(*f.urls, bucket, {"EXISTS", bucket}), Value::Integer(0)) << bucket;
  }
  for (const std::string& key :
       {redis::ContentKey(prefix, "", Sha256("gone")), redis::AliasKey(prefix, "", Sha256("gone")),
        redis::UrlTextsKey(prefix, "", "https://a/"), redis::FetchKey(prefix, "", "https://a/"),
        redis::UrlRecordKey(prefix, "", "https://a/")}) {
    EXPECT_EQ(Cmd(*f.urls, key, {"EXISTS", key}), Value::Integer(0)) << key;
  }
  // Leftovers of doc id 1 put back, the text claimed again (doc id 2): a
  // near text lists it once, under its new id.
  Cmd(*f.urls, redis::FingerprintKey(prefix, "", 1),
      {"SET", redis::FingerprintKey(prefix, "", 1),
       redis::EncodeFingerprintValue(FingerprintRecord{fp, Sha256("gone"), std::nullopt})});
  const std::string bucket = redis::SimHashBucketKey(prefix, "", 4, 0, fp);
  Cmd(*f.urls, bucket, {"SADD", bucket, redis::SimHashBucketMember(1, fp)});
  ASSERT_THAT(f.layer->CheckContent({Doc("https://b/", "https://b/", "gone", fp)}, true,
                                    ContentLimits{}, T(30), &out),
              IsOk());
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNew);
  ASSERT_THAT(f.layer->CheckContent({Doc("https://n/", "https://n/", "near", fp ^ 1)}, false,
                                    ContentLimits{}, T(40), &out),
              IsOk());
  EXPECT_EQ(out[0].verdict, ContentVerdict::kNearDuplicate);
  EXPECT_EQ(out[0].near_match_count, 1u);
  EXPECT_EQ(out[0].owner_url, "https://b/");
}

}  // namespace
}  // namespace dedupd
