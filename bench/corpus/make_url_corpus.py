#!/usr/bin/python3
"""make_url_corpus.py: builds the URL corpus for the normalizer benchmarks.

Real links come from installed documentation (Debian packages python3-doc and
postgresql-doc-15): every href/src of every HTML page, resolved against the
page's public address (https://docs.python.org/3.11/... and
https://www.postgresql.org/docs/15/...), http(s) only. On top of those, a
seeded random.Random(42) makes the variants a crawler meets for the same page:
tracking parameters, session ids, scheme/host case, explicit default ports,
fragments, reordered query parameters, ./ and ../ segments, percent-encoded
unreserved characters, trailing slashes. The output is deterministic for a
given set of installed packages and flags.

Stdlib only; run with /usr/bin/python3.

Example:
  /usr/bin/python3 bench/corpus/make_url_corpus.py --size 1000000 \
      --out bench/corpus/urls.txt
  # stats go to stderr, one URL per line goes to --out
"""

import argparse
import html.parser
import os
import random
import string
import sys
import urllib.parse

# (local HTML root candidates, public base address). The first existing root
# of each site is walked.
SITES = [
    (["/usr/share/doc/python3.11/html", "/usr/share/doc/python3/html",
      "/usr/share/doc/python3-doc/html"],
     "https://docs.python.org/3.11/"),
    (["/usr/share/doc/postgresql-doc-15/html"],
     "https://www.postgresql.org/docs/15/"),
]

TRACKING_PARAMS = [
    "utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content",
    "gclid", "fbclid", "msclkid", "mc_cid", "mc_eid", "_ga", "igshid",
    "pk_campaign", "hsa_acc",
]
TRACKING_VALUES = [
    "newsletter", "twitter", "google", "cpc", "email", "spring_sale",
    "feed", "social", "banner", "partner",
]
CONTENT_PARAMS = ["page", "q", "id", "lang", "sort", "version", "highlight"]
UNRESERVED = string.ascii_letters + string.digits + "-._~"


class LinkExtractor(html.parser.HTMLParser):
    """Collects href and src attribute values, and the first <base href>."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.links = []
        self.base = None

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if tag == "base" and name == "href" and self.base is None:
                self.base = value.strip()
            elif name in ("href", "src"):
                self.links.append(value.strip())


def find_root(candidates):
    for c in candidates:
        if os.path.isdir(c):
            return os.path.realpath(c)
    return None


def real_links(stats):
    """Returns every absolute http(s) link, in walk order; counts into stats."""
    links = []
    for candidates, public in SITES:
        root = find_root(candidates)
        if root is None:
            print("make_url_corpus: none of %s exists; skipped" % candidates,
                  file=sys.stderr)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(".html"):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                page_url = public + rel
                parser = LinkExtractor()
                with open(path, encoding="utf-8", errors="replace") as f:
                    parser.feed(f.read())
                parser.close()
                stats["pages"] += 1
                base = page_url
                if parser.base:
                    base = urllib.parse.urljoin(page_url, parser.base)
                for href in parser.links:
                    stats["raw_links"] += 1
                    try:
                        absolute = urllib.parse.urljoin(base, href)
                    except ValueError:
                        stats["unparsable"] += 1
                        continue
                    scheme = absolute.split(":", 1)[0].lower()
                    if scheme not in ("http", "https"):
                        stats["not_http"] += 1
                        continue
                    if any(c in absolute for c in "\r\n\t"):
                        stats["unparsable"] += 1
                        continue
                    links.append(absolute)
    return links


# --- variants: each takes and returns a URL string -------------------------

def _split(url):
    return urllib.parse.urlsplit(url)


def _unsplit(parts):
    return urllib.parse.urlunsplit(parts)


def add_tracking(url, rng):
    p = _split(url)
    extra = ["%s=%s" % (k, rng.choice(TRACKING_VALUES) if not k.endswith(
        "clid") else "".join(rng.choice(string.ascii_letters + string.digits)
                             for _ in range(20)))
             for k in rng.sample(TRACKING_PARAMS, rng.randint(1, 3))]
    params = [q for q in p.query.split("&") if q] + extra
    rng.shuffle(params)
    return _unsplit(p._replace(query="&".join(params)))


def add_session(url, rng):
    p = _split(url)
    kind = rng.randrange(3)
    if kind == 0:
        sid = "".join(rng.choice("0123456789ABCDEF") for _ in range(32))
        return _unsplit(p._replace(path=(p.path or "/") + ";jsessionid=" + sid))
    if kind == 1:
        sid = "".join(rng.choice(string.ascii_lowercase + string.digits)
                      for _ in range(26))
        param = "PHPSESSID=" + sid
    else:
        param = "sid=" + "".join(rng.choice("0123456789abcdef")
                                 for _ in range(16))
    params = [q for q in p.query.split("&") if q] + [param]
    return _unsplit(p._replace(query="&".join(params)))


def change_case(url, rng):
    scheme, rest = url.split(":", 1)
    p = _split(url)
    host = p.netloc
    kind = rng.randrange(3)
    if kind in (0, 2):
        scheme = rng.choice([scheme.upper(), scheme.capitalize()])
    if kind in (1, 2):
        host = "".join(c.upper() if rng.random() < 0.4 else c for c in host)
    rest = "//" + host + rest[2 + len(p.netloc):]
    return scheme + ":" + rest


def add_default_port(url, rng):
    p = _split(url)
    if p.port is not None or "@" in p.netloc:
        return url
    port = ":443" if p.scheme.lower() == "https" else ":80"
    return _unsplit(p._replace(netloc=p.netloc + port))


def add_fragment(url, rng):
    p = _split(url)
    frag = rng.choice(["top", "section-%d" % rng.randint(1, 40), "",
                       "comments", "id%d" % rng.randint(1, 999)])
    return _unsplit(p._replace(fragment=frag)) + ("#" if not frag else "")


def reorder_query(url, rng):
    p = _split(url)
    params = [q for q in p.query.split("&") if q]
    if len(params) < 2:
        keys = rng.sample(CONTENT_PARAMS, rng.randint(2, 3))
        params += ["%s=%s" % (k, rng.randint(1, 20)) for k in keys]
    rng.shuffle(params)
    return _unsplit(p._replace(query="&".join(params)))


def add_dot_segments(url, rng):
    p = _split(url)
    segs = (p.path or "/").split("/")
    i = rng.randint(1, max(1, len(segs) - 1))
    if rng.random() < 0.5:
        segs.insert(i, ".")
    else:
        segs[i:i] = ["x" + str(rng.randint(0, 9)), ".."]
    return _unsplit(p._replace(path="/".join(segs)))


def percent_encode_unreserved(url, rng):
    p = _split(url)
    path = p.path
    positions = [i for i, c in enumerate(path) if c in UNRESERVED]
    if not positions:
        return url
    chosen = set(rng.sample(positions, min(len(positions), rng.randint(1, 3))))
    out = []
    for i, c in enumerate(path):
        if i in chosen:
            hexed = "%%%02X" % ord(c)
            out.append(hexed.lower() if rng.random() < 0.3 else hexed)
        else:
            out.append(c)
    return _unsplit(p._replace(path="".join(out)))


def toggle_trailing_slash(url, rng):
    p = _split(url)
    path = p.path or "/"
    if path.endswith("/") and len(path) > 1:
        path = path[:-1]
    elif not path.endswith("/"):
        path += "/"
    return _unsplit(p._replace(path=path))


VARIANTS = [
    ("tracking_params", add_tracking),
    ("session_id", add_session),
    ("scheme_host_case", change_case),
    ("default_port", add_default_port),
    ("fragment", add_fragment),
    ("reordered_query", reorder_query),
    ("dot_segments", add_dot_segments),
    ("percent_encoded_unreserved", percent_encode_unreserved),
    ("trailing_slash", toggle_trailing_slash),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "urls.txt"))
    ap.add_argument("--size", type=int, default=1000000,
                    help="URLs to write (default 1000000)")
    ap.add_argument("--variant_fraction", type=float, default=0.7,
                    help="share of lines that are variants (default 0.7); "
                    "the rest are real links as found, cycled in a seeded "
                    "shuffled order (repeats are what a crawler sees)")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()

    stats = {"pages": 0, "raw_links": 0, "not_http": 0, "unparsable": 0}
    links = real_links(stats)
    if not links:
        print("make_url_corpus: no links found; are python3-doc and "
              "postgresql-doc-15 installed?", file=sys.stderr)
        return 1
    unique = sorted(set(links))
    rng = random.Random(args.seed)
    order = list(unique)
    rng.shuffle(order)

    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    variant_counts = {name: 0 for name, _ in VARIANTS}
    real_written = variants_written = 0
    next_real = 0
    tmp = args.out + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for _ in range(args.size):
            if rng.random() >= args.variant_fraction:
                f.write(order[next_real % len(order)])
                next_real += 1
                real_written += 1
            else:
                url = rng.choice(unique)
                for name, fn in rng.sample(VARIANTS, rng.choice([1, 1, 2, 3])):
                    url = fn(url, rng)
                    variant_counts[name] += 1
                f.write(url)
                variants_written += 1
            f.write("\n")
    os.replace(tmp, args.out)

    print("make_url_corpus: pages=%d raw_links=%d not_http=%d unparsable=%d "
          "http_links=%d unique_http_links=%d" % (
              stats["pages"], stats["raw_links"], stats["not_http"],
              stats["unparsable"], len(links), len(unique)), file=sys.stderr)
    print("make_url_corpus: wrote %d urls to %s: real=%d variants=%d (%s)" % (
        args.size, args.out, real_written, variants_written,
        " ".join("%s=%d" % kv for kv in variant_counts.items())),
        file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
