// results_dedup_bench.cc: latency of one DedupResults call (query-time
// dedup of retrieved hits) on one thread, for 20, 100 and 1,000 hits of
// real text, without and with embeddings, at top_k 10 and 100. Prints one
// fixed-format line per workload:
//
//   results_dedup hits=N dims=D base_cosine=B top_k=K measure=M calls=C
//   mean_us=X p50_us=Y p99_us=Z cpu_mean_us=U kept=A duplicate=B
//   source_cap=E not_examined=F
//
// (one line each). mean/p50/p99 are over `calls` timed calls (after a few
// untimed warm-up calls) on the wall clock; cpu_mean_us is the mean of the
// calling thread's CPU time, which a busy machine inflates less (waiting
// for a core is not counted). kept .. not_examined are the counts of the
// last call (every call gets the same hits).
//
// The hits: passages of 40 to 120 consecutive words from seeded random
// places of the pages in --pages_dir (one page per .txt file), source URL
// "https://docs.test/<page>/part<n>" (n: which 200-word part of the page
// the passage starts in), scores descending in retrieval order. Planted:
// every 10th hit is an exact copy of an earlier one (upper-cased, another
// source), every 10th (offset 5) a near copy (one word replaced). With
// --dims > 0, every hit has a random unit embedding (fixed seed), and
// each copy its original's plus noise (cosine about 0.98). Independent
// random vectors are nearly orthogonal, which real text embeddings are
// not (unrelated passages are often at cosine 0.3 to 0.7): with
// --base_cosine=c every embedding is sqrt(c) * a shared unit vector +
// sqrt(1 - c) * its own, so unrelated hits are at cosine about c.
//
// Example:
//   build/bench/dedupd_results_dedup_bench
//       --pages_dir=bench/corpus/sample_pages,bench/corpus/quality_sample_pages
//   build/bench/dedupd_results_dedup_bench --tiny
//       --pages_dir=bench/corpus/sample_pages,bench/corpus/quality_sample_pages
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/corpus/read_pages.h"
#include "core/results/results_dedup.h"

ABSL_FLAG(std::vector<std::string>, pages_dir, {},
          "Directories of *.txt pages (UTF-8), comma-separated, e.g. "
          "bench/corpus/sample_pages,bench/corpus/quality_sample_pages or "
          "bench/corpus/pages.");
ABSL_FLAG(std::vector<std::string>, hits, std::vector<std::string>({"20", "100", "1000"}),
          "Hits per call, one workload each.");
ABSL_FLAG(std::vector<std::string>, top_k, std::vector<std::string>({"10", "100"}),
          "top_k values, one workload each.");
ABSL_FLAG(int, dims, 1024,
          "Embedding dimensions of the workloads with embeddings (each "
          "hits/top_k workload also runs without). 0: only without.");
ABSL_FLAG(double, base_cosine, 0, "Cosine of unrelated hits' embeddings, in [0, 0.9]; see above.");
ABSL_FLAG(std::string, measure, "simhash",
          "Near-text measure: simhash or "
          "jaccard (at --min_jaccard).");
ABSL_FLAG(double, min_jaccard, 0.8, "min_jaccard for --measure=jaccard.");
ABSL_FLAG(int, calls, 2000, "Timed calls per workload.");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the passages, scores and embeddings.");
ABSL_FLAG(bool, tiny, false, "CI smoke size: 20 calls per workload.");

namespace {

using Clock = std::chrono::steady_clock;

// Seconds of CPU time this thread has used.
double ThreadCpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

struct Page {
  std::string name;                // file name without .txt
  std::vector<std::string> words;  // split on ASCII whitespace
};

std::vector<float> RandomUnit(int dims, std::mt19937_64& rng) {
  std::normal_distribution<float> normal;
  std::vector<float> v(dims);
  double norm = 0;
  for (float& x : v) {
    x = normal(rng);
    norm += double{x} * x;
  }
  for (float& x : v) x = static_cast<float>(x / std::sqrt(norm));
  return v;
}

// RandomEmbedding returns sqrt(c) * shared + sqrt(1 - c) * a random unit
// vector: two of them are at cosine about c.
std::vector<float> RandomEmbedding(const std::vector<float>& shared, double c,
                                   std::mt19937_64& rng) {
  std::vector<float> v = RandomUnit(static_cast<int>(shared.size()), rng);
  for (size_t j = 0; j < v.size(); ++j) {
    v[j] = static_cast<float>(std::sqrt(c) * shared[j] + std::sqrt(1 - c) * v[j]);
  }
  return v;
}

// MakeHits builds `n` hits from `pages` (see the file comment).
std::vector<dedupd::ResultHit> MakeHits(const std::vector<Page>& pages, size_t n, int dims,
                                        double base_cosine, uint64_t seed) {
  std::mt19937_64 rng(seed * 1000003 + n);
  const std::vector<float> shared = dims > 0 ? RandomUnit(dims, rng) : std::vector<float>();
  std::vector<dedupd::ResultHit> hits;
  hits.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    dedupd::ResultHit hit;
    hit.id = "hit-" + std::to_string(i);
    // Retrieval order: descending scores with a little jitter.
    hit.score = 1.0 - 0.5 * static_cast<double>(i) / static_cast<double>(n) +
                std::uniform_real_distribution<double>(0, 1e-3)(rng);
    if (i >= 10 && i % 10 == 0) {  // exact copy of an earlier hit
      const dedupd::ResultHit& o = hits[rng() % i];
      hit.text = absl::AsciiStrToUpper(o.text);
      hit.source_url = "https://mirror.test/" + std::to_string(i);
      if (dims > 0) {
        hit.embedding = o.embedding;
        for (float& x : hit.embedding) {
          x += std::normal_distribution<float>(0, 0.2f / std::sqrt(float(dims)))(rng);
        }
      }
    } else if (i >= 10 && i % 10 == 5) {  // near copy: one word replaced
      const dedupd::ResultHit& o = hits[rng() % i];
      std::vector<std::string> words = absl::StrSplit(o.text, ' ');
      words[rng() % words.size()] = "replaced";
      hit.text = absl::StrJoin(words, " ");
      hit.source_url = o.source_url;
      if (dims > 0) {
        hit.embedding = o.embedding;
        for (float& x : hit.embedding) {
          x += std::normal_distribution<float>(0, 0.2f / std::sqrt(float(dims)))(rng);
        }
      }
    } else {
      const Page& p = pages[rng() % pages.size()];
      const size_t len = std::min<size_t>(40 + rng() % 81, p.words.size());
      const size_t start = rng() % (p.words.size() - len + 1);
      hit.text = absl::StrJoin(p.words.begin() + start, p.words.begin() + start + len, " ");
      hit.source_url = "https://docs.test/" + p.name + "/part" + std::to_string(start / 200);
      if (dims > 0) hit.embedding = RandomEmbedding(shared, base_cosine, rng);
    }
    hits.push_back(std::move(hit));
  }
  return hits;
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Latency of DedupResults per call. Example:\n"
      "  dedupd_results_dedup_bench "
      "--pages_dir=bench/corpus/sample_pages,bench/corpus/quality_sample_pages");
  absl::ParseCommandLine(argc, argv);

  std::vector<Page> pages;
  for (const std::string& dir : absl::GetFlag(FLAGS_pages_dir)) {
    std::vector<std::string> paths;
    if (!dedupd::bench::ListPages(dir, &paths)) {
      std::fprintf(stderr, "cannot list --pages_dir %s\n", dir.c_str());
      return 1;
    }
    for (const std::string& path : paths) {
      std::string text;
      if (!dedupd::bench::ReadFile(path, &text)) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        return 1;
      }
      Page page;
      page.name = dir.substr(dir.find_last_of('/') + 1) + "-" +
                  path.substr(path.find_last_of('/') + 1, path.size() - path.find_last_of('/') - 5);
      page.words = absl::StrSplit(text, absl::ByAnyChar(" \t\r\n\f\v"), absl::SkipEmpty());
      if (!page.words.empty()) pages.push_back(std::move(page));
    }
  }
  if (pages.empty()) {
    std::fprintf(stderr, "no pages: set --pages_dir\n");
    return 1;
  }

  dedupd::ResultsDedupOptions base;
  const std::string measure = absl::GetFlag(FLAGS_measure);
  if (measure == "jaccard") {
    base.near_text_measure = dedupd::NearTextMeasure::kJaccard;
    base.min_jaccard = absl::GetFlag(FLAGS_min_jaccard);
  } else if (measure != "simhash") {
    std::fprintf(stderr, "--measure must be simhash or jaccard\n");
    return 1;
  }
  const int calls = absl::GetFlag(FLAGS_tiny) ? 20 : absl::GetFlag(FLAGS_calls);
  const int dims_flag = absl::GetFlag(FLAGS_dims);
  const double base_cosine = absl::GetFlag(FLAGS_base_cosine);
  if (!(base_cosine >= 0 && base_cosine <= 0.9)) {
    std::fprintf(stderr, "--base_cosine must be in [0, 0.9]\n");
    return 1;
  }
  std::vector<int> dims_list = {0};
  if (dims_flag > 0) dims_list.push_back(dims_flag);

  for (const std::string& hits_s : absl::GetFlag(FLAGS_hits)) {
    size_t n = 0;
    if (!absl::SimpleAtoi(hits_s, &n)) {
      std::fprintf(stderr, "bad --hits value %s\n", hits_s.c_str());
      return 1;
    }
    for (const int dims : dims_list) {
      const std::vector<dedupd::ResultHit> hits =
          MakeHits(pages, n, dims, base_cosine, absl::GetFlag(FLAGS_seed));
      for (const std::string& k_s : absl::GetFlag(FLAGS_top_k)) {
        dedupd::ResultsDedupOptions options = base;
        size_t top_k = 0;
        if (!absl::SimpleAtoi(k_s, &top_k)) {
          std::fprintf(stderr, "bad --top_k value %s\n", k_s.c_str());
          return 1;
        }
        options.top_k = top_k;
        absl::StatusOr<dedupd::ResultsDedupResult> r;
        for (int w = 0; w < 3; ++w) r = dedupd::DedupResults(hits, options);
        std::vector<double> us;
        us.reserve(calls);
        const double cpu_start = ThreadCpuSeconds();
        for (int c = 0; c < calls; ++c) {
          const Clock::time_point start = Clock::now();
          r = dedupd::DedupResults(hits, options);
          const std::chrono::duration<double, std::micro> took = Clock::now() - start;
          us.push_back(took.count());
        }
        const double cpu_us = (ThreadCpuSeconds() - cpu_start) * 1e6 / calls;
        if (!r.ok()) {
          std::fprintf(stderr, "DedupResults: %s\n", r.status().ToString().c_str());
          return 1;
        }
        size_t duplicate = 0, source_cap = 0;
        for (const dedupd::DroppedHit& d : r->dropped) {
          (d.reason == dedupd::DropReason::kDuplicate ? duplicate : source_cap)++;
        }
        double sum = 0;
        for (double u : us) sum += u;
        std::printf(
            "results_dedup hits=%zu dims=%d base_cosine=%.2f top_k=%zu "
            "measure=%s calls=%d mean_us=%.1f p50_us=%.1f p99_us=%.1f "
            "cpu_mean_us=%.1f kept=%zu duplicate=%zu source_cap=%zu "
            "not_examined=%zu\n",
            n, dims, dims > 0 ? base_cosine : 0.0, top_k, measure.c_str(), calls,
            sum / static_cast<double>(calls), Percentile(us, 0.5), Percentile(us, 0.99), cpu_us,
            r->kept.size(), duplicate, source_cap, r->not_examined.size());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
