// url_load: closed-loop load generator for dedupd's CheckUrl. Each of
// --threads threads sends one CheckUrl batch of --batch URLs at a time (every
// call with a deadline) until --urls URLs are sent or --seconds pass, then one
// fixed-format line is printed for the workload:
//
//   checkurl  batch=<b> threads=<t> urls=<n> secs=<s> urls_per_sec=<x>
//       p50_ms=<a> p99_ms=<b> new=<k> seen=<m> invalid=<i> errors=<e>
//       seen_probably=<q> client_cpu_secs=<c> server_cpu_secs=<v>
//       server_cpu_total_secs=<w>
//
// (one line). urls: URLs sent; secs: wall time from the first call to the
// last answer; urls_per_sec: URLs answered (new + seen + invalid) per second;
// p50_ms/p99_ms: latency of one batch call; new/seen/invalid: verdicts;
// errors: calls that failed (their URLs got no verdict); seen_probably: the
// approximate seen-set's verdict; client_cpu_secs: this tool's own user +
// system CPU from the first call to the last answer (it shares the machine
// with the server); server_cpu_secs: the same for the process --server_pid
// names (-1 without it); server_cpu_total_secs: that process's CPU since it
// started, read after the last answer (-1 without it). With --first_urls=N,
// a second line gives the same figures for the calls that finished until N
// URLs were answered:
//
//   checkurl_first  urls=<n> secs=<s> urls_per_sec=<x> p50_ms=<a>
//       p99_ms=<b> client_cpu_secs=<c> server_cpu_secs=<v>
//
// (urls: the URLs of those calls, N or a little more). Exits 1 when any call
// failed, so a script notices.
// Every request is built before the clock starts (--pregenerate, the
// default), so the figures hold the client's gRPC work but not the URL
// synthesis or file cycling.
//
// URLs come from --url_file (cycled from line --offset) or, with --synthetic,
// from a generator: URL number i (i = --offset, --offset + 1, ...) is a pure
// function of (--seed, i), realistic (host pool with a skewed popularity,
// 3-6 path segments, some query parameters, 80-110 bytes) and unique for a
// given seed, so phases with disjoint [offset, offset + urls) ranges send
// disjoint URL sets (a preload, then a measurement of only new URLs).
//
// Example:
//   dedupd_url_load --target=127.0.0.1:50051 --synthetic --seed=1
//       --offset=0 --urls=2000000 --batch=1000 --threads=4   (one command)
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "bench/corpus/read_lines.h"
#include "bench/load/load_driver.h"
#include "core/text/splitmix64.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "dedupd/v1/dedupd.pb.h"

ABSL_FLAG(std::string, target, "",
          "server address host:port (loopback only, e.g. 127.0.0.1:50051)");
ABSL_FLAG(std::string, port_file, "",
          "read the port from this file (dedupd --port_file) and connect to "
          "127.0.0.1:<port>; instead of --target");
ABSL_FLAG(std::string, url_file, "", "URL file, one URL a line");
ABSL_FLAG(bool, synthetic, false, "send generated unique URLs instead");
ABSL_FLAG(uint64_t, seed, 1, "--synthetic: generator seed");
ABSL_FLAG(int64_t, offset, 0, "number of the first URL: synthetic index, or url_file line");
ABSL_FLAG(int64_t, urls, 1000000, "URLs to send in total; 0: no count limit (needs --seconds)");
ABSL_FLAG(double, seconds, 0, "stop sending new batches after this many seconds; 0: no limit");
ABSL_FLAG(int, batch, 1000, "URLs per CheckUrl call");
ABSL_FLAG(int, threads, 4, "client threads, each with one call in flight");
ABSL_FLAG(int, channels, 0,
          "gRPC channels (TCP connections), threads use them round-robin; "
          "0: one per thread");
ABSL_FLAG(std::string, mode, "claim", "claim or peek");
ABSL_FLAG(bool, claim_ids, false,
          "give every request a 16-byte claim id of its own (as the C++ client does)");
ABSL_FLAG(int, lease_seconds, 0, "lease the claimed URLs for this long (0: no lease)");
ABSL_FLAG(std::string, url_namespace, "", "the requests' namespace (default: the empty one)");
ABSL_FLAG(int, deadline_ms, 30000, "deadline of every call, in milliseconds");
ABSL_FLAG(int, connect_timeout_s, 10, "how long to wait for the server to accept connections");
ABSL_FLAG(int, server_pid, 0,
          "the server's process id (same machine): report its CPU time from the "
          "first call to the last answer as server_cpu_secs");
ABSL_FLAG(bool, pregenerate, true,
          "build every request before the clock starts (about 200 bytes of memory "
          "per URL), so that making the synthetic URLs (~1 us of this tool's CPU "
          "per URL) does not share the cores with the server during the "
          "measurement; false: build each request just before its call");
ABSL_FLAG(int64_t, first_urls, 0,
          "also print the figures of the run's first N URLs answered (a "
          "checkurl_first line after the checkurl line; 0: none), e.g. the "
          "first memtables of an empty store within a longer run");
ABSL_FLAG(int64_t, print_urls, 0, "print this many URLs (from --offset) to stdout and exit");

namespace {

using ::dedupd::bench::Clock;
using ::dedupd::bench::LoadTotals;
using ::dedupd::bench::Mix;
using ::dedupd::bench::Rng;

constexpr absl::string_view kWords[] = {
    "news",     "blog",    "docs",     "products", "category",  "article",   "guide",
    "support",  "shop",    "store",    "men",      "women",     "kids",      "shoes",
    "garden",   "tools",   "kitchen",  "home",     "sports",    "outdoor",   "travel",
    "europe",   "asia",    "recipes",  "dinner",   "health",    "fitness",   "science",
    "space",    "tech",    "reviews",  "laptops",  "phones",    "cameras",   "audio",
    "music",    "movies",  "books",    "fiction",  "history",   "politics",  "world",
    "business", "markets", "finance",  "careers",  "jobs",      "events",    "community",
    "forum",    "threads", "archive",  "2019",     "2020",      "2021",      "2022",
    "2023",     "2024",    "en",       "de",       "fr",        "es",        "us",
    "uk",       "help",    "faq",      "api",      "reference", "tutorials", "learn",
    "courses",  "video",   "photos",   "gallery",  "local",     "weather",   "climate",
    "energy",   "cars",    "electric", "bikes",    "parts",     "deals",     "sale",
    "new",      "popular", "featured", "team",     "about",     "press",     "stainless",
    "steel",    "trowel",  "jacket",   "wool",     "organic",   "coffee",    "tea",
    "cheese",   "bread",   "pasta",    "salad",    "linux",     "kernel",    "database",
    "postgres", "python",  "rust",     "release",  "notes",     "security",  "update",
    "install",  "config",
};
constexpr size_t kNumWords = sizeof(kWords) / sizeof(kWords[0]);

constexpr absl::string_view kTlds[] = {"com", "com",   "com", "org", "net",
                                       "de",  "co.uk", "io",  "fr",  "info"};
constexpr absl::string_view kSubdomains[] = {"www",  "www",  "www",  "blog",
                                             "shop", "news", "docs", "m"};
constexpr size_t kNumHosts = 50000;

// Host number h of the pool: "<sub>.<word><word>.<tld>", a pure function of h.
std::string HostName(uint64_t seed, uint64_t h) {
  Rng rng(seed ^ Mix(h + 0x5151));
  return absl::StrCat(kSubdomains[rng.Below(std::size(kSubdomains))], ".",
                      kWords[rng.Below(kNumWords)], kWords[rng.Below(kNumWords)], ".",
                      kTlds[rng.Below(std::size(kTlds))]);
}

// SyntheticUrl returns URL number `index` for `seed`. Unique per (seed,
// index): the last path segment ends in the index itself.
std::string SyntheticUrl(uint64_t seed, uint64_t index) {
  Rng rng(Mix(seed) ^ Mix(index * 0x2545F4914F6CDD1DULL + 1));
  // Skewed popularity: a few hosts get most links, as on the web.
  const double u = rng.Unit();
  const uint64_t host = static_cast<uint64_t>(u * u * u * kNumHosts);
  const std::string origin =
      absl::StrCat(rng.Below(10) == 0 ? "http" : "https", "://", HostName(seed, host));
  std::vector<absl::string_view> dirs;       // path segments before the slug
  const size_t num_dirs = 2 + rng.Below(4);  // 3..6 segments with the slug
  for (size_t s = 0; s < num_dirs; ++s) dirs.push_back(kWords[rng.Below(kNumWords)]);
  const std::string slug =
      absl::StrCat(kWords[rng.Below(kNumWords)], "-", kWords[rng.Below(kNumWords)], "-", index,
                   rng.Below(3) == 0 ? ".html" : "");
  std::vector<std::string> params;
  const size_t q = rng.Below(10);
  if (q < 2) {
    params.push_back(absl::StrCat("page=", 1 + rng.Below(20)));
  } else if (q < 3) {
    params.push_back(absl::StrCat("sort=", rng.Below(2) ? "price" : "date"));
    params.push_back(absl::StrCat("lang=", kWords[58 + rng.Below(6)]));
  } else if (q < 4) {
    params.push_back(absl::StrCat("utm_source=", kWords[rng.Below(kNumWords)]));
    params.push_back("utm_medium=email");
  }
  auto length = [&] {
    size_t n = origin.size() + 1 + slug.size();
    for (absl::string_view d : dirs) n += d.size() + 1;
    for (const std::string& p : params) n += p.size() + 1;
    return n;
  };
  // Bring the length into 80..110 bytes, as real outlinks mostly are: add
  // directories (up to 6 segments), then parameters; or drop directories.
  constexpr absl::string_view kPadKeys[] = {"ref", "color", "size", "view", "tab", "src"};
  size_t pad = 0;
  while (length() < 80) {
    if (dirs.size() < 5) {
      dirs.push_back(kWords[rng.Below(kNumWords)]);
    } else if (pad < std::size(kPadKeys)) {
      params.push_back(absl::StrCat(kPadKeys[pad++], "=", kWords[rng.Below(kNumWords)]));
    } else {
      break;
    }
  }
  while (length() > 110 && dirs.size() > 2) dirs.erase(dirs.begin() + 1);
  std::string url = origin;
  for (absl::string_view d : dirs) absl::StrAppend(&url, "/", d);
  absl::StrAppend(&url, "/", slug);
  for (size_t i = 0; i < params.size(); ++i) {
    absl::StrAppend(&url, i == 0 ? "?" : "&", params[i]);
  }
  return url;
}

// Where the URLs come from: the generator or a file's lines, cycled.
struct UrlSource {
  bool synthetic = false;
  uint64_t seed = 0;
  int64_t offset = 0;  // number of the run's first URL
  std::vector<std::string> file_urls;

  // URL number i (of the generator, or line i of the file, cycled).
  std::string At(int64_t i) const {
    return synthetic ? SyntheticUrl(seed, static_cast<uint64_t>(i))
                     : file_urls[static_cast<size_t>(i) % file_urls.size()];
  }
};

// ReadUrlSource fills `urls` from the flags. Returns 0, or after saying why
// on stderr the exit status: 2 for contradicting flags, 1 for an unreadable
// or empty --url_file.
int ReadUrlSource(UrlSource* urls) {
  urls->synthetic = absl::GetFlag(FLAGS_synthetic);
  urls->seed = absl::GetFlag(FLAGS_seed);
  urls->offset = absl::GetFlag(FLAGS_offset);
  const std::string url_file = absl::GetFlag(FLAGS_url_file);
  if (urls->synthetic == !url_file.empty()) {
    std::cerr << "url_load: give exactly one of --synthetic and --url_file\n";
    return 2;
  }
  if (urls->offset < 0) {
    std::cerr << "url_load: --offset must not be negative\n";
    return 2;
  }
  if (!urls->synthetic) {
    if (!dedupd::bench::ReadLines(url_file, &urls->file_urls) || urls->file_urls.empty()) {
      std::cerr << "url_load: cannot read URLs from " << url_file << "\n";
      return 1;
    }
  }
  return 0;
}

// The run's flags, read once and checked.
struct RunOptions {
  int batch = 0;
  int threads = 0;
  int channels = 0;  // 0 already replaced by threads
  int64_t urls = 0;  // 0: bounded by seconds only
  double seconds = 0;
  int64_t first_urls = 0;
  int deadline_ms = 0;
  std::string mode_name;  // lowercased
  dedupd::v1::ClaimMode mode = dedupd::v1::CLAIM_MODE_CLAIM;
  bool claim_ids = false;
  int lease_seconds = 0;  // 0: none
  std::string name_space;
};

// RunOptionsFromFlags reads the flags into `o`. Returns false, after saying
// why on stderr, when one is out of range.
bool RunOptionsFromFlags(RunOptions* o) {
  o->batch = absl::GetFlag(FLAGS_batch);
  o->threads = absl::GetFlag(FLAGS_threads);
  o->channels = absl::GetFlag(FLAGS_channels);
  if (o->channels == 0) o->channels = o->threads;
  o->urls = absl::GetFlag(FLAGS_urls);
  o->seconds = absl::GetFlag(FLAGS_seconds);
  o->first_urls = absl::GetFlag(FLAGS_first_urls);
  o->deadline_ms = absl::GetFlag(FLAGS_deadline_ms);
  o->mode_name = absl::AsciiStrToLower(absl::GetFlag(FLAGS_mode));
  o->claim_ids = absl::GetFlag(FLAGS_claim_ids);
  o->lease_seconds = absl::GetFlag(FLAGS_lease_seconds);
  o->name_space = absl::GetFlag(FLAGS_url_namespace);
  if (o->lease_seconds < 0) {
    std::cerr << "url_load: --lease_seconds must be >= 0\n";
    return false;
  }
  if (o->batch < 1 || o->threads < 1 || o->channels < 1 || o->channels > o->threads ||
      o->urls < 0 || o->seconds < 0 || o->deadline_ms < 1 || o->first_urls < 0) {
    std::cerr << "url_load: need --batch >= 1, 1 <= --channels <= --threads, "
                 "--urls >= 0, --seconds >= 0, --deadline_ms >= 1, --first_urls >= 0\n";
    return false;
  }
  if (o->urls == 0 && o->seconds == 0) {
    std::cerr << "url_load: --urls=0 needs a --seconds bound\n";
    return false;
  }
  if (o->mode_name == "claim") {
    o->mode = dedupd::v1::CLAIM_MODE_CLAIM;
  } else if (o->mode_name == "peek") {
    o->mode = dedupd::v1::CLAIM_MODE_PEEK;
  } else {
    std::cerr << "url_load: --mode must be claim or peek\n";
    return false;
  }
  return true;
}

// What a run's calls sent and got, and what they took.
struct RunResult {
  LoadTotals all;
  double secs = 0;  // first call to last answer
  // --first_urls: the URLs of the calls up to the mark (0: not reached),
  // and the seconds to it.
  int64_t first_items = 0;
  double first_secs = 0;
  double client_cpu_secs = 0, server_cpu_secs = -1, server_cpu_total_secs = -1;
  double first_client_cpu_secs = 0, first_server_cpu_secs = -1;
};

// RunUrls sends the run's URLs on `chans` in batches until o.urls are sent
// or o.seconds pass.
RunResult RunUrls(const RunOptions& o, const UrlSource& urls,
                  const std::vector<std::shared_ptr<grpc::Channel>>& chans) {
  const int64_t total_urls = o.urls == 0 ? INT64_MAX / 2 : o.urls;  // 0: bounded by time only
  dedupd::bench::LoadSpec spec;
  spec.threads = o.threads;
  spec.batches = (total_urls + o.batch - 1) / o.batch;
  spec.deadline_ms = o.deadline_ms;
  using dedupd::v1::CheckUrlRequest;
  using dedupd::v1::CheckUrlResponse;
  // Request b: URLs [b * batch, b * batch + batch) of the run, from offset.
  auto build = [&](int64_t b, CheckUrlRequest* request) {
    const int64_t first = b * o.batch;
    const int64_t n = std::min<int64_t>(o.batch, total_urls - first);
    request->set_mode(o.mode);
    request->set_namespace_(o.name_space);
    if (o.lease_seconds > 0) request->set_lease_seconds(static_cast<uint32_t>(o.lease_seconds));
    if (o.claim_ids) {
      // 16 bytes, distinct per request and per run of this tool (a run
      // that sends the same URLs again is another request, not a retry).
      static const uint64_t run_salt = std::random_device()() * 0x100000001b3ULL;
      const uint64_t key = run_salt ^ static_cast<uint64_t>(urls.offset + first);
      std::string id;
      for (uint64_t half = 0; half < 2; ++half) {
        const uint64_t x = dedupd::SplitMix64(key + half);
        id.append(reinterpret_cast<const char*>(&x), sizeof(x));
      }
      request->set_claim_id(std::move(id));
    }
    request->mutable_items()->Reserve(static_cast<int>(n));
    for (int64_t i = 0; i < n; ++i) {
      request->add_items()->set_url(urls.At(urls.offset + first + i));
    }
  };
  // With --pregenerate, every request is built here. Needs a --urls
  // count: a time-bound run with --urls=0 builds its requests as it goes.
  dedupd::bench::RequestSource<CheckUrlRequest> requests(
      spec.batches, absl::GetFlag(FLAGS_pregenerate) && o.urls > 0, build);
  dedupd::bench::CpuWindow cpu(absl::GetFlag(FLAGS_server_pid));
  // --first_urls: on_mark runs once, in the worker that reaches the mark;
  // this thread reads these after RunLoad has joined the workers.
  RunResult result;
  Clock::time_point first_end;
  spec.mark_items = o.first_urls;
  spec.on_mark = [&](int64_t items) {
    first_end = Clock::now();
    result.first_items = items;
    cpu.Mark();
  };
  const Clock::time_point start = Clock::now();
  if (o.seconds > 0) {
    spec.stop_sending = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(o.seconds));
  }
  result.all = dedupd::bench::RunLoad<CheckUrlRequest, CheckUrlResponse>(
      spec, chans,
      [&](int64_t b, CheckUrlRequest* request) {
        requests.Take(b, request);
        return static_cast<int64_t>(request->items_size());
      },
      [](dedupd::v1::Dedup::Stub* stub, grpc::ClientContext* ctx, const CheckUrlRequest& request,
         CheckUrlResponse* response) { return stub->CheckUrl(ctx, request, response); },
      [](const CheckUrlResponse& response, LoadTotals* totals) {
        for (const dedupd::v1::UrlResult& r : response.results()) {
          ++totals->verdicts[dedupd::v1::UrlVerdict_Name(r.verdict())];
        }
      });
  result.secs = std::chrono::duration<double>(Clock::now() - start).count();
  cpu.Stop();
  result.first_secs = std::chrono::duration<double>(first_end - start).count();
  result.client_cpu_secs = cpu.client_secs();
  result.server_cpu_secs = cpu.server_secs();
  result.server_cpu_total_secs = cpu.server_total_secs();
  result.first_client_cpu_secs = cpu.mark_client_secs();
  result.first_server_cpu_secs = cpu.mark_server_secs();
  return result;
}

// Prints the run's "checkurl" line and, with --first_urls, its
// "checkurl_first" line (reorders r's latencies).
void PrintRun(const RunOptions& o, RunResult* r) {
  LoadTotals& all = r->all;
  const double secs = r->secs;
  const double p50 = dedupd::bench::Percentile(&all.latency_ms, 0.50);
  const double p99 = dedupd::bench::Percentile(&all.latency_ms, 0.99);
  std::cout << absl::StrFormat(
                   "checkurl  batch=%d threads=%d urls=%d secs=%.2f "
                   "urls_per_sec=%.0f p50_ms=%.2f p99_ms=%.2f new=%d seen=%d "
                   "invalid=%d errors=%d seen_probably=%d client_cpu_secs=%.2f "
                   "server_cpu_secs=%.2f server_cpu_total_secs=%.2f",
                   o.batch, o.threads, all.sent, secs,
                   secs > 0 ? static_cast<double>(all.answered()) / secs : 0.0, p50, p99,
                   all.verdicts["URL_VERDICT_NEW"], all.verdicts["URL_VERDICT_SEEN"],
                   all.verdicts["URL_VERDICT_INVALID"], all.errors,
                   all.verdicts["URL_VERDICT_SEEN_PROBABLY"], r->client_cpu_secs,
                   r->server_cpu_secs, r->server_cpu_total_secs)
            << std::endl;
  if (r->first_items > 0) {
    const double first_secs = r->first_secs;
    const double p50_first = dedupd::bench::Percentile(&all.first_latency_ms, 0.50);
    const double p99_first = dedupd::bench::Percentile(&all.first_latency_ms, 0.99);
    std::cout << absl::StrFormat(
                     "checkurl_first  urls=%d secs=%.2f urls_per_sec=%.0f p50_ms=%.2f "
                     "p99_ms=%.2f client_cpu_secs=%.2f server_cpu_secs=%.2f",
                     r->first_items, first_secs,
                     first_secs > 0 ? static_cast<double>(r->first_items) / first_secs : 0.0,
                     p50_first, p99_first, r->first_client_cpu_secs, r->first_server_cpu_secs)
              << std::endl;
  } else if (o.first_urls > 0) {
    std::cerr << "url_load: --first_urls=" << o.first_urls
              << " not reached: no checkurl_first line\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "url_load: CheckUrl load generator; prints one line per run.\n"
      "Usage: dedupd_url_load --target=127.0.0.1:PORT (--synthetic | "
      "--url_file=FILE) [--urls=N] [--seconds=S] [--batch=B] [--threads=T]");
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::cerr << "url_load: unexpected argument '" << rest[1] << "'\n";
    return 2;
  }
  UrlSource urls;
  if (const int status = ReadUrlSource(&urls); status != 0) return status;
  if (const int64_t n = absl::GetFlag(FLAGS_print_urls); n > 0) {
    for (int64_t i = urls.offset; i < urls.offset + n; ++i) std::cout << urls.At(i) << "\n";
    return 0;
  }
  RunOptions o;
  if (!RunOptionsFromFlags(&o)) return 2;

  const std::vector<std::shared_ptr<grpc::Channel>> chans = dedupd::bench::Connect(
      "url_load", absl::GetFlag(FLAGS_target), absl::GetFlag(FLAGS_port_file), o.channels,
      absl::GetFlag(FLAGS_connect_timeout_s));
  if (chans.empty()) return 1;

  RunResult result = RunUrls(o, urls, chans);
  PrintRun(o, &result);
  dedupd::bench::PrintErrors("url_load", result.all);
  return result.all.errors == 0 ? 0 : 1;
}
