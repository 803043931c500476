// content_fingerprint.h: everything CheckContent needs to know about a
// page's text: the SHA-256 of its canonical form (exact duplicates), its
// SimHash and, when asked for, its MinHash signature (near duplicates).
//
// Example:
//   const SimHasher hasher;
//   absl::StatusOr<ContentFingerprint> fp =
//       FingerprintText("Hello,\u00a0World!", hasher);
//   // Sha256Hex(fp->sha256) == Sha256Hex(Sha256("hello, world!"))
//   // fp->normalized_bytes == 13, fp->words == 2, !fp->minhash
//   const MinHasher minhasher;
//   fp = FingerprintText("Hello,\u00a0World!", hasher, minhasher);
//   // *fp->minhash == minhasher.Sign("hello, world!")
//   ShingleSet32 set;
//   fp = FingerprintText("Hello,\u00a0World!", hasher, minhasher, &set);
//   // set.size() == 1: the two words are one shingle
#ifndef DEDUPD_CORE_TEXT_CONTENT_FINGERPRINT_H_
#define DEDUPD_CORE_TEXT_CONTENT_FINGERPRINT_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/text/minhash.h"
#include "core/text/sha256.h"
#include "core/text/shingle_set.h"
#include "core/text/simhash.h"

namespace dedupd {

struct ContentFingerprint {
  Sha256Digest sha256;      // SHA-256 of NormalizeText(text)
  uint64_t simhash;         // SimHasher::Fingerprint(NormalizeText(text))
  size_t normalized_bytes;  // size of NormalizeText(text), in bytes
  // Words of NormalizeText(text): its number of ' ' plus 1, so >= 1 (the
  // words SimHash shingles).
  size_t words;
  // MinHasher::Sign(NormalizeText(text)); set only by the overload that
  // takes a MinHasher.
  std::optional<MinHashSignature> minhash;
};

// FingerprintText normalizes `utf8` (NormalizeText), then hashes the
// normalized bytes with SHA-256 and `hasher`, and counts their words.
// Errors: those of NormalizeText (InvalidArgument for invalid UTF-8, a NUL
// byte, or empty text). Thread-safe.
absl::StatusOr<ContentFingerprint> FingerprintText(absl::string_view utf8, const SimHasher& hasher);

// FingerprintText(utf8, hasher) plus `minhash` from `minhasher`. When both
// hashers use the same shingle_words (the default), the distinct shingles
// are found once and feed both. When `set` is non-null it is set to
// the ShingleSet32 of the shingles `minhash` is computed from when there
// are at most kMaxExactShingles of them, else to an empty set (none): the
// set the chunk store verifies near chunks with, from the same shingles.
// Same errors; thread-safe.
absl::StatusOr<ContentFingerprint> FingerprintText(absl::string_view utf8, const SimHasher& hasher,
                                                   const MinHasher& minhasher,
                                                   ShingleSet32* set = nullptr);

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_CONTENT_FINGERPRINT_H_
