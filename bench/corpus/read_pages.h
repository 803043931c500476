// read_pages.h: the content benchmarks' one way to find and read the page
// corpus (bench/corpus/make_text_corpus.py writes one page per .txt file).
//
// Example:
//   std::vector<std::string> paths;
//   if (!dedupd::bench::ListPages("bench/corpus/pages", &paths)) return 1;
//   std::string text;
//   if (!dedupd::bench::ReadFile(paths[0], &text)) return 1;
#ifndef DEDUPD_BENCH_CORPUS_READ_PAGES_H_
#define DEDUPD_BENCH_CORPUS_READ_PAGES_H_

#include <algorithm>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/file_io.h"

namespace dedupd::bench {

// ListPages sets `paths` to the regular *.txt files directly under `dir`,
// sorted by name: the page order of every content benchmark. Returns false
// when `dir` cannot be listed.
inline bool ListPages(const std::string& dir, std::vector<std::string>* paths) {
  paths->clear();
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".txt") {
      paths->push_back(e.path().string());
    }
  }
  if (ec) return false;
  std::sort(paths->begin(), paths->end());
  return true;
}

// ReadFile sets `contents` to the bytes of the file at `path`. Returns false
// when it cannot be opened or read.
inline bool ReadFile(const std::string& path, std::string* contents) {
  absl::StatusOr<std::string> bytes = file_io::ReadFile(path);
  if (!bytes.ok()) return false;
  *contents = *std::move(bytes);
  return true;
}

}  // namespace dedupd::bench

#endif  // DEDUPD_BENCH_CORPUS_READ_PAGES_H_
