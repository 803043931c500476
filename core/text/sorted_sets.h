// sorted_sets.h: set arithmetic on sorted, duplicate-free vectors: the one
// merge behind every exact Jaccard of shingle sets (ExactJaccard of
// shingle_set.h, DedupResults' exact measure, the quality tools).
//
// Example:
//   std::vector<absl::string_view> a = {"a b c", "b c d"}, b = {"b c d"};
//   dedupd::SortedIntersectionSize(a, b);  // 1
//   dedupd::SortedJaccard(a, b);           // 0.5
#ifndef DEDUPD_CORE_TEXT_SORTED_SETS_H_
#define DEDUPD_CORE_TEXT_SORTED_SETS_H_

#include <cstddef>
#include <vector>

namespace dedupd {

// |a ∩ b| of two sorted, duplicate-free vectors, in O(|a| + |b|).
template <typename T>
size_t SortedIntersectionSize(const std::vector<T>& a, const std::vector<T>& b) {
  size_t n = 0;
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      ++n;
      ++i;
      ++j;
    }
  }
  return n;
}

// |a ∩ b| / |a ∪ b|; 1 when both are empty.
template <typename T>
double SortedJaccard(const std::vector<T>& a, const std::vector<T>& b) {
  const size_t inter = SortedIntersectionSize(a, b);
  const size_t uni = a.size() + b.size() - inter;
  return uni == 0 ? 1.0 : static_cast<double>(inter) / static_cast<double>(uni);
}

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_SORTED_SETS_H_
