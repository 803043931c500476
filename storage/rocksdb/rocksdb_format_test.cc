#include "storage/rocksdb/rocksdb_format.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/time/time.h"
#include "core/text/sha256.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::rocksdb_format {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kBumpMessage[] =
    "the on-disk bytes changed: changing the on-disk format requires bumping "
    "kStorageFormatVersion (storage/rocksdb/rocksdb_format.h), documenting the new "
    "layout in docs/storage_format.md, and only then updating this golden "
    "value";

const absl::Time kGoldenTime = absl::FromUnixMicros(1'700'000'000'123'456);

// Golden vectors: the exact bytes of every record kind at
// kStorageFormatVersion. Stores written by earlier builds hold these bytes;
// a build that encodes differently cannot read them.
TEST(RocksDbFormatGoldenTest, VersionIsPinned) {
  EXPECT_EQ(kStorageFormatVersion, 5u)
      << "bumped the format version: update every golden value below and "
         "docs/storage_format.md";
}

TEST(RocksDbFormatGoldenTest, MetaKey) {
  EXPECT_EQ(absl::BytesToHexString(EncodeMetaKey()), "00") << kBumpMessage;
}

TEST(RocksDbFormatGoldenTest, UrlKey) {
  EXPECT_EQ(absl::BytesToHexString(EncodeUrlKey("http://a.example/")),
            "01"
            "687474703a2f2f612e6578616d706c652f")
      << kBumpMessage;
}

TEST(RocksDbFormatGoldenTest, UrlValue) {
  EXPECT_EQ(absl::BytesToHexString(EncodeUrlValue(kGoldenTime)),
            "01"                 // value version
            "00060a2418202240")  // 1700000000123456 us, i64 big-endian
      << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(EncodeUrlValue(absl::FromUnixMicros(-1))),
            "01"
            "ffffffffffffffff")  // two's complement
      << kBumpMessage;
}

TEST(RocksDbFormatGoldenTest, NamespacedUrlKey) {
  EXPECT_EQ(absl::BytesToHexString(EncodeUrlKey("crawl-7", "http://a/")),
            "08"              // tag: a named namespace's record
            "07"              // namespace length
            "637261776c2d37"  // "crawl-7"
            "01"              // the URL record's key in the empty namespace
            "687474703a2f2f612f")
      << kBumpMessage;
  EXPECT_EQ(EncodeUrlKey("", "http://a/"), EncodeUrlKey("http://a/"));
  EXPECT_EQ(absl::BytesToHexString(NamespacePrefix("crawl-7")), "0807637261776c2d37");
  EXPECT_EQ(absl::BytesToHexString(PrefixEnd(NamespacePrefix("crawl-7"))), "0807637261776c2d38");
}

TEST(RocksDbFormatGoldenTest, NamespacedContentKeysAndDocumentIdKeys) {
  // A named namespace's content-layer records: the prefix, then the key
  // of the empty namespace's record (docs/storage_format.md, "Namespaces").
  EXPECT_EQ(absl::BytesToHexString(NamespacePrefix("crawl-7") + EncodeFingerprintKey(5)),
            "0807637261776c2d37"
            "04"
            "00000005")
      << kBumpMessage;
  // A document named by an id: its key is 01 + the id ("Document keys").
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkManifestKey("\x01"
                                                          "s3://b/k")),
            "0501"
            "01"
            "73333a2f2f622f6b")
      << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(EncodeFetchKey("\x01"
                                                  "doc")),
            "06"
            "01"
            "646f63")
      << kBumpMessage;
}

TEST(RocksDbFormatGoldenTest, UrlValueVersion2) {
  UrlRecord r;
  r.first_seen = kGoldenTime;
  r.last_claim = kGoldenTime + absl::Seconds(1);
  r.last_kind = UrlClaimKind::kReclaimed;
  r.claim_id_hash = 0x0102030405060708;
  r.lease_until = kGoldenTime + absl::Seconds(61);
  EXPECT_EQ(absl::BytesToHexString(EncodeUrlRecord(r)),
            "02"                 // value version
            "0f"                 // flags: last claim, claim id, lease; kind 1 (reclaimed)
            "00060a2418202240"   // first seen
            "00060a24182f6480"   // last claim, 1 s later
            "0102030405060708"   // claim id hash
            "00060a241bc2eb80")  // lease end, 61 s after first seen
      << kBumpMessage;
  UrlRecord leased;
  leased.first_seen = kGoldenTime;
  leased.last_claim = kGoldenTime;
  leased.lease_until = kGoldenTime + absl::Seconds(61);
  EXPECT_EQ(absl::BytesToHexString(EncodeUrlRecord(leased)),
            "02"
            "04"  // flags: lease only; kind 0 (new)
            "00060a2418202240"
            "00060a241bc2eb80")
      << kBumpMessage;
  UrlRecord due;
  due.first_seen = kGoldenTime;
  due.last_claim = kGoldenTime + absl::Seconds(1);
  due.last_kind = UrlClaimKind::kDue;
  EXPECT_EQ(absl::BytesToHexString(EncodeUrlRecord(due)),
            "02"
            "11"  // flags: last claim; kind 2 (due)
            "00060a2418202240"
            "00060a24182f6480")
      << kBumpMessage;
  // A first claim without claim id or lease keeps version 1.
  UrlRecord plain;
  plain.first_seen = kGoldenTime;
  plain.last_claim = kGoldenTime;
  EXPECT_EQ(EncodeUrlRecord(plain), EncodeUrlValue(kGoldenTime)) << kBumpMessage;
}

TEST(RocksDbFormatGoldenTest, Meta) {
  StoreMeta meta;
  meta.format_version = kStorageFormatVersion;
  meta.normalizer_version = 7;
  meta.created = kGoldenTime;
  EXPECT_EQ(absl::BytesToHexString(EncodeMeta(meta)),
            "4445445550445354"   // "DEDUPDST"
            "00000005"           // storage format version
            "00000007"           // normalizer version
            "00060a2418202240")  // created, i64 big-endian microseconds
      << kBumpMessage;
}

// SHA-256("abc"), the NIST vector, as the text digest of the content goldens.
Sha256Digest GoldenSha() { return Sha256("abc"); }
constexpr char kGoldenShaHex[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

TEST(RocksDbFormatGoldenTest, ContentMeta) {
  EXPECT_EQ(absl::BytesToHexString(EncodeContentMetaKey()), "0001") << kBumpMessage;
  ContentMeta meta;
  meta.text_normalizer_version = 1;
  meta.simhash_version = 2;
  meta.shingle_words = 3;
  meta.simhash_seed = 0x6465647570645348ULL;
  EXPECT_EQ(absl::BytesToHexString(EncodeContentMeta(meta)),
            "01"                 // value version
            "00000001"           // text normalizer version
            "00000002"           // SimHash version
            "00000003"           // shingle words
            "6465647570645348")  // SimHash seed
      << kBumpMessage;
  ASSERT_OK_AND_ASSIGN(ContentMeta back, DecodeContentMeta(EncodeContentMeta(meta)));
  EXPECT_EQ(back, meta);
  // Version 2 (what this build writes): the MinHash version and seed too.
  meta.minhash_version = 1;
  meta.minhash_seed = 0x646564757064'4D48ULL;
  EXPECT_EQ(absl::BytesToHexString(EncodeContentMeta(meta)),
            "02"                 // value version
            "00000001"           // text normalizer version
            "00000002"           // SimHash version
            "00000003"           // shingle words
            "6465647570645348"   // SimHash seed
            "00000001"           // MinHash version
            "6465647570644d48")  // MinHash seed
      << kBumpMessage;
  EXPECT_EQ(MinHasher::kVersion, 1u) << kBumpMessage;
  EXPECT_EQ(MinHasher::kSeed, 0x646564757064'4D48ULL) << kBumpMessage;
  ASSERT_OK_AND_ASSIGN(back, DecodeContentMeta(EncodeContentMeta(meta)));
  EXPECT_EQ(back, meta);
  // Version 2 always names a MinHash version; the sizes are exact.
  std::string no_version = EncodeContentMeta(meta);
  no_version[24] = 0;  // the MinHash version's last byte: 1 -> 0
  EXPECT_THAT(DecodeContentMeta(no_version),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("MinHash version 0")));
  EXPECT_THAT(DecodeContentMeta(EncodeContentMeta(meta).substr(0, 21)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("21 bytes")));
}

TEST(RocksDbFormatGoldenTest, ContentRecord) {
  EXPECT_EQ(absl::BytesToHexString(EncodeContentKey(GoldenSha())),
            std::string("02") + kGoldenShaHex)
      << kBumpMessage;
  ContentValue v{7, 0x0123456789abcdefULL, kGoldenTime, 2, "http://a/"};
  EXPECT_EQ(absl::BytesToHexString(EncodeContentValue(v)),
            "01"                   // value version
            "00000007"             // doc id
            "0123456789abcdef"     // SimHash
            "00060a2418202240"     // first seen
            "0000000000000002"     // alias count
            "687474703a2f2f612f")  // owner URL
      << kBumpMessage;
  ASSERT_OK_AND_ASSIGN(ContentValue back, DecodeContentValue(EncodeContentValue(v)));
  EXPECT_EQ(back.doc_id, 7u);
  EXPECT_EQ(back.simhash, v.simhash);
  EXPECT_EQ(back.first_seen, kGoldenTime);
  EXPECT_EQ(back.alias_count, 2u);
  EXPECT_EQ(back.owner_url, "http://a/");
  EXPECT_EQ(back.claim_id_hash, 0u);

  // Version 2: a text recorded NEW by a claim with a claim id.
  ContentValue claimed = v;
  claimed.claim_id_hash = 0x0102030405060708ULL;
  EXPECT_EQ(absl::BytesToHexString(EncodeContentValue(claimed)),
            "02"                   // value version
            "00000007"             // doc id
            "0123456789abcdef"     // SimHash
            "00060a2418202240"     // first seen
            "0000000000000002"     // alias count
            "0102030405060708"     // claim id hash
            "687474703a2f2f612f")  // owner URL
      << kBumpMessage;
  ASSERT_OK_AND_ASSIGN(back, DecodeContentValue(EncodeContentValue(claimed)));
  EXPECT_EQ(back, claimed);
}

TEST(RocksDbFormatGoldenTest, AliasFingerprintAndFetchRecords) {
  EXPECT_EQ(absl::BytesToHexString(EncodeAliasKey(GoldenSha(), "http://b/")),
            std::string("03") + kGoldenShaHex + "687474703a2f2f622f")
      << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(EncodeAliasValue(kGoldenTime)), "0100060a2418202240")
      << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(EncodeFingerprintKey(0x01020304)), "0401020304") << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(EncodeFingerprintValue(0x0123456789abcdefULL, GoldenSha())),
            std::string("01") + "0123456789abcdef" + kGoldenShaHex)
      << kBumpMessage;
  // Version 2: with a MinHash signature (slot i = i), 169 bytes; version 1
  // when the record has none.
  FingerprintRecord signed_fp{0x0123456789abcdefULL, GoldenSha(), MinHashSignature{}};
  std::string sig_hex;
  for (int i = 0; i < kMinHashSlots; ++i) {
    (*signed_fp.minhash)[i] = static_cast<uint8_t>(i);
    sig_hex += absl::BytesToHexString(std::string(1, static_cast<char>(i)));
  }
  EXPECT_EQ(absl::BytesToHexString(EncodeFingerprintValue(signed_fp)),
            std::string("02") + "0123456789abcdef" + kGoldenShaHex + sig_hex)
      << kBumpMessage;
  EXPECT_EQ(EncodeFingerprintValue(signed_fp).size(), 169u);
  EXPECT_EQ(
      EncodeFingerprintValue(FingerprintRecord{0x0123456789abcdefULL, GoldenSha(), std::nullopt}),
      EncodeFingerprintValue(0x0123456789abcdefULL, GoldenSha()));
  EXPECT_EQ(absl::BytesToHexString(EncodeFetchKey("http://c/")), "06687474703a2f2f632f")
      << kBumpMessage;
  FetchValue f{GoldenSha(), kGoldenTime, kGoldenTime + absl::Microseconds(1), "", ""};
  EXPECT_EQ(absl::BytesToHexString(EncodeFetchValue(f)),
            std::string("01") + kGoldenShaHex + "00060a2418202240" + "00060a2418202241")
      << kBumpMessage;
  FetchValue validated = f;
  validated.etag = "\"v1\"";
  validated.last_modified = "Wed, 21 Oct 2015 07:28:00 GMT";
  EXPECT_EQ(absl::BytesToHexString(EncodeFetchValue(validated)),
            std::string("02") + kGoldenShaHex + "00060a2418202240" + "00060a2418202241" + "0004" +
                "22763122" +  // ETag "v1", with its quotes
                "001d" + absl::BytesToHexString("Wed, 21 Oct 2015 07:28:00 GMT"))
      << kBumpMessage;
  ASSERT_OK_AND_ASSIGN(FetchValue back, DecodeFetchValue(EncodeFetchValue(validated)));
  EXPECT_EQ(back, validated);
  FetchValue etag_only = f;
  etag_only.etag = "W/\"x\"";
  ASSERT_OK_AND_ASSIGN(back, DecodeFetchValue(EncodeFetchValue(etag_only)));
  EXPECT_EQ(back, etag_only);
  const std::string v2 = EncodeFetchValue(validated);
  EXPECT_THAT(DecodeFetchValue(v2.substr(0, v2.size() - 1)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("cut short")));
  EXPECT_THAT(DecodeFetchValue(v2 + "x"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("1 bytes after its validators")));
  std::string empty_v2 = EncodeFetchValue(f) + std::string(4, '\0');
  empty_v2[0] = 2;
  EXPECT_THAT(DecodeFetchValue(empty_v2),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("version 1 holds it")));

  // The decoded URL views the key: keep the key alive.
  const std::string alias_key = EncodeAliasKey(GoldenSha(), "http://b/");
  ASSERT_OK_AND_ASSIGN(absl::string_view url, DecodeAliasKeyUrl(alias_key));
  EXPECT_EQ(url, "http://b/");
  ASSERT_OK_AND_ASSIGN(uint32_t id, DecodeFingerprintKey(EncodeFingerprintKey(99)));
  EXPECT_EQ(id, 99u);
  ASSERT_OK_AND_ASSIGN(FingerprintValue fp,
                       DecodeFingerprintValue(EncodeFingerprintValue(5, GoldenSha())));
  EXPECT_EQ(fp.simhash, 5u);
  EXPECT_EQ(fp.sha256, GoldenSha());
  EXPECT_FALSE(fp.minhash.has_value());
  ASSERT_OK_AND_ASSIGN(FingerprintValue signed_back,
                       DecodeFingerprintValue(EncodeFingerprintValue(signed_fp)));
  EXPECT_EQ(signed_back, signed_fp);
  // A version-2 value of the version-1 size, and the reverse, are damaged.
  std::string short_v2 = EncodeFingerprintValue(5, GoldenSha());
  short_v2[0] = '\x02';
  EXPECT_THAT(DecodeFingerprintValue(short_v2).status(), StatusIs(absl::StatusCode::kDataLoss));
  std::string long_v1 = EncodeFingerprintValue(signed_fp);
  long_v1[0] = '\x01';
  EXPECT_THAT(DecodeFingerprintValue(long_v1).status(), StatusIs(absl::StatusCode::kDataLoss));
  ASSERT_OK_AND_ASSIGN(FetchValue fetch, DecodeFetchValue(EncodeFetchValue(f)));
  EXPECT_EQ(fetch.sha256, GoldenSha());
  EXPECT_EQ(fetch.first_fetch, f.first_fetch);
  EXPECT_EQ(fetch.hash_since, f.hash_since);
}

// ---- Chunk layer (tag 0x05) ----

// SHA-256(""), the second digest of the chunk goldens.
constexpr char kEmptyShaHex[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

ChunkManifestValue GoldenManifest() {
  return {{{"0", GoldenSha(), 0x0123456789abcdefULL, kGoldenTime},
           {std::string("\x00\xff", 2), Sha256(""), 5, absl::FromUnixMicros(-1)}}};
}

// The golden manifest as written by a claim with a claim id, 1 s after
// kGoldenTime, that replaced 3 chunks and removed "old" and "7".
ChunkManifestValue GoldenClaimedManifest() {
  ChunkManifestValue m = GoldenManifest();
  m.claim = ManifestClaim{0x0102030405060708ULL, kGoldenTime + absl::Seconds(1), 3, {"old", "7"}};
  return m;
}

// The hex of the golden manifest's chunk count and entries (both versions).
const std::string& GoldenManifestEntriesHex() {
  static const std::string* hex = new std::string(std::string("00000002") +  // chunk count
                                                  "00000001"
                                                  "30" +              // id length, chunk id "0"
                                                  kGoldenShaHex +     // SHA-256
                                                  "0123456789abcdef"  // SimHash
                                                  "00060a2418202240"  // added, i64 BE micros
                                                  "00000002"
                                                  "00ff" +
                                                  kEmptyShaHex +
                                                  "0000000000000005"
                                                  "ffffffffffffffff");
  return *hex;
}

TEST(RocksDbFormatGoldenTest, ChunkManifestRecord) {
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkManifestKey("http://a/")),
            "0501"                 // tag 05, manifest
            "687474703a2f2f612f")  // document URL
      << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkManifestValue(GoldenManifest())),
            std::string("01") +  // value version
                "00000002" +     // chunk count
                "00000001"
                "30" +              // id length, chunk id "0"
                kGoldenShaHex +     // SHA-256
                "0123456789abcdef"  // SimHash
                "00060a2418202240"  // added, i64 big-endian microseconds
                "00000002"
                "00ff" +
                kEmptyShaHex +
                "0000000000000005"
                "ffffffffffffffff")
      << kBumpMessage;
  // Version 2: the claim that wrote it, then the entries of version 1.
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkManifestValue(GoldenClaimedManifest())),
            std::string("02")  // value version
                +
                "0102030405060708"  // claim id hash
                "00060a24182f6480"  // claim time, i64 big-endian microseconds
                "00000003"          // replaced chunks
                "00000002"          // removed chunk ids
                "00000003"
                "6f6c64"  // id length, "old"
                "00000001"
                "37" +  // id length, "7"
                GoldenManifestEntriesHex())
      << kBumpMessage;
}

TEST(RocksDbFormatGoldenTest, ChunkTextRecord) {
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkTextKey(GoldenSha())),
            std::string("0502") + kGoldenShaHex)
      << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkTextValue(
                {7, 0x0123456789abcdefULL, 3, true, kGoldenTime, "http://a/", "c"})),
            "02"                  // value version
            "00000007"            // text id
            "0123456789abcdef"    // SimHash
            "0000000000000003"    // holders
            "00060a2418202240"    // owner added, i64 big-endian microseconds
            "00000009"            // owner URL length
            "687474703a2f2f612f"  // owner URL
            "63")                 // owner chunk id (the rest)
      << kBumpMessage;
  // Version 1 (storage format 2, no owner) is still read, and written
  // only without an owner.
  const std::string v1 = absl::HexStringToBytes(
      "01"
      "00000007"
      "0123456789abcdef"
      "0000000000000003");
  EXPECT_EQ(EncodeChunkTextValue({7, 0x0123456789abcdefULL, 3, false, {}, "", ""}), v1)
      << kBumpMessage;
  ASSERT_OK_AND_ASSIGN(ChunkTextValue t, DecodeChunkTextValue(v1));
  EXPECT_EQ(t.text_id, 7u);
  EXPECT_EQ(t.simhash, 0x0123456789abcdefULL);
  EXPECT_EQ(t.holders, 3u);
  EXPECT_FALSE(t.has_owner);
}

TEST(RocksDbFormatGoldenTest, ChunkHolderRecord) {
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkHolderPrefix(GoldenSha())),
            std::string("0503") + kGoldenShaHex)
      << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkHolderKey(
                {GoldenSha(), kGoldenTime, "http://a/", std::string("c\x00", 2)})),
            std::string("0503") + kGoldenShaHex +
                "80060a2418202240"    // added, sign bit flipped
                "687474703a2f2f612f"  // document URL
                "00"                  // its terminator
                "6300")               // chunk id: the rest, any bytes
      << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(
                EncodeChunkHolderKey({GoldenSha(), absl::FromUnixMicros(-1), "u", "i"}))
                .substr(4 + 64),
            "7fffffffffffffff"
            "75"
            "00"
            "69")
      << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkHolderValue()), "01") << kBumpMessage;
}

TEST(RocksDbFormatGoldenTest, ChunkFingerprintRecord) {
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkFingerprintKey(0x01020304)), "050401020304")
      << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(ChunkFingerprintKeysBegin()), "0504");
  EXPECT_EQ(absl::BytesToHexString(ChunkFingerprintKeysEnd()), "0505");
}

TEST(RocksDbFormatGoldenTest, ChunkTextByIdRecord) {
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkTextByIdKey(0x01020304)), "050501020304")
      << kBumpMessage;
  EXPECT_EQ(absl::BytesToHexString(ChunkTextByIdKeysBegin()), "0505");
  EXPECT_EQ(absl::BytesToHexString(ChunkTextByIdKeysEnd()), "0506");
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkTextByIdValue(
                {GoldenSha(), 0x0123456789abcdefULL, 3, kGoldenTime, "http://a/", "c"})),
            std::string("03")         // value version
                + kGoldenShaHex +     // SHA-256
                "0123456789abcdef"    // SimHash
                "0000000000000003"    // holders
                "00060a2418202240"    // owner added, i64 big-endian microseconds
                "00000009"            // owner URL length
                "687474703a2f2f612f"  // owner URL
                "63")                 // owner chunk id (the rest)
      << kBumpMessage;
  // Version 4: a text recorded with a MinHash signature (slot i = i), which
  // follows the SimHash, and its shingle set, which follows the signature.
  MinHashSignature sig;
  std::string sig_hex;
  for (int i = 0; i < kMinHashSlots; ++i) {
    sig[i] = static_cast<uint8_t>(i);
    sig_hex += absl::BytesToHexString(std::string(1, static_cast<char>(i)));
  }
  const ChunkTextByIdValue signed_text{
      GoldenSha(), 0x0123456789abcdefULL,
      3,           kGoldenTime,
      "http://a/", "c",
      sig,         *ShingleSet32::FromSorted({0x01020304, 0xa0b0c0d0})};
  EXPECT_EQ(absl::BytesToHexString(EncodeChunkTextByIdValue(signed_text)),
            std::string("04")         // value version
                + kGoldenShaHex +     // SHA-256
                "0123456789abcdef" +  // SimHash
                sig_hex +             // MinHash signature, 128 bytes
                "00000002"            // shingle set size
                "01020304a0b0c0d0"    // its elements, u32 each, increasing
                "0000000000000003"    // holders
                "00060a2418202240"    // owner added
                "00000009"            // owner URL length
                "687474703a2f2f612f"  // owner URL
                "63")                 // owner chunk id
      << kBumpMessage;
  EXPECT_EQ(EncodeChunkTextByIdValue(signed_text).size(), 63u + 8 + 128 + 4 + 8);
  ASSERT_OK_AND_ASSIGN(ChunkTextByIdValue back,
                       DecodeChunkTextByIdValue(EncodeChunkTextByIdValue(signed_text)));
  EXPECT_EQ(back.minhash, signed_text.minhash);
  EXPECT_EQ(back.shingles, signed_text.shingles);
  EXPECT_EQ(back.holders, 3u);
  EXPECT_EQ(back.owner_url, "http://a/");
  EXPECT_EQ(back.owner_chunk_id, "c");
  // A signed text without a set: size 0.
  ChunkTextByIdValue no_set = signed_text;
  no_set.shingles = ShingleSet32();
  const std::string no_set_value = EncodeChunkTextByIdValue(no_set);
  EXPECT_EQ(absl::BytesToHexString(no_set_value.substr(1 + 32 + 8 + 128, 4)), "00000000");
  ASSERT_OK_AND_ASSIGN(back, DecodeChunkTextByIdValue(no_set_value));
  EXPECT_TRUE(back.shingles.empty());
  EXPECT_EQ(back.owner_chunk_id, "c");
  // Version 3 still reads, as a text without a signature or set; a set
  // without a signature is not written.
  ChunkTextByIdValue unsigned_text{GoldenSha(), 1, 3, kGoldenTime, "http://a/", "c"};
  unsigned_text.shingles = signed_text.shingles;
  ASSERT_OK_AND_ASSIGN(back, DecodeChunkTextByIdValue(EncodeChunkTextByIdValue(unsigned_text)));
  EXPECT_FALSE(back.minhash.has_value());
  EXPECT_TRUE(back.shingles.empty());
  // A version-4 value without room for the signature is damaged.
  std::string short_v4 = EncodeChunkTextByIdValue({GoldenSha(), 1, 3, kGoldenTime, "u", "c"});
  short_v4[0] = 4;
  EXPECT_THAT(DecodeChunkTextByIdValue(short_v4), StatusIs(absl::StatusCode::kDataLoss));
  // So is a set that does not fit, or is not increasing.
  std::string too_big = EncodeChunkTextByIdValue(signed_text);
  too_big[1 + 32 + 8 + 128 + 3] = 9;
  EXPECT_THAT(DecodeChunkTextByIdValue(too_big),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("shingle set of 9")));
  std::string unsorted = EncodeChunkTextByIdValue(signed_text);
  unsorted[1 + 32 + 8 + 128 + 4 + 4] = 0;  // 0x01020304 then 0x00b0c0d0
  EXPECT_THAT(DecodeChunkTextByIdValue(unsorted),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not in increasing order")));
}

TEST(RocksDbFormatTest, ChunkRecordsRoundTrip) {
  ASSERT_OK_AND_ASSIGN(ChunkManifestValue m,
                       DecodeChunkManifestValue(EncodeChunkManifestValue(GoldenManifest())));
  EXPECT_EQ(m, GoldenManifest());
  ASSERT_OK_AND_ASSIGN(m,
                       DecodeChunkManifestValue(EncodeChunkManifestValue(GoldenClaimedManifest())));
  EXPECT_EQ(m, GoldenClaimedManifest());
  ChunkManifestValue nothing_removed = GoldenManifest();
  nothing_removed.claim = ManifestClaim{1, absl::FromUnixMicros(-1), 0, {}};
  ASSERT_OK_AND_ASSIGN(m, DecodeChunkManifestValue(EncodeChunkManifestValue(nothing_removed)));
  EXPECT_EQ(m, nothing_removed);
  for (absl::Time added : {kGoldenTime, absl::FromUnixMicros(-5)}) {
    const ChunkTextValue in{9, 8, 7, true, added, "https://d/", std::string("\x00id\xff", 4)};
    ASSERT_OK_AND_ASSIGN(ChunkTextValue t, DecodeChunkTextValue(EncodeChunkTextValue(in)));
    EXPECT_EQ(t.text_id, 9u);
    EXPECT_EQ(t.simhash, 8u);
    EXPECT_EQ(t.holders, 7u);
    EXPECT_TRUE(t.has_owner);
    EXPECT_EQ(t.owner_added, added);
    EXPECT_EQ(t.owner_url, in.owner_url);
    EXPECT_EQ(t.owner_chunk_id, in.owner_chunk_id);
  }
  for (absl::Time added : {kGoldenTime, absl::FromUnixMicros(-5), absl::UnixEpoch(),
                           absl::FromUnixMicros(INT64_MIN), absl::FromUnixMicros(INT64_MAX)}) {
    const ChunkHolderKey in{Sha256("x"), added, "https://d/", std::string("\x00id\xff", 4)};
    ASSERT_OK_AND_ASSIGN(ChunkHolderKey h, DecodeChunkHolderKey(EncodeChunkHolderKey(in)));
    EXPECT_EQ(h.sha256, in.sha256);
    EXPECT_EQ(h.added, in.added);
    EXPECT_EQ(h.document_url, in.document_url);
    EXPECT_EQ(h.chunk_id, in.chunk_id);
  }
  EXPECT_THAT(CheckChunkHolderValue(EncodeChunkHolderValue()), IsOk());
  ASSERT_OK_AND_ASSIGN(uint32_t id, DecodeChunkFingerprintKey(EncodeChunkFingerprintKey(77)));
  EXPECT_EQ(id, 77u);
  ASSERT_OK_AND_ASSIGN(id, DecodeChunkTextByIdKey(EncodeChunkTextByIdKey(0xfffffffe)));
  EXPECT_EQ(id, 0xfffffffeu);
  for (absl::Time added : {kGoldenTime, absl::FromUnixMicros(-5)}) {
    const ChunkTextByIdValue in{
        Sha256("t"), 8, 7, added, "https://d/", std::string("\x00id\xff", 4)};
    ASSERT_OK_AND_ASSIGN(ChunkTextByIdValue t,
                         DecodeChunkTextByIdValue(EncodeChunkTextByIdValue(in)));
    EXPECT_EQ(t.sha256, in.sha256);
    EXPECT_EQ(t.simhash, 8u);
    EXPECT_EQ(t.holders, 7u);
    EXPECT_EQ(t.owner_added, added);
    EXPECT_EQ(t.owner_url, in.owner_url);
    EXPECT_EQ(t.owner_chunk_id, in.owner_chunk_id);
  }
}

// The holder keys of one text iterate in ChunkHolder order: oldest first,
// then document URL, then chunk id (bytes compared unsigned, as
// std::string and RocksDB's BytewiseComparator both do).
TEST(RocksDbFormatTest, ChunkHolderKeysSortLikeHolders) {
  using Holder = std::tuple<absl::Time, std::string, std::string>;
  std::vector<Holder> holders;
  for (absl::Time t : {absl::FromUnixMicros(-2), absl::FromUnixMicros(-1), absl::UnixEpoch(),
                       absl::FromUnixMicros(1), kGoldenTime, absl::FromUnixMicros(INT64_MIN),
                       absl::FromUnixMicros(INT64_MAX)}) {
    for (std::string url : {"http://a/", "http://a/b", "http://a", "http://\xff/", "h"}) {
      for (std::string id : {std::string("0"), std::string("0\x00", 2), std::string("\xff"),
                             std::string("\x01"), std::string("00")}) {
        holders.emplace_back(t, url, id);
      }
    }
  }
  std::vector<std::pair<std::string, size_t>> keys;
  for (size_t i = 0; i < holders.size(); ++i) {
    const auto& [t, url, id] = holders[i];
    keys.emplace_back(EncodeChunkHolderKey({GoldenSha(), t, url, id}), i);
  }
  std::sort(keys.begin(), keys.end());  // bytewise
  std::vector<Holder> by_key;
  for (const auto& [key, i] : keys) by_key.push_back(holders[i]);
  std::vector<Holder> by_value = holders;
  std::sort(by_value.begin(), by_value.end());
  EXPECT_EQ(by_key, by_value);
}

TEST(RocksDbFormatTest, DamagedChunkRecordsAreDataLossWithReasons) {
  constexpr absl::StatusCode kDataLoss = absl::StatusCode::kDataLoss;
  const std::string manifest = EncodeChunkManifestValue(GoldenManifest());
  EXPECT_THAT(DecodeChunkManifestValue(""), StatusIs(kDataLoss, HasSubstr("empty")));
  std::string other = manifest;
  other[0] = 3;
  EXPECT_THAT(DecodeChunkManifestValue(other),
              StatusIs(kDataLoss, HasSubstr("chunk manifest value has unknown value version 3")));
  EXPECT_THAT(DecodeChunkManifestValue(manifest.substr(0, manifest.size() - 1)),
              StatusIs(kDataLoss, HasSubstr("ends inside entry 1")));
  EXPECT_THAT(DecodeChunkManifestValue(manifest + "x"),
              StatusIs(kDataLoss, HasSubstr("1 bytes after its 2 entries")));
  EXPECT_THAT(DecodeChunkManifestValue(absl::HexStringToBytes("0100000000")),
              StatusIs(kDataLoss, HasSubstr("0 chunks")));
  EXPECT_THAT(DecodeChunkManifestValue(absl::HexStringToBytes("01ffffffff") + manifest),
              StatusIs(kDataLoss, HasSubstr("4294967295 chunks")));
  std::string empty_id = manifest;
  empty_id[8] = 0;  // the first id's length (00000001 -> 00000000)
  EXPECT_THAT(DecodeChunkManifestValue(empty_id),
              StatusIs(kDataLoss, HasSubstr("entry 0 has an empty chunk id")));
  std::string long_id = manifest;
  long_id[5] = 1;  // the first id's length: 2^24 + 1, past the value's end
  EXPECT_THAT(DecodeChunkManifestValue(long_id),
              StatusIs(kDataLoss, HasSubstr("ends inside entry 0")));

  // Version 2: its claim is checked as closely. Offsets: hash 1..8, time
  // 9..16, replaced 17..20, removed count 21..24, "old" 25..31, "7"
  // 32..36, then the entries.
  const std::string claimed = EncodeChunkManifestValue(GoldenClaimedManifest());
  for (size_t cut : {size_t{1}, size_t{24}, size_t{30}, size_t{36}, claimed.size() - 1}) {
    EXPECT_THAT(DecodeChunkManifestValue(claimed.substr(0, cut)), StatusIs(kDataLoss))
        << "cut at " << cut;
  }
  EXPECT_THAT(DecodeChunkManifestValue(claimed.substr(0, 20)),
              StatusIs(kDataLoss, HasSubstr("ends inside its claim")));
  std::string long_removed = claimed;
  long_removed[27] = 1;  // the length of "old": 3 -> 259, past the value's end
  EXPECT_THAT(DecodeChunkManifestValue(long_removed),
              StatusIs(kDataLoss, HasSubstr("ends inside removed chunk id 0")));
  EXPECT_THAT(DecodeChunkManifestValue(claimed.substr(0, 37)),
              StatusIs(kDataLoss, HasSubstr("too few for its chunk count")));
  EXPECT_THAT(DecodeChunkManifestValue(claimed + "x"),
              StatusIs(kDataLoss, HasSubstr("1 bytes after its 2 entries")));
  std::string no_hash = claimed;
  std::fill(no_hash.begin() + 1, no_hash.begin() + 9, '\0');
  EXPECT_THAT(DecodeChunkManifestValue(no_hash), StatusIs(kDataLoss, HasSubstr("claim id hash 0")));
  std::string more_removed = claimed;
  more_removed[20] = 1;  // replaced: 3 -> 1, below the 2 removed
  EXPECT_THAT(DecodeChunkManifestValue(more_removed),
              StatusIs(kDataLoss, HasSubstr("removed 2 chunks of the 1 it replaced")));
  std::string huge_removed = claimed;
  huge_removed[17] = huge_removed[18] = huge_removed[19] = huge_removed[20] = '\xff';
  huge_removed[21] = huge_removed[22] = huge_removed[23] = huge_removed[24] = '\xff';
  EXPECT_THAT(DecodeChunkManifestValue(huge_removed),
              StatusIs(kDataLoss, HasSubstr("lists 4294967295 removed chunk ids")));
  std::string empty_removed = claimed;
  empty_removed[28] = 0;  // the length of "old": 3 -> 0
  EXPECT_THAT(DecodeChunkManifestValue(empty_removed),
              StatusIs(kDataLoss, HasSubstr("removed chunk id 0 is empty")));

  const std::string text = EncodeChunkTextValue({1, 2, 3, false, {}, "", ""});
  EXPECT_THAT(DecodeChunkTextValue(text.substr(0, 20)),
              StatusIs(kDataLoss, HasSubstr("chunk text value has 20 bytes")));
  EXPECT_THAT(DecodeChunkTextValue(text + "x"), StatusIs(kDataLoss, HasSubstr("22 bytes")));
  const std::string owned = EncodeChunkTextValue({1, 2, 3, true, kGoldenTime, "u", "c"});
  ASSERT_EQ(owned.size(), 35u);
  std::string long_url = owned;
  long_url[32] = 2;  // the owner URL length's last byte: 1 -> 2, no chunk id left
  EXPECT_THAT(DecodeChunkTextValue(long_url),
              StatusIs(kDataLoss, HasSubstr("owner URL of 2 bytes in 2 bytes")));
  EXPECT_THAT(DecodeChunkTextValue(owned.substr(0, 32)),
              StatusIs(kDataLoss, HasSubstr("chunk text value has 32 bytes")));
  std::string no_url = owned;
  no_url[32] = 0;  // the owner URL length's last byte: 1 -> 0
  EXPECT_THAT(DecodeChunkTextValue(no_url), StatusIs(kDataLoss, HasSubstr("owner URL of 0 bytes")));
  std::string v3 = owned;
  v3[0] = 3;
  EXPECT_THAT(DecodeChunkTextValue(v3), StatusIs(kDataLoss, HasSubstr("unknown value version 3")));
  EXPECT_THAT(DecodeChunkTextValue(absl::HexStringToBytes("01"
                                                          "00000001"
                                                          "0000000000000002"
                                                          "0000000000000000")),
              StatusIs(kDataLoss, HasSubstr("0 holders")));

  const std::string holder = EncodeChunkHolderKey({GoldenSha(), kGoldenTime, "u", "i"});
  EXPECT_THAT(DecodeChunkHolderKey(holder.substr(0, holder.size() - 1)),
              StatusIs(kDataLoss, HasSubstr("44 bytes")));
  EXPECT_THAT(DecodeChunkHolderKey(holder.substr(0, 42) + std::string("uu\0", 3)),
              StatusIs(kDataLoss, HasSubstr("empty chunk id")));
  EXPECT_THAT(DecodeChunkHolderKey(holder.substr(0, 42) + std::string("\0i", 2)),
              StatusIs(kDataLoss));
  EXPECT_THAT(DecodeChunkHolderKey(holder.substr(0, 42) + "uu" + "i"),
              StatusIs(kDataLoss, HasSubstr("no NUL")));
  EXPECT_THAT(DecodeChunkHolderKey(holder.substr(0, 42) + std::string("\0ii", 3)),
              StatusIs(kDataLoss, HasSubstr("empty document URL")));
  std::string other_kind = holder;
  other_kind[1] = kChunkText;
  EXPECT_THAT(DecodeChunkHolderKey(other_kind), StatusIs(kDataLoss, HasSubstr("not 05 03")));
  EXPECT_THAT(CheckChunkHolderValue(""), StatusIs(kDataLoss, HasSubstr("empty")));
  EXPECT_THAT(CheckChunkHolderValue("\x01x"), StatusIs(kDataLoss, HasSubstr("2 bytes")));
  EXPECT_THAT(CheckChunkHolderValue("\x07"),
              StatusIs(kDataLoss, HasSubstr("chunk holder value has unknown value version 7")));

  const std::string by_id = EncodeChunkTextByIdValue({GoldenSha(), 2, 3, kGoldenTime, "u", "c"});
  ASSERT_EQ(by_id.size(), 63u);
  EXPECT_THAT(DecodeChunkTextByIdValue(by_id.substr(0, 62)),
              StatusIs(kDataLoss, HasSubstr("chunk text value has 62 bytes")));
  std::string by_id_v2 = by_id;
  by_id_v2[0] = 2;
  EXPECT_THAT(DecodeChunkTextByIdValue(by_id_v2),
              StatusIs(kDataLoss, HasSubstr("unknown value version 2")));
  std::string by_id_long_url = by_id;
  by_id_long_url[60] = 2;  // the owner URL length's last byte: 1 -> 2
  EXPECT_THAT(DecodeChunkTextByIdValue(by_id_long_url),
              StatusIs(kDataLoss, HasSubstr("owner URL of 2 bytes in 2 bytes")));
  std::string by_id_no_url = by_id;
  by_id_no_url[60] = 0;
  EXPECT_THAT(DecodeChunkTextByIdValue(by_id_no_url),
              StatusIs(kDataLoss, HasSubstr("owner URL of 0 bytes")));
  std::string by_id_unheld = by_id;
  by_id_unheld[48] = 0;  // the holder count's last byte: 3 -> 0
  EXPECT_THAT(DecodeChunkTextByIdValue(by_id_unheld), StatusIs(kDataLoss, HasSubstr("0 holders")));
  EXPECT_THAT(DecodeChunkTextByIdKey(EncodeChunkFingerprintKey(1)),
              StatusIs(kDataLoss, HasSubstr("not 05 05")));
  EXPECT_THAT(DecodeChunkTextByIdKey(EncodeChunkTextByIdKey(1) + "x"), StatusIs(kDataLoss));

  EXPECT_THAT(DecodeChunkFingerprintKey(EncodeFingerprintKey(1)),
              StatusIs(kDataLoss, HasSubstr("not 05 04")));
  EXPECT_THAT(DecodeChunkFingerprintKey(EncodeChunkFingerprintKey(1) + "x"), StatusIs(kDataLoss));
}

TEST(RocksDbFormatTest, BadContentValuesAreDataLossWithReasons) {
  EXPECT_THAT(DecodeContentValue(""), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("empty")));
  ContentValue v{1, 2, kGoldenTime, 0, "u"};
  std::string good = EncodeContentValue(v);
  std::string other_version = good;
  other_version[0] = 9;
  EXPECT_THAT(DecodeContentValue(other_version),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("value version 9")));
  EXPECT_THAT(DecodeContentValue(good.substr(0, good.size() - 1)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("at least")));
  ContentValue claimed = v;
  claimed.claim_id_hash = 0x0102030405060708ULL;
  const std::string v2 = EncodeContentValue(claimed);
  ASSERT_EQ(v2.size(), 38u);
  EXPECT_THAT(
      DecodeContentValue(v2.substr(0, 37)),
      StatusIs(absl::StatusCode::kDataLoss, HasSubstr("37 bytes, version 2 has at least 38")));
  std::string no_hash = v2;
  std::fill(no_hash.begin() + 29, no_hash.begin() + 37, '\0');
  EXPECT_THAT(DecodeContentValue(no_hash),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("claim id hash 0")));
  // A version-1 value read as version 2: its owner URL is too short to
  // hold a hash.
  std::string relabelled = good;
  relabelled[0] = 2;
  EXPECT_THAT(DecodeContentValue(relabelled), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(DecodeFingerprintValue(EncodeFingerprintValue(1, GoldenSha()) + "x"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("42 bytes")));
  EXPECT_THAT(DecodeFetchValue("\x01"), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(DecodeFingerprintKey("\x04\x01"), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(DecodeAliasKeyUrl("\x03short"), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(DecodeContentMeta("\x01"), StatusIs(absl::StatusCode::kDataLoss));
}

TEST(RocksDbFormatGoldenTest, GoldenBytesDecode) {
  ASSERT_OK_AND_ASSIGN(absl::Time t, DecodeUrlValue(absl::HexStringToBytes("0100060a2418202240")));
  EXPECT_EQ(t, kGoldenTime);
  ASSERT_OK_AND_ASSIGN(StoreMeta meta,
                       DecodeMeta(absl::HexStringToBytes("44454455504453540000000200000007"
                                                         "00060a2418202240")));
  EXPECT_EQ(meta.format_version, 2u);
  EXPECT_EQ(meta.normalizer_version, 7u);
  EXPECT_EQ(meta.created, kGoldenTime);
}

TEST(RocksDbFormatTest, UrlValueRoundTripsAndTruncatesToMicros) {
  for (absl::Time t : {absl::UnixEpoch(), kGoldenTime, absl::FromUnixMicros(-123),
                       absl::FromUnixMicros(INT64_MAX), absl::FromUnixMicros(INT64_MIN)}) {
    ASSERT_OK_AND_ASSIGN(absl::Time got, DecodeUrlValue(EncodeUrlValue(t)));
    EXPECT_EQ(got, t);
  }
  ASSERT_OK_AND_ASSIGN(absl::Time got,
                       DecodeUrlValue(EncodeUrlValue(kGoldenTime + absl::Nanoseconds(999))));
  EXPECT_EQ(got, kGoldenTime);
  // Before the epoch, truncation is toward negative infinity.
  ASSERT_OK_AND_ASSIGN(got, DecodeUrlValue(EncodeUrlValue(absl::FromUnixNanos(-1))));
  EXPECT_EQ(got, absl::FromUnixMicros(-1));
}

TEST(RocksDbFormatTest, UrlRecordRoundTrips) {
  for (int kind = 0; kind < 3; ++kind) {
    for (int fields = 0; fields < 8; ++fields) {
      UrlRecord r;
      r.first_seen = kGoldenTime;
      r.last_claim = (fields & 1) ? kGoldenTime + absl::Hours(30) : kGoldenTime;
      r.last_kind = static_cast<UrlClaimKind>(kind);
      r.claim_id_hash = (fields & 2) ? 0xfedcba9876543210 : 0;
      if (fields & 4) r.lease_until = absl::FromUnixMicros(-5);
      ASSERT_OK_AND_ASSIGN(UrlRecord got, DecodeUrlRecord(EncodeUrlRecord(r)));
      EXPECT_EQ(got, r) << kind << " " << fields;
    }
  }
}

TEST(RocksDbFormatTest, AnyUrlKeyDecodesBothNamespaces) {
  const std::string plain_key = EncodeUrlKey("http://a/");  // the views point into it
  ASSERT_OK_AND_ASSIGN(UrlKey plain, DecodeAnyUrlKey(plain_key));
  EXPECT_EQ(plain.name_space, "");
  EXPECT_EQ(plain.url, "http://a/");
  const std::string key = EncodeUrlKey("t1", "http://b/");
  ASSERT_OK_AND_ASSIGN(UrlKey named, DecodeAnyUrlKey(key));
  EXPECT_EQ(named.name_space, "t1");
  EXPECT_EQ(named.url, "http://b/");
  EXPECT_THAT(DecodeAnyUrlKey("\x08"), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(DecodeAnyUrlKey(absl::HexStringToBytes("080574")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("length 5 and 1 bytes")));
  EXPECT_THAT(DecodeAnyUrlKey(absl::HexStringToBytes("0800")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("length 0")));
  EXPECT_THAT(DecodeAnyUrlKey(absl::HexStringToBytes("08027431")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("URL key is empty")));
}

TEST(RocksDbFormatTest, UrlKeyRoundTrips) {
  const std::string url("http://a/\0\xff", 11);
  const std::string key = EncodeUrlKey(url);  // the view points into it
  ASSERT_OK_AND_ASSIGN(absl::string_view got, DecodeUrlKey(key));
  EXPECT_EQ(got, url);
  EXPECT_THAT(DecodeUrlKey(""), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(DecodeUrlKey("\x01"), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(DecodeUrlKey(std::string("\0abc", 4)),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("tag 0")));
}

TEST(RocksDbFormatTest, BadUrlValuesAreDataLossWithReasons) {
  EXPECT_THAT(DecodeUrlValue(""), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("empty")));
  EXPECT_THAT(DecodeUrlValue(absl::HexStringToBytes("0300060a2418202240")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("unknown value version 3")));
  // Version 2: the flags must be known, non-zero, and match the length;
  // a stored field must differ from what its absence means.
  EXPECT_THAT(DecodeUrlRecord(absl::HexStringToBytes("02")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("no flags byte")));
  EXPECT_THAT(DecodeUrlRecord(absl::HexStringToBytes("020000060a2418202240")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("version 1 holds it")));
  EXPECT_THAT(DecodeUrlRecord(absl::HexStringToBytes("022000060a2418202240")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("unknown flags 0x20")));
  EXPECT_THAT(DecodeUrlRecord(absl::HexStringToBytes("021800060a2418202240")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("unknown flags 0x18")));
  EXPECT_THAT(DecodeUrlRecord(absl::HexStringToBytes("020400060a2418202240")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("need 18")));
  EXPECT_THAT(DecodeUrlRecord(absl::HexStringToBytes("020100060a241820224000060a2418202240")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("equal to its first seen")));
  EXPECT_THAT(DecodeUrlRecord(absl::HexStringToBytes("020200060a24182022400000000000000000")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("claim id hash 0")));
  EXPECT_THAT(DecodeUrlValue(absl::HexStringToBytes("0100060a24182022")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("8 bytes")));
  EXPECT_THAT(DecodeUrlValue(absl::HexStringToBytes("0100060a241820224000")),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("10 bytes")));
}

TEST(RocksDbFormatTest, BadMetaIsDataLossOtherVersionIsFailedPrecondition) {
  StoreMeta meta;
  meta.normalizer_version = 3;
  const std::string good = EncodeMeta(meta);
  ASSERT_OK_AND_ASSIGN(StoreMeta decoded, DecodeMeta(good));
  EXPECT_EQ(decoded.normalizer_version, 3u);

  EXPECT_THAT(DecodeMeta(""), StatusIs(absl::StatusCode::kDataLoss));
  EXPECT_THAT(DecodeMeta(good.substr(0, 11)), StatusIs(absl::StatusCode::kDataLoss));
  std::string bad_magic = good;
  bad_magic[0] = 'X';
  EXPECT_THAT(DecodeMeta(bad_magic), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("magic")));
  EXPECT_THAT(DecodeMeta(good + "x"), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("25 bytes")));

  StoreMeta v6 = meta;
  v6.format_version = 6;
  const std::string v6_bytes = EncodeMeta(v6) + "future fields";
  EXPECT_THAT(DecodeMeta(v6_bytes),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("storage format version 6, this build reads versions 2 to 5")));
  ASSERT_OK_AND_ASSIGN(uint32_t version, DecodeMetaFormatVersion(v6_bytes));
  EXPECT_EQ(version, 6u);
  StoreMeta v1 = meta;
  v1.format_version = 1;
  EXPECT_THAT(DecodeMeta(EncodeMeta(v1)), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                   HasSubstr("storage format version 1")));
}

// Whether a decoder's answer for `input` is canonical: what it accepts,
// `encode` turns back into the same bytes; what it refuses, it refuses with
// DataLoss (any code when `data_loss_only` is kAnyError).
constexpr bool kAnyError = false;
template <typename T, typename Encode>
::testing::AssertionResult Canonical(const absl::StatusOr<T>& decoded, const std::string& input,
                                     Encode encode, bool data_loss_only = true) {
  if (decoded.ok()) {
    const std::string again = encode(*decoded);
    if (again == input) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "re-encodes " << absl::BytesToHexString(input) << " as "
                                         << absl::BytesToHexString(again);
  }
  if (!data_loss_only || decoded.status().code() == absl::StatusCode::kDataLoss) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure()
         << "refuses " << absl::BytesToHexString(input) << " with " << decoded.status();
}

// A small seeded fuzz loop: decoding arbitrary bytes never crashes, fails
// only with the documented codes, and whatever decodes re-encodes to the
// same bytes (the encodings are canonical). The libFuzzer-style random
// inputs are mixed with mutations of valid records, which reach deeper.
TEST(RocksDbFormatTest, DecodingArbitraryBytesNeverCrashes) {
  std::mt19937_64 rng(20240611);
  StoreMeta meta;
  meta.normalizer_version = 9;
  meta.created = kGoldenTime;
  const std::vector<std::string> seeds = {
      EncodeUrlValue(kGoldenTime),
      EncodeMeta(meta),
      EncodeUrlKey("http://a/"),
      EncodeMetaKey(),
      std::string(),
      EncodeContentValue({3, 4, kGoldenTime, 5, "http://o/"}),
      EncodeContentValue({3, 4, kGoldenTime, 5, "http://o/", 0x0102030405060708ULL}),
      EncodeFingerprintValue(6, Sha256("x")),
      EncodeFingerprintKey(8),
      EncodeFetchValue({Sha256("y"), kGoldenTime, kGoldenTime, "", ""}),
      EncodeAliasKey(Sha256("z"), "http://q/"),
      EncodeContentMeta({1, 2, 3, 4}),
      EncodeChunkManifestValue(GoldenManifest()),
      EncodeChunkManifestValue(GoldenClaimedManifest()),
      EncodeChunkTextValue({1, 2, 3, false, {}, "", ""}),
      EncodeChunkTextValue({1, 2, 3, true, kGoldenTime, "http://o/", "c"}),
      EncodeChunkHolderKey({Sha256("h"), kGoldenTime, "http://h/", "c"}),
      EncodeChunkHolderValue(),
      EncodeChunkFingerprintKey(4),
      EncodeChunkTextByIdKey(5),
      EncodeChunkTextByIdValue({Sha256("i"), 1, 2, kGoldenTime, "http://o/", "c"}),
      EncodeChunkTextByIdValue(
          {Sha256("i"), 1, 2, kGoldenTime, "http://o/", "c", MinHasher().Sign("i j k")}),
      EncodeContentMeta({1, 2, 3, 4, 5, 6})};
  std::uniform_int_distribution<int> byte(0, 255);
  for (int iter = 0; iter < 200'000; ++iter) {
    std::string input;
    if (iter % 2 == 0) {
      const size_t len = rng() % 40;
      for (size_t i = 0; i < len; ++i) input.push_back(static_cast<char>(byte(rng)));
    } else {
      input = seeds[rng() % seeds.size()];
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits; ++e) {
        switch (rng() % 3) {
          case 0:  // flip a byte
            if (!input.empty()) input[rng() % input.size()] = static_cast<char>(byte(rng));
            break;
          case 1:  // truncate
            input.resize(input.empty() ? 0 : rng() % input.size());
            break;
          default:  // append
            input.push_back(static_cast<char>(byte(rng)));
        }
      }
    }

    // URL values of both versions: the record is canonical (a version-2
    // value is not EncodeUrlValue's, which writes version 1 only).
    ASSERT_TRUE(Canonical(DecodeUrlRecord(input), input,
                          [](const UrlRecord& r) { return EncodeUrlRecord(r); }));
    ASSERT_EQ(DecodeUrlValue(input).ok(), DecodeUrlRecord(input).ok());
    absl::StatusOr<StoreMeta> m = DecodeMeta(input);
    if (m.ok()) {
      ASSERT_EQ(EncodeMeta(*m), input);
    } else {
      ASSERT_THAT(m.status().code(), ::testing::AnyOf(absl::StatusCode::kDataLoss,
                                                      absl::StatusCode::kFailedPrecondition));
    }
    absl::StatusOr<uint32_t> v = DecodeMetaFormatVersion(input);
    if (!v.ok()) {
      ASSERT_EQ(v.status().code(), absl::StatusCode::kDataLoss);
    }
    ASSERT_TRUE(
        Canonical(DecodeUrlKey(input), input, [](absl::string_view k) { return EncodeUrlKey(k); }));
    // The content layer's decoders: canonical when they accept.
    ASSERT_TRUE(Canonical(DecodeContentValue(input), input,
                          [](const ContentValue& c) { return EncodeContentValue(c); }));
    ASSERT_TRUE(Canonical(DecodeFingerprintValue(input), input, [](const FingerprintValue& f) {
      return EncodeFingerprintValue(f.simhash, f.sha256);
    }));
    ASSERT_TRUE(Canonical(
        DecodeFingerprintKey(input), input, [](uint32_t id) { return EncodeFingerprintKey(id); },
        kAnyError));
    ASSERT_TRUE(Canonical(DecodeFetchValue(input), input,
                          [](const FetchValue& f) { return EncodeFetchValue(f); }));
    ASSERT_TRUE(Canonical(
        DecodeContentMeta(input), input, [](const ContentMeta& c) { return EncodeContentMeta(c); },
        kAnyError));
    if (auto a = DecodeAliasKeyUrl(input); a.ok()) {
      ASSERT_EQ(input.substr(0, 1), "\x03");
    }
    // The chunk layer's decoders: canonical when they accept.
    ASSERT_TRUE(Canonical(DecodeChunkManifestValue(input), input,
                          [](const ChunkManifestValue& m) { return EncodeChunkManifestValue(m); }));
    ASSERT_TRUE(Canonical(DecodeChunkTextValue(input), input,
                          [](const ChunkTextValue& t) { return EncodeChunkTextValue(t); }));
    ASSERT_TRUE(Canonical(DecodeChunkHolderKey(input), input,
                          [](const ChunkHolderKey& h) { return EncodeChunkHolderKey(h); }));
    if (CheckChunkHolderValue(input).ok()) {
      ASSERT_EQ(input, EncodeChunkHolderValue());
    }
    ASSERT_TRUE(Canonical(
        DecodeChunkFingerprintKey(input), input,
        [](uint32_t id) { return EncodeChunkFingerprintKey(id); }, kAnyError));
    ASSERT_TRUE(Canonical(
        DecodeChunkTextByIdKey(input), input,
        [](uint32_t id) { return EncodeChunkTextByIdKey(id); }, kAnyError));
    ASSERT_TRUE(Canonical(DecodeChunkTextByIdValue(input), input,
                          [](const ChunkTextByIdValue& t) { return EncodeChunkTextByIdValue(t); }));
  }
}

}  // namespace
}  // namespace dedupd::rocksdb_format
