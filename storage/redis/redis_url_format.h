// redis_url_format.h: the Redis Cluster backend's key names and its meta
// record, as pure functions (docs/redis_format.md is the prose; this file
// and the Lua scripts in redis_url_store.cc are the only code that builds
// keys or values). A URL record's value is the same bytes as the RocksDB
// backend's URL value (storage/url_value.h).
//
// Every key starts with the deployment's key prefix (default "dedupd:"),
// so several deployments, or tests, can share one cluster. A URL record's
// key carries a hash tag of the URL, so its slot is a hash of the URL and
// a claim's read-decide-write runs in one Lua script on one node.
//
// Changing a byte these functions produce or accept changes the format and
// requires bumping kRedisFormatVersion (redis_url_format_test.cc pins it).
//
// Example:
//   std::string key = UrlRecordKey("dedupd:", "crawl-7", "http://a/");
//   // "dedupd:u:crawl-7:{694bd104}http://a/" (the tag is a hash of the URL)
//   RedisMeta meta = RedisMeta::ThisBuild(absl::Now());
//   std::string value = EncodeRedisMeta(meta);  // SET <prefix>meta value NX
//
// Thread safety: pure functions.
#ifndef DEDUPD_STORAGE_REDIS_REDIS_URL_FORMAT_H_
#define DEDUPD_STORAGE_REDIS_REDIS_URL_FORMAT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace dedupd::redis {

// The Redis key layout's version, kept in the meta record. A store opening
// a cluster whose meta names another version refuses (FailedPrecondition),
// except format 1 (URL records only), which RedisUrlStore::Open upgrades
// in place to this version by rewriting the meta (docs/redis_format.md,
// "Versions").
inline constexpr uint32_t kRedisFormatVersion = 2;
// The format that held URL records only, upgraded in place.
inline constexpr uint32_t kRedisFormatVersionUrlsOnly = 1;

// The key prefix a deployment uses unless told otherwise.
inline constexpr absl::string_view kDefaultKeyPrefix = "dedupd:";
// The longest key prefix, in bytes.
inline constexpr size_t kMaxKeyPrefixBytes = 64;

// The meta value's first word: what says "this is a dedupd meta record".
inline constexpr absl::string_view kRedisMetaMagic = "dedupd-redis";

// CheckKeyPrefix returns InvalidArgument unless `prefix` is 1 to
// kMaxKeyPrefixBytes bytes of ASCII letters, digits, '.', '_', '-' and
// ':' (no '{' or '}', which would move the hash tag).
absl::Status CheckKeyPrefix(absl::string_view prefix);

// MetaKey returns the meta record's key: prefix + "meta".
std::string MetaKey(absl::string_view prefix);

// UrlKeyTag returns the hash tag of a URL record's key: the low 32 bits of
// StableHash64(url, kUrlKeyTagSeed) as 8 lowercase hex digits. The URL's
// slot is CRC16 of these 8 bytes mod 16384, the same in every namespace.
std::string UrlKeyTag(absl::string_view normalized_url);
// ASCII "dedupdRK". Part of the format.
inline constexpr uint64_t kUrlKeyTagSeed = 0x646564757064524b;

// UrlRecordKey returns the key of the URL record of `normalized_url` in
// `name_space`: prefix + "u:" + name_space + ":{" + UrlKeyTag(url) + "}" +
// url (the URL's bytes unchanged). A namespace has no ':' (CheckNamespace)
// so the key is unambiguous; the URL may hold any bytes, braces included:
// only the first "{...}" is the hash tag.
// REQUIRES: CheckKeyPrefix(prefix), CheckNamespace(name_space), url non-empty.
std::string UrlRecordKey(absl::string_view prefix, absl::string_view name_space,
                         absl::string_view normalized_url);

// The cluster-wide facts a store checks at open: the key layout and the
// algorithms whose output the keys (and, later, the content records) are.
struct RedisMeta {
  uint32_t format_version = kRedisFormatVersion;
  // core/url UrlNormalizer::kVersion: URL keys are its output.
  uint32_t url_normalizer_version = 0;
  // Text normalizer, SimHash and MinHash versions (core/text): not used by
  // the URL records; recorded from the start so that content records can
  // be added without a format change of the meta.
  uint32_t text_normalizer_version = 0;
  uint32_t simhash_version = 0;
  uint32_t minhash_version = 0;
  // The largest SimHash distance the content layer's bucket sets answer
  // exactly (format 2 on): the sets split the 64 bits into
  // simhash_max_distance + 1 blocks, so every front end of a cluster must
  // use the same value. 0 in a decoded format-1 meta (it had none).
  // Default: 3 (the server's --simhash_max_distance).
  int simhash_max_distance = 3;
  // Words per SimHash and MinHash shingle (SimHashOptions::shingle_words;
  // format 2 on): stored fingerprints compare only with fingerprints of
  // the same shingle size. 0 in a decoded format-1 meta. Default: 3 (the
  // server's --simhash_shingle_words).
  int shingle_words = 3;
  // When the meta was written, truncated to microseconds.
  absl::Time created = absl::UnixEpoch();

  // ThisBuild returns this build's versions, created at `now`.
  static RedisMeta ThisBuild(absl::Time now);
};

// EncodeRedisMeta returns the meta value: one ASCII line,
//   "dedupd-redis format=2 url_normalizer=1 text_normalizer=1 simhash=2
//    minhash=1 simhash_max_distance=3 shingle_words=3
//    created_us=1700000000000000"
// (one space between fields; the order is fixed), readable with redis-cli.
// A meta whose format_version is 1 is written in format 1's form (without
// simhash_max_distance): what format-1 builds wrote.
std::string EncodeRedisMeta(const RedisMeta& meta);

// DecodeRedisMeta parses a meta value of format 2 or format 1 (then
// format_version is 1, simhash_max_distance and shingle_words 0). Errors:
// FailedPrecondition when the value is not a dedupd meta record (another
// program's key), names another format version (its other fields are not
// read then), or is malformed; the message says which.
absl::StatusOr<RedisMeta> DecodeRedisMeta(absl::string_view value);

// CheckRedisMeta returns FailedPrecondition naming the first version in
// which `stored` (the cluster's) differs from `wanted` (this store's
// options), OK when they agree (`created` is not compared). A format-1
// `stored` is compared on its algorithm versions only (the caller then
// upgrades it: RedisUrlStore::Open).
absl::Status CheckRedisMeta(const RedisMeta& stored, const RedisMeta& wanted);

}  // namespace dedupd::redis

#endif  // DEDUPD_STORAGE_REDIS_REDIS_URL_FORMAT_H_
