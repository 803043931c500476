// simhash_quality: how well 64-bit SimHash at Hamming distance <= k finds
// near-duplicate page texts, measured against the exact answer.
//
// From real pages (one page per file, see bench/corpus/make_text_corpus.py) it
// builds, with a fixed seed, pairs of texts of known kinds: controlled edits
// of one page (word substitutions, insertions, deletions, a changed header
// and footer, reordered paragraphs, truncation, a license pasted once or 20
// times) and hard negatives (two distinct pages of one family, e.g. two
// PostgreSQL "ALTER ..." reference pages or two "email.*" module pages; two
// distinct pages in the same site chrome; two distinct pages each with the
// same license pasted 20 times). For every pair the truth is the exact
// Jaccard similarity J of the sets of `--shingle_words`-word shingles of the
// two normalized texts: J >= 0.8 is "near", J < 0.5 is "far", the pairs in
// between are counted but left out of precision and recall. SimHash predicts
// near when HammingDistance(a, b) <= k. MinHash predicts near at min_jaccard
// t as the store does: the two texts' signatures (MinHasher) share a band key
// of an LshIndex (18 x 7), and EstimateJaccard >= t.
//
// Kinds added with MinHash (left out of the "quality" and "distance" lines,
// which stay comparable with earlier runs): 2% and 5% of the words
// substituted; the footer replaced by another site's; a ~110-word cookie
// preamble prepended; and hard negatives: two module pages of one Python
// module family ("email.parser" and "email.message"); two product pages of
// one shop template (different products; ProductPage: ~590 words of shared
// template text, a 0-80-word description, so J ~0.6-0.9); two pages of one
// product that differ in one attribute (colour, size, material or price);
// two distinct pages behind the same preamble. Output, one fixed-format line
// each:
//
//   # simhash_quality pages=<n> words_mean=<w> seed=<s> pairs_per_kind=<p> ...
//   quality k=<k> pairs=<n> near=<n> far=<n> between=<n> tp=<n> fp=<n> fn=<n> tn=<n> precision=<x>
//   recall=<x>
//       (k = 1..--max_k (6), over all pairs)
//   kind <name> k=<k> pairs=<n> near=<n> far=<n> between=<n> tp=<n> fp=<n> fn=<n> recall=<x>
//   jaccard_p50=<x> distance_p50=<d> distance_p90=<d>
//       (one per pair kind, at --k)
//   distance jaccard=[<lo>,<hi>) words=<range> pairs=<n> distance_p10=<d> distance_p50=<d>
//   distance_p90=<d> hyperplane=<x> within_k=<x>
//       (SimHash distance by Jaccard band and page length, all kinds)
//   threshold measure=<simhash k=<k>|minhash min_jaccard=<t>> pairs=<n> near=<n> far=<n> tp=<n>
//   fp=<n> fn=<n> precision=<x> recall=<x> recall_j85=<x> recall_j90=<x> recall_j95=<x>
//   recall_own=<x> recall_plus=<x> fn_lsh=<n> fn_verify=<n> below_t=<n> negatives=<n> merged=<n>
//       (SimHash k = 3..6, MinHash t = 0.50..0.95, over every kind: see PrintThresholds)
//   mkind <name> negative=<0|1> pairs=<n> jaccard_p10=<x> jaccard_p50=<x> jaccard_max=<x>
//   estimate_p50=<x> candidate=<x> simhash_k3=<x> .. simhash_k6=<x> minhash_<t>=<x> ..
//   near=<n> recall_simhash_k3=<x> .. recall_minhash_<t>=<x> ..
//       (share of the kind's pairs found near, at --kind_thresholds; then among
//       those with J >= 0.8)
//
// precision is nan when nothing is predicted near, recall nan when no pair is
// near. hyperplane is the mean distance that random-hyperplane hashing of
// the unweighted shingle sets would give: 64 * acos(cos) / pi, with
// cos = |A n B| / sqrt(|A| |B|) (Charikar 2002). --worst=N prints to stderr
// the N near pairs that SimHash places farthest apart and the N far pairs it
// places closest.
//
// Example:
//   build/bench/dedupd_simhash_quality --pages_dir=bench/corpus/pages
//   build/bench/dedupd_simhash_quality --tiny --pages_dir=bench/corpus/sample_pages
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "bench/corpus/read_pages.h"
#include "bench/quality/page_pairs.h"
#include "core/index/lsh_index.h"
#include "core/text/minhash.h"
#include "core/text/simhash.h"
#include "core/text/sorted_sets.h"
#include "core/text/text_normalizer.h"

ABSL_FLAG(std::string, pages_dir, "bench/corpus/pages",
          "directory of page texts (*.txt, one page per file, paragraphs "
          "separated by blank lines)");
ABSL_FLAG(int, max_pages, 0, "use only the first N pages in file-name order (0: all)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the pair generator");
ABSL_FLAG(int, pairs_per_kind, 200, "pairs generated per kind");
ABSL_FLAG(int, max_k, 6, "print quality lines for k = 1..max_k");
ABSL_FLAG(int, k, 3, "Hamming distance threshold of the kind and distance lines");
ABSL_FLAG(int, shingle_words, 3, "words per shingle, for both SimHash and the exact Jaccard");
ABSL_FLAG(int, worst, 0,
          "print to stderr the N near pairs with the largest and the N far pairs "
          "with the smallest SimHash distance");
ABSL_FLAG(std::vector<std::string>, kind_thresholds,
          std::vector<std::string>({"0.8", "0.85", "0.9"}),
          "min_jaccard values of the per-kind MinHash lines (the threshold lines cover "
          "0.50..0.95 in steps of 0.05)");
ABSL_FLAG(bool, tiny, false, "CI size: --pairs_per_kind=10 (numbers mean nothing)");

namespace {

using ::dedupd::bench::quality::Corpus;
using ::dedupd::bench::quality::FamilyOf;
using ::dedupd::bench::quality::Join;
using ::dedupd::bench::quality::Kind;
using ::dedupd::bench::quality::Kinds;
using ::dedupd::bench::quality::kTemplateFaqWords;
using ::dedupd::bench::quality::Page;
using ::dedupd::bench::quality::PairText;
using ::dedupd::bench::quality::Paragraphs;
using ::dedupd::bench::quality::Rng;
using ::dedupd::bench::quality::Words;

constexpr double kNearJaccard = 0.8;
constexpr double kFarJaccard = 0.5;
const double kPi = std::acos(-1.0);

bool LoadPages(const std::string& dir, int max_pages, std::vector<Page>* pages, int* unreadable) {
  std::vector<std::string> paths;
  if (!dedupd::bench::ListPages(dir, &paths)) {
    std::cerr << "simhash_quality: cannot list " << dir << "\n";
    return false;
  }
  if (max_pages > 0 && paths.size() > static_cast<size_t>(max_pages)) {
    paths.resize(max_pages);
  }
  const int shingle = absl::GetFlag(FLAGS_shingle_words);
  for (const std::string& path : paths) {
    std::string text;
    if (!dedupd::bench::ReadFile(path, &text)) {
      ++*unreadable;
      continue;
    }
    // The normalizer must accept the page, or every pair built from it fails.
    if (!dedupd::NormalizeText(text).ok()) {
      ++*unreadable;
      continue;
    }
    Page p;
    p.name = std::filesystem::path(path).filename().string();
    // Paragraphs are separated by blank lines; lines within one are joined.
    absl::StrReplaceAll({{"\r", ""}}, &text);
    for (absl::string_view para : absl::StrSplit(text, "\n\n", absl::SkipWhitespace())) {
      std::vector<std::string> w = Words(para);
      p.words += w.size();
      p.paragraphs.push_back(std::move(w));
    }
    if (p.words < static_cast<size_t>(shingle)) {
      ++*unreadable;
      continue;
    }
    p.family = FamilyOf(p.paragraphs);
    p.title = absl::StrJoin(p.paragraphs[0], " ");
    {
      const std::string& first = p.paragraphs[0][0];
      const size_t dot = first.find('.');
      p.module = dot != std::string::npos && dot > 0 && dot + 1 < first.size() &&
                 absl::ascii_isalpha(static_cast<unsigned char>(first[dot + 1]));
    }
    pages->push_back(std::move(p));
  }
  return true;
}

// --- pair kinds ----------------------------------------------------------

// Context a kind's generator draws from.
// --- truth and measurement -----------------------------------------------

// Sorted distinct shingles of a normalized text (words separated by one ' ');
// the views point into `text`. A text shorter than one shingle is one
// shingle.
std::vector<absl::string_view> ShingleSet(absl::string_view text, int n) {
  std::vector<size_t> starts;  // start offset of every word
  starts.push_back(0);
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == ' ') starts.push_back(i + 1);
  }
  std::vector<absl::string_view> out;
  const size_t words = starts.size();
  if (words <= static_cast<size_t>(n)) {
    out.push_back(text);
    return out;
  }
  for (size_t i = 0; i + n <= words; ++i) {
    size_t end = i + n < words ? starts[i + n] - 1 : text.size();
    out.push_back(text.substr(starts[i], end - starts[i]));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct Result {
  size_t kind;
  double jaccard;
  double hyperplane;  // 64 * acos(cos) / pi of the unweighted shingle sets
  int distance;
  size_t words;
  std::string desc;  // for --worst
  // MinHash + LSH, as the store does it: `candidate` when the two
  // signatures share one of the 18 x 7 band keys (LshIndex), `estimate`
  // their EstimateJaccard. Predicted near at min_jaccard t when candidate
  // && estimate >= t.
  bool candidate = false;
  double estimate = 0;
  bool MinHashNear(double t) const { return candidate && estimate >= t; }
};

enum class Label { kNear, kFar, kBetween };

Label LabelOf(double j) {
  if (j >= kNearJaccard) return Label::kNear;
  if (j < kFarJaccard) return Label::kFar;
  return Label::kBetween;
}

struct Counts {
  int64_t pairs = 0, near = 0, far = 0, between = 0, tp = 0, fp = 0, fn = 0, tn = 0;
  void Add(Label l, bool predicted_near) {
    ++pairs;
    switch (l) {
      case Label::kNear:
        ++near;
        ++(predicted_near ? tp : fn);
        break;
      case Label::kFar:
        ++far;
        ++(predicted_near ? fp : tn);
        break;
      case Label::kBetween:
        ++between;
        break;
    }
  }
};

std::string Ratio(int64_t num, int64_t den) {
  if (den == 0) return "nan";
  return absl::StrFormat("%.3f", static_cast<double>(num) / den);
}

template <typename T>
T Quantile(std::vector<T> v, double q) {
  if (v.empty()) return T();
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * (v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

// The flags, read once and checked.
struct Options {
  std::string pages_dir;
  int max_pages = 0;  // 0: all
  uint64_t seed = 0;
  int pairs_per_kind = 0;  // --tiny already applied
  int k = 0;
  int max_k = 0;
  int shingle_words = 0;
  int worst = 0;
  std::vector<double> kind_thresholds;  // min_jaccard of the "mkind" lines
};

// OptionsFromFlags reads the flags into `o`. Returns false, after saying
// why on stderr, when one is out of range.
bool OptionsFromFlags(Options* o) {
  o->pages_dir = absl::GetFlag(FLAGS_pages_dir);
  o->max_pages = absl::GetFlag(FLAGS_max_pages);
  o->seed = absl::GetFlag(FLAGS_seed);
  o->pairs_per_kind = absl::GetFlag(FLAGS_tiny) ? 10 : absl::GetFlag(FLAGS_pairs_per_kind);
  o->k = absl::GetFlag(FLAGS_k);
  o->max_k = absl::GetFlag(FLAGS_max_k);
  o->shingle_words = absl::GetFlag(FLAGS_shingle_words);
  o->worst = absl::GetFlag(FLAGS_worst);
  for (const std::string& t : absl::GetFlag(FLAGS_kind_thresholds)) {
    double v = 0;
    if (!absl::SimpleAtod(t, &v) || !(v > 0 && v <= 1)) {
      std::cerr << "simhash_quality: --kind_thresholds: " << t << " is not in (0, 1]\n";
      return false;
    }
    o->kind_thresholds.push_back(v);
  }
  if (o->pairs_per_kind < 1 || o->k < 0 || o->k > 64 || o->max_k < 1 || o->max_k > 64 ||
      o->shingle_words < 1 || o->shingle_words > 16) {
    std::cerr << "simhash_quality: need --pairs_per_kind >= 1, 0 <= --k <= 64, "
                 "1 <= --max_k <= 64, 1 <= --shingle_words <= 16\n";
    return false;
  }
  return true;
}

// MakeCorpus groups `pages` by family, keeping the families of 2 or more
// pages, in family-name order. `pages` must outlive the result.
Corpus MakeCorpus(const std::vector<Page>& pages) {
  Corpus corpus{&pages, {}, {}, {}};
  for (const std::vector<std::string>& para : pages[pages.size() / 2].paragraphs) {
    for (const std::string& w : para) {
      if (corpus.template_faq.size() < kTemplateFaqWords) corpus.template_faq.push_back(w);
    }
  }
  std::map<std::string, std::vector<size_t>> by_family;
  for (size_t i = 0; i < pages.size(); ++i) by_family[pages[i].family].push_back(i);
  for (auto& [name, idx] : by_family) {
    std::vector<size_t> modules;
    for (size_t i : idx) {
      if (pages[i].module) modules.push_back(i);
    }
    if (modules.size() >= 2) corpus.module_families.push_back(std::move(modules));
    if (idx.size() >= 2) corpus.families.push_back(std::move(idx));
  }
  return corpus;
}

// MeasurePair returns the truth and SimHash's distance of pair `pt` of kind
// `kind`; nullopt when the normalizer rejects one of its texts.
std::optional<Result> MeasurePair(const Options& o, const dedupd::SimHasher& hasher,
                                  const dedupd::MinHasher& minhasher, dedupd::LshIndex* lsh,
                                  size_t kind, const PairText& pt) {
  absl::StatusOr<std::string> a = dedupd::NormalizeText(pt.a);
  absl::StatusOr<std::string> b = dedupd::NormalizeText(pt.b);
  if (!a.ok() || !b.ok()) return std::nullopt;
  std::vector<absl::string_view> sa = ShingleSet(*a, o.shingle_words);
  std::vector<absl::string_view> sb = ShingleSet(*b, o.shingle_words);
  size_t inter = dedupd::SortedIntersectionSize(sa, sb);
  Result r;
  r.kind = kind;
  r.jaccard = static_cast<double>(inter) / (sa.size() + sb.size() - inter);
  double cos = inter / std::sqrt(static_cast<double>(sa.size()) * sb.size());
  r.hyperplane = 64.0 * std::acos(std::min(1.0, cos)) / kPi;
  r.distance = dedupd::HammingDistance(hasher.Fingerprint(*a), hasher.Fingerprint(*b));
  r.words = pt.words_a;
  // The store's test: index one text, query with the other, verify.
  const dedupd::MinHashSignature ma = minhasher.Sign(*a);
  const dedupd::MinHashSignature mb = minhasher.Sign(*b);
  lsh->Insert(ma, 0);
  r.candidate = !lsh->Query(mb).empty();
  lsh->Erase(ma, 0);
  r.estimate = dedupd::EstimateJaccard(ma, mb);
  if (o.worst > 0) {
    r.desc = absl::StrFormat("shingles=%d/%d first_words=\"%s\"", sa.size(), sb.size(),
                             a->substr(0, 60));
  }
  return r;
}

// MeasureKinds makes up to o.pairs_per_kind pairs of every kind and measures
// them; counts the pairs the normalizer rejects in *normalize_errors.
std::vector<Result> MeasureKinds(const Options& o, const Corpus& corpus,
                                 const std::vector<Kind>& kinds, int* normalize_errors) {
  const dedupd::SimHasher hasher(dedupd::SimHashOptions{o.shingle_words});
  const dedupd::MinHasher minhasher(dedupd::MinHashOptions{o.shingle_words});
  // The store's layout (18 x 7); few buckets, as it holds one text at a time.
  dedupd::LshIndex lsh(dedupd::LshIndex::kDefaultBands, dedupd::LshIndex::kDefaultRows,
                       dedupd::LshIndex::kMinBucketBits);
  std::vector<Result> results;
  for (size_t ki = 0; ki < kinds.size(); ++ki) {
    // One generator per kind: adding a kind does not change the others' pairs.
    Rng rng(o.seed * 1000003 + ki);
    for (int n = 0; n < o.pairs_per_kind; ++n) {
      PairText pt;
      if (!kinds[ki].make(corpus, kinds[ki].name, rng, &pt)) break;
      std::optional<Result> r = MeasurePair(o, hasher, minhasher, &lsh, ki, pt);
      if (!r.has_value()) {
        ++*normalize_errors;
        continue;
      }
      results.push_back(*std::move(r));
    }
  }
  return results;
}

// A near-duplicate test, as the "threshold" and "mkind" lines report it:
// SimHash at Hamming distance <= k, or MinHash + LSH + verification at
// min_jaccard t.
struct Setting {
  bool minhash;
  int k;     // SimHash
  double t;  // MinHash
  bool Near(const Result& r) const { return minhash ? r.MinHashNear(t) : r.distance <= k; }
  std::string Name() const {
    return minhash ? absl::StrFormat("measure=minhash min_jaccard=%.2f", t)
                   : absl::StrFormat("measure=simhash k=%d", k);
  }
};

// The thresholds of the "threshold" lines: 0.50, 0.55, ..., 0.95.
std::vector<double> ThresholdGrid() {
  std::vector<double> out;
  for (int i = 10; i <= 19; ++i) out.push_back(i * 0.05);
  return out;
}

// Recall of `s` among the pairs with J >= lo (J computed in double: a
// threshold of 0.8 is compared with 0.8 - 1e-9 so that 4/5 counts).
// Pairs of negative kinds are left out: their similar pairs are the
// merges reported apart.
std::string RecallAbove(const std::vector<Result>& results, const std::vector<Kind>& kinds,
                        const Setting& s, double lo) {
  int64_t n = 0, found = 0;
  for (const Result& r : results) {
    if (kinds[r.kind].negative || r.jaccard < lo - 1e-9) continue;
    ++n;
    found += s.Near(r);
  }
  return Ratio(found, n);
}

// Prints one "threshold" line per setting over all pairs of every kind:
// SimHash at k = 3..6, then MinHash at min_jaccard 0.50..0.95.
//   threshold measure=<simhash k=<k>|minhash min_jaccard=<t>> pairs= near= far= tp= fp= fn=
//   precision= recall= recall_j85= recall_j90= recall_j95= recall_own= recall_plus= fn_lsh=
//   fn_verify= below_t= negatives= merged=
// recall: of pairs with J >= 0.8; recall_jNN: J >= 0.NN; recall_own: J >= t;
// recall_plus: J >= t + 0.05; fn_lsh / fn_verify: near pairs (J >= 0.8)
// missed because no band matched / because the estimate was below t;
// below_t: pairs found whose J < t; merged: negative-kind pairs (distinct
// pages) found near, of `negatives`. Near pairs (recall) come from the edit
// kinds only; far pairs (precision) from every kind: a hard negative with J
// >= 0.5 is counted only in `merged`.
void PrintThresholds(const std::vector<Result>& results, const std::vector<Kind>& kinds) {
  std::vector<Setting> settings;
  for (int k = 3; k <= 6; ++k) settings.push_back({false, k, 0});
  for (double t : ThresholdGrid()) settings.push_back({true, 0, t});
  for (const Setting& s : settings) {
    Counts c;
    int64_t fn_lsh = 0, fn_verify = 0, below_t = 0, negatives = 0, merged = 0;
    for (const Result& r : results) {
      const bool near = s.Near(r);
      const bool negative = kinds[r.kind].negative;
      if (negative && r.jaccard >= kFarJaccard) {
        ++negatives;
        merged += near;
        continue;
      }
      c.Add(LabelOf(r.jaccard), near);
      if (r.jaccard >= kNearJaccard && !near && s.minhash) ++(r.candidate ? fn_verify : fn_lsh);
      if (s.minhash && near && r.jaccard < s.t - 1e-9) ++below_t;
      if (negative) {
        ++negatives;
        merged += near;
      }
    }
    const std::string own = s.minhash ? RecallAbove(results, kinds, s, s.t) : "-";
    const std::string plus =
        s.minhash ? (s.t + 0.05 > 1 + 1e-9 ? "nan" : RecallAbove(results, kinds, s, s.t + 0.05))
                  : "-";
    absl::PrintF(
        "threshold %s pairs=%d near=%d far=%d tp=%d fp=%d fn=%d precision=%s recall=%s "
        "recall_j85=%s recall_j90=%s recall_j95=%s recall_own=%s recall_plus=%s fn_lsh=%s "
        "fn_verify=%s below_t=%s negatives=%d merged=%d\n",
        s.Name(), c.pairs, c.near, c.far, c.tp, c.fp, c.fn, Ratio(c.tp, c.tp + c.fp),
        Ratio(c.tp, c.tp + c.fn), RecallAbove(results, kinds, s, 0.85),
        RecallAbove(results, kinds, s, 0.9), RecallAbove(results, kinds, s, 0.95), own, plus,
        s.minhash ? absl::StrCat(fn_lsh) : "-", s.minhash ? absl::StrCat(fn_verify) : "-",
        s.minhash ? absl::StrCat(below_t) : "-", negatives, merged);
  }
}

// "simhash_k3", "minhash_0.80": a setting in the "mkind" lines.
std::string SettingKey(const Setting& s) {
  return s.minhash ? absl::StrFormat("minhash_%.2f", s.t) : absl::StrFormat("simhash_k%d", s.k);
}

// Prints one "mkind" line per pair kind: the share of its pairs each
// setting finds near (for a negative kind, the share merged by mistake),
// SimHash at k = 3..6 and MinHash at each of `thresholds`, and its J.
//   mkind <name> negative=<0|1> pairs= jaccard_p10= jaccard_p50= jaccard_max= estimate_p50=
//   candidate= simhash_k3= .. simhash_k6= minhash_<t>= .. near= recall_simhash_k3= ..
//   recall_minhash_<t>= ..
// recall_*: the share found among the kind's pairs with J >= 0.8.
void PrintMinHashKinds(const std::vector<Result>& results, const std::vector<Kind>& kinds,
                       const std::vector<double>& thresholds) {
  std::vector<Setting> settings;
  for (int k = 3; k <= 6; ++k) settings.push_back({false, k, 0});
  for (double t : thresholds) settings.push_back({true, 0, t});
  for (size_t ki = 0; ki < kinds.size(); ++ki) {
    std::vector<double> js, est;
    int64_t pairs = 0, candidates = 0, near = 0;
    std::vector<int64_t> found(settings.size()), found_near(settings.size());
    for (const Result& r : results) {
      if (r.kind != ki) continue;
      ++pairs;
      js.push_back(r.jaccard);
      est.push_back(r.estimate);
      candidates += r.candidate;
      near += r.jaccard >= kNearJaccard;
      for (size_t i = 0; i < settings.size(); ++i) {
        found[i] += settings[i].Near(r);
        found_near[i] += r.jaccard >= kNearJaccard && settings[i].Near(r);
      }
    }
    std::string line = absl::StrFormat(
        "mkind %s negative=%d pairs=%d jaccard_p10=%.3f jaccard_p50=%.3f jaccard_max=%.3f "
        "estimate_p50=%.3f candidate=%s",
        kinds[ki].name, kinds[ki].negative ? 1 : 0, pairs, Quantile(js, 0.1), Quantile(js, 0.5),
        Quantile(js, 1.0), Quantile(est, 0.5), Ratio(candidates, pairs));
    for (size_t i = 0; i < settings.size(); ++i) {
      absl::StrAppend(&line, " ", SettingKey(settings[i]), "=", Ratio(found[i], pairs));
    }
    absl::StrAppend(&line, " near=", near);
    for (size_t i = 0; i < settings.size(); ++i) {
      absl::StrAppend(&line, " recall_", SettingKey(settings[i]), "=", Ratio(found_near[i], near));
    }
    absl::PrintF("%s\n", line);
  }
}

// Prints the "quality" lines, k = 1..max_k over all pairs.
void PrintQuality(const std::vector<Result>& results, int max_k) {
  for (int kk = 1; kk <= max_k; ++kk) {
    Counts c;
    for (const Result& r : results) c.Add(LabelOf(r.jaccard), r.distance <= kk);
    absl::PrintF(
        "quality k=%d pairs=%d near=%d far=%d between=%d tp=%d fp=%d fn=%d tn=%d "
        "precision=%s recall=%s\n",
        kk, c.pairs, c.near, c.far, c.between, c.tp, c.fp, c.fn, c.tn, Ratio(c.tp, c.tp + c.fp),
        Ratio(c.tp, c.tp + c.fn));
  }
}

// Prints one "kind" line per pair kind, at k.
void PrintKinds(const std::vector<Result>& results, const std::vector<Kind>& kinds, int k) {
  for (size_t ki = 0; ki < kinds.size(); ++ki) {
    Counts c;
    std::vector<double> js;
    std::vector<int> ds;
    for (const Result& r : results) {
      if (r.kind != ki) continue;
      c.Add(LabelOf(r.jaccard), r.distance <= k);
      js.push_back(r.jaccard);
      ds.push_back(r.distance);
    }
    absl::PrintF(
        "kind %s k=%d pairs=%d near=%d far=%d between=%d tp=%d fp=%d fn=%d recall=%s "
        "jaccard_p50=%.3f distance_p50=%d distance_p90=%d\n",
        kinds[ki].name, k, c.pairs, c.near, c.far, c.between, c.tp, c.fp, c.fn,
        Ratio(c.tp, c.tp + c.fn), Quantile(js, 0.5), Quantile(ds, 0.5), Quantile(ds, 0.9));
  }
}

// Prints the "distance" lines: distance by Jaccard band and page length,
// what limits recall; a cell without pairs prints nothing.
void PrintDistances(const std::vector<Result>& results, int k) {
  struct Band {
    double lo, hi;
  };
  const Band bands[] = {{0.5, 0.8}, {0.8, 0.9}, {0.9, 0.95}, {0.95, 0.99}, {0.99, 1.01}};
  struct Length {
    size_t lo, hi;
    const char* name;
  };
  const Length lengths[] = {{0, 300, "<300"}, {300, 2000, "300-2000"}, {2000, SIZE_MAX, ">=2000"}};
  for (const Band& band : bands) {
    for (const Length& len : lengths) {
      std::vector<int> ds;
      double hyper = 0;
      int64_t within = 0;
      for (const Result& r : results) {
        if (r.jaccard < band.lo || r.jaccard >= band.hi) continue;
        if (r.words < len.lo || r.words >= len.hi) continue;
        ds.push_back(r.distance);
        hyper += r.hyperplane;
        if (r.distance <= k) ++within;
      }
      if (ds.empty()) continue;
      absl::PrintF(
          "distance jaccard=[%.2f,%.2f) words=%s pairs=%d distance_p10=%d distance_p50=%d "
          "distance_p90=%d hyperplane=%.1f within_k=%s\n",
          band.lo, std::min(band.hi, 1.0), len.name, ds.size(), Quantile(ds, 0.1),
          Quantile(ds, 0.5), Quantile(ds, 0.9), hyper / ds.size(),
          Ratio(within, static_cast<int64_t>(ds.size())));
    }
  }
}

// Prints to stderr the `worst` near pairs SimHash places farthest apart
// (what limits recall) and the `worst` far pairs it places closest (what
// limits precision).
void PrintWorst(const std::vector<Result>& results, const std::vector<Kind>& kinds, int worst) {
  for (Label label : {Label::kNear, Label::kFar}) {
    std::vector<const Result*> sel;
    for (const Result& r : results) {
      if (LabelOf(r.jaccard) == label) sel.push_back(&r);
    }
    std::stable_sort(sel.begin(), sel.end(), [label](const Result* x, const Result* y) {
      return label == Label::kNear ? x->distance > y->distance : x->distance < y->distance;
    });
    sel.resize(std::min<size_t>(sel.size(), worst));
    for (const Result* r : sel) {
      std::cerr << absl::StrFormat("worst_%s kind=%s jaccard=%.3f distance=%d words=%d %s\n",
                                   label == Label::kNear ? "near" : "far", kinds[r->kind].name,
                                   r->jaccard, r->distance, r->words, r->desc);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "simhash_quality: SimHash near-duplicate precision and recall against "
      "exact shingle Jaccard, on controlled edits of real pages.\n"
      "Usage: dedupd_simhash_quality [--pages_dir=DIR] [--max_pages=N] "
      "[--seed=S] [--pairs_per_kind=P] [--k=K] [--worst=N] [--tiny]");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 1) {
    std::cerr << "simhash_quality: unexpected argument " << args[1] << " (see --help)\n";
    return 2;
  }
  Options o;
  if (!OptionsFromFlags(&o)) return 2;

  std::vector<Page> pages;
  int unreadable = 0;
  if (!LoadPages(o.pages_dir, o.max_pages, &pages, &unreadable)) return 1;
  if (pages.size() < 2) {
    std::cerr << "simhash_quality: " << o.pages_dir << " has fewer than 2 usable pages "
              << "(build them with bench/corpus/make_text_corpus.py)\n";
    return 1;
  }
  const Corpus corpus = MakeCorpus(pages);
  size_t total_words = 0;
  for (const Page& p : pages) total_words += p.words;

  const std::vector<Kind> kinds = Kinds();
  int normalize_errors = 0;
  const std::vector<Result> results = MeasureKinds(o, corpus, kinds, &normalize_errors);

  absl::PrintF(
      "# simhash_quality pages=%d words_mean=%d families=%d seed=%d pairs_per_kind=%d "
      "shingle_words=%d near=J>=%.1f far=J<%.1f unusable_pages=%d normalize_errors=%d\n",
      pages.size(), total_words / pages.size(), corpus.families.size(), o.seed, o.pairs_per_kind,
      o.shingle_words, kNearJaccard, kFarJaccard, unreadable, normalize_errors);
  std::vector<Result> original;  // the kinds that predate MinHash
  for (const Result& r : results) {
    if (!kinds[r.kind].added) original.push_back(r);
  }
  PrintQuality(original, o.max_k);
  PrintKinds(results, kinds, o.k);
  PrintDistances(original, o.k);
  PrintThresholds(results, kinds);
  PrintMinHashKinds(results, kinds, o.kind_thresholds);
  if (o.worst > 0) PrintWorst(results, kinds, o.worst);
  return 0;
}
