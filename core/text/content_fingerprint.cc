// content_fingerprint.cc: see content_fingerprint.h.
#include "core/text/content_fingerprint.h"

#include <string>

#include "common/status_macros.h"
#include "core/text/shingle_hashes.h"
#include "core/text/text_normalizer.h"

namespace dedupd {
namespace {

// The set of `distinct` shingles, or none (empty) above kMaxExactShingles.
ShingleSet32 SetWithinLimit(absl::Span<const uint64_t> distinct) {
  return distinct.size() <= kMaxExactShingles ? ShingleSet32(distinct) : ShingleSet32();
}

}  // namespace

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
                                                   const MinHasher& minhasher, ShingleSet32* set) {
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
  const int minhash_k = minhasher.options().shingle_words;
  if (minhash_k == k) {
    fp.minhash = MinHasher::SignShingles(shingles.distinct);
    if (set != nullptr) *set = SetWithinLimit(shingles.distinct);
  } else {
    fp.minhash = minhasher.Sign(normalized);
    if (set != nullptr)
      *set = SetWithinLimit(DistinctShingleHashes(normalized, minhash_k).distinct);
  }
  return fp;
}

}  // namespace dedupd
