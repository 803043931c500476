// url_screen.h: INTERNAL to core/url (not part of the public API; include
// url_normalizer.h instead). Steps 1 and 2 of UrlNormalizer::Normalize:
// screening the raw bytes before any parse.
//
// Example:
//   absl::string_view text;
//   bool had_fragment = false;
//   DEDUPD_RETURN_IF_ERROR(Screen(url, "URL", &untabbed, &encoded, &text,
//                                 &had_fragment, &fired));
//   // text: trimmed, no TAB/CR/LF, no fragment, invalid bytes %-encoded.
#ifndef DEDUPD_CORE_URL_URL_SCREEN_H_
#define DEDUPD_CORE_URL_URL_SCREEN_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/url/url_internal.h"

namespace dedupd {
namespace url_internal {

// Where the host starts and the authority ends in a URI reference, found
// by RFC 3986's generic syntax (Appendix B) before the real parse.
struct AuthoritySpan {
  size_t host_begin;  // == end when there is no authority
  size_t end;         // where the path starts
};

// FindAuthority splits `s` by RFC 3986 Appendix B. O(s.size()).
AuthoritySpan FindAuthority(absl::string_view s);

// Screen applies steps 1 and 2 to `in`: rejects empty, oversized, invalid
// UTF-8 and control characters (InvalidArgument); trims C0-control-or-space
// at both ends; removes embedded TAB/CR/LF; cuts the fragment (reported
// through `had_fragment`); percent-encodes bytes that cannot appear in a
// URI. `*out` views `in` or one of the two scratch strings, and lives as
// long as they do. `what` names the input in error messages. `fired` may be
// null (the base's cleanup is not reported: it does not change the output).
absl::Status Screen(absl::string_view in, absl::string_view what, std::string* untabbed,
                    std::string* encoded, absl::string_view* out, bool* had_fragment,
                    FiredRules* fired);

}  // namespace url_internal
}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_URL_SCREEN_H_
