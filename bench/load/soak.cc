// soak: a bounded soak of the real dedupd. It starts the server
// binary on 127.0.0.1 port 0 with a fresh data dir, starts --clients client
// processes (this program again, in client mode) that send a mixed
// CheckUrl / CheckContent / CheckChunks CLAIM load, SIGKILLs the server every
// --kill_every and restarts it on the same data dir, for --duration. Clients
// find the new port in the server's --port_file and carry on. Then every
// write a client saw acknowledged (a NEW answer, a CONFIRMED lease) is
// checked with PEEK calls against the last server, and the run is summed up.
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
//       retried_ok=<r> retried_new=<n> recovered=<v> gave_up=<g>
//       reclaimed=<c> confirmed=<f> dropped=<u> lease_lost=<l>
//       bad_reclaims=<b> confirmed_twice=<t> not_reoffered=<o>
//
// (one line each). ops: calls answered OK (a resend counts as a call, and
// so does every CompleteUrls); items: URLs, documents and chunks in them;
// errors: calls that failed (mostly those in flight at a kill or sent while
// the server restarted). p50/p99/max: latency of one answered call, from
// send to answer, measured in the client processes. rss_peak_mb: the
// largest VmRSS of the server sampled every 250 ms in the minute (MiB),
// across restarts; store_mb: the data dir's size at the end of the minute.
// acked_*: distinct keys answered NEW (URLs, content texts, chunk texts).
// restart_ms_max: the longest time from a restart to serving;
// rss_first_min_mb / rss_last_min_mb: rss_peak_mb of the first and the
// last minute.
//
// The checks (each must be 0; the exit status is 1 otherwise, or when the
// server or a client failed):
//   lost: acknowledged writes that the last server does not hold as
//     acknowledged: a text or chunk text not an EXACT_DUPLICATE of the owner
//     it was acknowledged to; without leases, a URL answered NEW that is
//     not SEEN. With leases, a URL some client saw confirmed (CONFIRMED, or
//     ALREADY_CONFIRMED to its claimant) that is not SEEN with no lease
//     pending, and any other URL answered NEW that is neither SEEN nor NEW
//     with reclaimed (its lease ended unconfirmed); a plain NEW has no
//     record. A confirmation answered NOT_CLAIMED is lost too.
//   double_new: texts and chunk texts answered NEW to more than one call;
//     URLs answered NEW, not reclaimed, to more than one claim (CheckUrl
//     call; its resends, with the same claim id, are the same claim).
//   bad_reclaims: reclaims (NEW with reclaimed) without leases; after a
//     CONFIRMED answer for the URL had arrived before the reclaim's first
//     attempt was sent; before the lease of the URL's claim before it ended
//     (by the claims' server times: a NEW's lease_expire_time minus the
//     lease); of a URL no client claimed before (unless a call with it went
//     unanswered).
//   confirmed_twice: URLs answered CONFIRMED more than once.
//   not_reoffered: URLs whose last claim was left unconfirmed on purpose,
//     with no confirmation and no unanswered call, that PEEK does not
//     answer NEW with reclaimed once the lease ended: the next claimant
//     would not get them.
// The counts beside them: retried_ok: CheckUrl calls answered on a resend;
// retried_new: URLs such a resend answered NEW; recovered: of those, the
// ones claimed (server time) before the last attempt was sent, i.e. by an
// earlier attempt whose reply was lost: what the claim id exists for;
// gave_up: CheckUrl and CompleteUrls calls never answered (every failed
// CheckUrl without claim ids); reclaimed: reclaims (distinct claims);
// confirmed: CONFIRMED answers; dropped: NEW URLs left unconfirmed on
// purpose; lease_lost: confirmations answered LEASE_LOST (the lease ended
// and another client reclaimed the URL first).
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
// CheckUrl calls carry a random 16-byte claim id (--url_claim_ids, the
// default, as the C++ client does) and a call that fails UNAVAILABLE,
// DEADLINE_EXCEEDED or CANCELLED is resent unchanged once the server is
// back (at most 6 attempts, started within 20 s); CheckContent and
// CheckChunks calls are never resent. With --url_lease_seconds the claims
// are leased: a client confirms the URLs it was answered NEW (reclaimed or
// not) with CompleteUrls (with the call's claim id) 100-300 ms later, a
// fetch, resent like CheckUrl, except a random --unconfirmed_fraction of
// them that it never confirms, as a crashed worker would. At the end each
// client finishes its fetches, and the check waits until every lease a
// client saw has ended.
//
// Example (the README's run; add --url_lease_seconds=5 for leases):
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
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
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
#include "bench/load/soak_client.h"
#include "bench/load/soak_workload.h"
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
ABSL_FLAG(bool, url_claim_ids, true,
          "every CheckUrl call carries a random 16-byte claim_id, and a call "
          "that fails UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED is resent "
          "with the same claim_id (as the C++ client does), at most 6 attempts "
          "within 20 s; false: no claim_id and no resend");
ABSL_FLAG(int, url_lease_seconds, 0,
          "lease the URLs CheckUrl claims for this many seconds (1 to "
          "604800); each client confirms its NEW URLs with CompleteUrls "
          "100-300 ms after the answer (a fetch), but for "
          "--unconfirmed_fraction of them; 0: no lease");
ABSL_FLAG(double, unconfirmed_fraction, 0.1,
          "with --url_lease_seconds: fraction of the URLs answered NEW that a "
          "client never confirms (a crashed worker); their lease must end and "
          "the URL come back NEW, reclaimed");
// Client mode (internal: the coordinator starts clients with these).
ABSL_FLAG(int, client, -1, "internal: run as client number N");
ABSL_FLAG(int64_t, start_unix_ms, 0, "internal: the run's start");
ABSL_FLAG(int64_t, end_unix_ms, 0, "internal: when clients stop sending");

namespace dedupd::bench {
namespace {

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
          absl::StrCat("--own_fraction=", absl::GetFlag(FLAGS_own_fraction)),
          absl::StrCat("--url_claim_ids=", absl::GetFlag(FLAGS_url_claim_ids) ? "true" : "false"),
          absl::StrCat("--url_lease_seconds=", absl::GetFlag(FLAGS_url_lease_seconds)),
          absl::StrCat("--unconfirmed_fraction=", absl::GetFlag(FLAGS_unconfirmed_fraction))};
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
    // Let the clients finish (bounded: a call's resends, then its fetch's),
    // then the remaining minutes.
    bool clients_ok = true;
    const absl::Time give_up =
        absl::Now() + 2 * (kRetryWindow + absl::Milliseconds(absl::GetFlag(FLAGS_deadline_ms))) +
        absl::Seconds(10);
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
                     "restart_ms_max=%d rss_first_min_mb=%.1f rss_last_min_mb=%.1f "
                     "retried_ok=%d retried_new=%d recovered=%d gave_up=%d reclaimed=%d "
                     "confirmed=%d dropped=%d lease_lost=%d bad_reclaims=%d confirmed_twice=%d "
                     "not_reoffered=%d",
                     (end_ms_ - start_ms_) / 1000, clients, kills_, total_ops_, total_items_,
                     total_errors_, v.urls, v.texts, v.chunks, v.lost, v.double_new,
                     restart_ms_max_, first_rss / 1024.0, last_rss / 1024.0, v.retried_ok,
                     v.retried_new, v.recovered, v.gave_up, v.reclaimed, v.confirmed, v.dropped,
                     v.lease_lost, v.bad_reclaims, v.confirmed_twice, v.not_reoffered)
              << std::endl;
    for (const std::string& e : v.examples) std::cerr << "soak: " << e << "\n";
    const bool violations = v.lost != 0 || v.double_new != 0 || v.bad_reclaims != 0 ||
                            v.confirmed_twice != 0 || v.not_reoffered != 0;
    if (server_failed || !clients_ok || !v.ok || violations) {
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
    // From the clients' ThreadTotals.
    int64_t retried_ok = 0, retried_new = 0, recovered = 0, gave_up = 0;
    // Leases: reclaims (distinct claims), CONFIRMED answers, URLs left
    // unconfirmed on purpose, confirmations answered LEASE_LOST.
    int64_t reclaimed = 0, confirmed = 0, dropped = 0, lease_lost = 0;
    // Violations (each must be 0).
    int64_t bad_reclaims = 0, confirmed_twice = 0, not_reoffered = 0;
    std::vector<std::string> examples;  // the first few violations
  };

  // One NEW answer of a URL ("U" line).
  struct UrlClaimLog {
    std::string token;  // the CheckUrl call (one claim id, its resends alike)
    bool reclaimed = false;
    int64_t sent_us = 0;    // the call's first attempt was sent (client clock)
    int64_t claim_us = 0;   // the claim on the server (its clock: the same)
    int64_t expire_us = 0;  // its lease's end; 0: no lease
  };

  // What the clients saw of one URL.
  struct UrlHistory {
    std::vector<UrlClaimLog> claims;    // its NEW answers, one per call
    std::vector<int64_t> confirmed_us;  // when CONFIRMED answers arrived
    std::vector<std::string> dropped;   // tokens of claims left unconfirmed
    bool already_confirmed = false;     // an ALREADY_CONFIRMED answer
    bool not_claimed = false;           // a NOT_CLAIMED answer
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

  // CheckClaims counts what the clients' own answers of one URL show
  // (before any PEEK): double NEWs, reclaims and bad ones, CONFIRMED twice.
  // `unknown`: a call with the URL was never answered, so the server may
  // hold a claim of it that no line shows.
  void CheckClaims(const std::string& url, const UrlHistory& h, bool unknown, Verdict* v) const {
    const int64_t lease_us = int64_t{absl::GetFlag(FLAGS_url_lease_seconds)} * 1000000;
    auto violation = [&](int64_t* counter, const std::string& what) {
      ++*counter;
      if (v->examples.size() < 10) v->examples.push_back(absl::StrCat(what, ": url ", url));
    };
    // A resend with the same claim id answered NEW again is the same claim:
    // only claims of different calls count.
    std::set<std::string> plain, reclaims;
    for (const UrlClaimLog& c : h.claims) (c.reclaimed ? reclaims : plain).insert(c.token);
    if (plain.size() > 1) violation(&v->double_new, "NEW to two claims");
    v->reclaimed += static_cast<int64_t>(reclaims.size());
    if (h.confirmed_us.size() > 1) violation(&v->confirmed_twice, "CONFIRMED twice");
    for (const UrlClaimLog& r : h.claims) {
      if (!r.reclaimed) continue;
      if (lease_us == 0) {
        violation(&v->bad_reclaims, "reclaimed without leases");
        continue;
      }
      if (plain.count(r.token) != 0) {
        violation(&v->bad_reclaims, "one claim answered NEW and reclaimed");
        continue;
      }
      // Confirmed (answer received) before the reclaim's first attempt was
      // sent: the URL was SEEN for good by then.
      if (std::any_of(h.confirmed_us.begin(), h.confirmed_us.end(),
                      [&](int64_t c) { return c < r.sent_us; })) {
        violation(&v->bad_reclaims, "reclaimed after CONFIRMED");
        continue;
      }
      // The claim before this one (server times) must have had its lease
      // end first. A claim no client saw answered lies between the two
      // only after that lease ended, so the check holds with it too.
      const UrlClaimLog* before = nullptr;
      for (const UrlClaimLog& c : h.claims) {
        if (c.token != r.token && c.claim_us <= r.claim_us &&
            (before == nullptr || c.claim_us > before->claim_us)) {
          before = &c;
        }
      }
      if (before == nullptr) {
        if (!unknown) violation(&v->bad_reclaims, "reclaimed, never claimed before");
      } else if (before->expire_us == 0 || before->expire_us > r.claim_us) {
        violation(&v->bad_reclaims,
                  absl::StrCat("reclaimed at ", r.claim_us, " before the lease of ", before->token,
                               " ended at ", before->expire_us));
      }
    }
  }

  // Verify reads every client's acknowledgements and checks them against
  // the running server with PEEK calls.
  Verdict Verify() {
    Verdict v;
    const int lease_seconds = absl::GetFlag(FLAGS_url_lease_seconds);
    std::unordered_map<std::string, UrlHistory> url_history;
    std::unordered_set<std::string> url_unknown;  // in a call never answered
    // (kind, id) -> owner URL; and the number of NEWs.
    std::map<std::pair<char, uint64_t>, std::pair<std::string, int>> texts;
    std::map<std::pair<char, uint64_t>, std::pair<std::string, int>> chunks;  // owner "doc#id"
    for (int c = 0; c < absl::GetFlag(FLAGS_clients); ++c) {
      for (int t = 0; t < absl::GetFlag(FLAGS_client_threads); ++t) {
        std::ifstream in(WorkPath(work_, absl::StrCat("acks_", c, "_", t)));
        std::string line;
        while (std::getline(in, line)) {
          std::vector<std::string> f = absl::StrSplit(line, ' ');
          auto num = [&f](size_t i) { return std::strtoll(f[i].c_str(), nullptr, 10); };
          if (f.size() == 7 && f[0] == "U") {
            url_history[f[1]].claims.push_back({f[2], f[3] == "1", num(4), num(5), num(6)});
          } else if (f.size() == 3 && f[0] == "D") {
            url_history[f[1]].dropped.push_back(f[2]);
            ++v.dropped;
          } else if (f.size() == 5 && f[0] == "F" && f[2].size() == 1) {
            UrlHistory& h = url_history[f[1]];
            switch (f[2][0]) {
              case 'C':
                h.confirmed_us.push_back(num(3));
                ++v.confirmed;
                break;
              case 'A':
                h.already_confirmed = true;
                break;
              case 'L':
                ++v.lease_lost;
                break;
              case 'N':
                h.not_claimed = true;
                break;
              default:  // another INVALID: not confirmed, and no verdict on the URL
                if (v.examples.size() < 10) v.examples.push_back("CompleteUrls INVALID: " + line);
                break;
            }
          } else if (f.size() == 2 && (f[0] == "G" || f[0] == "X")) {
            url_unknown.insert(f[1]);
          } else if (f.size() == 5 && f[0] == "T") {
            v.retried_ok += num(1);
            v.retried_new += num(2);
            v.recovered += num(3);
            v.gave_up += num(4);
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
    v.texts = static_cast<int64_t>(texts.size());
    v.chunks = static_cast<int64_t>(chunks.size());
    auto lost = [&v](const std::string& what) {
      ++v.lost;
      if (v.examples.size() < 10) v.examples.push_back("lost: " + what);
    };
    int64_t last_expire_us = 0;
    for (const auto& [url, h] : url_history) {
      v.urls += !h.claims.empty();
      CheckClaims(url, h, url_unknown.count(url) != 0, &v);
      for (const UrlClaimLog& c : h.claims) last_expire_us = std::max(last_expire_us, c.expire_us);
    }
    for (const auto& [id, o] : texts) v.double_new += o.second > 1;
    for (const auto& [id, o] : chunks) v.double_new += o.second > 1;

    // Every lease the clients saw ends before the PEEKs (bounded: a lease
    // ends at most --url_lease_seconds after now).
    if (last_expire_us > 0) {
      const absl::Time until =
          std::min(absl::FromUnixMicros(last_expire_us) + absl::Milliseconds(100),
                   absl::Now() + absl::Seconds(lease_seconds + 1));
      if (until > absl::Now()) absl::SleepFor(until - absl::Now());
    }
    const int port = ReadPort(WorkPath(work_, "server.port"));
    auto stub = v1::Dedup::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
    auto deadline = [] { return std::chrono::system_clock::now() + std::chrono::seconds(60); };
    // URLs, 1,000 a call. Without leases every URL answered NEW is SEEN.
    // With leases: a URL confirmed (CONFIRMED or ALREADY_CONFIRMED) is SEEN
    // with no lease pending; any other is SEEN or, its last lease ended
    // unconfirmed, NEW with reclaimed (a plain NEW has no record: lost); and
    // a URL whose last claim was left unconfirmed on purpose, with no
    // confirmation and no unanswered call, is NEW with reclaimed: it comes
    // back to the next claimant.
    std::vector<std::pair<const std::string*, const UrlHistory*>> urls;
    for (const auto& [url, h] : url_history) urls.emplace_back(&url, &h);
    for (size_t start = 0; start < urls.size(); start += 1000) {
      v1::CheckUrlRequest request;
      request.set_mode(v1::CLAIM_MODE_PEEK);
      const size_t end = std::min(urls.size(), start + 1000);
      for (size_t i = start; i < end; ++i) request.add_items()->set_url(*urls[i].first);
      v1::CheckUrlResponse response;
      grpc::ClientContext ctx;
      ctx.set_deadline(deadline());
      const grpc::Status s = stub->CheckUrl(&ctx, request, &response);
      if (!s.ok() || response.results_size() != request.items_size()) {
        v.examples.push_back(absl::StrCat("verify CheckUrl failed: ", s.error_message()));
        return v;
      }
      for (size_t i = start; i < end; ++i) {
        const std::string& url = *urls[i].first;
        const UrlHistory& h = *urls[i].second;
        const v1::UrlResult& r = response.results(static_cast<int>(i - start));
        const bool seen = r.verdict() == v1::URL_VERDICT_SEEN;
        const bool reoffered = r.verdict() == v1::URL_VERDICT_NEW && r.reclaimed();
        const bool confirmed = !h.confirmed_us.empty() || h.already_confirmed;
        if (h.not_claimed) {
          lost("url " + url + " (CompleteUrls: NOT_CLAIMED)");
        } else if (lease_seconds == 0) {
          if (!seen) lost("url " + url);
        } else if (confirmed) {
          if (!seen || r.has_lease_expire_time()) lost("url " + url + " (confirmed)");
        } else if (!seen && !reoffered) {
          lost("url " + url);
        } else if (!h.claims.empty() && !reoffered && url_unknown.count(url) == 0) {
          const UrlClaimLog* last = &h.claims.front();
          for (const UrlClaimLog& c : h.claims) {
            if (c.claim_us > last->claim_us) last = &c;
          }
          if (std::find(h.dropped.begin(), h.dropped.end(), last->token) != h.dropped.end()) {
            ++v.not_reoffered;
            if (v.examples.size() < 10) {
              v.examples.push_back(absl::StrCat("not re-offered: url ", url, " (lease of ",
                                                last->token, " ended unconfirmed)"));
            }
          }
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
      "Usage: dedupd_soak --dedupd=PATH [--duration=10m] [--kill_every=60s] [--clients=3]\n"
      "       [--url_claim_ids=true] [--url_lease_seconds=0] [--unconfirmed_fraction=0.1]");
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  if (absl::GetFlag(FLAGS_client) >= 0) {
    return dedupd::bench::RunSoakClient(
        absl::GetFlag(FLAGS_client), absl::GetFlag(FLAGS_work_dir), absl::GetFlag(FLAGS_seed),
        absl::GetFlag(FLAGS_start_unix_ms), absl::GetFlag(FLAGS_end_unix_ms));
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
  if (absl::GetFlag(FLAGS_url_lease_seconds) < 0 ||
      absl::GetFlag(FLAGS_url_lease_seconds) > 604800 ||
      !(absl::GetFlag(FLAGS_unconfirmed_fraction) >= 0 &&
        absl::GetFlag(FLAGS_unconfirmed_fraction) <= 1)) {
    std::cerr << "soak: --url_lease_seconds must be 0 to 604800, --unconfirmed_fraction 0 to 1\n";
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
            << absl::GetFlag(FLAGS_calls_per_sec) << " calls/s each, CheckUrl "
            << (absl::GetFlag(FLAGS_url_claim_ids) ? "with" : "without") << " claim ids, "
            << (absl::GetFlag(FLAGS_url_lease_seconds) > 0
                    ? absl::StrCat(absl::GetFlag(FLAGS_url_lease_seconds), " s leases (",
                                   absl::GetFlag(FLAGS_unconfirmed_fraction), " unconfirmed)")
                    : std::string("no leases"))
            << std::endl;
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
