#include "storage/rocksdb/rocksdb_format.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/coding.h"

namespace dedupd::rocksdb_format {
namespace {

// Microseconds since the epoch as stored: i64, two's complement. The
// conversion through uint64_t is well defined in both directions (C++17
// implementation-defined for the unsigned→signed direction, two's
// complement on every compiler we build with; C++20 makes it standard).
uint64_t TimeToStoredMicros(absl::Time t) { return static_cast<uint64_t>(absl::ToUnixMicros(t)); }

absl::Time StoredMicrosToTime(uint64_t v) { return absl::FromUnixMicros(static_cast<int64_t>(v)); }

constexpr size_t kMetaHeaderBytes = 8 + 4;  // magic + format version

}  // namespace

std::string EncodeMetaKey() { return std::string(1, kTagMeta); }

std::string EncodeMeta(const StoreMeta& meta) {
  std::string out;
  out.reserve(kMetaBytes);
  out.append(kMetaMagic.data(), kMetaMagic.size());
  PutFixed32BE(&out, meta.format_version);
  PutFixed32BE(&out, meta.normalizer_version);
  PutFixed64BE(&out, TimeToStoredMicros(meta.created));
  return out;
}

absl::StatusOr<uint32_t> DecodeMetaFormatVersion(absl::string_view value) {
  if (value.size() < kMetaHeaderBytes) {
    return absl::DataLossError(absl::StrCat("meta record has ", value.size(),
                                            " bytes, fewer than the ", kMetaHeaderBytes,
                                            " of magic and format version"));
  }
  if (value.substr(0, kMetaMagic.size()) != kMetaMagic) {
    return absl::DataLossError(
        "meta record does not start with the magic \"DEDUPDST\": not a dedupd "
        "store, or a damaged one");
  }
  return DecodeFixed32BE(value.data() + kMetaMagic.size());
}

absl::StatusOr<StoreMeta> DecodeMeta(absl::string_view value) {
  absl::StatusOr<uint32_t> version = DecodeMetaFormatVersion(value);
  if (!version.ok()) return version.status();
  if (*version < kOldestUpgradableFormatVersion || *version > kStorageFormatVersion) {
    return absl::FailedPreconditionError(absl::StrCat(
        "meta record has storage format version ", *version, ", this build reads versions ",
        kOldestUpgradableFormatVersion, " to ", kStorageFormatVersion));
  }
  if (value.size() != kMetaBytes) {
    return absl::DataLossError(absl::StrCat("meta record has ", value.size(), " bytes, version ",
                                            *version, " has ", kMetaBytes));
  }
  StoreMeta meta;
  const char* p = value.data() + kMetaHeaderBytes;
  meta.format_version = *version;
  meta.normalizer_version = DecodeFixed32BE(p);
  meta.created = StoredMicrosToTime(DecodeFixed64BE(p + 4));
  return meta;
}

std::string EncodeUrlKey(absl::string_view normalized_url) {
  std::string key;
  key.reserve(1 + normalized_url.size());
  key.push_back(kTagUrl);
  key.append(normalized_url.data(), normalized_url.size());
  return key;
}

absl::StatusOr<absl::string_view> DecodeUrlKey(absl::string_view key) {
  if (key.size() < 2 || key[0] != kTagUrl) {
    return absl::DataLossError(
        key.empty()
            ? std::string("URL key is empty")
            : absl::StrCat("URL key has tag ", static_cast<int>(static_cast<uint8_t>(key[0])),
                           " and ", key.size() - 1, " URL bytes; want tag 1 and at least 1"));
  }
  return key.substr(1);
}

std::string NamespacePrefix(absl::string_view name_space) {
  std::string prefix;
  prefix.reserve(2 + name_space.size());
  prefix.push_back(kTagNamespace);
  prefix.push_back(static_cast<char>(static_cast<uint8_t>(name_space.size())));
  prefix.append(name_space.data(), name_space.size());
  return prefix;
}

std::string PrefixEnd(absl::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<uint8_t>(end.back()) == 0xFF) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<uint8_t>(end.back()) + 1);
  return end;
}

std::string EncodeUrlKey(absl::string_view name_space, absl::string_view normalized_url) {
  if (name_space.empty()) return EncodeUrlKey(normalized_url);
  std::string key = NamespacePrefix(name_space);
  key.push_back(kTagUrl);
  key.append(normalized_url.data(), normalized_url.size());
  return key;
}

absl::StatusOr<UrlKey> DecodeAnyUrlKey(absl::string_view key) {
  UrlKey out;
  if (!key.empty() && key[0] == kTagNamespace) {
    if (key.size() < 2) return absl::DataLossError("namespace key has no length byte");
    const size_t n = static_cast<uint8_t>(key[1]);
    if (n == 0 || key.size() < 2 + n) {
      return absl::DataLossError(
          absl::StrCat("namespace key has length ", n, " and ", key.size() - 2, " bytes after it"));
    }
    out.name_space = key.substr(2, n);
    key.remove_prefix(2 + n);
  }
  absl::StatusOr<absl::string_view> url = DecodeUrlKey(key);
  if (!url.ok()) return url.status();
  out.url = *url;
  return out;
}

namespace {

void PutSha(std::string* out, const Sha256Digest& sha) {
  out->append(reinterpret_cast<const char*>(sha.data()), sha.size());
}

Sha256Digest GetSha(const char* p) {
  Sha256Digest sha;
  for (size_t i = 0; i < sha.size(); ++i) sha[i] = static_cast<uint8_t>(p[i]);
  return sha;
}

// Checks a value's version byte and size; `exact` false means at least
// `bytes`. `what` names the record kind in messages.
absl::Status CheckValue(absl::string_view value, absl::string_view what, uint8_t want_version,
                        size_t bytes, bool exact) {
  if (value.empty()) return absl::DataLossError(absl::StrCat(what, " value is empty"));
  const uint8_t version = static_cast<uint8_t>(value[0]);
  if (version != want_version) {
    return absl::DataLossError(
        absl::StrCat(what, " value has unknown value version ", static_cast<int>(version),
                     " (this build reads version ", static_cast<int>(want_version), ")"));
  }
  if (exact ? value.size() != bytes : value.size() < bytes) {
    return absl::DataLossError(absl::StrCat(what, " value has ", value.size(), " bytes, version ",
                                            static_cast<int>(want_version),
                                            exact ? " has " : " has at least ", bytes));
  }
  return absl::OkStatus();
}

constexpr size_t kContentValueFixedBytes = 1 + 4 + 8 + 8 + 8;

}  // namespace

std::string EncodeContentMetaKey() { return std::string("\x00\x01", 2); }

std::string EncodeContentMeta(const ContentMeta& meta) {
  const bool with_minhash = meta.minhash_version != 0;
  std::string out;
  out.reserve(kContentMetaBytesMinHash);
  out.push_back(static_cast<char>(with_minhash ? kContentMetaVersionMinHash : kContentMetaVersion));
  PutFixed32BE(&out, meta.text_normalizer_version);
  PutFixed32BE(&out, meta.simhash_version);
  PutFixed32BE(&out, meta.shingle_words);
  PutFixed64BE(&out, meta.simhash_seed);
  if (with_minhash) {
    PutFixed32BE(&out, meta.minhash_version);
    PutFixed64BE(&out, meta.minhash_seed);
  }
  return out;
}

absl::StatusOr<ContentMeta> DecodeContentMeta(absl::string_view value) {
  const bool with_minhash =
      !value.empty() && static_cast<uint8_t>(value[0]) == kContentMetaVersionMinHash;
  absl::Status s = with_minhash
                       ? CheckValue(value, "content meta", kContentMetaVersionMinHash,
                                    kContentMetaBytesMinHash, /*exact=*/true)
                       : CheckValue(value, "content meta", kContentMetaVersion, kContentMetaBytes,
                                    /*exact=*/true);
  if (!s.ok()) return s;
  ContentMeta meta;
  const char* p = value.data() + 1;
  meta.text_normalizer_version = DecodeFixed32BE(p);
  meta.simhash_version = DecodeFixed32BE(p + 4);
  meta.shingle_words = DecodeFixed32BE(p + 8);
  meta.simhash_seed = DecodeFixed64BE(p + 12);
  if (with_minhash) {
    meta.minhash_version = DecodeFixed32BE(p + 20);
    meta.minhash_seed = DecodeFixed64BE(p + 24);
    if (meta.minhash_version == 0) {
      // Version 1 is the value without MinHash fields.
      return absl::DataLossError("content meta value of version 2 has MinHash version 0");
    }
  }
  return meta;
}

std::string EncodeContentKey(const Sha256Digest& sha256) {
  std::string key(1, kTagContent);
  PutSha(&key, sha256);
  return key;
}

std::string EncodeContentValue(const ContentValue& v) {
  const bool claim = v.claim_id_hash != 0;
  std::string out;
  out.reserve(kContentValueFixedBytes + (claim ? 8 : 0) + v.owner_url.size());
  out.push_back(static_cast<char>(claim ? kContentValueVersion2 : kContentValueVersion));
  PutFixed32BE(&out, v.doc_id);
  PutFixed64BE(&out, v.simhash);
  PutFixed64BE(&out, TimeToStoredMicros(v.first_seen));
  PutFixed64BE(&out, v.alias_count);
  if (claim) PutFixed64BE(&out, v.claim_id_hash);
  out.append(v.owner_url);
  return out;
}

absl::StatusOr<ContentValue> DecodeContentValue(absl::string_view value) {
  if (value.empty()) return absl::DataLossError("content value is empty");
  const uint8_t version = static_cast<uint8_t>(value[0]);
  if (version != kContentValueVersion && version != kContentValueVersion2) {
    return absl::DataLossError(absl::StrCat("content value has unknown value version ",
                                            static_cast<int>(version), " (this build reads ",
                                            static_cast<int>(kContentValueVersion), " and ",
                                            static_cast<int>(kContentValueVersion2), ")"));
  }
  const bool claim = version == kContentValueVersion2;
  // The fixed fields (with the claim id hash in version 2) and at least one
  // byte of owner URL.
  const size_t fixed = kContentValueFixedBytes + (claim ? 8 : 0);
  absl::Status s = CheckValue(value, "content", version, fixed + 1, /*exact=*/false);
  if (!s.ok()) return s;
  ContentValue v;
  const char* p = value.data() + 1;
  v.doc_id = DecodeFixed32BE(p);
  v.simhash = DecodeFixed64BE(p + 4);
  v.first_seen = StoredMicrosToTime(DecodeFixed64BE(p + 12));
  v.alias_count = DecodeFixed64BE(p + 20);
  if (claim) {
    v.claim_id_hash = DecodeFixed64BE(p + 28);
    if (v.claim_id_hash == 0) {
      return absl::DataLossError("content value of version 2 stores claim id hash 0");
    }
  }
  v.owner_url = std::string(value.substr(fixed));
  return v;
}

std::string EncodeAliasPrefix(const Sha256Digest& sha256) {
  std::string key(1, kTagAlias);
  PutSha(&key, sha256);
  return key;
}

std::string EncodeAliasKey(const Sha256Digest& sha256, absl::string_view url) {
  std::string key = EncodeAliasPrefix(sha256);
  key.append(url.data(), url.size());
  return key;
}

absl::StatusOr<absl::string_view> DecodeAliasKeyUrl(absl::string_view key) {
  if (key.size() < 1 + 32 + 1 || key[0] != kTagAlias) {
    return absl::DataLossError(
        absl::StrCat("alias key of ", key.size(), " bytes is not tag 3, a SHA-256 and a URL"));
  }
  return key.substr(1 + 32);
}

std::string EncodeAliasValue(absl::Time added) {
  std::string value(1, static_cast<char>(kAliasValueVersion));
  PutFixed64BE(&value, TimeToStoredMicros(added));
  return value;
}

absl::StatusOr<absl::Time> DecodeAliasValue(absl::string_view value) {
  absl::Status s = CheckValue(value, "alias", kAliasValueVersion, 9, true);
  if (!s.ok()) return s;
  return StoredMicrosToTime(DecodeFixed64BE(value.data() + 1));
}

std::string EncodeFingerprintKey(uint32_t doc_id) {
  std::string key(1, kTagFingerprint);
  PutFixed32BE(&key, doc_id);
  return key;
}

absl::StatusOr<uint32_t> DecodeFingerprintKey(absl::string_view key) {
  if (key.size() != 5 || key[0] != kTagFingerprint) {
    return absl::DataLossError(
        absl::StrCat("fingerprint key of ", key.size(), " bytes is not tag 4 and a u32"));
  }
  return DecodeFixed32BE(key.data() + 1);
}

std::string EncodeFingerprintValue(uint64_t simhash, const Sha256Digest& sha256) {
  std::string value;
  value.reserve(kFingerprintValueBytes);
  value.push_back(static_cast<char>(kFingerprintValueVersion));
  PutFixed64BE(&value, simhash);
  PutSha(&value, sha256);
  return value;
}

std::string EncodeFingerprintValue(const FingerprintRecord& record) {
  if (!record.minhash.has_value()) return EncodeFingerprintValue(record.simhash, record.sha256);
  std::string value = EncodeFingerprintValue(record.simhash, record.sha256);
  value[0] = static_cast<char>(kFingerprintValueVersionMinHash);
  value.append(reinterpret_cast<const char*>(record.minhash->data()), record.minhash->size());
  return value;
}

absl::StatusOr<FingerprintValue> DecodeFingerprintValue(absl::string_view value) {
  const bool signed_text =
      !value.empty() && static_cast<uint8_t>(value[0]) == kFingerprintValueVersionMinHash;
  absl::Status s = signed_text ? CheckValue(value, "fingerprint", kFingerprintValueVersionMinHash,
                                            kFingerprintValueBytesMinHash, true)
                               : CheckValue(value, "fingerprint", kFingerprintValueVersion,
                                            kFingerprintValueBytes, true);
  if (!s.ok()) return s;
  FingerprintValue v;
  v.simhash = DecodeFixed64BE(value.data() + 1);
  v.sha256 = GetSha(value.data() + 9);
  if (signed_text) {
    MinHashSignature sig;
    std::copy(value.begin() + kFingerprintValueBytes, value.end(), sig.begin());
    v.minhash = sig;
  }
  return v;
}

std::string EncodeFetchKey(absl::string_view fetched_url) {
  std::string key(1, kTagFetch);
  key.append(fetched_url.data(), fetched_url.size());
  return key;
}

std::string EncodeFetchValue(const FetchValue& v) {
  const bool validators = !v.etag.empty() || !v.last_modified.empty();
  std::string value;
  value.reserve(kFetchValueBytes + (validators ? 4 + v.etag.size() + v.last_modified.size() : 0));
  value.push_back(static_cast<char>(validators ? kFetchValueVersion2 : kFetchValueVersion));
  PutSha(&value, v.sha256);
  PutFixed64BE(&value, TimeToStoredMicros(v.first_fetch));
  PutFixed64BE(&value, TimeToStoredMicros(v.hash_since));
  if (validators) {
    for (const std::string* field : {&v.etag, &v.last_modified}) {
      PutFixed16BE(&value, static_cast<uint16_t>(field->size()));
      value.append(*field);
    }
  }
  return value;
}

absl::StatusOr<FetchValue> DecodeFetchValue(absl::string_view value) {
  const bool v2 = !value.empty() && static_cast<uint8_t>(value[0]) == kFetchValueVersion2;
  absl::Status s = CheckValue(value, "fetch", v2 ? kFetchValueVersion2 : kFetchValueVersion,
                              kFetchValueBytes, /*exact=*/!v2);
  if (!s.ok()) return s;
  FetchValue v;
  v.sha256 = GetSha(value.data() + 1);
  v.first_fetch = StoredMicrosToTime(DecodeFixed64BE(value.data() + 33));
  v.hash_since = StoredMicrosToTime(DecodeFixed64BE(value.data() + 41));
  if (!v2) return v;
  absl::string_view rest = value.substr(kFetchValueBytes);
  for (std::string* field : {&v.etag, &v.last_modified}) {
    if (rest.size() < 2) return absl::DataLossError("fetch value of version 2 is cut short");
    const size_t n = DecodeFixed16BE(rest.data());
    rest.remove_prefix(2);
    if (rest.size() < n) return absl::DataLossError("fetch value of version 2 is cut short");
    field->assign(rest.data(), n);
    rest.remove_prefix(n);
  }
  if (!rest.empty()) {
    return absl::DataLossError(
        absl::StrCat("fetch value has ", rest.size(), " bytes after its validators"));
  }
  if (v.etag.empty() && v.last_modified.empty()) {
    return absl::DataLossError("fetch value of version 2 has no validators (version 1 holds it)");
  }
  return v;
}

// ---- Chunk layer ----

namespace {

std::string ChunkKeyPrefix(char kind) {
  std::string key;
  key.push_back(kTagChunk);
  key.push_back(kind);
  return key;
}

// Times in keys: the i64 with its sign bit flipped, so that unsigned byte
// order (RocksDB's comparator) is numeric order across the epoch too.
constexpr uint64_t kSignBit = uint64_t{1} << 63;

// Size of a manifest entry without its chunk id's bytes.
constexpr size_t kManifestEntryFixedBytes = 4 + 32 + 8 + 8;
// Size of a version-2 manifest's claim without its removed ids: claim id
// hash, claim time, replaced chunks, removed count.
constexpr size_t kManifestClaimFixedBytes = 8 + 8 + 4 + 4;
constexpr size_t kHolderKeyFixedBytes = 2 + 32 + 8;  // before the URL

bool HasChunkPrefix(absl::string_view key, char kind) {
  return key.size() >= 2 && key[0] == kTagChunk && key[1] == kind;
}

// Chunk keys of `kind` followed by a u32 text id (fingerprint 05 04, text by
// id 05 05); `what` names the record in errors.
std::string EncodeChunkIdKey(char kind, uint32_t id) {
  std::string key = ChunkKeyPrefix(kind);
  PutFixed32BE(&key, id);
  return key;
}

absl::StatusOr<uint32_t> DecodeChunkIdKey(absl::string_view key, char kind,
                                          absl::string_view what) {
  if (key.size() != 6 || !HasChunkPrefix(key, kind)) {
    return absl::DataLossError(absl::StrCat(what, " key of ", key.size(), " bytes is not 05 ",
                                            absl::Hex(static_cast<uint8_t>(kind), absl::kZeroPad2),
                                            " and a u32"));
  }
  return DecodeFixed32BE(key.data() + 2);
}

// The owner that ends a chunk text value (versions 2 and 3): added (i64
// micros), owner URL length L (u32, >= 1), the URL, the chunk id (the rest,
// >= 1 byte).
void PutChunkTextOwner(std::string* out, absl::Time added, absl::string_view url,
                       absl::string_view chunk_id) {
  PutFixed64BE(out, TimeToStoredMicros(added));
  PutFixed32BE(out, static_cast<uint32_t>(url.size()));
  out->append(url.data(), url.size());
  out->append(chunk_id.data(), chunk_id.size());
}

// `tail`: the value from the owner's added time on.
// REQUIRES: tail.size() >= 12 (the caller checked the value's length).
absl::Status GetChunkTextOwner(absl::string_view tail, absl::Time* added, std::string* url,
                               std::string* chunk_id) {
  const uint32_t url_bytes = DecodeFixed32BE(tail.data() + 8);
  const size_t rest = tail.size() - 12;
  if (url_bytes == 0 || url_bytes >= rest) {
    return absl::DataLossError(absl::StrCat("chunk text value has an owner URL of ", url_bytes,
                                            " bytes in ", rest,
                                            " bytes of owner URL and chunk id (both at least 1)"));
  }
  *added = StoredMicrosToTime(DecodeFixed64BE(tail.data()));
  *url = std::string(tail.substr(12, url_bytes));
  *chunk_id = std::string(tail.substr(12 + url_bytes));
  return absl::OkStatus();
}

}  // namespace

std::string EncodeChunkManifestKey(absl::string_view document_url) {
  std::string key = ChunkKeyPrefix(kChunkManifest);
  key.append(document_url.data(), document_url.size());
  return key;
}

std::string EncodeChunkManifestValue(const ChunkManifestValue& m) {
  size_t bytes = 1 + 4;
  for (const ChunkManifestEntry& e : m.chunks) {
    bytes += kManifestEntryFixedBytes + e.chunk_id.size();
  }
  if (m.claim.has_value()) {
    bytes += kManifestClaimFixedBytes;
    for (const std::string& id : m.claim->removed_chunk_ids) bytes += 4 + id.size();
  }
  std::string out;
  out.reserve(bytes);
  if (m.claim.has_value()) {
    const ManifestClaim& c = *m.claim;
    out.push_back(static_cast<char>(kChunkManifestValueVersion2));
    PutFixed64BE(&out, c.claim_id_hash);
    PutFixed64BE(&out, TimeToStoredMicros(c.claimed));
    PutFixed32BE(&out, static_cast<uint32_t>(c.replaced_chunks));
    PutFixed32BE(&out, static_cast<uint32_t>(c.removed_chunk_ids.size()));
    for (const std::string& id : c.removed_chunk_ids) {
      PutFixed32BE(&out, static_cast<uint32_t>(id.size()));
      out.append(id);
    }
  } else {
    out.push_back(static_cast<char>(kChunkManifestValueVersion));
  }
  PutFixed32BE(&out, static_cast<uint32_t>(m.chunks.size()));
  for (const ChunkManifestEntry& e : m.chunks) {
    PutFixed32BE(&out, static_cast<uint32_t>(e.chunk_id.size()));
    out.append(e.chunk_id);
    PutSha(&out, e.sha256);
    PutFixed64BE(&out, e.simhash);
    PutFixed64BE(&out, TimeToStoredMicros(e.added));
  }
  return out;
}

namespace {

// Decodes a version-2 manifest's claim from the front of `rest` (the value
// after its version byte) and removes it from `rest`.
absl::StatusOr<ManifestClaim> GetManifestClaim(absl::string_view* rest) {
  if (rest->size() < kManifestClaimFixedBytes) {
    return absl::DataLossError("chunk manifest value of version 2 ends inside its claim");
  }
  ManifestClaim c;
  c.claim_id_hash = DecodeFixed64BE(rest->data());
  c.claimed = StoredMicrosToTime(DecodeFixed64BE(rest->data() + 8));
  c.replaced_chunks = DecodeFixed32BE(rest->data() + 16);
  const uint32_t removed = DecodeFixed32BE(rest->data() + 20);
  rest->remove_prefix(kManifestClaimFixedBytes);
  if (c.claim_id_hash == 0) {
    return absl::DataLossError("chunk manifest value of version 2 stores claim id hash 0");
  }
  if (removed > c.replaced_chunks) {
    return absl::DataLossError(absl::StrCat("chunk manifest claim removed ", removed,
                                            " chunks of the ", c.replaced_chunks, " it replaced"));
  }
  // Bound the count by the bytes before allocating (each id has a length
  // and at least one byte).
  if (removed > rest->size() / 5) {
    return absl::DataLossError(absl::StrCat("chunk manifest claim lists ", removed,
                                            " removed chunk ids in ", rest->size(), " bytes"));
  }
  c.removed_chunk_ids.reserve(removed);
  for (uint32_t i = 0; i < removed; ++i) {
    if (rest->size() < 4) {
      return absl::DataLossError(
          absl::StrCat("chunk manifest value ends inside removed chunk id ", i));
    }
    const uint32_t id_bytes = DecodeFixed32BE(rest->data());
    if (id_bytes == 0) {
      return absl::DataLossError(
          absl::StrCat("chunk manifest claim's removed chunk id ", i, " is empty"));
    }
    if (rest->size() - 4 < id_bytes) {
      return absl::DataLossError(
          absl::StrCat("chunk manifest value ends inside removed chunk id ", i));
    }
    c.removed_chunk_ids.emplace_back(rest->substr(4, id_bytes));
    rest->remove_prefix(4 + size_t{id_bytes});
  }
  return c;
}

}  // namespace

absl::StatusOr<ChunkManifestValue> DecodeChunkManifestValue(absl::string_view value) {
  if (value.empty()) return absl::DataLossError("chunk manifest value is empty");
  const uint8_t version = static_cast<uint8_t>(value[0]);
  if (version != kChunkManifestValueVersion && version != kChunkManifestValueVersion2) {
    return absl::DataLossError(absl::StrCat("chunk manifest value has unknown value version ",
                                            static_cast<int>(version), " (this build reads ",
                                            static_cast<int>(kChunkManifestValueVersion), " and ",
                                            static_cast<int>(kChunkManifestValueVersion2), ")"));
  }
  ChunkManifestValue m;
  absl::string_view rest = value.substr(1);
  if (version == kChunkManifestValueVersion2) {
    absl::StatusOr<ManifestClaim> claim = GetManifestClaim(&rest);
    if (!claim.ok()) return claim.status();
    m.claim = *std::move(claim);
  }
  if (rest.size() < 4) {
    return absl::DataLossError(absl::StrCat("chunk manifest value has ", value.size(),
                                            " bytes, too few for its chunk count"));
  }
  const uint32_t n = DecodeFixed32BE(rest.data());
  rest.remove_prefix(4);
  if (n == 0) {
    return absl::DataLossError("chunk manifest value lists 0 chunks (at least 1 is stored)");
  }
  // Bound the count by the bytes before allocating: damage must not turn
  // into a huge reservation.
  if (n > rest.size() / (kManifestEntryFixedBytes + 1)) {
    return absl::DataLossError(absl::StrCat("chunk manifest value lists ", n, " chunks in ",
                                            rest.size(), " bytes of entries"));
  }
  std::vector<ChunkManifestEntry>& entries = m.chunks;
  entries.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (rest.size() < 4) {
      return absl::DataLossError(absl::StrCat("chunk manifest value ends inside entry ", i));
    }
    const uint32_t id_bytes = DecodeFixed32BE(rest.data());
    if (id_bytes == 0) {
      return absl::DataLossError(
          absl::StrCat("chunk manifest entry ", i, " has an empty chunk id"));
    }
    if (rest.size() - 4 < size_t{id_bytes} + 32 + 8 + 8) {
      return absl::DataLossError(absl::StrCat("chunk manifest value ends inside entry ", i));
    }
    ChunkManifestEntry e;
    e.chunk_id = std::string(rest.substr(4, id_bytes));
    const char* p = rest.data() + 4 + id_bytes;
    e.sha256 = GetSha(p);
    e.simhash = DecodeFixed64BE(p + 32);
    e.added = StoredMicrosToTime(DecodeFixed64BE(p + 40));
    entries.push_back(std::move(e));
    rest.remove_prefix(kManifestEntryFixedBytes + id_bytes);
  }
  if (!rest.empty()) {
    return absl::DataLossError(
        absl::StrCat("chunk manifest value has ", rest.size(), " bytes after its ", n, " entries"));
  }
  return m;
}

std::string EncodeChunkTextKey(const Sha256Digest& sha256) {
  std::string key = ChunkKeyPrefix(kChunkText);
  PutSha(&key, sha256);
  return key;
}

std::string ChunkTextKeysBegin() { return ChunkKeyPrefix(kChunkText); }

std::string ChunkTextKeysEnd() { return ChunkKeyPrefix(static_cast<char>(kChunkText + 1)); }

std::string EncodeChunkTextValue(const ChunkTextValue& v) {
  std::string out;
  out.reserve(kChunkTextValueFixedBytes + 12 + v.owner_url.size() + v.owner_chunk_id.size());
  out.push_back(
      static_cast<char>(v.has_owner ? kChunkTextValueVersion : kChunkTextValueVersionWithoutOwner));
  PutFixed32BE(&out, v.text_id);
  PutFixed64BE(&out, v.simhash);
  PutFixed64BE(&out, v.holders);
  if (v.has_owner) PutChunkTextOwner(&out, v.owner_added, v.owner_url, v.owner_chunk_id);
  return out;
}

absl::StatusOr<ChunkTextValue> DecodeChunkTextValue(absl::string_view value) {
  if (value.empty()) return absl::DataLossError("chunk text value is empty");
  const uint8_t version = static_cast<uint8_t>(value[0]);
  ChunkTextValue v;
  if (version == kChunkTextValueVersionWithoutOwner) {
    absl::Status s = CheckValue(value, "chunk text", kChunkTextValueVersionWithoutOwner,
                                kChunkTextValueFixedBytes, /*exact=*/true);
    if (!s.ok()) return s;
  } else if (version == kChunkTextValueVersion) {
    // Fixed part, owner added, URL length, at least one byte each of URL
    // and chunk id.
    absl::Status s = CheckValue(value, "chunk text", kChunkTextValueVersion,
                                kChunkTextValueFixedBytes + 8 + 4 + 2, /*exact=*/false);
    if (!s.ok()) return s;
    s = GetChunkTextOwner(value.substr(kChunkTextValueFixedBytes), &v.owner_added, &v.owner_url,
                          &v.owner_chunk_id);
    if (!s.ok()) return s;
    v.has_owner = true;
  } else {
    return absl::DataLossError(absl::StrCat("chunk text value has unknown value version ",
                                            static_cast<int>(version),
                                            " (this build reads versions 1 and 2)"));
  }
  v.text_id = DecodeFixed32BE(value.data() + 1);
  v.simhash = DecodeFixed64BE(value.data() + 5);
  v.holders = DecodeFixed64BE(value.data() + 13);
  if (v.holders == 0) {
    return absl::DataLossError(
        "chunk text value counts 0 holders (a text no chunk holds is deleted)");
  }
  return v;
}

std::string EncodeChunkHolderPrefix(const Sha256Digest& sha256) {
  std::string key = ChunkKeyPrefix(kChunkHolder);
  PutSha(&key, sha256);
  return key;
}

std::string EncodeChunkHolderKey(const ChunkHolderKey& k) {
  std::string key = EncodeChunkHolderPrefix(k.sha256);
  key.reserve(kHolderKeyFixedBytes + k.document_url.size() + 1 + k.chunk_id.size());
  PutFixed64BE(&key, TimeToStoredMicros(k.added) ^ kSignBit);
  key.append(k.document_url);
  key.push_back('\0');
  key.append(k.chunk_id);
  return key;
}

absl::StatusOr<ChunkHolderKey> DecodeChunkHolderKey(absl::string_view key) {
  if (!HasChunkPrefix(key, kChunkHolder) || key.size() < kHolderKeyFixedBytes + 3) {
    return absl::DataLossError(
        absl::StrCat("chunk holder key of ", key.size(),
                     " bytes is not 05 03, a SHA-256, a time, a URL, a NUL and a chunk id"));
  }
  ChunkHolderKey k;
  k.sha256 = GetSha(key.data() + 2);
  k.added = StoredMicrosToTime(DecodeFixed64BE(key.data() + 34) ^ kSignBit);
  const absl::string_view tail = key.substr(kHolderKeyFixedBytes);
  const size_t nul = tail.find('\0');
  if (nul == absl::string_view::npos || nul == 0 || nul + 1 == tail.size()) {
    return absl::DataLossError(
        nul == absl::string_view::npos
            ? std::string("chunk holder key has no NUL after its document URL")
            : std::string(nul == 0 ? "chunk holder key has an empty document URL"
                                   : "chunk holder key has an empty chunk id"));
  }
  k.document_url = std::string(tail.substr(0, nul));
  k.chunk_id = std::string(tail.substr(nul + 1));
  return k;
}

std::string EncodeChunkHolderValue() {
  return std::string(1, static_cast<char>(kChunkHolderValueVersion));
}

absl::Status CheckChunkHolderValue(absl::string_view value) {
  return CheckValue(value, "chunk holder", kChunkHolderValueVersion, 1,
                    /*exact=*/true);
}

std::string EncodeChunkFingerprintKey(uint32_t text_id) {
  return EncodeChunkIdKey(kChunkFingerprint, text_id);
}

absl::StatusOr<uint32_t> DecodeChunkFingerprintKey(absl::string_view key) {
  return DecodeChunkIdKey(key, kChunkFingerprint, "chunk fingerprint");
}

std::string ChunkFingerprintKeysBegin() { return ChunkKeyPrefix(kChunkFingerprint); }

std::string ChunkFingerprintKeysEnd() {
  return ChunkKeyPrefix(static_cast<char>(kChunkFingerprint + 1));
}

std::string EncodeChunkTextByIdKey(uint32_t text_id) {
  return EncodeChunkIdKey(kChunkTextById, text_id);
}

absl::StatusOr<uint32_t> DecodeChunkTextByIdKey(absl::string_view key) {
  return DecodeChunkIdKey(key, kChunkTextById, "chunk text");
}

std::string ChunkTextByIdKeysBegin() { return ChunkKeyPrefix(kChunkTextById); }

std::string ChunkTextByIdKeysEnd() { return ChunkKeyPrefix(static_cast<char>(kChunkTextById + 1)); }

std::string EncodeChunkTextByIdValue(const ChunkTextByIdValue& v) {
  std::string out;
  out.reserve(kChunkTextByIdValueFixedBytesMinHash + 4 * v.shingles.size() + v.owner_url.size() +
              v.owner_chunk_id.size());
  out.push_back(static_cast<char>(v.minhash.has_value() ? kChunkTextByIdValueVersionMinHash
                                                        : kChunkTextByIdValueVersion));
  PutSha(&out, v.sha256);
  PutFixed64BE(&out, v.simhash);
  if (v.minhash.has_value()) {
    out.append(reinterpret_cast<const char*>(v.minhash->data()), v.minhash->size());
    PutFixed32BE(&out, static_cast<uint32_t>(v.shingles.size()));
    for (uint32_t h : v.shingles.hashes()) PutFixed32BE(&out, h);
  }
  PutFixed64BE(&out, v.holders);
  PutChunkTextOwner(&out, v.owner_added, v.owner_url, v.owner_chunk_id);
  return out;
}

absl::StatusOr<ChunkTextByIdValue> DecodeChunkTextByIdValue(absl::string_view value) {
  const bool signed_text =
      !value.empty() && static_cast<uint8_t>(value[0]) == kChunkTextByIdValueVersionMinHash;
  // The fixed part and at least one byte each of owner URL and chunk id.
  absl::Status s = CheckValue(
      value, "chunk text",
      signed_text ? kChunkTextByIdValueVersionMinHash : kChunkTextByIdValueVersion,
      (signed_text ? kChunkTextByIdValueFixedBytesMinHash : kChunkTextByIdValueFixedBytes) + 2,
      /*exact=*/false);
  if (!s.ok()) return s;
  ChunkTextByIdValue v;
  v.sha256 = GetSha(value.data() + 1);
  v.simhash = DecodeFixed64BE(value.data() + 1 + 32);
  size_t at = 1 + 32 + 8;  // past the SimHash
  if (signed_text) {
    MinHashSignature sig;
    std::copy(value.data() + at, value.data() + at + kMinHashSlots, sig.begin());
    v.minhash = sig;
    at += kMinHashSlots;
    const uint32_t n = DecodeFixed32BE(value.data() + at);
    at += 4;
    // n elements, then at least the holders, owner and 2 bytes.
    const size_t after = value.size() - kChunkTextByIdValueFixedBytesMinHash - 2;
    if (n > after / 4) {
      return absl::DataLossError(absl::StrCat("chunk text value has a shingle set of ", n,
                                              " elements in ", value.size(), " bytes"));
    }
    std::vector<uint32_t> hashes(n);
    for (uint32_t i = 0; i < n; ++i) hashes[i] = DecodeFixed32BE(value.data() + at + 4 * i);
    at += 4 * size_t{n};
    std::optional<ShingleSet32> set = ShingleSet32::FromSorted(std::move(hashes));
    if (!set.has_value()) {
      return absl::DataLossError("chunk text value has a shingle set not in increasing order");
    }
    v.shingles = *std::move(set);
  }
  v.holders = DecodeFixed64BE(value.data() + at);
  if (v.holders == 0) {
    return absl::DataLossError(
        "chunk text value counts 0 holders (a text no chunk holds is deleted)");
  }
  s = GetChunkTextOwner(value.substr(at + 8), &v.owner_added, &v.owner_url, &v.owner_chunk_id);
  if (!s.ok()) return s;
  return v;
}

}  // namespace dedupd::rocksdb_format
