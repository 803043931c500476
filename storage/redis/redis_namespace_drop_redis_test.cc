// redis::DropNamespace against a real 3-master, 3-replica redis-server
// cluster on loopback (tests/testing/redis_cluster_fixture.h; ctest label
// `redis`): URL, content and chunk records in namespace "a" and its
// neighbours ("ab", "a-b", the default one), keys shaped like a namespace
// "a:b" and another key prefix whose keys start with this prefix's "u:a:";
// dropping "a" (in pages of 10 keys) removes only "a"'s records, the others
// are answered as before; drops of an absent or already dropped namespace
// find nothing; bad names and a cancelled drop delete nothing.
//
// One cluster serves every case (started on first use; the binary is one
// ctest test); each case works under key prefixes of its own.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/text/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/redis/redis_chunk_store.h"
#include "storage/redis/redis_content_format.h"
#include "storage/redis/redis_content_store.h"
#include "storage/redis/redis_namespace_drop.h"
#include "storage/redis/redis_store_test_util.h"
#include "storage/redis/redis_url_format.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::redis::Command;
using ::dedupd::redis::Value;
using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;

// One front end with every layer.
struct FrontEnd {
  std::unique_ptr<RedisUrlStore> urls;
  std::unique_ptr<RedisContentStore> content;
  std::unique_ptr<RedisChunkStore> chunks;
  std::string prefix;

  static absl::StatusOr<FrontEnd> Open(std::string prefix) {
    absl::StatusOr<std::unique_ptr<RedisUrlStore>> urls =
        testing::OpenSharedClusterUrlStore(prefix);
    if (!urls.ok()) return urls.status();
    FrontEnd f;
    f.urls = *std::move(urls);
    f.content = RedisContentStore::Open(f.urls.get());
    f.chunks = RedisChunkStore::Open(f.urls.get());
    f.prefix = std::move(prefix);
    return f;
  }
};

const absl::Time kNow = absl::FromUnixSeconds(1700000000);

// Claim claims `url` in `ns`: whether it was NEW.
bool Claim(FrontEnd& f, const std::string& ns, const std::string& url) {
  UrlClaimOptions options;
  options.name_space = ns;
  std::vector<UrlClaim> out;
  EXPECT_THAT(f.urls->Claim(options, {url}, kNow, &out), IsOk());
  return !out.empty() && out[0].is_new;
}

ContentDoc Doc(const std::string& ns, const std::string& url, const std::string& text) {
  ContentDoc d;
  d.name_space = ns;
  d.identity_url = url;
  d.fetched_url = url;
  d.sha256 = Sha256(text);
  d.simhash = 0x0123456789abcdefULL;
  return d;
}

ContentOutcome CheckContent(FrontEnd& f, const ContentDoc& doc, bool claim) {
  std::vector<ContentOutcome> out;
  EXPECT_THAT(f.content->CheckContent({doc}, claim, ContentLimits{}, kNow, &out), IsOk());
  return out.empty() ? ContentOutcome{} : out[0];
}

ChunkOutcome CheckChunk(FrontEnd& f, const std::string& ns, const std::string& document,
                        const std::string& text, bool claim) {
  ChunkDocument doc{document, {ChunkInput{"c0", Sha256(text), 0x0f0f0f0f0f0f0f0fULL, 3}}, ns};
  ChunkAnswer answer;
  EXPECT_THAT(f.chunks->CheckChunks(doc, claim, kNow, &answer), IsOk());
  return answer.outcomes.empty() ? ChunkOutcome{} : answer.outcomes[0];
}

// Records everything a namespace can hold: URLs, a text with an alias,
// a chunked document.
void Fill(FrontEnd& f, const std::string& ns) {
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(Claim(f, ns, absl::StrCat("http://x/", i))) << ns;
  EXPECT_EQ(CheckContent(f, Doc(ns, "http://x/page", "the text"), true).verdict,
            ContentVerdict::kNew);
  EXPECT_EQ(CheckContent(f, Doc(ns, "http://x/copy", "the text"), true).verdict,
            ContentVerdict::kExactDuplicate);
  EXPECT_EQ(CheckChunk(f, ns, "http://x/doc", "a chunk", true).verdict, ChunkVerdict::kNew);
}

// Expects `ns` to answer as Fill left it (recorded), or as never filled.
void ExpectRecorded(FrontEnd& f, const std::string& ns, bool recorded) {
  const std::string what = absl::StrCat("namespace \"", ns, "\"");
  // Peeks first (they record nothing), then claims.
  const ContentOutcome text = CheckContent(f, Doc(ns, "http://x/third", "the text"), false);
  if (recorded) {
    EXPECT_EQ(text.verdict, ContentVerdict::kExactDuplicate) << what;
    EXPECT_EQ(text.owner_url, "http://x/page") << what;
    EXPECT_EQ(text.alias_count, 1u) << what;
  } else {
    EXPECT_EQ(text.verdict, ContentVerdict::kNew) << what;
  }
  const ChunkOutcome chunk = CheckChunk(f, ns, "http://x/other-doc", "a chunk", false);
  if (recorded) {
    EXPECT_EQ(chunk.verdict, ChunkVerdict::kExactDuplicate) << what;
    EXPECT_EQ(chunk.duplicate_document_url, "http://x/doc") << what;
  } else {
    EXPECT_EQ(chunk.verdict, ChunkVerdict::kNew) << what;
  }
  for (int i = 0; i < 30; ++i) {
    EXPECT_EQ(Claim(f, ns, absl::StrCat("http://x/", i)), !recorded) << what << " URL " << i;
  }
}

// The keys of the whole cluster that IsNamespaceKey gives to `ns`.
std::vector<std::string> KeysOf(RedisUrlStore& store, const std::string& ns) {
  std::vector<std::string> keys;
  for (const std::string& master : store.router().Masters()) {
    std::string cursor = "0";
    do {
      absl::StatusOr<Value> page = store.router().ExecuteOnNode(
          master,
          {"SCAN", cursor, "MATCH", absl::StrCat(store.key_prefix(), "*"), "COUNT", "1000"});
      EXPECT_THAT(page, IsOk());
      if (!page.ok() || page->elements.size() != 2) return keys;
      cursor = page->elements[0].str;
      for (const Value& k : page->elements[1].elements) {
        if (redis::IsNamespaceKey(store.key_prefix(), ns, k.str)) keys.push_back(k.str);
      }
    } while (cursor != "0");
  }
  return keys;
}

bool Exists(RedisUrlStore& store, const std::string& key) {
  absl::StatusOr<Value> v = store.router().ExecuteOne(Command::ForKey(key, {"EXISTS", key}));
  EXPECT_THAT(v, IsOk());
  return v.ok() && v->integer == 1;
}

TEST(RedisNamespaceDropTest, DropsOnlyTheNamespacesKeys) {
  const std::string prefix = testing::FreshKeyPrefix("d");
  ASSERT_OK_AND_ASSIGN(FrontEnd f, FrontEnd::Open(prefix));
  // A deployment whose prefix is this one's "u:a:": its keys match the
  // SCAN pattern of "a" (prefix "*:a:*") and must stay.
  ASSERT_OK_AND_ASSIGN(FrontEnd other, FrontEnd::Open(prefix + "u:a:"));
  const std::vector<std::string> namespaces = {"a", "ab", "a-b", ""};
  for (const std::string& ns : namespaces) ASSERT_NO_FATAL_FAILURE(Fill(f, ns));
  ASSERT_NO_FATAL_FAILURE(Fill(other, "a"));
  ASSERT_NO_FATAL_FAILURE(Fill(other, ""));
  // Keys shaped like records of a namespace "a:b" (not a namespace: it has
  // a ':'), and a default-namespace URL that holds ":a:".
  const std::string a_b_url =
      absl::StrCat(prefix, "u:a:b:{", redis::UrlKeyTag("http://x/1"), "}http://x/1");
  const std::string a_b_fp = absl::StrCat(prefix, "f:a:b:1");
  for (const std::string& key : {a_b_url, a_b_fp}) {
    ASSERT_THAT(f.urls->router().ExecuteOne(Command::ForKey(key, {"SET", key, "x"})), IsOk());
  }
  ASSERT_TRUE(Claim(f, "", "http://x/:a:{1}"));
  const size_t a_keys = KeysOf(*f.urls, "a").size();
  ASSERT_GT(a_keys, 30u);

  redis::NamespaceDropOptions options;
  options.scan_count = 10;  // many pages
  ASSERT_OK_AND_ASSIGN(redis::NamespaceDropResult dropped,
                       redis::DropNamespace(&f.urls->router(), prefix, "a", options));
  EXPECT_EQ(dropped.keys_deleted, a_keys);
  EXPECT_EQ(dropped.masters, 3);
  EXPECT_THAT(KeysOf(*f.urls, "a"), ::testing::IsEmpty());

  ASSERT_NO_FATAL_FAILURE(ExpectRecorded(f, "a", false));
  for (const std::string ns : {"ab", "a-b", ""}) {
    ASSERT_NO_FATAL_FAILURE(ExpectRecorded(f, ns, true));
  }
  ASSERT_NO_FATAL_FAILURE(ExpectRecorded(other, "a", true));
  ASSERT_NO_FATAL_FAILURE(ExpectRecorded(other, "", true));
  EXPECT_TRUE(Exists(*f.urls, a_b_url));
  EXPECT_TRUE(Exists(*f.urls, a_b_fp));
  EXPECT_FALSE(Claim(f, "", "http://x/:a:{1}"));
  // The id counters stay, so ids are not handed out again.
  EXPECT_TRUE(Exists(*f.urls, redis::DocIdCounterKey(prefix, "a")));

  // ExpectRecorded claimed "a"'s URLs again: a second drop takes them; a
  // third finds nothing.
  ASSERT_OK_AND_ASSIGN(dropped, redis::DropNamespace(&f.urls->router(), prefix, "a"));
  EXPECT_EQ(dropped.keys_deleted, 30u);
  ASSERT_OK_AND_ASSIGN(dropped, redis::DropNamespace(&f.urls->router(), prefix, "a"));
  EXPECT_EQ(dropped.keys_deleted, 0u);
}

TEST(RedisNamespaceDropTest, AbsentNamespaceBadNamesAndCancel) {
  const std::string prefix = testing::FreshKeyPrefix("d");
  ASSERT_OK_AND_ASSIGN(FrontEnd f, FrontEnd::Open(prefix));
  ASSERT_NO_FATAL_FAILURE(Fill(f, "a"));
  ASSERT_OK_AND_ASSIGN(redis::NamespaceDropResult dropped,
                       redis::DropNamespace(&f.urls->router(), prefix, "zz"));
  EXPECT_EQ(dropped.keys_deleted, 0u);
  EXPECT_EQ(dropped.masters, 3);
  for (const std::string& bad : std::vector<std::string>{"", "a:b", "a*", std::string(65, 'a')}) {
    EXPECT_THAT(redis::DropNamespace(&f.urls->router(), prefix, bad),
                StatusIs(absl::StatusCode::kInvalidArgument))
        << bad;
  }
  redis::NamespaceDropOptions cancelled;
  cancelled.cancelled = [] { return true; };
  EXPECT_THAT(redis::DropNamespace(&f.urls->router(), prefix, "a", cancelled),
              StatusIs(absl::StatusCode::kCancelled));
  ASSERT_NO_FATAL_FAILURE(ExpectRecorded(f, "a", true));
}

}  // namespace
}  // namespace dedupd
