"""dedupd.scrapy in real Scrapy crawls (separate processes) of a small site
served on 127.0.0.1 by the test: tracking parameters, session ids, case and
port variants, trailing slashes, a mirror, print views with rel=canonical,
near versions and a preamble shared by every article."""
import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import dedupd

PREAMBLE = ("Example Press publishes these articles under a Creative Commons licence. "
            "Quote them freely, name the author and link to the original page, and tell "
            "us about mistakes through the contact form so that we can correct them.")
ARTICLES = range(1, 7)


def article_text(n):
    return "%s Article %d. %s" % (PREAMBLE, n, " ".join(
        "fact%d_%d" % (n, k) for k in range(80)))


NEWS = " ".join("story%d" % k for k in range(300))


class Site:
    """The test's web site. `served` lists (path, content key) per GET."""

    def __init__(self, delay=0.0):
        self.delay = delay
        self.served = []
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                key, body = site.page(self.path)
                if site.delay:
                    time.sleep(site.delay)
                with site.lock:
                    site.served.append((self.path, key))
                data = body.encode()
                self.send_response(200 if key else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.base = "http://127.0.0.1:%d" % self.port
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    @staticmethod
    def html(text, links, canonical=None):
        head = '<link rel="canonical" href="%s">' % canonical if canonical else ""
        nav = '<a href="/">Home</a> <a href="/about">About</a> <span>%s</span>' % time.time()
        body = "".join('<a href="%s">link</a> ' % l for l in links)
        return ("<html><head><title>t</title>%s</head><body><header>%s</header>"
                "<main><p>%s</p><p>%s</p></main><footer>Footer %s</footer></body></html>"
                % (head, nav, text, body, time.time()))

    def home_links(self, prefix=""):
        p, port = prefix, self.port
        return [p + "/article/1", p + "/article/1?utm_source=home&utm_medium=web",
                p + "/article/2?fbclid=xyz", p + "/article/2?PHPSESSID=abc123",
                "HTTP://127.0.0.1:%d%s/article/3" % (port, p),
                "http://127.0.0.1:0%d%s/article/4" % (port, p), p + "/article/5/",
                p + "/article/%36", p + "/article/6;jsessionid=S1D", p + "/about/",
                p + "/news/latest", p + "/news/today?sid=77", "/mirror/",
                p + "/article/3/print"]

    def page(self, path):
        raw = path
        path = urllib.parse.unquote(path.split("?")[0].split(";")[0]).rstrip("/") or "/"
        mirror = path.startswith("/mirror")
        prefix = "/mirror" if mirror else ""
        if mirror:
            path = path[len("/mirror"):] or "/"
        if path == "/":
            return "home", self.html("Welcome to Example Press, the home of six articles.",
                                     self.home_links(prefix))
        if path == "/about":
            return "about", self.html("About Example Press: who we are.", [])
        if path in ("/news/latest", "/news/today"):
            word = "Monday" if path.endswith("latest") else "Tuesday"
            return "news-" + path.rsplit("/", 1)[1], self.html(
                "News of %s. %s" % (word, NEWS), [prefix + "/article/1?utm_campaign=news"])
        parts = path.split("/")
        if len(parts) >= 3 and parts[1] == "article" and parts[2].isdigit() \
                and int(parts[2]) in ARTICLES:
            n = int(parts[2])
            links = [prefix + "/article/%d?ref=%d&utm_source=a" % (n % 6 + 1, n),
                     prefix + "/article/%d/print" % n]
            if len(parts) == 4 and parts[3] == "print":
                return "article-%d" % n, self.html(article_text(n), links,
                                                   canonical="/article/%d" % n)
            return "article-%d" % n, self.html(article_text(n), links)
        return None, "<html><body>not found: %s</body></html>" % raw


ALL_CONTENT = {"home", "about", "news-latest", "news-today"} | {
    "article-%d" % n for n in ARTICLES}

SPIDER = '''
import scrapy

class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, start="", **kw):
        super().__init__(**kw)
        self.start_urls = start.split(",")

    def parse(self, response):
        yield {"url": response.url,
               "text": " ".join(" ".join(response.css("main p::text").getall()).split())}
        for href in response.css("main a::attr(href), header a::attr(href)").getall():
            yield response.follow(href, self.parse)
'''

DEDUPD_SETTINGS = {
    "DUPEFILTER_CLASS": "dedupd.scrapy.DupeFilter",
    "SPIDER_MIDDLEWARES": json.dumps({"dedupd.scrapy.ContentMiddleware": 460,
                                      "dedupd.scrapy.UrlClaimMiddleware": 450}),
    "DOWNLOADER_MIDDLEWARES": json.dumps({"dedupd.scrapy.LeaseMiddleware": 950}),
    "ITEM_PIPELINES": json.dumps({"dedupd.scrapy.DedupItemPipeline": 300}),
}


@pytest.fixture
def site():
    s = Site()
    yield s
    s.close()


def crawl_command(tmp_path, site, name, settings, starts=("/",)):
    spider = tmp_path / "site_spider.py"
    spider.write_text(SPIDER)
    base = {"ROBOTSTXT_OBEY": "False", "TELNETCONSOLE_ENABLED": "False", "LOG_LEVEL": "INFO",
            "CONCURRENT_REQUESTS": "4", "DOWNLOAD_TIMEOUT": "20", "RETRY_TIMES": "1",
            "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
            "LOG_FILE": str(tmp_path / (name + ".log"))}
    base.update(settings)
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(spider),
           "-a", "start=" + ",".join(site.base + s for s in starts),
           "-O", str(tmp_path / (name + ".jl"))]
    for k, v in base.items():
        cmd += ["-s", "%s=%s" % (k, v)]
    return cmd


def run(cmd, timeout=180):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    assert p.returncode == 0, p.stdout
    return p


def items(tmp_path, name):
    with open(tmp_path / (name + ".jl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def dedupd_settings(server, namespace, **extra):
    s = dict(DEDUPD_SETTINGS, DEDUPD_ADDRESS=server.address, DEDUPD_NAMESPACE=namespace)
    s.update(extra)
    return s


def test_fewer_fetches_than_rfpdupefilter_and_no_page_missed(tmp_path, site, server):
    run(crawl_command(tmp_path, site, "rfp", {}))
    rfp = list(site.served)
    site.served.clear()
    run(crawl_command(tmp_path, site, "dedupd", dedupd_settings(server, "crawl-1")))
    dd = list(site.served)
    assert {k for _, k in rfp} == ALL_CONTENT
    assert {k for _, k in dd} == ALL_CONTENT, "a distinct page was missed"
    assert len(dd) < len(rfp), (len(dd), len(rfp))
    # the mirror's home is a copy of the home page: its links were not followed
    assert not [p for p, _ in dd if p.startswith("/mirror/article")]
    # one item per distinct text: the copies' items were dropped
    texts = [i["text"] for i in items(tmp_path, "dedupd")]
    assert len(texts) == len(set(texts)) == len(ALL_CONTENT)
    log = open(tmp_path / "dedupd.log").read()
    assert "dedupd/leases_confirmed" in log and "dedupd/errors" not in log
    print("pages fetched: RFPDupeFilter %d, dedupd %d" % (len(rfp), len(dd)))
    # Every claimed URL was confirmed: nothing is left leased.
    with dedupd.Client(server.address, namespace="crawl-1") as c:
        urls = [site.base + p for p, _ in dd]
        done = c.complete_urls(urls)
        assert all(r.verdict == "ALREADY_CONFIRMED" for r in done), done


def normalized_fetches(server, site):
    with dedupd.Client(server.address) as c:
        r = c.check_urls([site.base + p for p, _ in site.served], peek=True)
    return collections.Counter(x.normalized_url for x in r)


def test_two_processes_fetch_each_page_once_between_them(tmp_path, site, server):
    starts = ("/", "/about", "/news/latest", "/article/4")
    procs = [subprocess.Popen(crawl_command(tmp_path, site, "p%d" % i,
                                            dedupd_settings(server, "shared"), starts),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for i in range(2)]
    for p in procs:
        out, _ = p.communicate(timeout=180)
        assert p.returncode == 0, out
    counts = normalized_fetches(server, site)
    assert {k for _, k in site.served} == ALL_CONTENT
    twice = {u: n for u, n in counts.items() if n > 1}
    assert not twice, twice


def test_crawl_stopped_midway_and_resumed_with_jobdir_loses_no_page(tmp_path, server):
    site = Site(delay=0.2)
    try:
        settings = dedupd_settings(server, "resume", JOBDIR=str(tmp_path / "job"),
                                   CONCURRENT_REQUESTS="1")
        p = subprocess.Popen(crawl_command(tmp_path, site, "first", settings),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 60
        while len(site.served) < 5 and time.time() < deadline and p.poll() is None:
            time.sleep(0.05)
        assert p.poll() is None, "the crawl ended before it could be stopped"
        p.send_signal(signal.SIGTERM)  # Scrapy's graceful stop, as Ctrl-C
        out, _ = p.communicate(timeout=60)
        first = {k for _, k in site.served}
        assert first != ALL_CONTENT, "stopped too late to test a resume"
        assert os.path.isdir(tmp_path / "job")
        run(crawl_command(tmp_path, site, "second", settings))
        assert {k for _, k in site.served} == ALL_CONTENT, (first, site.served)
        twice = {u: n for u, n in normalized_fetches(server, site).items() if n > 1}
        assert not twice, twice
    finally:
        site.close()


def test_content_middleware_sends_the_page_thresholds(monkeypatch):
    """DEDUPD_MIN_JACCARD and DEDUPD_MAX_HAMMING_DISTANCE reach each page's
    Document (in-process: no server, no crawl)."""
    import types
    from scrapy.http import HtmlResponse, Request
    from scrapy.settings import Settings
    import dedupd.scrapy as ds

    sent = []

    class RecordingClient:
        def check_content(self, docs, **kw):
            sent.extend(docs)
            return [dedupd.ContentResult(verdict=dedupd.ContentVerdict.NEW)]

    monkeypatch.setattr(ds, "client_for", lambda crawler: RecordingClient())
    page = HtmlResponse(url="https://s.example/a", encoding="utf-8",
                        request=Request("https://s.example/a"),
                        body=b"<html><body><p>Some article text here.</p></body></html>")
    for settings, want in (({"DEDUPD_MIN_JACCARD": "0.9", "DEDUPD_MAX_HAMMING_DISTANCE": "4"},
                            (0.9, 4)),
                           ({}, (None, None))):
        crawler = types.SimpleNamespace(settings=Settings(settings),
                                        stats=types.SimpleNamespace(inc_value=lambda *a: None))
        ds.ContentMiddleware(crawler).process_spider_input(page, None)
        assert (sent[-1].min_jaccard, sent[-1].max_hamming_distance) == want
