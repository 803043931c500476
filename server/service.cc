#include "server/service.h"

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"

namespace dedupd {
namespace {

// Holds one of the service's concurrency slots for the duration of a call.
class Slot {
 public:
  Slot(std::atomic<size_t>* in_flight, size_t limit) : in_flight_(in_flight) {
    acquired_ = in_flight_->fetch_add(1, std::memory_order_acq_rel) < limit;
  }
  ~Slot() { in_flight_->fetch_sub(1, std::memory_order_acq_rel); }
  bool acquired() const { return acquired_; }

 private:
  std::atomic<size_t>* in_flight_;
  bool acquired_;
};

}  // namespace

DedupService::DedupService(const Engine* engine, size_t max_concurrent_rpcs)
    : engine_(engine), max_concurrent_rpcs_(max_concurrent_rpcs) {}

grpc::ServerUnaryReactor* DedupService::CheckUrl(
    grpc::CallbackServerContext* context, const v1::CheckUrlRequest* request,
    v1::CheckUrlResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  Slot slot(&in_flight_, max_concurrent_rpcs_);
  if (!slot.acquired()) {
    reactor->Finish(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("more than ", max_concurrent_rpcs_,
                     " calls in flight (--max_concurrent_rpcs); retry later")));
    return reactor;
  }
  if (context->IsCancelled()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                                 "cancelled before it started"));
    return reactor;
  }
  reactor->Finish(ToGrpcStatus(engine_->CheckUrl(*request, response)));
  return reactor;
}

}  // namespace dedupd
