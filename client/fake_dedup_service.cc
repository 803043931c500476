#include "client/fake_dedup_service.h"

#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace dedupd {
namespace {

// Finishes only when the call is cancelled: lets a test watch the client's
// deadline expire without the fake sleeping.
class HangingReactor final : public grpc::ServerUnaryReactor {
 public:
  void OnCancel() override { Finish(grpc::Status::CANCELLED); }
  void OnDone() override { delete this; }
};

}  // namespace

void FakeDedupService::AnswerNext() {
  absl::MutexLock lock(&mu_);
  script_.push_back(Action{Action::kAnswer, absl::OkStatus()});
}

void FakeDedupService::FailNext(absl::Status status) {
  absl::MutexLock lock(&mu_);
  script_.push_back(Action{Action::kFail, std::move(status)});
}

void FakeDedupService::HangNext() {
  absl::MutexLock lock(&mu_);
  script_.push_back(Action{Action::kHang, absl::OkStatus()});
}

void FakeDedupService::WrongCountNext() {
  absl::MutexLock lock(&mu_);
  script_.push_back(Action{Action::kWrongCount, absl::OkStatus()});
}

std::vector<FakeDedupService::Call> FakeDedupService::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

bool FakeDedupService::WaitForCalls(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  const auto arrived = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return calls_.size() >= n;
  };
  return mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout);
}

grpc::ServerUnaryReactor* FakeDedupService::CheckUrl(
    grpc::CallbackServerContext* context,
    const dedupd::v1::CheckUrlRequest* request,
    dedupd::v1::CheckUrlResponse* response) {
  Call call;
  call.mode = request->mode();
  for (const dedupd::v1::UrlItem& item : request->items()) {
    call.urls.push_back(item.url());
    call.base_urls.push_back(item.base_url());
  }
  if (context->deadline() != std::chrono::system_clock::time_point::max()) {
    call.deadline_left = absl::FromChrono(context->deadline()) - absl::Now();
  }

  absl::MutexLock lock(&mu_);
  calls_.push_back(call);
  std::optional<Action> action;
  if (!script_.empty()) {
    action = std::move(script_.front());
    script_.pop_front();
  }
  if (action && action->kind == Action::kHang) return new HangingReactor();

  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (action && action->kind == Action::kFail) {
    reactor->Finish(
        grpc::Status(static_cast<grpc::StatusCode>(action->status.code()),
                     std::string(action->status.message())));
    return reactor;
  }
  const bool claim = request->mode() != dedupd::v1::CLAIM_MODE_PEEK;
  for (const dedupd::v1::UrlItem& item : request->items()) {
    dedupd::v1::UrlResult* result = response->add_results();
    if (item.url().empty() || absl::StartsWith(item.url(), "bad")) {
      result->set_verdict(dedupd::v1::URL_VERDICT_INVALID);
      result->set_error("fake: invalid url");
      continue;
    }
    result->set_normalized_url(item.url());
    if (seen_.contains(item.url())) {
      result->set_verdict(dedupd::v1::URL_VERDICT_SEEN);
      result->mutable_first_seen_time()->set_seconds(kFirstSeenSeconds);
      result->mutable_first_seen_time()->set_nanos(kFirstSeenNanos);
    } else {
      result->set_verdict(dedupd::v1::URL_VERDICT_NEW);
      if (claim) seen_.insert(item.url());
    }
  }
  if (action && action->kind == Action::kWrongCount &&
      response->results_size() > 0) {
    response->mutable_results()->RemoveLast();
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

absl::StatusOr<std::unique_ptr<FakeDedupServer>> FakeDedupServer::Start() {
  std::unique_ptr<FakeDedupServer> fake(new FakeDedupServer());
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&fake->service_);
  fake->server_ = builder.BuildAndStart();
  if (fake->server_ == nullptr || port == 0) {
    return absl::InternalError("fake dedupd: cannot serve on 127.0.0.1:0");
  }
  fake->address_ = absl::StrCat("127.0.0.1:", port);
  return fake;
}

FakeDedupServer::~FakeDedupServer() {
  // A deadline of now cancels calls still in flight (HangNext) at once.
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
}

}  // namespace dedupd
