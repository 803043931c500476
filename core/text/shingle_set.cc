// shingle_set.cc: see shingle_set.h.
#include "core/text/shingle_set.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/text/sorted_sets.h"

namespace dedupd {

namespace {

// Most hashes SortHashes orders by counting (a chunk's set holds at most
// kMaxExactShingles = 256); more go to std::sort.
constexpr size_t kCountingSortHashes = 1024;

// Sorts `hashes`, well-mixed 32-bit values: a counting sort by the top 8
// bits, then an insertion sort over the nearly sorted result (only hashes
// that share their top 8 bits can be out of order, about n^2 / 512 pairs).
// For a chunk's ~80 hashes that is two passes of simple loops instead of
// std::sort's ~n log n compares, half of them mispredicted.
void SortHashes(std::vector<uint32_t>* hashes) {
  const size_t n = hashes->size();
  if (n > kCountingSortHashes) {
    std::sort(hashes->begin(), hashes->end());
    return;
  }
  uint32_t starts[257] = {};
  for (uint32_t h : *hashes) ++starts[(h >> 24) + 1];
  for (size_t b = 1; b < 257; ++b) starts[b] += starts[b - 1];
  uint32_t by_top[kCountingSortHashes];
  for (uint32_t h : *hashes) by_top[starts[h >> 24]++] = h;
  uint32_t* out = hashes->data();
  for (size_t i = 0; i < n; ++i) {
    const uint32_t h = by_top[i];
    size_t j = i;
    for (; j > 0 && out[j - 1] > h; --j) out[j] = out[j - 1];
    out[j] = h;
  }
}

}  // namespace

ShingleSet32::ShingleSet32(absl::Span<const uint64_t> distinct_shingles, int hash_shift) {
  hashes_.reserve(distinct_shingles.size());
  for (uint64_t h : distinct_shingles) hashes_.push_back(static_cast<uint32_t>(h >> hash_shift));
  SortHashes(&hashes_);
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
