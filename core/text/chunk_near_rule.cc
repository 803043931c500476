// The rule and the measurements behind it are in chunk_near_rule.h and
// docs/chunk_dedup.md ("Short chunks").
#include "core/text/chunk_near_rule.h"

#include <algorithm>

namespace dedupd {

int ChunkNearDistance(size_t words, int requested_max_distance) {
  if (requested_max_distance < 0 || words < kMinWordsForNearMatch) return kExactMatchOnly;
  if (words < kMinWordsForMediumChunk) {
    return std::min(requested_max_distance, kShortChunkMaxDistance);
  }
  if (words < kMinWordsForUncappedDistance) {
    return std::min(requested_max_distance, kMediumChunkMaxDistance);
  }
  return requested_max_distance;
}

double MinHashNearThreshold(size_t words, double requested_min_jaccard) {
  return KeepsMinHashSignature(words) ? requested_min_jaccard : 0;
}

}  // namespace dedupd
