#include "server/rpc_observer.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/interceptor.h"

namespace dedupd {
namespace {

using grpc::experimental::InterceptionHookPoints;

// Longest status message quoted in a log line.
constexpr size_t kMaxLoggedMessageBytes = 512;

class ObservingInterceptor final : public grpc::experimental::Interceptor {
 public:
  ObservingInterceptor(RpcObserver* observer, grpc::experimental::ServerRpcInfo* info)
      : observer_(observer),
        info_(info),
        label_(observer->Label(info->method())),
        start_(std::chrono::steady_clock::now()) {
    observer_->CallStarted(label_);
  }
  // The server context owns its interceptors: this runs when the call is
  // over (status sent and the client's side closed).
  ~ObservingInterceptor() override { observer_->CallEnded(label_); }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
      const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start_;
      const grpc::Status status = methods->GetSendStatus();
      // The peer is read only for a failure: it costs a string.
      observer_->Finished(info_->method(), label_,
                          status.ok() ? std::string() : info_->server_context()->peer(), status,
                          elapsed.count());
    }
    methods->Proceed();
  }

 private:
  RpcObserver* const observer_;
  grpc::experimental::ServerRpcInfo* const info_;
  const absl::string_view label_;  // points into the observer's method list
  const std::chrono::steady_clock::time_point start_;
};

class Factory final : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit Factory(RpcObserver* observer) : observer_(observer) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new ObservingInterceptor(observer_, info);
  }

 private:
  RpcObserver* const observer_;
};

}  // namespace

RpcObserver::RpcObserver(std::vector<std::string> methods, ServerMetrics* metrics)
    : methods_(std::move(methods)), metrics_(metrics) {
  std::sort(methods_.begin(), methods_.end());
}

std::vector<std::string> RpcObserver::MethodsOf(const std::vector<std::string>& services) {
  std::vector<std::string> out = {"grpc.health.v1.Health/Check", "grpc.health.v1.Health/Watch",
                                  "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo"};
  const google::protobuf::DescriptorPool* pool = google::protobuf::DescriptorPool::generated_pool();
  for (const std::string& name : services) {
    const google::protobuf::ServiceDescriptor* s = pool->FindServiceByName(name);
    if (s == nullptr) continue;
    for (int i = 0; i < s->method_count(); ++i) {
      out.push_back(absl::StrCat(s->full_name(), "/", s->method(i)->name()));
    }
  }
  return out;
}

std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>>
RpcObserver::Factories() {
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> f;
  f.push_back(std::make_unique<Factory>(this));
  return f;
}

absl::string_view RpcObserver::Label(absl::string_view method) const {
  absl::ConsumePrefix(&method, "/");
  auto it = std::lower_bound(methods_.begin(), methods_.end(), method);
  if (it != methods_.end() && *it == method) return *it;
  return ServerMetrics::kOtherMethod;
}

bool RpcObserver::IsOpenEndedStream(absl::string_view label) {
  return label == "grpc.health.v1.Health/Watch" ||
         label == "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
}

void RpcObserver::CallStarted(absl::string_view label) {
  const bool stream = IsOpenEndedStream(label);
  if (!stream && metrics_ != nullptr) metrics_->CallStarted();
  absl::MutexLock lock(&mu_);
  ++(stream ? open_streams_ : in_flight_);
}

void RpcObserver::CallEnded(absl::string_view label) {
  const bool stream = IsOpenEndedStream(label);
  if (!stream && metrics_ != nullptr) metrics_->CallEnded();
  absl::MutexLock lock(&mu_);
  --(stream ? open_streams_ : in_flight_);
}

int64_t RpcObserver::OpenStreams() {
  absl::MutexLock lock(&mu_);
  return open_streams_;
}

bool RpcObserver::WaitForCalls(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto none = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ <= 0; };
  return mu_.AwaitWithDeadline(absl::Condition(&none), deadline);
}

void RpcObserver::Finished(absl::string_view method, absl::string_view label,
                           absl::string_view peer, const grpc::Status& status, double seconds) {
  const int code = static_cast<int>(status.error_code());
  if (metrics_ != nullptr) metrics_->RecordRpc(label, code, seconds);
  if (status.ok()) return;
  uint64_t suppressed = 0;
  // Keyed by label: the set of keys stays bounded whatever the client sends.
  if (!failure_log_.Allow(label, absl::Now(), &suppressed)) return;
  const bool server_fault = code == grpc::StatusCode::INTERNAL ||
                            code == grpc::StatusCode::DATA_LOSS ||
                            code == grpc::StatusCode::UNKNOWN;
  std::string message = status.error_message();
  if (message.size() > kMaxLoggedMessageBytes) {
    message.resize(kMaxLoggedMessageBytes);
    message += "...";
  }
  // The method name (when unknown) and the message carry client bytes (a
  // URL quoted in an error): escaped, so they cannot forge a log line.
  Log(server_fault ? LogLevel::kError : LogLevel::kWarning,
      absl::StrCat("rpc ",
                   label == ServerMetrics::kOtherMethod ? absl::CHexEscape(method.substr(0, 200))
                                                        : std::string(label),
                   " from ", peer, " failed: ", ServerMetrics::CodeName(code), ": ",
                   absl::CHexEscape(message),
                   suppressed > 0 ? absl::StrCat(" (", suppressed,
                                                 " earlier failures of this method "
                                                 "not logged: rate limit)")
                                  : ""));
}

}  // namespace dedupd
