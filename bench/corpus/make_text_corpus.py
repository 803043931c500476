#!/usr/bin/python3
"""make_text_corpus.py: builds the page-text corpus for the content benchmarks.

Real pages come from installed documentation (Debian packages python3-doc and
postgresql-doc-15): the visible main text of every HTML page, one page per
file, written as OUT/00000.txt, OUT/00001.txt, ... in a fixed order (Python
pages first, then PostgreSQL pages, each in sorted path order), so the output
is the same on every run with the same packages and flags.

What is kept: the text a reader sees in the page's main content. What is
dropped: <head>, <script>, <style>, <nav>, <form>, and the site chrome of both
generators -- Sphinx's mobile menu, sidebar, "related" bars, footer and the
pilcrow header links (only the role="main" body is kept when a page has one);
DocBook's navheader/navfooter tables. Block elements (paragraphs, headings,
list items, table rows, <pre>, ...) become paragraphs: the file holds one
paragraph per line, paragraphs separated by one blank line, runs of
whitespace inside a paragraph collapsed to one space.

Stdlib only; run with /usr/bin/python3.

Example:
  /usr/bin/python3 bench/corpus/make_text_corpus.py                  # -> bench/corpus/pages/
  /usr/bin/python3 bench/corpus/make_text_corpus.py --max_pages 50 --min_words 100 \
      --out /tmp/pages
  # stats go to stderr
"""

import argparse
import html.parser
import os
import re
import sys

# (local HTML root candidates, site name). The first existing root of each
# site is walked.
SITES = [
    (["/usr/share/doc/python3.11/html", "/usr/share/doc/python3/html",
      "/usr/share/doc/python3-doc/html"], "python"),
    (["/usr/share/doc/postgresql-doc-15/html"], "postgresql"),
]

# Elements whose whole subtree is never visible main text.
SKIP_TAGS = {"head", "script", "style", "noscript", "nav", "form", "svg",
             "template", "button", "select", "textarea"}
# Site chrome, by class: Sphinx (python3-doc) and DocBook XSL (postgresql).
SKIP_CLASSES = {"mobile-nav", "menu-wrapper", "sphinxsidebar", "related",
                "footer", "headerlink", "navheader", "navfooter",
                "sidebarbutton", "inline-search", "switchers"}
SKIP_IDS = {"sidebarbutton"}
# Elements without end tags in HTML: never pushed on the skip stack.
VOID_TAGS = {"area", "base", "br", "col", "embed", "hr", "img", "input",
             "link", "meta", "param", "source", "track", "wbr"}
# Elements that end a paragraph of text.
BLOCK_TAGS = {"address", "article", "aside", "blockquote", "caption", "dd",
              "details", "div", "dl", "dt", "fieldset", "figcaption",
              "figure", "footer", "h1", "h2", "h3", "h4", "h5", "h6",
              "header", "hr", "li", "main", "ol", "p", "pre", "section",
              "summary", "table", "tbody", "td", "tfoot", "th", "thead",
              "tr", "ul", "br"}

_SPACE = re.compile(r"\s+")


class MainTextExtractor(html.parser.HTMLParser):
    """Collects the visible text of one page as a list of paragraphs.

    Two passes of the same parser: the first only records whether the page
    has a role="main" element; the second keeps text inside it (if any) and
    outside every skipped subtree.
    """

    def __init__(self, main_only):
        super().__init__(convert_charrefs=True)
        self.main_only = main_only
        self.has_main = False
        self.paragraphs = []
        self._current = []
        # Stack of (tag, depth of that tag) for skipped and main subtrees.
        self._skip_tag = None
        self._skip_depth = 0
        self._main_tag = None
        self._main_depth = 0
        self._in_main = not main_only

    def _flush(self):
        text = _SPACE.sub(" ", "".join(self._current)).strip()
        if text:
            self.paragraphs.append(text)
        self._current = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID_TAGS:
            if tag in BLOCK_TAGS and self._skip_tag is None:
                self._flush()
            return
        # Nested occurrences of the tag that opened a skipped/main subtree.
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_depth += 1
            return
        if self._main_tag is not None and tag == self._main_tag:
            self._main_depth += 1
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        if a.get("role") == "main":
            self.has_main = True
            if self.main_only and self._main_tag is None:
                self._main_tag, self._main_depth = tag, 1
                self._in_main = True
                self._flush()
                return
        if (tag in SKIP_TAGS or classes & SKIP_CLASSES or
                a.get("id") in SKIP_IDS or a.get("role") == "navigation"):
            self._skip_tag, self._skip_depth = tag, 1
            return
        if tag in BLOCK_TAGS:
            self._flush()

    def handle_endtag(self, tag):
        if self._skip_tag is not None:
            if tag == self._skip_tag:
                self._skip_depth -= 1
                if self._skip_depth == 0:
                    self._skip_tag = None
            return
        if tag in BLOCK_TAGS:
            self._flush()
        if self._main_tag is not None and tag == self._main_tag:
            self._main_depth -= 1
            if self._main_depth == 0:
                self._main_tag = None
                self._in_main = False

    def handle_data(self, data):
        if self._skip_tag is None and self._in_main:
            self._current.append(data)

    def close(self):
        super().close()
        self._flush()


def extract(html_text):
    """Returns the main text of one page as a list of paragraphs."""
    probe = MainTextExtractor(main_only=False)
    probe.feed(html_text)
    probe.close()
    if not probe.has_main:
        return probe.paragraphs
    main = MainTextExtractor(main_only=True)
    main.feed(html_text)
    main.close()
    return main.paragraphs


def find_root(candidates):
    for c in candidates:
        if os.path.isdir(c):
            return os.path.realpath(c)
    return None


def html_files():
    """Yields (site, root, path) of every page, in the fixed corpus order."""
    for candidates, site in SITES:
        root = find_root(candidates)
        if root is None:
            print("make_text_corpus: none of %s exists; skipped" % candidates,
                  file=sys.stderr)
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            # Sphinx keeps reST sources and downloads next to the HTML.
            dirnames[:] = [d for d in dirnames
                           if d not in ("_sources", "_static", "_downloads",
                                        "_images")]
            for name in sorted(filenames):
                if name.endswith(".html"):
                    yield site, root, os.path.join(dirpath, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "pages"),
        help="output directory (default bench/corpus/pages); its *.txt "
        "files are replaced")
    ap.add_argument("--max_pages", type=int, default=0,
                    help="stop after this many pages (default 0: all)")
    ap.add_argument("--min_words", type=int, default=50,
                    help="skip pages with fewer words of main text "
                    "(default 50)")
    args = ap.parse_args()

    stats = {"html": 0, "short": 0, "written": 0, "words": 0}
    per_site = {}
    os.makedirs(args.out, exist_ok=True)
    for name in os.listdir(args.out):
        if re.fullmatch(r"\d{5,}\.txt", name):
            os.remove(os.path.join(args.out, name))
    for site, root, path in html_files():
        if args.max_pages and stats["written"] >= args.max_pages:
            break
        stats["html"] += 1
        with open(path, encoding="utf-8", errors="replace") as f:
            paragraphs = extract(f.read())
        words = sum(len(p.split()) for p in paragraphs)
        if words < args.min_words:
            stats["short"] += 1
            continue
        out = os.path.join(args.out, "%05d.txt" % stats["written"])
        with open(out, "w", encoding="utf-8", newline="\n") as f:
            f.write("\n\n".join(paragraphs))
            f.write("\n")
        stats["written"] += 1
        stats["words"] += words
        per_site[site] = per_site.get(site, 0) + 1

    if not stats["written"]:
        print("make_text_corpus: no pages written; are python3-doc and "
              "postgresql-doc-15 installed?", file=sys.stderr)
        return 1
    print("make_text_corpus: html_pages=%d too_short=%d written=%d (%s) "
          "words=%d mean_words=%d out=%s" % (
              stats["html"], stats["short"], stats["written"],
              " ".join("%s=%d" % kv for kv in per_site.items()),
              stats["words"], stats["words"] // stats["written"], args.out),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
