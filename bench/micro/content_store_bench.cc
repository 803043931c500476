// content_store_bench: the content layer's store alone (no gRPC, no text):
// fills a fresh RocksDbStore with --docs distinct texts through
// CheckContent claims (random SHA-256 digests and SimHashes, --batch per
// call, --threads callers), closes it, and times Open — which rebuilds the
// near-duplicate index from the fingerprint records. Prints:
//
//   content_store docs=<n> threads=<t> batch=<b> fill_secs=<s>
//       claims_per_sec=<x> reopen_secs=<r> index_fps=<n> index_bytes_per_fp=<y>
//       disk_bytes_per_doc=<z> near_probe_us=<q> forgets=<f> forget_ms=<m>
//
// (one line). reopen_secs: RocksDbStore::Open on the filled store (index
// rebuild included); near_probe_us: one peek of a fingerprint within
// distance 3 of a stored one after the reopen, averaged over 10,000 peeks
// (point reads + index query; the answer must be NEAR_DUPLICATE);
// forget_ms: then RocksDbStore::Forget of --forgets stored URLs, one at a
// time (records in table files, as after a restart), averaged — each is a
// scan of every content and alias record (docs/storage_format.md, "Forget");
// each must remove its text, and the index must shrink by --forgets.
//
// Example:
//   dedupd_content_store_bench --dir=/tmp/cs --docs=10000000
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
#include "absl/time/clock.h"
#include "bench/load/load_driver.h"
#include "bench/micro/fresh_store.h"
#include "storage/rocksdb/rocksdb_store.h"

ABSL_FLAG(std::string, dir, "", "scratch directory (created; its store is removed first)");
ABSL_FLAG(int64_t, docs, 1000000, "distinct texts to claim");
ABSL_FLAG(int, batch, 100, "documents per CheckContent call");
ABSL_FLAG(int, threads, 2, "claiming threads");
ABSL_FLAG(int, forgets, 5, "URLs to Forget after the probes (0: none)");
ABSL_FLAG(bool, keep, false, "keep the store directory");

namespace {

using ::dedupd::bench::Clock;
using ::dedupd::bench::Mix;
using ::dedupd::bench::MixDigest;

// Document i: a digest and SimHash that are pure functions of i.
dedupd::ContentDoc MakeDoc(uint64_t i) {
  dedupd::ContentDoc d;
  d.identity_url = absl::StrCat("https://site", i % 5000, ".example/docs/", i);
  d.fetched_url = d.identity_url;
  d.sha256 = MixDigest(i);
  d.simhash = Mix(~i);
  return d;
}

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const int64_t docs = absl::GetFlag(FLAGS_docs);
  const int batch = absl::GetFlag(FLAGS_batch);
  const int threads = absl::GetFlag(FLAGS_threads);
  const int forgets = absl::GetFlag(FLAGS_forgets);
  if (dir.empty() || docs < 1 || batch < 1 || threads < 1 || forgets < 0 || forgets > docs) {
    std::cerr << "content_store_bench: need --dir, --docs, --batch, --threads >= 1, "
                 "0 <= --forgets <= --docs\n";
    return 2;
  }
  dedupd::RocksDbStoreOptions options;
  auto store = dedupd::bench::OpenFreshStore(dir, &options);
  const std::string path = options.path;
  std::error_code ec;
  if (!store.ok()) {
    std::cerr << "content_store_bench: " << store.status() << "\n";
    return 1;
  }
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  const Clock::time_point fill_start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      std::vector<dedupd::ContentDoc> batch_docs;
      std::vector<dedupd::ContentOutcome> out;
      while (!failed) {
        const int64_t first = next.fetch_add(batch);
        if (first >= docs) break;
        batch_docs.clear();
        for (int64_t i = first; i < std::min<int64_t>(docs, first + batch); ++i) {
          batch_docs.push_back(MakeDoc(static_cast<uint64_t>(i)));
        }
        absl::Status s = (*store)->CheckContent(batch_docs, true, {}, absl::Now(), &out);
        if (!s.ok()) {
          std::cerr << "content_store_bench: " << s << "\n";
          failed = true;
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  if (failed) return 1;
  const double fill_secs = Since(fill_start);
  absl::Status closed = (*store)->Close();
  if (!closed.ok()) {
    std::cerr << "content_store_bench: " << closed << "\n";
    return 1;
  }
  store->reset();
  uint64_t disk = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(path, ec)) {
    if (e.is_regular_file()) disk += e.file_size();
  }

  const Clock::time_point reopen_start = Clock::now();
  store = dedupd::RocksDbStore::Open(options);
  const double reopen_secs = Since(reopen_start);
  if (!store.ok()) {
    std::cerr << "content_store_bench: reopen: " << store.status() << "\n";
    return 1;
  }
  const dedupd::RocksDbStore::IndexStats stats = (*store)->index_stats();

  // Near probes: stored fingerprints with 2 bits flipped, other digests.
  constexpr int kProbes = 10000;
  int near = 0;
  const Clock::time_point probe_start = Clock::now();
  std::vector<dedupd::ContentOutcome> out;
  for (int p = 0; p < kProbes; ++p) {
    dedupd::ContentDoc d = MakeDoc(static_cast<uint64_t>(Mix(p) % docs));
    d.simhash ^= (uint64_t{1} << (p % 64)) | (uint64_t{1} << ((p * 7 + 3) % 64));
    d.sha256[0] ^= 0xFF;
    if (!(*store)->CheckContent({d}, false, {}, absl::Now(), &out).ok()) return 1;
    near += out[0].verdict == dedupd::ContentVerdict::kNearDuplicate;
  }
  const double probe_us = Since(probe_start) * 1e6 / kProbes;

  // Forget: spread over the stored texts; each owns its text alone.
  const Clock::time_point forget_start = Clock::now();
  for (int f = 0; f < forgets; ++f) {
    const uint64_t i = static_cast<uint64_t>(f) * static_cast<uint64_t>(docs / forgets);
    absl::StatusOr<dedupd::ForgetResult> r = (*store)->Forget(MakeDoc(i).identity_url, absl::Now());
    if (!r.ok() || r->contents_removed != 1) {
      std::cerr << "content_store_bench: forget " << MakeDoc(i).identity_url << ": "
                << (r.ok() ? "removed no text" : r.status().ToString()) << "\n";
      return 1;
    }
  }
  const double forget_ms = forgets ? Since(forget_start) * 1e3 / forgets : 0.0;
  const size_t indexed_after = (*store)->index_stats().fingerprints;

  std::cout << absl::StrFormat(
                   "content_store docs=%d threads=%d batch=%d fill_secs=%.1f "
                   "claims_per_sec=%.0f reopen_secs=%.2f index_fps=%d "
                   "index_bytes_per_fp=%.1f disk_bytes_per_doc=%.1f near_probe_us=%.1f "
                   "forgets=%d forget_ms=%.1f",
                   docs, threads, batch, fill_secs, docs / fill_secs, reopen_secs,
                   stats.fingerprints,
                   stats.fingerprints ? double(stats.memory_bytes) / stats.fingerprints : 0.0,
                   double(disk) / docs, probe_us, forgets, forget_ms)
            << std::endl;
  if (near != kProbes || stats.fingerprints != static_cast<size_t>(docs) ||
      indexed_after != stats.fingerprints - static_cast<size_t>(forgets)) {
    std::cerr << "content_store_bench: " << near << " of " << kProbes
              << " probes were near duplicates, index holds " << stats.fingerprints << " of "
              << docs << ", " << indexed_after << " after " << forgets << " forgets\n";
    return 1;
  }
  if (!absl::GetFlag(FLAGS_keep)) {
    store->reset();
    std::filesystem::remove_all(path, ec);
  }
  return 0;
}
