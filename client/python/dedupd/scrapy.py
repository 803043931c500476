"""dedupd.scrapy: Scrapy integration (Scrapy >= 2.8).

Five lines in settings.py:

    DUPEFILTER_CLASS = "dedupd.scrapy.DupeFilter"
    SPIDER_MIDDLEWARES = {"dedupd.scrapy.ContentMiddleware": 460,
                          "dedupd.scrapy.UrlClaimMiddleware": 450}
    DOWNLOADER_MIDDLEWARES = {"dedupd.scrapy.LeaseMiddleware": 950}
    ITEM_PIPELINES = {"dedupd.scrapy.DedupItemPipeline": 300}
    DEDUPD_ADDRESS = "127.0.0.1:50051"

What each part does:
  DupeFilter          a drop-in for RFPDupeFilter: a request is new when dedupd
                      answers NEW (or DUE) for its URL in the namespace, so
                      every process of a crawl, on any machine, shares one
                      seen-set, which outlives JOBDIR and restarts. Requests
                      already claimed by UrlClaimMiddleware cost no RPC here.
  UrlClaimMiddleware  claims all requests a page yields in ONE CheckUrl batch
                      (base URL: the page) and drops the SEEN ones before they
                      reach the scheduler. Put it after OffsiteMiddleware (500)
                      in the output chain: a lower number.
  ContentMiddleware   sends each HTML response's main text and its
                      rel=canonical to CheckContent; the links of an exact
                      duplicate page (a mirror, a print view, a session-id
                      copy) are not followed. Its number must be higher than
                      UrlClaimMiddleware's so that it sees the output first.
                      The verdict is in response.meta["dedupd_content"].
  LeaseMiddleware     confirms each claimed URL's lease once its download
                      succeeded (any response but 5xx and 429, redirects
                      included); confirmations are sent in batches. A failed
                      download confirms nothing: the lease ends and the next
                      worker that finds the URL is answered NEW.
  DedupItemPipeline   drops items whose text another item already had.

Settings (all optional):
  DEDUPD_ADDRESS         host:port of dedupd. Default "127.0.0.1:50051".
  DEDUPD_NAMESPACE       the crawl's namespace. Default: the spider's name
                         (bytes other than letters, digits and "._-" become "-").
  DEDUPD_TLS             True: TLS with the system's roots. Default False
                         (True as well when a DEDUPD_TLS_* file is set).
  DEDUPD_TLS_CA_FILE, DEDUPD_TLS_CERT_FILE, DEDUPD_TLS_KEY_FILE,
  DEDUPD_TLS_SERVER_NAME  a private CA; mutual TLS; the certificate's name.
  DEDUPD_TOKEN, DEDUPD_TOKEN_FILE  bearer token (or the file holding it).
  DEDUPD_TIMEOUT         seconds per RPC attempt. Default 10.
  DEDUPD_LEASE_SECONDS   lease of every claim; 0: no lease (claims are final
                         at once). Default 600.
  DEDUPD_TEXT_EXTRACTOR  "lxml" (default, the rule in extract_main_text),
                         "readability" (python3-readability), or a dotted path
                         to a function(response) -> str.
  DEDUPD_MAX_HAMMING_DISTANCE  near-duplicate threshold for pages. Default:
                         the server's (3).
  DEDUPD_MIN_JACCARD     the estimated shingle Jaccard that also makes a page
                         near, in [the server's --min_jaccard_floor (0.8), 1].
                         Default: the server's (0.85).
  DEDUPD_ITEM_TEXT_FIELDS  the item fields whose text identifies an item.
                         Default: every str field but DEDUPD_ITEM_URL_FIELD.
  DEDUPD_ITEM_URL_FIELD  the item field naming its page. Default "url".
  DEDUPD_ITEM_DROP_NEAR  drop near-duplicate items too. Default False.
  DEDUPD_FAIL_OPEN       when dedupd cannot be reached: True (default) lets
                         requests through (a page may be fetched twice) and
                         logs an error; False raises.

A URL dedupd's store could not answer (--store=redis_cluster with a node
down: the client sends it again a few times first, max_store_attempts) is
neither a duplicate nor a bad URL, and it is not claimed. It is treated as
when dedupd cannot be reached, so one setting decides both: with
DEDUPD_FAIL_OPEN (the default) the request goes through as not seen,
unclaimed (no lease to confirm; another worker may fetch it too: a page
fetched twice, never one skipped), counted in `dedupd/store_unavailable` and
logged; with DEDUPD_FAIL_OPEN = False, dedupd.Unavailable is raised, as for a
call that failed UNAVAILABLE. The DupeFilter and the start requests
(which skip it) apply this. UrlClaimMiddleware only lets such a link
through unmarked (`dedupd/links_store_unavailable`): the DupeFilter then
claims it once more on its own and decides. A confirmation the store could
not take is kept for LeaseMiddleware's next batch
(`dedupd/leases_store_unavailable`): if the lease ends first, the URL is
fetched once more, as after a failed download.

Blocking: each RPC blocks the reactor for its round trip (one per page for
the outlinks, one for the content, and a batched confirmation): about a
millisecond against a dedupd on the same network.
"""
import importlib
import logging
import re
import time
import uuid

import grpc
from scrapy import signals
from scrapy.dupefilters import BaseDupeFilter
from scrapy.exceptions import DropItem, NotConfigured
from scrapy.http import HtmlResponse, Request

import dedupd
from dedupd.types import ContentVerdict, Document, UrlVerdict

logger = logging.getLogger(__name__)

__all__ = ["DupeFilter", "UrlClaimMiddleware", "ContentMiddleware", "LeaseMiddleware",
           "DedupItemPipeline", "extract_main_text", "extract_canonical"]

# request.meta key: (url, claim_id) of the claim made for this request's URL.
CLAIM_META = "dedupd_claim"
CONTENT_META = "dedupd_content"


def namespace_for(crawler, spider=None):
    ns = crawler.settings.get("DEDUPD_NAMESPACE")
    if ns is None:
        name = getattr(spider or crawler.spider, "name", None) or "scrapy"
        ns = re.sub(r"[^A-Za-z0-9._-]", "-", name)[:64]
    return ns


def client_for(crawler):
    """One dedupd.Client per crawler, shared by every component."""
    c = getattr(crawler, "_dedupd_client", None)
    if c is not None:
        return c
    s = crawler.settings
    tls = None
    files = [s.get("DEDUPD_TLS_CA_FILE"), s.get("DEDUPD_TLS_CERT_FILE"),
             s.get("DEDUPD_TLS_KEY_FILE")]
    if s.getbool("DEDUPD_TLS") or any(files) or s.get("DEDUPD_TLS_SERVER_NAME"):
        tls = dedupd.TLS(ca_file=files[0], cert_file=files[1], key_file=files[2],
                         server_name=s.get("DEDUPD_TLS_SERVER_NAME"))
    token = s.get("DEDUPD_TOKEN")
    if not token and s.get("DEDUPD_TOKEN_FILE"):
        token = dedupd.read_token_file(s.get("DEDUPD_TOKEN_FILE"))
    c = dedupd.Client(s.get("DEDUPD_ADDRESS", "127.0.0.1:50051"), tls=tls, token=token or None,
                      namespace=namespace_for(crawler), timeout=s.getfloat("DEDUPD_TIMEOUT", 10))
    crawler._dedupd_client = c
    crawler.signals.connect(lambda: c.close(), signal=signals.engine_stopped)
    return c


def _lease(crawler):
    seconds = crawler.settings.getint("DEDUPD_LEASE_SECONDS", 600)
    return seconds if seconds > 0 else None


def _fail_open(crawler, what, error):
    crawler.stats.inc_value("dedupd/errors")
    if not crawler.settings.getbool("DEDUPD_FAIL_OPEN", True):
        raise error
    logger.error("dedupd: %s failed, letting it through: %s", what, error)


def _store_unavailable(crawler, what, results):
    """The results the store could not answer (STORE_UNAVAILABLE after the
    client's re-sends) are let through as not seen, counted and logged, or,
    with DEDUPD_FAIL_OPEN = False, raise dedupd.Unavailable: the same choice
    as for a call that failed UNAVAILABLE (_fail_open). Returns how many."""
    failed = [r for r in results if r.store_unavailable]
    if not failed:
        return 0
    crawler.stats.inc_value("dedupd/store_unavailable", len(failed))
    message = "%s: the store could not answer %d URL(s): %s" % (what, len(failed),
                                                                failed[0].error)
    if not crawler.settings.getbool("DEDUPD_FAIL_OPEN", True):
        raise dedupd.Unavailable(message, code=grpc.StatusCode.UNAVAILABLE, method="CheckUrl",
                                 details=failed[0].error)
    logger.error("dedupd: %s; letting them through", message)
    return len(failed)


def _mark(request, result):
    request.meta[CLAIM_META] = (request.url, result.claim_id)


class DupeFilter(BaseDupeFilter):
    """Drop-in for scrapy.dupefilters.RFPDupeFilter backed by dedupd."""

    def __init__(self, crawler, debug=False):
        self.crawler = crawler
        self.debug = debug
        self.logdupes = True

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler, debug=crawler.settings.getbool("DUPEFILTER_DEBUG"))

    @property
    def client(self):
        return client_for(self.crawler)

    def request_seen(self, request):
        claim = request.meta.get(CLAIM_META)
        if claim is not None and claim[0] == request.url:
            return False  # claimed NEW in the page's batch
        try:
            r = self.client.check_urls([request.url], lease_seconds=_lease(self.crawler))[0]
        except dedupd.DedupdError as e:
            _fail_open(self.crawler, "CheckUrl of %s" % request.url, e)
            return False
        if r.should_fetch:
            _mark(request, r)
            return False
        if r.store_unavailable:
            _store_unavailable(self.crawler, "CheckUrl of %s" % request.url, [r])
            return False  # not seen: fetched unclaimed (see the module doc)
        return r.verdict is not UrlVerdict.INVALID  # INVALID: let Scrapy report it

    def log(self, request, spider):
        if self.debug:
            logger.debug("Filtered duplicate request (dedupd): %(request)s",
                         {"request": request}, extra={"spider": spider})
        elif self.logdupes:
            logger.debug("Filtered duplicate request (dedupd): %(request)s - no more "
                         "duplicates will be shown (see DUPEFILTER_DEBUG to show all)",
                         {"request": request}, extra={"spider": spider})
            self.logdupes = False
        spider.crawler.stats.inc_value("dupefilter/filtered", spider=spider)


class UrlClaimMiddleware:
    """Spider middleware: one CheckUrl batch per page for the requests it yields."""

    def __init__(self, crawler):
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def _claim(self, requests, base_url):
        """Claims `requests` in one batch; returns the indices to drop (SEEN)."""
        try:
            return client_for(self.crawler).check_urls(
                [r.url for r in requests], base_url=base_url,
                lease_seconds=_lease(self.crawler))
        except dedupd.DedupdError as e:
            _fail_open(self.crawler, "CheckUrl of %d links of %s" % (len(requests), base_url), e)
            return []

    def process_start_requests(self, start_requests, spider):
        """Start requests are claimed too (Scrapy sends them with
        dont_filter=True, so that a run always fetches them): with a fleet or a
        resumed crawl, each is fetched once in the namespace.
        DEDUPD_CLAIM_START_REQUESTS = False keeps Scrapy's behaviour. Claimed
        in batches of up to 100 as Scrapy consumes them."""
        if not self.crawler.settings.getbool("DEDUPD_CLAIM_START_REQUESTS", True):
            yield from start_requests
            return
        batch = []
        for r in start_requests:
            batch.append(r)
            if len(batch) >= 100:
                yield from self._start_batch(batch)
                batch = []
        yield from self._start_batch(batch)

    def _start_batch(self, batch):
        reqs = [r for r in batch if isinstance(r, Request) and CLAIM_META not in r.meta]
        results = self._claim(reqs, None) if reqs else []
        # Start requests skip the DupeFilter (dont_filter): decide here.
        _store_unavailable(self.crawler, "CheckUrl of start requests", results)
        seen = set()
        for r, res in zip(reqs, results):
            if res.should_fetch:
                _mark(r, res)
            elif res.verdict is not UrlVerdict.INVALID:
                seen.add(id(r))
        self.crawler.stats.inc_value("dedupd/start_requests_seen", len(seen))
        for r in batch:
            if id(r) not in seen:
                yield r

    def process_spider_output(self, response, result, spider):
        out = list(result)
        idx = [i for i, r in enumerate(out) if isinstance(r, Request) and not r.dont_filter
               and CLAIM_META not in r.meta]
        drop = set()
        if idx:
            results = self._claim([out[i] for i in idx], response.url)
            stats = self.crawler.stats
            unanswered = 0
            for i, r in zip(idx, results):
                if r.should_fetch:
                    _mark(out[i], r)
                elif r.store_unavailable:
                    unanswered += 1  # unmarked: the DupeFilter claims it again
                elif r.verdict is not UrlVerdict.INVALID:
                    drop.add(i)
            stats.inc_value("dedupd/links_claimed", len(results) - len(drop) - unanswered)
            stats.inc_value("dedupd/links_seen", len(drop))
            if unanswered:
                stats.inc_value("dedupd/links_store_unavailable", unanswered)
        for i, r in enumerate(out):
            if i not in drop:
                yield r

    # Scrapy >= 2.7 calls this for asynchronous callbacks.
    async def process_spider_output_async(self, response, result, spider):
        items = [r async for r in result]
        for r in self.process_spider_output(response, items, spider):
            yield r


# ---- main text ----

_DROP_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "nav", "header",
              "footer", "aside", "form", "button", "select", "head")
_DROP_ROLES = ("navigation", "banner", "contentinfo", "complementary", "search")


def extract_canonical(response):
    """The page's <link rel="canonical" href> made absolute, or None."""
    for link in response.xpath("//link[@rel and @href]"):
        rel = (link.attrib.get("rel") or "").lower().split()
        if "canonical" in rel:
            return response.urljoin(link.attrib["href"].strip())
    return None


def extract_main_text(response):
    """The page's main text by this rule (lxml, no guessing):
      1. drop script, style, noscript, template, svg, iframe, nav, header,
         footer, aside, form, button, select, and every element with
         role=navigation|banner|contentinfo|complementary|search, or with the
         hidden attribute or aria-hidden="true";
      2. take the first <main> (or role=main); else the only <article>; else
         <body>;
      3. its text, whitespace runs collapsed to one space.
    Site chrome outside <main> (menus, footers, cookie banners in <aside> or
    <footer>) so never makes two copies of a page differ."""
    import lxml.html
    try:
        root = lxml.html.document_fromstring(response.text)
    except Exception:  # lxml: empty document, undecodable bytes
        return ""
    for el in root.xpath("//*[self::%s] | //*[@role][contains(' %s ', concat(' ', @role, ' '))]"
                         " | //*[@hidden] | //*[@aria-hidden='true']"
                         % (" or self::".join(_DROP_TAGS), " ".join(_DROP_ROLES))):
        if el.getparent() is not None:
            el.drop_tree()
    main = root.xpath("//main | //*[@role='main']")
    if main:
        node = main[0]
    else:
        articles = root.xpath("//article")
        node = articles[0] if len(articles) == 1 else (root.find("body") or root)
    return " ".join(" ".join(node.itertext()).split())


def _readability_text(response):
    import lxml.html
    from readability import Document as ReadabilityDocument
    summary = ReadabilityDocument(response.text).summary(html_partial=True)
    return " ".join(" ".join(lxml.html.fromstring(summary).itertext()).split())


def _extractor(setting):
    if not setting or setting == "lxml":
        return extract_main_text
    if setting == "readability":
        return _readability_text
    if callable(setting):
        return setting
    module, _, name = setting.rpartition(".")
    return getattr(importlib.import_module(module), name)


class ContentMiddleware:
    """Spider middleware: CheckContent of each HTML response's main text."""

    def __init__(self, crawler):
        self.crawler = crawler
        s = crawler.settings
        self.extract = _extractor(s.get("DEDUPD_TEXT_EXTRACTOR"))
        self.distance = s.get("DEDUPD_MAX_HAMMING_DISTANCE")
        min_jaccard = s.get("DEDUPD_MIN_JACCARD")
        self.min_jaccard = float(min_jaccard) if min_jaccard not in (None, "") else None

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def process_spider_input(self, response, spider):
        if not isinstance(response, HtmlResponse) or response.status != 200:
            return None
        text = self.extract(response)
        if not text:
            return None
        h = response.headers
        doc = Document(url=response.url, canonical_url=extract_canonical(response), text=text,
                       etag=(h.get(b"ETag") or b"").decode("latin-1") or None,
                       last_modified=(h.get(b"Last-Modified") or b"").decode("latin-1") or None,
                       max_hamming_distance=int(self.distance) if self.distance else None,
                       min_jaccard=self.min_jaccard)
        try:
            r = client_for(self.crawler).check_content([doc])[0]
        except dedupd.DedupdError as e:
            _fail_open(self.crawler, "CheckContent of %s" % response.url, e)
            return None
        response.meta[CONTENT_META] = r
        self.crawler.stats.inc_value("dedupd/content/%s" % r.verdict.value.lower())
        return None

    def process_spider_output(self, response, result, spider):
        r = response.meta.get(CONTENT_META)
        if r is None or r.verdict is not ContentVerdict.EXACT_DUPLICATE or (
                r.owner_url and r.owner_url == r.canonical_url):
            yield from result
            return
        dropped = 0
        for x in result:
            if isinstance(x, Request) and not x.dont_filter:
                dropped += 1
                continue
            yield x
        if dropped:
            self.crawler.stats.inc_value("dedupd/links_of_exact_duplicates", dropped)
            logger.debug("dedupd: %s is a copy of %s: not following its %d links",
                         response.url, r.owner_url or r.owner_document_id, dropped)

    async def process_spider_output_async(self, response, result, spider):
        items = [r async for r in result]
        for r in self.process_spider_output(response, items, spider):
            yield r


class LeaseMiddleware:
    """Downloader middleware: confirms the leases of downloaded URLs, batched
    (at most `DEDUPD_CONFIRM_BATCH`, 100, URLs or `DEDUPD_CONFIRM_SECONDS`, 2 s,
    waiting; the rest when the spider closes)."""

    def __init__(self, crawler):
        if _lease(crawler) is None:
            raise NotConfigured("DEDUPD_LEASE_SECONDS is 0: no leases to confirm")
        self.crawler = crawler
        self.batch = crawler.settings.getint("DEDUPD_CONFIRM_BATCH", 100)
        self.wait = crawler.settings.getfloat("DEDUPD_CONFIRM_SECONDS", 2.0)
        self.pending = {}  # claim_id -> [url]
        self.count = 0
        self.oldest = None
        crawler.signals.connect(self.flush, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def process_response(self, request, response, spider):
        claim = request.meta.get(CLAIM_META)
        if claim is not None and claim[0] == request.url and response.status < 500 \
                and response.status != 429:
            self.pending.setdefault(claim[1], []).append(claim[0])
            self.count += 1
            if self.oldest is None:
                self.oldest = time.monotonic()
            if self.count >= self.batch or time.monotonic() - self.oldest >= self.wait:
                self.flush()
        return response

    def flush(self, *args, **kwargs):
        pending, self.pending, self.count, self.oldest = self.pending, {}, 0, None
        c = client_for(self.crawler)
        stats = self.crawler.stats
        for claim_id, urls in pending.items():
            try:
                results = c.complete_urls(urls, claim_id=claim_id)
            except dedupd.DedupdError as e:
                _fail_open(self.crawler, "CompleteUrls of %d URLs" % len(urls), e)
                continue
            lost = sum(1 for r in results if r.error_reason == "LEASE_LOST")
            # Not confirmed, the store could not take it now: next batch
            # (until its lease ends; then the URL is fetched once more).
            again = [(u, r) for u, r in zip(urls, results) if r.store_unavailable]
            stats.inc_value("dedupd/leases_confirmed", len(results) - lost - len(again))
            if lost:
                stats.inc_value("dedupd/leases_lost", lost)
            if again:
                stats.inc_value("dedupd/leases_store_unavailable", len(again))
                logger.warning("dedupd: the store could not confirm %d leases now: %s; "
                               "trying again with the next batch", len(again), again[0][1].error)
                self.pending.setdefault(claim_id, []).extend(u for u, _ in again)
                self.count += len(again)
                if self.oldest is None:
                    self.oldest = time.monotonic()


class DedupItemPipeline:
    """Drops an item whose text (DEDUPD_ITEM_TEXT_FIELDS) another item with
    another URL already had: CheckContent in the namespace "<namespace>.items"."""

    def __init__(self, crawler):
        self.crawler = crawler
        s = crawler.settings
        self.fields = s.getlist("DEDUPD_ITEM_TEXT_FIELDS") or None
        self.url_field = s.get("DEDUPD_ITEM_URL_FIELD", "url")
        self.drop_near = s.getbool("DEDUPD_ITEM_DROP_NEAR", False)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def process_item(self, item, spider):
        from itemadapter import ItemAdapter
        a = ItemAdapter(item)
        names = self.fields or sorted(k for k, v in a.items()
                                      if isinstance(v, str) and k != self.url_field)
        text = "\n".join(str(a.get(k)) for k in names if a.get(k))
        if not text.strip():
            return item
        url = a.get(self.url_field) if self.url_field in a else None
        doc = Document(text=text, url=url) if url else Document(
            text=text, document_id="item:" + uuid.uuid4().hex)
        ns = (namespace_for(self.crawler, spider) + ".items")[-64:]
        try:
            r = client_for(self.crawler).check_content([doc], namespace=ns)[0]
        except dedupd.DedupdError as e:
            _fail_open(self.crawler, "CheckContent of an item", e)
            return item
        own = r.canonical_url or r.document_id
        if r.verdict is ContentVerdict.EXACT_DUPLICATE and r.owner != own or (
                self.drop_near and r.verdict is ContentVerdict.NEAR_DUPLICATE):
            self.crawler.stats.inc_value("dedupd/items_dropped")
            raise DropItem("duplicate of the item of %s (dedupd %s)"
                           % (r.owner, r.verdict.value))
        return item


