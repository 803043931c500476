"""dedupd.scrapy when dedupd's store cannot answer some URLs (a Redis node
down) even after the client's re-sends: such a URL is neither dropped as a
duplicate nor as a bad URL. In-process: the components with a stand-in
crawler, the real dedupd.Client, and the fake service (fake_dedupd.py)."""
import collections
import types

import grpc
import pytest
from scrapy.http import HtmlResponse, Request
from scrapy.settings import Settings

import dedupd
import dedupd.scrapy as ds
from fake_dedupd import FakeDedupd


@pytest.fixture
def fake():
    f = FakeDedupd().start()
    yield f
    f.stop()


def make_crawler(fake, **settings):
    stats = collections.Counter()
    crawler = types.SimpleNamespace(
        settings=Settings(dict({"DEDUPD_NAMESPACE": "crawl"}, **settings)),
        stats=types.SimpleNamespace(inc_value=lambda key, n=1, **kw: stats.update({key: n})),
        counts=stats)
    # client_for() returns the crawler's client when it has one.
    crawler._dedupd_client = dedupd.Client(fake.address, namespace="crawl", timeout=10,
                                           initial_backoff=0.001, max_backoff=0.002,
                                           max_store_attempts=3)
    return crawler


def test_dupefilter_lets_an_unanswered_url_through_unclaimed(fake):
    crawler = make_crawler(fake)
    f = ds.DupeFilter(crawler)
    seen_before = "https://s.example/seen"
    crawler._dedupd_client.check_urls([seen_before])
    fake.store_down("https://s.example/once", 1)
    fake.store_down("https://s.example/down", 0)

    assert f.request_seen(Request(seen_before)) is True
    once = Request("https://s.example/once")
    assert f.request_seen(once) is False and ds.CLAIM_META in once.meta  # answered NEW
    down = Request("https://s.example/down")
    assert f.request_seen(down) is False, "not a duplicate: it goes through"
    assert ds.CLAIM_META not in down.meta, "not claimed: no lease to confirm"
    assert crawler.counts["dedupd/store_unavailable"] == 1


def test_dupefilter_raises_unavailable_when_not_failing_open(fake):
    crawler = make_crawler(fake, DEDUPD_FAIL_OPEN=False)
    fake.store_down("https://s.example/down", 0)
    with pytest.raises(dedupd.Unavailable) as e:
        ds.DupeFilter(crawler).request_seen(Request("https://s.example/down"))
    assert "the store could not answer 1 URL(s)" in str(e.value)
    assert "still unavailable after 3 attempts" in str(e.value)
    # As for a call that fails UNAVAILABLE as a whole (every attempt).
    for _ in range(4):
        fake.fail_next(grpc.StatusCode.UNAVAILABLE)
    with pytest.raises(dedupd.Unavailable):
        ds.DupeFilter(crawler).request_seen(Request("https://s.example/other"))


def test_url_claim_middleware_keeps_unanswered_links_for_the_dupefilter(fake):
    crawler = make_crawler(fake)
    mw = ds.UrlClaimMiddleware(crawler)
    crawler._dedupd_client.check_urls(["https://s.example/seen"])
    fake.store_down("https://s.example/down", 0)
    page = HtmlResponse(url="https://s.example/", body=b"<html></html>", encoding="utf-8",
                        request=Request("https://s.example/"))
    links = [Request("https://s.example/seen"), Request("https://s.example/down"),
             Request("https://s.example/new")]
    out = list(mw.process_spider_output(page, links, None))
    assert [r.url for r in out] == ["https://s.example/down", "https://s.example/new"]
    assert ds.CLAIM_META not in out[0].meta and ds.CLAIM_META in out[1].meta
    assert crawler.counts["dedupd/links_store_unavailable"] == 1
    assert crawler.counts["dedupd/links_seen"] == 1
    assert crawler.counts["dedupd/links_claimed"] == 1
    # Unmarked, the link meets the DupeFilter, which claims it on its own.
    fake.store_down("https://s.example/down", 1)  # down once more, then back
    assert ds.DupeFilter(crawler).request_seen(out[0]) is False
    assert ds.CLAIM_META in out[0].meta


def test_start_requests_are_let_through_or_raise(fake):
    fake.store_down("https://s.example/start-down", 0)
    starts = [Request("https://s.example/start-down", dont_filter=True),
              Request("https://s.example/start-new", dont_filter=True)]
    crawler = make_crawler(fake)
    out = list(ds.UrlClaimMiddleware(crawler).process_start_requests(iter(starts), None))
    assert [r.url for r in out] == [r.url for r in starts]
    assert crawler.counts["dedupd/store_unavailable"] == 1
    crawler = make_crawler(fake, DEDUPD_FAIL_OPEN=False)
    with pytest.raises(dedupd.Unavailable):
        list(ds.UrlClaimMiddleware(crawler).process_start_requests(iter(starts[:1]), None))


def test_lease_middleware_keeps_unconfirmed_leases_for_the_next_batch(fake):
    crawler = make_crawler(fake)
    crawler.signals = types.SimpleNamespace(connect=lambda *a, **kw: None)
    mw = ds.LeaseMiddleware(crawler)
    claimed = crawler._dedupd_client.check_urls(["https://s.example/a", "https://s.example/b"])
    fake.store_down("https://s.example/b", 0)
    for r in claimed:
        req = Request(r.url, meta={ds.CLAIM_META: (r.url, r.claim_id)})
        mw.process_response(req, HtmlResponse(url=r.url, body=b"", request=req), None)
    mw.flush()
    assert crawler.counts["dedupd/leases_confirmed"] == 1
    assert crawler.counts["dedupd/leases_store_unavailable"] == 1
    assert mw.pending == {claimed[1].claim_id: ["https://s.example/b"]}
    fake.store_down("https://s.example/b", 1)  # back after one more failure
    mw.flush()
    assert crawler.counts["dedupd/leases_confirmed"] == 2 and mw.pending == {}
