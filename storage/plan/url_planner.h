// url_planner.h: what a URL claim or a confirmation decides, given the
// key's stored record: written once, so that every backend answers alike.
// A backend reads the records, calls these, and writes the records they
// return (under its per-key claim locks, atomically per batch).
//
// Example:
//   std::optional<UrlRecord> stored = ...;  // the backend's read
//   UrlPlan plan = PlanUrlClaim(stored, options, absl::InfiniteDuration(), now);
//   if (plan.write) { /* put *plan.write */ }
//   answer(plan.answer);
#ifndef DEDUPD_STORAGE_PLAN_URL_PLANNER_H_
#define DEDUPD_STORAGE_PLAN_URL_PLANNER_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "storage/url_store.h"

namespace dedupd {

struct UrlPlan {
  UrlClaim answer;
  // The key's new record, when the claim changes it.
  std::optional<UrlRecord> write;
};

// PlanUrlClaim decides one claim of a key whose record is `stored`
// (nullopt: none), at `now` (truncated to microseconds), in this order:
//   1. no record: NEW; the record is {now, now, kNew, claim id, lease}.
//   2. the record's last claim has options.claim_id_hash (!= 0) and is at
//      most options.claim_id_retention old: answered as that claim was
//      (NEW, reclaimed or DUE, with the stored times and lease); nothing
//      is written. (A DUE answered again reports the DUE claim's own time
//      as last_claim: the one before it is no longer stored.)
//   3. a pending lease that ended (lease_until <= now): NEW, reclaimed;
//      the record gets last claim now, this claim id and lease.
//   4. no pending lease and a last claim at least `revisit_after` old: DUE;
//      likewise rewritten (kind kDue).
//   5. otherwise SEEN (with the holder's pending lease, if any); nothing
//      is written.
UrlPlan PlanUrlClaim(const std::optional<UrlRecord>& stored, const UrlClaimOptions& options,
                     absl::Duration revisit_after, absl::Time now);

// SeenAnswer returns the SEEN answer for a key whose record is `record`:
// for a repeat of a key within one batch, after its first position.
UrlClaim SeenAnswer(const UrlRecord& record);

// RevisitAfter returns options.revisit_after[i], or InfiniteDuration when
// the options carry none.
absl::Duration RevisitAfter(const UrlClaimOptions& options, size_t i);

struct UrlCompletePlan {
  UrlCompletion outcome = UrlCompletion::kNotClaimed;
  // The key's new record, when the confirmation changes it.
  std::optional<UrlRecord> write;
};

// PlanUrlComplete decides one confirmation: no record: kNotClaimed; a
// claim_id_hash (!= 0) other than the last claim's: kLeaseLost; no pending
// lease: kAlreadyConfirmed; otherwise kConfirmed, and the record loses its
// lease (an ended lease is confirmed too while nobody reclaimed it).
UrlCompletePlan PlanUrlComplete(const std::optional<UrlRecord>& stored, uint64_t claim_id_hash);

// PeekUrls answers what store->Claim(options, keys, now) would, recording
// nothing: LookupRecordsPerKey, then PlanUrlClaim per key (a repeated key
// gets SeenAnswer after its first position, of the record the first
// position would have written). A key the store could not read gets its
// Unavailable as (*results)[i].status (UrlClaim::status).
absl::Status PeekUrls(UrlStore* store, const UrlClaimOptions& options,
                      absl::Span<const std::string> keys, absl::Time now,
                      std::vector<UrlClaim>* results);

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_PLAN_URL_PLANNER_H_
