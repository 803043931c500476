// End-to-end tests of CheckUrl's claim ids against the real dedupd binary
// on 127.0.0.1, driven by the client library and raw stubs:
//   - a reply lost on the wire (an in-test TCP proxy cuts the connection as
//     the reply starts) is answered again to the client's automatic retry;
//   - a claim survives kill -9 for its retry.
//
// Every RPC has a deadline; every loop is bounded in count and time.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "dedupd/v1/dedupd.pb.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/client_server_test.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::ClientServerTest;
using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;

constexpr absl::Duration kRpcDeadline = absl::Seconds(10);

absl::Time ToTime(const google::protobuf::Timestamp& t) {
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

std::vector<v1::UrlItem> Items(const std::string& prefix, int n) {
  std::vector<v1::UrlItem> items(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) items[static_cast<size_t>(i)].set_url(absl::StrCat(prefix, i));
  return items;
}

// DroppingProxy: a TCP proxy on 127.0.0.1 (an ephemeral port) in front of
// the server on 127.0.0.1:`target_port`, one thread per connection. It
// forwards bytes both ways; after DropNextReply() it cuts the connection
// (closes both sockets) at the first HTTP/2 HEADERS frame the server sends
// on a stream, i.e. as the reply of the next call starts: the server did
// the work, the client never sees the answer and gets UNAVAILABLE. To find
// that frame the server-to-client bytes are forwarded frame by frame
// (RFC 9113 section 4.1: a 9-byte header, a 24-bit payload length, the
// type, flags and a 31-bit stream id); a server sends no preface but its
// SETTINGS frame, so its bytes are frames from the first one.
// Thread-safe. The destructor stops it and joins every thread (each polls
// with a 50 ms timeout, so that takes at most about that long).
class DroppingProxy {
 public:
  static absl::StatusOr<std::unique_ptr<DroppingProxy>> Start(int target_port) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::InternalError(absl::StrCat("proxy: socket: errno ", errno));
    sockaddr_in addr = Loopback(0);
    socklen_t len = sizeof(addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      const int err = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("proxy: listen on 127.0.0.1:0: errno ", err));
    }
    std::unique_ptr<DroppingProxy> p(new DroppingProxy(fd, ntohs(addr.sin_port), target_port));
    p->acceptor_ = std::thread([raw = p.get()] { raw->AcceptLoop(); });
    return p;
  }

  ~DroppingProxy() {
    stop_.store(true);
    if (acceptor_.joinable()) acceptor_.join();
    std::vector<std::thread> pipes;
    {
      absl::MutexLock lock(&mu_);
      pipes.swap(pipes_);
    }
    for (std::thread& t : pipes) t.join();
    close(listen_fd_);
  }

  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  // The next reply to start on any connection is dropped with it.
  void DropNextReply() { armed_.store(true); }
  int connections() const { return connections_.load(); }
  int cuts() const {
    absl::MutexLock lock(&mu_);
    return cuts_;
  }
  // When the last cut happened (InfinitePast before the first).
  absl::Time last_cut() const {
    absl::MutexLock lock(&mu_);
    return last_cut_;
  }

 private:
  DroppingProxy(int listen_fd, int port, int target_port)
      : listen_fd_(listen_fd), port_(port), target_port_(target_port) {}

  static sockaddr_in Loopback(int port) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    return addr;
  }

  // A peer that stops reading must not hang a pipe thread for good.
  static void BoundWrites(int fd) {
    timeval tv{};
    tv.tv_sec = 5;
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }

  static bool WriteAll(int fd, const char* data, size_t n) {
    while (n > 0) {
      const ssize_t w = send(fd, data, n, MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      data += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }

  void AcceptLoop() {
    while (!stop_.load()) {
      pollfd pfd{listen_fd_, POLLIN, 0};
      if (poll(&pfd, 1, 50) <= 0) continue;
      const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      const int server = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_in target = Loopback(target_port_);
      if (server < 0 ||
          connect(server, reinterpret_cast<sockaddr*>(&target), sizeof(target)) != 0) {
        if (server >= 0) close(server);
        close(client);
        continue;
      }
      BoundWrites(client);
      BoundWrites(server);
      ++connections_;
      absl::MutexLock lock(&mu_);
      pipes_.emplace_back([this, client, server] { Pipe(client, server); });
    }
  }

  void Pipe(int client, int server) {
    std::string from_server;  // server bytes not forwarded yet: a partial frame
    char buf[1 << 16];
    bool open = true;
    while (open && !stop_.load()) {
      pollfd fds[2] = {{client, POLLIN, 0}, {server, POLLIN, 0}};
      const int ready = poll(fds, 2, 50);
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) continue;
      if (fds[0].revents != 0) {
        const ssize_t n = read(client, buf, sizeof(buf));
        if (n <= 0 || !WriteAll(server, buf, static_cast<size_t>(n))) break;
      }
      if (fds[1].revents != 0) {
        const ssize_t n = read(server, buf, sizeof(buf));
        if (n <= 0) break;
        from_server.append(buf, static_cast<size_t>(n));
        while (open && from_server.size() >= 9) {
          const auto byte = [&](size_t i) { return static_cast<uint8_t>(from_server[i]); };
          const size_t frame = 9 + (size_t{byte(0)} << 16 | size_t{byte(1)} << 8 | byte(2));
          if (from_server.size() < frame) break;
          const uint8_t type = byte(3);
          const uint32_t stream = (uint32_t{byte(5)} << 24 | uint32_t{byte(6)} << 16 |
                                   uint32_t{byte(7)} << 8 | byte(8)) &
                                  0x7fffffffu;
          constexpr uint8_t kHeaders = 0x1;
          if (type == kHeaders && stream != 0 && armed_.exchange(false)) {
            absl::MutexLock lock(&mu_);
            ++cuts_;
            last_cut_ = absl::Now();
            open = false;
            break;
          }
          if (!WriteAll(client, from_server.data(), frame)) open = false;
          from_server.erase(0, frame);
        }
      }
    }
    shutdown(client, SHUT_RDWR);
    shutdown(server, SHUT_RDWR);
    close(client);
    close(server);
  }

  const int listen_fd_;
  const int port_;
  const int target_port_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> armed_{false};
  std::atomic<int> connections_{0};
  std::thread acceptor_;
  mutable absl::Mutex mu_;
  std::vector<std::thread> pipes_ ABSL_GUARDED_BY(mu_);
  int cuts_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_cut_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

class E2eClaimsTest : public ClientServerTest {
 protected:
  E2eClaimsTest() : ClientServerTest(DEDUPD_BINARY, "e2e_claims_") {}

  std::unique_ptr<v1::Dedup::Stub> RawStub() const {
    return v1::Dedup::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  static grpc::Status Call(v1::Dedup::Stub* stub, const v1::CheckUrlRequest& request,
                           v1::CheckUrlResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    return stub->CheckUrl(&context, request, response);
  }

  static grpc::Status Call(v1::Dedup::Stub* stub, const v1::CompleteUrlsRequest& request,
                           v1::CompleteUrlsResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    return stub->CompleteUrls(&context, request, response);
  }

  // Claims `items` through client_ with `options`; fails the test (and
  // returns no results) when the call fails or answers the wrong count.
  std::vector<v1::UrlResult> Claim(const std::vector<v1::UrlItem>& items,
                                   const UrlCheckOptions& options = {}) {
    absl::StatusOr<std::vector<v1::UrlResult>> r =
        client_->CheckUrls(items, v1::CLAIM_MODE_CLAIM, options);
    EXPECT_THAT(r, IsOk());
    if (!r.ok()) return {};
    EXPECT_EQ(r->size(), items.size());
    return r->size() == items.size() ? *std::move(r) : std::vector<v1::UrlResult>{};
  }

  std::vector<v1::CompleteResult> Complete(const std::vector<v1::UrlItem>& items,
                                           const std::string& name_space,
                                           const std::string& claim_id) {
    absl::StatusOr<std::vector<v1::CompleteResult>> r =
        client_->CompleteUrls(items, name_space, claim_id);
    EXPECT_THAT(r, IsOk());
    if (!r.ok()) return {};
    EXPECT_EQ(r->size(), items.size());
    return r->size() == items.size() ? *std::move(r) : std::vector<v1::CompleteResult>{};
  }

  // A client to `address` that retries UNAVAILABLE quickly.
  static std::unique_ptr<DedupClient> FastRetryClient(const std::string& address,
                                                      int max_attempts) {
    ClientOptions options;
    options.deadline = kRpcDeadline;
    options.max_attempts = max_attempts;
    options.initial_backoff = absl::Milliseconds(50);
    options.max_backoff = absl::Milliseconds(500);
    absl::StatusOr<std::unique_ptr<DedupClient>> c = DedupClient::Connect(address, options);
    EXPECT_THAT(c, IsOk());
    return c.ok() ? *std::move(c) : nullptr;
  }
};

// 1. The proxy drops the reply of a CLAIM: the server recorded it, the
// client saw the connection die, and the library's own retry (same claim
// id) is answered NEW with the first attempt's time; anyone else is SEEN.
TEST_F(E2eClaimsTest, RetryAfterADroppedReplyIsAnsweredNewToTheSameClaimId) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DroppingProxy> proxy, DroppingProxy::Start(server_->port()));
  std::unique_ptr<DedupClient> via_proxy = FastRetryClient(proxy->address(), 8);
  ASSERT_NE(via_proxy, nullptr);
  // The proxy passes calls untouched until told otherwise.
  absl::StatusOr<std::vector<v1::UrlResult>> warm =
      via_proxy->CheckUrls(Items("https://proxy.example/warm/", 1), v1::CLAIM_MODE_CLAIM);
  ASSERT_THAT(warm, IsOk());
  EXPECT_EQ((*warm)[0].verdict(), v1::URL_VERDICT_NEW);
  ASSERT_EQ(proxy->cuts(), 0);
  const int connections_before = proxy->connections();

  const std::vector<v1::UrlItem> items = Items("https://proxy.example/lost/", 50);
  proxy->DropNextReply();
  const absl::Time sent = absl::Now();
  absl::StatusOr<std::vector<v1::UrlResult>> r = via_proxy->CheckUrls(items, v1::CLAIM_MODE_CLAIM);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->size(), items.size());
  ASSERT_EQ(proxy->cuts(), 1) << "the reply was not dropped";
  EXPECT_GT(proxy->connections(), connections_before) << "the retry did not reconnect";
  const absl::Time cut = proxy->last_cut();
  const absl::Time first_seen = ToTime((*r)[0].first_seen_time());
  // The record is the first attempt's: made before the reply was cut (the
  // retry was sent after it), not before the call (1 ms for rounding).
  EXPECT_LE(first_seen, cut);
  EXPECT_GE(first_seen, sent - absl::Milliseconds(1));
  for (const v1::UrlResult& res : *r) {
    EXPECT_EQ(res.verdict(), v1::URL_VERDICT_NEW) << res.normalized_url();
    EXPECT_FALSE(res.reclaimed()) << res.normalized_url();
    EXPECT_EQ(ToTime(res.first_seen_time()), first_seen) << res.normalized_url();
  }
  // Another request (its own claim id), directly to the server: SEEN, the
  // same record.
  for (const v1::UrlResult& res : Claim(items)) {
    EXPECT_EQ(res.verdict(), v1::URL_VERDICT_SEEN) << res.normalized_url();
    EXPECT_EQ(ToTime(res.first_seen_time()), first_seen) << res.normalized_url();
    EXPECT_FALSE(res.has_lease_expire_time()) << res.normalized_url();
  }
}

// 1b. Without library retries the call fails; the caller's retry of the
// whole call with its own claim id gets the lost answers.
TEST_F(E2eClaimsTest, CallerRetryWithItsClaimIdGetsTheAnswersOfAFailedCall) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DroppingProxy> proxy, DroppingProxy::Start(server_->port()));
  std::unique_ptr<DedupClient> once = FastRetryClient(proxy->address(), 1);
  ASSERT_NE(once, nullptr);
  const std::vector<v1::UrlItem> items = Items("https://proxy.example/caller/", 30);
  UrlCheckOptions options;
  options.name_space = "proxy";
  options.lease_seconds = 600;
  options.claim_id = "caller-retry";
  proxy->DropNextReply();
  absl::StatusOr<std::vector<v1::UrlResult>> lost =
      once->CheckUrls(items, v1::CLAIM_MODE_CLAIM, options);
  EXPECT_THAT(lost, StatusIs(absl::StatusCode::kUnavailable));
  ASSERT_EQ(proxy->cuts(), 1);
  const absl::Time cut = proxy->last_cut();

  absl::StatusOr<std::vector<v1::UrlResult>> again =
      once->CheckUrls(items, v1::CLAIM_MODE_CLAIM, options);
  ASSERT_THAT(again, IsOk());
  ASSERT_EQ(again->size(), items.size());
  const v1::UrlResult& first = (*again)[0];
  EXPECT_LE(ToTime(first.first_seen_time()), cut);
  EXPECT_EQ(ToTime(first.lease_expire_time()),
            ToTime(first.first_seen_time()) + absl::Seconds(600));
  for (const v1::UrlResult& res : *again) {
    EXPECT_EQ(res.verdict(), v1::URL_VERDICT_NEW) << res.normalized_url();
    EXPECT_EQ(ToTime(res.first_seen_time()), ToTime(first.first_seen_time()));
    EXPECT_EQ(ToTime(res.lease_expire_time()), ToTime(first.lease_expire_time()));
  }
  // Another claimant sees the pending lease of the lost call.
  UrlCheckOptions other = options;
  other.claim_id = "someone-else";
  for (const v1::UrlResult& res : Claim(items, other)) {
    EXPECT_EQ(res.verdict(), v1::URL_VERDICT_SEEN) << res.normalized_url();
    EXPECT_EQ(ToTime(res.lease_expire_time()), ToTime(first.lease_expire_time()));
  }
  // The first claim's id confirms them.
  for (const v1::CompleteResult& c : Complete(items, "proxy", "caller-retry#0")) {
    EXPECT_EQ(c.verdict(), v1::COMPLETE_VERDICT_CONFIRMED) << c.normalized_url() << c.error();
  }
}

// 2. SIGKILL right after a claim was answered: after the restart the same
// claim id is answered as before (NEW, same time, same lease); any other
// request is SEEN.
TEST_F(E2eClaimsTest, ClaimSurvivesKillMinus9ForItsRetry) {
  auto stub = RawStub();
  v1::CheckUrlRequest plain;
  plain.set_mode(v1::CLAIM_MODE_CLAIM);
  plain.set_claim_id("kill-plain");
  for (int i = 0; i < 20; ++i) plain.add_items()->set_url(absl::StrCat("https://kill.example/", i));
  v1::CheckUrlRequest leased = plain;
  leased.set_claim_id("kill-leased");
  leased.set_namespace_("leases");
  leased.set_lease_seconds(600);

  v1::CheckUrlResponse plain_before, leased_before;
  ASSERT_TRUE(Call(stub.get(), plain, &plain_before).ok());
  ASSERT_TRUE(Call(stub.get(), leased, &leased_before).ok());
  ASSERT_EQ(plain_before.results_size(), 20);
  ASSERT_EQ(leased_before.results_size(), 20);
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(plain_before.results(i).verdict(), v1::URL_VERDICT_NEW);
    ASSERT_EQ(leased_before.results(i).verdict(), v1::URL_VERDICT_NEW);
    ASSERT_TRUE(leased_before.results(i).has_lease_expire_time());
  }

  server_->Kill();
  StartServer();
  stub = RawStub();

  v1::CheckUrlResponse plain_after, leased_after;
  ASSERT_TRUE(Call(stub.get(), plain, &plain_after).ok());
  ASSERT_TRUE(Call(stub.get(), leased, &leased_after).ok());
  v1::CheckUrlRequest plain_other = plain, leased_other = leased;
  plain_other.set_claim_id("kill-other");
  leased_other.set_claim_id("kill-other");
  v1::CheckUrlResponse plain_seen, leased_seen;
  ASSERT_TRUE(Call(stub.get(), plain_other, &plain_seen).ok());
  ASSERT_TRUE(Call(stub.get(), leased_other, &leased_seen).ok());
  ASSERT_EQ(plain_after.results_size(), 20);
  ASSERT_EQ(leased_after.results_size(), 20);
  ASSERT_EQ(plain_seen.results_size(), 20);
  ASSERT_EQ(leased_seen.results_size(), 20);
  for (int i = 0; i < 20; ++i) {
    SCOPED_TRACE(plain.items(i).url());
    const v1::UrlResult& pb = plain_before.results(i);
    const v1::UrlResult& lb = leased_before.results(i);
    EXPECT_EQ(plain_after.results(i).verdict(), v1::URL_VERDICT_NEW);
    EXPECT_EQ(ToTime(plain_after.results(i).first_seen_time()), ToTime(pb.first_seen_time()));
    EXPECT_EQ(leased_after.results(i).verdict(), v1::URL_VERDICT_NEW);
    EXPECT_EQ(ToTime(leased_after.results(i).first_seen_time()), ToTime(lb.first_seen_time()));
    EXPECT_EQ(ToTime(leased_after.results(i).lease_expire_time()), ToTime(lb.lease_expire_time()));

    EXPECT_EQ(plain_seen.results(i).verdict(), v1::URL_VERDICT_SEEN);
    EXPECT_EQ(ToTime(plain_seen.results(i).first_seen_time()), ToTime(pb.first_seen_time()));
    EXPECT_FALSE(plain_seen.results(i).has_lease_expire_time());
    EXPECT_EQ(leased_seen.results(i).verdict(), v1::URL_VERDICT_SEEN);
    EXPECT_EQ(ToTime(leased_seen.results(i).first_seen_time()), ToTime(lb.first_seen_time()));
    // The pending lease survived the crash too.
    EXPECT_EQ(ToTime(leased_seen.results(i).lease_expire_time()), ToTime(lb.lease_expire_time()));
  }
}

}  // namespace
}  // namespace dedupd
