#include "server/auth.h"

#include <grpc/grpc.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/status_macros.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/byte_buffer.h"
#include "server/grpc_status.h"

namespace dedupd {
namespace {

// OpenSslReason pops OpenSSL's error queue into one line ("no start line"
// for a file that is not PEM); `fallback` when the queue is empty.
std::string OpenSslReason(absl::string_view fallback) {
  std::string reason;
  while (unsigned long err = ERR_get_error()) {  // NOLINT(runtime/int): OpenSSL's type
    char buf[256];
    ERR_error_string_n(err, buf, sizeof(buf));
    if (!reason.empty()) reason += "; ";
    reason += buf;
  }
  return reason.empty() ? std::string(fallback) : reason;
}

// Never prompt for a passphrase on a terminal: an encrypted key is an error.
int NoPassphrase(char*, int, int, void*) { return -1; }

struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Deleter {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyDeleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Deleter>;

// ReadFlagFile reads the file a flag names; errors say which flag.
absl::StatusOr<std::string> ReadFlagFile(absl::string_view flag, const std::string& path) {
  absl::StatusOr<std::string> data = file_io::ReadFile(path);
  if (!data.ok()) {
    return absl::Status(data.status().code(),
                        absl::StrCat("--", flag, ": ", data.status().message()));
  }
  return data;
}

// ParseCertificates parses every PEM certificate in `pem`; InvalidArgument
// naming the flag and file when there is none.
absl::StatusOr<std::vector<X509Ptr>> ParseCertificates(absl::string_view flag,
                                                       const std::string& path,
                                                       const std::string& pem) {
  ERR_clear_error();
  std::unique_ptr<BIO, BioDeleter> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  std::vector<X509Ptr> certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr)) {
    certs.emplace_back(cert);
  }
  if (certs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", path, ": no PEM certificate (",
                                                   OpenSslReason("empty file"), ")"));
  }
  ERR_clear_error();  // the end of the input is reported as an error too
  return certs;
}

// CheckServerPair checks that the key file holds an unencrypted PEM private
// key matching the leaf certificate, and that the leaf has not expired.
absl::Status CheckServerPair(const TlsFiles& files, const std::string& cert_pem,
                             const std::string& key_pem) {
  DEDUPD_ASSIGN_OR_RETURN(std::vector<X509Ptr> chain,
                          ParseCertificates("tls_cert_file", files.cert_file, cert_pem));
  ERR_clear_error();
  std::unique_ptr<BIO, BioDeleter> bio(
      BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())));
  std::unique_ptr<EVP_PKEY, PkeyDeleter> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--tls_key_file=", files.key_file,
                                                   ": no unencrypted PEM private key (",
                                                   OpenSslReason("empty file"), ")"));
  }
  if (X509_check_private_key(chain[0].get(), key.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tls_key_file=", files.key_file, " is not the key of the certificate in --tls_cert_file=",
        files.cert_file, " (", OpenSslReason("key values mismatch"), ")"));
  }
  if (X509_cmp_current_time(X509_get0_notAfter(chain[0].get())) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tls_cert_file=", files.cert_file, ": the certificate has expired"));
  }
  return absl::OkStatus();
}

// ConstantTimeEqual compares the SHA-256 digests of `a` and `b` with
// CRYPTO_memcmp, so the time taken reveals neither the matching prefix nor
// the token's length.
bool ConstantTimeEqual(absl::string_view a, absl::string_view b) {
  unsigned char da[EVP_MAX_MD_SIZE];
  unsigned char db[EVP_MAX_MD_SIZE];
  unsigned int la = 0;
  unsigned int lb = 0;
  if (EVP_Digest(a.data(), a.size(), da, &la, EVP_sha256(), nullptr) != 1 ||
      EVP_Digest(b.data(), b.size(), db, &lb, EVP_sha256(), nullptr) != 1 || la != lb) {
    return false;
  }
  return CRYPTO_memcmp(da, db, la) == 0;
}

// The interceptor. Why an interceptor: in gRPC 1.51 an AuthMetadataProcessor
// runs only under secure credentials (InsecureServerCredentials asserts on
// SetAuthMetadataProcessor), but the token must also guard a plaintext port;
// a check inside each handler would miss the health, reflection and admin
// services. A server interceptor sees every call of every service, on both.
//
// How a call is rejected: the interceptor cannot stop the handler from
// being invoked, so at POST_RECV_INITIAL_METADATA (before the request is
// handed to any handler) it cancels the core call with the rejection's
// status: the client gets UNAUTHENTICATED / PERMISSION_DENIED and the
// message at once, and the call is cancelled before its handler starts.
// gRPC 1.51 still invokes the handler of a call cancelled there, so the
// services that do work check the authorizer again at the top of each
// handler (DedupService::set_authorizer), which makes "a rejected call
// touches no store" deterministic. For defence in depth, any message a
// handler still tries to send is emptied and its status replaced by the
// rejection.
class RejectingInterceptor final : public grpc::experimental::Interceptor {
 public:
  using Decide = std::function<absl::Status(
      absl::string_view method, const std::multimap<grpc::string_ref, grpc::string_ref>&)>;

  RejectingInterceptor(grpc::experimental::ServerRpcInfo* info, const Decide* decide)
      : info_(info), decide_(decide) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    using grpc::experimental::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      const char* method = info_->method();
      const absl::Status decision =
          (*decide_)(method == nullptr ? "" : method, *methods->GetRecvInitialMetadata());
      if (!decision.ok()) {
        rejection_ = ToGrpcStatus(decision);
        grpc_call_error err =
            grpc_call_cancel_with_status(info_->server_context()->c_call(),
                                         static_cast<grpc_status_code>(rejection_->error_code()),
                                         rejection_->error_message().c_str(), nullptr);
        (void)err;  // why: fails only for a call already finished, which is rejected anyway
      }
    }
    if (rejection_.has_value()) {
      if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_MESSAGE)) {
        if (grpc::ByteBuffer* buffer = methods->GetSerializedSendMessage()) buffer->Clear();
      }
      if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::PRE_SEND_STATUS)) {
        methods->ModifySendStatus(*rejection_);
      }
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* const info_;
  const Decide* const decide_;
  std::optional<grpc::Status> rejection_;
};

class RejectingInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit RejectingInterceptorFactory(RejectingInterceptor::Decide decide)
      : decide_(std::move(decide)) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new RejectingInterceptor(info, &decide_);
  }

 private:
  const RejectingInterceptor::Decide decide_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsFiles& files) {
  if (files.cert_file.empty() && files.key_file.empty()) {
    if (!files.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls_client_ca_file needs --tls_cert_file and --tls_key_file (mutual TLS "
          "is TLS with client certificates)");
    }
    return grpc::InsecureServerCredentials();
  }
  if (files.cert_file.empty() || files.key_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS needs both --tls_cert_file and --tls_key_file; only --",
                     files.cert_file.empty() ? "tls_key_file" : "tls_cert_file", " is set"));
  }
  DEDUPD_ASSIGN_OR_RETURN(std::string cert_pem, ReadFlagFile("tls_cert_file", files.cert_file));
  DEDUPD_ASSIGN_OR_RETURN(std::string key_pem, ReadFlagFile("tls_key_file", files.key_file));
  DEDUPD_RETURN_IF_ERROR(CheckServerPair(files, cert_pem, key_pem));

  grpc::SslServerCredentialsOptions options(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  options.pem_key_cert_pairs.push_back({std::move(key_pem), std::move(cert_pem)});
  if (!files.client_ca_file.empty()) {
    DEDUPD_ASSIGN_OR_RETURN(std::string ca_pem,
                            ReadFlagFile("tls_client_ca_file", files.client_ca_file));
    DEDUPD_RETURN_IF_ERROR(
        ParseCertificates("tls_client_ca_file", files.client_ca_file, ca_pem).status());
    options.pem_root_certs = std::move(ca_pem);
    options.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

absl::StatusOr<std::string> ReadSecretFile(absl::string_view flag, const std::string& path) {
  DEDUPD_ASSIGN_OR_RETURN(std::string secret, ReadFlagFile(flag, path));
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", path, ": the file is empty (want one line)"));
  }
  if (secret.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", flag, "=", path, ": the file holds a line break or NUL inside (want one line)"));
  }
  return secret;
}

absl::StatusOr<std::string> ReadTokenFile(absl::string_view flag, const std::string& path) {
  // A token is a one-line secret that a gRPC metadata value can carry.
  DEDUPD_ASSIGN_OR_RETURN(std::string token, ReadSecretFile(flag, path));
  for (char c : token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, "=", path,
                       ": the token may hold only printable ASCII without spaces (one token, "
                       "one line)"));
    }
  }
  return token;
}

CallAuthorizer::CallAuthorizer(std::string token, std::string admin_token)
    : token_(std::move(token)), admin_token_(std::move(admin_token)) {}

absl::Status CallAuthorizer::Check(
    absl::string_view method,
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) const {
  if (absl::StartsWith(method, kHealthPrefix)) return absl::OkStatus();
  const bool admin = absl::StartsWith(method, kAdminPrefix) && !admin_token_.empty();
  const std::string& want = admin ? admin_token_ : token_;
  if (want.empty()) return absl::OkStatus();
  const char* const which =
      admin ? "the admin token (--admin_token_file)" : "a bearer token (--auth_token_file)";

  auto [first, last] = metadata.equal_range("authorization");
  if (first == last) {
    return absl::UnauthenticatedError(absl::StrCat(
        method, " requires ", which, ": send metadata \"authorization: Bearer <token>\""));
  }
  if (std::next(first) != last) {
    return absl::UnauthenticatedError("more than one \"authorization\" metadata entry");
  }
  const absl::string_view value(first->second.data(), first->second.size());
  constexpr absl::string_view kScheme = "bearer ";
  if (value.size() < kScheme.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
    return absl::UnauthenticatedError("\"authorization\" metadata must be \"Bearer <token>\"");
  }
  const absl::string_view presented = absl::StripAsciiWhitespace(value.substr(kScheme.size()));
  if (ConstantTimeEqual(presented, want)) return absl::OkStatus();
  if (admin && !token_.empty() && ConstantTimeEqual(presented, token_)) {
    return absl::PermissionDeniedError(
        absl::StrCat(method, " is an admin method: it requires ", which, ", not the normal token"));
  }
  return absl::UnauthenticatedError(
      absl::StrCat("invalid bearer token for ", method, " (it requires ", which, ")"));
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeAuthInterceptorFactory(
    std::shared_ptr<const CallAuthorizer> authorizer) {
  return std::make_unique<RejectingInterceptorFactory>(
      [authorizer = std::move(authorizer)](
          absl::string_view method,
          const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
        return authorizer->Check(method, metadata);
      });
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeHealthOnlyInterceptorFactory() {
  return std::make_unique<RejectingInterceptorFactory>(
      [](absl::string_view method, const std::multimap<grpc::string_ref, grpc::string_ref>&) {
        if (absl::StartsWith(method, CallAuthorizer::kHealthPrefix)) return absl::OkStatus();
        return absl::UnimplementedError(absl::StrCat(
            method, ": this port (--health_listen) serves only grpc.health.v1.Health"));
      });
}

}  // namespace dedupd
