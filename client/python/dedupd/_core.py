"""What the sync and asyncio clients share: settings, channel credentials,
backoff, and each call's plan.

A plan is a generator that yields the RPCs to make (`_Call`) and is sent
their responses; the sync client drives it with blocking calls, the asyncio
client with awaits. So batching, claim ids, the learning of the server's
item limit and the conversion of results are written once.
"""
import dataclasses
import random
import re
import secrets
import time
from typing import Optional

from dedupd import _codec as codec
from dedupd import errors
from dedupd.v1 import admin_pb2, dedupd_pb2 as pb

#: The server's default --max_batch_items.
SERVER_DEFAULT_MAX_ITEMS = 10_000

# The server's message for a request over --max_batch_items
# (server/engine.cc): "the request has N items; the limit is M per request".
_LIMIT_RE = re.compile(r"the limit is (\d+) per request")


@dataclasses.dataclass
class TLS:
    """Transport security. Files are PEM; the *_pem fields take the PEM
    bytes instead of a path.

    ca_file:     CA certificates that verify the server (default: the system's roots)
    cert_file, key_file: this client's certificate chain and key (mutual TLS; both or neither)
    server_name: the name the server's certificate must carry, when it is not
                 the address's host (default: the host)"""
    ca_file: Optional[str] = None
    cert_file: Optional[str] = None
    key_file: Optional[str] = None
    server_name: Optional[str] = None
    ca_pem: Optional[bytes] = None
    cert_pem: Optional[bytes] = None
    key_pem: Optional[bytes] = None


def read_token_file(path):
    """Reads a bearer token file as dedupd does (the file minus trailing
    newlines). Raises ValueError for an empty token or one with spaces."""
    with open(path, "rb") as f:
        token = f.read().rstrip(b"\r\n").decode("ascii", "strict")
    if not token or any(c <= " " or c > "~" for c in token):
        raise ValueError("%s: the token must be one line of printable ASCII without spaces"
                         % path)
    return token


def _read(path):
    with open(path, "rb") as f:
        return f.read()


@dataclasses.dataclass
class _Call:
    method: str          # "CheckUrl", "Admin.Stats", ...
    request: object
    retry: bool = True   # retry UNAVAILABLE (the call is idempotent)


@dataclasses.dataclass
class _Sleep:
    """Yielded by a plan between re-sends: the driver waits this long
    (time.sleep, or asyncio.sleep) and sends None back."""
    seconds: float


#: UrlResult.error_reason / CompleteResult.error_reason of a URL the store
#: could not answer now (a Redis node down): send it again.
STORE_UNAVAILABLE = "STORE_UNAVAILABLE"


class Settings:
    """The client's settings, validated; see Client for their meaning."""

    def __init__(self, address, *, tls=None, token=None, admin_token=None, namespace="",
                 timeout=30.0, max_attempts=4, initial_backoff=0.1, backoff_multiplier=2.0,
                 max_backoff=5.0, max_items_per_request=SERVER_DEFAULT_MAX_ITEMS,
                 max_request_bytes=4 << 20, max_store_attempts=4, max_store_retry_time=10.0,
                 channel_options=None):
        if not address:
            raise ValueError("address is empty (want host:port or a gRPC target)")
        if timeout is not None and not timeout > 0:
            raise ValueError("timeout must be > 0 seconds or None")
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if initial_backoff < 0 or backoff_multiplier < 1 or max_backoff < initial_backoff:
            raise ValueError("want 0 <= initial_backoff <= max_backoff, backoff_multiplier >= 1")
        if max_items_per_request < 1 or max_request_bytes < 1:
            raise ValueError("max_items_per_request and max_request_bytes must be >= 1")
        if max_store_attempts < 1 or not max_store_retry_time >= 0:
            raise ValueError("want max_store_attempts >= 1 and max_store_retry_time >= 0")
        for name, tok in (("token", token), ("admin_token", admin_token)):
            if tok is not None and (not tok or any(c <= " " or c > "~" for c in tok)):
                raise ValueError("%s must be printable ASCII without spaces" % name)
        if tls is True:
            tls = TLS()
        elif tls is False:
            tls = None
        if tls is not None and bool(tls.cert_file or tls.cert_pem) != bool(
                tls.key_file or tls.key_pem):
            raise ValueError("TLS: give both a client certificate and its key, or neither")
        self.address = address
        self.tls = tls
        self.token = token
        self.admin_token = admin_token
        self.namespace = namespace or ""
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.initial_backoff = initial_backoff
        self.backoff_multiplier = backoff_multiplier
        self.max_backoff = max_backoff
        self.max_items_per_request = max_items_per_request
        self.max_request_bytes = max_request_bytes
        self.max_store_attempts = max_store_attempts
        self.max_store_retry_time = max_store_retry_time
        self.channel_options = [
            ("grpc.max_receive_message_length", 256 << 20),
            ("grpc.max_send_message_length", -1),
            ("grpc.primary_user_agent", "dedupd-python/0.1"),
            # gRPC waits 1 s and more before reconnecting to a server that
            # refused a connection; tie that to the retry schedule so that
            # the retries reach a server that is back.
            ("grpc.initial_reconnect_backoff_ms", max(1, int(initial_backoff * 1000))),
            ("grpc.max_reconnect_backoff_ms", max(1, int(max_backoff * 1000))),
        ] + list(channel_options or [])
        if tls is not None and tls.server_name:
            self.channel_options.append(("grpc.ssl_target_name_override", tls.server_name))
        # The server's --max_batch_items when a request over it taught us.
        self.learned_max_items = None

    def credentials(self, grpc_module):
        """grpc.ChannelCredentials for TLS, or None for plaintext."""
        if self.tls is None:
            return None
        t = self.tls
        return grpc_module.ssl_channel_credentials(
            root_certificates=t.ca_pem or (_read(t.ca_file) if t.ca_file else None),
            private_key=t.key_pem or (_read(t.key_file) if t.key_file else None),
            certificate_chain=t.cert_pem or (_read(t.cert_file) if t.cert_file else None))

    def metadata(self, method):
        token = self.admin_token if method.startswith("Admin.") and self.admin_token \
            else self.token
        return (("authorization", "Bearer " + token),) if token else None

    def backoff(self, attempt):
        """Seconds to wait before attempt `attempt + 1`: exponential, capped,
        jittered by +/-20% so clients that lost one server do not return in
        lockstep."""
        base = min(self.max_backoff,
                   self.initial_backoff * self.backoff_multiplier ** (attempt - 1))
        return base * random.uniform(0.8, 1.2)

    def items_limit(self):
        if self.learned_max_items is not None:
            return min(self.max_items_per_request, self.learned_max_items)
        return self.max_items_per_request

    # ---- plans ----

    def _batches(self, method, messages, make_request, convert, resend=False):
        """Sends `messages` (request items) in requests of at most
        items_limit() items and max_request_bytes bytes; returns the
        converted results, one per item, in order. A request the server
        rejects for its item limit did nothing: the rest is re-split at the
        server's limit (remembered for later calls).

        make_request(batch, k) -> (request, extra); convert(positions,
        pb_results, extra) -> results of messages[p] for p in positions.
        With `resend`, the items answered STORE_UNAVAILABLE are sent again
        (_resend_store_unavailable)."""
        results = []
        i, k = 0, 0
        n = len(messages)
        while i < n:
            limit = self.items_limit()
            j, size = i, 0
            while j < n and j - i < limit:
                s = messages[j].ByteSize() + 8
                if j > i and size + s > self.max_request_bytes:
                    break
                size += s
                j += 1
            request, extra = make_request(messages[i:j], k)
            try:
                response = yield _Call(method, request)
            except errors.InvalidRequest as e:
                m = _LIMIT_RE.search(e.details)
                if m and 0 < int(m.group(1)) < j - i:
                    self.learned_max_items = int(m.group(1))
                    continue
                e.partial_results = results
                raise
            except errors.DedupdError as e:
                e.partial_results = results
                raise
            if len(response.results) != j - i:
                err = errors.ServerError(
                    "%s: the server answered %d results for %d items"
                    % (method, len(response.results), j - i), method=method)
                err.partial_results = results
                raise err
            results.extend(convert(range(i, j), response.results, extra))
            if resend:
                try:
                    yield from self._resend_store_unavailable(method, request, i, results,
                                                              convert, extra)
                except errors.DedupdError as e:
                    e.partial_results = results
                    raise
            i, k = j, k + 1
        return results

    def _resend_store_unavailable(self, method, request, first, results, convert, extra):
        """results[first:] answer `request`. Sends the items answered
        STORE_UNAVAILABLE again, in copies of `request` (same claim id,
        namespace, mode, lease and per_item_store_errors, so a claim that did
        reach the store is answered NEW again), after a jittered backoff that
        grows each round (Settings.backoff), and puts each answer in its
        item's place, until none is left, an item was sent
        max_store_attempts times, or the next round would start more than
        max_store_retry_time seconds from now. Items still unanswered keep
        their STORE_UNAVAILABLE result, its error saying so. A round that
        fails Unavailable or DeadlineExceeded ends the rounds (its items stay
        as unanswered as they were); any other error is raised."""
        pending = [x for x in range(first, len(results))
                   if results[x].error_reason == STORE_UNAVAILABLE]
        if not pending:
            return
        give_up = time.monotonic() + self.max_store_retry_time
        sends = 1  # every pending item has been sent this many times
        while pending and sends < self.max_store_attempts:
            wait = self.backoff(sends)
            if time.monotonic() + wait > give_up:
                break
            yield _Sleep(wait)
            again = type(request)()
            again.CopyFrom(request)
            del again.items[:]
            again.items.extend(request.items[x - first] for x in pending)
            try:
                response = yield _Call(method, again)
            except (errors.Unavailable, errors.DeadlineExceeded):
                break
            if len(response.results) != len(pending):
                raise errors.ServerError(
                    "%s: the server answered %d results for %d items sent again"
                    % (method, len(response.results), len(pending)), method=method)
            still = []
            for x, r in zip(pending, convert(pending, response.results, extra)):
                results[x] = r
                if r.error_reason == STORE_UNAVAILABLE:
                    still.append(x)
            pending = still
            sends += 1
        for x in pending:
            results[x] = dataclasses.replace(
                results[x], error="%s (%s: still unavailable after %d attempts)"
                % (results[x].error, method, sends))

    def plan_check_urls(self, urls, base_url, peek, namespace, lease_seconds, claim_id):
        given = list(urls)
        items = [codec.url_item(u, base_url) for u in given]
        ns = self.namespace if namespace is None else namespace
        if claim_id is not None and len(claim_id.encode()) > 48:
            raise ValueError("claim_id: at most 48 bytes (the client appends #<request>)")

        def make(batch, k):
            cid = "%s#%d" % (claim_id, k) if claim_id is not None else secrets.token_hex(16)
            req = pb.CheckUrlRequest(
                items=batch, mode=pb.CLAIM_MODE_PEEK if peek else pb.CLAIM_MODE_CLAIM,
                namespace=ns)
            if not peek:
                codec.set_claim_id(req, cid)
            if lease_seconds is not None:
                req.lease_seconds = int(lease_seconds)
            req.per_item_store_errors = True
            return req, cid

        def convert(positions, results, cid):
            return [codec.url_result(codec.to_str(_raw_url(given[p])), r, "" if peek else cid)
                    for p, r in zip(positions, results)]

        return (yield from self._batches("CheckUrl", items, make, convert, resend=True))

    def plan_complete_urls(self, urls, namespace, claim_id):
        given = list(urls)
        items = [codec.url_item(u) for u in given]
        ns = self.namespace if namespace is None else namespace

        def make(batch, k):
            req = pb.CompleteUrlsRequest(items=batch, namespace=ns, per_item_store_errors=True)
            if claim_id:
                req.claim_id = codec.to_bytes(claim_id)
            return req, None

        def convert(positions, results, _):
            return [codec.complete_result(codec.to_str(_raw_url(given[p])), r)
                    for p, r in zip(positions, results)]

        return (yield from self._batches("CompleteUrls", items, make, convert, resend=True))

    def plan_check_content(self, documents, peek, namespace, max_hamming_distance, claim_id,
                           min_jaccard=None):
        items = [codec.content_item(d, max_hamming_distance, min_jaccard) for d in documents]
        ns = self.namespace if namespace is None else namespace

        def make(batch, k):
            req = pb.CheckContentRequest(
                items=batch, mode=pb.CLAIM_MODE_PEEK if peek else pb.CLAIM_MODE_CLAIM,
                namespace=ns)
            if not peek:
                codec.set_claim_id(
                    req, "%s#%d" % (claim_id, k) if claim_id else secrets.token_hex(16))
            return req, None

        def convert(positions, results, _):
            return [codec.content_result(r) for r in results]

        return (yield from self._batches("CheckContent", items, make, convert))

    def plan_check_chunks(self, chunks, document_url, document_id, peek, namespace,
                          max_hamming_distance, claim_id, min_jaccard=None):
        if (document_url is None) == (document_id is None):
            raise ValueError("check_chunks: give exactly one of document_url and document_id")
        req = pb.CheckChunksRequest(
            chunks=[codec.chunk_item(c) for c in chunks],
            mode=pb.CLAIM_MODE_PEEK if peek else pb.CLAIM_MODE_CLAIM,
            namespace=self.namespace if namespace is None else namespace)
        if document_url is not None:
            req.document_url = codec.to_bytes(document_url)
        else:
            req.document_id = codec.to_bytes(document_id)
        if max_hamming_distance is not None:
            req.max_hamming_distance = max_hamming_distance
        if min_jaccard is not None:
            req.min_jaccard = min_jaccard
        if not peek:
            codec.set_claim_id(req, claim_id or secrets.token_hex(16))
        resp = yield _Call("CheckChunks", req)
        if len(resp.results) != len(req.chunks):
            raise errors.ServerError("CheckChunks: %d results for %d chunks"
                                     % (len(resp.results), len(req.chunks)),
                                     method="CheckChunks")
        return codec.chunks_result(resp)

    def plan_dedup_results(self, hits, top_k, measure, max_hamming_distance, min_jaccard,
                           min_cosine, per_source_cap):
        req = pb.DedupResultsRequest(hits=[codec.hit(h) for h in hits])
        if top_k is not None:
            req.top_k = top_k
        if measure is not None:
            req.near_text_measure = pb.NearTextMeasure.Value(
                "NEAR_TEXT_MEASURE_" + str(measure).upper())
        if max_hamming_distance is not None:
            req.max_hamming_distance = max_hamming_distance
        if min_jaccard is not None:
            req.min_jaccard = min_jaccard
        if min_cosine is not None:
            req.min_cosine = min_cosine
        if per_source_cap is not None:
            req.per_source_cap = per_source_cap
        resp = yield _Call("DedupResults", req)
        return codec.dedup_results_result(resp)

    def plan_stats(self, exact):
        resp = yield _Call("Admin.Stats", admin_pb2.StatsRequest(exact=exact))
        return codec.stats(resp)

    def plan_drop_namespace(self, namespace):
        resp = yield _Call("Admin.DropNamespace",
                           admin_pb2.DropNamespaceRequest(namespace=namespace))
        return resp.found

    def plan_forget(self, urls):
        # Not retried: a retry after a lost reply would report found=false.
        resp = yield _Call("Admin.Forget", admin_pb2.ForgetRequest(urls=list(urls)), retry=False)
        return [codec.to_dict(r) for r in resp.results]

    def plan_backup(self, directory):
        # Not retried: a retry after a lost reply would find its own directory.
        resp = yield _Call("Admin.Backup", admin_pb2.BackupRequest(directory=directory),
                           retry=False)
        return codec.to_dict(resp)


def _raw_url(given):
    if isinstance(given, dict):
        return given.get("url")
    if isinstance(given, tuple):
        return given[0]
    return getattr(given, "url", given)


# Method name -> (service, attribute of the stub).
METHODS = {
    "CheckUrl": ("dedup", "CheckUrl"),
    "CompleteUrls": ("dedup", "CompleteUrls"),
    "CheckContent": ("dedup", "CheckContent"),
    "CheckChunks": ("dedup", "CheckChunks"),
    "DedupResults": ("dedup", "DedupResults"),
    "Admin.Stats": ("admin", "Stats"),
    "Admin.DropNamespace": ("admin", "DropNamespace"),
    "Admin.Forget": ("admin", "Forget"),
    "Admin.Backup": ("admin", "Backup"),
}
