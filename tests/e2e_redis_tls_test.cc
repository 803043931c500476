// End-to-end: the real dedupd binary with --store=redis_cluster --redis_tls
// on a real 3-master, 3-replica redis-server cluster that listens with TLS
// only and requires client certificates (tests/testing/redis_cluster_
// fixture.h, options.tls; ctest label `redis`, one ctest test: one
// cluster):
//   - with the CA and a client certificate it claims URLs (NEW, then
//     SEEN through a second front end);
//   - without a client certificate, or with another CA, it exits at once
//     with one line naming the node and the TLS reason (no retrying);
//   - bad --redis_tls* combinations exit 2 with a one-line message.
// Every RPC has a deadline (ClaimUrls).
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/redis_cluster_fixture.h"
#include "tests/testing/redis_front_end.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/test_certs.h"

namespace dedupd {
namespace {

using ::dedupd::testing::ClaimUrls;
using ::dedupd::testing::IsOk;
using ::dedupd::testing::RedisCluster;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class E2eRedisTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = testing::SharedTlsCluster();
    ASSERT_NE(cluster_, nullptr);
    dir_ = testing::MakeTempDir("e2e_redis_tls_");
  }
  void TearDown() override { testing::RemoveTree(dir_); }

  // The flags of a front end with the cluster's CA and client certificate.
  std::vector<std::string> TlsFlags() const {
    return {"--redis_tls", "--redis_tls_ca_file=" + cluster_->tls().ca_file,
            "--redis_tls_cert_file=" + cluster_->tls().client_cert_file,
            "--redis_tls_key_file=" + cluster_->tls().client_key_file};
  }

  // RunToExit runs dedupd with the cluster's nodes, `flags` and a fresh
  // data dir until it exits (bounded).
  testing::CommandResult RunToExit(const std::vector<std::string>& flags) const {
    std::vector<std::string> argv = {DEDUPD_BINARY, "--listen=127.0.0.1:0",
                                     "--data_dir=" + dir_ + "/unused"};
    for (const std::string& f : testing::RedisFrontEndFlags(*cluster_, "e2etls:", flags)) {
      argv.push_back(f);
    }
    absl::StatusOr<testing::CommandResult> r = testing::RunCommand(argv, "", absl::Seconds(60));
    EXPECT_THAT(r.status(), IsOk());
    return r.ok() ? *r : testing::CommandResult{};
  }

  RedisCluster* cluster_ = nullptr;
  std::string dir_;
};

TEST_F(E2eRedisTlsTest, ClaimsUrlsOverMutualTls) {
  testing::RedisFrontEndProcess a, b;
  ASSERT_THAT(
      testing::StartRedisFrontEnd(DEDUPD_BINARY, dir_ + "/a",
                                  RedisFrontEndFlags(*cluster_, "e2etls1:", TlsFlags()), &a),
      IsOk());
  EXPECT_THAT(a.process->Logs(), HasSubstr("over TLS"));
  std::vector<std::string> urls;
  for (int i = 0; i < 200; ++i) urls.push_back(absl::StrCat("https://tls.example/", i));
  absl::StatusOr<std::vector<v1::UrlVerdict>> first = ClaimUrls(*a.dedup, urls);
  ASSERT_THAT(first, IsOk());
  for (v1::UrlVerdict v : *first) EXPECT_EQ(v, v1::URL_VERDICT_NEW);

  // A second front end, server name given explicitly (the certificate's
  // IP entry), sees them all.
  std::vector<std::string> flags = TlsFlags();
  flags.push_back("--redis_tls_server_name=127.0.0.1");
  ASSERT_THAT(testing::StartRedisFrontEnd(DEDUPD_BINARY, dir_ + "/b",
                                          RedisFrontEndFlags(*cluster_, "e2etls1:", flags), &b),
              IsOk());
  absl::StatusOr<std::vector<v1::UrlVerdict>> again = ClaimUrls(*b.dedup, urls);
  ASSERT_THAT(again, IsOk());
  for (v1::UrlVerdict v : *again) EXPECT_EQ(v, v1::URL_VERDICT_SEEN);
  absl::StatusOr<std::vector<v1::UrlVerdict>> one =
      ClaimUrls(*b.dedup, {"https://tls.example/new"});
  ASSERT_THAT(one, IsOk());
  EXPECT_THAT(*one, ElementsAre(v1::URL_VERDICT_NEW));
}

TEST_F(E2eRedisTlsTest, NoClientCertificateExitsNamingTheNodeAndReason) {
  const testing::CommandResult r =
      RunToExit({"--redis_tls", "--redis_tls_ca_file=" + cluster_->tls().ca_file});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err,
              AllOf(HasSubstr("dedupd: open Redis Cluster at "), HasSubstr("redis node 127.0.0.1:"),
                    HasSubstr("TLS: the server refused the connection"),
                    HasSubstr("no client certificate was sent")));
}

TEST_F(E2eRedisTlsTest, WrongCaExitsNamingTheNodeAndReason) {
  absl::StatusOr<testing::TestCert> other = testing::MakeTestCa("not the cluster's CA");
  ASSERT_THAT(other, IsOk());
  const std::string ca_file = dir_ + "/other-ca.pem";
  ASSERT_THAT(testing::WriteTestFile(ca_file, other->cert_pem), IsOk());
  std::vector<std::string> flags = TlsFlags();
  flags[1] = "--redis_tls_ca_file=" + ca_file;
  const testing::CommandResult r = RunToExit(flags);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("redis node 127.0.0.1:"),
                           HasSubstr("TLS: the server's certificate did not verify for "
                                     "127.0.0.1: self-signed certificate in certificate chain")));
}

TEST_F(E2eRedisTlsTest, BadTlsFlagsFailWithOneLine) {
  const std::string ca = "--redis_tls_ca_file=" + cluster_->tls().ca_file;
  const std::string cert = "--redis_tls_cert_file=" + cluster_->tls().client_cert_file;
  const std::string key = "--redis_tls_key_file=" + cluster_->tls().client_key_file;
  const std::string nodes = "--redis_nodes=" + cluster_->address(0);
  for (const auto& [argv, want] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{DEDUPD_BINARY, "--store=redis_cluster", nodes, ca},
            "--redis_tls_ca_file needs --redis_tls"},
           {{DEDUPD_BINARY, "--store=redis_cluster", nodes, "--redis_tls", cert},
            "only --redis_tls_cert_file is set"},
           {{DEDUPD_BINARY, "--store=redis_cluster", nodes, "--redis_tls", key},
            "only --redis_tls_key_file is set"},
           {{DEDUPD_BINARY, "--redis_tls"}, "--redis_tls needs --store=redis_cluster"},
           {{DEDUPD_BINARY, "--store=redis_cluster", nodes, "--redis_tls",
             "--redis_tls_ca_file=" + dir_ + "/missing.pem"},
            "--redis_tls_ca_file: "}}) {
    absl::StatusOr<testing::CommandResult> r = testing::RunCommand(argv, "", absl::Seconds(10));
    ASSERT_THAT(r.status(), IsOk());
    EXPECT_EQ(r->exit_code, 2) << absl::StrJoin(argv, " ");
    EXPECT_THAT(r->err, AllOf(HasSubstr("dedupd: "), HasSubstr(want))) << absl::StrJoin(argv, " ");
    EXPECT_EQ(std::count(r->err.begin(), r->err.end(), '\n'), 1) << r->err;
  }
}

}  // namespace
}  // namespace dedupd
