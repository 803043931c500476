"""dedupd.Client: the blocking client of the dedupd service."""
import time

import grpc

from dedupd import _core, errors
from dedupd.v1 import admin_pb2_grpc, dedupd_pb2_grpc


class Client:
    """A connection to one dedupd server. Thread-safe: share one client
    between threads rather than connecting per call.

    Example:
        with dedupd.Client("127.0.0.1:50051", namespace="crawl-7") as c:
            for r in c.check_urls(["https://example.com/a?utm_source=x"]):
                if r.should_fetch: ...      # NEW (or DUE): this worker owns it

    Settings (keyword-only; every one has a default):
      tls                  None/False: plaintext; True: TLS verified by the
                           system's roots; dedupd.TLS(ca_file=, cert_file=,
                           key_file=, server_name=): a private CA, mutual TLS.
      token                bearer token sent on every call as
                           "authorization: Bearer <token>" (the server's
                           --auth_token_file). Use TLS with a token. Default: none.
      admin_token          token for the admin calls when the server has
                           --admin_token_file. Default: `token`.
      namespace            namespace of every call that does not name one
                           (a crawl, a spider, a tenant). Default: "" (the
                           server's unnamed namespace).
      timeout              seconds each RPC attempt may take (DeadlineExceeded
                           after; not retried). Default: 30. None: no deadline.
      max_attempts         attempts per request when the server is UNAVAILABLE
                           (only that code is retried). Default: 4.
      initial_backoff, backoff_multiplier, max_backoff
                           wait before retry n: initial * multiplier**(n-1),
                           capped at max, jittered +/-20%. Default: 0.1 s, 2, 5 s.
      max_items_per_request  items per request of check_urls, check_content,
                           complete_urls; longer inputs are split. Default:
                           10,000 (the server's --max_batch_items default); a
                           server with a lower limit is learned from its first
                           refusal (nothing was recorded by the refused request).
      max_request_bytes    a request is also cut before it passes this size.
                           Default: 4 MiB (the server accepts 16 MiB).
      max_store_attempts, max_store_retry_time
                           check_urls and complete_urls ask the server to
                           answer per URL when its store can answer only part
                           of a request (per_item_store_errors: a Redis
                           Cluster node down) and send the URLs it answers
                           error_reason "STORE_UNAVAILABLE" again (same claim
                           id), with the backoff above, until each URL has been
                           sent max_store_attempts times or the next round
                           would start max_store_retry_time seconds after the
                           request's first answer; a URL still unanswered then
                           keeps that result (see check_urls). Default: 4, 10.0.
      channel_options      extra grpc channel options.
    """

    def __init__(self, address="127.0.0.1:50051", **settings):
        self._s = _core.Settings(address, **settings)
        creds = self._s.credentials(grpc)
        if creds is None:
            self._channel = grpc.insecure_channel(address, options=self._s.channel_options)
        else:
            self._channel = grpc.secure_channel(address, creds, options=self._s.channel_options)
        self._stubs = {"dedup": dedupd_pb2_grpc.DedupStub(self._channel),
                       "admin": admin_pb2_grpc.AdminStub(self._channel)}

    @property
    def namespace(self):
        return self._s.namespace

    def close(self):
        self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- driving a plan ----

    def _invoke(self, call):
        service, attr = _core.METHODS[call.method]
        rpc = getattr(self._stubs[service], attr)
        attempt = 0
        while True:
            attempt += 1
            try:
                return rpc(call.request, timeout=self._s.timeout,
                           metadata=self._s.metadata(call.method))
            except grpc.RpcError as e:
                err = errors.from_rpc_error(e, call.method, attempt)
                if (isinstance(err, errors.Unavailable) and call.retry
                        and attempt < self._s.max_attempts):
                    time.sleep(self._s.backoff(attempt))
                    continue
                raise err from None

    def _run(self, plan):
        try:
            call = next(plan)
            while True:
                if isinstance(call, _core._Sleep):
                    time.sleep(call.seconds)
                    call = plan.send(None)
                    continue
                try:
                    response = self._invoke(call)
                except errors.DedupdError as e:
                    call = plan.throw(e)
                    continue
                call = plan.send(response)
        except StopIteration as done:
            return done.value

    # ---- the Dedup service ----

    def check_urls(self, urls, *, base_url=None, peek=False, namespace=None,
                   lease_seconds=None, claim_id=None):
        """Claims URLs (CheckUrl): returns one UrlResult per URL, in order.

        urls: str, or Url(url, base_url), or (url, base_url) tuples, any number
          (split into requests). base_url: the page they were found on, for
          the relative ones (RFC 3986 resolution); per-URL base_url wins.
        peek: record nothing, answer what a claim would answer now.
        lease_seconds: lease the NEW/DUE URLs; confirm with complete_urls
          (claim_id=result.claim_id) after the fetch, or the URL is NEW again
          for the next claimant once the lease ends.
        claim_id: the id of this call (at most 48 bytes); request k carries
          "<claim_id>#k". Default: 16 random bytes per request. Each request
          keeps its id on its retries, so a reply lost on the wire is answered
          NEW again to the retry; pass your own to retry a whole failed call.
        A URL dedupd cannot key is answered INVALID with `error`; never raises
        for a bad URL. Raises DedupdError subclasses for a failed call.

        A URL whose store node stayed unreachable through the re-sends
        (max_store_attempts) is answered INVALID with error_reason
        "STORE_UNAVAILABLE" (result.store_unavailable): not a bad URL and not
        answered; its claim may have reached the store, so send it again by
        retrying the whole call with the same claim_id= (and the same URLs),
        or expect SEEN for it from another claim id (with a lease, NEW again
        once the lease ends)."""
        return self._run(self._s.plan_check_urls(urls, base_url, peek, namespace,
                                                 lease_seconds, claim_id))

    def complete_urls(self, urls, *, namespace=None, claim_id=None):
        """Confirms leased URLs (CompleteUrls): they stay SEEN for good.
        With claim_id (UrlResult.claim_id), a URL whose lease passed to
        another claimant is not confirmed (INVALID, error_reason LEASE_LOST).
        Idempotent: a repeat answers ALREADY_CONFIRMED. A URL whose store
        node stayed unreachable through the re-sends is INVALID with
        error_reason "STORE_UNAVAILABLE": not confirmed, confirm it again."""
        return self._run(self._s.plan_complete_urls(urls, namespace, claim_id))

    def check_content(self, documents, *, peek=False, namespace=None,
                      max_hamming_distance=None, claim_id=None, min_jaccard=None):
        """Checks extracted texts (CheckContent): one ContentResult per
        Document (or dict), in order. With claim (the default) the first
        document with a text owns it; every other URL serving it becomes an
        alias. max_hamming_distance: near-duplicate threshold for documents
        that do not set one (server default 3); min_jaccard: the estimated
        shingle Jaccard that also counts as near, for documents that do not
        set one (server default 0.85; below the server's --min_jaccard_floor,
        0.8, or above 1 a document is INVALID with error_reason
        "BAD_MIN_JACCARD"). Checking a URL's page also confirms its lease in
        the namespace."""
        return self._run(self._s.plan_check_content(documents, peek, namespace,
                                                    max_hamming_distance, claim_id, min_jaccard))

    def check_chunks(self, chunks, *, document_url=None, document_id=None, peek=False,
                     namespace=None, max_hamming_distance=None, claim_id=None, min_jaccard=None):
        """Checks one document's chunks (CheckChunks) in one request (never
        split: with claim they replace the document's stored chunks).
        chunks: str, (chunk_id, text) or Chunk. Exactly one of document_url
        and document_id. min_jaccard: the estimated shingle Jaccard that also
        counts as near (server default 0.8; out of the server's range the
        call raises InvalidRequest). Returns a ChunksResult: one ChunkResult
        per chunk, and removed_chunk_ids (the stored chunks this version
        dropped: delete their vectors)."""
        return self._run(self._s.plan_check_chunks(chunks, document_url, document_id, peek,
                                                   namespace, max_hamming_distance, claim_id,
                                                   min_jaccard))

    def dedup_results(self, hits, *, top_k=None, measure=None, max_hamming_distance=None,
                      min_jaccard=None, min_cosine=None, per_source_cap=None):
        """Deduplicates one query's retrieved hits (DedupResults; stateless).
        hits: Hit or dict(id, text, score, source_url, embedding).
        measure: "simhash" (default) or "jaccard". Bad hits are listed in
        `rejected`, never raised."""
        return self._run(self._s.plan_dedup_results(hits, top_k, measure, max_hamming_distance,
                                                    min_jaccard, min_cosine, per_source_cap))

    # ---- the Admin service ----

    def stats(self, *, exact=False):
        """Admin.Stats: store figures (Stats). exact=True scans the store."""
        return self._run(self._s.plan_stats(exact))

    def drop_namespace(self, namespace):
        """Admin.DropNamespace: deletes every record of a named namespace;
        returns whether it held any."""
        return self._run(self._s.plan_drop_namespace(namespace))

    def forget(self, urls):
        """Admin.Forget (at most 100 URLs; not retried): one dict per URL."""
        return self._run(self._s.plan_forget(urls))

    def backup(self, directory):
        """Admin.Backup into `directory` on the server (not retried): a dict."""
        return self._run(self._s.plan_backup(directory))
