#include "server/service.h"

#include <array>
#include <functional>

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"

namespace dedupd {
namespace {

// Items in a request, for dedupd_rpc_batch_items.
size_t Items(const v1::CheckUrlRequest& r) { return static_cast<size_t>(r.items_size()); }
size_t Items(const v1::CompleteUrlsRequest& r) { return static_cast<size_t>(r.items_size()); }
size_t Items(const v1::CheckContentRequest& r) { return static_cast<size_t>(r.items_size()); }
size_t Items(const v1::CheckChunksRequest& r) { return static_cast<size_t>(r.chunks_size()); }
size_t Items(const v1::DedupResultsRequest& r) { return static_cast<size_t>(r.hits_size()); }

// Verdict tallies of an answered batch, in ServerMetrics::VerdictLabels
// order: a loop over the results, added to the counters once per batch
// (CheckUrl's also by the request's namespace).
void CountVerdicts(const v1::CheckUrlRequest& req, const v1::CheckUrlResponse& r,
                   ServerMetrics* m) {
  // new, seen, seen_probably, invalid, due, reclaimed, store_unavailable
  std::array<uint64_t, 7> n{};
  for (const v1::UrlResult& x : r.results()) {
    switch (x.verdict()) {
      case v1::URL_VERDICT_NEW:
        ++n[x.reclaimed() ? 5 : 0];
        break;
      case v1::URL_VERDICT_SEEN:
        ++n[1];
        break;
      case v1::URL_VERDICT_SEEN_PROBABLY:
        ++n[2];
        break;
      case v1::URL_VERDICT_INVALID:
        ++n[x.error_reason() == v1::ERROR_REASON_STORE_UNAVAILABLE ? 6 : 3];
        break;
      case v1::URL_VERDICT_DUE:
        ++n[4];
        break;
      default:
        break;
    }
  }
  m->AddVerdicts(ServerMetrics::Layer::kUrl, n);
  m->AddNamespaceVerdicts(req.namespace_(), n);
}

void CountVerdicts(const v1::CompleteUrlsRequest&, const v1::CompleteUrlsResponse& r,
                   ServerMetrics* m) {
  // confirmed, already_confirmed, not_claimed, lease_lost, invalid,
  // store_unavailable
  std::array<uint64_t, 6> n{};
  for (const v1::CompleteResult& x : r.results()) {
    if (x.verdict() == v1::COMPLETE_VERDICT_CONFIRMED) {
      ++n[0];
    } else if (x.verdict() == v1::COMPLETE_VERDICT_ALREADY_CONFIRMED) {
      ++n[1];
    } else if (x.error_reason() == v1::ERROR_REASON_NOT_CLAIMED) {
      ++n[2];
    } else if (x.error_reason() == v1::ERROR_REASON_LEASE_LOST) {
      ++n[3];
    } else if (x.error_reason() == v1::ERROR_REASON_STORE_UNAVAILABLE) {
      ++n[5];
    } else {
      ++n[4];
    }
  }
  m->AddVerdicts(ServerMetrics::Layer::kComplete, n);
}

template <typename Result>
std::array<uint64_t, 4> ContentLikeTally(
    const google::protobuf::RepeatedPtrField<Result>& results) {
  std::array<uint64_t, 4> n{};  // new, exact_duplicate, near_duplicate, invalid
  for (const Result& x : results) {
    // ContentVerdict and ChunkVerdict number their values alike: 1 NEW,
    // 2 EXACT_DUPLICATE, 3 NEAR_DUPLICATE, 4 INVALID.
    const int v = static_cast<int>(x.verdict());
    if (v >= 1 && v <= 4) ++n[static_cast<size_t>(v - 1)];
  }
  return n;
}
static_assert(v1::CONTENT_VERDICT_INVALID == 4 && v1::CHUNK_VERDICT_INVALID == 4 &&
                  v1::CONTENT_VERDICT_NEW == 1 && v1::CHUNK_VERDICT_NEW == 1 &&
                  v1::CONTENT_VERDICT_NEAR_DUPLICATE == 3 && v1::CHUNK_VERDICT_NEAR_DUPLICATE == 3,
              "ContentLikeTally assumes content and chunk verdicts share numbers");

void CountVerdicts(const v1::CheckContentRequest&, const v1::CheckContentResponse& r,
                   ServerMetrics* m) {
  m->AddVerdicts(ServerMetrics::Layer::kContent, ContentLikeTally(r.results()));
}

void CountVerdicts(const v1::CheckChunksRequest&, const v1::CheckChunksResponse& r,
                   ServerMetrics* m) {
  m->AddVerdicts(ServerMetrics::Layer::kChunk, ContentLikeTally(r.results()));
}

void CountVerdicts(const v1::DedupResultsRequest&, const v1::DedupResultsResponse& r,
                   ServerMetrics* m) {
  std::array<uint64_t, 4> n{};  // kept, dropped_duplicate, dropped_source_cap, rejected
  n[0] = static_cast<uint64_t>(r.kept_size());
  for (const v1::DroppedHit& d : r.dropped()) {
    if (d.reason() == v1::DROP_REASON_DUPLICATE) ++n[1];
    if (d.reason() == v1::DROP_REASON_SOURCE_CAP) ++n[2];
  }
  n[3] = static_cast<uint64_t>(r.rejected_size());
  m->AddVerdicts(ServerMetrics::Layer::kResults, n);
}

}  // namespace

DedupService::DedupService(const Engine* engine, size_t max_concurrent_rpcs, WorkerPool* workers,
                           ServerMetrics* metrics)
    : engine_(engine),
      workers_(workers),
      metrics_(metrics),
      max_concurrent_rpcs_(max_concurrent_rpcs) {
  SetMessageAllocatorFor_CheckUrl(&url_messages_);
  SetMessageAllocatorFor_CompleteUrls(&complete_messages_);
  SetMessageAllocatorFor_CheckContent(&content_messages_);
  SetMessageAllocatorFor_CheckChunks(&chunk_messages_);
  SetMessageAllocatorFor_DedupResults(&results_messages_);
}

void DedupService::SetEngine(const Engine* engine) {
  engine_.store(engine, std::memory_order_release);
}

grpc::ServerUnaryReactor* DedupService::CheckUrl(grpc::CallbackServerContext* context,
                                                 const v1::CheckUrlRequest* request,
                                                 v1::CheckUrlResponse* response) {
  return Run("dedupd.v1.Dedup/CheckUrl", context, request, response, &Engine::CheckUrl);
}

grpc::ServerUnaryReactor* DedupService::CompleteUrls(grpc::CallbackServerContext* context,
                                                     const v1::CompleteUrlsRequest* request,
                                                     v1::CompleteUrlsResponse* response) {
  return Run("dedupd.v1.Dedup/CompleteUrls", context, request, response, &Engine::CompleteUrls);
}

grpc::ServerUnaryReactor* DedupService::CheckContent(grpc::CallbackServerContext* context,
                                                     const v1::CheckContentRequest* request,
                                                     v1::CheckContentResponse* response) {
  return Run("dedupd.v1.Dedup/CheckContent", context, request, response, &Engine::CheckContent);
}

grpc::ServerUnaryReactor* DedupService::CheckChunks(grpc::CallbackServerContext* context,
                                                    const v1::CheckChunksRequest* request,
                                                    v1::CheckChunksResponse* response) {
  return Run("dedupd.v1.Dedup/CheckChunks", context, request, response, &Engine::CheckChunks);
}

grpc::ServerUnaryReactor* DedupService::DedupResults(grpc::CallbackServerContext* context,
                                                     const v1::DedupResultsRequest* request,
                                                     v1::DedupResultsResponse* response) {
  return Run("dedupd.v1.Dedup/DedupResults", context, request, response, &Engine::DedupResults);
}

template <typename Request, typename Response>
grpc::ServerUnaryReactor* DedupService::Run(const char* label, grpc::CallbackServerContext* context,
                                            const Request* request, Response* response,
                                            absl::Status (Engine::*method)(const Request&,
                                                                           Response*) const) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (authorizer_ != nullptr) {
    // Every Dedup method is under the same rule; the prefix names them.
    const absl::Status auth = authorizer_->Check("/dedupd.v1.Dedup/", context->client_metadata());
    if (!auth.ok()) {
      reactor->Finish(ToGrpcStatus(auth));
      return reactor;
    }
  }
  if (metrics_ != nullptr) metrics_->RecordBatchItems(label, Items(*request));
  const Engine* engine = engine_.load(std::memory_order_acquire);
  if (engine == nullptr) {
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "store is opening; retry later"));
    return reactor;
  }
  // Admission: the slot is held until the call's work has run, so at most
  // max_concurrent_rpcs_ calls are queued or running at any time.
  if (in_flight_.fetch_add(1, std::memory_order_acq_rel) >= max_concurrent_rpcs_) {
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    reactor->Finish(
        grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                     absl::StrCat("more than ", max_concurrent_rpcs_,
                                  " calls in flight (--max_concurrent_rpcs); retry later")));
    return reactor;
  }
  const bool scheduled = workers_->Schedule([=] {
    grpc::Status answer(grpc::StatusCode::CANCELLED, "cancelled before it started");
    if (!context->IsCancelled()) {
      // A named status: gcc 12 with -fsanitize=address,undefined -O2 warns
      // (maybe-uninitialized) about the temporary of a call through a
      // member pointer passed straight to ToGrpcStatus.
      const absl::Status status = std::invoke(method, engine, *request, response);
      // Verdicts of answered batches only: a failed call's response is
      // not sent.
      if (status.ok() && metrics_ != nullptr) CountVerdicts(*request, *response, metrics_);
      answer = ToGrpcStatus(status);
    }
    // The slot is released before the answer goes out, so a client's next
    // call never finds its own finished call still holding it.
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    reactor->Finish(answer);
  });
  if (!scheduled) {
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down"));
  }
  return reactor;
}

}  // namespace dedupd
