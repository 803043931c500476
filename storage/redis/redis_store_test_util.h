// redis_store_test_util.h: the setup the Redis store tests share
// (redis_url_store_test.cc, redis_content_store_test.cc,
// redis_chunk_store_test.cc): fresh key prefixes, URL store options with
// bounded timeouts, and a URL store opened on the process's shared
// cluster (tests/testing/redis_cluster_fixture.h), and a front end: that
// URL store with a content or chunk layer on it. Test-only.
//
// Example:
//   using FrontEnd = testing::RedisFrontEnd<RedisChunkStore>;
//   absl::StatusOr<FrontEnd> f = FrontEnd::Open(testing::FreshKeyPrefix("k"));
//   if (f.ok()) f->layer->CheckChunks(...);
//
// Thread safety: FreshKeyPrefix is thread-safe; the rest are pure or open
// a store of their own.
#ifndef DEDUPD_STORAGE_REDIS_REDIS_STORE_TEST_UTIL_H_
#define DEDUPD_STORAGE_REDIS_REDIS_STORE_TEST_UTIL_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/redis/redis_url_store.h"
#include "tests/testing/redis_cluster_fixture.h"

namespace dedupd::testing {

// FreshKeyPrefix returns `letter` + n + ":", n counting up from 0 per
// process: a key prefix no other case of this process uses.
std::string FreshKeyPrefix(absl::string_view letter);

// TestUrlStoreOptions returns options for a store on `cluster` under
// `prefix`, with timeouts generous for a loaded 2-core machine and still
// bounded (connect 2 s, command 10 s, deadline 20 s).
RedisUrlStoreOptions TestUrlStoreOptions(const RedisCluster& cluster, std::string prefix);

// OpenSharedClusterUrlStore opens a URL store on SharedCluster() under
// `prefix`. Returns FailedPrecondition when there is no cluster, else what
// RedisUrlStore::Open returns.
absl::StatusOr<std::unique_ptr<RedisUrlStore>> OpenSharedClusterUrlStore(std::string prefix);

// RedisFrontEnd is one front end on the shared cluster: a URL store (the
// meta, the router) and a `Layer` (RedisContentStore, RedisChunkStore:
// anything with `static std::unique_ptr<Layer> Open(RedisUrlStore*)`) on it.
// Thread-compatible, as its stores are.
template <typename Layer>
struct RedisFrontEnd {
  std::unique_ptr<RedisUrlStore> urls;
  std::unique_ptr<Layer> layer;  // uses `urls`

  // Open opens a front end under `prefix`; errors as
  // OpenSharedClusterUrlStore.
  static absl::StatusOr<RedisFrontEnd> Open(const std::string& prefix) {
    absl::StatusOr<std::unique_ptr<RedisUrlStore>> urls = OpenSharedClusterUrlStore(prefix);
    if (!urls.ok()) return urls.status();
    RedisFrontEnd f;
    f.urls = *std::move(urls);
    f.layer = Layer::Open(f.urls.get());
    return f;
  }

  // Reopen closes this front end, then opens a new one on `prefix`:
  // everything the old one recorded is in the cluster, nothing in the
  // process. On error the front end is left closed.
  absl::Status Reopen(const std::string& prefix) {
    *this = RedisFrontEnd{};
    absl::StatusOr<RedisFrontEnd> f = Open(prefix);
    if (!f.ok()) return f.status();
    *this = *std::move(f);
    return absl::OkStatus();
  }
};

}  // namespace dedupd::testing

#endif  // DEDUPD_STORAGE_REDIS_REDIS_STORE_TEST_UTIL_H_
