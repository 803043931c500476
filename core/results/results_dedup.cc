// results_dedup.cc: see results_dedup.h and docs/results_dedup.md.
//
// Design notes (costs measured with bench/micro/results_dedup_bench.cc):
// - Every hit is validated and normalized up front, so that which hits are
//   rejected never depends on top_k; the fingerprints (SimHash,
//   or the Jaccard shingle set) are computed only for hits that are
//   examined, so 1,000 hits with top_k 10 pay for about a dozen of them.
// - Exact text needs no SHA-256 here: two normalized texts are compared
//   only against the few kept hits, by length and SimHash first (equal
//   texts have equal fingerprints) and then byte for byte.
// - Embedding norms are computed once per hit (validation needs the pass
//   anyway), and an examined hit's embedding is scaled to unit length
//   once; a pair then costs at most one dot product, and usually a small
//   part of one: Cosine stops once the rest of the sum cannot reach
//   min_cosine (a Cauchy-Schwarz bound; exact, not an approximation). The dot product uses
//   GCC/Clang vector extensions with four 4-float accumulators: without -ffast-math the compiler
//   may not reorder a float sum, so a plain loop would not be vectorized. The order of the
//   additions is fixed by the code, so the result is the same on every
//   x86-64 build (no FMA contraction: ISO C++ mode, -ffp-contract=off).
#include "core/results/results_dedup.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/text/simhash.h"
#include "core/text/sorted_sets.h"
#include "core/text/stable_hash.h"
#include "core/text/text_normalizer.h"

namespace dedupd {

namespace {

// ---------------------------------------------------------------------------
// Validation

absl::Status ValidateOptions(const ResultsDedupOptions& o) {
  if (o.top_k.has_value() && *o.top_k == 0) {
    return absl::InvalidArgumentError("top_k: must be at least 1; omit it to keep all hits");
  }
  if (o.near_text_measure != NearTextMeasure::kSimHash &&
      o.near_text_measure != NearTextMeasure::kJaccard) {
    return absl::InvalidArgumentError(
        absl::StrCat("near_text_measure ", static_cast<int>(o.near_text_measure), " is unknown"));
  }
  if (o.max_hamming_distance < 0 || o.max_hamming_distance > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_hamming_distance ", o.max_hamming_distance, " is outside 0..64"));
  }
  // Written so that NaN fails too.
  if (!(o.min_jaccard > 0 && o.min_jaccard <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_jaccard ", o.min_jaccard, " is outside (0, 1]"));
  }
  if (!(o.min_cosine >= -1 && o.min_cosine <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("min_cosine ", o.min_cosine, " is outside [-1, 1]"));
  }
  if (o.per_source_cap < ResultsDedupOptions::kDefaultPerSourceCap) {
    return absl::InvalidArgumentError(absl::StrCat("per_source_cap ", o.per_source_cap,
                                                   " is negative (0: no cap, -1: the default)"));
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Embeddings

// 4 floats: one SSE register (x86-64's baseline; a 32-byte vector would
// change the ABI of these helpers without AVX).
typedef float Float4 __attribute__((vector_size(16)));

inline Float4 Load4(const float* p) {
  Float4 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Dot returns the dot product of a[0..d) and b[0..d): 16 independent
// partial sums (four 4-lane accumulators, so that consecutive additions do
// not wait for each other), then the tail.
float Dot(const float* a, const float* b, size_t d) {
  Float4 acc0 = {0, 0, 0, 0};
  Float4 acc1 = acc0, acc2 = acc0, acc3 = acc0;
  size_t i = 0;
  for (; i + 16 <= d; i += 16) {
    acc0 += Load4(a + i) * Load4(b + i);
    acc1 += Load4(a + i + 4) * Load4(b + i + 4);
    acc2 += Load4(a + i + 8) * Load4(b + i + 8);
    acc3 += Load4(a + i + 12) * Load4(b + i + 12);
  }
  for (; i + 4 <= d; i += 4) acc0 += Load4(a + i) * Load4(b + i);
  const Float4 acc = (acc0 + acc1) + (acc2 + acc3);
  float sum = (acc[0] + acc[2]) + (acc[1] + acc[3]);
  for (; i < d; ++i) sum += a[i] * b[i];
  return sum;
}

// Dimensions per step of Cosine's early exit.
constexpr size_t kCosineBlock = 64;

// ValidateEmbedding checks that `e` is finite with a non-zero norm and
// sets `*inv_norm` to 1 / |e|; otherwise returns what is wrong, for a
// RejectedHit.
std::optional<std::string> ValidateEmbedding(const std::vector<float>& e, double* inv_norm) {
  // Fast path: a float sum of squares is finite exactly when every element
  // is finite, unless a large element overflows; it is non-zero unless
  // every element is zero or tiny. Both exceptions take the slow path.
  const float squares = Dot(e.data(), e.data(), e.size());
  if (std::isfinite(squares) && squares > 0) {
    *inv_norm = 1.0 / std::sqrt(static_cast<double>(squares));
    return std::nullopt;
  }
  double sum = 0;
  for (size_t j = 0; j < e.size(); ++j) {
    if (std::isnan(e[j])) return absl::StrCat("embedding element ", j, " is NaN");
    if (std::isinf(e[j])) return absl::StrCat("embedding element ", j, " is infinite");
    sum += static_cast<double>(e[j]) * e[j];
  }
  if (!(sum > 0)) return std::string("embedding has norm 0 (cosine is undefined)");
  *inv_norm = 1.0 / std::sqrt(sum);
  return std::nullopt;
}

// CheckHitAlone returns why `hit` is bad by itself (everything but how its
// embedding compares with the other hits'), or nothing when it is not; it
// fills `*normalized` and, for an embedding, `*inv_norm`.
std::optional<RejectedHit> CheckHitAlone(size_t index, const ResultHit& hit,
                                         std::string* normalized, double* inv_norm) {
  auto reject = [index](RejectReason reason, std::string error) {
    return RejectedHit{index, reason, std::move(error)};
  };
  if (hit.id.empty()) return reject(RejectReason::kBadHit, "empty id");
  if (std::isnan(hit.score)) return reject(RejectReason::kBadHit, "score is NaN");
  if (std::isinf(hit.score)) return reject(RejectReason::kBadHit, "score is infinite");
  if (absl::Status s = NormalizeTextInto(hit.text, normalized); !s.ok()) {
    return reject(RejectReason::kBadText, absl::StrCat("text: ", s.message()));
  }
  const size_t d = hit.embedding.size();
  if (d > kMaxEmbeddingDimensions) {
    return reject(RejectReason::kBadHit,
                  absl::StrCat("embedding has ", d, " dimensions, more than the limit of ",
                               kMaxEmbeddingDimensions));
  }
  if (d > 0) {
    if (std::optional<std::string> bad = ValidateEmbedding(hit.embedding, inv_norm)) {
      return reject(RejectReason::kBadHit, *std::move(bad));
    }
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------
// Text

// ShingleSet returns the sorted distinct hashes of the
// kResultsDedupShingleWords-word shingles of `normalized` (words split on
// ' '; a text with fewer words is one shingle of all of them, as
// SimHasher). The hashes only live for one call, so any good 64-bit hash
// would do; words use StableHash64, shingles a rotate-xor-multiply
// combination with a MurmurHash3 finalizer (as simhash.cc).
std::vector<uint64_t> ShingleSet(absl::string_view normalized) {
  constexpr uint64_t kSeed = 0x6465647570644A53ULL;  // "dedupdJS"
  std::vector<uint64_t> words;
  size_t start = 0;
  while (start <= normalized.size()) {
    size_t end = normalized.find(' ', start);
    if (end == absl::string_view::npos) end = normalized.size();
    if (end > start) {
      words.push_back(StableHash64(normalized.substr(start, end - start), kSeed));
    }
    start = end + 1;
  }
  const size_t k = std::min<size_t>(kResultsDedupShingleWords, words.size());
  std::vector<uint64_t> shingles;
  if (k == 0) return shingles;
  shingles.reserve(words.size() - k + 1);
  for (size_t j = 0; j + k <= words.size(); ++j) {
    uint64_t h = kSeed;
    for (size_t i = 0; i < k; ++i) {
      h = (((h << 27) | (h >> 37)) ^ words[j + i]) * 0x9FB21C651E98DF25ULL;
    }
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ULL;
    h ^= h >> 33;
    shingles.push_back(h);
  }
  std::sort(shingles.begin(), shingles.end());
  shingles.erase(std::unique(shingles.begin(), shingles.end()), shingles.end());
  return shingles;
}

// Jaccard returns |a ∩ b| / |a ∪ b| of two sorted distinct sets, or a
// value below `at_least` (not necessarily the exact one) when it is
// certainly below it: J <= min(|a|, |b|) / max(|a|, |b|).
double Jaccard(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, double at_least) {
  const size_t small = std::min(a.size(), b.size());
  const size_t large = std::max(a.size(), b.size());
  if (large == 0) return 1;
  if (static_cast<double>(small) < at_least * static_cast<double>(large)) {
    return 0;
  }
  return SortedJaccard(a, b);
}

const SimHasher& Hasher() {
  static const SimHasher* const hasher = [] {
    SimHashOptions o;
    o.shingle_words = kResultsDedupShingleWords;
    return new SimHasher(o);
  }();
  return *hasher;
}

// Per-hit state computed from a valid request.
struct Prepared {
  std::string normalized;
  double inv_norm = 0;             // 1 / |embedding|, when there is one
  bool fingerprinted = false;      // the fields below are computed
  uint64_t simhash = 0;            // kSimHash
  std::vector<uint64_t> shingles;  // kJaccard
  // embedding / |embedding|: a dot product of two of them is the cosine,
  // and cannot overflow or underflow whatever the scale of the input.
  std::vector<float> unit;
  // tail_norm[b] = |unit[b * kCosineBlock ..)|, for b = 0 .. blocks (the
  // last is 0): bounds what the rest of a dot product can add.
  std::vector<double> tail_norm;
};

// UnitAndTailNorms fills p->unit and p->tail_norm from `e`.
void UnitAndTailNorms(const std::vector<float>& e, Prepared* p) {
  const size_t d = e.size();
  p->unit.resize(d);
  for (size_t j = 0; j < d; ++j) {
    p->unit[j] = static_cast<float>(e[j] * p->inv_norm);
  }
  const size_t blocks = (d + kCosineBlock - 1) / kCosineBlock;
  p->tail_norm.assign(blocks + 1, 0);
  double tail = 0;
  for (size_t b = blocks; b-- > 0;) {
    const size_t begin = b * kCosineBlock;
    const size_t len = std::min(kCosineBlock, d - begin);
    tail += Dot(p->unit.data() + begin, p->unit.data() + begin, len);
    p->tail_norm[b] = std::sqrt(tail);
  }
}

// Cosine returns the cosine of the embeddings of `a` and `b` when it is
// at least `at_least`; otherwise some value below `at_least`. The dot
// product of the unit vectors is summed kCosineBlock dimensions at a time;
// after each block, by Cauchy-Schwarz the rest can add at most
// tail_norm_a * tail_norm_b, and once even that cannot reach `at_least`
// the pair is not a duplicate. With near-orthogonal embeddings (unrelated
// texts) that happens after a block or two, instead of all d dimensions.
// kCosineSlack keeps float rounding of the partial sum (relative ~1e-6)
// from ever pruning a pair the full sum would call a duplicate, so the
// answer is that of the full dot product.
double Cosine(const Prepared& a, const Prepared& b, size_t d, double at_least) {
  constexpr double kCosineSlack = 1e-4;
  double dot = 0;
  const size_t blocks = a.tail_norm.size() - 1;
  for (size_t k = 0; k < blocks; ++k) {
    const size_t begin = k * kCosineBlock;
    const size_t len = std::min(kCosineBlock, d - begin);
    dot += Dot(a.unit.data() + begin, b.unit.data() + begin, len);
    if (dot + a.tail_norm[k + 1] * b.tail_norm[k + 1] < at_least - kCosineSlack) {
      return -2;
    }
  }
  return dot;
}

}  // namespace

int EffectivePerSourceCap(const ResultsDedupOptions& options) {
  if (options.per_source_cap != ResultsDedupOptions::kDefaultPerSourceCap) {
    return options.per_source_cap;
  }
  // Unset top_k keeps every survivor: a long list, as a large top_k.
  return options.top_k.has_value() && *options.top_k <= 5 ? 2 : 3;
}

const char* DropReasonName(DropReason reason) {
  switch (reason) {
    case DropReason::kDuplicate:
      return "duplicate";
    case DropReason::kSourceCap:
      return "source_cap";
  }
  return "unknown";
}

const char* DuplicateMeasureName(DuplicateMeasure measure) {
  switch (measure) {
    case DuplicateMeasure::kExactText:
      return "exact_text";
    case DuplicateMeasure::kSimHash:
      return "simhash";
    case DuplicateMeasure::kJaccard:
      return "jaccard";
    case DuplicateMeasure::kCosine:
      return "cosine";
  }
  return "unknown";
}

absl::StatusOr<ResultsDedupResult> DedupResults(absl::Span<const ResultHit> hits,
                                                const ResultsDedupOptions& options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  const size_t n = hits.size();
  if (n > kMaxResultHits) {
    return absl::InvalidArgumentError(
        absl::StrCat(n, " hits, more than the limit of ", kMaxResultHits));
  }

  // Check every hit by itself (normalizing its text), then the embedding
  // sizes against the first valid hit that has one: a bad hit must not set
  // the size the others are held to.
  std::vector<Prepared> prepared(n);
  std::vector<std::optional<RejectedHit>> problem(n);
  size_t dims = 0;
  size_t dims_from = 0;  // the hit that set dims, when dims > 0
  for (size_t i = 0; i < n; ++i) {
    problem[i] = CheckHitAlone(i, hits[i], &prepared[i].normalized, &prepared[i].inv_norm);
    if (!problem[i] && dims == 0 && !hits[i].embedding.empty()) {
      dims = hits[i].embedding.size();
      dims_from = i;
    }
  }
  const bool cosine = dims > 0;
  for (size_t i = 0; cosine && i < n; ++i) {
    const size_t d = hits[i].embedding.size();
    if (problem[i] || d == dims) continue;
    problem[i] = RejectedHit{
        i, RejectReason::kBadHit,
        d == 0 ? absl::StrCat("has no embedding but hit ", dims_from, " has one (", dims,
                              " dimensions); send embeddings on all hits or none")
               : absl::StrCat("embedding has ", d, " dimensions, hit ", dims_from, " has ", dims)};
  }

  // The valid hits in score order, ties in input order.
  ResultsDedupResult result;
  std::vector<size_t> order;
  order.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (problem[i]) {
      result.rejected.push_back(*std::move(problem[i]));
    } else {
      order.push_back(i);
    }
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return hits[a].score > hits[b].score; });

  const bool jaccard = options.near_text_measure == NearTextMeasure::kJaccard;
  const int cap = EffectivePerSourceCap(options);
  const size_t top_k = options.top_k.value_or(order.size());
  result.per_source_cap = cap;
  result.kept.reserve(std::min(order.size(), top_k));
  absl::flat_hash_map<absl::string_view, int> per_source;

  auto fingerprint = [&](size_t i) {
    Prepared& p = prepared[i];
    if (p.fingerprinted) return;
    if (jaccard) {
      p.shingles = ShingleSet(p.normalized);
    } else {
      p.simhash = Hasher().Fingerprint(p.normalized);
    }
    if (cosine) UnitAndTailNorms(hits[i].embedding, &p);
    p.fingerprinted = true;
  };

  size_t next = 0;
  for (; next < order.size() && result.kept.size() < top_k; ++next) {
    const size_t i = order[next];
    fingerprint(i);
    const Prepared& p = prepared[i];

    // 1. A duplicate of the first (best-scoring) kept hit it matches.
    bool duplicate = false;
    for (const size_t r : result.kept) {
      const Prepared& q = prepared[r];
      DroppedHit drop;
      drop.index = i;
      drop.reason = DropReason::kDuplicate;
      drop.duplicate_of = r;
      if (p.normalized.size() == q.normalized.size() && (jaccard || p.simhash == q.simhash) &&
          p.normalized == q.normalized) {
        drop.measure = DuplicateMeasure::kExactText;
        drop.value = 1;
        duplicate = true;
      } else if (jaccard) {
        const double j = Jaccard(p.shingles, q.shingles, options.min_jaccard);
        if (j >= options.min_jaccard) {
          drop.measure = DuplicateMeasure::kJaccard;
          drop.value = j;
          duplicate = true;
        }
      } else {
        const int distance = HammingDistance(p.simhash, q.simhash);
        if (distance <= options.max_hamming_distance) {
          drop.measure = DuplicateMeasure::kSimHash;
          drop.value = distance;
          duplicate = true;
        }
      }
      if (!duplicate && cosine) {
        const double c = Cosine(p, q, dims, options.min_cosine);
        if (c >= options.min_cosine) {
          drop.measure = DuplicateMeasure::kCosine;
          // Rounding can put the cosine of parallel vectors a hair above 1.
          drop.value = std::clamp(c, -1.0, 1.0);
          duplicate = true;
        }
      }
      if (duplicate) {
        result.dropped.push_back(drop);
        break;
      }
    }
    if (duplicate) continue;

    // 2. The per-source cap.
    const std::string& source = hits[i].source_url;
    if (cap > 0 && !source.empty()) {
      int& count = per_source[source];
      if (count >= cap) {
        DroppedHit drop;
        drop.index = i;
        drop.reason = DropReason::kSourceCap;
        result.dropped.push_back(drop);
        continue;
      }
      ++count;
    }

    // 3. Kept.
    result.kept.push_back(i);
  }
  result.not_examined.assign(order.begin() + next, order.end());
  return result;
}

}  // namespace dedupd
