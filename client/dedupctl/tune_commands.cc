// `dedupctl tune`: how the near-duplicate measures spread over a user's own
// sample, offline: histograms of estimated Jaccard and SimHash distance
// over its pairs, with an example pair per bin, and with labelled pairs
// precision and recall per threshold (docs/dedupctl.md, "tune").
//
// Which pairs: every pair when the sample is small enough
// (--brute_force_max_docs), else the candidates of an LshIndex of the
// server's layout (18 x 7) over all signatures; the histograms say which,
// and with every pair each bin also counts the pairs LSH would propose,
// so the S-curve on the user's own data is visible.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/dedupctl/commands.h"
#include "client/dedupctl/line_io.h"
#include "client/dedupctl/output_format.h"
#include "client/dedupctl/text_pairs.h"
#include "client/json.h"
#include "core/index/lsh_index.h"
#include "core/text/content_fingerprint.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "core/text/simhash.h"

namespace dedupd::dedupctl {
namespace {

// Jaccard histogram: bins of 0.05 from 0.5 to 1 (the last one closed).
constexpr int kJaccardBins = 10;
// Hamming histogram: distances 0..16.
constexpr int kMaxHistogramDistance = 16;
// Curves: min_jaccard 0.50, 0.55, ..., 1.00 (i / 20 for i = 10..20);
// max_hamming_distance 0..8.
constexpr int kFirstJaccardStep = 10;
constexpr int kJaccardSteps = 20;
constexpr int kMaxCurveDistance = 8;

struct TuneDoc {
  std::string id;
  Sha256Digest sha256;
  uint64_t simhash = 0;
  MinHashSignature minhash;
};

// Whether two signatures share a band key of the server's LSH layout: the
// candidate test of LshIndex::Query for one pair.
bool LshCandidate(const MinHashSignature& a, const MinHashSignature& b) {
  for (int band = 0; band < LshIndex::kDefaultBands; ++band) {
    if (LshIndex::BandKey(a, band, LshIndex::kDefaultRows) ==
        LshIndex::BandKey(b, band, LshIndex::kDefaultRows)) {
      return true;
    }
  }
  return false;
}

// JaccardBin: the bin of an estimate >= 0.5 (0..kJaccardBins-1), or -1
// below 0.5. The edges are i / 20, so a value exactly on an edge (0.8)
// falls in the bin that starts there, as `estimate >= min_jaccard` would.
int JaccardBin(double j) {
  for (int bin = kJaccardBins - 1; bin >= 0; --bin) {
    if (j >= (kFirstJaccardStep + bin) / 20.0) return bin;
  }
  return -1;
}

struct Bin {
  uint64_t count = 0;
  uint64_t lsh_candidates = 0;
  std::optional<std::pair<uint32_t, uint32_t>> example;

  void Add(uint32_t i, uint32_t j, bool candidate) {
    ++count;
    lsh_candidates += candidate ? 1 : 0;
    if (!example) example = std::make_pair(i, j);
  }
};

std::string BinObject(JsonObjectWriter json, const Bin& bin, bool all_pairs,
                      const std::vector<TuneDoc>& docs) {
  json.Uint("count", bin.count);
  if (all_pairs) json.Uint("lsh_candidates", bin.lsh_candidates);
  std::string out = std::move(json).Finish();
  if (bin.example) {
    JsonObjectWriter example;
    example.String("a", docs[bin.example->first].id).String("b", docs[bin.example->second].id);
    out = WithRawMember(std::move(out), "example", std::move(example).Finish());
  }
  return out;
}

// Precision and recall of one threshold over the labelled pairs.
struct CurvePoint {
  uint64_t true_positives = 0, false_positives = 0, false_negatives = 0;
  uint64_t true_positives_lsh = 0;  // also LSH candidates

  std::string Finish(std::string object, bool with_lsh) const {
    JsonObjectWriter json;
    json.Uint("true_positives", true_positives)
        .Uint("false_positives", false_positives)
        .Uint("false_negatives", false_negatives);
    object = WithMembers(std::move(object), std::move(json).Finish());
    const uint64_t predicted = true_positives + false_positives;
    const uint64_t positives = true_positives + false_negatives;
    object = WithRawMember(std::move(object), "precision",
                           predicted == 0 ? "null" : JsonNumber(Ratio(true_positives, predicted)));
    object = WithRawMember(std::move(object), "recall",
                           positives == 0 ? "null" : JsonNumber(Ratio(true_positives, positives)));
    if (with_lsh) {
      object =
          WithRawMember(std::move(object), "recall_with_lsh",
                        positives == 0 ? "null" : JsonNumber(Ratio(true_positives_lsh, positives)));
    }
    return object;
  }

  static double Ratio(uint64_t a, uint64_t b) {
    return static_cast<double>(a) / static_cast<double>(b);
  }
};

class Tuner {
 public:
  explicit Tuner(const TuneOptions& options) : options_(options) {}

  int Run() {
    if (absl::Status s = LoadAndFingerprint(); !s.ok()) return ExitWithError(s);
    Histograms();
    if (options_.pairs) {
      if (absl::Status s = Curves(); !s.ok()) return ExitWithError(s);
    }
    return ExitAfterOutput(absl::OkStatus(), write_ok_, any_invalid_);
  }

 private:
  void Write(const std::string& line) { write_ok_ = WriteLine(line) && write_ok_; }

  void BadLine(absl::string_view input, std::optional<size_t> line,
               std::optional<absl::string_view> id, absl::string_view message) {
    any_invalid_ = true;
    if (input == "docs") ++invalid_docs_;
    JsonObjectWriter json;
    json.String("input", input);
    if (line) json.Int("line", static_cast<int64_t>(*line));
    if (id) json.String("id", *id);
    json.String("error", message);
    Write(std::move(json).Finish());
  }

  // Reads --docs and fingerprints every document; bad lines and texts
  // that do not normalize get error lines.
  absl::Status LoadAndFingerprint() {
    std::vector<DocLine> lines;
    absl::Status s = LoadDocs(options_.docs, &lines, [&](size_t line, absl::string_view message) {
      BadLine("docs", line, std::nullopt, message);
    });
    if (!s.ok()) return s;
    docs_.reserve(lines.size());
    for (DocLine& line : lines) {
      absl::StatusOr<ContentFingerprint> fp = FingerprintText(line.text, simhasher_, minhasher_);
      if (!fp.ok()) {
        BadLine("docs", std::nullopt, line.id, fp.status().message());
        continue;
      }
      TuneDoc doc;
      doc.id = std::move(line.id);
      doc.sha256 = fp->sha256;
      doc.simhash = fp->simhash;
      doc.minhash = *fp->minhash;
      line.text = std::string();  // the texts are no longer needed
      index_of_[doc.id] = static_cast<uint32_t>(docs_.size());
      docs_.push_back(std::move(doc));
    }
    return absl::OkStatus();
  }

  // The two histograms over every pair or the LSH candidates.
  void Histograms() {
    const size_t n = docs_.size();
    // ~100 entries per bucket (lsh_index.h), within the index's bounds.
    int bucket_bits = LshIndex::kMinBucketBits;
    while (bucket_bits < LshIndex::kMaxBucketBits && (size_t{100} << bucket_bits) < n) {
      ++bucket_bits;
    }
    LshIndex index(LshIndex::kDefaultBands, LshIndex::kDefaultRows, bucket_bits);
    for (size_t i = 0; i < n; ++i) index.Insert(docs_[i].minhash, static_cast<uint32_t>(i));
    absl::flat_hash_set<uint64_t> candidates;  // i << 32 | j, i < j
    std::vector<uint32_t> ids;
    for (size_t i = 0; i < n; ++i) {
      index.Query(docs_[i].minhash, &ids);
      for (uint32_t j : ids) {
        if (j > i) candidates.insert(uint64_t{i} << 32 | j);
      }
    }
    const bool all_pairs = n <= options_.brute_force_max_docs;

    Bin jaccard[kJaccardBins];
    Bin hamming[kMaxHistogramDistance + 1];
    uint64_t below = 0, above = 0, examined = 0, exact = 0;
    const auto visit = [&](uint32_t i, uint32_t j, bool candidate) {
      ++examined;
      const TuneDoc& a = docs_[i];
      const TuneDoc& b = docs_[j];
      if (a.sha256 == b.sha256) ++exact;
      const int bin = JaccardBin(EstimateJaccard(a.minhash, b.minhash));
      if (bin < 0) {
        ++below;
      } else {
        jaccard[bin].Add(i, j, candidate);
      }
      const int d = HammingDistance(a.simhash, b.simhash);
      if (d > kMaxHistogramDistance) {
        ++above;
      } else {
        hamming[d].Add(i, j, candidate);
      }
    };
    if (all_pairs) {
      for (uint32_t i = 0; i < n; ++i) {
        for (uint32_t j = i + 1; j < n; ++j) {
          visit(i, j, candidates.contains(uint64_t{i} << 32 | j));
        }
      }
    } else {
      std::vector<uint64_t> sorted(candidates.begin(), candidates.end());
      std::sort(sorted.begin(), sorted.end());
      for (uint64_t p : sorted) {
        visit(static_cast<uint32_t>(p >> 32), static_cast<uint32_t>(p), true);
      }
    }
    const absl::string_view pairs = all_pairs ? "all" : "lsh_candidates";

    JsonObjectWriter summary;
    summary.String("kind", "summary")
        .Uint("docs", n)
        .Uint("invalid_docs", invalid_docs_)
        .String("pairs", pairs)
        .Uint("pairs_examined", examined)
        .Uint("lsh_candidate_pairs", candidates.size())
        .Uint("exact_duplicate_pairs", exact)
        .Int("lsh_bands", LshIndex::kDefaultBands)
        .Int("lsh_rows", LshIndex::kDefaultRows);
    Write(std::move(summary).Finish());

    std::vector<std::string> bins;
    for (int b = 0; b < kJaccardBins; ++b) {
      std::string object = WithRawMember("{}", "from", JsonNumber((kFirstJaccardStep + b) / 20.0));
      object =
          WithRawMember(std::move(object), "to", JsonNumber((kFirstJaccardStep + b + 1) / 20.0));
      bins.push_back(SpliceBin(std::move(object), jaccard[b], all_pairs));
    }
    JsonObjectWriter histogram;
    histogram.String("kind", "jaccard_histogram")
        .String("pairs", pairs)
        .Uint("below", below)
        .RawArray("bins", bins);
    Write(std::move(histogram).Finish());

    bins.clear();
    for (int d = 0; d <= kMaxHistogramDistance; ++d) {
      JsonObjectWriter json;
      json.Int("distance", d);
      bins.push_back(BinObject(std::move(json), hamming[d], all_pairs, docs_));
    }
    JsonObjectWriter distances;
    distances.String("kind", "hamming_histogram")
        .String("pairs", pairs)
        .Uint("above", above)
        .RawArray("bins", bins);
    Write(std::move(distances).Finish());
  }

  // SpliceBin appends a bin's members to `object` (which has its own).
  std::string SpliceBin(std::string object, const Bin& bin, bool all_pairs) const {
    return WithMembers(std::move(object), BinObject(JsonObjectWriter(), bin, all_pairs, docs_));
  }

  // Precision and recall per threshold over the labelled pairs of --pairs.
  absl::Status Curves() {
    InputFile file;
    if (absl::Status s = file.Open(options_.pairs); !s.ok()) return s;
    LineReader reader(file.fd(), kMaxTextLineBytes);
    CurvePoint jaccard[kJaccardSteps - kFirstJaccardStep + 1];
    CurvePoint hamming[kMaxCurveDistance + 1];
    uint64_t labelled = 0, duplicates = 0;
    std::string line;
    bool too_long = false;
    while (NextJsonLine(&reader, &line, &too_long)) {
      PairLine pair;
      absl::Status s = too_long ? absl::InvalidArgumentError(
                                      absl::StrCat("longer than ", kMaxTextLineBytes, " bytes"))
                                : ParsePairLine(line, &pair);
      if (s.ok() && !pair.label) {
        s = absl::InvalidArgumentError(
            "missing \"label\" (\"duplicate\" or \"different\"): tune measures labelled pairs");
      }
      const auto a = index_of_.find(pair.a);
      const auto b = index_of_.find(pair.b);
      if (s.ok() && (a == index_of_.end() || b == index_of_.end())) {
        s = absl::InvalidArgumentError(absl::StrCat("no valid document with id \"",
                                                    a == index_of_.end() ? pair.a : pair.b,
                                                    "\" in --docs"));
      }
      if (!s.ok()) {
        BadLine("pairs", reader.line_number(), std::nullopt, s.message());
        continue;
      }
      const TuneDoc& da = docs_[a->second];
      const TuneDoc& db = docs_[b->second];
      const bool positive = *pair.label;
      const double j = EstimateJaccard(da.minhash, db.minhash);
      const int d = HammingDistance(da.simhash, db.simhash);
      const bool candidate = LshCandidate(da.minhash, db.minhash);
      ++labelled;
      duplicates += positive ? 1 : 0;
      for (int step = kFirstJaccardStep; step <= kJaccardSteps; ++step) {
        Count(positive, j >= step / 20.0, candidate, &jaccard[step - kFirstJaccardStep]);
      }
      for (int k = 0; k <= kMaxCurveDistance; ++k) {
        Count(positive, d <= k, /*candidate=*/true, &hamming[k]);
      }
    }
    if (!reader.status().ok()) return reader.status();

    std::vector<std::string> points;
    for (int step = kFirstJaccardStep; step <= kJaccardSteps; ++step) {
      std::string object = WithRawMember("{}", "min_jaccard", JsonNumber(step / 20.0));
      points.push_back(jaccard[step - kFirstJaccardStep].Finish(std::move(object), true));
    }
    JsonObjectWriter curve;
    curve.String("kind", "jaccard_curve")
        .Uint("labelled_pairs", labelled)
        .Uint("duplicates", duplicates)
        .RawArray("points", points);
    Write(std::move(curve).Finish());

    points.clear();
    for (int k = 0; k <= kMaxCurveDistance; ++k) {
      std::string object = WithRawMember("{}", "max_hamming_distance", absl::StrCat(k));
      points.push_back(hamming[k].Finish(std::move(object), false));
    }
    JsonObjectWriter distances;
    distances.String("kind", "hamming_curve")
        .Uint("labelled_pairs", labelled)
        .Uint("duplicates", duplicates)
        .RawArray("points", points);
    Write(std::move(distances).Finish());
    return absl::OkStatus();
  }

  static void Count(bool positive, bool predicted, bool candidate, CurvePoint* p) {
    if (positive && predicted) {
      ++p->true_positives;
      p->true_positives_lsh += candidate ? 1 : 0;
    } else if (predicted) {
      ++p->false_positives;
    } else if (positive) {
      ++p->false_negatives;
    }
  }

  const TuneOptions& options_;
  const SimHasher simhasher_;
  const MinHasher minhasher_;
  std::vector<TuneDoc> docs_;
  absl::flat_hash_map<std::string, uint32_t> index_of_;
  uint64_t invalid_docs_ = 0;
  bool any_invalid_ = false;
  bool write_ok_ = true;
};

}  // namespace

int RunTune(const TuneOptions& options) { return Tuner(options).Run(); }

}  // namespace dedupd::dedupctl
