// admin_service.h: the gRPC adapter of dedupd.v1.Admin: a few lines per RPC
// around AdminOps, with a small concurrency limit of its own, the work run
// on the worker pool (never on gRPC's callback threads), and the Export
// stream written one bounded message at a time as the client reads.
//
// Example:
//   AdminOps ops(store, /*url_bloom=*/nullptr, absl::Now());
//   AdminService admin(&ops, &workers);
//   builder.RegisterService(&admin);
#ifndef DEDUPD_SERVER_ADMIN_SERVICE_H_
#define DEDUPD_SERVER_ADMIN_SERVICE_H_

#include <atomic>
#include <cstddef>

#include "dedupd/v1/admin.grpc.pb.h"
#include "server/admin.h"
#include "server/worker_pool.h"

namespace dedupd {

// Admin calls in flight (an Export stream counts for its whole life) beyond
// this get RESOURCE_EXHAUSTED: they are rare and heavy, and must not crowd
// out the Dedup calls on the shared worker pool.
inline constexpr size_t kMaxConcurrentAdminRpcs = 4;

// AdminService: thread-safe.
class AdminService final : public v1::Admin::CallbackService {
 public:
  // REQUIRES: `ops` and `workers` outlive the service.
  AdminService(AdminOps* ops, WorkerPool* workers,
               size_t max_concurrent_rpcs = kMaxConcurrentAdminRpcs);

  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* context,
                                  const v1::StatsRequest* request,
                                  v1::StatsResponse* response) override;
  grpc::ServerUnaryReactor* Backup(grpc::CallbackServerContext* context,
                                   const v1::BackupRequest* request,
                                   v1::BackupResponse* response) override;
  grpc::ServerWriteReactor<v1::ExportResponse>* Export(
      grpc::CallbackServerContext* context, const v1::ExportRequest* request) override;

 private:
  class ExportReactor;

  // Takes an admission slot; false (nothing taken) when all are in use.
  bool Admit();
  void Release() { in_flight_.fetch_sub(1, std::memory_order_acq_rel); }
  grpc::Status Overloaded() const;

  AdminOps* const ops_;
  WorkerPool* const workers_;
  const size_t max_concurrent_rpcs_;
  std::atomic<size_t> in_flight_{0};
};

}  // namespace dedupd

#endif  // DEDUPD_SERVER_ADMIN_SERVICE_H_
