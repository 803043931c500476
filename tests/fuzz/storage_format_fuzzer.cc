// storage_format_fuzzer.cc: libFuzzer target for every decoder of the
// RocksDB backend's stored records (storage/rocksdb/rocksdb_format.h;
// docs/storage_format.md), which read bytes a crash, a disk or another
// build may have damaged.
//
// Input: the first byte picks one of kDecoders + kEncoders cases (modulo);
// the rest is the case's bytes.
//  - Decoder cases hand the bytes, unchanged, to one Decode*/Check*
//    function. Checks: no crash (ASan/UBSan catch memory bugs and UB); an
//    error is DataLoss with a message (DecodeMeta: also FailedPrecondition,
//    for another format version); a success keeps the documented
//    invariants (non-empty URLs and chunk ids, holders >= 1, ...) and
//    re-encodes to exactly the input bytes. Every layout is canonical
//    (one encoding per value) except two, which are checked on the bytes
//    the decoder reads: DecodeMetaFormatVersion reads only the first 12
//    bytes (magic, version), and DecodeAliasKeyUrl drops the key's SHA-256
//    (re-encoded with the input's own SHA-256 bytes).
//  - Encoder cases build a value from the bytes (FuzzedDataProvider),
//    respecting the encoder's REQUIRES, encode it, decode it and compare:
//    decode(encode(x)) == x, with times truncated to microseconds toward
//    negative infinity as documented. The holder-key case also checks the
//    documented key order: the byte order of two holder keys of one text is
//    the order of (added, document URL, chunk id).
// Keys that have no decoder (content, fetch, manifest and chunk text keys:
// the store only builds them) are not covered here.
// Any violation aborts with the case name.
//
// Example:
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDEDUPD_FUZZ=ON
//   ninja -C build-fuzz storage_format_fuzzer
//   build-fuzz/tests/fuzz/storage_format_fuzzer -max_total_time=60
//       /tmp/corpus tests/fuzz/corpus/storage_format   (one command line)
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "storage/rocksdb/rocksdb_format.h"

namespace {

namespace fmt = ::dedupd::rocksdb_format;
using ::dedupd::Sha256Digest;

[[noreturn]] void Fail(const char* what, absl::string_view input) {
  std::fprintf(stderr, "storage_format_fuzzer: %s\n  bytes: \"%s\"\n", what,
               absl::CHexEscape(input).c_str());
  std::abort();
}

// An error must be DataLoss (or `also`, when given) and say what is wrong.
void CheckError(const absl::Status& s, const char* what, absl::string_view input,
                absl::StatusCode also = absl::StatusCode::kDataLoss) {
  if (s.code() != absl::StatusCode::kDataLoss && s.code() != also) {
    Fail(what, input);
  }
  if (s.message().empty()) Fail("error without a message", input);
}

// ---- Decoder cases: arbitrary bytes in. ----

void DecodeMetaFormatVersion(absl::string_view in) {
  absl::StatusOr<uint32_t> v = fmt::DecodeMetaFormatVersion(in);
  if (!v.ok()) return CheckError(v.status(), "meta version: bad error", in);
  fmt::StoreMeta meta;
  meta.format_version = *v;
  if (fmt::EncodeMeta(meta).substr(0, 12) != in.substr(0, 12)) {
    Fail("meta version: magic and version do not re-encode", in);
  }
}

void DecodeMeta(absl::string_view in) {
  absl::StatusOr<fmt::StoreMeta> v = fmt::DecodeMeta(in);
  if (!v.ok()) {
    return CheckError(v.status(), "meta: bad error", in, absl::StatusCode::kFailedPrecondition);
  }
  if (v->format_version < fmt::kOldestUpgradableFormatVersion ||
      v->format_version > fmt::kStorageFormatVersion) {
    Fail("meta: accepted a format version this build does not read", in);
  }
  if (fmt::EncodeMeta(*v) != in) Fail("meta: does not re-encode", in);
}

void DecodeUrlKey(absl::string_view in) {
  absl::StatusOr<absl::string_view> v = fmt::DecodeUrlKey(in);
  if (!v.ok()) return CheckError(v.status(), "url key: bad error", in);
  if (v->empty()) Fail("url key: empty URL", in);
  if (fmt::EncodeUrlKey(*v) != in) Fail("url key: does not re-encode", in);
}

void DecodeAnyUrlKey(absl::string_view in) {
  absl::StatusOr<fmt::UrlKey> v = fmt::DecodeAnyUrlKey(in);
  if (!v.ok()) return CheckError(v.status(), "any url key: bad error", in);
  if (v->url.empty()) Fail("any url key: empty URL", in);
  if (fmt::EncodeUrlKey(v->name_space, v->url) != in) Fail("any url key: does not re-encode", in);
}

void DecodeUrlValue(absl::string_view in) {
  absl::StatusOr<dedupd::UrlRecord> v = fmt::DecodeUrlRecord(in);
  if (!v.ok()) return CheckError(v.status(), "url value: bad error", in);
  if (fmt::EncodeUrlRecord(*v) != in) Fail("url value: does not re-encode", in);
}

void DecodeContentMeta(absl::string_view in) {
  absl::StatusOr<fmt::ContentMeta> v = fmt::DecodeContentMeta(in);
  if (!v.ok()) return CheckError(v.status(), "content meta: bad error", in);
  if (fmt::EncodeContentMeta(*v) != in) {
    Fail("content meta: does not re-encode", in);
  }
}

void DecodeContentValue(absl::string_view in) {
  absl::StatusOr<fmt::ContentValue> v = fmt::DecodeContentValue(in);
  if (!v.ok()) return CheckError(v.status(), "content value: bad error", in);
  if (v->owner_url.empty()) Fail("content value: empty owner URL", in);
  if (!in.empty() && in[0] == fmt::kContentValueVersion2 && v->claim_id_hash == 0) {
    Fail("content value: version 2 without a claim id hash", in);
  }
  if (fmt::EncodeContentValue(*v) != in) {
    Fail("content value: does not re-encode", in);
  }
}

Sha256Digest ShaAt(absl::string_view in, size_t offset) {
  Sha256Digest sha{};
  for (size_t i = 0; i < sha.size() && offset + i < in.size(); ++i) {
    sha[i] = static_cast<uint8_t>(in[offset + i]);
  }
  return sha;
}

void DecodeAliasKeyUrl(absl::string_view in) {
  absl::StatusOr<absl::string_view> v = fmt::DecodeAliasKeyUrl(in);
  if (!v.ok()) return CheckError(v.status(), "alias key: bad error", in);
  if (v->empty()) Fail("alias key: empty URL", in);
  // Not canonical: the decoder drops the SHA-256 (bytes 1..32).
  if (fmt::EncodeAliasKey(ShaAt(in, 1), *v) != in) {
    Fail("alias key: does not re-encode", in);
  }
  if (in.substr(0, 33) != fmt::EncodeAliasPrefix(ShaAt(in, 1))) {
    Fail("alias key: prefix differs", in);
  }
}

void DecodeAliasValue(absl::string_view in) {
  absl::StatusOr<absl::Time> v = fmt::DecodeAliasValue(in);
  if (!v.ok()) return CheckError(v.status(), "alias value: bad error", in);
  if (fmt::EncodeAliasValue(*v) != in) Fail("alias value: does not re-encode", in);
}

void DecodeFingerprintKey(absl::string_view in) {
  absl::StatusOr<uint32_t> v = fmt::DecodeFingerprintKey(in);
  if (!v.ok()) return CheckError(v.status(), "fingerprint key: bad error", in);
  if (fmt::EncodeFingerprintKey(*v) != in) {
    Fail("fingerprint key: does not re-encode", in);
  }
}

void DecodeFingerprintValue(absl::string_view in) {
  absl::StatusOr<fmt::FingerprintValue> v = fmt::DecodeFingerprintValue(in);
  if (!v.ok()) return CheckError(v.status(), "fingerprint value: bad error", in);
  if (fmt::EncodeFingerprintValue(*v) != in) {
    Fail("fingerprint value: does not re-encode", in);
  }
}

void DecodeFetchValue(absl::string_view in) {
  absl::StatusOr<fmt::FetchValue> v = fmt::DecodeFetchValue(in);
  if (!v.ok()) return CheckError(v.status(), "fetch value: bad error", in);
  if (fmt::EncodeFetchValue(*v) != in) Fail("fetch value: does not re-encode", in);
}

void DecodeChunkManifestValue(absl::string_view in) {
  absl::StatusOr<fmt::ChunkManifestValue> v = fmt::DecodeChunkManifestValue(in);
  if (!v.ok()) return CheckError(v.status(), "manifest: bad error", in);
  if (v->chunks.empty()) Fail("manifest: no entries", in);
  for (const fmt::ChunkManifestEntry& e : v->chunks) {
    if (e.chunk_id.empty()) Fail("manifest: empty chunk id", in);
  }
  if (v->claim.has_value()) {
    const dedupd::ManifestClaim& c = *v->claim;
    if (c.claim_id_hash == 0) Fail("manifest: claim id hash 0", in);
    if (c.removed_chunk_ids.size() > c.replaced_chunks) Fail("manifest: removed > replaced", in);
    for (const std::string& id : c.removed_chunk_ids) {
      if (id.empty()) Fail("manifest: empty removed chunk id", in);
    }
  }
  if (fmt::EncodeChunkManifestValue(*v) != in) {
    Fail("manifest: does not re-encode", in);
  }
}

void DecodeChunkTextValue(absl::string_view in) {
  absl::StatusOr<fmt::ChunkTextValue> v = fmt::DecodeChunkTextValue(in);
  if (!v.ok()) return CheckError(v.status(), "chunk text: bad error", in);
  if (v->holders == 0) Fail("chunk text: 0 holders", in);
  if (fmt::EncodeChunkTextValue(*v) != in) {
    Fail("chunk text: does not re-encode", in);
  }
}

void DecodeChunkHolderKey(absl::string_view in) {
  absl::StatusOr<fmt::ChunkHolderKey> v = fmt::DecodeChunkHolderKey(in);
  if (!v.ok()) return CheckError(v.status(), "holder key: bad error", in);
  if (v->document_url.empty() || v->document_url.find('\0') != std::string::npos ||
      v->chunk_id.empty()) {
    Fail("holder key: breaks the encoder's REQUIRES", in);
  }
  if (fmt::EncodeChunkHolderKey(*v) != in) {
    Fail("holder key: does not re-encode", in);
  }
}

void CheckChunkHolderValue(absl::string_view in) {
  const absl::Status s = fmt::CheckChunkHolderValue(in);
  if (!s.ok()) return CheckError(s, "holder value: bad error", in);
  if (fmt::EncodeChunkHolderValue() != in) Fail("holder value: accepted", in);
}

void DecodeChunkFingerprintKey(absl::string_view in) {
  absl::StatusOr<uint32_t> v = fmt::DecodeChunkFingerprintKey(in);
  if (!v.ok()) return CheckError(v.status(), "chunk fp key: bad error", in);
  const std::string again = fmt::EncodeChunkFingerprintKey(*v);
  if (again != in) Fail("chunk fp key: does not re-encode", in);
  if (again < fmt::ChunkFingerprintKeysBegin() || again >= fmt::ChunkFingerprintKeysEnd()) {
    Fail("chunk fp key: outside its key range", in);
  }
}

void DecodeChunkTextByIdKey(absl::string_view in) {
  absl::StatusOr<uint32_t> v = fmt::DecodeChunkTextByIdKey(in);
  if (!v.ok()) return CheckError(v.status(), "chunk text key: bad error", in);
  const std::string again = fmt::EncodeChunkTextByIdKey(*v);
  if (again != in) Fail("chunk text key: does not re-encode", in);
  if (again < fmt::ChunkTextByIdKeysBegin() || again >= fmt::ChunkTextByIdKeysEnd()) {
    Fail("chunk text key: outside its key range", in);
  }
}

void DecodeChunkTextByIdValue(absl::string_view in) {
  absl::StatusOr<fmt::ChunkTextByIdValue> v = fmt::DecodeChunkTextByIdValue(in);
  if (!v.ok()) return CheckError(v.status(), "chunk text by id: bad error", in);
  if (v->holders == 0 || v->owner_url.empty() || v->owner_chunk_id.empty()) {
    Fail("chunk text by id: breaks the encoder's REQUIRES", in);
  }
  if (fmt::EncodeChunkTextByIdValue(*v) != in) {
    Fail("chunk text by id: does not re-encode", in);
  }
}

using Case = void (*)(absl::string_view);
constexpr Case kDecoders[] = {
    DecodeMetaFormatVersion,
    DecodeMeta,
    DecodeUrlKey,
    DecodeAnyUrlKey,
    DecodeUrlValue,
    DecodeContentMeta,
    DecodeContentValue,
    DecodeAliasKeyUrl,
    DecodeAliasValue,
    DecodeFingerprintKey,
    DecodeFingerprintValue,
    DecodeFetchValue,
    DecodeChunkManifestValue,
    DecodeChunkTextValue,
    DecodeChunkHolderKey,
    CheckChunkHolderValue,
    DecodeChunkFingerprintKey,
    DecodeChunkTextByIdKey,
    DecodeChunkTextByIdValue,
};

// ---- Encoder cases: values built from the bytes. ----

// A time anywhere in the i64-nanosecond range, often with sub-microsecond
// parts (which the encoders truncate), sometimes at the i64-microsecond
// extremes.
absl::Time FuzzTime(FuzzedDataProvider& p) {
  switch (p.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      return absl::FromUnixMicros(std::numeric_limits<int64_t>::min());
    case 1:
      return absl::FromUnixMicros(std::numeric_limits<int64_t>::max());
    case 2:
      return absl::FromUnixMicros(p.ConsumeIntegral<int64_t>());
    default:
      return absl::FromUnixNanos(p.ConsumeIntegral<int64_t>());
  }
}

// What a stored time decodes to: `t` truncated to microseconds toward
// negative infinity.
absl::Time Truncated(absl::Time t) {
  return absl::UnixEpoch() + absl::Floor(t - absl::UnixEpoch(), absl::Microseconds(1));
}

Sha256Digest FuzzSha(FuzzedDataProvider& p) {
  Sha256Digest sha{};
  for (uint8_t& b : sha) b = p.ConsumeIntegral<uint8_t>();
  return sha;
}

std::string FuzzBytes(FuzzedDataProvider& p, bool non_empty) {
  std::string s = p.ConsumeRandomLengthString(256);
  if (non_empty && s.empty()) s = "x";
  return s;
}

void EncodeMeta(FuzzedDataProvider& p, absl::string_view in) {
  fmt::StoreMeta meta;
  meta.normalizer_version = p.ConsumeIntegral<uint32_t>();
  meta.created = FuzzTime(p);
  absl::StatusOr<fmt::StoreMeta> back = fmt::DecodeMeta(fmt::EncodeMeta(meta));
  if (!back.ok() || back->format_version != meta.format_version ||
      back->normalizer_version != meta.normalizer_version ||
      back->created != Truncated(meta.created)) {
    Fail("encode meta: no round trip", in);
  }
  meta.format_version = p.ConsumeIntegral<uint32_t>();
  absl::StatusOr<uint32_t> version = fmt::DecodeMetaFormatVersion(fmt::EncodeMeta(meta));
  if (!version.ok() || *version != meta.format_version) {
    Fail("encode meta: version does not round trip", in);
  }
  back = fmt::DecodeMeta(fmt::EncodeMeta(meta));
  const bool readable = meta.format_version >= fmt::kOldestUpgradableFormatVersion &&
                        meta.format_version <= fmt::kStorageFormatVersion;
  if (readable != back.ok() ||
      (!back.ok() && back.status().code() != absl::StatusCode::kFailedPrecondition)) {
    Fail("encode meta: other version not FailedPrecondition", in);
  }
}

void EncodeUrl(FuzzedDataProvider& p, absl::string_view in) {
  const std::string url = FuzzBytes(p, /*non_empty=*/true);
  const std::string key = fmt::EncodeUrlKey(url);
  absl::StatusOr<absl::string_view> back_url = fmt::DecodeUrlKey(key);  // views `key`
  if (!back_url.ok() || *back_url != url) Fail("encode url key: no round trip", in);
  const absl::Time t = FuzzTime(p);
  absl::StatusOr<absl::Time> back = fmt::DecodeUrlValue(fmt::EncodeUrlValue(t));
  if (!back.ok() || *back != Truncated(t)) Fail("encode url value: no round trip", in);
  dedupd::UrlRecord r;
  r.first_seen = Truncated(t);
  r.last_claim = p.ConsumeBool() ? r.first_seen : Truncated(FuzzTime(p));
  r.last_kind = static_cast<dedupd::UrlClaimKind>(p.ConsumeIntegralInRange<int>(0, 2));
  r.claim_id_hash = p.ConsumeIntegral<uint64_t>();
  if (p.ConsumeBool()) r.lease_until = Truncated(FuzzTime(p));
  absl::StatusOr<dedupd::UrlRecord> back_record = fmt::DecodeUrlRecord(fmt::EncodeUrlRecord(r));
  if (!back_record.ok() || !(*back_record == r)) Fail("encode url record: no round trip", in);
}

void EncodeContentMeta(FuzzedDataProvider& p, absl::string_view in) {
  fmt::ContentMeta meta;
  meta.text_normalizer_version = p.ConsumeIntegral<uint32_t>();
  meta.simhash_version = p.ConsumeIntegral<uint32_t>();
  meta.shingle_words = p.ConsumeIntegral<uint32_t>();
  meta.simhash_seed = p.ConsumeIntegral<uint64_t>();
  if (p.ConsumeBool()) {  // version 2; else version 1, without MinHash fields
    meta.minhash_version =
        p.ConsumeIntegralInRange<uint32_t>(1, std::numeric_limits<uint32_t>::max());
    meta.minhash_seed = p.ConsumeIntegral<uint64_t>();
  }
  absl::StatusOr<fmt::ContentMeta> back = fmt::DecodeContentMeta(fmt::EncodeContentMeta(meta));
  if (!back.ok() || !(*back == meta)) Fail("encode content meta: no round trip", in);
}

void EncodeContent(FuzzedDataProvider& p, absl::string_view in) {
  fmt::ContentValue v;
  v.doc_id = p.ConsumeIntegral<uint32_t>();
  v.simhash = p.ConsumeIntegral<uint64_t>();
  v.first_seen = FuzzTime(p);
  v.alias_count = p.ConsumeIntegral<uint64_t>();
  v.owner_url = FuzzBytes(p, /*non_empty=*/true);
  if (p.ConsumeBool()) v.claim_id_hash = p.ConsumeIntegral<uint64_t>();
  absl::StatusOr<fmt::ContentValue> back = fmt::DecodeContentValue(fmt::EncodeContentValue(v));
  if (!back.ok() || back->doc_id != v.doc_id || back->simhash != v.simhash ||
      back->first_seen != Truncated(v.first_seen) || back->alias_count != v.alias_count ||
      back->owner_url != v.owner_url || back->claim_id_hash != v.claim_id_hash) {
    Fail("encode content value: no round trip", in);
  }
  const std::string key = fmt::EncodeContentKey(FuzzSha(p));
  if (key.size() != 33 || key[0] != fmt::kTagContent) {
    Fail("encode content key: bad layout", in);
  }
}

void EncodeAlias(FuzzedDataProvider& p, absl::string_view in) {
  const Sha256Digest sha = FuzzSha(p);
  const std::string url = FuzzBytes(p, /*non_empty=*/true);
  const std::string key = fmt::EncodeAliasKey(sha, url);
  absl::StatusOr<absl::string_view> back_url = fmt::DecodeAliasKeyUrl(key);
  if (!back_url.ok() || *back_url != url || key.substr(0, 33) != fmt::EncodeAliasPrefix(sha)) {
    Fail("encode alias key: no round trip", in);
  }
  const absl::Time t = FuzzTime(p);
  absl::StatusOr<absl::Time> back = fmt::DecodeAliasValue(fmt::EncodeAliasValue(t));
  if (!back.ok() || *back != Truncated(t)) Fail("encode alias value: no round trip", in);
}

void EncodeFingerprint(FuzzedDataProvider& p, absl::string_view in) {
  const uint32_t a = p.ConsumeIntegral<uint32_t>();
  const uint32_t b = p.ConsumeIntegral<uint32_t>();
  const std::string ka = fmt::EncodeFingerprintKey(a);
  const std::string kb = fmt::EncodeFingerprintKey(b);
  absl::StatusOr<uint32_t> back = fmt::DecodeFingerprintKey(ka);
  if (!back.ok() || *back != a) Fail("encode fingerprint key: no round trip", in);
  if ((a < b) != (ka < kb)) Fail("encode fingerprint key: order differs", in);
  const uint64_t simhash = p.ConsumeIntegral<uint64_t>();
  const Sha256Digest sha = FuzzSha(p);
  absl::StatusOr<fmt::FingerprintValue> v =
      fmt::DecodeFingerprintValue(fmt::EncodeFingerprintValue(simhash, sha));
  if (!v.ok() || v->simhash != simhash || v->sha256 != sha || v->minhash.has_value()) {
    Fail("encode fingerprint value: no round trip", in);
  }
  // Version 2: with a MinHash signature.
  dedupd::FingerprintRecord signed_record{simhash, sha, dedupd::MinHashSignature{}};
  for (uint8_t& slot : *signed_record.minhash) slot = p.ConsumeIntegral<uint8_t>();
  v = fmt::DecodeFingerprintValue(fmt::EncodeFingerprintValue(signed_record));
  if (!v.ok() || !(*v == signed_record)) {
    Fail("encode fingerprint value v2: no round trip", in);
  }
}

void EncodeFetch(FuzzedDataProvider& p, absl::string_view in) {
  fmt::FetchValue v;
  v.sha256 = FuzzSha(p);
  v.first_fetch = FuzzTime(p);
  v.hash_since = FuzzTime(p);
  absl::StatusOr<fmt::FetchValue> back = fmt::DecodeFetchValue(fmt::EncodeFetchValue(v));
  if (!back.ok() || back->sha256 != v.sha256 || back->first_fetch != Truncated(v.first_fetch) ||
      back->hash_since != Truncated(v.hash_since)) {
    Fail("encode fetch value: no round trip", in);
  }
  const std::string url = FuzzBytes(p, /*non_empty=*/false);
  if (fmt::EncodeFetchKey(url) != std::string(1, fmt::kTagFetch) + url) {
    Fail("encode fetch key: bad layout", in);
  }
}

void EncodeManifest(FuzzedDataProvider& p, absl::string_view in) {
  fmt::ChunkManifestValue m;
  std::vector<fmt::ChunkManifestEntry>& entries = m.chunks;
  entries.resize(p.ConsumeIntegralInRange<size_t>(1, 16));
  for (fmt::ChunkManifestEntry& e : entries) {
    e.chunk_id = FuzzBytes(p, /*non_empty=*/true);
    e.sha256 = FuzzSha(p);
    e.simhash = p.ConsumeIntegral<uint64_t>();
    e.added = FuzzTime(p);
  }
  if (p.ConsumeBool()) {
    dedupd::ManifestClaim c;
    c.claim_id_hash = p.ConsumeIntegralInRange<uint64_t>(1, std::numeric_limits<uint64_t>::max());
    c.claimed = Truncated(FuzzTime(p));
    c.removed_chunk_ids.resize(p.ConsumeIntegralInRange<size_t>(0, 8));
    for (std::string& id : c.removed_chunk_ids) id = FuzzBytes(p, /*non_empty=*/true);
    c.replaced_chunks = p.ConsumeIntegralInRange<uint64_t>(c.removed_chunk_ids.size(),
                                                           std::numeric_limits<uint32_t>::max());
    m.claim = std::move(c);
  }
  absl::StatusOr<fmt::ChunkManifestValue> back =
      fmt::DecodeChunkManifestValue(fmt::EncodeChunkManifestValue(m));
  if (!back.ok() || back->chunks.size() != entries.size() || !(back->claim == m.claim)) {
    Fail("encode manifest: no round trip", in);
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const fmt::ChunkManifestEntry& a = entries[i];
    const fmt::ChunkManifestEntry& b = back->chunks[i];
    if (a.chunk_id != b.chunk_id || a.sha256 != b.sha256 || a.simhash != b.simhash ||
        Truncated(a.added) != b.added) {
      Fail("encode manifest: entry differs", in);
    }
  }
}

void EncodeChunkText(FuzzedDataProvider& p, absl::string_view in) {
  fmt::ChunkTextValue v;
  v.text_id = p.ConsumeIntegral<uint32_t>();
  v.simhash = p.ConsumeIntegral<uint64_t>();
  v.holders = p.ConsumeIntegralInRange<uint64_t>(1, std::numeric_limits<uint64_t>::max());
  absl::StatusOr<fmt::ChunkTextValue> back =
      fmt::DecodeChunkTextValue(fmt::EncodeChunkTextValue(v));
  if (!back.ok() || back->text_id != v.text_id || back->simhash != v.simhash ||
      back->holders != v.holders) {
    Fail("encode chunk text: no round trip", in);
  }
}

fmt::ChunkHolderKey FuzzHolder(FuzzedDataProvider& p, const Sha256Digest& sha) {
  fmt::ChunkHolderKey k;
  k.sha256 = sha;
  k.added = Truncated(FuzzTime(p));
  k.document_url = FuzzBytes(p, /*non_empty=*/true);
  for (char& c : k.document_url) {
    if (c == '\0') c = '/';
  }
  k.chunk_id = FuzzBytes(p, /*non_empty=*/true);
  return k;
}

void EncodeHolder(FuzzedDataProvider& p, absl::string_view in) {
  const Sha256Digest sha = FuzzSha(p);
  const fmt::ChunkHolderKey a = FuzzHolder(p, sha);
  const fmt::ChunkHolderKey b = FuzzHolder(p, sha);
  const std::string ka = fmt::EncodeChunkHolderKey(a);
  const std::string kb = fmt::EncodeChunkHolderKey(b);
  absl::StatusOr<fmt::ChunkHolderKey> back = fmt::DecodeChunkHolderKey(ka);
  if (!back.ok() || back->sha256 != a.sha256 || back->added != a.added ||
      back->document_url != a.document_url || back->chunk_id != a.chunk_id) {
    Fail("encode holder key: no round trip", in);
  }
  if (ka.compare(0, 34, fmt::EncodeChunkHolderPrefix(sha)) != 0) {
    Fail("encode holder key: prefix differs", in);
  }
  const bool keys_less = ka < kb;
  const bool values_less =
      std::tie(a.added, a.document_url, a.chunk_id) < std::tie(b.added, b.document_url, b.chunk_id);
  if (keys_less != values_less) Fail("encode holder key: order differs", in);
  if (!fmt::CheckChunkHolderValue(fmt::EncodeChunkHolderValue()).ok()) {
    Fail("encode holder value: rejected", in);
  }
}

void EncodeChunkFingerprint(FuzzedDataProvider& p, absl::string_view in) {
  const uint32_t a = p.ConsumeIntegral<uint32_t>();
  const uint32_t b = p.ConsumeIntegral<uint32_t>();
  const std::string ka = fmt::EncodeChunkFingerprintKey(a);
  absl::StatusOr<uint32_t> back = fmt::DecodeChunkFingerprintKey(ka);
  if (!back.ok() || *back != a) Fail("encode chunk fp key: no round trip", in);
  if ((a < b) != (ka < fmt::EncodeChunkFingerprintKey(b))) {
    Fail("encode chunk fp key: order differs", in);
  }
}

void EncodeChunkTextById(FuzzedDataProvider& p, absl::string_view in) {
  const uint32_t a = p.ConsumeIntegral<uint32_t>();
  const uint32_t b = p.ConsumeIntegral<uint32_t>();
  const std::string ka = fmt::EncodeChunkTextByIdKey(a);
  absl::StatusOr<uint32_t> id = fmt::DecodeChunkTextByIdKey(ka);
  if (!id.ok() || *id != a) Fail("encode chunk text key: no round trip", in);
  // Keys ascend with ids: a claim's new texts append to the key space.
  if ((a < b) != (ka < fmt::EncodeChunkTextByIdKey(b))) {
    Fail("encode chunk text key: order differs", in);
  }
  fmt::ChunkTextByIdValue v;
  v.sha256 = FuzzSha(p);
  v.simhash = p.ConsumeIntegral<uint64_t>();
  v.holders = p.ConsumeIntegralInRange<uint64_t>(1, std::numeric_limits<uint64_t>::max());
  v.owner_added = Truncated(FuzzTime(p));
  v.owner_url = FuzzBytes(p, /*non_empty=*/true);
  v.owner_chunk_id = FuzzBytes(p, /*non_empty=*/true);
  if (p.ConsumeBool()) {
    dedupd::MinHashSignature sig;
    for (uint8_t& slot : sig) slot = p.ConsumeIntegral<uint8_t>();
    v.minhash = sig;
  }
  absl::StatusOr<fmt::ChunkTextByIdValue> back =
      fmt::DecodeChunkTextByIdValue(fmt::EncodeChunkTextByIdValue(v));
  if (!back.ok() || back->sha256 != v.sha256 || back->simhash != v.simhash ||
      back->holders != v.holders || back->owner_added != v.owner_added ||
      back->owner_url != v.owner_url || back->owner_chunk_id != v.owner_chunk_id ||
      back->minhash != v.minhash) {
    Fail("encode chunk text by id: no round trip", in);
  }
}

using EncodeCase = void (*)(FuzzedDataProvider&, absl::string_view);
constexpr EncodeCase kEncoders[] = {
    EncodeMeta,
    EncodeUrl,
    EncodeContentMeta,
    EncodeContent,
    EncodeAlias,
    EncodeFingerprint,
    EncodeFetch,
    EncodeManifest,
    EncodeChunkText,
    EncodeHolder,
    EncodeChunkFingerprint,
    EncodeChunkTextById,
};

constexpr size_t kNumDecoders = sizeof(kDecoders) / sizeof(kDecoders[0]);
constexpr size_t kNumEncoders = sizeof(kEncoders) / sizeof(kEncoders[0]);

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t pick = data[0] % (kNumDecoders + kNumEncoders);
  const absl::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (pick < kNumDecoders) {
    kDecoders[pick](rest);
  } else {
    FuzzedDataProvider provider(data + 1, size - 1);
    kEncoders[pick - kNumDecoders](provider, rest);
  }
  return 0;
}
