#include "storage/redis/redis_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace dedupd::redis {

void ReplyDeleter::operator()(redisReply* r) const { freeReplyObject(r); }

namespace {

timeval Timeval(absl::Duration d) { return absl::ToTimeval(std::max(d, absl::Milliseconds(1))); }

// Lowercase: hiredis and strerror write sentences ("Connection refused");
// the router's messages continue one ("redis node X: connection refused").
std::string Lower1(std::string s) {
  if (!s.empty()) s[0] = absl::ascii_tolower(s[0]);
  return s;
}

std::string TimeoutText(absl::Duration timeout) {
  return absl::StrCat("no reply within the command timeout (", absl::FormatDuration(timeout), ")");
}

// ArgvView: a command's arguments as the (pointer, length) arrays hiredis's
// *CommandArgv functions take; views into `argv`, which must outlive it.
struct ArgvView {
  explicit ArgvView(const std::vector<std::string>& argv) {
    args.reserve(argv.size());
    lens.reserve(argv.size());
    for (const std::string& a : argv) {
      args.push_back(a.data());
      lens.push_back(a.size());
    }
  }
  int argc() const { return static_cast<int>(args.size()); }

  std::vector<const char*> args;
  std::vector<size_t> lens;
};

// ---------------------------------------------------------------- plaintext

// PlainConnection: hiredis's blocking redisContext, as the router has
// always used it (redisAppendCommandArgv buffers; redisGetReply flushes
// the buffer, then reads).
class PlainConnection final : public RedisConnection {
 public:
  PlainConnection(redisContext* ctx, absl::Duration io_timeout)
      : ctx_(ctx), io_timeout_(io_timeout) {}
  ~PlainConnection() override { redisFree(ctx_); }

  void Append(const std::vector<std::string>& argv) override {
    ArgvView view(argv);
    redisAppendCommandArgv(ctx_, view.argc(), view.args.data(), view.lens.data());
  }

  absl::StatusOr<ReplyPtr> GetReply() override {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) == REDIS_OK && raw != nullptr) {
      return ReplyPtr(static_cast<redisReply*>(raw));
    }
    std::string what = ctx_->errstr[0] != '\0' ? ctx_->errstr : "connection lost";
    // A socket timeout (SO_RCVTIMEO) reads as EAGAIN's text; say what it is.
    if (absl::StrContains(what, "temporarily unavailable")) {
      return absl::UnavailableError(TimeoutText(io_timeout_));
    }
    return absl::UnavailableError(Lower1(what));
  }

 private:
  redisContext* const ctx_;
  const absl::Duration io_timeout_;
};

absl::StatusOr<std::unique_ptr<RedisConnection>> ConnectPlain(const ConnectOptions& options) {
  redisContext* c =
      redisConnectWithTimeout(options.host.c_str(), options.port, Timeval(options.connect_timeout));
  if (c == nullptr) return absl::UnavailableError("out of memory");
  if (c->err != 0) {
    absl::Status s = absl::UnavailableError(Lower1(c->errstr));
    redisFree(c);
    return s;
  }
  redisSetTimeout(c, Timeval(options.io_timeout));
  redisEnableKeepAlive(c);
  return std::unique_ptr<RedisConnection>(new PlainConnection(c, options.io_timeout));
}

// ---------------------------------------------------------------- TLS

struct SslDeleter {
  void operator()(SSL* s) const { SSL_free(s); }
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
  void operator()(BIO* b) const { BIO_free(b); }
  void operator()(X509* x) const { X509_free(x); }
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(redisReader* r) const { redisReaderFree(r); }
};

// OpenSslReason pops OpenSSL's error queue into one line ("no start line"
// for a file that is not PEM); `fallback` when the queue is empty.
std::string OpenSslReason(absl::string_view fallback) {
  std::string reason;
  while (unsigned long err = ERR_get_error()) {  // NOLINT(runtime/int): OpenSSL's type
    const char* text = ERR_reason_error_string(err);
    if (!reason.empty()) reason += "; ";
    reason += text != nullptr ? text : absl::StrCat("error ", err);
  }
  return reason.empty() ? std::string(fallback) : reason;
}

// PeerAlerted: the first queued error is an alert the peer sent (OpenSSL
// reports a received alert as reason SSL_AD_REASON_OFFSET + its code):
// the node refused our side of the handshake, which waiting will not fix.
bool PeerAlerted() {
  const unsigned long err = ERR_peek_error();  // NOLINT(runtime/int): OpenSSL's type
  return err != 0 && ERR_GET_LIB(err) == ERR_LIB_SSL && ERR_GET_REASON(err) >= SSL_AD_REASON_OFFSET;
}

// Never prompt for a passphrase on a terminal: an encrypted key is an error.
int NoPassphrase(char*, int, int, void*) { return -1; }

std::unique_ptr<BIO, SslDeleter> MemBio(const std::string& pem) {
  return std::unique_ptr<BIO, SslDeleter>(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// ReadCerts parses every PEM certificate in `pem`.
std::vector<std::unique_ptr<X509, SslDeleter>> ReadCerts(const std::string& pem) {
  std::unique_ptr<BIO, SslDeleter> bio = MemBio(pem);
  std::vector<std::unique_ptr<X509, SslDeleter>> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr)) {
    certs.emplace_back(cert);
  }
  return certs;
}

// SetTimeouts bounds each blocking read and write on `fd`.
void SetTimeouts(int fd, absl::Duration timeout) {
  const timeval tv = Timeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// TcpConnect connects to host:port within `timeout` (a non-blocking
// connect, then poll), trying each address the name resolves to; returns
// a blocking socket with TCP_NODELAY and keep-alive on, as hiredis's.
absl::StatusOr<int> TcpConnect(const std::string& host, int port, absl::Duration timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = absl::StrCat(port);
  if (const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("resolve ", host, ": ", gai_strerror(rc)));
  }
  std::string last_error = "no address";
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    const int s =
        socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (s < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    int err = 0;
    if (connect(s, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        pollfd p{s, POLLOUT, 0};
        const int ms = static_cast<int>(absl::ToInt64Milliseconds(timeout));
        int n = 0;
        do {
          n = poll(&p, 1, std::max(ms, 1));
        } while (n < 0 && errno == EINTR);
        if (n == 0) {
          err = ETIMEDOUT;
        } else if (n < 0) {
          err = errno;
        } else {
          socklen_t len = sizeof(err);
          if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
        }
      }
    }
    if (err != 0) {
      last_error = err == ETIMEDOUT
                       ? absl::StrCat("connect timed out after ", absl::FormatDuration(timeout))
                       : std::strerror(err);
      close(s);
      continue;
    }
    fd = s;
  }
  freeaddrinfo(found);
  if (fd < 0) return absl::UnavailableError(Lower1(last_error));
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  return fd;
}

// TlsConnection: RESP over OpenSSL on a blocking socket whose reads and
// writes time out (SO_RCVTIMEO/SO_SNDTIMEO, as hiredis sets them for
// plaintext). Commands are formatted by hiredis into `out_`; replies are
// parsed by a hiredis redisReader fed with what SSL_read returns.
class TlsConnection final : public RedisConnection {
 public:
  // Takes `fd` and `ssl` (set on it); both are closed by the destructor.
  // Until Connected, reads and writes are bounded by `connect_timeout`.
  TlsConnection(int fd, std::unique_ptr<SSL, SslDeleter> ssl, absl::Duration connect_timeout)
      : fd_(fd), ssl_(std::move(ssl)), reader_(redisReaderCreate()), timeout_(connect_timeout) {
    SetTimeouts(fd_, connect_timeout);
  }
  ~TlsConnection() override {
    // No close_notify: the connection is dropped either way, and a
    // SSL_shutdown on a broken socket could block for the write timeout.
    ssl_.reset();
    close(fd_);
  }

  void Append(const std::vector<std::string>& argv) override {
    ArgvView view(argv);
    char* cmd = nullptr;
    const int len = redisFormatCommandArgv(&cmd, view.argc(), view.args.data(), view.lens.data());
    if (len < 0) {
      // Out of memory: hiredis formats nothing. Poison the connection so
      // GetReply fails instead of answering the next command's reply.
      broken_ = absl::UnavailableError("out of memory formatting a command");
      return;
    }
    out_.append(cmd, static_cast<size_t>(len));
    redisFreeCommand(cmd);
  }

  absl::StatusOr<ReplyPtr> GetReply() override {
    if (!broken_.ok()) return broken_;
    if (absl::Status s = Flush(); !s.ok()) {
      // A node that refuses us sends an alert, then closes: a write that
      // races the close fails "connection reset" while the alert (the
      // reason) waits unread. Read it; the kernel hands out data received
      // before the reset.
      if (absl::IsUnavailable(s) && !timed_out_) {
        char buf[512];
        ERR_clear_error();
        const int n = SSL_read(ssl_.get(), buf, sizeof(buf));
        if (n <= 0) {
          absl::Status why = IoError(n, "read");
          if (absl::IsFailedPrecondition(why)) s = why;
        }
      }
      return broken_ = s;
    }
    for (;;) {
      void* raw = nullptr;
      if (redisReaderGetReply(reader_.get(), &raw) != REDIS_OK) {
        return broken_ = absl::UnavailableError(
                   absl::StrCat("protocol error: ", Lower1(reader_->errstr)));
      }
      if (raw != nullptr) return ReplyPtr(static_cast<redisReply*>(raw));
      char buf[16 * 1024];
      ERR_clear_error();
      const int n = SSL_read(ssl_.get(), buf, sizeof(buf));
      if (n <= 0) return broken_ = IoError(n, "read");
      if (redisReaderFeed(reader_.get(), buf, static_cast<size_t>(n)) != REDIS_OK) {
        return broken_ = absl::UnavailableError("out of memory reading a reply");
      }
    }
  }

  // Handshake runs the TLS handshake, verifying the node's certificate
  // for `name` (set on the SSL already).
  absl::Status Handshake(absl::string_view name) {
    ERR_clear_error();
    const int rc = SSL_connect(ssl_.get());
    if (rc == 1) {
      phase_ = Phase::kPing;
      return absl::OkStatus();
    }
    const long verify = SSL_get_verify_result(ssl_.get());  // NOLINT(runtime/int): OpenSSL's type
    if (verify != X509_V_OK) {
      ERR_clear_error();
      return absl::FailedPreconditionError(
          absl::StrCat("TLS: the server's certificate did not verify for ", name, ": ",
                       X509_verify_cert_error_string(verify)));
    }
    if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_WRONG_VERSION_NUMBER) {
      return absl::FailedPreconditionError(
          absl::StrCat("TLS handshake: ", OpenSslReason("wrong version number"),
                       " (is this the node's TLS port, not its plaintext port?)"));
    }
    return IoError(rc, "handshake");
  }

  // Connected: connecting is over; reads and writes are bounded by
  // `io_timeout` from now on.
  void Connected(absl::Duration io_timeout) {
    phase_ = Phase::kReady;
    timeout_ = io_timeout;
    SetTimeouts(fd_, io_timeout);
  }

 private:
  // Flush writes `out_` whole (SSL_write without partial writes).
  absl::Status Flush() {
    size_t done = 0;
    while (done < out_.size()) {
      const size_t chunk = std::min<size_t>(out_.size() - done, 1 << 30);
      ERR_clear_error();
      const int n = SSL_write(ssl_.get(), out_.data() + done, static_cast<int>(chunk));
      if (n <= 0) return IoError(n, "write");
      done += static_cast<size_t>(n);
    }
    out_.clear();
    return absl::OkStatus();
  }

  std::string TimedOut() const {
    switch (phase_) {
      case Phase::kHandshake:
        // A plaintext port looks like this too: redis-server waits for the
        // end of a line that a ClientHello never sends.
        return absl::StrCat("TLS handshake: no answer within the connect timeout (",
                            absl::FormatDuration(timeout_), "; is this the node's TLS port?)");
      case Phase::kPing:
        return absl::StrCat(
            "no answer to PING after the TLS handshake within the connect timeout (",
            absl::FormatDuration(timeout_), ")");
      case Phase::kReady:
        break;
    }
    return TimeoutText(timeout_);
  }

  // IoError: what a failed SSL_connect/SSL_read/SSL_write (returning `rc`)
  // means.
  absl::Status IoError(int rc, absl::string_view op) {
    const int saved_errno = errno;
    switch (SSL_get_error(ssl_.get(), rc)) {
      case SSL_ERROR_ZERO_RETURN:
        return absl::UnavailableError("connection closed by the server");
      case SSL_ERROR_WANT_READ:
      case SSL_ERROR_WANT_WRITE:
        // A blocking socket says "want" only when SO_RCVTIMEO/SO_SNDTIMEO
        // expired (EAGAIN).
        timed_out_ = true;
        return absl::UnavailableError(TimedOut());
      case SSL_ERROR_SYSCALL:
        if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK) {
          timed_out_ = true;
          return absl::UnavailableError(TimedOut());
        }
        if (saved_errno == 0) return absl::UnavailableError("connection closed by the server");
        return absl::UnavailableError(Lower1(std::strerror(saved_errno)));
      case SSL_ERROR_SSL:
        if (PeerAlerted()) {
          return absl::FailedPreconditionError(
              absl::StrCat("TLS: the server refused the connection: ", OpenSslReason("alert"),
                           SSL_get_certificate(ssl_.get()) == nullptr
                               ? " (no client certificate was sent; does the node require one?)"
                               : " (the node did not accept the client certificate)"));
        }
        if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
          ERR_clear_error();
          return absl::UnavailableError("connection closed by the server");
        }
        return absl::UnavailableError(absl::StrCat("TLS ", op, ": ", OpenSslReason("error")));
      default:
        return absl::UnavailableError(absl::StrCat("TLS ", op, ": ", OpenSslReason("error")));
    }
  }

 private:
  const int fd_;
  std::unique_ptr<SSL, SslDeleter> ssl_;
  std::unique_ptr<redisReader, SslDeleter> reader_;
  // Which timeout bounds reads and writes now, for the message.
  enum class Phase { kHandshake, kPing, kReady } phase_ = Phase::kHandshake;
  absl::Duration timeout_;  // of each read and write
  std::string out_;         // formatted commands not sent yet
  absl::Status broken_;     // set once the connection fails; it stays failed
  bool timed_out_ = false;  // a read or write ran out of time
};

bool IsIpLiteral(const std::string& name) {
  in6_addr addr6;
  in_addr addr4;
  return inet_pton(AF_INET, name.c_str(), &addr4) == 1 ||
         inet_pton(AF_INET6, name.c_str(), &addr6) == 1;
}

absl::StatusOr<std::unique_ptr<RedisConnection>> ConnectTls(const ConnectOptions& options) {
  absl::StatusOr<int> fd = TcpConnect(options.host, options.port, options.connect_timeout);
  if (!fd.ok()) return fd.status();
  ERR_clear_error();
  std::unique_ptr<SSL, SslDeleter> ssl(SSL_new(options.tls->ssl_ctx()));
  if (ssl == nullptr || SSL_set_fd(ssl.get(), *fd) != 1) {
    close(*fd);
    return absl::InternalError(absl::StrCat("TLS: SSL_new: ", OpenSslReason("out of memory")));
  }
  const std::string& name =
      options.tls->server_name().empty() ? options.host : options.tls->server_name();
  // Verify the name: an IP address against the certificate's IP entries,
  // a host name against its DNS entries (then sent as SNI too, which an IP
  // may not be: RFC 6066, section 3).
  bool named = false;
  if (IsIpLiteral(name)) {
    named = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), name.c_str()) == 1;
  } else {
    SSL_set_hostflags(ssl.get(), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    named = SSL_set1_host(ssl.get(), name.c_str()) == 1 &&
            SSL_set_tlsext_host_name(ssl.get(), name.c_str()) == 1;
  }
  // From here on the connection owns the socket and the SSL.
  auto conn = std::make_unique<TlsConnection>(*fd, std::move(ssl), options.connect_timeout);
  if (!named) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS: \"", name, "\" cannot be verified (", OpenSslReason("bad name"), ")"));
  }
  if (absl::Status s = conn->Handshake(name); !s.ok()) return s;
  // A TLS 1.3 server checks the client's certificate after the client has
  // finished its handshake, and says no with an alert the client reads
  // only then: one round trip here makes that refusal a connect error.
  // Whatever PING answers (PONG, NOAUTH) proves the session was accepted.
  conn->Append({"PING"});
  if (absl::StatusOr<ReplyPtr> pong = conn->GetReply(); !pong.ok()) return pong.status();
  conn->Connected(options.io_timeout);
  return std::unique_ptr<RedisConnection>(std::move(conn));
}

}  // namespace

// ---------------------------------------------------------------- TlsClientContext

TlsClientContext::~TlsClientContext() { SSL_CTX_free(ctx_); }

absl::StatusOr<std::shared_ptr<const TlsClientContext>> TlsClientContext::Create(
    const TlsOptions& options) {
  if (!options.enabled) return absl::InvalidArgumentError("redis TLS: not enabled");
  if (options.cert_pem.empty() != options.key_pem.empty()) {
    return absl::InvalidArgumentError(
        "redis TLS: a client certificate needs its key and a key its certificate (both or "
        "neither)");
  }
  ERR_clear_error();
  std::unique_ptr<SSL_CTX, SslDeleter> ctx(SSL_CTX_new(TLS_client_method()));
  if (ctx == nullptr) {
    return absl::InternalError(absl::StrCat("redis TLS: SSL_CTX_new: ", OpenSslReason("failed")));
  }
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (options.ca_pem.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "redis TLS: cannot load the system's CA certificates: ", OpenSslReason("failed")));
    }
  } else {
    std::vector<std::unique_ptr<X509, SslDeleter>> cas = ReadCerts(options.ca_pem);
    if (cas.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "redis TLS: the CA file holds no PEM certificate (", OpenSslReason("empty"), ")"));
    }
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    for (const auto& ca : cas) {
      if (X509_STORE_add_cert(store, ca.get()) != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("redis TLS: cannot add a CA certificate: ", OpenSslReason("failed")));
      }
    }
  }
  ERR_clear_error();  // the end of a PEM input is reported as an error too
  if (!options.cert_pem.empty()) {
    std::vector<std::unique_ptr<X509, SslDeleter>> chain = ReadCerts(options.cert_pem);
    if (chain.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("redis TLS: the client certificate file holds no PEM certificate (",
                       OpenSslReason("empty"), ")"));
    }
    ERR_clear_error();
    if (SSL_CTX_use_certificate(ctx.get(), chain[0].get()) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("redis TLS: cannot use the client certificate: ", OpenSslReason("failed")));
    }
    for (size_t i = 1; i < chain.size(); ++i) {
      if (SSL_CTX_add1_chain_cert(ctx.get(), chain[i].get()) != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "redis TLS: cannot use the client certificate's chain: ", OpenSslReason("failed")));
      }
    }
    std::unique_ptr<BIO, SslDeleter> bio = MemBio(options.key_pem);
    std::unique_ptr<EVP_PKEY, SslDeleter> key(
        PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
    if (key == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("redis TLS: the client key file holds no unencrypted PEM private key (",
                       OpenSslReason("empty"), ")"));
    }
    if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 ||
        SSL_CTX_check_private_key(ctx.get()) != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("redis TLS: the client key is not the client certificate's key (",
                       OpenSslReason("key values mismatch"), ")"));
    }
  }
  return std::shared_ptr<const TlsClientContext>(
      new TlsClientContext(ctx.release(), options.server_name));
}

// ---------------------------------------------------------------- ConnectRedis

absl::StatusOr<std::unique_ptr<RedisConnection>> ConnectRedis(const ConnectOptions& options) {
  if (options.tls == nullptr) return ConnectPlain(options);
  return ConnectTls(options);
}

}  // namespace dedupd::redis
