// soak_workload.h: what the kill -9 soak (soak.cc) sends and where its
// processes meet: the shared pools' sizes, the texts of documents and
// chunks (pure functions of kind, id and seed, so the coordinator can check
// after a restart exactly what a client was acknowledged), and the files of
// the work directory. Used by the coordinator (soak.cc) and the client
// processes (soak_client.cc).
//
// Example:
//   std::string text = DocText('d', id, seed);  // what client and checker agree on
#ifndef DEDUPD_BENCH_LOAD_SOAK_WORKLOAD_H_
#define DEDUPD_BENCH_LOAD_SOAK_WORKLOAD_H_

#include <cstdint>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/load/load_driver.h"

namespace dedupd::bench {

inline constexpr int kSharedUrls = 200000;
inline constexpr int kSharedTexts = 20000;
inline constexpr int kSharedChunks = 20000;
inline constexpr int kUrlsPerCall = 10, kDocsPerCall = 4, kChunksPerDoc = 6;

// Text of `words` pseudo-random words (of 5,000), a pure function of
// (kind, id, seed): different ids are far apart in SimHash.
inline std::string Words(char kind, uint64_t id, uint64_t seed, int words) {
  std::string out = absl::StrCat(std::string(1, kind), id, ":");
  uint64_t h = Mix(id ^ Mix(seed ^ static_cast<uint64_t>(kind)));
  for (int i = 0; i < words; ++i) {
    h = Mix(h);
    uint64_t w = h % 5000;
    out.push_back(' ');
    for (int c = 0; c < 3 || w > 0; ++c) {
      out.push_back(static_cast<char>('a' + w % 26));
      w /= 26;
    }
  }
  return out;
}
inline std::string DocText(char kind, uint64_t id, uint64_t seed) {
  return Words(kind, id, seed, 40);
}
inline std::string ChunkText(char kind, uint64_t id, uint64_t seed) {
  return Words(static_cast<char>(kind - 'a' + 'A'), id, seed, 30);
}

// Shared URL k of the pool, on one of 100 hosts.
inline std::string SharedUrl(size_t k) {
  return absl::StrCat("https://shared", k % 100, ".example/p/", k);
}

inline int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// ReadPort returns the port in `path`, or 0.
inline int ReadPort(const std::string& path) {
  std::ifstream in(path);
  int port = 0;
  if (!(in >> port) || port <= 0 || port > 65535) return 0;
  return port;
}

inline std::string WorkPath(const std::string& work, const std::string& name) {
  return absl::StrCat(work, "/", name);
}

// How a CheckUrl or CompleteUrls call is resent: at most kMaxAttempts
// attempts, none started later than kRetryWindow after the first; waits
// between them double from kFirstBackoff up to kMaxBackoff (and while the
// server has no port file, no attempt is counted).
inline constexpr int kMaxAttempts = 6;
inline constexpr absl::Duration kRetryWindow = absl::Seconds(20);
inline constexpr absl::Duration kFirstBackoff = absl::Milliseconds(50);
inline constexpr absl::Duration kMaxBackoff = absl::Seconds(1);

}  // namespace dedupd::bench

#endif  // DEDUPD_BENCH_LOAD_SOAK_WORKLOAD_H_
