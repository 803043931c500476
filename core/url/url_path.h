// url_path.h: INTERNAL to core/url (not part of the public API; include
// url_normalizer.h instead). Step 6 of UrlNormalizer::Normalize: the path,
// including the host rule's path policy (case, trailing slash).
//
// Example:
//   NormalizePath("/a/./%7euser/;jsessionid=1", nullptr, &path, &tmp, &fired);
//   // path == "/a/~user"
#ifndef DEDUPD_CORE_URL_URL_PATH_H_
#define DEDUPD_CORE_URL_URL_PATH_H_

#include <string>

#include "absl/strings/string_view.h"
#include "core/url/url_internal.h"
#include "core/url/url_policy.h"

namespace dedupd {
namespace url_internal {

// NormalizePath writes the canonical form of the encoded path `encoded` to
// `*path` (non-empty, starting with '/'): escapes normalized, ";jsessionid="
// dropped, dot segments removed (RFC 3986 §5.2.4), then `rule`'s case and
// trailing-slash policy (the default policy strips trailing slashes when
// `rule` is null). `*tmp` is scratch space.
void NormalizePath(absl::string_view encoded, const HostRule* rule, std::string* path,
                   std::string* tmp, FiredRules* fired);

}  // namespace url_internal
}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_URL_PATH_H_
