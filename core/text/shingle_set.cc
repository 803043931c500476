// shingle_set.cc: see shingle_set.h.
#include "core/text/shingle_set.h"

#include <algorithm>

#include "core/text/sorted_sets.h"

namespace dedupd {

ShingleSet32::ShingleSet32(absl::Span<const uint64_t> distinct_shingles, int hash_shift) {
  hashes_.reserve(distinct_shingles.size());
  for (uint64_t h : distinct_shingles) hashes_.push_back(static_cast<uint32_t>(h >> hash_shift));
  std::sort(hashes_.begin(), hashes_.end());
  hashes_.erase(std::unique(hashes_.begin(), hashes_.end()), hashes_.end());
}

std::optional<ShingleSet32> ShingleSet32::FromSorted(std::vector<uint32_t> hashes) {
  for (size_t i = 1; i < hashes.size(); ++i) {
    if (hashes[i - 1] >= hashes[i]) return std::nullopt;
  }
  ShingleSet32 s;
  s.hashes_ = std::move(hashes);
  return s;
}

double ExactJaccard(const ShingleSet32& a, const ShingleSet32& b) {
  return SortedJaccard(a.hashes(), b.hashes());
}

}  // namespace dedupd
