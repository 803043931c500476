// fresh_store.h: the store a store-level benchmark fills — a new
// RocksDbStore in DIR/store, any store left there by an earlier run removed
// first.
//
// Example:
//   dedupd::RocksDbStoreOptions options;
//   auto store = dedupd::bench::OpenFreshStore("/tmp/cs", &options);
//   // options.path is now "/tmp/cs/store"; reopen with the same options.
#ifndef DEDUPD_BENCH_MICRO_FRESH_STORE_H_
#define DEDUPD_BENCH_MICRO_FRESH_STORE_H_

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include "absl/status/statusor.h"
#include "core/url/url_normalizer.h"
#include "storage/rocksdb/rocksdb_store.h"

namespace dedupd::bench {

// OpenFreshStore sets options->path (DIR/store) and the normalizer version,
// keeps the other options as given, and opens the new store.
inline absl::StatusOr<std::unique_ptr<RocksDbStore>> OpenFreshStore(const std::string& dir,
                                                                    RocksDbStoreOptions* options) {
  options->path = dir + "/store";
  options->normalizer_version = UrlNormalizer::kVersion;
  std::error_code ec;
  std::filesystem::remove_all(options->path, ec);
  std::filesystem::create_directories(dir, ec);
  return RocksDbStore::Open(*options);
}

}  // namespace dedupd::bench

#endif  // DEDUPD_BENCH_MICRO_FRESH_STORE_H_
