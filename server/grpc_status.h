// grpc_status.h: the one place absl::Status becomes grpc::Status.
//
// Example:
//   reactor->Finish(ToGrpcStatus(engine.CheckUrl(*request, response)));
#ifndef DEDUPD_SERVER_GRPC_STATUS_H_
#define DEDUPD_SERVER_GRPC_STATUS_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace dedupd {

// ToGrpcStatus keeps the code (absl and gRPC share the canonical codes) and
// the message.
grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace dedupd

#endif  // DEDUPD_SERVER_GRPC_STATUS_H_
