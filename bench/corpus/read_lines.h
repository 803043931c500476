// read_lines.h: the benchmarks' one way to load a URL file.
//
// Example:
//   std::vector<std::string> urls;
//   if (!dedupd::bench::ReadLines("bench/corpus/sample_urls.txt", &urls)) return 1;
#ifndef DEDUPD_BENCH_CORPUS_READ_LINES_H_
#define DEDUPD_BENCH_CORPUS_READ_LINES_H_

#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace dedupd::bench {

// ReadLines appends the non-empty lines of the file at `path` to `lines`,
// without a trailing '\r'. Returns false when the file cannot be opened or
// read.
inline bool ReadLines(const std::string& path, std::vector<std::string>* lines) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines->push_back(std::move(line));
  }
  return !in.bad();
}

}  // namespace dedupd::bench

#endif  // DEDUPD_BENCH_CORPUS_READ_LINES_H_
