// service.h: the gRPC adapter of dedupd.v1.Dedup: a few lines per RPC
// around Engine, plus the concurrency limit.
//
// Example:
//   DedupService service(&engine, /*max_concurrent_rpcs=*/256);
//   builder.RegisterService(&service);
#ifndef DEDUPD_SERVER_SERVICE_H_
#define DEDUPD_SERVER_SERVICE_H_

#include <atomic>
#include <cstddef>

#include "dedupd/v1/dedupd.grpc.pb.h"
#include "server/auth.h"
#include "server/engine.h"
#include "server/worker_pool.h"

namespace dedupd {

// DedupService: thread-safe.
class DedupService final : public v1::Dedup::CallbackService {
 public:
  // Calls beyond `max_concurrent_rpcs` in flight get RESOURCE_EXHAUSTED at
  // once instead of waiting in an unbounded queue. The engine's work (which
  // blocks on the store) runs on `workers`, never on gRPC's callback threads.
  // REQUIRES: `engine` and `workers` outlive the service.
  DedupService(const Engine* engine, size_t max_concurrent_rpcs,
               WorkerPool* workers);

  // set_authorizer makes every call check its bearer token before any work
  // (the auth interceptor has already cancelled such a call; this makes
  // sure no rejected call reaches the engine). Call before serving.
  // REQUIRES: `authorizer` outlives the service; null: no check.
  void set_authorizer(const CallAuthorizer* authorizer) { authorizer_ = authorizer; }

  grpc::ServerUnaryReactor* CheckUrl(grpc::CallbackServerContext* context,
                                     const v1::CheckUrlRequest* request,
                                     v1::CheckUrlResponse* response) override;
  grpc::ServerUnaryReactor* CheckContent(
      grpc::CallbackServerContext* context,
      const v1::CheckContentRequest* request,
      v1::CheckContentResponse* response) override;
  grpc::ServerUnaryReactor* CheckChunks(
      grpc::CallbackServerContext* context,
      const v1::CheckChunksRequest* request,
      v1::CheckChunksResponse* response) override;
  grpc::ServerUnaryReactor* DedupResults(
      grpc::CallbackServerContext* context,
      const v1::DedupResultsRequest* request,
      v1::DedupResultsResponse* response) override;

 private:
  // Admits the call (or answers RESOURCE_EXHAUSTED) and runs
  // (engine_->*method)(*request, response) on the worker pool.
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* Run(
      grpc::CallbackServerContext* context, const Request* request,
      Response* response,
      absl::Status (Engine::*method)(const Request&, Response*) const);

  const Engine* engine_;
  WorkerPool* workers_;
  const size_t max_concurrent_rpcs_;
  std::atomic<size_t> in_flight_{0};
  const CallAuthorizer* authorizer_ = nullptr;
};

}  // namespace dedupd

#endif  // DEDUPD_SERVER_SERVICE_H_
