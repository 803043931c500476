// The Redis backend's key names and meta record, pinned without a cluster
// (redis_url_store_test checks the same keys and values on a real one).
#include "storage/redis/redis_url_format.h"

#include <array>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/text/minhash.h"
#include "core/text/simhash.h"
#include "core/text/stable_hash.h"
#include "core/text/text_normalizer.h"
#include "core/url/url_normalizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/redis/cluster_slots.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::redis {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;

// Golden: changing any of these changes the format (bump
// kRedisFormatVersion and docs/redis_format.md).
TEST(RedisUrlFormatTest, KeyNamesAreGolden) {
  EXPECT_EQ(kRedisFormatVersion, 2u);
  EXPECT_EQ(kRedisFormatVersionUrlsOnly, 1u);
  EXPECT_EQ(MetaKey("dedupd:"), "dedupd:meta");
  EXPECT_EQ(UrlKeyTag("http://a/"), "694bd104");
  EXPECT_EQ(UrlRecordKey("dedupd:", "", "http://a/"), "dedupd:u::{694bd104}http://a/");
  EXPECT_EQ(UrlRecordKey("dedupd:", "crawl-7", "http://a/"),
            "dedupd:u:crawl-7:{694bd104}http://a/");
  EXPECT_EQ(UrlRecordKey("t1:", "", "https://www.example.com/x?id=1"),
            "t1:u::{1d9dcedc}https://www.example.com/x?id=1");
}

TEST(RedisUrlFormatTest, TheTagIsTheLowHalfOfTheUrlsStableHash) {
  for (const char* url : {"http://a/", "x", "https://www.example.com/x?id=1"}) {
    const uint32_t low = static_cast<uint32_t>(StableHash64(url, kUrlKeyTagSeed));
    EXPECT_EQ(UrlKeyTag(url), absl::StrCat(absl::Hex(low, absl::kZeroPad8))) << url;
  }
}

TEST(RedisUrlFormatTest, AUrlsSlotIsItsTagsInEveryNamespaceWhateverBracesItHolds) {
  for (const std::string url : {"http://a/", "http://a/{b}", "http://a/}{", "{", "x{}y"}) {
    const int want = KeySlot(absl::StrCat("{", UrlKeyTag(url), "}"));
    EXPECT_EQ(KeySlot(UrlRecordKey("dedupd:", "", url)), want) << url;
    EXPECT_EQ(KeySlot(UrlRecordKey("other:", "crawl-b", url)), want) << url;
  }
}

TEST(RedisUrlFormatTest, TagsSpreadUrlsEvenlyOverThreeMasters) {
  constexpr int kUrls = 30'000;
  std::array<int, 3> per_third = {};
  for (int i = 0; i < kUrls; ++i) {
    const int slot =
        KeySlot(UrlRecordKey("dedupd:", "", absl::StrCat("https://h", i % 7, "/p", i)));
    ++per_third[slot * 3 / kSlotCount];
  }
  for (int n : per_third) {
    EXPECT_GT(n, kUrls / 3 * 95 / 100);
    EXPECT_LT(n, kUrls / 3 * 105 / 100);
  }
}

TEST(RedisUrlFormatTest, KeyPrefixes) {
  EXPECT_THAT(CheckKeyPrefix("dedupd:"), IsOk());
  EXPECT_THAT(CheckKeyPrefix("t-1.x_Y:"), IsOk());
  EXPECT_THAT(CheckKeyPrefix(""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 to 64")));
  EXPECT_THAT(CheckKeyPrefix(std::string(65, 'p')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("65 bytes")));
  EXPECT_THAT(CheckKeyPrefix("a{b"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte 1 (0x7b)")));
}

RedisMeta Meta() {
  RedisMeta meta;
  meta.url_normalizer_version = 1;
  meta.text_normalizer_version = 1;
  meta.simhash_version = 2;
  meta.minhash_version = 1;
  meta.created = absl::FromUnixMicros(1'700'000'000'123'456);
  return meta;
}

TEST(RedisUrlFormatTest, MetaIsGoldenAndRoundTrips) {
  const std::string value = EncodeRedisMeta(Meta());
  EXPECT_EQ(value,
            "dedupd-redis format=2 url_normalizer=1 text_normalizer=1 simhash=2 minhash=1 "
            "simhash_max_distance=3 shingle_words=3 created_us=1700000000123456");
  ASSERT_OK_AND_ASSIGN(RedisMeta back, DecodeRedisMeta(value));
  EXPECT_EQ(EncodeRedisMeta(back), value);
  EXPECT_THAT(CheckRedisMeta(back, Meta()), IsOk());
}

// Format 1 (URL records only) is read, so that Open can upgrade it in
// place; it is written in its own form only for that test.
TEST(RedisUrlFormatTest, FormatOneMetaIsReadAndComparedOnItsVersions) {
  const std::string v1 =
      "dedupd-redis format=1 url_normalizer=1 text_normalizer=1 simhash=2 minhash=1 "
      "created_us=1700000000123456";
  ASSERT_OK_AND_ASSIGN(RedisMeta back, DecodeRedisMeta(v1));
  EXPECT_EQ(back.format_version, 1u);
  EXPECT_EQ(back.simhash_max_distance, 0);
  EXPECT_EQ(back.shingle_words, 0);
  EXPECT_EQ(EncodeRedisMeta(back), v1);
  EXPECT_THAT(CheckRedisMeta(back, Meta()), IsOk());
  back.minhash_version = 9;
  EXPECT_THAT(CheckRedisMeta(back, Meta()),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("MinHash version 9")));
  EXPECT_THAT(DecodeRedisMeta(v1 + " extra=1"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("after created_us")));
}

TEST(RedisUrlFormatTest, AnotherSimHashDistanceIsRefused) {
  RedisMeta other = Meta();
  other.simhash_max_distance = 4;
  EXPECT_THAT(CheckRedisMeta(other, Meta()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("written for simhash_max_distance 4; this store uses 3")));
  other = Meta();
  other.shingle_words = 5;
  EXPECT_THAT(CheckRedisMeta(other, Meta()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("made of 5-word shingles; this store uses 3")));
}

TEST(RedisUrlFormatTest, ThisBuildRecordsThisBuildsVersions) {
  const RedisMeta meta = RedisMeta::ThisBuild(absl::FromUnixNanos(1'500));
  EXPECT_EQ(meta.format_version, kRedisFormatVersion);
  EXPECT_EQ(meta.url_normalizer_version, UrlNormalizer::kVersion);
  EXPECT_EQ(meta.text_normalizer_version, kTextNormalizerVersion);
  EXPECT_EQ(meta.simhash_version, SimHasher::kVersion);
  EXPECT_EQ(meta.minhash_version, MinHasher::kVersion);
  EXPECT_EQ(meta.created, absl::FromUnixMicros(1));
}

TEST(RedisUrlFormatTest, OtherFormatsForeignValuesAndMalformedMetasAreRefused) {
  EXPECT_THAT(DecodeRedisMeta("dedupd-redis format=3 whatever=the-future"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("holds dedupd Redis format 3; this build reads formats 1 and 2")));
  EXPECT_THAT(DecodeRedisMeta("hello"), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                 HasSubstr("not a dedupd meta record")));
  EXPECT_THAT(DecodeRedisMeta(""), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(DecodeRedisMeta("dedupd-redis format=2 url_normalizer=x"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("field 2 is not url_normalizer=<n>")));
  EXPECT_THAT(DecodeRedisMeta("dedupd-redis format=2"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("no url_normalizer")));
  EXPECT_THAT(DecodeRedisMeta(EncodeRedisMeta(Meta()) + " extra=1"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("after created_us")));
}

TEST(RedisUrlFormatTest, AnotherAlgorithmVersionIsRefusedNamingIt) {
  RedisMeta other = Meta();
  other.simhash_version = 7;
  EXPECT_THAT(CheckRedisMeta(other, Meta()),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("written with SimHash version 7; this store uses version 2")));
  other = Meta();
  other.url_normalizer_version = 9;
  EXPECT_THAT(CheckRedisMeta(other, Meta()), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                      HasSubstr("URL normalizer version 9")));
  other = Meta();
  other.created = absl::UnixEpoch();
  EXPECT_THAT(CheckRedisMeta(other, Meta()), IsOk()) << "creation time is not a version";
}

}  // namespace
}  // namespace dedupd::redis
