// content_fingerprint.cc: see content_fingerprint.h.
#include "core/text/content_fingerprint.h"

#include <string>

#include "common/status_macros.h"
#include "core/text/shingle_hashes.h"
#include "core/text/text_normalizer.h"

namespace dedupd {

absl::StatusOr<ContentFingerprint> FingerprintText(absl::string_view utf8,
                                                   const SimHasher& hasher) {
  // The normalized text only lives until it is hashed: a per-thread buffer
  // saves an allocation (and its zero-filling) per page.
  thread_local std::string normalized;
  DEDUPD_RETURN_IF_ERROR(NormalizeTextInto(utf8, &normalized));
  ContentFingerprint fp;
  fp.sha256 = Sha256(normalized);
  fp.simhash = hasher.Fingerprint(normalized, &fp.words);
  fp.normalized_bytes = normalized.size();
  return fp;
}

absl::StatusOr<ContentFingerprint> FingerprintText(absl::string_view utf8, const SimHasher& hasher,
                                                   const MinHasher& minhasher) {
  thread_local std::string normalized;
  DEDUPD_RETURN_IF_ERROR(NormalizeTextInto(utf8, &normalized));
  ContentFingerprint fp;
  fp.sha256 = Sha256(normalized);
  fp.normalized_bytes = normalized.size();
  const int k = hasher.options().shingle_words;
  const ShingleHashes shingles = DistinctShingleHashes(normalized, k);
  fp.words = shingles.words;
  fp.simhash = SimHasher::FingerprintShingles(shingles.distinct);
  // The span lives until the next DistinctShingleHashes on this thread, so
  // it is used before minhasher.Sign might compute other shingles.
  fp.minhash = minhasher.options().shingle_words == k ? MinHasher::SignShingles(shingles.distinct)
                                                      : minhasher.Sign(normalized);
  return fp;
}

}  // namespace dedupd
