// lsh_index_bench: LshIndex query + verification latency, memory and insert
// time on random MinHash signatures. Prints, per size, one fixed-format
// line:
//
//   lsh_index n=<n> bands=<b> rows=<r> bucket_bits=<k> queries=<q>
//     query_us=<x> query_verify_us=<y> candidates_per_query=<c>
//     random_candidates_per_query=<rc> index_bytes_per_text=<i>
//     signature_bytes_per_text=<s> insert_us=<u>
//
// and one line per planted similarity j:
//
//   lsh_recall n=<n> j=<j> predicted=<p> candidate=<m> verified=<v>
//
// (each on one line). n signatures of random 8-bit slots (ids 0..n-1) are
// inserted one by one (insert_us: mean thread CPU time per Insert) and also
// kept in RAM for verification (signature_bytes_per_text, 128).
// index_bytes_per_text = MemoryBytes() / n. Half the queries are planted:
// a stored signature with each slot kept with probability j (else
// redrawn), j cycling over 0.5, 0.7, 0.8, 0.9, 0.95; half are random.
// query_us is the mean thread CPU time of LshIndex::Query; query_verify_us
// adds the verification of every candidate (EstimateJaccard against its
// stored signature >= --threshold), i.e. what the store will do per text.
// For each j, predicted is LshCandidateProbability(b, r, j + (1 - j)/256),
// candidate the share of planted queries whose source was a candidate, and
// verified the share whose source also passed verification.
//
// Example:
//   build-rel/bench/dedupd_lsh_index_bench --sizes=1000000,10000000
//   build/bench/dedupd_lsh_index_bench --sizes=20000 --queries=2000   # smoke
#include <algorithm>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/index/lsh_index.h"
#include "core/text/minhash.h"
#include "core/text/splitmix64.h"

ABSL_FLAG(std::string, sizes, "1000000,10000000",
          "comma-separated numbers of stored signatures, one line each");
ABSL_FLAG(int, queries, 100000, "timed queries per size (half planted, half random)");
ABSL_FLAG(int, bands, dedupd::LshIndex::kDefaultBands, "LSH bands");
ABSL_FLAG(int, rows, dedupd::LshIndex::kDefaultRows, "LSH rows per band");
ABSL_FLAG(int, bucket_bits, dedupd::LshIndex::kDefaultBucketBits, "buckets per band, log2");
ABSL_FLAG(double, threshold, 0.8, "verification: EstimateJaccard >= threshold");
ABSL_FLAG(uint64_t, seed, 19980523, "seed of the signature generator");

namespace {

using dedupd::MinHashSignature;
using dedupd::SplitMixRng;

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

void Randomize(MinHashSignature* s, SplitMixRng& rng) {
  for (int i = 0; i < dedupd::kMinHashSlots; i += 8) {
    uint64_t x = rng.Next();
    for (int j = 0; j < 8; ++j, x >>= 8) (*s)[i + j] = static_cast<uint8_t>(x);
  }
}

constexpr double kPlanted[] = {0.5, 0.7, 0.8, 0.9, 0.95};
constexpr int kKinds = sizeof(kPlanted) / sizeof(kPlanted[0]);

struct Query {
  MinHashSignature sig;
  int kind;         // index into kPlanted, or -1 for random
  uint32_t source;  // the planted query's stored signature
};

void Run(size_t n, int queries, int bands, int rows, int bucket_bits, double threshold,
         uint64_t seed) {
  SplitMixRng rng(seed ^ n);
  std::vector<MinHashSignature> stored(n);
  for (MinHashSignature& s : stored) Randomize(&s, rng);
  dedupd::LshIndex index(bands, rows, bucket_bits);
  const double insert_start = ThreadCpuSeconds();
  for (size_t i = 0; i < n; ++i) index.Insert(stored[i], static_cast<uint32_t>(i));
  const double insert_sec = ThreadCpuSeconds() - insert_start;

  std::vector<Query> qs(queries);
  for (int i = 0; i < queries; ++i) {
    Query& q = qs[i];
    if (i % 2 == 0) {
      q.kind = (i / 2) % kKinds;
      q.source = static_cast<uint32_t>(rng.Below(n));
      q.sig = stored[q.source];
      for (uint8_t& v : q.sig) {
        if (rng.Unit() >= kPlanted[q.kind]) v = static_cast<uint8_t>(rng.Next());
      }
    } else {
      q.kind = -1;
      q.source = 0;
      Randomize(&q.sig, rng);
    }
  }

  std::vector<uint32_t> ids;
  for (int i = 0; i < queries && i < 1000; ++i) index.Query(qs[i].sig, &ids);  // warm-up
  // Query alone.
  size_t candidates = 0, random_candidates = 0;
  const double query_start = ThreadCpuSeconds();
  for (const Query& q : qs) {
    index.Query(q.sig, &ids);
    candidates += ids.size();
    if (q.kind < 0) random_candidates += ids.size();
  }
  const double query_sec = ThreadCpuSeconds() - query_start;
  // Query and verification.
  int candidate_hits[kKinds] = {}, verified_hits[kKinds] = {}, planted[kKinds] = {};
  const double verify_start = ThreadCpuSeconds();
  for (const Query& q : qs) {
    index.Query(q.sig, &ids);
    bool source_candidate = false, source_verified = false;
    for (uint32_t id : ids) {
      const bool near = dedupd::EstimateJaccard(stored[id], q.sig) >= threshold;
      if (q.kind >= 0 && id == q.source) {
        source_candidate = true;
        source_verified = near;
      }
    }
    if (q.kind >= 0) {
      ++planted[q.kind];
      candidate_hits[q.kind] += source_candidate;
      verified_hits[q.kind] += source_verified;
    }
  }
  const double verify_sec = ThreadCpuSeconds() - verify_start;

  const int random_queries = queries / 2;
  std::cout << absl::StrFormat(
                   "lsh_index n=%d bands=%d rows=%d bucket_bits=%d queries=%d query_us=%.3f "
                   "query_verify_us=%.3f candidates_per_query=%.3f "
                   "random_candidates_per_query=%.4f index_bytes_per_text=%.1f "
                   "signature_bytes_per_text=%d insert_us=%.3f",
                   n, bands, rows, bucket_bits, queries, query_sec * 1e6 / queries,
                   verify_sec * 1e6 / queries, static_cast<double>(candidates) / queries,
                   static_cast<double>(random_candidates) / std::max(random_queries, 1),
                   static_cast<double>(index.MemoryBytes()) / n, dedupd::kMinHashSlots,
                   insert_sec * 1e6 / n)
            << std::endl;
  for (int k = 0; k < kKinds; ++k) {
    const double j = kPlanted[k];
    const double total = std::max(planted[k], 1);
    std::cout << absl::StrFormat(
                     "lsh_recall n=%d j=%.2f predicted=%.4f candidate=%.4f verified=%.4f", n, j,
                     dedupd::LshCandidateProbability(bands, rows, j + (1 - j) / 256),
                     candidate_hits[k] / total, verified_hits[k] / total)
              << std::endl;
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "lsh_index_bench: LshIndex query + verification latency, memory and recall on random "
      "MinHash signatures.\nUsage: dedupd_lsh_index_bench [--sizes=N,N,...] [--queries=Q]");
  absl::ParseCommandLine(argc, argv);
  const int bands = absl::GetFlag(FLAGS_bands), rows = absl::GetFlag(FLAGS_rows);
  const int bucket_bits = absl::GetFlag(FLAGS_bucket_bits);
  const int queries = absl::GetFlag(FLAGS_queries);
  if (!dedupd::LshIndex::IsValidLayout(bands, rows) ||
      bucket_bits < dedupd::LshIndex::kMinBucketBits ||
      bucket_bits > dedupd::LshIndex::kMaxBucketBits || queries < 2) {
    std::cerr << "lsh_index_bench: invalid --bands/--rows/--bucket_bits or --queries < 2\n";
    return 2;
  }
  std::vector<size_t> sizes;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_sizes), ',', absl::SkipEmpty())) {
    size_t n = 0;
    if (!absl::SimpleAtoi(s, &n) || n == 0 || n >= (size_t{1} << 32)) {
      std::cerr << "lsh_index_bench: bad size in --sizes: " << s << "\n";
      return 2;
    }
    sizes.push_back(n);
  }
  if (sizes.empty()) {
    std::cerr << "lsh_index_bench: --sizes is empty\n";
    return 2;
  }
  for (size_t n : sizes) {
    Run(n, queries, bands, rows, bucket_bits, absl::GetFlag(FLAGS_threshold),
        absl::GetFlag(FLAGS_seed));
  }
  return 0;
}
