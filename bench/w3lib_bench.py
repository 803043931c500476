#!/usr/bin/python3
"""w3lib_bench.py: the baseline for normalize_bench, on the same URL file.

Runs w3lib.url.canonicalize_url (Scrapy's URL canonicalizer, Debian package
python3-w3lib) over every line of a URL file, and prints the same fixed-format
line as dedupd_normalize_bench, named w3lib:

  w3lib  urls=<n> rounds=<r> urls_per_sec=<x> ns_per_url=<y> invalid=<k>

invalid counts lines canonicalize_url raised on (one round). The timed rounds
follow one untimed warm-up round. Run with /usr/bin/python3: the Debian
w3lib is installed for the system interpreter only.

Example:
  /usr/bin/python3 bench/w3lib_bench.py --rounds 1 bench/corpus/sample_urls.txt
"""

import argparse
import sys
import time

try:
    from w3lib.url import canonicalize_url
except ImportError:
    print("w3lib_bench: w3lib not importable by %s; run with /usr/bin/python3 "
          "(package python3-w3lib)" % sys.executable, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("url_file")
    args = ap.parse_args()
    if args.rounds < 1:
        print("w3lib_bench: --rounds must be at least 1", file=sys.stderr)
        return 2
    with open(args.url_file, encoding="utf-8", errors="surrogateescape") as f:
        urls = [line.rstrip("\r\n") for line in f]
    urls = [u for u in urls if u]
    if not urls:
        print("w3lib_bench: %s has no URLs" % args.url_file, file=sys.stderr)
        return 1

    invalid = 0
    for u in urls:  # warm-up round, untimed; counts invalid
        try:
            canonicalize_url(u)
        except Exception:  # noqa: BLE001 -- any failure counts as invalid
            invalid += 1

    start = time.perf_counter()
    for _ in range(args.rounds):
        for u in urls:
            try:
                canonicalize_url(u)
            except Exception:  # noqa: BLE001
                pass
    secs = time.perf_counter() - start
    total = len(urls) * args.rounds
    print("w3lib  urls=%d rounds=%d urls_per_sec=%.0f ns_per_url=%.1f "
          "invalid=%d" % (len(urls), args.rounds, total / secs,
                          secs * 1e9 / total, invalid), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
