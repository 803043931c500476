// content_store.h: the content layer's side of the storage seam.
// Domain-level: record a document's content hash first-writer-wins with an
// alias list, remember each fetched URL's last hash (re-crawl detection),
// and insert and query SimHash fingerprints. How a backend keeps them is its
// business (docs/storage_format.md for RocksDB).
//
// Example:
//   ContentDoc doc;
//   doc.identity_url = "https://a.example/post";   // normalized
//   doc.fetched_url = "https://a.example/post?print=1";
//   doc.sha256 = fingerprint.sha256;
//   doc.simhash = fingerprint.simhash;
//   std::vector<ContentOutcome> out;
//   DEDUPD_RETURN_IF_ERROR(store->CheckContent({doc}, /*claim=*/true,
//                                              ContentLimits{}, absl::Now(), &out));
//   // out[0].verdict == ContentVerdict::kNew the first time.
#ifndef DEDUPD_STORAGE_CONTENT_STORE_H_
#define DEDUPD_STORAGE_CONTENT_STORE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "storage/near_measure.h"

namespace dedupd {

// One document to check: its identity and its text's fingerprints.
struct ContentDoc {
  // The namespace the document belongs to (CheckNamespace: empty, or 1 to
  // 64 bytes of [A-Za-z0-9._-]). Texts, aliases, fetch records and seen
  // URLs of different namespaces never see each other. Every doc of one
  // CheckContent batch names the same namespace.
  std::string name_space;
  // The normalized URL that identifies the document: its canonical URL when
  // the page names one, else the fetched URL. Non-empty.
  std::string identity_url;
  // The normalized URL it was fetched from (may equal identity_url).
  // Non-empty.
  std::string fetched_url;
  // SHA-256 of the normalized text.
  Sha256Digest sha256{};
  // 64-bit SimHash of the normalized text.
  uint64_t simhash = 0;
  // MinHash signature of the normalized text (MinHasher::Sign), or none.
  // A claimed text with one keeps it with its fingerprint, so later docs
  // can find it by Jaccard; one stored without is found by SimHash only.
  std::optional<MinHashSignature> minhash;
  // Smallest estimated Jaccard similarity (EstimateJaccard of the two
  // signatures) that counts as near, besides max_distance: a stored text
  // is near when it is within max_distance OR (this doc has `minhash`,
  // the stored text has a signature, and their estimate is >= min_jaccard;
  // LSH candidates only, see LshIndex: ~98.6% found at 0.8).
  // 0: MinHash near matching off (SimHash only). REQUIRES: 0 <= min_jaccard
  // <= 1. Default: 0.
  double min_jaccard = 0;
  // The fetch's HTTP validators (ETag, Last-Modified), kept in the fetched
  // URL's fetch record; empty: none. At most kMaxValidatorBytes each.
  std::string etag;
  std::string last_modified;
  // Largest Hamming distance that counts as near.
  // REQUIRES: 0 <= max_distance <= the store's max_near_distance().
  int max_distance = 3;
  // ClaimIdHash of the request's claim id, 0 for none. A text a claim with
  // this hash recorded as kNew for the same identity URL, at most
  // claim_id_retention before `now`, is answered kNew again (a retry: see
  // ContentStore::CheckContent).
  uint64_t claim_id_hash = 0;
  // Default: 24 h (the server's --claim_id_retention).
  absl::Duration claim_id_retention = absl::Hours(24);
};

enum class ContentVerdict { kNew, kExactDuplicate, kNearDuplicate };
enum class RecrawlStatus { kFirstSeen, kUnchanged, kChanged };

// A stored text near a checked one.
struct NearMatch {
  std::string owner_url;  // identity URL that owns the stored text
  uint64_t simhash = 0;
  // Hamming distance of the SimHashes (above max_distance for kJaccard).
  int distance = 0;
  Sha256Digest sha256{};
  // The estimated Jaccard similarity of the two signatures when the doc's
  // min_jaccard > 0 and both texts have one; 0 otherwise.
  double estimated_jaccard = 0;
  NearMeasure measure = NearMeasure::kSimHash;
};

// The answer for one ContentDoc.
struct ContentOutcome {
  ContentVerdict verdict = ContentVerdict::kNew;
  // The identity URL that owns the text: the doc's own for kNew, the first
  // recorder's for kExactDuplicate, the nearest match's for kNearDuplicate.
  std::string owner_url;
  // When the text was first recorded (`now` for kNew in claim mode), or
  // when the nearest match was, for kNearDuplicate.
  absl::Time first_seen;
  // kNew / kExactDuplicate: the URLs other than owner_url that served this
  // exact text, in byte order, at most ContentLimits::max_aliases; and how
  // many there are in all (after this call's additions in claim mode).
  std::vector<std::string> aliases;
  uint64_t alias_count = 0;
  // kNearDuplicate: stored near texts, at most
  // ContentLimits::max_near_matches; and how many are near in all (a text
  // near by both measures counts once). Order: the texts within
  // max_distance (kSimHash, kBoth) first, by (distance, age); then the
  // texts near by Jaccard only (kJaccard), by (estimated Jaccard
  // descending, age).
  std::vector<NearMatch> near_matches;
  uint64_t near_match_count = 0;
  // The fetched URL's re-crawl status against its last recorded fetch; for
  // a retry (below) while that fetch is still the claim's, the claim's own.
  RecrawlStatus recrawl = RecrawlStatus::kFirstSeen;
  // kNew answered again to a retry of the claim that recorded the text
  // (ContentDoc::claim_id_hash): first_seen is that claim's, in peek mode
  // too.
  bool retry = false;
};

// Bounds on what one outcome lists.
struct ContentLimits {
  // Default: 10.
  size_t max_aliases = 10;
  // Default: 10.
  size_t max_near_matches = 10;
};

// What ContentStore::Forget removed or rewrote. Every count is of records
// deleted in the call's one atomic write; all zero/false (found() is
// false) when the store held nothing of the URL.
struct ForgetResult {
  // The URL record (seen-set) existed and was deleted: CheckUrl answers NEW
  // for the URL again.
  bool url_found = false;
  // The URL's fetch record (re-crawl state) was deleted.
  bool fetch_removed = false;
  // Alias records deleted: texts owned by another URL that the forgotten URL
  // also served. Their content records stay, with one alias less.
  uint64_t aliases_removed = 0;
  // Texts the URL owned alone: content record, fingerprint record and
  // near-duplicate index entry deleted (the text is NEW again).
  uint64_t contents_removed = 0;
  // A text the URL owned that other URLs also served: its oldest alias (by
  // time added, then URL bytes) became its owner, and that alias record was
  // deleted. The previous owner is the forgotten URL.
  struct ContentPromotion {
    Sha256Digest sha256{};
    std::string new_owner_url;
  };
  std::vector<ContentPromotion> contents_promoted;
  // The URL's chunk manifest was deleted (the document held chunks).
  bool chunk_manifest_removed = false;
  // Chunk holders removed: one per chunk the document held (a holder
  // record deleted, or a text record that named it as the owner rewritten).
  uint64_t chunk_holders_removed = 0;
  // Chunk texts no other document holds: text record, chunk fingerprint
  // record and chunk index entry deleted.
  uint64_t chunk_texts_removed = 0;
  // A chunk text whose oldest holder (its owner, the chunk that duplicates
  // name) was a chunk of the forgotten document and that other chunks still
  // hold: the next oldest holder is its owner now.
  struct ChunkPromotion {
    Sha256Digest sha256{};
    std::string new_owner_document_url;
    std::string new_owner_chunk_id;
  };
  std::vector<ChunkPromotion> chunk_owners_promoted;

  // found returns whether the store held any record of the URL.
  bool found() const {
    return url_found || fetch_removed || aliases_removed > 0 || contents_removed > 0 ||
           !contents_promoted.empty() || chunk_manifest_removed;
  }
};

// What is stored per fetched URL, for re-crawl status: the hash of its
// last fetch, when it was first fetched, and since when it has had that
// hash (the first fetch that saw it; unchanged re-fetches write nothing).
struct FetchRecord {
  Sha256Digest sha256{};
  absl::Time first_fetch;
  absl::Time hash_since;
  // The last fetch's HTTP validators (ETag and Last-Modified response
  // headers, as the caller sent them); empty: none.
  std::string etag;
  std::string last_modified;

  bool operator==(const FetchRecord& o) const {
    return sha256 == o.sha256 && first_fetch == o.first_fetch && hash_since == o.hash_since &&
           etag == o.etag && last_modified == o.last_modified;
  }
};

// ContentStore: implementations are thread-safe.
class ContentStore {
 public:
  virtual ~ContentStore() = default;

  // CheckContent answers (*outcomes)[i] for docs[i]. With `claim` the batch
  // is processed in order and a document sees the batch's earlier ones (a
  // repeat within the batch is a duplicate of its first occurrence); without
  // it every document is answered against the stored state alone (a repeat
  // gets the same answer, as CheckUrl's peek).
  //
  // With `claim`, it also records, atomically against every concurrent call:
  //   - a new text (kNew or kNearDuplicate) with its fingerprint, owned by
  //     the doc's identity URL; of all calls recording the same text exactly
  //     one gets kNew (or kNearDuplicate) and the others kExactDuplicate;
  //   - identity and fetched URLs other than the owner as aliases of the
  //     text (each URL once);
  //   - the fetched URL's fetch record (hash, first fetch, since when it has
  //     that hash) for re-crawl status, when it is new or the hash changed;
  //   - identity and fetched URL as seen URLs (as UrlStore::ClaimUrls would,
  //     so CheckUrl answers SEEN for them from then on), when the backend is
  //     also the UrlStore.
  // It returns OK only after every record is in the write-ahead log.
  // Near-duplicate detection between *different* texts claimed at the same
  // moment by different calls is not guaranteed (each may see the other
  // absent); within one batch it is.
  // Without `claim` nothing is recorded.
  //
  // Retries: a text recorded kNew by a claim with doc.claim_id_hash != 0
  // keeps that hash. A later doc (claim or peek) with the same hash and
  // identity URL (still the text's owner), at most doc.claim_id_retention
  // after the text's first_seen, is answered kNew with `retry` set, the
  // stored owner and first_seen, the current aliases, and the claim's own
  // re-crawl status while the fetched URL's fetch record is still the
  // claim's; what it records is what any exact duplicate of its own owner
  // records (for a true retry: nothing). Only the first such doc of a claim
  // batch is a retry; a repeat after it is kExactDuplicate, as it was in
  // the claim. A text recorded kNearDuplicate keeps no hash: its retry is
  // kExactDuplicate of the doc's own identity URL. Two different claim ids
  // share a hash with probability 2^-64.
  //
  // Errors: InvalidArgument for a doc that breaks a REQUIRES (nothing
  // recorded); Unavailable (transient: retry), ResourceExhausted, DataLoss,
  // Internal. On error no outcome is an answer and the batch may be partly
  // recorded only in ways a retry answers consistently (as duplicates).
  virtual absl::Status CheckContent(absl::Span<const ContentDoc> docs, bool claim,
                                    const ContentLimits& limits, absl::Time now,
                                    std::vector<ContentOutcome>* outcomes) = 0;

  // max_near_distance returns the largest max_distance the store's
  // near-duplicate index answers exactly.
  virtual int max_near_distance() const = 0;

  // LookupFetches sets (*fetches)[i] to the fetch record of the normalized
  // URL urls[i] in `name_space` (its last checked text, when that text
  // changed, and the fetch's validators), nullopt when none is stored.
  // Records nothing.
  // Errors: InvalidArgument for a bad namespace (CheckNamespace);
  // Unavailable, DataLoss, Internal.
  virtual absl::Status LookupFetches(absl::string_view name_space,
                                     absl::Span<const std::string> urls,
                                     std::vector<std::optional<FetchRecord>>* fetches) = 0;

  // Forget removes `normalized_url` of the empty namespace from the store
  // (a named namespace is dropped whole, not forgotten URL by URL), leaving
  // no record that
  // names it: its seen-set record (when the backend is also the UrlStore),
  // its fetch record, its alias records (those texts keep their owner, with
  // one alias less), and each text it owns: when other URLs served the same
  // text, the oldest alias (time added, then URL bytes) becomes the owner,
  // keeping the doc id, fingerprint and first-seen time; otherwise the text
  // and its fingerprint are deleted (it is NEW again). A backend that is
  // also the ChunkStore removes the URL's chunks too, as CheckChunks with
  // no chunks would. The decisions are forget_planner.h's, so every backend
  // makes the same ones. Atomic against every concurrent call.
  // A URL the store does not know is not an error: the result's found() is
  // false. `now` is the time the chunk planner is given (nothing forgotten
  // records it).
  // Errors: InvalidArgument for an empty URL; the backend's (Unavailable,
  // ResourceExhausted, DataLoss, FailedPrecondition after Close). On error
  // nothing was removed.
  virtual absl::StatusOr<ForgetResult> Forget(const std::string& normalized_url,
                                              absl::Time now) = 0;
};

// The longest ETag or Last-Modified value a fetch record keeps, in bytes.
inline constexpr size_t kMaxValidatorBytes = 1024;

// CheckContentDocs returns InvalidArgument naming the first doc of `docs`
// that breaks a REQUIRES of ContentDoc ("doc 3 of the batch: identity_url
// is empty"), or a namespace other than doc 0's, OK otherwise. Every
// backend checks its input with it.
absl::Status CheckContentDocs(absl::Span<const ContentDoc> docs, int max_near_distance);

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_CONTENT_STORE_H_
