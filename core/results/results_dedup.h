// results_dedup.h: query-time deduplication of retrieved hits
// (DedupResults, layer 5 of the funnel in ARCHITECTURE.md). Stateless: no
// store, no I/O. Given the hits a retriever returned for one query, it
// keeps the best-scoring hit of each cluster of duplicates (same or nearly
// the same text, or nearly the same embedding) and at most a few hits per
// source page, so that an LLM's context is not filled with five copies of
// one paragraph. A bad hit is rejected alone; the rest are deduplicated.
// docs/results_dedup.md has the rules and measured costs.
//
// Example:
//   std::vector<ResultHit> hits = {
//       {"a", "The quick brown fox jumps over the lazy dog.", 0.9,
//        "https://x.test/1", {}},
//       {"b", "the quick  brown fox jumps over the lazy dog.", 0.8,
//        "https://y.test/2", {}},
//       {"c", "Something else entirely, about cats.", 0.7,
//        "https://x.test/1", {}},
//       {"d", "   ", 0.6, "", {}},
//   };
//   ResultsDedupOptions options;  // top_k unset: keep every survivor
//   absl::StatusOr<ResultsDedupResult> r = DedupResults(hits, options);
//   // r->kept == {0, 2}
//   // r->dropped == {{.index = 1, .reason = DropReason::kDuplicate,
//   //                 .duplicate_of = 0,
//   //                 .measure = DuplicateMeasure::kExactText, .value = 1}}
//   // r->rejected == {{.index = 3, .reason = RejectReason::kBadText,
//   //                  .error = "text: text is empty or only whitespace"}}
#ifndef DEDUPD_CORE_RESULTS_RESULTS_DEDUP_H_
#define DEDUPD_CORE_RESULTS_RESULTS_DEDUP_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace dedupd {

// Most hits one request may carry. More is InvalidArgument for the whole
// request (a retriever
// returns tens to a few thousand; a larger request is a caller bug, and
// the cost of the clustering is up to quadratic in the hits examined).
inline constexpr size_t kMaxResultHits = 10000;
// Most dimensions an embedding may have (the largest common text embedding
// models have 3,072). A hit with more is rejected (RejectReason::kBadHit).
inline constexpr size_t kMaxEmbeddingDimensions = 4096;
// Words per shingle of both text measures: SimHash (as the content layer,
// SimHashOptions's default) and Jaccard.
inline constexpr int kResultsDedupShingleWords = 3;

// ResultHit is one retrieved hit, as the retriever returned it. A hit that
// breaks one of the "Valid:" rules below is rejected (ResultsDedupResult::
// rejected), not an error of the request.
struct ResultHit {
  // Names the hit to the caller. Valid: not empty. Need not be unique
  // (hybrid retrieval can return one chunk twice; the second copy is then
  // a duplicate of the first); results name hits by index, not by id.
  std::string id;
  // The hit's text, UTF-8. Valid: NormalizeText accepts it (valid UTF-8,
  // no NUL byte, not empty or only whitespace).
  std::string text;
  // Retrieval score: higher is better. Valid: finite. Any scale.
  double score = 0;
  // The page the hit comes from, for the per-source cap. Compared byte for
  // byte (normalize URLs before, e.g. with UrlNormalizer, if the retriever
  // stores them in several forms). Empty: unknown source, never capped.
  std::string source_url;
  // The hit's embedding, or empty for none. Valid: at most
  // kMaxEmbeddingDimensions, finite, with a non-zero norm; and either every
  // hit of a request has one, all of the same size, or none has (the
  // cosine measure is used exactly when they do). The size is that of the
  // first hit, in index order, that has an embedding and is valid
  // otherwise (id, score, text and the embedding's own checks); a hit with
  // another size, or with none, is rejected.
  std::vector<float> embedding;
};

// NearTextMeasure selects how two texts are compared for near duplicates.
enum class NearTextMeasure {
  // 64-bit SimHash (SimHasher, Charikar 2002) of the normalized text;
  // near when the Hamming distance is at most max_hamming_distance. Cheap
  // (~1 ns per pair once fingerprinted) but only catches very close texts:
  // distance <= 3 is about Jaccard >= 0.96 (docs/benchmarks.md).
  kSimHash,
  // Exact Jaccard similarity |A ∩ B| / |A ∪ B| of the sets of distinct
  // 3-word shingles (Broder 1997) of the normalized texts; near when it is
  // at least min_jaccard. Exact at any threshold; costs a merge of the two
  // sorted shingle-hash sets per pair (~0.3 µs for two 100-word texts).
  kJaccard,
};

// ResultsDedupOptions: the per-request settings. Validated by
// DedupResults (InvalidArgument when out of range).
struct ResultsDedupOptions {
  // The most hits to keep: processing stops once this many are kept.
  // REQUIRES: 1 <= top_k when set (0 is an error). Default: unset, every
  // hit is examined and every one that is not dropped is kept (as a top_k
  // of at least the number of hits).
  std::optional<size_t> top_k;
  // Text measure for near duplicates. Default: kSimHash.
  NearTextMeasure near_text_measure = NearTextMeasure::kSimHash;
  // kSimHash: largest Hamming distance (bits of 64) at which two texts are
  // near duplicates. REQUIRES: 0 <= max_hamming_distance <= 64 (0: only
  // equal fingerprints). Default: 3 (Manku et al. 2007; the content layer's
  // default). Ignored by kJaccard (still validated).
  int max_hamming_distance = 3;
  // kJaccard: smallest shingle-set Jaccard similarity at which two texts
  // are near duplicates. REQUIRES: 0 < min_jaccard <= 1. Default: 0.8.
  // Ignored by kSimHash (still validated).
  double min_jaccard = 0.8;
  // Smallest cosine similarity of two embeddings at which two hits are
  // duplicates, whatever their texts. Used only when the hits carry
  // embeddings. REQUIRES: -1 <= min_cosine <= 1. Default: 0.95.
  double min_cosine = 0.95;
  // Most hits kept per source_url. kDefaultPerSourceCap: 2 when top_k <= 5,
  // else 3 (also when top_k is unset). 0: no cap. REQUIRES:
  // per_source_cap >= -1. Default: kDefaultPerSourceCap.
  static constexpr int kDefaultPerSourceCap = -1;
  int per_source_cap = kDefaultPerSourceCap;
};

// EffectivePerSourceCap returns the cap DedupResults applies for `options`:
// per_source_cap, or for kDefaultPerSourceCap 2 when top_k is set and
// <= 5, and 3 otherwise (a larger or unset top_k); 0 means no cap.
int EffectivePerSourceCap(const ResultsDedupOptions& options);

enum class DropReason {
  kDuplicate,  // a duplicate of a kept hit (DroppedHit::duplicate_of)
  kSourceCap,  // its source_url already had per_source_cap kept hits
};

// The measure that made a hit a duplicate, in the order they are tested.
enum class DuplicateMeasure {
  kExactText,  // equal normalized texts (NormalizeText); value: 1
  kSimHash,    // SimHash Hamming distance; value: the distance (bits)
  kJaccard,    // shingle-set Jaccard; value: the similarity, in (0, 1]
  kCosine,     // embedding cosine; value: the similarity, in [-1, 1]
};

// DroppedHit says which hit was dropped and why.
struct DroppedHit {
  size_t index = 0;  // the dropped hit, an index into the request's hits
  DropReason reason = DropReason::kDuplicate;
  // kDuplicate only (else 0 / kExactText / 0): the kept hit it duplicates
  // (an index into hits; always one of ResultsDedupResult::kept, with a
  // score >= this hit's), the measure that matched and its value.
  size_t duplicate_of = 0;
  DuplicateMeasure measure = DuplicateMeasure::kExactText;
  double value = 0;
};

// Why a hit was rejected.
enum class RejectReason {
  kBadText,  // NormalizeText rejects its text (empty or only whitespace,
             // invalid UTF-8, a NUL byte)
  kBadHit,   // anything else: an empty id, a NaN or infinite score, or a
             // bad embedding (see ResultHit::embedding)
};

// RejectedHit says which hit was rejected and why.
struct RejectedHit {
  size_t index = 0;  // an index into the request's hits
  RejectReason reason = RejectReason::kBadText;
  // For a human, without the hit's index: "text: invalid UTF-8 at byte
  // 17", "score is NaN", "embedding has 768 dimensions, hit 0 has 1024".
  std::string error;
};

// ResultsDedupResult: what DedupResults decided, as indices into the
// request's hits. Every hit index appears exactly once in kept, dropped,
// not_examined or rejected.
struct ResultsDedupResult {
  // The hits to return, best score first (at most top_k). Each is the
  // best-scoring hit of its duplicate cluster.
  std::vector<size_t> kept;
  // The hits examined and not kept, in processing order (score
  // descending).
  std::vector<DroppedHit> dropped;
  // The hits never examined because top_k hits were kept first, in
  // processing order: neither kept nor known to be duplicates.
  std::vector<size_t> not_examined;
  // The per-source cap that was applied (EffectivePerSourceCap); 0: none.
  int per_source_cap = 0;
  // The hits rejected as bad, in index order. The other hits are
  // deduplicated as if these were absent: a rejected hit is never a
  // cluster representative nor counted for the cap.
  std::vector<RejectedHit> rejected;
};

// DedupResults deduplicates `hits` for one query.
//
// Rejection: every hit is checked first (ResultHit's "Valid:" rules); a
// bad hit is listed in `rejected` with the first problem found (in this
// order: id, score, text, embedding size limit, embedding elements and
// norm, then embedding size against the other hits') and takes no further
// part. All hits may be rejected: the result is then only `rejected`.
//
// Order: the other hits are processed by score, highest first; equal scores keep
// their order in `hits` (a stable sort, so hits need not arrive sorted).
// Each hit, in that order, is:
//   1. dropped as kDuplicate when it matches a hit kept so far; of several,
//      the first kept (the best-scoring) one, and of the measures the first
//      that matches in this order: equal normalized text (kExactText); near
//      text by near_text_measure (kSimHash or kJaccard); cosine >=
//      min_cosine when the hits carry embeddings (kCosine). Only kept hits
//      are cluster representatives, so a kept hit is the best-scoring
//      member of its cluster. Matching is not transitive: C can match B
//      (dropped as a duplicate of A) without matching A, and is then kept.
//   2. otherwise dropped as kSourceCap when its non-empty source_url
//      already has EffectivePerSourceCap(options) kept hits;
//   3. otherwise kept. Once top_k hits are kept (when top_k is set), the
//      rest are not_examined.
// A hit dropped for the source cap is not a cluster representative: a
// later duplicate of it from another source can be kept.
//
// Errors, all InvalidArgument for the whole request, and only for what is
// wrong with the request as a whole (nothing is rejected then): top_k set
// to 0 ("top_k: must be at least 1; omit it to keep all hits"); an option
// out of its range (e.g. "min_jaccard 0 is outside (0, 1]"); more than
// kMaxResultHits hits. No hits is not an error (an empty result). Every
// hit is checked, including those not_examined, so which hits are
// rejected does not depend on top_k.
//
// Cost, n hits of b bytes with d-dimension embeddings, e examined, k kept:
// O(n (b + d)) to validate and normalize every hit, O(n log n) to sort,
// O(e (b + d)) to fingerprint the examined hits (SimHash or shingle set,
// unit embedding), and up to e * k pair tests: O(1) for SimHash, O(w) for
// Jaccard, O(d) at worst for cosine (usually a small part of it: Cosine's
// early exit). Measured on one core, 100 hits of 40-120 words with
// 1,024-dimension embeddings: ~0.1 ms at top_k 10, ~0.4 ms at top_k 100
// (docs/results_dedup.md). Thread-safe (no shared state).
absl::StatusOr<ResultsDedupResult> DedupResults(absl::Span<const ResultHit> hits,
                                                const ResultsDedupOptions& options);

// Names for logs and the CLI: "duplicate", "source_cap"; "exact_text",
// "simhash", "jaccard", "cosine".
const char* DropReasonName(DropReason reason);
const char* DuplicateMeasureName(DuplicateMeasure measure);

}  // namespace dedupd

#endif  // DEDUPD_CORE_RESULTS_RESULTS_DEDUP_H_
