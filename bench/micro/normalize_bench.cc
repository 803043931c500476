// normalize_bench: URL normalizer throughput on one thread, over a URL file
// (one URL a line; see bench/corpus/make_url_corpus.py). Prints one fixed-format
// line, the same as bench/w3lib_bench.py, so the two can be compared:
//
//   normalize  urls=<n> rounds=<r> urls_per_sec=<x> ns_per_url=<y> invalid=<k>
//
// urls is the number of lines, rounds how many times all of them were
// normalized (after one untimed warm-up round), invalid how many lines of one
// round the normalizer rejected. --rule_counts also prints, to stderr, how
// often each rule fired over one round (shows what the corpus exercises).
//
// Example:
//   build/bench/dedupd_normalize_bench --rounds=5 bench/corpus/sample_urls.txt
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "bench/corpus/read_lines.h"
#include "core/url/url_normalizer.h"

ABSL_FLAG(int, rounds, 3, "timed passes over all URLs");
ABSL_FLAG(bool, rule_counts, false, "print to stderr how often each rule fired over one round");

namespace {}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "normalize_bench: URL normalizer throughput on one thread.\n"
      "Usage: dedupd_normalize_bench [--rounds=N] [--rule_counts] URL_FILE");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::cerr << "normalize_bench: expected one URL file argument (see --help)\n";
    return 2;
  }
  const int rounds = absl::GetFlag(FLAGS_rounds);
  if (rounds < 1) {
    std::cerr << "normalize_bench: --rounds must be at least 1\n";
    return 2;
  }
  std::vector<std::string> urls;
  if (!dedupd::bench::ReadLines(args[1], &urls)) {
    std::cerr << "normalize_bench: cannot read " << args[1] << "\n";
    return 1;
  }
  if (urls.empty()) {
    std::cerr << "normalize_bench: " << args[1] << " has no URLs\n";
    return 1;
  }

  const dedupd::UrlNormalizer normalizer;

  // Warm-up round, untimed: faults in pages, fills caches, counts invalid.
  int64_t invalid = 0;
  size_t checksum = 0;
  for (const std::string& u : urls) {
    absl::StatusOr<std::string> n = normalizer.Normalize(u);
    if (n.ok()) {
      checksum += n->size();
    } else {
      ++invalid;
    }
  }

  const auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < rounds; ++r) {
    for (const std::string& u : urls) {
      absl::StatusOr<std::string> n = normalizer.Normalize(u);
      // Use the result so the call cannot be optimized away.
      checksum += n.ok() ? n->size() : 1;
    }
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double total = static_cast<double>(urls.size()) * rounds;
  std::cout << absl::StrFormat(
                   "normalize  urls=%d rounds=%d urls_per_sec=%.0f "
                   "ns_per_url=%.1f invalid=%d",
                   urls.size(), rounds, total / secs, secs * 1e9 / total, invalid)
            << std::endl;

  if (absl::GetFlag(FLAGS_rule_counts)) {
    std::map<std::string, int64_t> counts;
    std::map<std::string, int64_t> errors;
    std::vector<absl::string_view> fired;
    for (const std::string& u : urls) {
      fired.clear();
      absl::StatusOr<std::string> n = normalizer.Normalize(u, {}, &fired);
      if (!n.ok()) ++errors[std::string(n.status().message())];
      for (absl::string_view f : fired) ++counts[std::string(f)];
    }
    std::cerr << "normalize_bench: rules fired over one round:\n";
    for (const auto& [rule, count] : counts) {
      std::cerr << absl::StrFormat("  %-34s %d\n", rule, count);
    }
    if (!errors.empty()) {
      // Messages may quote the URL, so show only the most frequent ones.
      std::vector<std::pair<int64_t, std::string>> by_count;
      for (const auto& [message, count] : errors) {
        by_count.emplace_back(count, message);
      }
      std::sort(by_count.rbegin(), by_count.rend());
      if (by_count.size() > 10) by_count.resize(10);
      std::cerr << "normalize_bench: invalid, most frequent messages:\n";
      for (const auto& [count, message] : by_count) {
        std::cerr << absl::StrFormat("  %8d  %s\n", count, message);
      }
    }
  }
  // The checksum keeps the loops honest; printing it to stderr is harmless.
  std::cerr << "normalize_bench: checksum " << checksum << "\n";
  return 0;
}
