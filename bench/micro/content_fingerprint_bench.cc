// content_fingerprint_bench.cc: throughput of FingerprintText (NormalizeText
// + SHA-256 + SimHash, and with MinHash) over a directory of real text pages
// on one thread, against a textbook SimHash and a textbook MinHash in the
// same run, with a per-stage breakdown and MinHash's accuracy.
// Prints one fixed-format line (MB = 10^6 bytes of raw input text):
//
//   fingerprint docs=N bytes=N rounds=R mb_per_sec=X textbook_mb_per_sec=Y
//   ratio=Z normalize_mb_per_sec=A sha256_mb_per_sec=B simhash_mb_per_sec=C
//   textbook_simhash_mb_per_sec=D simhash_ratio=E cpu_mb_per_sec=F
//   us_per_10kb=G words=W simhash_ns_per_word=H
//
// (one line), then, for the MinHash signature (docs/minhash.md):
//
//   minhash docs=N rounds=R with_minhash_mb_per_sec=X with_minhash_cpu_mb_per_sec=X
//   with_minhash_us_per_10kb=X with_minhash_cpu_us_per_10kb=X
//   with_textbook_minhash_us_per_10kb=X shingles=N oph_ns_per_shingle=X
//   textbook_ns_per_shingle=X minhash_ratio=X
//
//   minhash_accuracy pairs=N rmse_oph_57bit=X rmse_oph_16bit=X rmse_oph_8bit=X
//   rmse_oph_4bit=X rmse_textbook_61bit=X rmse_textbook_8bit=X
//   bias_oph_8bit=X rmse_binomial=X pairs_short=N rmse_short_oph_8bit=X
//   rmse_short_textbook_8bit=X
//
// (each on one line). with_minhash is FingerprintText with a MinHasher
// (NormalizeText + SHA-256 + SimHash + MinHash, the shingles found once);
// with_textbook_minhash the same with the textbook signature instead (one
// round over every 10th page: it is ~100x slower):
// 128 hash functions ((a_i x + b_i) mod 2^61 - 1, Carter and Wegman 1979,
// as in Leskovec, Rajaraman, Ullman, "Mining of Massive Datasets", ch. 3)
// over the same distinct shingle hashes, a minimum each. shingles is the
// corpus's total of distinct shingles; oph_ns_per_shingle and
// textbook_ns_per_shingle time the two signatures alone on them.
// minhash_accuracy compares estimated with exact shingle Jaccard on pairs
// (page, the page with a share 0..0.4 of its words replaced) with a fixed
// seed, for one-permutation slots of 57 (full), 16, 8 and 4 bits and the
// textbook's of 61 and 8 bits, each b-bit estimate corrected as
// (P - 2^-b) / (1 - 2^-b); rmse_binomial is the root mean of
// J (1 - J) / 128, the textbook's theoretical error. The "short" pairs are
// the first 40 words of each pair (chunk-sized: most bins empty before
// densification).
//
// Every figure is the best of --rounds rounds on the wall
// clock, except cpu_mb_per_sec: FingerprintText on this thread's CPU time,
// which a loaded machine inflates less (it still shares caches and cores).
// us_per_10kb is FingerprintText's wall time per 10^4 bytes of input;
// words is the total of ContentFingerprint::words over the pages, and
// simhash_ns_per_word SimHash's best wall time divided by it.
// "textbook" is the same pipeline with SimHash computed the way the papers
// describe it: every shingle built as a string, counted in a
// std::unordered_map, hashed with StableHash64, then a loop over its 64
// bits. It gives different fingerprints (it hashes shingle strings, not
// word hashes), so only the speed is compared.
//
// Example:
//   python3 bench/corpus/make_text_corpus.py --out bench/corpus/pages
//   build/bench/dedupd_content_fingerprint_bench --pages_dir=bench/corpus/pages
//   build/bench/dedupd_content_fingerprint_bench --tiny --pages_dir=bench/corpus/sample_pages
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/corpus/read_pages.h"
#include "core/text/content_fingerprint.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "core/text/shingle_hashes.h"
#include "core/text/simhash.h"
#include "core/text/splitmix64.h"
#include "core/text/stable_hash.h"
#include "core/text/text_normalizer.h"

ABSL_FLAG(std::string, pages_dir, "", "Directory of *.txt pages (UTF-8), e.g. bench/corpus/pages.");
ABSL_FLAG(int, rounds, 5, "Timed passes over all pages; the best is kept.");
ABSL_FLAG(bool, tiny, false, "CI smoke size: one round, at most 5 pages.");

namespace {

using Clock = std::chrono::steady_clock;

// The textbook SimHash (Charikar 2002 as usually written): shingle strings,
// a hash map of counts, a per-bit loop. Weight 1 per distinct shingle, as
// SimHasher.
uint64_t TextbookSimHash(const std::string& text, int shingle_words) {
  const std::vector<std::string> words = absl::StrSplit(text, ' ', absl::SkipEmpty());
  if (words.empty()) return 0;
  const size_t k = std::min<size_t>(shingle_words, words.size());
  std::unordered_map<std::string, int> counts;
  for (size_t j = 0; j + k <= words.size(); ++j) {
    std::string shingle = words[j];
    for (size_t i = 1; i < k; ++i) {
      shingle += ' ';
      shingle += words[j + i];
    }
    ++counts[shingle];
  }
  std::array<int64_t, 64> v{};
  for (const auto& entry : counts) {
    const uint64_t h = dedupd::StableHash64(entry.first, dedupd::SimHasher::kSeed);
    for (int b = 0; b < 64; ++b) v[b] += (h >> b & 1) ? 1 : -1;
  }
  uint64_t fingerprint = 0;
  for (int b = 0; b < 64; ++b) {
    if (v[b] > 0) fingerprint |= uint64_t{1} << b;
  }
  return fingerprint;
}

// The textbook MinHash: kMinHashSlots hash functions
// h_i(x) = (a_i x + b_i) mod (2^61 - 1) with fixed random a_i, b_i (Carter
// and Wegman 1979), the minimum of each over the shingle hashes.
class TextbookMinHasher {
 public:
  static constexpr uint64_t kPrime = (uint64_t{1} << 61) - 1;

  TextbookMinHasher() {
    dedupd::SplitMixRng rng(dedupd::MinHasher::kSeed);
    for (int i = 0; i < dedupd::kMinHashSlots; ++i) {
      a_[i] = 1 + rng.Next() % (kPrime - 1);
      b_[i] = rng.Next() % kPrime;
    }
  }

  // The 128 minima (61-bit values); all kPrime for no shingles.
  std::array<uint64_t, dedupd::kMinHashSlots> Minima(const uint64_t* shingles, size_t n) const {
    std::array<uint64_t, dedupd::kMinHashSlots> mins;
    mins.fill(kPrime);
    for (size_t j = 0; j < n; ++j) {
      const uint64_t x = Mod(shingles[j]);
      for (int i = 0; i < dedupd::kMinHashSlots; ++i) {
        const unsigned __int128 v = static_cast<unsigned __int128>(a_[i]) * x + b_[i];
        const uint64_t h =
            Mod(Mod(static_cast<uint64_t>(v & kPrime) + static_cast<uint64_t>(v >> 61)));
        mins[i] = std::min(mins[i], h);
      }
    }
    return mins;
  }

 private:
  static uint64_t Mod(uint64_t x) {
    x = (x & kPrime) + (x >> 61);
    return x >= kPrime ? x - kPrime : x;
  }
  std::array<uint64_t, dedupd::kMinHashSlots> a_, b_;
};

// Jaccard estimated from the low `bits` bits of two sets of minima, with
// the b-bit collision correction (Li and König 2010).
template <size_t N>
double EstimateBits(const std::array<uint64_t, N>& x, const std::array<uint64_t, N>& y, int bits) {
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  int equal = 0;
  for (size_t i = 0; i < N; ++i) equal += (x[i] & mask) == (y[i] & mask);
  const double c = bits >= 40 ? 0.0 : std::ldexp(1.0, -bits);
  const double p = static_cast<double>(equal) / N;
  return std::clamp((p - c) / (1 - c), 0.0, 1.0);
}

std::vector<uint64_t> SortedShingles(const std::string& normalized) {
  const dedupd::ShingleHashes s = dedupd::DistinctShingleHashes(normalized, 3);
  std::vector<uint64_t> v(s.distinct.begin(), s.distinct.end());
  std::sort(v.begin(), v.end());
  return v;
}

double Jaccard(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  size_t inter = 0;
  for (auto i = a.begin(), j = b.begin(); i != a.end() && j != b.end();) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      ++inter, ++i, ++j;
    }
  }
  const size_t uni = a.size() + b.size() - inter;
  return uni == 0 ? 1.0 : static_cast<double>(inter) / uni;
}

// Root mean square errors of the estimators on pairs (a, b); see the
// minhash_accuracy line.
struct Accuracy {
  int pairs = 0;
  double se_oph[4] = {};  // 57, 16, 8, 4 bits
  double se_tb[2] = {};   // 61, 8 bits
  double bias_oph8 = 0;
  double var_binomial = 0;

  void Add(const std::string& a, const std::string& b, const TextbookMinHasher& textbook) {
    const std::vector<uint64_t> sa = SortedShingles(a), sb = SortedShingles(b);
    const double exact = Jaccard(sa, sb);
    const auto oa = dedupd::minhash_internal::DensifiedMinima(sa);
    const auto ob = dedupd::minhash_internal::DensifiedMinima(sb);
    const int bits[4] = {64, 16, 8, 4};
    for (int i = 0; i < 4; ++i) {
      const double e = EstimateBits(oa, ob, bits[i]) - exact;
      se_oph[i] += e * e;
      if (bits[i] == 8) bias_oph8 += e;
    }
    const auto ta = textbook.Minima(sa.data(), sa.size());
    const auto tb = textbook.Minima(sb.data(), sb.size());
    const double e61 = EstimateBits(ta, tb, 64) - exact, e8 = EstimateBits(ta, tb, 8) - exact;
    se_tb[0] += e61 * e61;
    se_tb[1] += e8 * e8;
    var_binomial += exact * (1 - exact) / dedupd::kMinHashSlots;
    ++pairs;
  }
  double Rmse(double se) const { return std::sqrt(se / std::max(pairs, 1)); }
};

// `words` with a share `p` of them replaced by fresh words.
std::string Mutate(const std::vector<std::string>& words, double p, dedupd::SplitMixRng& rng,
                   size_t limit) {
  std::string out;
  for (size_t i = 0; i < words.size() && i < limit; ++i) {
    if (i > 0) out += ' ';
    if (rng.Unit() < p) {
      out += "zz" + std::to_string(rng.Next() % 1000000);
    } else {
      out += words[i];
    }
  }
  return out;
}

// Seconds of CPU time this thread has used. On a loaded machine the wall
// clock also counts time spent waiting for a core; this does not.
double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// Seconds of the fastest of `rounds` runs of `pass` (which must return a
// value that depends on all its work, so that nothing is optimized away);
// `cpu_best`, if not null, gets the least thread CPU time of a round.
template <typename Pass>
double Best(int rounds, Pass pass, uint64_t* sink, double* cpu_best = nullptr) {
  double best = 1e100;
  double best_cpu = 1e100;
  for (int r = 0; r < rounds; ++r) {
    const double cpu_start = ThreadCpuSeconds();
    const Clock::time_point start = Clock::now();
    *sink += pass();
    const std::chrono::duration<double> took = Clock::now() - start;
    best = std::min(best, took.count());
    best_cpu = std::min(best_cpu, ThreadCpuSeconds() - cpu_start);
  }
  if (cpu_best != nullptr) *cpu_best = best_cpu;
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Fingerprint throughput on a directory of text pages; prints one "
      "'fingerprint docs=...' line.");
  absl::ParseCommandLine(argc, argv);
  const std::string dir = absl::GetFlag(FLAGS_pages_dir);
  const bool tiny = absl::GetFlag(FLAGS_tiny);
  const int rounds = tiny ? 1 : std::max(1, absl::GetFlag(FLAGS_rounds));
  if (dir.empty()) {
    std::fprintf(stderr, "content_fingerprint_bench: --pages_dir is required\n");
    return 2;
  }

  std::vector<std::string> paths;
  if (!dedupd::bench::ListPages(dir, &paths) || paths.empty()) {
    std::fprintf(stderr, "content_fingerprint_bench: no *.txt pages in %s\n", dir.c_str());
    return 1;
  }
  if (tiny && paths.size() > 5) paths.resize(5);

  std::vector<std::string> pages;
  size_t bytes = 0;
  for (const std::string& path : paths) {
    std::string text;
    if (!dedupd::bench::ReadFile(path, &text)) {
      std::fprintf(stderr, "content_fingerprint_bench: cannot read %s\n", path.c_str());
      return 1;
    }
    // Pages NormalizeText rejects (empty, invalid UTF-8) are not timed.
    if (!dedupd::NormalizeText(text).ok()) continue;
    bytes += text.size();
    pages.push_back(std::move(text));
  }
  if (pages.empty()) {
    std::fprintf(stderr, "content_fingerprint_bench: no usable pages\n");
    return 1;
  }
  std::vector<std::string> normalized;
  for (const std::string& p : pages) normalized.push_back(*dedupd::NormalizeText(p));

  const dedupd::SimHasher hasher;
  const int k = hasher.options().shingle_words;
  size_t words = 0;
  for (const std::string& p : pages) {
    words += dedupd::FingerprintText(p, hasher)->words;
  }
  uint64_t sink = 0;
  double full_cpu = 0;
  const double full = Best(
      rounds,
      [&] {
        uint64_t x = 0;
        for (const std::string& p : pages) {
          absl::StatusOr<dedupd::ContentFingerprint> fp = dedupd::FingerprintText(p, hasher);
          x += fp->simhash + fp->sha256[0];
        }
        return x;
      },
      &sink, &full_cpu);
  const double textbook = Best(
      rounds,
      [&] {
        uint64_t x = 0;
        for (const std::string& p : pages) {
          const std::string n = *dedupd::NormalizeText(p);
          x += dedupd::Sha256(n)[0] + TextbookSimHash(n, k);
        }
        return x;
      },
      &sink);
  const double normalize = Best(
      rounds,
      [&] {
        uint64_t x = 0;
        for (const std::string& p : pages) x += dedupd::NormalizeText(p)->size();
        return x;
      },
      &sink);
  const double sha = Best(
      rounds,
      [&] {
        uint64_t x = 0;
        for (const std::string& n : normalized) x += dedupd::Sha256(n)[0];
        return x;
      },
      &sink);
  const double simhash = Best(
      rounds,
      [&] {
        uint64_t x = 0;
        for (const std::string& n : normalized) x += hasher.Fingerprint(n);
        return x;
      },
      &sink);
  const double textbook_simhash = Best(
      rounds,
      [&] {
        uint64_t x = 0;
        for (const std::string& n : normalized) x += TextbookSimHash(n, k);
        return x;
      },
      &sink);

  // MinHash: the pipeline with it, and the two signatures alone on the
  // same distinct shingles.
  const dedupd::MinHasher minhasher;
  const TextbookMinHasher textbook_minhasher;
  double with_minhash_cpu = 0;
  const double with_minhash = Best(
      rounds,
      [&] {
        uint64_t x = 0;
        for (const std::string& p : pages) {
          absl::StatusOr<dedupd::ContentFingerprint> fp =
              dedupd::FingerprintText(p, hasher, minhasher);
          x += fp->simhash + fp->sha256[0] + (*fp->minhash)[0];
        }
        return x;
      },
      &sink, &with_minhash_cpu);
  // The textbook signature is ~100x slower: one round over every 10th page
  // is enough to time it.
  const size_t sample_step = tiny ? 1 : 10;
  size_t sample_bytes = 0;
  for (size_t i = 0; i < pages.size(); i += sample_step) sample_bytes += pages[i].size();
  const double with_textbook_minhash = Best(
      1,
      [&] {
        uint64_t x = 0;
        for (size_t i = 0; i < pages.size(); i += sample_step) {
          absl::StatusOr<dedupd::ContentFingerprint> fp = dedupd::FingerprintText(pages[i], hasher);
          const dedupd::ShingleHashes s =
              dedupd::DistinctShingleHashes(*dedupd::NormalizeText(pages[i]), k);
          x += fp->simhash + fp->sha256[0] +
               textbook_minhasher.Minima(s.distinct.data(), s.distinct.size())[0];
        }
        return x;
      },
      &sink);
  std::vector<std::vector<uint64_t>> shingle_sets;
  size_t shingles = 0;
  for (const std::string& n : normalized) {
    const dedupd::ShingleHashes s = dedupd::DistinctShingleHashes(n, k);
    shingle_sets.emplace_back(s.distinct.begin(), s.distinct.end());
    shingles += s.distinct.size();
  }
  const double oph = Best(
      rounds,
      [&] {
        uint64_t x = 0;
        for (const std::vector<uint64_t>& s : shingle_sets) {
          x += dedupd::MinHasher::SignShingles(s)[0];
        }
        return x;
      },
      &sink);
  size_t textbook_shingles = 0;
  const double textbook_sig = Best(
      1,
      [&] {
        uint64_t x = 0;
        textbook_shingles = 0;
        for (size_t i = 0; i < shingle_sets.size(); i += sample_step) {
          x += textbook_minhasher.Minima(shingle_sets[i].data(), shingle_sets[i].size())[0];
          textbook_shingles += shingle_sets[i].size();
        }
        return x;
      },
      &sink);

  // Accuracy on pairs (page, edited page), and on their first 40 words.
  Accuracy accuracy, short_accuracy;
  dedupd::SplitMixRng rng(20121203);
  for (size_t i = 0; i < normalized.size(); i += tiny ? 1 : 4) {
    const std::vector<std::string> words = absl::StrSplit(normalized[i], ' ', absl::SkipEmpty());
    const double p = 0.4 * rng.Unit();
    const std::string edited = Mutate(words, p, rng, words.size());
    accuracy.Add(normalized[i], edited, textbook_minhasher);
    if (words.size() >= 80) {
      short_accuracy.Add(Mutate(words, 0, rng, 40), Mutate(absl::StrSplit(edited, ' '), 0, rng, 40),
                         textbook_minhasher);
    }
  }

  auto mbps = [&](double seconds) { return bytes / seconds / 1e6; };
  std::printf(
      "fingerprint docs=%zu bytes=%zu rounds=%d mb_per_sec=%.1f "
      "textbook_mb_per_sec=%.1f ratio=%.2f normalize_mb_per_sec=%.1f "
      "sha256_mb_per_sec=%.1f simhash_mb_per_sec=%.1f "
      "textbook_simhash_mb_per_sec=%.1f simhash_ratio=%.2f "
      "cpu_mb_per_sec=%.1f us_per_10kb=%.1f words=%zu "
      "simhash_ns_per_word=%.1f\n",
      pages.size(), bytes, rounds, mbps(full), mbps(textbook), textbook / full, mbps(normalize),
      mbps(sha), mbps(simhash), mbps(textbook_simhash), textbook_simhash / simhash, mbps(full_cpu),
      full / (bytes / 1e4) * 1e6, words, simhash / words * 1e9);
  std::printf(
      "minhash docs=%zu rounds=%d with_minhash_mb_per_sec=%.1f "
      "with_minhash_cpu_mb_per_sec=%.1f with_minhash_us_per_10kb=%.1f "
      "with_minhash_cpu_us_per_10kb=%.1f with_textbook_minhash_us_per_10kb=%.1f "
      "shingles=%zu oph_ns_per_shingle=%.2f textbook_ns_per_shingle=%.1f "
      "minhash_ratio=%.1f\n",
      pages.size(), rounds, mbps(with_minhash), mbps(with_minhash_cpu),
      with_minhash / (bytes / 1e4) * 1e6, with_minhash_cpu / (bytes / 1e4) * 1e6,
      with_textbook_minhash / (sample_bytes / 1e4) * 1e6, shingles, oph / shingles * 1e9,
      textbook_sig / textbook_shingles * 1e9,
      (textbook_sig / textbook_shingles) / (oph / shingles));
  std::printf(
      "minhash_accuracy pairs=%d rmse_oph_57bit=%.4f rmse_oph_16bit=%.4f "
      "rmse_oph_8bit=%.4f rmse_oph_4bit=%.4f rmse_textbook_61bit=%.4f "
      "rmse_textbook_8bit=%.4f bias_oph_8bit=%.4f rmse_binomial=%.4f "
      "pairs_short=%d rmse_short_oph_8bit=%.4f rmse_short_textbook_8bit=%.4f\n",
      accuracy.pairs, accuracy.Rmse(accuracy.se_oph[0]), accuracy.Rmse(accuracy.se_oph[1]),
      accuracy.Rmse(accuracy.se_oph[2]), accuracy.Rmse(accuracy.se_oph[3]),
      accuracy.Rmse(accuracy.se_tb[0]), accuracy.Rmse(accuracy.se_tb[1]),
      accuracy.bias_oph8 / std::max(accuracy.pairs, 1), accuracy.Rmse(accuracy.var_binomial),
      short_accuracy.pairs, short_accuracy.Rmse(short_accuracy.se_oph[2]),
      short_accuracy.Rmse(short_accuracy.se_tb[1]));
  std::fprintf(stderr, "(checksum %llu)\n", static_cast<unsigned long long>(sink));
  return 0;
}
