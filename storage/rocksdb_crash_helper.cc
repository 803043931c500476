// rocksdb_crash_helper: a child process for rocksdb_store_test's kill -9
// durability test (not installed, not a tool). It opens the store at
// argv[1] with sync_writes off, claims the keys given one per line on
// stdin until a line "go", prints "claimed <n_new>\n" on stdout once
// ClaimUrls has answered, and then waits for the parent to SIGKILL it,
// without closing the store (or exits without closing it at stdin EOF).
//
// Usage: rocksdb_crash_helper <store path> <normalizer version>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "absl/time/clock.h"
#include "storage/rocksdb_store.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <store path> <normalizer version>\n",
                 argv[0]);
    return 2;
  }
  dedupd::RocksDbStoreOptions options;
  options.path = argv[1];
  options.normalizer_version =
      static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  options.sync_writes = false;  // the point: no fsync, still crash-safe
  absl::StatusOr<std::unique_ptr<dedupd::RocksDbStore>> store =
      dedupd::RocksDbStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(std::cin, line) && line != "go") keys.push_back(line);

  std::vector<dedupd::UrlClaim> out;
  absl::Status s = (*store)->ClaimUrls(keys, absl::Now(), &out);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  size_t fresh = 0;
  for (const dedupd::UrlClaim& c : out) fresh += c.is_new ? 1 : 0;
  std::printf("claimed %zu\n", fresh);
  std::fflush(stdout);
  // Wait to be killed. Should the parent die first, stdin reaches EOF and
  // we leave with _exit, which also skips closing the store.
  while (std::getline(std::cin, line)) {
  }
  _exit(0);
}
