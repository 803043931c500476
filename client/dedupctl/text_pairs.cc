#include "client/dedupctl/text_pairs.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/dedupctl/json_tree.h"
#include "common/status_macros.h"
#include "core/text/shingle_hashes.h"
#include "core/text/text_normalizer.h"

namespace dedupd::dedupctl {
namespace {

// UniqueShingles returns up to `max` distinct shingles of `text` (as their
// words) whose hashes are not in `other` (sorted). A shingle's hash is
// DistinctShingleHashes of its own words: a text of exactly k words is one
// k-word shingle, so this is the hash the whole text's set holds (and a
// text of fewer words than a shingle is one shingle of all of them).
std::vector<std::string> UniqueShingles(const TextProfile& text, const std::vector<uint64_t>& other,
                                        size_t max) {
  std::vector<std::string> out;
  if (max == 0) return out;
  const std::vector<absl::string_view> words =
      absl::StrSplit(text.normalized, ' ', absl::SkipEmpty());
  const size_t k = std::min(words.size(), static_cast<size_t>(text.shingle_words));
  absl::flat_hash_set<uint64_t> shown;
  for (size_t j = 0; j + k <= words.size() && out.size() < max; ++j) {
    // The words are views into `normalized`, one ' ' apart.
    const char* begin = words[j].data();
    const char* end = words[j + k - 1].data() + words[j + k - 1].size();
    const absl::string_view shingle(begin, static_cast<size_t>(end - begin));
    const uint64_t h = DistinctShingleHashes(shingle, text.shingle_words).distinct[0];
    if (std::binary_search(other.begin(), other.end(), h)) continue;
    if (!shown.insert(h).second) continue;
    out.emplace_back(shingle);
  }
  return out;
}

}  // namespace

absl::StatusOr<TextProfile> ProfileText(absl::string_view text, const SimHasher& simhasher,
                                        const MinHasher& minhasher) {
  TextProfile p;
  DEDUPD_ASSIGN_OR_RETURN(p.fingerprint, FingerprintText(text, simhasher, minhasher));
  DEDUPD_ASSIGN_OR_RETURN(p.normalized, NormalizeText(text));
  p.shingle_words = minhasher.options().shingle_words;
  const ShingleHashes s = DistinctShingleHashes(p.normalized, p.shingle_words);
  p.shingles.assign(s.distinct.begin(), s.distinct.end());
  std::sort(p.shingles.begin(), p.shingles.end());
  return p;
}

PairComparison ComparePair(const TextProfile& a, const TextProfile& b,
                           const CompareSettings& settings) {
  PairComparison c;
  c.exact_duplicate = a.fingerprint.sha256 == b.fingerprint.sha256;
  c.hamming_distance = HammingDistance(a.fingerprint.simhash, b.fingerprint.simhash);
  c.estimated_jaccard = EstimateJaccard(*a.fingerprint.minhash, *b.fingerprint.minhash);
  std::vector<uint64_t> shared;
  std::set_intersection(a.shingles.begin(), a.shingles.end(), b.shingles.begin(), b.shingles.end(),
                        std::back_inserter(shared));
  c.shared_shingles = shared.size();
  c.only_in_a_count = a.shingles.size() - shared.size();
  c.only_in_b_count = b.shingles.size() - shared.size();
  const size_t union_size = a.shingles.size() + b.shingles.size() - shared.size();
  // A normalized text has at least one word, so at least one shingle.
  c.exact_jaccard = union_size == 0 ? 1.0 : static_cast<double>(shared.size()) / union_size;
  c.jaccard_matched = c.estimated_jaccard >= settings.min_jaccard;
  c.hamming_matched = c.hamming_distance <= static_cast<int>(settings.max_hamming_distance);
  c.only_in_a = UniqueShingles(a, b.shingles, settings.examples);
  c.only_in_b = UniqueShingles(b, a.shingles, settings.examples);
  return c;
}

absl::string_view Verdict(const PairComparison& c) {
  if (c.exact_duplicate) return "EXACT_DUPLICATE";
  if (c.jaccard_matched || c.hamming_matched) return "NEAR_DUPLICATE";
  return "DIFFERENT";
}

std::vector<absl::string_view> MatchedBy(const PairComparison& c) {
  std::vector<absl::string_view> out;
  if (c.jaccard_matched) out.push_back("jaccard");
  if (c.hamming_matched) out.push_back("hamming");
  return out;
}

absl::Status ParseDocLine(absl::string_view line, DocLine* doc) {
  DEDUPD_ASSIGN_OR_RETURN(const JsonValue value, ParseInputJson(line));
  if (value.type != JsonValue::Type::kObject) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a document line must be an object {\"id\", \"text\"}, not ", JsonKindName(value)));
  }
  DEDUPD_RETURN_IF_ERROR(StringMember(value, "id", "id", true, &doc->id));
  if (doc->id.empty()) return absl::InvalidArgumentError("\"id\" is empty");
  return StringMember(value, "text", "text", true, &doc->text);
}

absl::Status ParsePairLine(absl::string_view line, PairLine* pair) {
  DEDUPD_ASSIGN_OR_RETURN(const JsonValue value, ParseInputJson(line));
  if (value.type != JsonValue::Type::kObject) {
    return absl::InvalidArgumentError(
        absl::StrCat("a pair line must be an object {\"a\", \"b\"}, not ", JsonKindName(value)));
  }
  DEDUPD_RETURN_IF_ERROR(StringMember(value, "a", "a", true, &pair->a));
  DEDUPD_RETURN_IF_ERROR(StringMember(value, "b", "b", true, &pair->b));
  pair->label.reset();
  if (const JsonValue* label = Member(value, "label")) {
    if (label->type == JsonValue::Type::kBool) {
      pair->label = label->boolean;
    } else if (label->type == JsonValue::Type::kString && label->string == "duplicate") {
      pair->label = true;
    } else if (label->type == JsonValue::Type::kString && label->string == "different") {
      pair->label = false;
    } else {
      return absl::InvalidArgumentError(
          "\"label\" must be \"duplicate\", \"different\", true or false");
    }
  }
  return absl::OkStatus();
}

bool NextJsonLine(LineReader* reader, std::string* line, bool* too_long) {
  do {
    *too_long = false;
    if (!reader->ReadLine(line, too_long)) return false;
  } while (!*too_long && IsBlank(*line));
  return true;
}

absl::Status LoadDocs(const std::string& path, std::vector<DocLine>* docs,
                      const std::function<void(size_t, absl::string_view)>& on_error) {
  InputFile file;
  DEDUPD_RETURN_IF_ERROR(file.Open(path));
  LineReader reader(file.fd(), kMaxTextLineBytes);
  absl::flat_hash_set<std::string> ids;
  std::string line;
  bool too_long = false;
  while (NextJsonLine(&reader, &line, &too_long)) {
    DocLine doc;
    absl::Status s =
        too_long
            ? absl::InvalidArgumentError(absl::StrCat("longer than ", kMaxTextLineBytes, " bytes"))
            : ParseDocLine(line, &doc);
    if (s.ok() && !ids.insert(doc.id).second) {
      s = absl::InvalidArgumentError(
          absl::StrCat("id \"", doc.id, "\" is already used by an earlier line"));
    }
    if (!s.ok()) {
      on_error(reader.line_number(), s.message());
      continue;
    }
    docs->push_back(std::move(doc));
  }
  return reader.status();
}

}  // namespace dedupd::dedupctl
