#include "tests/testing/test_certs.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dedupd::testing {
namespace {

struct Free {
  void operator()(X509* x) const { X509_free(x); }
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(BIO* b) const { BIO_free(b); }
};
using X509Ptr = std::unique_ptr<X509, Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, Free>;
using BioPtr = std::unique_ptr<BIO, Free>;

absl::Status OpenSslError(const std::string& what) {
  char buf[256] = "unknown error";
  if (unsigned long err = ERR_get_error()) ERR_error_string_n(err, buf, sizeof(buf));  // NOLINT
  return absl::InternalError(absl::StrCat(what, ": ", buf));
}

absl::Status AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return OpenSslError(absl::StrCat("extension ", value));
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  return ok == 1 ? absl::OkStatus() : OpenSslError("X509_add_ext");
}

absl::StatusOr<std::string> ToPem(X509* cert, EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if ((cert != nullptr && PEM_write_bio_X509(bio.get(), cert) != 1) ||
      (key != nullptr &&
       PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)) {
    return OpenSslError("PEM write");
  }
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);  // NOLINT(runtime/int)
  return std::string(data, static_cast<size_t>(len));
}

absl::StatusOr<X509Ptr> ParseCert(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) return OpenSslError("parse CA certificate");
  return cert;
}

absl::StatusOr<KeyPtr> ParseKey(const std::string& pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  KeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) return OpenSslError("parse CA key");
  return key;
}

// MakeCert builds and signs one certificate: self-signed when `ca_cert`
// is null, else by `ca_key`.
absl::StatusOr<TestCert> MakeCert(const std::string& common_name, X509* ca_cert, EVP_PKEY* ca_key,
                                  bool is_ca, LeafUse use, bool expired) {
  static std::atomic<long> serial{1000};  // NOLINT(runtime/int)
  KeyPtr key(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  if (key == nullptr) return OpenSslError("generate EC key");
  X509Ptr cert(X509_new());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial.fetch_add(1) + getpid() * 1000L);
  if (expired) {
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -2 * 86400);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), -86400);
  } else {
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400);
  }
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("dedupd tests"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509* issuer = ca_cert != nullptr ? ca_cert : cert.get();
  X509_set_issuer_name(cert.get(), X509_get_subject_name(issuer));
  absl::Status st = AddExtension(cert.get(), issuer, NID_subject_key_identifier, "hash");
  if (is_ca) {
    if (st.ok()) st = AddExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:TRUE");
    if (st.ok())
      st = AddExtension(cert.get(), issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    if (st.ok()) st = AddExtension(cert.get(), issuer, NID_basic_constraints, "CA:FALSE");
    if (st.ok()) st = AddExtension(cert.get(), issuer, NID_authority_key_identifier, "keyid");
    if (st.ok()) {
      st = AddExtension(cert.get(), issuer, NID_key_usage, "critical,digitalSignature");
    }
    if (st.ok()) {
      st = AddExtension(cert.get(), issuer, NID_ext_key_usage,
                        use == LeafUse::kServer ? "serverAuth" : "clientAuth");
    }
    if (st.ok() && use == LeafUse::kServer) {
      st = AddExtension(cert.get(), issuer, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    }
  }
  if (!st.ok()) return st;
  if (X509_sign(cert.get(), ca_key != nullptr ? ca_key : key.get(), EVP_sha256()) == 0) {
    return OpenSslError("X509_sign");
  }
  TestCert out;
  absl::StatusOr<std::string> cert_pem = ToPem(cert.get(), nullptr);
  if (!cert_pem.ok()) return cert_pem.status();
  absl::StatusOr<std::string> key_pem = ToPem(nullptr, key.get());
  if (!key_pem.ok()) return key_pem.status();
  out.cert_pem = *std::move(cert_pem);
  out.key_pem = *std::move(key_pem);
  return out;
}

}  // namespace

absl::StatusOr<TestCert> MakeTestCa(const std::string& common_name) {
  return MakeCert(common_name, nullptr, nullptr, /*is_ca=*/true, LeafUse::kServer, false);
}

absl::StatusOr<TestCert> MakeTestLeaf(const TestCert& ca, const std::string& common_name,
                                      LeafUse use, bool expired) {
  absl::StatusOr<X509Ptr> ca_cert = ParseCert(ca.cert_pem);
  if (!ca_cert.ok()) return ca_cert.status();
  absl::StatusOr<KeyPtr> ca_key = ParseKey(ca.key_pem);
  if (!ca_key.ok()) return ca_key.status();
  return MakeCert(common_name, ca_cert->get(), ca_key->get(), /*is_ca=*/false, use, expired);
}

absl::Status WriteTestFile(const std::string& path, const std::string& data) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InternalError(absl::StrCat(path, ": ", std::strerror(errno)));
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      close(fd);
      return absl::InternalError(absl::StrCat(path, ": write: ", std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0)
    return absl::InternalError(absl::StrCat(path, ": close: ", std::strerror(errno)));
  return absl::OkStatus();
}

}  // namespace dedupd::testing
