// End-to-end tests of hostile clients against the real dedupd
// binary on 127.0.0.1 port 0: slow clients (a request never finished, a
// response never read), clients that disconnect mid-batch, cancelled calls,
// expired deadlines, 10,000 concurrent calls against --max_concurrent_rpcs,
// oversize messages, and raw TCP garbage on the gRPC port. In each case the
// server stays up, keeps serving a normal client, its calls in flight
// (dedupd_rpc_in_flight) return to 0, its file descriptors return near the
// baseline, and its resident memory stays under a stated bound.
//
// The raw cases speak HTTP/2 by hand (RFC 9113 frames, HPACK literals
// without Huffman coding, RFC 7541 section 6.2.2), because a gRPC client
// library always finishes its requests and always reads its responses.
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "dedupd/v1/dedupd.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/metrics_scrape.h"
#include "tests/testing/server_process.h"

namespace dedupd {
namespace {

using ::dedupd::testing::LoggedPort;
using ::dedupd::testing::MetricsPort;
using ::dedupd::testing::ParseExposition;
using ::dedupd::testing::ScrapeMetrics;
using ::dedupd::testing::ServerTest;
using ::testing::HasSubstr;

// Memory bounds are for the normal build. Under AddressSanitizer freed
// memory stays resident in its quarantine (256 MiB by default) and every
// allocation carries redzones, so the bounds widen there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif
#else
constexpr bool kAsan = false;
#endif
// Resident memory a hostile phase may leave behind, and the peak growth
// 10,000 calls may cause, in MiB.
constexpr int64_t kRssSlackMiB = kAsan ? 512 : 64;
constexpr int64_t kFloodPeakMiB = kAsan ? 1024 : 64;

constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// ---- /proc figures of the server process ----

// A "Name:   123 kB" field of /proc/<pid>/status, in KiB; -1 if absent.
int64_t StatusKiB(pid_t pid, const std::string& field) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) != 0) continue;
    std::vector<std::string> parts =
        absl::StrSplit(line.substr(field.size() + 1), ' ', absl::SkipWhitespace());
    int64_t kib = 0;
    if (!parts.empty() && absl::SimpleAtoi(parts[0], &kib)) return kib;
  }
  return -1;
}
int64_t RssMiB(pid_t pid) { return StatusKiB(pid, "VmRSS") / 1024; }
int64_t HwmMiB(pid_t pid) { return StatusKiB(pid, "VmHWM") / 1024; }

// Open file descriptors of `pid` (entries of /proc/<pid>/fd); -1 on error.
int OpenFds(pid_t pid) {
  DIR* dir = opendir(absl::StrCat("/proc/", pid, "/fd").c_str());
  if (dir == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n;
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

// ---- raw TCP and HTTP/2 by hand ----

// A TCP connection to 127.0.0.1:port; closes on destruction. -1 fd when
// the connect failed.
class RawConn {
 public:
  explicit RawConn(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawConn() { Close(); }
  RawConn(const RawConn&) = delete;
  RawConn& operator=(const RawConn&) = delete;

  bool ok() const { return fd_ >= 0; }

  // Sends all of `bytes` (bounded: 5 s of a full socket buffer); false when
  // the peer closed or the time ran out.
  bool Send(const std::string& bytes) {
    size_t off = 0;
    const absl::Time give_up = absl::Now() + absl::Seconds(5);
    while (off < bytes.size() && absl::Now() < give_up) {
      const ssize_t n =
          send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        off += static_cast<size_t>(n);
      } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        pollfd p{fd_, POLLOUT, 0};
        poll(&p, 1, 100);
      } else {
        return false;
      }
    }
    return off == bytes.size();
  }

  // Reads what arrives within `timeout` (until EOF, an error, or quiet);
  // sets *closed when the peer closed the connection.
  std::string ReadFor(absl::Duration timeout, bool* closed) {
    std::string out;
    *closed = false;
    const absl::Time give_up = absl::Now() + timeout;
    char buf[16384];
    while (absl::Now() < give_up) {
      pollfd p{fd_, POLLIN, 0};
      const int left_ms =
          static_cast<int>(std::max<int64_t>(1, absl::ToInt64Milliseconds(give_up - absl::Now())));
      if (poll(&p, 1, std::min(left_ms, 200)) <= 0) continue;
      const ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (n > 0) {
        out.append(buf, static_cast<size_t>(n));
      } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        *closed = true;
        break;
      }
    }
    return out;
  }

  // Waits up to `timeout` for the peer to close, discarding what it sends.
  bool WaitClosed(absl::Duration timeout) {
    bool closed = false;
    ReadFor(timeout, &closed);
    return closed;
  }

  // Close with a TCP RST (linger 0), as a crashing client would.
  void Reset() {
    if (fd_ < 0) return;
    linger l{1, 0};
    setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    Close();
  }

  void Close() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
};

enum FrameType : uint8_t {
  kData = 0x0,
  kHeaders = 0x1,
  kRstStream = 0x3,
  kSettings = 0x4,
  kPing = 0x6,
  kGoaway = 0x7,
  kWindowUpdate = 0x8,
};
constexpr uint8_t kEndStream = 0x1;
constexpr uint8_t kEndHeaders = 0x4;
constexpr uint8_t kAck = 0x1;
constexpr uint16_t kSettingsMaxConcurrentStreams = 0x3;
constexpr uint16_t kSettingsInitialWindowSize = 0x4;

void PutBigEndian(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::string Frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  std::string f;
  PutBigEndian(&f, payload.size(), 3);
  f.push_back(static_cast<char>(type));
  f.push_back(static_cast<char>(flags));
  PutBigEndian(&f, stream & 0x7fffffffu, 4);
  return f + payload;
}

std::string Settings(const std::vector<std::pair<uint16_t, uint32_t>>& values) {
  std::string p;
  for (const auto& [id, value] : values) {
    PutBigEndian(&p, id, 2);
    PutBigEndian(&p, value, 4);
  }
  return Frame(kSettings, 0, 0, p);
}

// StallHandshakes opens `n` connections to 127.0.0.1:`port` that never
// finish the handshake (every other one sends half the preface, the rest
// nothing) and one that sends the whole preface and its SETTINGS; then
// waits up to 10 s for the server to close the stalled ones, and 500 ms
// more to see whether it leaves the finished one open.
struct StalledHandshakes {
  bool opened = false;  // every connection was made (and sent its bytes)
  int closed = 0;       // stalled connections the server closed
  absl::Duration took;  // from the last connect to the last close seen
  bool finished_stays_open = false;
};
StalledHandshakes StallHandshakes(int port, int n) {
  StalledHandshakes result;
  std::vector<std::unique_ptr<RawConn>> stalled;
  for (int i = 0; i < n; ++i) {
    auto c = std::make_unique<RawConn>(port);
    if (!c->ok() || (i % 2 == 1 && !c->Send(std::string(kPreface, 16)))) return result;
    stalled.push_back(std::move(c));
  }
  RawConn finished(port);
  if (!finished.Send(std::string(kPreface) + Settings({}))) return result;
  result.opened = true;
  const absl::Time start = absl::Now();
  for (auto& c : stalled) {
    result.closed +=
        c->WaitClosed(std::max(absl::Milliseconds(10), start + absl::Seconds(10) - absl::Now()));
  }
  result.took = absl::Now() - start;
  result.finished_stays_open = !finished.WaitClosed(absl::Milliseconds(500));
  return result;
}

// HPACK integer with an N-bit prefix (RFC 7541 section 5.1), first byte
// carrying `high` bits above the prefix.
void HpackInt(std::string* out, uint8_t high, int prefix_bits, uint64_t v) {
  const uint64_t max = (uint64_t{1} << prefix_bits) - 1;
  if (v < max) {
    out->push_back(static_cast<char>(high | v));
    return;
  }
  out->push_back(static_cast<char>(high | max));
  v -= max;
  while (v >= 128) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// A header block of literals without indexing, new names, no Huffman.
std::string HeaderBlock(const std::vector<std::pair<std::string, std::string>>& headers) {
  std::string b;
  for (const auto& [name, value] : headers) {
    b.push_back('\0');
    HpackInt(&b, 0, 7, name.size());
    b += name;
    HpackInt(&b, 0, 7, value.size());
    b += value;
  }
  return b;
}

// The HEADERS frame of a gRPC call of `path` on `stream` (odd); `timeout`
// is a grpc-timeout value ("2S", "1m") or empty for none.
std::string CallHeaders(uint32_t stream, const std::string& path, const std::string& timeout = "") {
  std::vector<std::pair<std::string, std::string>> h = {{":method", "POST"},
                                                        {":scheme", "http"},
                                                        {":path", path},
                                                        {":authority", "127.0.0.1"},
                                                        {"content-type", "application/grpc"},
                                                        {"te", "trailers"}};
  if (!timeout.empty()) h.push_back({"grpc-timeout", timeout});
  return Frame(kHeaders, kEndHeaders, stream, HeaderBlock(h));
}

// A gRPC length-prefixed message (uncompressed).
std::string GrpcMessage(const std::string& bytes) {
  std::string m(1, '\0');
  PutBigEndian(&m, bytes.size(), 4);
  return m + bytes;
}

// DATA frames (at most 16,384 bytes each, the default SETTINGS_MAX_FRAME_SIZE)
// carrying `body`; the last one ends the stream when `end_stream`.
std::string DataFrames(uint32_t stream, const std::string& body, bool end_stream) {
  std::string out;
  size_t off = 0;
  do {
    const size_t n = std::min<size_t>(16384, body.size() - off);
    const bool last = off + n == body.size();
    out += Frame(kData, last && end_stream ? kEndStream : 0, stream, body.substr(off, n));
    off += n;
  } while (off < body.size());
  return out;
}

struct ParsedFrame {
  uint8_t type = 0;
  uint8_t flags = 0;
  uint32_t stream = 0;
  std::string payload;
};

// Splits a byte stream from the server into frames (a trailing partial
// frame is dropped).
std::vector<ParsedFrame> ParseFrames(const std::string& bytes) {
  std::vector<ParsedFrame> frames;
  size_t off = 0;
  while (off + 9 <= bytes.size()) {
    const auto u = [&](size_t i) {
      return static_cast<uint32_t>(static_cast<uint8_t>(bytes[off + i]));
    };
    const uint32_t len = (u(0) << 16) | (u(1) << 8) | u(2);
    if (off + 9 + len > bytes.size()) break;
    ParsedFrame f;
    f.type = static_cast<uint8_t>(u(3));
    f.flags = static_cast<uint8_t>(u(4));
    f.stream = ((u(5) << 24) | (u(6) << 16) | (u(7) << 8) | u(8)) & 0x7fffffffu;
    f.payload = bytes.substr(off + 9, len);
    frames.push_back(std::move(f));
    off += 9 + len;
  }
  return frames;
}

// StreamOversize opens a call on `conn` whose gRPC prefix announces a
// 4 GiB - 1 message and sends its body as fast as HTTP/2 flow control
// allows (honouring the server's SETTINGS and WINDOW_UPDATEs, acking its
// SETTINGS and PINGs), until the server ends the stream or the connection,
// `max_bytes` are sent, or `timeout` passes. Returns the body bytes the
// server let in; *refused tells whether it ended the stream or connection.
size_t StreamOversize(RawConn* conn, size_t max_bytes, absl::Duration timeout, bool* refused) {
  *refused = false;
  std::string first =
      std::string(kPreface) + Settings({}) + CallHeaders(1, "/dedupd.v1.Dedup/CheckUrl");
  if (!conn->Send(first)) {
    *refused = true;
    return 0;
  }
  int64_t conn_window = 65535;
  int64_t stream_window = 65535;
  std::string pending;  // unparsed bytes from the server
  std::string prefix(1, '\0');
  PutBigEndian(&prefix, 0xffffffffu, 4);
  size_t sent = 0;
  const std::string chunk(16384, 'z');
  const absl::Time give_up = absl::Now() + timeout;
  while (absl::Now() < give_up && sent < max_bytes) {
    bool closed = false;
    pending +=
        conn->ReadFor(absl::Milliseconds(conn_window > 0 && stream_window > 0 ? 1 : 50), &closed);
    size_t used = 0;
    for (const ParsedFrame& f : ParseFrames(pending)) {
      used += 9 + f.payload.size();
      const auto u32 = [&f](size_t i) {
        uint32_t v = 0;
        for (size_t k = 0; k < 4; ++k) v = (v << 8) | static_cast<uint8_t>(f.payload[i + k]);
        return v;
      };
      if (f.type == kSettings && !(f.flags & kAck)) {
        for (size_t i = 0; i + 6 <= f.payload.size(); i += 6) {
          const uint32_t id = (static_cast<uint32_t>(static_cast<uint8_t>(f.payload[i])) << 8) |
                              static_cast<uint8_t>(f.payload[i + 1]);
          if (id == kSettingsInitialWindowSize) stream_window += int64_t{u32(i + 2)} - 65535;
        }
        conn->Send(Frame(kSettings, kAck, 0, ""));
      } else if (f.type == kPing && !(f.flags & kAck)) {
        conn->Send(Frame(kPing, kAck, 0, f.payload));
      } else if (f.type == kWindowUpdate && f.payload.size() == 4) {
        (f.stream == 0 ? conn_window : stream_window) += u32(0) & 0x7fffffffu;
      } else if ((f.type == kRstStream && f.stream == 1) || f.type == kGoaway ||
                 (f.type == kHeaders && f.stream == 1 && (f.flags & kEndStream))) {
        *refused = true;
      }
    }
    pending.erase(0, used);
    if (*refused || closed) {
      *refused = true;
      break;
    }
    while (conn_window >= 16384 && stream_window >= 16384 && sent < max_bytes) {
      std::string payload = chunk;
      if (sent == 0) payload = prefix + chunk.substr(5);
      if (!conn->Send(Frame(kData, 0, 1, payload))) {
        *refused = true;
        return sent;
      }
      conn_window -= 16384;
      stream_window -= 16384;
      sent += 16384;
    }
  }
  return sent;
}

// A serialized CheckUrlRequest of `n` short distinct URLs (claim mode).
std::string CheckUrlBytes(int n, const std::string& tag) {
  v1::CheckUrlRequest r;
  r.set_mode(v1::CLAIM_MODE_CLAIM);
  for (int i = 0; i < n; ++i)
    r.add_items()->set_url(absl::StrCat("https://", tag, ".example/p/", i));
  return r.SerializeAsString();
}

// Text of `words` pseudo-random words (seeded), distinct per seed.
std::string Text(uint64_t seed, int words) {
  static const char* kWords[] = {"river",  "otter",  "stone",  "bridge", "lamp",
                                 "window", "garden", "paper",  "orbit",  "copper",
                                 "meadow", "signal", "harbor", "ember",  "quartz",
                                 "violet", "tunnel", "falcon", "mirror", "pepper"};
  std::mt19937_64 rng(seed);
  std::string t;
  for (int i = 0; i < words; ++i) {
    if (i > 0) t.push_back(' ');
    t += kWords[rng() % 20];
    t += std::to_string(rng() % 1000);
  }
  return t;
}

// A CheckContent batch of `items` texts of about `words` words each.
v1::CheckContentRequest ContentBatch(uint64_t seed, int items, int words) {
  v1::CheckContentRequest r;
  r.set_mode(v1::CLAIM_MODE_CLAIM);
  for (int i = 0; i < items; ++i) {
    v1::ContentItem* item = r.add_items();
    item->set_url(absl::StrCat("https://big", seed, ".example/", i));
    item->set_text(Text(seed * 100003 + static_cast<uint64_t>(i), words));
  }
  return r;
}

class E2eHostileTest : public ServerTest {
 protected:
  E2eHostileTest() : ServerTest(DEDUPD_BINARY, "e2e_hostile_") {}

  void SetUp() override {
    dir_ = ::dedupd::testing::MakeTempDir(temp_prefix_);
    ASSERT_FALSE(dir_.empty());
  }

  // Starts the server with metrics on and `flags`.
  // DEDUPD_HOSTILE_EXTRA_FLAGS (space-separated) is appended, to measure
  // the cases under other settings (e.g. gRPC's defaults) by hand.
  void Start(std::vector<std::string> flags) {
    flags.push_back("--metrics_listen=127.0.0.1:0");
    if (const char* extra = std::getenv("DEDUPD_HOSTILE_EXTRA_FLAGS")) {
      for (absl::string_view f : absl::StrSplit(extra, ' ', absl::SkipEmpty())) {
        flags.emplace_back(f);
      }
    }
    StartServer(std::move(flags));
  }

  void OnStarted() override {
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    stub_ = v1::Dedup::NewStub(channel_);
    metrics_port_ = MetricsPort(server_->Logs());
    ASSERT_GT(metrics_port_, 0) << server_->Logs();
  }

  // A normal client's CheckUrl of one fresh URL with a `deadline`: the
  // status, and its latency in *took when given.
  grpc::Status Probe(absl::Duration deadline = absl::Seconds(10), absl::Duration* took = nullptr) {
    v1::CheckUrlRequest request;
    request.set_mode(v1::CLAIM_MODE_CLAIM);
    request.add_items()->set_url(absl::StrCat("https://probe.example/", probes_++));
    v1::CheckUrlResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
    const absl::Time start = absl::Now();
    grpc::Status s = stub_->CheckUrl(&context, request, &response);
    if (took != nullptr) *took = absl::Now() - start;
    if (s.ok() &&
        (response.results_size() != 1 || response.results(0).verdict() != v1::URL_VERDICT_NEW)) {
      return grpc::Status(grpc::StatusCode::INTERNAL, "probe: unexpected answer");
    }
    return s;
  }

  // dedupd_rpc_in_flight from /metrics; -1 when the scrape fails.
  double InFlight() {
    return ParseExposition(ScrapeMetrics(metrics_port_)).Value("dedupd_rpc_in_flight");
  }

  // Waits (bounded) until dedupd_rpc_in_flight is `want`; returns the last
  // value read.
  double WaitInFlight(double want, absl::Duration timeout) {
    const absl::Time give_up = absl::Now() + timeout;
    double v = InFlight();
    while (v != want && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(100));
      v = InFlight();
    }
    return v;
  }

  // Waits (bounded) until the server has at most `most` descriptors open;
  // returns the last count.
  int WaitFdsAtMost(int most, absl::Duration timeout) {
    const absl::Time give_up = absl::Now() + timeout;
    int n = OpenFds(server_->pid());
    while (n > most && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(100));
      n = OpenFds(server_->pid());
    }
    return n;
  }

  // Several concurrent normal calls must all be answered OK: none of the
  // --max_concurrent_rpcs slots is held by a call that is gone.
  void ExpectSlotsFree(int n) {
    std::vector<std::thread> threads;
    std::vector<grpc::Status> statuses(static_cast<size_t>(n));
    std::vector<std::unique_ptr<v1::Dedup::Stub>> stubs;
    for (int i = 0; i < n; ++i) stubs.push_back(v1::Dedup::NewStub(channel_));
    for (int i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        v1::CheckUrlRequest request;
        request.add_items()->set_url(absl::StrCat("https://slots.example/", i));
        v1::CheckUrlResponse response;
        grpc::ClientContext context;
        context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
        statuses[static_cast<size_t>(i)] =
            stubs[static_cast<size_t>(i)]->CheckUrl(&context, request, &response);
      });
    }
    for (std::thread& t : threads) t.join();
    for (int i = 0; i < n; ++i) {
      EXPECT_TRUE(statuses[static_cast<size_t>(i)].ok())
          << i << ": " << statuses[static_cast<size_t>(i)].error_code() << " "
          << statuses[static_cast<size_t>(i)].error_message();
    }
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Dedup::Stub> stub_;
  int metrics_port_ = 0;
  int probes_ = 0;
};

// Slow clients: requests never finished (a half-sent preface; a call whose
// message never completes) and responses never read (a stream window of
// 0) hold neither the normal client nor the concurrency slots: with
// --max_concurrent_rpcs=4, 20 stalled unread responses and 20 stalled
// requests, a normal client is answered within 2 s each time, four calls at
// once still fit, and once the stalled clients hang up nothing is left in
// flight.
TEST_F(E2eHostileTest, SlowClientsDoNotHoldOtherClientsOrSlots) {
  Start({"--max_concurrent_rpcs=4", "--worker_threads=2"});
  ASSERT_TRUE(Probe().ok());
  const double idle = WaitInFlight(0, absl::Seconds(5));
  ASSERT_EQ(idle, 0);
  const int fds_before = OpenFds(server_->pid());
  const int64_t rss_before = RssMiB(server_->pid());

  std::vector<std::unique_ptr<RawConn>> stalled;
  // 20 connections that send half the preface and stop.
  for (int i = 0; i < 20; ++i) {
    auto c = std::make_unique<RawConn>(server_->port());
    ASSERT_TRUE(c->ok());
    ASSERT_TRUE(c->Send(std::string(kPreface, 10)));
    stalled.push_back(std::move(c));
  }
  // 20 calls whose request message never completes: the gRPC prefix
  // announces 40,000 bytes, 100 arrive.
  const std::string request = CheckUrlBytes(1000, "slow");
  ASSERT_GT(request.size(), 20000u);
  for (int i = 0; i < 20; ++i) {
    auto c = std::make_unique<RawConn>(server_->port());
    ASSERT_TRUE(c->ok());
    const std::string body = GrpcMessage(request).substr(0, 100);
    ASSERT_TRUE(c->Send(std::string(kPreface) + Settings({}) +
                        CallHeaders(1, "/dedupd.v1.Dedup/CheckUrl") + DataFrames(1, body, false)));
    stalled.push_back(std::move(c));
  }
  // (They are not yet calls for dedupd_rpc_in_flight: gRPC hands a unary
  // call to the server's code once its request is complete.)
  // 20 complete calls from clients that never read: their stream window is
  // 0, so the answer cannot leave the server. One at a time, each waiting
  // for its answer's HEADERS (sent; its DATA cannot be), so that the 4
  // slots do not refuse a burst; a call answered with an error instead
  // ends with trailers and is not pinned.
  int pinned = 0;
  for (int i = 0; i < 20; ++i) {
    auto c = std::make_unique<RawConn>(server_->port());
    ASSERT_TRUE(c->ok());
    ASSERT_TRUE(
        c->Send(std::string(kPreface) + Settings({{kSettingsInitialWindowSize, 0}}) +
                CallHeaders(1, "/dedupd.v1.Dedup/CheckUrl") +
                DataFrames(1, GrpcMessage(CheckUrlBytes(1000, absl::StrCat("unread", i))), true)));
    std::string got;
    bool headers = false;
    bool ended = false;
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    while (!headers && !ended && absl::Now() < give_up) {
      bool closed = false;
      got += c->ReadFor(absl::Milliseconds(50), &closed);
      for (const ParsedFrame& f : ParseFrames(got)) {
        if (f.stream != 1) continue;
        if (f.type == kRstStream || (f.type == kHeaders && (f.flags & kEndStream))) ended = true;
        if (f.type == kHeaders && !(f.flags & kEndStream)) headers = true;
      }
      if (closed) break;
    }
    if (headers && !ended) ++pinned;
    stalled.push_back(std::move(c));
  }
  EXPECT_EQ(pinned, 20);
  // The pinned calls are in flight (they end when their client reads or
  // goes), but hold no concurrency slot.
  const double stalled_in_flight = WaitInFlight(20, absl::Seconds(10));
  EXPECT_EQ(stalled_in_flight, 20);

  absl::Duration slowest;
  for (int i = 0; i < 10; ++i) {
    absl::Duration took;
    const grpc::Status s = Probe(absl::Seconds(kAsan ? 10 : 2), &took);
    ASSERT_TRUE(s.ok()) << s.error_code() << " " << s.error_message();
    slowest = std::max(slowest, took);
  }
  ExpectSlotsFree(4);
  EXPECT_TRUE(Alive(server_->pid()));
  const int64_t rss_stalled = RssMiB(server_->pid());

  for (auto& c : stalled) c->Reset();
  stalled.clear();
  EXPECT_EQ(WaitInFlight(0, absl::Seconds(20)), 0);
  const int fds_after = WaitFdsAtMost(fds_before + 2, absl::Seconds(20));
  EXPECT_LE(fds_after, fds_before + 2);
  ASSERT_TRUE(Probe().ok());
  const int64_t rss_after = RssMiB(server_->pid());
  EXPECT_LT(rss_after, rss_before + kRssSlackMiB);
  std::cout << "[figures] slow clients: slowest normal call " << absl::FormatDuration(slowest)
            << ", in flight while stalled " << stalled_in_flight << ", fds " << fds_before << " -> "
            << fds_after << ", pinned " << pinned << ", RSS MiB " << rss_before << " / "
            << rss_stalled << " / " << rss_after << std::endl;
}

// Clients that disconnect mid-batch (a TCP reset right after a 1,000-item
// batch was sent, and halfway through sending one) and calls cancelled
// while a large CheckContent batch (about 4 MB) is sent or worked on: the
// server stays up, every call ends (nothing in flight), every concurrency
// slot is free again, and later calls are served.
TEST_F(E2eHostileTest, DisconnectsAndCancellationsFreeEverything) {
  Start({"--max_concurrent_rpcs=4", "--worker_threads=2"});
  ASSERT_TRUE(Probe().ok());
  const int fds_before = OpenFds(server_->pid());

  // 30 clients reset right after sending a whole 1,000-item batch, 30 in
  // the middle of sending it.
  for (int i = 0; i < 60; ++i) {
    RawConn c(server_->port());
    ASSERT_TRUE(c.ok());
    std::string bytes =
        std::string(kPreface) + Settings({}) + CallHeaders(1, "/dedupd.v1.Dedup/CheckUrl") +
        DataFrames(1, GrpcMessage(CheckUrlBytes(1000, absl::StrCat("gone", i))), true);
    if (i % 2 == 1) bytes.resize(bytes.size() / 2);
    ASSERT_TRUE(c.Send(bytes));
    if (i % 10 == 0) absl::SleepFor(absl::Milliseconds(20));  // some reach the workers
    c.Reset();
  }

  // Large batches cancelled after 0-400 ms, on their own channel.
  auto channel = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
  auto stub = v1::Dedup::NewStub(channel);
  std::map<grpc::StatusCode, int> codes;
  for (int i = 0; i < 8; ++i) {
    const v1::CheckContentRequest request = ContentBatch(static_cast<uint64_t>(i), 1000, 600);
    ASSERT_GT(request.ByteSizeLong(), 3u << 20);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::CheckContentResponse response;
    grpc::Status status;
    grpc::CompletionQueue cq;
    auto call = stub->PrepareAsyncCheckContent(&context, request, &cq);
    call->StartCall();
    call->Finish(&response, &status, reinterpret_cast<void*>(1));
    absl::SleepFor(absl::Milliseconds(50 * i));
    context.TryCancel();
    void* tag = nullptr;
    bool ok = false;
    ASSERT_EQ(cq.AsyncNext(&tag, &ok, absl::ToChronoTime(absl::Now() + absl::Seconds(30))),
              grpc::CompletionQueue::GOT_EVENT);
    ++codes[status.error_code()];
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  }
  EXPECT_EQ(codes[grpc::StatusCode::OK] + codes[grpc::StatusCode::CANCELLED], 8);
  EXPECT_GE(codes[grpc::StatusCode::CANCELLED], 1);

  EXPECT_TRUE(Alive(server_->pid()));
  EXPECT_EQ(WaitInFlight(0, absl::Seconds(30)), 0);
  ExpectSlotsFree(4);
  const int fds_after = WaitFdsAtMost(fds_before + 2, absl::Seconds(20));
  EXPECT_LE(fds_after, fds_before + 2);
  std::cout << "[figures] cancelled large batches: OK " << codes[grpc::StatusCode::OK]
            << ", CANCELLED " << codes[grpc::StatusCode::CANCELLED] << "; fds " << fds_before
            << " -> " << fds_after << std::endl;
}

// Expired deadlines: a call whose deadline has passed fails at the client
// with DEADLINE_EXCEEDED; one that reaches the server already expired
// (grpc-timeout 1 ms) or expires while its request is incomplete
// (grpc-timeout 1 s, request never finished) is ended by the server: it is
// not in flight 10 s later although its client is still connected.
TEST_F(E2eHostileTest, ExpiredDeadlinesEndOnTheServerToo) {
  Start({"--max_concurrent_rpcs=4", "--worker_threads=2"});
  ASSERT_TRUE(Probe().ok());

  for (int i = 0; i < 50; ++i) {
    v1::CheckUrlRequest request;
    request.add_items()->set_url("https://expired.example/");
    v1::CheckUrlResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() - absl::Seconds(1)));
    EXPECT_EQ(stub_->CheckUrl(&context, request, &response).error_code(),
              grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  // Tiny deadlines on a large batch: the request cannot even be sent.
  std::map<grpc::StatusCode, int> tiny;
  const v1::CheckContentRequest big = ContentBatch(99, 1000, 600);
  for (int i = 0; i < 5; ++i) {
    v1::CheckContentResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Milliseconds(5)));
    ++tiny[stub_->CheckContent(&context, big, &response).error_code()];
  }
  EXPECT_EQ(tiny[grpc::StatusCode::DEADLINE_EXCEEDED], 5);

  std::vector<std::unique_ptr<RawConn>> conns;
  for (int i = 0; i < 10; ++i) {
    auto c = std::make_unique<RawConn>(server_->port());
    ASSERT_TRUE(c->ok());
    std::string bytes = std::string(kPreface) + Settings({});
    // Stream 1: a whole 1,000-item batch, already expired on arrival.
    bytes += CallHeaders(1, "/dedupd.v1.Dedup/CheckUrl", "1m") +
             DataFrames(1, GrpcMessage(CheckUrlBytes(1000, absl::StrCat("late", i))), true);
    // Stream 3: 1 s to send a request that never completes.
    bytes += CallHeaders(3, "/dedupd.v1.Dedup/CheckUrl", "1S") +
             DataFrames(3, GrpcMessage(CheckUrlBytes(10, "never")).substr(0, 20), false);
    ASSERT_TRUE(c->Send(bytes));
    conns.push_back(std::move(c));
  }
  const absl::Time sent = absl::Now();
  const double in_flight = WaitInFlight(0, absl::Seconds(10));
  const absl::Duration ended_after = absl::Now() - sent;
  EXPECT_EQ(in_flight, 0);
  // The server ends each stream (trailers or RST_STREAM) on its own while
  // the clients stay connected: stream 1 at once, stream 3 after its 1 s.
  int answered = 0;
  absl::Duration last_end;
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  for (auto& c : conns) {
    std::string got;
    std::map<uint32_t, bool> ended;
    bool closed = false;
    while (ended.size() < 2 && !closed && absl::Now() < give_up) {
      got += c->ReadFor(absl::Milliseconds(50), &closed);
      for (const ParsedFrame& f : ParseFrames(got)) {
        if ((f.type == kHeaders && (f.flags & kEndStream)) || f.type == kRstStream) {
          ended[f.stream] = true;
        }
      }
    }
    last_end = std::max(last_end, absl::Now() - sent);
    answered += static_cast<int>(ended.count(1) + ended.count(3));
  }
  EXPECT_EQ(answered, 20);
  EXPECT_TRUE(Alive(server_->pid()));
  ASSERT_TRUE(Probe().ok());
  ExpectSlotsFree(4);
  std::cout << "[figures] expired deadlines: no call in flight "
            << absl::FormatDuration(ended_after) << " after sending; all 20 streams ended within "
            << absl::FormatDuration(last_end) << ", tiny-deadline calls DEADLINE_EXCEEDED "
            << tiny[grpc::StatusCode::DEADLINE_EXCEEDED] << "/5" << std::endl;
}

// 10,000 calls at once over 4 connections against --max_concurrent_rpcs=16:
// each ends OK or RESOURCE_EXHAUSTED (no other code, none hangs past its
// 30 s deadline), at least one of each; the server's peak RSS grows by less
// than 64 MiB (16-21 MiB measured; with --max_concurrent_streams unlimited,
// gRPC's default, it grew by 75 and 168 MiB in two runs: every call of a
// connection reached the server at once); a normal client is served right
// after.
TEST_F(E2eHostileTest, TenThousandConcurrentCallsAgainstTheLimit) {
  Start({"--max_concurrent_rpcs=16", "--worker_threads=2"});
  ASSERT_TRUE(Probe().ok());
  const int64_t rss_before = RssMiB(server_->pid());
  const int64_t hwm_before = HwmMiB(server_->pid());

  constexpr int kCalls = 10000;
  constexpr int kChannels = 4;
  std::vector<std::unique_ptr<v1::Dedup::Stub>> stubs;
  for (int i = 0; i < kChannels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection each
    args.SetInt("dedupd.test.channel", i);
    stubs.push_back(v1::Dedup::NewStub(
        grpc::CreateCustomChannel(server_->address(), grpc::InsecureChannelCredentials(), args)));
  }
  struct Call {
    grpc::ClientContext context;
    v1::CheckUrlResponse response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<v1::CheckUrlResponse>> reader;
  };
  std::vector<std::unique_ptr<Call>> calls;
  calls.reserve(kCalls);
  grpc::CompletionQueue cq;
  const absl::Time start = absl::Now();
  for (int i = 0; i < kCalls; ++i) {
    auto call = std::make_unique<Call>();
    call->context.set_deadline(absl::ToChronoTime(start + absl::Seconds(kAsan ? 60 : 30)));
    v1::CheckUrlRequest request;
    request.set_mode(v1::CLAIM_MODE_CLAIM);
    request.add_items()->set_url(absl::StrCat("https://flood.example/", i));
    call->reader = stubs[static_cast<size_t>(i % kChannels)]->PrepareAsyncCheckUrl(&call->context,
                                                                                   request, &cq);
    call->reader->StartCall();
    call->reader->Finish(&call->response, &call->status, call.get());
    calls.push_back(std::move(call));
  }
  int done = 0;
  int64_t hwm_during = hwm_before;
  while (done < kCalls) {
    void* tag = nullptr;
    bool ok = false;
    const auto got = cq.AsyncNext(&tag, &ok, absl::ToChronoTime(start + absl::Seconds(45)));
    if (got != grpc::CompletionQueue::GOT_EVENT) break;
    ++done;
    if (done % 1000 == 0) hwm_during = std::max(hwm_during, HwmMiB(server_->pid()));
  }
  const absl::Duration took = absl::Now() - start;
  ASSERT_EQ(done, kCalls) << "calls still pending after 45 s";
  std::map<grpc::StatusCode, int> codes;
  for (const auto& call : calls) ++codes[call->status.error_code()];
  cq.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (cq.Next(&tag, &ok)) {
  }
  const int ok_calls = codes[grpc::StatusCode::OK];
  const int exhausted = codes[grpc::StatusCode::RESOURCE_EXHAUSTED];
  EXPECT_EQ(ok_calls + exhausted, kCalls)
      << "DEADLINE_EXCEEDED " << codes[grpc::StatusCode::DEADLINE_EXCEEDED] << ", UNAVAILABLE "
      << codes[grpc::StatusCode::UNAVAILABLE];
  EXPECT_GE(ok_calls, 16);
  EXPECT_GE(exhausted, 1);
  EXPECT_TRUE(Alive(server_->pid()));
  ASSERT_TRUE(Probe(absl::Seconds(kAsan ? 15 : 5)).ok());
  EXPECT_EQ(WaitInFlight(0, absl::Seconds(10)), 0);
  const int64_t hwm_after = HwmMiB(server_->pid());
  const int64_t rss_after = RssMiB(server_->pid());
  EXPECT_LT(hwm_after, hwm_before + kFloodPeakMiB);
  std::cout << "[figures] 10,000 calls in " << absl::FormatDuration(took) << ": OK " << ok_calls
            << ", RESOURCE_EXHAUSTED " << exhausted << ", other " << kCalls - ok_calls - exhausted
            << "; server RSS MiB " << rss_before << " -> " << rss_after << ", peak (VmHWM) "
            << hwm_before << " -> " << std::max(hwm_during, hwm_after) << std::endl;
}

// Oversize messages: a request over --max_message_bytes is refused with
// RESOURCE_EXHAUSTED (gRPC's message gives both sizes); a raw client that
// announces a 4 GiB message and streams it is cut off by the gRPC memory
// quota (--grpc_memory_quota_mb=32 here), not by --max_message_bytes, which
// gRPC 1.51 checks only once the whole message is in; too many items is
// INVALID_ARGUMENT naming --max_batch_items; a text over --max_text_bytes is
// that item's INVALID naming --max_text_bytes. The server stays up.
TEST_F(E2eHostileTest, OversizeMessagesGetTheirDocumentedErrors) {
  Start({"--max_message_bytes=1048576", "--max_batch_items=100", "--max_text_bytes=1000",
         "--grpc_memory_quota_mb=32"});
  const int64_t rss_before = RssMiB(server_->pid());
  {
    v1::CheckContentRequest request;
    auto* item = request.add_items();
    item->set_url("https://big.example/");
    item->set_text(std::string(1536 << 10, 'a'));
    v1::CheckContentResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    const grpc::Status s = stub_->CheckContent(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("larger than max"));
    EXPECT_THAT(s.error_message(), HasSubstr("1048576"));
    std::cout << "[figures] oversize message: " << s.error_message() << std::endl;
  }
  {
    v1::CheckUrlRequest request;
    for (int i = 0; i < 101; ++i)
      request.add_items()->set_url(absl::StrCat("https://n.example/", i));
    v1::CheckUrlResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    const grpc::Status s = stub_->CheckUrl(&context, request, &response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(s.error_message(), HasSubstr("--max_batch_items"));
  }
  {
    v1::CheckContentRequest request;
    auto* item = request.add_items();
    item->set_url("https://long.example/");
    item->set_text(std::string(1001, 'b'));
    v1::CheckContentResponse response;
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    const grpc::Status s = stub_->CheckContent(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(response.results_size(), 1);
    EXPECT_EQ(response.results(0).verdict(), v1::CONTENT_VERDICT_INVALID);
    EXPECT_THAT(response.results(0).error(), HasSubstr("--max_text_bytes"));
  }
  // A raw client announces a 4 GiB - 1 message and streams its body as
  // fast as flow control lets it.
  {
    RawConn c(server_->port());
    ASSERT_TRUE(c.ok());
    bool refused = false;
    const absl::Time t0 = absl::Now();
    const size_t let_in = StreamOversize(&c, size_t{64} << 20, absl::Seconds(15), &refused);
    const absl::Duration took = absl::Now() - t0;
    const int64_t rss_streamed = RssMiB(server_->pid());
    std::cout << "[figures] announced 4 GiB message: server let in " << let_in << " bytes in "
              << absl::FormatDuration(took) << ", refused " << refused << ", RSS MiB " << rss_before
              << " -> " << rss_streamed << std::endl;
    // gRPC 1.51 checks --max_message_bytes only once the whole message is
    // in (grpc/grpc#43012): without a memory quota this stream let 64 MiB
    // in, unrefused. The quota (32 MiB here) cancels it.
    EXPECT_TRUE(refused);
    EXPECT_LE(let_in, size_t{48} << 20);
    EXPECT_LT(rss_streamed, rss_before + kRssSlackMiB);
  }
  EXPECT_TRUE(Alive(server_->pid()));
  ASSERT_TRUE(Probe().ok());
  const int64_t rss_after = RssMiB(server_->pid());
  EXPECT_LT(rss_after, rss_before + kRssSlackMiB);
  std::cout << "[figures] oversize: RSS MiB " << rss_before << " -> " << rss_after << std::endl;
}

// Raw TCP garbage on the gRPC port, 200 connections: seeded random bytes,
// an HTTP/1.1 request, a truncated preface, a valid preface followed by
// garbage frames (an undefined type, a frame over SETTINGS_MAX_FRAME_SIZE,
// a HEADERS block that is not HPACK, a DATA frame on stream 0). The server
// closes each (the truncated ones after --handshake_timeout=2s), stays up,
// serves a normal client, and its descriptors return to the baseline.
TEST_F(E2eHostileTest, RawTcpGarbageIsClosedAndForgotten) {
  Start({"--handshake_timeout=2s", "--max_connection_idle=2s"});
  ASSERT_TRUE(Probe().ok());
  const int fds_before = OpenFds(server_->pid());
  const int64_t rss_before = RssMiB(server_->pid());

  std::mt19937_64 rng(20261201);
  const auto random_bytes = [&rng](size_t n) {
    std::string s(n, '\0');
    for (char& c : s) c = static_cast<char>(rng() & 0xff);
    return s;
  };
  std::vector<std::string> payloads;
  payloads.push_back("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n");
  payloads.push_back(std::string(kPreface, 12));  // truncated
  payloads.push_back("");                         // nothing at all
  payloads.push_back(std::string(kPreface) + Settings({}) + Frame(0xfa, 0, 1, random_bytes(64)) +
                     Frame(kPing, 0, 0, random_bytes(8)) + random_bytes(256));
  {
    std::string huge_frame = std::string(kPreface) + Settings({});
    PutBigEndian(&huge_frame, 1u << 23, 3);  // 8 MiB frame: over 16,384
    huge_frame += std::string("\x00\x00\x00\x00\x00\x01", 6);
    huge_frame += random_bytes(1024);
    payloads.push_back(huge_frame);
  }
  payloads.push_back(std::string(kPreface) + Settings({}) +
                     Frame(kHeaders, kEndHeaders, 1, random_bytes(200)));
  payloads.push_back(std::string(kPreface) + Settings({}) + Frame(kData, 0, 0, random_bytes(100)));
  payloads.push_back(std::string(kPreface) + random_bytes(512));

  constexpr int kConnections = 200;
  std::vector<std::unique_ptr<RawConn>> conns;
  std::vector<int> kinds;
  for (int i = 0; i < kConnections; ++i) {
    auto c = std::make_unique<RawConn>(server_->port());
    ASSERT_TRUE(c->ok()) << i;
    // Kinds 0..7 above, then seeded random bytes of random length.
    const int kind = i % 10;
    const std::string bytes = kind < static_cast<int>(payloads.size())
                                  ? payloads[static_cast<size_t>(kind)]
                                  : random_bytes(1 + rng() % 4096);
    c->Send(bytes);  // may fail: the server is allowed to close early
    conns.push_back(std::move(c));
    kinds.push_back(kind);
  }
  ASSERT_TRUE(Probe().ok());  // served while 200 garbage connections are open

  // The server closes every one of them (within the 2 s handshake timeout
  // plus slack for the stalled ones).
  std::map<int, int> open_by_kind;
  const absl::Time give_up = absl::Now() + absl::Seconds(15);
  for (size_t i = 0; i < conns.size(); ++i) {
    const absl::Duration left = std::max(absl::Milliseconds(10), give_up - absl::Now());
    if (!conns[i]->WaitClosed(left)) ++open_by_kind[kinds[i]];
  }
  EXPECT_TRUE(open_by_kind.empty())
      << "kinds left open: " << ::testing::PrintToString(open_by_kind);
  const int fds_closed = WaitFdsAtMost(fds_before + 2, absl::Seconds(10));
  EXPECT_LE(fds_closed, fds_before + 2);
  conns.clear();
  EXPECT_TRUE(Alive(server_->pid()));
  ASSERT_TRUE(Probe().ok());
  const int64_t rss_after = RssMiB(server_->pid());
  EXPECT_LT(rss_after, rss_before + kRssSlackMiB);
  std::cout << "[figures] raw garbage: " << kConnections << " connections; fds " << fds_before
            << " -> " << fds_closed << "; RSS MiB " << rss_before << " -> " << rss_after
            << std::endl;
}

// The connection limits each do what their flag says, one at a time:
// --handshake_timeout closes connections that never finish the preface and
// SETTINGS (and not the ones that did); --max_connection_idle closes a
// connection without calls; --max_concurrent_streams is advertised in the
// server's SETTINGS and a stream past it is refused (RST_STREAM).
TEST_F(E2eHostileTest, ConnectionLimitsTakeEffect) {
  Start({"--handshake_timeout=1s"});
  {
    const StalledHandshakes h = StallHandshakes(server_->port(), 20);
    ASSERT_TRUE(h.opened);
    EXPECT_EQ(h.closed, 20);
    // The connection that sent its SETTINGS is past the handshake: open.
    EXPECT_TRUE(h.finished_stays_open);
    std::cout << "[figures] --handshake_timeout=1s: " << h.closed
              << "/20 stalled connections closed in " << absl::FormatDuration(h.took) << std::endl;
  }

  Start({"--max_connection_idle=1s", "--max_concurrent_streams=7"});
  {
    RawConn idle(server_->port());
    ASSERT_TRUE(idle.Send(std::string(kPreface) + Settings({})));
    const absl::Time start = absl::Now();
    EXPECT_TRUE(idle.WaitClosed(absl::Seconds(30)));
    std::cout << "[figures] --max_connection_idle=1s: idle connection closed after "
              << absl::FormatDuration(absl::Now() - start) << std::endl;
  }
  // Opens `streams` calls whose requests never complete on a fresh
  // connection that acknowledged the server's SETTINGS (the server
  // enforces the limit it advertised once acknowledged, as every client
  // does); returns per stream whether the server sent anything on it and
  // whether it ended it, and the advertised limit in *advertised.
  struct StreamSeen {
    bool any = false;
    bool ended = false;
  };
  const auto open_streams = [this](uint32_t streams, uint32_t* advertised) {
    std::map<uint32_t, StreamSeen> seen;
    RawConn c(server_->port());
    EXPECT_TRUE(c.Send(std::string(kPreface) + Settings({})));
    std::string got;
    bool closed = false;
    const absl::Time give_up = absl::Now() + absl::Seconds(10);
    bool seen_settings = false;
    while (!seen_settings && !closed && absl::Now() < give_up) {
      got += c.ReadFor(absl::Milliseconds(50), &closed);
      for (const ParsedFrame& f : ParseFrames(got)) {
        if (f.type != kSettings || (f.flags & kAck)) continue;
        seen_settings = true;
        for (size_t i = 0; i + 6 <= f.payload.size(); i += 6) {
          const uint32_t id = (static_cast<uint32_t>(static_cast<uint8_t>(f.payload[i])) << 8) |
                              static_cast<uint8_t>(f.payload[i + 1]);
          uint32_t v = 0;
          for (size_t k = 2; k < 6; ++k) v = (v << 8) | static_cast<uint8_t>(f.payload[i + k]);
          if (id == kSettingsMaxConcurrentStreams) *advertised = v;
        }
      }
    }
    std::string bytes = Frame(kSettings, kAck, 0, "");
    for (uint32_t i = 0; i < streams; ++i) {
      const uint32_t stream = 2 * i + 1;
      bytes += CallHeaders(stream, "/dedupd.v1.Dedup/CheckUrl") +
               DataFrames(stream, GrpcMessage(CheckUrlBytes(10, "s")).substr(0, 10), false);
    }
    EXPECT_TRUE(c.Send(bytes));
    got.clear();
    got = c.ReadFor(absl::Seconds(1), &closed);
    for (const ParsedFrame& f : ParseFrames(got)) {
      if (f.stream == 0) continue;
      seen[f.stream].any = true;
      if (f.type == kRstStream || (f.type == kHeaders && (f.flags & kEndStream))) {
        seen[f.stream].ended = true;
      }
    }
    return seen;
  };
  {
    // 7 streams: each accepted (a WINDOW_UPDATE for its request), none ended.
    uint32_t advertised = 0;
    std::map<uint32_t, StreamSeen> seen = open_streams(7, &advertised);
    EXPECT_EQ(advertised, 7u);
    for (uint32_t stream = 1; stream <= 13; stream += 2) {
      EXPECT_TRUE(seen[stream].any) << stream;
      EXPECT_FALSE(seen[stream].ended) << stream;
    }
    // 8 streams: the 8th is not taken (nothing on it but, at most, a
    // RST_STREAM). gRPC 1.51 then also ends the connection's other calls
    // (UNIMPLEMENTED): a client that breaks the limit loses its calls.
    seen = open_streams(8, &advertised);
    EXPECT_TRUE(!seen[15].any || seen[15].ended);
    int ended = 0;
    for (uint32_t stream = 1; stream <= 13; stream += 2) ended += seen[stream].ended;
    std::cout << "[figures] --max_concurrent_streams=7: advertised " << advertised
              << "; with an 8th stream, " << ended << " of the 7 others ended by the server"
              << std::endl;
  }
  ASSERT_TRUE(Probe().ok());
}

// The health-only listener (--health_listen, plaintext, reachable by
// anything the kubelet can reach) has the same connection limits: stalled
// handshakes are closed after --handshake_timeout (gRPC's default would
// keep them 120 s), a connection past its SETTINGS stays, and health
// answers meanwhile.
TEST_F(E2eHostileTest, HealthListenerHasTheConnectionLimitsToo) {
  Start({"--handshake_timeout=1s", "--health_listen=127.0.0.1:0"});
  const int health_port = LoggedPort(server_->Logs(), "health");
  ASSERT_GT(health_port, 0) << server_->Logs();
  const StalledHandshakes h = StallHandshakes(health_port, 10);
  ASSERT_TRUE(h.opened);
  EXPECT_EQ(h.closed, 10);
  EXPECT_TRUE(h.finished_stays_open);

  auto health = grpc::health::v1::Health::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", health_port), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status s = health->Check(&context, request, &response);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
  std::cout << "[figures] health listener, --handshake_timeout=1s: " << h.closed
            << "/10 stalled connections closed in " << absl::FormatDuration(h.took) << std::endl;
}

// A memory quota smaller than two messages of the allowed size would make
// gRPC cancel legitimate requests: dedupd refuses to start with it.
TEST(E2eHostileFlags, MemoryQuotaBelowTwoMessagesIsRefused) {
  absl::StatusOr<testing::CommandResult> r =
      testing::RunCommand({DEDUPD_BINARY, "--listen=127.0.0.1:0", "--data_dir=/dev/null/dedupd",
                           "--max_message_bytes=16777216", "--grpc_memory_quota_mb=16"},
                          "", absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 2) << r->err;
  EXPECT_THAT(r->err, HasSubstr("--grpc_memory_quota_mb=16 is less than two messages"));
  // 32 MiB holds two 16 MiB messages: accepted (the start then fails later,
  // on the data directory under /dev/null, not on the flags).
  r = testing::RunCommand({DEDUPD_BINARY, "--listen=127.0.0.1:0", "--data_dir=/dev/null/dedupd",
                           "--max_message_bytes=16777216", "--grpc_memory_quota_mb=32"},
                          "", absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->err, ::testing::Not(HasSubstr("less than two messages"))) << r->err;
}

}  // namespace
}  // namespace dedupd
