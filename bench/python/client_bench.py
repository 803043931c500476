#!/usr/bin/python3
"""check_urls throughput of the dedupd Python client (batches of 1,000).

Starts DEDUPD (a dedupd binary) on 127.0.0.1 port 0 with a fresh store, claims
--urls new URLs in batches of --batch from one process, with --in_flight
check_urls calls at a time (threads sharing one dedupd.Client; 1: each call
waits for its reply), and prints one line:
  python_check_urls urls=N batch=B in_flight=F urls_per_s=X client_cpu_us_per_url=C
      build_us_per_url=.. convert_us_per_url=.. grpc_us_per_url=..
where build is making the request messages (encode + protobuf), convert the
dataclass results, grpc the rest of the client's CPU (serialization, the
call). Run from a venv the package is installed in:
  build/python-venv/bin/python bench/python/client_bench.py --dedupd=build/server/dedupd
"""
import argparse
import os
import re
import subprocess
import tempfile
import threading
import time

import dedupd
from dedupd import _codec
from dedupd.v1 import dedupd_pb2 as pb


def start(binary, data_dir):
    p = subprocess.Popen([binary, "--listen=127.0.0.1:0", "--data_dir=" + data_dir],
                         stderr=subprocess.PIPE, text=True)
    port = []
    ready = threading.Event()

    def read():
        for line in p.stderr:
            m = re.match(r"dedupd: serving on 127\.0\.0\.1:(\d+)", line)
            if m and not ready.is_set():
                port.append(int(m.group(1)))
                ready.set()
    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(60):
        p.kill()
        raise SystemExit("dedupd did not start")
    return p, "127.0.0.1:%d" % port[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dedupd", required=True)
    ap.add_argument("--urls", type=int, default=500_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--in_flight", type=int, default=1)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        p, address = start(a.dedupd, os.path.join(d, "data"))
        try:
            urls = ["https://bench%d.example/path/%d?q=%d" % (i % 97, i, i) for i in
                    range(a.urls)]
            c = dedupd.Client(address, timeout=60)
            c.check_urls(["https://warm.example/%d" % i for i in range(a.batch)])
            starts = list(range(0, a.urls, a.batch))
            new = [0] * a.in_flight

            def worker(w):
                # Worker w sends batches w, w + F, w + 2F, ...: F calls in flight.
                for i in starts[w::a.in_flight]:
                    new[w] += sum(r.verdict == "NEW" for r in c.check_urls(urls[i:i + a.batch]))
            cpu0, t0 = time.process_time(), time.perf_counter()
            threads = [threading.Thread(target=worker, args=(w,)) for w in range(a.in_flight)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            assert sum(new) == a.urls, (sum(new), a.urls)
            # The client's Python costs alone, without a server.
            sample = urls[:a.batch]
            b0 = time.process_time()
            for _ in range(20):
                msg = pb.CheckUrlRequest(items=[_codec.url_item(u) for u in sample])
            build = (time.process_time() - b0) / (20 * a.batch)
            resp = pb.CheckUrlResponse()
            resp.results.extend(pb.UrlResult(normalized_url=u, verdict=pb.URL_VERDICT_NEW)
                                for u in sample)
            v0 = time.process_time()
            for _ in range(20):
                [_codec.url_result(u, x, "id") for u, x in zip(sample, resp.results)]
            conv = (time.process_time() - v0) / (20 * a.batch)
            per = cpu / a.urls
            print("python_check_urls urls=%d batch=%d in_flight=%d urls_per_s=%.0f "
                  "client_cpu_us_per_url=%.2f build_us_per_url=%.2f convert_us_per_url=%.2f "
                  "grpc_us_per_url=%.2f"
                  % (a.urls, a.batch, a.in_flight, a.urls / wall, per * 1e6, build * 1e6,
                     conv * 1e6,
                     max(0.0, per - build - conv) * 1e6))
            c.close()
        finally:
            p.terminate()
            p.wait(30)


if __name__ == "__main__":
    main()
