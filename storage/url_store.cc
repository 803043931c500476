#include "storage/url_store.h"

#include "absl/strings/str_cat.h"
#include "core/text/stable_hash.h"

namespace dedupd {

absl::Status UrlStore::ClaimUrls(absl::Span<const std::string> keys, absl::Time now,
                                 std::vector<UrlClaim>* results) {
  return Claim(UrlClaimOptions{}, keys, now, results);
}

absl::Status UrlStore::LookupRecordsPerKey(absl::string_view name_space,
                                           absl::Span<const std::string> keys,
                                           std::vector<std::optional<UrlRecord>>* records,
                                           std::vector<absl::Status>* statuses) {
  statuses->assign(keys.size(), absl::OkStatus());
  return LookupRecords(name_space, keys, records);
}

absl::Status UrlStore::CompletePerKey(absl::string_view name_space, uint64_t claim_id_hash,
                                      absl::Span<const std::string> keys,
                                      std::vector<UrlCompletion>* results,
                                      std::vector<absl::Status>* statuses) {
  statuses->assign(keys.size(), absl::OkStatus());
  return Complete(name_space, claim_id_hash, keys, results);
}

absl::Status UrlStore::LookupUrls(absl::Span<const std::string> keys,
                                  std::vector<std::optional<absl::Time>>* results) {
  std::vector<std::optional<UrlRecord>> records;
  absl::Status s = LookupRecords("", keys, &records);
  results->assign(keys.size(), std::nullopt);
  if (!s.ok()) return s;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (records[i].has_value()) (*results)[i] = records[i]->first_seen;
  }
  return absl::OkStatus();
}

absl::Status CheckUrlKeys(absl::Span<const std::string> keys) {
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("key ", i, " of the batch is empty"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckNamespace(absl::string_view name_space) {
  if (name_space.size() > kMaxNamespaceBytes) {
    return absl::InvalidArgumentError(absl::StrCat("namespace: is ", name_space.size(),
                                                   " bytes; the limit is ", kMaxNamespaceBytes));
  }
  for (size_t i = 0; i < name_space.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name_space[i]);
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("namespace: byte ", i, " (0x", absl::Hex(c, absl::kZeroPad2),
                       ") is not an ASCII letter, digit, '.', '_' or '-'"));
    }
  }
  return absl::OkStatus();
}

uint64_t ClaimIdHash(absl::string_view claim_id) {
  if (claim_id.empty()) return 0;
  // "dedupdCI": a fixed seed, so the hash is the same in every build.
  constexpr uint64_t kSeed = 0x6465647570644349;
  const uint64_t h = StableHash64(claim_id, kSeed);
  return h == 0 ? 1 : h;
}

}  // namespace dedupd
