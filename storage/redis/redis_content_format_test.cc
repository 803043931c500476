// The content layer's Redis keys and values (docs/redis_format.md, format
// 2), pinned without a cluster; redis_content_store_test reads the same
// bytes back from a real one.
#include "storage/redis/redis_content_format.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/index/lsh_index.h"
#include "core/text/simhash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/redis/cluster_slots.h"
#include "storage/redis/redis_url_format.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::redis {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;

constexpr char kBump[] = "a changed byte changes the format: bump kRedisFormatVersion";
const absl::Time kGoldenTime = absl::FromUnixMicros(1'700'000'000'123'456);
constexpr char kAbcHex[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

std::string Hex(absl::string_view bytes) { return absl::BytesToHexString(bytes); }

MinHashSignature CountingSignature() {
  MinHashSignature sig{};
  for (int i = 0; i < kMinHashSlots; ++i) sig[i] = static_cast<uint8_t>(i);
  return sig;
}

TEST(RedisContentFormatTest, KeyNamesAreGolden) {
  const Sha256Digest abc = Sha256("abc");
  EXPECT_EQ(ContentKey("dedupd:", "", abc), absl::StrCat("dedupd:c::{", kAbcHex, "}")) << kBump;
  EXPECT_EQ(AliasKey("dedupd:", "crawl-7", abc), absl::StrCat("dedupd:a:crawl-7:{", kAbcHex, "}"))
      << kBump;
  EXPECT_EQ(AliasTimeKey("dedupd:", "", abc), absl::StrCat("dedupd:at::{", kAbcHex, "}")) << kBump;
  EXPECT_EQ(FetchKey("dedupd:", "", "http://a/"), "dedupd:fe::{694bd104}http://a/") << kBump;
  EXPECT_EQ(FingerprintKey("dedupd:", "crawl-7", 5), "dedupd:f:crawl-7:5") << kBump;
  EXPECT_EQ(DocIdCounterKey("dedupd:", ""), "dedupd:n:") << kBump;
  EXPECT_EQ(SimHashBucketKey("dedupd:", "", 4, 0, 0x0123456789abcdefULL), "dedupd:sh::0:0123")
      << kBump;
  EXPECT_EQ(SimHashBucketKey("dedupd:", "n", 4, 3, 0x0123456789abcdefULL), "dedupd:sh:n:3:cdef")
      << kBump;
  EXPECT_EQ(LshBucketKey("dedupd:", "", 0, CountingSignature()), "dedupd:lb::0:1f0bbe34") << kBump;
  EXPECT_EQ(LshBucketKey("dedupd:", "", 17, CountingSignature()), "dedupd:lb::17:32abee8d")
      << kBump;
}

TEST(RedisContentFormatTest, ATextsRecordsShareOneSlotAndItsFetchIsBesideItsUrl) {
  const Sha256Digest sha = Sha256("some text");
  const int slot = KeySlot(ContentKey("p:", "ns", sha));
  EXPECT_EQ(KeySlot(AliasKey("p:", "ns", sha)), slot);
  EXPECT_EQ(KeySlot(AliasTimeKey("p:", "", sha)), slot);
  EXPECT_EQ(KeySlot(FetchKey("p:", "ns", "http://a/x")),
            KeySlot(UrlRecordKey("p:", "ns", "http://a/x")));
}

// Blocks of 64 / (k + 1) bits, most significant first; the last ones one
// bit longer when k + 1 does not divide 64.
TEST(RedisContentFormatTest, SimHashBlocksCoverTheHashMostSignificantFirst) {
  const uint64_t h = 0x0123456789abcdefULL;
  EXPECT_EQ(SimHashBlock(h, 4, 0), 0x0123u);
  EXPECT_EQ(SimHashBlock(h, 4, 3), 0xcdefu);
  EXPECT_EQ(SimHashBucketKey("p:", "", 5, 0, h), "p:sh::0:012") << kBump;
  EXPECT_EQ(SimHashBucketKey("p:", "", 5, 1, h), "p:sh::1:068a") << kBump;
  EXPECT_EQ(SimHashBucketKey("p:", "", 5, 4, h), "p:sh::4:0def") << kBump;
  EXPECT_EQ(SimHashBlock(h, 1, 0), h);
  for (int blocks = 1; blocks <= 8; ++blocks) {
    int bits = 0;
    for (int b = 0; b < blocks; ++b) bits += SimHashBlockBits(blocks, b);
    EXPECT_EQ(bits, 64) << blocks;
  }
  // Pigeonhole: k flipped bits leave one of k + 1 blocks equal.
  for (int k = 0; k <= 7; ++k) {
    uint64_t flipped = h;
    for (int i = 0; i < k; ++i) flipped ^= uint64_t{1} << (i * 64 / (k + 1) + 1);
    int equal = 0;
    for (int b = 0; b <= k; ++b) {
      equal += SimHashBlock(h, k + 1, b) == SimHashBlock(flipped, k + 1, b);
    }
    EXPECT_GE(equal, 1) << k;
  }
}

TEST(RedisContentFormatTest, BucketMembersAreGolden) {
  EXPECT_EQ(Hex(SimHashBucketMember(5, 0x0123456789abcdefULL)), "000000050123456789abcdef")
      << kBump;
  std::optional<BucketEntry> e = DecodeSimHashBucketMember(SimHashBucketMember(7, 42));
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->doc_id, 7u);
  EXPECT_EQ(e->simhash, 42u);
  EXPECT_FALSE(DecodeSimHashBucketMember("short").has_value());
}

TEST(RedisContentFormatTest, ContentValuesAreGoldenAndRoundTrip) {
  RedisContentValue v;
  v.record.doc_id = 5;
  v.record.simhash = 0x0123456789abcdefULL;
  v.record.first_seen = kGoldenTime;
  v.record.owner_url = "http://a/";
  EXPECT_EQ(Hex(EncodeRedisContentValue(v)),
            "01"
            "00"
            "00000005"
            "0123456789abcdef"
            "00060a2418202240"
            "687474703a2f2f612f")
      << kBump;
  v.record.claim_id_hash = 0x0102030405060708ULL;
  v.index_pending = true;
  EXPECT_EQ(Hex(EncodeRedisContentValue(v)),
            "01"
            "05"
            "00000005"
            "0123456789abcdef"
            "00060a2418202240"
            "0102030405060708"
            "687474703a2f2f612f")
      << kBump;
  v.minhash = CountingSignature();
  const std::string bytes = EncodeRedisContentValue(v);
  EXPECT_EQ(bytes.size(), 22u + 8 + 128 + 9);
  EXPECT_EQ(static_cast<uint8_t>(bytes[1]), 7u);
  ASSERT_OK_AND_ASSIGN(RedisContentValue back, DecodeRedisContentValue(bytes));
  EXPECT_EQ(back.record, v.record);
  EXPECT_EQ(back.minhash, v.minhash);
  EXPECT_TRUE(back.index_pending);

  EXPECT_THAT(DecodeRedisContentValue(""), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(DecodeRedisContentValue(bytes.substr(0, 22)), StatusIs(absl::StatusCode::kDataLoss));
  std::string bad_flags = bytes;
  bad_flags[1] = 8;
  EXPECT_THAT(DecodeRedisContentValue(bad_flags), StatusIs(absl::StatusCode::kDataLoss));
  std::string no_owner = bytes.substr(0, 22 + 8 + 128);
  EXPECT_THAT(DecodeRedisContentValue(no_owner), StatusIs(absl::StatusCode::kDataLoss));
}

// The fingerprint and fetch values are the RocksDB backend's bytes
// (docs/storage_format.md's golden vectors).
TEST(RedisContentFormatTest, FingerprintAndFetchValuesAreTheRocksDbBytes) {
  const Sha256Digest abc = Sha256("abc");
  FingerprintRecord fp{0x0123456789abcdefULL, abc, std::nullopt};
  EXPECT_EQ(Hex(EncodeFingerprintValue(fp)), std::string("01") + "0123456789abcdef" + kAbcHex)
      << kBump;
  fp.minhash = CountingSignature();
  const std::string signed_fp = EncodeFingerprintValue(fp);
  EXPECT_EQ(signed_fp.size(), 169u);
  EXPECT_EQ(Hex(signed_fp.substr(0, 41)), std::string("02") + "0123456789abcdef" + kAbcHex);
  ASSERT_OK_AND_ASSIGN(FingerprintRecord back, DecodeFingerprintValue(signed_fp));
  EXPECT_EQ(back, fp);
  EXPECT_THAT(DecodeFingerprintValue(signed_fp.substr(1)), StatusIs(absl::StatusCode::kDataLoss));

  FetchRecord f{abc, kGoldenTime, kGoldenTime + absl::Microseconds(1), "", ""};
  EXPECT_EQ(Hex(EncodeFetchValue(f)),
            std::string("01") + kAbcHex + "00060a2418202240" + "00060a2418202241")
      << kBump;
  f.etag = "\"v1\"";
  f.last_modified = "Wed, 21 Oct 2015 07:28:00 GMT";
  EXPECT_EQ(Hex(EncodeFetchValue(f)), std::string("02") + kAbcHex + "00060a2418202240" +
                                          "00060a2418202241" + "0004" + "22763122" + "001d" +
                                          Hex("Wed, 21 Oct 2015 07:28:00 GMT"))
      << kBump;
  ASSERT_OK_AND_ASSIGN(FetchRecord fetched, DecodeFetchValue(EncodeFetchValue(f)));
  EXPECT_EQ(fetched, f);
  EXPECT_THAT(DecodeFetchValue("x"), StatusIs(absl::StatusCode::kDataLoss));
}

}  // namespace
}  // namespace dedupd::redis
