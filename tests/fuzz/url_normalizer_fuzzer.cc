// url_normalizer_fuzzer.cc: libFuzzer target for UrlNormalizer.
//
// Input: the URL, optionally followed by '\n' and the base URL.
// Checks, for the default policy and for a policy using every per-host
// setting: Normalize never crashes (ASan/UBSan catch memory and UB bugs);
// every error is InvalidArgument; every success is ASCII, re-normalizes
// without error to itself (N(N(x)) == N(x)) and fires no rule the second
// time. Any violation aborts with the offending input.
//
// Example:
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDEDUPD_FUZZ=ON
//   ninja -C build-fuzz url_normalizer_fuzzer
//   build-fuzz/tests/fuzz/url_normalizer_fuzzer -max_total_time=60 \
//       /tmp/corpus tests/fuzz/corpus/url_normalizer
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_join.h"
#include "core/url/url_normalizer.h"
#include "core/url/url_policy.h"

namespace {

using dedupd::HostRule;
using dedupd::TrailingSlash;
using dedupd::UrlNormalizer;
using dedupd::UrlPolicy;

UrlPolicy FuzzPolicy() {
  std::vector<HostRule> rules(4);
  rules[0].hosts = {"example.com", "127.0.0.1"};
  rules[0].allow_params = {"id", "page", "q"};
  rules[1].hosts = {"*.example.org"};
  rules[1].trailing_slash = TrailingSlash::kAdd;
  rules[1].drop_params = {"ref"};
  rules[2].hosts = {"*.example.net", "xn--bcher-kva.de"};
  rules[2].trailing_slash = TrailingSlash::kKeep;
  rules[2].case_insensitive_path = true;
  rules[3].hosts = {"a"};
  rules[3].case_insensitive_path = true;
  absl::StatusOr<UrlPolicy> policy = UrlPolicy::Create(rules, {"campaign"});
  if (!policy.ok()) {
    std::fprintf(stderr, "fuzz policy: %s\n", policy.status().ToString().c_str());
    std::abort();
  }
  return *std::move(policy);
}

[[noreturn]] void Fail(const char* what, absl::string_view url, absl::string_view base,
                       absl::string_view detail) {
  std::fprintf(stderr, "url_normalizer_fuzzer: %s\n  url:  \"%s\"\n  base: \"%s\"\n  %s\n", what,
               absl::CHexEscape(url).c_str(), absl::CHexEscape(base).c_str(),
               std::string(detail).c_str());
  std::abort();
}

void Check(const UrlNormalizer& n, absl::string_view url, absl::string_view base) {
  const absl::StatusOr<std::string> once = n.Normalize(url, base);
  if (!once.ok()) {
    if (once.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("error is not InvalidArgument", url, base, once.status().ToString());
    }
    return;
  }
  for (char c : *once) {
    if (static_cast<unsigned char>(c) >= 0x80) Fail("output is not ASCII", url, base, *once);
  }
  std::vector<absl::string_view> fired;
  const absl::StatusOr<std::string> twice = n.Normalize(*once, "", &fired);
  if (!twice.ok()) {
    Fail("output does not re-normalize", url, base, *once + " -> " + twice.status().ToString());
  }
  if (*twice != *once) {
    Fail("not idempotent", url, base, *once + " -> " + *twice);
  }
  if (!fired.empty()) {
    Fail("rules fired on canonical output", url, base, *once + ": " + absl::StrJoin(fired, " "));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const UrlNormalizer* const plain = new UrlNormalizer();
  static const UrlNormalizer* const with_policy = new UrlNormalizer(FuzzPolicy());
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const absl::string_view url = input.substr(0, newline);
  const absl::string_view base =
      newline == absl::string_view::npos ? absl::string_view() : input.substr(newline + 1);
  Check(*plain, url, base);
  Check(*with_policy, url, base);
  return 0;
}
