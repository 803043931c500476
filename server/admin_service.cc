#include "server/admin_service.h"

#include <functional>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/grpc_status.h"

namespace dedupd {

AdminService::AdminService(AdminOps* ops, WorkerPool* workers, size_t max_concurrent_rpcs)
    : ops_(ops), workers_(workers), max_concurrent_rpcs_(max_concurrent_rpcs) {}

grpc::Status AdminService::Admit(grpc::CallbackServerContext* context, AdminOps** ops) {
  if (authorizer_ != nullptr) {
    const absl::Status auth = authorizer_->Check("/dedupd.v1.Admin/", context->client_metadata());
    if (!auth.ok()) return ToGrpcStatus(auth);
  }
  *ops = ops_.load(std::memory_order_acquire);
  if (*ops == nullptr) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "store is opening; retry later");
  }
  if (in_flight_.fetch_add(1, std::memory_order_acq_rel) >= max_concurrent_rpcs_) {
    Release();
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("more than ", max_concurrent_rpcs_, " admin calls in flight; retry later"));
  }
  return grpc::Status::OK;
}

grpc::ServerUnaryReactor* AdminService::RunAdmitted(grpc::CallbackServerContext* context,
                                                    std::function<absl::Status(AdminOps*)> work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  AdminOps* ops = nullptr;
  if (grpc::Status admitted = Admit(context, &ops); !admitted.ok()) {
    reactor->Finish(admitted);
    return reactor;
  }
  const bool scheduled = workers_->Schedule([this, context, reactor, ops, work] {
    const grpc::Status status = context->IsCancelled() ? grpc::Status(grpc::StatusCode::CANCELLED,
                                                                      "cancelled before it started")
                                                       : ToGrpcStatus(work(ops));
    // Released before the answer goes out, so a client's next call never
    // finds its own finished call still holding a slot.
    Release();
    reactor->Finish(status);
  });
  if (!scheduled) {
    Release();
    reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down"));
  }
  return reactor;
}

grpc::ServerUnaryReactor* AdminService::Stats(grpc::CallbackServerContext* context,
                                              const v1::StatsRequest* request,
                                              v1::StatsResponse* response) {
  return RunAdmitted(context, [=](AdminOps* ops) { return ops->Stats(*request, response); });
}

grpc::ServerUnaryReactor* AdminService::Backup(grpc::CallbackServerContext* context,
                                               const v1::BackupRequest* request,
                                               v1::BackupResponse* response) {
  return RunAdmitted(context, [=](AdminOps* ops) { return ops->Backup(*request, response); });
}

grpc::ServerUnaryReactor* AdminService::Forget(grpc::CallbackServerContext* context,
                                               const v1::ForgetRequest* request,
                                               v1::ForgetResponse* response) {
  return RunAdmitted(context, [=](AdminOps* ops) {
    return ops->Forget(*request, response, [context] { return context->IsCancelled(); });
  });
}

grpc::ServerUnaryReactor* AdminService::DropNamespace(grpc::CallbackServerContext* context,
                                                      const v1::DropNamespaceRequest* request,
                                                      v1::DropNamespaceResponse* response) {
  return RunAdmitted(context, [=](AdminOps* ops) {
    return ops->DropNamespace(*request, response, [context] { return context->IsCancelled(); });
  });
}

// ExportReactor: one Export stream. At most one message exists at a time:
// the next one is read from the cursor (on the worker pool) only after the
// previous write completed, so a slow reader holds the server to one
// message (about kExportMessageBytes) and one snapshot, never the store.
// Exactly one Finish: from Fill (done or error) or from OnWriteDone(false).
class AdminService::ExportReactor final : public grpc::ServerWriteReactor<v1::ExportResponse> {
 public:
  ExportReactor(AdminService* service, AdminOps* ops, grpc::CallbackServerContext* context,
                v1::ExportRequest request)
      : service_(service), ops_(ops), context_(context), request_(std::move(request)) {
    ScheduleFill();
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                          "export stream broken (client gone or cancelled)"));
      return;
    }
    if (done_) {
      Finish(grpc::Status::OK);
      return;
    }
    ScheduleFill();
  }

  void OnDone() override {
    cursor_.reset();  // releases the snapshot before the slot
    service_->Release();
    delete this;
  }

 private:
  void ScheduleFill() {
    if (!service_->workers_->Schedule([this] { Fill(); })) {
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "server is shutting down"));
    }
  }

  // On a worker: the next message, or the end.
  void Fill() {
    if (context_->IsCancelled()) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "export cancelled"));
      return;
    }
    if (cursor_ == nullptr) {
      absl::StatusOr<std::unique_ptr<ExportCursor>> cursor = ops_->StartExport(request_);
      if (!cursor.ok()) {
        Finish(ToGrpcStatus(cursor.status()));
        return;
      }
      cursor_ = *std::move(cursor);
    }
    const absl::Status status = AdminOps::NextExport(cursor_.get(), &message_, &done_);
    if (!status.ok()) {
      Finish(ToGrpcStatus(status));
      return;
    }
    if (message_.records_size() == 0 && done_) {
      Finish(grpc::Status::OK);
      return;
    }
    StartWrite(&message_);
  }

  AdminService* const service_;
  AdminOps* const ops_;
  grpc::CallbackServerContext* const context_;
  const v1::ExportRequest request_;
  std::unique_ptr<ExportCursor> cursor_;
  v1::ExportResponse message_;
  bool done_ = false;
};

grpc::ServerWriteReactor<v1::ExportResponse>* AdminService::Export(
    grpc::CallbackServerContext* context, const v1::ExportRequest* request) {
  AdminOps* ops = nullptr;
  if (grpc::Status admitted = Admit(context, &ops); !admitted.ok()) {
    class Rejected final : public grpc::ServerWriteReactor<v1::ExportResponse> {
     public:
      explicit Rejected(grpc::Status status) { Finish(std::move(status)); }
      void OnDone() override { delete this; }
    };
    return new Rejected(std::move(admitted));
  }
  return new ExportReactor(this, ops, context, *request);
}

}  // namespace dedupd
