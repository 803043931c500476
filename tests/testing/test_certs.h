// test_certs.h: X.509 certificates made by the test itself (OpenSSL's C
// API), for the TLS tests: a self-signed CA and leaves it signs, with EC
// P-256 keys. A server leaf names 127.0.0.1 and localhost in its
// subjectAltName.
//
// Example:
//   ASSERT_OK_AND_ASSIGN(TestCert ca, MakeTestCa("test CA"));
//   ASSERT_OK_AND_ASSIGN(TestCert server, MakeTestLeaf(ca, "dedupd", LeafUse::kServer));
//   WriteTestFile(dir + "/server.pem", server.cert_pem);
#ifndef DEDUPD_TESTS_TESTING_TEST_CERTS_H_
#define DEDUPD_TESTS_TESTING_TEST_CERTS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace dedupd::testing {

// A certificate and its private key, both PEM.
struct TestCert {
  std::string cert_pem;
  std::string key_pem;
};

// MakeTestCa: a self-signed CA certificate (CA:TRUE), valid from an hour
// ago for a day.
absl::StatusOr<TestCert> MakeTestCa(const std::string& common_name);

enum class LeafUse { kServer, kClient };

// MakeTestLeaf: a certificate signed by `ca` for TLS servers (SAN
// IP:127.0.0.1, DNS:localhost; extendedKeyUsage serverAuth) or clients
// (clientAuth). `expired`: valid only in the past.
absl::StatusOr<TestCert> MakeTestLeaf(const TestCert& ca, const std::string& common_name,
                                      LeafUse use, bool expired = false);

// WriteTestFile writes `data` to `path` (mode 0600), replacing it.
absl::Status WriteTestFile(const std::string& path, const std::string& data);

}  // namespace dedupd::testing

#endif  // DEDUPD_TESTS_TESTING_TEST_CERTS_H_
