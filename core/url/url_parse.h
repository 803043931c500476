// url_parse.h: INTERNAL to core/url (not part of the public API; include
// url_normalizer.h instead). Steps 1 and 2 of UrlNormalizer::Normalize:
// screening, RFC 3986 parsing (the fast parser, else Boost.URL) and
// resolution against the base, down to the UriParts the later steps use.
//
// Example:
//   UriParts parts;
//   bool had_fragment = false;
//   DEDUPD_RETURN_IF_ERROR(ParseUrl(url, base, true, &scratch, &parts,
//                                   &had_fragment, &fired));
#ifndef DEDUPD_CORE_URL_URL_PARSE_H_
#define DEDUPD_CORE_URL_URL_PARSE_H_

#include <boost/url/url.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/url/url_internal.h"

namespace dedupd {
namespace url_internal {

// ParseScratch: the buffers ParseUrl's results view, reused across calls on
// one thread (steady-state calls allocate nothing here). Not thread-safe.
struct ParseScratch {
  std::string untabbed;       // URL without TAB/CR/LF
  std::string encoded;        // URL with invalid bytes percent-encoded
  std::string for_boost;      // URL as given to Boost.URL
  std::string base_untabbed;  // the same three for the base
  std::string base_encoded;
  std::string base_for_boost;
  boost::urls::url resolved;
  // The last base parsed by Boost.URL on this thread, and its input: a
  // crawler resolves all the links of a page against one base.
  std::string cached_base_input;
  boost::urls::url cached_base;
};

// ParseUrl screens and parses `url_in`, resolving it against `base_in` when
// it is relative, into `*parts`, which views `url_in` or `*scratch` (valid
// until the next call with the same scratch). `fast_parse` allows the
// hand-written parser (tests turn it off). Returns InvalidArgument for every
// input Normalize rejects at these steps. May throw std::bad_alloc (from
// Boost.URL's url container).
absl::Status ParseUrl(absl::string_view url_in, absl::string_view base_in, bool fast_parse,
                      ParseScratch* scratch, UriParts* parts, bool* had_fragment,
                      FiredRules* fired);

bool IsHttpScheme(absl::string_view scheme);

// CheckScheme returns InvalidArgument naming `what` unless `scheme` is http
// or https (any case).
absl::Status CheckScheme(absl::string_view scheme, absl::string_view what);

}  // namespace url_internal
}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_URL_PARSE_H_
