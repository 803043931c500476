// url_fast_parse.h: INTERNAL to core/url (not part of the public API;
// include url_normalizer.h instead). The fast path of step 2: a strict
// hand-written RFC 3986 parser for the common absolute URL, because Boost.URL
// 1.81's parse_uri_reference costs ~0.8 us per 80-byte URL, more than all the
// normalization steps together.
//
// Example:
//   UriParts parts;
//   if (!ParseAbsoluteFast(text, &parts)) { /* Boost.URL decides */ }
#ifndef DEDUPD_CORE_URL_URL_FAST_PARSE_H_
#define DEDUPD_CORE_URL_URL_FAST_PARSE_H_

#include "absl/strings/string_view.h"
#include "core/url/url_internal.h"

namespace dedupd {
namespace url_internal {

// ParseAbsoluteFast splits `s` when it is `scheme "://" [userinfo "@"]
// reg-name [":" *DIGIT] path-abempty ["?" query]` per RFC 3986 and returns
// true; returns false (leaving the decision to Boost.URL) for anything else,
// including IP literals and every malformed input. For what it accepts, its
// parts equal Boost.URL's, except that dotted-decimal IPv4 is a reg-name
// here (the host step treats both alike).
// `parts` views `s`. O(s.size()).
bool ParseAbsoluteFast(absl::string_view s, UriParts* parts);

}  // namespace url_internal
}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_URL_FAST_PARSE_H_
