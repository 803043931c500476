#include "storage/redis/redis_near_read.h"

#include <algorithm>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/text/simhash.h"
#include "storage/redis/redis_replies.h"

namespace dedupd::redis {

std::string SigBytes(const MinHashSignature& sig) {
  return std::string(reinterpret_cast<const char*>(sig.data()), sig.size());
}

absl::Status TakeSimHashBucket(absl::string_view key, const Value& reply,
                               std::vector<BucketEntry>* out) {
  for (const Value& m : reply.elements) {
    std::optional<BucketEntry> e = DecodeSimHashBucketMember(m.str);
    if (!e.has_value()) return Malformed(key, "a member is not 12 bytes");
    out->push_back(*e);
  }
  return absl::OkStatus();
}

absl::Status TakeLshBucket(absl::string_view key, const Value& reply, absl::string_view id_name,
                           std::vector<uint32_t>* out) {
  for (const Value& m : reply.elements) {
    uint32_t id = 0;
    if (!absl::SimpleAtoi(m.str, &id)) {
      return Malformed(key, absl::StrCat("a member is not a ", id_name));
    }
    out->push_back(id);
  }
  return absl::OkStatus();
}

std::vector<uint32_t> NearCandidateIds(
    const std::vector<uint64_t>& simhashes, const std::vector<MinHashSignature>& sigs, int k,
    absl::flat_hash_map<uint64_t, std::vector<BucketEntry>>* buckets,
    absl::flat_hash_map<std::string, std::vector<uint32_t>>* bands) {
  std::vector<uint32_t> ids;
  for (uint64_t simhash : simhashes) {
    std::vector<BucketEntry>& entries = (*buckets)[simhash];
    std::sort(entries.begin(), entries.end(),
              [](const auto& a, const auto& b) { return a.doc_id < b.doc_id; });
    entries.erase(std::unique(entries.begin(), entries.end(),
                              [](const auto& a, const auto& b) { return a.doc_id == b.doc_id; }),
                  entries.end());
    for (const BucketEntry& e : entries) {
      if (HammingDistance(e.simhash, simhash) <= k) ids.push_back(e.doc_id);
    }
  }
  for (const MinHashSignature& sig : sigs) {
    std::vector<uint32_t>& band_ids = (*bands)[SigBytes(sig)];
    std::sort(band_ids.begin(), band_ids.end());
    band_ids.erase(std::unique(band_ids.begin(), band_ids.end()), band_ids.end());
    ids.insert(ids.end(), band_ids.begin(), band_ids.end());
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::vector<SimHashIndex::Match> NearMatches(const std::vector<BucketEntry>& entries,
                                             uint64_t simhash, int max_distance, size_t limit,
                                             size_t* total,
                                             const std::function<bool(uint32_t)>& visible) {
  std::vector<SimHashIndex::Match> out;
  for (const BucketEntry& e : entries) {
    const int d = HammingDistance(e.simhash, simhash);
    if (d > max_distance || !visible(e.doc_id)) continue;
    out.push_back({e.simhash, e.doc_id, d});
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
  });
  if (total != nullptr) *total = out.size();
  if (out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace dedupd::redis
