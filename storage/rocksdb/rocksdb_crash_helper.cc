// rocksdb_crash_helper: a child process for rocksdb_store_test's kill -9
// durability test (not installed, not a tool). It opens the store at
// argv[1] with sync_writes off, claims the keys given one per line on
// stdin until a line "go", prints "claimed <n_new>\n" on stdout once
// ClaimUrls has answered, and then waits for the parent to SIGKILL it,
// without closing the store (or exits without closing it at stdin EOF).
//
// With a third argument "chunks" it claims chunk documents instead: each
// line before "go" is "<document url>\t<text>\t<simhash, hex>", claimed
// (CheckChunks with claim, one call per line, in order) as a document of
// one chunk "0" whose text digest is SHA-256(<text>); it prints
// "claimed <n>" with n the number of chunks answered kNew.
//
// With a third argument "forget" it forgets the URLs given one per line
// (RocksDbStore::Forget, one call per line, in order) and prints
// "forgot <n>" with n the number of calls whose result found() the URL.
//
// Usage: rocksdb_crash_helper <store path> <normalizer version> [chunks|forget]

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "core/text/sha256.h"
#include "storage/rocksdb/rocksdb_store.h"

int main(int argc, char** argv) {
  const bool chunks = argc == 4 && std::string(argv[3]) == "chunks";
  const bool forget = argc == 4 && std::string(argv[3]) == "forget";
  if (argc != 3 && !chunks && !forget) {
    std::fprintf(stderr, "usage: %s <store path> <normalizer version> [chunks|forget]\n", argv[0]);
    return 2;
  }
  dedupd::RocksDbStoreOptions options;
  options.path = argv[1];
  options.normalizer_version = static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  options.sync_writes = false;  // the point: no fsync, still crash-safe
  absl::StatusOr<std::unique_ptr<dedupd::RocksDbStore>> store = dedupd::RocksDbStore::Open(options);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", store.status().ToString().c_str());
    return 1;
  }
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(std::cin, line) && line != "go") keys.push_back(line);

  size_t fresh = 0;
  if (forget) {
    size_t found = 0;
    for (const std::string& url : keys) {
      absl::StatusOr<dedupd::ForgetResult> r = (*store)->Forget(url, absl::Now());
      if (!r.ok()) {
        std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
        return 1;
      }
      found += r->found() ? 1 : 0;
    }
    std::printf("forgot %zu\n", found);
  } else if (chunks) {
    for (const std::string& k : keys) {
      std::vector<std::string> fields = absl::StrSplit(k, '\t');
      uint64_t simhash = 0;
      if (fields.size() != 3 || !absl::SimpleHexAtoi(fields[2], &simhash)) {
        std::fprintf(stderr, "bad chunk line: %s\n", k.c_str());
        return 2;
      }
      dedupd::ChunkDocument doc;
      doc.document_url = fields[0];
      doc.chunks.push_back({"0", dedupd::Sha256(fields[1]), simhash, 3});
      dedupd::ChunkAnswer answer;
      absl::Status s = (*store)->CheckChunks(doc, /*claim=*/true, absl::Now(), &answer);
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.ToString().c_str());
        return 1;
      }
      for (const dedupd::ChunkOutcome& o : answer.outcomes) {
        fresh += o.verdict == dedupd::ChunkVerdict::kNew ? 1 : 0;
      }
    }
  } else {
    std::vector<dedupd::UrlClaim> out;
    absl::Status s = (*store)->ClaimUrls(keys, absl::Now(), &out);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
    for (const dedupd::UrlClaim& c : out) fresh += c.is_new ? 1 : 0;
  }
  if (!forget) std::printf("claimed %zu\n", fresh);
  std::fflush(stdout);
  // Wait to be killed. Should the parent die first, stdin reaches EOF and
  // we leave with _exit, which also skips closing the store.
  while (std::getline(std::cin, line)) {
  }
  _exit(0);
}
