// service.h: the gRPC adapter of dedupd.v1.Dedup: a few lines per RPC
// around Engine, plus the concurrency limit and the per-layer verdict
// counters. The service exists before the store is open (so the server can
// listen, answer health NOT_SERVING and these calls UNAVAILABLE "store is
// opening"); SetEngine makes it serve.
//
// Example:
//   DedupService service(/*engine=*/nullptr, /*max_concurrent_rpcs=*/256,
//                        &workers, &metrics);
//   builder.RegisterService(&service);
//   ... open the store, build the engine ...
//   service.SetEngine(&engine);
#ifndef DEDUPD_SERVER_SERVICE_H_
#define DEDUPD_SERVER_SERVICE_H_

#include <atomic>
#include <cstddef>

#include "dedupd/v1/dedupd.grpc.pb.h"
#include "google/protobuf/arena.h"
#include "grpcpp/support/message_allocator.h"
#include "server/auth.h"
#include "server/engine.h"
#include "server/metrics.h"
#include "server/worker_pool.h"

namespace dedupd {

// DedupService: thread-safe.
class DedupService final : public v1::Dedup::CallbackService {
 public:
  // Calls beyond `max_concurrent_rpcs` in flight get RESOURCE_EXHAUSTED at
  // once instead of waiting in an unbounded queue. The engine's work (which
  // blocks on the store) runs on `workers`, never on gRPC's callback threads.
  // `engine` may be null until SetEngine; calls before get UNAVAILABLE.
  // `metrics` may be null (no metrics): otherwise each call's item count
  // and each answered batch's verdicts are added to it.
  // REQUIRES: `engine`, `workers` and `metrics` outlive the service.
  DedupService(const Engine* engine, size_t max_concurrent_rpcs, WorkerPool* workers,
               ServerMetrics* metrics = nullptr);

  // SetEngine makes the service answer with `engine` from now on.
  // REQUIRES: `engine` outlives the service.
  void SetEngine(const Engine* engine);

  // set_authorizer makes every call check its bearer token before any work
  // (the auth interceptor has already cancelled such a call; this makes
  // sure no rejected call reaches the engine). Call before serving.
  // REQUIRES: `authorizer` outlives the service; null: no check.
  void set_authorizer(const CallAuthorizer* authorizer) { authorizer_ = authorizer; }

  grpc::ServerUnaryReactor* CheckUrl(grpc::CallbackServerContext* context,
                                     const v1::CheckUrlRequest* request,
                                     v1::CheckUrlResponse* response) override;
  grpc::ServerUnaryReactor* CompleteUrls(grpc::CallbackServerContext* context,
                                         const v1::CompleteUrlsRequest* request,
                                         v1::CompleteUrlsResponse* response) override;
  grpc::ServerUnaryReactor* CheckContent(grpc::CallbackServerContext* context,
                                         const v1::CheckContentRequest* request,
                                         v1::CheckContentResponse* response) override;
  grpc::ServerUnaryReactor* CheckChunks(grpc::CallbackServerContext* context,
                                        const v1::CheckChunksRequest* request,
                                        v1::CheckChunksResponse* response) override;
  grpc::ServerUnaryReactor* DedupResults(grpc::CallbackServerContext* context,
                                         const v1::DedupResultsRequest* request,
                                         v1::DedupResultsResponse* response) override;

 private:
  // ArenaMessages: every call's request and response live on one protobuf
  // arena, freed at once when gRPC releases the call. A batch of 1,000
  // URLs or 20 chunks is thousands of small strings and messages; on the
  // arena they cost a pointer bump each instead of a malloc and a free.
  template <typename Request, typename Response>
  class ArenaMessages final : public grpc::MessageAllocator<Request, Response> {
   public:
    grpc::MessageHolder<Request, Response>* AllocateMessages() override { return new Holder(); }

   private:
    class Holder final : public grpc::MessageHolder<Request, Response> {
     public:
      Holder() : arena_(Options()) {
        this->set_request(google::protobuf::Arena::CreateMessage<Request>(&arena_));
        this->set_response(google::protobuf::Arena::CreateMessage<Response>(&arena_));
      }
      void Release() override { delete this; }

     private:
      static google::protobuf::ArenaOptions Options() {
        google::protobuf::ArenaOptions o;
        o.start_block_size = 4096;
        o.max_block_size = 256 << 10;
        return o;
      }
      google::protobuf::Arena arena_;
    };
  };

  // Admits the call (or answers RESOURCE_EXHAUSTED, or UNAVAILABLE before
  // SetEngine) and runs (engine->*method)(*request, response) on the worker
  // pool; `label` names the method in the metrics.
  template <typename Request, typename Response>
  grpc::ServerUnaryReactor* Run(const char* label, grpc::CallbackServerContext* context,
                                const Request* request, Response* response,
                                absl::Status (Engine::*method)(const Request&, Response*) const);

  std::atomic<const Engine*> engine_;
  WorkerPool* workers_;
  ServerMetrics* const metrics_;
  const size_t max_concurrent_rpcs_;
  std::atomic<size_t> in_flight_{0};
  ArenaMessages<v1::CheckUrlRequest, v1::CheckUrlResponse> url_messages_;
  ArenaMessages<v1::CompleteUrlsRequest, v1::CompleteUrlsResponse> complete_messages_;
  ArenaMessages<v1::CheckContentRequest, v1::CheckContentResponse> content_messages_;
  ArenaMessages<v1::CheckChunksRequest, v1::CheckChunksResponse> chunk_messages_;
  ArenaMessages<v1::DedupResultsRequest, v1::DedupResultsResponse> results_messages_;
  const CallAuthorizer* authorizer_ = nullptr;
};

}  // namespace dedupd

#endif  // DEDUPD_SERVER_SERVICE_H_
