#include "client/client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <functional>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "common/file_io.h"
#include "dedupd/v1/admin.grpc.pb.h"
#include "dedupd/v1/dedupd.grpc.pb.h"

namespace dedupd {
namespace {

// Responses can be larger than requests (normalization percent-encodes), so
// the client accepts more than gRPC's default 4 MiB.
constexpr int kMaxReceiveMessageBytes = 64 << 20;

// Room for an item's tag and length prefix inside the request message
// (1-byte tag, varint length of at most 5 bytes for items under 4 GiB).
constexpr size_t kItemFramingBytes = 6;

// FromGrpcStatus is the one place a grpc::Status becomes an absl::Status:
// same code (the numeric values are the same by design), message prefixed
// with the RPC's method name so that the caller knows which call failed.
absl::Status FromGrpcStatus(const grpc::Status& status, absl::string_view method) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      absl::StrCat(method, ": ", status.error_message()));
}

// The wait before retry number `retry` (1 for the first retry): exponential,
// capped, then jittered by +/-20% (as gRPC's own connection backoff does).
absl::Duration Backoff(const ClientOptions& options, int retry, absl::BitGen& gen) {
  absl::Duration wait = options.initial_backoff;
  for (int i = 1; i < retry && wait < options.max_backoff; ++i) {
    wait *= options.backoff_multiplier;
  }
  wait = std::min(wait, options.max_backoff);
  return wait * absl::Uniform(gen, 0.8, 1.2);
}

// ReadNamedFile reads `path` whole with file_io::ReadFile, its error
// prefixed with what the file is for ("token file: /x: open: ...").
absl::StatusOr<std::string> ReadNamedFile(absl::string_view what, const std::string& path) {
  absl::StatusOr<std::string> data = file_io::ReadFile(path);
  if (!data.ok()) {
    return absl::Status(data.status().code(), absl::StrCat(what, ": ", data.status().message()));
  }
  return data;
}

// ValidToken: printable ASCII without spaces, the characters a gRPC
// metadata value and a Bearer token share.
bool ValidToken(absl::string_view token) {
  if (token.empty()) return false;
  for (char c : token) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

// MakeChannelCredentials: options.credentials, else TLS credentials from
// the tls_* files, else plaintext.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const ClientOptions& options) {
  const bool tls = options.tls || !options.tls_ca_file.empty() || !options.tls_cert_file.empty() ||
                   !options.tls_key_file.empty() || !options.tls_server_name.empty();
  if (options.credentials != nullptr) {
    if (tls) {
      return absl::InvalidArgumentError(
          "connect: set either credentials or the tls_* options, not both");
    }
    return options.credentials;
  }
  if (!tls) return grpc::InsecureChannelCredentials();
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "connect: a client certificate needs both tls_cert_file and tls_key_file");
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.tls_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadNamedFile("connect: TLS CA file", options.tls_ca_file);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!options.tls_cert_file.empty()) {
    absl::StatusOr<std::string> cert =
        ReadNamedFile("connect: TLS certificate file", options.tls_cert_file);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadNamedFile("connect: TLS key file", options.tls_key_file);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace

absl::StatusOr<std::string> ReadBearerTokenFile(const std::string& path) {
  absl::StatusOr<std::string> token = ReadNamedFile("token file", path);
  if (!token.ok()) return token.status();
  while (!token->empty() && (token->back() == '\n' || token->back() == '\r')) {
    token->pop_back();
  }
  if (!ValidToken(*token)) {
    return absl::InvalidArgumentError(absl::StrCat("token file ", path,
                                                   token->empty()
                                                       ? ": the file is empty"
                                                       : ": want one token of printable ASCII "
                                                         "without spaces"));
  }
  return token;
}

struct DedupClient::Rpc {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<dedupd::v1::Dedup::Stub> stub;
  std::unique_ptr<dedupd::v1::Admin::Stub> admin;
};

absl::StatusOr<std::unique_ptr<DedupClient>> DedupClient::Connect(const std::string& address,
                                                                  const ClientOptions& options) {
  if (address.empty()) {
    return absl::InvalidArgumentError("connect: empty server address");
  }
  if (options.deadline <= absl::ZeroDuration() || options.deadline == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("connect: deadline must be finite and > 0, got ",
                                                   absl::FormatDuration(options.deadline)));
  }
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("connect: max_attempts must be >= 1, got ", options.max_attempts));
  }
  if (options.initial_backoff < absl::ZeroDuration() ||
      options.max_backoff < options.initial_backoff || !(options.backoff_multiplier >= 1.0)) {
    return absl::InvalidArgumentError(
        "connect: backoff needs 0 <= initial_backoff <= max_backoff and "
        "backoff_multiplier >= 1");
  }
  if (options.max_store_attempts < 1 || options.max_store_retry_time < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "connect: want max_store_attempts >= 1 and max_store_retry_time >= 0");
  }
  if (options.max_items_per_request < 1 || options.max_request_bytes < 1) {
    return absl::InvalidArgumentError(
        "connect: max_items_per_request and max_request_bytes must be >= 1");
  }
  if (!options.bearer_token.empty() && !ValidToken(options.bearer_token)) {
    return absl::InvalidArgumentError(
        "connect: bearer_token must be printable ASCII without spaces");
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      MakeChannelCredentials(options);
  if (!credentials.ok()) return credentials.status();
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxReceiveMessageBytes);
  if (!options.tls_server_name.empty()) {
    args.SetSslTargetNameOverride(options.tls_server_name);
  }
  auto rpc = std::make_unique<Rpc>();
  rpc->channel = grpc::CreateCustomChannel(address, *credentials, args);
  if (rpc->channel == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("connect: cannot create a channel to ", address));
  }
  rpc->stub = dedupd::v1::Dedup::NewStub(rpc->channel);
  rpc->admin = dedupd::v1::Admin::NewStub(rpc->channel);
  return std::unique_ptr<DedupClient>(new DedupClient(options, std::move(rpc)));
}

DedupClient::DedupClient(ClientOptions options, std::unique_ptr<Rpc> rpc)
    : options_(std::move(options)), rpc_(std::move(rpc)) {}

DedupClient::~DedupClient() = default;

namespace {

// PrepareContext sets the deadline (options.deadline from now) and the
// bearer token of one call.
void PrepareContext(const ClientOptions& options, grpc::ClientContext* context) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + options.deadline));
  if (!options.bearer_token.empty()) {
    // Per-call metadata rather than call credentials: gRPC refuses call
    // credentials on a plaintext channel, and a token may guard one.
    context->AddMetadata("authorization", absl::StrCat("Bearer ", options.bearer_token));
  }
}

// CallWithRetry runs `attempt` (one RPC with a fresh context whose deadline
// is options.deadline from now) until it answers anything but UNAVAILABLE
// or max_attempts are used up, sleeping Backoff() between attempts.
absl::Status CallWithRetry(const ClientOptions& options, absl::string_view method,
                           absl::BitGen& gen,
                           const std::function<grpc::Status(grpc::ClientContext*)>& attempt) {
  for (int n = 1;; ++n) {
    grpc::ClientContext context;
    PrepareContext(options, &context);
    absl::Status status = FromGrpcStatus(attempt(&context), method);
    if (!absl::IsUnavailable(status)) return status;
    if (n >= options.max_attempts) {
      return absl::UnavailableError(
          absl::StrCat(status.message(), " (gave up after ", n, " attempts)"));
    }
    absl::SleepFor(Backoff(options, n, gen));
  }
}

// The longest claim id a caller may give a batched call: room for "#" and
// the request's number within the server's 64 bytes.
constexpr size_t kMaxCallerClaimIdBytes = 48;

// SetClaimId gives request k of a call its claim id: the caller's
// `claim_id` + "#" + k, or, when the caller gave none, 16 random bytes.
// Either is reused by the request's retries (CallWithRetry resends the
// request unchanged).
template <typename Request>
void SetClaimId(const std::string& claim_id, size_t k, absl::BitGen& gen, Request* request) {
  if (!claim_id.empty()) {
    request->set_claim_id(absl::StrCat(claim_id, "#", k));
    return;
  }
  std::string id(16, '\0');
  for (char& c : id) c = static_cast<char>(absl::Uniform<uint8_t>(gen));
  request->set_claim_id(std::move(id));
}

absl::Status CheckCallerClaimId(absl::string_view method, const std::string& claim_id) {
  if (claim_id.size() <= kMaxCallerClaimIdBytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(method, ": claim_id is ", claim_id.size(),
                                                 " bytes; the limit is ", kMaxCallerClaimIdBytes));
}

template <typename Request, typename Response>
using RpcMethod = std::function<grpc::Status(grpc::ClientContext*, const Request&, Response*)>;

// StoreUnavailable: whether the server could not answer this URL now (its
// store node is down), as opposed to answering it.
template <typename Result>
bool StoreUnavailable(const Result& result) {
  return result.error_reason() == dedupd::v1::ERROR_REASON_STORE_UNAVAILABLE;
}

// ResendStoreUnavailable: `results` answer `request` (one each, in order);
// sends the items answered STORE_UNAVAILABLE again, in copies of `request`
// (its claim id, namespace, mode, lease and per_item_store_errors), after
// a jittered backoff that grows each round, and puts each answer in its
// item's place, until none is left, an item was sent
// options.max_store_attempts times, or the next round would start past
// options.max_store_retry_time from now. Items still unanswered keep
// their last STORE_UNAVAILABLE result, its error saying so. A round that
// fails UNAVAILABLE or DEADLINE_EXCEEDED ends the rounds (its items keep
// their results: they are as unanswered as before); any other error, or a
// wrong result count, is returned.
template <typename Request, typename Response, typename Result>
absl::Status ResendStoreUnavailable(const ClientOptions& options, absl::string_view method,
                                    absl::BitGen& gen, const Request& request,
                                    const RpcMethod<Request, Response>& rpc,
                                    absl::Span<Result> results) {
  std::vector<size_t> pending;
  for (size_t i = 0; i < results.size(); ++i) {
    if (StoreUnavailable(results[i])) pending.push_back(i);
  }
  if (pending.empty()) return absl::OkStatus();
  const absl::Time give_up = absl::Now() + options.max_store_retry_time;
  int sends = 1;  // every pending item has been sent this many times
  for (; !pending.empty() && sends < options.max_store_attempts; ++sends) {
    const absl::Duration wait = Backoff(options, sends, gen);
    if (absl::Now() + wait > give_up) break;
    absl::SleepFor(wait);
    Request again = request;
    again.clear_items();
    for (size_t i : pending) *again.add_items() = request.items(static_cast<int>(i));
    Response response;
    absl::Status status = CallWithRetry(options, method, gen, [&](grpc::ClientContext* context) {
      response.Clear();
      return rpc(context, again, &response);
    });
    if (absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status)) break;
    if (!status.ok()) return status;
    if (response.results_size() != again.items_size()) {
      return absl::InternalError(absl::StrCat(method, ": server answered ", response.results_size(),
                                              " results for ", again.items_size(),
                                              " items sent again"));
    }
    std::vector<size_t> still;
    for (size_t j = 0; j < pending.size(); ++j) {
      Result& result = results[pending[j]];
      result = std::move(*response.mutable_results(static_cast<int>(j)));
      if (StoreUnavailable(result)) still.push_back(pending[j]);
    }
    pending.swap(still);
  }
  for (size_t i : pending) {
    results[i].set_error(absl::StrCat(results[i].error(), " (", method,
                                      ": still unavailable after ", sends, " attempts)"));
  }
  return absl::OkStatus();
}

// CheckBatched is the body of every batch RPC (CheckUrl, CompleteUrls,
// CheckContent): cut `items` into requests (item and byte limits), send
// each through CallWithRetry, check the result count, re-send the items
// answered STORE_UNAVAILABLE when `resend_store_unavailable`
// (ResendStoreUnavailable), and concatenate the results in order. `rpc` is
// the stub method.
// `prepare`, when set, fills request k's other fields (k = 0, 1, ...).
template <typename Request, typename Response, typename Item, typename Result>
absl::StatusOr<std::vector<Result>> CheckBatched(
    const ClientOptions& options, absl::string_view method, absl::Span<const Item> items,
    const std::function<void(size_t, absl::BitGen&, Request*)>& prepare,
    const RpcMethod<Request, Response>& rpc, bool resend_store_unavailable,
    const ProgressCallback& progress) {
  std::vector<Result> results;
  results.reserve(items.size());
  absl::BitGen gen;  // per call: the client keeps no mutable state
  size_t next = 0;
  for (size_t k = 0; next < items.size(); ++k) {
    // Cut the next request: up to max_items_per_request items, and stop
    // before max_request_bytes unless the request would be empty.
    Request request;
    if (prepare) prepare(k, gen, &request);
    size_t bytes = 0;
    while (next < items.size() &&
           static_cast<size_t>(request.items_size()) < options.max_items_per_request) {
      const size_t item_bytes = items[next].ByteSizeLong() + kItemFramingBytes;
      if (request.items_size() > 0 && bytes + item_bytes > options.max_request_bytes) {
        break;
      }
      bytes += item_bytes;
      *request.add_items() = items[next];
      ++next;
    }

    Response response;
    absl::Status status = CallWithRetry(options, method, gen, [&](grpc::ClientContext* context) {
      response.Clear();
      return rpc(context, request, &response);
    });
    if (!status.ok()) return status;

    if (response.results_size() != request.items_size()) {
      return absl::InternalError(absl::StrCat(method, ": server answered ", response.results_size(),
                                              " results for ", request.items_size(), " items"));
    }
    const size_t first = results.size();
    for (Result& result : *response.mutable_results()) {
      results.push_back(std::move(result));
    }
    if (resend_store_unavailable) {
      absl::Status resent = ResendStoreUnavailable<Request, Response, Result>(
          options, method, gen, request, rpc, absl::MakeSpan(results).subspan(first));
      if (!resent.ok()) return resent;
    }
    if (progress) progress(results.size(), items.size());
  }
  return results;
}

}  // namespace

absl::StatusOr<std::vector<dedupd::v1::UrlResult>> DedupClient::CheckUrls(
    absl::Span<const dedupd::v1::UrlItem> items, dedupd::v1::ClaimMode mode,
    const ProgressCallback& progress) const {
  return CheckUrls(items, mode, UrlCheckOptions(), progress);
}

absl::StatusOr<std::vector<dedupd::v1::UrlResult>> DedupClient::CheckUrls(
    absl::Span<const dedupd::v1::UrlItem> items, dedupd::v1::ClaimMode mode,
    const UrlCheckOptions& url_options, const ProgressCallback& progress) const {
  if (absl::Status s = CheckCallerClaimId("CheckUrl", url_options.claim_id); !s.ok()) return s;
  dedupd::v1::Dedup::Stub* stub = rpc_->stub.get();
  return CheckBatched<dedupd::v1::CheckUrlRequest, dedupd::v1::CheckUrlResponse,
                      dedupd::v1::UrlItem, dedupd::v1::UrlResult>(
      options_, "CheckUrl", items,
      [&](size_t k, absl::BitGen& gen, dedupd::v1::CheckUrlRequest* request) {
        request->set_mode(mode);
        request->set_namespace_(url_options.name_space);
        if (url_options.lease_seconds) request->set_lease_seconds(*url_options.lease_seconds);
        SetClaimId(url_options.claim_id, k, gen, request);
        request->set_per_item_store_errors(true);
      },
      [stub](grpc::ClientContext* context, const dedupd::v1::CheckUrlRequest& request,
             dedupd::v1::CheckUrlResponse* response) {
        return stub->CheckUrl(context, request, response);
      },
      /*resend_store_unavailable=*/true, progress);
}

absl::StatusOr<std::vector<dedupd::v1::CompleteResult>> DedupClient::CompleteUrls(
    absl::Span<const dedupd::v1::UrlItem> items, const std::string& name_space,
    const std::string& claim_id) const {
  dedupd::v1::Dedup::Stub* stub = rpc_->stub.get();
  return CheckBatched<dedupd::v1::CompleteUrlsRequest, dedupd::v1::CompleteUrlsResponse,
                      dedupd::v1::UrlItem, dedupd::v1::CompleteResult>(
      options_, "CompleteUrls", items,
      [&](size_t, absl::BitGen&, dedupd::v1::CompleteUrlsRequest* request) {
        request->set_namespace_(name_space);
        request->set_claim_id(claim_id);
        request->set_per_item_store_errors(true);
      },
      [stub](grpc::ClientContext* context, const dedupd::v1::CompleteUrlsRequest& request,
             dedupd::v1::CompleteUrlsResponse* response) {
        return stub->CompleteUrls(context, request, response);
      },
      /*resend_store_unavailable=*/true, nullptr);
}

absl::StatusOr<std::vector<dedupd::v1::ContentResult>> DedupClient::CheckContent(
    absl::Span<const dedupd::v1::ContentItem> items, dedupd::v1::ClaimMode mode,
    const ProgressCallback& progress) const {
  return CheckContent(items, mode, ContentCheckOptions(), progress);
}

absl::StatusOr<std::vector<dedupd::v1::ContentResult>> DedupClient::CheckContent(
    absl::Span<const dedupd::v1::ContentItem> items, dedupd::v1::ClaimMode mode,
    const ContentCheckOptions& content_options, const ProgressCallback& progress) const {
  if (absl::Status s = CheckCallerClaimId("CheckContent", content_options.claim_id); !s.ok()) {
    return s;
  }
  dedupd::v1::Dedup::Stub* stub = rpc_->stub.get();
  return CheckBatched<dedupd::v1::CheckContentRequest, dedupd::v1::CheckContentResponse,
                      dedupd::v1::ContentItem, dedupd::v1::ContentResult>(
      options_, "CheckContent", items,
      [&](size_t k, absl::BitGen& gen, dedupd::v1::CheckContentRequest* request) {
        request->set_mode(mode);
        request->set_namespace_(content_options.name_space);
        SetClaimId(content_options.claim_id, k, gen, request);
      },
      [stub](grpc::ClientContext* context, const dedupd::v1::CheckContentRequest& request,
             dedupd::v1::CheckContentResponse* response) {
        return stub->CheckContent(context, request, response);
      },
      // The content layer fails a request as a whole, never per item.
      /*resend_store_unavailable=*/false, progress);
}

absl::StatusOr<dedupd::v1::CheckChunksResponse> DedupClient::CheckChunks(
    const dedupd::v1::CheckChunksRequest& caller_request) const {
  constexpr absl::string_view kMethod = "CheckChunks";
  dedupd::v1::CheckChunksResponse response;
  absl::BitGen gen;
  // The caller's claim id, or one of the call's own; every attempt sends it.
  const dedupd::v1::CheckChunksRequest* request = &caller_request;
  dedupd::v1::CheckChunksRequest with_id;
  if (caller_request.claim_id().empty()) {
    with_id = caller_request;
    SetClaimId("", 0, gen, &with_id);
    request = &with_id;
  }
  absl::Status status = CallWithRetry(options_, kMethod, gen, [&](grpc::ClientContext* context) {
    response.Clear();
    return rpc_->stub->CheckChunks(context, *request, &response);
  });
  if (!status.ok()) return status;
  if (response.results_size() != request->chunks_size()) {
    return absl::InternalError(absl::StrCat(kMethod, ": server answered ", response.results_size(),
                                            " results for ", request->chunks_size(), " chunks"));
  }
  return response;
}

absl::StatusOr<dedupd::v1::DedupResultsResponse> DedupClient::DedupResults(
    const dedupd::v1::DedupResultsRequest& request) const {
  dedupd::v1::DedupResultsResponse response;
  absl::BitGen gen;
  absl::Status status =
      CallWithRetry(options_, "DedupResults", gen, [&](grpc::ClientContext* context) {
        response.Clear();
        return rpc_->stub->DedupResults(context, request, &response);
      });
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<dedupd::v1::StatsResponse> DedupClient::AdminStats(
    const dedupd::v1::StatsRequest& request) const {
  dedupd::v1::StatsResponse response;
  absl::BitGen gen;
  absl::Status status =
      CallWithRetry(options_, "Admin.Stats", gen, [&](grpc::ClientContext* context) {
        response.Clear();
        return rpc_->admin->Stats(context, request, &response);
      });
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<dedupd::v1::BackupResponse> DedupClient::AdminBackup(
    const dedupd::v1::BackupRequest& request) const {
  dedupd::v1::BackupResponse response;
  grpc::ClientContext context;
  PrepareContext(options_, &context);  // the token too (no retry here)
  absl::Status status =
      FromGrpcStatus(rpc_->admin->Backup(&context, request, &response), "Admin.Backup");
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<dedupd::v1::ForgetResponse> DedupClient::AdminForget(
    const dedupd::v1::ForgetRequest& request) const {
  dedupd::v1::ForgetResponse response;
  grpc::ClientContext context;
  PrepareContext(options_, &context);  // the token too (no retry here)
  absl::Status status =
      FromGrpcStatus(rpc_->admin->Forget(&context, request, &response), "Admin.Forget");
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<dedupd::v1::DropNamespaceResponse> DedupClient::AdminDropNamespace(
    const dedupd::v1::DropNamespaceRequest& request) const {
  dedupd::v1::DropNamespaceResponse response;
  absl::BitGen gen;
  absl::Status status =
      CallWithRetry(options_, "Admin.DropNamespace", gen, [&](grpc::ClientContext* context) {
        response.Clear();
        return rpc_->admin->DropNamespace(context, request, &response);
      });
  if (!status.ok()) return status;
  return response;
}

absl::Status DedupClient::AdminExport(
    const dedupd::v1::ExportRequest& request,
    const std::function<absl::Status(const dedupd::v1::ExportResponse&)>& on_message) const {
  grpc::ClientContext context;
  PrepareContext(options_, &context);  // the token too (no retry here)
  std::unique_ptr<grpc::ClientReader<dedupd::v1::ExportResponse>> reader =
      rpc_->admin->Export(&context, request);
  dedupd::v1::ExportResponse message;
  absl::Status handled;
  while (reader->Read(&message)) {
    handled = on_message(message);
    if (!handled.ok()) {
      context.TryCancel();
      break;
    }
  }
  const grpc::Status finished = reader->Finish();
  if (!handled.ok()) return handled;
  return FromGrpcStatus(finished, "Admin.Export");
}

}  // namespace dedupd
