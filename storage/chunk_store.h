// chunk_store.h: the chunk layer's side of the storage seam (CheckChunks).
// A document (by its normalized URL) is a list of chunks; the store keeps,
// per document, the chunks it was last sent with, and answers for each chunk
// of a new version whether another chunk already holds the same text
// (SHA-256) or a text near it (SimHash, or Jaccard when asked:
// min_jaccard; exact over the two shingle sets when both texts kept one,
// else estimated from MinHash signatures). Chunk records are their own
// namespace: a chunk never matches a whole page (ContentStore) and a page
// never matches a chunk.
//
// Example:
//   ChunkDocument doc;
//   doc.document_url = "https://docs.example/install";  // normalized
//   doc.chunks.push_back({"0", fp0.sha256, fp0.simhash, /*max_distance=*/3});
//   doc.chunks.push_back({"1", fp1.sha256, fp1.simhash, /*max_distance=*/-1});
//   ChunkInput c2{"2", fp2.sha256, fp2.simhash, /*max_distance=*/3};
//   c2.minhash = MinHasher().Sign(text2);  // near by Jaccard too
//   c2.shingles = ShingleSet32(DistinctShingleHashes(text2, 3).distinct);
//   c2.min_jaccard = 0.8;
//   doc.chunks.push_back(c2);
//   ChunkAnswer answer;
//   DEDUPD_RETURN_IF_ERROR(store->CheckChunks(doc, /*claim=*/true,
//                                             absl::Now(), &answer));
//   // answer.outcomes[0].verdict == ChunkVerdict::kNew the first time.
#ifndef DEDUPD_STORAGE_CHUNK_STORE_H_
#define DEDUPD_STORAGE_CHUNK_STORE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "core/text/shingle_set.h"
#include "storage/near_measure.h"

namespace dedupd {

// One chunk of a document: its id and its text's fingerprints.
struct ChunkInput {
  // The caller's id of the chunk, unique within the document. Non-empty.
  std::string chunk_id;
  // SHA-256 and 64-bit SimHash of the chunk's normalized text.
  Sha256Digest sha256{};
  uint64_t simhash = 0;
  // Largest Hamming distance that counts as near for this chunk; -1: exact
  // matches only (short chunks, core/text/chunk_near_rule.h).
  // REQUIRES: -1 <= max_distance <= the store's max_near_distance().
  int max_distance = 3;
  // (After max_distance, with initializers, so that `{id, sha256,
  // simhash, max_distance}` still builds a chunk without a signature.)
  // MinHash signature of the normalized text (MinHasher::Sign), or none.
  // A chunk text recorded with one keeps it with its text record, so later
  // chunks can find it by Jaccard; one recorded without is found by SimHash
  // only (the signature of a text is the one of the chunk that first
  // recorded it: a later holder's does not replace it).
  std::optional<MinHashSignature> minhash{};
  // Smallest Jaccard similarity that counts as near, besides
  // max_distance: a stored text is near when it is within max_distance OR
  // (this chunk has `minhash`, the stored text has a signature, and their
  // Jaccard is >= min_jaccard; LSH candidates only, see LshIndex: ~98.6%
  // found at J = 0.8). The Jaccard is ExactJaccard of the two `shingles`
  // sets when both texts have one, else EstimateJaccard of the two
  // signatures. Ignored when
  // max_distance is -1 (exact matches only). 0: MinHash near matching off
  // (SimHash only). REQUIRES: 0 <= min_jaccard <= 1 (not NaN). Default: 0.
  double min_jaccard = 0;
  // The normalized text's ShingleSet32 (of the shingles `minhash` is
  // computed from, core/text/shingle_set.h), or none (empty): ignored
  // without `minhash`. When both this chunk and a candidate text have a
  // set, the candidate is verified by their ExactJaccard instead of the
  // estimate. Kept with the text record beside the signature, and like it
  // the set of the chunk that first recorded the text. The engine sends
  // one for every signed chunk of at most kMaxExactShingles shingles.
  ShingleSet32 shingles{};
};

// A document and its chunks, in order.
struct ChunkDocument {
  // The document's normalized URL: its identity. Non-empty, no NUL byte.
  std::string document_url;
  // REQUIRES: chunk ids pairwise distinct.
  std::vector<ChunkInput> chunks;
  // The namespace the document belongs to (CheckNamespace). Chunks of
  // different namespaces never see each other; a document URL names one
  // document per namespace. Last, with an initializer, so that
  // `ChunkDocument{url, chunks}` names the empty namespace.
  std::string name_space{};
  // ClaimIdHash of the request's claim id, 0 for none. A claim that changes
  // the document's chunks keeps it with the replaced_chunks and
  // removed_chunk_ids it answered; a call with the same hash and the same
  // chunks, at most claim_id_retention after that claim, is answered them
  // again (a retry: see ChunkStore::CheckChunks).
  uint64_t claim_id_hash = 0;
  // Default: 24 h (the server's --claim_id_retention).
  absl::Duration claim_id_retention = absl::Hours(24);
};

enum class ChunkVerdict { kNew, kExactDuplicate, kNearDuplicate };

// The answer for one chunk.
struct ChunkOutcome {
  ChunkVerdict verdict = ChunkVerdict::kNew;
  // kExactDuplicate / kNearDuplicate: the chunk it duplicates (another
  // document's, or an earlier chunk of this one), and the Hamming distance
  // between the two SimHashes (0 for kExactDuplicate; above max_distance
  // when `measure` is kJaccard).
  std::string duplicate_document_url;
  std::string duplicate_chunk_id;
  int distance = 0;
  uint64_t duplicate_simhash = 0;
  // kNearDuplicate: the Jaccard similarity of the two texts when the
  // chunk's min_jaccard > 0 and both texts have a signature, 0 otherwise:
  // the exact Jaccard of their shingle sets (ExactJaccard) when both kept
  // one (ChunkInput::shingles), else the estimate of their signatures;
  // and the measure that found the duplicated chunk (kSimHash for every
  // other verdict).
  double estimated_jaccard = 0;
  NearMeasure measure = NearMeasure::kSimHash;
  // When the duplicated chunk's text was recorded, or for kNew in claim mode
  // when this chunk's text was (`now`, or its first recording when an older
  // version of this document held the same text).
  absl::Time first_seen = absl::InfinitePast();
  // How many stored chunks other than this document's hold this exact text
  // (before this call).
  uint64_t other_holders = 0;
};

struct ChunkAnswer {
  std::vector<ChunkOutcome> outcomes;  // one per chunk, in order
  // How many chunk records of an earlier version of the document the call
  // replaced (claim) or would replace (peek).
  size_t replaced_chunks = 0;
  // The ids of the stored chunks this call removed (claim) or would remove
  // (peek): those of the earlier version whose id the call does not send
  // again with the same text (SHA-256), in the stored order. The caller
  // deletes exactly their vectors; a chunk sent again unchanged keeps its.
  std::vector<std::string> removed_chunk_ids;
  // The call retries the claim that last changed the document's chunks:
  // replaced_chunks and removed_chunk_ids are that claim's.
  bool retry = false;
};

// ChunkStore: implementations are thread-safe.
class ChunkStore {
 public:
  virtual ~ChunkStore() = default;

  // CheckChunks answers (*answer).outcomes[i] for doc.chunks[i], against
  // every stored chunk of other documents and the chunks of `doc` before i;
  // the document's own stored chunks (an earlier version) never match: the
  // call replaces them. For chunk i:
  //   - kExactDuplicate of the oldest chunk holding the same text (stored
  //     in another document, or an earlier chunk of this call), when it is
  //     older than this chunk's own text (a re-sent document keeps the age of
  //     each text it still holds, so the document that first held a text
  //     stays its owner across re-crawls);
  //   - else kNearDuplicate of the nearest chunk within max_distance (ties:
  //     the oldest; measure kBoth when its Jaccard also reaches
  //     min_jaccard, else kSimHash), among other documents' texts and
  //     earlier chunks of this call;
  //   - else, when min_jaccard > 0 and the chunk has a signature,
  //     kNearDuplicate (measure kJaccard) of the chunk whose text's
  //     Jaccard is >= min_jaccard and highest (ties: the oldest), among
  //     the same chunks (stored texts: LSH candidates, each verified
  //     against its stored set, else its signature) — the content layer's
  //     order: SimHash matches first by (distance, age), then Jaccard-only
  //     ones by (Jaccard descending, age);
  //   - else kNew.
  // The answer is the same with and without `claim`; with `claim` the call
  // also replaces the document's stored chunks by doc.chunks, atomically
  // against every concurrent call: of many calls recording the same text at
  // once, exactly one is answered kNew. It returns OK only after the records
  // are in the write-ahead log. An empty doc.chunks with `claim` deletes the
  // document's chunks. Near-duplicate detection between different texts
  // recorded at the same moment by different calls is not guaranteed.
  //
  // Retries: a claim with doc.claim_id_hash != 0 that changes the
  // document's stored chunks keeps that hash, its time and the
  // replaced_chunks and removed_chunk_ids it answered with the chunks (a
  // claim that changes nothing keeps the last claim's; one that deletes the
  // document's chunks keeps none). A call (claim or peek) with the same hash
  // and the same chunks (ids and SHA-256s, in order), at most
  // doc.claim_id_retention after that claim, is answered them again, with
  // `retry` set; its outcomes are those of any re-send of the same chunks,
  // and a claim records nothing. Any other call is answered as above.
  //
  // Errors: InvalidArgument for a doc that breaks a REQUIRES (nothing
  // recorded); Unavailable (transient: retry), ResourceExhausted, DataLoss,
  // Internal. On error no outcome is an answer.
  virtual absl::Status CheckChunks(const ChunkDocument& doc, bool claim, absl::Time now,
                                   ChunkAnswer* answer) = 0;

  // max_near_distance returns the largest max_distance the store's chunk
  // index answers exactly.
  virtual int max_near_distance() const = 0;
};

// CheckChunkDocument returns InvalidArgument naming what breaks a REQUIRES
// of ChunkDocument / ChunkInput ("chunk 3: chunk id \"a\" repeats chunk 1's"),
// OK otherwise. Every backend checks its input with it.
absl::Status CheckChunkDocument(const ChunkDocument& doc, int max_near_distance);

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_CHUNK_STORE_H_
