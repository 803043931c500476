#include "storage/rocksdb_format.h"

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dedupd::rocksdb_format {
namespace {

// Big-endian fixed-width integers: byte order equals numeric order, which
// matters once integers appear in keys, and the bytes do not depend on the
// host. Written byte by byte so that no alignment or endianness assumption
// is made about the buffer.
void PutFixed32BE(std::string* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    out->push_back(static_cast<char>((v >> shift) & 0xFF));
  }
}

void PutFixed64BE(std::string* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) {
    out->push_back(static_cast<char>((v >> shift) & 0xFF));
  }
}

// REQUIRES: p points at 4 readable bytes.
uint32_t GetFixed32BE(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// REQUIRES: p points at 8 readable bytes.
uint64_t GetFixed64BE(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// Microseconds since the epoch as stored: i64, two's complement. The
// conversion through uint64_t is well defined in both directions (C++17
// implementation-defined for the unsigned→signed direction, two's
// complement on every compiler we build with; C++20 makes it standard).
uint64_t TimeToStoredMicros(absl::Time t) {
  return static_cast<uint64_t>(absl::ToUnixMicros(t));
}

absl::Time StoredMicrosToTime(uint64_t v) {
  return absl::FromUnixMicros(static_cast<int64_t>(v));
}

constexpr size_t kMetaHeaderBytes = 8 + 4;  // magic + format version

}  // namespace

std::string EncodeMetaKey() { return std::string(1, kTagMeta); }

std::string EncodeMeta(const StoreMeta& meta) {
  std::string out;
  out.reserve(kMetaBytes);
  out.append(kMetaMagic.data(), kMetaMagic.size());
  PutFixed32BE(&out, meta.format_version);
  PutFixed32BE(&out, meta.normalizer_version);
  PutFixed64BE(&out, TimeToStoredMicros(meta.created));
  return out;
}

absl::StatusOr<uint32_t> DecodeMetaFormatVersion(absl::string_view value) {
  if (value.size() < kMetaHeaderBytes) {
    return absl::DataLossError(
        absl::StrCat("meta record has ", value.size(),
                     " bytes, fewer than the ", kMetaHeaderBytes,
                     " of magic and format version"));
  }
  if (value.substr(0, kMetaMagic.size()) != kMetaMagic) {
    return absl::DataLossError(
        "meta record does not start with the magic \"DEDUPDST\": not a dedupd "
        "store, or a damaged one");
  }
  return GetFixed32BE(value.data() + kMetaMagic.size());
}

absl::StatusOr<StoreMeta> DecodeMeta(absl::string_view value) {
  absl::StatusOr<uint32_t> version = DecodeMetaFormatVersion(value);
  if (!version.ok()) return version.status();
  if (*version != kStorageFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("meta record has storage format version ", *version,
                     ", this build reads version ", kStorageFormatVersion));
  }
  if (value.size() != kMetaBytes) {
    return absl::DataLossError(
        absl::StrCat("meta record has ", value.size(), " bytes, version ",
                     kStorageFormatVersion, " has ", kMetaBytes));
  }
  StoreMeta meta;
  const char* p = value.data() + kMetaHeaderBytes;
  meta.format_version = *version;
  meta.normalizer_version = GetFixed32BE(p);
  meta.created = StoredMicrosToTime(GetFixed64BE(p + 4));
  return meta;
}

std::string EncodeUrlKey(absl::string_view normalized_url) {
  std::string key;
  key.reserve(1 + normalized_url.size());
  key.push_back(kTagUrl);
  key.append(normalized_url.data(), normalized_url.size());
  return key;
}

absl::StatusOr<absl::string_view> DecodeUrlKey(absl::string_view key) {
  if (key.size() < 2 || key[0] != kTagUrl) {
    return absl::DataLossError(
        key.empty() ? std::string("URL key is empty")
                    : absl::StrCat("URL key has tag ",
                                   static_cast<int>(static_cast<uint8_t>(key[0])),
                                   " and ", key.size() - 1,
                                   " URL bytes; want tag 1 and at least 1"));
  }
  return key.substr(1);
}

std::string EncodeUrlValue(absl::Time first_seen) {
  std::string value;
  value.reserve(kUrlValueBytes);
  value.push_back(static_cast<char>(kUrlValueVersion));
  PutFixed64BE(&value, TimeToStoredMicros(first_seen));
  return value;
}

absl::StatusOr<absl::Time> DecodeUrlValue(absl::string_view value) {
  if (value.empty()) return absl::DataLossError("URL value is empty");
  const uint8_t version = static_cast<uint8_t>(value[0]);
  if (version != kUrlValueVersion) {
    return absl::DataLossError(
        absl::StrCat("URL value has unknown value version ",
                     static_cast<int>(version), " (this build reads version ",
                     static_cast<int>(kUrlValueVersion), ")"));
  }
  if (value.size() != kUrlValueBytes) {
    return absl::DataLossError(
        absl::StrCat("URL value has ", value.size(), " bytes, version ",
                     static_cast<int>(kUrlValueVersion), " has ",
                     kUrlValueBytes));
  }
  return StoredMicrosToTime(GetFixed64BE(value.data() + 1));
}

}  // namespace dedupd::rocksdb_format
