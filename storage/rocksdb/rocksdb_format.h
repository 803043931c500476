// rocksdb_format.h: the RocksDB backend's on-disk key/value layout, as pure
// encode/decode functions. This file and docs/storage_format.md are the only
// definitions of the format; RocksDbStore (rocksdb_*.cc) uses nothing else to build or
// read keys and values. Nothing here includes RocksDB, so the format can be
// golden-tested and fuzzed on its own.
//
// Every key starts with a one-byte tag naming the record kind (kTagMeta,
// kTagUrl, ..., kTagChunk with a second byte naming the chunk record kind;
// the unassigned tags are listed in docs/storage_format.md).
// Integers are big-endian and fixed width.
//
// Changing any byte these functions produce or accept changes the on-disk
// format and requires bumping kStorageFormatVersion (the golden test in
// rocksdb_format_test.cc fails until you do).
//
// Example:
//   std::string key = rocksdb_format::EncodeUrlKey("http://a.example/");
//   std::string value = rocksdb_format::EncodeUrlValue(absl::Now());
//   absl::StatusOr<absl::Time> first_seen =
//       rocksdb_format::DecodeUrlValue(value);
//
// Thread safety: every function is pure and thread-safe.
#ifndef DEDUPD_STORAGE_ROCKSDB_ROCKSDB_FORMAT_H_
#define DEDUPD_STORAGE_ROCKSDB_ROCKSDB_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "core/text/shingle_set.h"
#include "storage/plan/chunk_planner.h"
#include "storage/plan/content_planner.h"
#include "storage/url_store.h"
#include "storage/url_value.h"

namespace dedupd::rocksdb_format {

// The version of the whole layout (every key and value kind). Stored in the
// meta record. A store of version kOldestUpgradableFormatVersion is read and
// its meta record rewritten to kStorageFormatVersion at open (format 3 only
// added a chunk text value version that format-2 builds cannot read; format
// 2's records are all still read, docs/storage_format.md "Versions"); any
// other version is refused.
inline constexpr uint32_t kStorageFormatVersion = 5;
inline constexpr uint32_t kOldestUpgradableFormatVersion = 2;

// Key tags: the first byte of every key.
inline constexpr char kTagMeta = '\x00';
inline constexpr char kTagUrl = '\x01';
inline constexpr char kTagContent = '\x02';
inline constexpr char kTagAlias = '\x03';
inline constexpr char kTagFingerprint = '\x04';
inline constexpr char kTagChunk = '\x05';
inline constexpr char kTagFetch = '\x06';
// A record of a named namespace: kTagNamespace, the namespace's length
// (one byte), its bytes, then the record's key as in the empty namespace.
inline constexpr char kTagNamespace = '\x08';
// 0x07 and 0x09..0xFF are unassigned. See docs/storage_format.md.

// The URL value's versions and size (storage/url_value.h: the same bytes
// in every backend that keeps URL records as byte strings).
using ::dedupd::kUrlValueBytes;
using ::dedupd::kUrlValueVersion;
using ::dedupd::kUrlValueVersion2;

// The meta record's magic: the first 8 bytes of its value.
inline constexpr absl::string_view kMetaMagic = "DEDUPDST";
// Size of a version-1 meta value: magic, format version, normalizer
// version, creation time.
inline constexpr size_t kMetaBytes = 8 + 4 + 4 + 8;

// The store-wide facts kept in the meta record.
struct StoreMeta {
  // The layout version the store was written with (kStorageFormatVersion
  // when this build created it).
  uint32_t format_version = kStorageFormatVersion;
  // The URL normalizer version whose output the URL keys are. Keys written
  // by another normalizer version would not match this build's keys.
  uint32_t normalizer_version = 0;
  // When the store was created, truncated to microseconds.
  absl::Time created = absl::UnixEpoch();
};

// EncodeMetaKey returns the key of the (single) meta record: the one byte
// kTagMeta. Keys that start with kTagMeta and have more bytes are reserved
// for later meta records.
std::string EncodeMetaKey();

// EncodeMeta returns the meta value in the version-1 layout, writing
// `meta.format_version` as given (tests use this to forge other versions).
// Layout: kMetaMagic (8 bytes) | format_version (u32 BE) |
// normalizer_version (u32 BE) | created (i64 BE microseconds since the Unix
// epoch, truncated).
std::string EncodeMeta(const StoreMeta& meta);

// DecodeMetaFormatVersion reads only the magic and the format version,
// which every format version keeps at the same offsets, so any build can
// say which version a store was written with.
// Errors: DataLoss when `value` is shorter than 12 bytes or the magic does
// not match (not a dedupd meta record).
absl::StatusOr<uint32_t> DecodeMetaFormatVersion(absl::string_view value);

// DecodeMeta decodes a meta value.
// Errors: DataLoss for bad bytes (wrong magic, wrong length);
// FailedPrecondition when the format version is outside
// [kOldestUpgradableFormatVersion, kStorageFormatVersion] (the remaining
// fields' layout is then unknown to this build).
absl::StatusOr<StoreMeta> DecodeMeta(absl::string_view value);

// EncodeUrlKey returns the key of the URL record for `normalized_url` in
// the empty namespace: kTagUrl followed by the URL's bytes, unchanged. Byte
// order of keys is byte order of URLs.
// REQUIRES: normalized_url is non-empty.
std::string EncodeUrlKey(absl::string_view normalized_url);

// NamespacePrefix returns the first bytes of every key of a named
// namespace: kTagNamespace, the length (one byte), the namespace's bytes.
// The namespace's records are the key range [prefix, PrefixEnd(prefix)).
// REQUIRES: 1 <= name_space.size() <= 255.
std::string NamespacePrefix(absl::string_view name_space);

// PrefixEnd returns the smallest key greater than every key that starts
// with `prefix`. REQUIRES: prefix has a byte below 0xFF.
std::string PrefixEnd(absl::string_view prefix);

// EncodeUrlKey returns the key of the URL record for `normalized_url` in
// `name_space`: EncodeUrlKey(normalized_url) for the empty namespace, else
// NamespacePrefix(name_space) + EncodeUrlKey(normalized_url).
// REQUIRES: normalized_url non-empty; name_space at most 255 bytes.
std::string EncodeUrlKey(absl::string_view name_space, absl::string_view normalized_url);

// DecodeUrlKey returns the normalized URL of a URL record key of the empty
// namespace. Errors: DataLoss when `key` is not kTagUrl followed by at
// least one byte. The returned view points into `key` and lives as long as
// it.
absl::StatusOr<absl::string_view> DecodeUrlKey(absl::string_view key);

struct UrlKey {
  absl::string_view name_space;  // empty: the empty namespace
  absl::string_view url;
};

// DecodeAnyUrlKey decodes a URL record key of any namespace. Errors:
// DataLoss naming the defect. The views point into `key`.
absl::StatusOr<UrlKey> DecodeAnyUrlKey(absl::string_view key);

// The URL record's value: EncodeUrlValue, EncodeUrlRecord, DecodeUrlRecord
// and DecodeUrlValue of storage/url_value.h (docs/storage_format.md, "URL
// record").
using ::dedupd::DecodeUrlRecord;
using ::dedupd::DecodeUrlValue;
using ::dedupd::EncodeUrlRecord;
using ::dedupd::EncodeUrlValue;

// ---- Content layer (format version 2) ----

// The algorithms whose output the content records are: a store written
// with other ones would not match this build's hashes and fingerprints.
// Kept in the second meta record (key 00 01), written when the store is
// created (and, for a store of format 4 or older, rewritten with the
// MinHash fields when Open upgrades it).
struct ContentMeta {
  uint32_t text_normalizer_version = 0;
  uint32_t simhash_version = 0;
  uint32_t shingle_words = 0;
  uint64_t simhash_seed = 0;
  // MinHasher::kVersion and ::kSeed of the signatures in the fingerprint
  // (version 2) and chunk text (version 4) records. 0 and 0: a version-1
  // value, written before MinHash signatures were stored.
  uint32_t minhash_version = 0;
  uint64_t minhash_seed = 0;
  bool operator==(const ContentMeta& o) const {
    return text_normalizer_version == o.text_normalizer_version &&
           simhash_version == o.simhash_version && shingle_words == o.shingle_words &&
           simhash_seed == o.simhash_seed && minhash_version == o.minhash_version &&
           minhash_seed == o.minhash_seed;
  }
};
inline constexpr uint8_t kContentMetaVersion = 1;
inline constexpr size_t kContentMetaBytes = 1 + 4 + 4 + 4 + 8;
// Since format 5: with the MinHash version and seed.
inline constexpr uint8_t kContentMetaVersionMinHash = 2;
inline constexpr size_t kContentMetaBytesMinHash = kContentMetaBytes + 4 + 8;

// EncodeContentMetaKey returns 00 01.
std::string EncodeContentMetaKey();
// Layout: version byte (1) | text normalizer version (u32) | SimHash
// version (u32) | shingle words (u32) | SimHash seed (u64); version 2, when
// meta.minhash_version != 0: version byte (2), the same four fields, then
// MinHash version (u32) | MinHash seed (u64).
// REQUIRES: meta.minhash_seed == 0 when meta.minhash_version == 0.
std::string EncodeContentMeta(const ContentMeta& meta);
// Decodes version 1 (minhash fields 0) or 2.
// Errors: DataLoss naming the defect (version, size, a version-2 value
// with MinHash version 0).
absl::StatusOr<ContentMeta> DecodeContentMeta(absl::string_view value);

// Content record: key 02 | SHA-256 (32 bytes); value version byte (1) |
// doc id (u32) | SimHash (u64) | first seen (i64 micros) | alias count (u64)
// | owner URL (the rest, at least one byte). Version 2 (since format 5), a
// text recorded with a claim id: version byte (2), the same four fields,
// the claim id hash (u64, never 0), then the owner URL.
inline constexpr uint8_t kContentValueVersion = 1;
inline constexpr uint8_t kContentValueVersion2 = 2;
std::string EncodeContentKey(const Sha256Digest& sha256);
// The planner's record, field for field (doc id, SimHash, first seen,
// alias count, owner URL, claim id hash): one type, no copies between two.
using ContentValue = ContentRecord;
// Version 1 when v.claim_id_hash is 0, else version 2.
// REQUIRES: v.owner_url non-empty.
std::string EncodeContentValue(const ContentValue& v);
// Errors: DataLoss naming the defect (version, length, a version-2 value
// with claim id hash 0). Never crashes, whatever the bytes; every value it
// accepts is what EncodeContentValue writes for the result.
absl::StatusOr<ContentValue> DecodeContentValue(absl::string_view value);

// Alias record: key 03 | SHA-256 (32) | alias URL bytes; value version byte
// (1) | time added (i64 micros). EncodeAliasPrefix is the key prefix shared
// by every alias of one text (iterate it for the list, in URL byte order).
inline constexpr uint8_t kAliasValueVersion = 1;
std::string EncodeAliasPrefix(const Sha256Digest& sha256);
std::string EncodeAliasKey(const Sha256Digest& sha256, absl::string_view url);
// The alias URL of an alias key (a view into `key`).
// Errors: DataLoss when `key` is not an alias key.
absl::StatusOr<absl::string_view> DecodeAliasKeyUrl(absl::string_view key);
std::string EncodeAliasValue(absl::Time added);
absl::StatusOr<absl::Time> DecodeAliasValue(absl::string_view value);

// Fingerprint record: key 04 | doc id (u32); value version byte (1) |
// SimHash (u64) | SHA-256 (32); version 2 (a text recorded with a MinHash
// signature) appends the signature (128 bytes). Scanned at open to rebuild
// the in-memory near-duplicate indexes (SimHash; LSH for version 2); the
// largest key gives the next doc id.
inline constexpr uint8_t kFingerprintValueVersion = 1;
inline constexpr size_t kFingerprintValueBytes = 1 + 8 + 32;
inline constexpr uint8_t kFingerprintValueVersionMinHash = 2;
inline constexpr size_t kFingerprintValueBytesMinHash = kFingerprintValueBytes + kMinHashSlots;
std::string EncodeFingerprintKey(uint32_t doc_id);
absl::StatusOr<uint32_t> DecodeFingerprintKey(absl::string_view key);
// Version 1 (41 bytes): the chunk fingerprint records' value too.
std::string EncodeFingerprintValue(uint64_t simhash, const Sha256Digest& sha256);
// Version 2 when `record` has a signature, else version 1.
std::string EncodeFingerprintValue(const FingerprintRecord& record);
// The planner's record (SimHash, SHA-256, signature for version 2).
// Errors: DataLoss for another version or size.
using FingerprintValue = FingerprintRecord;
absl::StatusOr<FingerprintValue> DecodeFingerprintValue(absl::string_view value);

// Fetch record: key 06 | fetched URL bytes; value version byte (1) |
// SHA-256 of the last fetch (32) | first fetch (i64 micros) | hash since
// (i64 micros: the first fetch that saw this hash). Version 2 (a fetch with
// validators) adds the ETag and the Last-Modified value, each a u16 BE
// length and its bytes; a fetch without either keeps version 1.
inline constexpr uint8_t kFetchValueVersion = 1;
inline constexpr uint8_t kFetchValueVersion2 = 2;
inline constexpr size_t kFetchValueBytes = 1 + 32 + 8 + 8;
std::string EncodeFetchKey(absl::string_view fetched_url);
// The planner's record (SHA-256, first fetch, hash since).
using FetchValue = FetchRecord;
std::string EncodeFetchValue(const FetchValue& v);
absl::StatusOr<FetchValue> DecodeFetchValue(absl::string_view value);

// ---- Chunk layer (tag 0x05, column family "content"; format version 2) ----
//
// A second byte after kTagChunk names the chunk record kind. The records
// are those of storage/plan/chunk_planner.h: manifest, text, holder and
// fingerprint. They were added to format 2 without a bump: builds that
// predate them never read or write keys starting with 05 (see
// docs/storage_format.md, "Versions").
inline constexpr char kChunkManifest = '\x01';
inline constexpr char kChunkText = '\x02';
inline constexpr char kChunkHolder = '\x03';
inline constexpr char kChunkFingerprint = '\x04';
inline constexpr char kChunkTextById = '\x05';

// Chunk manifest: key 05 01 | document URL bytes (the rest of the key).
// Value: version byte (1) | chunk count n (u32, >= 1) | n entries of
// id length (u32, >= 1) | chunk id bytes | SHA-256 (32) | SimHash (u64) |
// added (i64 micros). Version 2 (since format 5), a manifest written by a
// claim with a claim id: version byte (2) | claim id hash (u64, never 0) |
// claim time (i64 micros) | replaced chunks r (u32) | removed count m (u32,
// <= r) | m removed chunk ids of id length (u32, >= 1) | id bytes | then
// the chunk count and entries of version 1.
inline constexpr uint8_t kChunkManifestValueVersion = 1;
inline constexpr uint8_t kChunkManifestValueVersion2 = 2;
// REQUIRES: document_url non-empty.
std::string EncodeChunkManifestKey(absl::string_view document_url);
// The chunk planner's StoredChunk (chunk id, SHA-256, SimHash, added).
using ChunkManifestEntry = StoredChunk;
// The chunk planner's ChunkManifest (entries, and the claim that wrote
// them when it had a claim id).
using ChunkManifestValue = ChunkManifest;
// Version 1 without m.claim, else version 2.
// REQUIRES: m.chunks non-empty, every chunk_id non-empty and shorter than
// 2^32 bytes; with m.claim, claim_id_hash != 0, replaced_chunks < 2^32 and
// at least the removed ids, each non-empty and shorter than 2^32 bytes.
std::string EncodeChunkManifestValue(const ChunkManifestValue& m);
// Errors: DataLoss naming the defect (version, count, truncated entry,
// trailing bytes, claim id hash 0, more removed ids than replaced chunks).
// Never crashes, whatever the bytes; every value it accepts is what
// EncodeChunkManifestValue writes for the result.
absl::StatusOr<ChunkManifestValue> DecodeChunkManifestValue(absl::string_view value);

// Chunk text record: key 05 02 | SHA-256 (32). Value, version 2 (written
// since storage format 3): version byte (2) | text id (u32) | SimHash (u64)
// | holders (u64, >= 1) | owner added (i64 micros) | owner URL length (u32,
// >= 1) | owner URL | owner chunk id (the rest, >= 1 byte). The owner is the
// text's oldest holder (ChunkHolder order); it has no holder record, every
// other holder has one. Version 1 (format 2, still read): the first 21
// bytes alone, without an owner; then every holder has a holder record.
inline constexpr uint8_t kChunkTextValueVersion = 2;
inline constexpr uint8_t kChunkTextValueVersionWithoutOwner = 1;
inline constexpr size_t kChunkTextValueFixedBytes = 1 + 4 + 8 + 8;
std::string EncodeChunkTextKey(const Sha256Digest& sha256);
// The key range of every chunk text record by SHA-256: [first, end).
std::string ChunkTextKeysBegin();
std::string ChunkTextKeysEnd();
struct ChunkTextValue {
  uint32_t text_id = 0;
  uint64_t simhash = 0;
  uint64_t holders = 0;
  // Version 2 only (has_owner): the text's oldest holder.
  bool has_owner = false;
  absl::Time owner_added;
  std::string owner_url;
  std::string owner_chunk_id;
};
// Encodes version 2, or version 1 when !v.has_owner (tests and tools that
// build format-2 stores).
// REQUIRES: v.holders >= 1; with has_owner, owner_url and owner_chunk_id
// non-empty and owner_url shorter than 2^32 bytes.
std::string EncodeChunkTextValue(const ChunkTextValue& v);
// Errors: DataLoss naming the defect (also for a holder count of 0).
absl::StatusOr<ChunkTextValue> DecodeChunkTextValue(absl::string_view value);

// Chunk holder record: key 05 03 | SHA-256 (32) | added (8 bytes: i64
// micros with the sign bit flipped, big-endian, so that byte order is
// numeric order before the epoch too) | document URL | 00 | chunk id.
// Value: the version byte (1) alone. The holders of one text are the key
// range EncodeChunkHolderPrefix(sha256), ordered oldest first, then by
// document URL, then by chunk id (ChunkHolder::operator<): the URL's NUL
// terminator sorts a URL before every longer URL it is a prefix of, as
// std::string does, and the chunk id is last, so it may hold any bytes.
inline constexpr uint8_t kChunkHolderValueVersion = 1;
std::string EncodeChunkHolderPrefix(const Sha256Digest& sha256);
struct ChunkHolderKey {
  Sha256Digest sha256{};
  absl::Time added;
  std::string document_url;
  std::string chunk_id;
};
// REQUIRES: document_url non-empty without a NUL byte; chunk_id non-empty.
std::string EncodeChunkHolderKey(const ChunkHolderKey& k);
// Errors: DataLoss when `key` is not a holder key (tag, length, no NUL
// after a non-empty URL, empty chunk id).
absl::StatusOr<ChunkHolderKey> DecodeChunkHolderKey(absl::string_view key);
std::string EncodeChunkHolderValue();
// Errors: DataLoss unless `value` is exactly the version-1 value.
absl::Status CheckChunkHolderValue(absl::string_view value);

// Chunk fingerprint record: key 05 04 | text id (u32). Value: the 41 bytes
// of a fingerprint record (EncodeFingerprintValue: version, SimHash,
// SHA-256). Scanned at open into the chunk index; the largest key gives the
// next text id.
std::string EncodeChunkFingerprintKey(uint32_t text_id);
// Errors: DataLoss when `key` is not 05 04 and a u32.
absl::StatusOr<uint32_t> DecodeChunkFingerprintKey(absl::string_view key);
// The key range of every chunk fingerprint record: [first, end).
std::string ChunkFingerprintKeysBegin();
std::string ChunkFingerprintKeysEnd();

// Chunk text record by id (storage format 4; replaces the text record by
// SHA-256 and the fingerprint record): key 05 05 | text id (u32). Value,
// version 3 (the text values' version sequence goes on): version byte (3) |
// SHA-256 (32) | SimHash (u64) | holders (u64, >= 1) | owner added (i64
// micros) | owner URL length (u32, >= 1) | owner URL | owner chunk id (the
// rest, >= 1 byte). Keys grow with the ids a claim allocates, so new texts
// append to the key space; the SHA-256 -> id map that finds a text by its
// digest is in memory (ChunkTextIds), rebuilt from these records at open.
// Version 4 (format 5, a text recorded with a MinHash signature,
// ChunkInput::minhash): version byte (4) | SHA-256 | SimHash | the
// signature (128 bytes, slot 0 first) | shingle set size n (u32, 0: no
// set) | the set's n elements (u32 each, strictly increasing;
// ChunkInput::shingles) | then version 3's holders, owner added, owner URL
// length, owner URL and owner chunk id. Version 4 is written only for a
// signed text (a set without a signature is not kept); both are read
// (version 3: no signature, no set).
inline constexpr uint8_t kChunkTextByIdValueVersion = 3;
inline constexpr size_t kChunkTextByIdValueFixedBytes = 1 + 32 + 8 + 8 + 8 + 4;
inline constexpr uint8_t kChunkTextByIdValueVersionMinHash = 4;
// Version 4 with an empty set.
inline constexpr size_t kChunkTextByIdValueFixedBytesMinHash =
    kChunkTextByIdValueFixedBytes + kMinHashSlots + 4;
std::string EncodeChunkTextByIdKey(uint32_t text_id);
// Errors: DataLoss when `key` is not 05 05 and a u32.
absl::StatusOr<uint32_t> DecodeChunkTextByIdKey(absl::string_view key);
// The key range of every chunk text record by id: [first, end).
std::string ChunkTextByIdKeysBegin();
std::string ChunkTextByIdKeysEnd();
struct ChunkTextByIdValue {
  Sha256Digest sha256{};
  uint64_t simhash = 0;
  uint64_t holders = 0;
  absl::Time owner_added;
  std::string owner_url;
  std::string owner_chunk_id;
  // Version 4 only: the text's MinHash signature.
  std::optional<MinHashSignature> minhash{};
  // Version 4 only: the text's shingle set; empty: none.
  ShingleSet32 shingles{};
};
// Version 4 when v.minhash is set (with v.shingles), else version 3
// (v.shingles is dropped).
// REQUIRES: v.holders >= 1; owner_url and owner_chunk_id non-empty,
// owner_url shorter than 2^32 bytes.
std::string EncodeChunkTextByIdValue(const ChunkTextByIdValue& v);
// Decodes version 3 or 4.
// Errors: DataLoss naming the defect (version, length, a holder count of 0,
// an empty owner URL or chunk id).
absl::StatusOr<ChunkTextByIdValue> DecodeChunkTextByIdValue(absl::string_view value);

}  // namespace dedupd::rocksdb_format

#endif  // DEDUPD_STORAGE_ROCKSDB_ROCKSDB_FORMAT_H_
