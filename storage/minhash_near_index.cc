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
    entries_.push_back(text);
  }
  // The new ids were not stored (positions_ says so) and are distinct:
  // BulkInsert's REQUIRES holds, and it skips Insert's scan of every
  // band's bucket for the pair.
  lsh_->BulkInsertParts(entries_.Parts(first_new));
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
    entries_.Adopt(std::move(entries));
  } else {
    for (const LshIndex::Entry& e : entries) entries_.push_back(e);
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
  while (entries_.size() > kept) entries_.pop_back();
  entries_.ShrinkFirst();
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
  lsh_->BulkInsertParts(entries_.Parts());
}

bool MinHashNearIndex::Erase(uint32_t id) {
  absl::MutexLock lock(&mu_);
  auto it = positions_.find(id);
  if (it == positions_.end()) return false;
  const uint32_t pos = it->second;
  lsh_->Erase(entries_[pos].signature, id);
  positions_.erase(it);
  if (pos + 1 != entries_.size()) {
    entries_[pos] = entries_[entries_.size() - 1];
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
  return (lsh_ == nullptr ? 0 : lsh_->MemoryBytes()) + entries_.MemoryBytes() +
         positions_.capacity() * (sizeof(std::pair<const uint32_t, uint32_t>) + 1);
}

LshIndex::Entry& MinHashNearIndex::EntryBlocks::operator[](size_t i) {
  return const_cast<LshIndex::Entry&>(std::as_const(*this)[i]);
}

const LshIndex::Entry& MinHashNearIndex::EntryBlocks::operator[](size_t i) const {
  if (i < first_.size()) return first_[i];
  i -= first_.size();
  return blocks_[i / kBlockEntries][i % kBlockEntries];
}

void MinHashNearIndex::EntryBlocks::push_back(const LshIndex::Entry& e) {
  // The first array takes entries while no block exists and it has room,
  // or is still small enough that growing it (by doubling) copies little.
  if (blocks_.empty() && (first_.size() < first_.capacity() || first_.size() < kBlockEntries)) {
    first_.push_back(e);
    ++size_;
    return;
  }
  const size_t in_blocks = size_ - first_.size();
  if (in_blocks == blocks_.size() * kBlockEntries) {
    blocks_.push_back(spare_ != nullptr ? std::move(spare_)
                                        : std::make_unique<LshIndex::Entry[]>(kBlockEntries));
  }
  blocks_.back()[in_blocks % kBlockEntries] = e;
  ++size_;
}

void MinHashNearIndex::EntryBlocks::pop_back() {
  --size_;
  if (blocks_.empty()) {
    first_.pop_back();
    return;
  }
  if (size_ - first_.size() == (blocks_.size() - 1) * kBlockEntries) {
    spare_ = std::move(blocks_.back());
    blocks_.pop_back();
  }
}

void MinHashNearIndex::EntryBlocks::Adopt(std::vector<LshIndex::Entry> entries) {
  first_ = std::move(entries);
  blocks_.clear();
  size_ = first_.size();
}

void MinHashNearIndex::EntryBlocks::ShrinkFirst() {
  if (blocks_.empty() && first_.capacity() - first_.size() > first_.size() / 8) {
    first_.shrink_to_fit();
  }
}

std::vector<absl::Span<const LshIndex::Entry>> MinHashNearIndex::EntryBlocks::Parts(
    size_t from) const {
  std::vector<absl::Span<const LshIndex::Entry>> parts;
  if (from < first_.size()) parts.push_back(absl::MakeConstSpan(first_).subspan(from));
  const size_t in_blocks = size_ - first_.size();
  // From the block holding `from` on: an Insert's new entries are in the
  // last block or two.
  const size_t first_block = from > first_.size() ? (from - first_.size()) / kBlockEntries : 0;
  for (size_t b = first_block; b < blocks_.size(); ++b) {
    const size_t begin = b * kBlockEntries;
    const size_t end = std::min(in_blocks, begin + kBlockEntries);
    const size_t skip = from > first_.size() + begin ? from - first_.size() - begin : 0;
    if (begin + skip >= end) continue;
    parts.push_back(absl::MakeConstSpan(blocks_[b].get() + skip, end - begin - skip));
  }
  return parts;
}

size_t MinHashNearIndex::EntryBlocks::MemoryBytes() const {
  const size_t blocks = blocks_.size() + (spare_ != nullptr ? 1 : 0);
  return (first_.capacity() + blocks * kBlockEntries) * sizeof(LshIndex::Entry) +
         blocks_.capacity() * sizeof(blocks_[0]);
}

}  // namespace dedupd
