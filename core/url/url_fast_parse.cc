// url_fast_parse.cc: the strict RFC 3986 fast parser; see url_fast_parse.h.
// url_normalizer_test checks that it and Boost.URL give identical results
// over a generated corpus.
#include "core/url/url_fast_parse.h"

#include <cstddef>
#include <cstdint>

#include "core/url/url_chars.h"

namespace dedupd {
namespace url_internal {

namespace {

// ScanEscaped advances *i over characters of RFC class `bit` and over "%XX"
// escapes; stops at the first other byte. Returns false on a malformed
// escape.
inline bool ScanEscaped(absl::string_view s, size_t* i, uint8_t bit) {
  size_t k = *i;
  const uint8_t* const table = kTables.rfc.data();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  while (k < s.size()) {
    while (s.size() - k >= 4 &&
           (table[p[k]] & table[p[k + 1]] & table[p[k + 2]] & table[p[k + 3]] & bit) != 0) {
      k += 4;
    }
    if (k == s.size()) break;
    if (table[p[k]] & bit) {
      ++k;
    } else if (s[k] == '%') {
      if (s.size() - k < 3 || !IsHexDigit(s[k + 1]) || !IsHexDigit(s[k + 2])) {
        return false;
      }
      k += 3;
    } else {
      break;
    }
  }
  *i = k;
  return true;
}

}  // namespace

bool ParseAbsoluteFast(absl::string_view s, UriParts* parts) {
  const size_t n = s.size();
  if (n == 0 || !IsAsciiAlpha(s[0])) return false;
  size_t i = 1;
  while (i < n &&
         (IsAsciiAlpha(s[i]) || IsAsciiDigit(s[i]) || s[i] == '+' || s[i] == '-' || s[i] == '.')) {
    ++i;
  }
  if (n - i < 3 || s[i] != ':' || s[i + 1] != '/' || s[i + 2] != '/') return false;
  parts->scheme = s.substr(0, i);
  parts->has_authority = true;
  const size_t authority = i + 3;

  // Authority: reg-name characters, escapes, ':' and at most one '@'.
  size_t end = authority;
  size_t at = absl::string_view::npos;
  size_t colon = absl::string_view::npos;  // the first ':' after any '@'
  while (true) {
    if (!ScanEscaped(s, &end, kRfcRegName)) return false;
    if (end == n || s[end] == '/' || s[end] == '?') break;
    if (s[end] == '@') {
      if (at != absl::string_view::npos) return false;
      at = end;
      colon = absl::string_view::npos;
    } else if (s[end] == ':') {
      if (colon == absl::string_view::npos) colon = end;
    } else {
      return false;  // '[' and everything else: Boost.URL decides
    }
    ++end;
  }
  const size_t host_begin = at == absl::string_view::npos ? authority : at + 1;
  const size_t host_end = colon == absl::string_view::npos ? end : colon;
  parts->has_userinfo = at != absl::string_view::npos;
  parts->host_kind = HostKind::kName;
  parts->host = s.substr(host_begin, host_end - host_begin);
  parts->has_port = colon != absl::string_view::npos;
  parts->port = parts->has_port ? s.substr(colon + 1, end - colon - 1) : absl::string_view();
  for (char c : parts->port) {
    if (!IsAsciiDigit(c)) return false;
  }

  // path-abempty: pchar and '/'.
  size_t q = end;
  if (!ScanEscaped(s, &q, kRfcPathQuery)) return false;
  const size_t query_mark = s.find('?', end);
  if (q != n) return false;
  const size_t path_end = query_mark == absl::string_view::npos ? n : query_mark;
  parts->path = s.substr(end, path_end - end);
  parts->has_query = query_mark != absl::string_view::npos;
  parts->query = parts->has_query ? s.substr(query_mark + 1) : absl::string_view();
  return true;
}

}  // namespace url_internal
}  // namespace dedupd
