// bloom_claim_log.h: the byte format of BloomUrlStore's claim logs
// (claims-<generation>.log), as pure functions, so the format can be pinned
// by golden tests and the parser fuzzed without files. The format is
// specified in docs/bloom_url_store.md ("Claim log"); this header and that
// document change together, and a change to the bytes bumps kVersion.
//
// A log is a header followed by batch records:
//   header (kHeaderBytes = 40): magic "DDCLAIMS", u32 version, u32
//     num_probes, u64 generation, u64 num_blocks, u64 checksum of the
//     preceding 32 bytes;
//   record: u32 count (1..kMaxRecordKeys), count x u64 key hash, u64
//     checksum of the record's preceding bytes.
// Integers are little-endian; checksums are StableHash64(bytes,
// kChecksumSeed).
//
// Example:
//   LogHeader header;
//   header.generation = 7;
//   header.num_blocks = 2;
//   header.num_probes = 6;
//   std::string log = EncodeLogHeader(header);
//   AppendRecords({h1, h2}, &log);
//   absl::StatusOr<ParsedLog> parsed = ParseLog(log);
//   // parsed->key_hashes == {h1, h2}, parsed->torn_tail == false
//
// Thread safety: pure functions; thread-safe.
#ifndef DEDUPD_STORAGE_BLOOM_BLOOM_CLAIM_LOG_H_
#define DEDUPD_STORAGE_BLOOM_BLOOM_CLAIM_LOG_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace dedupd::bloom_claim_log {

// The file magic, 8 bytes, no terminator.
inline constexpr absl::string_view kMagic = "DDCLAIMS";
// The format version written and the only one ParseLogHeader accepts.
inline constexpr uint32_t kVersion = 1;
// Bytes of the file header.
inline constexpr size_t kHeaderBytes = 40;
// The seed of every checksum in the file: ASCII "dedupdcl" read big-endian.
inline constexpr uint64_t kChecksumSeed = 0x646564757064636cULL;
// The most key hashes in one record; larger batches are split into several
// records (written with one write(2) all the same). Bounds what a damaged
// count field can make the parser skip.
inline constexpr uint32_t kMaxRecordKeys = 65'536;
// Bytes of a record of n keys: count, hashes, checksum.
inline constexpr size_t RecordBytes(size_t n) { return 4 + 8 * n + 8; }

// The header's fields. num_blocks and num_probes are the filter's, kept
// for a sanity check on replay (a log is only replayed into the filter it
// was written for).
struct LogHeader {
  uint64_t generation = 0;
  uint64_t num_blocks = 0;
  uint32_t num_probes = 0;
};

// EncodeLogHeader returns the kHeaderBytes header for `header` at kVersion.
std::string EncodeLogHeader(const LogHeader& header);

// ParseLogHeader parses the first kHeaderBytes of `bytes`.
// Errors: DataLoss for a short input, a wrong magic or a checksum mismatch;
// FailedPrecondition for another version (checked before the checksum, so
// a later version with another header layout is reported as such).
// Messages start with "claim log header: ". Never crashes on any input.
absl::StatusOr<LogHeader> ParseLogHeader(absl::string_view bytes);

// AppendRecords appends the records holding `key_hashes` to *out: one
// record per kMaxRecordKeys hashes, in order. Appends nothing for an empty
// span.
void AppendRecords(absl::Span<const uint64_t> key_hashes, std::string* out);

// The records of a log body.
struct ParsedRecords {
  // Every record's key hashes, concatenated in file order.
  std::vector<uint64_t> key_hashes;
  // The key count of each record, in file order.
  std::vector<uint32_t> record_keys;
  // Bytes of the body taken by whole, valid records: the torn tail (if
  // any) starts here.
  size_t valid_bytes = 0;
  // True when the body ends in a torn record (see ParseRecords).
  bool torn_tail = false;
};

// ParseRecords parses the records of `body` (a log without its header),
// reporting offsets as base_offset + the offset in body. Reading stops at
// the first record that is not whole and valid:
//   - fewer than 4 bytes left, or a count whose record would run past the
//     end, or a last record (ending exactly at the end) with a checksum
//     mismatch, or a count of 0 or above kMaxRecordKeys where every byte
//     from there to the end is zero: a torn tail (an append cut short by a
//     crash or power loss, never acknowledged): torn_tail = true, OK;
//   - a checksum mismatch of a record followed by more bytes, or a bad
//     count followed by a non-zero byte: DataLoss "claim log record at
//     offset <n>: ...".
// Never crashes on any input. Complexity: O(body.size()).
absl::StatusOr<ParsedRecords> ParseRecords(absl::string_view body, uint64_t base_offset);

// A whole log file.
struct ParsedLog {
  LogHeader header;
  ParsedRecords records;  // valid_bytes counts from the end of the header
};

// ParseLog parses a whole log file: ParseLogHeader, then ParseRecords of
// the rest with offsets counted from the start of the file. Errors: as
// those two. Never crashes on any input.
absl::StatusOr<ParsedLog> ParseLog(absl::string_view bytes);

}  // namespace dedupd::bloom_claim_log

#endif  // DEDUPD_STORAGE_BLOOM_BLOOM_CLAIM_LOG_H_
