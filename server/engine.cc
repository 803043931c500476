#include "server/engine.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/results/results_dedup.h"
#include "core/text/chunk_near_rule.h"
#include "core/text/content_fingerprint.h"
#include "core/text/sha256.h"
#include "google/protobuf/timestamp.pb.h"
#include "google/protobuf/util/time_util.h"

namespace dedupd {
namespace {

using google::protobuf::util::TimeUtil;

absl::Status WithContext(const absl::Status& s, absl::string_view context) {
  return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
}

}  // namespace

Engine::Engine(const UrlNormalizer* normalizer, UrlStore* store, EngineOptions options)
    : normalizer_(normalizer), store_(store), options_(std::move(options)) {}

Engine::Engine(const UrlNormalizer* normalizer, UrlStore* store, const SimHasher* hasher,
               ContentStore* content_store, EngineOptions options)
    : normalizer_(normalizer),
      store_(store),
      hasher_(hasher),
      content_store_(content_store),
      options_(std::move(options)) {}

Engine::Engine(const UrlNormalizer* normalizer, UrlStore* store, const SimHasher* hasher,
               ContentStore* content_store, ChunkStore* chunk_store, EngineOptions options)
    : normalizer_(normalizer),
      store_(store),
      hasher_(hasher),
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

absl::StatusOr<ContentFingerprint> Engine::FingerprintItemText(absl::string_view text,
                                                               v1::ErrorReason* reason) const {
  *reason = v1::ERROR_REASON_TEXT_TOO_LARGE;
  if (text.size() > options_.max_text_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("text: is ", text.size(),
                                                   " bytes; the limit is ", options_.max_text_bytes,
                                                   " (--max_text_bytes)"));
  }
  *reason = v1::ERROR_REASON_BAD_TEXT;
  absl::StatusOr<ContentFingerprint> fp = FingerprintText(text, *hasher_);
  if (!fp.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("text: ", fp.status().message()));
  }
  return fp;
}

absl::Status Engine::CheckUrl(const v1::CheckUrlRequest& request,
                              v1::CheckUrlResponse* response) const {
  const int n = request.items_size();
  if (absl::Status s = CheckBatchSize(n); !s.ok()) return s;
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
    absl::StatusOr<std::string> normalized = normalizer_->Normalize(item.url(), item.base_url());
    if (!normalized.ok()) {
      result->set_verdict(v1::URL_VERDICT_INVALID);
      result->set_error(std::string(normalized.status().message()));
      result->set_error_reason(v1::ERROR_REASON_BAD_URL);
      continue;
    }
    result->set_normalized_url(*normalized);
    keys.push_back(*std::move(normalized));
    key_item.push_back(i);
  }
  if (keys.empty()) return absl::OkStatus();

  // An approximate seen-set (a Bloom filter) says "probably seen" and keeps
  // no time; an exact one says when.
  const bool approximate = store_->approximate();
  auto set_seen = [approximate](absl::Time first_seen, v1::UrlResult* result) {
    if (approximate) {
      result->set_verdict(v1::URL_VERDICT_SEEN_PROBABLY);
    } else {
      result->set_verdict(v1::URL_VERDICT_SEEN);
      *result->mutable_first_seen_time() =
          TimeUtil::MicrosecondsToTimestamp(absl::ToUnixMicros(first_seen));
    }
  };
  const bool peek = request.mode() == v1::CLAIM_MODE_PEEK;
  if (peek) {
    std::vector<std::optional<absl::Time>> found;
    absl::Status s = store_->LookupUrls(keys, &found);
    if (!s.ok()) return WithContext(s, "look up URLs");
    for (size_t j = 0; j < keys.size(); ++j) {
      v1::UrlResult* result = response->mutable_results(key_item[j]);
      if (found[j].has_value()) {
        set_seen(*found[j], result);
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
      set_seen(claims[j].first_seen, result);
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
    return absl::UnimplementedError("this server has no content store");
  }
  const int n = request.items_size();
  if (absl::Status s = CheckBatchSize(n); !s.ok()) return s;
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
    if (item.url().empty()) {
      invalid(v1::ERROR_REASON_BAD_URL,
              "url: is empty (the URL the text was fetched from is required)");
      continue;
    }
    absl::StatusOr<std::string> fetched = normalizer_->Normalize(item.url(), "");
    if (!fetched.ok()) {
      invalid(v1::ERROR_REASON_BAD_URL, absl::StrCat("url: ", fetched.status().message()));
      continue;
    }
    std::string identity = *fetched;
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
    result->set_url(*fetched);
    result->set_canonical_url(identity);
    absl::StatusOr<int> distance =
        ResolveDistance(item.has_max_hamming_distance(), item.max_hamming_distance(), index_limit);
    if (!distance.ok()) {
      invalid(v1::ERROR_REASON_DISTANCE_TOO_LARGE, distance.status().message());
      continue;
    }
    v1::ErrorReason reason;
    absl::StatusOr<ContentFingerprint> fp = FingerprintItemText(item.text(), &reason);
    if (!fp.ok()) {
      invalid(reason, fp.status().message());
      continue;
    }
    result->set_content_hash(Sha256Hex(fp->sha256));
    result->set_simhash(fp->simhash);
    ContentDoc doc;
    doc.identity_url = std::move(identity);
    doc.fetched_url = *std::move(fetched);
    doc.sha256 = fp->sha256;
    doc.simhash = fp->simhash;
    doc.max_distance = *distance;
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
      urls.push_back(d.identity_url);
      if (d.fetched_url != d.identity_url) urls.push_back(d.fetched_url);
    }
    std::vector<UrlClaim> ignored;
    s = store_->ClaimUrls(urls, options_.clock(), &ignored);
    if (!s.ok()) return WithContext(s, "record content URLs in the URL seen-set");
  }
  for (size_t j = 0; j < docs.size(); ++j) {
    const ContentOutcome& o = outcomes[j];
    v1::ContentResult* result = response->mutable_results(doc_item[j]);
    result->set_verdict(ToProto(o.verdict));
    result->set_recrawl(ToProto(o.recrawl));
    result->set_owner_url(o.owner_url);
    for (const std::string& alias : o.aliases) result->add_alias_urls(alias);
    result->set_alias_count(o.alias_count);
    for (const NearMatch& m : o.near_matches) {
      v1::NearMatch* out = result->add_near_matches();
      out->set_url(m.owner_url);
      out->set_simhash(m.simhash);
      out->set_distance(static_cast<uint32_t>(m.distance));
      out->set_content_hash(Sha256Hex(m.sha256));
    }
    result->set_near_match_count(o.near_match_count);
    if (claim || o.verdict != ContentVerdict::kNew) {
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

absl::Status Engine::CheckChunks(const v1::CheckChunksRequest& request,
                                 v1::CheckChunksResponse* response) const {
  if (chunk_store_ == nullptr || hasher_ == nullptr) {
    return absl::UnimplementedError("this server has no chunk store");
  }
  const int n = request.chunks_size();
  if (n == 0) return absl::InvalidArgumentError("the request has no chunks");
  if (static_cast<size_t>(n) > options_.max_batch_items) {
    return absl::InvalidArgumentError(absl::StrCat("the request has ", n, " chunks; the limit is ",
                                                   options_.max_batch_items,
                                                   " per request (--max_batch_items)"));
  }
  if (request.document_url().empty()) {
    return absl::InvalidArgumentError("document_url: is empty (the document's URL is required)");
  }
  absl::StatusOr<std::string> url = normalizer_->Normalize(request.document_url(), "");
  if (!url.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("document_url: ", url.status().message()));
  }
  const int index_limit = chunk_store_->max_near_distance();
  absl::StatusOr<int> distance = ResolveDistance(request.has_max_hamming_distance(),
                                                 request.max_hamming_distance(), index_limit);
  if (!distance.ok()) return distance.status();
  response->Clear();
  response->set_document_url(*url);
  response->mutable_results()->Reserve(n);

  ChunkDocument doc;
  doc.document_url = *std::move(url);
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
    absl::StatusOr<ContentFingerprint> fp = FingerprintItemText(item.text(), &reason);
    if (!fp.ok()) {
      invalid(reason, fp.status().message());
      continue;
    }
    result->set_content_hash(Sha256Hex(fp->sha256));
    result->set_simhash(fp->simhash);
    const int applied = ChunkNearDistance(fp->words, *distance);
    result->set_applied_max_hamming_distance(applied);
    doc.chunks.push_back({std::move(id), fp->sha256, fp->simhash, applied});
    chunk_item.push_back(i);
  }
  if (doc.chunks.empty()) return absl::OkStatus();

  const bool claim = request.mode() != v1::CLAIM_MODE_PEEK;
  ChunkAnswer answer;
  absl::Status s = chunk_store_->CheckChunks(doc, claim, options_.clock(), &answer);
  if (!s.ok()) return WithContext(s, claim ? "claim chunks" : "look up chunks");
  response->set_replaced_chunks(answer.replaced_chunks);
  for (size_t j = 0; j < doc.chunks.size(); ++j) {
    const ChunkOutcome& o = answer.outcomes[j];
    v1::ChunkResult* result = response->mutable_results(chunk_item[j]);
    result->set_verdict(ToProto(o.verdict));
    result->set_other_holders(o.other_holders);
    if (o.verdict != ChunkVerdict::kNew) {
      result->set_duplicate_of_document_url(o.duplicate_document_url);
      result->set_duplicate_of_chunk_id(o.duplicate_chunk_id);
      result->set_duplicate_of_simhash(o.duplicate_simhash);
      result->set_distance(static_cast<uint32_t>(o.distance));
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
