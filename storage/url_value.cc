#include "storage/url_value.h"

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/coding.h"

namespace dedupd {
namespace {

// Microseconds since the epoch as stored: i64, two's complement (see
// rocksdb_format.cc for why the uint64_t round trip is well defined).
uint64_t TimeToStoredMicros(absl::Time t) { return static_cast<uint64_t>(absl::ToUnixMicros(t)); }

absl::Time StoredMicrosToTime(uint64_t v) { return absl::FromUnixMicros(static_cast<int64_t>(v)); }

// Version-2 URL value flags (docs/storage_format.md, "URL record").
constexpr uint8_t kFlagLastClaim = 0x01;  // last claim != first seen
constexpr uint8_t kFlagClaimId = 0x02;    // claim id hash present
constexpr uint8_t kFlagLease = 0x04;      // pending lease end present
constexpr uint8_t kKindShift = 3;         // bits 3-4: UrlClaimKind
constexpr uint8_t kKindMask = 0x18;
constexpr uint8_t kKnownFlags = kFlagLastClaim | kFlagClaimId | kFlagLease | kKindMask;

absl::Time Micros(absl::Time t) { return absl::FromUnixMicros(absl::ToUnixMicros(t)); }

}  // namespace

std::string EncodeUrlValue(absl::Time first_seen) {
  std::string value;
  value.reserve(kUrlValueBytes);
  value.push_back(static_cast<char>(kUrlValueVersion));
  PutFixed64BE(&value, TimeToStoredMicros(first_seen));
  return value;
}

std::string EncodeUrlRecord(const UrlRecord& record) {
  const absl::Time first = Micros(record.first_seen);
  const absl::Time last = Micros(record.last_claim);
  uint8_t flags = static_cast<uint8_t>(static_cast<uint8_t>(record.last_kind) << kKindShift);
  if (last != first) flags |= kFlagLastClaim;
  if (record.claim_id_hash != 0) flags |= kFlagClaimId;
  if (record.lease_until.has_value()) flags |= kFlagLease;
  if (flags == 0) return EncodeUrlValue(first);
  std::string value;
  value.reserve(2 + 4 * 8);
  value.push_back(static_cast<char>(kUrlValueVersion2));
  value.push_back(static_cast<char>(flags));
  PutFixed64BE(&value, TimeToStoredMicros(first));
  if (flags & kFlagLastClaim) PutFixed64BE(&value, TimeToStoredMicros(last));
  if (flags & kFlagClaimId) PutFixed64BE(&value, record.claim_id_hash);
  if (flags & kFlagLease) PutFixed64BE(&value, TimeToStoredMicros(*record.lease_until));
  return value;
}

absl::StatusOr<UrlRecord> DecodeUrlRecord(absl::string_view value) {
  if (value.empty()) return absl::DataLossError("URL value is empty");
  const uint8_t version = static_cast<uint8_t>(value[0]);
  UrlRecord r;
  if (version == kUrlValueVersion) {
    if (value.size() != kUrlValueBytes) {
      return absl::DataLossError(absl::StrCat("URL value has ", value.size(), " bytes, version ",
                                              static_cast<int>(kUrlValueVersion), " has ",
                                              kUrlValueBytes));
    }
    r.first_seen = StoredMicrosToTime(DecodeFixed64BE(value.data() + 1));
    r.last_claim = r.first_seen;
    return r;
  }
  if (version != kUrlValueVersion2) {
    return absl::DataLossError(absl::StrCat(
        "URL value has unknown value version ", static_cast<int>(version), " (this build reads ",
        static_cast<int>(kUrlValueVersion), " and ", static_cast<int>(kUrlValueVersion2), ")"));
  }
  if (value.size() < 2) return absl::DataLossError("URL value of version 2 has no flags byte");
  const uint8_t flags = static_cast<uint8_t>(value[1]);
  const uint8_t kind = (flags & kKindMask) >> kKindShift;
  if ((flags & ~kKnownFlags) != 0 || kind > static_cast<uint8_t>(UrlClaimKind::kDue)) {
    return absl::DataLossError(
        absl::StrCat("URL value has unknown flags 0x", absl::Hex(flags, absl::kZeroPad2)));
  }
  if (flags == 0) {
    return absl::DataLossError("URL value of version 2 has no flags (version 1 holds it)");
  }
  const size_t want = 2 + 8 +
                      8 * (((flags & kFlagLastClaim) ? 1 : 0) + ((flags & kFlagClaimId) ? 1 : 0) +
                           ((flags & kFlagLease) ? 1 : 0));
  if (value.size() != want) {
    return absl::DataLossError(absl::StrCat("URL value has ", value.size(), " bytes, its flags 0x",
                                            absl::Hex(flags, absl::kZeroPad2), " need ", want));
  }
  const char* p = value.data() + 2;
  auto next = [&p] {
    const uint64_t v = DecodeFixed64BE(p);
    p += 8;
    return v;
  };
  r.first_seen = StoredMicrosToTime(next());
  r.last_kind = static_cast<UrlClaimKind>(kind);
  r.last_claim = r.first_seen;
  if (flags & kFlagLastClaim) {
    r.last_claim = StoredMicrosToTime(next());
    if (r.last_claim == r.first_seen) {
      return absl::DataLossError("URL value stores a last claim equal to its first seen");
    }
  }
  if (flags & kFlagClaimId) {
    r.claim_id_hash = next();
    if (r.claim_id_hash == 0) return absl::DataLossError("URL value stores claim id hash 0");
  }
  if (flags & kFlagLease) r.lease_until = StoredMicrosToTime(next());
  return r;
}

absl::StatusOr<absl::Time> DecodeUrlValue(absl::string_view value) {
  absl::StatusOr<UrlRecord> r = DecodeUrlRecord(value);
  if (!r.ok()) return r.status();
  return r->first_seen;
}

}  // namespace dedupd
