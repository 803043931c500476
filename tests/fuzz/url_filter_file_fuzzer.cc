// url_filter_file_fuzzer.cc: libFuzzer target for UrlFilterFront::ParseFile,
// the reader of the exact URL mode's persisted Bloom front
// (docs/storage_format.md, "URL filter file": a file header, then one or
// more serialized BloomFilters; or one bare filter from earlier builds).
//
// Input: any bytes, read twice: as given, and, when they start with the
// file magic, with the header's length and checksum fields recomputed, so
// that the fuzzer also reaches the segment loop. The store tag asked for is
// the first segment's user_tag when its header parses (else 0), so valid
// files load.
// Checks: ParseFile never crashes (ASan/UBSan catch memory bugs and UB);
// every error is DataLoss or FailedPrecondition; on success there is at
// least one segment, the key hint is the sum of the segments' key counts,
// and re-encoding the segments (with the header when the input had one)
// gives back the input exactly. Any violation aborts.
//
// Example:
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDEDUPD_FUZZ=ON
//   ninja -C build-fuzz url_filter_file_fuzzer
//   build-fuzz/tests/fuzz/url_filter_file_fuzzer -max_total_time=60
//       /tmp/corpus tests/fuzz/corpus/url_filter_file   (one command line)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "common/coding.h"
#include "core/index/bloom_filter.h"
#include "core/text/stable_hash.h"
#include "storage/bloom/url_filter_front.h"

namespace {

using dedupd::BloomFilter;
using dedupd::UrlFilterFront;

constexpr absl::string_view kFileMagic("DDURLSEG", 8);

[[noreturn]] void Fail(const char* what, absl::string_view input) {
  std::fprintf(stderr, "url_filter_file_fuzzer: %s (input of %zu bytes)\n", what, input.size());
  std::abort();
}

void Check(absl::string_view input) {
  const bool has_header = absl::StartsWith(input, kFileMagic);
  const size_t first = has_header ? UrlFilterFront::kFileHeaderBytes : 0;
  uint64_t tag = 0;
  if (input.size() >= first) {
    absl::StatusOr<BloomFilter::Header> h = BloomFilter::ParseHeader(input.substr(first));
    if (h.ok()) tag = h->user_tag;
  }
  uint64_t hint = 0;
  absl::StatusOr<UrlFilterFront::FileContents> parsed =
      UrlFilterFront::ParseFile(input, tag, &hint);
  if (!parsed.ok()) {
    const absl::StatusCode code = parsed.status().code();
    if (code != absl::StatusCode::kDataLoss && code != absl::StatusCode::kFailedPrecondition) {
      Fail("error is neither DataLoss nor FailedPrecondition", input);
    }
    return;
  }
  if (parsed->filters.empty() || parsed->filters.size() != parsed->keys.size()) {
    Fail("success without segments, or counts not one per segment", input);
  }
  if (!has_header && parsed->filters.size() != 1) Fail("a bare filter file of 2+", input);
  std::string again;
  uint64_t keys = 0;
  for (size_t i = 0; i < parsed->filters.size(); ++i) {
    again += parsed->filters[i].Serialize(parsed->keys[i], tag);
    keys += parsed->keys[i];
  }
  if (keys != hint) Fail("key hint is not the sum of the segments' counts", input);
  if (has_header != (parsed->first_rate > 0)) Fail("a rate without a header, or none", input);
  if (has_header) {
    again = UrlFilterFront::EncodeFileHeader(static_cast<uint32_t>(parsed->filters.size()),
                                             again.size() + UrlFilterFront::kFileHeaderBytes,
                                             parsed->first_rate) +
            again;
  }
  if (again != input) Fail("re-encoding differs from the input", input);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  Check(input);
  if (absl::StartsWith(input, kFileMagic) && size >= UrlFilterFront::kFileHeaderBytes) {
    // The same segment count and rate with a matching length and checksum.
    std::string fixed(input);
    const uint32_t segments = dedupd::DecodeFixed32LE(fixed.data() + 12);
    const uint64_t rate_bits = dedupd::DecodeFixed64LE(fixed.data() + 24);
    double rate = 0;
    std::memcpy(&rate, &rate_bits, sizeof(rate));
    const std::string header = UrlFilterFront::EncodeFileHeader(segments, size, rate);
    fixed.replace(0, header.size(), header);
    Check(fixed);
  }
  return 0;
}
