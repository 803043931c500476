// content_fingerprint_bench.cc: throughput of FingerprintText (NormalizeText
// + SHA-256 + SimHash) over a directory of real text pages on one thread,
// against a textbook SimHash in the same run, with a per-stage breakdown.
// Prints one fixed-format line (MB = 10^6 bytes of raw input text):
//
//   fingerprint docs=N bytes=N rounds=R mb_per_sec=X textbook_mb_per_sec=Y
//   ratio=Z normalize_mb_per_sec=A sha256_mb_per_sec=B simhash_mb_per_sec=C
//   textbook_simhash_mb_per_sec=D simhash_ratio=E cpu_mb_per_sec=F
//   us_per_10kb=G words=W simhash_ns_per_word=H
//
// (one line). Every figure is the best of --rounds rounds on the wall
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
#include "core/text/sha256.h"
#include "core/text/simhash.h"
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
  std::fprintf(stderr, "(checksum %llu)\n", static_cast<unsigned long long>(sink));
  return 0;
}
