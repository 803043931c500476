// url_escapes.h: INTERNAL to core/url (not part of the public API; include
// url_normalizer.h instead). Percent-encoding rules (RFC 3986 §2.1, §6.2.2.2)
// shared by the path and query steps. Each function handles a whole string,
// so that no per-character loop calls across translation units; the
// per-character tests are inline in url_chars.h.
//
// Example:
//   std::string out;
//   AppendNormalizedEscapes("%7euser%2f", &out);  // out == "~user%2F"
//   out.clear();
//   FullyDecode("a%3Db", &out);                  // out == "a=b"
#ifndef DEDUPD_CORE_URL_URL_ESCAPES_H_
#define DEDUPD_CORE_URL_URL_ESCAPES_H_

#include <string>

#include "absl/strings/string_view.h"

namespace dedupd {
namespace url_internal {

// AppendNormalizedEscapes appends `in` with %XX hex uppercased and escapes
// of unreserved characters decoded. Returns whether that changed anything.
bool AppendNormalizedEscapes(absl::string_view in, std::string* out);

// FullyDecode appends `in` with every %XX escape decoded.
void FullyDecode(absl::string_view in, std::string* out);

}  // namespace url_internal
}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_URL_ESCAPES_H_
