// text_normalizer_fuzzer.cc: libFuzzer target for NormalizeText and
// FingerprintText.
//
// Checks: neither crashes (ASan/UBSan catch memory and UB bugs); every
// error is InvalidArgument; every success is valid UTF-8 (checked here by
// an independent decoder: no overlong forms, surrogates or code points
// above U+10FFFF, no truncated sequences) without NUL,
// without leading, trailing or doubled ' ', normalizes again without error
// to itself (N(N(x)) == N(x)), and FingerprintText of the input agrees with
// hashing that output. Any violation aborts with the offending input.
//
// Example:
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDEDUPD_FUZZ=ON
//   ninja -C build-fuzz text_normalizer_fuzzer
//   build-fuzz/tests/fuzz/text_normalizer_fuzzer -max_total_time=60 \
//       /tmp/corpus tests/fuzz/corpus/text_normalizer
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/escaping.h"
#include "core/text/content_fingerprint.h"
#include "core/text/sha256.h"
#include "core/text/simhash.h"
#include "core/text/text_normalizer.h"

namespace {

[[noreturn]] void Fail(const char* what, absl::string_view input, absl::string_view detail) {
  std::fprintf(stderr, "text_normalizer_fuzzer: %s\n  input: \"%s\"\n  %s\n", what,
               absl::CHexEscape(input).c_str(), absl::CHexEscape(detail).c_str());
  std::abort();
}

// IsValidUtf8 follows RFC 3629 (the table in its section 4), on its own so
// that the check does not share code with the normalizer's decoder.
bool IsValidUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char b = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (b <= 0x7F) {
      ++i;
      continue;
    } else if (b >= 0xC2 && b <= 0xDF) {
      n = 1;
    } else if (b == 0xE0) {
      n = 2;
      lo = 0xA0;
    } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
      n = 2;
    } else if (b == 0xED) {
      n = 2;
      hi = 0x9F;  // no surrogates
    } else if (b == 0xF0) {
      n = 3;
      lo = 0x90;
    } else if (b >= 0xF1 && b <= 0xF3) {
      n = 3;
    } else if (b == 0xF4) {
      n = 3;
      hi = 0x8F;  // nothing above U+10FFFF
    } else {
      return false;
    }
    if (s.size() - i <= n) return false;
    for (size_t k = 1; k <= n; ++k) {
      const unsigned char c = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF)) return false;
    }
    i += n + 1;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const dedupd::SimHasher* const hasher = new dedupd::SimHasher();
  static const dedupd::SimHasher* const unigrams = new dedupd::SimHasher(dedupd::SimHashOptions{1});
  const absl::string_view input(reinterpret_cast<const char*>(data), size);

  const absl::StatusOr<std::string> once = dedupd::NormalizeText(input);
  const absl::StatusOr<dedupd::ContentFingerprint> fp = dedupd::FingerprintText(input, *hasher);
  if (!once.ok()) {
    if (once.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("error is not InvalidArgument", input, once.status().ToString());
    }
    if (fp.ok() || fp.status() != once.status()) {
      Fail("FingerprintText error differs", input, fp.status().ToString());
    }
    return 0;
  }
  const std::string& out = *once;
  if (out.empty() || out.front() == ' ' || out.back() == ' ' ||
      out.find("  ") != std::string::npos || out.find('\0') != std::string::npos) {
    Fail("output breaks the space/NUL rules", input, out);
  }
  if (!IsValidUtf8(out)) Fail("output is not valid UTF-8", input, out);
  const absl::StatusOr<std::string> twice = dedupd::NormalizeText(out);
  if (!twice.ok()) {
    Fail("output does not re-normalize", input, twice.status().ToString());
  }
  if (*twice != out) Fail("not idempotent", input, out + " -> " + *twice);
  if (!fp.ok()) Fail("FingerprintText failed", input, fp.status().ToString());
  if (fp->sha256 != dedupd::Sha256(out) || fp->simhash != hasher->Fingerprint(out) ||
      fp->normalized_bytes != out.size()) {
    Fail("FingerprintText disagrees with NormalizeText", input, out);
  }
  static_cast<void>(unigrams->Fingerprint(input));  // raw text: no crash
  return 0;
}
