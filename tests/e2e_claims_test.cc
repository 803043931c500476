// End-to-end tests of CheckUrl's claim ids, leases, namespaces and revisits,
// and of CheckContent's and CheckChunks' claim ids, against the real dedupd
// binary on 127.0.0.1, driven by the client library and raw stubs:
//   - a reply lost on the wire (an in-test TCP proxy cuts the connection as
//     the reply starts) is answered again to the client's automatic retry:
//     URLs and texts NEW, a document's removed chunk ids again;
//   - a claim (URL, text, chunks) survives kill -9 for its retry;
//   - a lease that ends unconfirmed is re-offered once, and the late
//     confirmation of the first claimant is refused;
//   - eight workers with leases, retries and crashes fetch every URL and
//     confirm each exactly once, never two holders of one live lease;
//   - namespaces are apart; over-limit requests name the limit;
//   - revisit_rules make a URL DUE once.
//
// Every RPC has a deadline; every loop is bounded in count and time. The
// only waits on the wall clock are for leases and revisit_after to pass.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
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

// Waits until `t` has passed on the wall clock (leases and revisit_after
// are wall-clock times; nothing else can signal them).
void SleepUntil(absl::Time t) {
  const absl::Duration left = t - absl::Now();
  if (left > absl::ZeroDuration()) absl::SleepFor(left);
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

  static grpc::Status Call(v1::Dedup::Stub* stub, const v1::CheckContentRequest& request,
                           v1::CheckContentResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    return stub->CheckContent(&context, request, response);
  }

  static grpc::Status Call(v1::Dedup::Stub* stub, const v1::CheckChunksRequest& request,
                           v1::CheckChunksResponse* response) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcDeadline));
    return stub->CheckChunks(&context, request, response);
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

// Documents with distinct texts, each long enough to be a page of its own.
std::vector<v1::ContentItem> Docs(const std::string& prefix, int n) {
  std::vector<v1::ContentItem> docs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    v1::ContentItem& d = docs[static_cast<size_t>(i)];
    d.set_url(absl::StrCat(prefix, i));
    d.set_text(absl::StrCat("Page ", i, " of ", prefix, ": its own words, number ", i * 7919,
                            ", and nothing else."));
  }
  return docs;
}

// A CheckChunks request for `url` with chunks `ids` (text: "<url> chunk <id>
// says <id>" repeated, a distinct text per id).
v1::CheckChunksRequest ChunksRequest(const std::string& url, const std::vector<std::string>& ids) {
  v1::CheckChunksRequest r;
  r.set_document_url(url);
  r.set_mode(v1::CLAIM_MODE_CLAIM);
  for (const std::string& id : ids) {
    v1::ChunkItem* c = r.add_chunks();
    c->set_chunk_id(id);
    c->set_text(absl::StrCat(url, " chunk ", id, " says ", id, ", which no other chunk says."));
  }
  return r;
}

// 1c. CheckContent and CheckChunks through the proxy: the library's retry
// of a claim whose reply was dropped is answered as the claim was (texts
// NEW with the claim's time; the document's removed chunk ids); any other
// request gets the texts as exact duplicates and the chunks as a re-send.
TEST_F(E2eClaimsTest, ContentAndChunkRetriesAfterADroppedReplyGetTheClaimsAnswers) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<DroppingProxy> proxy, DroppingProxy::Start(server_->port()));
  std::unique_ptr<DedupClient> via_proxy = FastRetryClient(proxy->address(), 8);
  ASSERT_NE(via_proxy, nullptr);

  const std::vector<v1::ContentItem> docs = Docs("https://proxy.example/text/", 10);
  proxy->DropNextReply();
  const absl::Time sent = absl::Now();
  absl::StatusOr<std::vector<v1::ContentResult>> r =
      via_proxy->CheckContent(docs, v1::CLAIM_MODE_CLAIM);
  ASSERT_THAT(r, IsOk());
  ASSERT_EQ(r->size(), docs.size());
  ASSERT_EQ(proxy->cuts(), 1) << "the reply was not dropped";
  const absl::Time cut = proxy->last_cut();
  for (const v1::ContentResult& res : *r) {
    EXPECT_EQ(res.verdict(), v1::CONTENT_VERDICT_NEW) << res.url();
    EXPECT_EQ(res.owner_url(), res.url());
    EXPECT_EQ(res.recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN) << res.url();
    // Recorded by the first attempt, before the reply was cut.
    EXPECT_LE(ToTime(res.first_seen_time()), cut) << res.url();
    EXPECT_GE(ToTime(res.first_seen_time()), sent - absl::Milliseconds(1)) << res.url();
  }
  absl::StatusOr<std::vector<v1::ContentResult>> other =
      client_->CheckContent(docs, v1::CLAIM_MODE_CLAIM);
  ASSERT_THAT(other, IsOk());
  ASSERT_EQ(other->size(), docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    EXPECT_EQ((*other)[i].verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE) << (*other)[i].url();
    EXPECT_EQ((*other)[i].owner_url(), (*r)[i].owner_url());
    EXPECT_EQ(ToTime((*other)[i].first_seen_time()), ToTime((*r)[i].first_seen_time()));
  }

  const std::string url = "https://proxy.example/doc";
  absl::StatusOr<v1::CheckChunksResponse> first_version =
      client_->CheckChunks(ChunksRequest(url, {"intro", "a", "b", "c"}));
  ASSERT_THAT(first_version, IsOk());
  const v1::CheckChunksRequest v2 = ChunksRequest(url, {"intro", "d"});
  proxy->DropNextReply();
  absl::StatusOr<v1::CheckChunksResponse> chunks = via_proxy->CheckChunks(v2);
  ASSERT_THAT(chunks, IsOk());
  ASSERT_EQ(proxy->cuts(), 2) << "the reply was not dropped";
  EXPECT_EQ(chunks->replaced_chunks(), 4u);
  EXPECT_THAT(chunks->removed_chunk_ids(), ::testing::ElementsAre("a", "b", "c"));
  ASSERT_EQ(chunks->results_size(), 2);
  EXPECT_EQ(chunks->results(0).verdict(), v1::CHUNK_VERDICT_NEW);
  EXPECT_EQ(chunks->results(1).verdict(), v1::CHUNK_VERDICT_NEW);
  EXPECT_LE(ToTime(chunks->results(1).first_seen_time()), proxy->last_cut());
  // Another request (its own claim id): a re-send of the stored chunks.
  absl::StatusOr<v1::CheckChunksResponse> resend = client_->CheckChunks(v2);
  ASSERT_THAT(resend, IsOk());
  EXPECT_EQ(resend->replaced_chunks(), 2u);
  EXPECT_TRUE(resend->removed_chunk_ids().empty());
}

// 2b. kill -9 right after a CheckContent and a CheckChunks claim were
// answered: after the restart their retries (same claim ids) get the
// claims' answers; any other request does not.
TEST_F(E2eClaimsTest, ContentAndChunkClaimsSurviveKillMinus9ForTheirRetries) {
  auto stub = RawStub();
  v1::CheckContentRequest content;
  content.set_mode(v1::CLAIM_MODE_CLAIM);
  content.set_claim_id("kill-content");
  for (const v1::ContentItem& d : Docs("https://kill.example/text/", 10)) {
    *content.add_items() = d;
  }
  const std::string url = "https://kill.example/doc";
  v1::CheckChunksResponse chunks_v1, chunks_before;
  ASSERT_TRUE(Call(stub.get(), ChunksRequest(url, {"0", "1", "2"}), &chunks_v1).ok());
  v1::CheckChunksRequest chunks = ChunksRequest(url, {"0", "3"});
  chunks.set_claim_id("kill-chunks");
  v1::CheckContentResponse content_first;
  ASSERT_TRUE(Call(stub.get(), content, &content_first).ok());
  ASSERT_TRUE(Call(stub.get(), chunks, &chunks_before).ok());
  ASSERT_EQ(content_first.results_size(), 10);
  for (const v1::ContentResult& res : content_first.results()) {
    ASSERT_EQ(res.verdict(), v1::CONTENT_VERDICT_NEW) << res.url();
  }
  ASSERT_THAT(chunks_before.removed_chunk_ids(), ::testing::ElementsAre("1", "2"));

  server_->Kill();
  StartServer();
  stub = RawStub();

  v1::CheckContentResponse content_after, content_other;
  v1::CheckChunksResponse chunks_after, chunks_other;
  ASSERT_TRUE(Call(stub.get(), content, &content_after).ok());
  ASSERT_TRUE(Call(stub.get(), chunks, &chunks_after).ok());
  v1::CheckContentRequest other_content = content;
  other_content.set_claim_id("kill-other");
  v1::CheckChunksRequest other_chunks = chunks;
  other_chunks.set_claim_id("kill-other");
  ASSERT_TRUE(Call(stub.get(), other_content, &content_other).ok());
  ASSERT_TRUE(Call(stub.get(), other_chunks, &chunks_other).ok());

  ASSERT_EQ(content_after.results_size(), 10);
  ASSERT_EQ(content_other.results_size(), 10);
  for (int i = 0; i < 10; ++i) {
    const v1::ContentResult& before = content_first.results(i);
    SCOPED_TRACE(before.url());
    EXPECT_EQ(content_after.results(i).verdict(), v1::CONTENT_VERDICT_NEW);
    EXPECT_EQ(ToTime(content_after.results(i).first_seen_time()), ToTime(before.first_seen_time()));
    EXPECT_EQ(content_after.results(i).recrawl(), v1::RECRAWL_STATUS_FIRST_SEEN);
    EXPECT_EQ(content_other.results(i).verdict(), v1::CONTENT_VERDICT_EXACT_DUPLICATE);
    EXPECT_EQ(content_other.results(i).owner_url(), before.owner_url());
    EXPECT_EQ(ToTime(content_other.results(i).first_seen_time()), ToTime(before.first_seen_time()));
  }
  EXPECT_EQ(chunks_after.replaced_chunks(), 3u);
  EXPECT_THAT(chunks_after.removed_chunk_ids(), ::testing::ElementsAre("1", "2"));
  EXPECT_EQ(chunks_other.replaced_chunks(), 2u);
  EXPECT_TRUE(chunks_other.removed_chunk_ids().empty());
}

// 3. Worker A leases 200 URLs and "crashes". B is SEEN while the lease is
// live, reclaims them all once it ends and confirms; A's late confirmation
// is LEASE_LOST.
TEST_F(E2eClaimsTest, UnconfirmedLeaseIsReclaimedOnceAndTheLateConfirmationIsLost) {
  constexpr uint32_t kLeaseSeconds = 2;
  const std::string ns = "crawl";
  const std::vector<v1::UrlItem> items = Items("https://lease.example/page/", 200);
  UrlCheckOptions a;
  a.name_space = ns;
  a.lease_seconds = kLeaseSeconds;
  a.claim_id = "worker-a";  // one request: it carries "worker-a#0"
  const std::vector<v1::UrlResult> by_a = Claim(items, a);
  ASSERT_EQ(by_a.size(), items.size());
  absl::Time lease_end = absl::InfinitePast();
  for (const v1::UrlResult& r : by_a) {
    ASSERT_EQ(r.verdict(), v1::URL_VERDICT_NEW) << r.normalized_url();
    EXPECT_FALSE(r.reclaimed());
    EXPECT_EQ(ToTime(r.lease_expire_time()),
              ToTime(r.first_seen_time()) + absl::Seconds(kLeaseSeconds));
    lease_end = std::max(lease_end, ToTime(r.lease_expire_time()));
  }

  // While A's lease is live: B is SEEN for every URL, with A's lease end.
  UrlCheckOptions b = a;
  b.claim_id = "worker-b-early";
  const std::vector<v1::UrlResult> b_early = Claim(items, b);
  ASSERT_LT(absl::Now(), lease_end) << "the machine is too slow for a 2 s lease";
  ASSERT_EQ(b_early.size(), items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(b_early[i].verdict(), v1::URL_VERDICT_SEEN) << items[i].url();
    EXPECT_EQ(ToTime(b_early[i].lease_expire_time()), ToTime(by_a[i].lease_expire_time()));
    EXPECT_EQ(ToTime(b_early[i].first_seen_time()), ToTime(by_a[i].first_seen_time()));
  }
  // A's own retry is still answered NEW.
  for (const v1::UrlResult& r : Claim(items, a)) {
    EXPECT_EQ(r.verdict(), v1::URL_VERDICT_NEW) << r.normalized_url();
  }

  SleepUntil(lease_end + absl::Milliseconds(50));
  b.claim_id = "worker-b";
  const absl::Time b_sent = absl::Now();
  const std::vector<v1::UrlResult> by_b = Claim(items, b);
  ASSERT_EQ(by_b.size(), items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const v1::UrlResult& r = by_b[i];
    EXPECT_EQ(r.verdict(), v1::URL_VERDICT_NEW) << items[i].url();
    EXPECT_TRUE(r.reclaimed()) << items[i].url();
    EXPECT_EQ(ToTime(r.first_seen_time()), ToTime(by_a[i].first_seen_time()));
    // B's own lease, from its claim on.
    EXPECT_GE(ToTime(r.lease_expire_time()),
              b_sent + absl::Seconds(kLeaseSeconds) - absl::Milliseconds(1));
  }
  // Nobody else gets them while B's lease is live.
  UrlCheckOptions c = a;
  c.claim_id = "worker-c";
  const std::vector<v1::UrlResult> by_c = Claim(items, c);
  ASSERT_EQ(by_c.size(), items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(by_c[i].verdict(), v1::URL_VERDICT_SEEN) << items[i].url();
    EXPECT_EQ(ToTime(by_c[i].lease_expire_time()), ToTime(by_b[i].lease_expire_time()));
  }

  for (const v1::CompleteResult& r : Complete(items, ns, "worker-b#0")) {
    EXPECT_EQ(r.verdict(), v1::COMPLETE_VERDICT_CONFIRMED) << r.normalized_url() << r.error();
  }
  for (const v1::CompleteResult& r : Complete(items, ns, "worker-a#0")) {
    EXPECT_EQ(r.verdict(), v1::COMPLETE_VERDICT_INVALID) << r.normalized_url();
    EXPECT_EQ(r.error_reason(), v1::ERROR_REASON_LEASE_LOST) << r.normalized_url();
    EXPECT_THAT(r.error(), HasSubstr("another claim_id"));
  }
  for (const v1::CompleteResult& r : Complete(items, ns, "worker-b#0")) {
    EXPECT_EQ(r.verdict(), v1::COMPLETE_VERDICT_ALREADY_CONFIRMED) << r.normalized_url();
  }
  // Confirmed: SEEN for good, no lease; A's retry of its claim too.
  for (const v1::UrlResult& r : Claim(items, a)) {
    EXPECT_EQ(r.verdict(), v1::URL_VERDICT_SEEN) << r.normalized_url();
    EXPECT_FALSE(r.has_lease_expire_time()) << r.normalized_url();
  }
}

// 4. Eight workers over overlapping URL sets, with leases, re-sent
// requests (same claim id) and crashes (NEW answers never confirmed),
// polling until each of its URLs is confirmed by someone.
TEST_F(E2eClaimsTest, ConcurrentWorkersWithRetriesAndCrashesConfirmEveryUrlExactlyOnce) {
  constexpr int kUrls = 2000, kWorkers = 8, kBatch = 100;
  constexpr uint32_t kLeaseSeconds = 3;
  constexpr absl::Duration kLease = absl::Seconds(kLeaseSeconds);
  constexpr absl::Duration kPoll = absl::Milliseconds(250);
  constexpr int kMaxCallsPerWorker = 400;
  const std::string ns = "swarm";
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  const auto url = [](int i) { return absl::StrCat("https://swarm.example/doc/", i); };

  // Each worker's own ~60% of the URLs; every URL is somebody's.
  std::mt19937 rng(20240611);
  std::vector<std::vector<int>> sets(kWorkers);
  for (int u = 0; u < kUrls; ++u) {
    bool any = false;
    for (int w = 0; w < kWorkers; ++w) {
      if (std::uniform_int_distribution<int>(0, 99)(rng) < 60) {
        sets[static_cast<size_t>(w)].push_back(u);
        any = true;
      }
    }
    if (!any) sets[static_cast<size_t>(u % kWorkers)].push_back(u);
  }
  for (auto& s : sets) std::shuffle(s.begin(), s.end(), rng);

  struct ClaimEvent {
    std::string claimant;  // the request's claim id
    bool reclaimed = false;
    absl::Time first_seen, lease_end;
  };
  absl::Mutex mu;
  std::map<std::string, std::vector<ClaimEvent>> claims;     // by normalized URL
  std::map<std::string, std::vector<std::string>> confirms;  // CONFIRMED, by URL: claimants
  std::vector<std::string> violations;
  std::atomic<int> resends{0}, resends_changed{0}, abandoned{0}, lease_lost{0}, calls{0};

  const auto worker = [&](int w, uint64_t seed) {
    std::mt19937 wrng(static_cast<uint32_t>(seed));
    const bool crashes = w % 3 == 1;  // workers 1, 4, 7 drop some NEWs early on
    auto violation = [&](const std::string& what) {
      absl::MutexLock lock(&mu);
      violations.push_back(absl::StrCat("worker ", w, ": ", what));
    };
    ClientOptions options;
    options.deadline = kRpcDeadline;
    absl::StatusOr<std::unique_ptr<DedupClient>> client =
        DedupClient::Connect(server_->address(), options);
    if (!client.ok()) return violation(client.status().ToString());
    // URL index -> earliest next poll; erased once confirmed by anyone.
    std::map<int, absl::Time> pending;
    for (int u : sets[static_cast<size_t>(w)]) pending[u] = absl::InfinitePast();
    for (int call = 0; !pending.empty() && call < kMaxCallsPerWorker; ++call) {
      if (absl::Now() > give_up) return violation("out of time");
      std::vector<int> batch;
      absl::Time next = absl::InfiniteFuture();
      const absl::Time now = absl::Now();
      for (const auto& [u, at] : pending) {
        if (at <= now && batch.size() < kBatch) batch.push_back(u);
        next = std::min(next, at);
      }
      if (batch.empty()) {
        SleepUntil(std::min(next, give_up));
        continue;
      }
      std::vector<v1::UrlItem> items(batch.size());
      for (size_t i = 0; i < batch.size(); ++i) items[i].set_url(url(batch[i]));
      UrlCheckOptions opts;
      opts.name_space = ns;
      opts.lease_seconds = kLeaseSeconds;
      opts.claim_id = absl::StrCat("w", w, "-", call);
      const std::string claimant = opts.claim_id + "#0";  // batch <= one request
      ++calls;
      absl::StatusOr<std::vector<v1::UrlResult>> r =
          (*client)->CheckUrls(items, v1::CLAIM_MODE_CLAIM, opts);
      if (!r.ok() || r->size() != items.size()) return violation("CheckUrls failed");
      // An injected retry: the same call again, as after a lost reply. Its
      // answers are the ones the worker goes by; a NEW must be answered
      // identically (a URL may turn NEW, reclaimed, if a lease ended in
      // between).
      if (std::uniform_int_distribution<int>(0, 3)(wrng) == 0) {
        ++resends;
        absl::StatusOr<std::vector<v1::UrlResult>> again =
            (*client)->CheckUrls(items, v1::CLAIM_MODE_CLAIM, opts);
        if (!again.ok() || again->size() != items.size()) return violation("resend failed");
        for (size_t i = 0; i < items.size(); ++i) {
          const v1::UrlResult &x = (*r)[i], &y = (*again)[i];
          if (x.verdict() == v1::URL_VERDICT_NEW &&
              x.SerializeAsString() != y.SerializeAsString()) {
            violation(absl::StrCat(x.normalized_url(), ": resent NEW answered ", y.DebugString()));
          } else if (x.verdict() != y.verdict()) {
            ++resends_changed;
            if (!(y.verdict() == v1::URL_VERDICT_NEW && y.reclaimed())) {
              violation(absl::StrCat(x.normalized_url(), ": resend turned ", x.verdict(), " into ",
                                     y.DebugString()));
            }
          }
        }
        r = std::move(again);
      }
      std::vector<v1::UrlItem> to_confirm;
      std::vector<int> to_confirm_index;
      const absl::Time answered = absl::Now();
      for (size_t i = 0; i < items.size(); ++i) {
        const v1::UrlResult& res = (*r)[i];
        const int u = batch[i];
        if (res.verdict() == v1::URL_VERDICT_NEW) {
          {
            absl::MutexLock lock(&mu);
            claims[res.normalized_url()].push_back({claimant, res.reclaimed(),
                                                    ToTime(res.first_seen_time()),
                                                    ToTime(res.lease_expire_time())});
          }
          // A crash: the answer is lost with the worker, its lease runs out.
          if (crashes && call < 3 && std::uniform_int_distribution<int>(0, 3)(wrng) == 0) {
            ++abandoned;
            pending[u] = ToTime(res.lease_expire_time());
            continue;
          }
          to_confirm.push_back(items[i]);
          to_confirm_index.push_back(u);
        } else if (res.verdict() == v1::URL_VERDICT_SEEN) {
          if (!res.has_lease_expire_time()) {
            pending.erase(u);  // confirmed by someone
          } else {
            pending[u] = std::min(ToTime(res.lease_expire_time()), answered + kPoll);
          }
        } else {
          violation(absl::StrCat(res.normalized_url(), ": ", res.DebugString()));
          pending.erase(u);
        }
      }
      if (to_confirm.empty()) continue;
      absl::StatusOr<std::vector<v1::CompleteResult>> done =
          (*client)->CompleteUrls(to_confirm, ns, claimant);
      if (!done.ok() || done->size() != to_confirm.size()) return violation("CompleteUrls failed");
      for (size_t i = 0; i < to_confirm.size(); ++i) {
        const v1::CompleteResult& c = (*done)[i];
        if (c.verdict() == v1::COMPLETE_VERDICT_CONFIRMED) {
          absl::MutexLock lock(&mu);
          confirms[c.normalized_url()].push_back(claimant);
          pending.erase(to_confirm_index[i]);
        } else if (c.error_reason() == v1::ERROR_REASON_LEASE_LOST) {
          // Slower than the lease, and someone reclaimed it: theirs now.
          ++lease_lost;
          pending[to_confirm_index[i]] = absl::Now();
        } else {
          violation(absl::StrCat(c.normalized_url(), ": confirm answered ", c.DebugString()));
        }
      }
    }
    if (!pending.empty()) violation(absl::StrCat(pending.size(), " URLs never settled"));
  };

  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int w = 0; w < kWorkers; ++w) threads.emplace_back(worker, w, 1000 + w);
  for (std::thread& t : threads) t.join();
  const absl::Duration took = absl::Now() - start;
  std::cout << "e2e_claims: " << calls.load() << " claim calls, " << resends.load() << " resent ("
            << resends_changed.load() << " answers changed), " << abandoned.load()
            << " NEW answers abandoned, " << lease_lost.load() << " LEASE_LOST, in "
            << absl::FormatDuration(took) << "\n";
  ASSERT_TRUE(violations.empty()) << ::testing::PrintToString(violations);

  // Every URL fetched at least once and confirmed exactly once, by its last
  // claimant; its claims form a chain in which each next claim is a
  // reclaim that starts no earlier than the previous lease ended.
  int reclaims = 0;
  for (int u = 0; u < kUrls; ++u) {
    const std::string key = url(u);
    SCOPED_TRACE(key);
    auto it = claims.find(key);
    ASSERT_NE(it, claims.end()) << "never fetched";
    // A resent claim is the same claim: one event per claimant.
    std::map<std::string, ClaimEvent> by_claimant;
    for (const ClaimEvent& e : it->second) {
      auto [pos, fresh] = by_claimant.emplace(e.claimant, e);
      if (!fresh) {
        EXPECT_EQ(pos->second.lease_end, e.lease_end) << e.claimant;
        EXPECT_EQ(pos->second.first_seen, e.first_seen) << e.claimant;
      }
    }
    std::vector<ClaimEvent> chain;
    for (const auto& [id, e] : by_claimant) chain.push_back(e);
    // A claim's time is its lease end minus the lease (both truncated to
    // microseconds by the server, so exactly).
    std::sort(chain.begin(), chain.end(),
              [](const ClaimEvent& x, const ClaimEvent& y) { return x.lease_end < y.lease_end; });
    EXPECT_FALSE(chain[0].reclaimed);
    EXPECT_EQ(chain[0].lease_end - kLease, chain[0].first_seen);
    for (size_t i = 1; i < chain.size(); ++i) {
      ++reclaims;
      EXPECT_TRUE(chain[i].reclaimed) << chain[i].claimant;
      EXPECT_EQ(chain[i].first_seen, chain[0].first_seen) << chain[i].claimant;
      EXPECT_GE(chain[i].lease_end - kLease, chain[i - 1].lease_end)
          << chain[i].claimant << " claimed while " << chain[i - 1].claimant << "'s lease was live";
    }
    auto c = confirms.find(key);
    ASSERT_NE(c, confirms.end()) << "never confirmed";
    ASSERT_EQ(c->second.size(), 1u) << ::testing::PrintToString(c->second);
    EXPECT_EQ(c->second[0], chain.back().claimant) << "confirmed by another than its last claimant";
  }
  // The run exercised what it is for.
  EXPECT_GT(resends.load(), 0);
  EXPECT_GT(abandoned.load(), 0);
  EXPECT_GE(reclaims, abandoned.load());
  // And the store agrees: every URL SEEN, no lease pending.
  std::vector<v1::UrlItem> all = Items("https://swarm.example/doc/", kUrls);
  UrlCheckOptions peek;
  peek.name_space = ns;
  absl::StatusOr<std::vector<v1::UrlResult>> final_state =
      client_->CheckUrls(all, v1::CLAIM_MODE_PEEK, peek);
  ASSERT_THAT(final_state, IsOk());
  for (const v1::UrlResult& r : *final_state) {
    EXPECT_EQ(r.verdict(), v1::URL_VERDICT_SEEN) << r.normalized_url();
    EXPECT_FALSE(r.has_lease_expire_time()) << r.normalized_url();
  }
}

// 5. Namespaces are apart; a request over a limit fails as a whole with
// INVALID_ARGUMENT naming the limit, and records nothing; confirming a URL
// nobody claimed is NOT_CLAIMED.
TEST_F(E2eClaimsTest, NamespacesAreApartAndOverLimitRequestsNameTheLimit) {
  const std::vector<v1::UrlItem> items = Items("https://ns.example/p/", 10);
  UrlCheckOptions in_a, in_b;
  in_a.name_space = "a";
  in_b.name_space = "b";
  for (const v1::UrlResult& r : Claim(items, in_a)) EXPECT_EQ(r.verdict(), v1::URL_VERDICT_NEW);
  for (const v1::UrlResult& r : Claim(items, in_b)) EXPECT_EQ(r.verdict(), v1::URL_VERDICT_NEW);
  for (const v1::UrlResult& r : Claim(items)) EXPECT_EQ(r.verdict(), v1::URL_VERDICT_NEW);
  for (const v1::UrlResult& r : Claim(items, in_a)) EXPECT_EQ(r.verdict(), v1::URL_VERDICT_SEEN);
  for (const v1::UrlResult& r : Claim(items, in_b)) EXPECT_EQ(r.verdict(), v1::URL_VERDICT_SEEN);

  auto stub = RawStub();
  const std::string fresh = "https://ns.example/never-recorded";
  struct Case {
    const char* what;
    std::string name_space, claim_id;
    std::optional<uint32_t> lease_seconds;
    std::vector<std::string> message;
  };
  const Case cases[] = {
      {"namespace of 65 bytes",
       std::string(65, 'n'),
       "",
       std::nullopt,
       {"namespace", "65 bytes", "the limit is 64"}},
      {"claim_id of 65 bytes",
       "a",
       std::string(65, 'c'),
       std::nullopt,
       {"claim_id", "65 bytes", "the limit is 64"}},
      {"lease_seconds 0", "a", "", 0, {"lease_seconds", "1 to 604800 seconds"}},
      {"lease_seconds of 10 years",
       "a",
       "",
       315360000u,
       {"lease_seconds", "315360000", "1 to 604800 seconds"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    v1::CheckUrlRequest request;
    request.set_mode(v1::CLAIM_MODE_CLAIM);
    request.add_items()->set_url(fresh);
    request.set_namespace_(c.name_space);
    request.set_claim_id(c.claim_id);
    if (c.lease_seconds) request.set_lease_seconds(*c.lease_seconds);
    v1::CheckUrlResponse response;
    const grpc::Status s = Call(stub.get(), request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    for (const std::string& part : c.message) EXPECT_THAT(s.error_message(), HasSubstr(part));
  }
  // The client passes the server's error through with its code.
  UrlCheckOptions long_ns;
  long_ns.name_space = std::string(65, 'n');
  EXPECT_THAT(client_->CheckUrls(Items(fresh, 1), v1::CLAIM_MODE_CLAIM, long_ns),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the limit is 64")));
  // None of them recorded anything.
  absl::StatusOr<std::vector<v1::UrlResult>> peek =
      client_->CheckUrls(Items(fresh, 1), v1::CLAIM_MODE_PEEK, in_a);
  ASSERT_THAT(peek, IsOk());
  EXPECT_EQ((*peek)[0].verdict(), v1::URL_VERDICT_NEW);

  // CompleteUrls: never claimed anywhere; claimed in "a" but confirmed in
  // "c"; an over-long namespace or claim id fails the request.
  std::vector<v1::UrlItem> complete = Items(fresh, 1);
  complete.push_back(items[0]);
  for (const v1::CompleteResult& r : Complete(complete, "c", "")) {
    EXPECT_EQ(r.verdict(), v1::COMPLETE_VERDICT_INVALID) << r.normalized_url();
    EXPECT_EQ(r.error_reason(), v1::ERROR_REASON_NOT_CLAIMED) << r.normalized_url();
    EXPECT_THAT(r.error(), HasSubstr("not claimed in namespace \"c\""));
  }
  EXPECT_THAT(client_->CompleteUrls(complete, std::string(65, 'n')),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the limit is 64")));
  {
    v1::CompleteUrlsRequest request;
    *request.add_items() = items[0];
    request.set_namespace_("a");
    request.set_claim_id(std::string(65, 'c'));
    v1::CompleteUrlsResponse response;
    const grpc::Status s = Call(stub.get(), request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("claim_id: is 65 bytes; the limit is 64"));
  }
  // Claimed without a lease in "a": nothing pending to confirm.
  const std::vector<v1::CompleteResult> in_a_done = Complete({items[0]}, "a", "");
  ASSERT_EQ(in_a_done.size(), 1u);
  EXPECT_EQ(in_a_done[0].verdict(), v1::COMPLETE_VERDICT_ALREADY_CONFIRMED);
}

// 6. With revisit_rules, a claim older than revisit_after_seconds is DUE
// once (with the first claim's times), then SEEN as of the DUE claim.
TEST_F(E2eClaimsTest, RevisitAfterMakesAUrlDueOnceWithTheStoredTimes) {
  constexpr absl::Duration kRevisitAfter = absl::Seconds(2);
  const std::string config = dir_ + "/revisit.conf";
  { std::ofstream(config) << "revisit_rules { revisit_after_seconds: 2 }\n"; }
  StartServer({"--config=" + config});
  const std::vector<v1::UrlItem> items = Items("https://due.example/p/", 20);

  const std::vector<v1::UrlResult> first = Claim(items);
  ASSERT_EQ(first.size(), items.size());
  absl::Time first_time = ToTime(first[0].first_seen_time());
  for (const v1::UrlResult& r : first) {
    ASSERT_EQ(r.verdict(), v1::URL_VERDICT_NEW) << r.normalized_url();
    EXPECT_EQ(ToTime(r.first_seen_time()), first_time);
  }
  // Before revisit_after: SEEN, last claimed at the first claim.
  for (const v1::UrlResult& r : Claim(items)) {
    EXPECT_EQ(r.verdict(), v1::URL_VERDICT_SEEN) << r.normalized_url();
    EXPECT_EQ(ToTime(r.last_claim_time()), first_time);
  }

  SleepUntil(first_time + kRevisitAfter + absl::Milliseconds(300));
  UrlCheckOptions due_options;
  due_options.claim_id = "revisit";
  const absl::Time due_sent = absl::Now();
  const std::vector<v1::UrlResult> due = Claim(items, due_options);
  const absl::Time due_answered = absl::Now();
  ASSERT_EQ(due.size(), items.size());
  for (const v1::UrlResult& r : due) {
    EXPECT_EQ(r.verdict(), v1::URL_VERDICT_DUE) << r.normalized_url();
    EXPECT_EQ(ToTime(r.first_seen_time()), first_time) << r.normalized_url();
    EXPECT_EQ(ToTime(r.last_claim_time()), first_time) << r.normalized_url();
    EXPECT_FALSE(r.has_lease_expire_time());
  }
  // The DUE claim's own retry is answered DUE again. Its last_claim_time
  // is not compared: the store keeps only the last claim, so a retried DUE
  // reports the DUE claim's own time there, not the earlier one the first
  // answer gave (url_planner.h, rule 2).
  for (const v1::UrlResult& r : Claim(items, due_options)) {
    EXPECT_EQ(r.verdict(), v1::URL_VERDICT_DUE) << r.normalized_url();
    EXPECT_EQ(ToTime(r.first_seen_time()), first_time) << r.normalized_url();
  }
  // Right after: SEEN, last claimed by the DUE claim.
  for (const v1::UrlResult& r : Claim(items)) {
    EXPECT_EQ(r.verdict(), v1::URL_VERDICT_SEEN) << r.normalized_url();
    EXPECT_EQ(ToTime(r.first_seen_time()), first_time) << r.normalized_url();
    const absl::Time last = ToTime(r.last_claim_time());
    EXPECT_GE(last, due_sent - absl::Milliseconds(1)) << r.normalized_url();
    EXPECT_LE(last, due_answered) << r.normalized_url();
    EXPECT_GE(last - first_time, kRevisitAfter) << r.normalized_url();
  }
}

}  // namespace
}  // namespace dedupd
