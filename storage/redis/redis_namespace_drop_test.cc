// What a namespace drop takes, without a cluster: the SCAN pattern and its
// escaping, and IsNamespaceKey over every record kind's real key builder
// (redis_url_format.h, redis_content_format.h, redis_chunk_format.h) and
// keys of neighbouring namespaces and prefixes that must stay.
#include "storage/redis/redis_namespace_drop.h"

#include <string>
#include <vector>

#include "core/text/sha256.h"
#include "gtest/gtest.h"
#include "storage/redis/redis_chunk_format.h"
#include "storage/redis/redis_content_format.h"
#include "storage/redis/redis_url_format.h"

namespace dedupd::redis {
namespace {

TEST(GlobEscapeTest, EscapesEveryMetacharacterAndNothingElse) {
  struct Case {
    std::string in, want;
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"dedupd:", "dedupd:"},
      {"crawl-7._x", "crawl-7._x"},
      {"a*b", "a\\*b"},
      {"a?b", "a\\?b"},
      {"[ab]", "\\[ab\\]"},
      {"a\\b", "a\\\\b"},
      {"*?[]\\", "\\*\\?\\[\\]\\\\"},
  };
  for (const Case& c : cases) EXPECT_EQ(GlobEscape(c.in), c.want) << c.in;
}

TEST(NamespaceScanPatternTest, Golden) {
  EXPECT_EQ(NamespaceScanPattern("dedupd:", "crawl-7"), "dedupd:*:crawl-7:*");
  EXPECT_EQ(NamespaceScanPattern("t1:", "a"), "t1:*:a:*");
}

// Every record key of namespace `ns` under `p`, one per kind, built by the
// format's own functions.
std::vector<std::string> EveryRecordKey(const std::string& p, const std::string& ns) {
  const Sha256Digest h = Sha256("abc");
  MinHashSignature sig{};
  sig[0] = 7;
  return {
      UrlRecordKey(p, ns, "http://a/"),
      ContentKey(p, ns, h),
      AliasKey(p, ns, h),
      AliasTimeKey(p, ns, h),
      FetchKey(p, ns, "http://a/"),
      UrlTextsKey(p, ns, "http://a/"),
      FingerprintKey(p, ns, 5),
      SimHashBucketKey(p, ns, 4, 0, 0x0123456789abcdefULL),
      SimHashBucketKey(p, ns, 5, 4, 0x0123456789abcdefULL),
      LshBucketKey(p, ns, 17, sig),
      ChunkTextKey(p, ns, h),
      ChunkHoldersKey(p, ns, h),
      ChunkHolderTimesKey(p, ns, h),
      ChunkManifestKey(p, ns, "http://a/"),
      ChunkLeaseKey(p, ns, "http://a/"),
      ChunkJournalKey(p, ns, "http://a/"),
      ChunkTextIdKey(p, ns, 4294967295u),
      ChunkSimHashBucketKey(p, ns, 4, 3, 0x0123456789abcdefULL),
      ChunkLshBucketKey(p, ns, 0, sig),
  };
}

TEST(IsNamespaceKeyTest, EveryRecordKindOfTheNamespaceAndOnlyIt) {
  const std::string p = "dedupd:";
  for (const std::string& key : EveryRecordKey(p, "a")) {
    EXPECT_TRUE(IsNamespaceKey(p, "a", key)) << key;
    EXPECT_FALSE(IsNamespaceKey(p, "ab", key)) << key;
    EXPECT_FALSE(IsNamespaceKey(p, "b", key)) << key;
    EXPECT_FALSE(IsNamespaceKey("other:", "a", key)) << key;
  }
  for (const std::string ns : {"", "ab", "b", "A", "a-", "_a"}) {
    for (const std::string& key : EveryRecordKey(p, ns)) {
      EXPECT_FALSE(IsNamespaceKey(p, "a", key)) << ns << ": " << key;
    }
  }
}

TEST(IsNamespaceKeyTest, KeysThatOnlyLookLikeTheNamespacesStay) {
  const std::string p = "t1:";
  struct Case {
    std::string key;
    bool want;
  };
  const std::vector<Case> cases = {
      // The id counters are kept (ids are never handed out twice).
      {DocIdCounterKey(p, "a"), false},
      {ChunkTextIdCounterKey(p, "a"), false},
      {MetaKey(p), false},
      // Not a namespace (CheckNamespace allows no ':'), and not "a".
      {"t1:u:a:b:{694bd104}http://a/", false},
      {"t1:f:a:b:5", false},
      // Another prefix whose own keys start with this prefix's "u:a:".
      {"t1:u:a:u::{694bd104}http://a/", false},
      {"t1:u:a:f:a:5", false},
      // A default-namespace URL holding ":a:" (SCAN MATCH takes it).
      {"t1:u::{694bd104}http://h/:a:{x}", false},
      // Kinds that do not exist, and broken shapes.
      {"t1:zz:a:{694bd104}http://a/", false},
      {"t1:u:a:", false},
      {"t1:u:a:{}x", false},
      {"t1:u:a:{694bd104", false},
      {"t1:f:a:", false},
      {"t1:f:a:5x", false},
      {"t1:sh:a:0", false},
      {"t1:sh:a:0:", false},
      {"t1:sh:a::0123", false},
      {"t1:sh:a:0:01g3", false},
      {"t1:a", false},
      // The shapes themselves.
      {"t1:u:a:{694bd104}http://a/", true},
      {"t1:u:a:{694bd104}", true},
      {"t1:f:a:0", true},
      {"t1:sh:a:0:0123", true},
      {"t1:klb:a:17:1f0bbe34", true},
  };
  for (const Case& c : cases) EXPECT_EQ(IsNamespaceKey(p, "a", c.key), c.want) << c.key;
}

}  // namespace
}  // namespace dedupd::redis
