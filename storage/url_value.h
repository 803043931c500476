// url_value.h: the bytes of a URL record (UrlRecord), shared by every
// backend that keeps records as byte strings: the RocksDB backend's URL
// values (docs/storage_format.md, "URL record") and the Redis Cluster
// backend's (docs/redis_format.md), which are the same bytes. Pure
// functions; changing a byte they write or accept changes both formats.
//
// Example:
//   std::string value = EncodeUrlRecord(record);
//   absl::StatusOr<UrlRecord> back = DecodeUrlRecord(value);  // == record
//
// Thread safety: pure functions.
#ifndef DEDUPD_STORAGE_URL_VALUE_H_
#define DEDUPD_STORAGE_URL_VALUE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "storage/url_store.h"

namespace dedupd {

// The first byte of every URL value: the value layout's own version. A
// URL claimed once, without claim id or lease, keeps version 1 (9 bytes);
// any other record version 2.
inline constexpr uint8_t kUrlValueVersion = 1;
inline constexpr uint8_t kUrlValueVersion2 = 2;
// Size of a version-1 URL value: version byte + 8-byte big-endian micros.
inline constexpr size_t kUrlValueBytes = 9;

// EncodeUrlValue returns the version-1 URL record value of a URL claimed
// once, without claim id or lease: kUrlValueVersion followed by
// `first_seen` as i64 big-endian (two's complement) microseconds since the
// Unix epoch, truncated toward negative infinity.
std::string EncodeUrlValue(absl::Time first_seen);

// EncodeUrlRecord returns the value of `record`: version 1
// (EncodeUrlValue) when it is a first claim without claim id or lease
// whose last claim is its first, else version 2 (docs/storage_format.md):
// kUrlValueVersion2, a flags byte, first seen, then only the fields the
// flags name (last claim, claim id hash, lease end). Times are truncated
// to microseconds.
std::string EncodeUrlRecord(const UrlRecord& record);

// DecodeUrlRecord decodes a URL value of version 1 or 2. Errors: DataLoss
// naming the defect (empty, unknown value version, unknown flags, wrong
// length, a version-2 value that version 1 would hold). Never crashes,
// whatever the bytes; every value it accepts is what EncodeUrlRecord
// writes for the result.
absl::StatusOr<UrlRecord> DecodeUrlRecord(absl::string_view value);

// DecodeUrlValue returns the first-seen time stored in a URL value of
// either version (DecodeUrlRecord's first_seen).
absl::StatusOr<absl::Time> DecodeUrlValue(absl::string_view value);

}  // namespace dedupd

#endif  // DEDUPD_STORAGE_URL_VALUE_H_
