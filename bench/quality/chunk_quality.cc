// chunk_quality: how well 64-bit SimHash at Hamming distance <= k finds
// near-duplicate CHUNKS (CheckChunks: ~500-byte RAG chunks and the
// short chunks chunkers also emit), by chunk length, measured against the
// exact answer on real text; and the "shared preamble" scenario (N pages behind one common
// preamble).
//
// Quality mode (default). Every page of --pages_dir (one page per file,
// bench/corpus/make_text_corpus.py) is cut by bench/corpus/chunker.h into chunks of at most
// --chunk_bytes; each chunk is normalized (NormalizeText) and identical
// normalized chunks are counted once (they are exact duplicates: SHA-256
// finds them). Among the distinct chunks, every pair within Hamming distance
// --max_k of each other is found by a SimHashIndex built for --max_k, which
// returns exactly what an all-pairs scan would. For each pair the truth is
// the exact Jaccard similarity J of the sets of 3-word shingles of the two
// normalized texts (of their word sets when a text has fewer than 3 words):
// J >= 0.8 is "near", J < 0.5 "far" (a false near duplicate), in between
// "between", the thresholds of the page-level evaluation (simhash_quality).
// Recall comes from controlled edits: up to --edits_per_bucket distinct
// chunks per length bucket, drawn with --seed, each with one word
// substituted, one inserted and one deleted (a word of another chunk).
// A pair's bucket is the word count of its shorter text. Output, one
// fixed-format line each:
//
//   # chunk_quality pages=<n> chunk_bytes=<b> chunks=<n> distinct=<n> ...
//   bucket words=<range> distinct=<n> shingles_p50=<n> popcount_mean=<x>
//   quality words=<range> k=<k> pairs=<n> near=<n> between=<n> far=<n> precision=<x> unrelated=<n>
//   unrelated_per_pair=<x> edits=<n> edits_near=<n> recall=<x> edits_found=<x>
//       (one per bucket and k = 0..max_k, then words=all)
//   rule k=<k> words=<range> effective_k=<d> pairs=<n> near=<n> far=<n> precision=<x> recall=<x>
//   edits_found=<x>
//       (ChunkNearDistance applied to the shorter text, at --k)
//
//   minhash words=<range> min_jaccard=<t> pairs=<n> near=<n> between=<n> far=<n> precision=<x>
//   edits=<n> edits_near=<n> recall=<x> recall_own=<x> recall_plus=<x> fn_lsh=<n> fn_verify=<n>
//   edits_found=<x>
//       (MinHash + LSH + verification, as the store does it, per bucket and all, for
//       min_jaccard = 0.50..0.95; over every edit kind)
//   simhash_edits words=<range> k=<k> edits=<n> edits_near=<n> recall=<x> recall_j85=<x> ...
//       (SimHash at k = 3..6 over the same edits)
//   ckind <kind> words=<range> edits=<n> edits_near=<n> jaccard_p50=<x> simhash_k3=<x> ...
//   minhash_0.80=<x> minhash_0.85=<x> minhash_0.90=<x>
//       (recall of the edits with J >= 0.8, per edit kind and bucket)
//
// The MinHash lines count every pair of distinct chunks that shares a band
// key of an LshIndex of all of them and whose EstimateJaccard reaches t;
// the edits are the three one-word edits above plus, from a second seeded
// stream per bucket (so the first three stay the same), 5% of the words
// substituted, the last 10% cut, the last 10% replaced by another chunk's
// words (a changed footer) and the first 10% dropped with 10% of another
// chunk appended (a chunk boundary moved by re-chunking); each "N%" touches
// at least one word. The "quality" and "rule" lines use the one-word edits
// only, as before. recall_own: edits with J >= t found; recall_plus: J >=
// t + 0.05; fn_lsh / fn_verify: edits with J >= 0.8 missed because no band
// key matched / the estimate was below t.
//
// --verify=exact replays what the chunk store does: an LSH candidate is
// verified by the exact Jaccard of the two chunks' sets of distinct
// shingle hashes (core/text/shingle_set.h, bench/quality/shingle_set32.h)
// when both have at most --exact_max_shingles shingles, else by
// EstimateJaccard. Its "minhash" and
// "ckind" lines carry "verify=exact" after the setting (--verify=both: the
// estimate's lines, then these). Both add, before the "minhash" lines:
//
//   shingle_sets chunks=<all|first_cut> max_shingles=<K> within=<n> share=<x>
//   bytes_mean=<x> bytes_p50=<n> bytes_p99=<n>
//       (K = 64..512 and --exact_max_shingles: chunks with <= K shingles and
//       bytes per chunk of their sets, 4 a hash, 0 over K; first_cut: the
//       chunks of the first --chunk_bytes, the store's case)
//   exact_sets max_shingles=<K> chunks_with_set=<n> truncation_collisions=<n>
//   pairs_exact=<n> pairs_estimate=<n> pairs_mismatch=<n> pairs_mismatch_expected=<x>
//   edits_exact=<n> edits_mismatch=<n> edits_mismatch_expected=<x>
//       (truncation_collisions: sets smaller than their shingle count;
//       pairs_exact / _estimate: LSH candidates verified each way;
//       *_mismatch: pairs and edits of texts of >= 3 words whose set
//       Jaccard is not the truth J (hash collisions; the first 5 pairs to
//       stderr), *_expected: 2^-32 per pair of shingles. Texts of 1-2
//       words are one shingle to the hashes, a word set to the truth.)
//
// pairs: distinct-chunk pairs within distance k; precision = near / (near +
// far); unrelated: far pairs with J = 0 (no shared shingle) whose texts are
// both in the bucket, and unrelated_per_pair that count over all pairs of the
// bucket's distinct chunks: the rate of chance collisions, which times a
// store's size is the expected chance false matches per query (about 2e-15
// at k = 3 for uniform 64-bit fingerprints). popcount_mean is the mean
// number of 1 bits of the bucket's fingerprints: 32 when uniform; fewer for
// texts of an even number of shingles, where a tied bit sum gives 0 (two
// shingles: 16). recall = edits_near found within k / edits_near (edits that stay
// J >= 0.8); edits_found = all edits found within k / edits (a one-word edit
// of a 6-word heading is J < 0.8 but a human calls it a near duplicate).
// "nan" when the denominator is 0. --worst=N prints to stderr the N far
// pairs with the smallest distance.
//
// Preamble mode (--preamble_dir=DIR, DIR holding preamble.txt and
// page_*.txt): each page is ingested as preamble + blank line + page, in
// file-name order, at the library level: chunked, an exact match by
// SHA-256 of the normalized chunk, else a near match in a SimHashIndex at
// --k (without, then with, ChunkNearDistance), or, in the MinHash lines, an
// LshIndex (18 x 7) candidate whose EstimateJaccard reaches
// --preamble_min_jaccard (the best one), then stored. A chunk lies in
// the preamble, in the page ("content"), or across the boundary ("mixed").
//
//   preamble pages=<n> <k=<k> rule=<off|on>|measure=minhash min_jaccard=<t>> chunks=<n>
//   preamble_chunks=<n> preamble_dup=<n>
//   preamble_dup_of_first=<n> preamble_missed=<n> content_chunks=<n> content_exact=<n>
//   content_near=<n> content_near_wrong=<n> content_near_far=<n> mixed_chunks=<n> mixed_exact=<n>
//   mixed_near=<n> mixed_near_wrong=<n>
//
// preamble_* count the preamble chunks of pages 2..n; preamble_dup_of_first
// those reported as a duplicate of a preamble chunk of the first page.
// content_near_wrong: content chunks reported near whose J with the matched
// chunk is < 0.8 (content_near_far: < 0.5).
//
// Example:
//   build/bench/dedupd_chunk_quality --pages_dir=bench/corpus/pages
//   build/bench/dedupd_chunk_quality --preamble_dir=tests/testdata/preamble
//   build/bench/dedupd_chunk_quality --tiny --pages_dir=bench/corpus/sample_pages
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "bench/corpus/chunker.h"
#include "bench/corpus/read_pages.h"
#include "bench/quality/shingle_set32.h"
#include "core/index/lsh_index.h"
#include "core/index/simhash_index.h"
#include "core/text/chunk_near_rule.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "core/text/simhash.h"
#include "core/text/sorted_sets.h"
#include "core/text/text_normalizer.h"

ABSL_FLAG(std::string, pages_dir, "bench/corpus/pages",
          "directory of page texts (*.txt, one page per file, paragraphs "
          "separated by blank lines)");
ABSL_FLAG(int, max_pages, 0, "use only the first N pages in file-name order (0: all)");
ABSL_FLAG(
    std::vector<std::string>, chunk_bytes, std::vector<std::string>({"500", "200", "100", "50"}),
    "largest chunk, in bytes (bench/corpus/chunker.h); quality mode chunks every page once per "
    "value and pools the distinct chunks (the smaller sizes add the short chunks); the "
    "preamble mode uses the first value");
ABSL_FLAG(uint64_t, seed, 1, "seed of the controlled edits");
ABSL_FLAG(int, max_k, 6, "print quality lines for k = 0..max_k (at most 7)");
ABSL_FLAG(int, k, 3,
          "Hamming distance of the rule and preamble lines (the default of CheckChunks)");
ABSL_FLAG(int, edits_per_bucket, 1000,
          "distinct chunks per length bucket given the three one-word edits");
ABSL_FLAG(int, worst, 0, "print to stderr the N far pairs with the smallest distance");
ABSL_FLAG(std::string, preamble_dir, "",
          "run the shared-preamble scenario on DIR/preamble.txt and DIR/page_*.txt "
          "instead of the quality measurement");
ABSL_FLAG(std::vector<std::string>, preamble_min_jaccard,
          std::vector<std::string>({"0.8", "0.85", "0.9"}),
          "min_jaccard values of the preamble scenario's MinHash lines");
ABSL_FLAG(bool, tiny, false, "CI size: --edits_per_bucket=20 (numbers mean nothing)");
ABSL_FLAG(std::string, verify, "estimate",
          "how the minhash and ckind lines verify an LSH candidate: estimate (EstimateJaccard, "
          "what the store does), exact (exact Jaccard of the two chunks' 32-bit shingle-hash "
          "sets when both have at most --exact_max_shingles shingles, else the estimate), or "
          "both (the estimate's lines, then the exact ones)");
ABSL_FLAG(int, exact_max_shingles, 256,
          "--verify=exact: the most distinct shingles a chunk may have to keep its set");
ABSL_FLAG(int, exact_hash_shift, dedupd::kShingleSet32Shift,
          "--verify=exact: a set keeps bits shift..shift+31 of each shingle hash (0: the low 32 "
          "bits, which the MinHash signature's slots share; core/text/shingle_set.h)");

namespace {

constexpr double kNearJaccard = 0.8;
constexpr double kFarJaccard = 0.5;
constexpr int kShingleWords = 3;  // SimHasher's default, which CheckChunks uses

// Rng: a fixed-seed generator whose draws do not depend on the standard
// library's distributions (those differ between implementations).
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  // Uniform returns a value in [0, n). REQUIRES: n > 0.
  size_t Uniform(size_t n) { return static_cast<size_t>(gen_() % n); }

 private:
  std::mt19937_64 gen_;
};

// Words of a normalized text: NormalizeText leaves single ' ' between words.
size_t WordCount(absl::string_view normalized) {
  return static_cast<size_t>(std::count(normalized.begin(), normalized.end(), ' ')) + 1;
}

// The truth's feature set: sorted distinct 3-word shingles of a normalized
// text, or its distinct words when it has fewer than 3.
std::vector<absl::string_view> FeatureSet(absl::string_view text) {
  std::vector<absl::string_view> words = absl::StrSplit(text, ' ', absl::SkipEmpty());
  std::vector<absl::string_view> out;
  if (words.size() < static_cast<size_t>(kShingleWords)) {
    out = words;
  } else {
    for (size_t i = 0; i + kShingleWords <= words.size(); ++i) {
      const char* b = words[i].data();
      const char* e = words[i + kShingleWords - 1].data() + words[i + kShingleWords - 1].size();
      out.emplace_back(b, static_cast<size_t>(e - b));
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string Ratio(int64_t num, int64_t den) {
  if (den == 0) return "nan";
  return absl::StrFormat("%.3f", static_cast<double>(num) / den);
}

struct Bucket {
  size_t lo, hi;  // words in [lo, hi)
  const char* name;
};
constexpr Bucket kBuckets[] = {
    {0, 8, "1-7"}, {8, 16, "8-15"}, {16, 32, "16-31"}, {32, 64, "32-63"}, {64, SIZE_MAX, "64+"}};
constexpr size_t kNumBuckets = sizeof(kBuckets) / sizeof(kBuckets[0]);

size_t BucketOf(size_t words) {
  for (size_t b = 0; b < kNumBuckets; ++b) {
    if (words >= kBuckets[b].lo && words < kBuckets[b].hi) return b;
  }
  return kNumBuckets - 1;
}

// How the "minhash" and "ckind" lines verify an LSH candidate (--verify).
enum class Verify { kEstimate, kExact };

// VerifiedValue: the estimate, or under kExact the exact Jaccard if any
// (exact >= 0) plus 1e-9, so a J of exactly t passes t's grid value (17 *
// 0.05 is 0.8500000000000001; a store would compare integer counts).
double VerifiedValue(Verify v, double estimate, double exact) {
  return v == Verify::kExact && exact >= 0 ? exact + 1e-9 : estimate;
}

// What exact verification counted for the "exact_sets" line.
struct ExactStats {
  int64_t pairs_exact = 0, pairs_estimate = 0, pairs_mismatch = 0;
  int64_t edits_exact = 0, edits_mismatch = 0;
  // Sum of ExpectedFalseCommon over the *_mismatch populations.
  double pairs_expected = 0, edits_expected = 0;
};

// One distinct normalized chunk.
struct Chunk {
  std::string text;  // normalized
  size_t words = 0;
  uint64_t simhash = 0;
  dedupd::MinHashSignature minhash{};
  std::vector<absl::string_view> features;  // into `text`
  dedupd::bench::ExactSet set32;            // with --verify=exact only
  bool first_cut = false;                   // the first --chunk_bytes produces it
};

// Pairs of distinct chunks that MinHash + LSH finds near at one threshold,
// in one bucket (of the shorter text), by exact J.
struct PairCounts {
  int64_t pairs = 0, near = 0, between = 0, far = 0;
};

struct Pair {
  size_t words;       // of the shorter text
  size_t long_words;  // of the longer text
  int distance;
  double jaccard;
  uint32_t a, b;
};

struct Edit {
  size_t words;  // of the original chunk
  int distance;
  double jaccard;
  int kind = 0;  // index into kEditKinds
  // MinHash + LSH as the store does it: the two texts share a band key of
  // the 18 x 7 LshIndex; their EstimateJaccard.
  bool candidate = false;
  double estimate = 0;
  double exact = -1;  // ExactJaccard of the two texts' sets; -1: none
  bool MinHashNear(double t, Verify v = Verify::kEstimate) const {
    return candidate && VerifiedValue(v, estimate, exact) >= t;
  }
};

// The edits of a chunk: the first three (one word) since the SimHash
// bench; the others added with MinHash, drawn from a separate stream so
// the first three stay the same. "Npct" edits touch max(1, round(N% of
// the words)) words.
constexpr const char* kEditKinds[] = {
    "sub_1w",
    "ins_1w",
    "del_1w",
    "sub_5pct",
    "truncate_10pct",       // the last words dropped
    "tail_changed_10pct",   // the last words replaced by another chunk's (a changed footer)
    "boundary_shift_10pct"  // the first words dropped, another chunk's appended (re-chunking)
};
constexpr int kNumEditKinds = sizeof(kEditKinds) / sizeof(kEditKinds[0]);
constexpr int kOneWordEditKinds = 3;

// Counts of one (bucket, k) row.
struct Row {
  int64_t pairs = 0, near = 0, between = 0, far = 0;
  int64_t unrelated = 0;  // J == 0 and both texts in the row's bucket
  int64_t edits = 0, edits_near = 0, found_near = 0, found = 0;
};

std::string EditedText(const std::vector<absl::string_view>& words, int kind, size_t pos,
                       absl::string_view other) {
  std::vector<absl::string_view> out = words;
  switch (kind) {
    case 0:
      out[pos] = other;
      break;
    case 1:
      out.insert(out.begin() + pos, other);
      break;
    default:
      out.erase(out.begin() + pos);
      break;
  }
  return absl::StrJoin(out, " ");
}

// The --chunk_bytes values (validated in main).
std::vector<size_t> ChunkSizes() {
  std::vector<size_t> out;
  for (const std::string& s : absl::GetFlag(FLAGS_chunk_bytes)) {
    size_t v = 0;
    if (absl::SimpleAtoi(s, &v)) out.push_back(v);
  }
  return out;
}

// The quality mode's flags, read once (main has validated them).
struct QualityOptions {
  std::string pages_dir;
  std::vector<size_t> chunk_sizes;
  int max_pages = 0;  // 0: all
  int max_k = 0;
  int k = 0;
  int edits_per_bucket = 0;  // --tiny already applied
  uint64_t seed = 0;
  int worst = 0;
  std::vector<Verify> verify;     // in print order
  size_t exact_max_shingles = 0;  // under --verify=exact or both; 0: no exact sets
  int exact_hash_shift = 0;
};

QualityOptions QualityOptionsFromFlags() {
  QualityOptions o;
  o.pages_dir = absl::GetFlag(FLAGS_pages_dir);
  o.chunk_sizes = ChunkSizes();
  o.max_pages = absl::GetFlag(FLAGS_max_pages);
  o.max_k = absl::GetFlag(FLAGS_max_k);
  o.k = absl::GetFlag(FLAGS_k);
  o.edits_per_bucket = absl::GetFlag(FLAGS_tiny) ? 20 : absl::GetFlag(FLAGS_edits_per_bucket);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.worst = absl::GetFlag(FLAGS_worst);
  const std::string verify = absl::GetFlag(FLAGS_verify);
  if (verify != "exact") o.verify.push_back(Verify::kEstimate);
  if (verify != "estimate") {
    o.verify.push_back(Verify::kExact);
    o.exact_max_shingles = static_cast<size_t>(absl::GetFlag(FLAGS_exact_max_shingles));
    o.exact_hash_shift = absl::GetFlag(FLAGS_exact_hash_shift);
  }
  return o;
}

// The distinct chunks of the pages, and what loading them counted.
struct ChunkSet {
  std::deque<Chunk> chunks;  // deque: `features` point into `text`, which must not move
  size_t pages = 0;          // listed, unreadable ones included
  int64_t raw_chunks = 0, unreadable = 0, normalize_errors = 0;
};

// LoadChunks cuts every page of o.pages_dir at every chunk size into
// `corpus` (empty on entry), once per distinct normalized chunk. Returns
// false, after saying why on stderr, when the directory cannot be listed or
// gives fewer than 2 distinct chunks.
bool LoadChunks(const QualityOptions& o, const dedupd::SimHasher& hasher,
                const dedupd::MinHasher& minhasher, ChunkSet* corpus) {
  std::vector<std::string> paths;
  if (!dedupd::bench::ListPages(o.pages_dir, &paths)) {
    std::cerr << "chunk_quality: cannot list " << o.pages_dir << "\n";
    return false;
  }
  if (o.max_pages > 0 && paths.size() > static_cast<size_t>(o.max_pages)) {
    paths.resize(o.max_pages);
  }
  corpus->pages = paths.size();
  std::deque<Chunk>& chunks = corpus->chunks;
  absl::flat_hash_map<std::string, uint32_t> by_text;
  std::string normalized;
  for (const std::string& path : paths) {
    std::string page;
    if (!dedupd::bench::ReadFile(path, &page)) {
      ++corpus->unreadable;
      continue;
    }
    for (size_t si = 0; si < o.chunk_sizes.size(); ++si) {
      for (absl::string_view c : dedupd::bench::ChunkText(page, o.chunk_sizes[si])) {
        if (!dedupd::NormalizeTextInto(c, &normalized).ok()) {
          ++corpus->normalize_errors;
          continue;
        }
        ++corpus->raw_chunks;
        if (auto it = by_text.find(normalized); it != by_text.end()) {
          chunks[it->second].first_cut |= si == 0;
          continue;
        }
        by_text.emplace(normalized, static_cast<uint32_t>(chunks.size()));
        Chunk& ch = chunks.emplace_back();
        ch.first_cut = si == 0;
        if (o.exact_max_shingles > 0)
          ch.set32 = dedupd::bench::ExactSetOf(normalized, kShingleWords, o.exact_hash_shift);
        ch.text = normalized;
        ch.words = WordCount(ch.text);
        ch.simhash = hasher.Fingerprint(ch.text);
        ch.minhash = minhasher.Sign(ch.text);
        ch.features = FeatureSet(ch.text);
      }
    }
  }
  if (chunks.size() < 2) {
    std::cerr << "chunk_quality: " << o.pages_dir << " gives fewer than 2 distinct chunks\n";
    return false;
  }
  return true;
}

// FindPairs returns every pair of distinct chunks within Hamming distance
// max_k, exactly (SimHashIndex returns what a brute-force scan would), each
// once, in order of its first chunk.
std::vector<Pair> FindPairs(const std::deque<Chunk>& chunks, int max_k) {
  dedupd::SimHashIndex index(max_k);
  {
    std::vector<dedupd::SimHashIndex::Entry> entries;
    entries.reserve(chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i) {
      entries.push_back({chunks[i].simhash, static_cast<uint32_t>(i)});
    }
    index.BulkInsert(entries);
  }
  std::vector<Pair> pairs;
  for (size_t i = 0; i < chunks.size(); ++i) {
    for (const dedupd::SimHashIndex::Match& m : index.Query(chunks[i].simhash, max_k, SIZE_MAX)) {
      if (m.id <= i) continue;
      const Chunk& a = chunks[i];
      const Chunk& b = chunks[m.id];
      pairs.push_back({std::min(a.words, b.words), std::max(a.words, b.words), m.distance,
                       dedupd::SortedJaccard(a.features, b.features), static_cast<uint32_t>(i),
                       m.id});
    }
  }
  return pairs;
}

// The thresholds of the "minhash" lines: 0.50, 0.55, ..., 0.95.
std::vector<double> ThresholdGrid() {
  std::vector<double> out;
  for (int i = 10; i <= 19; ++i) out.push_back(i * 0.05);
  return out;
}

// CountMinHashPairs counts every pair of distinct chunks that shares a band
// key of the store's 18 x 7 LshIndex and whose EstimateJaccard (under
// kExact: VerifiedValue) reaches t: what the store would answer near at
// min_jaccard t. Returns counts[vi][ti][b] for verify[vi],
// ThresholdGrid()[ti] and bucket b (kNumBuckets: all); with
// max_shingles > 0 adds the candidate pairs to `stats`.
// Counted, not kept: chunks of one shingle (up to 3 words) have all 128
// slots equal, so two of them collide with probability 1/256 and there are
// millions of such pairs.
std::vector<std::vector<std::vector<PairCounts>>> CountMinHashPairs(
    const std::deque<Chunk>& chunks, const std::vector<Verify>& verify, size_t max_shingles,
    ExactStats* stats) {
  const std::vector<double> grid = ThresholdGrid();
  std::vector<std::vector<std::vector<PairCounts>>> counts(
      verify.size(),
      std::vector<std::vector<PairCounts>>(grid.size(), std::vector<PairCounts>(kNumBuckets + 1)));
  dedupd::LshIndex index;
  for (size_t i = 0; i < chunks.size(); ++i) {
    index.Insert(chunks[i].minhash, static_cast<uint32_t>(i));
  }
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < chunks.size(); ++i) {
    index.Query(chunks[i].minhash, &ids);
    for (uint32_t id : ids) {
      if (id <= i) continue;
      const Chunk& a = chunks[i];
      const Chunk& b = chunks[id];
      const double est = dedupd::EstimateJaccard(a.minhash, b.minhash);
      const double exact =
          max_shingles > 0 ? dedupd::bench::ExactJaccardWithin(a.set32, b.set32, max_shingles) : -1;
      double j = -1;  // the truth, computed when needed
      if (max_shingles > 0) {
        ++(exact >= 0 ? stats->pairs_exact : stats->pairs_estimate);
        if (exact >= 0 && std::min(a.words, b.words) >= static_cast<size_t>(kShingleWords)) {
          j = dedupd::SortedJaccard(a.features, b.features);
          stats->pairs_expected += dedupd::bench::ExpectedFalseCommon(a.set32, b.set32);
          if (exact != j && ++stats->pairs_mismatch <= 5) {
            std::cerr << absl::StrFormat("exact_mismatch jaccard=%.4f set=%.4f a=\"%s\" b=\"%s\"\n",
                                         j, exact, a.text.substr(0, 200), b.text.substr(0, 200));
          }
        }
      }
      for (size_t vi = 0; vi < verify.size(); ++vi) {
        const double v = VerifiedValue(verify[vi], est, exact);
        if (v < grid[0]) continue;
        if (j < 0) j = dedupd::SortedJaccard(a.features, b.features);
        for (size_t ti = 0; ti < grid.size() && grid[ti] <= v; ++ti) {
          for (size_t bk : {BucketOf(std::min(a.words, b.words)), kNumBuckets}) {
            PairCounts& c = counts[vi][ti][bk];
            ++c.pairs;
            ++(j >= kNearJaccard ? c.near : j < kFarJaccard ? c.far : c.between);
          }
        }
      }
    }
  }
  return counts;
}

// Up to n words of other chunks, from the start of random chunks.
std::vector<absl::string_view> OtherWords(const std::deque<Chunk>& chunks, size_t n, Rng& rng) {
  std::vector<absl::string_view> out;
  while (out.size() < n) {
    const Chunk& o = chunks[rng.Uniform(chunks.size())];
    for (absl::string_view w : absl::StrSplit(o.text, ' ')) {
      if (out.size() < n) out.push_back(w);
    }
  }
  return out;
}

// The text of edit kind `kind` >= kOneWordEditKinds of `words`; false when
// the chunk is too short for it (one word).
bool AddedEdit(const std::deque<Chunk>& chunks, const std::vector<absl::string_view>& words,
               int kind, Rng& rng, std::string* out) {
  const size_t w = words.size();
  const double fraction = kind == 3 ? 0.05 : 0.10;
  const size_t n = std::max<size_t>(1, static_cast<size_t>(std::llround(w * fraction)));
  std::vector<absl::string_view> e = words;
  if (kind == 3) {  // sub_5pct: n distinct positions
    std::vector<size_t> pos(w);
    for (size_t i = 0; i < w; ++i) pos[i] = i;
    for (size_t i = 0; i < std::min(n, w); ++i) {
      std::swap(pos[i], pos[i + rng.Uniform(w - i)]);
      e[pos[i]] = OtherWords(chunks, 1, rng)[0];
    }
  } else {
    if (w < 2 || n >= w) return false;
    e.resize(w - n);
    if (kind == 5) {  // tail_changed
      for (absl::string_view x : OtherWords(chunks, n, rng)) e.push_back(x);
    } else if (kind == 6) {  // boundary_shift
      e.assign(words.begin() + n, words.end());
      for (absl::string_view x : OtherWords(chunks, n, rng)) e.push_back(x);
    }
  }
  *out = absl::StrJoin(e, " ");
  return true;
}

// MeasureEdit returns the edit of `c` into `edited`: SimHash distance,
// exact Jaccard and MinHash's verdict (lsh: an empty scratch index); with
// max_shingles > 0 also ExactJaccard of the two sets (of bits hash_shift..
// hash_shift+31), counted in `stats`.
Edit MeasureEdit(const Chunk& c, const std::string& edited, int kind,
                 const dedupd::SimHasher& hasher, const dedupd::MinHasher& minhasher,
                 dedupd::LshIndex* lsh, size_t max_shingles, int hash_shift, ExactStats* stats) {
  Edit e{c.words, dedupd::HammingDistance(c.simhash, hasher.Fingerprint(edited)),
         dedupd::SortedJaccard(c.features, FeatureSet(edited))};
  e.kind = kind;
  const dedupd::MinHashSignature sig = minhasher.Sign(edited);
  lsh->Insert(c.minhash, 0);
  e.candidate = !lsh->Query(sig).empty();
  lsh->Erase(c.minhash, 0);
  e.estimate = dedupd::EstimateJaccard(c.minhash, sig);
  if (max_shingles > 0) {
    const dedupd::bench::ExactSet set =
        dedupd::bench::ExactSetOf(edited, kShingleWords, hash_shift);
    e.exact = dedupd::bench::ExactJaccardWithin(c.set32, set, max_shingles);
    stats->edits_exact += e.exact >= 0;
    if (e.exact >= 0 &&
        std::min(c.words, WordCount(edited)) >= static_cast<size_t>(kShingleWords)) {
      stats->edits_mismatch += e.exact != e.jaccard;
      stats->edits_expected += dedupd::bench::ExpectedFalseCommon(c.set32, set);
    }
  }
  return e;
}

// MakeEdits returns the controlled edits: per bucket, up to
// edits_per_bucket distinct chunks in a seeded random order, each with
// every edit kind (kEditKinds); max_shingles, hash_shift and stats as in
// MeasureEdit.
std::vector<Edit> MakeEdits(const std::deque<Chunk>& chunks, const dedupd::SimHasher& hasher,
                            const dedupd::MinHasher& minhasher, int edits_per_bucket, uint64_t seed,
                            size_t max_shingles, int hash_shift, ExactStats* stats) {
  dedupd::LshIndex lsh(dedupd::LshIndex::kDefaultBands, dedupd::LshIndex::kDefaultRows,
                       dedupd::LshIndex::kMinBucketBits);
  std::vector<Edit> edits;
  std::vector<std::vector<uint32_t>> members(kNumBuckets);
  for (size_t i = 0; i < chunks.size(); ++i) {
    members[BucketOf(chunks[i].words)].push_back(static_cast<uint32_t>(i));
  }
  for (size_t b = 0; b < kNumBuckets; ++b) {
    Rng rng(seed * 1000003 + b);              // one stream per bucket
    Rng added_rng(seed * 1000003 + 100 + b);  // the edits added with MinHash
    std::vector<uint32_t>& m = members[b];
    const size_t n = std::min(m.size(), static_cast<size_t>(edits_per_bucket));
    for (size_t i = 0; i < n; ++i) std::swap(m[i], m[i + rng.Uniform(m.size() - i)]);
    for (size_t i = 0; i < n; ++i) {
      const Chunk& c = chunks[m[i]];
      std::vector<absl::string_view> words = absl::StrSplit(c.text, ' ');
      for (int kind = 0; kind < 3; ++kind) {
        if (kind == 2 && words.size() < 2) continue;  // deleting the only word
        // A word of another chunk, different from the one it replaces.
        absl::string_view other;
        const size_t pos = rng.Uniform(words.size() + (kind == 1 ? 1 : 0));
        for (int tries = 0; tries < 100; ++tries) {
          const Chunk& o = chunks[rng.Uniform(chunks.size())];
          std::vector<absl::string_view> ow = absl::StrSplit(o.text, ' ');
          other = ow[rng.Uniform(ow.size())];
          if (kind != 0 || other != words[pos]) break;
        }
        const std::string edited = EditedText(words, kind, pos, other);
        edits.push_back(
            MeasureEdit(c, edited, kind, hasher, minhasher, &lsh, max_shingles, hash_shift, stats));
      }
      for (int kind = kOneWordEditKinds; kind < kNumEditKinds; ++kind) {
        std::string edited;
        if (!AddedEdit(chunks, words, kind, added_rng, &edited)) continue;
        edits.push_back(
            MeasureEdit(c, edited, kind, hasher, minhasher, &lsh, max_shingles, hash_shift, stats));
      }
    }
  }
  return edits;
}

// Adds edit `e` to row `r`, found when its distance is at most `within`.
void AddEdit(const Edit& e, int within, Row* r) {
  const bool is_near = e.jaccard >= kNearJaccard;
  const bool found = e.distance <= within;
  ++r->edits;
  r->edits_near += is_near;
  r->found += found;
  r->found_near += is_near && found;
}

// CountRows returns rows[b][k] for k = 0..max_k; b == kNumBuckets is "all".
std::vector<std::vector<Row>> CountRows(const std::vector<Pair>& pairs,
                                        const std::vector<Edit>& edits, int max_k) {
  std::vector<std::vector<Row>> rows(kNumBuckets + 1, std::vector<Row>(max_k + 1));
  for (const Pair& p : pairs) {
    for (int kk = p.distance; kk <= max_k; ++kk) {
      for (size_t b : {BucketOf(p.words), kNumBuckets}) {
        Row& r = rows[b][kk];
        ++r.pairs;
        if (p.jaccard >= kNearJaccard) {
          ++r.near;
        } else if (p.jaccard < kFarJaccard) {
          ++r.far;
          r.unrelated += p.jaccard == 0 && (b == kNumBuckets || BucketOf(p.long_words) == b);
        } else {
          ++r.between;
        }
      }
    }
  }
  for (const Edit& e : edits) {
    if (e.kind >= kOneWordEditKinds) continue;  // the "quality" lines predate them
    for (int kk = 0; kk <= max_k; ++kk) {
      for (size_t b : {BucketOf(e.words), kNumBuckets}) AddEdit(e, kk, &rows[b][kk]);
    }
  }
  return rows;
}

// Prints the "# chunk_quality" header line.
void PrintHeader(const QualityOptions& o, const ChunkSet& corpus, size_t pairs, size_t edits) {
  std::vector<size_t> word_counts;
  for (const Chunk& c : corpus.chunks) word_counts.push_back(c.words);
  std::sort(word_counts.begin(), word_counts.end());
  absl::PrintF(
      "# chunk_quality pages=%d chunk_bytes=%s chunks=%d distinct=%d words_p10=%d "
      "words_p50=%d words_p90=%d shingle_words=%d near=J>=%.1f far=J<%.1f max_k=%d "
      "candidate_pairs=%d edits=%d seed=%d unreadable=%d normalize_errors=%d\n",
      corpus.pages - corpus.unreadable, absl::StrJoin(o.chunk_sizes, ","), corpus.raw_chunks,
      corpus.chunks.size(), word_counts[word_counts.size() / 10],
      word_counts[word_counts.size() / 2], word_counts[word_counts.size() * 9 / 10], kShingleWords,
      kNearJaccard, kFarJaccard, o.max_k, pairs, edits, o.seed, corpus.unreadable,
      corpus.normalize_errors);
}

// Prints one "bucket" line per bucket; returns the distinct chunks of each
// bucket, [kNumBuckets] all of them.
std::vector<double> PrintBuckets(const std::deque<Chunk>& chunks) {
  std::vector<double> bucket_size(kNumBuckets + 1);
  bucket_size[kNumBuckets] = static_cast<double>(chunks.size());
  for (size_t b = 0; b < kNumBuckets; ++b) {
    std::vector<size_t> shingles;
    double ones = 0;
    for (const Chunk& c : chunks) {
      if (BucketOf(c.words) != b) continue;
      shingles.push_back(c.features.size());
      ones += __builtin_popcountll(c.simhash);
    }
    std::sort(shingles.begin(), shingles.end());
    bucket_size[b] = shingles.size();
    absl::PrintF("bucket words=%s distinct=%d shingles_p50=%d popcount_mean=%.1f\n",
                 kBuckets[b].name, shingles.size(),
                 shingles.empty() ? 0 : shingles[shingles.size() / 2],
                 shingles.empty() ? 0.0 : ones / shingles.size());
  }
  return bucket_size;
}

// Prints the "quality" lines: per bucket, then "all", for k = 0..max_k.
void PrintQualityRows(const std::vector<std::vector<Row>>& rows,
                      const std::vector<double>& bucket_size) {
  for (size_t b = 0; b <= kNumBuckets; ++b) {
    for (size_t kk = 0; kk < rows[b].size(); ++kk) {
      const Row& r = rows[b][kk];
      absl::PrintF(
          "quality words=%s k=%d pairs=%d near=%d between=%d far=%d precision=%s "
          "unrelated=%d unrelated_per_pair=%.1e edits=%d edits_near=%d recall=%s "
          "edits_found=%s\n",
          b < kNumBuckets ? kBuckets[b].name : "all", kk, r.pairs, r.near, r.between, r.far,
          Ratio(r.near, r.near + r.far), r.unrelated,
          r.unrelated / std::max(1.0, bucket_size[b] * (bucket_size[b] - 1) / 2), r.edits,
          r.edits_near, Ratio(r.found_near, r.edits_near), Ratio(r.found, r.edits));
    }
  }
}

// Prints the "rule" lines: ChunkNearDistance at k, the effective distance
// of the shorter text's word count.
void PrintRuleRows(const std::vector<Pair>& pairs, const std::vector<Edit>& edits, int k) {
  for (size_t b = 0; b <= kNumBuckets; ++b) {
    Row r;
    auto in_bucket = [&](size_t words) { return b == kNumBuckets || BucketOf(words) == b; };
    for (const Pair& p : pairs) {
      if (!in_bucket(p.words) || p.distance > dedupd::ChunkNearDistance(p.words, k)) continue;
      ++r.pairs;
      r.near += p.jaccard >= kNearJaccard;
      r.far += p.jaccard < kFarJaccard;
    }
    for (const Edit& e : edits) {
      if (e.kind < kOneWordEditKinds && in_bucket(e.words)) {
        AddEdit(e, dedupd::ChunkNearDistance(e.words, k), &r);
      }
    }
    const std::string effective =
        b == kNumBuckets ? "-"
                         : absl::StrFormat("%d..%d", dedupd::ChunkNearDistance(kBuckets[b].lo, k),
                                           dedupd::ChunkNearDistance(
                                               std::min<size_t>(kBuckets[b].hi - 1, 1 << 20), k));
    absl::PrintF(
        "rule k=%d words=%s effective_k=%s pairs=%d near=%d far=%d precision=%s recall=%s "
        "edits_found=%s\n",
        k, b < kNumBuckets ? kBuckets[b].name : "all", effective, r.pairs, r.near, r.far,
        Ratio(r.near, r.near + r.far), Ratio(r.found_near, r.edits_near), Ratio(r.found, r.edits));
  }
}

// Found / total of the edits in bucket b (kNumBuckets: all) with J >= lo
// (lo - 1e-9: 4/5 counts as 0.8), `found` deciding.
template <typename Found>
std::string EditRecall(const std::vector<Edit>& edits, size_t b, int kind, double lo, Found found) {
  int64_t n = 0, f = 0;
  for (const Edit& e : edits) {
    if (b != kNumBuckets && BucketOf(e.words) != b) continue;
    if (kind >= 0 && e.kind != kind) continue;
    if (e.jaccard < lo - 1e-9) continue;
    ++n;
    f += found(e);
  }
  return Ratio(f, n);
}

// The " verify=exact" of the kExact lines; the estimate's lines have none.
const char* VerifyLabel(Verify v) { return v == Verify::kExact ? " verify=exact" : ""; }

// Prints the "minhash" lines of verification `v`: MinHash + LSH +
// verification at min_jaccard t, per bucket and all, for t = 0.50..0.95.
//   minhash words=<b> min_jaccard=<t>[ verify=exact] pairs= near= between= far= precision=
//   edits= edits_near= recall= recall_own= recall_plus= fn_lsh= fn_verify= edits_found=
// pairs: distinct-chunk pairs found near (a shared band key and estimate
// >= t); precision = near / (near + far) among them; recall: edits with J
// >= 0.8 found; recall_own: J >= t; recall_plus: J >= t + 0.05; fn_lsh /
// fn_verify: edits with J >= 0.8 missed for want of a shared band / an
// estimate below t; edits_found: all edits found.
void PrintMinHashRows(const std::vector<std::vector<PairCounts>>& pair_counts,
                      const std::vector<Edit>& edits, Verify v) {
  const std::vector<double> grid = ThresholdGrid();
  for (size_t ti = 0; ti < grid.size(); ++ti) {
    const double t = grid[ti];
    for (size_t b = 0; b <= kNumBuckets; ++b) {
      const PairCounts& pc = pair_counts[ti][b];
      const int64_t n = pc.pairs, near = pc.near, between = pc.between, far = pc.far;
      int64_t count = 0, edits_near = 0, fn_lsh = 0, fn_verify = 0;
      for (const Edit& e : edits) {
        if (b != kNumBuckets && BucketOf(e.words) != b) continue;
        ++count;
        edits_near += e.jaccard >= kNearJaccard - 1e-9;
        if (e.jaccard >= kNearJaccard && !e.MinHashNear(t, v)) {
          ++(e.candidate ? fn_verify : fn_lsh);
        }
      }
      auto found = [t, v](const Edit& e) { return e.MinHashNear(t, v); };
      absl::PrintF(
          "minhash words=%s min_jaccard=%.2f%s pairs=%d near=%d between=%d far=%d precision=%s "
          "edits=%d edits_near=%d recall=%s recall_own=%s recall_plus=%s fn_lsh=%d "
          "fn_verify=%d edits_found=%s\n",
          b < kNumBuckets ? kBuckets[b].name : "all", t, VerifyLabel(v), n, near, between, far,
          Ratio(near, near + far), count, edits_near, EditRecall(edits, b, -1, kNearJaccard, found),
          EditRecall(edits, b, -1, t, found),
          t + 0.05 > 1 + 1e-9 ? "nan" : EditRecall(edits, b, -1, t + 0.05, found), fn_lsh,
          fn_verify, EditRecall(edits, b, -1, 0, found));
    }
  }
}

// Prints the "simhash_edits" lines: SimHash's recall over the edits of the
// "minhash" lines (every kind) at k = 3..6.
//   simhash_edits words=<b> k=<k> edits= edits_near= recall= recall_j85= recall_j90=
//   recall_j95= edits_found=
void PrintSimHashEditRows(const std::vector<Edit>& edits) {
  for (int k = 3; k <= 6; ++k) {
    for (size_t b = 0; b <= kNumBuckets; ++b) {
      auto found = [k](const Edit& e) { return e.distance <= k; };
      int64_t count = 0, near = 0;
      for (const Edit& e : edits) {
        if (b != kNumBuckets && BucketOf(e.words) != b) continue;
        ++count;
        near += e.jaccard >= kNearJaccard - 1e-9;
      }
      absl::PrintF(
          "simhash_edits words=%s k=%d edits=%d edits_near=%d recall=%s recall_j85=%s "
          "recall_j90=%s recall_j95=%s edits_found=%s\n",
          b < kNumBuckets ? kBuckets[b].name : "all", k, count, near,
          EditRecall(edits, b, -1, kNearJaccard, found), EditRecall(edits, b, -1, 0.85, found),
          EditRecall(edits, b, -1, 0.9, found), EditRecall(edits, b, -1, 0.95, found),
          EditRecall(edits, b, -1, 0, found));
    }
  }
}

// Prints one "ckind" line per edit kind and bucket (and all): its edits,
// how many stay J >= 0.8, and the recall of those (J >= 0.8) of SimHash at
// k = 3..6 and of MinHash (verification `v`) at min_jaccard 0.8, 0.85, 0.9.
//   ckind <kind> words=<b>[ verify=exact] edits= edits_near= jaccard_p50= simhash_k3= ..
//   simhash_k6= minhash_0.80= minhash_0.85= minhash_0.90=
void PrintEditKinds(const std::vector<Edit>& edits, Verify v) {
  for (int kind = 0; kind < kNumEditKinds; ++kind) {
    for (size_t b = 0; b <= kNumBuckets; ++b) {
      std::vector<double> js;
      int64_t near = 0;
      for (const Edit& e : edits) {
        if (e.kind != kind || (b != kNumBuckets && BucketOf(e.words) != b)) continue;
        js.push_back(e.jaccard);
        near += e.jaccard >= kNearJaccard - 1e-9;
      }
      if (js.empty()) continue;
      std::sort(js.begin(), js.end());
      std::string line =
          absl::StrFormat("ckind %s words=%s%s edits=%d edits_near=%d jaccard_p50=%.3f",
                          kEditKinds[kind], b < kNumBuckets ? kBuckets[b].name : "all",
                          VerifyLabel(v), js.size(), near, js[js.size() / 2]);
      for (int k = 3; k <= 6; ++k) {
        absl::StrAppend(&line, " simhash_k", k, "=",
                        EditRecall(edits, b, kind, kNearJaccard,
                                   [k](const Edit& e) { return e.distance <= k; }));
      }
      for (double t : {0.8, 0.85, 0.9}) {
        absl::StrAppend(&line, absl::StrFormat(" minhash_%.2f=", t),
                        EditRecall(edits, b, kind, kNearJaccard,
                                   [t, v](const Edit& e) { return e.MinHashNear(t, v); }));
      }
      absl::PrintF("%s\n", line);
    }
  }
}

// Prints the "shingle_sets" lines, what keeping the sets would cost a
// store, and the "exact_sets" line (see the top of the file).
void PrintShingleSets(const std::deque<Chunk>& chunks, size_t max_shingles,
                      const ExactStats& stats) {
  std::vector<size_t> limits = {64, 128, 256, 512, max_shingles};
  std::sort(limits.begin(), limits.end());
  limits.erase(std::unique(limits.begin(), limits.end()), limits.end());
  for (bool first_cut_only : {false, true}) {
    for (size_t k : limits) {
      std::vector<size_t> bytes;
      size_t within = 0;
      double sum = 0;
      for (const Chunk& c : chunks) {
        if (first_cut_only && !c.first_cut) continue;
        const bool kept = c.set32.shingles <= k;
        within += kept;
        bytes.push_back(kept ? c.set32.set.size() * sizeof(uint32_t) : 0);
        sum += bytes.back();
      }
      if (bytes.empty()) continue;
      std::sort(bytes.begin(), bytes.end());
      absl::PrintF(
          "shingle_sets chunks=%s max_shingles=%d within=%d share=%s bytes_mean=%.1f "
          "bytes_p50=%d bytes_p99=%d\n",
          first_cut_only ? "first_cut" : "all", k, within, Ratio(within, bytes.size()),
          sum / bytes.size(), bytes[bytes.size() / 2], bytes[bytes.size() * 99 / 100]);
    }
  }
  int64_t with_set = 0, collisions = 0;
  for (const Chunk& c : chunks) {
    with_set += c.set32.shingles <= max_shingles;
    collisions += c.set32.set.size() < c.set32.shingles;
  }
  absl::PrintF(
      "exact_sets max_shingles=%d chunks_with_set=%d truncation_collisions=%d pairs_exact=%d "
      "pairs_estimate=%d pairs_mismatch=%d pairs_mismatch_expected=%.2f edits_exact=%d "
      "edits_mismatch=%d edits_mismatch_expected=%.4f\n",
      max_shingles, with_set, collisions, stats.pairs_exact, stats.pairs_estimate,
      stats.pairs_mismatch, stats.pairs_expected, stats.edits_exact, stats.edits_mismatch,
      stats.edits_expected);
}

// Prints to stderr the `worst` far pairs with the smallest distance.
void PrintWorstFar(const std::vector<Pair>& pairs, const std::deque<Chunk>& chunks, int worst) {
  std::vector<const Pair*> far;
  for (const Pair& p : pairs) {
    if (p.jaccard < kFarJaccard) far.push_back(&p);
  }
  std::stable_sort(far.begin(), far.end(),
                   [](const Pair* x, const Pair* y) { return x->distance < y->distance; });
  far.resize(std::min<size_t>(far.size(), worst));
  for (const Pair* p : far) {
    std::cerr << absl::StrFormat(
        "worst_far distance=%d jaccard=%.3f words=%d/%d\n  a=\"%s\"\n  b=\"%s\"\n", p->distance,
        p->jaccard, chunks[p->a].words, chunks[p->b].words, chunks[p->a].text.substr(0, 160),
        chunks[p->b].text.substr(0, 160));
  }
}

int RunQuality() {
  const QualityOptions o = QualityOptionsFromFlags();
  const dedupd::SimHasher hasher;
  const dedupd::MinHasher minhasher;
  ChunkSet corpus;
  if (!LoadChunks(o, hasher, minhasher, &corpus)) return 1;
  const std::vector<Pair> pairs = FindPairs(corpus.chunks, o.max_k);
  ExactStats exact_stats;
  const std::vector<Edit> edits =
      MakeEdits(corpus.chunks, hasher, minhasher, o.edits_per_bucket, o.seed, o.exact_max_shingles,
                o.exact_hash_shift, &exact_stats);
  const std::vector<std::vector<std::vector<PairCounts>>> minhash_pairs =
      CountMinHashPairs(corpus.chunks, o.verify, o.exact_max_shingles, &exact_stats);
  const std::vector<std::vector<Row>> rows = CountRows(pairs, edits, o.max_k);

  PrintHeader(o, corpus, pairs.size(), edits.size());
  const std::vector<double> bucket_size = PrintBuckets(corpus.chunks);
  PrintQualityRows(rows, bucket_size);
  if (o.k >= 0 && o.k <= o.max_k) PrintRuleRows(pairs, edits, o.k);
  if (o.exact_max_shingles > 0) PrintShingleSets(corpus.chunks, o.exact_max_shingles, exact_stats);
  for (size_t vi = 0; vi < o.verify.size(); ++vi)
    PrintMinHashRows(minhash_pairs[vi], edits, o.verify[vi]);
  PrintSimHashEditRows(edits);
  for (Verify v : o.verify) PrintEditKinds(edits, v);
  if (o.worst > 0) PrintWorstFar(pairs, corpus.chunks, o.worst);
  return 0;
}

// --- preamble scenario -------------------------------------------------------

enum class Part { kPreamble, kContent, kMixed };

struct Ingested {
  std::string text;  // normalized
  dedupd::MinHashSignature minhash;
  std::vector<absl::string_view> features;
  Part part;
  size_t page;
};

struct ScenarioCounts {
  int64_t chunks = 0, preamble = 0, preamble_dup = 0, preamble_dup_of_first = 0;
  int64_t content = 0, content_exact = 0, content_near = 0, content_near_wrong = 0,
          content_near_far = 0;
  int64_t mixed = 0, mixed_exact = 0, mixed_near = 0, mixed_near_wrong = 0;
};

int RunPreamble() {
  const std::string dir = absl::GetFlag(FLAGS_preamble_dir);
  const size_t chunk_bytes = ChunkSizes()[0];
  const int k = absl::GetFlag(FLAGS_k);
  std::string preamble;
  if (!dedupd::bench::ReadFile(dir + "/preamble.txt", &preamble)) {
    std::cerr << "chunk_quality: cannot read " << dir << "/preamble.txt\n";
    return 1;
  }
  std::vector<std::string> paths;
  if (!dedupd::bench::ListPages(dir, &paths)) {
    std::cerr << "chunk_quality: cannot list " << dir << "\n";
    return 1;
  }
  std::vector<std::string> pages;
  for (const std::string& p : paths) {
    if (!absl::StartsWith(std::filesystem::path(p).filename().string(), "page_")) continue;
    std::string text;
    if (!dedupd::bench::ReadFile(p, &text)) {
      std::cerr << "chunk_quality: cannot read " << p << "\n";
      return 1;
    }
    pages.push_back(std::move(text));
  }
  if (pages.size() < 2) {
    std::cerr << "chunk_quality: " << dir << " has fewer than 2 page_*.txt\n";
    return 1;
  }
  // The preamble as the ingested text holds it (trailing whitespace goes).
  while (!preamble.empty() && dedupd::bench::chunker_internal::IsSpace(preamble.back()))
    preamble.pop_back();

  const dedupd::SimHasher hasher;
  const dedupd::MinHasher minhasher;
  // SimHash at k without and with the short-chunk rule, then MinHash + LSH
  // + verification at each --preamble_min_jaccard.
  struct Mode {
    bool minhash, rule;
    double t;
  };
  std::vector<Mode> modes = {{false, false, 0}, {false, true, 0}};
  for (const std::string& v : absl::GetFlag(FLAGS_preamble_min_jaccard)) {
    double t = 0;
    if (!absl::SimpleAtod(v, &t) || !(t > 0 && t <= 1)) {
      std::cerr << "chunk_quality: --preamble_min_jaccard: " << v << " is not in (0, 1]\n";
      return 2;
    }
    modes.push_back({true, false, t});
  }
  for (const Mode& mode : modes) {
    const bool rule = mode.rule;
    std::deque<Ingested> stored;
    absl::flat_hash_map<dedupd::Sha256Digest, uint32_t> by_sha;
    dedupd::SimHashIndex index(k);
    dedupd::LshIndex lsh(dedupd::LshIndex::kDefaultBands, dedupd::LshIndex::kDefaultRows, 10);
    std::vector<uint32_t> candidates;
    ScenarioCounts n;
    for (size_t pi = 0; pi < pages.size(); ++pi) {
      const std::string text = preamble + "\n\n" + pages[pi];
      for (absl::string_view c : dedupd::bench::ChunkText(text, chunk_bytes)) {
        absl::StatusOr<std::string> norm = dedupd::NormalizeText(c);
        if (!norm.ok()) {
          std::cerr << "chunk_quality: page " << pi << ": " << norm.status() << "\n";
          return 1;
        }
        const size_t begin = static_cast<size_t>(c.data() - text.data());
        const size_t end = begin + c.size();
        const Part part = end <= preamble.size()    ? Part::kPreamble
                          : begin > preamble.size() ? Part::kContent
                                                    : Part::kMixed;
        Ingested in{*std::move(norm), {}, {}, part, pi};
        in.minhash = minhasher.Sign(in.text);
        in.features = FeatureSet(in.text);
        const dedupd::Sha256Digest sha = dedupd::Sha256(in.text);
        const uint64_t fp = hasher.Fingerprint(in.text);
        // Exact first, then near: what the store does.
        const Ingested* owner = nullptr;
        bool exact = false;
        if (auto it = by_sha.find(sha); it != by_sha.end()) {
          owner = &stored[it->second];
          exact = true;
        } else if (mode.minhash) {
          // The store's test: LSH candidates, the best estimate >= t.
          lsh.Query(in.minhash, &candidates);
          double best = -1;
          for (uint32_t id : candidates) {
            const double est = dedupd::EstimateJaccard(in.minhash, stored[id].minhash);
            if (est >= mode.t && est > best) {
              best = est;
              owner = &stored[id];
            }
          }
        } else {
          const int d = rule ? dedupd::ChunkNearDistance(WordCount(in.text), k) : k;
          if (d >= 0) {
            std::vector<dedupd::SimHashIndex::Match> m = index.Query(fp, d, 1);
            if (!m.empty()) owner = &stored[m[0].id];
          }
        }
        ++n.chunks;
        const double j = owner == nullptr ? 0 : dedupd::SortedJaccard(in.features, owner->features);
        switch (part) {
          case Part::kPreamble:
            if (pi == 0) break;
            ++n.preamble;
            n.preamble_dup += owner != nullptr;
            n.preamble_dup_of_first +=
                owner != nullptr && owner->page == 0 && owner->part == Part::kPreamble;
            break;
          case Part::kContent:
            ++n.content;
            n.content_exact += exact;
            n.content_near += owner != nullptr && !exact;
            n.content_near_wrong += owner != nullptr && !exact && j < kNearJaccard;
            n.content_near_far += owner != nullptr && !exact && j < kFarJaccard;
            break;
          case Part::kMixed:
            ++n.mixed;
            n.mixed_exact += exact;
            n.mixed_near += owner != nullptr && !exact;
            n.mixed_near_wrong += owner != nullptr && !exact && j < kNearJaccard;
            break;
        }
        if (!exact) {
          const uint32_t id = static_cast<uint32_t>(stored.size());
          by_sha.emplace(sha, id);
          index.Insert(fp, id);
          lsh.Insert(in.minhash, id);
          stored.push_back(std::move(in));
        }
      }
    }
    const std::string setting = mode.minhash
                                    ? absl::StrFormat("measure=minhash min_jaccard=%.2f", mode.t)
                                    : absl::StrFormat("k=%d rule=%s", k, rule ? "on" : "off");
    absl::PrintF(
        "preamble pages=%d %s chunks=%d preamble_chunks=%d preamble_dup=%d "
        "preamble_dup_of_first=%d preamble_missed=%d content_chunks=%d content_exact=%d "
        "content_near=%d content_near_wrong=%d content_near_far=%d mixed_chunks=%d "
        "mixed_exact=%d mixed_near=%d mixed_near_wrong=%d\n",
        pages.size(), setting, n.chunks, n.preamble, n.preamble_dup, n.preamble_dup_of_first,
        n.preamble - n.preamble_dup, n.content, n.content_exact, n.content_near,
        n.content_near_wrong, n.content_near_far, n.mixed, n.mixed_exact, n.mixed_near,
        n.mixed_near_wrong);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "chunk_quality: SimHash near-duplicate precision and recall for RAG chunks by "
      "chunk length, against exact shingle Jaccard; or the shared-preamble scenario.\n"
      "Usage: dedupd_chunk_quality [--pages_dir=DIR] [--chunk_bytes=B] [--max_k=K] "
      "[--edits_per_bucket=N] [--worst=N] [--tiny] [--verify=estimate|exact|both] "
      "[--exact_max_shingles=K] | --preamble_dir=DIR [--k=K]");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 1) {
    std::cerr << "chunk_quality: unexpected argument " << args[1] << " (see --help)\n";
    return 2;
  }
  const int max_k = absl::GetFlag(FLAGS_max_k);
  const int k = absl::GetFlag(FLAGS_k);
  const std::vector<size_t> sizes = ChunkSizes();
  if (max_k < 0 || max_k > dedupd::SimHashIndex::kMaxSupportedDistance || k < 0 ||
      k > dedupd::SimHashIndex::kMaxSupportedDistance || sizes.empty() ||
      sizes.size() != absl::GetFlag(FLAGS_chunk_bytes).size() ||
      *std::min_element(sizes.begin(), sizes.end()) < 4 ||
      absl::GetFlag(FLAGS_edits_per_bucket) < 0) {
    std::cerr << "chunk_quality: need 0 <= --max_k, --k <= "
              << dedupd::SimHashIndex::kMaxSupportedDistance
              << ", --chunk_bytes: a list of sizes >= 4, --edits_per_bucket >= 0\n";
    return 2;
  }
  const std::string verify = absl::GetFlag(FLAGS_verify);
  if ((verify != "estimate" && verify != "exact" && verify != "both") ||
      absl::GetFlag(FLAGS_exact_max_shingles) < 1 || absl::GetFlag(FLAGS_exact_hash_shift) < 0 ||
      absl::GetFlag(FLAGS_exact_hash_shift) > 32) {
    std::cerr << "chunk_quality: need --verify=estimate|exact|both, --exact_max_shingles >= 1, "
                 "0 <= --exact_hash_shift <= 32\n";
    return 2;
  }
  if (!absl::GetFlag(FLAGS_preamble_dir).empty()) return RunPreamble();
  return RunQuality();
}
