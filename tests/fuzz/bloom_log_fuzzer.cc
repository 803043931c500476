// bloom_log_fuzzer.cc: libFuzzer target for the claim-log parser of the
// Bloom URL store (storage/bloom/bloom_claim_log.h; docs/bloom_url_store.md,
// "Claim log"), which reads files a crash or a disk may have damaged.
//
// Input: any bytes, read three ways: as a whole log (ParseLog), as a log
// body (ParseRecords), and as a body whose record checksums were
// recomputed wherever a plausible count allows, so that the fuzzer also
// reaches long runs of valid records, which random bytes almost never
// checksum to.
// Checks: the parser never crashes (ASan/UBSan catch memory bugs and UB);
// every error is DataLoss, or FailedPrecondition for another version; a
// success accounts for its bytes: the records re-encode to exactly the
// first valid_bytes of the body, and without a torn tail they are the
// whole body; in the repaired body every repaired record is accepted. Any
// violation aborts.
//
// Example:
//   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DDEDUPD_FUZZ=ON
//   ninja -C build-fuzz bloom_log_fuzzer
//   build-fuzz/tests/fuzz/bloom_log_fuzzer -max_total_time=60
//       /tmp/corpus tests/fuzz/corpus/bloom_log   (one command line)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/text/stable_hash.h"
#include "storage/bloom/bloom_claim_log.h"

namespace {

namespace log_format = ::dedupd::bloom_claim_log;

[[noreturn]] void Fail(const char* what, absl::string_view input) {
  std::fprintf(stderr, "bloom_log_fuzzer: %s (input of %zu bytes)\n", what, input.size());
  std::abort();
}

uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Checks a ParseRecords result against the body it came from.
void CheckRecords(const absl::StatusOr<log_format::ParsedRecords>& parsed, absl::string_view body,
                  absl::string_view input) {
  if (!parsed.ok()) {
    if (parsed.status().code() != absl::StatusCode::kDataLoss) {
      Fail("ParseRecords error is not DataLoss", input);
    }
    return;
  }
  if (parsed->valid_bytes > body.size()) Fail("valid_bytes past the end", input);
  if (!parsed->torn_tail && parsed->valid_bytes != body.size()) {
    Fail("bytes left over without a torn tail", input);
  }
  std::string again;
  size_t next = 0;
  for (uint32_t n : parsed->record_keys) {
    if (n == 0 || n > log_format::kMaxRecordKeys) Fail("bad record size", input);
    if (next + n > parsed->key_hashes.size()) Fail("record_keys too many", input);
    log_format::AppendRecords(absl::MakeConstSpan(parsed->key_hashes).subspan(next, n), &again);
    next += n;
  }
  if (next != parsed->key_hashes.size()) Fail("record_keys too few", input);
  if (again != body.substr(0, parsed->valid_bytes)) {
    Fail("records do not re-encode to the valid bytes", input);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view input(reinterpret_cast<const char*>(data), size);

  // 1. A whole log file.
  absl::StatusOr<log_format::ParsedLog> log = log_format::ParseLog(input);
  if (!log.ok()) {
    const absl::StatusCode code = log.status().code();
    if (code != absl::StatusCode::kDataLoss && code != absl::StatusCode::kFailedPrecondition) {
      Fail("ParseLog error is neither DataLoss nor FailedPrecondition", input);
    }
  } else {
    if (log_format::EncodeLogHeader(log->header) != input.substr(0, log_format::kHeaderBytes)) {
      Fail("header does not re-encode", input);
    }
    CheckRecords(log->records, input.substr(log_format::kHeaderBytes), input);
  }

  // 2. A log body.
  CheckRecords(log_format::ParseRecords(input, 0), input, input);

  // 3. The body with every plausible record's checksum repaired.
  std::string fixed(input);
  size_t pos = 0;
  while (fixed.size() - pos >= 4) {
    const uint32_t count = GetU32(fixed.data() + pos);
    if (count == 0 || count > log_format::kMaxRecordKeys) break;
    const size_t bytes = log_format::RecordBytes(count);
    if (bytes > fixed.size() - pos) break;
    const uint64_t sum = dedupd::StableHash64(absl::string_view(fixed).substr(pos, bytes - 8),
                                              log_format::kChecksumSeed);
    for (int i = 0; i < 8; ++i) {
      fixed[pos + bytes - 8 + i] = static_cast<char>(sum >> (8 * i));
    }
    pos += bytes;
  }
  absl::StatusOr<log_format::ParsedRecords> repaired = log_format::ParseRecords(fixed, 0);
  if (!repaired.ok()) {
    // Only a damaged count after the repaired run can be an error.
    if (fixed.size() - pos < 4) Fail("repaired body rejected", input);
  } else if (repaired->valid_bytes < pos) {
    Fail("a repaired record was not accepted", input);
  }
  CheckRecords(repaired, fixed, input);
  return 0;
}
