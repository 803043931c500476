// text_edits.h: deterministic edits of a test text and the test texts
// themselves, shared by the unit and e2e tests of near-duplicate matching.
//
// Example:
//   std::string page = ReadTextFile(std::string(DEDUPD_SERVER_TESTDATA_DIR) +
//                                   "/python_policy_packaging.txt");
//   std::string edited = SubstituteWords(page, /*every=*/50, /*first=*/7);  // 2% of words
#ifndef DEDUPD_TESTS_TESTING_TEXT_EDITS_H_
#define DEDUPD_TESTS_TESTING_TEXT_EDITS_H_

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dedupd::testing {

// ReadTextFile returns the bytes of the file at `path`, "" when it cannot
// be read (tests assert on the size).
inline std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// SubstituteWords returns `text`'s words (split on whitespace) joined by
// single spaces, with every `every`-th word from the `first`-th replaced by
// a word of its own ("zq" and its index): a deterministic 1/every
// substitution. REQUIRES: every > 0.
inline std::string SubstituteWords(const std::string& text, size_t every, size_t first) {
  std::vector<std::string> words =
      absl::StrSplit(text, absl::ByAnyChar(" \n\t"), absl::SkipWhitespace());
  for (size_t i = first; i < words.size(); i += every) words[i] = "zq" + std::to_string(i);
  return absl::StrJoin(words, " ");
}

}  // namespace dedupd::testing

#endif  // DEDUPD_TESTS_TESTING_TEXT_EDITS_H_
