#include "server/auth.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_certs.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::LeafUse;
using ::dedupd::testing::MakeTestCa;
using ::dedupd::testing::MakeTestLeaf;
using ::dedupd::testing::StatusIs;
using ::dedupd::testing::TestCert;
using ::dedupd::testing::WriteTestFile;
using ::testing::HasSubstr;
using ::testing::Not;

using Metadata = std::multimap<grpc::string_ref, grpc::string_ref>;

Metadata Md(const std::vector<std::string>& authorization) {
  static std::vector<std::string>* storage = new std::vector<std::string>();
  Metadata md;
  md.emplace("user-agent", "test");
  for (const std::string& a : authorization) {
    storage->push_back(a);
    md.emplace("authorization", grpc::string_ref(storage->back()));
  }
  return md;
}

TEST(CallAuthorizerTest, MethodAndTokenRules) {
  struct Case {
    const char* name;
    std::string token, admin_token, method;
    std::vector<std::string> authorization;
    absl::StatusCode want;
  };
  const std::string kCheck = "/dedupd.v1.Dedup/CheckUrl";
  const std::string kAdmin = "/dedupd.v1.Admin/Stats";
  const std::string kHealth = "/grpc.health.v1.Health/Check";
  const std::string kReflection = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
  const Case cases[] = {
      {"no tokens: open", "", "", kCheck, {}, absl::StatusCode::kOk},
      {"missing token", "t0k", "", kCheck, {}, absl::StatusCode::kUnauthenticated},
      {"right token", "t0k", "", kCheck, {"Bearer t0k"}, absl::StatusCode::kOk},
      {"scheme is case-insensitive", "t0k", "", kCheck, {"bearer t0k"}, absl::StatusCode::kOk},
      {"wrong token", "t0k", "", kCheck, {"Bearer t0j"}, absl::StatusCode::kUnauthenticated},
      {"token prefix", "t0k", "", kCheck, {"Bearer t0"}, absl::StatusCode::kUnauthenticated},
      {"token plus suffix", "t0k", "", kCheck, {"Bearer t0kk"}, absl::StatusCode::kUnauthenticated},
      {"no scheme", "t0k", "", kCheck, {"t0k"}, absl::StatusCode::kUnauthenticated},
      {"basic scheme", "t0k", "", kCheck, {"Basic t0k"}, absl::StatusCode::kUnauthenticated},
      {"two headers",
       "t0k",
       "",
       kCheck,
       {"Bearer t0k", "Bearer t0k"},
       absl::StatusCode::kUnauthenticated},
      {"health needs none", "t0k", "adm", kHealth, {}, absl::StatusCode::kOk},
      {"health with a wrong token", "t0k", "", kHealth, {"Bearer nope"}, absl::StatusCode::kOk},
      {"reflection is not exempt", "t0k", "", kReflection, {}, absl::StatusCode::kUnauthenticated},
      {"reflection with token", "t0k", "", kReflection, {"Bearer t0k"}, absl::StatusCode::kOk},
      {"admin without admin token: normal token",
       "t0k",
       "",
       kAdmin,
       {"Bearer t0k"},
       absl::StatusCode::kOk},
      {"admin without admin token: none",
       "t0k",
       "",
       kAdmin,
       {},
       absl::StatusCode::kUnauthenticated},
      {"admin with admin token", "t0k", "adm", kAdmin, {"Bearer adm"}, absl::StatusCode::kOk},
      {"admin with normal token",
       "t0k",
       "adm",
       kAdmin,
       {"Bearer t0k"},
       absl::StatusCode::kPermissionDenied},
      {"admin with unknown token",
       "t0k",
       "adm",
       kAdmin,
       {"Bearer xyz"},
       absl::StatusCode::kUnauthenticated},
      {"admin with no token", "t0k", "adm", kAdmin, {}, absl::StatusCode::kUnauthenticated},
      {"admin token on a normal method",
       "t0k",
       "adm",
       kCheck,
       {"Bearer adm"},
       absl::StatusCode::kUnauthenticated},
      {"only an admin token: normal open", "", "adm", kCheck, {}, absl::StatusCode::kOk},
      {"only an admin token: admin guarded",
       "",
       "adm",
       kAdmin,
       {"Bearer t0k"},
       absl::StatusCode::kUnauthenticated},
      {"admin prefix needs the service name whole",
       "t0k",
       "adm",
       "/dedupd.v1.AdminX/Stats",
       {"Bearer t0k"},
       absl::StatusCode::kOk},
      {"admin prefix is case-sensitive",
       "t0k",
       "adm",
       "/dedupd.v1.admin/Stats",
       {"Bearer t0k"},
       absl::StatusCode::kOk},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CallAuthorizer authorizer(c.token, c.admin_token);
    const absl::Status got = authorizer.Check(c.method, Md(c.authorization));
    EXPECT_EQ(got.code(), c.want) << got;
  }
}

TEST(CallAuthorizerTest, MessagesSayWhatIsExpected) {
  CallAuthorizer authorizer("t0k", "adm");
  EXPECT_THAT(
      authorizer.Check("/dedupd.v1.Dedup/CheckUrl", Md({})),
      StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("authorization: Bearer <token>")));
  EXPECT_THAT(authorizer.Check("/dedupd.v1.Admin/Forget", Md({"Bearer t0k"})),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("--admin_token_file")));
  // The message never echoes the presented token.
  const absl::Status wrong = authorizer.Check("/dedupd.v1.Dedup/CheckUrl", Md({"Bearer s3cr3t"}));
  EXPECT_THAT(std::string(wrong.message()), ::testing::Not(HasSubstr("s3cr3t")));
}

class AuthFilesTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir("auth_test_"); }
  void TearDown() override { testing::RemoveTree(dir_); }
  std::string Write(const std::string& name, const std::string& data) {
    const std::string path = dir_ + "/" + name;
    EXPECT_THAT(WriteTestFile(path, data), IsOk());
    return path;
  }
  std::string dir_;
};

TEST_F(AuthFilesTest, ReadTokenFile) {
  struct Case {
    const char* name;
    std::string contents;
    absl::StatusCode want;
    std::string token;
  };
  const Case cases[] = {
      {"plain", "abc123", absl::StatusCode::kOk, "abc123"},
      {"newline trimmed", "abc123\n", absl::StatusCode::kOk, "abc123"},
      {"crlf trimmed", "abc123\r\n", absl::StatusCode::kOk, "abc123"},
      {"empty", "", absl::StatusCode::kInvalidArgument, ""},
      {"only a newline", "\n", absl::StatusCode::kInvalidArgument, ""},
      {"space inside", "abc 123", absl::StatusCode::kInvalidArgument, ""},
      {"two lines", "abc\n123\n", absl::StatusCode::kInvalidArgument, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = Write("token", c.contents);
    absl::StatusOr<std::string> got = ReadTokenFile("auth_token_file", path);
    EXPECT_EQ(got.status().code(), c.want) << got.status();
    if (got.ok()) {
      EXPECT_EQ(*got, c.token);
    } else {
      EXPECT_THAT(std::string(got.status().message()), HasSubstr("--auth_token_file=" + path));
    }
  }
  absl::StatusOr<std::string> missing = ReadTokenFile("auth_token_file", dir_ + "/missing");
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("--auth_token_file: " + dir_ + "/missing"));
}

TEST_F(AuthFilesTest, ReadSecretFile) {
  struct Case {
    const char* name;
    std::string contents;
    absl::StatusCode want;
    std::string secret;
  };
  const Case cases[] = {
      {"plain", "s3cret", absl::StatusCode::kOk, "s3cret"},
      {"newline trimmed", "s3cret\n", absl::StatusCode::kOk, "s3cret"},
      {"crlf trimmed", "s3cret\r\n", absl::StatusCode::kOk, "s3cret"},
      {"space inside", "correct horse", absl::StatusCode::kOk, "correct horse"},
      {"empty", "", absl::StatusCode::kInvalidArgument, ""},
      {"two lines", "abc\n123\n", absl::StatusCode::kInvalidArgument, ""},
      {"nul inside", std::string("ab\0c", 4), absl::StatusCode::kInvalidArgument, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = Write("secret", c.contents);
    absl::StatusOr<std::string> got = ReadSecretFile("redis_password_file", path);
    EXPECT_EQ(got.status().code(), c.want) << got.status();
    if (got.ok()) {
      EXPECT_EQ(*got, c.secret);
    } else {
      EXPECT_THAT(std::string(got.status().message()), HasSubstr("--redis_password_file=" + path));
      // The message never quotes the file.
      EXPECT_THAT(std::string(got.status().message()), Not(HasSubstr("abc")));
    }
  }
}

TEST_F(AuthFilesTest, ServerCredentialsChecksFilesUpFront) {
  ASSERT_OK_AND_ASSIGN(TestCert ca, MakeTestCa("auth_test CA"));
  ASSERT_OK_AND_ASSIGN(TestCert server, MakeTestLeaf(ca, "server", LeafUse::kServer));
  ASSERT_OK_AND_ASSIGN(TestCert other, MakeTestLeaf(ca, "other", LeafUse::kServer));
  ASSERT_OK_AND_ASSIGN(TestCert expired,
                       MakeTestLeaf(ca, "expired", LeafUse::kServer, /*expired=*/true));
  const std::string cert = Write("server.pem", server.cert_pem);
  const std::string key = Write("server.key", server.key_pem);
  const std::string other_key = Write("other.key", other.key_pem);
  const std::string expired_cert = Write("expired.pem", expired.cert_pem);
  const std::string expired_key = Write("expired.key", expired.key_pem);
  const std::string ca_file = Write("ca.pem", ca.cert_pem);
  const std::string garbage = Write("garbage.pem", "this is not PEM\n");
  const std::string missing = dir_ + "/missing.pem";

  struct Case {
    const char* name;
    TlsFiles files;
    absl::StatusCode want;
    std::string message;  // a substring of the error
  };
  const Case cases[] = {
      {"plaintext", {"", "", ""}, absl::StatusCode::kOk, ""},
      {"tls", {cert, key, ""}, absl::StatusCode::kOk, ""},
      {"mtls", {cert, key, ca_file}, absl::StatusCode::kOk, ""},
      {"cert without key",
       {cert, "", ""},
       absl::StatusCode::kInvalidArgument,
       "only --tls_cert_file is set"},
      {"key without cert",
       {"", key, ""},
       absl::StatusCode::kInvalidArgument,
       "only --tls_key_file is set"},
      {"client CA alone",
       {"", "", ca_file},
       absl::StatusCode::kInvalidArgument,
       "--tls_client_ca_file needs"},
      {"missing cert",
       {missing, key, ""},
       absl::StatusCode::kNotFound,
       "--tls_cert_file: " + missing},
      {"garbage cert",
       {garbage, key, ""},
       absl::StatusCode::kInvalidArgument,
       "--tls_cert_file=" + garbage + ": no PEM certificate"},
      {"garbage key",
       {cert, garbage, ""},
       absl::StatusCode::kInvalidArgument,
       "--tls_key_file=" + garbage + ": no unencrypted PEM private key"},
      {"key of another cert",
       {cert, other_key, ""},
       absl::StatusCode::kInvalidArgument,
       "is not the key of the certificate"},
      {"expired",
       {expired_cert, expired_key, ""},
       absl::StatusCode::kInvalidArgument,
       "has expired"},
      {"garbage client CA",
       {cert, key, garbage},
       absl::StatusCode::kInvalidArgument,
       "--tls_client_ca_file=" + garbage},
      {"missing client CA",
       {cert, key, missing},
       absl::StatusCode::kNotFound,
       "--tls_client_ca_file: " + missing},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = MakeServerCredentials(c.files);
    EXPECT_EQ(got.status().code(), c.want) << got.status();
    if (got.ok()) {
      EXPECT_NE(*got, nullptr);
    } else {
      EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.message));
    }
  }
}

}  // namespace
}  // namespace dedupd
