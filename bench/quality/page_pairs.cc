// page_pairs.cc: the pair generators of page_pairs.h.
#include "bench/quality/page_pairs.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dedupd::bench::quality {

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

namespace {

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

// A site-wide preamble of the kind many sites put above every page (a
// cookie and privacy notice); ~110 words.
constexpr absl::string_view kPreamble =
    "We use cookies and similar technologies to provide the best experience on our "
    "website, to analyse traffic and to personalise content. Some of these cookies are "
    "essential for the site to work, others help us understand how visitors use it. By "
    "clicking Accept all you agree to the storing of cookies on your device. You can "
    "change your preferences at any time in the cookie settings at the bottom of every "
    "page. For more information about the data we collect and how we use it, and about "
    "your rights under the General Data Protection Regulation, please read our privacy "
    "policy and our terms of use. Accept all. Reject non-essential. Cookie settings.";

Paragraphs WithPreamble(const Paragraphs& ps) {
  Paragraphs out;
  out.push_back(Words(kPreamble));
  out.insert(out.end(), ps.begin(), ps.end());
  return out;
}

// --- product pages: one template, many pages --------------------------------
//
// A product page of a shop's template: a breadcrumb and title, a table of
// ten attributes, a description of 0, 15, 40 or 80 words (a run of words of
// a corpus page), and ~590 words every product page repeats: shipping,
// returns, warranty and footer text (~190 words) and a help section
// (Corpus::template_faq, 400 words of one corpus page, fixed per run).
// Different products of the template share that text and the attribute
// names, so their Jaccard is ~0.6 with two long descriptions and reaches
// ~0.9 without; the seeds' warning ("legitimately different pages from one
// template can be merged by mistake"). Two pages of one product that
// differ in one attribute (a colour or size variant) are J ~ 0.97: near
// duplicates by shingles, different pages to a shop.

struct Product {
  std::string brand, noun, model, category, color, size, material, sku, price, weight, rating;
  std::vector<std::string> description;
};

constexpr const char* kBrands[] = {"Acorn",   "Boreal", "Cobalt",   "Dovetail", "Ember",
                                   "Fjord",   "Granit", "Harbor",   "Ionic",    "Juniper",
                                   "Kestrel", "Lumen",  "Meridian", "Nimbus",   "Orchard"};
constexpr const char* kNouns[] = {"Backpack",     "Kettle",       "Desk Lamp",    "Rain Jacket",
                                  "Headphones",   "Blender",      "Sneakers",     "Tent",
                                  "Watch",        "Office Chair", "Cookware Set", "Bicycle Helmet",
                                  "Water Bottle", "Duvet"};
constexpr const char* kCategories[] = {"Outdoor",     "Kitchen", "Home Office", "Clothing",
                                       "Electronics", "Sports",  "Bedroom"};
constexpr const char* kColors[] = {"Black",         "White", "Navy Blue", "Forest Green", "Red",
                                   "Charcoal Grey", "Sand",  "Orange",    "Purple",       "Teal"};
constexpr const char* kSizes[] = {"XS",  "S",        "M",    "L",    "XL",
                                  "XXL", "One Size", "20 L", "30 L", "1.5 L"};
constexpr const char* kMaterials[] = {"Recycled Polyester", "Stainless Steel", "Cotton",
                                      "Aluminium",          "Bamboo",          "Merino Wool",
                                      "ABS Plastic",        "Leather"};

template <size_t N>
const char* Pick(const char* const (&list)[N], Rng& rng) {
  return list[rng.Uniform(N)];
}

Product RandomProduct(const Corpus& c, Rng& rng) {
  Product p;
  p.brand = Pick(kBrands, rng);
  p.noun = Pick(kNouns, rng);
  p.model = absl::StrCat(std::string(1, static_cast<char>('A' + rng.Uniform(26))),
                         100 + rng.Uniform(900));
  p.category = Pick(kCategories, rng);
  p.color = Pick(kColors, rng);
  p.size = Pick(kSizes, rng);
  p.material = Pick(kMaterials, rng);
  p.sku = absl::StrCat("SKU-", 100000 + rng.Uniform(900000));
  p.price = absl::StrCat("$", 5 + rng.Uniform(400), ".", 10 + rng.Uniform(90));
  p.weight = absl::StrCat(50 + rng.Uniform(5000), " g");
  p.rating = absl::StrCat(1 + rng.Uniform(4), ".", rng.Uniform(10), " out of 5 stars (",
                          rng.Uniform(2000), " reviews)");
  static constexpr size_t kDescriptionWords[] = {0, 15, 40, 80};
  const size_t n = kDescriptionWords[rng.Uniform(4)];
  if (n > 0) {
    const Page& src = (*c.pages)[rng.Uniform(c.pages->size())];
    std::vector<std::string> all;
    for (const std::vector<std::string>& para : src.paragraphs) {
      all.insert(all.end(), para.begin(), para.end());
    }
    const size_t start = all.size() > n ? rng.Uniform(all.size() - n) : 0;
    for (size_t i = start; i < all.size() && p.description.size() < n; ++i) {
      p.description.push_back(all[i]);
    }
  }
  return p;
}

// OneAttributeVariant returns `p` with one of colour, size, material or
// price changed to a different value.
Product OneAttributeVariant(const Product& p, Rng& rng) {
  Product q = p;
  switch (rng.Uniform(4)) {
    case 0:
      while (q.color == p.color) q.color = Pick(kColors, rng);
      break;
    case 1:
      while (q.size == p.size) q.size = Pick(kSizes, rng);
      break;
    case 2:
      while (q.material == p.material) q.material = Pick(kMaterials, rng);
      break;
    default:
      while (q.price == p.price) {
        q.price = absl::StrCat("$", 5 + rng.Uniform(400), ".", 10 + rng.Uniform(90));
      }
      break;
  }
  return q;
}

Paragraphs ProductPage(const Corpus& c, const Product& p) {
  const std::string name = absl::StrCat(p.brand, " ", p.noun, " ", p.model);
  Paragraphs out;
  out.push_back(Words(absl::StrCat("Home › ", p.category, " › ", p.brand)));
  out.push_back(Words(absl::StrCat(name, " - ", p.color, ", ", p.size)));
  out.push_back(Words(absl::StrCat(p.rating, " Price: ", p.price,
                                   ". In stock. Free delivery in 3-5 working days.")));
  out.push_back(Words(absl::StrCat(
      "Specifications Brand: ", p.brand, " Model: ", p.model, " Colour: ", p.color,
      " Size: ", p.size, " Material: ", p.material, " Weight: ", p.weight, " Item number: ", p.sku,
      " Category: ", p.category, " Country of origin: see label Warranty: 2 years")));
  if (!p.description.empty()) {
    std::vector<std::string> d = Words("Product description");
    d.insert(d.end(), p.description.begin(), p.description.end());
    out.push_back(std::move(d));
  }
  out.push_back(
      Words("Shipping and returns. Orders placed before 2 pm on a working day are dispatched the "
            "same day. Standard delivery is free on orders over $50; express delivery is available "
            "at checkout. You can return any item within 30 days of delivery for a full refund, "
            "provided it is unused and in its original packaging. Start a return from your account "
            "or contact customer service. Refunds are issued to the original payment method within "
            "5 working days of receiving the return."));
  out.push_back(Words(
      "Warranty. Every product we sell is covered by a two-year warranty against defects in "
      "materials and workmanship. The warranty does not cover normal wear and tear, misuse or "
      "accidental damage. To make a claim, keep your proof of purchase and contact us with "
      "your order number and a short description of the problem."));
  if (!c.template_faq.empty()) {
    std::vector<std::string> faq = Words("Frequently asked questions");
    faq.insert(faq.end(), c.template_faq.begin(), c.template_faq.end());
    out.push_back(std::move(faq));
  }
  out.push_back(
      Words("Customer reviews. Write a review. Questions and answers. Ask a question about this "
            "product. Customers who viewed this item also viewed. Recently viewed items."));
  out.push_back(
      Words("About us Careers Press Sustainability Help centre Track your order Delivery Returns "
            "Payment methods Gift cards Sign up for our newsletter and get 10% off your first "
            "order. © 2024 Example Shop Ltd. All rights reserved. Terms and conditions Privacy "
            "policy Cookie settings Imprint"));
  return out;
}

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
  } else if (name == "footer_changed") {
    // The page's footer replaced by another site's (~55 words each): a
    // redesign, or a mirror with its own footer.
    Paragraphs pa = p.paragraphs;
    pa.push_back(RandomChrome(c, rng).footer);
    Paragraphs pb = p.paragraphs;
    pb.push_back(Words(absl::StrCat(
        "Mirrored from the original documentation on ", 1 + rng.Uniform(28), " ", "March 20",
        20 + rng.Uniform(7),
        ". This mirror is provided as a courtesy and may lag behind the upstream site. "
        "Report problems with the mirror, not with the content, to the mirror's operators. "
        "Hosted by Example Networks. Contact Imprint Privacy Accessibility Sitemap")));
    out->a = Join(pa);
    out->b = Join(pb);
    out->words_a = p.words;
    return true;
  } else if (name == "preamble") {
    b = WithPreamble(p.paragraphs);
  } else {
    return false;
  }
  out->a = Join(p.paragraphs);
  out->b = Join(b);
  out->words_a = p.words;
  return true;
}

bool MakeNegative(const Corpus& c, const std::string& name, Rng& rng, PairText* out) {
  if (name == "template_pair" || name == "one_attribute") {
    const Product pa = RandomProduct(c, rng);
    const Product pb =
        name == "one_attribute" ? OneAttributeVariant(pa, rng) : RandomProduct(c, rng);
    const Paragraphs a = ProductPage(c, pa);
    out->a = Join(a);
    out->b = Join(ProductPage(c, pb));
    out->words_a = Positions(a).size();
    return true;
  }
  const Page* p;
  const Page* q;
  if (name == "module_family") {
    if (c.module_families.empty()) return false;
    const std::vector<size_t>& fam = c.module_families[rng.Uniform(c.module_families.size())];
    size_t i = rng.Uniform(fam.size());
    size_t j = (i + 1 + rng.Uniform(fam.size() - 1)) % fam.size();
    p = &(*c.pages)[fam[i]];
    q = &(*c.pages)[fam[j]];
  } else if (name == "same_family") {
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
  } else if (name == "shared_preamble_pair") {
    out->a = Join(WithPreamble(p->paragraphs));
    out->b = Join(WithPreamble(q->paragraphs));
  } else if (name == "license_x20_pair") {
    out->a = Join(WithLicense(p->paragraphs, kLicenseRepeats));
    out->b = Join(WithLicense(q->paragraphs, kLicenseRepeats));
  } else {  // same_family, random_pair
    out->a = Join(p->paragraphs);
    out->b = Join(q->paragraphs);
  }
  return true;
}

}  // namespace

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
  // Added with MinHash; after the others, so their pairs stay the same.
  for (const char* name : {"sub_2pct", "sub_5pct", "footer_changed", "preamble"}) {
    k.push_back({name, false, MakeEdit, true});
  }
  for (const char* name :
       {"module_family", "template_pair", "one_attribute", "shared_preamble_pair"}) {
    k.push_back({name, true, MakeNegative, true});
  }
  return k;
}

}  // namespace dedupd::bench::quality
