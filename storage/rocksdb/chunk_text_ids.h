// chunk_text_ids.h: the RocksDB backend's in-memory map from a chunk text's
// SHA-256 to its text id (storage format 4 keys chunk text records by id,
// so a claim finds an exact duplicate — or learns a text is new — without a
// store read). Rebuilt from the text records at Open.
//
// The map keys on the digest's first 8 bytes, which is what keeps it small
// (~16 bytes per text plus the table's slack). Two texts whose digests share
// those bytes are possible (about 3e-6 for 10 million texts), so Find
// returns a *candidate*: the caller reads the record and compares the full
// digest; a different digest means the text is not stored. A text inserted
// while another holds its 8-byte prefix goes to a per-shard overflow map
// keyed by the whole digest, which Find checks first.
//
// Example:
//   ChunkTextIds ids;
//   ids.Insert(sha, 7);
//   std::optional<uint32_t> candidate = ids.Find(sha);  // 7
//   ids.Erase(sha, 7);
//
// Thread safety: thread-safe; each call locks one shard.
#ifndef DEDUPD_STORAGE_ROCKSDB_CHUNK_TEXT_IDS_H_
#define DEDUPD_STORAGE_ROCKSDB_CHUNK_TEXT_IDS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/text/sha256.h"

namespace dedupd {

class ChunkTextIds {
 public:
  ChunkTextIds() = default;
  ChunkTextIds(const ChunkTextIds&) = delete;
  ChunkTextIds& operator=(const ChunkTextIds&) = delete;

  // The id stored for `sha`, or for another text sharing its first 8 bytes
  // (the caller tells them apart by the record's digest); nullopt: no
  // stored text has such a digest.
  std::optional<uint32_t> Find(const Sha256Digest& sha) const;

  // Records that `sha` (a text Find does not name, or names another text
  // for) has id `id`.
  void Insert(const Sha256Digest& sha, uint32_t id);

  // Forgets `sha`'s entry if it names `id`; a no-op otherwise.
  void Erase(const Sha256Digest& sha, uint32_t id);

  // Entries, and the ones in overflow maps.
  size_t size() const;
  size_t overflow_size() const;
  // Bytes the tables hold (slots and control bytes), an estimate.
  size_t MemoryBytes() const;

 private:
  static constexpr size_t kShards = 64;
  // The digest's first 8 bytes, already uniform: the hash is the value.
  struct PrefixHash {
    size_t operator()(uint64_t prefix) const { return static_cast<size_t>(prefix); }
  };
  struct Shard {
    mutable absl::Mutex mu;
    absl::flat_hash_map<uint64_t, uint32_t, PrefixHash> by_prefix ABSL_GUARDED_BY(mu);
    absl::flat_hash_map<Sha256Digest, uint32_t> overflow ABSL_GUARDED_BY(mu);
  };
  static uint64_t Prefix(const Sha256Digest& sha);
  const Shard& ShardOf(uint64_t prefix) const { return shards_[prefix >> 58]; }
  Shard& ShardOf(uint64_t prefix) { return shards_[prefix >> 58]; }

  std::array<Shard, kShards> shards_;
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_ROCKSDB_CHUNK_TEXT_IDS_H_
