#include "server/engine.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "core/results/results_dedup.h"
#include "core/text/chunk_near_rule.h"
#include "core/text/content_fingerprint.h"
#include "core/text/sha256.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/time_util.h"
#include "storage/document_key.h"
#include "storage/plan/url_planner.h"

namespace dedupd {
namespace {

using google::protobuf::util::TimeUtil;

absl::Status WithContext(const absl::Status& s, absl::string_view context) {
  return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
}

// WholeCallFailure: for a request without per_item_store_errors, the one
// Unavailable of a batch some of whose keys the store could not answer
// (statuses[j] not OK), as before per-item store errors existed; OK when
// every key was answered. The message counts the failed keys and quotes
// up to three distinct reasons (each names its node).
absl::Status WholeCallFailure(absl::Span<const absl::Status> statuses, absl::string_view what) {
  size_t failed = 0;
  std::vector<std::string> reasons;
  for (const absl::Status& s : statuses) {
    if (s.ok()) continue;
    ++failed;
    const std::string reason(s.message());
    if (reasons.size() < 3 && std::find(reasons.begin(), reasons.end(), reason) == reasons.end()) {
      reasons.push_back(reason);
    }
  }
  if (failed == 0) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat(what, ": the store could not answer ", failed, " of ", statuses.size(),
                   " URLs (retry; set per_item_store_errors to have the others answered): ",
                   absl::StrJoin(reasons, "; ")));
}

}  // namespace

Engine::Engine(const UrlNormalizer* normalizer, UrlStore* store, EngineOptions options)
    : normalizer_(normalizer), store_(store), options_(std::move(options)) {}

Engine::Engine(const UrlNormalizer* normalizer, UrlStore* store, const SimHasher* hasher,
               ContentStore* content_store, EngineOptions options)
    : Engine(normalizer, store, hasher, content_store, nullptr, std::move(options)) {}

Engine::Engine(const UrlNormalizer* normalizer, UrlStore* store, const SimHasher* hasher,
               ContentStore* content_store, ChunkStore* chunk_store, EngineOptions options)
    : normalizer_(normalizer),
      store_(store),
      hasher_(hasher),
      minhasher_(MinHashOptions{hasher != nullptr ? hasher->options().shingle_words : 3}),
      content_store_(content_store),
      chunk_store_(chunk_store),
      options_(std::move(options)) {}

absl::Status Engine::CheckBatchSize(int n) const {
  if (n == 0) {
    return absl::InvalidArgumentError("the request has no items");
  }
  if (static_cast<size_t>(n) > options_.max_batch_items) {
    return absl::InvalidArgumentError(
        absl::StrCat("the request has ", n, " items; the limit is ", options_.max_batch_items,
                     " per request (--max_batch_items): split it into smaller batches"));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Engine::ResolveDistance(bool has, uint32_t requested, int index_limit) const {
  if (!has) return options_.default_max_hamming_distance;
  if (requested > static_cast<uint32_t>(index_limit)) {
    return absl::InvalidArgumentError(absl::StrCat("max_hamming_distance ", requested,
                                                   " is above this server's limit of ", index_limit,
                                                   " (--simhash_max_distance)"));
  }
  return static_cast<int>(requested);
}

absl::StatusOr<double> Engine::ResolveMinJaccard(bool has, double requested,
                                                 double default_value) const {
  if (!has) return default_value;
  // Written so that NaN fails too.
  if (!(requested >= options_.min_jaccard_floor && requested <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "min_jaccard ", requested, " is not in [", options_.min_jaccard_floor,
        ", 1] (the lowest this server answers is --min_jaccard_floor; omit it for the default)"));
  }
  return requested;
}

absl::StatusOr<ContentFingerprint> Engine::FingerprintItemText(absl::string_view text,
                                                               v1::ErrorReason* reason,
                                                               ShingleSet32* shingles) const {
  *reason = v1::ERROR_REASON_TEXT_TOO_LARGE;
  if (text.size() > options_.max_text_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("text: is ", text.size(),
                                                   " bytes; the limit is ", options_.max_text_bytes,
                                                   " (--max_text_bytes)"));
  }
  *reason = v1::ERROR_REASON_BAD_TEXT;
  absl::StatusOr<ContentFingerprint> fp = FingerprintText(text, *hasher_, minhasher_, shingles);
  if (!fp.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("text: ", fp.status().message()));
  }
  return fp;
}

namespace {

v1::NearMeasure ToProto(NearMeasure m) {
  switch (m) {
    case NearMeasure::kSimHash:
      return v1::NEAR_MEASURE_SIMHASH;
    case NearMeasure::kJaccard:
      return v1::NEAR_MEASURE_JACCARD;
    case NearMeasure::kBoth:
      return v1::NEAR_MEASURE_BOTH;
  }
  return v1::NEAR_MEASURE_UNSPECIFIED;
}

google::protobuf::Timestamp ToTimestamp(absl::Time t) {
  return TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(t));
}

// An HTTP validator as CheckContent keeps it: at most kMaxValidatorBytes of
// printable ASCII.
absl::Status CheckValidator(absl::string_view field, absl::string_view value) {
  if (value.size() > kMaxValidatorBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": is ", value.size(), " bytes; the limit is ", kMaxValidatorBytes));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": byte ", i, " (0x", absl::Hex(c, absl::kZeroPad2), ") is not printable ASCII"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckClaimId(absl::string_view claim_id) {
  if (claim_id.size() > kMaxClaimIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("claim_id: is ", claim_id.size(), " bytes; the limit is ", kMaxClaimIdBytes));
  }
  return absl::OkStatus();
}

// Normalizes every item of a CheckUrl or CompleteUrls request: sets each
// result's normalized URL, or its INVALID verdict, error and reason, and
// collects the valid keys (keys[j] belongs to items[key_item[j]]).
template <typename Results, typename Verdict>
void NormalizeItems(const UrlNormalizer& normalizer,
                    const google::protobuf::RepeatedPtrField<v1::UrlItem>& items, Verdict invalid,
                    Results* results, std::vector<std::string>* keys, std::vector<int>* key_item) {
  const int n = items.size();
  results->Reserve(n);
  keys->reserve(n);
  key_item->reserve(n);
  for (int i = 0; i < n; ++i) {
    const v1::UrlItem& item = items.Get(i);
    auto* result = results->Add();
    absl::StatusOr<std::string> normalized = normalizer.Normalize(item.url(), item.base_url());
    if (!normalized.ok()) {
      result->set_verdict(invalid);
      result->set_error(std::string(normalized.status().message()));
      result->set_error_reason(v1::ERROR_REASON_BAD_URL);
      continue;
    }
    result->set_normalized_url(*normalized);
    keys->push_back(*std::move(normalized));
    key_item->push_back(i);
  }
}

}  // namespace

absl::StatusOr<UrlClaimOptions> Engine::UrlOptions(const v1::CheckUrlRequest& request) const {
  DEDUPD_RETURN_IF_ERROR(CheckNamespace(request.namespace_()));
  DEDUPD_RETURN_IF_ERROR(CheckClaimId(request.claim_id()));
  UrlClaimOptions options;
  options.name_space = request.namespace_();
  options.claim_id_hash = ClaimIdHash(request.claim_id());
  options.claim_id_retention = options_.claim_id_retention;
  if (request.has_lease_seconds()) {
    const uint32_t lease = request.lease_seconds();
    if (lease < 1 || lease > kMaxLeaseSeconds) {
      return absl::InvalidArgumentError(absl::StrCat("lease_seconds: ", lease,
                                                     " is out of range; a lease is 1 to ",
                                                     kMaxLeaseSeconds, " seconds (7 days)"));
    }
    if (store_->approximate()) {
      return absl::InvalidArgumentError(
          "lease_seconds: this server is in the approximate URL mode (--url_seen_mode="
          "approximate), which keeps no leases");
    }
    options.lease = absl::Seconds(lease);
  }
  return options;
}

absl::Status Engine::CheckUrl(const v1::CheckUrlRequest& request,
                              v1::CheckUrlResponse* response) const {
  if (absl::Status s = CheckBatchSize(request.items_size()); !s.ok()) return s;
  absl::StatusOr<UrlClaimOptions> options = UrlOptions(request);
  if (!options.ok()) return options.status();
  response->clear_results();
  std::vector<std::string> keys;
  std::vector<int> key_item;
  NormalizeItems(*normalizer_, request.items(), v1::URL_VERDICT_INVALID,
                 response->mutable_results(), &keys, &key_item);
  if (keys.empty()) return absl::OkStatus();

  std::vector<absl::Duration> revisit;
  const bool approximate = store_->approximate();
  if (!options_.revisit_policy.empty() && !approximate) {
    revisit.reserve(keys.size());
    for (const std::string& key : keys) {
      revisit.push_back(options_.revisit_policy.Find(options->name_space, UrlHost(key)));
    }
    options->revisit_after = revisit;
  }
  const bool peek = request.mode() == v1::CLAIM_MODE_PEEK;
  const absl::Time now = options_.clock();
  std::vector<UrlClaim> claims;
  absl::Status s = peek ? PeekUrls(store_, *options, keys, now, &claims)
                        : store_->Claim(*options, keys, now, &claims);
  if (!s.ok()) return WithContext(s, peek ? "look up URLs" : "claim URLs");
  if (!request.per_item_store_errors()) {
    std::vector<absl::Status> statuses;
    statuses.reserve(claims.size());
    for (const UrlClaim& c : claims) statuses.push_back(c.status);
    DEDUPD_RETURN_IF_ERROR(WholeCallFailure(statuses, peek ? "look up URLs" : "claim URLs"));
  }
  const bool retry_with_id = !peek && !request.claim_id().empty();
  for (size_t j = 0; j < keys.size(); ++j) {
    v1::UrlResult* result = response->mutable_results(key_item[j]);
    const UrlClaim& c = claims[j];
    if (!c.status.ok()) {
      // A distributed store could not reach this URL's record (its node
      // is down): this item only, retryable; the others are answered.
      result->set_verdict(v1::URL_VERDICT_INVALID);
      result->set_error_reason(v1::ERROR_REASON_STORE_UNAVAILABLE);
      result->set_error(absl::StrCat("store unavailable for this URL (retry it",
                                     retry_with_id ? " with the same claim_id" : "",
                                     "): ", c.status.message()));
      continue;
    }
    if (approximate) {
      // An approximate seen-set (a Bloom filter) says "probably seen" and
      // keeps no time.
      result->set_verdict(c.is_new ? v1::URL_VERDICT_NEW : v1::URL_VERDICT_SEEN_PROBABLY);
      continue;
    }
    if (c.is_new) {
      result->set_verdict(c.due ? v1::URL_VERDICT_DUE : v1::URL_VERDICT_NEW);
      result->set_reclaimed(c.reclaimed);
      // A peek of a key never recorded has no times to report.
      if (peek && !c.due && !c.reclaimed) continue;
    } else {
      result->set_verdict(v1::URL_VERDICT_SEEN);
    }
    *result->mutable_first_seen_time() = ToTimestamp(c.first_seen);
    if (!c.is_new || c.due) *result->mutable_last_claim_time() = ToTimestamp(c.last_claim);
    if (c.lease_until.has_value()) {
      *result->mutable_lease_expire_time() = ToTimestamp(*c.lease_until);
    }
  }
  if (approximate || content_store_ == nullptr) return absl::OkStatus();
  return AddFetches(options->name_space, keys, key_item, claims, response);
}

absl::Status Engine::AddFetches(absl::string_view name_space, absl::Span<const std::string> keys,
                                absl::Span<const int> key_item, absl::Span<const UrlClaim> claims,
                                v1::CheckUrlResponse* response) const {
  // The fetch records of the URLs answered SEEN or DUE: what a re-crawl
  // needs to skip an unchanged page.
  std::vector<std::string> recorded;
  std::vector<int> recorded_item;
  for (size_t j = 0; j < keys.size(); ++j) {
    if (!claims[j].status.ok() || (claims[j].is_new && !claims[j].due)) continue;
    recorded.push_back(keys[j]);
    recorded_item.push_back(key_item[j]);
  }
  if (recorded.empty()) return absl::OkStatus();
  std::vector<std::optional<FetchRecord>> fetches;
  absl::Status s = content_store_->LookupFetches(name_space, recorded, &fetches);
  if (!s.ok()) return WithContext(s, "look up the fetches of URLs");
  for (size_t j = 0; j < recorded.size(); ++j) {
    if (!fetches[j].has_value()) continue;
    v1::UrlResult* result = response->mutable_results(recorded_item[j]);
    *result->mutable_last_changed_time() = ToTimestamp(fetches[j]->hash_since);
    result->set_content_hash(Sha256Hex(fetches[j]->sha256));
    result->set_etag(fetches[j]->etag);
    result->set_last_modified(fetches[j]->last_modified);
  }
  return absl::OkStatus();
}

absl::Status Engine::CompleteUrls(const v1::CompleteUrlsRequest& request,
                                  v1::CompleteUrlsResponse* response) const {
  if (absl::Status s = CheckBatchSize(request.items_size()); !s.ok()) return s;
  DEDUPD_RETURN_IF_ERROR(CheckNamespace(request.namespace_()));
  DEDUPD_RETURN_IF_ERROR(CheckClaimId(request.claim_id()));
  if (store_->approximate()) {
    return absl::FailedPreconditionError(
        "this server is in the approximate URL mode (--url_seen_mode=approximate), which keeps "
        "no leases to confirm");
  }
  response->clear_results();
  std::vector<std::string> keys;
  std::vector<int> key_item;
  NormalizeItems(*normalizer_, request.items(), v1::COMPLETE_VERDICT_INVALID,
                 response->mutable_results(), &keys, &key_item);
  if (keys.empty()) return absl::OkStatus();
  std::vector<UrlCompletion> done;
  std::vector<absl::Status> statuses;
  absl::Status s = store_->CompletePerKey(request.namespace_(), ClaimIdHash(request.claim_id()),
                                          keys, &done, &statuses);
  if (!s.ok()) return WithContext(s, "confirm URLs");
  if (!request.per_item_store_errors()) {
    DEDUPD_RETURN_IF_ERROR(WholeCallFailure(statuses, "confirm URLs"));
  }
  for (size_t j = 0; j < keys.size(); ++j) {
    v1::CompleteResult* result = response->mutable_results(key_item[j]);
    if (!statuses[j].ok()) {
      result->set_verdict(v1::COMPLETE_VERDICT_INVALID);
      result->set_error_reason(v1::ERROR_REASON_STORE_UNAVAILABLE);
      result->set_error(absl::StrCat("store unavailable for this URL (confirm it again): ",
                                     statuses[j].message()));
      continue;
    }
    switch (done[j]) {
      case UrlCompletion::kConfirmed:
        result->set_verdict(v1::COMPLETE_VERDICT_CONFIRMED);
        break;
      case UrlCompletion::kAlreadyConfirmed:
        result->set_verdict(v1::COMPLETE_VERDICT_ALREADY_CONFIRMED);
        break;
      case UrlCompletion::kNotClaimed:
        result->set_verdict(v1::COMPLETE_VERDICT_INVALID);
        result->set_error_reason(v1::ERROR_REASON_NOT_CLAIMED);
        result->set_error(absl::StrCat("not claimed in namespace \"", request.namespace_(),
                                       "\": nothing to confirm"));
        break;
      case UrlCompletion::kLeaseLost:
        result->set_verdict(v1::COMPLETE_VERDICT_INVALID);
        result->set_error_reason(v1::ERROR_REASON_LEASE_LOST);
        result->set_error(
            "its last claim has another claim_id (the lease ended and another request claimed "
            "it): that claimant confirms it");
        break;
    }
  }
  return absl::OkStatus();
}

namespace {

v1::ContentVerdict ToProto(ContentVerdict v) {
  switch (v) {
    case ContentVerdict::kNew:
      return v1::CONTENT_VERDICT_NEW;
    case ContentVerdict::kExactDuplicate:
      return v1::CONTENT_VERDICT_EXACT_DUPLICATE;
    case ContentVerdict::kNearDuplicate:
      return v1::CONTENT_VERDICT_NEAR_DUPLICATE;
  }
  return v1::CONTENT_VERDICT_UNSPECIFIED;
}

v1::RecrawlStatus ToProto(RecrawlStatus r) {
  switch (r) {
    case RecrawlStatus::kFirstSeen:
      return v1::RECRAWL_STATUS_FIRST_SEEN;
    case RecrawlStatus::kUnchanged:
      return v1::RECRAWL_STATUS_UNCHANGED;
    case RecrawlStatus::kChanged:
      return v1::RECRAWL_STATUS_CHANGED;
  }
  return v1::RECRAWL_STATUS_UNSPECIFIED;
}

}  // namespace

absl::Status Engine::CheckContent(const v1::CheckContentRequest& request,
                                  v1::CheckContentResponse* response) const {
  if (content_store_ == nullptr || hasher_ == nullptr) {
    return absl::UnimplementedError(options_.no_content_layer_message.empty()
                                        ? "this server has no content store"
                                        : options_.no_content_layer_message);
  }
  const int n = request.items_size();
  if (absl::Status s = CheckBatchSize(n); !s.ok()) return s;
  DEDUPD_RETURN_IF_ERROR(CheckNamespace(request.namespace_()));
  DEDUPD_RETURN_IF_ERROR(CheckClaimId(request.claim_id()));
  const uint64_t claim_id_hash = ClaimIdHash(request.claim_id());
  response->clear_results();
  response->mutable_results()->Reserve(n);
  const int index_limit = content_store_->max_near_distance();

  std::vector<ContentDoc> docs;
  std::vector<int> doc_item;  // docs[j] belongs to items[doc_item[j]]
  docs.reserve(n);
  doc_item.reserve(n);
  for (int i = 0; i < n; ++i) {
    const v1::ContentItem& item = request.items(i);
    v1::ContentResult* result = response->add_results();
    auto invalid = [result](v1::ErrorReason reason, absl::string_view why) {
      result->set_verdict(v1::CONTENT_VERDICT_INVALID);
      result->set_error(std::string(why));
      result->set_error_reason(reason);
    };
    std::string fetched;   // the fetched URL's document key
    std::string identity;  // the identity's document key
    if (!item.document_id().empty()) {
      if (!item.url().empty() || !item.canonical_url().empty()) {
        invalid(v1::ERROR_REASON_BAD_DOCUMENT_ID,
                "document_id: is given with url or canonical_url (name the document by one: "
                "its URL or its id)");
        continue;
      }
      if (absl::Status id = CheckDocumentId(item.document_id()); !id.ok()) {
        invalid(v1::ERROR_REASON_BAD_DOCUMENT_ID, id.message());
        continue;
      }
      fetched = DocumentKeyOfId(item.document_id());
      identity = fetched;
      result->set_document_id(item.document_id());
    } else {
      if (item.url().empty()) {
        invalid(v1::ERROR_REASON_BAD_URL,
                "url: is empty (the URL the text was fetched from, or a document_id, is "
                "required)");
        continue;
      }
      absl::StatusOr<std::string> url = normalizer_->Normalize(item.url(), "");
      if (!url.ok()) {
        invalid(v1::ERROR_REASON_BAD_URL, absl::StrCat("url: ", url.status().message()));
        continue;
      }
      fetched = *std::move(url);
      identity = fetched;
      if (!item.canonical_url().empty()) {
        // A relative rel=canonical resolves against the page's own URL.
        absl::StatusOr<std::string> canonical =
            normalizer_->Normalize(item.canonical_url(), item.url());
        if (!canonical.ok()) {
          invalid(v1::ERROR_REASON_BAD_URL,
                  absl::StrCat("canonical_url: ", canonical.status().message()));
          continue;
        }
        identity = *std::move(canonical);
      }
      result->set_url(fetched);
      result->set_canonical_url(identity);
    }
    absl::StatusOr<int> distance =
        ResolveDistance(item.has_max_hamming_distance(), item.max_hamming_distance(), index_limit);
    if (!distance.ok()) {
      invalid(v1::ERROR_REASON_DISTANCE_TOO_LARGE, distance.status().message());
      continue;
    }
    absl::StatusOr<double> min_jaccard =
        ResolveMinJaccard(item.has_min_jaccard(), item.min_jaccard(), options_.content_min_jaccard);
    if (!min_jaccard.ok()) {
      invalid(v1::ERROR_REASON_BAD_MIN_JACCARD, min_jaccard.status().message());
      continue;
    }
    v1::ErrorReason reason;
    absl::StatusOr<ContentFingerprint> fp = FingerprintItemText(item.text(), &reason);
    if (!fp.ok()) {
      invalid(reason, fp.status().message());
      continue;
    }
    if (absl::Status v = CheckValidator("etag", item.etag()); !v.ok()) {
      invalid(v1::ERROR_REASON_BAD_VALIDATOR, v.message());
      continue;
    }
    if (absl::Status v = CheckValidator("last_modified", item.last_modified()); !v.ok()) {
      invalid(v1::ERROR_REASON_BAD_VALIDATOR, v.message());
      continue;
    }
    result->set_content_hash(Sha256Hex(fp->sha256));
    result->set_simhash(fp->simhash);
    ContentDoc doc;
    doc.name_space = request.namespace_();
    doc.etag = item.etag();
    doc.last_modified = item.last_modified();
    doc.identity_url = std::move(identity);
    doc.fetched_url = std::move(fetched);
    doc.sha256 = fp->sha256;
    doc.simhash = fp->simhash;
    doc.min_jaccard = MinHashNearThreshold(fp->words, *min_jaccard);
    // Every text long enough to be found by MinHash keeps its signature,
    // whatever this item's threshold, so later items can find it.
    if (KeepsMinHashSignature(fp->words)) doc.minhash = fp->minhash;
    result->set_applied_min_jaccard(doc.min_jaccard);
    doc.max_distance = *distance;
    doc.claim_id_hash = claim_id_hash;
    doc.claim_id_retention = options_.claim_id_retention;
    docs.push_back(std::move(doc));
    doc_item.push_back(i);
  }
  if (docs.empty()) return absl::OkStatus();

  const bool claim = request.mode() != v1::CLAIM_MODE_PEEK;
  std::vector<ContentOutcome> outcomes;
  absl::Status s = content_store_->CheckContent(docs, claim, options_.content_limits,
                                                options_.clock(), &outcomes);
  if (!s.ok()) return WithContext(s, claim ? "claim content" : "look up content");
  if (claim && store_->approximate()) {
    // The content store recorded both URLs of every document as seen; in
    // the approximate URL mode CheckUrl asks the Bloom seen-set instead, so
    // they go there too.
    std::vector<std::string> urls;
    urls.reserve(2 * docs.size());
    for (const ContentDoc& d : docs) {
      if (IsDocumentIdKey(d.identity_url)) continue;  // a document id is not a URL
      urls.push_back(d.identity_url);
      if (d.fetched_url != d.identity_url) urls.push_back(d.fetched_url);
    }
    UrlClaimOptions url_options;
    url_options.name_space = request.namespace_();
    std::vector<UrlClaim> ignored;
    if (!urls.empty()) s = store_->Claim(url_options, urls, options_.clock(), &ignored);
    if (!s.ok()) return WithContext(s, "record content URLs in the URL seen-set");
  }
  if (claim && !store_->approximate()) {
    // Checking a page's content confirms the lease its URL was claimed
    // under (CheckUrl lease_seconds), best effort: the content is recorded
    // already, and a confirmation that fails (or a crash before it) leaves
    // the lease pending, so the page is fetched once more, never lost. The
    // content answer does not depend on it.
    std::vector<std::string> fetched;
    fetched.reserve(docs.size());
    for (const ContentDoc& d : docs) {
      if (!IsDocumentIdKey(d.fetched_url)) fetched.push_back(d.fetched_url);
    }
    std::vector<UrlCompletion> ignored;
    if (!fetched.empty()) {
      store_->Complete(request.namespace_(), 0, fetched, &ignored).IgnoreError();
    }
  }
  for (size_t j = 0; j < docs.size(); ++j) {
    const ContentOutcome& o = outcomes[j];
    v1::ContentResult* result = response->mutable_results(doc_item[j]);
    result->set_verdict(ToProto(o.verdict));
    result->set_recrawl(ToProto(o.recrawl));
    if (IsDocumentIdKey(o.owner_url)) {
      result->set_owner_document_id(std::string(DocumentIdOfKey(o.owner_url)));
    } else {
      result->set_owner_url(o.owner_url);
    }
    for (const std::string& alias : o.aliases) {
      if (IsDocumentIdKey(alias)) {
        result->add_alias_document_ids(std::string(DocumentIdOfKey(alias)));
      } else {
        result->add_alias_urls(alias);
      }
    }
    result->set_alias_count(o.alias_count);
    for (const NearMatch& m : o.near_matches) {
      v1::NearMatch* out = result->add_near_matches();
      if (IsDocumentIdKey(m.owner_url)) {
        out->set_document_id(std::string(DocumentIdOfKey(m.owner_url)));
      } else {
        out->set_url(m.owner_url);
      }
      out->set_simhash(m.simhash);
      out->set_distance(static_cast<uint32_t>(m.distance));
      out->set_content_hash(Sha256Hex(m.sha256));
      out->set_estimated_jaccard(m.estimated_jaccard);
      out->set_measure(ToProto(m.measure));
    }
    result->set_near_match_count(o.near_match_count);
    // A peek's NEW has no time, unless it names the claim it retries.
    if (claim || o.verdict != ContentVerdict::kNew || o.retry) {
      *result->mutable_first_seen_time() =
          TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(o.first_seen));
    }
  }
  return absl::OkStatus();
}

namespace {

v1::ChunkVerdict ToProto(ChunkVerdict v) {
  switch (v) {
    case ChunkVerdict::kNew:
      return v1::CHUNK_VERDICT_NEW;
    case ChunkVerdict::kExactDuplicate:
      return v1::CHUNK_VERDICT_EXACT_DUPLICATE;
    case ChunkVerdict::kNearDuplicate:
      return v1::CHUNK_VERDICT_NEAR_DUPLICATE;
  }
  return v1::CHUNK_VERDICT_UNSPECIFIED;
}

}  // namespace

absl::StatusOr<std::string> Engine::ChunkDocumentKey(const v1::CheckChunksRequest& request) const {
  if (!request.document_id().empty()) {
    if (!request.document_url().empty()) {
      return absl::InvalidArgumentError(
          "document_id: is given with document_url (name the document by one: its URL or its "
          "id)");
    }
    DEDUPD_RETURN_IF_ERROR(CheckDocumentId(request.document_id()));
    return DocumentKeyOfId(request.document_id());
  }
  if (request.document_url().empty()) {
    return absl::InvalidArgumentError(
        "document_url: is empty (the document's URL, or a document_id, is required)");
  }
  absl::StatusOr<std::string> url = normalizer_->Normalize(request.document_url(), "");
  if (!url.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("document_url: ", url.status().message()));
  }
  return url;
}

absl::Status Engine::CheckChunks(const v1::CheckChunksRequest& request,
                                 v1::CheckChunksResponse* response) const {
  if (chunk_store_ == nullptr || hasher_ == nullptr) {
    return absl::UnimplementedError(options_.no_content_layer_message.empty()
                                        ? "this server has no chunk store"
                                        : options_.no_content_layer_message);
  }
  const int n = request.chunks_size();
  if (n == 0) return absl::InvalidArgumentError("the request has no chunks");
  if (static_cast<size_t>(n) > options_.max_batch_items) {
    return absl::InvalidArgumentError(absl::StrCat("the request has ", n, " chunks; the limit is ",
                                                   options_.max_batch_items,
                                                   " per request (--max_batch_items)"));
  }
  DEDUPD_RETURN_IF_ERROR(CheckNamespace(request.namespace_()));
  DEDUPD_RETURN_IF_ERROR(CheckClaimId(request.claim_id()));
  DEDUPD_ASSIGN_OR_RETURN(std::string document_key, ChunkDocumentKey(request));
  const int index_limit = chunk_store_->max_near_distance();
  absl::StatusOr<int> distance = ResolveDistance(request.has_max_hamming_distance(),
                                                 request.max_hamming_distance(), index_limit);
  if (!distance.ok()) return distance.status();
  DEDUPD_ASSIGN_OR_RETURN(const double min_jaccard,
                          ResolveMinJaccard(request.has_min_jaccard(), request.min_jaccard(),
                                            options_.chunk_min_jaccard));
  response->Clear();
  if (IsDocumentIdKey(document_key)) {
    response->set_document_id(request.document_id());
  } else {
    response->set_document_url(document_key);
  }
  response->mutable_results()->Reserve(n);

  ChunkDocument doc;
  doc.document_url = std::move(document_key);
  doc.name_space = request.namespace_();
  doc.claim_id_hash = ClaimIdHash(request.claim_id());
  doc.claim_id_retention = options_.claim_id_retention;
  doc.chunks.reserve(static_cast<size_t>(n));
  std::vector<int> chunk_item;  // doc.chunks[j] belongs to chunks[chunk_item[j]]
  chunk_item.reserve(static_cast<size_t>(n));
  absl::flat_hash_map<std::string, int> id_item;
  id_item.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const v1::ChunkItem& item = request.chunks(i);
    v1::ChunkResult* result = response->add_results();
    auto invalid = [result](v1::ErrorReason reason, absl::string_view why) {
      result->set_verdict(v1::CHUNK_VERDICT_INVALID);
      result->set_error(std::string(why));
      result->set_error_reason(reason);
    };
    std::string id = item.has_chunk_id() ? item.chunk_id() : absl::StrCat(i);
    if (id.size() > kMaxChunkIdBytes) {
      invalid(v1::ERROR_REASON_BAD_CHUNK_ID,
              absl::StrCat("chunk_id: is ", id.size(), " bytes; the limit is ", kMaxChunkIdBytes));
      continue;
    }
    result->set_chunk_id(id);
    if (id.empty()) {
      invalid(v1::ERROR_REASON_BAD_CHUNK_ID,
              "chunk_id: is empty (omit it to use the chunk's index)");
      continue;
    }
    auto [it, inserted] = id_item.emplace(id, i);
    if (!inserted) {
      invalid(v1::ERROR_REASON_BAD_CHUNK_ID,
              absl::StrCat("chunk_id: \"", id, "\" repeats chunk ", it->second, "'s"));
      continue;
    }
    v1::ErrorReason reason;
    ShingleSet32 shingles;
    absl::StatusOr<ContentFingerprint> fp = FingerprintItemText(item.text(), &reason, &shingles);
    if (!fp.ok()) {
      invalid(reason, fp.status().message());
      continue;
    }
    result->set_content_hash(Sha256Hex(fp->sha256));
    result->set_simhash(fp->simhash);
    const int applied = ChunkNearDistance(fp->words, *distance);
    result->set_applied_max_hamming_distance(applied);
    ChunkInput chunk{std::move(id), fp->sha256, fp->simhash, applied};
    chunk.min_jaccard = MinHashNearThreshold(fp->words, min_jaccard);
    result->set_applied_min_jaccard(chunk.min_jaccard);
    // Every chunk long enough to be found by MinHash keeps its signature,
    // whatever this request's threshold, so later requests can find it,
    // and its shingle set (none above kMaxExactShingles shingles), so
    // candidates are verified by their exact Jaccard.
    if (KeepsMinHashSignature(fp->words)) {
      chunk.minhash = fp->minhash;
      chunk.shingles = std::move(shingles);
    }
    doc.chunks.push_back(std::move(chunk));
    chunk_item.push_back(i);
  }
  if (doc.chunks.empty()) return absl::OkStatus();

  const bool claim = request.mode() != v1::CLAIM_MODE_PEEK;
  ChunkAnswer answer;
  absl::Status s = chunk_store_->CheckChunks(doc, claim, options_.clock(), &answer);
  if (!s.ok()) return WithContext(s, claim ? "claim chunks" : "look up chunks");
  response->set_replaced_chunks(answer.replaced_chunks);
  for (const std::string& id : answer.removed_chunk_ids) response->add_removed_chunk_ids(id);
  for (size_t j = 0; j < doc.chunks.size(); ++j) {
    const ChunkOutcome& o = answer.outcomes[j];
    v1::ChunkResult* result = response->mutable_results(chunk_item[j]);
    result->set_verdict(ToProto(o.verdict));
    result->set_other_holders(o.other_holders);
    if (o.verdict != ChunkVerdict::kNew) {
      if (IsDocumentIdKey(o.duplicate_document_url)) {
        result->set_duplicate_of_document_id(
            std::string(DocumentIdOfKey(o.duplicate_document_url)));
      } else {
        result->set_duplicate_of_document_url(o.duplicate_document_url);
      }
      result->set_duplicate_of_chunk_id(o.duplicate_chunk_id);
      result->set_duplicate_of_simhash(o.duplicate_simhash);
      result->set_distance(static_cast<uint32_t>(o.distance));
      if (o.verdict == ChunkVerdict::kNearDuplicate) {
        result->set_estimated_jaccard(o.estimated_jaccard);
        result->set_near_measure(ToProto(o.measure));
      }
    }
    if (o.first_seen != absl::InfinitePast()) {
      *result->mutable_first_seen_time() =
          TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(o.first_seen));
    }
  }
  return absl::OkStatus();
}

namespace {

v1::DuplicateMeasure ToProto(DuplicateMeasure m) {
  switch (m) {
    case DuplicateMeasure::kExactText:
      return v1::DUPLICATE_MEASURE_EXACT_TEXT;
    case DuplicateMeasure::kSimHash:
      return v1::DUPLICATE_MEASURE_SIMHASH;
    case DuplicateMeasure::kJaccard:
      return v1::DUPLICATE_MEASURE_JACCARD;
    case DuplicateMeasure::kCosine:
      return v1::DUPLICATE_MEASURE_COSINE;
  }
  return v1::DUPLICATE_MEASURE_UNSPECIFIED;
}

}  // namespace

absl::Status Engine::DedupResults(const v1::DedupResultsRequest& request,
                                  v1::DedupResultsResponse* response) const {
  const int n = request.hits_size();
  if (n == 0) return absl::InvalidArgumentError("the request has no hits");
  std::vector<ResultHit> hits(n);
  for (int i = 0; i < n; ++i) {
    const v1::ResultHit& in = request.hits(i);
    ResultHit& out = hits[i];
    out.id = in.id();
    out.text = in.text();
    out.score = in.score();
    out.source_url = in.source_url();
    out.embedding.assign(in.embedding().begin(), in.embedding().end());
  }
  ResultsDedupOptions options;
  if (request.has_top_k()) options.top_k = request.top_k();
  if (request.near_text_measure() == v1::NEAR_TEXT_MEASURE_JACCARD) {
    options.near_text_measure = NearTextMeasure::kJaccard;
  } else if (request.near_text_measure() != v1::NEAR_TEXT_MEASURE_SIMHASH &&
             request.near_text_measure() != v1::NEAR_TEXT_MEASURE_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        absl::StrCat("near_text_measure: unknown value ", request.near_text_measure()));
  }
  if (request.has_max_hamming_distance()) {
    options.max_hamming_distance =
        static_cast<int>(std::min<uint32_t>(request.max_hamming_distance(), 1000));
  }
  if (request.has_min_jaccard()) options.min_jaccard = request.min_jaccard();
  if (request.has_min_cosine()) options.min_cosine = request.min_cosine();
  if (request.has_per_source_cap()) {
    options.per_source_cap =
        static_cast<int>(std::min<uint32_t>(request.per_source_cap(), 1 << 30));
  }
  absl::StatusOr<ResultsDedupResult> result = dedupd::DedupResults(hits, options);
  if (!result.ok()) return result.status();
  response->Clear();
  for (size_t i : result->kept) {
    v1::KeptHit* kept = response->add_kept();
    kept->set_index(static_cast<uint32_t>(i));
    kept->set_id(hits[i].id);
    kept->set_score(hits[i].score);
  }
  for (const DroppedHit& d : result->dropped) {
    v1::DroppedHit* dropped = response->add_dropped();
    dropped->set_index(static_cast<uint32_t>(d.index));
    dropped->set_id(hits[d.index].id);
    if (d.reason == DropReason::kSourceCap) {
      dropped->set_reason(v1::DROP_REASON_SOURCE_CAP);
      continue;
    }
    dropped->set_reason(v1::DROP_REASON_DUPLICATE);
    dropped->set_duplicate_of_index(static_cast<uint32_t>(d.duplicate_of));
    dropped->set_duplicate_of(hits[d.duplicate_of].id);
    dropped->set_measure(ToProto(d.measure));
    dropped->set_value(d.value);
  }
  for (size_t i : result->not_examined) {
    response->add_not_examined(static_cast<uint32_t>(i));
  }
  response->set_per_source_cap(static_cast<uint32_t>(result->per_source_cap));
  for (const RejectedHit& r : result->rejected) {
    v1::RejectedHit* rejected = response->add_rejected();
    rejected->set_index(static_cast<uint32_t>(r.index));
    rejected->set_id(hits[r.index].id);
    rejected->set_error_reason(r.reason == RejectReason::kBadText ? v1::ERROR_REASON_BAD_TEXT
                                                                  : v1::ERROR_REASON_BAD_HIT);
    rejected->set_error(r.error);
  }
  return absl::OkStatus();
}

}  // namespace dedupd
