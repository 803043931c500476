// RedisConnection (redis_connection.h) against an in-process TLS server on
// 127.0.0.1 that speaks just enough RESP (PING, ECHO, BIG n, SLEEP), with
// certificates made by the test: a pipeline of replies parsed over TLS
// (one larger than a TLS record), the node's IP and DNS names verified, a
// wrong CA and a wrong name refused clearly, a server that requires a
// client certificate, a silent server timing out, and TlsClientContext's
// checks of its PEM input. The router over a real TLS cluster is in
// cluster_router_tls_redis_test.cc.
#include "storage/redis/redis_connection.h"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_certs.h"

namespace dedupd::redis {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::LeafUse;
using ::dedupd::testing::MakeTestCa;
using ::dedupd::testing::MakeTestLeaf;
using ::dedupd::testing::StatusIs;
using ::dedupd::testing::TestCert;
using ::testing::AllOf;
using ::testing::HasSubstr;

// TinyTlsServer: a TLS server on 127.0.0.1:<ephemeral> that serves one
// connection at a time on its own thread. Commands (RESP arrays of bulk
// strings, as hiredis formats them): PING -> +PONG; ECHO x -> x; BIG n ->
// n bytes of 'x'; SLEEP -> no reply; anything else -> -ERR.
class TinyTlsServer {
 public:
  struct Options {
    TestCert cert;
    // When set, clients must present a certificate signed by this CA.
    std::string client_ca_pem;
    // Accept TCP connections but never start TLS (a hung node).
    bool no_tls = false;
  };

  explicit TinyTlsServer(Options options) : options_(std::move(options)) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listen_fd_, 8), 0);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    ctx_ = SSL_CTX_new(TLS_server_method());
    EXPECT_EQ(SSL_CTX_use_certificate(ctx_, ParseCert(options_.cert.cert_pem)), 1);
    EXPECT_EQ(SSL_CTX_use_PrivateKey(ctx_, ParseKey(options_.cert.key_pem)), 1);
    if (!options_.client_ca_pem.empty()) {
      X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), ParseCert(options_.client_ca_pem));
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    }
    if (!options_.no_tls) thread_ = std::thread([this] { Serve(); });
  }

  ~TinyTlsServer() {
    // Wakes accept() (EINVAL on a shut-down listening socket).
    shutdown(listen_fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    close(listen_fd_);
    SSL_CTX_free(ctx_);
    for (X509* x : certs_) X509_free(x);
    for (EVP_PKEY* k : keys_) EVP_PKEY_free(k);
  }

  int port() const { return port_; }

 private:
  X509* ParseCert(const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    certs_.push_back(x);
    return x;
  }
  EVP_PKEY* ParseKey(const std::string& pem) {
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    EVP_PKEY* k = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    keys_.push_back(k);
    return k;
  }

  void Serve() {
    for (;;) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) return;  // shut down
      SSL* ssl = SSL_new(ctx_);
      SSL_set_fd(ssl, fd);
      if (SSL_accept(ssl) == 1) Converse(ssl);
      SSL_free(ssl);
      close(fd);
    }
  }

  // Converse answers commands until the client goes away.
  static void Converse(SSL* ssl) {
    std::string in;
    char buf[4096];
    for (;;) {
      std::vector<std::string> argv;
      while (!ParseCommand(&in, &argv)) {
        const int n = SSL_read(ssl, buf, sizeof(buf));
        if (n <= 0) return;
        in.append(buf, static_cast<size_t>(n));
      }
      std::string reply;
      size_t big = 0;
      if (argv[0] == "PING") {
        reply = "+PONG\r\n";
      } else if (argv[0] == "ECHO" && argv.size() == 2) {
        reply = absl::StrCat("$", argv[1].size(), "\r\n", argv[1], "\r\n");
      } else if (argv[0] == "BIG" && argv.size() == 2 && absl::SimpleAtoi(argv[1], &big)) {
        reply = absl::StrCat("$", big, "\r\n", std::string(big, 'x'), "\r\n");
      } else if (argv[0] == "SLEEP") {
        continue;
      } else {
        reply = "-ERR unknown command\r\n";
      }
      if (SSL_write(ssl, reply.data(), static_cast<int>(reply.size())) <= 0) return;
    }
  }

  // ParseCommand takes one complete "*N\r\n($L\r\n<L bytes>\r\n)*N" off
  // the front of `in`; false when it is not all there yet.
  static bool ParseCommand(std::string* in, std::vector<std::string>* argv) {
    argv->clear();
    size_t pos = 0;
    auto line = [&](char type, size_t* value) {
      const size_t end = in->find("\r\n", pos);
      if (end == std::string::npos || (*in)[pos] != type) return false;
      const bool ok =
          absl::SimpleAtoi(absl::string_view(*in).substr(pos + 1, end - pos - 1), value);
      pos = end + 2;
      return ok;
    };
    size_t count = 0;
    if (in->empty() || !line('*', &count)) return false;
    for (size_t i = 0; i < count; ++i) {
      size_t len = 0;
      if (pos >= in->size() || !line('$', &len) || in->size() < pos + len + 2) return false;
      argv->push_back(in->substr(pos, len));
      pos += len + 2;
    }
    in->erase(0, pos);
    return count > 0;
  }

  Options options_;
  int listen_fd_ = -1;
  int port_ = 0;
  SSL_CTX* ctx_ = nullptr;
  std::vector<X509*> certs_;
  std::vector<EVP_PKEY*> keys_;
  std::thread thread_;
};

// Certs: a CA, a server leaf (127.0.0.1, localhost), a client leaf, and
// an unrelated CA.
struct Certs {
  TestCert ca;
  TestCert server;
  TestCert client;
  TestCert other_ca;
};

Certs MakeCerts() {
  Certs c;
  absl::StatusOr<TestCert> ca = MakeTestCa("redis test CA");
  EXPECT_THAT(ca, IsOk());
  c.ca = *ca;
  absl::StatusOr<TestCert> server = MakeTestLeaf(c.ca, "redis node", LeafUse::kServer);
  EXPECT_THAT(server, IsOk());
  c.server = *server;
  absl::StatusOr<TestCert> client = MakeTestLeaf(c.ca, "dedupd", LeafUse::kClient);
  EXPECT_THAT(client, IsOk());
  c.client = *client;
  absl::StatusOr<TestCert> other = MakeTestCa("another CA");
  EXPECT_THAT(other, IsOk());
  c.other_ca = *other;
  return c;
}

ConnectOptions TlsConnect(int port, const TlsOptions& tls) {
  ConnectOptions options;
  options.host = "127.0.0.1";
  options.port = port;
  options.connect_timeout = absl::Seconds(5);
  options.io_timeout = absl::Seconds(5);
  absl::StatusOr<std::shared_ptr<const TlsClientContext>> ctx = TlsClientContext::Create(tls);
  EXPECT_THAT(ctx, IsOk());
  if (ctx.ok()) options.tls = *ctx;
  return options;
}

TlsOptions Tls(const std::string& ca_pem) {
  TlsOptions tls;
  tls.enabled = true;
  tls.ca_pem = ca_pem;
  return tls;
}

std::string Text(const ReplyPtr& reply) { return std::string(reply->str, reply->len); }

TEST(RedisConnectionTest, PlaintextRefusedIsUnavailable) {
  ConnectOptions options;
  options.host = "127.0.0.1";
  options.port = 1;  // nothing listens on loopback port 1
  EXPECT_THAT(ConnectRedis(options),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("connection refused")));
  options.tls = TlsConnect(1, Tls("")).tls;
  EXPECT_THAT(ConnectRedis(options),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("connection refused")));
}

TEST(RedisConnectionTest, PipelineOverTlsVerifyingTheIp) {
  const Certs certs = MakeCerts();
  TinyTlsServer server({certs.server, "", false});
  absl::StatusOr<std::unique_ptr<RedisConnection>> c =
      ConnectRedis(TlsConnect(server.port(), Tls(certs.ca.cert_pem)));
  ASSERT_THAT(c, IsOk());
  (*c)->Append({"ECHO", "a b\r\n*1"});
  (*c)->Append({"BIG", "100000"});  // more than one 16 KiB TLS record
  (*c)->Append({"NOPE"});
  (*c)->Append({"PING"});
  absl::StatusOr<ReplyPtr> echo = (*c)->GetReply();
  ASSERT_THAT(echo, IsOk());
  EXPECT_EQ(Text(*echo), "a b\r\n*1");
  absl::StatusOr<ReplyPtr> big = (*c)->GetReply();
  ASSERT_THAT(big, IsOk());
  EXPECT_EQ(Text(*big), std::string(100000, 'x'));
  absl::StatusOr<ReplyPtr> err = (*c)->GetReply();
  ASSERT_THAT(err, IsOk());
  EXPECT_EQ((*err)->type, REDIS_REPLY_ERROR);
  EXPECT_EQ(Text(*err), "ERR unknown command");
  absl::StatusOr<ReplyPtr> pong = (*c)->GetReply();
  ASSERT_THAT(pong, IsOk());
  EXPECT_EQ((*pong)->type, REDIS_REPLY_STATUS);
  EXPECT_EQ(Text(*pong), "PONG");
}

TEST(RedisConnectionTest, ServerNameOverrideIsVerified) {
  const Certs certs = MakeCerts();
  TinyTlsServer server({certs.server, "", false});
  TlsOptions tls = Tls(certs.ca.cert_pem);
  tls.server_name = "localhost";  // the leaf's DNS name
  EXPECT_THAT(ConnectRedis(TlsConnect(server.port(), tls)), IsOk());
  tls.server_name = "redis.example";
  EXPECT_THAT(ConnectRedis(TlsConnect(server.port(), tls)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("certificate did not verify for redis.example"),
                             HasSubstr("hostname mismatch"))));
  tls.server_name = "10.9.8.7";
  EXPECT_THAT(
      ConnectRedis(TlsConnect(server.port(), tls)),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr("did not verify for 10.9.8.7"), HasSubstr("IP address mismatch"))));
}

TEST(RedisConnectionTest, WrongCaFailsVerification) {
  const Certs certs = MakeCerts();
  TinyTlsServer server({certs.server, "", false});
  EXPECT_THAT(ConnectRedis(TlsConnect(server.port(), Tls(certs.other_ca.cert_pem))),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("TLS: the server's certificate did not verify for "
                                       "127.0.0.1"),
                             HasSubstr("local issuer certificate"))));
}

TEST(RedisConnectionTest, ClientCertificateRequired) {
  const Certs certs = MakeCerts();
  TinyTlsServer server({certs.server, certs.ca.cert_pem, false});
  EXPECT_THAT(ConnectRedis(TlsConnect(server.port(), Tls(certs.ca.cert_pem))),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("TLS: the server refused the connection"),
                             HasSubstr("no client certificate was sent"))));
  TlsOptions tls = Tls(certs.ca.cert_pem);
  tls.cert_pem = certs.client.cert_pem;
  tls.key_pem = certs.client.key_pem;
  absl::StatusOr<std::unique_ptr<RedisConnection>> c = ConnectRedis(TlsConnect(server.port(), tls));
  ASSERT_THAT(c, IsOk());
  (*c)->Append({"PING"});
  EXPECT_THAT((*c)->GetReply(), IsOk());
}

TEST(RedisConnectionTest, TimeoutsAreNamed) {
  const Certs certs = MakeCerts();
  {
    TinyTlsServer server({certs.server, "", false});
    ConnectOptions options = TlsConnect(server.port(), Tls(certs.ca.cert_pem));
    options.io_timeout = absl::Milliseconds(200);
    absl::StatusOr<std::unique_ptr<RedisConnection>> c = ConnectRedis(options);
    ASSERT_THAT(c, IsOk());
    (*c)->Append({"SLEEP"});
    EXPECT_THAT((*c)->GetReply(),
                StatusIs(absl::StatusCode::kUnavailable,
                         HasSubstr("no reply within the command timeout (200ms)")));
    // It stays failed.
    EXPECT_THAT((*c)->GetReply(), StatusIs(absl::StatusCode::kUnavailable));
  }
  {
    // The kernel completes the TCP handshake; nothing answers the TLS one.
    TinyTlsServer silent({certs.server, "", true});
    ConnectOptions options = TlsConnect(silent.port(), Tls(certs.ca.cert_pem));
    options.connect_timeout = absl::Milliseconds(200);
    EXPECT_THAT(ConnectRedis(options),
                StatusIs(absl::StatusCode::kUnavailable,
                         HasSubstr("TLS handshake: no answer within the connect timeout "
                                   "(200ms; is this the node's TLS port?)")));
  }
}

TEST(TlsClientContextTest, ChecksItsInput) {
  const Certs certs = MakeCerts();
  TlsOptions tls;
  EXPECT_THAT(TlsClientContext::Create(tls), StatusIs(absl::StatusCode::kInvalidArgument));
  tls = Tls("not a certificate");
  EXPECT_THAT(TlsClientContext::Create(tls),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("CA file holds no PEM")));
  tls = Tls(certs.ca.cert_pem);
  tls.cert_pem = certs.client.cert_pem;
  EXPECT_THAT(TlsClientContext::Create(tls),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("both or neither")));
  tls.key_pem = certs.server.key_pem;  // another certificate's key
  EXPECT_THAT(
      TlsClientContext::Create(tls),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not the client certificate's key")));
  tls.key_pem = "garbage";
  EXPECT_THAT(TlsClientContext::Create(tls),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no unencrypted PEM")));
  tls.key_pem = certs.client.key_pem;
  EXPECT_THAT(TlsClientContext::Create(tls), IsOk());
  tls.ca_pem.clear();  // the system's trust store
  EXPECT_THAT(TlsClientContext::Create(tls), IsOk());
}

}  // namespace
}  // namespace dedupd::redis
