// utf8.h: UTF-8 validation for core (the text and URL normalizers), on
// ICU's U8_NEXT, so that "well-formed" means one thing everywhere: Unicode
// §3.9 Table 3-7, i.e. shortest form only, no surrogates, nothing above
// U+10FFFF.
//
// Example:
//   if (!IsValidUtf8(host)) return ...;
//   const size_t len = Utf8SequenceLength(p + i, n - i);  // 0: ill-formed
#ifndef DEDUPD_CORE_TEXT_UTF8_H_
#define DEDUPD_CORE_TEXT_UTF8_H_

#include <unicode/umachine.h>
#include <unicode/utf8.h>

#include <cstddef>

#include "absl/strings/string_view.h"

namespace dedupd {

// Utf8SequenceLength returns the length (1..4) of the well-formed UTF-8
// sequence that starts at p[0], of the `n` bytes available, or 0 when it is
// ill-formed or truncated. Inline (ICU's macro, no call): per-character
// loops on hot paths use it. REQUIRES: n >= 1.
inline size_t Utf8SequenceLength(const unsigned char* p, size_t n) {
  size_t i = 0;
  UChar32 c;
  U8_NEXT(p, i, n, c);
  return c < 0 ? 0 : i;
}

// IsValidUtf8 returns whether all of `s` is well-formed UTF-8. O(s.size()).
bool IsValidUtf8(absl::string_view s);

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_UTF8_H_
