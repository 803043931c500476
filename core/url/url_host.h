// url_host.h: INTERNAL to core/url (not part of the public API; include
// url_normalizer.h instead). Step 4 of UrlNormalizer::Normalize: the host.
// Reg-names are percent-decoded, lowercased, mapped by IDNA2008/UTS #46
// (libidn2) to punycode, and WHATWG IPv4 forms become dotted decimal; IPv6
// literals take their RFC 5952 text.
//
// Example:
//   std::string host;
//   DEDUPD_RETURN_IF_ERROR(NormalizeHost(parts, &host, &fired));
//   // "EXAMPLE.com." -> "example.com", "0x7f.1" -> "127.0.0.1",
//   // "[2001:DB8:0:0::1]" -> "[2001:db8::1]"
#ifndef DEDUPD_CORE_URL_URL_HOST_H_
#define DEDUPD_CORE_URL_URL_HOST_H_

#include <string>

#include "absl/status/status.h"
#include "core/url/url_internal.h"

namespace dedupd {
namespace url_internal {

// NormalizeHost writes the canonical host of `parts` (IPv6 literals in
// brackets) to `*host`. Returns InvalidArgument for an IPvFuture literal, a
// missing or invalid host, an IDN that IDNA2008 rejects, a host over
// UrlNormalizer::kMaxHostBytes.
absl::Status NormalizeHost(const UriParts& parts, std::string* host, FiredRules* fired);

}  // namespace url_internal
}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_URL_HOST_H_
