// url_query.h: INTERNAL to core/url (not part of the public API; include
// url_normalizer.h instead). Step 7 of UrlNormalizer::Normalize: the query.
// Tracking parameters and session ids (built-in lists), the policy's
// dropped parameters and, for a host with an allowlist, every parameter not
// on it are dropped; the rest are sorted stably by their normalized key.
//
// Example:
//   QueryScratch q;
//   NormalizeQuery("utm_source=x&b=2&a=1", true, policy, nullptr, &q, &fired);
//   // q.order lists q.params as "a=1", "b=2"
#ifndef DEDUPD_CORE_URL_URL_QUERY_H_
#define DEDUPD_CORE_URL_URL_QUERY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "core/url/url_internal.h"
#include "core/url/url_policy.h"

namespace dedupd {
namespace url_internal {

// One kept parameter, normalized, in QueryScratch::query.
struct Param {
  uint32_t offset;  // into QueryScratch::query
  uint32_t size;
  uint32_t key_size;  // bytes before the first '=' (or size)
};

// QueryScratch: NormalizeQuery's output and buffers, reused across calls on
// one thread. Not thread-safe.
struct QueryScratch {
  std::string query;  // normalized parameters, back to back
  std::string key;    // a decoded query key
  std::vector<Param> params;
  std::vector<uint32_t> order;  // indexes into params, in output order
};

// NormalizeQuery normalizes the encoded query `q` (without '?'; `has_query`
// says whether there was a '?') into `*scratch`: the kept parameters with
// escapes normalized, in `scratch->params`, and their output order in
// `scratch->order`. `rule` is the host's rule or null.
void NormalizeQuery(absl::string_view q, bool has_query, const UrlPolicy& policy,
                    const HostRule* rule, QueryScratch* scratch, FiredRules* fired);

}  // namespace url_internal
}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_URL_QUERY_H_
