// url_store_bench: the exact URL store alone (no gRPC), with and without its
// Bloom front. Fills a fresh RocksDbStore with --preload synthetic
// URLs, then for each filter setting (off, on) reopens it with a block
// cache of --block_cache_mb (far smaller than the store) and runs two claim
// workloads of --measure URLs each, --threads callers of --batch URLs:
//   mostly_new:  --new_share of the URLs never stored, the rest stored ones;
//   mostly_seen: the reverse.
// One line per (filter, workload):
//
//   url_store filter=<on|off> workload=<w> stored=<n> claims=<m>
//       claims_per_sec=<x> store_keys_read_per_claim=<r>
//       block_reads_per_claim=<b> new=<k> filter_bytes=<f> open_secs=<o>
//
// store_keys_read_per_claim: keys ClaimUrls looked up in RocksDB (MultiGet),
// per claimed URL (a new URL is looked at twice: before and under its claim
// lock); block_reads_per_claim: data blocks RocksDB read from its files
// (block cache misses; the files themselves sit in the OS page cache on a
// machine with spare memory), per claimed URL. Stored URLs are drawn at
// random from the preloaded ones; every new URL is distinct.
//
// Example:
//   dedupd_url_store_bench --dir=/tmp/us --preload=10000000 --measure=1000000
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "bench/load/load_driver.h"
#include "core/url/url_normalizer.h"
#include "storage/rocksdb/rocksdb_store.h"

ABSL_FLAG(std::string, dir, "", "scratch directory (its store is removed first)");
ABSL_FLAG(int64_t, preload, 10000000, "URLs stored before measuring");
ABSL_FLAG(int64_t, measure, 1000000, "URLs claimed per workload and filter setting");
ABSL_FLAG(int, batch, 1000, "URLs per ClaimUrls call");
ABSL_FLAG(int, threads, 4, "claiming threads");
ABSL_FLAG(int64_t, block_cache_mb, 8, "RocksDB block cache while measuring, in MiB");
ABSL_FLAG(double, new_share, 0.9,
          "share of new URLs in mostly_new (and of stored ones in mostly_seen)");
ABSL_FLAG(bool, keep, false, "keep the store directory");
ABSL_FLAG(bool, concurrent_memtable_writes, true,
          "RocksDbStoreOptions::concurrent_memtable_writes while measuring");
ABSL_FLAG(std::string, filters, "off,on", "front settings to measure, in order");

namespace {

using ::dedupd::bench::Clock;
using ::dedupd::bench::Mix;

// URL i: about 70 bytes, 5,000 hosts, a pure function of i.
std::string Url(uint64_t i) {
  return absl::StrCat("https://www.site", Mix(i) % 5000, ".example/articles/", i,
                      "/index.html?lang=en&ref=", i % 97);
}

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

dedupd::RocksDbStoreOptions Options(const std::string& path, bool filter, size_t cache_bytes,
                                    uint64_t expected) {
  dedupd::RocksDbStoreOptions o;
  o.path = path;
  o.normalizer_version = dedupd::UrlNormalizer::kVersion;
  o.block_cache_bytes = cache_bytes;
  o.url_filter.enabled = filter;
  o.url_filter.expected_urls = expected;
  o.collect_statistics = true;
  o.concurrent_memtable_writes = absl::GetFlag(FLAGS_concurrent_memtable_writes);
  return o;
}

// Claims `keys` split into batches over `threads` threads; returns the
// number answered new, or -1 on an error (printed).
int64_t ClaimAll(dedupd::RocksDbStore* store, const std::vector<std::string>& keys, int batch,
                 int threads) {
  std::atomic<size_t> next{0};
  std::atomic<int64_t> fresh{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      std::vector<dedupd::UrlClaim> out;
      for (;;) {
        const size_t begin = next.fetch_add(static_cast<size_t>(batch));
        if (begin >= keys.size() || failed) return;
        const size_t end = std::min(keys.size(), begin + static_cast<size_t>(batch));
        absl::Status s = store->ClaimUrls(absl::MakeConstSpan(keys).subspan(begin, end - begin),
                                          absl::Now(), &out);
        if (!s.ok()) {
          std::cerr << "url_store_bench: " << s << "\n";
          failed = true;
          return;
        }
        int64_t n = 0;
        for (const dedupd::UrlClaim& c : out) n += c.is_new;
        fresh += n;
      }
    });
  }
  for (std::thread& w : workers) w.join();
  return failed ? -1 : fresh.load();
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const int64_t preload = absl::GetFlag(FLAGS_preload);
  const int64_t measure = absl::GetFlag(FLAGS_measure);
  const int batch = absl::GetFlag(FLAGS_batch);
  const int threads = absl::GetFlag(FLAGS_threads);
  const double new_share = absl::GetFlag(FLAGS_new_share);
  if (dir.empty() || preload < 1 || measure < 1 || batch < 1 || threads < 1 ||
      !(new_share >= 0 && new_share <= 1)) {
    std::cerr << "url_store_bench: need --dir, --preload, --measure, --batch, "
                 "--threads >= 1 and --new_share in [0, 1]\n";
    return 2;
  }
  const std::string path = dir + "/store";
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  std::filesystem::create_directories(dir, ec);
  const size_t cache = static_cast<size_t>(absl::GetFlag(FLAGS_block_cache_mb)) << 20;
  // The filter's design size: the store after both runs, so that the
  // measurement runs on one segment.
  const uint64_t expected = static_cast<uint64_t>(preload + 4 * measure);

  {
    auto store = dedupd::RocksDbStore::Open(Options(path, true, size_t{256} << 20, expected));
    if (!store.ok()) {
      std::cerr << "url_store_bench: " << store.status() << "\n";
      return 1;
    }
    const auto t0 = Clock::now();
    std::vector<std::string> keys;
    for (int64_t from = 0; from < preload; from += 100000) {
      keys.clear();
      for (int64_t i = from; i < std::min(preload, from + 100000); ++i) {
        keys.push_back(Url(static_cast<uint64_t>(i)));
      }
      if (ClaimAll(store->get(), keys, batch, threads) < 0) return 1;
    }
    std::cerr << absl::StrFormat("url_store_bench: preloaded %d URLs in %.1f s\n", preload,
                                 Since(t0));
    if (absl::Status s = (*store)->Close(); !s.ok()) {
      std::cerr << "url_store_bench: " << s << "\n";
      return 1;
    }
  }

  uint64_t next_new = static_cast<uint64_t>(preload);
  std::vector<bool> settings;
  for (absl::string_view f : absl::StrSplit(absl::GetFlag(FLAGS_filters), ',')) {
    if (f != "on" && f != "off") {
      std::cerr << "url_store_bench: --filters takes on and off, comma-separated\n";
      return 2;
    }
    settings.push_back(f == "on");
  }
  for (bool filter : settings) {
    const auto t_open = Clock::now();
    auto store = dedupd::RocksDbStore::Open(Options(path, filter, cache, expected));
    if (!store.ok()) {
      std::cerr << "url_store_bench: " << store.status() << "\n";
      return 1;
    }
    (*store)->WaitForUrlFilter(absl::Minutes(10));
    const double open_secs = Since(t_open);
    for (const char* workload : {"mostly_new", "mostly_seen"}) {
      const double share_new = std::string(workload) == "mostly_new" ? new_share : 1 - new_share;
      std::vector<std::string> keys;
      keys.reserve(static_cast<size_t>(measure));
      uint64_t seed = next_new * 7 + 1;
      for (int64_t i = 0; i < measure; ++i) {
        seed = Mix(seed);
        const bool is_new = static_cast<double>(seed % 1000000) < share_new * 1e6;
        keys.push_back(is_new ? Url(next_new++) : Url(Mix(seed) % static_cast<uint64_t>(preload)));
      }
      const dedupd::UrlFilterFront::Stats before = (*store)->url_filter_stats();
      const absl::StatusOr<uint64_t> blocks_before = (*store)->DataBlockReads();
      const auto t0 = Clock::now();
      const int64_t fresh = ClaimAll(store->get(), keys, batch, threads);
      const double secs = Since(t0);
      if (fresh < 0) return 1;
      const dedupd::UrlFilterFront::Stats after = (*store)->url_filter_stats();
      const absl::StatusOr<uint64_t> blocks_after = (*store)->DataBlockReads();
      const double n = static_cast<double>(measure);
      const double blocks = blocks_before.ok() && blocks_after.ok()
                                ? static_cast<double>(*blocks_after - *blocks_before) / n
                                : -1;
      std::cout << absl::StrFormat(
                       "url_store filter=%s workload=%s stored=%d claims=%d "
                       "claims_per_sec=%.0f store_keys_read_per_claim=%.3f "
                       "block_reads_per_claim=%.3f new=%d filter_bytes=%d "
                       "open_secs=%.2f",
                       filter ? "on" : "off", workload, preload, measure, n / secs,
                       static_cast<double>(after.keys_read - before.keys_read) / n, blocks, fresh,
                       after.memory_bytes, open_secs)
                << std::endl;
    }
    if (absl::Status s = (*store)->Close(); !s.ok()) {
      std::cerr << "url_store_bench: " << s << "\n";
      return 1;
    }
  }
  if (!absl::GetFlag(FLAGS_keep)) std::filesystem::remove_all(path, ec);
  return 0;
}
