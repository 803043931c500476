#include "tests/testing/metrics_scrape.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tests/testing/server_process.h"

namespace dedupd::testing {

std::string ScrapeMetrics(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval tv{10, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string body;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string request = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) body.append(buf, n);
    }
  }
  ::close(fd);
  return body;
}

int MetricsPort(const std::string& logs) { return LoggedPort(logs, "metrics"); }

double Exposition::Value(const std::string& name,
                         const std::map<std::string, std::string>& labels) const {
  double sum = 0;
  bool found = false;
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) match = false;
    }
    if (!match) continue;
    sum += s.value;
    found = true;
  }
  return found ? sum : -1;
}

namespace {

// Parses `{a="x",b="y"}` at the start of `*in` (escapes: \\ \" \n).
bool ParseLabels(absl::string_view* in, std::map<std::string, std::string>* labels) {
  if (!absl::ConsumePrefix(in, "{")) return true;
  while (!absl::ConsumePrefix(in, "}")) {
    const size_t eq = in->find('=');
    if (eq == absl::string_view::npos) return false;
    std::string key(in->substr(0, eq));
    in->remove_prefix(eq + 1);
    if (!absl::ConsumePrefix(in, "\"")) return false;
    std::string value;
    for (;;) {
      if (in->empty()) return false;
      const char c = in->front();
      in->remove_prefix(1);
      if (c == '"') break;
      if (c == '\\') {
        if (in->empty()) return false;
        const char e = in->front();
        in->remove_prefix(1);
        value.push_back(e == 'n' ? '\n' : e);
      } else {
        value.push_back(c);
      }
    }
    if (!labels->emplace(key, value).second) return false;  // duplicate label
    absl::ConsumePrefix(in, ",");
  }
  return true;
}

}  // namespace

Exposition ParseExposition(const std::string& scrape) {
  Exposition e;
  absl::string_view body = scrape;
  if (absl::StartsWith(body, "HTTP/")) {
    const size_t end = body.find("\r\n\r\n");
    body = end == absl::string_view::npos ? absl::string_view() : body.substr(end + 4);
  }
  for (absl::string_view line : absl::StrSplit(body, '\n', absl::SkipEmpty())) {
    absl::string_view rest = line;
    if (absl::ConsumePrefix(&rest, "# TYPE ")) {
      const size_t sp = rest.find(' ');
      if (sp == absl::string_view::npos) {
        e.errors.emplace_back(line);
        continue;
      }
      e.families[std::string(rest.substr(0, sp))].type = std::string(rest.substr(sp + 1));
      continue;
    }
    if (absl::ConsumePrefix(&rest, "# HELP ")) {
      const size_t sp = rest.find(' ');
      Exposition::Family& f = e.families[std::string(rest.substr(0, sp))];
      f.has_help = true;
      f.help = sp == absl::string_view::npos ? "" : std::string(rest.substr(sp + 1));
      continue;
    }
    if (absl::StartsWith(rest, "#")) continue;
    Exposition::Sample s;
    const size_t name_end = rest.find_first_of("{ ");
    if (name_end == absl::string_view::npos) {
      e.errors.emplace_back(line);
      continue;
    }
    s.name = std::string(rest.substr(0, name_end));
    rest.remove_prefix(name_end);
    if (!ParseLabels(&rest, &s.labels) || !absl::ConsumePrefix(&rest, " ")) {
      e.errors.emplace_back(line);
      continue;
    }
    // An optional timestamp follows the value.
    rest = rest.substr(0, rest.find(' '));
    if (rest == "Nan" || rest == "NaN") {
      s.value = 0;
    } else if (!absl::SimpleAtod(rest, &s.value)) {
      e.errors.emplace_back(line);
      continue;
    }
    e.samples.push_back(std::move(s));
  }
  return e;
}

}  // namespace dedupd::testing
