// near_measure.h: which measure found a near text, shared by the content
// layer (NearMatch, content_store.h) and the chunk layer (ChunkOutcome,
// chunk_store.h), which otherwise do not depend on each other, and the two
// rules both planners apply to name it.
//
// Example:
//   std::optional<double> j = JaccardWhenAsked(doc.min_jaccard, doc.minhash,
//                                              stored.minhash);
//   const bool by_jaccard = j.has_value() && *j >= doc.min_jaccard;
//   NearMeasure m = NearMeasureOf(distance <= doc.max_distance, by_jaccard);
#ifndef DEDUPD_STORAGE_NEAR_MEASURE_H_
#define DEDUPD_STORAGE_NEAR_MEASURE_H_

#include <optional>

#include "core/text/minhash.h"

namespace dedupd {

// Which measure found a near text: SimHash (Hamming distance within
// max_distance), MinHash (estimated Jaccard >= min_jaccard), or both.
enum class NearMeasure { kSimHash, kJaccard, kBoth };

// NearMeasureOf names how a near text was found: within max_distance
// (`by_simhash`), at or above min_jaccard (`by_jaccard`), or both.
// REQUIRES: by_simhash || by_jaccard.
inline NearMeasure NearMeasureOf(bool by_simhash, bool by_jaccard) {
  if (!by_simhash) return NearMeasure::kJaccard;
  return by_jaccard ? NearMeasure::kBoth : NearMeasure::kSimHash;
}

// JaccardWhenAsked returns EstimateJaccard(*checked, *stored) when near
// matching by Jaccard is on (min_jaccard > 0) and both texts have a
// signature; nullopt otherwise (reported as an estimate of 0).
inline std::optional<double> JaccardWhenAsked(double min_jaccard,
                                              const std::optional<MinHashSignature>& checked,
                                              const std::optional<MinHashSignature>& stored) {
  if (!(min_jaccard > 0) || !checked.has_value() || !stored.has_value()) return std::nullopt;
  return EstimateJaccard(*checked, *stored);
}

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_NEAR_MEASURE_H_
