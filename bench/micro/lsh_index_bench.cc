// lsh_index_bench: LshIndex bulk build time, query + verification latency,
// memory and recall on random MinHash signatures, and the store's
// per-namespace MinHashNearIndex: bulk load (a store's Open) and online
// inserts with their rebuilds. Prints, per size, one fixed-format line
// per workload:
//
//   lsh_index n=<n> bands=<b> rows=<r> bucket_bits=<k> queries=<q>
//     bulk_insert_s=<t> query_us=<x> query_verify_us=<y>
//     candidates_per_query=<c> random_candidates_per_query=<rc>
//     index_bytes_per_text=<i> signature_bytes_per_text=<s>
//   lsh_recall n=<n> j=<j> predicted=<p> candidate=<m> verified=<v>
//   near_bulk_load n=<n> bucket_bits=<k> load_s=<t> bytes_per_text=<m> query_us=<x>
//   near_rebuild n=<n> bucket_bits=<from>-><to> insert_s=<t>
//   near_online n=<n> bucket_bits=<k> rebuilds=<r> insert_us=<u>
//     longest_insert_s=<l> bytes_per_text=<m> query_us=<x>
//
// (each on one line; lsh_recall once per planted similarity j,
// near_rebuild once per rebuild). n signatures of random 8-bit slots (ids
// 0..n-1) are bulk-inserted into an LshIndex (bulk_insert_s: thread CPU
// time of LshIndex::BulkInsert) with --bucket_bits, by default
// MinHashNearIndex::BucketBitsFor(n), the store's choice; they are also
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
// near_bulk_load: MinHashNearIndex::BulkLoad of the n signatures (load_s,
// the vector handed over built beforehand); bytes_per_text its
// MemoryBytes() / n (index, signatures and id map: all it holds);
// query_us of MinHashNearIndex::Query (lock and result vector included).
// near_online (with --online): the n signatures inserted one by one into
// an empty MinHashNearIndex, which rebuilds its LshIndex as the count
// grows; insert_us the mean over all inserts, rebuilds included;
// near_rebuild times each Insert that rebuilds (the stall of one write),
// longest_insert_s the longest of them.
//
// Example:
//   build-rel/bench/dedupd_lsh_index_bench --sizes=1000000,10000000
//   build/bench/dedupd_lsh_index_bench --sizes=20000 --queries=2000   # smoke
#include <algorithm>
#include <cstdint>
#include <ctime>
#include <iostream>
#include <string>
#include <utility>
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
#include "storage/minhash_near_index.h"

ABSL_FLAG(std::string, sizes, "1000000,10000000",
          "comma-separated numbers of stored signatures, one line each");
ABSL_FLAG(int, queries, 100000, "timed queries per size (half planted, half random)");
ABSL_FLAG(int, bands, dedupd::LshIndex::kDefaultBands, "LSH bands");
ABSL_FLAG(int, rows, dedupd::LshIndex::kDefaultRows, "LSH rows per band");
ABSL_FLAG(int, bucket_bits, 0,
          "the LshIndex's buckets per band, log2; 0: MinHashNearIndex::BucketBitsFor(n)");
ABSL_FLAG(bool, online, true,
          "also insert the signatures one by one into a MinHashNearIndex (near_online)");
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

// Mean thread CPU seconds per query of `query` (which returns the number
// of candidates) over `qs`, after a warm-up.
template <typename QueryFn>
double SecondsPerQuery(const std::vector<Query>& qs, QueryFn query) {
  size_t candidates = 0;
  for (size_t i = 0; i < qs.size() && i < 1000; ++i) candidates += query(qs[i]);
  const double start = ThreadCpuSeconds();
  for (const Query& q : qs) candidates += query(q);
  const double sec = ThreadCpuSeconds() - start;
  asm volatile("" : : "r"(candidates));  // keep the queries
  return sec / static_cast<double>(qs.size());
}

void RunLshIndex(const std::vector<dedupd::LshIndex::Entry>& stored, const std::vector<Query>& qs,
                 int bands, int rows, int bucket_bits, double threshold) {
  const size_t n = stored.size();
  const int queries = static_cast<int>(qs.size());
  dedupd::LshIndex index(bands, rows, bucket_bits);
  const double bulk_start = ThreadCpuSeconds();
  index.BulkInsert(stored);
  const double bulk_sec = ThreadCpuSeconds() - bulk_start;

  std::vector<uint32_t> ids;
  // Query alone.
  size_t candidates = 0, random_candidates = 0;
  const double query_sec = SecondsPerQuery(qs, [&](const Query& q) {
    index.Query(q.sig, &ids);
    return ids.size();
  });
  for (const Query& q : qs) {
    index.Query(q.sig, &ids);
    candidates += ids.size();
    if (q.kind < 0) random_candidates += ids.size();
  }
  // Query and verification.
  int candidate_hits[kKinds] = {}, verified_hits[kKinds] = {}, planted[kKinds] = {};
  const double verify_start = ThreadCpuSeconds();
  for (const Query& q : qs) {
    index.Query(q.sig, &ids);
    bool source_candidate = false, source_verified = false;
    for (uint32_t id : ids) {
      const bool near = dedupd::EstimateJaccard(stored[id].signature, q.sig) >= threshold;
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
                   "lsh_index n=%d bands=%d rows=%d bucket_bits=%d queries=%d bulk_insert_s=%.3f "
                   "query_us=%.3f query_verify_us=%.3f candidates_per_query=%.3f "
                   "random_candidates_per_query=%.4f index_bytes_per_text=%.1f "
                   "signature_bytes_per_text=%d",
                   n, bands, rows, bucket_bits, queries, bulk_sec, query_sec * 1e6,
                   verify_sec * 1e6 / queries, static_cast<double>(candidates) / queries,
                   static_cast<double>(random_candidates) / std::max(random_queries, 1),
                   static_cast<double>(index.MemoryBytes()) / n, dedupd::kMinHashSlots)
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

void RunNearBulkLoad(const std::vector<dedupd::LshIndex::Entry>& stored,
                     const std::vector<Query>& qs) {
  const size_t n = stored.size();
  dedupd::MinHashNearIndex near;
  std::vector<dedupd::LshIndex::Entry> entries = stored;  // what the store's Open reads
  const double load_start = ThreadCpuSeconds();
  near.BulkLoad(std::move(entries));
  const double load_sec = ThreadCpuSeconds() - load_start;
  const double query_sec =
      SecondsPerQuery(qs, [&](const Query& q) { return near.Query(q.sig).size(); });
  std::cout << absl::StrFormat(
                   "near_bulk_load n=%d bucket_bits=%d load_s=%.3f bytes_per_text=%.1f "
                   "query_us=%.3f",
                   n, near.bucket_bits(), load_sec, static_cast<double>(near.MemoryBytes()) / n,
                   query_sec * 1e6)
            << std::endl;
}

void RunNearOnline(const std::vector<dedupd::LshIndex::Entry>& stored,
                   const std::vector<Query>& qs) {
  using dedupd::MinHashNearIndex;
  const size_t n = stored.size();
  MinHashNearIndex near;
  double longest = 0;
  int rebuilds = 0;
  int bits = 0;  // near.bucket_bits(), without taking its lock per Insert
  const double insert_start = ThreadCpuSeconds();
  for (size_t i = 0; i < n; ++i) {
    // The Insert that takes the count past the growth point rebuilds
    // (MinHashNearIndex::kGrowTextsPerBucket): time it alone.
    if (bits == 0 || bits >= MinHashNearIndex::kMaxBucketBits ||
        i + 1 <= MinHashNearIndex::kGrowTextsPerBucket << bits) {
      near.Insert(stored[i].id, stored[i].signature);
      if (bits == 0) bits = near.bucket_bits();
      continue;
    }
    const double start = ThreadCpuSeconds();
    near.Insert(stored[i].id, stored[i].signature);
    const double sec = ThreadCpuSeconds() - start;
    longest = std::max(longest, sec);
    ++rebuilds;
    const int from = bits;
    bits = near.bucket_bits();
    std::cout << absl::StrFormat("near_rebuild n=%d bucket_bits=%d->%d insert_s=%.3f", i + 1, from,
                                 bits, sec)
              << std::endl;
  }
  const double insert_sec = ThreadCpuSeconds() - insert_start;
  const double query_sec =
      SecondsPerQuery(qs, [&](const Query& q) { return near.Query(q.sig).size(); });
  std::cout << absl::StrFormat(
                   "near_online n=%d bucket_bits=%d rebuilds=%d insert_us=%.3f "
                   "longest_insert_s=%.3f bytes_per_text=%.1f query_us=%.3f",
                   n, near.bucket_bits(), rebuilds, insert_sec * 1e6 / n, longest,
                   static_cast<double>(near.MemoryBytes()) / n, query_sec * 1e6)
            << std::endl;
}

void Run(size_t n, int queries, int bands, int rows, int bucket_bits, double threshold, bool online,
         uint64_t seed) {
  SplitMixRng rng(seed ^ n);
  std::vector<dedupd::LshIndex::Entry> stored(n);
  for (size_t i = 0; i < n; ++i) {
    Randomize(&stored[i].signature, rng);
    stored[i].id = static_cast<uint32_t>(i);
  }
  std::vector<Query> qs(queries);
  for (int i = 0; i < queries; ++i) {
    Query& q = qs[i];
    if (i % 2 == 0) {
      q.kind = (i / 2) % kKinds;
      q.source = static_cast<uint32_t>(rng.Below(n));
      q.sig = stored[q.source].signature;
      for (uint8_t& v : q.sig) {
        if (rng.Unit() >= kPlanted[q.kind]) v = static_cast<uint8_t>(rng.Next());
      }
    } else {
      q.kind = -1;
      q.source = 0;
      Randomize(&q.sig, rng);
    }
  }
  if (bucket_bits == 0) bucket_bits = dedupd::MinHashNearIndex::BucketBitsFor(n);
  RunLshIndex(stored, qs, bands, rows, bucket_bits, threshold);
  RunNearBulkLoad(stored, qs);
  if (online) RunNearOnline(stored, qs);
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "lsh_index_bench: LshIndex bulk build, query + verification latency, memory and recall, "
      "and MinHashNearIndex bulk load and online growth, on random MinHash signatures.\n"
      "Usage: dedupd_lsh_index_bench [--sizes=N,N,...] [--queries=Q] [--online=false]");
  absl::ParseCommandLine(argc, argv);
  const int bands = absl::GetFlag(FLAGS_bands), rows = absl::GetFlag(FLAGS_rows);
  const int bucket_bits = absl::GetFlag(FLAGS_bucket_bits);
  const int queries = absl::GetFlag(FLAGS_queries);
  if (!dedupd::LshIndex::IsValidLayout(bands, rows) ||
      (bucket_bits != 0 && bucket_bits < dedupd::LshIndex::kMinBucketBits) ||
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
        absl::GetFlag(FLAGS_online), absl::GetFlag(FLAGS_seed));
  }
  return 0;
}
