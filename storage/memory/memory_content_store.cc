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
  // `space`: the namespace's records (no_records_ when it has none).
  Reader(MemoryContentStore* s, absl::string_view name_space, const Space* space)
      : s_(s), name_space_(name_space), space_(space) {}

  absl::StatusOr<std::optional<ContentRecord>> GetContent(const Sha256Digest& sha) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = space_->contents.find(DigestKey(sha));
    if (it == space_->contents.end()) return std::nullopt;
    return it->second;
  }
  absl::StatusOr<bool> HasAlias(const Sha256Digest& sha,
                                absl::string_view url) override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = space_->aliases.find(DigestKey(sha));
    return it != space_->aliases.end() && it->second.contains(url);
  }
  absl::StatusOr<std::vector<std::string>> ListAliases(
      const Sha256Digest& sha, size_t limit) override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    std::vector<std::string> out;
    auto it = space_->aliases.find(DigestKey(sha));
    if (it == space_->aliases.end()) return out;
    for (const std::string& url : it->second) {
      if (out.size() == limit) break;
      out.push_back(url);
    }
    return out;
  }
  absl::StatusOr<std::optional<FetchRecord>> GetFetch(absl::string_view url) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = space_->fetches.find(url);
    if (it == space_->fetches.end()) return std::nullopt;
    return it->second;
  }
  absl::StatusOr<bool> HasUrl(absl::string_view url) override {
    if (s_->urls_ == nullptr) return false;
    std::vector<std::optional<UrlRecord>> found;
    absl::Status st = s_->urls_->LookupRecords(name_space_, {std::string(url)}, &found);
    if (!st.ok()) return st;
    return found[0].has_value();
  }
  std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance, size_t limit,
                                             size_t* total) override {
    return space_->index.Query(simhash, max_distance, limit, total);
  }
  std::vector<uint32_t> QueryJaccardCandidates(const MinHashSignature& sig,
                                               double min_jaccard) override {
    return space_->near.Query(sig, min_jaccard);
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
  const absl::string_view name_space_;
  const Space* const space_;
  size_t allocated_ = 0;
};

MemoryContentStore::MemoryContentStore(MemoryUrlStore* urls, int max_near_distance,
                                       int index_blocks)
    : urls_(urls), index_blocks_(index_blocks), no_records_(max_near_distance, index_blocks) {
  absl::MutexLock lock(&mu_);
  GetSpace("");
}

int MemoryContentStore::max_near_distance() const { return no_records_.index.max_distance(); }

const MemoryContentStore::Space* MemoryContentStore::FindSpace(absl::string_view name_space) const {
  auto it = spaces_.find(name_space);
  return it == spaces_.end() ? nullptr : it->second.get();
}

MemoryContentStore::Space* MemoryContentStore::GetSpace(absl::string_view name_space) {
  std::unique_ptr<Space>& space = spaces_[name_space];
  if (space == nullptr) space = std::make_unique<Space>(max_near_distance(), index_blocks_);
  return space.get();
}

absl::Status MemoryContentStore::LookupFetches(absl::string_view name_space,
                                               absl::Span<const std::string> urls,
                                               std::vector<std::optional<FetchRecord>>* fetches) {
  fetches->assign(urls.size(), std::nullopt);
  if (absl::Status s = CheckNamespace(name_space); !s.ok()) return s;
  absl::ReaderMutexLock lock(&mu_);
  const Space* space = FindSpace(name_space);
  if (space == nullptr) return absl::OkStatus();
  for (size_t i = 0; i < urls.size(); ++i) {
    auto it = space->fetches.find(urls[i]);
    if (it != space->fetches.end()) (*fetches)[i] = it->second;
  }
  return absl::OkStatus();
}

absl::Status MemoryContentStore::CheckContent(absl::Span<const ContentDoc> docs, bool claim,
                                              const ContentLimits& limits, absl::Time now,
                                              std::vector<ContentOutcome>* outcomes) {
  outcomes->clear();
  if (docs.empty()) return absl::OkStatus();
  if (absl::Status s = CheckContentDocs(docs, max_near_distance()); !s.ok()) {
    return s;
  }
  const std::string& name_space = docs[0].name_space;
  ContentPlan plan;
  if (!claim) {
    absl::ReaderMutexLock lock(&mu_);
    const Space* space = FindSpace(name_space);
    Reader reader(this, name_space, space == nullptr ? &no_records_ : space);
    absl::Status s = PlanContentBatch(docs, false, limits, now, &reader, &plan);
    if (!s.ok()) return s;
    *outcomes = std::move(plan.outcomes);
    return absl::OkStatus();
  }
  absl::MutexLock lock(&mu_);
  Space* space = GetSpace(name_space);
  Reader reader(this, name_space, space);
  absl::Status s = PlanContentBatch(docs, true, limits, now, &reader, &plan);
  if (!s.ok()) return s;
  const ContentMutations& m = plan.mutations;
  // The one step that can fail goes first, so a failure records nothing.
  if (urls_ != nullptr && !m.urls.empty()) {
    std::vector<std::string> keys;
    for (const auto& [url, t] : m.urls) keys.push_back(url);
    std::vector<UrlClaim> ignored;
    UrlClaimOptions options;
    options.name_space = name_space;
    s = urls_->Claim(options, keys, m.urls.front().second, &ignored);
    if (!s.ok()) return s;
  }
  for (const auto& [sha, record] : m.contents) space->contents[DigestKey(sha)] = record;
  for (const ContentMutations::Alias& a : m.aliases) {
    const std::string key = DigestKey(a.sha256);
    space->aliases[key].insert(a.url);
    // Microseconds, as the RocksDB backend stores them, so that aliases added
    // in the same microsecond tie alike (by URL) on Forget.
    space->alias_added[{key, a.url}] = absl::FromUnixMicros(absl::ToUnixMicros(a.added));
  }
  for (const auto& [url, record] : m.fetches) space->fetches[url] = record;
  for (const auto& [id, fp] : m.fingerprints) {
    // Ids are allocated densely from fingerprints_.size().
    fingerprints_.push_back(fp);
    space->index.Insert(fp.simhash, id);
    if (fp.minhash.has_value()) space->near.Insert(id, *fp.minhash);
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
  Space& space = *GetSpace("");
  if (urls_ != nullptr) result.url_found = urls_->Erase(url);
  result.fetch_removed = space.fetches.erase(url) > 0;
  // The texts that name the URL, as owner or alias, in SHA-256 order (the
  // order the RocksDB backend reports promotions in).
  std::vector<std::string> texts;
  for (const auto& [key, record] : space.contents) {
    auto a = space.aliases.find(key);
    if (record.owner_url == url || (a != space.aliases.end() && a->second.contains(url))) {
      texts.push_back(key);
    }
  }
  std::sort(texts.begin(), texts.end());
  for (const std::string& key : texts) {
    ContentRecord& record = space.contents[key];
    absl::btree_set<std::string>& alias_set = space.aliases[key];
    std::vector<AliasRecord> aliases;
    aliases.reserve(alias_set.size());
    for (const std::string& a : alias_set) {
      auto added = space.alias_added.find({key, a});
      DEDUPD_CHECK(added != space.alias_added.end(),
                   "MemoryContentStore: an alias without its time");
      aliases.push_back({a, added->second});
    }
    const TextForgetPlan plan = PlanTextForget(url, record, aliases);
    Sha256Digest sha{};
    std::copy(key.begin(), key.end(), sha.begin());
    plan.Count(sha, &result);
    if (plan.remove_url_alias) {
      alias_set.erase(url);
      space.alias_added.erase({key, url});
    }
    switch (plan.action) {
      case TextForgetPlan::Action::kNone:
        break;
      case TextForgetPlan::Action::kPromoteAlias:
        alias_set.erase(plan.new_owner);
        space.alias_added.erase({key, plan.new_owner});
        [[fallthrough]];
      case TextForgetPlan::Action::kDropAlias:
        record = plan.record;
        break;
      case TextForgetPlan::Action::kDeleteText:
        // The doc id stays allocated (ids are dense indexes of
        // fingerprints_); only the index entry goes, as in RocksDB.
        space.index.Remove(record.simhash, record.doc_id);
        space.near.Erase(record.doc_id);
        forgotten_ids_.insert(record.doc_id);
        space.contents.erase(key);
        break;
    }
    if (alias_set.empty()) space.aliases.erase(key);
  }
  return result;
}

}  // namespace dedupd
