#include "server/grpc_status.h"

#include <string>

namespace dedupd {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // The canonical codes are numbered alike in absl and gRPC.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

}  // namespace dedupd
