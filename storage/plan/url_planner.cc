#include "storage/plan/url_planner.h"

#include "absl/container/flat_hash_map.h"

namespace dedupd {
namespace {

absl::Time TruncateToMicros(absl::Time t) { return absl::FromUnixMicros(absl::ToUnixMicros(t)); }

}  // namespace

UrlClaim SeenAnswer(const UrlRecord& record) {
  UrlClaim answer;
  answer.first_seen = record.first_seen;
  answer.last_claim = record.last_claim;
  answer.lease_until = record.lease_until;
  return answer;
}

UrlPlan PlanUrlClaim(const std::optional<UrlRecord>& stored, const UrlClaimOptions& options,
                     absl::Duration revisit_after, absl::Time now) {
  now = TruncateToMicros(now);
  std::optional<absl::Time> lease_until;
  if (options.lease > absl::ZeroDuration()) lease_until = TruncateToMicros(now + options.lease);
  UrlPlan plan;
  UrlClaim& answer = plan.answer;
  if (!stored.has_value()) {
    plan.write = UrlRecord{now, now, UrlClaimKind::kNew, options.claim_id_hash, lease_until};
    answer.is_new = true;
    answer.first_seen = now;
    answer.last_claim = now;
    answer.lease_until = lease_until;
    return plan;
  }
  const UrlRecord& r = *stored;
  if (options.claim_id_hash != 0 && r.claim_id_hash == options.claim_id_hash &&
      now - r.last_claim <= options.claim_id_retention) {
    answer = SeenAnswer(r);
    answer.is_new = true;
    answer.due = r.last_kind == UrlClaimKind::kDue;
    answer.reclaimed = r.last_kind == UrlClaimKind::kReclaimed;
    return plan;
  }
  const bool lease_ended = r.lease_until.has_value() && *r.lease_until <= now;
  const bool due = !r.lease_until.has_value() && revisit_after != absl::InfiniteDuration() &&
                   now - r.last_claim >= revisit_after;
  if (!lease_ended && !due) {
    answer = SeenAnswer(r);
    return plan;
  }
  const UrlClaimKind kind = lease_ended ? UrlClaimKind::kReclaimed : UrlClaimKind::kDue;
  plan.write = UrlRecord{r.first_seen, now, kind, options.claim_id_hash, lease_until};
  answer.is_new = true;
  answer.due = due;
  answer.reclaimed = lease_ended;
  answer.first_seen = r.first_seen;
  answer.last_claim = lease_ended ? now : r.last_claim;
  answer.lease_until = lease_until;
  return plan;
}

absl::Duration RevisitAfter(const UrlClaimOptions& options, size_t i) {
  return options.revisit_after.empty() ? absl::InfiniteDuration() : options.revisit_after[i];
}

UrlCompletePlan PlanUrlComplete(const std::optional<UrlRecord>& stored, uint64_t claim_id_hash) {
  UrlCompletePlan plan;
  if (!stored.has_value()) return plan;  // kNotClaimed
  if (claim_id_hash != 0 && stored->claim_id_hash != claim_id_hash) {
    plan.outcome = UrlCompletion::kLeaseLost;
    return plan;
  }
  if (!stored->lease_until.has_value()) {
    plan.outcome = UrlCompletion::kAlreadyConfirmed;
    return plan;
  }
  plan.outcome = UrlCompletion::kConfirmed;
  plan.write = *stored;
  plan.write->lease_until.reset();
  return plan;
}

absl::Status PeekUrls(UrlStore* store, const UrlClaimOptions& options,
                      absl::Span<const std::string> keys, absl::Time now,
                      std::vector<UrlClaim>* results) {
  std::vector<std::optional<UrlRecord>> records;
  std::vector<absl::Status> statuses;
  results->assign(keys.size(), UrlClaim{});
  if (absl::Status s = store->LookupRecordsPerKey(options.name_space, keys, &records, &statuses);
      !s.ok()) {
    return s;
  }
  // Key -> the record after its first position (as Claim would leave it).
  absl::flat_hash_map<absl::string_view, std::optional<UrlRecord>> after;
  after.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!statuses[i].ok()) {
      // Not read: nothing to plan. A later repeat of the key (read at its
      // own position) is planned as if this one were absent.
      (*results)[i].status = statuses[i];
      continue;
    }
    auto [it, first] = after.try_emplace(keys[i]);
    if (!first) {
      if (it->second.has_value()) (*results)[i] = SeenAnswer(*it->second);
      continue;
    }
    UrlPlan plan = PlanUrlClaim(records[i], options, RevisitAfter(options, i), now);
    (*results)[i] = plan.answer;
    it->second = plan.write.has_value() ? plan.write : records[i];
  }
  return absl::OkStatus();
}

}  // namespace dedupd
