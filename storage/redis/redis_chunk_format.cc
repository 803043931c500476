#include "storage/redis/redis_chunk_format.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "storage/redis/redis_content_format.h"
#include "storage/redis/redis_url_format.h"

namespace dedupd::redis {
namespace {

void PutSha(std::string* out, const Sha256Digest& sha) {
  out->append(reinterpret_cast<const char*>(sha.data()), sha.size());
}

void PutBytes(std::string* out, absl::string_view s) {
  PutFixed32BE(out, static_cast<uint32_t>(s.size()));
  out->append(s.data(), s.size());
}

void PutMicros(std::string* out, absl::Time t) {
  PutFixed64BE(out, static_cast<uint64_t>(absl::ToUnixMicros(t)));
}

// Cursor reads a value front to back; every Get fails once it is short.
class Cursor {
 public:
  Cursor(absl::string_view bytes, absl::string_view what) : rest_(bytes), what_(what) {}
  bool Has(size_t n) const { return rest_.size() >= n; }
  absl::StatusOr<uint8_t> Byte() {
    if (!Has(1)) return Short();
    const uint8_t b = static_cast<uint8_t>(rest_[0]);
    rest_.remove_prefix(1);
    return b;
  }
  absl::StatusOr<uint32_t> U32() {
    if (!Has(4)) return Short();
    const uint32_t v = DecodeFixed32BE(rest_.data());
    rest_.remove_prefix(4);
    return v;
  }
  absl::StatusOr<uint64_t> U64() {
    if (!Has(8)) return Short();
    const uint64_t v = DecodeFixed64BE(rest_.data());
    rest_.remove_prefix(8);
    return v;
  }
  absl::StatusOr<absl::Time> Micros() {
    absl::StatusOr<uint64_t> v = U64();
    if (!v.ok()) return v.status();
    return absl::FromUnixMicros(static_cast<int64_t>(*v));
  }
  absl::StatusOr<Sha256Digest> Sha() {
    Sha256Digest sha{};
    if (!Has(sha.size())) return Short();
    std::copy(rest_.data(), rest_.data() + sha.size(), sha.begin());
    rest_.remove_prefix(sha.size());
    return sha;
  }
  absl::StatusOr<std::string> Bytes() {
    absl::StatusOr<uint32_t> n = U32();
    if (!n.ok()) return n.status();
    if (!Has(*n)) return Short();
    std::string s(rest_.substr(0, *n));
    rest_.remove_prefix(*n);
    return s;
  }
  absl::string_view rest() const { return rest_; }
  absl::Status Fail(absl::string_view why) const {
    return absl::DataLossError(absl::StrCat(what_, ": ", why));
  }

 private:
  absl::Status Short() const { return Fail("cut short"); }
  absl::string_view rest_;
  absl::string_view what_;
};

#define DEDUPD_CURSOR_ASSIGN(lhs, expr)         \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = *std::move(lhs##_or)

constexpr uint8_t kVersion = 1;
constexpr uint8_t kFlagMinHash = 1;
constexpr uint8_t kFlagShingles = 2;
constexpr size_t kTextFixedBytes = 1 + 1 + 4 + 8;

}  // namespace

std::string ChunkTextKey(absl::string_view prefix, absl::string_view name_space,
                         const Sha256Digest& sha256) {
  return TextKeyOfKind(prefix, "kt", name_space, sha256);
}
std::string ChunkHoldersKey(absl::string_view prefix, absl::string_view name_space,
                            const Sha256Digest& sha256) {
  return TextKeyOfKind(prefix, "kh", name_space, sha256);
}
std::string ChunkHolderTimesKey(absl::string_view prefix, absl::string_view name_space,
                                const Sha256Digest& sha256) {
  return TextKeyOfKind(prefix, "kd", name_space, sha256);
}
std::string ChunkManifestKey(absl::string_view prefix, absl::string_view name_space,
                             absl::string_view document_url) {
  return UrlKeyOfKind(prefix, "km", name_space, document_url);
}
std::string ChunkLeaseKey(absl::string_view prefix, absl::string_view name_space,
                          absl::string_view document_url) {
  return UrlKeyOfKind(prefix, "kl", name_space, document_url);
}
std::string ChunkJournalKey(absl::string_view prefix, absl::string_view name_space,
                            absl::string_view document_url) {
  return UrlKeyOfKind(prefix, "kj", name_space, document_url);
}
std::string ChunkTextIdKey(absl::string_view prefix, absl::string_view name_space,
                           uint32_t text_id) {
  return absl::StrCat(prefix, "ki:", name_space, ":", text_id);
}
std::string ChunkTextIdCounterKey(absl::string_view prefix, absl::string_view name_space) {
  return absl::StrCat(prefix, "kn:", name_space);
}
std::string ChunkSimHashBucketKey(absl::string_view prefix, absl::string_view name_space,
                                  int blocks, int block, uint64_t simhash) {
  return SimHashBucketKeyOfKind(prefix, "ksh", name_space, blocks, block, simhash);
}
std::string ChunkLshBucketKey(absl::string_view prefix, absl::string_view name_space, int band,
                              const MinHashSignature& sig) {
  return LshBucketKeyOfKind(prefix, "klb", name_space, band, sig);
}

std::string ChunkHolderMember(const ChunkHolder& h) {
  std::string out;
  PutMicros(&out, h.added);
  out.append(h.document_url);
  out.push_back('\0');
  out.append(h.chunk_id);
  return out;
}

absl::StatusOr<ChunkHolder> DecodeChunkHolderMember(absl::string_view member) {
  const size_t nul = member.size() > 8 ? member.find('\0', 8) : absl::string_view::npos;
  if (nul == absl::string_view::npos || nul == 8 || nul + 1 == member.size()) {
    return absl::DataLossError("not a chunk holder member");
  }
  ChunkHolder h;
  h.added = absl::FromUnixMicros(static_cast<int64_t>(DecodeFixed64BE(member.data())));
  h.document_url = std::string(member.substr(8, nul - 8));
  h.chunk_id = std::string(member.substr(nul + 1));
  return h;
}

std::string EncodeRedisChunkTextValue(const RedisChunkTextValue& v) {
  const bool set = v.minhash.has_value() && !v.shingles.empty();
  uint8_t flags = 0;
  if (v.minhash.has_value()) flags |= kFlagMinHash;
  if (set) flags |= kFlagShingles;
  if (v.index_pending) flags |= kChunkTextFlagIndexPending;
  std::string out;
  out.push_back(static_cast<char>(kVersion));
  out.push_back(static_cast<char>(flags));
  PutFixed32BE(&out, v.text_id);
  PutFixed64BE(&out, v.simhash);
  if (v.minhash.has_value()) {
    out.append(reinterpret_cast<const char*>(v.minhash->data()), v.minhash->size());
  }
  if (set) {
    for (uint32_t h : v.shingles.hashes()) PutFixed32BE(&out, h);
  }
  return out;
}

absl::StatusOr<RedisChunkTextValue> DecodeRedisChunkTextValue(absl::string_view bytes) {
  if (bytes.size() < kTextFixedBytes || static_cast<uint8_t>(bytes[0]) != kVersion) {
    return absl::DataLossError(absl::StrCat("not a chunk text value (", bytes.size(), " bytes)"));
  }
  const uint8_t flags = static_cast<uint8_t>(bytes[1]);
  if (flags > (kFlagMinHash | kFlagShingles | kChunkTextFlagIndexPending) ||
      ((flags & kFlagShingles) && !(flags & kFlagMinHash))) {
    return absl::DataLossError(absl::StrCat("chunk text value has bad flags ", flags));
  }
  RedisChunkTextValue v;
  v.text_id = DecodeFixed32BE(bytes.data() + 2);
  v.simhash = DecodeFixed64BE(bytes.data() + 6);
  v.index_pending = (flags & kChunkTextFlagIndexPending) != 0;
  absl::string_view rest = bytes.substr(kTextFixedBytes);
  if (flags & kFlagMinHash) {
    MinHashSignature sig{};
    if (rest.size() < sig.size()) return absl::DataLossError("chunk text value is cut short");
    std::copy(rest.data(), rest.data() + sig.size(), sig.begin());
    v.minhash = sig;
    rest.remove_prefix(sig.size());
  }
  if (flags & kFlagShingles) {
    if (rest.empty() || rest.size() % 4 != 0) {
      return absl::DataLossError("chunk text value's shingle set is not whole u32s");
    }
    std::vector<uint32_t> hashes;
    for (size_t p = 0; p < rest.size(); p += 4) hashes.push_back(DecodeFixed32BE(rest.data() + p));
    std::optional<ShingleSet32> set = ShingleSet32::FromSorted(std::move(hashes));
    if (!set.has_value()) return absl::DataLossError("chunk text value's shingle set is unsorted");
    v.shingles = *std::move(set);
  } else if (!rest.empty()) {
    return absl::DataLossError("chunk text value has trailing bytes");
  }
  return v;
}

std::string EncodeRedisChunkManifest(const ChunkManifest& m) {
  std::string out;
  out.push_back(static_cast<char>(kVersion));
  out.push_back(static_cast<char>(m.claim.has_value() ? 1 : 0));
  if (m.claim.has_value()) {
    PutFixed64BE(&out, m.claim->claim_id_hash);
    PutMicros(&out, m.claim->claimed);
    PutFixed32BE(&out, static_cast<uint32_t>(m.claim->replaced_chunks));
    PutFixed32BE(&out, static_cast<uint32_t>(m.claim->removed_chunk_ids.size()));
    for (const std::string& id : m.claim->removed_chunk_ids) PutBytes(&out, id);
  }
  PutFixed32BE(&out, static_cast<uint32_t>(m.chunks.size()));
  for (const StoredChunk& c : m.chunks) {
    PutSha(&out, c.sha256);
    PutFixed64BE(&out, c.simhash);
    PutMicros(&out, c.added);
    PutBytes(&out, c.chunk_id);
  }
  return out;
}

absl::StatusOr<ChunkManifest> DecodeRedisChunkManifest(absl::string_view bytes) {
  Cursor in(bytes, "chunk manifest value");
  DEDUPD_CURSOR_ASSIGN(version, in.Byte());
  DEDUPD_CURSOR_ASSIGN(flags, in.Byte());
  if (version != kVersion || flags > 1) return in.Fail("unknown version or flags");
  ChunkManifest m;
  if (flags == 1) {
    ManifestClaim c;
    DEDUPD_CURSOR_ASSIGN(hash, in.U64());
    DEDUPD_CURSOR_ASSIGN(claimed, in.Micros());
    DEDUPD_CURSOR_ASSIGN(replaced, in.U32());
    DEDUPD_CURSOR_ASSIGN(removed, in.U32());
    if (hash == 0) return in.Fail("claim id hash 0");
    c.claim_id_hash = hash;
    c.claimed = claimed;
    c.replaced_chunks = replaced;
    for (uint32_t i = 0; i < removed; ++i) {
      DEDUPD_CURSOR_ASSIGN(id, in.Bytes());
      c.removed_chunk_ids.push_back(std::move(id));
    }
    m.claim = std::move(c);
  }
  DEDUPD_CURSOR_ASSIGN(count, in.U32());
  if (count == 0) return in.Fail("no chunks");
  for (uint32_t i = 0; i < count; ++i) {
    StoredChunk c;
    DEDUPD_CURSOR_ASSIGN(sha, in.Sha());
    DEDUPD_CURSOR_ASSIGN(simhash, in.U64());
    DEDUPD_CURSOR_ASSIGN(added, in.Micros());
    DEDUPD_CURSOR_ASSIGN(id, in.Bytes());
    if (id.empty()) return in.Fail("empty chunk id");
    c.sha256 = sha;
    c.simhash = simhash;
    c.added = added;
    c.chunk_id = std::move(id);
    m.chunks.push_back(std::move(c));
  }
  if (!in.rest().empty()) return in.Fail("trailing bytes");
  return m;
}

std::string EncodeChunkJournal(const ChunkJournal& j) {
  std::string out;
  out.push_back(static_cast<char>(kVersion));
  out.push_back(static_cast<char>(j.manifest.has_value() ? 1 : 0));
  if (j.manifest.has_value()) PutBytes(&out, EncodeRedisChunkManifest(*j.manifest));
  PutFixed32BE(&out, static_cast<uint32_t>(j.texts.size()));
  for (const auto& [sha, args] : j.texts) {
    PutSha(&out, sha);
    PutFixed32BE(&out, static_cast<uint32_t>(args.size()));
    for (const std::string& a : args) PutBytes(&out, a);
  }
  return out;
}

absl::StatusOr<ChunkJournal> DecodeChunkJournal(absl::string_view bytes) {
  Cursor in(bytes, "chunk journal value");
  DEDUPD_CURSOR_ASSIGN(version, in.Byte());
  DEDUPD_CURSOR_ASSIGN(has_manifest, in.Byte());
  if (version != kVersion || has_manifest > 1) return in.Fail("unknown version or flags");
  ChunkJournal j;
  if (has_manifest == 1) {
    DEDUPD_CURSOR_ASSIGN(m, in.Bytes());
    DEDUPD_CURSOR_ASSIGN(manifest, DecodeRedisChunkManifest(m));
    j.manifest = std::move(manifest);
  }
  DEDUPD_CURSOR_ASSIGN(count, in.U32());
  for (uint32_t i = 0; i < count; ++i) {
    DEDUPD_CURSOR_ASSIGN(sha, in.Sha());
    DEDUPD_CURSOR_ASSIGN(n, in.U32());
    std::vector<std::string> args;
    for (uint32_t a = 0; a < n; ++a) {
      DEDUPD_CURSOR_ASSIGN(arg, in.Bytes());
      args.push_back(std::move(arg));
    }
    j.texts.emplace_back(sha, std::move(args));
  }
  if (!in.rest().empty()) return in.Fail("trailing bytes");
  return j;
}

#undef DEDUPD_CURSOR_ASSIGN

}  // namespace dedupd::redis
