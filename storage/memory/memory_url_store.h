// memory_url_store.h: an in-memory UrlStore, the fake every engine and
// server test uses instead of a mock, and the reference the conformance
// suite (url_store_conformance.h) holds the RocksDB backend to. Nothing is
// persisted; everything is lost when the object is destroyed.
//
// Example:
//   MemoryUrlStore store;
//   std::vector<UrlClaim> out;
//   DEDUPD_RETURN_IF_ERROR(store.ClaimUrls({"http://a.example/"}, absl::Now(),
//                                          &out));
//
// Thread safety: thread-safe. ClaimUrls takes an exclusive lock for the
// whole batch (which is what makes a batch atomic); LookupUrls takes a
// shared lock.
#ifndef DEDUPD_STORAGE_MEMORY_MEMORY_URL_STORE_H_
#define DEDUPD_STORAGE_MEMORY_MEMORY_URL_STORE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "storage/url_store.h"

namespace dedupd {

class MemoryUrlStore final : public UrlStore {
 public:
  MemoryUrlStore() = default;
  MemoryUrlStore(const MemoryUrlStore&) = delete;
  MemoryUrlStore& operator=(const MemoryUrlStore&) = delete;

  // See UrlStore. Errors: InvalidArgument when a key is empty or the
  // namespace is bad (nothing is recorded then). Complexity: O(keys)
  // expected.
  absl::Status Claim(const UrlClaimOptions& options, absl::Span<const std::string> keys,
                     absl::Time now, std::vector<UrlClaim>* results) override;

  // See UrlStore. Errors: InvalidArgument when a key is empty or the
  // namespace is bad.
  absl::Status LookupRecords(absl::string_view name_space, absl::Span<const std::string> keys,
                             std::vector<std::optional<UrlRecord>>* records) override;

  // See UrlStore. Errors: InvalidArgument as LookupRecords.
  absl::Status Complete(absl::string_view name_space, uint64_t claim_id_hash,
                        absl::Span<const std::string> keys,
                        std::vector<UrlCompletion>* results) override;

  // Erase removes `key` of the empty namespace (LookupUrls misses it, a
  // claim is new again); returns whether it was recorded. For
  // MemoryContentStore::Forget.
  bool Erase(const std::string& key);

  // size returns how many distinct keys are recorded, in all namespaces.
  size_t size() const;

 private:
  mutable absl::Mutex mu_;
  // MapKey(namespace, normalized URL) → its record.
  absl::flat_hash_map<std::string, UrlRecord> records_ ABSL_GUARDED_BY(mu_);
};

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_MEMORY_MEMORY_URL_STORE_H_
