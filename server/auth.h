// auth.h: transport security and call authorization of the gRPC ports:
// the TLS credentials built from PEM files (checked at startup, so a bad
// file fails the start with its name and OpenSSL's reason instead of a
// later handshake failure), the bearer-token rule every call passes, and
// the gRPC server interceptor that applies it.
//
// Example:
//   TlsFiles tls{"/etc/dedupd/server.pem", "/etc/dedupd/server.key", ""};
//   absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> creds =
//       MakeServerCredentials(tls);
//   absl::StatusOr<std::string> token =
//       ReadTokenFile("auth_token_file", "/etc/dedupd/token");
//   auto authorizer = std::make_shared<CallAuthorizer>(*token, "");
//   std::vector<std::unique_ptr<
//       grpc::experimental::ServerInterceptorFactoryInterface>> factories;
//   factories.push_back(MakeAuthInterceptorFactory(authorizer));
//   builder.experimental().SetInterceptorCreators(std::move(factories));
#ifndef DEDUPD_SERVER_AUTH_H_
#define DEDUPD_SERVER_AUTH_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/support/server_interceptor.h"
#include "grpcpp/support/string_ref.h"

namespace dedupd {

// The PEM files of the main port's TLS. All empty: plaintext.
struct TlsFiles {
  // The server's certificate chain (leaf first) and its private key. Both
  // or neither.
  std::string cert_file;
  std::string key_file;
  // When set, mutual TLS: every client must present a certificate that
  // chains to a CA in this file. REQUIRES: cert_file and key_file set.
  std::string client_ca_file;
};

// MakeServerCredentials returns InsecureServerCredentials when `files` is
// all empty, else SslServerCredentials over the files' contents (with
// GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY when
// client_ca_file is set). Every file is read and parsed with OpenSSL first;
// errors name the flag and the file:
//   InvalidArgument: only one of cert/key, a client CA without them, a file
//     that holds no PEM certificate / key (or an encrypted key), a key that
//     does not match the certificate, an expired server certificate;
//   Unavailable: a file that cannot be read (path and errno text).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& files);

// ReadTokenFile reads a bearer token: the whole file minus trailing
// newlines ("\n" or "\r\n"). `flag` names the flag in messages. Errors:
// unreadable file (errno text), InvalidArgument for an empty token, or one
// with characters a gRPC metadata value cannot carry (outside printable
// ASCII, or whitespace inside).
absl::StatusOr<std::string> ReadTokenFile(absl::string_view flag, const std::string& path);

// ReadSecretFile reads a password (e.g. --redis_password_file): the whole
// file minus its trailing newlines ("\n" or "\r\n"); unlike a token it may
// hold spaces and any other byte but a line break or NUL. `flag` names the
// flag in messages, which never quote the file's content. Errors:
// unreadable file (errno text), InvalidArgument for an empty secret or one
// of several lines.
absl::StatusOr<std::string> ReadSecretFile(absl::string_view flag, const std::string& path);

// CallAuthorizer: which calls a bearer token admits. Thread-safe
// (immutable).
class CallAuthorizer {
 public:
  // The prefix of the full method names of gRPC health checking, which is
  // never authenticated (load balancers and Kubernetes probes carry no
  // token).
  static constexpr absl::string_view kHealthPrefix = "/grpc.health.v1.Health/";
  // The prefix of the admin service's methods.
  static constexpr absl::string_view kAdminPrefix = "/dedupd.v1.Admin/";

  // `token` is required of every call except health; when `admin_token` is
  // non-empty, admin calls require it instead (the normal token gets
  // PermissionDenied there). Either may be empty: an empty `token` admits
  // every call that is not an admin call with `admin_token` set.
  CallAuthorizer(std::string token, std::string admin_token);

  // Check decides one call from its full method name ("/pkg.Service/Method")
  // and its "authorization" metadata values. OK, or Unauthenticated (no
  // "authorization: Bearer <token>" header, or a wrong token) /
  // PermissionDenied (a valid non-admin token on an admin method), each
  // with a message that says what is expected. Tokens are compared in
  // constant time.
  absl::Status Check(absl::string_view method,
                     const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) const;

 private:
  const std::string token_;
  const std::string admin_token_;
};

// MakeAuthInterceptorFactory: a server interceptor factory that runs
// `authorizer->Check` on every call once its metadata has arrived, and
// rejects a call that fails with that status. REQUIRES: `authorizer` is
// not null.
//
// What it guarantees: the client of a rejected call gets the rejection's
// code and message, and no response message. What it cannot: gRPC 1.51
// still invokes the handler of a cancelled call (only IsCancelled() may
// tell, and not at once). So a service whose handlers do work (write,
// delete, read the store) also calls Check at the top of each handler,
// before any work, as DedupService does:
//   if (absl::Status s = authorizer->Check("/dedupd.v1.Admin/",
//                                          context->client_metadata());
//       !s.ok()) { reactor->Finish(ToGrpcStatus(s)); return reactor; }
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeAuthInterceptorFactory(
    std::shared_ptr<const CallAuthorizer> authorizer);

// MakeHealthOnlyInterceptorFactory: a factory whose interceptor rejects
// every call but grpc.health.v1 with Unimplemented, for the plaintext
// --health_listen server (the reflection plugin, registered process-wide,
// would otherwise answer there too).
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeHealthOnlyInterceptorFactory();

}  // namespace dedupd

#endif  // DEDUPD_SERVER_AUTH_H_
