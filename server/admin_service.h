// admin_service.h: the gRPC adapter of dedupd.v1.Admin: a few lines per RPC
// around AdminOps, with a small concurrency limit of its own, the work run
// on the worker pool (never on gRPC's callback threads), and the Export
// stream written one bounded message at a time as the client reads.
//
// Example:
//   AdminService admin(/*ops=*/nullptr, &workers);  // UNAVAILABLE for now
//   builder.RegisterService(&admin);
//   ... the store opens ...
//   AdminOps ops(store, /*url_bloom=*/nullptr, &normalizer, absl::Now());
//   admin.SetOps(&ops);
#ifndef DEDUPD_SERVER_ADMIN_SERVICE_H_
#define DEDUPD_SERVER_ADMIN_SERVICE_H_

#include <atomic>
#include <cstddef>
#include <functional>

#include "dedupd/v1/admin.grpc.pb.h"
#include "server/admin.h"
#include "server/auth.h"
#include "server/worker_pool.h"

namespace dedupd {

// Admin calls in flight (an Export stream counts for its whole life) beyond
// this get RESOURCE_EXHAUSTED: they are rare and heavy, and must not crowd
// out the Dedup calls on the shared worker pool.
inline constexpr size_t kMaxConcurrentAdminRpcs = 4;

// AdminService: thread-safe.
class AdminService final : public v1::Admin::CallbackService {
 public:
  // `ops` may be null until SetOps (the server registers its services
  // before the store opens); calls before get UNAVAILABLE.
  // REQUIRES: `ops` and `workers` outlive the service.
  AdminService(AdminOps* ops, WorkerPool* workers,
               size_t max_concurrent_rpcs = kMaxConcurrentAdminRpcs);

  // SetOps makes the service answer with `ops` from now on.
  void SetOps(AdminOps* ops) { ops_.store(ops, std::memory_order_release); }

  // set_authorizer makes every call check its token (the /dedupd.v1.Admin/
  // rule) before any work: gRPC 1.51 still runs the handler of a call the
  // auth interceptor rejected (server/auth.h). REQUIRES: called before the
  // server starts; `authorizer` outlives the service; null: no check.
  void set_authorizer(const CallAuthorizer* authorizer) { authorizer_ = authorizer; }

  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* context,
                                  const v1::StatsRequest* request,
                                  v1::StatsResponse* response) override;
  grpc::ServerUnaryReactor* Backup(grpc::CallbackServerContext* context,
                                   const v1::BackupRequest* request,
                                   v1::BackupResponse* response) override;
  grpc::ServerUnaryReactor* Forget(grpc::CallbackServerContext* context,
                                   const v1::ForgetRequest* request,
                                   v1::ForgetResponse* response) override;
  grpc::ServerUnaryReactor* DropNamespace(grpc::CallbackServerContext* context,
                                          const v1::DropNamespaceRequest* request,
                                          v1::DropNamespaceResponse* response) override;
  grpc::ServerWriteReactor<v1::ExportResponse>* Export(grpc::CallbackServerContext* context,
                                                       const v1::ExportRequest* request) override;

 private:
  class ExportReactor;

  // Admit checks the token, that the store is open, and takes an admission
  // slot; on OK `*ops` is set and the slot must be Released, otherwise
  // nothing is taken and the status is the call's answer.
  grpc::Status Admit(grpc::CallbackServerContext* context, AdminOps** ops);
  void Release() { in_flight_.fetch_sub(1, std::memory_order_acq_rel); }
  // RunAdmitted admits the call, then runs `work` on the worker pool and
  // finishes the call with its status (the slot is released after).
  grpc::ServerUnaryReactor* RunAdmitted(grpc::CallbackServerContext* context,
                                        std::function<absl::Status(AdminOps*)> work);

  std::atomic<AdminOps*> ops_;
  const CallAuthorizer* authorizer_ = nullptr;
  WorkerPool* const workers_;
  const size_t max_concurrent_rpcs_;
  std::atomic<size_t> in_flight_{0};
};

}  // namespace dedupd

#endif  // DEDUPD_SERVER_ADMIN_SERVICE_H_
