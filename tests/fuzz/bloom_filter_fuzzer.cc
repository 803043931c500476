// bloom_filter_fuzzer.cc: libFuzzer target for BloomFilter::Deserialize and
// ParseHeader, the readers of persisted Bloom filters
// (docs/bloom_filter.md, "Serialized format").
//
// Input: any bytes, read twice: as given, and with both checksums (the
// words checksum at byte 40 and the header checksum at byte 48) recomputed
// over the input, so that the fuzzer also reaches the field checks and the
// word loading, which random bytes almost never pass the checksums to.
// Checks: the readers never crash (ASan/UBSan catch memory bugs and UB);
// every error is DataLoss or FailedPrecondition (the documented codes), and
// FailedPrecondition only for a version other than kFormatVersion;
// ParseHeader agrees with Deserialize on header errors; every success
// round-trips: Serialize with the parsed inserted_keys and user_tag gives
// back the input exactly. Any violation aborts.
//
// Example:
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDEDUPD_FUZZ=ON
//   ninja -C build-fuzz bloom_filter_fuzzer
//   build-fuzz/tests/fuzz/bloom_filter_fuzzer -max_total_time=60
//       /tmp/corpus tests/fuzz/corpus/bloom_filter   (one command line)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/index/bloom_filter.h"
#include "core/text/stable_hash.h"

namespace {

using dedupd::BloomFilter;

[[noreturn]] void Fail(const char* what, absl::string_view input) {
  std::fprintf(stderr, "bloom_filter_fuzzer: %s (input of %zu bytes)\n", what, input.size());
  std::abort();
}

void Store64(std::string& s, size_t offset, uint64_t v) {
  for (int i = 0; i < 8; ++i) s[offset + i] = static_cast<char>(v >> (8 * i));
}

uint32_t Load32(absl::string_view s, size_t offset) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(s[offset + i]);
  }
  return v;
}

void Check(absl::string_view input) {
  absl::StatusOr<BloomFilter::Header> header = BloomFilter::ParseHeader(input);
  absl::StatusOr<BloomFilter::Loaded> loaded = BloomFilter::Deserialize(input);
  if (!loaded.ok()) {
    const absl::StatusCode code = loaded.status().code();
    if (code != absl::StatusCode::kDataLoss && code != absl::StatusCode::kFailedPrecondition) {
      Fail("error is neither DataLoss nor FailedPrecondition", input);
    }
    if (code == absl::StatusCode::kFailedPrecondition &&
        Load32(input, 8) == BloomFilter::kFormatVersion) {
      Fail("FailedPrecondition for the current format version", input);
    }
    if (!header.ok() && header.status() != loaded.status()) {
      Fail("ParseHeader and Deserialize disagree on the header", input);
    }
    return;
  }
  if (!header.ok()) Fail("Deserialize accepts what ParseHeader rejects", input);
  const BloomFilter::Header& h = loaded->header;
  if (h.format_version != BloomFilter::kFormatVersion ||
      h.num_blocks != loaded->filter.num_blocks() || h.num_probes != loaded->filter.num_probes()) {
    Fail("header and filter disagree", input);
  }
  if (loaded->filter.Serialize(h.inserted_keys, h.user_tag) != input) {
    Fail("Serialize(Deserialize(x)) != x", input);
  }
  // The loaded filter is usable.
  loaded->filter.Insert(0x0123456789abcdefULL);
  if (!loaded->filter.MayContain(0x0123456789abcdefULL)) {
    Fail("false negative after Insert", input);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  Check(input);
  if (size >= BloomFilter::kHeaderBytes) {
    std::string fixed(input);
    Store64(fixed, 40,
            BloomFilter::ChecksumWords(absl::string_view(fixed).substr(BloomFilter::kHeaderBytes)));
    Store64(fixed, 48,
            dedupd::StableHash64(absl::string_view(fixed).substr(0, 48), BloomFilter::kSeed));
    Check(fixed);
  }
  return 0;
}
