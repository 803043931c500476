#include "storage/memory/memory_url_store.h"

namespace dedupd {
namespace {

// The same precision as the durable backends, so that tests written
// against this fake hold for them too.
absl::Time TruncateToMicros(absl::Time t) { return absl::FromUnixMicros(absl::ToUnixMicros(t)); }

}  // namespace

absl::Status MemoryUrlStore::ClaimUrls(absl::Span<const std::string> keys, absl::Time now,
                                       std::vector<UrlClaim>* results) {
  results->assign(keys.size(), UrlClaim{});
  if (absl::Status s = CheckUrlKeys(keys); !s.ok()) return s;
  const absl::Time first_seen = TruncateToMicros(now);
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [it, inserted] = first_seen_.try_emplace(keys[i], first_seen);
    (*results)[i].is_new = inserted;
    (*results)[i].first_seen = it->second;
  }
  return absl::OkStatus();
}

absl::Status MemoryUrlStore::LookupUrls(absl::Span<const std::string> keys,
                                        std::vector<std::optional<absl::Time>>* results) {
  results->assign(keys.size(), std::nullopt);
  if (absl::Status s = CheckUrlKeys(keys); !s.ok()) return s;
  absl::ReaderMutexLock lock(&mu_);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = first_seen_.find(keys[i]);
    if (it != first_seen_.end()) (*results)[i] = it->second;
  }
  return absl::OkStatus();
}

bool MemoryUrlStore::Erase(const std::string& key) {
  absl::MutexLock lock(&mu_);
  return first_seen_.erase(key) > 0;
}

size_t MemoryUrlStore::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return first_seen_.size();
}

}  // namespace dedupd
