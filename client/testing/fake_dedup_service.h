// fake_dedup_service.h: an in-process fake of the dedupd.v1.Dedup service
// for the client's tests (test-only; target dedupd_client_fake). It keeps a
// seen-set keyed by the URL bytes exactly as sent (no normalization),
// records every call it gets, and can be scripted to fail, hang or answer
// wrongly, so that tests can drive the client's batching, retry and
// deadline paths. FakeDedupServer runs it on 127.0.0.1 with a port chosen
// by the kernel.
//
// Answers, per item: an empty url, or one that starts with "bad", is
// INVALID with error "fake: invalid url"; otherwise normalized_url is the
// url and the verdict is NEW, or SEEN (first_seen_time = kFirstSeen) when a
// previous CLAIM recorded it, unless that CLAIM had the same non-empty
// claim_id (the server's idempotent retry: NEW again). PEEK records
// nothing. A url whose store node StoreDown made unreachable is answered
// as the server with a failed Redis node answers it (see StoreDown).
//
// CheckContent answers, per document, keyed on the text bytes exactly as
// sent (no normalization; deterministic, not the real algorithms):
// - url empty or starting with "bad" is INVALID "fake: invalid url"; empty
//   text is INVALID "fake: empty text";
// - url and canonical_url echo the item (canonical_url: the item's, else
//   its url; that is the document's identity); content_hash is FakeHash
//   of the text as 64 lowercase hex digits (the hash repeated four times),
//   simhash is FakeHash(text);
// - text recorded before: EXACT_DUPLICATE, owner_url the first recorder's
//   identity, alias_urls / alias_count the other identities that CLAIMed
//   it (in order of arrival), first_seen_time kFirstSeen;
// - else, text that is a recorded text followed by k >= 1 '!' characters,
//   with k <= the item's max_hamming_distance (default 3):
//   NEAR_DUPLICATE with one near match (that text's owner, simhash and
//   hash, distance k, measure SIMHASH, estimated_jaccard 0), owner_url the
//   match's;
// - applied_min_jaccard echoes the item's min_jaccard, 0 when it sets none
//   (the fake has no MinHash: it never judges or uses it);
// - else NEW, owner_url the identity (first_seen_time kFirstSeen on CLAIM);
// - recrawl: FIRST_SEEN unless a CLAIM recorded a text for this url
//   before, then UNCHANGED (same text) or CHANGED.
// CLAIM records the text (exact and near) and the url's last text.
//
// CheckChunks, per document, keyed on chunk text bytes exactly as sent
// (exact-text and '!'-suffix matching only; deterministic, not the real
// algorithms):
// - the whole request fails with InvalidArgument "fake: invalid
//   document_url" for a document_url IsFakeInvalidUrl rejects (as above),
//   and "fake: no chunks" for none; document_url is echoed as normalized;
// - chunk_id is the item's, else its index in decimal; empty text is
//   INVALID "fake: empty text"; content_hash and simhash as CheckContent;
// - a text held by a chunk of another document, or by an earlier chunk of
//   this request: EXACT_DUPLICATE of that chunk (distance 0,
//   first_seen_time kFirstSeen); else the '!' rule of CheckContent (a held
//   text followed by k '!', k <= max_hamming_distance, default 3):
//   NEAR_DUPLICATE at distance k (near_measure SIMHASH); else NEW
//   (first_seen_time kFirstSeen on CLAIM). The document's own stored
//   chunks never match it; applied_min_jaccard of each valid chunk echoes
//   the request's min_jaccard (0 when it sets none);
// - replaced_chunks: how many chunks the document has stored; CLAIM
//   replaces them with the valid chunks of the request (a text is held by
//   its first holder only).
//
// DedupResults, statelessly, exact text only (no SimHash, Jaccard or
// embeddings: the settings are only recorded):
// - InvalidArgument "fake: no hits" or "fake: top_k is 0" (set to 0);
// - a hit with an empty text is rejected (ERROR_REASON_BAD_TEXT, error
//   "fake: empty text"), one with an empty id too (ERROR_REASON_BAD_HIT,
//   "fake: empty id"); the others take part as if it were absent;
// - hits in score order (highest first, ties in request order); a hit
//   whose text equals a kept hit's is dropped as DUPLICATE of the first
//   such (measure EXACT_TEXT, value 1); else, with a non-empty source_url
//   that already has per_source_cap kept hits, dropped as SOURCE_CAP; else
//   kept; once top_k (when set) are kept the rest are not_examined;
// - per_source_cap: the request's, else 2 when top_k is set and <= 5,
//   else 3 (the server's default rule); 0: no cap.
//
// Every RPC shares the call log and the script below.
//
// Example:
//   ASSERT_OK_AND_ASSIGN(auto server, FakeDedupServer::Start());
//   server->service().FailNext(absl::UnavailableError("down"));
//   auto client = DedupClient::Connect(server->address(), ClientOptions());
//   ... (*client)->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM) ...
//   EXPECT_EQ(server->service().calls().size(), 2);  // one retry
#ifndef DEDUPD_CLIENT_TESTING_FAKE_DEDUP_SERVICE_H_
#define DEDUPD_CLIENT_TESTING_FAKE_DEDUP_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "dedupd/v1/dedupd.grpc.pb.h"

namespace dedupd {

// FakeDedupService: thread-safe (gRPC calls it from its own threads).
class FakeDedupService final : public dedupd::v1::Dedup::CallbackService {
 public:
  // The first_seen_time of every SEEN answer: 2024-05-06T07:08:09.5Z.
  static constexpr int64_t kFirstSeenSeconds = 1714979289;
  static constexpr int32_t kFirstSeenNanos = 500000000;

  // What the fake saw of one call.
  struct Call {
    // "CheckUrl", "CompleteUrls", "CheckContent", "CheckChunks" or
    // "DedupResults".
    std::string method;
    // CheckUrl: the items' url and base_url; CheckContent: the items' url
    // (base_urls stays empty) and the items themselves; CheckChunks: the
    // document_url.
    std::vector<std::string> urls;
    std::vector<std::string> base_urls;
    std::vector<dedupd::v1::ContentItem> content_items;
    // CheckUrl, CompleteUrls and CheckContent: the request as received
    // (claim id, namespace, lease).
    dedupd::v1::CheckUrlRequest url_request;
    dedupd::v1::CompleteUrlsRequest complete_request;
    dedupd::v1::CheckContentRequest content_request;
    // CheckChunks and DedupResults: the request as received.
    dedupd::v1::CheckChunksRequest chunks_request;
    dedupd::v1::DedupResultsRequest results_request;
    dedupd::v1::ClaimMode mode = dedupd::v1::CLAIM_MODE_UNSPECIFIED;
    // Time left until the call's deadline when it arrived; nullopt when the
    // call had no deadline.
    std::optional<absl::Duration> deadline_left;
  };

  // AnswerNext makes the next unscripted call answer normally (a script
  // step that lets a later step hit a later call).
  void AnswerNext();
  // FailNext makes the next unscripted call fail with `status` (same code
  // and message); calls consume scripted actions in FIFO order.
  // REQUIRES: !status.ok().
  void FailNext(absl::Status status);
  // HangNext makes the next call wait until it is cancelled (its deadline
  // passes, the client goes away, or the server shuts down).
  void HangNext();
  // WrongCountNext makes the next call answer one result too few
  // (DedupResults, which has no count to get wrong: answered normally).
  void WrongCountNext();

  // StoreDown makes the store unable to answer `url` (the item's url bytes
  // as sent) in the next `times` CheckUrl and CompleteUrls requests that
  // carry it (every one when `times` is 0), as a --store=redis_cluster
  // server answers for a URL whose node is down: a request that sets
  // per_item_store_errors gets that item INVALID with
  // ERROR_REASON_STORE_UNAVAILABLE and error "fake: store node down", the
  // other items answered; one that does not fails as a whole UNAVAILABLE
  // "fake: the store could not answer N URLs" (each such request uses one
  // of `times` too). With `after_write`, a CLAIM records the URL under the
  // request's claim_id before failing it (the node wrote it and its reply
  // was lost): a retry with the same claim_id is answered NEW, any other
  // claim SEEN. Not part of the FIFO script: it applies to whichever calls
  // carry the URL.
  void StoreDown(const std::string& url, int times, bool after_write = false);

  // Every call so far, in arrival order.
  std::vector<Call> calls() const;
  // WaitForCalls blocks until at least `n` calls arrived or `timeout`
  // passed; returns whether they arrived.
  bool WaitForCalls(size_t n, absl::Duration timeout) const;

  // FakeHash: the fake's stand-in for content hash and SimHash (64-bit
  // FNV-1a of the bytes).
  static uint64_t FakeHash(absl::string_view text);

  grpc::ServerUnaryReactor* CheckUrl(grpc::CallbackServerContext* context,
                                     const dedupd::v1::CheckUrlRequest* request,
                                     dedupd::v1::CheckUrlResponse* response) override;

  // CompleteUrls answers CONFIRMED for a URL a CheckUrl claim recorded,
  // INVALID with ERROR_REASON_NOT_CLAIMED otherwise.
  grpc::ServerUnaryReactor* CompleteUrls(grpc::CallbackServerContext* context,
                                         const dedupd::v1::CompleteUrlsRequest* request,
                                         dedupd::v1::CompleteUrlsResponse* response) override;

  grpc::ServerUnaryReactor* CheckContent(grpc::CallbackServerContext* context,
                                         const dedupd::v1::CheckContentRequest* request,
                                         dedupd::v1::CheckContentResponse* response) override;

  grpc::ServerUnaryReactor* CheckChunks(grpc::CallbackServerContext* context,
                                        const dedupd::v1::CheckChunksRequest* request,
                                        dedupd::v1::CheckChunksResponse* response) override;

  grpc::ServerUnaryReactor* DedupResults(grpc::CallbackServerContext* context,
                                         const dedupd::v1::DedupResultsRequest* request,
                                         dedupd::v1::DedupResultsResponse* response) override;

 private:
  struct Action {
    enum Kind { kAnswer, kFail, kHang, kWrongCount } kind;
    absl::Status status;  // for kFail
  };

  // A recorded text: its owner and the other identities that claimed it.
  struct Document {
    std::string owner;
    std::vector<std::string> aliases;
  };

  // A url StoreDown made unreachable: for how many more requests (0: every
  // one) and whether a CLAIM records it first.
  struct Down {
    int times = 0;
    bool after_write = false;
  };

  // TakeStoreDown: whether `url` is unreachable for this request; uses up
  // one of its `times` and sets *after_write.
  bool TakeStoreDown(const std::string& url, bool* after_write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Logs `call` and takes the next scripted action. Returns the reactor
  // that already answers the call (hang, fail), or nullptr: answer it,
  // honouring *wrong_count.
  grpc::ServerUnaryReactor* Begin(grpc::CallbackServerContext* context, Call call,
                                  bool* wrong_count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::deque<Action> script_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> seen_
      ABSL_GUARDED_BY(mu_);  // url -> the claim_id of the CLAIM that recorded it
  absl::flat_hash_map<std::string, Down> store_down_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Document> texts_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> last_text_
      ABSL_GUARDED_BY(mu_);  // url -> text of its last CLAIM
  // CheckChunks: chunk text -> its holder (document_url, chunk_id), and
  // document_url -> the texts of its stored chunks.
  struct ChunkHolder {
    std::string document_url;
    std::string chunk_id;
  };
  absl::flat_hash_map<std::string, ChunkHolder> chunk_texts_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::vector<std::string>> document_chunks_ ABSL_GUARDED_BY(mu_);
};

// FakeDedupServer: a gRPC server on 127.0.0.1:<ephemeral> serving a
// FakeDedupService. Destruction shuts it down, cancelling hanging calls.
// Thread-safe.
class FakeDedupServer {
 public:
  // Start binds 127.0.0.1:0 and starts serving. Returns Internal when the
  // server cannot start.
  static absl::StatusOr<std::unique_ptr<FakeDedupServer>> Start();
  ~FakeDedupServer();

  // "127.0.0.1:<port>".
  const std::string& address() const { return address_; }
  FakeDedupService& service() { return service_; }

 private:
  FakeDedupServer() = default;

  FakeDedupService service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
};

}  // namespace dedupd

#endif  // DEDUPD_CLIENT_TESTING_FAKE_DEDUP_SERVICE_H_
