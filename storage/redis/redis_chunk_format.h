// redis_chunk_format.h: the chunk layer's keys and values on a Redis
// Cluster (docs/redis_format.md, "Chunk records"), as pure functions; with
// the Lua scripts in redis_chunk_store.cc, the only code that builds them.
//
// A chunk text's records share one hash tag, the SHA-256's 64 hex digits,
// so one Lua script changes its holders atomically: the text record
// (ChunkTextKey), its holders in age order (ChunkHoldersKey) and each
// holder's time added (ChunkHolderTimesKey). A document's records share the
// tag of its URL (UrlKeyTag): its manifest, the lease of the claim
// changing it and that claim's journal. Everything else is keyed on its
// own: the text id -> SHA-256 map, the namespace's text id counter and the
// SimHash and LSH bucket sets, in keys of the chunk layer's own kinds.
//
// Changing a byte these functions produce or accept changes the format
// (redis_chunk_format_test.cc pins them).
//
// Example:
//   std::string key = ChunkTextKey("dedupd:", "", Sha256("abc"));
//   // "dedupd:kt::{ba7816bf...}"
//
// Thread safety: pure functions.
#ifndef DEDUPD_STORAGE_REDIS_REDIS_CHUNK_FORMAT_H_
#define DEDUPD_STORAGE_REDIS_REDIS_CHUNK_FORMAT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "core/text/shingle_set.h"
#include "storage/plan/chunk_planner.h"

namespace dedupd::redis {

// Keys. REQUIRES (all): CheckKeyPrefix(prefix), CheckNamespace(name_space).

// prefix + "kt:" + ns + ":{" + Sha256Hex + "}": the chunk text record.
std::string ChunkTextKey(absl::string_view prefix, absl::string_view name_space,
                         const Sha256Digest& sha256);
// prefix + "kh:" + ns + ":{" + Sha256Hex + "}": every chunk holding the
// text (sorted set, every score 0, members ChunkHolderMember: byte order is
// age order, so ZRANGE 0 0 is the owner and ZCARD the holder count).
std::string ChunkHoldersKey(absl::string_view prefix, absl::string_view name_space,
                            const Sha256Digest& sha256);
// prefix + "kd:" + ns + ":{" + Sha256Hex + "}": hash, document URL + 00 +
// chunk id -> time added (i64 BE µs): finds a holder's member by its chunk.
std::string ChunkHolderTimesKey(absl::string_view prefix, absl::string_view name_space,
                                const Sha256Digest& sha256);
// prefix + "km:" + ns + ":{" + UrlKeyTag(url) + "}" + url: the manifest.
// REQUIRES (the three): document_url non-empty.
std::string ChunkManifestKey(absl::string_view prefix, absl::string_view name_space,
                             absl::string_view document_url);
// prefix + "kl:" + ...: the lease of the claim changing the document (a
// random token, with a PX expiry).
std::string ChunkLeaseKey(absl::string_view prefix, absl::string_view name_space,
                          absl::string_view document_url);
// prefix + "kj:" + ...: the journal of that claim (ChunkJournal).
std::string ChunkJournalKey(absl::string_view prefix, absl::string_view name_space,
                            absl::string_view document_url);
// prefix + "ki:" + ns + ":" + decimal text id: the text's raw 32-byte
// SHA-256 (what an index entry's id names).
std::string ChunkTextIdKey(absl::string_view prefix, absl::string_view name_space,
                           uint32_t text_id);
// prefix + "kn:" + ns: the namespace's chunk text id counter (INCRBY).
std::string ChunkTextIdCounterKey(absl::string_view prefix, absl::string_view name_space);
// The bucket sets of redis_content_format.h under kinds "ksh" and "klb".
std::string ChunkSimHashBucketKey(absl::string_view prefix, absl::string_view name_space,
                                  int blocks, int block, uint64_t simhash);
std::string ChunkLshBucketKey(absl::string_view prefix, absl::string_view name_space, int band,
                              const MinHashSignature& sig);

// ChunkHolderMember: added (i64 BE µs) + document URL + 00 + chunk id. The
// URL has no NUL byte (CheckChunkDocument), so byte order is ChunkHolder's
// (added, document_url, chunk_id) order. REQUIRES: added >= the epoch.
std::string ChunkHolderMember(const ChunkHolder& h);
// Errors: DataLoss when `member` is not one.
absl::StatusOr<ChunkHolder> DecodeChunkHolderMember(absl::string_view member);

// The chunk text record's value, immutable once written but for the
// index-pending flag:
//   01, flags (bit 0: MinHash signature follows; bit 1: shingle set
//   follows; bit 2: index pending), text id u32 BE, SimHash u64 BE,
//   [signature 128 bytes], [shingle set: the rest, u32 BE each, ascending]
// The holders are not in the value: they are the holder set.
struct RedisChunkTextValue {
  uint32_t text_id = 0;
  uint64_t simhash = 0;
  std::optional<MinHashSignature> minhash;
  ShingleSet32 shingles;  // empty: none (always none without minhash)
  bool index_pending = false;
};
std::string EncodeRedisChunkTextValue(const RedisChunkTextValue& value);
// Errors: DataLoss when `bytes` is not a chunk text value.
absl::StatusOr<RedisChunkTextValue> DecodeRedisChunkTextValue(absl::string_view bytes);
inline constexpr int kChunkTextFlagIndexPending = 4;

// The manifest's value:
//   01, flags (bit 0: a claim follows), [claim id hash u64 BE, claimed
//   i64 BE µs, replaced chunks u32 BE, removed count u32 BE, each removed
//   id as u32 BE length + bytes], chunk count u32 BE, each chunk as
//   SHA-256 (32), SimHash u64 BE, added i64 BE µs, id length u32 BE, id.
// REQUIRES: m.chunks non-empty.
std::string EncodeRedisChunkManifest(const ChunkManifest& m);
absl::StatusOr<ChunkManifest> DecodeRedisChunkManifest(absl::string_view bytes);

// The journal a claim writes, under its lease, before it changes any text:
// the manifest it will write (none: it deletes the document's chunks) and
// the arguments of each text script it will run. A claim that finds a
// journal (its writer stopped between its steps) runs those scripts again
// (they are idempotent) and commits that manifest before it reads.
//   01, manifest present (00/01), [manifest length u32 BE, manifest],
//   text count u32 BE, each text as SHA-256 (32), argument count u32 BE,
//   each argument as u32 BE length + bytes.
struct ChunkJournal {
  std::optional<ChunkManifest> manifest;
  std::vector<std::pair<Sha256Digest, std::vector<std::string>>> texts;
};
std::string EncodeChunkJournal(const ChunkJournal& journal);
absl::StatusOr<ChunkJournal> DecodeChunkJournal(absl::string_view bytes);

}  // namespace dedupd::redis

#endif  // DEDUPD_STORAGE_REDIS_REDIS_CHUNK_FORMAT_H_
