// content_load: closed-loop load generator for dedupd's CheckContent. Each
// of --threads threads sends one CheckContent batch of --batch documents at
// a time (every call with a deadline) until --docs documents are sent or
// --seconds pass, then one fixed-format line is printed:
//
//   checkcontent batch=<b> threads=<t> doc_bytes=<d> docs=<n> secs=<s>
//       docs_per_sec=<x> mb_per_sec=<m> p50_ms=<a> p99_ms=<b> new=<k>
//       exact=<e> near=<r> invalid=<i> errors=<c> client_cpu_secs=<u>
//       server_cpu_secs=<v>
//
// (one line). docs: documents sent; secs: wall time from the first call to
// the last answer; docs_per_sec: documents answered per second; mb_per_sec:
// their text in MB (10^6 bytes) per second; p50_ms/p99_ms: latency of one
// batch call; new/exact/near/invalid: verdicts; errors: failed calls;
// client_cpu_secs: this tool's own user + system CPU from the first call to
// the last answer (it builds each batch's documents as it goes, on the
// server's cores); server_cpu_secs: the same for the process --server_pid
// names (-1 without it). Exits 1 when any call failed.
//
// Documents: document number i (i = --offset, --offset + 1, ...) is a pure
// function of (--seed, i): about --doc_bytes of real prose, 8 runs of
// consecutive words from seeded random places of the page corpus
// (--pages_dir, the output of bench/corpus/make_text_corpus.py), so no two
// documents are near each other; its URL is
// https://site<i mod 5000>.example/docs/<i>. With --repeat_every=R every
// R-th document repeats the text of document i - 1 under its own URL (an
// exact duplicate with an alias), to measure a mixed workload.
//
// Example:
//   dedupd_content_load --port_file=/tmp/port --pages_dir=bench/corpus/pages
//       --docs=1000000 --batch=100 --threads=4     (one command)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/corpus/read_pages.h"
#include "bench/load/load_driver.h"
#include "dedupd/v1/dedupd.pb.h"

ABSL_FLAG(std::string, target, "",
          "server address host:port (loopback only, e.g. 127.0.0.1:50051)");
ABSL_FLAG(std::string, port_file, "",
          "read the port from this file (dedupd --port_file); instead of --target");
ABSL_FLAG(std::string, pages_dir, "bench/corpus/pages",
          "directory of .txt pages whose words the documents are made of");
ABSL_FLAG(uint64_t, seed, 1, "document generator seed");
ABSL_FLAG(int64_t, offset, 0, "number of the first document");
ABSL_FLAG(int64_t, docs, 100000, "documents to send; 0: no count limit (needs --seconds)");
ABSL_FLAG(double, seconds, 0, "stop sending new batches after this many seconds; 0: none");
ABSL_FLAG(int64_t, doc_bytes, 10000, "approximate text size of a document");
ABSL_FLAG(int64_t, repeat_every, 0,
          "every Nth document repeats the previous one's text (0: never)");
ABSL_FLAG(int, batch, 100, "documents per CheckContent call");
ABSL_FLAG(int, threads, 4, "client threads, each with one call in flight");
ABSL_FLAG(std::string, mode, "claim", "claim or peek");
ABSL_FLAG(int, deadline_ms, 60000, "deadline of every call, in milliseconds");
ABSL_FLAG(int, connect_timeout_s, 10, "how long to wait for the server");
ABSL_FLAG(int, server_pid, 0,
          "the server's process id (same machine): report its CPU time from the "
          "first call to the last answer as server_cpu_secs");

namespace {

using ::dedupd::bench::Clock;
using ::dedupd::bench::LoadTotals;
using ::dedupd::bench::Mix;
using ::dedupd::bench::Rng;

// The text of every .txt file under `dir`, in file-name order, with every
// whitespace run made one space (so that any offset after a space starts a
// word).
std::string ReadCorpus(const std::string& dir) {
  std::vector<std::string> paths;
  std::string corpus;
  if (!dedupd::bench::ListPages(dir, &paths)) return corpus;
  std::string text;
  for (const std::string& path : paths) {
    if (!dedupd::bench::ReadFile(path, &text)) continue;
    for (absl::string_view w :
         absl::StrSplit(text, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty())) {
      corpus.append(w.data(), w.size());
      corpus.push_back(' ');
    }
  }
  return corpus;
}

// Document `index`'s text: kPieces runs of consecutive words, each from a
// seeded random place of `corpus`, joined by paragraph breaks. Real prose,
// cheap to make (a few memcpy per document, so the load generator does not
// compete with the server for the CPU), and with 8 independent places no
// two documents share more than a sliver of their shingles.
std::string DocumentText(const std::string& corpus, uint64_t seed, uint64_t index, size_t bytes) {
  constexpr size_t kPieces = 8;
  Rng rng(Mix(seed) ^ Mix(index * 0x2545F4914F6CDD1DULL + 7));
  const size_t piece = std::max<size_t>(1, bytes / kPieces);
  std::string text;
  text.reserve(bytes + 64);
  for (size_t p = 0; p < kPieces && text.size() < bytes; ++p) {
    size_t start = rng.Below(corpus.size() - piece - 64);
    while (start > 0 && corpus[start - 1] != ' ') ++start;  // a word start
    size_t end = std::min(corpus.size(), start + piece);
    while (end < corpus.size() && corpus[end] != ' ') ++end;  // a word end
    if (!text.empty()) text += "\n\n";
    text.append(corpus, start, end - start);
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "content_load: CheckContent load generator; prints one line per run.\n"
      "Usage: dedupd_content_load (--target=127.0.0.1:PORT | --port_file=F) "
      "[--pages_dir=DIR] [--docs=N] [--batch=B] [--threads=T]");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "content_load: unexpected argument '" << rest[1] << "'\n";
    return 2;
  }
  const uint64_t seed = absl::GetFlag(FLAGS_seed);
  const int64_t offset = absl::GetFlag(FLAGS_offset);
  const int64_t docs_flag = absl::GetFlag(FLAGS_docs);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const int64_t doc_bytes = absl::GetFlag(FLAGS_doc_bytes);
  const int64_t repeat_every = absl::GetFlag(FLAGS_repeat_every);
  const int batch = absl::GetFlag(FLAGS_batch);
  const int threads = absl::GetFlag(FLAGS_threads);
  const std::string mode_name = absl::AsciiStrToLower(absl::GetFlag(FLAGS_mode));
  if (offset < 0 || docs_flag < 0 || seconds < 0 || doc_bytes < 1 || repeat_every < 0 ||
      batch < 1 || threads < 1 || (docs_flag == 0 && seconds == 0) ||
      (mode_name != "claim" && mode_name != "peek")) {
    std::cerr << "content_load: need --offset, --docs, --seconds, --repeat_every >= 0, "
                 "--doc_bytes, --batch, --threads >= 1, a --docs or --seconds bound, "
                 "--mode claim|peek\n";
    return 2;
  }
  const dedupd::v1::ClaimMode mode =
      mode_name == "peek" ? dedupd::v1::CLAIM_MODE_PEEK : dedupd::v1::CLAIM_MODE_CLAIM;
  const std::string corpus = ReadCorpus(absl::GetFlag(FLAGS_pages_dir));
  if (corpus.size() < static_cast<size_t>(doc_bytes) + 4096) {
    std::cerr << "content_load: less than a document's worth of text in --pages_dir="
              << absl::GetFlag(FLAGS_pages_dir)
              << " (build it with bench/corpus/make_text_corpus.py)\n";
    return 1;
  }

  const std::vector<std::shared_ptr<grpc::Channel>> chans = dedupd::bench::Connect(
      "content_load", absl::GetFlag(FLAGS_target), absl::GetFlag(FLAGS_port_file), threads,
      absl::GetFlag(FLAGS_connect_timeout_s));
  if (chans.empty()) return 1;

  const int64_t total = docs_flag == 0 ? INT64_MAX / 2 : docs_flag;
  dedupd::bench::LoadSpec spec;
  spec.threads = threads;
  spec.batches = (total + batch - 1) / batch;
  spec.deadline_ms = absl::GetFlag(FLAGS_deadline_ms);
  dedupd::bench::CpuWindow cpu(absl::GetFlag(FLAGS_server_pid));
  const Clock::time_point start = Clock::now();
  if (seconds > 0) {
    spec.stop_sending =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  }
  std::atomic<int64_t> text_bytes{0};
  using dedupd::v1::CheckContentRequest;
  using dedupd::v1::CheckContentResponse;
  LoadTotals all = dedupd::bench::RunLoad<CheckContentRequest, CheckContentResponse>(
      spec, chans,
      [&](int64_t b, CheckContentRequest* request) {
        const int64_t first = b * batch;
        const int64_t n = std::min<int64_t>(batch, total - first);
        request->set_mode(mode);
        int64_t bytes = 0;
        for (int64_t i = offset + first; i < offset + first + n; ++i) {
          const bool repeat = repeat_every > 0 && i % repeat_every == repeat_every - 1;
          dedupd::v1::ContentItem* item = request->add_items();
          item->set_url(absl::StrCat("https://site", i % 5000, ".example/docs/", i));
          item->set_text(DocumentText(corpus, seed, static_cast<uint64_t>(repeat ? i - 1 : i),
                                      static_cast<size_t>(doc_bytes)));
          bytes += static_cast<int64_t>(item->text().size());
        }
        text_bytes += bytes;
        return n;
      },
      [](dedupd::v1::Dedup::Stub* stub, grpc::ClientContext* ctx,
         const CheckContentRequest& request,
         CheckContentResponse* response) { return stub->CheckContent(ctx, request, response); },
      [](const CheckContentResponse& response, LoadTotals* totals) {
        for (const dedupd::v1::ContentResult& r : response.results()) {
          ++totals->verdicts[dedupd::v1::ContentVerdict_Name(r.verdict())];
        }
      });
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  cpu.Stop();
  const double p50 = dedupd::bench::Percentile(&all.latency_ms, 0.50);
  const double p99 = dedupd::bench::Percentile(&all.latency_ms, 0.99);
  std::cout << absl::StrFormat(
                   "checkcontent batch=%d threads=%d doc_bytes=%d docs=%d secs=%.2f "
                   "docs_per_sec=%.0f mb_per_sec=%.1f p50_ms=%.2f p99_ms=%.2f "
                   "new=%d exact=%d near=%d invalid=%d errors=%d client_cpu_secs=%.2f "
                   "server_cpu_secs=%.2f",
                   batch, threads, doc_bytes, all.sent, secs,
                   secs > 0 ? static_cast<double>(all.answered()) / secs : 0.0,
                   secs > 0 ? static_cast<double>(text_bytes.load()) / secs / 1e6 : 0.0, p50, p99,
                   all.verdicts["CONTENT_VERDICT_NEW"],
                   all.verdicts["CONTENT_VERDICT_EXACT_DUPLICATE"],
                   all.verdicts["CONTENT_VERDICT_NEAR_DUPLICATE"],
                   all.verdicts["CONTENT_VERDICT_INVALID"], all.errors, cpu.client_secs(),
                   cpu.server_secs())
            << std::endl;
  dedupd::bench::PrintErrors("content_load", all);
  return all.errors == 0 ? 0 : 1;
}
