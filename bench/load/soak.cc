// soak: a bounded soak of the real dedupd. It starts the server
// binary on 127.0.0.1 port 0 with a fresh data dir, starts --clients client
// processes (this program again, in client mode) that send a mixed
// CheckUrl / CheckContent / CheckChunks CLAIM load, SIGKILLs the server every
// --kill_every and restarts it on the same data dir, for --duration. Clients
// find the new port in the server's --port_file and carry on. Then every
// write a client saw acknowledged (a NEW answer) is checked with PEEK calls
// against the last server, and the run is summed up.
//
// Output, one line per minute of the run (minute m covers calls answered in
// [m, m+1) minutes from the start):
//
//   soak minute=<m> ops=<calls answered> items=<items answered>
//       errors=<failed calls> kills=<kills in the minute>
//       restart_ms=<longest restart in the minute, to serving> p50_ms=<a>
//       p99_ms=<b> max_ms=<c> rss_peak_mb=<server VmRSS peak> store_mb=<d>
//
// and at the end one line:
//
//   soak_total secs=<s> clients=<n> kills=<k> ops=<calls answered>
//       items=<items> errors=<failed calls> acked_urls=<u> acked_texts=<t>
//       acked_chunks=<c> lost=<acknowledged writes not found> double_new=<d>
//       restart_ms_max=<r> rss_first_min_mb=<a> rss_last_min_mb=<b>
//
// (one line each). ops: calls answered OK; items: URLs, documents and
// chunks in them; errors: calls that failed (mostly those in flight at a
// kill or sent while the server restarted). p50/p99/max: latency of one
// answered call, from send to answer, measured in the client processes.
// rss_peak_mb: the largest VmRSS of the server sampled every 250 ms in the
// minute (MiB), across restarts; store_mb: the data dir's size at the end
// of the minute. acked_*: distinct keys answered NEW (URLs, content texts,
// chunk texts). lost: acknowledged writes that the last server does not
// hold as acknowledged (a URL not SEEN; a text or chunk text not an
// EXACT_DUPLICATE of the owner it was acknowledged to); double_new: keys
// answered NEW to more than one call (the second NEW means the first
// claim was lost). restart_ms_max: the longest time from a restart to
// serving; rss_first_min_mb / rss_last_min_mb: rss_peak_mb of the first and
// the last minute. lost and double_new must be 0; the exit status is 1
// otherwise, or when the server or a client failed.
//
// The load: each client process runs --client_threads threads; each sends
// at most --calls_per_sec calls per second (paced, one call in flight,
// deadline --deadline_ms): 50% CheckUrl of 10 URLs, 30% CheckContent of 4
// documents (~40 words each), 20% CheckChunks of one new document of 6
// chunks (~30 words each). A --own_fraction (default half) of the URLs,
// texts and chunk texts are new; the rest are drawn from pools shared by
// all clients (200,000 URLs, 20,000 texts, 20,000 chunk texts), so claims
// race and many answers are SEEN / EXACT_DUPLICATE. Every text is a pure
// function of its id and --seed.
//
// Example (the README's run):
//   nice -n 10 build/bench/dedupd_soak --dedupd=build/server/dedupd
//       --duration=10m --kill_every=60s --clients=3      (one command)
#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/load/load_driver.h"
#include "dedupd/v1/dedupd.grpc.pb.h"

ABSL_FLAG(std::string, dedupd, "", "the dedupd server binary (required)");
ABSL_FLAG(absl::Duration, duration, absl::Minutes(10), "length of the load");
ABSL_FLAG(absl::Duration, kill_every, absl::Seconds(60),
          "SIGKILL and restart the server this often; 0: never");
ABSL_FLAG(int, clients, 3, "client processes");
ABSL_FLAG(int, client_threads, 2, "threads per client process, one call in flight each");
ABSL_FLAG(double, calls_per_sec, 150, "most calls per second per client thread");
ABSL_FLAG(int, deadline_ms, 5000, "deadline of every call");
ABSL_FLAG(double, own_fraction, 0.5,
          "fraction of URLs, texts and chunk texts that are new (each client's "
          "own); the rest come from pools shared by all clients. Document URLs "
          "are always new, so even 0 keeps adding alias, fetch and chunk "
          "holder records");
ABSL_FLAG(uint64_t, seed, 1, "workload seed");
ABSL_FLAG(std::string, work_dir, "",
          "scratch directory (data dir, logs, client files); default: a new "
          "directory under $TMPDIR, removed at the end unless --keep");
ABSL_FLAG(bool, keep, false, "keep the scratch directory");
ABSL_FLAG(std::vector<std::string>, server_flags, {},
          "extra dedupd flags, comma-separated (e.g. --sync_writes=true)");
// Client mode (internal: the coordinator starts clients with these).
ABSL_FLAG(int, client, -1, "internal: run as client number N");
ABSL_FLAG(int64_t, start_unix_ms, 0, "internal: the run's start");
ABSL_FLAG(int64_t, end_unix_ms, 0, "internal: when clients stop sending");

namespace dedupd::bench {
namespace {

constexpr int kSharedUrls = 200000;
constexpr int kSharedTexts = 20000;
constexpr int kSharedChunks = 20000;
constexpr int kUrlsPerCall = 10, kDocsPerCall = 4, kChunksPerDoc = 6;

// Text of `words` pseudo-random words (of 5,000), a pure function of
// (kind, id, seed): different ids are far apart in SimHash.
std::string Words(char kind, uint64_t id, uint64_t seed, int words) {
  std::string out = absl::StrCat(std::string(1, kind), id, ":");
  uint64_t h = Mix(id ^ Mix(seed ^ static_cast<uint64_t>(kind)));
  for (int i = 0; i < words; ++i) {
    h = Mix(h);
    uint64_t w = h % 5000;
    out.push_back(' ');
    for (int c = 0; c < 3 || w > 0; ++c) {
      out.push_back(static_cast<char>('a' + w % 26));
      w /= 26;
    }
  }
  return out;
}
std::string DocText(char kind, uint64_t id, uint64_t seed) { return Words(kind, id, seed, 40); }
std::string ChunkText(char kind, uint64_t id, uint64_t seed) {
  return Words(static_cast<char>(kind - 'a' + 'A'), id, seed, 30);
}

// Shared URL k of the pool, on one of 100 hosts.
std::string SharedUrl(size_t k) {
  return absl::StrCat("https://shared", k % 100, ".example/p/", k);
}

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// ReadPort returns the port in `path`, or 0.
int ReadPort(const std::string& path) {
  std::ifstream in(path);
  int port = 0;
  if (!(in >> port) || port <= 0 || port > 65535) return 0;
  return port;
}

std::string WorkPath(const std::string& work, const std::string& name) {
  return absl::StrCat(work, "/", name);
}

// ---------------------------------------------------------------- client

// Per-minute figures of one client process.
struct MinuteStats {
  int64_t ops = 0, items = 0, errors = 0;
  std::vector<uint32_t> latency_us;
};

class Client {
 public:
  Client(int id, std::string work, uint64_t seed, int64_t start_ms, int64_t end_ms)
      : id_(id),
        work_(std::move(work)),
        seed_(seed),
        start_ms_(start_ms),
        end_ms_(end_ms),
        last_minute_(static_cast<int>((end_ms - start_ms - 1) / 60000)) {}

  int Run() {
    const int threads = absl::GetFlag(FLAGS_client_threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) workers.emplace_back([this, t] { Work(t); });
    // Flush each minute's figures 200 ms after it is over (a call answered
    // later counts in the next minute: Record reads the clock under mu_).
    int next_minute = 0;
    while (NowMs() < end_ms_) {
      while (start_ms_ + (next_minute + 1) * 60000LL + 200 <= NowMs() &&
             next_minute < last_minute_) {
        FlushMinute(next_minute++);
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
    for (std::thread& w : workers) w.join();
    while (next_minute <= last_minute_) FlushMinute(next_minute++);
    return failed_ ? 1 : 0;
  }

 private:
  void Record(int64_t items, bool ok, absl::Duration latency) {
    absl::MutexLock lock(&mu_);
    // Calls answered after the end count in the last minute.
    const int minute = std::min(last_minute_, static_cast<int>((NowMs() - start_ms_) / 60000));
    MinuteStats& m = minutes_[minute];
    if (ok) {
      ++m.ops;
      m.items += items;
      m.latency_us.push_back(
          static_cast<uint32_t>(std::min<int64_t>(absl::ToInt64Microseconds(latency), UINT32_MAX)));
    } else {
      ++m.errors;
    }
  }

  // FlushMinute writes minute `m`'s figures to client_<id>.m<m> (written
  // under a temporary name, then renamed: the coordinator sees whole files).
  void FlushMinute(int m) {
    MinuteStats stats;
    {
      absl::MutexLock lock(&mu_);
      auto it = minutes_.find(m);
      if (it != minutes_.end()) {
        stats = std::move(it->second);
        minutes_.erase(it);
      }
    }
    const std::string path = WorkPath(work_, absl::StrCat("client_", id_, ".m", m));
    {
      std::ofstream out(path + ".tmp", std::ios::trunc);
      out << stats.ops << " " << stats.items << " " << stats.errors << "\n";
      for (uint32_t us : stats.latency_us) out << us << "\n";
    }
    std::rename((path + ".tmp").c_str(), path.c_str());
  }

  void Work(int thread) {
    Rng rng(Mix(seed_ ^ Mix(static_cast<uint64_t>(id_ * 1000 + thread + 1))));
    // Every NEW this thread was answered, one line each.
    std::ofstream acks(WorkPath(work_, absl::StrCat("acks_", id_, "_", thread)), std::ios::trunc);
    const std::string port_file = WorkPath(work_, "server.port");
    const int deadline_ms = absl::GetFlag(FLAGS_deadline_ms);
    const double own_fraction = absl::GetFlag(FLAGS_own_fraction);
    const absl::Duration interval =
        absl::Seconds(1.0 / std::max(0.001, absl::GetFlag(FLAGS_calls_per_sec)));
    int port = 0;
    std::unique_ptr<v1::Dedup::Stub> stub;
    absl::Time next_call = absl::Now();
    // Unique ids of this thread: client, thread and a sequence number.
    const uint64_t own_base =
        (static_cast<uint64_t>(id_) << 48) | (static_cast<uint64_t>(thread) << 40);
    uint64_t seq = 0;
    while (NowMs() < end_ms_) {
      const absl::Time now = absl::Now();
      if (next_call > now) absl::SleepFor(next_call - now);
      next_call = std::max(next_call + interval, absl::Now() - interval);
      const int current = ReadPort(port_file);
      if (current == 0) {
        absl::SleepFor(absl::Milliseconds(20));  // the server restarts
        continue;
      }
      if (current != port || stub == nullptr) {
        port = current;
        grpc::ChannelArguments args;
        args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
        stub = v1::Dedup::NewStub(grpc::CreateCustomChannel(
            absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials(), args));
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
      const int op = rng.Below(10);
      const absl::Time sent = absl::Now();
      grpc::Status s;
      int64_t items = 0;
      if (op < 5) {
        v1::CheckUrlRequest request;
        request.set_mode(v1::CLAIM_MODE_CLAIM);
        for (int i = 0; i < kUrlsPerCall; ++i) {
          request.add_items()->set_url(
              rng.Unit() >= own_fraction
                  ? SharedUrl(rng.Below(kSharedUrls))
                  : absl::StrCat("https://c", id_, ".example/t", thread, "/", seq++));
        }
        v1::CheckUrlResponse response;
        s = stub->CheckUrl(&ctx, request, &response);
        if (s.ok() && response.results_size() != request.items_size()) {
          s = grpc::Status(grpc::StatusCode::INTERNAL, "wrong result count");
        }
        if (s.ok()) {
          items = response.results_size();
          for (const v1::UrlResult& r : response.results()) {
            if (r.verdict() == v1::URL_VERDICT_NEW) acks << "U " << r.normalized_url() << "\n";
          }
        }
      } else if (op < 8) {
        v1::CheckContentRequest request;
        request.set_mode(v1::CLAIM_MODE_CLAIM);
        std::vector<std::pair<char, uint64_t>> ids;
        for (int i = 0; i < kDocsPerCall; ++i) {
          const bool shared = rng.Unit() >= own_fraction;
          ids.emplace_back(shared ? 's' : 'u', shared
                                                   ? static_cast<uint64_t>(rng.Below(kSharedTexts))
                                                   : own_base | seq++);
          v1::ContentItem* item = request.add_items();
          item->set_url(absl::StrCat("https://d", id_, ".example/t", thread, "/", seq++));
          item->set_text(DocText(ids.back().first, ids.back().second, seed_));
        }
        v1::CheckContentResponse response;
        s = stub->CheckContent(&ctx, request, &response);
        if (s.ok() && response.results_size() != request.items_size()) {
          s = grpc::Status(grpc::StatusCode::INTERNAL, "wrong result count");
        }
        if (s.ok()) {
          items = response.results_size();
          for (int i = 0; i < response.results_size(); ++i) {
            const v1::ContentResult& r = response.results(i);
            if (r.verdict() == v1::CONTENT_VERDICT_NEW) {
              acks << "C " << ids[i].first << " " << ids[i].second << " " << r.owner_url() << "\n";
            }
          }
        }
      } else {
        v1::CheckChunksRequest request;
        request.set_mode(v1::CLAIM_MODE_CLAIM);
        request.set_document_url(absl::StrCat("https://k", id_, ".example/t", thread, "/", seq++));
        std::vector<std::pair<char, uint64_t>> ids;
        std::set<uint64_t> picked;
        for (int i = 0; i < kChunksPerDoc; ++i) {
          const uint64_t k = static_cast<uint64_t>(rng.Below(kSharedChunks));
          if (rng.Unit() >= own_fraction && picked.insert(k).second) {
            ids.emplace_back('s', k);
          } else {
            ids.emplace_back('u', own_base | seq++);
          }
          request.add_chunks()->set_text(ChunkText(ids.back().first, ids.back().second, seed_));
        }
        v1::CheckChunksResponse response;
        s = stub->CheckChunks(&ctx, request, &response);
        if (s.ok() && response.results_size() != request.chunks_size()) {
          s = grpc::Status(grpc::StatusCode::INTERNAL, "wrong result count");
        }
        if (s.ok()) {
          items = response.results_size();
          for (int i = 0; i < response.results_size(); ++i) {
            const v1::ChunkResult& r = response.results(i);
            if (r.verdict() == v1::CHUNK_VERDICT_NEW) {
              acks << "K " << ids[i].first << " " << ids[i].second << " " << response.document_url()
                   << " " << r.chunk_id() << "\n";
            }
          }
        }
      }
      Record(items, s.ok(), absl::Now() - sent);
      if (!s.ok()) {
        if (s.error_code() != grpc::StatusCode::UNAVAILABLE &&
            s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED &&
            s.error_code() != grpc::StatusCode::CANCELLED) {
          std::cerr << "soak client " << id_ << ": " << CodeName(s.error_code()) << ": "
                    << s.error_message() << "\n";
        }
        stub.reset();  // reconnect (the server may have a new port)
        absl::SleepFor(absl::Milliseconds(20));
      }
    }
    acks.flush();
    if (!acks) {
      std::cerr << "soak client " << id_ << ": cannot write acks\n";
      failed_ = true;
    }
  }

  const int id_;
  const std::string work_;
  const uint64_t seed_;
  const int64_t start_ms_, end_ms_;
  const int last_minute_;  // the number of the run's last minute
  std::atomic<bool> failed_{false};
  absl::Mutex mu_;
  std::map<int, MinuteStats> minutes_ ABSL_GUARDED_BY(mu_);
};

// ----------------------------------------------------------- coordinator

// Spawn runs argv with stdout/stderr appended to `log` (when not empty);
// the child gets SIGKILL if this process dies. Returns the pid or -1.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  if (!log.empty()) {
    FILE* f = std::fopen(log.c_str(), "a");
    if (f != nullptr) {
      dup2(fileno(f), 2);
    }
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execv(args[0], args.data());
  _exit(127);
}

// RssKb returns a VmRSS-like field of /proc/<pid>/status in kB, or 0.
int64_t StatusKb(pid_t pid, const std::string& field) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::atoll(line.c_str() + field.size() + 1);
  }
  return 0;
}

// DirBytes: total size of the regular files below `path`.
int64_t DirBytes(const std::string& path) {
  int64_t total = 0;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return 0;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string p = path + "/" + name;
    struct stat st;
    if (lstat(p.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      total += DirBytes(p);
    } else if (S_ISREG(st.st_mode)) {
      total += st.st_size;
    }
  }
  closedir(dir);
  return total;
}

class Coordinator {
 public:
  explicit Coordinator(std::string work) : work_(std::move(work)) {}

  int Run() {
    const absl::Duration duration = absl::GetFlag(FLAGS_duration);
    const absl::Duration kill_every = absl::GetFlag(FLAGS_kill_every);
    const int clients = absl::GetFlag(FLAGS_clients);
    if (!StartServer()) return 1;
    start_ms_ = NowMs();
    end_ms_ = start_ms_ + absl::ToInt64Milliseconds(duration);
    std::vector<pid_t> client_pids;
    for (int c = 0; c < clients; ++c) {
      std::vector<std::string> argv = {
          "/proc/self/exe",
          absl::StrCat("--client=", c),
          absl::StrCat("--work_dir=", work_),
          absl::StrCat("--seed=", absl::GetFlag(FLAGS_seed)),
          absl::StrCat("--start_unix_ms=", start_ms_),
          absl::StrCat("--end_unix_ms=", end_ms_),
          absl::StrCat("--client_threads=", absl::GetFlag(FLAGS_client_threads)),
          absl::StrCat("--calls_per_sec=", absl::GetFlag(FLAGS_calls_per_sec)),
          absl::StrCat("--deadline_ms=", absl::GetFlag(FLAGS_deadline_ms)),
          absl::StrCat("--own_fraction=", absl::GetFlag(FLAGS_own_fraction))};
      // /proc/self/exe resolves in the child to this same program.
      const pid_t pid = Spawn(argv, WorkPath(work_, absl::StrCat("client_", c, ".log")));
      if (pid < 0) {
        std::cerr << "soak: cannot start client " << c << "\n";
        return 1;
      }
      client_pids.push_back(pid);
    }
    int64_t next_kill = kill_every > absl::ZeroDuration()
                            ? start_ms_ + absl::ToInt64Milliseconds(kill_every)
                            : INT64_MAX;
    int minutes_printed = 0;
    bool server_failed = false;
    while (NowMs() < end_ms_ && !server_failed) {
      SampleRss();
      if (NowMs() >= next_kill && NowMs() < end_ms_ - 1000) {
        KillServer();
        if (!StartServer()) server_failed = true;
        next_kill += absl::ToInt64Milliseconds(kill_every);
      }
      // A minute is printed once every client wrote its figures.
      while (minutes_printed < MinutesOf(end_ms_) &&
             start_ms_ + (minutes_printed + 1) * 60000LL <= NowMs() &&
             PrintMinute(minutes_printed, /*wait=*/false)) {
        ++minutes_printed;
      }
      absl::SleepFor(absl::Milliseconds(250));
    }
    // Let the clients finish (bounded), then the remaining minutes.
    bool clients_ok = true;
    const absl::Time give_up =
        absl::Now() + absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms) + 30000);
    for (pid_t pid : client_pids) {
      int status = 0;
      while (waitpid(pid, &status, WNOHANG) == 0) {
        SampleRss();
        if (absl::Now() > give_up) {
          kill(pid, SIGKILL);
          waitpid(pid, &status, 0);
          std::cerr << "soak: client " << pid << " did not stop; killed\n";
          break;
        }
        absl::SleepFor(absl::Milliseconds(100));
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) clients_ok = false;
    }
    for (; minutes_printed < MinutesOf(end_ms_); ++minutes_printed) {
      PrintMinute(minutes_printed, /*wait=*/true);
    }
    const Verdict v = server_failed ? Verdict{} : Verify();
    if (!server_failed) StopServer();
    // The run's first and last minute (samples taken while the clients
    // finish and during the check fall in a minute after the run).
    const int64_t first_rss = rss_peak_kb_[0];
    const int64_t last_rss = rss_peak_kb_[MinutesOf(end_ms_) - 1];
    std::cout << absl::StrFormat(
                     "soak_total secs=%d clients=%d kills=%d ops=%d items=%d errors=%d "
                     "acked_urls=%d acked_texts=%d acked_chunks=%d lost=%d double_new=%d "
                     "restart_ms_max=%d rss_first_min_mb=%.1f rss_last_min_mb=%.1f",
                     (end_ms_ - start_ms_) / 1000, clients, kills_, total_ops_, total_items_,
                     total_errors_, v.urls, v.texts, v.chunks, v.lost, v.double_new,
                     restart_ms_max_, first_rss / 1024.0, last_rss / 1024.0)
              << std::endl;
    for (const std::string& e : v.examples) std::cerr << "soak: " << e << "\n";
    if (server_failed || !clients_ok || !v.ok || v.lost != 0 || v.double_new != 0) {
      std::cerr << "soak: FAILED (server_failed=" << server_failed << " clients_ok=" << clients_ok
                << " verified=" << v.ok << ")\n";
      return 1;
    }
    return 0;
  }

  // Kills a server left running (on an early return).
  ~Coordinator() {
    if (server_pid_ > 0) {
      kill(server_pid_, SIGKILL);
      waitpid(server_pid_, nullptr, 0);
    }
  }

 private:
  struct Verdict {
    bool ok = false;
    int64_t urls = 0, texts = 0, chunks = 0, lost = 0, double_new = 0;
    std::vector<std::string> examples;  // the first few losses
  };

  int MinutesOf(int64_t end_ms) const {
    return static_cast<int>((end_ms - start_ms_ + 59999) / 60000);
  }
  int MinuteNow() const { return static_cast<int>((NowMs() - start_ms_) / 60000); }

  bool StartServer() {
    const std::string port_file = WorkPath(work_, "server.port");
    std::remove(port_file.c_str());
    std::vector<std::string> argv = {absl::GetFlag(FLAGS_dedupd), "--listen=127.0.0.1:0",
                                     "--data_dir=" + WorkPath(work_, "data"),
                                     "--port_file=" + port_file};
    for (const std::string& f : absl::GetFlag(FLAGS_server_flags)) argv.push_back(f);
    const absl::Time t0 = absl::Now();
    server_pid_ = Spawn(argv, WorkPath(work_, "server.log"));
    if (server_pid_ < 0) return false;
    while (ReadPort(port_file) == 0) {
      int status = 0;
      if (waitpid(server_pid_, &status, WNOHANG) == server_pid_) {
        std::cerr << "soak: the server exited at start (see " << WorkPath(work_, "server.log")
                  << ")\n";
        server_pid_ = -1;
        return false;
      }
      if (absl::Now() - t0 > absl::Seconds(120)) {
        std::cerr << "soak: the server did not serve within 120 s\n";
        return false;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    const int64_t took = absl::ToInt64Milliseconds(absl::Now() - t0);
    restart_ms_max_ = std::max(restart_ms_max_, took);
    if (start_ms_ != 0) {
      int64_t& minute = restart_ms_per_minute_[MinuteNow()];
      minute = std::max(minute, took);
    }
    return true;
  }

  void KillServer() {
    SampleRss();
    const int64_t hwm = StatusKb(server_pid_, "VmHWM");  // peak since the last start
    int64_t& peak = rss_peak_kb_[MinuteNow()];
    peak = std::max(peak, hwm);
    kill(server_pid_, SIGKILL);
    waitpid(server_pid_, nullptr, 0);
    server_pid_ = -1;
    ++kills_;
    ++kills_per_minute_[MinuteNow()];
  }

  void StopServer() {
    kill(server_pid_, SIGTERM);
    int status = 0;
    for (int i = 0; i < 600 && waitpid(server_pid_, &status, WNOHANG) == 0; ++i) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    if (waitpid(server_pid_, &status, WNOHANG) == 0) {
      kill(server_pid_, SIGKILL);
      waitpid(server_pid_, &status, 0);
    }
    server_pid_ = -1;
  }

  void SampleRss() {
    if (server_pid_ <= 0) return;
    const int64_t rss = StatusKb(server_pid_, "VmRSS");
    int64_t& peak = rss_peak_kb_[MinuteNow()];
    peak = std::max(peak, rss);
  }

  // PrintMinute reads every client's figures of minute `m` and prints the
  // line; false (nothing printed) when a client's file is not there yet and
  // `wait` is false.
  bool PrintMinute(int m, bool wait) {
    std::vector<uint32_t> latencies;
    int64_t ops = 0, items = 0, errors = 0;
    std::vector<std::string> paths;
    for (int c = 0; c < absl::GetFlag(FLAGS_clients); ++c) {
      paths.push_back(WorkPath(work_, absl::StrCat("client_", c, ".m", m)));
      std::ifstream probe(paths.back());
      if (!probe && !wait) return false;
    }
    for (const std::string& path : paths) {
      std::ifstream in(path);
      int64_t o = 0, i = 0, e = 0;
      if (!(in >> o >> i >> e)) continue;  // a client that died: counted as failed
      ops += o;
      items += i;
      errors += e;
      uint32_t us = 0;
      while (in >> us) latencies.push_back(us);
      std::remove(path.c_str());
    }
    std::vector<double> ms(latencies.begin(), latencies.end());
    for (double& x : ms) x /= 1000.0;
    const double p50 = Percentile(&ms, 0.50), p99 = Percentile(&ms, 0.99);
    const double max = ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end());
    total_ops_ += ops;
    total_items_ += items;
    total_errors_ += errors;
    std::cout << absl::StrFormat(
                     "soak minute=%d ops=%d items=%d errors=%d kills=%d restart_ms=%d "
                     "p50_ms=%.2f p99_ms=%.2f max_ms=%.1f rss_peak_mb=%.1f store_mb=%.1f",
                     m + 1, ops, items, errors, kills_per_minute_[m], restart_ms_per_minute_[m],
                     p50, p99, max, rss_peak_kb_[m] / 1024.0,
                     DirBytes(WorkPath(work_, "data")) / 1e6)
              << std::endl;
    return true;
  }

  // Verify reads every client's acknowledgements and checks them against
  // the running server with PEEK calls.
  Verdict Verify() {
    Verdict v;
    std::unordered_map<std::string, int> url_news;
    // (kind, id) -> owner URL; and the number of NEWs.
    std::map<std::pair<char, uint64_t>, std::pair<std::string, int>> texts;
    std::map<std::pair<char, uint64_t>, std::pair<std::string, int>> chunks;  // owner "doc#id"
    for (int c = 0; c < absl::GetFlag(FLAGS_clients); ++c) {
      for (int t = 0; t < absl::GetFlag(FLAGS_client_threads); ++t) {
        std::ifstream in(WorkPath(work_, absl::StrCat("acks_", c, "_", t)));
        std::string line;
        while (std::getline(in, line)) {
          std::vector<std::string> f = absl::StrSplit(line, ' ');
          if (f.size() == 2 && f[0] == "U") {
            ++url_news[f[1]];
          } else if (f.size() == 4 && f[0] == "C" && f[1].size() == 1) {
            auto& [owner, news] = texts[{f[1][0], std::strtoull(f[2].c_str(), nullptr, 10)}];
            if (news++ == 0) owner = f[3];
          } else if (f.size() == 5 && f[0] == "K" && f[1].size() == 1) {
            auto& [owner, news] = chunks[{f[1][0], std::strtoull(f[2].c_str(), nullptr, 10)}];
            if (news++ == 0) owner = absl::StrCat(f[3], "#", f[4]);
          } else {
            v.examples.push_back(absl::StrCat("bad ack line: ", line));
            return v;
          }
        }
      }
    }
    v.urls = static_cast<int64_t>(url_news.size());
    v.texts = static_cast<int64_t>(texts.size());
    v.chunks = static_cast<int64_t>(chunks.size());
    auto lost = [&v](const std::string& what) {
      ++v.lost;
      if (v.examples.size() < 10) v.examples.push_back("lost: " + what);
    };
    for (const auto& [url, n] : url_news) v.double_new += n > 1;
    for (const auto& [id, o] : texts) v.double_new += o.second > 1;
    for (const auto& [id, o] : chunks) v.double_new += o.second > 1;

    const int port = ReadPort(WorkPath(work_, "server.port"));
    auto stub = v1::Dedup::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    auto deadline = [] { return std::chrono::system_clock::now() + std::chrono::seconds(60); };
    // URLs, 1,000 a call.
    std::vector<const std::string*> urls;
    for (const auto& [url, n] : url_news) urls.push_back(&url);
    for (size_t start = 0; start < urls.size(); start += 1000) {
      v1::CheckUrlRequest request;
      request.set_mode(v1::CLAIM_MODE_PEEK);
      const size_t end = std::min(urls.size(), start + 1000);
      for (size_t i = start; i < end; ++i) request.add_items()->set_url(*urls[i]);
      v1::CheckUrlResponse response;
      grpc::ClientContext ctx;
      ctx.set_deadline(deadline());
      const grpc::Status s = stub->CheckUrl(&ctx, request, &response);
      if (!s.ok() || response.results_size() != request.items_size()) {
        v.examples.push_back(absl::StrCat("verify CheckUrl failed: ", s.error_message()));
        return v;
      }
      for (size_t i = start; i < end; ++i) {
        if (response.results(static_cast<int>(i - start)).verdict() != v1::URL_VERDICT_SEEN) {
          lost("url " + *urls[i]);
        }
      }
    }
    // Texts, 200 a call, each under a URL of its own.
    std::vector<const std::pair<const std::pair<char, uint64_t>, std::pair<std::string, int>>*> all;
    for (const auto& e : texts) all.push_back(&e);
    for (size_t start = 0; start < all.size(); start += 200) {
      v1::CheckContentRequest request;
      request.set_mode(v1::CLAIM_MODE_PEEK);
      const size_t end = std::min(all.size(), start + 200);
      for (size_t i = start; i < end; ++i) {
        v1::ContentItem* item = request.add_items();
        item->set_url(absl::StrCat("https://verify.example/", i));
        item->set_text(
            DocText(all[i]->first.first, all[i]->first.second, absl::GetFlag(FLAGS_seed)));
      }
      v1::CheckContentResponse response;
      grpc::ClientContext ctx;
      ctx.set_deadline(deadline());
      const grpc::Status s = stub->CheckContent(&ctx, request, &response);
      if (!s.ok() || response.results_size() != request.items_size()) {
        v.examples.push_back(absl::StrCat("verify CheckContent failed: ", s.error_message()));
        return v;
      }
      for (size_t i = start; i < end; ++i) {
        const v1::ContentResult& r = response.results(static_cast<int>(i - start));
        if (r.verdict() != v1::CONTENT_VERDICT_EXACT_DUPLICATE ||
            r.owner_url() != all[i]->second.first) {
          lost(absl::StrCat("text ", std::string(1, all[i]->first.first), all[i]->first.second,
                            " owner ", all[i]->second.first, ": verdict ", r.verdict(), " owner ",
                            r.owner_url()));
        }
      }
    }
    // Chunk texts, 1,000 a call (distinct texts: no match inside a call).
    all.clear();
    for (const auto& e : chunks) all.push_back(&e);
    for (size_t start = 0; start < all.size(); start += 1000) {
      v1::CheckChunksRequest request;
      request.set_mode(v1::CLAIM_MODE_PEEK);
      request.set_document_url(absl::StrCat("https://verify.example/chunks/", start));
      const size_t end = std::min(all.size(), start + 1000);
      for (size_t i = start; i < end; ++i) {
        request.add_chunks()->set_text(
            ChunkText(all[i]->first.first, all[i]->first.second, absl::GetFlag(FLAGS_seed)));
      }
      v1::CheckChunksResponse response;
      grpc::ClientContext ctx;
      ctx.set_deadline(deadline());
      const grpc::Status s = stub->CheckChunks(&ctx, request, &response);
      if (!s.ok() || response.results_size() != request.chunks_size()) {
        v.examples.push_back(absl::StrCat("verify CheckChunks failed: ", s.error_message()));
        return v;
      }
      for (size_t i = start; i < end; ++i) {
        const v1::ChunkResult& r = response.results(static_cast<int>(i - start));
        const std::string got =
            absl::StrCat(r.duplicate_of_document_url(), "#", r.duplicate_of_chunk_id());
        if (r.verdict() != v1::CHUNK_VERDICT_EXACT_DUPLICATE || got != all[i]->second.first) {
          lost(absl::StrCat("chunk ", std::string(1, all[i]->first.first), all[i]->first.second,
                            " owner ", all[i]->second.first, ": verdict ", r.verdict(), " owner ",
                            got));
        }
      }
    }
    v.ok = true;
    return v;
  }

  const std::string work_;
  pid_t server_pid_ = -1;
  int64_t start_ms_ = 0, end_ms_ = 0;
  int kills_ = 0;
  std::map<int, int> kills_per_minute_;
  std::map<int, int64_t> rss_peak_kb_;  // minute -> peak VmRSS (kB)
  int64_t restart_ms_max_ = 0;
  std::map<int, int64_t> restart_ms_per_minute_;  // minute -> longest restart
  int64_t total_ops_ = 0, total_items_ = 0, total_errors_ = 0;
};

bool RemoveTree(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return std::remove(path.c_str()) == 0;
  while (dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string p = path + "/" + name;
    struct stat st;
    if (lstat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      RemoveTree(p);
    } else {
      std::remove(p.c_str());
    }
  }
  closedir(dir);
  return rmdir(path.c_str()) == 0;
}

}  // namespace
}  // namespace dedupd::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "soak: mixed claim load against dedupd with a SIGKILL + restart every "
      "--kill_every; checks that no acknowledged write is lost.\n"
      "Usage: dedupd_soak --dedupd=PATH [--duration=10m] [--kill_every=60s] [--clients=3]");
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  if (absl::GetFlag(FLAGS_client) >= 0) {
    dedupd::bench::Client client(absl::GetFlag(FLAGS_client), absl::GetFlag(FLAGS_work_dir),
                                 absl::GetFlag(FLAGS_seed), absl::GetFlag(FLAGS_start_unix_ms),
                                 absl::GetFlag(FLAGS_end_unix_ms));
    return client.Run();
  }
  if (absl::GetFlag(FLAGS_dedupd).empty()) {
    std::cerr << "soak: --dedupd=PATH is required\n";
    return 2;
  }
  if (absl::GetFlag(FLAGS_clients) < 1 || absl::GetFlag(FLAGS_client_threads) < 1 ||
      absl::GetFlag(FLAGS_duration) < absl::Seconds(1)) {
    std::cerr << "soak: --clients and --client_threads must be >= 1, --duration >= 1s\n";
    return 2;
  }
  std::string work = absl::GetFlag(FLAGS_work_dir);
  const bool made = work.empty();
  if (made) {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/dedupd-soak.XXXXXX");
    if (mkdtemp(templ.data()) == nullptr) {
      std::cerr << "soak: cannot make a scratch directory\n";
      return 1;
    }
    work = templ;
  } else {
    mkdir(work.c_str(), 0755);
  }
  std::cout << "# soak: work dir " << work << ", seed " << absl::GetFlag(FLAGS_seed)
            << ", duration " << absl::FormatDuration(absl::GetFlag(FLAGS_duration))
            << ", kill every " << absl::FormatDuration(absl::GetFlag(FLAGS_kill_every))
            << ", clients " << absl::GetFlag(FLAGS_clients) << " x "
            << absl::GetFlag(FLAGS_client_threads) << " threads at most "
            << absl::GetFlag(FLAGS_calls_per_sec) << " calls/s each" << std::endl;
  int rc = 0;
  {
    dedupd::bench::Coordinator coordinator(work);
    rc = coordinator.Run();
  }
  if (made && !absl::GetFlag(FLAGS_keep) && rc == 0) {
    dedupd::bench::RemoveTree(work);
  } else {
    std::cout << "# soak: work dir kept: " << work << std::endl;
  }
  return rc;
}
