// redis_near_read.h: the near-candidate reads the content layer
// (redis_content_store.cc) and the chunk layer (redis_chunk_store.cc)
// share: decoding SimHash and LSH bucket members, collecting a query's
// candidate ids once, and ordering the matches of a near query. Internal
// to storage/redis; the key names stay with each layer's format file.
//
// Example:
//   std::vector<redis::BucketEntry>& entries = buckets[simhash];
//   DEDUPD_RETURN_IF_ERROR(redis::TakeSimHashBucket(key, reply, &entries));
//   std::vector<uint32_t> ids = redis::NearCandidateIds(simhashes, sigs, k, &buckets, &bands);
//
// Thread safety: pure functions over the caller's containers.
#ifndef DEDUPD_STORAGE_REDIS_REDIS_NEAR_READ_H_
#define DEDUPD_STORAGE_REDIS_REDIS_NEAR_READ_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/index/simhash_index.h"
#include "core/text/minhash.h"
#include "storage/redis/cluster_router.h"
#include "storage/redis/redis_content_format.h"

namespace dedupd::redis {

// SigBytes returns a MinHash signature's raw bytes, a map key for its LSH
// buckets as read.
std::string SigBytes(const MinHashSignature& sig);

// TakeSimHashBucket appends the members of a SimHash bucket (an SMEMBERS
// reply of `key`) to `out`. Returns DataLoss naming `key` when a member is
// not 12 bytes.
absl::Status TakeSimHashBucket(absl::string_view key, const Value& reply,
                               std::vector<BucketEntry>* out);

// TakeLshBucket appends the ids of an LSH bucket (an SMEMBERS reply of
// `key`) to `out`. Returns DataLoss naming `key` when a member is not a
// decimal u32 ("a member is not a <id_name>").
absl::Status TakeLshBucket(absl::string_view key, const Value& reply, absl::string_view id_name,
                           std::vector<uint32_t>* out);

// NearCandidateIds returns, sorted and once each, the ids within `k` bits
// of each query in `simhashes` (from (*buckets)[simhash]) and every id of
// each query in `sigs` (from (*bands)[SigBytes(sig)]). A query's buckets
// overlap, so it first sorts and dedups each query's entries in place.
std::vector<uint32_t> NearCandidateIds(
    const std::vector<uint64_t>& simhashes, const std::vector<MinHashSignature>& sigs, int k,
    absl::flat_hash_map<uint64_t, std::vector<BucketEntry>>* buckets,
    absl::flat_hash_map<std::string, std::vector<uint32_t>>* bands);

// NearMatches returns the entries of `entries` within `max_distance` bits
// of `simhash` whose id `visible` accepts, ordered by distance then id,
// the first `limit` of them; sets *total (when not null) to how many
// matched before the cut. (SimHashIndex::Query's contract.)
std::vector<SimHashIndex::Match> NearMatches(const std::vector<BucketEntry>& entries,
                                             uint64_t simhash, int max_distance, size_t limit,
                                             size_t* total,
                                             const std::function<bool(uint32_t)>& visible);

}  // namespace dedupd::redis

#endif  // DEDUPD_STORAGE_REDIS_REDIS_NEAR_READ_H_
