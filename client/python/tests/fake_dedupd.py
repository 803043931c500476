"""An in-process fake of the dedupd.v1.Dedup service (CheckUrl and
CompleteUrls only) for the client's per-URL store error tests: no server
binary, no Redis, a store node "down" for the URLs a test picks.

It keys URLs by their bytes as sent (no normalization), as the C++ client's
fake does (client/testing/fake_dedup_service.h):
  - an empty url, or one starting with b"bad", is INVALID, BAD_URL;
  - CheckUrl: NEW, or SEEN (first_seen_time 2024-05-06T07:08:09Z) once a
    CLAIM recorded it, except that a CLAIM with the recording CLAIM's
    non-empty claim_id is answered NEW again (the server's idempotent retry);
    PEEK records nothing;
  - CompleteUrls: CONFIRMED for a recorded URL, else INVALID, NOT_CLAIMED;
  - store_down(url, times, after_write): the next `times` requests carrying
    `url` (every one for 0) cannot answer it. A request that sets
    per_item_store_errors gets it INVALID, STORE_UNAVAILABLE, error "fake:
    store node down", the rest answered; one that does not fails whole,
    UNAVAILABLE, as the server does. after_write: a CLAIM records it first
    (the node wrote it; its reply was lost);
  - fail_next(code): the next call fails with `code` (a FIFO script; None:
    that call is answered normally, so a later step hits a later call).
Every call is logged in `calls` as (method, request). Thread-safe.

Example:
    fake = FakeDedupd().start()
    fake.store_down(b"https://a.example/1", 1)
    dedupd.Client(fake.address).check_urls(["https://a.example/1"])  # NEW, 2 calls
    fake.stop()
"""
import threading
from concurrent import futures

import grpc

from dedupd.v1 import dedupd_pb2 as pb
from dedupd.v1 import dedupd_pb2_grpc

FIRST_SEEN_SECONDS = 1714979289


class FakeDedupd(dedupd_pb2_grpc.DedupServicer):
    def __init__(self):
        self._lock = threading.Lock()
        self.calls = []
        self._seen = {}        # url -> claim_id of the CLAIM that recorded it
        self._down = {}        # url -> [times left (0: every request), after_write]
        self._fail = []        # grpc.StatusCode of the next calls
        self._server = None
        self.address = None

    def start(self):
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        dedupd_pb2_grpc.add_DedupServicer_to_server(self, self._server)
        port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()
        self.address = "127.0.0.1:%d" % port
        return self

    def stop(self):
        self._server.stop(0).wait(10)

    def store_down(self, url, times, after_write=False):
        with self._lock:
            self._down[_b(url)] = [times, after_write]

    def fail_next(self, code):
        with self._lock:
            self._fail.append(code)

    def requests(self, method=None):
        with self._lock:
            return [r for m, r in self.calls if method is None or m == method]

    # ---- the service ----

    def _begin(self, method, request, context):
        copy = type(request)()
        copy.CopyFrom(request)
        self.calls.append((method, copy))
        code = self._fail.pop(0) if self._fail else None
        if code is not None:
            context.abort(code, "fake: failing as scripted")

    def _take_down(self, url):
        """None when `url` is answered this time, else its after_write."""
        d = self._down.get(url)
        if d is None:
            return None
        if d[0] > 0:
            d[0] -= 1
            if d[0] == 0:
                del self._down[url]
        return d[1]

    def _down_items(self, request, context):
        down = {}
        for i, item in enumerate(request.items):
            if _bad(item.url):
                continue
            after_write = self._take_down(item.url)
            if after_write is not None:
                down[i] = after_write
        if down and not request.per_item_store_errors:
            context.abort(grpc.StatusCode.UNAVAILABLE,
                          "fake: the store could not answer %d URLs" % len(down))
        return down

    def CheckUrl(self, request, context):
        with self._lock:
            self._begin("CheckUrl", request, context)
            down = self._down_items(request, context)
            claim = request.mode != pb.CLAIM_MODE_PEEK
            cid = request.claim_id
            resp = pb.CheckUrlResponse()
            for i, item in enumerate(request.items):
                r = resp.results.add()
                if _bad(item.url):
                    r.verdict, r.error = pb.URL_VERDICT_INVALID, "fake: invalid url"
                    r.error_reason = pb.ERROR_REASON_BAD_URL
                    continue
                r.normalized_url = item.url.decode("utf-8", "replace")
                if i in down:
                    if claim and down[i]:
                        self._seen.setdefault(item.url, cid)
                    r.verdict, r.error = pb.URL_VERDICT_INVALID, "fake: store node down"
                    r.error_reason = pb.ERROR_REASON_STORE_UNAVAILABLE
                    continue
                owner = self._seen.get(item.url)
                if owner is not None and not (claim and cid and owner == cid):
                    r.verdict = pb.URL_VERDICT_SEEN
                    r.first_seen_time.seconds = FIRST_SEEN_SECONDS
                else:
                    r.verdict = pb.URL_VERDICT_NEW
                    if claim:
                        self._seen.setdefault(item.url, cid)
            return resp

    def CompleteUrls(self, request, context):
        with self._lock:
            self._begin("CompleteUrls", request, context)
            down = self._down_items(request, context)
            resp = pb.CompleteUrlsResponse()
            for i, item in enumerate(request.items):
                r = resp.results.add()
                r.normalized_url = item.url.decode("utf-8", "replace")
                if _bad(item.url):
                    r.verdict, r.error = pb.COMPLETE_VERDICT_INVALID, "fake: invalid url"
                    r.error_reason = pb.ERROR_REASON_BAD_URL
                elif i in down:
                    r.verdict, r.error = pb.COMPLETE_VERDICT_INVALID, "fake: store node down"
                    r.error_reason = pb.ERROR_REASON_STORE_UNAVAILABLE
                elif item.url in self._seen:
                    r.verdict = pb.COMPLETE_VERDICT_CONFIRMED
                else:
                    r.verdict, r.error = pb.COMPLETE_VERDICT_INVALID, "fake: not claimed"
                    r.error_reason = pb.ERROR_REASON_NOT_CLAIMED
            return resp


def _b(url):
    return url.encode() if isinstance(url, str) else bytes(url)


def _bad(url):
    return not url or url.startswith(b"bad")
