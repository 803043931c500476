// url_store.h: the URL layer's side of the storage seam. Domain-level: the
// store claims a batch of normalized URLs atomically, in a namespace, with
// an optional claim id (idempotent retries) and lease (at-least-once); how
// it keeps them is the backend's business (docs/storage_format.md for
// RocksDB). What a claim decides is storage/plan/url_planner.h, shared by
// every backend.
//
// Example:
//   std::vector<std::string> keys = {"http://a.example/x", "http://a.example/x"};
//   std::vector<UrlClaim> out;
//   DEDUPD_RETURN_IF_ERROR(store->ClaimUrls(keys, absl::Now(), &out));
//   // out[0].is_new == true (unless claimed earlier), out[1].is_new == false
//
//   UrlClaimOptions leased;
//   leased.name_space = "crawl-7";
//   leased.claim_id_hash = ClaimIdHash(request_id);
//   leased.lease = absl::Minutes(10);
//   DEDUPD_RETURN_IF_ERROR(store->Claim(leased, keys, absl::Now(), &out));
#ifndef DEDUPD_STORAGE_URL_STORE_H_
#define DEDUPD_STORAGE_URL_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace dedupd {

// How the last claim of a URL was answered.
enum class UrlClaimKind : uint8_t {
  kNew = 0,        // first claim of the URL
  kReclaimed = 1,  // NEW again: the previous claim's lease ended unconfirmed
  kDue = 2,        // DUE: the previous claim was older than revisit_after
};

// What a store keeps per URL (per namespace). Times are truncated to
// microseconds.
struct UrlRecord {
  // The URL's first claim.
  absl::Time first_seen;
  // The URL's last claim (NEW, reclaimed or DUE); first_seen for a URL
  // claimed once.
  absl::Time last_claim;
  UrlClaimKind last_kind = UrlClaimKind::kNew;
  // ClaimIdHash of the last claim's claim id; 0 when it had none.
  uint64_t claim_id_hash = 0;
  // Set while the last claim's lease is pending (not confirmed): when it
  // ends. A pending lease that ended lets the next claim take the URL.
  std::optional<absl::Time> lease_until;

  friend bool operator==(const UrlRecord& a, const UrlRecord& b) {
    return a.first_seen == b.first_seen && a.last_claim == b.last_claim &&
           a.last_kind == b.last_kind && a.claim_id_hash == b.claim_id_hash &&
           a.lease_until == b.lease_until;
  }
};

// Everything a claim needs besides its keys. Default: the empty namespace,
// no claim id, no lease, no revisits (the at-most-once claim).
struct UrlClaimOptions {
  // The namespace (CheckNamespace). Keys of different namespaces are
  // different records.
  absl::string_view name_space;
  // ClaimIdHash of the request's claim id, 0 for none. A key whose last
  // claim had the same hash, within claim_id_retention of that claim, is
  // answered as that claim was (a retry).
  uint64_t claim_id_hash = 0;
  absl::Duration claim_id_retention = absl::Hours(24);
  // > 0: keys this call claims are leased for this long.
  absl::Duration lease = absl::ZeroDuration();
  // Per key (same size as the keys) or empty: a claimed, confirmed key
  // whose last claim is at least this old is DUE. InfiniteDuration: never.
  absl::Span<const absl::Duration> revisit_after;
};

// The answer for one claimed key.
struct UrlClaim {
  // True when this call holds the key's claim now (NEW or DUE; the caller
  // fetches it). Within one batch a repeated key is new at most at its
  // first position.
  bool is_new = false;
  // With is_new: DUE (a revisit) rather than NEW.
  bool due = false;
  // With is_new and not due: the previous claimant's lease ended.
  bool reclaimed = false;
  // When the key was first recorded (for a new key: `now`, truncated to
  // microseconds). InfinitePast from an approximate store.
  absl::Time first_seen;
  // For a key that is not new: its last claim. For DUE: the last claim
  // before this one. For NEW: `now`.
  absl::Time last_claim;
  // When the key's pending lease ends (this call's, or the holder's for a
  // key that is not new); unset when none is pending.
  std::optional<absl::Time> lease_until;
  // OK, or Unavailable: the store could not answer for this key now (a
  // distributed backend's node holding it is down; the message names it),
  // while the call's other keys were answered. Every other field is then
  // unset, and the key may or may not have been claimed: a retry with the
  // same claim id is answered as this claim would have been (NEW again if
  // it was recorded), one without a claim id may be answered SEEN.
  // Single-process backends (memory, RocksDB, Bloom) never set it: they
  // fail the call instead.
  absl::Status status;
};

// What CompleteUrls did for one key.
enum class UrlCompletion {
  kConfirmed,         // a pending lease is confirmed now
  kAlreadyConfirmed,  // nothing was pending
  kNotClaimed,        // no record of the key in the namespace
  kLeaseLost,         // the last claim had another claim id
};

// UrlStore: the seen-set of normalized URLs. Implementations are
// thread-safe.
class UrlStore {
 public:
  virtual ~UrlStore() = default;

  // Claim decides every key of `keys` with PlanUrlClaim
  // (storage/plan/url_planner.h) against its record in
  // options.name_space, writes the records that change, and sets
  // (*results)[i] for keys[i]. Atomic across concurrent callers: of all
  // calls claiming one key at one state, exactly one gets is_new. Returns
  // OK only after the written records are in the write-ahead log (and
  // synced, when the backend is configured to sync), so a process crash
  // cannot lose a key answered is_new.
  // Errors: InvalidArgument for an empty key or a bad namespace;
  // Unavailable (transient, nothing recorded: retry), ResourceExhausted
  // (disk full), DataLoss, Internal. On error `results` is unspecified and
  // no key may be treated as claimed. A distributed backend may instead
  // return OK with a per-key Unavailable in (*results)[i].status for the
  // keys of a node it could not reach (see UrlClaim::status).
  virtual absl::Status Claim(const UrlClaimOptions& options, absl::Span<const std::string> keys,
                             absl::Time now, std::vector<UrlClaim>* results) = 0;

  // LookupRecords sets (*records)[i] to the record of keys[i] in
  // `name_space`, nullopt when there is none. Records nothing. An
  // approximate store answers a probable key with a record whose times
  // are InfinitePast.
  virtual absl::Status LookupRecords(absl::string_view name_space,
                                     absl::Span<const std::string> keys,
                                     std::vector<std::optional<UrlRecord>>* records) = 0;

  // LookupRecordsPerKey: LookupRecords, except that a distributed backend
  // may fail single keys: (*statuses)[i] is OK or Unavailable (the node
  // holding keys[i] could not be reached; the message names it; then
  // (*records)[i] is nullopt and means nothing). PeekUrls
  // (storage/plan/url_planner.h) reads through it. Errors: as
  // LookupRecords. Default: LookupRecords, every status OK.
  virtual absl::Status LookupRecordsPerKey(absl::string_view name_space,
                                           absl::Span<const std::string> keys,
                                           std::vector<std::optional<UrlRecord>>* records,
                                           std::vector<absl::Status>* statuses);

  // Complete confirms the pending leases of `keys` in `name_space`
  // (PlanUrlComplete): with claim_id_hash != 0 only a last claim with that
  // hash. Durable before it returns, like Claim.
  // Errors: as Claim; Unimplemented from an approximate store.
  virtual absl::Status Complete(absl::string_view name_space, uint64_t claim_id_hash,
                                absl::Span<const std::string> keys,
                                std::vector<UrlCompletion>* results) = 0;

  // CompletePerKey: Complete, except that a distributed backend may fail
  // single keys: (*statuses)[i] is OK or Unavailable (the node holding
  // keys[i] could not be reached or its replicas did not acknowledge; the
  // message names it; (*results)[i] means nothing then). Confirming such a
  // key again is harmless. Errors: as Complete. Default: Complete, every
  // status OK.
  virtual absl::Status CompletePerKey(absl::string_view name_space, uint64_t claim_id_hash,
                                      absl::Span<const std::string> keys,
                                      std::vector<UrlCompletion>* results,
                                      std::vector<absl::Status>* statuses);

  // approximate returns true for a backend whose seen-set is approximate
  // (BloomUrlStore): a key it reports as seen was *probably* recorded (a
  // false positive is possible; the server answers SEEN_PROBABLY) and its
  // first-seen time is unknown (absl::InfinitePast()); it keeps no claim
  // ids, leases or claim times. Exact backends return false. Default:
  // false.
  virtual bool approximate() const { return false; }

  // ClaimUrls: Claim with the default options (the empty namespace, no
  // claim id, no lease).
  absl::Status ClaimUrls(absl::Span<const std::string> keys, absl::Time now,
                         std::vector<UrlClaim>* results);

  // LookupUrls sets (*results)[i] to the first-seen time of keys[i] in the
  // empty namespace, or nullopt when it is not recorded.
  absl::Status LookupUrls(absl::Span<const std::string> keys,
                          std::vector<std::optional<absl::Time>>* results);
};

// The longest namespace, in bytes.
inline constexpr size_t kMaxNamespaceBytes = 64;
// The longest claim id, in bytes.
inline constexpr size_t kMaxClaimIdBytes = 64;

// CheckUrlKeys returns InvalidArgument naming the first empty key of `keys`
// ("key 3 of the batch is empty"), OK otherwise. Every backend checks
// Claim/LookupRecords/Complete input with it.
absl::Status CheckUrlKeys(absl::Span<const std::string> keys);

// CheckNamespace returns InvalidArgument unless `name_space` is empty or
// 1 to kMaxNamespaceBytes bytes of ASCII letters, digits, '.', '_' and '-'
// (the message names the limit or the first bad byte).
absl::Status CheckNamespace(absl::string_view name_space);

// ClaimIdHash returns the 64-bit hash a store keeps of a claim id: XXH64
// with a fixed seed (core/text/stable_hash.h), never 0; 0 for an empty id.
// Persisted: its values never change.
uint64_t ClaimIdHash(absl::string_view claim_id);

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_URL_STORE_H_
