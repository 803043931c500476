// redis_front_end.cc: see redis_front_end.h.
#include "tests/testing/redis_front_end.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace dedupd::testing {

std::vector<std::string> RedisFrontEndFlags(const RedisCluster& cluster,
                                            const std::string& key_prefix,
                                            const std::vector<std::string>& extra) {
  std::vector<std::string> flags = {"--store=redis_cluster",
                                    "--redis_nodes=" + absl::StrJoin(cluster.addresses(), ","),
                                    "--redis_key_prefix=" + key_prefix};
  flags.insert(flags.end(), extra.begin(), extra.end());
  return flags;
}

absl::Status StartRedisFrontEnd(const std::string& binary, const std::string& data_dir,
                                const std::vector<std::string>& flags, RedisFrontEndProcess* fe,
                                const char* ready) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> p =
      ServerProcess::Start(binary, data_dir, flags, absl::Seconds(30), ready);
  if (!p.ok()) return p.status();
  fe->process = *std::move(p);
  fe->channel = grpc::CreateChannel(fe->process->address(), grpc::InsecureChannelCredentials());
  fe->dedup = v1::Dedup::NewStub(fe->channel);
  fe->admin = v1::Admin::NewStub(fe->channel);
  fe->health = grpc::health::v1::Health::NewStub(fe->channel);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<v1::UrlVerdict>> ClaimUrls(v1::Dedup::Stub& stub,
                                                      const std::vector<std::string>& urls,
                                                      const std::string& claim_id,
                                                      const std::string& name_space) {
  v1::CheckUrlRequest request;
  request.set_claim_id(claim_id);
  request.set_namespace_(name_space);
  for (const std::string& u : urls) request.add_items()->set_url(u);
  v1::CheckUrlResponse response;
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + kRedisE2eRpcDeadline));
  const grpc::Status s = stub.CheckUrl(&context, request, &response);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }
  if (response.results_size() != request.items_size()) {
    return absl::InternalError("wrong number of results");
  }
  std::vector<v1::UrlVerdict> out;
  for (const v1::UrlResult& r : response.results()) {
    if (!r.error().empty()) return absl::InternalError(absl::StrCat("item error: ", r.error()));
    out.push_back(r.verdict());
  }
  return out;
}

}  // namespace dedupd::testing
