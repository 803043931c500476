// load_driver.h: the closed-loop machinery every dedupd load generator
// shares (url_load, content_load): a seeded random stream, connecting to a
// loopback server, running --threads workers that each keep one batch call
// in flight, and the fixed-format latency figures.
//
// Example:
//   LoadSpec spec{.threads = 4, .channels = 4, .batches = 1000};
//   LoadTotals totals = RunLoad<v1::CheckUrlRequest, v1::CheckUrlResponse>(
//       spec, channels,
//       [&](int64_t batch, v1::CheckUrlRequest* req) { ...; return n; },
//       [](v1::Dedup::Stub* stub, grpc::ClientContext* ctx, const auto& req,
//          auto* resp) { return stub->CheckUrl(ctx, req, resp); },
//       [](const v1::CheckUrlResponse& resp, LoadTotals* t) { ... });
//
// Thread safety: RunLoad calls `fill`, `call` and `count` from the worker
// threads concurrently; they must be thread-safe (counting goes into the
// calling worker's own LoadTotals).
#ifndef DEDUPD_BENCH_LOAD_LOAD_DRIVER_H_
#define DEDUPD_BENCH_LOAD_LOAD_DRIVER_H_

#include <grpcpp/grpcpp.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "core/text/sha256.h"
#include "core/text/splitmix64.h"
#include "dedupd/v1/dedupd.grpc.pb.h"

namespace dedupd::bench {

using Clock = std::chrono::steady_clock;

// Generated item i is a pure function of (seed, i): core/splitmix64.h.
inline constexpr uint64_t Mix(uint64_t x) { return SplitMix64(x); }

// A synthetic SHA-256 digest that is a pure function of `key` (the store
// benchmarks' texts: distinct keys, distinct digests in practice).
inline Sha256Digest MixDigest(uint64_t key) {
  Sha256Digest d{};
  for (size_t w = 0; w < 4; ++w) {
    const uint64_t v = Mix(key * 4 + w);
    for (size_t b = 0; b < 8; ++b) d[w * 8 + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  return d;
}
using Rng = SplitMixRng;

// Verdict counts and call figures of a run (or of one worker).
struct LoadTotals {
  std::vector<double> latency_ms;  // one per call, failed ones included
  // The calls among the first LoadSpec::mark_items items to finish (the
  // call that reaches the mark included): their latencies.
  std::vector<double> first_latency_ms;
  int64_t sent = 0;                            // items sent
  std::map<std::string, int64_t> verdicts;     // verdict name -> items
  int64_t errors = 0;                          // failed calls
  std::map<std::string, int64_t> error_codes;  // "CODE: message" -> calls

  int64_t answered() const {
    int64_t n = 0;
    for (const auto& [name, count] : verdicts) n += count;
    return n;
  }
  void Merge(const LoadTotals& o) {
    latency_ms.insert(latency_ms.end(), o.latency_ms.begin(), o.latency_ms.end());
    first_latency_ms.insert(first_latency_ms.end(), o.first_latency_ms.begin(),
                            o.first_latency_ms.end());
    sent += o.sent;
    for (const auto& [name, count] : o.verdicts) verdicts[name] += count;
    errors += o.errors;
    for (const auto& [what, count] : o.error_codes) error_codes[what] += count;
  }
};

// This process's user + system CPU time so far, in seconds (the load tools
// share the machine with the server and report their own share).
inline double CpuSecs() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

// The user + system CPU time so far of process `pid` (another process on
// this machine, e.g. the server), in seconds, from /proc/<pid>/stat; -1 when
// it cannot be read. The load tools read it at their clock's start and end,
// so the server's figure covers exactly the measured calls (and whatever
// it runs in the background meanwhile: flushes, compactions).
inline double ProcessCpuSecs(int pid) {
  if (pid <= 0) return -1;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return -1;
  // Fields after the command name (which may hold spaces) in parentheses:
  // state is field 3, utime and stime fields 14 and 15.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return -1;
  std::istringstream rest(stat.substr(close + 1));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && (rest >> field); ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  if (!rest) return -1;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// CpuWindow: this process's CPU and the server's (process `server_pid`; 0
// for none) from its construction, when the load's clock starts, to Stop,
// after the last answer.
class CpuWindow {
 public:
  explicit CpuWindow(int server_pid)
      : server_pid_(server_pid),
        client_start_(CpuSecs()),
        server_start_(ProcessCpuSecs(server_pid)) {}
  void Stop() {
    Read(&client_secs_, &server_secs_);
    server_total_secs_ = server_secs_ < 0 ? -1 : server_start_ + server_secs_;
  }
  // Mark: the same figures up to now, kept apart (e.g. at the moment the
  // first N items of a run are answered). Call at most once, and before
  // reading them, e.g. from a worker that the reader joins.
  void Mark() { Read(&mark_client_secs_, &mark_server_secs_); }
  double client_secs() const { return client_secs_; }
  // -1 when there is no server pid or its CPU could not be read.
  double server_secs() const { return server_secs_; }
  // The server's CPU since it started, read at Stop (-1 as above): where a
  // later reading of the same process picks up, e.g. a script's.
  double server_total_secs() const { return server_total_secs_; }
  double mark_client_secs() const { return mark_client_secs_; }
  double mark_server_secs() const { return mark_server_secs_; }

 private:
  void Read(double* client, double* server) const {
    *client = CpuSecs() - client_start_;
    const double server_now = ProcessCpuSecs(server_pid_);
    *server = server_start_ < 0 || server_now < 0 ? -1 : server_now - server_start_;
  }

  const int server_pid_;
  const double client_start_;
  const double server_start_;
  double client_secs_ = 0;
  double server_secs_ = -1;
  double server_total_secs_ = -1;
  double mark_client_secs_ = 0;
  double mark_server_secs_ = -1;
};

// RequestSource: the requests of a run, numbered from 0, either all built
// up front (`pregenerate`: before the clock starts, so that building them
// does not take CPU from the server during the measurement) or each built
// when it is sent. Take hands request b over by Swap.
template <typename Request>
class RequestSource {
 public:
  RequestSource(int64_t count, bool pregenerate, std::function<void(int64_t, Request*)> build)
      : build_(std::move(build)) {
    if (!pregenerate) return;
    prebuilt_.resize(static_cast<size_t>(count));
    for (size_t b = 0; b < prebuilt_.size(); ++b) build_(static_cast<int64_t>(b), &prebuilt_[b]);
  }
  // Request b into `request`. REQUIRES: each b is taken at most once.
  void Take(int64_t b, Request* request) {
    if (prebuilt_.empty()) {
      build_(b, request);
    } else {
      request->Swap(&prebuilt_[static_cast<size_t>(b)]);
    }
  }

 private:
  const std::function<void(int64_t, Request*)> build_;
  std::vector<Request> prebuilt_;
};

// Percentile p (0..1) of `v` (reordered).
inline double Percentile(std::vector<double>* v, double p) {
  if (v->empty()) return 0;
  const size_t k = std::min(v->size() - 1, static_cast<size_t>(p * static_cast<double>(v->size())));
  std::nth_element(v->begin(), v->begin() + static_cast<ptrdiff_t>(k), v->end());
  return (*v)[k];
}

inline const char* CodeName(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    default:
      return "OTHER";
  }
}

// Connect opens `channels` channels (each its own TCP connection) to
// `target`, or to 127.0.0.1:<port read from port_file> when port_file is
// set. Prints the reason to stderr (prefixed `tool`) and returns an empty
// vector on failure.
inline std::vector<std::shared_ptr<grpc::Channel>> Connect(const std::string& tool,
                                                           std::string target,
                                                           const std::string& port_file,
                                                           int channels, int timeout_s) {
  if (!port_file.empty()) {
    std::ifstream in(port_file);
    int port = 0;
    if (!(in >> port) || port <= 0 || port > 65535) {
      std::cerr << tool << ": no port in --port_file=" << port_file << "\n";
      return {};
    }
    target = absl::StrCat("127.0.0.1:", port);
  }
  if (target.empty()) {
    std::cerr << tool << ": give --target or --port_file\n";
    return {};
  }
  // Separate subchannel pools make each channel its own TCP connection;
  // otherwise gRPC shares one connection among identical channels.
  std::vector<std::shared_ptr<grpc::Channel>> chans;
  for (int c = 0; c < channels; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    chans.push_back(grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
    if (!chans.back()->WaitForConnected(std::chrono::system_clock::now() +
                                        std::chrono::seconds(timeout_s))) {
      std::cerr << tool << ": cannot connect to " << target << " within " << timeout_s << "s\n";
      return {};
    }
  }
  return chans;
}

struct LoadSpec {
  int threads = 4;
  int64_t batches = 0;  // batch indices 0..batches-1 are sent
  Clock::time_point stop_sending = Clock::time_point::max();
  int deadline_ms = 30000;
  // When positive: the worker whose finished call brings the items of all
  // finished calls to mark_items or more calls on_mark(items) once, and the
  // calls finished up to then also go to LoadTotals::first_latency_ms (the
  // figures of a run's first N items, e.g. an empty store's first memtables).
  int64_t mark_items = 0;
  std::function<void(int64_t)> on_mark;
};

// RunLoad: `spec.threads` workers take batch indices in order; for each,
// fill(index, &request) builds the request and returns its item count,
// call(...) sends it with a deadline, and count(response, &totals) adds the
// verdicts. A failed call, or a response whose size differs, is an error.
template <typename Request, typename Response>
LoadTotals RunLoad(const LoadSpec& spec,
                   const std::vector<std::shared_ptr<grpc::Channel>>& channels,
                   const std::function<int64_t(int64_t, Request*)>& fill,
                   const std::function<grpc::Status(v1::Dedup::Stub*, grpc::ClientContext*,
                                                    const Request&, Response*)>& call,
                   const std::function<void(const Response&, LoadTotals*)>& count) {
  // The load client shares the server's cores: no lock-order graph on
  // every absl::Mutex acquisition (on by default in Debian's Abseil, see
  // server/main.cc).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::atomic<int64_t> next_batch{0};
  std::atomic<int64_t> finished_items{0};
  std::vector<LoadTotals> stats(static_cast<size_t>(spec.threads));
  std::vector<std::thread> workers;
  for (int t = 0; t < spec.threads; ++t) {
    workers.emplace_back([&, t] {
      LoadTotals& st = stats[static_cast<size_t>(t)];
      std::unique_ptr<v1::Dedup::Stub> stub =
          v1::Dedup::NewStub(channels[static_cast<size_t>(t) % channels.size()]);
      // Reused across calls: Clear() keeps the allocated items.
      Request request;
      Response response;
      while (Clock::now() < spec.stop_sending) {
        const int64_t b = next_batch.fetch_add(1);
        if (b >= spec.batches) break;
        request.Clear();
        const int64_t n = fill(b, &request);
        response.Clear();
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(spec.deadline_ms));
        const Clock::time_point t0 = Clock::now();
        const grpc::Status s = call(stub.get(), &ctx, request, &response);
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        st.latency_ms.push_back(ms);
        st.sent += n;
        if (spec.mark_items > 0) {
          const int64_t before = finished_items.fetch_add(n);
          if (before < spec.mark_items) {
            st.first_latency_ms.push_back(ms);
            if (before + n >= spec.mark_items && spec.on_mark) spec.on_mark(before + n);
          }
        }
        if (!s.ok()) {
          ++st.errors;
          ++st.error_codes[absl::StrCat(CodeName(s.error_code()), ": ",
                                        s.error_message().substr(0, 120))];
          continue;
        }
        if (response.results_size() != n) {
          ++st.errors;
          ++st.error_codes[absl::StrCat("results_size ", response.results_size(), " != items ", n)];
          continue;
        }
        count(response, &st);
      }
    });
  }
  for (std::thread& w : workers) w.join();
  LoadTotals all;
  for (const LoadTotals& st : stats) all.Merge(st);
  return all;
}

// PrintErrors writes one stderr line per distinct call failure.
inline void PrintErrors(const std::string& tool, const LoadTotals& totals) {
  for (const auto& [what, count] : totals.error_codes) {
    std::cerr << tool << ": " << count << " calls failed with " << what << "\n";
  }
}

}  // namespace dedupd::bench

#endif  // DEDUPD_BENCH_LOAD_LOAD_DRIVER_H_
