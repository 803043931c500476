// text_pairs.h: what `dedupctl compare` and `dedupctl tune` share: the
// measures of one text (SHA-256, SimHash, MinHash, the exact shingle set),
// the comparison of two texts under a pair of thresholds, with examples of
// the shingles only one side has, and the JSON lines they read: documents
// {"id", "text"} and pairs {"a", "b", "label"}. Everything is computed
// with the server's own functions (FingerprintText, DistinctShingleHashes,
// EstimateJaccard, HammingDistance), so a verdict here is the one the
// server's measures give.
//
// Example:
//   const SimHasher simhasher;
//   const MinHasher minhasher;
//   absl::StatusOr<TextProfile> a = ProfileText("the quick brown fox jumps", simhasher, minhasher);
//   absl::StatusOr<TextProfile> b = ProfileText("the quick brown fox leaps", simhasher, minhasher);
//   PairComparison c = ComparePair(*a, *b, CompareSettings());
//   // c.exact_jaccard == 0.5 (2 of 4 distinct 3-word shingles shared);
//   // c.only_in_a == {"brown fox jumps"}, c.only_in_b == {"brown fox leaps"}
//
// Thread-safe: pure functions (per-thread scratch inside the hashers).
#ifndef DEDUPD_CLIENT_DEDUPCTL_TEXT_PAIRS_H_
#define DEDUPD_CLIENT_DEDUPCTL_TEXT_PAIRS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/dedupctl/line_io.h"
#include "core/text/content_fingerprint.h"
#include "core/text/minhash.h"
#include "core/text/simhash.h"

namespace dedupd::dedupctl {

// The near-duplicate settings `compare` judges a pair by.
struct CompareSettings {
  // A pair is near when EstimateJaccard of the MinHash signatures is at
  // least this. REQUIRES: 0 < min_jaccard <= 1. Default: 0.8, the default
  // the server will use for `min_jaccard` (docs/minhash.md).
  double min_jaccard = 0.8;
  // ... or when the SimHash Hamming distance is at most this (0..64).
  // Default: 3, the server's default `max_hamming_distance`.
  uint32_t max_hamming_distance = 3;
  // Shingles shown from each side's unique ones. Default: 5.
  size_t examples = 5;
};

// The measures of one text.
struct TextProfile {
  // FingerprintText(text, simhasher, minhasher): SHA-256, SimHash, words
  // and the MinHash signature (always set).
  ContentFingerprint fingerprint;
  // NormalizeText(text): the words the shingles are made of.
  std::string normalized;
  // The distinct shingle hashes (DistinctShingleHashes(normalized,
  // shingle_words)), sorted ascending, for exact Jaccard.
  std::vector<uint64_t> shingles;
  // Words per shingle (the hashers' shingle_words).
  int shingle_words = 3;
};

// ProfileText computes the measures of `text`. Errors: those of
// NormalizeText (InvalidArgument: invalid UTF-8, a NUL byte, empty text).
// REQUIRES: both hashers use the same shingle_words.
absl::StatusOr<TextProfile> ProfileText(absl::string_view text, const SimHasher& simhasher,
                                        const MinHasher& minhasher);

// The comparison of texts a and b.
struct PairComparison {
  bool exact_duplicate = false;  // equal SHA-256 of the normalized texts
  int hamming_distance = 0;      // SimHash, 0..64
  double estimated_jaccard = 0;  // EstimateJaccard of the signatures
  double exact_jaccard = 0;      // |A ∩ B| / |A ∪ B| of the shingle hash sets
  size_t shared_shingles = 0;    // |A ∩ B|
  size_t only_in_a_count = 0;    // |A \ B|
  size_t only_in_b_count = 0;    // |B \ A|
  // Whether each measure reaches its threshold.
  bool jaccard_matched = false;  // estimated_jaccard >= min_jaccard
  bool hamming_matched = false;  // hamming_distance <= max_hamming_distance
  // Up to `examples` shingles of a not in b (and of b not in a), as their
  // normalized words, in order of first occurrence in the text.
  std::vector<std::string> only_in_a;
  std::vector<std::string> only_in_b;
};

// ComparePair compares two profiles. Cost: O(shingles) for the exact
// Jaccard, plus one shingle hash per word position until `examples`
// unique shingles are found on each side.
PairComparison ComparePair(const TextProfile& a, const TextProfile& b,
                           const CompareSettings& settings);

// Verdict: "EXACT_DUPLICATE" when the SHA-256 are equal, else
// "NEAR_DUPLICATE" when a measure matched, else "DIFFERENT".
absl::string_view Verdict(const PairComparison& c);

// MatchedBy: the names of the measures that matched, "jaccard" then
// "hamming" (an exact duplicate matches both).
std::vector<absl::string_view> MatchedBy(const PairComparison& c);

// One document of a --docs file.
struct DocLine {
  std::string id;
  std::string text;
};

// ParseDocLine reads `{"id": "...", "text": "..."}` (both strings,
// required, id non-empty; other members ignored). Returns InvalidArgument
// saying what is wrong.
absl::Status ParseDocLine(absl::string_view line, DocLine* doc);

// One pair of a pairs file: texts, or ids into a --docs file.
struct PairLine {
  std::string a;
  std::string b;
  // "label": "duplicate" or true -> true; "different" or false -> false.
  std::optional<bool> label;
};

// ParsePairLine reads `{"a": "...", "b": "...", "label": ...}` ("a", "b"
// strings, required; "label" optional: "duplicate", "different", true or
// false; null counts as absent; other members ignored). Returns
// InvalidArgument saying what is wrong.
absl::Status ParsePairLine(absl::string_view line, PairLine* pair);

// The longest line of a --docs or --pairs file (and the largest text file
// of `compare FILE_A FILE_B`): content check's limit.
constexpr size_t kMaxTextLineBytes = 16 << 20;

// NextJsonLine reads the next line of `reader` that is not blank into
// `*line` (`*too_long` when it held more than the reader's limit). Returns
// false at the end of the input or on a read error (reader->status()).
bool NextJsonLine(LineReader* reader, std::string* line, bool* too_long);

// LoadDocs reads every line of `path` ("-": standard input) as a DocLine,
// appending the good ones to `*docs` in input order. A bad line (invalid
// JSON, a missing member, an id seen on an earlier line, too long) is
// passed to `on_error(line_number, message)` and skipped. Returns the
// open or read error (FailedPrecondition "open PATH: ...", or the
// reader's).
absl::Status LoadDocs(const std::string& path, std::vector<DocLine>* docs,
                      const std::function<void(size_t, absl::string_view)>& on_error);

}  // namespace dedupd::dedupctl

#endif  // DEDUPD_CLIENT_DEDUPCTL_TEXT_PAIRS_H_
