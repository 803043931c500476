#include "storage/bloom/bloom_claim_log.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/text/stable_hash.h"

namespace dedupd::bloom_claim_log {
namespace {

// Little-endian fixed-width integers, whatever the host's byte order: the
// files move between machines.
void PutU32(uint32_t v, std::string* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void PutU64(uint64_t v, std::string* out) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  }
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  }
  return v;
}

uint64_t Checksum(absl::string_view bytes) {
  return StableHash64(bytes, kChecksumSeed);
}

bool AllZero(absl::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(),
                     [](char c) { return c == 0; });
}

}  // namespace

std::string EncodeLogHeader(const LogHeader& header) {
  std::string out;
  out.reserve(kHeaderBytes);
  out.append(kMagic.data(), kMagic.size());
  PutU32(kVersion, &out);
  PutU32(header.num_probes, &out);
  PutU64(header.generation, &out);
  PutU64(header.num_blocks, &out);
  PutU64(Checksum(out), &out);
  return out;
}

absl::StatusOr<LogHeader> ParseLogHeader(absl::string_view bytes) {
  if (bytes.size() < kHeaderBytes) {
    return absl::DataLossError(absl::StrCat("claim log header: ", bytes.size(),
                                            " bytes, expected ", kHeaderBytes));
  }
  if (bytes.substr(0, kMagic.size()) != kMagic) {
    return absl::DataLossError("claim log header: wrong magic (not a claim log)");
  }
  const uint32_t version = GetU32(bytes.data() + 8);
  if (version != kVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("claim log header: format version ", version,
                     ", this build reads version ", kVersion));
  }
  if (GetU64(bytes.data() + 32) != Checksum(bytes.substr(0, 32))) {
    return absl::DataLossError("claim log header: checksum mismatch");
  }
  LogHeader header;
  header.num_probes = GetU32(bytes.data() + 12);
  header.generation = GetU64(bytes.data() + 16);
  header.num_blocks = GetU64(bytes.data() + 24);
  return header;
}

void AppendRecords(absl::Span<const uint64_t> key_hashes, std::string* out) {
  size_t done = 0;
  while (done < key_hashes.size()) {
    const size_t n =
        std::min<size_t>(key_hashes.size() - done, kMaxRecordKeys);
    const size_t start = out->size();
    out->reserve(start + RecordBytes(n));
    PutU32(static_cast<uint32_t>(n), out);
    for (size_t i = 0; i < n; ++i) PutU64(key_hashes[done + i], out);
    PutU64(Checksum(absl::string_view(*out).substr(start)), out);
    done += n;
  }
}

absl::StatusOr<ParsedRecords> ParseRecords(absl::string_view body,
                                           uint64_t base_offset) {
  ParsedRecords parsed;
  size_t pos = 0;
  while (pos < body.size()) {
    const absl::string_view rest = body.substr(pos);
    const uint64_t offset = base_offset + pos;
    if (rest.size() < 4) {
      parsed.torn_tail = true;
      break;
    }
    const uint32_t count = GetU32(rest.data());
    if (count == 0 || count > kMaxRecordKeys) {
      // A file extended by the OS but whose data never reached the disk
      // reads as zeros (power loss without fsync): a torn tail. Anything
      // else is a damaged count, which must not silently hide what follows.
      if (AllZero(rest)) {
        parsed.torn_tail = true;
        break;
      }
      return absl::DataLossError(absl::StrCat("claim log record at offset ",
                                              offset, ": bad key count ",
                                              count));
    }
    const size_t size = RecordBytes(count);
    if (size > rest.size()) {
      parsed.torn_tail = true;  // an append cut short
      break;
    }
    const uint64_t want = GetU64(rest.data() + size - 8);
    if (want != Checksum(rest.substr(0, size - 8))) {
      if (size == rest.size()) {
        // The last record, whole in length but not in content: the tail of
        // an append whose pages did not all reach the disk.
        parsed.torn_tail = true;
        break;
      }
      return absl::DataLossError(absl::StrCat(
          "claim log record at offset ", offset, ": checksum mismatch (",
          count, " keys, ", size, " bytes)"));
    }
    parsed.record_keys.push_back(count);
    for (uint32_t i = 0; i < count; ++i) {
      parsed.key_hashes.push_back(GetU64(rest.data() + 4 + 8 * size_t{i}));
    }
    pos += size;
  }
  parsed.valid_bytes = pos;
  return parsed;
}

absl::StatusOr<ParsedLog> ParseLog(absl::string_view bytes) {
  absl::StatusOr<LogHeader> header = ParseLogHeader(bytes);
  if (!header.ok()) return header.status();
  absl::StatusOr<ParsedRecords> records =
      ParseRecords(bytes.substr(kHeaderBytes), kHeaderBytes);
  if (!records.ok()) return records.status();
  return ParsedLog{*header, *std::move(records)};
}

}  // namespace dedupd::bloom_claim_log
