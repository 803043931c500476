#!/usr/bin/python3
"""Per-page overhead of dedupd.scrapy against Scrapy alone, in one run.

Serves a generated site of --pages distinct HTML pages on 127.0.0.1 (each
~2 KB of text in <main>, linking to --links other pages, so every page is
found many times and no page is a copy of another), starts DEDUPD (a dedupd
binary) on 127.0.0.1 port 0, and crawls the site with `scrapy runspider`
alternately with Scrapy's own RFPDupeFilter ("scrapy") and with
dedupd.scrapy's DupeFilter, UrlClaimMiddleware, ContentMiddleware,
LeaseMiddleware (leases on) and DedupItemPipeline ("dedupd"), --rounds
times each, a fresh namespace per dedupd crawl. Both crawls fetch every
page once, so the difference is dedupd's cost, not its savings. Prints one
line per crawl and a summary:
  scrapy_overhead pages=N rounds=R scrapy_ms_per_page=A dedupd_ms_per_page=B
      overhead_ms_per_page=B-A scrapy_cpu_ms_per_page=.. dedupd_cpu_ms_per_page=..
(medians over the rounds; cpu = the Scrapy process's user+sys time).
Run from a venv the package is installed in:
  build/python-venv/bin/python bench/python/scrapy_bench.py --dedupd=build/server/dedupd
"""
import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from client_bench import start as start_dedupd  # the same server start, beside this file

SPIDER = '''
import scrapy

class SiteSpider(scrapy.Spider):
    name = "bench"

    def __init__(self, start="", **kw):
        super().__init__(**kw)
        self.start_urls = [start]

    def parse(self, response):
        yield {"url": response.url, "words": len(response.css("main p::text").get("").split())}
        for href in response.css("main a::attr(href)").getall():
            yield response.follow(href, self.parse)
'''

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
         "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo"]


def make_site(pages, links, seed=1):
    rng = random.Random(seed)
    site = {}
    for p in range(pages):
        # Distinct text per page: its number in every sentence, random words.
        text = " ".join("page%d %s" % (p, rng.choice(WORDS)) for _ in range(180))
        outs = "".join('<a href="/p/%d">l</a> ' % rng.randrange(pages) for _ in range(links))
        site["/p/%d" % p] = ("<html><head><title>p%d</title></head><body><main><p>%s</p>"
                             "<p>%s</p></main></body></html>" % (p, text, outs)).encode()
    # The start page links to every page once, so each crawl reaches all.
    site["/"] = ("<html><body><main><p>start</p><p>%s</p></main></body></html>" % "".join(
        '<a href="/p/%d">l</a> ' % p for p in range(pages))).encode()
    return site


def serve(site):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = site.get(self.path.split("?")[0])
            self.send_response(200 if body else 404)
            body = body or b"not found"
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def crawl(workdir, base, settings, name):
    spider = os.path.join(workdir, "bench_spider.py")
    with open(spider, "w") as f:
        f.write(SPIDER)
    out = os.path.join(workdir, name + ".jl")
    all_settings = {"ROBOTSTXT_OBEY": "False", "TELNETCONSOLE_ENABLED": "False",
                    "LOG_LEVEL": "WARNING", "CONCURRENT_REQUESTS": "16",
                    "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7"}
    all_settings.update(settings)
    cmd = [sys.executable, "-m", "scrapy", "runspider", spider, "-a", "start=" + base + "/",
           "-O", out]
    for k, v in all_settings.items():
        cmd += ["-s", "%s=%s" % (k, v)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, timeout=600, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(out) as f:
        pages = sum(1 for line in f if line.strip())
    os.remove(out)
    return wall, cpu, pages


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dedupd", required=True)
    ap.add_argument("--pages", type=int, default=2000)
    ap.add_argument("--links", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    site = make_site(a.pages, a.links)
    httpd = serve(site)
    base = "http://127.0.0.1:%d" % httpd.server_address[1]
    with tempfile.TemporaryDirectory() as d:
        server, address = start_dedupd(a.dedupd, os.path.join(d, "data"))
        try:
            results = {"scrapy": [], "dedupd": []}
            for r in range(a.rounds):
                for kind in ("scrapy", "dedupd"):
                    settings = {}
                    if kind == "dedupd":
                        settings = {
                            "DUPEFILTER_CLASS": "dedupd.scrapy.DupeFilter",
                            "SPIDER_MIDDLEWARES": json.dumps(
                                {"dedupd.scrapy.ContentMiddleware": 460,
                                 "dedupd.scrapy.UrlClaimMiddleware": 450}),
                            "DOWNLOADER_MIDDLEWARES": json.dumps(
                                {"dedupd.scrapy.LeaseMiddleware": 950}),
                            "ITEM_PIPELINES": json.dumps({"dedupd.scrapy.DedupItemPipeline": 300}),
                            "DEDUPD_ADDRESS": address, "DEDUPD_NAMESPACE": "bench-%d" % r}
                    wall, cpu, pages = crawl(d, base, settings, kind)
                    results[kind].append((wall, cpu, pages))
                    print("crawl kind=%s round=%d pages=%d wall_s=%.2f cpu_s=%.2f"
                          % (kind, r, pages, wall, cpu), flush=True)
            med = {k: (statistics.median(w / p for w, _, p in v),
                       statistics.median(c / p for _, c, p in v)) for k, v in results.items()}
            print("scrapy_overhead pages=%d rounds=%d scrapy_ms_per_page=%.3f "
                  "dedupd_ms_per_page=%.3f overhead_ms_per_page=%.3f scrapy_cpu_ms_per_page=%.3f "
                  "dedupd_cpu_ms_per_page=%.3f"
                  % (a.pages, a.rounds, med["scrapy"][0] * 1e3, med["dedupd"][0] * 1e3,
                     (med["dedupd"][0] - med["scrapy"][0]) * 1e3, med["scrapy"][1] * 1e3,
                     med["dedupd"][1] * 1e3))
        finally:
            server.terminate()
            server.wait(30)
            httpd.shutdown()


if __name__ == "__main__":
    main()
