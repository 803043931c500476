"""check_urls and complete_urls with a store node down (per_item_store_errors):
the URLs answered STORE_UNAVAILABLE are sent again and answered in their
places; those still unanswered after the bound come back as such. Against
the in-process fake service (fake_dedupd.py)."""
import asyncio
import time

import grpc
import pytest

import dedupd
from dedupd import CompleteVerdict, UrlVerdict
from fake_dedupd import FakeDedupd

FAST = dict(timeout=10, initial_backoff=0.001, max_backoff=0.002)


@pytest.fixture
def fake():
    f = FakeDedupd().start()
    yield f
    f.stop()


def urls(n):
    return ["https://example.com/%d" % i for i in range(n)]


def sent_urls(request):
    return [i.url.decode() for i in request.items]


def test_store_unavailable_urls_are_sent_again_and_answered_in_place(fake):
    u = urls(6)
    fake.store_down(u[1], 1)   # answered on the second send
    fake.store_down(u[2], 2)   # on the third
    fake.store_down(u[4], 1)   # in the call's second request
    with dedupd.Client(fake.address, max_items_per_request=3, namespace="crawl-9",
                       **FAST) as c:
        r = c.check_urls(u, lease_seconds=60)
    assert [x.url for x in r] == u
    assert [x.normalized_url for x in r] == u
    assert all(x.verdict is UrlVerdict.NEW and not x.store_unavailable for x in r), r
    reqs = fake.requests("CheckUrl")
    assert [sent_urls(q) for q in reqs] == [u[0:3], [u[1], u[2]], [u[2]], u[3:6], [u[4]]]
    for q in reqs:
        assert q.per_item_store_errors
        assert q.mode == dedupd.v1.dedupd_pb2.CLAIM_MODE_CLAIM
        assert q.namespace == "crawl-9" and q.lease_seconds == 60
    # A re-send carries its request's claim id; the next request has its own.
    assert reqs[1].claim_id == reqs[2].claim_id == reqs[0].claim_id
    assert reqs[4].claim_id == reqs[3].claim_id != reqs[0].claim_id
    assert r[1].claim_id == r[0].claim_id == reqs[0].claim_id.decode()


def test_a_claim_written_before_the_store_failed_is_new_on_the_resend(fake):
    u = urls(2)
    fake.store_down(u[0], 1, after_write=True)
    with dedupd.Client(fake.address, **FAST) as c:
        assert [x.verdict for x in c.check_urls(u)] == ["NEW", "NEW"]
        assert len(fake.requests()) == 2
        # Any other claim is told SEEN: only the same claim id gets NEW back.
        assert c.check_urls(u[:1])[0].verdict is UrlVerdict.SEEN


def test_a_url_still_unavailable_after_the_attempts_comes_back_as_such(fake):
    u = urls(3) + ["bad:url"]
    fake.store_down(u[1], 0)   # down for good
    with dedupd.Client(fake.address, max_store_attempts=3, **FAST) as c:
        r = c.check_urls(u)
    assert [x.verdict for x in r] == ["NEW", "INVALID", "NEW", "INVALID"]
    assert r[1].store_unavailable and not r[1].should_fetch and r[1].claim_id == ""
    assert r[1].error_reason == "STORE_UNAVAILABLE"
    assert r[1].error == "fake: store node down (CheckUrl: still unavailable after 3 attempts)"
    assert r[1].url == r[1].normalized_url == u[1]
    assert r[3].error_reason == "BAD_URL" and not r[3].store_unavailable
    assert [sent_urls(q) for q in fake.requests()] == [u, [u[1]], [u[1]]]


def test_the_time_bound_ends_the_resends(fake):
    u = urls(2)
    fake.store_down(u[0], 0)
    with dedupd.Client(fake.address, max_store_attempts=1000, max_store_retry_time=0,
                       **FAST) as c:
        r = c.check_urls(u, peek=True)
    assert r[0].store_unavailable and "after 1 attempts" in r[0].error
    assert r[1].verdict is UrlVerdict.NEW
    assert len(fake.requests()) == 1
    with dedupd.Client(fake.address, max_store_attempts=1000, max_store_retry_time=0.05,
                       **FAST) as c:
        start = time.monotonic()
        r = c.check_urls(u, peek=True)
        assert time.monotonic() - start < 5
    assert r[0].store_unavailable
    assert 1 < len(fake.requests()) - 1 < 1000


def test_a_resend_that_fails_unavailable_leaves_the_url_unanswered(fake):
    u = urls(3)
    fake.store_down(u[2], 1)
    # The request is answered; its re-send fails UNAVAILABLE on both of its
    # attempts (a front end restarting): the URL stays STORE_UNAVAILABLE and
    # the call succeeds with the others' answers.
    for code in (None, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE):
        fake.fail_next(code)
    with dedupd.Client(fake.address, max_attempts=2, **FAST) as c:
        r = c.check_urls(u)
        assert [x.verdict for x in r[:2]] == ["NEW", "NEW"] and r[2].store_unavailable
        assert len(fake.requests()) == 3
        # Any other error of a re-send fails the call, with what was answered.
        fake.store_down(u[0], 1)
        fake.fail_next(None)
        fake.fail_next(grpc.StatusCode.INVALID_ARGUMENT)
        with pytest.raises(dedupd.InvalidRequest) as e:
            c.check_urls(u, peek=True)
        assert [x.url for x in e.value.partial_results] == u


def test_complete_urls_sends_store_unavailable_urls_again(fake):
    u = urls(3)
    with dedupd.Client(fake.address, max_store_attempts=2, **FAST) as c:
        c.check_urls(u)
        fake.store_down(u[0], 1)
        fake.store_down(u[2], 0)
        done = c.complete_urls(u, namespace="ns", claim_id="id-1")
    assert [d.verdict for d in done] == [CompleteVerdict.CONFIRMED, CompleteVerdict.CONFIRMED,
                                         CompleteVerdict.INVALID]
    assert done[2].store_unavailable and done[2].error_reason == "STORE_UNAVAILABLE"
    assert "CompleteUrls: still unavailable after 2 attempts" in done[2].error
    reqs = fake.requests("CompleteUrls")
    assert [sent_urls(q) for q in reqs] == [u, [u[0], u[2]]]
    assert all(q.per_item_store_errors and q.namespace == "ns" and q.claim_id == b"id-1"
               for q in reqs)


def test_aio_client_sends_again_too(fake):
    u = urls(4)
    fake.store_down(u[1], 1)
    fake.store_down(u[3], 0)

    async def go():
        async with dedupd.aio.Client(fake.address, max_store_attempts=3, **FAST) as c:
            return await c.check_urls(u)

    r = asyncio.run(go())
    assert [x.verdict for x in r] == ["NEW", "NEW", "NEW", "INVALID"]
    assert r[3].store_unavailable and "after 3 attempts" in r[3].error
    assert [sent_urls(q) for q in fake.requests()] == [u, [u[1], u[3]], [u[3]]]


def test_store_retry_settings_are_checked():
    with pytest.raises(ValueError):
        dedupd.Client("127.0.0.1:1", max_store_attempts=0)
    with pytest.raises(ValueError):
        dedupd.Client("127.0.0.1:1", max_store_retry_time=-1)
