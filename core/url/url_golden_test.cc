// url_golden_test.cc: pins the canonical form of real-world URLs
// (core/url/testdata/url_golden.tsv). Stored keys are canonical URLs, so any
// change here silently splits the seen-set of an existing store unless
// UrlNormalizer::kVersion is bumped (the store refuses a version mismatch).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/url/url_normalizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

#ifndef DEDUPD_CORE_TESTDATA_DIR
#error "DEDUPD_CORE_TESTDATA_DIR must name core/url/testdata"
#endif

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;

constexpr char kBumpVersion[] =
    "changing the canonical form requires bumping UrlNormalizer::kVersion "
    "(and the kVersion line of core/url/testdata/url_golden.tsv)";

struct GoldenRow {
  int line;
  std::string input;
  std::string base;
  std::string expected;  // "ERROR" for a rejected URL
};

// Reads the golden file; `version` gets the value of its "# kVersion=N"
// line, or -1.
std::vector<GoldenRow> ReadGolden(int* version) {
  const std::string path = std::string(DEDUPD_CORE_TESTDATA_DIR) + "/url_golden.tsv";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::vector<GoldenRow> rows;
  *version = -1;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    // A comment has no TAB ("#comments<TAB>base..." is a fragment-only row).
    if (line[0] == '#' && line.find('\t') == std::string::npos) {
      absl::string_view rest = line;
      if (absl::ConsumePrefix(&rest, "# kVersion=")) {
        EXPECT_TRUE(absl::SimpleAtoi(rest, version)) << line;
      }
      continue;
    }
    const std::vector<std::string> cols = absl::StrSplit(line, '\t');
    EXPECT_EQ(cols.size(), 3u) << "line " << number << ": want 3 TAB-separated columns";
    if (cols.size() != 3) continue;
    rows.push_back(GoldenRow{number, cols[0], cols[1], cols[2]});
  }
  return rows;
}

TEST(UrlGoldenTest, CanonicalFormsArePinned) {
  int version = 0;
  const std::vector<GoldenRow> rows = ReadGolden(&version);
  ASSERT_GE(rows.size(), 50u) << "golden file missing or truncated";
  EXPECT_EQ(version, static_cast<int>(UrlNormalizer::kVersion)) << kBumpVersion;

  const UrlNormalizer n;
  int rejected = 0;
  for (const GoldenRow& row : rows) {
    SCOPED_TRACE(::testing::Message() << "url_golden.tsv:" << row.line << ": " << row.input);
    const absl::StatusOr<std::string> got = n.Normalize(row.input, row.base);
    if (row.expected == "ERROR") {
      ++rejected;
      EXPECT_THAT(got, StatusIs(absl::StatusCode::kInvalidArgument)) << kBumpVersion;
      continue;
    }
    ASSERT_THAT(got, IsOk()) << kBumpVersion;
    EXPECT_EQ(*got, row.expected) << kBumpVersion;
    // A pinned form is canonical: it normalizes to itself.
    const absl::StatusOr<std::string> again = n.Normalize(row.expected);
    ASSERT_THAT(again, IsOk());
    EXPECT_EQ(*again, row.expected);
  }
  EXPECT_GE(rejected, 5);
  EXPECT_LT(rejected, static_cast<int>(rows.size()) / 2);
}

}  // namespace
}  // namespace dedupd
