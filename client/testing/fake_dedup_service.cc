#include "client/testing/fake_dedup_service.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace dedupd {
namespace {

// Finishes only when the call is cancelled: lets a test watch the client's
// deadline expire without the fake sleeping.
class HangingReactor final : public grpc::ServerUnaryReactor {
 public:
  void OnCancel() override { Finish(grpc::Status::CANCELLED); }
  void OnDone() override { delete this; }
};

// The fake's one rule for a bad URL, the same for every RPC: empty, or
// starting with "bad".
bool IsFakeInvalidUrl(const std::string& url) {
  return url.empty() || absl::StartsWith(url, "bad");
}

// FinishStoreDown answers a call without per_item_store_errors whose
// `down_count` URLs the store could not answer as the server does: the
// whole call UNAVAILABLE.
grpc::ServerUnaryReactor* FinishStoreDown(grpc::ServerUnaryReactor* reactor, int down_count) {
  reactor->Finish(
      grpc::Status(grpc::StatusCode::UNAVAILABLE,
                   absl::StrCat("fake: the store could not answer ", down_count, " URLs")));
  return reactor;
}

}  // namespace

void FakeDedupService::AnswerNext() {
  absl::MutexLock lock(&mu_);
  script_.push_back(Action{Action::kAnswer, absl::OkStatus()});
}

void FakeDedupService::FailNext(absl::Status status) {
  absl::MutexLock lock(&mu_);
  script_.push_back(Action{Action::kFail, std::move(status)});
}

void FakeDedupService::HangNext() {
  absl::MutexLock lock(&mu_);
  script_.push_back(Action{Action::kHang, absl::OkStatus()});
}

void FakeDedupService::WrongCountNext() {
  absl::MutexLock lock(&mu_);
  script_.push_back(Action{Action::kWrongCount, absl::OkStatus()});
}

void FakeDedupService::StoreDown(const std::string& url, int times, bool after_write) {
  absl::MutexLock lock(&mu_);
  store_down_[url] = Down{times, after_write};
}

bool FakeDedupService::TakeStoreDown(const std::string& url, bool* after_write) {
  auto it = store_down_.find(url);
  if (it == store_down_.end()) return false;
  *after_write = it->second.after_write;
  if (it->second.times > 0 && --it->second.times == 0) store_down_.erase(it);
  return true;
}

std::vector<FakeDedupService::Call> FakeDedupService::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

bool FakeDedupService::WaitForCalls(size_t n, absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  const auto arrived = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return calls_.size() >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&arrived), timeout);
}

uint64_t FakeDedupService::FakeHash(absl::string_view text) {
  uint64_t h = 0xcbf29ce484222325u;  // FNV-1a 64 offset basis and prime
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3u;
  }
  return h;
}

grpc::ServerUnaryReactor* FakeDedupService::Begin(grpc::CallbackServerContext* context, Call call,
                                                  bool* wrong_count) {
  if (context->deadline() != std::chrono::system_clock::time_point::max()) {
    call.deadline_left = absl::FromChrono(context->deadline()) - absl::Now();
  }
  calls_.push_back(std::move(call));
  std::optional<Action> action;
  if (!script_.empty()) {
    action = std::move(script_.front());
    script_.pop_front();
  }
  *wrong_count = action && action->kind == Action::kWrongCount;
  if (action && action->kind == Action::kHang) return new HangingReactor();
  if (action && action->kind == Action::kFail) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status(static_cast<grpc::StatusCode>(action->status.code()),
                                 std::string(action->status.message())));
    return reactor;
  }
  return nullptr;
}

grpc::ServerUnaryReactor* FakeDedupService::CheckUrl(grpc::CallbackServerContext* context,
                                                     const dedupd::v1::CheckUrlRequest* request,
                                                     dedupd::v1::CheckUrlResponse* response) {
  Call call;
  call.method = "CheckUrl";
  call.mode = request->mode();
  call.url_request = *request;
  for (const dedupd::v1::UrlItem& item : request->items()) {
    call.urls.push_back(item.url());
    call.base_urls.push_back(item.base_url());
  }

  absl::MutexLock lock(&mu_);
  bool wrong_count = false;
  if (grpc::ServerUnaryReactor* done = Begin(context, std::move(call), &wrong_count)) {
    return done;
  }
  const bool claim = request->mode() != dedupd::v1::CLAIM_MODE_PEEK;
  const std::string& claim_id = request->claim_id();
  // Which items the store cannot answer this time (and whether it wrote
  // them first), decided before answering any.
  std::vector<bool> down(request->items_size()), written(request->items_size());
  int down_count = 0;
  for (int i = 0; i < request->items_size(); ++i) {
    const std::string& url = request->items(i).url();
    bool after_write = false;
    if (IsFakeInvalidUrl(url) || !TakeStoreDown(url, &after_write)) continue;
    down[i] = true;
    written[i] = after_write;
    ++down_count;
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (down_count > 0 && !request->per_item_store_errors()) {
    return FinishStoreDown(reactor, down_count);
  }
  for (int i = 0; i < request->items_size(); ++i) {
    const dedupd::v1::UrlItem& item = request->items(i);
    dedupd::v1::UrlResult* result = response->add_results();
    if (IsFakeInvalidUrl(item.url())) {
      result->set_verdict(dedupd::v1::URL_VERDICT_INVALID);
      result->set_error("fake: invalid url");
      result->set_error_reason(dedupd::v1::ERROR_REASON_BAD_URL);
      continue;
    }
    result->set_normalized_url(item.url());
    if (down[i]) {
      if (claim && written[i]) seen_.try_emplace(item.url(), claim_id);
      result->set_verdict(dedupd::v1::URL_VERDICT_INVALID);
      result->set_error("fake: store node down");
      result->set_error_reason(dedupd::v1::ERROR_REASON_STORE_UNAVAILABLE);
      continue;
    }
    auto seen = seen_.find(item.url());
    if (seen != seen_.end() && !(claim && !claim_id.empty() && seen->second == claim_id)) {
      result->set_verdict(dedupd::v1::URL_VERDICT_SEEN);
      result->mutable_first_seen_time()->set_seconds(kFirstSeenSeconds);
      result->mutable_first_seen_time()->set_nanos(kFirstSeenNanos);
    } else {
      result->set_verdict(dedupd::v1::URL_VERDICT_NEW);
      if (claim) seen_.try_emplace(item.url(), claim_id);
    }
  }
  if (wrong_count && response->results_size() > 0) {
    response->mutable_results()->RemoveLast();
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

namespace {

std::string FakeContentHash(absl::string_view text) {
  const std::string h = absl::StrFormat("%016x", FakeDedupService::FakeHash(text));
  return absl::StrCat(h, h, h, h);
}

// Sets kFirstSeen on a ContentResult or ChunkResult.
template <typename Result>
void SetFirstSeen(Result* result) {
  result->mutable_first_seen_time()->set_seconds(FakeDedupService::kFirstSeenSeconds);
  result->mutable_first_seen_time()->set_nanos(FakeDedupService::kFirstSeenNanos);
}

}  // namespace

grpc::ServerUnaryReactor* FakeDedupService::CompleteUrls(
    grpc::CallbackServerContext* context, const dedupd::v1::CompleteUrlsRequest* request,
    dedupd::v1::CompleteUrlsResponse* response) {
  Call call;
  call.method = "CompleteUrls";
  call.complete_request = *request;
  for (const dedupd::v1::UrlItem& item : request->items()) call.urls.push_back(item.url());
  absl::MutexLock lock(&mu_);
  bool wrong_count = false;
  if (grpc::ServerUnaryReactor* done = Begin(context, std::move(call), &wrong_count)) {
    return done;
  }
  std::vector<bool> down(request->items_size());
  int down_count = 0;
  for (int i = 0; i < request->items_size(); ++i) {
    bool after_write = false;  // a confirmation writes nothing a retry could see
    down[i] = TakeStoreDown(request->items(i).url(), &after_write);
    down_count += down[i] ? 1 : 0;
  }
  if (down_count > 0 && !request->per_item_store_errors()) {
    return FinishStoreDown(context->DefaultReactor(), down_count);
  }
  for (int i = 0; i < request->items_size(); ++i) {
    const dedupd::v1::UrlItem& item = request->items(i);
    dedupd::v1::CompleteResult* result = response->add_results();
    result->set_normalized_url(item.url());
    if (down[i]) {
      result->set_verdict(dedupd::v1::COMPLETE_VERDICT_INVALID);
      result->set_error("fake: store node down");
      result->set_error_reason(dedupd::v1::ERROR_REASON_STORE_UNAVAILABLE);
      continue;
    }
    if (seen_.contains(item.url())) {
      result->set_verdict(dedupd::v1::COMPLETE_VERDICT_CONFIRMED);
    } else {
      result->set_verdict(dedupd::v1::COMPLETE_VERDICT_INVALID);
      result->set_error("fake: not claimed");
      result->set_error_reason(dedupd::v1::ERROR_REASON_NOT_CLAIMED);
    }
  }
  if (wrong_count && response->results_size() > 0) {
    response->mutable_results()->RemoveLast();
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* FakeDedupService::CheckContent(
    grpc::CallbackServerContext* context, const dedupd::v1::CheckContentRequest* request,
    dedupd::v1::CheckContentResponse* response) {
  Call call;
  call.method = "CheckContent";
  call.mode = request->mode();
  call.content_request = *request;
  for (const dedupd::v1::ContentItem& item : request->items()) {
    call.urls.push_back(item.url());
    call.content_items.push_back(item);
  }

  absl::MutexLock lock(&mu_);
  bool wrong_count = false;
  if (grpc::ServerUnaryReactor* done = Begin(context, std::move(call), &wrong_count)) {
    return done;
  }
  const bool claim = request->mode() != dedupd::v1::CLAIM_MODE_PEEK;
  for (const dedupd::v1::ContentItem& item : request->items()) {
    dedupd::v1::ContentResult* result = response->add_results();
    if (IsFakeInvalidUrl(item.url())) {
      result->set_verdict(dedupd::v1::CONTENT_VERDICT_INVALID);
      result->set_error("fake: invalid url");
      result->set_error_reason(dedupd::v1::ERROR_REASON_BAD_URL);
      continue;
    }
    if (item.text().empty()) {
      result->set_verdict(dedupd::v1::CONTENT_VERDICT_INVALID);
      result->set_error("fake: empty text");
      result->set_error_reason(dedupd::v1::ERROR_REASON_BAD_TEXT);
      continue;
    }
    const std::string& text = item.text();
    const std::string identity = item.canonical_url().empty() ? item.url() : item.canonical_url();
    result->set_url(item.url());
    result->set_canonical_url(identity);
    result->set_content_hash(FakeContentHash(text));
    result->set_simhash(FakeHash(text));
    result->set_applied_min_jaccard(item.min_jaccard());

    if (auto last = last_text_.find(item.url()); last == last_text_.end()) {
      result->set_recrawl(dedupd::v1::RECRAWL_STATUS_FIRST_SEEN);
    } else {
      result->set_recrawl(last->second == text ? dedupd::v1::RECRAWL_STATUS_UNCHANGED
                                               : dedupd::v1::RECRAWL_STATUS_CHANGED);
    }
    if (claim) last_text_[item.url()] = text;

    if (auto it = texts_.find(text); it != texts_.end()) {
      Document& doc = it->second;
      if (claim && identity != doc.owner &&
          std::find(doc.aliases.begin(), doc.aliases.end(), identity) == doc.aliases.end()) {
        doc.aliases.push_back(identity);
      }
      result->set_verdict(dedupd::v1::CONTENT_VERDICT_EXACT_DUPLICATE);
      result->set_owner_url(doc.owner);
      for (const std::string& alias : doc.aliases) {
        result->add_alias_urls(alias);
      }
      result->set_alias_count(doc.aliases.size());
      SetFirstSeen(result);
      continue;
    }

    const uint32_t max_distance = item.has_max_hamming_distance() ? item.max_hamming_distance() : 3;
    const size_t base_end = text.find_last_not_of('!') + 1;  // npos+1 == 0
    const size_t bangs = text.size() - base_end;
    auto near =
        bangs >= 1 && bangs <= max_distance ? texts_.find(text.substr(0, base_end)) : texts_.end();
    if (near != texts_.end()) {
      result->set_verdict(dedupd::v1::CONTENT_VERDICT_NEAR_DUPLICATE);
      result->set_owner_url(near->second.owner);
      dedupd::v1::NearMatch* match = result->add_near_matches();
      match->set_url(near->second.owner);
      match->set_simhash(FakeHash(near->first));
      match->set_distance(static_cast<uint32_t>(bangs));
      match->set_content_hash(FakeContentHash(near->first));
      match->set_measure(dedupd::v1::NEAR_MEASURE_SIMHASH);
      result->set_near_match_count(1);
    } else {
      result->set_verdict(dedupd::v1::CONTENT_VERDICT_NEW);
      result->set_owner_url(identity);
    }
    if (claim) {
      texts_.emplace(text, Document{identity, {}});
      if (result->verdict() == dedupd::v1::CONTENT_VERDICT_NEW) {
        SetFirstSeen(result);
      }
    }
  }
  if (wrong_count && response->results_size() > 0) {
    response->mutable_results()->RemoveLast();
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* FakeDedupService::CheckChunks(
    grpc::CallbackServerContext* context, const dedupd::v1::CheckChunksRequest* request,
    dedupd::v1::CheckChunksResponse* response) {
  Call call;
  call.method = "CheckChunks";
  call.mode = request->mode();
  call.urls.push_back(request->document_url());
  call.chunks_request = *request;

  absl::MutexLock lock(&mu_);
  bool wrong_count = false;
  if (grpc::ServerUnaryReactor* done = Begin(context, std::move(call), &wrong_count)) {
    return done;
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const std::string& url = request->document_url();
  if (IsFakeInvalidUrl(url)) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "fake: invalid document_url"));
    return reactor;
  }
  if (request->chunks().empty()) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "fake: no chunks"));
    return reactor;
  }
  const bool claim = request->mode() != dedupd::v1::CLAIM_MODE_PEEK;
  const uint32_t max_distance =
      request->has_max_hamming_distance() ? request->max_hamming_distance() : 3;
  response->set_document_url(url);
  auto stored = document_chunks_.find(url);
  response->set_replaced_chunks(stored == document_chunks_.end() ? 0 : stored->second.size());

  // Valid chunks of this request so far: text -> chunk_id (the first).
  absl::flat_hash_map<std::string, std::string> earlier;
  // Who holds `text`: another document (never this one's stored chunks),
  // else an earlier chunk of this request.
  const auto holder = [&](const std::string& text)
                          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> std::optional<ChunkHolder> {
    if (auto h = chunk_texts_.find(text);
        h != chunk_texts_.end() && h->second.document_url != url) {
      return h->second;
    }
    if (auto e = earlier.find(text); e != earlier.end()) {
      return ChunkHolder{url, e->second};
    }
    return std::nullopt;
  };
  std::vector<std::pair<std::string, std::string>> valid;  // text, id
  for (int i = 0; i < request->chunks_size(); ++i) {
    const dedupd::v1::ChunkItem& item = request->chunks(i);
    dedupd::v1::ChunkResult* result = response->add_results();
    const std::string id = item.has_chunk_id() ? item.chunk_id() : absl::StrCat(i);
    result->set_chunk_id(id);
    if (item.text().empty()) {
      result->set_verdict(dedupd::v1::CHUNK_VERDICT_INVALID);
      result->set_error("fake: empty text");
      result->set_error_reason(dedupd::v1::ERROR_REASON_BAD_TEXT);
      continue;
    }
    const std::string& text = item.text();
    result->set_content_hash(FakeContentHash(text));
    result->set_simhash(FakeHash(text));
    result->set_applied_min_jaccard(request->min_jaccard());
    const size_t base_end = text.find_last_not_of('!') + 1;  // npos+1 == 0
    const size_t bangs = text.size() - base_end;
    std::optional<ChunkHolder> exact = holder(text);
    std::optional<ChunkHolder> near = !exact && bangs >= 1 && bangs <= max_distance
                                          ? holder(text.substr(0, base_end))
                                          : std::nullopt;
    if (exact || near) {
      result->set_verdict(exact ? dedupd::v1::CHUNK_VERDICT_EXACT_DUPLICATE
                                : dedupd::v1::CHUNK_VERDICT_NEAR_DUPLICATE);
      const ChunkHolder& of = exact ? *exact : *near;
      result->set_duplicate_of_document_url(of.document_url);
      result->set_duplicate_of_chunk_id(of.chunk_id);
      result->set_duplicate_of_simhash(FakeHash(exact ? text : text.substr(0, base_end)));
      result->set_distance(exact ? 0 : static_cast<uint32_t>(bangs));
      if (near) result->set_near_measure(dedupd::v1::NEAR_MEASURE_SIMHASH);
      SetFirstSeen(result);
    } else {
      result->set_verdict(dedupd::v1::CHUNK_VERDICT_NEW);
      if (claim) SetFirstSeen(result);
    }
    earlier.emplace(text, id);
    valid.emplace_back(text, id);
  }
  if (claim) {
    // The request's chunks replace the document's stored ones.
    if (stored != document_chunks_.end()) {
      for (const std::string& text : stored->second) {
        auto h = chunk_texts_.find(text);
        if (h != chunk_texts_.end() && h->second.document_url == url) {
          chunk_texts_.erase(h);
        }
      }
    }
    std::vector<std::string>& texts = document_chunks_[url];
    texts.clear();
    for (auto& [text, id] : valid) {
      chunk_texts_.try_emplace(text, ChunkHolder{url, id});
      texts.push_back(std::move(text));
    }
  }
  if (wrong_count && response->results_size() > 0) {
    response->mutable_results()->RemoveLast();
  }
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* FakeDedupService::DedupResults(
    grpc::CallbackServerContext* context, const dedupd::v1::DedupResultsRequest* request,
    dedupd::v1::DedupResultsResponse* response) {
  Call call;
  call.method = "DedupResults";
  call.results_request = *request;

  absl::MutexLock lock(&mu_);
  bool wrong_count = false;
  if (grpc::ServerUnaryReactor* done = Begin(context, std::move(call), &wrong_count)) {
    return done;
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const auto reject = [reactor](const std::string& message) {
    reactor->Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, message));
    return reactor;
  };
  const int n = request->hits_size();
  if (n == 0) return reject("fake: no hits");
  if (request->has_top_k() && request->top_k() == 0) return reject("fake: top_k is 0");
  const uint32_t cap = request->has_per_source_cap()
                           ? request->per_source_cap()
                           : (request->has_top_k() && request->top_k() <= 5 ? 2 : 3);
  std::vector<int> order;
  for (int i = 0; i < n; ++i) {
    const dedupd::v1::ResultHit& hit = request->hits(i);
    if (!hit.text().empty() && !hit.id().empty()) {
      order.push_back(i);
      continue;
    }
    dedupd::v1::RejectedHit* r = response->add_rejected();
    r->set_index(static_cast<uint32_t>(i));
    r->set_id(hit.id());
    r->set_error_reason(hit.text().empty() ? dedupd::v1::ERROR_REASON_BAD_TEXT
                                           : dedupd::v1::ERROR_REASON_BAD_HIT);
    r->set_error(hit.text().empty() ? "fake: empty text" : "fake: empty id");
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return request->hits(a).score() > request->hits(b).score();
  });
  std::vector<int> kept;
  absl::flat_hash_map<std::string, uint32_t> kept_per_source;
  for (int i : order) {
    const dedupd::v1::ResultHit& hit = request->hits(i);
    if (request->has_top_k() && kept.size() >= request->top_k()) {
      response->add_not_examined(static_cast<uint32_t>(i));
      continue;
    }
    auto of = std::find_if(kept.begin(), kept.end(),
                           [&](int k) { return request->hits(k).text() == hit.text(); });
    if (of != kept.end()) {
      dedupd::v1::DroppedHit* d = response->add_dropped();
      d->set_index(static_cast<uint32_t>(i));
      d->set_id(hit.id());
      d->set_reason(dedupd::v1::DROP_REASON_DUPLICATE);
      d->set_duplicate_of_index(static_cast<uint32_t>(*of));
      d->set_duplicate_of(request->hits(*of).id());
      d->set_measure(dedupd::v1::DUPLICATE_MEASURE_EXACT_TEXT);
      d->set_value(1);
      continue;
    }
    if (!hit.source_url().empty() && cap > 0 && kept_per_source[hit.source_url()] >= cap) {
      dedupd::v1::DroppedHit* d = response->add_dropped();
      d->set_index(static_cast<uint32_t>(i));
      d->set_id(hit.id());
      d->set_reason(dedupd::v1::DROP_REASON_SOURCE_CAP);
      continue;
    }
    kept.push_back(i);
    if (!hit.source_url().empty()) ++kept_per_source[hit.source_url()];
    dedupd::v1::KeptHit* k = response->add_kept();
    k->set_index(static_cast<uint32_t>(i));
    k->set_id(hit.id());
    k->set_score(hit.score());
  }
  response->set_per_source_cap(cap);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

absl::StatusOr<std::unique_ptr<FakeDedupServer>> FakeDedupServer::Start() {
  std::unique_ptr<FakeDedupServer> fake(new FakeDedupServer());
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&fake->service_);
  fake->server_ = builder.BuildAndStart();
  if (fake->server_ == nullptr || port == 0) {
    return absl::InternalError("fake dedupd: cannot serve on 127.0.0.1:0");
  }
  fake->address_ = absl::StrCat("127.0.0.1:", port);
  return fake;
}

FakeDedupServer::~FakeDedupServer() {
  // A deadline of now cancels calls still in flight (HangNext) at once.
  server_->Shutdown(std::chrono::system_clock::now());
  server_->Wait();
}

}  // namespace dedupd
