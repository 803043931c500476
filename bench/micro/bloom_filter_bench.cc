// bloom_filter_bench: BloomFilter insert and probe throughput on one core,
// and its measured false positive rate beside the blocked and the standard
// theory (docs/bloom_filter.md). Prints one fixed-format line per size:
//
//   bloom keys=<n> bits_per_key=<b> probes_k=<k> memory_bytes=<m>
//     insert_per_s=<i> probe_absent_per_s=<a> probe_present_per_s=<p>
//     fp_rate_measured=<f> fp_rate_blocked_theory=<fb>
//     fp_rate_standard_theory=<fs> false_negatives=<0>
//
// (on one line). For each --keys size a filter of BlocksFor(n, b) blocks
// and OptimalProbes(b) probes is filled with n distinct key hashes, then
// --probes absent and --probes present hashes are looked up. The key
// hashes are synthetic: SplitMix64 outputs of a counter (distinct, since
// SplitMix64 is a bijection of its state), standing in for KeyHash of real
// keys, so that the figures time the filter and not the key hash (KeyHash
// of a ~50-byte URL adds ~10 ns). Absent hashes come from a second range
// of SplitMix64 states, so none equals an inserted hash. Present probes
// revisit inserted counters drawn at random. The three rates are per
// second of thread CPU time, which is robust against other processes
// taking turns on the cores (not against them sharing the caches and
// memory bus). The probe loops issue independent lookups back to back, so
// the CPU overlaps some of their cache misses, as a batch of lookups
// would; one lookup alone costs about one memory latency on a large
// filter. The fp theories use the filter's real size: blocked =
// BlockedFalsePositiveRate(n, blocks, k), standard =
// StandardFalsePositiveRate(blocks * 512 / n, k).
//
// With --serialize a second line follows per size:
//
//   bloom_serialize keys=<n> bytes=<s> serialize_sec=<a> checksum_sec=<c>
//     deserialize_sec=<d> round_trip=<yes|no>
//
// Serialize (copy + checksum), ChecksumWords alone, and Deserialize
// (parse, checksum, copy into a new filter), in seconds of thread CPU time
// (which includes the kernel's time for the page faults of the new
// memory); round_trip=yes when the copy's words equal the original's.
//
// Exit status 1 when a present probe answers "absent" (false_negatives > 0)
// or a round trip fails.
//
// Example:
//   build-rel/bench/dedupd_bloom_filter_bench --bits_per_key=10
//       --keys=10000000,1000000000 --probes=10000000   (one command line)
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/index/bloom_filter.h"
#include "core/text/splitmix64.h"

ABSL_FLAG(std::string, keys, "10000000,1000000000",
          "comma-separated numbers of inserted keys, one filter and one line "
          "each");
ABSL_FLAG(double, bits_per_key, 10.0, "bits of filter per expected key");
ABSL_FLAG(int64_t, probes, 10000000, "absent lookups, and present lookups, timed per size");
ABSL_FLAG(uint64_t, seed, 20070101, "seed of the synthetic key hashes");
ABSL_FLAG(bool, serialize, false,
          "also time Serialize / ChecksumWords / Deserialize of each filter "
          "and print a bloom_serialize line (needs ~3x the filter's memory)");

namespace {

using dedupd::BloomFilter;

// CPU seconds used by the calling thread.
double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

// SplitMix64 (core/text/splitmix64.h) is a bijection of its state, so
// distinct counters give distinct hashes.
using ::dedupd::SplitMix64;

// Inserted hash i and absent hash i (0 <= i < 2^40): SplitMix64 of the
// states seed * 2^40 + i and (seed + 1) * 2^40 + i (mod 2^64), two disjoint
// ranges of states, so no absent hash equals an inserted one.
inline uint64_t PresentHash(uint64_t seed, uint64_t i) { return SplitMix64((seed << 40) + i); }
inline uint64_t AbsentHash(uint64_t seed, uint64_t i) { return SplitMix64(((seed + 1) << 40) + i); }

int RunSize(uint64_t n, double bits_per_key, int64_t probes, uint64_t seed) {
  const uint64_t blocks = BloomFilter::BlocksFor(n, bits_per_key);
  const int k = BloomFilter::OptimalProbes(bits_per_key);
  BloomFilter filter(blocks, k);

  double t0 = ThreadCpuSeconds();
  for (uint64_t i = 0; i < n; ++i) filter.Insert(PresentHash(seed, i));
  const double insert_sec = ThreadCpuSeconds() - t0;

  uint64_t fp = 0;
  t0 = ThreadCpuSeconds();
  for (int64_t i = 0; i < probes; ++i) {
    fp += filter.MayContain(AbsentHash(seed, static_cast<uint64_t>(i))) ? 1 : 0;
  }
  const double absent_sec = ThreadCpuSeconds() - t0;

  // Present probes: inserted counters drawn at random (SplitMix64 of the
  // probe number, mapped onto [0, n) by multiply-shift). Branch-free on
  // purpose: a mispredicted branch per probe would flush the pipeline and
  // hide how many lookups' misses the CPU overlaps.
  uint64_t false_negatives = 0;
  t0 = ThreadCpuSeconds();
  for (int64_t i = 0; i < probes; ++i) {
    const uint64_t idx = static_cast<uint64_t>(
        (static_cast<unsigned __int128>(SplitMix64(~static_cast<uint64_t>(i))) * n) >> 64);
    false_negatives += filter.MayContain(PresentHash(seed, idx)) ? 0 : 1;
  }
  const double present_sec = ThreadCpuSeconds() - t0;

  const double real_bits_per_key = static_cast<double>(filter.num_bits()) / static_cast<double>(n);
  std::printf(
      "bloom keys=%llu bits_per_key=%.1f probes_k=%d memory_bytes=%zu "
      "insert_per_s=%.0f probe_absent_per_s=%.0f probe_present_per_s=%.0f "
      "fp_rate_measured=%.6f fp_rate_blocked_theory=%.6f "
      "fp_rate_standard_theory=%.6f false_negatives=%llu\n",
      static_cast<unsigned long long>(n), bits_per_key, k, filter.memory_bytes(),
      static_cast<double>(n) / insert_sec, static_cast<double>(probes) / absent_sec,
      static_cast<double>(probes) / present_sec,
      static_cast<double>(fp) / static_cast<double>(probes),
      BloomFilter::BlockedFalsePositiveRate(n, blocks, k),
      BloomFilter::StandardFalsePositiveRate(real_bits_per_key, k),
      static_cast<unsigned long long>(false_negatives));
  std::fflush(stdout);
  int status = false_negatives == 0 ? 0 : 1;

  if (absl::GetFlag(FLAGS_serialize)) {
    double start = ThreadCpuSeconds();
    std::string bytes = filter.Serialize(n);
    const double serialize_sec = ThreadCpuSeconds() - start;
    start = ThreadCpuSeconds();
    const uint64_t checksum =
        BloomFilter::ChecksumWords(absl::string_view(bytes).substr(BloomFilter::kHeaderBytes));
    const double checksum_sec = ThreadCpuSeconds() - start;
    start = ThreadCpuSeconds();
    absl::StatusOr<BloomFilter::Loaded> loaded = BloomFilter::Deserialize(bytes);
    const double deserialize_sec = ThreadCpuSeconds() - start;
    const bool round_trip = loaded.ok() && loaded->header.words_checksum == checksum &&
                            loaded->filter.WordBytes() == filter.WordBytes();
    if (!round_trip) status = 1;
    std::printf(
        "bloom_serialize keys=%llu bytes=%zu serialize_sec=%.3f "
        "checksum_sec=%.3f deserialize_sec=%.3f round_trip=%s\n",
        static_cast<unsigned long long>(n), bytes.size(), serialize_sec, checksum_sec,
        deserialize_sec, round_trip ? "yes" : "no");
    std::fflush(stdout);
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "bloom_filter_bench: BloomFilter insert/probe throughput on one core "
      "and its false positive rate.\n"
      "Usage: dedupd_bloom_filter_bench [--keys=N,N,...] [--bits_per_key=B] "
      "[--probes=P] [--seed=S] [--serialize]");
  absl::ParseCommandLine(argc, argv);
  const double bits_per_key = absl::GetFlag(FLAGS_bits_per_key);
  const int64_t probes = absl::GetFlag(FLAGS_probes);
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  if (!(bits_per_key > 0 && bits_per_key <= 1000)) {
    std::cerr << "bloom_filter_bench: --bits_per_key must be in (0, 1000]\n";
    return 2;
  }
  if (probes < 1) {
    std::cerr << "bloom_filter_bench: --probes must be >= 1\n";
    return 2;
  }
  std::vector<uint64_t> sizes;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_keys), ',', absl::SkipEmpty())) {
    uint64_t n = 0;
    if (!absl::SimpleAtoi(s, &n) || n == 0 || n >= (uint64_t{1} << 40)) {
      std::cerr << "bloom_filter_bench: bad size in --keys: " << s << "\n";
      return 2;
    }
    sizes.push_back(n);
  }
  if (sizes.empty()) {
    std::cerr << "bloom_filter_bench: --keys is empty\n";
    return 2;
  }
  int status = 0;
  for (uint64_t n : sizes) {
    if (RunSize(n, bits_per_key, probes, seed) != 0) status = 1;
  }
  return status;
}
