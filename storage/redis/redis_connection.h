// redis_connection.h: one connection to one Redis node, plaintext or TLS,
// for the cluster router (cluster_router.h). The router queues commands
// with Append and reads their replies in order with GetReply (a pipeline);
// it does not care which transport carries them.
//
// Plaintext is hiredis's own redisContext. TLS is ours: Debian 12 ships
// hiredis 0.14, which has no TLS (hiredis_ssl came with hiredis 1.0), but
// it exposes its RESP parser (redisReader) and command formatting
// (redisFormatCommandArgv); the TLS connection formats commands with
// hiredis, writes them with SSL_write over a TCP socket, and feeds the
// bytes SSL_read returns to a redisReader. Replies are hiredis redisReply
// trees either way.
//
// Example:
//   TlsOptions tls;
//   tls.enabled = true;
//   tls.ca_pem = ReadFile("/etc/dedupd/redis-ca.pem");
//   absl::StatusOr<std::shared_ptr<const TlsClientContext>> ctx = TlsClientContext::Create(tls);
//   ConnectOptions options;
//   options.host = "10.0.0.5";
//   options.port = 6379;
//   options.tls = *ctx;
//   absl::StatusOr<std::unique_ptr<RedisConnection>> c = ConnectRedis(options);
//   (*c)->Append({"SET", "k", "v"});
//   (*c)->Append({"GET", "k"});
//   absl::StatusOr<ReplyPtr> ok = (*c)->GetReply();     // +OK
//   absl::StatusOr<ReplyPtr> value = (*c)->GetReply();  // "v"
//
// Thread safety: a RedisConnection is not thread-safe (the router guards
// each with its node's mutex). A TlsClientContext is immutable after
// Create and may be shared by any number of connections and threads.
#ifndef DEDUPD_STORAGE_REDIS_REDIS_CONNECTION_H_
#define DEDUPD_STORAGE_REDIS_REDIS_CONNECTION_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

// hiredis's and OpenSSL's types; only storage/redis/*.cc include them.
struct redisReply;
struct ssl_ctx_st;

namespace dedupd::redis {

// ReplyDeleter / ReplyPtr: an owned hiredis reply (freeReplyObject).
struct ReplyDeleter {
  void operator()(redisReply* r) const;
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// TlsOptions: TLS from the router to every node. PEM contents, not paths:
// the caller reads the files (dedupd's main.cc does, at start-up).
struct TlsOptions {
  // Speak TLS to every node (the nodes' tls-port). Default: false
  // (plaintext; the other fields must then be empty).
  bool enabled = false;
  // CA certificates (PEM, one or more) that the nodes' certificates must
  // chain to. Empty: the system's trust store (OpenSSL's default paths).
  std::string ca_pem;
  // Client certificate chain (PEM, leaf first) and its unencrypted private
  // key (PEM), sent when a node asks (mutual TLS: tls-auth-clients). Both
  // or neither. Default: none.
  std::string cert_pem;
  std::string key_pem;
  // The name every node's certificate must carry (subjectAltName DNS or IP
  // entry; the common name when there is no DNS entry, as OpenSSL checks
  // host names). Empty: each node's own host as the router reaches it (the
  // seeds, CLUSTER SLOTS, MOVED), usually an IP address. A DNS name is
  // also sent as SNI. Default: empty.
  std::string server_name;
};

// TlsClientContext: an OpenSSL client context (SSL_CTX) built once from
// TlsOptions and shared by every connection: TLS 1.2 or later, peer
// verification on, the CA store and client certificate loaded.
class TlsClientContext {
 public:
  // Create parses `options`' PEM data. Errors (InvalidArgument, naming
  // what is wrong and OpenSSL's reason): enabled is false; a CA PEM with
  // no certificate; only one of cert_pem/key_pem; a certificate or key
  // that does not parse (or an encrypted key); a key that is not the
  // certificate's.
  static absl::StatusOr<std::shared_ptr<const TlsClientContext>> Create(const TlsOptions& options);

  ~TlsClientContext();
  TlsClientContext(const TlsClientContext&) = delete;
  TlsClientContext& operator=(const TlsClientContext&) = delete;

  ssl_ctx_st* ssl_ctx() const { return ctx_; }
  // The name to verify instead of each node's host ("" = the node's host).
  const std::string& server_name() const { return server_name_; }

 private:
  TlsClientContext(ssl_ctx_st* ctx, std::string server_name)
      : ctx_(ctx), server_name_(std::move(server_name)) {}

  ssl_ctx_st* const ctx_;  // owned
  const std::string server_name_;
};

// ConnectOptions: where and how to connect.
struct ConnectOptions {
  std::string host;  // IPv4 address or host name
  int port = 0;
  // Bound on the TCP connect, and with TLS on each read or write of the
  // handshake and of the PING that follows it. Default: 1 s.
  absl::Duration connect_timeout = absl::Seconds(1);
  // Bound on each socket read or write afterwards (SO_RCVTIMEO /
  // SO_SNDTIMEO). Default: 2 s.
  absl::Duration io_timeout = absl::Seconds(2);
  // Null: plaintext (hiredis). Else TLS with this context.
  std::shared_ptr<const TlsClientContext> tls;
};

// RedisConnection: an open connection to one node.
class RedisConnection {
 public:
  virtual ~RedisConnection() = default;

  // Append queues `argv` as one command; nothing is sent until GetReply.
  // REQUIRES: argv non-empty.
  virtual void Append(const std::vector<std::string>& argv) = 0;

  // GetReply sends every command queued so far (if any), then reads the
  // next reply. A Redis error reply is a reply, not an error. Errors,
  // after which the connection is unusable (close it): Unavailable with
  // what happened, lowercase and without the node's name ("connection
  // reset by peer", "connection closed by the server", "no reply within
  // the command timeout (2s)", "protocol error: ..."); FailedPrecondition
  // when the node's TLS layer refused us (an alert such as "tlsv13 alert
  // certificate required": it wants a client certificate it can verify).
  virtual absl::StatusOr<ReplyPtr> GetReply() = 0;
};

// ConnectRedis opens a connection (TLS: and completes the handshake, then
// sends PING and reads its answer, whatever it is, so that a node that
// rejects the client certificate after a TLS 1.3 handshake fails here, not
// at the first command). Errors, without the node's name:
//   Unavailable — the TCP connect failed or timed out ("connection
//     refused"), the handshake was cut short or timed out;
//   FailedPrecondition — the node's certificate did not verify
//     ("TLS: the server's certificate did not verify for 127.0.0.1:
//     unable to get local issuer certificate"), or the node refused ours.
absl::StatusOr<std::unique_ptr<RedisConnection>> ConnectRedis(const ConnectOptions& options);

}  // namespace dedupd::redis

#endif  // DEDUPD_STORAGE_REDIS_REDIS_CONNECTION_H_
