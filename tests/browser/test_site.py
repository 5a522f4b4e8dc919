"""The published site: build it as ``make site`` does, serve it on loopback, open it in Chromium.

Checks that every internal link and anchor of the built site resolves, that there is a page per
notebook and per docs/ page, that a bokeh chart renders with the network cut off (a bokeh root
with a canvas or svg), and saves a screenshot to results/browser/site.png. Run alone with
``pytest -m browser tests/browser/test_site.py``. Chromium comes from
``scripts/install_browser.sh`` (apt-get); Playwright never downloads one.
"""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

from ._browser import chromium, free_port

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "results" / "browser"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# a bokeh root (data-root-id) holding a <canvas> or <svg>, looked for through shadow roots
_CHART_DRAWN = """() => {
  const drawn = (root) => {
    for (const e of root.querySelectorAll('*')) {
      if (e.tagName === 'CANVAS' || e.tagName === 'svg') return true;
      if (e.shadowRoot && drawn(e.shadowRoot)) return true;
    }
    return false;
  };
  return [...document.querySelectorAll('[data-root-id]')].some(drawn);
}"""


class _Links(HTMLParser):
    """The link targets (href, src) and element ids of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.targets: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("name"):
            self.ids.add(a["name"])
        for key in ("href", "src"):
            if a.get(key) and not (tag == "script" and a.get("type") == "text/template"):
                self.targets.append(a[key])


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Build the site (the command of ``make site``) and serve it on 127.0.0.1."""
    pytest.importorskip("myst_nb")
    tmp = tmp_path_factory.mktemp("site")
    html = tmp / "html"
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
         "-d", str(tmp / "doctrees"), str(ROOT / "site"), str(html)],
        capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, "site build failed:\n" + build.stdout + build.stderr
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
         "--directory", str(html)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(url, timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        yield url, html
    finally:
        server.terminate()
        server.wait(10)


def _crawl(start: str) -> tuple[dict[str, _Links], list[str]]:
    """Every page reachable from ``start`` on its host, and the broken links found."""
    host = urlparse(start).netloc
    pages: dict[str, _Links] = {}
    broken: list[str] = []
    checked: set[str] = set()
    queue = [start]
    fragments: list[tuple[str, str, str]] = []  # (page linking, target page, fragment)
    while queue:
        page = queue.pop()
        if page in pages:
            continue
        with urllib.request.urlopen(page, timeout=10) as resp:
            parser = _Links()
            parser.feed(resp.read().decode("utf-8", "replace"))
        pages[page] = parser
        for target in parser.targets:
            absolute = urljoin(page, target)
            parts = urlparse(absolute)
            if parts.scheme not in ("http", "https") or parts.netloc != host:
                continue  # external, mailto:, data: — not this site's to check
            bare, fragment = urldefrag(absolute)
            if fragment:
                fragments.append((page, bare, fragment))
            if bare in checked:
                continue
            checked.add(bare)
            try:
                with urllib.request.urlopen(bare, timeout=10) as resp:
                    is_html = resp.headers.get_content_type() == "text/html"
            except urllib.error.HTTPError as exc:
                broken.append(f"{page} -> {target} ({exc.code})")
                continue
            if is_html and bare not in pages:
                queue.append(bare)
    for page, bare, fragment in fragments:
        if bare in pages and fragment not in pages[bare].ids:
            broken.append(f"{page} -> {bare}#{fragment} (no such anchor)")
    return pages, broken


def test_site_links_pages_and_a_bokeh_chart_render(site):
    from playwright.sync_api import sync_playwright

    url, html = site
    pages, broken = _crawl(url)
    assert broken == [], "broken internal links:\n" + "\n".join(broken)
    names = {urlparse(p).path.lstrip("/") for p in pages}
    for src in sorted((ROOT / "notebooks" / "src").glob("[0-9][0-9]-*.py")):
        assert f"notebooks/{src.stem}.html" in names, f"no site page for {src.name}"
    for doc in sorted((ROOT / "docs").glob("*.md")):
        assert f"docs/{doc.stem}.html" in names, f"no site page for docs/{doc.name}"
    assert "generated/hetlab.fps.html" in names  # the API reference, from the docstrings

    def page_text(page_url: str) -> str:
        return (html / urlparse(page_url).path.lstrip("/")).read_text(encoding="utf-8")

    notebook_pages = sorted(p for p in pages if "/notebooks/" in p and p.endswith(".html"))
    # a bokeh figure model in an embedded document: a chart, not the extension's empty root
    charts = [p for p in notebook_pages if '"name":"Figure"' in page_text(p)]
    plotly = [p for p in notebook_pages if "plotly-graph-div" in page_text(p)]
    assert charts, "no notebook page holds a bokeh chart (were the chart outputs stored?)"
    SHOTS.mkdir(parents=True, exist_ok=True)
    external: list[str] = []
    errors: list[str] = []

    def offline(route):  # the site must render with no network: cut off every other host
        if urlparse(route.request.url).netloc == urlparse(url).netloc:
            route.continue_()
        else:
            external.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), headless=True,
                                    args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.route("**/*", offline)
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # a request the next page.goto cancels (a theme sheet panel's script asks for late)
        # fails as net::ERR_ABORTED: not a load error of the page; any other failure is
        page.on("requestfailed", lambda r: None if r.failure == "net::ERR_ABORTED" else
                errors.append(f"failed to load {r.url} ({r.failure})"))
        for chart_page in charts + [p for p in plotly if p not in charts]:
            page.goto(chart_page)
            try:
                if chart_page in charts:
                    page.wait_for_function(_CHART_DRAWN, timeout=60_000)
                if chart_page in plotly:
                    page.wait_for_selector(".plotly-graph-div .main-svg", state="attached",
                                           timeout=60_000)
            except Exception:
                page.screenshot(path=str(SHOTS / "site-failure.png"), full_page=True)
                raise AssertionError(f"a chart did not render on {chart_page}") from None
        page.goto(charts[-1])
        page.wait_for_function(_CHART_DRAWN, timeout=60_000)
        page.locator("[data-root-id]").last.scroll_into_view_if_needed()
        page.wait_for_timeout(1000)  # let bokeh finish drawing
        page.screenshot(path=str(SHOTS / "site.png"))
        browser.close()
    assert external == [], f"the page asked the network for {external}"
    assert errors == [], errors
