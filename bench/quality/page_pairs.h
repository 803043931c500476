// page_pairs.h: the page pairs the near-duplicate quality bench
// (simhash_quality.cc) measures: the corpus of real pages it draws from,
// and each kind of pair — an edit of one page (word substitutions,
// insertions, deletions, truncations, a changed footer, a prepended
// preamble, ...) or two distinct pages that look alike (one template, one
// module family, shared chrome, two products that differ in one
// attribute). Every draw comes from a fixed-seed Rng, so a seed gives the
// same pairs on every machine.
//
// Example:
//   Corpus corpus = ...;  // pages and their families (simhash_quality.cc)
//   Rng rng(1);
//   for (const Kind& kind : Kinds()) {
//     PairText pair;
//     if (kind.make(corpus, kind.name, rng, &pair)) Measure(pair.a, pair.b);
//   }
#ifndef DEDUPD_BENCH_QUALITY_PAGE_PAIRS_H_
#define DEDUPD_BENCH_QUALITY_PAGE_PAIRS_H_

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"

namespace dedupd::bench::quality {

using Paragraphs = std::vector<std::vector<std::string>>;

struct Page {
  std::string name;       // file name
  Paragraphs paragraphs;  // words of each paragraph
  size_t words = 0;
  std::string family;  // pages of one template share it (see FamilyOf)
  std::string title;   // first paragraph
  // The first word names a dotted module ("email.parser", "os.path"): a
  // Python module reference page.
  bool module = false;
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

// Words splits `text` on ASCII whitespace.
std::vector<std::string> Words(absl::string_view text);
// Join: the paragraphs' words, one space between words, a blank line
// between paragraphs.
std::string Join(const Paragraphs& ps);
// FamilyOf: the template a page comes from (see page_pairs.cc).
std::string FamilyOf(const Paragraphs& ps);

struct Corpus {
  const std::vector<Page>* pages;
  std::vector<std::vector<size_t>> families;  // page indexes, >= 2 per family
  // Module pages (Page::module) of one family ("email.parser",
  // "email.message", ...), >= 2 per family.
  std::vector<std::vector<size_t>> module_families;
  // The product template's help section (ProductPage): the first
  // kTemplateFaqWords words of the middle page of the corpus.
  std::vector<std::string> template_faq;
};

// The words of the product template's help section (Corpus::template_faq).
inline constexpr size_t kTemplateFaqWords = 400;

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
  // Added with the MinHash measurement: left out of the "quality" and
  // "distance" lines, so that those stay comparable with earlier runs.
  bool added = false;
};

// Every kind of pair, in the order the bench draws them (the kinds added
// with the MinHash measurement last, so the earlier kinds' pairs stay the
// same for a seed).
std::vector<Kind> Kinds();

}  // namespace dedupd::bench::quality

#endif  // DEDUPD_BENCH_QUALITY_PAGE_PAIRS_H_
