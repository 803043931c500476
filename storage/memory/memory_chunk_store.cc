#include "storage/memory/memory_chunk_store.h"

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace dedupd {

// Reads the maps; the caller holds mu_ (shared for peeks, exclusive for
// claims), which the analysis cannot see through the interface.
class MemoryChunkStore::Reader final : public ChunkStateReader {
 public:
  // `index`: the namespace's chunk indexes, nullptr when it has none.
  Reader(MemoryChunkStore* s, absl::string_view name_space, const Indexes* index)
      : s_(s), name_space_(name_space), index_(index) {}

  absl::StatusOr<std::optional<ChunkManifest>> GetManifest(absl::string_view url) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = s_->manifests_.find(Scoped(name_space_, url));
    if (it == s_->manifests_.end()) return std::nullopt;
    return it->second;
  }
  absl::StatusOr<std::optional<ChunkTextRecord>> GetText(const Sha256Digest& sha) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = s_->texts_.find(Scoped(name_space_, DigestKey(sha)));
    if (it == s_->texts_.end()) return std::nullopt;
    return it->second;
  }
  absl::StatusOr<std::vector<ChunkHolder>> ListHolders(
      const Sha256Digest& sha, size_t limit) override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    std::vector<ChunkHolder> out;
    auto it = s_->holders_.find(Scoped(name_space_, DigestKey(sha)));
    if (it == s_->holders_.end()) return out;
    for (const ChunkHolder& h : it->second) {
      if (out.size() == limit) break;
      out.push_back(h);
    }
    return out;
  }
  std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance, size_t limit,
                                             size_t* total) override {
    if (index_ == nullptr) {
      if (total != nullptr) *total = 0;
      return {};
    }
    return index_->simhash.Query(simhash, max_distance, limit, total);
  }
  std::vector<uint32_t> QueryJaccardCandidates(const MinHashSignature& sig,
                                               double min_estimate) override {
    if (index_ == nullptr) return {};
    return index_->near.Query(sig, min_estimate);
  }
  absl::StatusOr<FingerprintRecord> GetTextFingerprint(uint32_t id) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = s_->fingerprints_.find(id);
    if (it == s_->fingerprints_.end()) {
      return absl::DataLossError(
          absl::StrCat("chunk index entry ", id, " has no fingerprint record"));
    }
    return it->second;
  }
  absl::StatusOr<uint32_t> AllocateTextId() override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    const uint64_t next = uint64_t{s_->next_text_id_} + allocated_;
    if (next > std::numeric_limits<uint32_t>::max()) {
      return absl::ResourceExhaustedError("the store allocated 2^32 chunk text ids, its limit");
    }
    ++allocated_;
    return static_cast<uint32_t>(next);
  }
  uint32_t allocated() const { return allocated_; }

 private:
  MemoryChunkStore* s_;
  const absl::string_view name_space_;
  const Indexes* const index_;
  uint32_t allocated_ = 0;
};

MemoryChunkStore::MemoryChunkStore(int max_near_distance, int index_blocks)
    : max_near_distance_(max_near_distance), index_blocks_(index_blocks) {
  // Checks the layout (REQUIRES) once, for every namespace's index.
  absl::MutexLock lock(&mu_);
  GetIndexes("");
}

int MemoryChunkStore::max_near_distance() const { return max_near_distance_; }

std::string MemoryChunkStore::Scoped(absl::string_view name_space, absl::string_view key) {
  std::string scoped(1, static_cast<char>(name_space.size()));
  absl::StrAppend(&scoped, name_space, key);
  return scoped;
}

const MemoryChunkStore::Indexes* MemoryChunkStore::FindIndexes(absl::string_view name_space) const {
  auto it = indexes_.find(name_space);
  return it == indexes_.end() ? nullptr : it->second.get();
}

MemoryChunkStore::Indexes* MemoryChunkStore::GetIndexes(absl::string_view name_space) {
  std::unique_ptr<Indexes>& index = indexes_[name_space];
  if (index == nullptr) index = std::make_unique<Indexes>(max_near_distance_, index_blocks_);
  return index.get();
}

absl::Status MemoryChunkStore::CheckChunks(const ChunkDocument& doc, bool claim, absl::Time now,
                                           ChunkAnswer* answer) {
  *answer = ChunkAnswer{};
  if (absl::Status s = CheckChunkDocument(doc, max_near_distance()); !s.ok()) {
    return s;
  }
  const std::string& ns = doc.name_space;
  ChunkPlan plan;
  if (!claim) {
    absl::ReaderMutexLock lock(&mu_);
    Reader reader(this, ns, FindIndexes(ns));
    absl::Status s = PlanChunkDocument(doc, false, now, &reader, &plan);
    if (!s.ok()) return s;
    *answer = std::move(plan.answer);
    return absl::OkStatus();
  }
  absl::MutexLock lock(&mu_);
  Indexes* index = GetIndexes(ns);
  Reader reader(this, ns, index);
  absl::Status s = PlanChunkDocument(doc, true, now, &reader, &plan);
  if (!s.ok()) return s;
  ChunkMutations& m = plan.mutations;
  next_text_id_ += reader.allocated();
  const std::string doc_key = Scoped(ns, doc.document_url);
  if (m.delete_manifest) manifests_.erase(doc_key);
  if (m.manifest.has_value()) manifests_[doc_key] = std::move(*m.manifest);
  for (const auto& [sha, h] : m.holders_removed) {
    auto it = holders_.find(Scoped(ns, DigestKey(sha)));
    if (it == holders_.end()) continue;
    it->second.erase(h);
    if (it->second.empty()) holders_.erase(it);
  }
  for (const auto& [sha, h] : m.holders_added) holders_[Scoped(ns, DigestKey(sha))].insert(h);
  for (const auto& [sha, r] : m.texts_deleted) texts_.erase(Scoped(ns, DigestKey(sha)));
  for (const auto& [sha, r] : m.texts_put) texts_[Scoped(ns, DigestKey(sha))] = r;
  for (const SimHashIndex::Entry& e : m.fingerprints_removed) {
    fingerprints_.erase(e.id);
    index->simhash.Remove(e.fingerprint, e.id);
    index->near.Erase(e.id);
  }
  for (const auto& [id, fp] : m.fingerprints_added) {
    fingerprints_[id] = fp;
    index->simhash.Insert(fp.simhash, id);
    if (fp.minhash.has_value()) index->near.Insert(id, *fp.minhash);
  }
  *answer = std::move(plan.answer);
  return absl::OkStatus();
}

}  // namespace dedupd
