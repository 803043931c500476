#include "storage/redis/redis_content_format.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "core/index/lsh_index.h"
#include "storage/redis/redis_url_format.h"

namespace dedupd::redis {
namespace {

void PutSha(std::string* out, const Sha256Digest& sha) {
  out->append(reinterpret_cast<const char*>(sha.data()), sha.size());
}

Sha256Digest GetSha(const char* p) {
  Sha256Digest sha{};
  std::copy(p, p + sha.size(), sha.begin());
  return sha;
}

constexpr uint8_t kContentValueVersion = 1;
constexpr uint8_t kFlagClaim = 1;
constexpr uint8_t kFlagMinHash = 2;
constexpr size_t kContentFixedBytes = 22;

constexpr uint8_t kFingerprintV1 = 1;
constexpr uint8_t kFingerprintV2 = 2;
constexpr size_t kFingerprintV1Bytes = 41;

constexpr uint8_t kFetchV1 = 1;
constexpr uint8_t kFetchV2 = 2;
constexpr size_t kFetchV1Bytes = 49;

}  // namespace

std::string ContentKey(absl::string_view prefix, absl::string_view name_space,
                       const Sha256Digest& sha256) {
  return TextKeyOfKind(prefix, "c", name_space, sha256);
}

std::string AliasKey(absl::string_view prefix, absl::string_view name_space,
                     const Sha256Digest& sha256) {
  return TextKeyOfKind(prefix, "a", name_space, sha256);
}

std::string AliasTimeKey(absl::string_view prefix, absl::string_view name_space,
                         const Sha256Digest& sha256) {
  return TextKeyOfKind(prefix, "at", name_space, sha256);
}

std::string FetchKey(absl::string_view prefix, absl::string_view name_space,
                     absl::string_view fetched_url) {
  return UrlKeyOfKind(prefix, "fe", name_space, fetched_url);
}

std::string UrlTextsKey(absl::string_view prefix, absl::string_view name_space,
                        absl::string_view url) {
  return UrlKeyOfKind(prefix, "r", name_space, url);
}

std::string TextKeyOfKind(absl::string_view prefix, absl::string_view kind,
                          absl::string_view name_space, const Sha256Digest& sha256) {
  return absl::StrCat(prefix, kind, ":", name_space, ":{", Sha256Hex(sha256), "}");
}

std::string UrlKeyOfKind(absl::string_view prefix, absl::string_view kind,
                         absl::string_view name_space, absl::string_view url) {
  return absl::StrCat(prefix, kind, ":", name_space, ":{", UrlKeyTag(url), "}", url);
}

std::string FingerprintKey(absl::string_view prefix, absl::string_view name_space,
                           uint32_t doc_id) {
  return absl::StrCat(prefix, "f:", name_space, ":", doc_id);
}

std::string DocIdCounterKey(absl::string_view prefix, absl::string_view name_space) {
  return absl::StrCat(prefix, "n:", name_space);
}

int SimHashBlockBits(int blocks, int block) {
  return 64 * (block + 1) / blocks - 64 * block / blocks;
}

uint64_t SimHashBlock(uint64_t simhash, int blocks, int block) {
  const int start = 64 * block / blocks;  // from the most significant bit
  const int bits = SimHashBlockBits(blocks, block);
  const uint64_t shifted = simhash >> (64 - start - bits);
  return bits == 64 ? shifted : shifted & ((uint64_t{1} << bits) - 1);
}

std::string SimHashBucketKey(absl::string_view prefix, absl::string_view name_space, int blocks,
                             int block, uint64_t simhash) {
  return SimHashBucketKeyOfKind(prefix, "sh", name_space, blocks, block, simhash);
}

std::string SimHashBucketKeyOfKind(absl::string_view prefix, absl::string_view kind,
                                   absl::string_view name_space, int blocks, int block,
                                   uint64_t simhash) {
  const int digits = (SimHashBlockBits(blocks, block) + 3) / 4;
  std::string hex = absl::StrCat(absl::Hex(SimHashBlock(simhash, blocks, block)));
  if (static_cast<int>(hex.size()) < digits) hex.insert(0, digits - hex.size(), '0');
  return absl::StrCat(prefix, kind, ":", name_space, ":", block, ":", hex);
}

std::string LshBucketKey(absl::string_view prefix, absl::string_view name_space, int band,
                         const MinHashSignature& sig) {
  return LshBucketKeyOfKind(prefix, "lb", name_space, band, sig);
}

std::string LshBucketKeyOfKind(absl::string_view prefix, absl::string_view kind,
                               absl::string_view name_space, int band,
                               const MinHashSignature& sig) {
  const uint32_t key = LshIndex::BandKey(sig, band, LshIndex::kDefaultRows);
  return absl::StrCat(prefix, kind, ":", name_space, ":", band, ":",
                      absl::Hex(key, absl::kZeroPad8));
}

std::string SimHashBucketMember(uint32_t doc_id, uint64_t simhash) {
  std::string out;
  PutFixed32BE(&out, doc_id);
  PutFixed64BE(&out, simhash);
  return out;
}

std::optional<BucketEntry> DecodeSimHashBucketMember(absl::string_view member) {
  if (member.size() != 12) return std::nullopt;
  return BucketEntry{DecodeFixed32BE(member.data()), DecodeFixed64BE(member.data() + 4)};
}

std::string EncodeRedisContentValue(const RedisContentValue& v) {
  const ContentRecord& r = v.record;
  uint8_t flags = 0;
  if (r.claim_id_hash != 0) flags |= kFlagClaim;
  if (v.minhash.has_value()) flags |= kFlagMinHash;
  if (v.index_pending) flags |= kContentFlagIndexPending;
  std::string out;
  out.push_back(static_cast<char>(kContentValueVersion));
  out.push_back(static_cast<char>(flags));
  PutFixed32BE(&out, r.doc_id);
  PutFixed64BE(&out, r.simhash);
  PutFixed64BE(&out, static_cast<uint64_t>(absl::ToUnixMicros(r.first_seen)));
  if (r.claim_id_hash != 0) PutFixed64BE(&out, r.claim_id_hash);
  if (v.minhash.has_value()) {
    out.append(reinterpret_cast<const char*>(v.minhash->data()), v.minhash->size());
  }
  out.append(r.owner_url);
  return out;
}

absl::StatusOr<RedisContentValue> DecodeRedisContentValue(absl::string_view bytes) {
  if (bytes.size() < kContentFixedBytes + 1 ||
      static_cast<uint8_t>(bytes[0]) != kContentValueVersion) {
    return absl::DataLossError(absl::StrCat("not a content value (", bytes.size(),
                                            " bytes; version 1 has at least ",
                                            kContentFixedBytes + 1, ")"));
  }
  const uint8_t flags = static_cast<uint8_t>(bytes[1]);
  if (flags > (kFlagClaim | kFlagMinHash | kContentFlagIndexPending)) {
    return absl::DataLossError(absl::StrCat("content value has unknown flags ", flags));
  }
  RedisContentValue v;
  v.record.doc_id = DecodeFixed32BE(bytes.data() + 2);
  v.record.simhash = DecodeFixed64BE(bytes.data() + 6);
  v.record.first_seen =
      absl::FromUnixMicros(static_cast<int64_t>(DecodeFixed64BE(bytes.data() + 14)));
  size_t p = kContentFixedBytes;
  if (flags & kFlagClaim) {
    if (bytes.size() < p + 8) return absl::DataLossError("content value is cut short");
    v.record.claim_id_hash = DecodeFixed64BE(bytes.data() + p);
    p += 8;
  }
  if (flags & kFlagMinHash) {
    MinHashSignature sig{};
    if (bytes.size() < p + sig.size()) return absl::DataLossError("content value is cut short");
    std::copy(bytes.data() + p, bytes.data() + p + sig.size(), sig.begin());
    v.minhash = sig;
    p += sig.size();
  }
  if (bytes.size() <= p) return absl::DataLossError("content value has no owner URL");
  v.record.owner_url.assign(bytes.data() + p, bytes.size() - p);
  v.index_pending = (flags & kContentFlagIndexPending) != 0;
  return v;
}

std::string EncodeFingerprintValue(const FingerprintRecord& fp) {
  std::string out;
  out.push_back(static_cast<char>(fp.minhash.has_value() ? kFingerprintV2 : kFingerprintV1));
  PutFixed64BE(&out, fp.simhash);
  PutSha(&out, fp.sha256);
  if (fp.minhash.has_value()) {
    out.append(reinterpret_cast<const char*>(fp.minhash->data()), fp.minhash->size());
  }
  return out;
}

absl::StatusOr<FingerprintRecord> DecodeFingerprintValue(absl::string_view bytes) {
  const bool v2 = !bytes.empty() && static_cast<uint8_t>(bytes[0]) == kFingerprintV2;
  const size_t want = kFingerprintV1Bytes + (v2 ? kMinHashSlots : 0);
  if (bytes.size() != want || (!v2 && static_cast<uint8_t>(bytes[0]) != kFingerprintV1)) {
    return absl::DataLossError(absl::StrCat("not a fingerprint value (", bytes.size(), " bytes)"));
  }
  FingerprintRecord fp;
  fp.simhash = DecodeFixed64BE(bytes.data() + 1);
  fp.sha256 = GetSha(bytes.data() + 9);
  if (v2) {
    MinHashSignature sig{};
    std::copy(bytes.begin() + kFingerprintV1Bytes, bytes.end(), sig.begin());
    fp.minhash = sig;
  }
  return fp;
}

std::string EncodeFetchValue(const FetchRecord& f) {
  const bool validators = !f.etag.empty() || !f.last_modified.empty();
  std::string out;
  out.push_back(static_cast<char>(validators ? kFetchV2 : kFetchV1));
  PutSha(&out, f.sha256);
  PutFixed64BE(&out, static_cast<uint64_t>(absl::ToUnixMicros(f.first_fetch)));
  PutFixed64BE(&out, static_cast<uint64_t>(absl::ToUnixMicros(f.hash_since)));
  if (validators) {
    for (const std::string* field : {&f.etag, &f.last_modified}) {
      PutFixed16BE(&out, static_cast<uint16_t>(field->size()));
      out.append(*field);
    }
  }
  return out;
}

absl::StatusOr<FetchRecord> DecodeFetchValue(absl::string_view bytes) {
  const bool v2 = !bytes.empty() && static_cast<uint8_t>(bytes[0]) == kFetchV2;
  if (bytes.size() < kFetchV1Bytes || (!v2 && static_cast<uint8_t>(bytes[0]) != kFetchV1) ||
      (!v2 && bytes.size() != kFetchV1Bytes)) {
    return absl::DataLossError(absl::StrCat("not a fetch value (", bytes.size(), " bytes)"));
  }
  FetchRecord f;
  f.sha256 = GetSha(bytes.data() + 1);
  f.first_fetch = absl::FromUnixMicros(static_cast<int64_t>(DecodeFixed64BE(bytes.data() + 33)));
  f.hash_since = absl::FromUnixMicros(static_cast<int64_t>(DecodeFixed64BE(bytes.data() + 41)));
  if (!v2) return f;
  absl::string_view rest = bytes.substr(kFetchV1Bytes);
  for (std::string* field : {&f.etag, &f.last_modified}) {
    if (rest.size() < 2) return absl::DataLossError("fetch value of version 2 is cut short");
    const size_t n = DecodeFixed16BE(rest.data());
    rest.remove_prefix(2);
    if (rest.size() < n) return absl::DataLossError("fetch value of version 2 is cut short");
    field->assign(rest.data(), n);
    rest.remove_prefix(n);
  }
  if (!rest.empty() || (f.etag.empty() && f.last_modified.empty())) {
    return absl::DataLossError("fetch value of version 2 is malformed");
  }
  return f;
}

}  // namespace dedupd::redis
