// content_fingerprint.cc: see content_fingerprint.h.
#include "core/content_fingerprint.h"

#include <string>

#include "core/status_macros.h"
#include "core/text_normalizer.h"

namespace dedupd {

absl::StatusOr<ContentFingerprint> FingerprintText(absl::string_view utf8,
                                                   const SimHasher& hasher) {
  DEDUPD_ASSIGN_OR_RETURN(const std::string normalized, NormalizeText(utf8));
  ContentFingerprint fp;
  fp.sha256 = Sha256(normalized);
  fp.simhash = hasher.Fingerprint(normalized);
  fp.normalized_bytes = normalized.size();
  return fp;
}

}  // namespace dedupd
