// content_planner.h: the content layer's decision logic, shared by every
// ContentStore backend. A backend gathers the state a batch needs through a
// ContentStateReader (the records as they were before the batch), the
// planner decides each document's outcome and the records to write, and the
// backend writes them atomically. The planner keeps the batch's own writes
// in an overlay, so later documents of a claim batch see earlier ones.
//
// Example (inside a backend's CheckContent, with its locks held):
//   ContentPlan plan;
//   DEDUPD_RETURN_IF_ERROR(PlanContentBatch(docs, claim, limits, now,
//                                           &reader, &plan));
//   // write plan.mutations in one atomic batch, then
//   // index.Insert each plan.mutations.fingerprints entry.
//
// Thread safety: PlanContentBatch is thread-compatible; the reader's calls
// happen on the calling thread.
#ifndef DEDUPD_STORAGE_PLAN_CONTENT_PLANNER_H_
#define DEDUPD_STORAGE_PLAN_CONTENT_PLANNER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/index/simhash_index.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "core/text/shingle_set.h"
#include "storage/content_store.h"

namespace dedupd {

// DigestKey returns the 32 bytes of `sha256` as a string: the key of
// per-text maps (overlays, the memory store).
inline std::string DigestKey(const Sha256Digest& sha256) {
  return std::string(reinterpret_cast<const char*>(sha256.data()), sha256.size());
}

// What is stored per distinct text (keyed by its SHA-256).
struct ContentRecord {
  // Sequence number of the text, also its id in the near-duplicate index;
  // allocated in increasing order, so smaller is older.
  uint32_t doc_id = 0;
  uint64_t simhash = 0;
  absl::Time first_seen;
  // Number of alias URLs recorded for the text.
  uint64_t alias_count = 0;
  // The identity URL of the first document that recorded the text.
  std::string owner_url;
  // ClaimIdHash of the claim id of the request that recorded the text as
  // kNew (its retries are answered kNew again), 0 when it had none or
  // the text was recorded as a near duplicate; cleared when Forget gives
  // the text another owner.
  uint64_t claim_id_hash = 0;

  bool operator==(const ContentRecord& o) const {
    return doc_id == o.doc_id && simhash == o.simhash && first_seen == o.first_seen &&
           alias_count == o.alias_count && owner_url == o.owner_url &&
           claim_id_hash == o.claim_id_hash;
  }
};

// What is stored per index entry: which text a doc_id is, and its MinHash
// signature when the doc that recorded it had one.
struct FingerprintRecord {
  uint64_t simhash = 0;
  Sha256Digest sha256{};
  std::optional<MinHashSignature> minhash;
  // Chunk texts only (ChunkInput::shingles): the text's shingle set, kept
  // with its signature; empty: none. Content records have none.
  ShingleSet32 shingles{};

  bool operator==(const FingerprintRecord& o) const {
    return simhash == o.simhash && sha256 == o.sha256 && minhash == o.minhash &&
           shingles == o.shingles;
  }
};

// ContentStateReader: the store's state before the batch. Errors are the
// backend's (Unavailable, DataLoss, ...), with context.
class ContentStateReader {
 public:
  virtual ~ContentStateReader() = default;
  virtual absl::StatusOr<std::optional<ContentRecord>> GetContent(const Sha256Digest& sha256) = 0;
  // True when `url` is recorded as an alias of the text `sha256`.
  virtual absl::StatusOr<bool> HasAlias(const Sha256Digest& sha256, absl::string_view url) = 0;
  // The first `limit` alias URLs of the text, in byte order.
  virtual absl::StatusOr<std::vector<std::string>> ListAliases(const Sha256Digest& sha256,
                                                               size_t limit) = 0;
  virtual absl::StatusOr<std::optional<FetchRecord>> GetFetch(absl::string_view fetched_url) = 0;
  // True when `url` is in the URL seen-set.
  virtual absl::StatusOr<bool> HasUrl(absl::string_view url) = 0;
  // The near-duplicate index's answer (see SimHashIndex::Query).
  virtual std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance,
                                                     size_t limit, size_t* total) = 0;
  // The ids of the stored texts that share an LSH band with `sig` and
  // whose signature's estimate with `sig` reaches `min_jaccard`
  // (MinHashNearIndex::Query(sig, min_jaccard): filtered on the signatures
  // in RAM, so that only those that pass are read); the planner verifies
  // them again with their fingerprint records' signatures. A backend
  // without signatures has none.
  virtual std::vector<uint32_t> QueryJaccardCandidates(const MinHashSignature& sig,
                                                       double min_jaccard) {
    (void)sig;
    (void)min_jaccard;
    return {};
  }
  // The fingerprint record of an id the index returned. NotFound is a
  // broken invariant the backend reports as DataLoss.
  virtual absl::StatusOr<FingerprintRecord> GetFingerprint(uint32_t doc_id) = 0;
  // A fresh doc id, larger than every id allocated before.
  // Errors: ResourceExhausted when ids run out.
  virtual absl::StatusOr<uint32_t> AllocateDocId() = 0;
};

// The records a claim batch writes; each key appears at most once per
// vector (content records carry their final alias count).
struct ContentMutations {
  std::vector<std::pair<Sha256Digest, ContentRecord>> contents;
  struct Alias {
    Sha256Digest sha256;
    std::string url;
    absl::Time added;
  };
  std::vector<Alias> aliases;
  std::vector<std::pair<std::string, FetchRecord>> fetches;
  // URLs to add to the seen-set, with their first-seen time.
  std::vector<std::pair<std::string, absl::Time>> urls;
  std::vector<std::pair<uint32_t, FingerprintRecord>> fingerprints;

  bool empty() const {
    return contents.empty() && aliases.empty() && fetches.empty() && urls.empty() &&
           fingerprints.empty();
  }
};

struct ContentPlan {
  std::vector<ContentOutcome> outcomes;  // one per doc, in order
  ContentMutations mutations;            // empty unless claiming
};

// Near texts: the SimHash index's matches within doc.max_distance, and,
// when doc.min_jaccard > 0 and the doc has a signature, the LSH candidates
// (and the batch's earlier texts) whose signature's EstimateJaccard with
// the doc's is >= min_jaccard. A text found both ways counts once (kBoth).
// Listed: SimHash matches by (distance, doc id), then Jaccard-only ones by
// (estimated Jaccard descending, doc id); the first names the owner.
//
// PlanContentBatch decides the outcome of every doc (see
// ContentStore::CheckContent for the semantics) against `reader`'s state
// plus, with `claim`, the batch's own earlier documents, and collects the
// records to write. `now` is truncated to microseconds.
// Errors: the reader's, unchanged.
absl::Status PlanContentBatch(absl::Span<const ContentDoc> docs, bool claim,
                              const ContentLimits& limits, absl::Time now,
                              ContentStateReader* reader, ContentPlan* plan);

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_PLAN_CONTENT_PLANNER_H_
