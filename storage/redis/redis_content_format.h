// redis_content_format.h: the content layer's keys and values on a Redis
// Cluster (docs/redis_format.md, format 2), as pure functions; with the Lua
// scripts in redis_content_store.cc, the only code that builds them.
//
// A text's records share one hash tag, the SHA-256's 64 hex digits, so
// they live in one slot and one Lua script claims the text atomically: its
// content record (ContentKey), its alias sorted set (AliasKey) and the
// aliases' times (AliasTimeKey). Everything else is keyed on its own: the
// fetch record beside the fetched URL's URL record (same tag), the
// fingerprint record per doc id, the namespace's doc id counter, and the
// SimHash and LSH bucket sets.
//
// Changing a byte these functions produce or accept changes the format and
// requires bumping kRedisFormatVersion (redis_content_format_test.cc pins
// them).
//
// Example:
//   std::string key = ContentKey("dedupd:", "", Sha256("text"));
//   // "dedupd:c::{982d9e3e...}"
//   std::string value = EncodeRedisContentValue(record, signature, /*index_pending=*/true);
//
// Thread safety: pure functions.
#ifndef DEDUPD_STORAGE_REDIS_REDIS_CONTENT_FORMAT_H_
#define DEDUPD_STORAGE_REDIS_REDIS_CONTENT_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "storage/content_store.h"
#include "storage/plan/content_planner.h"

namespace dedupd::redis {

// Keys. REQUIRES (all): CheckKeyPrefix(prefix), CheckNamespace(name_space).

// prefix + "c:" + ns + ":{" + Sha256Hex + "}": the content record (string).
std::string ContentKey(absl::string_view prefix, absl::string_view name_space,
                       const Sha256Digest& sha256);
// prefix + "a:" + ns + ":{" + Sha256Hex + "}": the aliases (sorted set,
// every score 0, so that ZRANGE lists them in byte order).
std::string AliasKey(absl::string_view prefix, absl::string_view name_space,
                     const Sha256Digest& sha256);
// prefix + "at:" + ns + ":{" + Sha256Hex + "}": when each alias was added
// (hash: alias URL -> i64 BE microseconds).
std::string AliasTimeKey(absl::string_view prefix, absl::string_view name_space,
                         const Sha256Digest& sha256);
// prefix + "fe:" + ns + ":{" + UrlKeyTag(url) + "}" + url: the fetch record
// of a fetched URL, in the slot of its URL record. REQUIRES: url non-empty.
std::string FetchKey(absl::string_view prefix, absl::string_view name_space,
                     absl::string_view fetched_url);
// prefix + "r:" + ns + ":{" + UrlKeyTag(url) + "}" + url: the texts a URL
// may name as owner or alias (set of raw 32-byte SHA-256s), written before
// the claim scripts that could name it, for Forget (empty namespace only).
std::string UrlTextsKey(absl::string_view prefix, absl::string_view name_space,
                        absl::string_view url);
// prefix + "f:" + ns + ":" + decimal doc id: the fingerprint record.
std::string FingerprintKey(absl::string_view prefix, absl::string_view name_space, uint32_t doc_id);
// prefix + "n:" + ns: the namespace's doc id counter (INCRBY).
std::string DocIdCounterKey(absl::string_view prefix, absl::string_view name_space);
// prefix + "sh:" + ns + ":" + block + ":" + the block's bits as fixed-width
// lowercase hex (SimHashBlockHexDigits): a SimHash bucket set.
std::string SimHashBucketKey(absl::string_view prefix, absl::string_view name_space, int blocks,
                             int block, uint64_t simhash);
// prefix + "lb:" + ns + ":" + band + ":" + 8 lowercase hex digits of
// LshIndex::BandKey(sig, band, kDefaultRows): an LSH band bucket set.
std::string LshBucketKey(absl::string_view prefix, absl::string_view name_space, int band,
                         const MinHashSignature& sig);
// The same two layouts under another layer's key kind (`kind` without the
// colon: "sh" and "lb" are the content layer's, redis_chunk_format.h has
// the chunk layer's), so that layers never share a bucket.
std::string SimHashBucketKeyOfKind(absl::string_view prefix, absl::string_view kind,
                                   absl::string_view name_space, int blocks, int block,
                                   uint64_t simhash);
std::string LshBucketKeyOfKind(absl::string_view prefix, absl::string_view kind,
                               absl::string_view name_space, int band, const MinHashSignature& sig);
// The two per-text and per-URL key layouts every layer uses, under its
// key kind: prefix + kind + ":" + ns + ":{" + SHA-256 hex + "}" (a text's
// records share the text's slot), and prefix + kind + ":" + ns + ":{" +
// UrlKeyTag(url) + "}" + url (a URL's records share the URL's slot).
std::string TextKeyOfKind(absl::string_view prefix, absl::string_view kind,
                          absl::string_view name_space, const Sha256Digest& sha256);
std::string UrlKeyOfKind(absl::string_view prefix, absl::string_view kind,
                         absl::string_view name_space, absl::string_view url);

// SimHash blocks: the 64 bits, most significant first, cut into `blocks`
// contiguous blocks; block b is bits [64 * b / blocks, 64 * (b + 1) / blocks)
// counted from the most significant bit. Two hashes within Hamming distance
// k agree on at least one of k + 1 blocks (pigeonhole; Manku et al. 2007),
// so the k + 1 buckets of a hash hold every stored hash within k.
// REQUIRES: 1 <= blocks <= 64, 0 <= block < blocks.
int SimHashBlockBits(int blocks, int block);
uint64_t SimHashBlock(uint64_t simhash, int blocks, int block);

// SimHashBucketMember: a SimHash bucket set's member: doc id (u32 BE) then
// the SimHash (u64 BE), 12 bytes, so that a query keeps the members within
// its distance before it reads any fingerprint record.
std::string SimHashBucketMember(uint32_t doc_id, uint64_t simhash);
// Parses a member; nullopt when it is not 12 bytes.
struct BucketEntry {
  uint32_t doc_id = 0;
  uint64_t simhash = 0;
};
std::optional<BucketEntry> DecodeSimHashBucketMember(absl::string_view member);

// The content record's value (Redis format 2), immutable once written but
// for the index-pending flag:
//   01, flags (bit 0: claim id hash follows; bit 1: MinHash signature
//   follows; bit 2: index pending), doc id u32 BE, SimHash u64 BE, first
//   seen i64 BE µs, [claim id hash u64 BE], [signature 128 bytes], owner
//   URL (the rest, at least 1 byte).
// The alias count is not in the value: it is the alias set's ZCARD.
struct RedisContentValue {
  ContentRecord record;  // alias_count unused (0)
  std::optional<MinHashSignature> minhash;
  // The fingerprint record and bucket set entries may be missing (written
  // after the claim script; cleared once they are written).
  bool index_pending = false;
};
std::string EncodeRedisContentValue(const RedisContentValue& value);
// Errors: DataLoss when `bytes` is not a content value.
absl::StatusOr<RedisContentValue> DecodeRedisContentValue(absl::string_view bytes);
// The byte offset of the flags and the pending bit (the Lua scripts'
// string positions are these plus one).
inline constexpr int kContentFlagsOffset = 1;
inline constexpr int kContentFlagIndexPending = 4;

// The fingerprint and fetch values are byte for byte the RocksDB backend's
// (docs/storage_format.md, "Fingerprint record", "Fetch record").
std::string EncodeFingerprintValue(const FingerprintRecord& fp);
absl::StatusOr<FingerprintRecord> DecodeFingerprintValue(absl::string_view bytes);
std::string EncodeFetchValue(const FetchRecord& fetch);
absl::StatusOr<FetchRecord> DecodeFetchValue(absl::string_view bytes);

}  // namespace dedupd::redis

#endif  // DEDUPD_STORAGE_REDIS_REDIS_CONTENT_FORMAT_H_
