#include "storage/memory/memory_url_store.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "storage/plan/url_planner.h"

namespace dedupd {
namespace {

// A namespace never holds a NUL byte (CheckNamespace), so the pair is
// unambiguous.
std::string MapKey(absl::string_view name_space, absl::string_view url) {
  return absl::StrCat(name_space, absl::string_view("\0", 1), url);
}

absl::Status CheckInput(absl::string_view name_space, absl::Span<const std::string> keys) {
  if (absl::Status s = CheckNamespace(name_space); !s.ok()) return s;
  return CheckUrlKeys(keys);
}

}  // namespace

absl::Status MemoryUrlStore::Claim(const UrlClaimOptions& options,
                                   absl::Span<const std::string> keys, absl::Time now,
                                   std::vector<UrlClaim>* results) {
  results->assign(keys.size(), UrlClaim{});
  if (absl::Status s = CheckInput(options.name_space, keys); !s.ok()) return s;
  absl::flat_hash_set<absl::string_view> seen_in_batch;
  seen_in_batch.reserve(keys.size());
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string key = MapKey(options.name_space, keys[i]);
    auto it = records_.find(key);
    if (!seen_in_batch.insert(keys[i]).second) {
      (*results)[i] = SeenAnswer(it->second);
      continue;
    }
    std::optional<UrlRecord> stored;
    if (it != records_.end()) stored = it->second;
    UrlPlan plan = PlanUrlClaim(stored, options, RevisitAfter(options, i), now);
    if (plan.write.has_value()) records_[key] = *plan.write;
    (*results)[i] = plan.answer;
  }
  return absl::OkStatus();
}

absl::Status MemoryUrlStore::LookupRecords(absl::string_view name_space,
                                           absl::Span<const std::string> keys,
                                           std::vector<std::optional<UrlRecord>>* records) {
  records->assign(keys.size(), std::nullopt);
  if (absl::Status s = CheckInput(name_space, keys); !s.ok()) return s;
  absl::ReaderMutexLock lock(&mu_);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = records_.find(MapKey(name_space, keys[i]));
    if (it != records_.end()) (*records)[i] = it->second;
  }
  return absl::OkStatus();
}

absl::Status MemoryUrlStore::Complete(absl::string_view name_space, uint64_t claim_id_hash,
                                      absl::Span<const std::string> keys,
                                      std::vector<UrlCompletion>* results) {
  results->assign(keys.size(), UrlCompletion::kNotClaimed);
  if (absl::Status s = CheckInput(name_space, keys); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = records_.find(MapKey(name_space, keys[i]));
    std::optional<UrlRecord> stored;
    if (it != records_.end()) stored = it->second;
    UrlCompletePlan plan = PlanUrlComplete(stored, claim_id_hash);
    if (plan.write.has_value()) it->second = *plan.write;
    (*results)[i] = plan.outcome;
  }
  return absl::OkStatus();
}

bool MemoryUrlStore::Erase(const std::string& key) {
  absl::MutexLock lock(&mu_);
  return records_.erase(MapKey("", key)) > 0;
}

size_t MemoryUrlStore::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return records_.size();
}

}  // namespace dedupd
