// text_normalizer.h: the canonical form of a page's text, which is what the
// content layer hashes (SHA-256 for exact duplicates, SimHash for near
// duplicates). Two texts that differ only in Unicode normalization form,
// letter case or whitespace get the same canonical form.
//
// Rules, in order (docs/content_fingerprint.md has the details and why):
//   1. The input must be valid UTF-8 (no overlongs, surrogates, code points
//      above U+10FFFF, truncated sequences or stray continuation bytes) and
//      must not contain a NUL byte.
//   2. Unicode NFC, then full case folding (Unicode CaseFolding.txt, status
//      C+F, no Turkic special case), then NFC again, repeated until stable:
//      "Straße" == "STRASSE", "É" (U+00C9) == "e" + U+0301, "I" -> "i",
//      "ı" (dotless i) stays "ı", "İ" -> "i" + U+0307.
//   3. Every space is mapped to ' ': the Unicode Zs characters (U+0020,
//      U+00A0, U+1680, U+2000..U+200A, U+202F, U+205F, U+3000), TAB, LF,
//      VT, FF, CR, U+2028 and U+2029. Runs of spaces collapse to one ' ';
//      leading and trailing spaces are dropped.
//
// Invariant: NormalizeText(NormalizeText(x)) == NormalizeText(x) for every
// x it accepts. Every rule change bumps kTextNormalizerVersion (stored
// fingerprints would no longer match). The Unicode data is ICU's (ICU 72:
// Unicode 15.0); an ICU upgrade can change the output only for code points
// that were unassigned before, and core/text/testdata/simhash_golden.tsv pins it.
//
// Example:
//   absl::StatusOr<std::string> t =
//       NormalizeText("  Stra\xC3\x9F" "e\xC2\xA0 NUMMER\t1\n");
//   // *t == "strasse nummer 1"
//   NormalizeText("a\xC0\xAF");  // InvalidArgument: "invalid UTF-8 at byte 1"
#ifndef DEDUPD_CORE_TEXT_TEXT_NORMALIZER_H_
#define DEDUPD_CORE_TEXT_TEXT_NORMALIZER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dedupd {

// Version of NormalizeText's output. Persisted in the store's meta record.
inline constexpr uint32_t kTextNormalizerVersion = 1;

// NormalizeText returns the canonical form of `utf8` (rules above). The
// output is valid UTF-8, NFC, case-folded, has no NUL, contains no space
// other than single ' ' between non-space characters, and is never empty.
//
// Returns InvalidArgument, naming the byte offset in `utf8` of the first
// offending byte, for: invalid UTF-8 ("invalid UTF-8 at byte 17"), a NUL
// byte ("text contains a NUL byte at byte 5"); and for text that is empty
// after normalization ("text is empty or only whitespace"). When the input
// has several problems, the one at the lowest offset is reported.
//
// Thread-safe. Cost: plain ASCII is lowercased and space-collapsed 16
// bytes at a time (~1.7 GB/s, docs/content_fingerprint.md); only runs
// containing non-ASCII bytes (plus the ASCII character before each, which a
// combining mark may compose with) go through ICU.
absl::StatusOr<std::string> NormalizeText(absl::string_view utf8);

// NormalizeTextInto is NormalizeText writing the canonical form to `*out`
// (replacing its contents, reusing its capacity), for callers that
// normalize many texts. Same errors; on error `*out` is unspecified.
absl::Status NormalizeTextInto(absl::string_view utf8, std::string* out);

// IsTextSpace reports whether code point `c` is one of the characters that
// rule 3 maps to ' '.
bool IsTextSpace(char32_t c);

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_TEXT_NORMALIZER_H_
