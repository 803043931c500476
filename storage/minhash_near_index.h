// minhash_near_index.h: one namespace's MinHash near-text index for the
// store backends: an LshIndex (core/index/lsh_index.h) over the stored
// texts' signatures plus the signatures themselves (kept in RAM, +128 bytes
// per text, so an entry can be erased by id alone). The planners verify
// each candidate with EstimateJaccard against the signature of its stored
// fingerprint record.
//
// The content layer keeps one per namespace over its texts' fingerprint
// records, the chunk layer one per namespace over its chunk text records.
//
// Example:
//   MinHashNearIndex near;
//   near.Insert(/*id=*/7, minhasher.Sign(text));
//   std::vector<uint32_t> candidates = near.Query(minhasher.Sign(other));
//   near.Erase(7);
//
// Thread safety: thread-safe (an internal reader/writer lock: shared for
// Query, exclusive for Insert/Erase).
#ifndef DEDUPD_STORAGE_MINHASH_NEAR_INDEX_H_
#define DEDUPD_STORAGE_MINHASH_NEAR_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "core/index/lsh_index.h"
#include "core/text/minhash.h"

namespace dedupd {

class MinHashNearIndex {
 public:
  // Buckets per band of the LshIndex: 2^12, about right for ~4 * 10^5
  // texts (LshIndex: log2(n / 100)); 590 KB once the first signature
  // arrives. A namespace without signatures allocates nothing.
  static constexpr int kBucketBits = 12;

  MinHashNearIndex() = default;
  MinHashNearIndex(const MinHashNearIndex&) = delete;
  MinHashNearIndex& operator=(const MinHashNearIndex&) = delete;

  // Insert stores text `id` with signature `sig`, replacing the signature
  // the id had.
  void Insert(uint32_t id, const MinHashSignature& sig);
  // Erase removes text `id`; false when it was not stored.
  bool Erase(uint32_t id);
  // Query returns the ids of the stored texts that share an LSH band with
  // `sig` (candidates, to verify), ascending.
  std::vector<uint32_t> Query(const MinHashSignature& sig) const;
  // Find returns the signature stored for text `id`, if any (for
  // consistency checks against the stored records).
  std::optional<MinHashSignature> Find(uint32_t id) const;
  // The number of texts stored.
  size_t size() const;

 private:
  mutable absl::Mutex mu_;
  // Created with the first Insert.
  std::unique_ptr<LshIndex> lsh_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint32_t, MinHashSignature> signatures_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_MINHASH_NEAR_INDEX_H_
