#include "server/service.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"

namespace dedupd {

DedupService::DedupService(const Engine* engine, size_t max_concurrent_rpcs,
                           WorkerPool* workers)
    : engine_(engine),
      workers_(workers),
      max_concurrent_rpcs_(max_concurrent_rpcs) {}

grpc::ServerUnaryReactor* DedupService::CheckUrl(
    grpc::CallbackServerContext* context, const v1::CheckUrlRequest* request,
    v1::CheckUrlResponse* response) {
  return Run(context, request, response, &Engine::CheckUrl);
}

grpc::ServerUnaryReactor* DedupService::CheckContent(
    grpc::CallbackServerContext* context,
    const v1::CheckContentRequest* request,
    v1::CheckContentResponse* response) {
  return Run(context, request, response, &Engine::CheckContent);
}

grpc::ServerUnaryReactor* DedupService::CheckChunks(
    grpc::CallbackServerContext* context,
    const v1::CheckChunksRequest* request,
    v1::CheckChunksResponse* response) {
  return Run(context, request, response, &Engine::CheckChunks);
}

grpc::ServerUnaryReactor* DedupService::DedupResults(
    grpc::CallbackServerContext* context,
    const v1::DedupResultsRequest* request,
    v1::DedupResultsResponse* response) {
  return Run(context, request, response, &Engine::DedupResults);
}

template <typename Request, typename Response>
grpc::ServerUnaryReactor* DedupService::Run(
    grpc::CallbackServerContext* context, const Request* request,
    Response* response,
    absl::Status (Engine::*method)(const Request&, Response*) const) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (authorizer_ != nullptr) {
    // Every Dedup method is under the same rule; the prefix names them.
    const absl::Status auth = authorizer_->Check("/dedupd.v1.Dedup/", context->client_metadata());
    if (!auth.ok()) {
      reactor->Finish(ToGrpcStatus(auth));
      return reactor;
    }
  }
  // Admission: the slot is held until the call's work has run, so at most
  // max_concurrent_rpcs_ calls are queued or running at any time.
  if (in_flight_.fetch_add(1, std::memory_order_acq_rel) >= max_concurrent_rpcs_) {
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    reactor->Finish(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("more than ", max_concurrent_rpcs_,
                     " calls in flight (--max_concurrent_rpcs); retry later")));
    return reactor;
  }
  const bool scheduled = workers_->Schedule([=] {
    if (context->IsCancelled()) {
      reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                                   "cancelled before it started"));
    } else {
      // A named status: gcc 12 with -fsanitize=address,undefined -O2 warns
      // (maybe-uninitialized) about the temporary of a call through a
      // member pointer passed straight to ToGrpcStatus.
      const absl::Status status = std::invoke(method, engine_, *request, response);
      reactor->Finish(ToGrpcStatus(status));
    }
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  });
  if (!scheduled) {
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                 "server is shutting down"));
  }
  return reactor;
}

}  // namespace dedupd
