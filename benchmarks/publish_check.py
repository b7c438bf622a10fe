"""Open every page of a published site in headless Chromium; optionally screenshot two of them.

    .venv/bin/python benchmarks/publish_check.py SITE [--shots DIR]

Follows every link from SITE/index.html (as tests/publish/test_site_browser.py does), prints each
page with its console errors and failed loads, and counts the points the trend plots drew. With
``--shots DIR`` it writes DIR/publish-index.png and DIR/publish-trend.png (the trend page with the
most points). Exit 1 when a page has an error or a link leads nowhere. Needs /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import sys
from collections import deque
from pathlib import Path
from urllib.parse import unquote, urlparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.publish.browser import Browser  # noqa: E402

PROBE = (
    "[Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href') || a.href.baseVal),"
    " document.querySelectorAll('svg.trend circle.pt').length]"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("site", type=Path)
    ap.add_argument("--shots", type=Path)
    args = ap.parse_args()
    site = args.site.resolve()
    browser = Browser()
    bad, seen, points = 0, set(), {}
    todo = deque([site / "index.html"])
    try:
        while todo:
            page = todo.popleft()
            if page in seen:
                continue
            seen.add(page)
            result = browser.open(page.as_uri(), PROBE)
            links, drawn = result.value
            points[page] = drawn
            for href in links:
                if not href or href.startswith(("#", "http:", "https:", "data:")):
                    continue
                target = (page.parent / unquote(urlparse(href).path)).resolve()
                if not target.is_file():
                    result.errors.append(f"link to {href}: not there")
                elif target.suffix == ".html" and target.is_relative_to(site):
                    todo.append(target)
            bad += bool(result.errors)
            print(f"{page.relative_to(site)}: {'OK' if not result.errors else result.errors}"
                  + (f" ({drawn} points)" if drawn else ""))  # fmt: skip
        if args.shots:
            args.shots.mkdir(parents=True, exist_ok=True)
            browser.open((site / "index.html").as_uri())
            browser.screenshot(args.shots / "publish-index.png", height=760)
            trend = max((p for p in points if p.parent.name == "trend"), key=lambda p: points[p])
            browser.open(trend.as_uri())
            browser.screenshot(args.shots / "publish-trend.png", height=1100)
            print(f"screenshots in {args.shots}: publish-index.png, publish-trend.png ({trend.name})")
    finally:
        browser.close()
    print(f"{len(seen)} pages, {bad} with errors; {len(list(site.rglob('*.html')))} pages in the site")
    return 1 if bad or len(seen) != len(list(site.rglob("*.html"))) else 0


if __name__ == "__main__":
    sys.exit(main())
