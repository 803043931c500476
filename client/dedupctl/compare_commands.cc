// `dedupctl compare`: pairs of texts through the server's near-duplicate
// measures, offline, one JSON line per pair saying what each measure sees
// and why (docs/dedupctl.md, "compare").
#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/dedupctl/commands.h"
#include "client/dedupctl/line_io.h"
#include "client/dedupctl/output_format.h"
#include "client/dedupctl/text_pairs.h"
#include "client/json.h"
#include "core/text/sha256.h"

namespace dedupd::dedupctl {
namespace {

// Where a pair came from, echoed at the start of its line.
struct PairSource {
  size_t line = 0;                  // 1-based line of --pairs; 0: the two-file form
  std::optional<std::string> a, b;  // ids (--docs) or file names (two-file form)
  std::optional<bool> label;
};

void AddSource(const PairSource& source, JsonObjectWriter* json) {
  if (source.line > 0) json->Int("line", static_cast<int64_t>(source.line));
  if (source.a) json->String("a", *source.a);
  if (source.b) json->String("b", *source.b);
  if (source.label) json->String("label", *source.label ? "duplicate" : "different");
}

std::string FingerprintObject(const TextProfile& p) {
  JsonObjectWriter json;
  json.String("content_hash", Sha256Hex(p.fingerprint.sha256))
      .String("simhash", SimHashHex(p.fingerprint.simhash))
      .Uint("words", p.fingerprint.words)
      .Uint("shingles", p.shingles.size());
  return std::move(json).Finish();
}

// The output line of one compared pair (docs/dedupctl.md, "compare").
std::string CompareLine(const PairSource& source, const TextProfile& a, const TextProfile& b,
                        const CompareSettings& settings) {
  const PairComparison c = ComparePair(a, b, settings);
  JsonObjectWriter json;
  AddSource(source, &json);
  json.String("verdict", Verdict(c)).StringArray("matched_by", MatchedBy(c));
  std::string line = std::move(json).Finish();
  line = WithRawMember(std::move(line), "estimated_jaccard", JsonNumber(c.estimated_jaccard));
  line = WithRawMember(std::move(line), "exact_jaccard", JsonNumber(c.exact_jaccard));
  line = WithRawMember(std::move(line), "hamming_distance", absl::StrCat(c.hamming_distance));
  line = WithRawMember(std::move(line), "min_jaccard", JsonNumber(settings.min_jaccard));
  line = WithRawMember(std::move(line), "max_hamming_distance",
                       absl::StrCat(settings.max_hamming_distance));
  line = WithRawMember(std::move(line), "a_fingerprint", FingerprintObject(a));
  line = WithRawMember(std::move(line), "b_fingerprint", FingerprintObject(b));
  JsonObjectWriter rest;
  std::vector<absl::string_view> only_a(c.only_in_a.begin(), c.only_in_a.end());
  std::vector<absl::string_view> only_b(c.only_in_b.begin(), c.only_in_b.end());
  rest.Uint("shared_shingles", c.shared_shingles)
      .Uint("only_in_a_count", c.only_in_a_count)
      .Uint("only_in_b_count", c.only_in_b_count)
      .StringArray("only_in_a", only_a)
      .StringArray("only_in_b", only_b);
  return WithMembers(std::move(line), std::move(rest).Finish());
}

std::string ErrorLine(const PairSource& source, absl::string_view message) {
  JsonObjectWriter json;
  AddSource(source, &json);
  json.String("error", message);
  return std::move(json).Finish();
}

// Compare runs the pairs and writes their lines; tracks whether any was bad.
class Comparer {
 public:
  explicit Comparer(const CompareOptions& options) {
    settings_.min_jaccard = options.min_jaccard;
    settings_.max_hamming_distance = options.max_hamming_distance;
    settings_.examples = options.examples;
  }

  // Pair compares texts `a` and `b` and writes the pair's line (an error
  // line when one does not normalize).
  void Pair(const PairSource& source, absl::string_view a, absl::string_view b) {
    absl::StatusOr<TextProfile> pa = ProfileText(a, simhasher_, minhasher_);
    if (!pa.ok()) return Error(source, absl::StrCat("a: ", pa.status().message()));
    absl::StatusOr<TextProfile> pb = ProfileText(b, simhasher_, minhasher_);
    if (!pb.ok()) return Error(source, absl::StrCat("b: ", pb.status().message()));
    Write(CompareLine(source, *pa, *pb, settings_));
  }

  void Error(const PairSource& source, absl::string_view message) {
    BadLine(ErrorLine(source, message));
  }

  // BadLine writes the error line `line` of a bad input line.
  void BadLine(const std::string& line) {
    any_invalid_ = true;
    Write(line);
  }

  // Finish flushes the output; returns the exit code.
  int Finish(const absl::Status& input_status) {
    return ExitAfterOutput(input_status, write_ok_, any_invalid_);
  }

 private:
  void Write(const std::string& line) { write_ok_ = WriteLine(line) && write_ok_; }

  const SimHasher simhasher_;
  const MinHasher minhasher_;
  CompareSettings settings_;
  bool any_invalid_ = false;
  bool write_ok_ = true;
};

// CompareFiles: the two-file form.
int CompareFiles(const CompareOptions& options, Comparer* comparer) {
  PairSource source;
  source.a = options.file_a;
  source.b = options.file_b;
  std::string texts[2];
  const std::string* paths[2] = {&*options.file_a, &*options.file_b};
  for (int i = 0; i < 2; ++i) {
    bool too_long = false;
    if (absl::Status s = ReadWholeInput(*paths[i], kMaxTextLineBytes, &texts[i], &too_long);
        !s.ok()) {
      return ExitWithError(s);
    }
    if (too_long) {
      comparer->Error(source, absl::StrCat(i == 0 ? "a" : "b", ": text longer than ",
                                           kMaxTextLineBytes, " bytes"));
      return comparer->Finish(absl::OkStatus());
    }
  }
  comparer->Pair(source, texts[0], texts[1]);
  return comparer->Finish(absl::OkStatus());
}

}  // namespace

int RunCompare(const CompareOptions& options) {
  Comparer comparer(options);
  if (options.file_a) return CompareFiles(options, &comparer);

  // --docs: every document in memory by id, bad lines reported first.
  std::vector<DocLine> docs;
  absl::flat_hash_map<absl::string_view, const std::string*> by_id;
  if (options.docs) {
    absl::Status s = LoadDocs(*options.docs, &docs, [&](size_t line, absl::string_view message) {
      JsonObjectWriter json;
      json.String("input", "docs").Int("line", static_cast<int64_t>(line)).String("error", message);
      comparer.BadLine(std::move(json).Finish());
    });
    if (!s.ok()) return ExitWithError(s);
    for (const DocLine& d : docs) by_id[d.id] = &d.text;
  }

  InputFile file;
  if (absl::Status s = file.Open(options.pairs); !s.ok()) return ExitWithError(s);
  LineReader reader(file.fd(), kMaxTextLineBytes);
  // A person typing pairs sees each answer at once.
  reader.set_before_block([] { std::fflush(stdout); });
  Progress progress;
  size_t done = 0;
  std::string line;
  bool too_long = false;
  while (NextJsonLine(&reader, &line, &too_long)) {
    PairSource source;
    source.line = reader.line_number();
    PairLine pair;
    absl::Status s =
        too_long
            ? absl::InvalidArgumentError(absl::StrCat("longer than ", kMaxTextLineBytes, " bytes"))
            : ParsePairLine(line, &pair);
    if (!s.ok()) {
      comparer.Error(source, s.message());
    } else if (!options.docs) {
      source.label = pair.label;
      comparer.Pair(source, pair.a, pair.b);
    } else {
      source.a = pair.a;
      source.b = pair.b;
      source.label = pair.label;
      const auto a = by_id.find(pair.a);
      const auto b = by_id.find(pair.b);
      if (a == by_id.end() || b == by_id.end()) {
        comparer.Error(source, absl::StrCat("no document with id \"",
                                            a == by_id.end() ? pair.a : pair.b, "\" in --docs"));
      } else {
        comparer.Pair(source, *a->second, *b->second);
      }
    }
    progress.Update(++done);
  }
  progress.Finish(done);
  return comparer.Finish(reader.status());
}

}  // namespace dedupd::dedupctl
