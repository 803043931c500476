// client_server_test.h: a ServerTest whose fixture also holds a DedupClient
// connected to the running server (reconnected after every StartServer), so
// e2e tests drive the real binary with the real client library.
//
// Example:
//   class E2eTest : public ClientServerTest {
//    protected:
//     E2eTest() : ClientServerTest(DEDUPD_BINARY, "e2e_url_") {}
//   };
//   TEST_F(E2eTest, X) { client_->CheckUrls(items, v1::CLAIM_MODE_CLAIM); }
#ifndef DEDUPD_TESTS_TESTING_CLIENT_SERVER_TEST_H_
#define DEDUPD_TESTS_TESTING_CLIENT_SERVER_TEST_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "gtest/gtest.h"
#include "tests/testing/server_process.h"
#include "tests/testing/status_matchers.h"

namespace dedupd::testing {

class ClientServerTest : public ServerTest {
 protected:
  ClientServerTest(std::string binary, std::string temp_prefix)
      : ServerTest(std::move(binary), std::move(temp_prefix)) {}

  // Connects client_ (deadline 30 s per call, default retries).
  void OnStarted() override {
    ClientOptions options;
    options.deadline = absl::Seconds(30);
    absl::StatusOr<std::unique_ptr<DedupClient>> c =
        DedupClient::Connect(server_->address(), options);
    ASSERT_THAT(c, IsOk());
    client_ = *std::move(c);
  }

  std::unique_ptr<DedupClient> client_;
};

}  // namespace dedupd::testing

#endif  // DEDUPD_TESTS_TESTING_CLIENT_SERVER_TEST_H_
