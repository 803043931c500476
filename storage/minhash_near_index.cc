// minhash_near_index.cc: see minhash_near_index.h; the bucket sizing is in
// docs/minhash.md, "Buckets that follow the count".
#include "storage/minhash_near_index.h"

#include <algorithm>
#include <utility>

#include "absl/numeric/bits.h"

namespace dedupd {

int MinHashNearIndex::BucketBitsFor(size_t texts) {
  const size_t per_bucket = texts / kTextsPerBucket;
  const int bits = per_bucket == 0 ? 0 : absl::bit_width(per_bucket) - 1;  // floor(log2)
  return std::clamp(bits, kMinBucketBits, kMaxBucketBits);
}

void MinHashNearIndex::Insert(uint32_t id, const MinHashSignature& sig) {
  const LshIndex::Entry entry{sig, id};
  Insert({&entry, 1});
}

void MinHashNearIndex::Insert(absl::Span<const LshIndex::Entry> texts) {
  if (texts.empty()) return;
  absl::MutexLock lock(&mu_);
  if (lsh_ == nullptr) {
    lsh_ =
        std::make_unique<LshIndex>(LshIndex::kDefaultBands, LshIndex::kDefaultRows, kMinBucketBits);
  }
  const size_t first_new = entries_.size();
  for (const LshIndex::Entry& text : texts) {
    auto [it, inserted] = positions_.try_emplace(text.id, static_cast<uint32_t>(entries_.size()));
    if (!inserted) {
      LshIndex::Entry& entry = entries_[it->second];
      if (it->second < first_new) {  // stored before this call: in lsh_
        lsh_->Erase(entry.signature, text.id);
        lsh_->Insert(text.signature, text.id);
      }
      entry.signature = text.signature;
      continue;
    }
    if (entries_.size() == entries_.capacity()) {
      // Grow by 1/8, not by the vector's doubling: after a BulkLoad of 10^7
      // texts (capacity exact) the first Insert would otherwise add 1.3 GB.
      // Costs a copy of the signatures per 1/8 of growth (~100 ns amortized
      // per text, a stall of that one Insert).
      entries_.reserve(entries_.size() + entries_.size() / 8 + 16);
    }
    entries_.push_back(text);
  }
  // The new ids were not stored (positions_ says so) and are distinct:
  // BulkInsert's REQUIRES holds, and it skips Insert's scan of every
  // band's bucket for the pair.
  lsh_->BulkInsert({entries_.data() + first_new, entries_.size() - first_new});
  if (lsh_->bucket_bits() < kMaxBucketBits && entries_.size() > kGrowTextsPerBucket
                                                                    << lsh_->bucket_bits()) {
    RebuildLocked();
  }
}

void MinHashNearIndex::BulkLoad(std::vector<LshIndex::Entry> entries) {
  if (entries.empty()) return;
  absl::MutexLock lock(&mu_);
  const size_t first_new = entries_.size();
  if (entries_.empty()) {
    entries_ = std::move(entries);
  } else {
    entries_.insert(entries_.end(), entries.begin(), entries.end());
  }
  positions_.reserve(entries_.size());
  // Compact the new entries in place; a repeated id overwrites the
  // signature at its first position.
  size_t kept = first_new;
  for (size_t i = first_new; i < entries_.size(); ++i) {
    auto [it, inserted] = positions_.try_emplace(entries_[i].id, static_cast<uint32_t>(kept));
    if (inserted) {
      if (kept != i) entries_[kept] = entries_[i];
      ++kept;
    } else {
      entries_[it->second].signature = entries_[i].signature;
    }
  }
  entries_.resize(kept);
  if (entries_.capacity() - kept > kept / 8) entries_.shrink_to_fit();
  RebuildLocked();
}

void MinHashNearIndex::RebuildLocked() {
  // Free the old index first: under the exclusive lock nobody reads it,
  // and the peak is then one index, not two.
  lsh_.reset();
  if (entries_.empty()) return;
  lsh_ = std::make_unique<LshIndex>(LshIndex::kDefaultBands, LshIndex::kDefaultRows,
                                    BucketBitsFor(entries_.size()));
  // positions_ holds each id once: BulkInsert's REQUIRES.
  lsh_->BulkInsert(entries_);
}

bool MinHashNearIndex::Erase(uint32_t id) {
  absl::MutexLock lock(&mu_);
  auto it = positions_.find(id);
  if (it == positions_.end()) return false;
  const uint32_t pos = it->second;
  lsh_->Erase(entries_[pos].signature, id);
  positions_.erase(it);
  if (pos + 1 != entries_.size()) {
    entries_[pos] = entries_.back();
    positions_[entries_[pos].id] = pos;
  }
  entries_.pop_back();
  return true;
}

std::vector<uint32_t> MinHashNearIndex::Query(const MinHashSignature& sig) const {
  absl::ReaderMutexLock lock(&mu_);
  if (lsh_ == nullptr) return {};
  return lsh_->Query(sig);
}

std::vector<uint32_t> MinHashNearIndex::Query(const MinHashSignature& sig,
                                              double min_estimate) const {
  absl::ReaderMutexLock lock(&mu_);
  if (lsh_ == nullptr) return {};
  std::vector<uint32_t> ids = lsh_->Query(sig);
  ids.erase(std::remove_if(ids.begin(), ids.end(),
                           [&](uint32_t id) {
                             auto it = positions_.find(id);
                             return it == positions_.end() ||
                                    !(EstimateJaccard(sig, entries_[it->second].signature) >=
                                      min_estimate);
                           }),
            ids.end());
  return ids;
}

std::optional<MinHashSignature> MinHashNearIndex::Find(uint32_t id) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = positions_.find(id);
  if (it == positions_.end()) return std::nullopt;
  return entries_[it->second].signature;
}

size_t MinHashNearIndex::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return entries_.size();
}

int MinHashNearIndex::bucket_bits() const {
  absl::ReaderMutexLock lock(&mu_);
  return lsh_ == nullptr ? 0 : lsh_->bucket_bits();
}

size_t MinHashNearIndex::MemoryBytes() const {
  absl::ReaderMutexLock lock(&mu_);
  // flat_hash_map: one slot and one control byte per unit of capacity.
  return (lsh_ == nullptr ? 0 : lsh_->MemoryBytes()) +
         entries_.capacity() * sizeof(LshIndex::Entry) +
         positions_.capacity() * (sizeof(std::pair<const uint32_t, uint32_t>) + 1);
}

}  // namespace dedupd
