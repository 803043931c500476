// The chunk layer's Redis keys and values (docs/redis_format.md, "Chunk
// records"), pinned byte for byte without a cluster.
#include "storage/redis/redis_chunk_format.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "core/text/sha256.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::redis {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;

std::string Hex(const std::string& s) { return absl::BytesToHexString(s); }

TEST(RedisChunkFormatTest, KeysAreGolden) {
  const Sha256Digest abc = Sha256("abc");
  const std::string h = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  EXPECT_EQ(ChunkTextKey("dedupd:", "", abc), absl::StrCat("dedupd:kt::{", h, "}"));
  EXPECT_EQ(ChunkHoldersKey("dedupd:", "crawl-7", abc),
            absl::StrCat("dedupd:kh:crawl-7:{", h, "}"));
  EXPECT_EQ(ChunkHolderTimesKey("dedupd:", "", abc), absl::StrCat("dedupd:kd::{", h, "}"));
  EXPECT_EQ(ChunkManifestKey("dedupd:", "", "http://a/"), "dedupd:km::{694bd104}http://a/");
  EXPECT_EQ(ChunkLeaseKey("dedupd:", "crawl-7", "http://a/"),
            "dedupd:kl:crawl-7:{694bd104}http://a/");
  EXPECT_EQ(ChunkJournalKey("dedupd:", "", "http://a/"), "dedupd:kj::{694bd104}http://a/");
  EXPECT_EQ(ChunkTextIdKey("dedupd:", "crawl-7", 5), "dedupd:ki:crawl-7:5");
  EXPECT_EQ(ChunkTextIdCounterKey("dedupd:", ""), "dedupd:kn:");
  EXPECT_EQ(ChunkSimHashBucketKey("dedupd:", "", 4, 0, 0x0123456789abcdefULL),
            "dedupd:ksh::0:0123");
  MinHashSignature sig{};
  EXPECT_EQ(ChunkLshBucketKey("dedupd:", "", 0, sig).substr(0, 14), "dedupd:klb::0:");
}

TEST(RedisChunkFormatTest, HolderMembersSortByAgeThenUrlThenChunk) {
  const ChunkHolder h{absl::FromUnixMicros(1700000000123456), "http://a/", "c0"};
  EXPECT_EQ(Hex(ChunkHolderMember(h)), "00060a2418202240687474703a2f2f612f006330");
  ASSERT_OK_AND_ASSIGN(ChunkHolder back, DecodeChunkHolderMember(ChunkHolderMember(h)));
  EXPECT_EQ(back, h);
  // "http://a/" before "http://a/b": the NUL separator sorts first.
  const ChunkHolder longer{h.added, "http://a/b", "a"};
  EXPECT_LT(ChunkHolderMember(h), ChunkHolderMember(longer));
  const ChunkHolder older{h.added - absl::Microseconds(1), "http://z/", "z"};
  EXPECT_LT(ChunkHolderMember(older), ChunkHolderMember(h));
  EXPECT_THAT(DecodeChunkHolderMember("short").status(), StatusIs(absl::StatusCode::kDataLoss));
}

TEST(RedisChunkFormatTest, TextValuesAreGolden) {
  RedisChunkTextValue v;
  v.text_id = 5;
  v.simhash = 0x0123456789abcdefULL;
  EXPECT_EQ(Hex(EncodeRedisChunkTextValue(v)), "0100000000050123456789abcdef");
  v.index_pending = true;
  EXPECT_EQ(Hex(EncodeRedisChunkTextValue(v)), "0104000000050123456789abcdef");
  MinHashSignature sig{};
  sig.fill(0xab);
  v.minhash = sig;
  v.shingles = *ShingleSet32::FromSorted({1, 0x10000});
  const std::string bytes = EncodeRedisChunkTextValue(v);
  EXPECT_EQ(bytes.size(), 14u + 128 + 8);
  EXPECT_EQ(Hex(bytes.substr(0, 2)), "0107");
  EXPECT_EQ(Hex(bytes.substr(142)), "0000000100010000");
  ASSERT_OK_AND_ASSIGN(RedisChunkTextValue back, DecodeRedisChunkTextValue(bytes));
  EXPECT_EQ(back.text_id, 5u);
  EXPECT_EQ(back.minhash, sig);
  EXPECT_EQ(back.shingles, v.shingles);
  EXPECT_TRUE(back.index_pending);
  EXPECT_THAT(DecodeRedisChunkTextValue(bytes.substr(0, 20)).status(),
              StatusIs(absl::StatusCode::kDataLoss));
}

TEST(RedisChunkFormatTest, ManifestsAndJournalsAreGoldenAndRoundTrip) {
  ChunkManifest m;
  m.chunks.push_back(
      {"c0", Sha256("abc"), 0x0123456789abcdefULL, absl::FromUnixMicros(1700000000123456)});
  EXPECT_EQ(Hex(EncodeRedisChunkManifest(m)),
            absl::StrCat("0100", "00000001", Sha256Hex(Sha256("abc")),
                         "0123456789abcdef00060a2418202240000000026330"));
  m.claim = ManifestClaim{0x0102030405060708ULL, absl::FromUnixMicros(1700000000123456), 3, {"x"}};
  const std::string bytes = EncodeRedisChunkManifest(m);
  EXPECT_EQ(Hex(bytes.substr(0, 35)),
            "0101010203040506070800060a24182022400000000300000001000000017800000001");
  ASSERT_OK_AND_ASSIGN(ChunkManifest back, DecodeRedisChunkManifest(bytes));
  EXPECT_EQ(back, m);
  EXPECT_THAT(DecodeRedisChunkManifest(bytes + "x").status(),
              StatusIs(absl::StatusCode::kDataLoss));

  ChunkJournal j;
  j.manifest = m;
  j.texts.push_back({Sha256("abc"), {"", "http://a/", "0"}});
  ASSERT_OK_AND_ASSIGN(ChunkJournal jb, DecodeChunkJournal(EncodeChunkJournal(j)));
  EXPECT_EQ(jb.manifest, j.manifest);
  EXPECT_EQ(jb.texts, j.texts);
  j.manifest.reset();
  EXPECT_EQ(Hex(EncodeChunkJournal(j)).substr(0, 12), "010000000001");
}

}  // namespace
}  // namespace dedupd::redis
