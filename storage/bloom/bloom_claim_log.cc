#include "storage/bloom/bloom_claim_log.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "core/text/stable_hash.h"

namespace dedupd::bloom_claim_log {
namespace {

uint64_t Checksum(absl::string_view bytes) { return StableHash64(bytes, kChecksumSeed); }

bool AllZero(absl::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

}  // namespace

std::string EncodeLogHeader(const LogHeader& header) {
  std::string out;
  out.reserve(kHeaderBytes);
  out.append(kMagic.data(), kMagic.size());
  PutFixed32LE(&out, kVersion);
  PutFixed32LE(&out, header.num_probes);
  PutFixed64LE(&out, header.generation);
  PutFixed64LE(&out, header.num_blocks);
  PutFixed64LE(&out, Checksum(out));
  return out;
}

absl::StatusOr<LogHeader> ParseLogHeader(absl::string_view bytes) {
  if (bytes.size() < kHeaderBytes) {
    return absl::DataLossError(
        absl::StrCat("claim log header: ", bytes.size(), " bytes, expected ", kHeaderBytes));
  }
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::DataLossError("claim log header: wrong magic (not a claim log)");
  }
  const uint32_t version = DecodeFixed32LE(bytes.data() + 8);
  if (version != kVersion) {
    return absl::FailedPreconditionError(absl::StrCat("claim log header: format version ", version,
                                                      ", this build reads version ", kVersion));
  }
  if (DecodeFixed64LE(bytes.data() + 32) != Checksum(bytes.substr(0, 32))) {
    return absl::DataLossError("claim log header: checksum mismatch");
  }
  LogHeader header;
  header.num_probes = DecodeFixed32LE(bytes.data() + 12);
  header.generation = DecodeFixed64LE(bytes.data() + 16);
  header.num_blocks = DecodeFixed64LE(bytes.data() + 24);
  return header;
}

void AppendRecords(absl::Span<const uint64_t> key_hashes, std::string* out) {
  size_t done = 0;
  while (done < key_hashes.size()) {
    const size_t n = std::min<size_t>(key_hashes.size() - done, kMaxRecordKeys);
    const size_t start = out->size();
    out->reserve(start + RecordBytes(n));
    PutFixed32LE(out, static_cast<uint32_t>(n));
    for (size_t i = 0; i < n; ++i) PutFixed64LE(out, key_hashes[done + i]);
    PutFixed64LE(out, Checksum(absl::string_view(*out).substr(start)));
    done += n;
  }
}

absl::StatusOr<ParsedRecords> ParseRecords(absl::string_view body, uint64_t base_offset) {
  ParsedRecords parsed;
  size_t pos = 0;
  while (pos < body.size()) {
    const absl::string_view rest = body.substr(pos);
    const uint64_t offset = base_offset + pos;
    if (rest.size() < 4) {
      parsed.torn_tail = true;
      break;
    }
    const uint32_t count = DecodeFixed32LE(rest.data());
    if (count == 0 || count > kMaxRecordKeys) {
      // A file extended by the OS but whose data never reached the disk
      // reads as zeros (power loss without fsync): a torn tail. Anything
      // else is a damaged count, which must not silently hide what follows.
      if (AllZero(rest)) {
        parsed.torn_tail = true;
        break;
      }
      return absl::DataLossError(
          absl::StrCat("claim log record at offset ", offset, ": bad key count ", count));
    }
    const size_t size = RecordBytes(count);
    if (size > rest.size()) {
      parsed.torn_tail = true;  // an append cut short
      break;
    }
    const uint64_t want = DecodeFixed64LE(rest.data() + size - 8);
    if (want != Checksum(rest.substr(0, size - 8))) {
      if (size == rest.size()) {
        // The last record, whole in length but not in content: the tail of
        // an append whose pages did not all reach the disk.
        parsed.torn_tail = true;
        break;
      }
      return absl::DataLossError(absl::StrCat("claim log record at offset ", offset,
                                              ": checksum mismatch (", count, " keys, ", size,
                                              " bytes)"));
    }
    parsed.record_keys.push_back(count);
    for (uint32_t i = 0; i < count; ++i) {
      parsed.key_hashes.push_back(DecodeFixed64LE(rest.data() + 4 + 8 * size_t{i}));
    }
    pos += size;
  }
  parsed.valid_bytes = pos;
  return parsed;
}

absl::StatusOr<ParsedLog> ParseLog(absl::string_view bytes) {
  absl::StatusOr<LogHeader> header = ParseLogHeader(bytes);
  if (!header.ok()) return header.status();
  absl::StatusOr<ParsedRecords> records = ParseRecords(bytes.substr(kHeaderBytes), kHeaderBytes);
  if (!records.ok()) return records.status();
  return ParsedLog{*header, *std::move(records)};
}

}  // namespace dedupd::bloom_claim_log
