// health_probe: asks a gRPC server's standard health service (grpc.health.v1,
// service "") over plaintext and exits 0 only when it answers SERVING.
// Test helper for tests/deploy (Debian ships no grpc_health_probe).
//
// Example:
//   health_probe 127.0.0.1:50051 && echo serving
#include <iostream>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: health_probe HOST:PORT\n";
    return 2;
  }
  const std::string address = argv[1];
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  const grpc::Status status = stub->Check(&ctx, req, &resp);
  if (!status.ok()) {
    std::cerr << "health_probe: " << address << ": " << status.error_code() << " "
              << status.error_message() << "\n";
    return 1;
  }
  std::cout << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status()) << "\n";
  return resp.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}
