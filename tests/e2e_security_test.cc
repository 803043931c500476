// e2e_security_test: TLS, mutual TLS, bearer tokens and the plaintext
// health port of the real dedupd binary, with certificates the test makes
// itself (tests/testing/test_certs.h), through the client library, raw
// stubs and dedupctl.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "client/client.h"
#include "dedupd/v1/admin.pb.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpc/reflection/v1alpha/reflection.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_certs.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::LeafUse;
using ::dedupd::testing::LoggedPort;
using ::dedupd::testing::RunCommand;
using ::dedupd::testing::ServerProcess;
using ::dedupd::testing::StatusIs;
using ::dedupd::testing::TestCert;
using ::testing::HasSubstr;

constexpr char kToken[] = "n0rmal-T0ken_for.tests";
constexpr char kAdminToken[] = "adm1n-T0ken";

// Certificates and files shared by every test: a CA, a server certificate
// for 127.0.0.1/localhost, a client certificate, and a second CA with its
// own server and client certificates.
struct Pki {
  std::string dir;
  std::string ca, server_cert, server_key, client_cert, client_key;
  std::string other_ca, other_server_cert, other_server_key, other_client_cert, other_client_key;
  std::string token, admin_token, empty_token, garbage;
  std::string ca_pem;
};

class E2eSecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pki_ = new Pki();
    pki_->dir = testing::MakeTempDir("e2e_security_pki_");
    auto write = [](const std::string& name, const std::string& data) {
      const std::string path = pki_->dir + "/" + name;
      absl::Status st = testing::WriteTestFile(path, data);
      EXPECT_TRUE(st.ok()) << st;
      return path;
    };
    absl::StatusOr<TestCert> ca = testing::MakeTestCa("dedupd test CA");
    absl::StatusOr<TestCert> other_ca = testing::MakeTestCa("another CA");
    ASSERT_TRUE(ca.ok() && other_ca.ok());
    absl::StatusOr<TestCert> server = testing::MakeTestLeaf(*ca, "dedupd", LeafUse::kServer);
    absl::StatusOr<TestCert> client = testing::MakeTestLeaf(*ca, "crawler", LeafUse::kClient);
    absl::StatusOr<TestCert> other_server =
        testing::MakeTestLeaf(*other_ca, "impostor", LeafUse::kServer);
    absl::StatusOr<TestCert> other_client =
        testing::MakeTestLeaf(*other_ca, "stranger", LeafUse::kClient);
    ASSERT_TRUE(server.ok() && client.ok() && other_server.ok() && other_client.ok());
    pki_->ca_pem = ca->cert_pem;
    pki_->ca = write("ca.pem", ca->cert_pem);
    pki_->server_cert = write("server.pem", server->cert_pem);
    pki_->server_key = write("server.key", server->key_pem);
    pki_->client_cert = write("client.pem", client->cert_pem);
    pki_->client_key = write("client.key", client->key_pem);
    pki_->other_ca = write("other-ca.pem", other_ca->cert_pem);
    pki_->other_server_cert = write("other-server.pem", other_server->cert_pem);
    pki_->other_server_key = write("other-server.key", other_server->key_pem);
    pki_->other_client_cert = write("other-client.pem", other_client->cert_pem);
    pki_->other_client_key = write("other-client.key", other_client->key_pem);
    pki_->token = write("token", absl::StrCat(kToken, "\n"));
    pki_->admin_token = write("admin-token", absl::StrCat(kAdminToken, "\n"));
    pki_->empty_token = write("empty-token", "");
    pki_->garbage = write("garbage.pem", "not a certificate\n");
  }

  static void TearDownTestSuite() {
    testing::RemoveTree(pki_->dir);
    delete pki_;
    pki_ = nullptr;
  }

  void SetUp() override { dir_ = testing::MakeTempDir("e2e_security_"); }
  void TearDown() override {
    server_.reset();
    testing::RemoveTree(dir_);
  }

  void Start(std::vector<std::string> flags) {
    absl::StatusOr<std::unique_ptr<ServerProcess>> s =
        ServerProcess::Start(DEDUPD_BINARY, dir_ + "/data", flags);
    ASSERT_THAT(s, IsOk());
    server_ = *std::move(s);
  }

  std::vector<std::string> TlsFlags() const {
    return {"--tls_cert_file=" + pki_->server_cert, "--tls_key_file=" + pki_->server_key};
  }

  // One URL through the client library; returns the call's status.
  absl::Status CheckOne(ClientOptions options, const std::string& url = "https://a.example/x",
                        v1::ClaimMode mode = v1::CLAIM_MODE_PEEK,
                        v1::UrlVerdict* verdict = nullptr) {
    options.deadline = absl::Seconds(20);
    options.max_attempts = 1;  // a handshake failure is UNAVAILABLE: no retries
    absl::StatusOr<std::unique_ptr<DedupClient>> client =
        DedupClient::Connect(server_->address(), options);
    if (!client.ok()) return client.status();
    std::vector<v1::UrlItem> items(1);
    items[0].set_url(url);
    absl::StatusOr<std::vector<v1::UrlResult>> results = (*client)->CheckUrls(items, mode);
    if (!results.ok()) return results.status();
    if (verdict != nullptr) *verdict = (*results)[0].verdict();
    return absl::OkStatus();
  }

  static ClientOptions Tls(std::string ca) {
    ClientOptions options;
    options.tls_ca_file = std::move(ca);
    return options;
  }

  // Health over `channel` without any metadata.
  static grpc::Status Health(const std::shared_ptr<grpc::Channel>& channel,
                             grpc::health::v1::HealthCheckResponse* resp) {
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    grpc::health::v1::HealthCheckRequest req;
    return stub->Check(&ctx, req, resp);
  }

  static std::shared_ptr<grpc::ChannelCredentials> TlsChannelCredentials() {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = pki_->ca_pem;
    return grpc::SslCredentials(ssl);
  }

  // A unary call of any method name, with an optional token, through the
  // generic stub (the Admin service is not in this tree; the rule is on
  // the name).
  // CallMethod calls `method` with the serialized `message` (default: the
  // empty message) through a generic stub.
  grpc::Status CallMethod(const std::string& method, const std::string& token,
                          const std::string& message = "") {
    auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    grpc::GenericStub stub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    grpc::Slice slice(message);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    grpc::Status status;
    absl::Notification done;
    stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
      status = std::move(s);
      done.Notify();
    });
    done.WaitForNotification();
    return status;
  }

  static Pki* pki_;
  std::string dir_;
  std::unique_ptr<ServerProcess> server_;
};

Pki* E2eSecurityTest::pki_ = nullptr;

TEST_F(E2eSecurityTest, TlsCallWorks) {
  Start(TlsFlags());
  v1::UrlVerdict verdict = v1::URL_VERDICT_UNSPECIFIED;
  EXPECT_THAT(CheckOne(Tls(pki_->ca), "https://a.example/x", v1::CLAIM_MODE_CLAIM, &verdict),
              IsOk());
  EXPECT_EQ(verdict, v1::URL_VERDICT_NEW);
  // The certificate names localhost too: verified under that name.
  ClientOptions by_name = Tls(pki_->ca);
  by_name.tls_server_name = "localhost";
  EXPECT_THAT(CheckOne(by_name, "https://a.example/x", v1::CLAIM_MODE_PEEK, &verdict), IsOk());
  EXPECT_EQ(verdict, v1::URL_VERDICT_SEEN);
  // Health over TLS.
  grpc::health::v1::HealthCheckResponse resp;
  ASSERT_TRUE(Health(grpc::CreateChannel(server_->address(), TlsChannelCredentials()), &resp).ok());
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

TEST_F(E2eSecurityTest, PlaintextClientToTlsPortFails) {
  Start(TlsFlags());
  EXPECT_THAT(CheckOne(ClientOptions()), StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(E2eSecurityTest, ClientTrustingAnotherCaFails) {
  Start(TlsFlags());
  EXPECT_THAT(CheckOne(Tls(pki_->other_ca)), StatusIs(absl::StatusCode::kUnavailable));
  // A name the certificate does not carry fails too.
  ClientOptions wrong_name = Tls(pki_->ca);
  wrong_name.tls_server_name = "dedupd.example";
  EXPECT_THAT(CheckOne(wrong_name), StatusIs(absl::StatusCode::kUnavailable));
}

TEST_F(E2eSecurityTest, MutualTlsNeedsAClientCertificateFromTheCa) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--tls_client_ca_file=" + pki_->ca);
  Start(flags);
  EXPECT_THAT(CheckOne(Tls(pki_->ca)), StatusIs(absl::StatusCode::kUnavailable))
      << "no client certificate";
  ClientOptions good = Tls(pki_->ca);
  good.tls_cert_file = pki_->client_cert;
  good.tls_key_file = pki_->client_key;
  EXPECT_THAT(CheckOne(good), IsOk());
  ClientOptions stranger = Tls(pki_->ca);
  stranger.tls_cert_file = pki_->other_client_cert;
  stranger.tls_key_file = pki_->other_client_key;
  EXPECT_THAT(CheckOne(stranger), StatusIs(absl::StatusCode::kUnavailable))
      << "a client certificate of another CA";
}

TEST_F(E2eSecurityTest, TokenGuardsEveryCallButHealth) {
  Start({"--auth_token_file=" + pki_->token});
  EXPECT_THAT(CheckOne(ClientOptions()), StatusIs(absl::StatusCode::kUnauthenticated,
                                                  HasSubstr("authorization: Bearer <token>")));
  ClientOptions wrong;
  wrong.bearer_token = "n0rmal-T0ken_for.test";  // one character short
  // A rejected CLAIM records nothing: the right token still gets NEW.
  EXPECT_THAT(CheckOne(wrong, "https://b.example/", v1::CLAIM_MODE_CLAIM),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("invalid bearer token")));
  ClientOptions right;
  right.bearer_token = kToken;
  v1::UrlVerdict verdict = v1::URL_VERDICT_UNSPECIFIED;
  EXPECT_THAT(CheckOne(right, "https://b.example/", v1::CLAIM_MODE_CLAIM, &verdict), IsOk());
  EXPECT_EQ(verdict, v1::URL_VERDICT_NEW);

  grpc::health::v1::HealthCheckResponse resp;
  ASSERT_TRUE(
      Health(grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()), &resp)
          .ok());
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  // Reflection is not exempt.
  auto reflection = grpc::reflection::v1alpha::ServerReflection::NewStub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = reflection->ServerReflectionInfo(&ctx);
  grpc::reflection::v1alpha::ServerReflectionRequest req;
  req.set_list_services("");
  stream->Write(req);  // may fail once the call is rejected
  grpc::reflection::v1alpha::ServerReflectionResponse reflection_resp;
  while (stream->Read(&reflection_resp)) {
    EXPECT_EQ(reflection_resp.list_services_response().service_size(), 0)
        << "reflection answered without a token";
  }
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(E2eSecurityTest, TokenOverTlsAndAdminPrefix) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--auth_token_file=" + pki_->token);
  flags.push_back("--admin_token_file=" + pki_->admin_token);
  Start(flags);
  ClientOptions options = Tls(pki_->ca);
  EXPECT_THAT(CheckOne(options), StatusIs(absl::StatusCode::kUnauthenticated));
  options.bearer_token = kAdminToken;  // the admin token is for admin calls only
  EXPECT_THAT(CheckOne(options), StatusIs(absl::StatusCode::kUnauthenticated));
  options.bearer_token = kToken;
  EXPECT_THAT(CheckOne(options), IsOk());
}

TEST_F(E2eSecurityTest, AdminMethodsNeedTheAdminToken) {
  Start({"--auth_token_file=" + pki_->token, "--admin_token_file=" + pki_->admin_token});
  const std::string method = "/dedupd.v1.Admin/Stats";
  EXPECT_EQ(CallMethod(method, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(CallMethod(method, kToken).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(CallMethod(method, kAdminToken).error_code(), grpc::StatusCode::OK);
  EXPECT_EQ(CallMethod("/dedupd.v1.Dedup/NoSuchMethod", "").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);

  // A rejected Backup does no work: gRPC 1.51 runs the handler of a call the
  // interceptor cancelled, so the handler's own check must stop it.
  v1::BackupRequest backup;
  backup.set_directory(dir_ + "/backup-rejected");
  EXPECT_EQ(CallMethod("/dedupd.v1.Admin/Backup", kToken, backup.SerializeAsString()).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_FALSE(std::filesystem::exists(backup.directory()));
  backup.set_directory(dir_ + "/backup-accepted");
  EXPECT_EQ(
      CallMethod("/dedupd.v1.Admin/Backup", kAdminToken, backup.SerializeAsString()).error_code(),
      grpc::StatusCode::OK);
  EXPECT_TRUE(std::filesystem::exists(backup.directory()));
}

TEST_F(E2eSecurityTest, HealthListenServesPlaintextHealthOnly) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--tls_client_ca_file=" + pki_->ca);
  flags.push_back("--auth_token_file=" + pki_->token);
  flags.push_back("--health_listen=127.0.0.1:0");
  Start(flags);
  const int port = LoggedPort(server_->Logs(), "health");
  ASSERT_GT(port, 0) << server_->Logs();
  ASSERT_NE(port, server_->port());
  const std::string health_address = absl::StrCat("127.0.0.1:", port);
  auto channel = grpc::CreateChannel(health_address, grpc::InsecureChannelCredentials());
  grpc::health::v1::HealthCheckResponse resp;
  ASSERT_TRUE(Health(channel, &resp).ok());
  EXPECT_EQ(resp.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  // Nothing else is served there, token or not.
  auto stub = v1::Dedup::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  ctx.AddMetadata("authorization", absl::StrCat("Bearer ", kToken));
  v1::CheckUrlRequest req;
  req.add_items()->set_url("https://c.example/");
  v1::CheckUrlResponse check;
  EXPECT_EQ(stub->CheckUrl(&ctx, req, &check).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  // Not even reflection, which the process-wide plugin adds to every server.
  auto reflection = grpc::reflection::v1alpha::ServerReflection::NewStub(channel);
  grpc::ClientContext rctx;
  rctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stream = reflection->ServerReflectionInfo(&rctx);
  grpc::reflection::v1alpha::ServerReflectionRequest rreq;
  rreq.set_list_services("");
  stream->Write(rreq);  // may fail once the call is rejected
  grpc::reflection::v1alpha::ServerReflectionResponse rresp;
  while (stream->Read(&rresp)) {
    EXPECT_EQ(rresp.list_services_response().service_size(), 0) << "reflection answered";
  }
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(server_->Logs(),
              HasSubstr("gRPC port: mutual TLS (client certificates required), bearer token "
                        "required"));

  // The main port still needs TLS with a client certificate.
  EXPECT_THAT(CheckOne(ClientOptions()), StatusIs(absl::StatusCode::kUnavailable));

  // A clean stop takes the health server down with the main one.
  absl::StatusOr<int> code = server_->Terminate();
  ASSERT_THAT(code, IsOk());
  EXPECT_EQ(*code, 0) << server_->Logs();
}

TEST_F(E2eSecurityTest, BadStartupConfigsExitWithAClearMessage) {
  struct Case {
    const char* name;
    std::vector<std::string> flags;
    std::string message;
  };
  const std::string missing = pki_->dir + "/missing.pem";
  const Case cases[] = {
      {"cert without key", {"--tls_cert_file=" + pki_->server_cert}, "--tls_key_file"},
      {"key without cert", {"--tls_key_file=" + pki_->server_key}, "--tls_cert_file"},
      {"client CA without TLS", {"--tls_client_ca_file=" + pki_->ca}, "--tls_client_ca_file"},
      {"unreadable cert",
       {"--tls_cert_file=" + missing, "--tls_key_file=" + pki_->server_key},
       missing},
      {"key file is a directory",
       {"--tls_cert_file=" + pki_->server_cert, "--tls_key_file=" + pki_->dir},
       "--tls_key_file: " + pki_->dir},
      {"not a certificate",
       {"--tls_cert_file=" + pki_->garbage, "--tls_key_file=" + pki_->server_key},
       "no PEM certificate"},
      {"key of another certificate",
       {"--tls_cert_file=" + pki_->server_cert, "--tls_key_file=" + pki_->other_server_key},
       "is not the key of the certificate"},
      {"bad client CA",
       {"--tls_cert_file=" + pki_->server_cert, "--tls_key_file=" + pki_->server_key,
        "--tls_client_ca_file=" + pki_->garbage},
       "--tls_client_ca_file=" + pki_->garbage},
      {"empty token file", {"--auth_token_file=" + pki_->empty_token}, "is empty"},
      {"missing token file", {"--auth_token_file=" + missing}, missing},
      {"empty admin token file", {"--admin_token_file=" + pki_->empty_token}, "--admin_token_file"},
      {"bad health address", {"--health_listen=nonsense"}, "--health_listen"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<std::string> argv = {DEDUPD_BINARY, "--listen=127.0.0.1:0",
                                     "--data_dir=" + dir_ + "/data"};
    argv.insert(argv.end(), c.flags.begin(), c.flags.end());
    absl::StatusOr<testing::CommandResult> r = RunCommand(argv, "");
    ASSERT_THAT(r, IsOk());
    EXPECT_NE(r->exit_code, 0);
    EXPECT_THAT(r->err, HasSubstr(c.message));
    EXPECT_THAT(r->err, ::testing::Not(HasSubstr("serving on")));
  }
}

TEST_F(E2eSecurityTest, DedupctlWithTlsAndToken) {
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--auth_token_file=" + pki_->token);
  Start(flags);
  auto r =
      RunCommand({DEDUPCTL_BINARY, "url", "check", "--server", server_->address(), "--tls_ca_file",
                  pki_->ca, "--token_file", pki_->token, "https://d.example/x"},
                 "");
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_THAT(r->out, HasSubstr("\"verdict\":\"NEW\""));

  auto no_token =
      RunCommand({DEDUPCTL_BINARY, "url", "peek", "--server", server_->address(),
                  "--tls_ca_file=" + pki_->ca, "--deadline", "20", "https://d.example/x"},
                 "");
  ASSERT_THAT(no_token, IsOk());
  EXPECT_EQ(no_token->exit_code, 2);
  EXPECT_THAT(no_token->err, HasSubstr("authorization: Bearer"));

  auto no_tls = RunCommand({DEDUPCTL_BINARY, "url", "peek", "--server", server_->address(),
                            "--token_file", pki_->token, "--deadline", "20", "https://d.example/x"},
                           "");
  ASSERT_THAT(no_tls, IsOk());
  EXPECT_EQ(no_tls->exit_code, 2);

  auto empty_token =
      RunCommand({DEDUPCTL_BINARY, "url", "peek", "--server", server_->address(), "--tls_ca_file",
                  pki_->ca, "--token_file", pki_->empty_token, "https://d.example/x"},
                 "");
  ASSERT_THAT(empty_token, IsOk());
  EXPECT_EQ(empty_token->exit_code, 2);
  EXPECT_THAT(empty_token->err, HasSubstr("--token_file"));
}

}  // namespace
}  // namespace dedupd
