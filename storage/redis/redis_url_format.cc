#include "storage/redis/redis_url_format.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/text/minhash.h"
#include "core/text/simhash.h"
#include "core/text/stable_hash.h"
#include "core/text/text_normalizer.h"
#include "core/url/url_normalizer.h"

namespace dedupd::redis {

absl::Status CheckKeyPrefix(absl::string_view prefix) {
  if (prefix.empty() || prefix.size() > kMaxKeyPrefixBytes) {
    return absl::InvalidArgumentError(absl::StrCat("key prefix: is ", prefix.size(),
                                                   " bytes; it must be 1 to ", kMaxKeyPrefixBytes));
  }
  for (size_t i = 0; i < prefix.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(prefix[i]);
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == ':';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("key prefix: byte ", i, " (0x", absl::Hex(c, absl::kZeroPad2),
                       ") is not an ASCII letter, digit, '.', '_', '-' or ':'"));
    }
  }
  return absl::OkStatus();
}

std::string MetaKey(absl::string_view prefix) { return absl::StrCat(prefix, "meta"); }

std::string UrlKeyTag(absl::string_view normalized_url) {
  const uint32_t low = static_cast<uint32_t>(StableHash64(normalized_url, kUrlKeyTagSeed));
  return absl::StrCat(absl::Hex(low, absl::kZeroPad8));
}

std::string UrlRecordKey(absl::string_view prefix, absl::string_view name_space,
                         absl::string_view normalized_url) {
  return absl::StrCat(prefix, "u:", name_space, ":{", UrlKeyTag(normalized_url), "}",
                      normalized_url);
}

RedisMeta RedisMeta::ThisBuild(absl::Time now) {
  RedisMeta meta;
  meta.url_normalizer_version = UrlNormalizer::kVersion;
  meta.text_normalizer_version = kTextNormalizerVersion;
  meta.simhash_version = SimHasher::kVersion;
  meta.minhash_version = MinHasher::kVersion;
  meta.created = absl::FromUnixMicros(absl::ToUnixMicros(now));
  return meta;
}

std::string EncodeRedisMeta(const RedisMeta& meta) {
  std::string distance;
  if (meta.format_version != kRedisFormatVersionUrlsOnly) {
    distance = absl::StrCat(" simhash_max_distance=", meta.simhash_max_distance,
                            " shingle_words=", meta.shingle_words);
  }
  return absl::StrCat(kRedisMetaMagic, " format=", meta.format_version,
                      " url_normalizer=", meta.url_normalizer_version,
                      " text_normalizer=", meta.text_normalizer_version,
                      " simhash=", meta.simhash_version, " minhash=", meta.minhash_version,
                      distance, " created_us=", absl::ToUnixMicros(meta.created));
}

namespace {

// The fields after the magic, in their fixed order (format 2; format 1
// has no simhash_max_distance and shingle_words).
constexpr absl::string_view kFieldNames[] = {
    "format",  "url_normalizer",       "text_normalizer", "simhash",
    "minhash", "simhash_max_distance", "shingle_words",   "created_us"};
constexpr size_t kFields = 8;
constexpr size_t kDistanceField = 5;
constexpr size_t kShingleField = 6;

absl::Status Malformed(absl::string_view value, absl::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(
      "dedupd meta record \"", absl::CHexEscape(value.substr(0, 200)), "\" is malformed: ", why));
}

}  // namespace

absl::StatusOr<RedisMeta> DecodeRedisMeta(absl::string_view value) {
  std::vector<absl::string_view> words = absl::StrSplit(value, ' ');
  if (words.empty() || words[0] != kRedisMetaMagic) {
    return absl::FailedPreconditionError(
        absl::StrCat("the meta key holds \"", absl::CHexEscape(value.substr(0, 200)),
                     "\", not a dedupd meta record (it starts with \"", kRedisMetaMagic,
                     "\"): another program uses this key prefix; choose another prefix"));
  }
  // Parse name=value words in order; the format version first, alone, so
  // that another format's other fields are never misread.
  int64_t numbers[kFields] = {};
  bool urls_only = false;
  for (size_t f = 0, w = 1; f < kFields; ++f) {
    if (urls_only && (f == kDistanceField || f == kShingleField)) continue;  // format 1 had none
    if (w >= words.size()) return Malformed(value, absl::StrCat("no ", kFieldNames[f]));
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(words[w++], '=');
    if (kv.first != kFieldNames[f] || !absl::SimpleAtoi(kv.second, &numbers[f]) ||
        (f + 1 < kFields && (numbers[f] < 0 || numbers[f] > UINT32_MAX))) {
      return Malformed(value, absl::StrCat("field ", w - 1, " is not ", kFieldNames[f], "=<n>"));
    }
    if (f == 0) {
      urls_only = numbers[0] == kRedisFormatVersionUrlsOnly;
      if (numbers[0] != kRedisFormatVersion && !urls_only) {
        return absl::FailedPreconditionError(
            absl::StrCat("the cluster holds dedupd Redis format ", numbers[0],
                         "; this build reads formats ", kRedisFormatVersionUrlsOnly, " and ",
                         kRedisFormatVersion, " only (docs/redis_format.md, \"Versions\")"));
      }
    }
  }
  if (words.size() != (urls_only ? kFields - 1 : kFields + 1)) {
    return Malformed(value, "unexpected words after created_us");
  }
  if (!urls_only && (numbers[kDistanceField] > 64 || numbers[kShingleField] > 64)) {
    return Malformed(value, "simhash_max_distance or shingle_words is above 64");
  }
  RedisMeta meta;
  meta.format_version = static_cast<uint32_t>(numbers[0]);
  meta.url_normalizer_version = static_cast<uint32_t>(numbers[1]);
  meta.text_normalizer_version = static_cast<uint32_t>(numbers[2]);
  meta.simhash_version = static_cast<uint32_t>(numbers[3]);
  meta.minhash_version = static_cast<uint32_t>(numbers[4]);
  meta.simhash_max_distance = urls_only ? 0 : static_cast<int>(numbers[kDistanceField]);
  meta.shingle_words = urls_only ? 0 : static_cast<int>(numbers[kShingleField]);
  meta.created = absl::FromUnixMicros(numbers[kFields - 1]);
  return meta;
}

absl::Status CheckRedisMeta(const RedisMeta& stored, const RedisMeta& wanted) {
  const struct {
    absl::string_view what;
    uint32_t stored, wanted;
  } versions[] = {
      {"format",
       stored.format_version == kRedisFormatVersionUrlsOnly ? wanted.format_version
                                                            : stored.format_version,
       wanted.format_version},
      {"URL normalizer", stored.url_normalizer_version, wanted.url_normalizer_version},
      {"text normalizer", stored.text_normalizer_version, wanted.text_normalizer_version},
      {"SimHash", stored.simhash_version, wanted.simhash_version},
      {"MinHash", stored.minhash_version, wanted.minhash_version},
  };
  for (const auto& v : versions) {
    if (v.stored != v.wanted) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the cluster's records were written with ", v.what, " version ", v.stored,
          "; this store uses version ", v.wanted,
          ": its keys would not match (use another key prefix, or the build that wrote them)"));
    }
  }
  if (stored.format_version != kRedisFormatVersionUrlsOnly &&
      stored.simhash_max_distance != wanted.simhash_max_distance) {
    return absl::FailedPreconditionError(
        absl::StrCat("the cluster's SimHash bucket sets were written for simhash_max_distance ",
                     stored.simhash_max_distance, "; this store uses ", wanted.simhash_max_distance,
                     " (--simhash_max_distance must be the same on every front end of a cluster)"));
  }
  if (stored.format_version != kRedisFormatVersionUrlsOnly &&
      stored.shingle_words != wanted.shingle_words) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the cluster's fingerprints were made of ", stored.shingle_words,
        "-word shingles; this store uses ", wanted.shingle_words,
        " (--simhash_shingle_words must be the same on every front end of a cluster)"));
  }
  return absl::OkStatus();
}

}  // namespace dedupd::redis
