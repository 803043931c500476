// text_normalizer_fuzzer.cc: libFuzzer target for NormalizeText and
// FingerprintText.
//
// Checks: neither crashes (ASan/UBSan catch memory and UB bugs); every
// error is InvalidArgument; every success is valid UTF-8 without NUL,
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
#include "core/content_fingerprint.h"
#include "core/sha256.h"
#include "core/simhash.h"
#include "core/text_normalizer.h"

namespace {

[[noreturn]] void Fail(const char* what, absl::string_view input,
                       absl::string_view detail) {
  std::fprintf(stderr, "text_normalizer_fuzzer: %s\n  input: \"%s\"\n  %s\n",
               what, absl::CHexEscape(input).c_str(),
               absl::CHexEscape(detail).c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const dedupd::SimHasher* const hasher = new dedupd::SimHasher();
  static const dedupd::SimHasher* const unigrams =
      new dedupd::SimHasher(dedupd::SimHashOptions{1});
  const absl::string_view input(reinterpret_cast<const char*>(data), size);

  const absl::StatusOr<std::string> once = dedupd::NormalizeText(input);
  const absl::StatusOr<dedupd::ContentFingerprint> fp =
      dedupd::FingerprintText(input, *hasher);
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
      out.find("  ") != std::string::npos ||
      out.find('\0') != std::string::npos) {
    Fail("output breaks the space/NUL rules", input, out);
  }
  const absl::StatusOr<std::string> twice = dedupd::NormalizeText(out);
  if (!twice.ok()) {
    Fail("output does not re-normalize", input, twice.status().ToString());
  }
  if (*twice != out) Fail("not idempotent", input, out + " -> " + *twice);
  if (!fp.ok()) Fail("FingerprintText failed", input, fp.status().ToString());
  if (fp->sha256 != dedupd::Sha256(out) ||
      fp->simhash != hasher->Fingerprint(out) ||
      fp->normalized_bytes != out.size()) {
    Fail("FingerprintText disagrees with NormalizeText", input, out);
  }
  static_cast<void>(unigrams->Fingerprint(input));  // raw text: no crash
  return 0;
}
