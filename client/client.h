// client.h: the C++ client library for the dedupd.v1.Dedup service. It turns
// a span of items of any length into requests of bounded size, sends each
// with a deadline, retries the transient failures (a whole request
// answered UNAVAILABLE; single URLs answered ERROR_REASON_STORE_UNAVAILABLE
// when a store node is down) with exponential backoff and jitter, and
// returns one result per item, in order, as absl::Status / absl::StatusOr.
// No grpc::Status crosses this header.
//
// Example:
//   absl::StatusOr<std::unique_ptr<DedupClient>> client =
//       DedupClient::Connect("127.0.0.1:7000", ClientOptions());
//   if (!client.ok()) return client.status();
//   std::vector<dedupd::v1::UrlItem> items(1);
//   items[0].set_url("https://example.com/a?utm_source=x");
//   absl::StatusOr<std::vector<dedupd::v1::UrlResult>> results =
//       (*client)->CheckUrls(items, dedupd::v1::CLAIM_MODE_CLAIM);
//   if (!results.ok()) return results.status();
//   // (*results)[0].verdict() is URL_VERDICT_NEW the first time, SEEN after.
//
//   std::vector<dedupd::v1::ContentItem> docs(1);
//   docs[0].set_url("https://example.com/a");
//   docs[0].set_text("The extracted text of the page.");
//   absl::StatusOr<std::vector<dedupd::v1::ContentResult>> content =
//       (*client)->CheckContent(docs, dedupd::v1::CLAIM_MODE_CLAIM);
//   // (*content)[0].verdict() is CONTENT_VERDICT_NEW the first time,
//   // EXACT_DUPLICATE for the same text from any URL after.
#ifndef DEDUPD_CLIENT_CLIENT_H_
#define DEDUPD_CLIENT_CLIENT_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "dedupd/v1/admin.pb.h"
#include "dedupd/v1/dedupd.pb.h"

namespace grpc {
class ChannelCredentials;
}  // namespace grpc

namespace dedupd {

// How a DedupClient talks to the server. Every field has a usable default.
struct ClientOptions {
  // Deadline of each RPC attempt, measured from the moment it is sent. A
  // request that runs out of time fails with DeadlineExceeded and is not
  // retried (the server may still have done the work).
  // Default: 30 seconds.  REQUIRES: > 0 and finite.
  absl::Duration deadline = absl::Seconds(30);

  // Attempts per request when the server answers UNAVAILABLE (connection
  // refused or lost, server shutting down): 1 means no retry. Only
  // UNAVAILABLE is retried; every other code surfaces at once.
  // Default: 4.  REQUIRES: >= 1.
  int max_attempts = 4;

  // Wait before the first retry. Each further retry waits
  // `backoff_multiplier` times longer, capped at `max_backoff`; every wait
  // is jittered uniformly by +/-20% so that many clients that lost the same
  // server do not come back in lockstep.
  // Default: 100 ms.  REQUIRES: >= 0.
  absl::Duration initial_backoff = absl::Milliseconds(100);
  // Default: 2.0.  REQUIRES: >= 1.
  double backoff_multiplier = 2.0;
  // Default: 5 seconds.  REQUIRES: >= initial_backoff.
  absl::Duration max_backoff = absl::Seconds(5);

  // Per-URL store errors (CheckUrls and CompleteUrls). Their requests set
  // per_item_store_errors: a server whose store is distributed
  // (--store=redis_cluster) and cannot reach the node holding some URLs
  // answers those URLs alone INVALID with ERROR_REASON_STORE_UNAVAILABLE
  // and the rest of the request normally, instead of failing the whole
  // request UNAVAILABLE. The client then sends just those URLs again, in a
  // copy of the request (same claim id, namespace, mode and lease, so a
  // claim that did reach the store is answered NEW again), after the
  // backoff above (jittered, growing with each round), until each is
  // answered, it has been sent `max_store_attempts` times, or the next
  // round would start more than `max_store_retry_time` after the request's
  // first answer. A URL still unanswered then keeps its STORE_UNAVAILABLE
  // result (the server's message naming the node, plus "still unavailable
  // after N attempts"), in its place: it is neither dropped nor a bad URL.
  //
  // Sends of one URL in all, the first included; 1: never re-sent.
  // Default: 4.  REQUIRES: >= 1.
  int max_store_attempts = 4;
  // Default: 10 seconds.  REQUIRES: >= 0.
  absl::Duration max_store_retry_time = absl::Seconds(10);

  // Most items sent in one request (CheckUrls and CheckContent); longer
  // spans are split. The server rejects requests over its own limit (10,000
  // items by default) with InvalidArgument.
  // Default: 1,000.  REQUIRES: >= 1.
  size_t max_items_per_request = 1000;

  // A request is also cut before its serialized size would pass this many
  // bytes (an item larger than that on its own is sent alone), so that long
  // URLs and documents stay under the server's message limit (16 MiB by
  // default; a single document over it fails the call with the server's
  // ResourceExhausted).
  // Default: 2 MiB.  REQUIRES: >= 1.
  size_t max_request_bytes = 2 << 20;

  // Transport security. nullptr means plaintext (insecure) credentials,
  // unless TLS is asked for below. Set either this or the TLS fields.
  // Default: nullptr.
  std::shared_ptr<grpc::ChannelCredentials> credentials;

  // TLS: connect with TLS when `tls` is true or any tls_* field is set.
  // Default: false.
  bool tls = false;
  // PEM CA certificates that verify the server's certificate; empty: the
  // system's roots. Default: empty.
  std::string tls_ca_file;
  // Mutual TLS: this client's PEM certificate chain and private key, both
  // or neither. Default: empty.
  std::string tls_cert_file;
  std::string tls_key_file;
  // The name the server's certificate must carry, instead of the address's
  // host (for tests, or a server reached by another name). Default: empty.
  std::string tls_server_name;

  // Bearer token sent on every call as "authorization: Bearer <token>" (the
  // server's --auth_token_file). Empty: none. Use TLS with a token: on
  // plaintext, anyone on the path can read it. Default: empty.
  // REQUIRES: printable ASCII without spaces.
  std::string bearer_token;
};

// ReadBearerTokenFile reads a token file as the server does: the whole
// file minus trailing newlines. Errors: the file cannot be read (NotFound,
// PermissionDenied, Unavailable, with the path), or InvalidArgument for an
// empty token or one with spaces or non-printable bytes.
absl::StatusOr<std::string> ReadBearerTokenFile(const std::string& path);

// What a CheckUrls call asks besides its items and mode.
struct UrlCheckOptions {
  // The namespace of the URLs (CheckUrlRequest.namespace). Default: the
  // empty one.
  std::string name_space;
  // Lease the URLs claimed (CheckUrlRequest.lease_seconds); confirm them
  // with CompleteUrls (or CheckContent of the page) before it ends.
  // Default: no lease.
  std::optional<uint32_t> lease_seconds;
  // The claim id of the call's requests: empty (the default) gives every
  // request 16 random bytes of its own; otherwise request k of the call
  // (k = 0, 1, ...) carries claim_id + "#" + k, so a caller that retries a
  // whole failed call with the same claim_id (and the same items and
  // limits) is answered as the first call was. At most 48 bytes.
  std::string claim_id;
};

// What a CheckContent call asks besides its items and mode.
struct ContentCheckOptions {
  // The namespace of the texts (CheckContentRequest.namespace). Default:
  // the empty one.
  std::string name_space;
  // The claim id of the call's requests, as UrlCheckOptions::claim_id:
  // empty (the default) gives every request 16 random bytes of its own;
  // otherwise request k carries claim_id + "#" + k. At most 48 bytes.
  std::string claim_id;
};

// Called by CheckUrls and CheckContent after each request is answered, on the calling
// thread, with the number of items answered so far and the span's size.
using ProgressCallback = std::function<void(size_t done, size_t total)>;

// DedupClient: a connection (gRPC channel) to one dedupd address.
// Thread-safe: one client may be shared by any number of threads, and its
// calls may run concurrently; share it rather than connecting per call.
class DedupClient {
 public:
  // Connect creates a client for `address` ("host:port", or any gRPC target
  // such as "dns:///dedupd:7000"). It does not wait for the server: the
  // connection is made by the first call, and a server that cannot be
  // reached surfaces there as Unavailable (after `max_attempts`).
  // Reads the tls_* files here: NotFound / PermissionDenied / Unavailable
  // naming a file that cannot be read. Returns InvalidArgument for an
  // empty address, options that break a REQUIRES above, only one of
  // tls_cert_file / tls_key_file, or both `credentials` and TLS fields.
  //
  // Example:
  //   ClientOptions options;
  //   options.deadline = absl::Seconds(5);
  //   auto client = DedupClient::Connect("127.0.0.1:7000", options);
  static absl::StatusOr<std::unique_ptr<DedupClient>> Connect(const std::string& address,
                                                              const ClientOptions& options);

  ~DedupClient();
  DedupClient(const DedupClient&) = delete;
  DedupClient& operator=(const DedupClient&) = delete;

  // CheckUrls sends `items` in requests of at most max_items_per_request
  // items (and max_request_bytes bytes), one after another, with `mode`, and
  // returns exactly one result per item, in the order of `items`. An item
  // the server cannot key is answered URL_VERDICT_INVALID with an error in
  // its result (ERROR_REASON_BAD_URL); that is not an error of the call.
  // Nor is an item whose store node stayed unreachable through the
  // re-sends (ClientOptions::max_store_attempts): URL_VERDICT_INVALID with
  // ERROR_REASON_STORE_UNAVAILABLE, not answered yet, to send again (see
  // the caveat). An empty span returns an empty vector without contacting
  // the server.
  //
  // Errors carry the gRPC code (same numeric code) and a message that
  // starts with "CheckUrl: ": Unavailable once max_attempts are used up,
  // DeadlineExceeded, InvalidArgument / ResourceExhausted for a request the
  // server rejects as a whole (e.g. over its item limit), Internal when the
  // server answers with the wrong number of results.
  //
  // Retries: every request carries a claim id (UrlCheckOptions), the same
  // on each of its attempts, so an UNAVAILABLE that arrives after the
  // server recorded a CLAIM (the reply was lost with the connection) is
  // answered, on the retry, NEW for the URLs the first attempt claimed,
  // with the same first_seen_time (within the server's
  // --claim_id_retention, 24 h by default).
  //
  // A re-send of STORE_UNAVAILABLE items that fails UNAVAILABLE (after
  // max_attempts) or DEADLINE_EXCEEDED ends the re-sends: those items keep
  // their STORE_UNAVAILABLE result and the call goes on; any other error
  // of a re-send is the call's error.
  //
  // Caveat: on any error, results of the requests already answered are
  // dropped; with CLAIM those URLs stay claimed (leased, with a lease). A
  // caller that set UrlCheckOptions::claim_id gets them again by retrying
  // the call with the same claim_id; otherwise pass at most
  // max_items_per_request items per call to lose at most one request's
  // answers. The same holds for STORE_UNAVAILABLE items: their claim may
  // have reached the store, so send them again in a call with another
  // claim id and they may be answered SEEN (never fetched, unless a lease
  // lets the URL come back NEW when it ends); retrying the whole call with
  // the same UrlCheckOptions::claim_id (and the same items and limits)
  // answers them as their first claim was.
  //
  // `progress`, when set, is called after each request is answered.
  // Complexity: ceil(items / max_items_per_request) RPCs at least.
  absl::StatusOr<std::vector<dedupd::v1::UrlResult>> CheckUrls(
      absl::Span<const dedupd::v1::UrlItem> items, dedupd::v1::ClaimMode mode,
      const ProgressCallback& progress = nullptr) const;
  // The same, in a namespace, with a lease or the caller's claim id.
  // Errors: as above; InvalidArgument for a claim_id over 48 bytes.
  absl::StatusOr<std::vector<dedupd::v1::UrlResult>> CheckUrls(
      absl::Span<const dedupd::v1::UrlItem> items, dedupd::v1::ClaimMode mode,
      const UrlCheckOptions& url_options, const ProgressCallback& progress = nullptr) const;

  // CompleteUrls confirms leased URLs (CheckUrls with lease_seconds), in
  // requests of at most max_items_per_request items, retrying UNAVAILABLE
  // (a confirmation is idempotent: a repeat answers ALREADY_CONFIRMED) and
  // re-sending the URLs answered STORE_UNAVAILABLE as CheckUrls does.
  // One result per item, in order; a URL never claimed in `name_space`, or
  // whose last claim had another claim id when `claim_id` is given, is
  // COMPLETE_VERDICT_INVALID with its reason; one whose store node stayed
  // unreachable is COMPLETE_VERDICT_INVALID with
  // ERROR_REASON_STORE_UNAVAILABLE (not confirmed: confirm it again before
  // its lease ends). Errors: as CheckUrls, with
  // messages that start with "CompleteUrls: "; FailedPrecondition from a
  // server in the approximate URL mode.
  absl::StatusOr<std::vector<dedupd::v1::CompleteResult>> CompleteUrls(
      absl::Span<const dedupd::v1::UrlItem> items, const std::string& name_space,
      const std::string& claim_id = "") const;

  // CheckContent sends documents (`items`: url, optional canonical_url,
  // text, optional max_hamming_distance) exactly as CheckUrls sends URLs:
  // in requests of at most max_items_per_request items and
  // max_request_bytes bytes (a document larger than that alone is sent in
  // a request of its own), one after another, with `mode`, retrying
  // UNAVAILABLE. Returns exactly one result per item, in the order of
  // `items`. A document the server cannot check (bad URL, empty or invalid
  // UTF-8 text, text over the server's --max_text_bytes, a distance over
  // its limit) is answered CONTENT_VERDICT_INVALID with an error in its
  // result; that is not an error of the call. An empty span returns an
  // empty vector without contacting the server.
  //
  // Errors: as CheckUrls, with messages that start with "CheckContent: ";
  // a request over the server's item limit (max_items_per_request above
  // it) fails with its InvalidArgument, nothing is split further; a
  // request over its message size limit fails with ResourceExhausted;
  // Unimplemented from a server without the content layer.
  //
  // Retries: as CheckUrls, every request carries a claim id, the same on
  // each of its attempts, so a retried CLAIM whose first reply was lost is
  // answered NEW, with the same first_seen_time, for the documents the
  // first attempt recorded NEW (within the server's --claim_id_retention).
  // A document the first attempt recorded as NEAR_DUPLICATE is answered
  // EXACT_DUPLICATE of its own identity URL.
  //
  // Caveat: on any error, the results of the requests already answered are
  // dropped while their CLAIMs stay; a caller that set
  // ContentCheckOptions::claim_id gets them again by retrying the call with
  // the same claim_id (and the same items and limits).
  //
  // `progress`, when set, is called after each request is answered.
  // Complexity: ceil(items / max_items_per_request) RPCs at least.
  absl::StatusOr<std::vector<dedupd::v1::ContentResult>> CheckContent(
      absl::Span<const dedupd::v1::ContentItem> items, dedupd::v1::ClaimMode mode,
      const ProgressCallback& progress = nullptr) const;
  // The same, in a namespace, or with the caller's claim id.
  // Errors: as above; InvalidArgument for a claim_id over 48 bytes.
  absl::StatusOr<std::vector<dedupd::v1::ContentResult>> CheckContent(
      absl::Span<const dedupd::v1::ContentItem> items, dedupd::v1::ClaimMode mode,
      const ContentCheckOptions& content_options, const ProgressCallback& progress = nullptr) const;

  // CheckChunks sends one document's chunks (`request`: document_url,
  // chunks, optional max_hamming_distance, mode) in one request, retrying
  // UNAVAILABLE, and returns the response: one result per chunk, in order.
  // A document is never split: with CLAIM its chunks replace the
  // document's stored chunks, so they must arrive together. A chunk the
  // server cannot check is answered CHUNK_VERDICT_INVALID with an error in
  // its result; that is not an error of the call.
  //
  // Errors: as CheckUrls, with messages that start with "CheckChunks: ";
  // InvalidArgument for a request the server rejects as a whole (no chunks,
  // more than its --max_batch_items, a bad document_url, a distance over its
  // limit); ResourceExhausted over its message size limit; Unimplemented
  // from a server without the chunk layer.
  //
  // Retries: a request without a claim_id is sent with 16 random bytes as
  // its claim_id, the same on each attempt (one the caller sets is sent
  // unchanged: set it to retry the call itself after an error), so a
  // retried CLAIM whose first reply was lost gets the first attempt's
  // replaced_chunks and removed_chunk_ids (within the server's
  // --claim_id_retention), and its chunks are answered as a re-send of the
  // same document (NEW for the chunks it owns, with their first times).
  absl::StatusOr<dedupd::v1::CheckChunksResponse> CheckChunks(
      const dedupd::v1::CheckChunksRequest& request) const;

  // DedupResults sends one query's hits in one request, retrying
  // UNAVAILABLE, and returns the server's decision (kept, dropped with
  // reasons, not examined, and the bad hits rejected with theirs). Errors:
  // as CheckUrls, with messages that start with "DedupResults: ";
  // InvalidArgument naming the limit for a bad request as a whole (no
  // hits, too many, top_k 0, a setting out of range).
  absl::StatusOr<dedupd::v1::DedupResultsResponse> DedupResults(
      const dedupd::v1::DedupResultsRequest& request) const;

  // Admin calls (dedupd.v1.Admin; docs in admin.proto). Errors carry the
  // gRPC code and a message that starts with "Admin.<Method>: ".
  //
  // AdminStats retries UNAVAILABLE like the calls above.
  absl::StatusOr<dedupd::v1::StatsResponse> AdminStats(
      const dedupd::v1::StatsRequest& request) const;
  // AdminBackup is sent once, never retried (a retry after a lost reply
  // would find the directory it made and fail). A backup of a large store
  // can outlast the default deadline: raise ClientOptions::deadline.
  absl::StatusOr<dedupd::v1::BackupResponse> AdminBackup(
      const dedupd::v1::BackupRequest& request) const;
  // AdminForget is sent once, never retried: a retry after a lost reply
  // would find nothing left to forget and report found=false, hiding what
  // the first call did. At most 100 URLs per request (the server's limit;
  // each URL costs a scan of the store).
  absl::StatusOr<dedupd::v1::ForgetResponse> AdminForget(
      const dedupd::v1::ForgetRequest& request) const;
  // AdminDropNamespace retries UNAVAILABLE: a repeated drop is harmless
  // (found is then false).
  absl::StatusOr<dedupd::v1::DropNamespaceResponse> AdminDropNamespace(
      const dedupd::v1::DropNamespaceRequest& request) const;
  // AdminExport streams the export, calling `on_message` for each message
  // in order on the calling thread; a non-OK return from it cancels the
  // stream and is returned. Not retried. The deadline
  // (ClientOptions::deadline) covers the whole stream.
  absl::Status AdminExport(
      const dedupd::v1::ExportRequest& request,
      const std::function<absl::Status(const dedupd::v1::ExportResponse&)>& on_message) const;

  const ClientOptions& options() const { return options_; }

 private:
  struct Rpc;  // the channel and stub; defined in client.cc
  DedupClient(ClientOptions options, std::unique_ptr<Rpc> rpc);

  const ClientOptions options_;
  const std::unique_ptr<Rpc> rpc_;
};

}  // namespace dedupd

#endif  // DEDUPD_CLIENT_CLIENT_H_
