// memory_chunk_store.h: an in-memory ChunkStore, the fake engine and server
// tests use, and the reference the chunk conformance suite
// (chunk_store_conformance.h) holds the RocksDB backend to. Nothing is
// persisted.
//
// Example:
//   MemoryChunkStore store(/*max_near_distance=*/3);
//   ChunkAnswer answer;
//   DEDUPD_RETURN_IF_ERROR(store.CheckChunks(doc, /*claim=*/true,
//                                            absl::Now(), &answer));
//
// Thread safety: thread-safe. A claim holds one exclusive lock for the whole
// call; peeks share it.
#ifndef DEDUPD_STORAGE_MEMORY_MEMORY_CHUNK_STORE_H_
#define DEDUPD_STORAGE_MEMORY_MEMORY_CHUNK_STORE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/index/simhash_index.h"
#include "storage/chunk_store.h"
#include "storage/minhash_near_index.h"
#include "storage/plan/chunk_planner.h"

namespace dedupd {

class MemoryChunkStore final : public ChunkStore {
 public:
  // `index_blocks`: the chunk index's number of blocks (SimHashIndex's
  // `blocks`; 0: its default).
  // REQUIRES: SimHashIndex::IsValidLayout(max_near_distance, index_blocks).
  explicit MemoryChunkStore(int max_near_distance = 3, int index_blocks = 0);
  MemoryChunkStore(const MemoryChunkStore&) = delete;
  MemoryChunkStore& operator=(const MemoryChunkStore&) = delete;

  // See ChunkStore. Errors: InvalidArgument (CheckChunkDocument).
  absl::Status CheckChunks(const ChunkDocument& doc, bool claim, absl::Time now,
                           ChunkAnswer* answer) override;
  int max_near_distance() const override;

 private:
  class Reader;

  // The key of the maps below for `key` of `name_space`: the namespace's
  // length (one byte), its bytes, then `key`.
  static std::string Scoped(absl::string_view name_space, absl::string_view key);
  // A namespace's chunk indexes: SimHash over every text, MinHash over
  // the texts recorded with a signature. Each synchronized by itself.
  struct Indexes {
    Indexes(int max_distance, int blocks) : simhash(max_distance, blocks) {}
    SimHashIndex simhash;
    MinHashNearIndex near;
  };
  // The chunk indexes of a namespace; nullptr (Find) when it has none yet.
  const Indexes* FindIndexes(absl::string_view name_space) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  Indexes* GetIndexes(absl::string_view name_space) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_near_distance_;
  const int index_blocks_;
  mutable absl::Mutex mu_;
  // One per namespace: each synchronized by itself, written only with mu_
  // held exclusively.
  absl::flat_hash_map<std::string, std::unique_ptr<Indexes>> indexes_ ABSL_GUARDED_BY(mu_);
  // Keyed by Scoped(namespace, document URL or DigestKey).
  absl::flat_hash_map<std::string, ChunkManifest> manifests_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, ChunkTextRecord> texts_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::btree_set<ChunkHolder>> holders_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint32_t, FingerprintRecord> fingerprints_ ABSL_GUARDED_BY(mu_);
  uint32_t next_text_id_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_MEMORY_MEMORY_CHUNK_STORE_H_
