// Runs the built dedupctl binary (DEDUPCTL_PATH, injected by CMake) on its
// offline text commands: `compare` (identical, one-word edit of a real
// page, unrelated, a hand-made pair's unique shingles, the three input
// forms, bad lines, bad flags) and `tune` (histograms on a small generated
// sample, precision and recall against a hand computation).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/dedupctl/dedupctl_test_util.h"
#include "client/json.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"

#ifndef DEDUPD_SOURCE_DIR
#error "DEDUPD_SOURCE_DIR must name the source tree (for its testdata pages)"
#endif

namespace dedupd {
namespace {

using ::dedupd::testing::CommandResult;
using ::dedupd::testing::Dedupctl;
using ::dedupd::testing::Lines;
using ::dedupd::testing::MakeTempDir;
using ::dedupd::testing::RemoveTree;
using ::dedupd::testing::RunCommand;
using ::testing::AllOf;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::StartsWith;

JsonValue Parse(const std::string& line) {
  absl::StatusOr<JsonValue> v = ParseJsonValue(line);
  EXPECT_TRUE(v.ok()) << v.status() << ": " << line;
  return v.ok() ? *v : JsonValue();
}

double Num(const JsonValue& v, absl::string_view name) {
  const JsonValue* m = v.Find(name);
  EXPECT_TRUE(m != nullptr && m->type == JsonValue::Type::kNumber) << name;
  return m != nullptr ? m->number : -1;
}

std::string Str(const JsonValue& v, absl::string_view name) {
  const JsonValue* m = v.Find(name);
  EXPECT_TRUE(m != nullptr && m->type == JsonValue::Type::kString) << name;
  return m != nullptr ? m->string : "";
}

std::vector<std::string> Strings(const JsonValue& v, absl::string_view name) {
  std::vector<std::string> out;
  const JsonValue* m = v.Find(name);
  EXPECT_TRUE(m != nullptr && m->type == JsonValue::Type::kArray) << name;
  if (m == nullptr) return out;
  for (const JsonValue& e : m->array) out.push_back(e.string);
  return out;
}

std::string ReadPage(const std::string& relative) {
  std::ifstream in(absl::StrCat(DEDUPD_SOURCE_DIR, "/", relative));
  EXPECT_TRUE(in.good()) << "cannot open " << relative;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string& Venv() {
  static const std::string* page =
      new std::string(ReadPage("core/text/testdata/python_tutorial_venv.txt"));
  return *page;
}
const std::string& WhatNow() {
  static const std::string* page =
      new std::string(ReadPage("core/text/testdata/python_tutorial_whatnow.txt"));
  return *page;
}
const std::string& Interactive() {
  static const std::string* page =
      new std::string(ReadPage("core/text/testdata/python_tutorial_interactive.txt"));
  return *page;
}
const std::string& License() {
  static const std::string* page = new std::string(ReadPage("core/text/testdata/bsd_license.txt"));
  return *page;
}

// OneWordEdit replaces the middle word of `text` by "zebra" (the words
// joined by single spaces: the normalizer would do the same).
std::string OneWordEdit(const std::string& text) {
  std::vector<std::string> words =
      absl::StrSplit(text, absl::ByAnyChar(" \n\t\r"), absl::SkipEmpty());
  words[words.size() / 2] = "zebra";
  return absl::StrJoin(words, " ");
}

std::string PairLine(absl::string_view a, absl::string_view b) {
  return std::move(JsonObjectWriter().String("a", a).String("b", b)).Finish();
}

// A temporary directory, removed at the end of the test.
class TempDir {
 public:
  TempDir() : path_(MakeTempDir("dedupctl_compare_test_")) {}
  ~TempDir() { RemoveTree(path_); }
  std::string Write(const std::string& name, const std::string& data) const {
    const std::string path = absl::StrCat(path_, "/", name);
    std::ofstream(path) << data;
    return path;
  }

 private:
  std::string path_;
};

// -------------------------------------------------------------- compare

TEST(DedupctlCompareTest, IdenticalTextsAreExactDuplicates) {
  TempDir dir;
  const std::string a = dir.Write("a.txt", Venv());
  // The same text in another case and spacing: the same normalized text.
  const std::string b = dir.Write("b.txt", "  " + absl::AsciiStrToUpper(Venv()) + "\n\n");
  CommandResult r = Dedupctl({"compare", a, b});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(1));
  EXPECT_THAT(
      lines[0],
      StartsWith(absl::StrCat(
          R"({"a":")", a, R"(","b":")", b,
          R"(","verdict":"EXACT_DUPLICATE","matched_by":["jaccard","hamming"],"estimated_jaccard":1,"exact_jaccard":1,"hamming_distance":0,"min_jaccard":0.8,"max_hamming_distance":3,)")));
  const JsonValue v = Parse(lines[0]);
  EXPECT_EQ(Str(*v.Find("a_fingerprint"), "content_hash"),
            Str(*v.Find("b_fingerprint"), "content_hash"));
  EXPECT_EQ(Num(*v.Find("a_fingerprint"), "words"), 980);
  EXPECT_EQ(Num(v, "only_in_a_count"), 0);
  EXPECT_THAT(Strings(v, "only_in_a"), IsEmpty());
  EXPECT_THAT(Strings(v, "only_in_b"), IsEmpty());
}

TEST(DedupctlCompareTest, OneWordEditOfARealPageIsNearByJaccard) {
  for (const std::string* page : {&Venv(), &WhatNow()}) {
    CommandResult r = Dedupctl({"compare"}, PairLine(*page, OneWordEdit(*page)) + "\n");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> lines = Lines(r.out);
    ASSERT_THAT(lines, SizeIs(1));
    const JsonValue v = Parse(lines[0]);
    EXPECT_EQ(Num(v, "line"), 1);
    EXPECT_EQ(Str(v, "verdict"), "NEAR_DUPLICATE");
    EXPECT_THAT(Strings(v, "matched_by"), ::testing::Contains("jaccard"));
    const double exact = Num(v, "exact_jaccard");
    const double estimate = Num(v, "estimated_jaccard");
    EXPECT_GT(exact, 0.98);
    // Within 4 standard deviations of the estimator (docs/minhash.md),
    // and at least 0.02 (the 8-bit slots' granularity near 1).
    EXPECT_NEAR(estimate, exact, std::max(0.02, 4 * std::sqrt(exact * (1 - exact) / 128)));
    // Three 3-word shingles hold the new word, on its side only.
    EXPECT_EQ(Num(v, "only_in_b_count"), 3);
    EXPECT_THAT(Strings(v, "only_in_b"), AllOf(SizeIs(3), Each(HasSubstr("zebra"))));
    EXPECT_THAT(Strings(v, "only_in_a"), SizeIs(::testing::Le(3)));
  }
}

TEST(DedupctlCompareTest, UnrelatedPagesAreDifferentUnlessTheSettingsSaySo) {
  TempDir dir;
  const std::string a = dir.Write("a.txt", Venv());
  const std::string b = dir.Write("b.txt", License());
  CommandResult r = Dedupctl({"compare", a, b});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  ASSERT_THAT(Lines(r.out), SizeIs(1));
  JsonValue v = Parse(Lines(r.out)[0]);
  EXPECT_EQ(Str(v, "verdict"), "DIFFERENT");
  EXPECT_THAT(Strings(v, "matched_by"), IsEmpty());
  EXPECT_LT(Num(v, "estimated_jaccard"), 0.1);
  EXPECT_LT(Num(v, "exact_jaccard"), 0.01);
  EXPECT_GT(Num(v, "hamming_distance"), 3);

  // The settings decide: any SimHash distance is near at 64.
  r = Dedupctl({"compare", "--max_hamming_distance=64", "--min_jaccard", "1", a, b});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  v = Parse(Lines(r.out)[0]);
  EXPECT_EQ(Str(v, "verdict"), "NEAR_DUPLICATE");
  EXPECT_THAT(Strings(v, "matched_by"), ElementsAre("hamming"));
  EXPECT_EQ(Num(v, "min_jaccard"), 1);
  EXPECT_EQ(Num(v, "max_hamming_distance"), 64);
}

TEST(DedupctlCompareTest, UniqueShinglesOfAHandMadePair) {
  // Shingles of a: the quick brown, quick brown fox, brown fox jumps, fox
  // jumps over, jumps over the, over the lazy, the lazy dog; b has "leaps"
  // for "jumps": 4 shared of 10, 3 on each side only.
  const std::string in = PairLine("The quick brown fox JUMPS over the lazy dog",
                                  "the quick  brown fox leaps over the lazy dog") +
                         "\n";
  struct Case {
    std::vector<std::string> flags;
    std::vector<std::string> only_a, only_b;
  };
  const Case cases[] = {
      {{},
       {"brown fox jumps", "fox jumps over", "jumps over the"},
       {"brown fox leaps", "fox leaps over", "leaps over the"}},
      {{"--examples", "2"},
       {"brown fox jumps", "fox jumps over"},
       {"brown fox leaps", "fox leaps over"}},
      {{"--examples=0"}, {}, {}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"compare"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    CommandResult r = Dedupctl(args, in);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ASSERT_THAT(Lines(r.out), SizeIs(1));
    const JsonValue v = Parse(Lines(r.out)[0]);
    EXPECT_EQ(Num(v, "exact_jaccard"), 0.4);
    EXPECT_EQ(Num(v, "shared_shingles"), 4);
    EXPECT_EQ(Num(v, "only_in_a_count"), 3);
    EXPECT_EQ(Num(v, "only_in_b_count"), 3);
    EXPECT_EQ(Num(*v.Find("a_fingerprint"), "shingles"), 7);
    EXPECT_EQ(Strings(v, "only_in_a"), c.only_a) << absl::StrJoin(c.flags, " ");
    EXPECT_EQ(Strings(v, "only_in_b"), c.only_b) << absl::StrJoin(c.flags, " ");
  }

  // Repeated shingles are shown once; a text shorter than a shingle is one
  // shingle of all its words.
  CommandResult r = Dedupctl({"compare"}, PairLine("a b c a b c a b c x", "a b") + "\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const JsonValue v = Parse(Lines(r.out)[0]);
  EXPECT_THAT(Strings(v, "only_in_a"), ElementsAre("a b c", "b c a", "c a b", "b c x"));
  EXPECT_THAT(Strings(v, "only_in_b"), ElementsAre("a b"));
  EXPECT_EQ(Num(v, "exact_jaccard"), 0);
}

TEST(DedupctlCompareTest, DocsAndPairsByIdEchoIdsAndLabels) {
  TempDir dir;
  const std::string docs = dir.Write(
      "docs.jsonl",
      absl::StrCat(
          std::move(JsonObjectWriter().String("id", "venv").String("text", Venv())).Finish(),
          "\n\n",
          std::move(JsonObjectWriter().String("id", "edit").String("text", OneWordEdit(Venv())))
              .Finish(),
          "\n{\"id\":\"venv\",\"text\":\"again\"}\n{\"text\":\"no id\"}\n"));
  const std::string pairs = dir.Write("pairs.jsonl",
                                      "{\"a\":\"venv\",\"b\":\"edit\",\"label\":\"duplicate\"}\n"
                                      "{\"a\":\"venv\",\"b\":\"venv\",\"label\":true}\n"
                                      "{\"a\":\"venv\",\"b\":\"missing\"}\n");
  CommandResult r = Dedupctl({"compare", "--docs", docs, "--pairs", pairs});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(5));
  EXPECT_EQ(
      lines[0],
      R"({"input":"docs","line":4,"error":"id \"venv\" is already used by an earlier line"})");
  EXPECT_EQ(lines[1], R"({"input":"docs","line":5,"error":"missing \"id\""})");
  EXPECT_THAT(
      lines[2],
      StartsWith(
          R"({"line":1,"a":"venv","b":"edit","label":"duplicate","verdict":"NEAR_DUPLICATE",)"));
  EXPECT_THAT(
      lines[3],
      StartsWith(
          R"({"line":2,"a":"venv","b":"venv","label":"duplicate","verdict":"EXACT_DUPLICATE",)"));
  EXPECT_EQ(
      lines[4],
      R"({"line":3,"a":"venv","b":"missing","error":"no document with id \"missing\" in --docs"})");

  // The pairs from standard input.
  r = Dedupctl({"compare", "--docs", docs}, "{\"a\":\"edit\",\"b\":\"venv\",\"label\":false}\n");
  EXPECT_THAT(Lines(r.out).back(),
              StartsWith(R"({"line":1,"a":"edit","b":"venv","label":"different",)"));
}

struct BadLineCase {
  const char* name;
  std::string line;
  const char* error;
};
void PrintTo(const BadLineCase& c, std::ostream* os) { *os << c.name; }

class DedupctlCompareBadLineTest : public ::testing::TestWithParam<BadLineCase> {};

TEST_P(DedupctlCompareBadLineTest, GetsItsOwnErrorLineAndTheRunGoesOn) {
  const std::string good = PairLine("one two three", "one two three") + "\n";
  CommandResult r = Dedupctl({"compare"}, good + GetParam().line + "\n" + good);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, IsEmpty());
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(3));
  EXPECT_THAT(lines[0], HasSubstr(R"("verdict":"EXACT_DUPLICATE")"));
  EXPECT_EQ(lines[1], absl::StrCat(R"({"line":2,"error":)", JsonString(GetParam().error), "}"));
  EXPECT_THAT(lines[2], StartsWith(R"({"line":3,"verdict":"EXACT_DUPLICATE")"));
}

INSTANTIATE_TEST_SUITE_P(
    Table, DedupctlCompareBadLineTest,
    ::testing::Values(
        BadLineCase{"NotJson", "not json", "invalid JSON: Unexpected token. (near: not json)"},
        BadLineCase{"NotAnObject", "[1]",
                    "a pair line must be an object {\"a\", \"b\"}, not an array"},
        BadLineCase{"MissingB", R"({"a":"x"})", "missing \"b\""},
        BadLineCase{"NumberText", R"({"a":"x","b":7})", "\"b\" must be a string, not a number"},
        BadLineCase{"EmptyText", R"({"a":"  ","b":"x"})", "a: text is empty or only whitespace"},
        BadLineCase{"NulByte", R"({"a":"x","b":"\u0000"})",
                    "b: text contains a NUL byte at byte 0"},
        BadLineCase{"BadLabel", R"({"a":"x","b":"y","label":"maybe"})",
                    "\"label\" must be \"duplicate\", \"different\", true or false"}),
    [](const ::testing::TestParamInfo<BadLineCase>& info) { return std::string(info.param.name); });

struct UsageCase {
  const char* name;
  std::vector<std::string> args;
  const char* want;  // in the one-line message
};
void PrintTo(const UsageCase& c, std::ostream* os) { *os << c.name; }

class DedupctlCompareUsageTest : public ::testing::TestWithParam<UsageCase> {};

TEST_P(DedupctlCompareUsageTest, Exits2WithOneLineAndUsage) {
  CommandResult r = Dedupctl(GetParam().args, "");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.out, IsEmpty());
  std::vector<std::string> lines = Lines(r.err);
  ASSERT_THAT(lines, SizeIs(::testing::Gt(1)));
  EXPECT_THAT(lines[0], AllOf(StartsWith("dedupctl: "), HasSubstr(GetParam().want)));
  EXPECT_THAT(lines[1], StartsWith("usage: dedupctl"));
}

INSTANTIATE_TEST_SUITE_P(
    Table, DedupctlCompareUsageTest,
    ::testing::Values(
        UsageCase{"JaccardZero",
                  {"compare", "--min_jaccard", "0"},
                  "--min_jaccard must be a number in (0, 1] (a Jaccard similarity), got \"0\""},
        UsageCase{"JaccardAboveOne", {"compare", "--min_jaccard=1.5"}, "got \"1.5\""},
        UsageCase{"JaccardNaN", {"compare", "--min_jaccard", "nan"}, "got \"nan\""},
        UsageCase{"JaccardNegative", {"compare", "--min_jaccard", "-0.2"}, "got \"-0.2\""},
        UsageCase{"JaccardWord", {"compare", "--min_jaccard", "high"}, "--min_jaccard must be"},
        UsageCase{"DistanceAbove64",
                  {"compare", "--max_hamming_distance", "65"},
                  "--max_hamming_distance must be an integer in 0..64, got \"65\""},
        UsageCase{"DistanceNegative", {"compare", "--max_hamming_distance", "-1"}, "0..64"},
        UsageCase{"TooManyExamples",
                  {"compare", "--examples", "1001"},
                  "--examples must be an integer in 0..1000"},
        UsageCase{"OneFile", {"compare", "a.txt"}, "two text files FILE_A FILE_B"},
        UsageCase{"ThreeFiles", {"compare", "a", "b", "c"}, "two text files"},
        UsageCase{"FilesAndDocs",
                  {"compare", "--docs", "d.jsonl", "a", "b"},
                  "--docs and --pairs are for JSON lines of pairs"},
        UsageCase{"BothStdin",
                  {"compare", "--docs", "-"},
                  "--docs and --pairs cannot both be standard input"},
        UsageCase{"ServerFlag", {"compare", "--server", "a:1"}, "--server"},
        UsageCase{"TuneWithoutDocs", {"tune"}, "tune needs --docs FILE"},
        UsageCase{"TuneArgument", {"tune", "--docs", "d", "x"}, "tune takes no arguments"},
        UsageCase{
            "TuneJaccardFlag", {"tune", "--docs", "d", "--min_jaccard", "0.5"}, "--min_jaccard"},
        UsageCase{"TuneBadBruteForce",
                  {"tune", "--docs", "d", "--brute_force_max_docs", "-1"},
                  "--brute_force_max_docs must be an integer"},
        UsageCase{"TuneBothStdin",
                  {"tune", "--docs", "-", "--pairs", "-"},
                  "cannot both be standard input"}),
    [](const ::testing::TestParamInfo<UsageCase>& info) { return std::string(info.param.name); });

TEST(DedupctlCompareTest, EdgeValuesOfTheFlagsAreAccepted) {
  for (const char* j : {"1", "1e-9", "0.05"}) {
    CommandResult r = Dedupctl({"compare", "--min_jaccard", j, "--max_hamming_distance", "0"},
                               PairLine("a b c", "a b c"));
    EXPECT_EQ(r.exit_code, 0) << j << ": " << r.err;
  }
}

TEST(DedupctlCompareTest, UnreadableFileExits2) {
  CommandResult r = Dedupctl({"compare", "/nonexistent/a.txt", "/nonexistent/b.txt"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.out, IsEmpty());
  EXPECT_THAT(r.err, AllOf(StartsWith("dedupctl: "), HasSubstr("/nonexistent/a.txt")));
  r = Dedupctl({"compare", "--docs", "/nonexistent/d.jsonl"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("/nonexistent/d.jsonl"));
}

// ----------------------------------------------------------------- tune

// The sample of the tune tests: a page, an identical copy, a one-word edit
// of it, another page and its one-word edit, two unrelated pages.
struct SampleDoc {
  const char* id;
  std::string text;
};
std::vector<SampleDoc> Sample() {
  return {{"venv", Venv()},
          {"venv_copy", Venv()},
          {"venv_edit", OneWordEdit(Venv())},
          {"whatnow", WhatNow()},
          {"whatnow_edit", OneWordEdit(WhatNow())},
          {"interactive", Interactive()},
          {"license", License()}};
}

std::string DocsJsonl(const std::vector<SampleDoc>& docs) {
  std::string out;
  for (const SampleDoc& d : docs) {
    absl::StrAppend(
        &out, std::move(JsonObjectWriter().String("id", d.id).String("text", d.text)).Finish(),
        "\n");
  }
  return out;
}

// The labelled pairs: two true duplicates, a near pair the user calls
// different (a false positive at every threshold below 1), an unrelated
// pair the user calls a duplicate (a false negative) and an unrelated pair
// called different.
struct LabelledPair {
  const char* a;
  const char* b;
  bool duplicate;
};
const LabelledPair kLabelled[] = {{"venv", "venv_copy", true},
                                  {"venv", "venv_edit", true},
                                  {"whatnow", "whatnow_edit", false},
                                  {"whatnow", "interactive", true},
                                  {"venv", "license", false}};

std::string PairsJsonl() {
  std::string out;
  for (const LabelledPair& p : kLabelled) {
    absl::StrAppend(&out,
                    std::move(JsonObjectWriter().String("a", p.a).String("b", p.b).String(
                                  "label", p.duplicate ? "duplicate" : "different"))
                        .Finish(),
                    "\n");
  }
  return out;
}

TEST(DedupctlTuneTest, HistogramsCoverEveryPairOfASmallSample) {
  TempDir dir;
  const std::vector<SampleDoc> docs = Sample();
  const std::string path = dir.Write("docs.jsonl", DocsJsonl(docs));
  CommandResult r = Dedupctl({"tune", "--docs", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(3));
  const JsonValue summary = Parse(lines[0]);
  EXPECT_EQ(Str(summary, "kind"), "summary");
  EXPECT_EQ(Num(summary, "docs"), 7);
  EXPECT_EQ(Str(summary, "pairs"), "all");
  EXPECT_EQ(Num(summary, "pairs_examined"), 21);
  EXPECT_EQ(Num(summary, "exact_duplicate_pairs"), 1);

  const JsonValue jaccard = Parse(lines[1]);
  EXPECT_EQ(Str(jaccard, "kind"), "jaccard_histogram");
  const std::vector<JsonValue>& bins = jaccard.Find("bins")->array;
  ASSERT_THAT(bins, SizeIs(10));
  double total = Num(jaccard, "below");
  for (size_t b = 0; b < bins.size(); ++b) {
    EXPECT_NEAR(Num(bins[b], "from"), 0.5 + 0.05 * b, 1e-12);
    total += Num(bins[b], "count");
    EXPECT_EQ(bins[b].Find("example") != nullptr, Num(bins[b], "count") > 0) << b;
  }
  EXPECT_EQ(total, 21);
  // venv, its copy and its edit (three pairs) and whatnow with its edit.
  EXPECT_EQ(Num(bins[9], "count"), 4);
  EXPECT_EQ(Num(bins[9], "lsh_candidates"), 4);
  EXPECT_EQ(Str(*bins[9].Find("example"), "a"), "venv");
  EXPECT_EQ(Str(*bins[9].Find("example"), "b"), "venv_copy");

  const JsonValue hamming = Parse(lines[2]);
  EXPECT_EQ(Str(hamming, "kind"), "hamming_histogram");
  const std::vector<JsonValue>& distances = hamming.Find("bins")->array;
  ASSERT_THAT(distances, SizeIs(17));
  total = Num(hamming, "above");
  for (const JsonValue& bin : distances) total += Num(bin, "count");
  EXPECT_EQ(total, 21);
  EXPECT_GE(Num(distances[0], "count"), 1);  // the copy

  // Above --brute_force_max_docs only the LSH candidates are examined.
  r = Dedupctl({"tune", "--docs", path, "--brute_force_max_docs", "6"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(3));
  const JsonValue lsh = Parse(lines[0]);
  EXPECT_EQ(Str(lsh, "pairs"), "lsh_candidates");
  EXPECT_EQ(Num(lsh, "pairs_examined"), Num(lsh, "lsh_candidate_pairs"));
  EXPECT_GE(Num(lsh, "pairs_examined"), 4);
  EXPECT_THAT(lines[1], AllOf(HasSubstr(R"("pairs":"lsh_candidates")"),
                              ::testing::Not(HasSubstr("lsh_candidates\":"))));
}

TEST(DedupctlTuneTest, PrecisionAndRecallMatchAHandComputation) {
  TempDir dir;
  const std::vector<SampleDoc> docs = Sample();
  const std::string docs_path = dir.Write("docs.jsonl", DocsJsonl(docs));
  const std::string pairs_path = dir.Write("pairs.jsonl", PairsJsonl());

  // The measures of each labelled pair, from `compare`.
  CommandResult c = Dedupctl({"compare", "--docs", docs_path, "--pairs", pairs_path});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::vector<double> estimate, distance;
  for (const std::string& line : Lines(c.out)) {
    const JsonValue v = Parse(line);
    estimate.push_back(Num(v, "estimated_jaccard"));
    distance.push_back(Num(v, "hamming_distance"));
  }
  ASSERT_THAT(estimate, SizeIs(5));
  // The premise of the hand computation below.
  EXPECT_EQ(estimate[0], 1);
  EXPECT_GE(estimate[1], 0.95);
  EXPECT_GE(estimate[2], 0.95);
  EXPECT_LT(estimate[3], 0.5);
  EXPECT_LT(estimate[4], 0.5);

  CommandResult r = Dedupctl({"tune", "--docs", docs_path, "--pairs", pairs_path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(5));
  const JsonValue jaccard = Parse(lines[3]);
  EXPECT_EQ(Str(jaccard, "kind"), "jaccard_curve");
  EXPECT_EQ(Num(jaccard, "labelled_pairs"), 5);
  EXPECT_EQ(Num(jaccard, "duplicates"), 3);
  const std::vector<JsonValue>& points = jaccard.Find("points")->array;
  ASSERT_THAT(points, SizeIs(11));
  for (size_t i = 0; i + 1 < points.size(); ++i) {
    // 0.50 .. 0.95: predicted duplicates are the copy, the edit (true) and
    // whatnow/whatnow_edit (false); whatnow/interactive is missed.
    SCOPED_TRACE(i);
    EXPECT_NEAR(Num(points[i], "min_jaccard"), 0.5 + 0.05 * i, 1e-12);
    EXPECT_EQ(Num(points[i], "true_positives"), 2);
    EXPECT_EQ(Num(points[i], "false_positives"), 1);
    EXPECT_EQ(Num(points[i], "false_negatives"), 1);
    EXPECT_DOUBLE_EQ(Num(points[i], "precision"), 2.0 / 3);
    EXPECT_DOUBLE_EQ(Num(points[i], "recall"), 2.0 / 3);
    EXPECT_DOUBLE_EQ(Num(points[i], "recall_with_lsh"), 2.0 / 3);
  }
  // 1.00: only identical signatures.
  const int tp1 = 1 + (estimate[1] == 1 ? 1 : 0);
  const int fp1 = estimate[2] == 1 ? 1 : 0;
  EXPECT_EQ(Num(points[10], "true_positives"), tp1);
  EXPECT_EQ(Num(points[10], "false_positives"), fp1);
  EXPECT_DOUBLE_EQ(Num(points[10], "precision"), static_cast<double>(tp1) / (tp1 + fp1));
  EXPECT_DOUBLE_EQ(Num(points[10], "recall"), tp1 / 3.0);

  const JsonValue hamming = Parse(lines[4]);
  EXPECT_EQ(Str(hamming, "kind"), "hamming_curve");
  const std::vector<JsonValue>& ks = hamming.Find("points")->array;
  ASSERT_THAT(ks, SizeIs(9));
  for (int k = 0; k <= 8; ++k) {
    SCOPED_TRACE(k);
    int tp = 0, fp = 0, fn = 0;
    for (size_t p = 0; p < 5; ++p) {
      const bool predicted = distance[p] <= k;
      if (predicted && kLabelled[p].duplicate) ++tp;
      if (predicted && !kLabelled[p].duplicate) ++fp;
      if (!predicted && kLabelled[p].duplicate) ++fn;
    }
    EXPECT_EQ(Num(ks[k], "max_hamming_distance"), k);
    EXPECT_EQ(Num(ks[k], "true_positives"), tp);
    EXPECT_EQ(Num(ks[k], "false_positives"), fp);
    EXPECT_EQ(Num(ks[k], "false_negatives"), fn);
    EXPECT_DOUBLE_EQ(Num(ks[k], "recall"), tp / 3.0);
    EXPECT_EQ(ks[k].Find("recall_with_lsh"), nullptr);
  }
}

TEST(DedupctlTuneTest, BadDocAndPairLinesGetErrorLinesAndTheCurvesStillCome) {
  TempDir dir;
  const std::string docs = dir.Write("docs.jsonl",
                                     "{\"id\":\"a\",\"text\":\"one two three four\"}\n"
                                     "{\"id\":\"b\",\"text\":\"   \"}\n"
                                     "{\"id\":\"c\",\"text\":\"one two three five\"}\n"
                                     "oops\n");
  const std::string pairs = dir.Write("pairs.jsonl",
                                      "{\"a\":\"a\",\"b\":\"c\",\"label\":\"duplicate\"}\n"
                                      "{\"a\":\"a\",\"b\":\"c\"}\n"
                                      "{\"a\":\"a\",\"b\":\"b\",\"label\":false}\n");
  CommandResult r = Dedupctl({"tune", "--docs", docs, "--pairs", pairs});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<std::string> lines = Lines(r.out);
  ASSERT_THAT(lines, SizeIs(9));
  EXPECT_EQ(
      lines[0],
      R"json({"input":"docs","line":4,"error":"invalid JSON: Unexpected token. (near: oops)"})json");
  EXPECT_EQ(lines[1], R"({"input":"docs","id":"b","error":"text is empty or only whitespace"})");
  EXPECT_THAT(lines[2], StartsWith(R"({"kind":"summary","docs":2,"invalid_docs":2,)"));
  EXPECT_EQ(
      lines[5],
      R"({"input":"pairs","line":2,"error":"missing \"label\" (\"duplicate\" or \"different\"): tune measures labelled pairs"})");
  EXPECT_EQ(lines[6],
            R"({"input":"pairs","line":3,"error":"no valid document with id \"b\" in --docs"})");
  EXPECT_THAT(lines[7],
              StartsWith(R"({"kind":"jaccard_curve","labelled_pairs":1,"duplicates":1,)"));
  EXPECT_THAT(lines[8],
              StartsWith(R"({"kind":"hamming_curve","labelled_pairs":1,"duplicates":1,)"));
}

}  // namespace
}  // namespace dedupd
