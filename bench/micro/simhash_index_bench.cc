// simhash_index_bench: SimHashIndex query latency, memory and load time on
// random 64-bit fingerprints, beside a brute-force scan. Prints one
// fixed-format line per size and number of blocks (--blocks):
//
//   simhash_index n=<n> k=<k> queries=<q> query_us=<x> queries_per_sec=<y>
//     query_wall_us=<xw>
//     hits_per_query=<h> bytes_per_fp=<z> bulk_load_sec=<w> insert_us=<i>
//     bytes_per_fp_after_inserts=<z2> brute_us=<b> blocks=<B> tables=<T>
//     exact=<yes|no>
//
// (on one line; blocks and tables come late so that the line still starts
// as it did before they existed, which bench/ci_smoke.sh matches). n fingerprints (ids 0..n-1) are
// loaded with one BulkInsert (bulk_load_sec, CPU time; bytes_per_fp = MemoryBytes() / size()). Half
// the queries are stored fingerprints with 0..k+1 random bits flipped
// (planted near matches), half are random; query_us is the mean
// single-thread latency of Query(q, k, limit) in thread CPU time (robust when
// other processes share the cores; query_wall_us is the wall-clock figure)
// and hits_per_query the mean number within k. Then --inserts new
// fingerprints are inserted one by one (insert_us, CPU; the bytes per
// fingerprint afterwards include the buckets' growth slack). brute_us (CPU)
// is one popcount scan over all n fingerprints; on --brute_queries of the
// queries the index's full answer is compared with the scan's: exact=yes
// when all agree.
//
// With --mixed_insert_rate=R a second line follows per size:
//
//   simhash_index_mixed n=<n> k=<k> insert_rate=<R> inserts_per_sec=<r>
//     query_us=<x> query_wall_us=<xw> blocks=<B>
//
// the same queries timed again while a second thread inserts R new
// fingerprints per second (inserts_per_sec is what it achieved).
//
// Sizes run in order, and for each size every --blocks value, one index in
// memory at a time.
//
// Example:
//   build/bench/dedupd_simhash_index_bench --sizes=100000,1000000,10000000
//   build/bench/dedupd_simhash_index_bench --sizes=10000000 --blocks=4,5,6
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/index/simhash_index.h"
#include "core/text/splitmix64.h"

ABSL_FLAG(std::string, sizes, "100000,1000000,10000000",
          "comma-separated numbers of stored fingerprints, one line each");
ABSL_FLAG(int, k, 3, "max_distance of the index and of every query");
ABSL_FLAG(std::string, blocks, "0",
          "comma-separated numbers of blocks of the index (SimHashIndex's "
          "`blocks`; 0 = its default), one line each per size");
ABSL_FLAG(int, queries, 200000, "timed queries per size");
ABSL_FLAG(int, brute_queries, 100,
          "queries also answered by a brute-force scan (timed and compared)");
ABSL_FLAG(int, inserts, 100000, "online Inserts timed after the bulk load");
ABSL_FLAG(int, limit, 10, "Query limit");
ABSL_FLAG(uint64_t, seed, 20070508, "seed of the fingerprint generator");
ABSL_FLAG(int, mixed_insert_rate, 0,
          "when > 0, also time the queries again while a second thread "
          "inserts new fingerprints at this many per second, and print a "
          "simhash_index_mixed line");

namespace {

using dedupd::SimHashIndex;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// CPU seconds used by the calling thread: robust against other processes
// sharing the cores, which wall time is not.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// SplitMix64 (Steele, Lea, Flood 2014): fixed output for a fixed seed on
// every platform, unlike std::uniform_*_distribution.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    const uint64_t out = dedupd::SplitMix64(state_);  // finalizes state_ + C
    state_ += 0x9e3779b97f4a7c15ULL;
    return out;
  }

 private:
  uint64_t state_;
};

uint64_t FlipBits(uint64_t fp, int bits, SplitMix64& rng) {
  uint64_t mask = 0;
  while (__builtin_popcountll(mask) < bits) mask |= uint64_t{1} << (rng.Next() % 64);
  return fp ^ mask;
}

// The brute-force reference: every fingerprint within k, as Matches ordered
// like Query's (ids are positions). Built with POPCNT, like the index, so
// the comparison is fair on the Debian x86-64 baseline.
#if defined(__x86_64__)
__attribute__((target("popcnt")))
#endif
void BruteForce(const std::vector<uint64_t>& fps, uint64_t q, int k,
                std::vector<SimHashIndex::Match>* out) {
  out->clear();
  const size_t n = fps.size();
  for (size_t i = 0; i < n; ++i) {
    const int d = __builtin_popcountll(fps[i] ^ q);
    if (d <= k) out->push_back({fps[i], static_cast<uint32_t>(i), d});
  }
}

// Times `qs` on this thread while another inserts new fingerprints at
// `rate` per second (paced in 1 ms batches); prints one
// simhash_index_mixed line.
void RunMixed(SimHashIndex& index, const std::vector<uint64_t>& qs, size_t n, int k, int blocks,
              size_t limit, int rate, uint32_t first_id, SplitMix64& rng) {
  std::atomic<bool> stop{false};
  std::atomic<int64_t> inserted{0};
  const uint64_t writer_seed = rng.Next();
  const auto start = Clock::now();
  std::thread writer([&] {
    SplitMix64 wrng(writer_seed);
    int64_t i = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      const auto due = start + std::chrono::microseconds(i * 1000000 / rate);
      if (Clock::now() < due) {
        std::this_thread::sleep_until(due);
        continue;
      }
      for (int b = 0; b < std::max(1, rate / 1000); ++b, ++i) {
        index.Insert(wrng.Next(), static_cast<uint32_t>(first_id + i));
      }
      inserted.store(i, std::memory_order_relaxed);
    }
  });
  const double cpu_start = ThreadCpuSeconds();
  for (uint64_t q : qs) {
    size_t total = 0;
    index.Query(q, k, limit, &total);
  }
  const double cpu = ThreadCpuSeconds() - cpu_start;
  const double wall = Seconds(start);
  stop.store(true);
  writer.join();
  std::cout << absl::StrFormat(
                   "simhash_index_mixed n=%d k=%d insert_rate=%d "
                   "inserts_per_sec=%.0f query_us=%.3f query_wall_us=%.3f "
                   "blocks=%d",
                   n, k, rate, inserted.load() / wall, cpu * 1e6 / qs.size(),
                   wall * 1e6 / qs.size(), blocks)
            << std::endl;
}

bool Run(size_t n, int k, int blocks, int queries, int brute_queries, int inserts, size_t limit,
         uint64_t seed, int mixed_insert_rate) {
  SplitMix64 rng(seed ^ n);
  std::vector<SimHashIndex::Entry> entries(n);
  std::vector<uint64_t> fps(n);
  for (size_t i = 0; i < n; ++i) {
    fps[i] = rng.Next();
    entries[i] = {fps[i], static_cast<uint32_t>(i)};
  }
  std::vector<uint64_t> qs(queries);
  for (int i = 0; i < queries; ++i) {
    qs[i] = i % 2 == 0 ? FlipBits(fps[rng.Next() % n], (i / 2) % (k + 2), rng) : rng.Next();
  }

  SimHashIndex index(k, blocks);
  const double load_start = ThreadCpuSeconds();
  index.BulkInsert(entries);
  const double load_sec = ThreadCpuSeconds() - load_start;
  entries.clear();
  entries.shrink_to_fit();
  const double bytes_per_fp = static_cast<double>(index.MemoryBytes()) / index.size();

  // Warm-up pass over a few queries (page faults, branch predictors).
  size_t hits = 0;
  for (int i = 0; i < queries && i < 1000; ++i) {
    size_t total = 0;
    index.Query(qs[i], k, limit, &total);
  }
  const auto start = Clock::now();
  const double cpu_start = ThreadCpuSeconds();
  for (int i = 0; i < queries; ++i) {
    size_t total = 0;
    index.Query(qs[i], k, limit, &total);
    hits += total;
  }
  const double query_sec = ThreadCpuSeconds() - cpu_start;
  const double query_wall_sec = Seconds(start);

  // Brute force: timing and exactness on a sample of the same queries.
  bool exact = true;
  std::vector<SimHashIndex::Match> want;
  double brute_sec = 0;
  const int brute = std::min(brute_queries, queries);
  for (int i = 0; i < brute; ++i) {
    const double brute_start = ThreadCpuSeconds();
    BruteForce(fps, qs[i], k, &want);
    brute_sec += ThreadCpuSeconds() - brute_start;
    std::sort(want.begin(), want.end(),
              [](const SimHashIndex::Match& a, const SimHashIndex::Match& b) {
                if (a.distance != b.distance) return a.distance < b.distance;
                if (a.id != b.id) return a.id < b.id;
                return a.fingerprint < b.fingerprint;
              });
    size_t total = 0;
    if (index.Query(qs[i], k, ~size_t{0}, &total) != want || total != want.size()) {
      exact = false;
    }
  }

  const double insert_start = ThreadCpuSeconds();
  for (int i = 0; i < inserts; ++i) {
    index.Insert(rng.Next(), static_cast<uint32_t>(n + i));
  }
  const double insert_sec = ThreadCpuSeconds() - insert_start;
  const double bytes_after = static_cast<double>(index.MemoryBytes()) / index.size();

  std::cout << absl::StrFormat(
                   "simhash_index n=%d k=%d queries=%d query_us=%.3f "
                   "queries_per_sec=%.0f query_wall_us=%.3f "
                   "hits_per_query=%.2f "
                   "bytes_per_fp=%.2f bulk_load_sec=%.3f insert_us=%.3f "
                   "bytes_per_fp_after_inserts=%.2f brute_us=%.1f blocks=%d "
                   "tables=%d exact=%s",
                   n, k, queries, query_sec * 1e6 / queries, queries / query_sec,
                   query_wall_sec * 1e6 / queries, static_cast<double>(hits) / queries,
                   bytes_per_fp, load_sec, inserts > 0 ? insert_sec * 1e6 / inserts : 0.0,
                   bytes_after, brute > 0 ? brute_sec * 1e6 / brute : 0.0, index.blocks(),
                   index.tables(), exact ? "yes" : "no")
            << std::endl;
  if (mixed_insert_rate > 0) {
    RunMixed(index, qs, n, k, index.blocks(), limit, mixed_insert_rate,
             static_cast<uint32_t>(n + inserts), rng);
  }
  return exact;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "simhash_index_bench: SimHashIndex query latency, memory and load time "
      "beside a brute-force scan.\n"
      "Usage: dedupd_simhash_index_bench [--sizes=N,N,...] [--k=3] "
      "[--blocks=B,B,...] "
      "[--queries=Q] [--brute_queries=B] [--inserts=I]");
  absl::ParseCommandLine(argc, argv);
  const int k = absl::GetFlag(FLAGS_k);
  const int queries = absl::GetFlag(FLAGS_queries);
  const int brute_queries = absl::GetFlag(FLAGS_brute_queries);
  const int inserts = absl::GetFlag(FLAGS_inserts);
  const int limit = absl::GetFlag(FLAGS_limit);
  const int mixed_insert_rate = absl::GetFlag(FLAGS_mixed_insert_rate);
  if (k < 0 || k > SimHashIndex::kMaxSupportedDistance) {
    std::cerr << "simhash_index_bench: --k must be in [0, " << SimHashIndex::kMaxSupportedDistance
              << "]\n";
    return 2;
  }
  if (queries < 1 || brute_queries < 0 || inserts < 0 || limit < 0 || mixed_insert_rate < 0) {
    std::cerr << "simhash_index_bench: --queries must be >= 1; "
                 "--brute_queries, --inserts, --limit, --mixed_insert_rate "
                 ">= 0\n";
    return 2;
  }
  std::vector<size_t> sizes;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',', absl::SkipEmpty())) {
    size_t n = 0;
    if (!absl::SimpleAtoi(s, &n) || n == 0 || n >= (size_t{1} << 32)) {
      std::cerr << "simhash_index_bench: bad size in --sizes: " << s << "\n";
      return 2;
    }
    sizes.push_back(n);
  }
  if (sizes.empty()) {
    std::cerr << "simhash_index_bench: --sizes is empty\n";
    return 2;
  }
  std::vector<int> blocks_list;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_blocks), ',', absl::SkipEmpty())) {
    int b = 0;
    if (!absl::SimpleAtoi(s, &b) || !SimHashIndex::IsValidLayout(k, b)) {
      std::cerr << "simhash_index_bench: bad value in --blocks for --k=" << k << ": " << s
                << " (0, or k+1 .. k+1+" << SimHashIndex::kMaxExtraBlocks << " with at most "
                << SimHashIndex::kMaxTables << " tables)\n";
      return 2;
    }
    blocks_list.push_back(b);
  }
  if (blocks_list.empty()) {
    std::cerr << "simhash_index_bench: --blocks is empty\n";
    return 2;
  }
  bool exact = true;
  for (size_t n : sizes) {
    for (int blocks : blocks_list) {
      exact = Run(n, k, blocks, queries, brute_queries, inserts, static_cast<size_t>(limit),
                  absl::GetFlag(FLAGS_seed), mixed_insert_rate) &&
              exact;
    }
  }
  return exact ? 0 : 1;
}
