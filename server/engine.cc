#include "server/engine.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/timestamp.pb.h"

namespace dedupd {
namespace {

void SetTimestamp(absl::Time t, google::protobuf::Timestamp* out) {
  const int64_t micros = absl::ToUnixMicros(t);
  // Floor division, so times before the epoch keep nanos in [0, 1e9).
  int64_t seconds = micros / 1000000;
  int64_t rem = micros % 1000000;
  if (rem < 0) {
    rem += 1000000;
    --seconds;
  }
  out->set_seconds(seconds);
  out->set_nanos(static_cast<int32_t>(rem * 1000));
}

absl::Status WithContext(const absl::Status& s, absl::string_view context) {
  return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
}

}  // namespace

Engine::Engine(const UrlNormalizer* normalizer, UrlStore* store,
               EngineOptions options)
    : normalizer_(normalizer), store_(store), options_(std::move(options)) {}

absl::Status Engine::CheckUrl(const v1::CheckUrlRequest& request,
                              v1::CheckUrlResponse* response) const {
  const int n = request.items_size();
  if (n == 0) {
    return absl::InvalidArgumentError("the request has no items");
  }
  if (static_cast<size_t>(n) > options_.max_batch_items) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the request has ", n, " items; the limit is ",
        options_.max_batch_items,
        " per request (--max_batch_items): split it into smaller batches"));
  }
  response->clear_results();
  response->mutable_results()->Reserve(n);

  // Normalize every item; collect the valid keys for one store call.
  std::vector<std::string> keys;
  std::vector<int> key_item;  // keys[j] belongs to items[key_item[j]]
  keys.reserve(n);
  key_item.reserve(n);
  for (int i = 0; i < n; ++i) {
    const v1::UrlItem& item = request.items(i);
    v1::UrlResult* result = response->add_results();
    absl::StatusOr<std::string> normalized =
        normalizer_->Normalize(item.url(), item.base_url());
    if (!normalized.ok()) {
      result->set_verdict(v1::URL_VERDICT_INVALID);
      result->set_error(std::string(normalized.status().message()));
      continue;
    }
    result->set_normalized_url(*normalized);
    keys.push_back(*std::move(normalized));
    key_item.push_back(i);
  }
  if (keys.empty()) return absl::OkStatus();

  const bool peek = request.mode() == v1::CLAIM_MODE_PEEK;
  if (peek) {
    std::vector<std::optional<absl::Time>> found;
    absl::Status s = store_->LookupUrls(keys, &found);
    if (!s.ok()) return WithContext(s, "look up URLs");
    for (size_t j = 0; j < keys.size(); ++j) {
      v1::UrlResult* result = response->mutable_results(key_item[j]);
      if (found[j].has_value()) {
        result->set_verdict(v1::URL_VERDICT_SEEN);
        SetTimestamp(*found[j], result->mutable_first_seen_time());
      } else {
        result->set_verdict(v1::URL_VERDICT_NEW);
      }
    }
    return absl::OkStatus();
  }

  std::vector<UrlClaim> claims;
  absl::Status s = store_->ClaimUrls(keys, options_.clock(), &claims);
  if (!s.ok()) return WithContext(s, "claim URLs");
  for (size_t j = 0; j < keys.size(); ++j) {
    v1::UrlResult* result = response->mutable_results(key_item[j]);
    if (claims[j].is_new) {
      result->set_verdict(v1::URL_VERDICT_NEW);
    } else {
      result->set_verdict(v1::URL_VERDICT_SEEN);
      SetTimestamp(claims[j].first_seen, result->mutable_first_seen_time());
    }
  }
  return absl::OkStatus();
}

}  // namespace dedupd
