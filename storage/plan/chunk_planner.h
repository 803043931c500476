// chunk_planner.h: the chunk layer's decision logic, shared by every
// ChunkStore backend (as content_planner.h is for the content layer). A
// backend reads the state a document needs through a ChunkStateReader (the
// records as they were before the call, with the document's and its texts'
// claim locks held), the planner decides each chunk's outcome and the
// records to write, and the backend writes them atomically.
//
// Records (what a backend stores; docs/storage_format.md for RocksDB):
//   manifest  document URL -> its chunks (id, SHA-256, SimHash, added),
//             and what the claim that wrote them answered, when it had a
//             claim id (ManifestClaim)
//   text      SHA-256 -> (text id, SimHash, number of chunks holding it,
//             its owner: the oldest chunk holding it, and the MinHash
//             signature and shingle set of the chunk that first recorded
//             it, if it had them)
//   holder    (SHA-256, added, document URL, chunk id): one per stored chunk
//             other than its text's owner, so the holders after the owner
//             are in that order (a text record without an owner, written
//             by storage format 2, has a holder record for every holder)
//   fingerprint  text id -> (SimHash, SHA-256, signature, set), the chunk
//             indexes' entries (SimHash; LSH for the signed texts)
//             (the RocksDB backend keeps it in the text record, keyed by
//             text id, with an in-memory SHA-256 -> id map)
//
// Example (inside a backend's CheckChunks, with its locks held):
//   ChunkPlan plan;
//   DEDUPD_RETURN_IF_ERROR(PlanChunkDocument(doc, claim, now, &reader, &plan));
//   // write plan.mutations in one atomic batch, then update the index.
//
// Thread safety: PlanChunkDocument is thread-compatible; the reader's calls
// happen on the calling thread.
#ifndef DEDUPD_STORAGE_PLAN_CHUNK_PLANNER_H_
#define DEDUPD_STORAGE_PLAN_CHUNK_PLANNER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/index/simhash_index.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "core/text/shingle_set.h"
#include "storage/chunk_store.h"
#include "storage/plan/content_planner.h"

namespace dedupd {

// How far below a chunk's min_jaccard an LSH candidate's estimate may be
// and still be read and verified exactly (ChunkStateReader::
// QueryJaccardCandidates). The estimate's error is ~0.035 at J = 0.8 and
// 0.041 (RMSE) on 40-word chunks, where densification copies bins
// (docs/minhash.md), so a candidate at or above the threshold is skipped
// when its estimate errs by ~5 standard deviations (probability < 1e-6);
// far candidates (most of an LSH bucket's) cost neither a record read nor
// a set merge.
inline constexpr double kExactPrefilterMargin = 0.2;

// One chunk of a stored document (a manifest entry).
struct StoredChunk {
  std::string chunk_id;
  Sha256Digest sha256{};
  uint64_t simhash = 0;
  // When the document first held this text (microseconds).
  absl::Time added;

  bool operator==(const StoredChunk& o) const {
    return chunk_id == o.chunk_id && sha256 == o.sha256 && simhash == o.simhash && added == o.added;
  }
};

// What the claim that last changed a document's chunks answered, when it
// had a claim id: a retry of it (ChunkStore::CheckChunks) is answered the
// same.
struct ManifestClaim {
  // ClaimIdHash of the claim's id; never 0.
  uint64_t claim_id_hash = 0;
  // The claim's `now` (microseconds): retries count the retention from it.
  absl::Time claimed;
  // The claim's ChunkAnswer::replaced_chunks (< 2^32) and
  // removed_chunk_ids (each non-empty).
  uint64_t replaced_chunks = 0;
  std::vector<std::string> removed_chunk_ids;

  bool operator==(const ManifestClaim& o) const {
    return claim_id_hash == o.claim_id_hash && claimed == o.claimed &&
           replaced_chunks == o.replaced_chunks && removed_chunk_ids == o.removed_chunk_ids;
  }
};

// A document's stored chunks, in the order it was sent.
struct ChunkManifest {
  std::vector<StoredChunk> chunks;
  // The last claim that changed the chunks, when it had a claim id.
  std::optional<ManifestClaim> claim{};
  bool operator==(const ChunkManifest& o) const { return chunks == o.chunks && claim == o.claim; }
};

// One stored chunk holding a text. Holders of a text are ordered by
// (added, document_url, chunk_id): oldest first.
struct ChunkHolder {
  absl::Time added;
  std::string document_url;
  std::string chunk_id;

  bool operator==(const ChunkHolder& o) const {
    return added == o.added && document_url == o.document_url && chunk_id == o.chunk_id;
  }
  bool operator<(const ChunkHolder& o) const {
    return std::tie(added, document_url, chunk_id) < std::tie(o.added, o.document_url, o.chunk_id);
  }
};

// What is stored per distinct chunk text.
struct ChunkTextRecord {
  // The text's id in the chunk index; allocated in increasing order.
  uint32_t text_id = 0;
  uint64_t simhash = 0;
  // How many stored chunks (of all documents) hold the text; >= 1.
  uint64_t holders = 0;
  // The oldest holder, which has no holder record. Every record the
  // planner writes has one; records of storage format 2 have none (every
  // holder then has a holder record) until a claim rewrites them.
  std::optional<ChunkHolder> owner;
  // The MinHash signature of the chunk that recorded the text (a new text
  // takes the first signed chunk's of the claim), if any; kept as the
  // holders change.
  std::optional<MinHashSignature> minhash{};
  // The shingle set (ChunkInput::shingles) of the same chunk, when it had
  // one besides its signature; empty: none (always none without minhash).
  ShingleSet32 shingles{};

  bool operator==(const ChunkTextRecord& o) const {
    return text_id == o.text_id && simhash == o.simhash && holders == o.holders &&
           owner == o.owner && minhash == o.minhash && shingles == o.shingles;
  }
};

// ChunkStateReader: the store's state before the call. Errors are the
// backend's (Unavailable, DataLoss, ...), with context.
class ChunkStateReader {
 public:
  virtual ~ChunkStateReader() = default;
  virtual absl::StatusOr<std::optional<ChunkManifest>> GetManifest(
      absl::string_view document_url) = 0;
  virtual absl::StatusOr<std::optional<ChunkTextRecord>> GetText(const Sha256Digest& sha256) = 0;
  // The first `limit` holder records of the text, oldest first (the text's
  // owner, when its record names one, is not among them).
  virtual absl::StatusOr<std::vector<ChunkHolder>> ListHolders(const Sha256Digest& sha256,
                                                               size_t limit) = 0;
  // The chunk index's answer (see SimHashIndex::Query).
  virtual std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance,
                                                     size_t limit, size_t* total) = 0;
  // The ids of the stored texts that share an LSH band with `sig` and
  // whose signature's estimate with `sig` reaches `min_estimate` (the
  // namespace's MinHashNearIndex::Query(sig, min_estimate), filtered on the
  // signatures in RAM before any record is read), to verify with their
  // fingerprint records; like QueryNear, only ids whose records are in the
  // reader's view. A backend without signatures has none.
  virtual std::vector<uint32_t> QueryJaccardCandidates(const MinHashSignature& sig,
                                                       double min_estimate) {
    (void)sig;
    (void)min_estimate;
    return {};
  }
  // The fingerprint record (with the text's signature) of a text id the
  // index returned. A backend whose
  // index is updated outside its read view (after the write, by other
  // calls) must not return such ids from QueryNear unless their records
  // are in the view; an id without a record is then a broken invariant,
  // reported as DataLoss.
  virtual absl::StatusOr<FingerprintRecord> GetTextFingerprint(uint32_t text_id) = 0;
  // A fresh text id, larger than every id in use.
  // Errors: ResourceExhausted when ids run out.
  virtual absl::StatusOr<uint32_t> AllocateTextId() = 0;
};

// The records a claim writes. A backend applies them in one atomic write:
// deletions, then puts.
struct ChunkMutations {
  // The document's new manifest; nullopt with delete_manifest when the
  // document now has no chunks; nullopt without it when unchanged.
  std::optional<ChunkManifest> manifest;
  bool delete_manifest = false;
  // Holder records (not the holders a text record names as its owner).
  std::vector<std::pair<Sha256Digest, ChunkHolder>> holders_removed;
  std::vector<std::pair<Sha256Digest, ChunkHolder>> holders_added;
  std::vector<std::pair<Sha256Digest, ChunkTextRecord>> texts_put;
  // Texts no chunk holds any more, with their records as they were.
  std::vector<std::pair<Sha256Digest, ChunkTextRecord>> texts_deleted;
  // Index entries: the ones to insert (new texts; with their signature,
  // if any, for the MinHash index too) and the ones to remove (the
  // texts_deleted, by id and SimHash; from the MinHash index by id).
  std::vector<std::pair<uint32_t, FingerprintRecord>> fingerprints_added;
  std::vector<SimHashIndex::Entry> fingerprints_removed;

  bool empty() const {
    return !manifest.has_value() && !delete_manifest && holders_removed.empty() &&
           holders_added.empty() && texts_put.empty() && texts_deleted.empty();
  }
};

struct ChunkPlan {
  ChunkAnswer answer;
  ChunkMutations mutations;  // empty unless claiming
};

// ListAllHolders returns the first `limit` holders of a text, oldest first:
// its owner (when `record` names one) followed by its holder records.
// `record` is the text's record as `reader` sees it.
absl::StatusOr<std::vector<ChunkHolder>> ListAllHolders(ChunkStateReader* reader,
                                                        const Sha256Digest& sha256,
                                                        const ChunkTextRecord& record,
                                                        size_t limit);

// ChunkLockShas returns the distinct SHA-256s a claim of `doc` must hold
// locks on, given the document's stored manifest: its new chunks' texts and
// its stored chunks' texts, sorted.
std::vector<Sha256Digest> ChunkLockShas(const ChunkDocument& doc,
                                        const std::optional<ChunkManifest>& stored);

// Near chunks: the chunk index's matches within the chunk's max_distance
// and the call's earlier chunks within it; when none and the chunk's
// min_jaccard > 0 and it has a signature, the LSH candidates
// (QueryJaccardCandidates) and the call's earlier signed chunks whose
// Jaccard with the chunk is >= min_jaccard: ExactJaccard of the two
// shingle sets when both have one, else EstimateJaccard of the two
// signatures (for an LSH candidate the set is in the fingerprint record
// the planner reads anyway: one record read per candidate). The nearest
// SimHash match wins (ties: the oldest; kBoth when its Jaccard reaches
// min_jaccard too), else the highest Jaccard (ties: the oldest): the
// content planner's order.
//
// PlanChunkDocument decides every chunk's outcome (see
// ChunkStore::CheckChunks) against `reader`'s state and, with `claim`,
// collects the records that replace the document's chunks. `now` is
// truncated to microseconds.
// REQUIRES: CheckChunkDocument(doc, ...) is OK.
// Errors: the reader's, unchanged; DataLoss for records that contradict
// each other (an index entry without its text record).
absl::Status PlanChunkDocument(const ChunkDocument& doc, bool claim, absl::Time now,
                               ChunkStateReader* reader, ChunkPlan* plan);
// The same, given the document's stored manifest (`stored`: what
// reader->GetManifest(doc.document_url) returns), for a backend that read
// it already (to know which texts to lock) and holds the document's lock,
// so that it cannot have changed: the planner then does not read it again.
absl::Status PlanChunkDocument(const ChunkDocument& doc, bool claim, absl::Time now,
                               const std::optional<ChunkManifest>& stored, ChunkStateReader* reader,
                               ChunkPlan* plan);

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_PLAN_CHUNK_PLANNER_H_
