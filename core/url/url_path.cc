// url_path.cc: step 6 of the URL normalizer; see url_path.h.
#include "core/url/url_path.h"

#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "core/url/url_escapes.h"
#include "core/url/url_normalizer.h"

namespace dedupd {
namespace url_internal {

namespace {

// DropPathSessionIds removes ";jsessionid=..." (any case) up to the next ';'
// or '/' from every segment.
bool DropPathSessionIds(std::string* path) {
  constexpr absl::string_view kParam = "jsessionid=";
  bool changed = false;
  size_t i = 0;
  while ((i = path->find(';', i)) != std::string::npos) {
    const absl::string_view rest = absl::string_view(*path).substr(i + 1);
    if (absl::StartsWithIgnoreCase(rest, kParam)) {
      size_t end = path->find_first_of(";/", i + 1);
      if (end == std::string::npos) end = path->size();
      path->erase(i, end - i);
      changed = true;
    } else {
      ++i;
    }
  }
  return changed;
}

bool IsDotSegment(absl::string_view seg) { return seg == "." || seg == ".."; }

// RemoveDotSegments applies RFC 3986 §5.2.4 to an absolute path (starting
// with '/'), writing the result to `out`. Returns false (and leaves `out`
// alone) when there is no dot segment.
bool RemoveDotSegments(absl::string_view path, std::string* out) {
  // Fast check: a dot segment starts with "/." .
  bool any = false;
  for (size_t i = path.find("/."); i != absl::string_view::npos; i = path.find("/.", i + 1)) {
    size_t end = path.find('/', i + 1);
    if (end == absl::string_view::npos) end = path.size();
    if (IsDotSegment(path.substr(i + 1, end - i - 1))) {
      any = true;
      break;
    }
  }
  if (!any) return false;
  // Segments kept so far, as views of `path`; a trailing "." or ".." leaves
  // an empty last segment so that "/a/b/.." becomes "/a/".
  absl::InlinedVector<absl::string_view, 16> kept;
  for (size_t i = 0; i < path.size();) {
    size_t end = path.find('/', i + 1);
    if (end == absl::string_view::npos) end = path.size();
    const absl::string_view seg = path.substr(i + 1, end - i - 1);
    const bool last = end == path.size();
    if (seg == ".." && !kept.empty()) kept.pop_back();
    if (IsDotSegment(seg)) {
      if (last) kept.push_back(absl::string_view());
    } else {
      kept.push_back(seg);
    }
    i = end;
  }
  out->clear();
  for (const absl::string_view seg : kept) {
    out->push_back('/');
    out->append(seg.data(), seg.size());
  }
  if (out->empty()) out->push_back('/');
  return true;
}

}  // namespace

void NormalizePath(absl::string_view encoded, const HostRule* rule, std::string* path_out,
                   std::string* tmp, FiredRules* fired) {
  std::string& path = *path_out;
  path.clear();
  if (AppendNormalizedEscapes(encoded, &path)) {
    fired->Add(url_rules::kPercentEncodingNormalized);
  }
  if (path.find(';') != std::string::npos && DropPathSessionIds(&path)) {
    fired->Add(url_rules::kPathSessionIdDropped);
  }
  if (RemoveDotSegments(path, tmp)) {
    path.swap(*tmp);
    fired->Add(url_rules::kDotSegmentsRemoved);
  }
  if (path.empty()) {
    path.push_back('/');
    fired->Add(url_rules::kEmptyPathSetToSlash);
  }
  if (rule != nullptr && rule->case_insensitive_path) {
    bool lowered = false;
    for (size_t i = 0; i < path.size(); ++i) {
      if (path[i] == '%') {
        i += 2;  // keep the escape's hex uppercase
      } else if (path[i] >= 'A' && path[i] <= 'Z') {
        path[i] = static_cast<char>(path[i] - 'A' + 'a');
        lowered = true;
      }
    }
    if (lowered) fired->Add(url_rules::kPathLowercased);
  }
  const TrailingSlash slash = rule != nullptr ? rule->trailing_slash : TrailingSlash::kStrip;
  if (slash == TrailingSlash::kStrip) {
    size_t keep = path.size();
    while (keep > 1 && path[keep - 1] == '/') --keep;
    if (keep != path.size()) {
      path.resize(keep);
      fired->Add(url_rules::kTrailingSlashStripped);
    }
  } else if (slash == TrailingSlash::kAdd && path.back() != '/') {
    const size_t last = path.rfind('/');
    if (path.find('.', last) == std::string::npos) {
      path.push_back('/');
      fired->Add(url_rules::kTrailingSlashAdded);
    }
  }
}

}  // namespace url_internal
}  // namespace dedupd
