#include "storage/memory/memory_content_store.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/check.h"
#include "storage/plan/forget_planner.h"

namespace dedupd {

// Reads the maps; the caller holds mu_ (shared for peeks, exclusive for
// claims), which the analysis cannot see through the interface.
class MemoryContentStore::Reader final : public ContentStateReader {
 public:
  explicit Reader(MemoryContentStore* s) : s_(s) {}

  absl::StatusOr<std::optional<ContentRecord>> GetContent(const Sha256Digest& sha) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = s_->contents_.find(DigestKey(sha));
    if (it == s_->contents_.end()) return std::nullopt;
    return it->second;
  }
  absl::StatusOr<bool> HasAlias(const Sha256Digest& sha,
                                absl::string_view url) override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = s_->aliases_.find(DigestKey(sha));
    return it != s_->aliases_.end() && it->second.contains(url);
  }
  absl::StatusOr<std::vector<std::string>> ListAliases(
      const Sha256Digest& sha, size_t limit) override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    std::vector<std::string> out;
    auto it = s_->aliases_.find(DigestKey(sha));
    if (it == s_->aliases_.end()) return out;
    for (const std::string& url : it->second) {
      if (out.size() == limit) break;
      out.push_back(url);
    }
    return out;
  }
  absl::StatusOr<std::optional<FetchRecord>> GetFetch(absl::string_view url) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = s_->fetches_.find(url);
    if (it == s_->fetches_.end()) return std::nullopt;
    return it->second;
  }
  absl::StatusOr<bool> HasUrl(absl::string_view url) override {
    if (s_->urls_ == nullptr) return false;
    std::vector<std::optional<absl::Time>> found;
    absl::Status st = s_->urls_->LookupUrls({std::string(url)}, &found);
    if (!st.ok()) return st;
    return found[0].has_value();
  }
  std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance, size_t limit,
                                             size_t* total) override {
    return s_->index_.Query(simhash, max_distance, limit, total);
  }
  absl::StatusOr<FingerprintRecord> GetFingerprint(uint32_t doc_id) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (doc_id >= s_->fingerprints_.size() || s_->forgotten_ids_.contains(doc_id)) {
      return absl::DataLossError(
          absl::StrCat("index entry ", doc_id, " has no fingerprint record"));
    }
    return s_->fingerprints_[doc_id];
  }
  absl::StatusOr<uint32_t> AllocateDocId() override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    const size_t next = s_->fingerprints_.size() + allocated_;
    if (next > std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError("the store holds 2^32 texts, its limit");
    }
    ++allocated_;
    return static_cast<uint32_t>(next);
  }

 private:
  MemoryContentStore* s_;
  size_t allocated_ = 0;
};

MemoryContentStore::MemoryContentStore(MemoryUrlStore* urls, int max_near_distance,
                                       int index_blocks)
    : urls_(urls), index_(max_near_distance, index_blocks) {}

int MemoryContentStore::max_near_distance() const { return index_.max_distance(); }

absl::Status MemoryContentStore::LookupFetches(absl::Span<const std::string> urls,
                                               std::vector<std::optional<FetchRecord>>* fetches) {
  fetches->assign(urls.size(), std::nullopt);
  absl::ReaderMutexLock lock(&mu_);
  for (size_t i = 0; i < urls.size(); ++i) {
    auto it = fetches_.find(urls[i]);
    if (it != fetches_.end()) (*fetches)[i] = it->second;
  }
  return absl::OkStatus();
}

absl::Status MemoryContentStore::CheckContent(absl::Span<const ContentDoc> docs, bool claim,
                                              const ContentLimits& limits, absl::Time now,
                                              std::vector<ContentOutcome>* outcomes) {
  outcomes->clear();
  if (absl::Status s = CheckContentDocs(docs, max_near_distance()); !s.ok()) {
    return s;
  }
  Reader reader(this);
  ContentPlan plan;
  if (!claim) {
    absl::ReaderMutexLock lock(&mu_);
    absl::Status s = PlanContentBatch(docs, false, limits, now, &reader, &plan);
    if (!s.ok()) return s;
    *outcomes = std::move(plan.outcomes);
    return absl::OkStatus();
  }
  absl::MutexLock lock(&mu_);
  absl::Status s = PlanContentBatch(docs, true, limits, now, &reader, &plan);
  if (!s.ok()) return s;
  const ContentMutations& m = plan.mutations;
  // The one step that can fail goes first, so a failure records nothing.
  if (urls_ != nullptr && !m.urls.empty()) {
    std::vector<std::string> keys;
    for (const auto& [url, t] : m.urls) keys.push_back(url);
    std::vector<UrlClaim> ignored;
    s = urls_->ClaimUrls(keys, m.urls.front().second, &ignored);
    if (!s.ok()) return s;
  }
  for (const auto& [sha, record] : m.contents) contents_[DigestKey(sha)] = record;
  for (const ContentMutations::Alias& a : m.aliases) {
    const std::string key = DigestKey(a.sha256);
    aliases_[key].insert(a.url);
    // Microseconds, as the RocksDB backend stores them, so that aliases added
    // in the same microsecond tie alike (by URL) on Forget.
    alias_added_[{key, a.url}] = absl::FromUnixMicros(absl::ToUnixMicros(a.added));
  }
  for (const auto& [url, record] : m.fetches) fetches_[url] = record;
  for (const auto& [id, fp] : m.fingerprints) {
    // Ids are allocated densely from fingerprints_.size().
    fingerprints_.push_back(fp);
    index_.Insert(fp.simhash, id);
  }
  *outcomes = std::move(plan.outcomes);
  return absl::OkStatus();
}

absl::StatusOr<ForgetResult> MemoryContentStore::Forget(const std::string& normalized_url,
                                                        absl::Time /*now*/) {
  const std::string& url = normalized_url;
  if (url.empty()) return absl::InvalidArgumentError("forget: the URL is empty");
  ForgetResult result;
  absl::MutexLock lock(&mu_);
  if (urls_ != nullptr) result.url_found = urls_->Erase(url);
  result.fetch_removed = fetches_.erase(url) > 0;
  // The texts that name the URL, as owner or alias, in SHA-256 order (the
  // order the RocksDB backend reports promotions in).
  std::vector<std::string> texts;
  for (const auto& [key, record] : contents_) {
    auto a = aliases_.find(key);
    if (record.owner_url == url || (a != aliases_.end() && a->second.contains(url))) {
      texts.push_back(key);
    }
  }
  std::sort(texts.begin(), texts.end());
  for (const std::string& key : texts) {
    ContentRecord& record = contents_[key];
    absl::btree_set<std::string>& alias_set = aliases_[key];
    std::vector<AliasRecord> aliases;
    aliases.reserve(alias_set.size());
    for (const std::string& a : alias_set) {
      auto added = alias_added_.find({key, a});
      DEDUPD_CHECK(added != alias_added_.end(), "MemoryContentStore: an alias without its time");
      aliases.push_back({a, added->second});
    }
    const TextForgetPlan plan = PlanTextForget(url, record, aliases);
    Sha256Digest sha{};
    std::copy(key.begin(), key.end(), sha.begin());
    plan.Count(sha, &result);
    if (plan.remove_url_alias) {
      alias_set.erase(url);
      alias_added_.erase({key, url});
    }
    switch (plan.action) {
      case TextForgetPlan::Action::kNone:
        break;
      case TextForgetPlan::Action::kPromoteAlias:
        alias_set.erase(plan.new_owner);
        alias_added_.erase({key, plan.new_owner});
        [[fallthrough]];
      case TextForgetPlan::Action::kDropAlias:
        record = plan.record;
        break;
      case TextForgetPlan::Action::kDeleteText:
        // The doc id stays allocated (ids are dense indexes of
        // fingerprints_); only the index entry goes, as in RocksDB.
        index_.Remove(record.simhash, record.doc_id);
        forgotten_ids_.insert(record.doc_id);
        contents_.erase(key);
        break;
    }
    if (alias_set.empty()) aliases_.erase(key);
  }
  return result;
}

}  // namespace dedupd
