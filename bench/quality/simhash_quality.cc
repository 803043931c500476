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
// near when HammingDistance(a, b) <= k. Output, one fixed-format line each:
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
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "bench/corpus/read_pages.h"
#include "bench/quality/sorted_sets.h"
#include "core/text/simhash.h"
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
ABSL_FLAG(bool, tiny, false, "CI size: --pairs_per_kind=10 (numbers mean nothing)");

namespace {

constexpr double kNearJaccard = 0.8;
constexpr double kFarJaccard = 0.5;
const double kPi = std::acos(-1.0);

// A 20-times pasted license is how a boilerplate shingle gets a large count.
constexpr int kLicenseRepeats = 20;

// The Zero-Clause BSD license, as python3-doc shows it (license.html).
constexpr absl::string_view kLicense =
    "Permission to use, copy, modify, and/or distribute this software for "
    "any purpose with or without fee is hereby granted. THE SOFTWARE IS "
    "PROVIDED \"AS IS\" AND THE AUTHOR DISCLAIMS ALL WARRANTIES WITH REGARD "
    "TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF MERCHANTABILITY AND "
    "FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR ANY SPECIAL, DIRECT, "
    "INDIRECT, OR CONSEQUENTIAL DAMAGES OR ANY DAMAGES WHATSOEVER RESULTING "
    "FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN ACTION OF CONTRACT, "
    "NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF OR IN CONNECTION "
    "WITH THE USE OR PERFORMANCE OF THIS SOFTWARE.";

using Paragraphs = std::vector<std::vector<std::string>>;

struct Page {
  std::string name;       // file name
  Paragraphs paragraphs;  // words of each paragraph
  size_t words = 0;
  std::string family;  // pages of one template share it (see FamilyOf)
  std::string title;   // first paragraph
};

// Rng: a fixed-seed generator whose draws do not depend on the standard
// library's distributions (those differ between implementations).
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  // Uniform returns a value in [0, n). REQUIRES: n > 0.
  size_t Uniform(size_t n) { return static_cast<size_t>(gen_() % n); }
  template <typename T>
  void Shuffle(std::vector<T>* v) {
    for (size_t i = v->size(); i > 1; --i) std::swap((*v)[i - 1], (*v)[Uniform(i)]);
  }

 private:
  std::mt19937_64 gen_;
};

std::vector<std::string> Words(absl::string_view text) {
  std::vector<std::string> out;
  for (absl::string_view w :
       absl::StrSplit(text, absl::ByAnyChar(" \t\r\n\f\v"), absl::SkipEmpty())) {
    out.emplace_back(w);
  }
  return out;
}

std::string Join(const Paragraphs& ps) {
  std::string out;
  for (const std::vector<std::string>& p : ps) {
    if (p.empty()) continue;
    if (!out.empty()) out += "\n\n";
    out += absl::StrJoin(p, " ");
  }
  return out;
}

// FamilyOf: the template a page comes from, guessed from its first word up
// to the first '.', lowercased. PostgreSQL reference pages start with the
// command ("ALTER INDEX" -> "alter", "CREATE TABLE" -> "create"), chapter
// sections with their number ("5.1. Table Basics" -> "5"), appendix F pages
// with "F.12." -> "f"; Python module pages with the module ("email.parser"
// -> "email", "os.path" -> "os"), tutorial chapters with their number.
std::string FamilyOf(const Paragraphs& ps) {
  if (ps.empty() || ps[0].empty()) return "";
  std::string w = absl::AsciiStrToLower(ps[0][0]);
  size_t cut = w.find_first_of(".(");
  if (cut != std::string::npos && cut > 0) w.resize(cut);
  return w;
}

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
    pages->push_back(std::move(p));
  }
  return true;
}

// --- pair kinds ----------------------------------------------------------

// Context a kind's generator draws from.
struct Corpus {
  const std::vector<Page>* pages;
  std::vector<std::vector<size_t>> families;  // page indexes, >= 2 per family
};

const std::string& RandomWord(const Corpus& c, Rng& rng) {
  for (;;) {
    const Page& p = (*c.pages)[rng.Uniform(c.pages->size())];
    const std::vector<std::string>& para = p.paragraphs[rng.Uniform(p.paragraphs.size())];
    if (!para.empty()) return para[rng.Uniform(para.size())];
  }
}

// Flat word positions of a page: (paragraph, word) for each word.
std::vector<std::pair<size_t, size_t>> Positions(const Paragraphs& ps) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < ps.size(); ++i) {
    for (size_t j = 0; j < ps[i].size(); ++j) out.emplace_back(i, j);
  }
  return out;
}

// Count of words an edit of `fraction` touches: at least one.
size_t EditCount(size_t words, double fraction) {
  if (fraction <= 0) return 1;
  return std::max<size_t>(1, static_cast<size_t>(std::llround(words * fraction)));
}

// Picks `n` distinct positions, in ascending order.
std::vector<std::pair<size_t, size_t>> PickPositions(const Paragraphs& ps, size_t n, Rng& rng) {
  std::vector<std::pair<size_t, size_t>> pos = Positions(ps);
  n = std::min(n, pos.size());
  for (size_t i = 0; i < n; ++i) std::swap(pos[i], pos[i + rng.Uniform(pos.size() - i)]);
  pos.resize(n);
  std::sort(pos.begin(), pos.end());
  return pos;
}

Paragraphs Substitute(const Corpus& c, const Paragraphs& ps, double fraction, Rng& rng) {
  Paragraphs out = ps;
  size_t words = Positions(ps).size();
  for (const auto& [i, j] : PickPositions(ps, EditCount(words, fraction), rng)) {
    out[i][j] = RandomWord(c, rng);
  }
  return out;
}

Paragraphs Insert(const Corpus& c, const Paragraphs& ps, double fraction, Rng& rng) {
  Paragraphs out = ps;
  size_t words = Positions(ps).size();
  std::vector<std::pair<size_t, size_t>> pos = PickPositions(ps, EditCount(words, fraction), rng);
  // Back to front, so earlier positions stay valid.
  for (auto it = pos.rbegin(); it != pos.rend(); ++it) {
    out[it->first].insert(out[it->first].begin() + it->second, RandomWord(c, rng));
  }
  return out;
}

Paragraphs Delete(const Paragraphs& ps, double fraction, Rng& rng) {
  Paragraphs out = ps;
  size_t words = Positions(ps).size();
  std::vector<std::pair<size_t, size_t>> pos = PickPositions(ps, EditCount(words, fraction), rng);
  for (auto it = pos.rbegin(); it != pos.rend(); ++it) {
    out[it->first].erase(out[it->first].begin() + it->second);
  }
  return out;
}

// InsertBlock inserts one new paragraph of fraction * words words, taken as
// a run from another page, between two paragraphs.
Paragraphs InsertBlock(const Corpus& c, const Paragraphs& ps, double fraction, Rng& rng) {
  size_t n = EditCount(Positions(ps).size(), fraction);
  std::vector<std::string> block;
  while (block.size() < n) {
    const Page& other = (*c.pages)[rng.Uniform(c.pages->size())];
    for (const std::vector<std::string>& p : other.paragraphs) {
      for (const std::string& w : p) {
        if (block.size() < n) block.push_back(w);
      }
    }
  }
  Paragraphs out = ps;
  out.insert(out.begin() + rng.Uniform(ps.size() + 1), std::move(block));
  return out;
}

// DeleteBlock deletes one run of fraction * words consecutive words.
Paragraphs DeleteBlock(const Paragraphs& ps, double fraction, Rng& rng) {
  std::vector<std::pair<size_t, size_t>> pos = Positions(ps);
  size_t n = std::min(EditCount(pos.size(), fraction), pos.size() - 1);
  size_t start = rng.Uniform(pos.size() - n + 1);
  Paragraphs out(ps.size());
  for (size_t k = 0; k < pos.size(); ++k) {
    if (k >= start && k < start + n) continue;
    out[pos[k].first].push_back(ps[pos[k].first][pos[k].second]);
  }
  return out;
}

Paragraphs Truncate(const Paragraphs& ps, double fraction) {
  std::vector<std::pair<size_t, size_t>> pos = Positions(ps);
  size_t keep = pos.size() - std::min(EditCount(pos.size(), fraction), pos.size() - 1);
  Paragraphs out(ps.size());
  for (size_t k = 0; k < keep; ++k) {
    out[pos[k].first].push_back(ps[pos[k].first][pos[k].second]);
  }
  return out;
}

Paragraphs WithLicense(const Paragraphs& ps, int repeats) {
  Paragraphs out = ps;
  std::vector<std::string> license = Words(kLicense);
  for (int i = 0; i < repeats; ++i) out.push_back(license);
  return out;
}

// Site chrome in the shape of python3-doc's Sphinx pages: a navigation bar
// naming the previous and next pages and a footer with version and date.
// Two calls with different draws differ in about 15 of about 90 words.
struct Chrome {
  std::vector<std::string> header, footer;
};

Chrome RandomChrome(const Corpus& c, Rng& rng) {
  static constexpr const char* kMonths[] = {"January",   "February", "March",    "April",
                                            "May",       "June",     "July",     "August",
                                            "September", "October",  "November", "December"};
  const std::string& prev = (*c.pages)[rng.Uniform(c.pages->size())].title;
  const std::string& next = (*c.pages)[rng.Uniform(c.pages->size())].title;
  const std::string version = absl::StrCat("3.11.", rng.Uniform(10));
  Chrome ch;
  ch.header =
      Words(absl::StrCat("Navigation index modules | next | previous | Python » ", version,
                         " Documentation » The Python Standard Library » Quick search | "
                         "Previous topic ",
                         prev, " Next topic ", next, " This Page Report a Bug Show Source"));
  ch.footer =
      Words(absl::StrCat("© Copyright 2001-", 2020 + rng.Uniform(7),
                         ", Python Software Foundation. This page is licensed under the Python "
                         "Software Foundation License Version 2. Examples, recipes, and other "
                         "code in the documentation are additionally licensed under the Zero "
                         "Clause BSD License. See History and License for more information. The "
                         "Python Software Foundation is a non-profit corporation. Please donate. "
                         "Last updated on ",
                         kMonths[rng.Uniform(12)], " ", 1 + rng.Uniform(28), ", 20",
                         20 + rng.Uniform(7), ". Found a bug? Created using Sphinx ",
                         1 + rng.Uniform(7), ".", rng.Uniform(5), ".", rng.Uniform(5), "."));
  return ch;
}

Paragraphs InChrome(const Paragraphs& ps, const Chrome& ch) {
  Paragraphs out;
  out.push_back(ch.header);
  out.insert(out.end(), ps.begin(), ps.end());
  out.push_back(ch.footer);
  return out;
}

struct PairText {
  std::string a, b;
  size_t words_a = 0;  // words of the source page(s): the smaller one
};

// A kind makes one pair from a random draw; false when it cannot (e.g. no
// family with two pages).
struct Kind {
  std::string name;
  bool negative;  // built from distinct pages
  bool (*make)(const Corpus&, const std::string& name, Rng&, PairText*);
};

const Page& RandomPage(const Corpus& c, Rng& rng) {
  return (*c.pages)[rng.Uniform(c.pages->size())];
}

// Parses the edit fraction from a kind name's suffix: "_1w" is one word,
// "_3pct" 3% of the words.
double FractionOf(const std::string& name) {
  if (absl::EndsWith(name, "_1w")) return 0;
  size_t us = name.rfind('_');
  return std::atof(name.c_str() + us + 1) / 100.0;
}

bool MakeEdit(const Corpus& c, const std::string& name, Rng& rng, PairText* out) {
  const Page& p = RandomPage(c, rng);
  const double f = FractionOf(name);
  Paragraphs b;
  if (absl::StartsWith(name, "sub_")) {
    b = Substitute(c, p.paragraphs, f, rng);
  } else if (absl::StartsWith(name, "ins_block_")) {
    b = InsertBlock(c, p.paragraphs, f, rng);
  } else if (absl::StartsWith(name, "del_block_")) {
    b = DeleteBlock(p.paragraphs, f, rng);
  } else if (absl::StartsWith(name, "ins_")) {
    b = Insert(c, p.paragraphs, f, rng);
  } else if (absl::StartsWith(name, "del_")) {
    b = Delete(p.paragraphs, f, rng);
  } else if (absl::StartsWith(name, "truncate_")) {
    b = Truncate(p.paragraphs, f);
  } else if (name == "reorder_paragraphs") {
    if (p.paragraphs.size() < 2) return false;
    b = p.paragraphs;
    Paragraphs orig = b;
    while (b == orig) rng.Shuffle(&b);
  } else if (name == "license_once") {
    b = WithLicense(p.paragraphs, 1);
  } else if (name == "license_x20") {
    b = WithLicense(p.paragraphs, kLicenseRepeats);
  } else if (name == "header_footer") {
    Chrome c1 = RandomChrome(c, rng);
    Chrome c2 = RandomChrome(c, rng);
    out->a = Join(InChrome(p.paragraphs, c1));
    out->b = Join(InChrome(p.paragraphs, c2));
    out->words_a = p.words;
    return true;
  } else {
    return false;
  }
  out->a = Join(p.paragraphs);
  out->b = Join(b);
  out->words_a = p.words;
  return true;
}

bool MakeNegative(const Corpus& c, const std::string& name, Rng& rng, PairText* out) {
  const Page* p;
  const Page* q;
  if (name == "same_family") {
    if (c.families.empty()) return false;
    const std::vector<size_t>& fam = c.families[rng.Uniform(c.families.size())];
    size_t i = rng.Uniform(fam.size());
    size_t j = (i + 1 + rng.Uniform(fam.size() - 1)) % fam.size();
    p = &(*c.pages)[fam[i]];
    q = &(*c.pages)[fam[j]];
  } else {
    if (c.pages->size() < 2) return false;
    size_t i = rng.Uniform(c.pages->size());
    size_t j = (i + 1 + rng.Uniform(c.pages->size() - 1)) % c.pages->size();
    p = &(*c.pages)[i];
    q = &(*c.pages)[j];
  }
  out->words_a = std::min(p->words, q->words);
  if (name == "shared_chrome") {
    Chrome ch = RandomChrome(c, rng);
    out->a = Join(InChrome(p->paragraphs, ch));
    out->b = Join(InChrome(q->paragraphs, ch));
  } else if (name == "license_x20_pair") {
    out->a = Join(WithLicense(p->paragraphs, kLicenseRepeats));
    out->b = Join(WithLicense(q->paragraphs, kLicenseRepeats));
  } else {  // same_family, random_pair
    out->a = Join(p->paragraphs);
    out->b = Join(q->paragraphs);
  }
  return true;
}

std::vector<Kind> Kinds() {
  std::vector<Kind> k;
  for (const char* op : {"sub", "ins", "del"}) {
    for (const char* amount : {"1w", "1pct", "3pct", "10pct"}) {
      k.push_back({absl::StrCat(op, "_", amount), false, MakeEdit});
    }
  }
  for (const char* name :
       {"ins_block_10pct", "del_block_10pct", "header_footer", "reorder_paragraphs",
        "truncate_5pct", "truncate_10pct", "truncate_20pct", "license_once", "license_x20"}) {
    k.push_back({name, false, MakeEdit});
  }
  for (const char* name : {"same_family", "shared_chrome", "license_x20_pair", "random_pair"}) {
    k.push_back({name, true, MakeNegative});
  }
  return k;
}

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
  Corpus corpus{&pages, {}};
  std::map<std::string, std::vector<size_t>> by_family;
  for (size_t i = 0; i < pages.size(); ++i) by_family[pages[i].family].push_back(i);
  for (auto& [name, idx] : by_family) {
    if (idx.size() >= 2) corpus.families.push_back(std::move(idx));
  }
  return corpus;
}

// MeasurePair returns the truth and SimHash's distance of pair `pt` of kind
// `kind`; nullopt when the normalizer rejects one of its texts.
std::optional<Result> MeasurePair(const Options& o, const dedupd::SimHasher& hasher, size_t kind,
                                  const PairText& pt) {
  absl::StatusOr<std::string> a = dedupd::NormalizeText(pt.a);
  absl::StatusOr<std::string> b = dedupd::NormalizeText(pt.b);
  if (!a.ok() || !b.ok()) return std::nullopt;
  std::vector<absl::string_view> sa = ShingleSet(*a, o.shingle_words);
  std::vector<absl::string_view> sb = ShingleSet(*b, o.shingle_words);
  size_t inter = dedupd::bench::SortedIntersectionSize(sa, sb);
  Result r;
  r.kind = kind;
  r.jaccard = static_cast<double>(inter) / (sa.size() + sb.size() - inter);
  double cos = inter / std::sqrt(static_cast<double>(sa.size()) * sb.size());
  r.hyperplane = 64.0 * std::acos(std::min(1.0, cos)) / kPi;
  r.distance = dedupd::HammingDistance(hasher.Fingerprint(*a), hasher.Fingerprint(*b));
  r.words = pt.words_a;
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
  std::vector<Result> results;
  for (size_t ki = 0; ki < kinds.size(); ++ki) {
    // One generator per kind: adding a kind does not change the others' pairs.
    Rng rng(o.seed * 1000003 + ki);
    for (int n = 0; n < o.pairs_per_kind; ++n) {
      PairText pt;
      if (!kinds[ki].make(corpus, kinds[ki].name, rng, &pt)) break;
      std::optional<Result> r = MeasurePair(o, hasher, ki, pt);
      if (!r.has_value()) {
        ++*normalize_errors;
        continue;
      }
      results.push_back(*std::move(r));
    }
  }
  return results;
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
  PrintQuality(results, o.max_k);
  PrintKinds(results, kinds, o.k);
  PrintDistances(results, o.k);
  if (o.worst > 0) PrintWorst(results, kinds, o.worst);
  return 0;
}
