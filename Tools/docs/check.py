#!/usr/bin/env python3
"""`make docs-check`: opens the rendered documentation (.build/docs/site, from `make docs`) in headless chromium and
checks that each catalog's landing page and one of its articles render: the page's title is on it and it links to
other pages of the documentation. DocC's pages are a JavaScript app, so the check reads the DOM chromium built, not
the HTML files. Exits 1 naming each page that failed."""

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading

SITE = os.path.join(os.path.dirname(__file__), "..", "..", ".build", "docs", "site")

# (path, text the rendered page must show): a landing page and an article of each catalog.
PAGES = [
    ("/documentation/lmdb", "LMDB"),
    ("/documentation/canopycore", "CanopyCore"),
    ("/documentation/canopycore/changefeed", "The change feed"),
    ("/documentation/canopycore/transactions", "Transactions"),
    ("/documentation/canopy", "Canopy"),
    ("/documentation/canopy/views", "Views"),
    ("/documentation/canopyindexes", "CanopyIndexes"),
    ("/documentation/canopyindexes/indexes", "Secondary indexes"),
    ("/documentation/canopysearch", "CanopySearch"),
    ("/documentation/canopysearch/fulltextsearch", "Full-text search"),
    ("/documentation/canopysource", "CanopySource"),
    ("/documentation/canopyterminal", "CanopyTerminal"),
    ("/documentation/canopycli", "CanopyCLI"),
    ("/documentation/canopycli/usage", "Using canopy"),
]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return name
    sys.exit("error: no chromium found; install Debian's chromium (apt-get install chromium)")


def rendered(chrome, url):
    result = subprocess.run(
        [chrome, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=15000", "--dump-dom", url],
        capture_output=True, text=True, timeout=120)
    return result.stdout


def main():
    if not os.path.isdir(SITE):
        sys.exit("error: no rendered documentation in .build/docs/site; run `make docs` first")
    handler = functools.partial(QuietHandler, directory=SITE)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    chrome = browser()
    failures = []
    for path, title in PAGES:
        dom = rendered(chrome, base + path)
        text = re.sub(r"<[^>]+>", " ", dom)
        links = set(re.findall(r'href="(/documentation/[^"#]+)"', dom))
        problems = []
        if title not in text:
            problems.append(f"'{title}' is not on the page")
        if len(links - {path, path + "/"}) < 1:
            problems.append("no links to other pages")
        if "page not found" in text.lower() or "The page you're looking for can't be found" in text:
            problems.append("DocC shows its page-not-found")
        status = "ok" if not problems else "FAILED: " + "; ".join(problems)
        print(f"{path}: {status} ({len(links)} links)")
        if problems:
            failures.append(path)
    server.shutdown()
    if failures:
        print(f"error: {len(failures)} page(s) did not render: {', '.join(failures)}", file=sys.stderr)
        sys.exit(1)
    print(f"docs-check: {len(PAGES)} pages rendered with their links")


if __name__ == "__main__":
    main()
