// chunk_load: closed-loop load generator for dedupd's CheckChunks. Each of
// --threads threads keeps one CheckChunks call (one document of
// --chunks_per_doc chunks) in flight until the phase's documents are sent or
// --seconds pass (every call with a deadline), then one fixed-format line is
// printed:
//
//   checkchunks phase=<p> mode=<m> threads=<t> chunks_per_doc=<c>
//       chunk_bytes=<b> docs=<n> chunks=<k> secs=<s> chunks_per_sec=<x>
//       docs_per_sec=<y> p50_ms=<a> p99_ms=<z> new=<k> exact=<e> near=<r>
//       invalid=<i> replaced=<d> errors=<c> client_cpu_secs=<u>
//       server_cpu_secs=<v>
//
// (one line). docs/chunks: sent; chunk_bytes: their mean text size; secs:
// wall time from the first call to the last answer; chunks_per_sec and
// docs_per_sec: answered chunks and documents (calls) per second;
// p50_ms/p99_ms: latency of one call (one document); new/exact/near/invalid:
// chunk verdicts; replaced: stored chunks the calls replaced (re-sent
// documents); errors: failed calls; client_cpu_secs: this tool's own user +
// system CPU from the first call to the last answer (it shares the machine
// with the server); server_cpu_secs: the same for the process --server_pid
// names (-1 without it). Exits 1 when any call failed. Every request of the
// phase is built before the clock starts (--pregenerate, the default), so
// the figures hold the client's gRPC work but not its text synthesis.
//
// Phases (which documents are sent):
//   fill     documents [0, F), F = --store_chunks / --chunks_per_doc: after
//            it the store holds --store_chunks chunks
//   measure  --docs new documents [F, F + --docs) on the filled store
//   resend   --docs documents [0, --docs) again (each replaces its stored
//            chunks: replaced = chunks)
//
// Documents: document i is a pure function of (--seed, i) and the page
// corpus (--pages_dir, from bench/corpus/make_text_corpus.py). Every page is cut by
// ChunkText (bench/corpus/chunker.h) into --chunk_bytes chunks; the pages' chunks,
// in file-name order, are the base stream of B chunks. Document i is
//   chunk 0      a header sentence of its site (site = i mod --sites; the
//                URL is https://site<site>.example/docs/<i>): the boilerplate
//                every page of a site repeats, so exact duplicates;
//   chunks 1..   the next --chunks_per_doc - 1 chunks of round r's stream,
//                r = i / D, D = B / (--chunks_per_doc - 1) documents a round.
// Round 0's stream is the real text. Round r >= 1 starts at another page
// (page rotation, so documents cut the pages elsewhere) and, since the
// corpus holds only ~43,000 distinct chunks, substitutes words
// deterministically: each word at a position of the chunk picked by
// (--seed, r, position) — about half — is replaced by another word of
// similar corpus frequency picked by (--seed, r, word). Word counts and
// frequencies stay those of prose, only 1 in 8 of the 3-word shingles
// survive (no round is near another), and chunks that are equal or near in
// the corpus stay so within a round: the duplicates real documentation has
// (repeated notes, license paragraphs, reference-page templates) recur in
// every round.
//
// Example:
//   dedupd_chunk_load --port_file=/tmp/port --pages_dir=bench/corpus/pages
//       --phase=fill --store_chunks=1000000 --threads=4    (one command)
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "bench/corpus/chunker.h"
#include "bench/corpus/read_pages.h"
#include "bench/load/load_driver.h"
#include "dedupd/v1/dedupd.pb.h"

ABSL_FLAG(std::string, target, "",
          "server address host:port (loopback only, e.g. 127.0.0.1:50051)");
ABSL_FLAG(std::string, port_file, "",
          "read the port from this file (dedupd --port_file); instead of --target");
ABSL_FLAG(std::string, pages_dir, "bench/corpus/pages",
          "directory of .txt pages the chunks are cut from");
ABSL_FLAG(std::string, phase, "fill",
          "fill (documents [0, F)), measure ([F, F + --docs)) or resend ([0, --docs)); "
          "F = --store_chunks / --chunks_per_doc");
ABSL_FLAG(int64_t, store_chunks, 1000000, "chunks the fill phase stores");
ABSL_FLAG(int64_t, docs, 20000, "documents of the measure and resend phases");
ABSL_FLAG(double, seconds, 3600,
          "stop sending new documents after this many seconds (every phase)");
ABSL_FLAG(uint64_t, seed, 1, "document generator seed");
ABSL_FLAG(int, chunks_per_doc, 20, "chunks per document (per CheckChunks call)");
ABSL_FLAG(int, chunk_bytes, 500, "ChunkText's max_bytes");
ABSL_FLAG(int, sites, 500, "sites the documents come from (one header chunk each)");
ABSL_FLAG(int, threads, 4, "client threads, each with one call in flight");
ABSL_FLAG(std::string, mode, "claim", "claim or peek");
ABSL_FLAG(int, max_hamming_distance, -1,
          "the requests' max_hamming_distance; -1: unset (the server's default)");
ABSL_FLAG(int, deadline_ms, 30000, "deadline of every call, in milliseconds");
ABSL_FLAG(int, connect_timeout_s, 10, "how long to wait for the server");
ABSL_FLAG(int, server_pid, 0,
          "the server's process id (same machine): report its CPU time from the "
          "first call to the last answer as server_cpu_secs");
ABSL_FLAG(bool, pregenerate, true,
          "build every request of the phase before the clock starts, so that the "
          "word substitution of the synthetic documents (~5 of this tool's ~12 us of "
          "CPU per chunk) does not share the cores with the server during the measurement; "
          "false: build each request just before its call");
ABSL_FLAG(int64_t, print_docs, 0,
          "print the phase's first N documents (no server needed) and exit");

namespace {

using ::dedupd::bench::Clock;
using ::dedupd::bench::LoadTotals;
using ::dedupd::bench::Mix;

// A word of a base chunk: its bytes in the chunk and its corpus word id.
struct Token {
  uint32_t begin = 0;
  uint32_t size = 0;
  uint32_t word = 0;
};

// A chunk of the base stream: its real text and its words.
struct BaseChunk {
  std::string text;
  std::vector<Token> tokens;
};

// The corpus cut into chunks, and what word substitution needs. Immutable
// after Build: thread-safe to read.
class ChunkCorpus {
 public:
  // Build cuts every page under `dir` into chunks. Returns false when no
  // page has a chunk.
  bool Build(const std::string& dir, size_t chunk_bytes) {
    std::vector<std::string> paths;
    if (!dedupd::bench::ListPages(dir, &paths)) return false;
    absl::flat_hash_map<std::string, uint32_t> ids;
    std::vector<uint64_t> counts;
    std::string page;
    for (const std::string& path : paths) {
      if (!dedupd::bench::ReadFile(path, &page)) continue;
      page_start_.push_back(chunks_.size());
      for (absl::string_view c : dedupd::bench::ChunkText(page, chunk_bytes)) {
        BaseChunk chunk;
        chunk.text = std::string(c);
        const std::string& t = chunk.text;
        for (size_t i = 0; i < t.size();) {
          while (i < t.size() && dedupd::bench::chunker_internal::IsSpace(t[i])) ++i;
          size_t j = i;
          while (j < t.size() && !dedupd::bench::chunker_internal::IsSpace(t[j])) ++j;
          if (j > i) {
            auto [it, added] = ids.emplace(t.substr(i, j - i), static_cast<uint32_t>(ids.size()));
            if (added) {
              words_.push_back(it->first);
              counts.push_back(0);
            }
            ++counts[it->second];
            chunk.tokens.push_back(
                {static_cast<uint32_t>(i), static_cast<uint32_t>(j - i), it->second});
          }
          i = j;
        }
        chunks_.push_back(std::move(chunk));
      }
      if (page_start_.back() == chunks_.size()) page_start_.pop_back();  // no chunk
    }
    if (chunks_.empty()) return false;
    // Rank words by corpus frequency (ties: first seen), for substitution
    // within a frequency band.
    by_rank_.resize(words_.size());
    for (uint32_t w = 0; w < words_.size(); ++w) by_rank_[w] = w;
    std::stable_sort(by_rank_.begin(), by_rank_.end(),
                     [&](uint32_t a, uint32_t b) { return counts[a] > counts[b]; });
    rank_.resize(words_.size());
    for (uint32_t r = 0; r < by_rank_.size(); ++r) rank_[by_rank_[r]] = r;
    return true;
  }

  size_t size() const { return chunks_.size(); }
  size_t pages() const { return page_start_.size(); }
  size_t distinct_words() const { return words_.size(); }

  // Chunk `pos` of round `round`'s stream (see the file comment), appended
  // to `out`.
  void AppendChunk(uint64_t seed, uint64_t round, size_t pos, std::string* out) const {
    const size_t rotate = round == 0 ? 0 : page_start_[Mix(seed ^ round) % pages()];
    const BaseChunk& c = chunks_[(pos + rotate) % chunks_.size()];
    if (round == 0) {
      out->append(c.text);
      return;
    }
    const uint64_t key = Mix(Mix(seed) + round);
    size_t copied = 0;  // bytes of c.text already in *out
    for (size_t p = 0; p < c.tokens.size(); ++p) {
      const Token& t = c.tokens[p];
      if ((Mix(key ^ (p * 0x9E3779B97F4A7C15ULL)) & 1) == 0) continue;  // kept
      out->append(c.text, copied, t.begin - copied);
      out->append(Substitute(key, t.word));
      copied = t.begin + t.size;
    }
    out->append(c.text, copied, std::string::npos);
  }

 private:
  // Words of ranks [band * kBand, (band + 1) * kBand) are one frequency band.
  static constexpr uint32_t kBand = 16;

  // Another word of `word`'s frequency band, picked by (key, word); `word`
  // itself only when its band has one word.
  const std::string& Substitute(uint64_t key, uint32_t word) const {
    const uint32_t rank = rank_[word];
    const uint32_t first = rank / kBand * kBand;
    const uint32_t n = std::min<uint32_t>(kBand, static_cast<uint32_t>(by_rank_.size()) - first);
    if (n < 2) return words_[word];
    const uint32_t step = 1 + static_cast<uint32_t>(Mix(key + word) % (n - 1));
    return words_[by_rank_[first + (rank - first + step) % n]];
  }

  std::vector<BaseChunk> chunks_;
  std::vector<size_t> page_start_;  // first chunk of each page with chunks
  std::vector<std::string> words_;  // word id -> word
  std::vector<uint32_t> by_rank_;   // frequency rank -> word id
  std::vector<uint32_t> rank_;      // word id -> frequency rank
};

// The header chunk of `site`: a sentence of site chrome, about 20 words, two
// of them the site's name, so headers of different sites differ.
std::string SiteHeader(int64_t site) {
  static constexpr const char* kNames[] = {
      "Acme",   "Borealis", "Cobalt",  "Delta", "Ember",    "Fjord",  "Granite", "Harbor",
      "Indigo", "Juniper",  "Kestrel", "Lumen", "Meridian", "Nimbus", "Onyx",    "Prism"};
  const uint64_t h = Mix(static_cast<uint64_t>(site) + 0x51);
  return absl::StrCat("Welcome to the ", kNames[h % 16], " ", kNames[(h >> 8) % 16],
                      " documentation, site ", site,
                      ". Use the search box, the index or the table of contents to find "
                      "your way; report errors in these pages on the issue tracker.");
}

// The flags, read once and checked, and the phase's document range.
struct Options {
  std::string phase;
  int64_t store_chunks = 0;
  int64_t docs = 0;
  double seconds = 0;
  uint64_t seed = 0;
  int chunks_per_doc = 0;
  int chunk_bytes = 0;
  int sites = 0;
  int threads = 0;
  int max_distance = -1;  // -1: unset
  std::string mode_name;  // lowercased
  dedupd::v1::ClaimMode mode = dedupd::v1::CLAIM_MODE_CLAIM;
  // The phase sends documents [first_doc, first_doc + total).
  int64_t first_doc = 0;
  int64_t total = 0;
};

// OptionsFromFlags reads the flags into `o`. Returns false, after saying
// why on stderr, when one is out of range.
bool OptionsFromFlags(Options* o) {
  o->phase = absl::GetFlag(FLAGS_phase);
  o->store_chunks = absl::GetFlag(FLAGS_store_chunks);
  o->docs = absl::GetFlag(FLAGS_docs);
  o->seconds = absl::GetFlag(FLAGS_seconds);
  o->seed = absl::GetFlag(FLAGS_seed);
  o->chunks_per_doc = absl::GetFlag(FLAGS_chunks_per_doc);
  o->chunk_bytes = absl::GetFlag(FLAGS_chunk_bytes);
  o->sites = absl::GetFlag(FLAGS_sites);
  o->threads = absl::GetFlag(FLAGS_threads);
  o->max_distance = absl::GetFlag(FLAGS_max_hamming_distance);
  o->mode_name = absl::AsciiStrToLower(absl::GetFlag(FLAGS_mode));
  if ((o->phase != "fill" && o->phase != "measure" && o->phase != "resend") ||
      o->store_chunks < 0 || o->docs < 1 || o->seconds <= 0 || o->chunks_per_doc < 2 ||
      o->chunk_bytes < 4 || o->sites < 1 || o->threads < 1 || o->max_distance < -1 ||
      (o->mode_name != "claim" && o->mode_name != "peek")) {
    std::cerr << "chunk_load: need --phase fill|measure|resend, --store_chunks >= 0, "
                 "--docs >= 1, --seconds > 0, --chunks_per_doc >= 2, --chunk_bytes >= 4, "
                 "--sites, --threads >= 1, --max_hamming_distance >= -1, "
                 "--mode claim|peek\n";
    return false;
  }
  o->mode = o->mode_name == "peek" ? dedupd::v1::CLAIM_MODE_PEEK : dedupd::v1::CLAIM_MODE_CLAIM;
  const int64_t fill_docs = (o->store_chunks + o->chunks_per_doc - 1) / o->chunks_per_doc;
  o->first_doc = 0;
  o->total = fill_docs;
  if (o->phase == "measure") {
    o->first_doc = fill_docs;
    o->total = o->docs;
  } else if (o->phase == "resend") {
    o->total = o->docs;
  }
  return true;
}

// The documents of the file comment, from a built corpus. Thread-safe.
class Documents {
 public:
  // REQUIRES: `corpus` is built and outlives this.
  Documents(const ChunkCorpus& corpus, const Options& o)
      : corpus_(corpus),
        seed_(o.seed),
        sites_(o.sites),
        chunks_per_doc_(o.chunks_per_doc),
        body_(static_cast<size_t>(o.chunks_per_doc - 1)),
        docs_per_round_(static_cast<int64_t>(std::max<size_t>(1, corpus.size() / body_))) {}

  int64_t docs_per_round() const { return docs_per_round_; }

  // Document `i`: its URL and its chunks' texts.
  void Make(int64_t i, std::string* url, std::vector<std::string>* chunks) const {
    const int64_t site = i % sites_;
    *url = absl::StrCat("https://site", site, ".example/docs/", i);
    chunks->resize(static_cast<size_t>(chunks_per_doc_));
    (*chunks)[0] = SiteHeader(site);
    const uint64_t round = static_cast<uint64_t>(i / docs_per_round_);
    const size_t pos = static_cast<size_t>(i % docs_per_round_) * body_;
    for (size_t c = 0; c < body_; ++c) {
      std::string& text = (*chunks)[c + 1];
      text.clear();
      corpus_.AppendChunk(seed_, round, pos + c, &text);
    }
  }

 private:
  const ChunkCorpus& corpus_;
  const uint64_t seed_;
  const int64_t sites_;
  const int chunks_per_doc_;
  const size_t body_;  // chunks after the header
  const int64_t docs_per_round_;
};

// --print_docs: prints the phase's first `n` documents to stdout.
void PrintDocs(const Documents& documents, const Options& o, int64_t n) {
  std::string url;
  std::vector<std::string> chunks;
  for (int64_t i = o.first_doc; i < o.first_doc + std::min(n, o.total); ++i) {
    documents.Make(i, &url, &chunks);
    std::cout << "== document " << i << " " << url << "\n";
    for (size_t c = 0; c < chunks.size(); ++c) {
      std::cout << "-- chunk " << c << " (" << chunks[c].size() << " bytes)\n" << chunks[c] << "\n";
    }
  }
}

// What a phase's calls sent and got, and what they took.
struct PhaseResult {
  LoadTotals all;
  double secs = 0;         // first call to last answer
  int64_t text_bytes = 0;  // of the chunks sent
  int64_t replaced = 0;    // stored chunks the calls replaced
  double client_cpu_secs = 0;
  double server_cpu_secs = -1;
};

// RunPhase sends the phase's documents on `chans` until all are sent or
// o.seconds pass.
PhaseResult RunPhase(const Options& o, const Documents& documents,
                     const std::vector<std::shared_ptr<grpc::Channel>>& chans) {
  using dedupd::v1::CheckChunksRequest;
  using dedupd::v1::CheckChunksResponse;
  // build(i, request): document first_doc + i as a request.
  auto build = [&](int64_t i, CheckChunksRequest* request) {
    thread_local std::string url;
    thread_local std::vector<std::string> chunks;
    documents.Make(o.first_doc + i, &url, &chunks);
    request->set_document_url(url);
    request->set_mode(o.mode);
    if (o.max_distance >= 0) {
      request->set_max_hamming_distance(static_cast<uint32_t>(o.max_distance));
    }
    for (const std::string& text : chunks) request->add_chunks()->set_text(text);
  };
  // With --pregenerate, every request of the phase is built here: about
  // 0.5-1 GB for the default 1,000,000-chunk fill.
  dedupd::bench::RequestSource<CheckChunksRequest> requests(
      o.total, absl::GetFlag(FLAGS_pregenerate), build);

  dedupd::bench::LoadSpec spec;
  spec.threads = o.threads;
  spec.batches = o.total;
  spec.deadline_ms = absl::GetFlag(FLAGS_deadline_ms);
  dedupd::bench::CpuWindow cpu(absl::GetFlag(FLAGS_server_pid));
  const Clock::time_point start = Clock::now();
  spec.stop_sending =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.seconds));
  std::atomic<int64_t> text_bytes{0};
  std::atomic<int64_t> replaced{0};
  PhaseResult result;
  result.all = dedupd::bench::RunLoad<CheckChunksRequest, CheckChunksResponse>(
      spec, chans,
      [&](int64_t b, CheckChunksRequest* request) {
        requests.Take(b, request);
        // Counted as sent: the text bytes and chunks of this request.
        int64_t bytes = 0;
        for (const dedupd::v1::ChunkItem& c : request->chunks()) {
          bytes += static_cast<int64_t>(c.text().size());
        }
        text_bytes += bytes;
        return static_cast<int64_t>(request->chunks_size());
      },
      [](dedupd::v1::Dedup::Stub* stub, grpc::ClientContext* ctx, const CheckChunksRequest& request,
         CheckChunksResponse* response) { return stub->CheckChunks(ctx, request, response); },
      [&](const CheckChunksResponse& response, LoadTotals* totals) {
        for (const dedupd::v1::ChunkResult& r : response.results()) {
          ++totals->verdicts[dedupd::v1::ChunkVerdict_Name(r.verdict())];
        }
        replaced += static_cast<int64_t>(response.replaced_chunks());
      });
  result.secs = std::chrono::duration<double>(Clock::now() - start).count();
  cpu.Stop();
  result.text_bytes = text_bytes.load();
  result.replaced = replaced.load();
  result.client_cpu_secs = cpu.client_secs();
  result.server_cpu_secs = cpu.server_secs();
  return result;
}

// Prints the phase's "checkchunks" line (reorders r->all.latency_ms).
void PrintPhase(const Options& o, PhaseResult* r) {
  LoadTotals& all = r->all;
  const double secs = r->secs;
  const int64_t answered = all.answered();
  const int64_t docs_sent = all.sent / o.chunks_per_doc;
  const int64_t docs_answered = docs_sent - all.errors;
  const double p50 = dedupd::bench::Percentile(&all.latency_ms, 0.50);
  const double p99 = dedupd::bench::Percentile(&all.latency_ms, 0.99);
  std::cout << absl::StrFormat(
                   "checkchunks phase=%s mode=%s threads=%d chunks_per_doc=%d chunk_bytes=%.0f "
                   "docs=%d chunks=%d secs=%.2f chunks_per_sec=%.0f docs_per_sec=%.0f "
                   "p50_ms=%.2f p99_ms=%.2f new=%d exact=%d near=%d invalid=%d replaced=%d "
                   "errors=%d client_cpu_secs=%.2f server_cpu_secs=%.2f",
                   o.phase, o.mode_name, o.threads, o.chunks_per_doc,
                   all.sent > 0 ? static_cast<double>(r->text_bytes) / static_cast<double>(all.sent)
                                : 0.0,
                   docs_sent, all.sent, secs, secs > 0 ? static_cast<double>(answered) / secs : 0.0,
                   secs > 0 ? static_cast<double>(docs_answered) / secs : 0.0, p50, p99,
                   all.verdicts["CHUNK_VERDICT_NEW"], all.verdicts["CHUNK_VERDICT_EXACT_DUPLICATE"],
                   all.verdicts["CHUNK_VERDICT_NEAR_DUPLICATE"],
                   all.verdicts["CHUNK_VERDICT_INVALID"], r->replaced, all.errors,
                   r->client_cpu_secs, r->server_cpu_secs)
            << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "chunk_load: CheckChunks load generator; prints one line per run.\n"
      "Usage: dedupd_chunk_load (--target=127.0.0.1:PORT | --port_file=F) "
      "[--pages_dir=DIR] [--phase=fill|measure|resend] [--store_chunks=N] "
      "[--docs=N] [--seconds=S] [--threads=T]");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "chunk_load: unexpected argument '" << rest[1] << "'\n";
    return 2;
  }
  Options o;
  if (!OptionsFromFlags(&o)) return 2;

  ChunkCorpus corpus;
  if (!corpus.Build(absl::GetFlag(FLAGS_pages_dir), static_cast<size_t>(o.chunk_bytes))) {
    std::cerr << "chunk_load: no pages with text in --pages_dir=" << absl::GetFlag(FLAGS_pages_dir)
              << " (build it with bench/corpus/make_text_corpus.py)\n";
    return 1;
  }
  const Documents documents(corpus, o);
  const int64_t docs_per_round = documents.docs_per_round();
  std::cerr << absl::StrFormat(
      "# chunk_load corpus pages=%d base_chunks=%d distinct_words=%d docs_per_round=%d "
      "rounds=%d\n",
      corpus.pages(), corpus.size(), corpus.distinct_words(), docs_per_round,
      (o.first_doc + o.total + docs_per_round - 1) / docs_per_round);

  if (const int64_t n = absl::GetFlag(FLAGS_print_docs); n > 0) {
    PrintDocs(documents, o, n);
    return 0;
  }

  const std::vector<std::shared_ptr<grpc::Channel>> chans = dedupd::bench::Connect(
      "chunk_load", absl::GetFlag(FLAGS_target), absl::GetFlag(FLAGS_port_file), o.threads,
      absl::GetFlag(FLAGS_connect_timeout_s));
  if (chans.empty()) return 1;

  PhaseResult result = RunPhase(o, documents, chans);
  PrintPhase(o, &result);
  dedupd::bench::PrintErrors("chunk_load", result.all);
  return result.all.errors == 0 ? 0 : 1;
}
