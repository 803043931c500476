#include "storage/memory/memory_chunk_store.h"

#include <limits>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"

namespace dedupd {

// Reads the maps; the caller holds mu_ (shared for peeks, exclusive for
// claims), which the analysis cannot see through the interface.
class MemoryChunkStore::Reader final : public ChunkStateReader {
 public:
  explicit Reader(MemoryChunkStore* s) : s_(s) {}

  absl::StatusOr<std::optional<ChunkManifest>> GetManifest(absl::string_view url) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = s_->manifests_.find(url);
    if (it == s_->manifests_.end()) return std::nullopt;
    return it->second;
  }
  absl::StatusOr<std::optional<ChunkTextRecord>> GetText(const Sha256Digest& sha) override
      ABSL_NO_THREAD_SAFETY_ANALYSIS {
    auto it = s_->texts_.find(DigestKey(sha));
    if (it == s_->texts_.end()) return std::nullopt;
    return it->second;
  }
  absl::StatusOr<std::vector<ChunkHolder>> ListHolders(
      const Sha256Digest& sha, size_t limit) override ABSL_NO_THREAD_SAFETY_ANALYSIS {
    std::vector<ChunkHolder> out;
    auto it = s_->holders_.find(DigestKey(sha));
    if (it == s_->holders_.end()) return out;
    for (const ChunkHolder& h : it->second) {
      if (out.size() == limit) break;
      out.push_back(h);
    }
    return out;
  }
  std::vector<SimHashIndex::Match> QueryNear(uint64_t simhash, int max_distance, size_t limit,
                                             size_t* total) override {
    return s_->index_.Query(simhash, max_distance, limit, total);
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
  uint32_t allocated_ = 0;
};

MemoryChunkStore::MemoryChunkStore(int max_near_distance, int index_blocks)
    : index_(max_near_distance, index_blocks) {}

int MemoryChunkStore::max_near_distance() const { return index_.max_distance(); }

absl::Status MemoryChunkStore::CheckChunks(const ChunkDocument& doc, bool claim, absl::Time now,
                                           ChunkAnswer* answer) {
  *answer = ChunkAnswer{};
  if (absl::Status s = CheckChunkDocument(doc, max_near_distance()); !s.ok()) {
    return s;
  }
  Reader reader(this);
  ChunkPlan plan;
  if (!claim) {
    absl::ReaderMutexLock lock(&mu_);
    absl::Status s = PlanChunkDocument(doc, false, now, &reader, &plan);
    if (!s.ok()) return s;
    *answer = std::move(plan.answer);
    return absl::OkStatus();
  }
  absl::MutexLock lock(&mu_);
  absl::Status s = PlanChunkDocument(doc, true, now, &reader, &plan);
  if (!s.ok()) return s;
  ChunkMutations& m = plan.mutations;
  next_text_id_ += reader.allocated();
  if (m.delete_manifest) manifests_.erase(doc.document_url);
  if (m.manifest.has_value()) manifests_[doc.document_url] = std::move(*m.manifest);
  for (const auto& [sha, h] : m.holders_removed) {
    auto it = holders_.find(DigestKey(sha));
    if (it == holders_.end()) continue;
    it->second.erase(h);
    if (it->second.empty()) holders_.erase(it);
  }
  for (const auto& [sha, h] : m.holders_added) holders_[DigestKey(sha)].insert(h);
  for (const auto& [sha, r] : m.texts_deleted) texts_.erase(DigestKey(sha));
  for (const auto& [sha, r] : m.texts_put) texts_[DigestKey(sha)] = r;
  for (const SimHashIndex::Entry& e : m.fingerprints_removed) {
    fingerprints_.erase(e.id);
    index_.Remove(e.fingerprint, e.id);
  }
  for (const auto& [id, fp] : m.fingerprints_added) {
    fingerprints_[id] = fp;
    index_.Insert(fp.simhash, id);
  }
  *answer = std::move(plan.answer);
  return absl::OkStatus();
}

}  // namespace dedupd
