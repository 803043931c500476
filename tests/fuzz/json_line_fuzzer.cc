// json_line_fuzzer.cc: libFuzzer target for ParseJsonFlatObject, the reader
// of `dedupctl content` input lines.
//
// Input: one candidate line, any bytes.
// Checks: the parser never crashes (ASan/UBSan catch memory bugs and UB);
// every error is InvalidArgument and starts with "at byte N" where N is at
// most the input size; every success round-trips: the object written back
// with JsonObjectWriter parses to an equal object (so every decoded string
// is well-formed UTF-8, which the writer would otherwise replace, and the
// reader and writer agree on every escape). Any violation aborts.
//
// Example:
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDEDUPD_FUZZ=ON
//   ninja -C build-fuzz json_line_fuzzer
//   build-fuzz/tests/fuzz/json_line_fuzzer -max_total_time=60 \
//       /tmp/corpus tests/fuzz/corpus/json_line
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/strip.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "client/json.h"

namespace {

[[noreturn]] void Fail(const char* what, absl::string_view input) {
  std::fprintf(stderr, "json_line_fuzzer: %s\ninput: %s\n", what,
               dedupd::JsonString(input).c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<dedupd::JsonFlatObject> parsed =
      dedupd::ParseJsonFlatObject(input);
  if (!parsed.ok()) {
    if (parsed.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("error is not InvalidArgument", input);
    }
    absl::string_view message = parsed.status().message();
    if (!absl::ConsumePrefix(&message, "at byte ")) {
      Fail("error does not start with \"at byte \"", input);
    }
    const size_t colon = message.find(':');
    size_t offset = 0;
    if (colon == absl::string_view::npos ||
        !absl::SimpleAtoi(message.substr(0, colon), &offset) ||
        offset > size + 1) {
      Fail("error offset missing or past the input", input);
    }
    return 0;
  }

  dedupd::JsonObjectWriter writer;
  for (const auto& [key, value] : *parsed) {
    switch (value.type) {
      case dedupd::JsonScalar::Type::kString:
        writer.String(key, value.string);
        break;
      case dedupd::JsonScalar::Type::kInteger:
        writer.Int(key, value.integer);
        break;
      case dedupd::JsonScalar::Type::kNull:
        writer.Null(key);
        break;
    }
  }
  const std::string written = std::move(writer).Finish();
  absl::StatusOr<dedupd::JsonFlatObject> again =
      dedupd::ParseJsonFlatObject(written);
  if (!again.ok()) Fail("the writer's output does not parse", input);
  if (*again != *parsed) Fail("round trip changed the object", input);
  return 0;
}
