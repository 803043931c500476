// content_fingerprint.h: everything CheckContent needs to know about a
// page's text: the SHA-256 of its canonical form (exact duplicates) and its
// SimHash (near duplicates).
//
// Example:
//   const SimHasher hasher;
//   absl::StatusOr<ContentFingerprint> fp =
//       FingerprintText("Hello,\u00a0World!", hasher);
//   // Sha256Hex(fp->sha256) == Sha256Hex(Sha256("hello, world!"))
//   // fp->normalized_bytes == 13, fp->words == 2
#ifndef DEDUPD_CORE_TEXT_CONTENT_FINGERPRINT_H_
#define DEDUPD_CORE_TEXT_CONTENT_FINGERPRINT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/text/sha256.h"
#include "core/text/simhash.h"

namespace dedupd {

struct ContentFingerprint {
  Sha256Digest sha256;      // SHA-256 of NormalizeText(text)
  uint64_t simhash;         // SimHasher::Fingerprint(NormalizeText(text))
  size_t normalized_bytes;  // size of NormalizeText(text), in bytes
  // Words of NormalizeText(text): its number of ' ' plus 1, so >= 1 (the
  // words SimHash shingles).
  size_t words;
};

// FingerprintText normalizes `utf8` (NormalizeText), then hashes the
// normalized bytes with SHA-256 and `hasher`, and counts their words.
// Errors: those of NormalizeText (InvalidArgument for invalid UTF-8, a NUL
// byte, or empty text). Thread-safe.
absl::StatusOr<ContentFingerprint> FingerprintText(absl::string_view utf8, const SimHasher& hasher);

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_CONTENT_FINGERPRINT_H_
