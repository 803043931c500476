// engine.h: the service's logic, free of gRPC: takes the API's proto
// messages, returns absl::Status. The gRPC adapter (service.h) is a few lines
// per RPC around it.
//
// Example:
//   UrlNormalizer normalizer(config.url_policy);
//   Engine engine(&normalizer, store.get(), EngineOptions{});
//   v1::CheckUrlResponse response;
//   absl::Status s = engine.CheckUrl(request, &response);
#ifndef DEDUPD_SERVER_ENGINE_H_
#define DEDUPD_SERVER_ENGINE_H_

#include <cstddef>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/text/content_fingerprint.h"
#include "core/text/minhash.h"
#include "core/text/simhash.h"
#include "core/url/revisit_policy.h"
#include "core/url/url_normalizer.h"
#include "dedupd/v1/dedupd.pb.h"
#include "storage/chunk_store.h"
#include "storage/content_store.h"
#include "storage/url_store.h"

namespace dedupd {

struct EngineOptions {
  // Most items one CheckUrl request may carry; more is INVALID_ARGUMENT.
  // Default: 10,000.
  size_t max_batch_items = 10000;
  // Largest text of one CheckContent item or CheckChunks chunk, in bytes; a
  // larger one is that item's INVALID result. Default: 8 MiB.
  size_t max_text_bytes = size_t{8} << 20;
  // Hamming distance used when an item sets none. Default: 3.
  int default_max_hamming_distance = 3;
  // MinHash near matching (docs/minhash.md): the min_jaccard used when a
  // CheckContent item or a CheckChunks request sets none; 0 turns MinHash
  // matching off for them. REQUIRES: 0, or in [min_jaccard_floor, 1].
  // Defaults: 0.85 for pages, 0.8 for chunks (docs/benchmarks.md, "Targets,
  // and the default").
  double content_min_jaccard = 0.85;
  double chunk_min_jaccard = 0.8;
  // The lowest min_jaccard a request may ask for: the LSH layout (18 bands
  // of 7 rows) finds ~98.6% of the pairs at 0.8 and fewer below.
  // REQUIRES: 0 < min_jaccard_floor <= 1. Default: 0.8.
  double min_jaccard_floor = 0.8;
  // What one CheckContent result lists (alias URLs, near matches).
  ContentLimits content_limits;
  // The clock stamped on new records. Default: absl::Now.
  std::function<absl::Time()> clock = [] { return absl::Now(); };
  // How long a claim id answers its retries (the claim_id of CheckUrl,
  // CheckContent and CheckChunks requests). Default: 24 h.
  absl::Duration claim_id_retention = absl::Hours(24);
  // When claimed URLs are DUE again (the config file's revisit_rules).
  // Default: never.
  RevisitPolicy revisit_policy;
  // The message of CheckContent's and CheckChunks' UNIMPLEMENTED answer
  // when the engine has no content or chunk store (a front end whose store
  // serves the URL layer only says which flag and where to go instead).
  // Default: empty ("this server has no content store" / "... chunk store").
  std::string no_content_layer_message;
};

// Engine: thread-safe; holds no state of its own beyond its options.
class Engine {
 public:
  // REQUIRES: `normalizer` and `store` outlive the engine.
  Engine(const UrlNormalizer* normalizer, UrlStore* store, EngineOptions options);
  // With the content layer. REQUIRES: every pointer outlives the engine.
  Engine(const UrlNormalizer* normalizer, UrlStore* store, const SimHasher* hasher,
         ContentStore* content_store, EngineOptions options);
  // With the content and chunk layers. REQUIRES: every pointer outlives the
  // engine.
  Engine(const UrlNormalizer* normalizer, UrlStore* store, const SimHasher* hasher,
         ContentStore* content_store, ChunkStore* chunk_store, EngineOptions options);

  // CheckUrl answers one result per request item, in order (see
  // proto/dedupd/v1/dedupd.proto). A bad item gets URL_VERDICT_INVALID with
  // the normalizer's reason; it never fails the request.
  // Errors: InvalidArgument for an empty request or more than
  // max_batch_items items (the message names the limit); the store's code
  // (Unavailable, ResourceExhausted, DataLoss, Internal), with context, when
  // the store fails — then nothing in the response is an answer.
  // The request's namespace, claim_id and lease_seconds are checked first:
  // a bad one fails the request with InvalidArgument naming the limit
  // (kMaxNamespaceBytes, kMaxClaimIdBytes, 1..kMaxLeaseSeconds; a lease
  // from a server in the approximate URL mode).
  absl::Status CheckUrl(const v1::CheckUrlRequest& request, v1::CheckUrlResponse* response) const;

  // CompleteUrls confirms the leases of the request's URLs (see
  // proto/dedupd/v1/dedupd.proto): one result per item; a URL that cannot
  // be normalized, was never claimed in the namespace, or whose last claim
  // had another claim id is INVALID with its reason.
  // Errors: InvalidArgument for an empty or oversized request, a bad
  // namespace or claim_id; FailedPrecondition in the approximate URL mode;
  // the store's code, with context, when the store fails.
  absl::Status CompleteUrls(const v1::CompleteUrlsRequest& request,
                            v1::CompleteUrlsResponse* response) const;

  // CheckContent answers one result per request item, in order (see
  // proto/dedupd/v1/dedupd.proto). A bad item (bad URL, invalid UTF-8, NUL,
  // empty or whitespace-only text, text over max_text_bytes, a distance
  // over the store's index limit) gets CONTENT_VERDICT_INVALID with the
  // reason; it never fails the request.
  // A request with a claim_id retries the claim of the texts it recorded
  // NEW (ContentStore::CheckContent, within claim_id_retention).
  // Errors: InvalidArgument for an empty request, more than
  // max_batch_items items, a bad namespace or a claim_id over
  // kMaxClaimIdBytes; Unimplemented when the engine has no content store;
  // the store's code, with context, when the store fails.
  absl::Status CheckContent(const v1::CheckContentRequest& request,
                            v1::CheckContentResponse* response) const;

  // CheckChunks answers one result per chunk of the request's document, in
  // order (see proto/dedupd/v1/dedupd.proto). A bad chunk (invalid UTF-8,
  // NUL, empty or whitespace-only text, text over max_text_bytes, a chunk id
  // that is empty, longer than kMaxChunkIdBytes or repeats an earlier one)
  // gets CHUNK_VERDICT_INVALID with the reason and is not recorded; the
  // valid chunks replace the document's stored chunks (when none is valid,
  // nothing is recorded). Near matching uses ChunkNearDistance
  // (core/text/chunk_near_rule.h): short chunks match at a stricter distance.
  // A request with a claim_id and the same valid chunks as the claim that
  // last changed the document under that id gets that claim's
  // replaced_chunks and removed_chunk_ids (ChunkStore::CheckChunks, within
  // claim_id_retention).
  // Errors: InvalidArgument for no chunks, more than max_batch_items
  // chunks, a bad namespace or claim_id (over kMaxClaimIdBytes), a missing
  // or bad document_url, or a max_hamming_distance above the store's index
  // limit (the messages name the limit); Unimplemented
  // when the engine has no chunk store; the store's code, with context, when
  // the store fails.
  absl::Status CheckChunks(const v1::CheckChunksRequest& request,
                           v1::CheckChunksResponse* response) const;

  // DedupResults deduplicates one query's hits (core/results/results_dedup.h;
  // stateless: needs no store). A bad hit (empty id or text, invalid UTF-8,
  // a NaN or infinite score or embedding element, an embedding of another
  // size than the first valid one's, or missing while others have one) is
  // listed in the response's `rejected` with ERROR_REASON_BAD_TEXT or
  // ERROR_REASON_BAD_HIT; the other hits are deduplicated without it.
  // Unset top_k keeps every hit that survives. Errors: InvalidArgument,
  // naming the limit, for a bad request as a whole: no hits, more than
  // kMaxResultHits, top_k set to 0, a setting out of range or an unknown
  // near_text_measure.
  absl::Status DedupResults(const v1::DedupResultsRequest& request,
                            v1::DedupResultsResponse* response) const;

  // The longest chunk id CheckChunks accepts, in bytes.
  static constexpr size_t kMaxChunkIdBytes = 1024;
  // The longest lease CheckUrl grants: seven days.
  static constexpr uint32_t kMaxLeaseSeconds = 7 * 24 * 3600;

 private:
  absl::Status CheckBatchSize(int n) const;
  // The claim options of a CheckUrl request (namespace, claim id, lease),
  // or InvalidArgument naming the bad field and its limit.
  absl::StatusOr<UrlClaimOptions> UrlOptions(const v1::CheckUrlRequest& request) const;
  // Sets the fetch fields (last_changed_time, content_hash, etag,
  // last_modified) of the SEEN and DUE results among keys (keys[j] is
  // results[key_item[j]], claimed as claims[j]).
  absl::Status AddFetches(absl::string_view name_space, absl::Span<const std::string> keys,
                          absl::Span<const int> key_item, absl::Span<const UrlClaim> claims,
                          v1::CheckUrlResponse* response) const;
  // The document key a CheckChunks request names: its normalized
  // document_url, or its document_id's key (storage/document_key.h);
  // InvalidArgument naming the field and the limit when it names none,
  // both, or a bad one.
  absl::StatusOr<std::string> ChunkDocumentKey(const v1::CheckChunksRequest& request) const;
  // The Hamming distance an item or request asks for (`has`: whether it set
  // one), or the default; InvalidArgument naming the limit when above
  // `index_limit`.
  absl::StatusOr<int> ResolveDistance(bool has, uint32_t requested, int index_limit) const;
  // The min_jaccard an item or request asks for (`has`: whether it set
  // one), or `default_value`; InvalidArgument naming the limits when not in
  // [min_jaccard_floor, 1] (NaN included).
  absl::StatusOr<double> ResolveMinJaccard(bool has, double requested, double default_value) const;
  // FingerprintText of an item's text, after the max_text_bytes check;
  // InvalidArgument with a "text: " message for the item's INVALID result,
  // and *reason set to its ErrorReason (TEXT_TOO_LARGE or BAD_TEXT). With
  // `shingles` non-null, also the text's shingle set (FingerprintText).
  absl::StatusOr<ContentFingerprint> FingerprintItemText(absl::string_view text,
                                                         v1::ErrorReason* reason,
                                                         ShingleSet32* shingles = nullptr) const;

  const UrlNormalizer* normalizer_;
  UrlStore* store_;
  const SimHasher* hasher_ = nullptr;
  // Signs texts over the same shingles as hasher_ (FingerprintText finds
  // them once for both).
  MinHasher minhasher_;
  ContentStore* content_store_ = nullptr;
  ChunkStore* chunk_store_ = nullptr;
  EngineOptions options_;
};

}  // namespace dedupd

#endif  // DEDUPD_SERVER_ENGINE_H_
