// `dedupctl url check|peek|complete`: URLs to CheckUrl (or CompleteUrls) in
// batches, one line each.
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/dedupctl/batch_loop.h"
#include "client/dedupctl/commands.h"
#include "client/dedupctl/line_io.h"
#include "client/dedupctl/output_format.h"
#include "client/json.h"
#include "core/url/url_normalizer.h"
#include "dedupd/v1/dedupd.pb.h"

namespace dedupd::dedupctl {
namespace {

// The output line of one URL (docs/dedupctl.md, "url check|peek");
// `result` is nullptr for an input with a local error.
std::string UrlLine(const InputItem& input, const dedupd::v1::UrlResult* result) {
  JsonObjectWriter json;
  json.String("url", input.url);
  if (result == nullptr) {
    json.String("verdict", "INVALID").String("error", *input.error);
    return std::move(json).Finish();
  }
  // INVALID has one for a URL the store could not answer (STORE_UNAVAILABLE).
  if (!result->normalized_url().empty()) json.String("normalized", result->normalized_url());
  json.String("verdict", EnumName(result->verdict()));
  if (result->reclaimed()) json.Bool("reclaimed", true);
  const bool recorded = result->verdict() == dedupd::v1::URL_VERDICT_SEEN ||
                        result->verdict() == dedupd::v1::URL_VERDICT_DUE;
  if (recorded && result->has_first_seen_time()) {
    json.String("first_seen", FormatTimestamp(result->first_seen_time()));
  }
  if (result->has_last_claim_time()) {
    json.String("last_claim", FormatTimestamp(result->last_claim_time()));
  }
  if (result->has_lease_expire_time()) {
    json.String("lease_expires", FormatTimestamp(result->lease_expire_time()));
  }
  if (result->has_last_changed_time()) {
    json.String("last_changed", FormatTimestamp(result->last_changed_time()))
        .String("content_hash", result->content_hash());
    if (!result->etag().empty()) json.String("etag", result->etag());
    if (!result->last_modified().empty()) json.String("last_modified", result->last_modified());
  }
  if (result->verdict() == dedupd::v1::URL_VERDICT_INVALID) {
    json.String("error", result->error()).String("reason", EnumName(result->error_reason()));
  }
  return std::move(json).Finish();
}

// The output line of one URL of `url complete`.
std::string CompleteLine(const InputItem& input, const dedupd::v1::CompleteResult* result) {
  JsonObjectWriter json;
  json.String("url", input.url);
  if (result == nullptr) {
    json.String("verdict", "INVALID").String("error", *input.error);
    return std::move(json).Finish();
  }
  if (!result->normalized_url().empty()) json.String("normalized", result->normalized_url());
  json.String("verdict", EnumName(result->verdict()));
  if (result->verdict() == dedupd::v1::COMPLETE_VERDICT_INVALID) {
    json.String("error", result->error()).String("reason", EnumName(result->error_reason()));
  }
  return std::move(json).Finish();
}

class UrlJob : public BatchJob {
 public:
  explicit UrlJob(const UrlOptions& options)
      : options_(options),
        source_(UrlSource::FromArgsOrStdin(options.urls)),
        base_(options.base.value_or("")) {}

  size_t ReadBatch() override {
    if (!more_) return 0;
    more_ = source_.NextBatch(options_.server.client.max_items_per_request, &batch_);
    return batch_.size();
  }

  // Sends the batch (skipping items with a local error) and prints a line
  // per item.
  absl::Status SendBatch(const DedupClient& client, bool* any_invalid) override {
    std::vector<dedupd::v1::UrlItem> items;
    items.reserve(batch_.size());
    for (const InputItem& input : batch_) {
      if (input.error) continue;
      dedupd::v1::UrlItem& item = items.emplace_back();
      item.set_url(input.url);
      if (!base_.empty()) item.set_base_url(base_);
    }
    if (options_.complete) {
      return SendAndPrint(
          batch_, std::move(items),
          [&](const std::vector<dedupd::v1::UrlItem>& send) {
            return client.CompleteUrls(send, options_.name_space);
          },
          [](const dedupd::v1::CompleteResult& r) {
            return r.verdict() == dedupd::v1::COMPLETE_VERDICT_INVALID;
          },
          CompleteLine, any_invalid);
    }
    UrlCheckOptions url_options;
    url_options.name_space = options_.name_space;
    url_options.lease_seconds = options_.lease_seconds;
    return SendAndPrint(
        batch_, std::move(items),
        [&](const std::vector<dedupd::v1::UrlItem>& send) {
          return client.CheckUrls(send, options_.mode, url_options);
        },
        [](const dedupd::v1::UrlResult& r) {
          return r.verdict() == dedupd::v1::URL_VERDICT_INVALID;
        },
        UrlLine, any_invalid);
  }

  absl::Status InputStatus() const override { return source_.status(); }

 private:
  const UrlOptions& options_;
  UrlSource source_;
  const std::string base_;
  std::vector<InputItem> batch_;
  bool more_ = true;
};

}  // namespace

int RunUrl(const UrlOptions& options) {
  if (options.base) {
    // The server applies its own policy; this only checks that the base is
    // an absolute http(s) URL, to fail once instead of once per URL.
    if (absl::StatusOr<std::string> b = UrlNormalizer().Normalize(*options.base); !b.ok()) {
      return UsageError(absl::StrCat("--base: ", b.status().message()));
    }
  }
  UrlJob job(options);
  return RunBatchLoop(options.server, job);
}

}  // namespace dedupd::dedupctl
