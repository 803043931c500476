// rpc_observer.h: one gRPC server interceptor that observes every finished
// call of every service the server hosts (Dedup, Admin, health, reflection):
// it counts the call by method and status code and observes its latency in
// ServerMetrics, and logs a failed call (method, peer, code, message) at a
// bounded rate per method. An interceptor rather than code in each service,
// so a service added later (dedupd.v1.Admin) is covered without a line of
// its own, and calls a service rejects early (RESOURCE_EXHAUSTED by the
// concurrency limit, INVALID_ARGUMENT, UNAVAILABLE while the store opens)
// are counted like any other: the interceptor sees the status being sent.
//
// Example:
//   RpcObserver observer(RpcObserver::MethodsOf({"dedupd.v1.Dedup"}), &metrics);
//   builder.experimental().SetInterceptorCreators(observer.Factories());
#ifndef DEDUPD_SERVER_RPC_OBSERVER_H_
#define DEDUPD_SERVER_RPC_OBSERVER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/support/server_interceptor.h"
#include "grpcpp/support/status.h"
#include "server/log.h"
#include "server/metrics.h"

namespace dedupd {

// RpcObserver: thread-safe; must outlive the grpc::Server whose builder got
// its Factories().
class RpcObserver {
 public:
  // Failed calls logged per method and second; the rest are counted and the
  // next logged line says how many were suppressed.
  static constexpr int kFailureLogLinesPerSecond = 5;

  // `methods`: the method labels ("dedupd.v1.Dedup/CheckUrl") recorded by
  // name; any other method is recorded as ServerMetrics::kOtherMethod.
  // `metrics` may be null (no --metrics_listen): then only the failure log.
  RpcObserver(std::vector<std::string> methods, ServerMetrics* metrics);

  // MethodsOf lists "service/method" for each method of each named service
  // found in the generated descriptor pool, plus the standard health and
  // reflection methods. A name not in the pool is skipped.
  static std::vector<std::string> MethodsOf(const std::vector<std::string>& services);

  // The interceptor factory to hand to ServerBuilder (a fresh vector each
  // call; the factories point at this observer).
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> Factories();

  // Finished records one call: `method` as gRPC names it
  // ("/dedupd.v1.Dedup/CheckUrl"), `label` as Label() gives it, `peer` for
  // the log.
  void Finished(absl::string_view method, absl::string_view label, absl::string_view peer,
                const grpc::Status& status, double seconds);

  // The label `method` ("/dedupd.v1.Dedup/CheckUrl") is recorded under.
  absl::string_view Label(absl::string_view method) const;

  // Calls in flight, counted from the interceptor's creation to its
  // destruction, except the streams that live as long as their client
  // wants (health Watch, reflection): those never "finish" by themselves.
  void CallStarted(absl::string_view label);
  void CallEnded(absl::string_view label);
  static bool IsOpenEndedStream(absl::string_view label);

  // WaitForCalls waits until no call counted above is in flight, or until
  // `deadline`; true when none is. The drain uses it to know when only
  // open-ended streams are left, which it then cancels instead of letting
  // them hold the shutdown until --drain_timeout.
  bool WaitForCalls(absl::Time deadline);
  // Open-ended streams in flight (not counted above).
  int64_t OpenStreams();

 private:
  std::vector<std::string> methods_;  // sorted
  ServerMetrics* const metrics_;
  LogRateLimiter failure_log_{kFailureLogLinesPerSecond};
  absl::Mutex mu_;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t open_streams_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace dedupd

#endif  // DEDUPD_SERVER_RPC_OBSERVER_H_
