// url_store.h: the URL layer's side of the storage seam. Domain-level: the
// store claims a batch of normalized URLs atomically; how it keeps them is
// the backend's business (docs/storage_format.md for RocksDB).
//
// Example:
//   std::vector<std::string> keys = {"http://a.example/x", "http://a.example/x"};
//   std::vector<UrlClaim> out;
//   DEDUPD_RETURN_IF_ERROR(store->ClaimUrls(keys, absl::Now(), &out));
//   // out[0].is_new == true (unless claimed earlier), out[1].is_new == false
#ifndef DEDUPD_STORAGE_URL_STORE_H_
#define DEDUPD_STORAGE_URL_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace dedupd {

// The answer for one claimed key.
struct UrlClaim {
  // True when this call recorded the key (it was absent before).
  bool is_new = false;
  // When the key was first recorded: `now` of the call that recorded it,
  // truncated to microseconds.
  absl::Time first_seen;
};

// UrlStore: the seen-set of normalized URLs. Implementations are
// thread-safe.
class UrlStore {
 public:
  virtual ~UrlStore() = default;

  // ClaimUrls records every key of `keys` that is not recorded yet, with
  // first-seen time `now`, and sets (*results)[i] for keys[i]. Atomic across
  // concurrent callers: of all calls claiming one key, exactly one gets
  // is_new; within one batch a repeated key is new at most at its first
  // position. Returns OK only after the new records are in the write-ahead
  // log (and synced, when the backend is configured to sync), so a process
  // crash cannot lose a key answered is_new.
  // Errors: Unavailable (transient, nothing recorded: retry), ResourceExhausted
  // (disk full), DataLoss, Internal. On error `results` is unspecified and no
  // key may be treated as claimed.
  // REQUIRES: every key non-empty.
  virtual absl::Status ClaimUrls(absl::Span<const std::string> keys, absl::Time now,
                                 std::vector<UrlClaim>* results) = 0;

  // LookupUrls sets (*results)[i] to the first-seen time of keys[i], or
  // nullopt when it is not recorded. Records nothing.
  virtual absl::Status LookupUrls(absl::Span<const std::string> keys,
                                  std::vector<std::optional<absl::Time>>* results) = 0;

  // approximate returns true for a backend whose seen-set is approximate
  // (BloomUrlStore): a key it reports as seen was *probably* recorded (a
  // false positive is possible; the server answers SEEN_PROBABLY) and its
  // first-seen time is unknown (absl::InfinitePast()). Exact backends
  // return false. Default: false.
  virtual bool approximate() const { return false; }
};

// CheckUrlKeys returns InvalidArgument naming the first empty key of `keys`
// ("key 3 of the batch is empty"), OK otherwise. Every backend checks
// ClaimUrls/LookupUrls input with it.
absl::Status CheckUrlKeys(absl::Span<const std::string> keys);

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_URL_STORE_H_
