// soak_client.cc: the client processes of the kill -9 soak (soak_client.h).
#include "bench/load/soak_client.h"

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

#include "absl/flags/declare.h"
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
#include "bench/load/soak_workload.h"
#include "dedupd/v1/dedupd.grpc.pb.h"

// Defined in soak.cc, with their help texts.
ABSL_DECLARE_FLAG(double, calls_per_sec);
ABSL_DECLARE_FLAG(int, client_threads);
ABSL_DECLARE_FLAG(int, deadline_ms);
ABSL_DECLARE_FLAG(double, own_fraction);
ABSL_DECLARE_FLAG(double, unconfirmed_fraction);
ABSL_DECLARE_FLAG(bool, url_claim_ids);
ABSL_DECLARE_FLAG(int, url_lease_seconds);

namespace dedupd::bench {
namespace {

// ---------------------------------------------------------------- client

// Per-minute figures of one client process.
struct MinuteStats {
  int64_t ops = 0, items = 0, errors = 0;
  std::vector<uint32_t> latency_us;
};

// A fetch confirms its URLs this long after their NEW answer, uniformly
// (kFetchMinMs + [0, kFetchSpreadMs]).
constexpr int kFetchMinMs = 100, kFetchSpreadMs = 200;

int64_t Micros(const google::protobuf::Timestamp& t) {
  return t.seconds() * 1000000 + t.nanos() / 1000;
}

// The stub of one client thread to the current server, made again when
// the server's port file names a new port. Thread-compatible.
class Connection {
 public:
  explicit Connection(std::string port_file) : port_file_(std::move(port_file)) {}

  // Get returns the stub, or nullptr while the port file is missing (the
  // server restarts). The stub lives until the next Get or Reset.
  v1::Dedup::Stub* Get() {
    const int current = ReadPort(port_file_);
    if (current == 0) return nullptr;
    if (current != port_ || stub_ == nullptr) {
      port_ = current;
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      stub_ = v1::Dedup::NewStub(grpc::CreateCustomChannel(
          absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials(), args));
    }
    return stub_.get();
  }

  // Reset drops the stub: the next Get connects afresh.
  void Reset() { stub_.reset(); }

 private:
  const std::string port_file_;
  int port_ = 0;
  std::unique_ptr<v1::Dedup::Stub> stub_;
};

// The outcome of one call and its resends.
struct Sent {
  grpc::Status status;
  int attempts = 0;        // attempts sent (0: the server had no port)
  absl::Time first_sent;   // when the first attempt was sent
  absl::Time last_sent;    // when the last one was
  absl::Duration latency;  // of the last attempt
};

// One CheckUrl call's URLs that the client still has to confirm.
struct PendingFetch {
  std::string claim_id;  // the call's (empty without claim ids)
  std::string token;     // the call's name in the acks file
  std::vector<std::string> urls;
};

// The counters of one client thread that no acks line carries.
struct ThreadTotals {
  int64_t retried_ok = 0;   // CheckUrl calls answered on a resend
  int64_t retried_new = 0;  // URLs such a resend answered NEW
  int64_t recovered = 0;    // of those, claimed by an earlier attempt
  int64_t gave_up = 0;      // CheckUrl and CompleteUrls calls never answered
};

class Client {
 public:
  Client(int id, std::string work, uint64_t seed, int64_t start_ms, int64_t end_ms)
      : id_(id),
        work_(std::move(work)),
        seed_(seed),
        start_ms_(start_ms),
        end_ms_(end_ms),
        last_minute_(static_cast<int>((end_ms - start_ms - 1) / 60000)),
        deadline_ms_(absl::GetFlag(FLAGS_deadline_ms)),
        claim_ids_(absl::GetFlag(FLAGS_url_claim_ids)),
        lease_seconds_(absl::GetFlag(FLAGS_url_lease_seconds)),
        unconfirmed_fraction_(absl::GetFlag(FLAGS_unconfirmed_fraction)) {}

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

  // Send runs `rpc` once, and with `retry` again after a transient failure
  // (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED: in flight at a kill, or sent
  // while the server restarted) within the kMaxAttempts / kRetryWindow
  // bounds, each time with a fresh context and the current server. `rpc`
  // must send the same request every time. Every failed attempt is
  // recorded as an error; the caller records the answer.
  Sent Send(Connection* conn, bool retry,
            const std::function<grpc::Status(v1::Dedup::Stub*, grpc::ClientContext*)>& rpc) {
    Sent out;
    out.first_sent = absl::Now();
    out.status = grpc::Status(grpc::StatusCode::UNAVAILABLE, "no server port");
    for (;;) {
      v1::Dedup::Stub* stub = conn->Get();
      if (stub == nullptr) {  // the server restarts
        if (!retry || absl::Now() - out.first_sent >= kRetryWindow) return out;
        absl::SleepFor(absl::Milliseconds(20));
        continue;
      }
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms_));
      out.last_sent = absl::Now();
      ++out.attempts;
      out.status = rpc(stub, &ctx);
      out.latency = absl::Now() - out.last_sent;
      if (out.status.ok()) return out;
      Record(0, false, out.latency);
      const grpc::StatusCode code = out.status.error_code();
      const bool transient = code == grpc::StatusCode::UNAVAILABLE ||
                             code == grpc::StatusCode::DEADLINE_EXCEEDED ||
                             code == grpc::StatusCode::CANCELLED;
      if (!transient) {
        std::cerr << "soak client " << id_ << ": " << CodeName(code) << ": "
                  << out.status.error_message() << "\n";
      }
      conn->Reset();  // reconnect (the server may have a new port)
      if (!retry || !transient || out.attempts >= kMaxAttempts ||
          absl::Now() - out.first_sent >= kRetryWindow) {
        absl::SleepFor(absl::Milliseconds(20));
        return out;
      }
      absl::Duration wait = kFirstBackoff;
      for (int i = 1; i < out.attempts && wait < kMaxBackoff; ++i) wait *= 2;
      absl::SleepFor(std::min(wait, kMaxBackoff));
    }
  }

  // Confirm sends one fetch's CompleteUrls (resent like a CheckUrl; a
  // repeated confirmation changes nothing) and writes one line per URL:
  // "F <url> <C|A|L|N|I> <answered_us> <token>" (CONFIRMED,
  // ALREADY_CONFIRMED, LEASE_LOST, NOT_CLAIMED, another INVALID), or
  // "X <url>" when the call was never answered.
  void Confirm(Connection* conn, const PendingFetch& fetch, std::ostream& acks,
               ThreadTotals* totals) {
    v1::CompleteUrlsRequest request;
    for (const std::string& url : fetch.urls) request.add_items()->set_url(url);
    request.set_claim_id(fetch.claim_id);
    v1::CompleteUrlsResponse response;
    const Sent sent =
        Send(conn, /*retry=*/true, [&](v1::Dedup::Stub* stub, grpc::ClientContext* ctx) {
          response.Clear();
          return stub->CompleteUrls(ctx, request, &response);
        });
    const int64_t answered_us = absl::ToUnixMicros(absl::Now());
    if (sent.status.ok() && response.results_size() != request.items_size()) {
      Record(0, false, sent.latency);
      std::cerr << "soak client " << id_ << ": CompleteUrls: wrong result count\n";
      failed_ = true;
    } else if (sent.status.ok()) {
      Record(response.results_size(), true, sent.latency);
      for (int i = 0; i < response.results_size(); ++i) {
        const v1::CompleteResult& r = response.results(i);
        char v = 'I';
        if (r.verdict() == v1::COMPLETE_VERDICT_CONFIRMED) {
          v = 'C';
        } else if (r.verdict() == v1::COMPLETE_VERDICT_ALREADY_CONFIRMED) {
          v = 'A';
        } else if (r.error_reason() == v1::ERROR_REASON_LEASE_LOST) {
          v = 'L';
        } else if (r.error_reason() == v1::ERROR_REASON_NOT_CLAIMED) {
          v = 'N';
        }
        acks << "F " << fetch.urls[i] << " " << v << " " << answered_us << " " << fetch.token
             << "\n";
      }
      return;
    }
    ++totals->gave_up;
    for (const std::string& url : fetch.urls) acks << "X " << url << "\n";
  }

  void Work(int thread) {
    Rng rng(Mix(seed_ ^ Mix(static_cast<uint64_t>(id_ * 1000 + thread + 1))));
    // Which NEW URLs go unconfirmed and when fetches end: a stream of its
    // own, so that leases do not change the workload's draws.
    Rng lease_rng(Mix(~seed_ ^ Mix(static_cast<uint64_t>(id_ * 1000 + thread + 1))));
    // Claim ids are random, as the client library's are.
    std::mt19937_64 claim_id_gen(std::random_device{}());
    // Every NEW this thread was answered, and the leases' fates, one line
    // each (Verify reads them).
    std::ofstream acks(WorkPath(work_, absl::StrCat("acks_", id_, "_", thread)), std::ios::trunc);
    Connection conn(WorkPath(work_, "server.port"));
    const double own_fraction = absl::GetFlag(FLAGS_own_fraction);
    const absl::Duration interval =
        absl::Seconds(1.0 / std::max(0.001, absl::GetFlag(FLAGS_calls_per_sec)));
    absl::Time next_call = absl::Now();
    // Unique ids of this thread: client, thread and a sequence number.
    const uint64_t own_base =
        (static_cast<uint64_t>(id_) << 48) | (static_cast<uint64_t>(thread) << 40);
    uint64_t seq = 0;
    uint64_t url_calls = 0;  // names the CheckUrl calls: token <client>.<thread>.<n>
    ThreadTotals totals;
    std::multimap<absl::Time, PendingFetch> fetches;  // by when they end
    while (NowMs() < end_ms_) {
      while (!fetches.empty() && fetches.begin()->first <= absl::Now()) {
        Confirm(&conn, fetches.begin()->second, acks, &totals);
        fetches.erase(fetches.begin());
      }
      const absl::Time now = absl::Now();
      if (next_call > now) absl::SleepFor(next_call - now);
      next_call = std::max(next_call + interval, absl::Now() - interval);
      if (conn.Get() == nullptr) {
        absl::SleepFor(absl::Milliseconds(20));  // the server restarts
        continue;
      }
      const int op = rng.Below(10);
      Sent sent;
      grpc::Status s;  // sent.status, or the answer found wrong
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
        if (claim_ids_) {
          std::string claim_id(16, '\0');
          for (char& c : claim_id) c = static_cast<char>(claim_id_gen() & 0xff);
          request.set_claim_id(std::move(claim_id));
        }
        if (lease_seconds_ > 0) request.set_lease_seconds(static_cast<uint32_t>(lease_seconds_));
        const std::string token = absl::StrCat(id_, ".", thread, ".", url_calls++);
        v1::CheckUrlResponse response;
        sent = Send(&conn, claim_ids_, [&](v1::Dedup::Stub* stub, grpc::ClientContext* ctx) {
          response.Clear();
          return stub->CheckUrl(ctx, request, &response);
        });
        s = sent.status;
        if (s.ok() && response.results_size() != request.items_size()) {
          s = grpc::Status(grpc::StatusCode::INTERNAL, "wrong result count");
        }
        if (s.ok()) {
          items = response.results_size();
          if (sent.attempts > 1) ++totals.retried_ok;
          PendingFetch fetch{request.claim_id(), token, {}};
          for (const v1::UrlResult& r : response.results()) {
            if (r.verdict() != v1::URL_VERDICT_NEW) continue;
            // The claim's time on the server: its lease's start (a reclaim's
            // first_seen_time is the URL's first claim), or first_seen_time.
            int64_t claim_us = Micros(r.first_seen_time());
            const int64_t expire_us = r.has_lease_expire_time() ? Micros(r.lease_expire_time()) : 0;
            if (lease_seconds_ > 0) {
              if (!r.has_lease_expire_time()) {
                std::cerr << "soak client " << id_ << ": NEW without lease_expire_time for "
                          << r.normalized_url() << "\n";
                failed_ = true;
              }
              claim_us = expire_us - int64_t{lease_seconds_} * 1000000;
            }
            acks << "U " << r.normalized_url() << " " << token << " " << (r.reclaimed() ? 1 : 0)
                 << " " << absl::ToUnixMicros(sent.first_sent) << " " << claim_us << " "
                 << expire_us << "\n";
            if (sent.attempts > 1) {
              ++totals.retried_new;
              // Claimed before the last attempt was sent: by an earlier
              // one, whose reply was lost (both times floored to 1 us).
              if (claim_us < absl::ToUnixMicros(sent.last_sent)) ++totals.recovered;
            }
            if (lease_seconds_ > 0) {
              if (lease_rng.Unit() < unconfirmed_fraction_) {
                acks << "D " << r.normalized_url() << " " << token << "\n";
              } else {
                fetch.urls.push_back(r.normalized_url());
              }
            }
          }
          if (!fetch.urls.empty()) {
            const absl::Time due =
                absl::Now() + absl::Milliseconds(kFetchMinMs + lease_rng.Below(kFetchSpreadMs + 1));
            fetches.emplace(due, std::move(fetch));
          }
        } else if (sent.attempts > 0) {
          // Never answered: the server may hold claims of these URLs that
          // no client knows of.
          ++totals.gave_up;
          for (const v1::UrlItem& item : request.items()) acks << "G " << item.url() << "\n";
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
        sent = Send(&conn, /*retry=*/false, [&](v1::Dedup::Stub* stub, grpc::ClientContext* ctx) {
          return stub->CheckContent(ctx, request, &response);
        });
        s = sent.status;
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
        sent = Send(&conn, /*retry=*/false, [&](v1::Dedup::Stub* stub, grpc::ClientContext* ctx) {
          return stub->CheckChunks(ctx, request, &response);
        });
        s = sent.status;
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
      if (s.ok()) {
        Record(items, true, sent.latency);
      } else if (sent.status.ok()) {
        Record(0, false, sent.latency);  // answered, but wrongly
        absl::SleepFor(absl::Milliseconds(20));
      }
    }
    // The fetches still running finish (the server is not killed in the
    // run's last second).
    while (!fetches.empty()) {
      const absl::Time due = fetches.begin()->first;
      if (due > absl::Now()) absl::SleepFor(due - absl::Now());
      Confirm(&conn, fetches.begin()->second, acks, &totals);
      fetches.erase(fetches.begin());
    }
    acks << "T " << totals.retried_ok << " " << totals.retried_new << " " << totals.recovered << " "
         << totals.gave_up << "\n";
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
  const int deadline_ms_;
  const bool claim_ids_;
  const int lease_seconds_;  // 0: none
  const double unconfirmed_fraction_;
  std::atomic<bool> failed_{false};
  absl::Mutex mu_;
  std::map<int, MinuteStats> minutes_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

int RunSoakClient(int client, const std::string& work, uint64_t seed, int64_t start_unix_ms,
                  int64_t end_unix_ms) {
  Client c(client, work, seed, start_unix_ms, end_unix_ms);
  return c.Run();
}

}  // namespace dedupd::bench
