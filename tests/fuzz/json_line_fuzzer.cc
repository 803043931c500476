// json_line_fuzzer.cc: libFuzzer target for the readers of dedupctl's input
// lines: ParseJsonFlatObject (`content`) and ParseJsonValue (the nested
// input of `chunks` and `results`).
//
// Input: one candidate line, any bytes, given to both readers.
// Checks: neither parser crashes (ASan/UBSan catch memory bugs and UB);
// every error is InvalidArgument and starts with "at byte N" where N is at
// most the input size (and, for ParseJsonValue, is the offset it reports);
// every success round-trips: the value written back (JsonObjectWriter for
// the flat object, plus 17-digit numbers for its fractional ones;
// JsonString and 17-digit numbers for the tree) parses to
// an equal value (so every decoded string is well-formed UTF-8, which the
// writer would otherwise replace, and the readers and writer agree on every
// escape). Any violation aborts.
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
#include <cstring>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "client/json.h"

namespace {

[[noreturn]] void Fail(const char* what, absl::string_view input) {
  std::fprintf(stderr, "json_line_fuzzer: %s\ninput: %s\n", what,
               dedupd::JsonString(input).c_str());
  std::abort();
}

// CheckError aborts unless `status` is InvalidArgument "at byte N: ..."
// with N <= size + 1; returns N.
size_t CheckError(const absl::Status& status, absl::string_view input) {
  if (status.code() != absl::StatusCode::kInvalidArgument) {
    Fail("error is not InvalidArgument", input);
  }
  absl::string_view message = status.message();
  if (!absl::ConsumePrefix(&message, "at byte ")) {
    Fail("error does not start with \"at byte \"", input);
  }
  const size_t colon = message.find(':');
  size_t offset = 0;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(message.substr(0, colon), &offset) ||
      offset > input.size() + 1) {
    Fail("error offset missing or past the input", input);
  }
  return offset;
}

// WriteTree writes `v` back as JSON: strings with JsonString, numbers with
// 17 significant digits (enough to read back the same double).
void WriteTree(const dedupd::JsonValue& v, std::string* out) {
  using Type = dedupd::JsonValue::Type;
  switch (v.type) {
    case Type::kNull:
      out->append("null");
      return;
    case Type::kBool:
      out->append(v.boolean ? "true" : "false");
      return;
    case Type::kNumber: {
      char buffer[32];
      std::snprintf(buffer, sizeof(buffer), "%.17g", v.number);
      out->append(buffer);
      return;
    }
    case Type::kString:
      dedupd::AppendJsonString(v.string, out);
      return;
    case Type::kArray:
      out->push_back('[');
      for (size_t i = 0; i < v.array.size(); ++i) {
        if (i > 0) out->push_back(',');
        WriteTree(v.array[i], out);
      }
      out->push_back(']');
      return;
    case Type::kObject:
      out->push_back('{');
      for (size_t i = 0; i < v.object.size(); ++i) {
        if (i > 0) out->push_back(',');
        dedupd::AppendJsonString(v.object[i].first, out);
        out->push_back(':');
        WriteTree(v.object[i].second, out);
      }
      out->push_back('}');
      return;
  }
}

bool SameTree(const dedupd::JsonValue& a, const dedupd::JsonValue& b) {
  if (a.type != b.type || a.boolean != b.boolean || a.string != b.string ||
      std::memcmp(&a.number, &b.number, sizeof(double)) != 0 || a.array.size() != b.array.size() ||
      a.object.size() != b.object.size()) {
    return false;
  }
  for (size_t i = 0; i < a.array.size(); ++i) {
    if (!SameTree(a.array[i], b.array[i])) return false;
  }
  for (size_t i = 0; i < a.object.size(); ++i) {
    if (a.object[i].first != b.object[i].first ||
        !SameTree(a.object[i].second, b.object[i].second)) {
      return false;
    }
  }
  return true;
}

void FuzzTree(absl::string_view input) {
  size_t offset = 0;
  absl::StatusOr<dedupd::JsonValue> tree = dedupd::ParseJsonValue(input, &offset);
  if (!tree.ok()) {
    if (CheckError(tree.status(), input) != offset) {
      Fail("error_offset differs from the message's offset", input);
    }
    return;
  }
  std::string written;
  WriteTree(*tree, &written);
  absl::StatusOr<dedupd::JsonValue> again = dedupd::ParseJsonValue(written);
  if (!again.ok()) Fail("the written tree does not parse", input);
  if (!SameTree(*again, *tree)) Fail("tree round trip changed the value", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  FuzzTree(input);
  absl::StatusOr<dedupd::JsonFlatObject> parsed = dedupd::ParseJsonFlatObject(input);
  if (!parsed.ok()) {
    CheckError(parsed.status(), input);
    return 0;
  }

  // The writer has no fractional numbers: they are appended after its
  // object, in a form that reads back as a fraction (a "%.17e" always has
  // a '.' and an exponent, and 17 digits round-trip a double).
  dedupd::JsonObjectWriter writer;
  std::string numbers;
  for (const auto& [key, value] : *parsed) {
    switch (value.type) {
      case dedupd::JsonScalar::Type::kString:
        writer.String(key, value.string);
        break;
      case dedupd::JsonScalar::Type::kInteger:
        writer.Int(key, value.integer);
        break;
      case dedupd::JsonScalar::Type::kNumber: {
        char buffer[40];
        std::snprintf(buffer, sizeof(buffer), "%.17e", value.number);
        numbers.push_back(',');
        dedupd::AppendJsonString(key, &numbers);
        numbers.push_back(':');
        numbers.append(buffer);
        break;
      }
      case dedupd::JsonScalar::Type::kNull:
        writer.Null(key);
        break;
    }
  }
  std::string written = std::move(writer).Finish();
  if (!numbers.empty()) {
    written.pop_back();  // '}'
    if (written == "{") numbers.erase(0, 1);
    written.append(numbers).push_back('}');
  }
  absl::StatusOr<dedupd::JsonFlatObject> again = dedupd::ParseJsonFlatObject(written);
  if (!again.ok()) Fail("the writer's output does not parse", input);
  if (*again != *parsed) Fail("round trip changed the object", input);
  return 0;
}
