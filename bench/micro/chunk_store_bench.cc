// chunk_store_bench: the chunk layer's store alone (no gRPC, no text, no
// fingerprinting): RocksDbStore::CheckChunks claims of synthetic documents
// from --threads callers, so that the store's own CPU per chunk — the part a
// storage format change moves — is measured without the server's and the
// load client's share of the machine. Phases:
//
//   fill     documents [0, F), F = --store_chunks / --chunks_per_doc
//   measure  --measure_docs new documents [F, F + M)
//   resend   documents [0, --resend_docs) again, each with its last
//            --changed chunks replaced by new texts (a re-crawl)
//
// Document i has --chunks_per_doc chunks: chunk 0 is its site's boilerplate
// (site = i mod 50: an exact duplicate of the site's first document), the
// others are texts of their own (digest and SimHash pure functions of i and
// the chunk). Prints one line per phase:
//
//   chunk_store phase=<p> docs=<d> chunks=<n> secs=<s> chunks_per_sec=<x>
//       cpu_us_per_chunk=<c> new=<k> exact=<e> near=<r> replaced=<z>
//
// then `chunk_store disk_bytes_per_chunk=<b> texts=<t>
// index_bytes_per_text=<i> text_id_map_bytes_per_text=<m>` (the store's
// files after the fill; the chunk index's and the SHA-256 -> text id map's
// heap bytes per stored text at the end). cpu_us_per_chunk: this process's user + system CPU over
// the phase (the callers and RocksDB's flush and compaction threads) per chunk. Exits non-zero when
// a call fails or a verdict count differs from the one the documents imply.
//
// Example:
//   dedupd_chunk_store_bench --dir=/tmp/chs --store_chunks=1000000
#include <algorithm>
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
ABSL_FLAG(int64_t, store_chunks, 1000000, "chunks the fill phase stores");
ABSL_FLAG(int64_t, measure_docs, 10000, "new documents claimed in the measure phase");
ABSL_FLAG(int64_t, resend_docs, 2000, "stored documents re-sent (0: no resend phase)");
ABSL_FLAG(int, chunks_per_doc, 20, "chunks per document (one CheckChunks call)");
ABSL_FLAG(int, changed, 5, "chunks of a re-sent document that change");
ABSL_FLAG(int, threads, 1, "claiming threads");
ABSL_FLAG(bool, keep, false, "keep the store directory");

namespace {

using ::dedupd::bench::Clock;
using ::dedupd::bench::CpuSecs;
using ::dedupd::bench::Mix;
using ::dedupd::bench::MixDigest;

constexpr uint64_t kSites = 50;

dedupd::ChunkInput Text(uint64_t key, const std::string& id) {
  dedupd::ChunkInput c;
  c.chunk_id = id;
  c.sha256 = MixDigest(key);
  c.simhash = Mix(~key);
  c.max_distance = 3;
  return c;
}

// Document i; `version` 1 is its re-crawl (the last `changed` chunks new).
dedupd::ChunkDocument MakeDoc(uint64_t i, int per_doc, int version, int changed) {
  dedupd::ChunkDocument d;
  d.document_url = absl::StrCat("https://site", i % kSites, ".example/docs/", i);
  d.chunks.push_back(Text(i % kSites, "0"));  // keys below kSites: boilerplate
  for (int c = 1; c < per_doc; ++c) {
    const bool fresh = version > 0 && c >= per_doc - changed;
    const uint64_t key = kSites + (i * 64 + static_cast<uint64_t>(c)) * 2 + (fresh ? 1 : 0);
    d.chunks.push_back(Text(key, absl::StrCat(c)));
  }
  return d;
}

struct Counts {
  std::atomic<int64_t> fresh{0}, exact{0}, near{0}, replaced{0};
};

// Claims documents [first, last) (version `version`) from `threads` threads.
bool RunPhase(dedupd::RocksDbStore* store, const char* name, int64_t first, int64_t last,
              int version) {
  const int per_doc = absl::GetFlag(FLAGS_chunks_per_doc);
  const int changed = absl::GetFlag(FLAGS_changed);
  const int threads = absl::GetFlag(FLAGS_threads);
  std::atomic<int64_t> next{first};
  std::atomic<bool> failed{false};
  Counts n;
  const double cpu0 = CpuSecs();
  const Clock::time_point t0 = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      dedupd::ChunkAnswer answer;
      while (!failed) {
        const int64_t i = next.fetch_add(1);
        if (i >= last) break;
        const dedupd::ChunkDocument doc =
            MakeDoc(static_cast<uint64_t>(i), per_doc, version, changed);
        absl::Status s = store->CheckChunks(doc, /*claim=*/true, absl::Now(), &answer);
        if (!s.ok()) {
          std::cerr << "chunk_store_bench: " << doc.document_url << ": " << s << "\n";
          failed = true;
          break;
        }
        n.replaced += static_cast<int64_t>(answer.replaced_chunks);
        for (const dedupd::ChunkOutcome& o : answer.outcomes) {
          switch (o.verdict) {
            case dedupd::ChunkVerdict::kNew:
              ++n.fresh;
              break;
            case dedupd::ChunkVerdict::kExactDuplicate:
              ++n.exact;
              break;
            case dedupd::ChunkVerdict::kNearDuplicate:
              ++n.near;
              break;
          }
        }
      }
    });
  }
  for (std::thread& w : workers) w.join();
  if (failed) return false;
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = CpuSecs() - cpu0;
  const int64_t docs = last - first;
  const int64_t chunks = docs * per_doc;
  std::cout << absl::StrFormat(
                   "chunk_store phase=%s docs=%d chunks=%d secs=%.2f chunks_per_sec=%.0f "
                   "cpu_us_per_chunk=%.2f new=%d exact=%d near=%d replaced=%d",
                   name, docs, chunks, secs, chunks / secs, cpu * 1e6 / chunks, n.fresh.load(),
                   n.exact.load(), n.near.load(), n.replaced.load())
            << std::endl;
  // What the documents imply: chunk 0 duplicates its site's first document
  // unless it is that document (which, re-sent, keeps its age and still
  // owns it); a re-sent document's unchanged chunks were its own, so they
  // are new again (its own stored chunks never match), like its changed
  // ones.
  const int64_t first_of_site = std::max<int64_t>(0, std::min<int64_t>(last, kSites) - first);
  const int64_t want_exact = docs - first_of_site;
  if (n.exact != want_exact || n.fresh + n.near != chunks - want_exact ||
      n.replaced != (version > 0 ? chunks : 0)) {
    std::cerr << "chunk_store_bench: phase " << name << ": " << n.exact
              << " exact duplicates (want " << want_exact << "), " << n.replaced << " replaced\n";
    return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const int per_doc = absl::GetFlag(FLAGS_chunks_per_doc);
  const int64_t fill_docs = absl::GetFlag(FLAGS_store_chunks) / std::max(per_doc, 1);
  const int64_t measure_docs = absl::GetFlag(FLAGS_measure_docs);
  const int64_t resend_docs = absl::GetFlag(FLAGS_resend_docs);
  const int changed = absl::GetFlag(FLAGS_changed);
  if (dir.empty() || per_doc < 2 || per_doc > 64 || fill_docs < 1 || measure_docs < 1 ||
      resend_docs < 0 || resend_docs > fill_docs || changed < 0 || changed >= per_doc ||
      absl::GetFlag(FLAGS_threads) < 1) {
    std::cerr << "chunk_store_bench: need --dir, 2 <= --chunks_per_doc <= 64, "
                 "--store_chunks >= --chunks_per_doc, --measure_docs >= 1, "
                 "0 <= --resend_docs <= stored documents, 0 <= --changed < "
                 "--chunks_per_doc, --threads >= 1\n";
    return 2;
  }
  dedupd::RocksDbStoreOptions options;
  auto store = dedupd::bench::OpenFreshStore(dir, &options);
  const std::string path = options.path;
  std::error_code ec;
  if (!store.ok()) {
    std::cerr << "chunk_store_bench: " << store.status() << "\n";
    return 1;
  }
  if (!RunPhase(store->get(), "fill", 0, fill_docs, 0)) return 1;
  uint64_t disk = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(path, ec)) {
    if (e.is_regular_file()) disk += e.file_size();
  }
  if (!RunPhase(store->get(), "measure", fill_docs, fill_docs + measure_docs, 0)) return 1;
  if (resend_docs > 0 && !RunPhase(store->get(), "resend", 0, resend_docs, 1)) return 1;
  const dedupd::RocksDbStore::IndexStats memory = (*store)->chunk_index_stats();
  const double texts = double(std::max<size_t>(memory.fingerprints, 1));
  std::cout << absl::StrFormat(
                   "chunk_store disk_bytes_per_chunk=%.1f texts=%d index_bytes_per_text=%.1f "
                   "text_id_map_bytes_per_text=%.1f",
                   double(disk) / double(fill_docs * per_doc), memory.fingerprints,
                   double(memory.memory_bytes) / texts, double(memory.text_id_map_bytes) / texts)
            << std::endl;
  absl::Status closed = (*store)->Close();
  if (!closed.ok()) {
    std::cerr << "chunk_store_bench: " << closed << "\n";
    return 1;
  }
  if (!absl::GetFlag(FLAGS_keep)) std::filesystem::remove_all(path, ec);
  return 0;
}
