"""dedupd.Client and dedupd.aio.Client against the real dedupd binary."""
import asyncio
import math
import os
import time

import pytest

import dedupd
from dedupd import (ChunkVerdict, CompleteVerdict, ContentVerdict, Document, UrlVerdict)
from dedupd_testing import DroppingProxy, Server


def client(server, **kw):
    kw.setdefault("timeout", 20)
    return dedupd.Client(server.address, **kw)


def test_check_urls_normalizes_claims_and_resolves(server):
    with client(server) as c:
        r = c.check_urls(["https://A.example/x?utm_source=1&b=2&a=1", "rel/page",
                          "https://a.example/x?a=1&b=2", ("../up", "https://b.example/d/p")],
                         base_url="https://a.example/dir/")
        assert [x.verdict for x in r] == ["NEW", "NEW", "SEEN", "NEW"]
        assert r[0].normalized_url == "https://a.example/x?a=1&b=2"
        assert r[0].url == "https://A.example/x?utm_source=1&b=2&a=1"  # as given
        assert r[1].normalized_url == "https://a.example/dir/rel/page"
        assert r[3].normalized_url == "https://b.example/up"
        assert r[0].should_fetch and not r[2].should_fetch
        assert r[2].first_seen == r[0].first_seen and r[0].first_seen is not None
        assert r[0].claim_id and r[2].claim_id == ""
        # peek records nothing
        p = c.check_urls(["https://a.example/peeked"], peek=True)
        assert p[0].verdict is UrlVerdict.NEW
        assert c.check_urls(["https://a.example/peeked"])[0].verdict is UrlVerdict.NEW


def test_namespaces_are_apart_and_drop_namespace(server):
    with client(server, namespace="crawl-a") as c:
        assert c.check_urls(["https://n.example/"])[0].verdict == "NEW"
        assert c.check_urls(["https://n.example/"])[0].verdict == "SEEN"
        assert c.check_urls(["https://n.example/"], namespace="crawl-b")[0].verdict == "NEW"
        assert c.check_urls(["https://n.example/"], namespace="")[0].verdict == "NEW"
        names = [n.name for n in c.stats().namespaces]
        assert "crawl-a" in names and "crawl-b" in names
        assert c.drop_namespace("crawl-a") is True
        assert c.check_urls(["https://n.example/"])[0].verdict == "NEW"
        with pytest.raises(dedupd.InvalidRequest) as e:
            c.check_urls(["https://n.example/"], namespace="no spaces")
        assert "namespace" in str(e.value) and not e.value.retryable


def test_leases_and_complete_urls(server):
    with client(server, namespace="lease") as c:
        r = c.check_urls(["https://l.example/1", "https://l.example/2"], lease_seconds=1)
        assert all(x.verdict is UrlVerdict.NEW and x.lease_expires for x in r)
        done = c.complete_urls(["https://l.example/1"], claim_id=r[0].claim_id)
        assert done[0].verdict is CompleteVerdict.CONFIRMED
        again = c.complete_urls(["https://l.example/1"], claim_id=r[0].claim_id)
        assert again[0].verdict is CompleteVerdict.ALREADY_CONFIRMED
        never = c.complete_urls(["https://l.example/never"])
        assert never[0].verdict is CompleteVerdict.INVALID
        assert never[0].error_reason == "NOT_CLAIMED"
        # /2 was not confirmed: once its lease ends it is NEW (reclaimed) again.
        deadline = time.time() + 20
        while True:
            x = c.check_urls(["https://l.example/2"], lease_seconds=60)[0]
            if x.verdict is UrlVerdict.NEW or time.time() > deadline:
                break
            time.sleep(0.2)
        assert x.verdict is UrlVerdict.NEW and x.reclaimed
        assert c.check_urls(["https://l.example/1"])[0].verdict is UrlVerdict.SEEN
        late = c.complete_urls(["https://l.example/2"], claim_id=r[1].claim_id)
        assert late[0].verdict is CompleteVerdict.INVALID
        assert late[0].error_reason == "LEASE_LOST"


def test_check_content_exact_near_canonical_and_document_ids(server):
    words = " ".join("word%d" % i for i in range(200))
    with client(server) as c:
        r = c.check_content([
            Document(url="https://c.example/a", text="The page text. " + words),
            {"url": "https://mirror.example/a", "text": "The page text. " + words},
            Document(url="https://c.example/print?a", canonical_url="/a",
                     text="The page text. " + words),
            Document(url="https://c.example/b", text="The page text. " + words + " extra"),
            Document(document_id="s3://bucket/key", text="A pipeline's own document."),
        ])
        assert [x.verdict for x in r] == ["NEW", "EXACT_DUPLICATE", "EXACT_DUPLICATE",
                                          "NEAR_DUPLICATE", "NEW"]
        assert r[1].owner == "https://c.example/a"
        assert "https://mirror.example/a" in r[1].alias_urls
        assert r[2].canonical_url == "https://c.example/a"
        assert r[3].near_matches[0].url == "https://c.example/a"
        assert r[3].near_matches[0].distance <= 3
        assert r[4].document_id == "s3://bucket/key" and r[4].owner == "s3://bucket/key"
        assert len(r[0].content_hash) == 64 and r[0].recrawl == "FIRST_SEEN"
        # the canonical URL and the fetched one are SEEN for check_urls
        u = c.check_urls(["https://c.example/a", "https://c.example/print?a"])
        assert [x.verdict for x in u] == ["SEEN", "SEEN"]
        changed = c.check_content([Document(url="https://c.example/a", text="New text now.")])
        assert changed[0].recrawl == "CHANGED"


# ~980 words of real prose (the Debian Python Policy), shared with the
# server's tests.
POLICY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "server",
                      "testdata", "python_policy_packaging.txt")


def substituted(text, every, first):
    """`text` with every `every`-th word (from the `first`-th) replaced by a
    word of its own: the server tests' deterministic 1/every edit."""
    words = text.split()
    for i in range(first, len(words), every):
        words[i] = "zq%d" % i
    return " ".join(words)


def test_check_content_near_by_jaccard_and_bad_min_jaccard(server):
    with open(POLICY, encoding="utf-8") as f:
        original = f.read()
    # 2% of the words replaced: SimHash moves past 3 bits, the 3-word
    # shingle Jaccard stays ~0.88, above the server's default 0.85.
    edited = substituted(original, 50, 7)
    with client(server, namespace="jaccard") as c:
        first = c.check_content([Document(url="https://j.example/policy", text=original)])
        assert first[0].verdict is ContentVerdict.NEW and first[0].applied_min_jaccard == 0.85
        r = c.check_content([Document(url="https://mirror.example/policy", text=edited)],
                            peek=True)[0]
        assert r.verdict is ContentVerdict.NEAR_DUPLICATE and r.applied_min_jaccard == 0.85
        m = r.near_matches[0]
        assert m.url == "https://j.example/policy" and m.distance > 3
        assert m.measure is dedupd.NearMeasure.JACCARD and m.measure == "JACCARD"
        assert 0.85 <= m.estimated_jaccard < 0.97
        # The call's min_jaccard is for documents that set none.
        strict = c.check_content([Document(url="https://mirror.example/policy", text=edited),
                                  {"url": "https://mirror.example/policy", "text": edited,
                                   "min_jaccard": 0.85}],
                                 peek=True, min_jaccard=0.99)
        assert [x.verdict for x in strict] == ["NEW", "NEAR_DUPLICATE"]
        assert [x.applied_min_jaccard for x in strict] == [0.99, 0.85]
        # Out of [--min_jaccard_floor, 1]: that document's INVALID only. A
        # text under 8 words is matched by SimHash only (applied 0).
        docs = c.check_content([Document(url="https://j.example/low", text="low",
                                         min_jaccard=0.5),
                                Document(url="https://j.example/high", text="high",
                                         min_jaccard=1.5),
                                Document(url="https://j.example/short", text="a short text")],
                               peek=True)
        assert [d.verdict for d in docs] == ["INVALID", "INVALID", "NEW"]
        assert [d.error_reason for d in docs[:2]] == ["BAD_MIN_JACCARD", "BAD_MIN_JACCARD"]
        assert "min_jaccard 0.5" in docs[0].error
        assert docs[2].applied_min_jaccard == 0


def test_chunk_results_carry_the_near_measure():
    from dedupd import _codec
    from dedupd.v1 import dedupd_pb2 as pb
    r = _codec.chunks_result(pb.CheckChunksResponse(results=[
        pb.ChunkResult(chunk_id="a", verdict=pb.CHUNK_VERDICT_NEAR_DUPLICATE, distance=9,
                       estimated_jaccard=0.875, near_measure=pb.NEAR_MEASURE_JACCARD,
                       applied_min_jaccard=0.8),
        pb.ChunkResult(chunk_id="b", verdict=pb.CHUNK_VERDICT_NEW)]))
    a, b = r.chunks
    assert (a.estimated_jaccard, a.near_measure, a.applied_min_jaccard) == (0.875, "JACCARD", 0.8)
    assert a.near_measure is dedupd.NearMeasure.JACCARD
    assert (b.estimated_jaccard, b.near_measure, b.applied_min_jaccard) == (0, "UNSPECIFIED", 0)
    req = _codec.content_item(Document(url="https://a/", text="t"), None, 0.9)
    assert req.HasField("min_jaccard") and req.min_jaccard == 0.9
    assert not _codec.content_item(Document(url="https://a/", text="t")).HasField("min_jaccard")


def test_check_chunks_provenance_and_removed_ids(server):
    with client(server) as c:
        first = c.check_chunks(["Shared preamble of every page here.", ("p2", "Body one.")],
                               document_url="https://k.example/1")
        assert [x.verdict for x in first.chunks] == ["NEW", "NEW"]
        assert first.chunks[0].chunk_id == "0" and first.chunks[1].chunk_id == "p2"
        second = c.check_chunks([dedupd.Chunk("Shared preamble of every page here.", "a"),
                                 dedupd.Chunk("Body two.", "b")], document_id="doc-2")
        assert second.chunks[0].verdict is ChunkVerdict.EXACT_DUPLICATE
        assert second.chunks[0].duplicate_of_document == "https://k.example/1"
        assert second.chunks[0].duplicate_of_chunk_id == "0"
        assert second.document_id == "doc-2"
        again = c.check_chunks([("a", "Shared preamble of every page here."),
                                ("c", "Body three.")], document_id="doc-2")
        assert again.removed_chunk_ids == ["b"] and again.replaced_chunks == 2
        with pytest.raises(ValueError):
            c.check_chunks(["x"])
        with pytest.raises(dedupd.InvalidRequest):
            c.check_chunks([], document_id="empty")


def test_dedup_results(server):
    with client(server) as c:
        r = c.dedup_results([
            dedupd.Hit("a", "Dedup keeps the index small.", 0.9, "https://a/"),
            {"id": "b", "text": "Dedup keeps the index small.", "score": 0.8},
            {"id": "c", "text": "Something else.", "score": 0.5},
            {"id": "bad", "text": "x", "score": math.nan},
        ], top_k=5)
        assert [k.id for k in r.kept] == ["a", "c"]
        assert r.dropped[0].id == "b" and r.dropped[0].duplicate_of == "a"
        assert r.dropped[0].reason == "DUPLICATE" and r.dropped[0].measure == "EXACT_TEXT"
        assert [x.id for x in r.rejected] == ["bad"] and r.rejected[0].error_reason == "BAD_HIT"
        j = c.dedup_results([{"id": "a", "text": "one two three four", "score": 1},
                             {"id": "b", "text": "one two three four five", "score": 0.5}],
                            measure="jaccard", min_jaccard=0.5)
        assert [k.id for k in j.kept] == ["a"] and j.dropped[0].measure == "JACCARD"


def test_bad_input_is_per_item_never_the_batch(server):
    with client(server) as c:
        r = c.check_urls(["https://ok.example/1", "", None, "mailto:x@y", "ftp://x/",
                          "https://bad.example/\udcff", b"https://bytes.example/\xff",
                          "https://" + "a" * 9000 + ".example/", "https://ok.example/2"])
        assert r[0].verdict is UrlVerdict.NEW and r[-1].verdict is UrlVerdict.NEW
        for x in r[1:-1]:
            assert x.verdict is UrlVerdict.INVALID and x.error and x.error_reason == "BAD_URL"
        assert r[5].url == "https://bad.example/\udcff"
        docs = c.check_content([Document(url="https://ok.example/1", text="fine text here"),
                                Document(url="https://ok.example/e", text="   "),
                                Document(url="https://ok.example/u", text="bad \udcff utf8"),
                                Document(url="not a url", text="text"),
                                Document(url="https://ok.example/d", text="t",
                                         max_hamming_distance=60)])
        assert docs[0].verdict is ContentVerdict.NEW
        assert [d.error_reason for d in docs[1:]] == [
            "BAD_TEXT", "BAD_TEXT", "BAD_URL", "DISTANCE_TOO_LARGE"]
        ch = c.check_chunks([("x", "one"), ("x", "two"), ("y", "bad \udcff")],
                            document_id="d")
        assert [x.verdict for x in ch.chunks] == ["NEW", "INVALID", "INVALID"]
        assert ch.chunks[1].error_reason == "BAD_CHUNK_ID"
        with pytest.raises(TypeError):
            c.check_urls([42])


def test_batching_across_the_server_limit(make_server):
    s = make_server(["--max_batch_items=50"])
    urls = ["https://batch.example/%d" % i for i in range(175)]
    with client(s, max_items_per_request=50) as c:
        r = c.check_urls(urls)
        assert [x.url for x in r] == urls
        assert all(x.verdict is UrlVerdict.NEW for x in r)
        assert len({x.claim_id for x in r}) == 4  # 50 + 50 + 50 + 25
        assert all(x.verdict is UrlVerdict.SEEN for x in c.check_urls(urls))
    # A client set for the default 10,000 learns the server's 50 from its
    # refusal (the refused request recorded nothing) and splits the rest.
    more = ["https://batch.example/more/%d" % i for i in range(120)]
    with client(s) as c:
        r = c.check_urls(more + urls)
        assert [x.verdict for x in r] == ["NEW"] * 120 + ["SEEN"] * 175
        assert c._s.learned_max_items == 50
        docs = [Document(url=u, text="text of page %d is here" % i) for i, u in enumerate(more)]
        assert all(d.verdict is ContentVerdict.NEW for d in c.check_content(docs))
        done = c.complete_urls(more)
        assert len(done) == 120
    with client(s, max_items_per_request=1000, max_request_bytes=300) as c:
        r = c.check_urls(["https://bytes.example/%d" % i for i in range(30)])
        assert len(r) == 30 and len({x.claim_id for x in r}) >= 3  # ~33 bytes an item


def test_retry_after_a_dropped_reply_is_answered_new_to_the_same_claim_id(server):
    proxy = DroppingProxy(server.port)
    try:
        with client(server, namespace="retry") as direct, \
                dedupd.Client(proxy.address, timeout=20, max_attempts=8,
                              initial_backoff=0.05, max_backoff=0.5, namespace="retry") as c:
            assert c.check_urls(["https://proxy.example/warm"])[0].verdict == "NEW"
            assert proxy.cuts == 0
            before = proxy.connections
            urls = ["https://proxy.example/lost/%d" % i for i in range(50)]
            sent = time.time()
            proxy.drop_next_reply()
            r = c.check_urls(urls, lease_seconds=600)
            assert proxy.cuts == 1, "the reply was not dropped"
            assert proxy.connections > before, "the retry did not reconnect"
            assert [x.verdict for x in r] == ["NEW"] * 50
            assert len({x.claim_id for x in r}) == 1
            first_seen = r[0].first_seen.timestamp()
            assert sent - 1 <= first_seen <= proxy.last_cut + 0.001
            # anyone else is told SEEN: the first attempt recorded them
            assert all(x.verdict == "SEEN" for x in direct.check_urls(urls))
            assert c.complete_urls(urls, claim_id=r[0].claim_id)[0].verdict == "CONFIRMED"
    finally:
        proxy.close()


def test_unavailable_after_the_attempts_and_kill_9_loses_no_claim(tmp_path):
    from dedupd_testing import free_port
    port = free_port()
    s = Server(str(tmp_path / "data"), listen="127.0.0.1:%d" % port).start()
    urls = ["https://crash.example/%d" % i for i in range(20)]
    try:
        with dedupd.Client(s.address, timeout=10, max_attempts=2, initial_backoff=0.05) as c:
            first = c.check_urls(urls, claim_id="worker-7-call-1")
            assert all(x.verdict == "NEW" for x in first)
            s.kill()  # after the write: the reply was delivered, but say it was not
            with pytest.raises(dedupd.Unavailable) as e:
                c.check_urls(urls, claim_id="worker-7-call-1")
            assert e.value.attempts == 2 and e.value.retryable
            s.start()  # same port, same data
        with dedupd.Client(s.address, timeout=10, max_attempts=8, initial_backoff=0.1) as c:
            again = c.check_urls(urls, claim_id="worker-7-call-1")
            assert [x.verdict for x in again] == ["NEW"] * 20
            assert again[0].first_seen == first[0].first_seen
            other = c.check_urls(urls, claim_id="worker-8-call-1")
            assert all(x.verdict == "SEEN" for x in other)
    finally:
        s.stop()


def test_deadline_exceeded(server):
    with dedupd.Client(server.address, timeout=0.000001) as c:
        with pytest.raises(dedupd.DeadlineExceeded):
            c.check_urls(["https://slow.example/"])


def test_aio_client_every_call(server):
    async def main():
        async with dedupd.aio.Client(server.address, namespace="aio", timeout=20) as c:
            r = await c.check_urls(["https://aio.example/", "bad url"], lease_seconds=60)
            assert [x.verdict for x in r] == ["NEW", "INVALID"]
            done = await c.complete_urls(["https://aio.example/"], claim_id=r[0].claim_id)
            assert done[0].verdict == "CONFIRMED"
            d = await c.check_content([Document(url="https://aio.example/", text="aio text")],
                                      min_jaccard=0.9)
            assert d[0].verdict == "NEW"
            bad = await c.check_content([Document(url="https://aio.example/b", text="b")],
                                        min_jaccard=0.1)
            assert bad[0].error_reason == "BAD_MIN_JACCARD"
            ch = await c.check_chunks(["aio chunk"], document_id="aio-doc", min_jaccard=0.9)
            assert ch.chunks[0].verdict == "NEW"
            h = await c.dedup_results([{"id": "a", "text": "t", "score": 1.0}])
            assert [k.id for k in h.kept] == ["a"]
            st = await c.stats()
            assert st.url_seen_mode == "exact"
            assert await c.drop_namespace("aio") is True
            with pytest.raises(dedupd.InvalidRequest):
                await c.check_urls(["https://x.example/"], lease_seconds=0)
    asyncio.run(main())


def test_aio_retry_after_a_dropped_reply(server):
    proxy = DroppingProxy(server.port)

    async def main():
        async with dedupd.aio.Client(proxy.address, timeout=20, max_attempts=8,
                                     initial_backoff=0.05) as c:
            await c.check_urls(["https://aio-proxy.example/warm"])
            proxy.drop_next_reply()
            r = await c.check_urls(["https://aio-proxy.example/%d" % i for i in range(10)])
            assert proxy.cuts == 1
            assert [x.verdict for x in r] == ["NEW"] * 10
    try:
        asyncio.run(main())
    finally:
        proxy.close()


def test_settings_are_checked():
    with pytest.raises(ValueError):
        dedupd.Client("127.0.0.1:1", max_attempts=0)
    with pytest.raises(ValueError):
        dedupd.Client("127.0.0.1:1", token="has space")
    with pytest.raises(ValueError):
        dedupd.Client("127.0.0.1:1", tls=dedupd.TLS(cert_file="c.pem"))
    with pytest.raises(ValueError):
        dedupd.Client("")


def test_content_claim_id_is_sent_when_the_proto_has_it():
    from dedupd import _codec
    from dedupd.v1 import dedupd_pb2 as pb
    req = pb.CheckContentRequest()
    has = "claim_id" in pb.CheckContentRequest.DESCRIPTOR.fields_by_name
    assert _codec.set_claim_id(req, "abc") is has
    assert _codec.set_claim_id(pb.CheckUrlRequest(), "abc") is True
