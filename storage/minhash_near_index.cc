#include "storage/minhash_near_index.h"

namespace dedupd {

void MinHashNearIndex::Insert(uint32_t id, const MinHashSignature& sig) {
  absl::MutexLock lock(&mu_);
  if (lsh_ == nullptr) {
    lsh_ = std::make_unique<LshIndex>(LshIndex::kDefaultBands, LshIndex::kDefaultRows, kBucketBits);
  }
  auto [it, inserted] = signatures_.try_emplace(id, sig);
  if (!inserted) {
    lsh_->Erase(it->second, id);
    it->second = sig;
  }
  lsh_->Insert(sig, id);
}

bool MinHashNearIndex::Erase(uint32_t id) {
  absl::MutexLock lock(&mu_);
  auto it = signatures_.find(id);
  if (it == signatures_.end()) return false;
  lsh_->Erase(it->second, id);
  signatures_.erase(it);
  return true;
}

std::vector<uint32_t> MinHashNearIndex::Query(const MinHashSignature& sig) const {
  absl::ReaderMutexLock lock(&mu_);
  if (lsh_ == nullptr) return {};
  return lsh_->Query(sig);
}

std::optional<MinHashSignature> MinHashNearIndex::Find(uint32_t id) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = signatures_.find(id);
  if (it == signatures_.end()) return std::nullopt;
  return it->second;
}

size_t MinHashNearIndex::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return signatures_.size();
}

}  // namespace dedupd
