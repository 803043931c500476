// Tests of DedupClient's admin calls against an in-process fake
// dedupd.v1.Admin: which calls retry UNAVAILABLE (Stats) and which are
// sent once (Backup, Export, Forget), the stream delivered in order, a
// reader error that cancels the stream, and the bearer token on every admin
// call (not only the retried ones).
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cctype>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "dedupd/v1/admin.grpc.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// FakeAdmin: Stats fails UNAVAILABLE `stats_failures` times, then answers;
// Backup always fails UNAVAILABLE; Export sends `export_messages` messages
// of one URL record each ("http://e/<i>"); Forget fails UNAVAILABLE
// `forget_failures` times, then answers one result per URL (normalized_url:
// the URL upper-cased, found: it starts with "http"). Counts calls and
// keeps the last call's authorization header.
class FakeAdmin final : public v1::Admin::Service {
 public:
  grpc::Status Forget(grpc::ServerContext* context, const v1::ForgetRequest* request,
                      v1::ForgetResponse* response) override {
    ++forget_calls;
    {
      const auto& md = context->client_metadata();
      const auto it = md.find("authorization");
      std::lock_guard<std::mutex> lock(mu);
      last_authorization = it == md.end() ? "" : std::string(it->second.data(), it->second.size());
    }
    if (forget_failures-- > 0) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "store busy");
    for (const std::string& url : request->urls()) {
      v1::ForgetResult* r = response->add_results();
      r->set_url(url);
      std::string upper = url;
      for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      r->set_normalized_url(upper);
      r->set_found(url.rfind("http", 0) == 0);
    }
    return grpc::Status::OK;
  }
  grpc::Status Stats(grpc::ServerContext*, const v1::StatsRequest* request,
                     v1::StatsResponse* response) override {
    ++stats_calls;
    if (stats_failures-- > 0) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "warming up");
    response->set_storage_format_version(request->exact() ? 22 : 2);
    return grpc::Status::OK;
  }
  grpc::Status Backup(grpc::ServerContext*, const v1::BackupRequest*,
                      v1::BackupResponse*) override {
    ++backup_calls;
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "disk busy");
  }
  grpc::Status Export(grpc::ServerContext* context, const v1::ExportRequest*,
                      grpc::ServerWriter<v1::ExportResponse>* writer) override {
    ++export_calls;
    for (int i = 0; i < export_messages; ++i) {
      if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "gone");
      v1::ExportResponse m;
      m.add_records()->mutable_url()->set_url(absl::StrCat("http://e/", i));
      if (!writer->Write(m)) break;
    }
    return grpc::Status::OK;
  }

  std::atomic<int> stats_failures{0};
  std::atomic<int> export_messages{0};
  std::atomic<int> stats_calls{0};
  std::atomic<int> backup_calls{0};
  std::atomic<int> export_calls{0};
  std::atomic<int> forget_failures{0};
  std::atomic<int> forget_calls{0};
  std::mutex mu;
  std::string last_authorization;  // guarded by mu
};

class AdminClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&fake_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
    Connect("");
  }
  // (Re)connects client_, sending `token` when not empty.
  void Connect(const std::string& token) {
    ClientOptions options;
    options.deadline = absl::Seconds(30);
    options.initial_backoff = absl::Milliseconds(1);
    options.max_backoff = absl::Milliseconds(5);
    options.bearer_token = token;
    ASSERT_OK_AND_ASSIGN(client_, DedupClient::Connect(absl::StrCat("127.0.0.1:", port_), options));
  }
  void TearDown() override { server_->Shutdown(); }

  FakeAdmin fake_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<DedupClient> client_;
};

TEST_F(AdminClientTest, StatsRetriesUnavailable) {
  fake_.stats_failures = 2;
  v1::StatsRequest request;
  request.set_exact(true);
  ASSERT_OK_AND_ASSIGN(v1::StatsResponse response, client_->AdminStats(request));
  EXPECT_EQ(response.storage_format_version(), 22u);  // the request arrived
  EXPECT_EQ(fake_.stats_calls.load(), 3);
}

TEST_F(AdminClientTest, BackupIsSentOnce) {
  v1::BackupRequest request;
  request.set_directory("/backups/x");
  EXPECT_THAT(client_->AdminBackup(request),
              StatusIs(absl::StatusCode::kUnavailable, StartsWith("Admin.Backup: disk busy")));
  EXPECT_EQ(fake_.backup_calls.load(), 1);
}

TEST_F(AdminClientTest, ExportDeliversEveryMessageInOrder) {
  fake_.export_messages = 5;
  std::vector<std::string> urls;
  ASSERT_THAT(client_->AdminExport(v1::ExportRequest(),
                                   [&](const v1::ExportResponse& m) {
                                     for (const auto& r : m.records())
                                       urls.push_back(r.url().url());
                                     return absl::OkStatus();
                                   }),
              IsOk());
  EXPECT_EQ(urls, (std::vector<std::string>{"http://e/0", "http://e/1", "http://e/2", "http://e/3",
                                            "http://e/4"}));
}

TEST_F(AdminClientTest, ReaderErrorCancelsTheStreamAndIsReturned) {
  fake_.export_messages = 1000;
  int seen = 0;
  EXPECT_THAT(client_->AdminExport(v1::ExportRequest(),
                                   [&](const v1::ExportResponse&) {
                                     ++seen;
                                     return absl::DataLossError("disk full on my side");
                                   }),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("disk full on my side")));
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(fake_.export_calls.load(), 1);
}

TEST_F(AdminClientTest, ForgetIsSentOnce) {
  fake_.forget_failures = 1;
  v1::ForgetRequest request;
  request.add_urls("http://a/");
  EXPECT_THAT(client_->AdminForget(request),
              StatusIs(absl::StatusCode::kUnavailable, StartsWith("Admin.Forget: store busy")));
  EXPECT_EQ(fake_.forget_calls.load(), 1);
}

TEST_F(AdminClientTest, ForgetReturnsOneResultPerUrlInOrder) {
  v1::ForgetRequest request;
  request.add_urls("http://a/");
  request.add_urls("nope");
  request.add_urls("https://b/");
  ASSERT_OK_AND_ASSIGN(v1::ForgetResponse response, client_->AdminForget(request));
  ASSERT_EQ(response.results_size(), 3);
  EXPECT_EQ(response.results(0).normalized_url(), "HTTP://A/");
  EXPECT_TRUE(response.results(0).found());
  EXPECT_EQ(response.results(1).url(), "nope");
  EXPECT_FALSE(response.results(1).found());
  EXPECT_EQ(response.results(2).normalized_url(), "HTTPS://B/");
  EXPECT_EQ(fake_.forget_calls.load(), 1);
}

// The calls that are not retried build their own context: they must carry
// the token all the same (a guarded server rejects them otherwise).
TEST_F(AdminClientTest, EveryAdminCallCarriesTheBearerToken) {
  Connect("s3cret-admin");
  v1::ForgetRequest request;
  request.add_urls("http://a/");
  ASSERT_THAT(client_->AdminForget(request), IsOk());
  {
    std::lock_guard<std::mutex> lock(fake_.mu);
    EXPECT_EQ(fake_.last_authorization, "Bearer s3cret-admin");
  }
  Connect("");
  ASSERT_THAT(client_->AdminForget(request), IsOk());
  std::lock_guard<std::mutex> lock(fake_.mu);
  EXPECT_EQ(fake_.last_authorization, "");
}

}  // namespace
}  // namespace dedupd
