"""A real browser: JupyterLab on loopback, driven by Playwright in Debian's Chromium.

Opens 00-tour, runs all cells, checks the dashboard renders with a chart and no traceback, and
saves a screenshot to results/browser/00-tour.png. Run alone with ``pytest -m browser``.
Chromium comes from ``scripts/install_browser.sh`` (apt-get); Playwright never downloads one.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ._browser import chromium, free_port

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "results" / "browser"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-quic"]

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# a bokeh chart draws on a <canvas> nested in shadow roots inside an output area
_HAS_CANVAS = """() => {
  const has = (root) => {
    for (const e of root.querySelectorAll('*')) {
      if (e.tagName === 'CANVAS') return true;
      if (e.shadowRoot && has(e.shadowRoot)) return true;
    }
    return false;
  };
  return [...document.querySelectorAll('.jp-OutputArea-output')].some(has);
}"""


@pytest.fixture
def lab(tmp_path):
    pytest.importorskip("playwright")
    root = tmp_path / "notebooks"
    shutil.copytree(ROOT / "notebooks", root, ignore=shutil.ignore_patterns("src", "*.nc"))
    port, token = free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg"),
           "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "ws")}
    cmd = [sys.executable, "-m", "jupyterlab", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False", "--allow-root"]
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=1)
                break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start: " + (tmp_path / "lab.log").read_text()[-2000:])
        if proc.poll() is not None:
            pytest.fail("JupyterLab exited: " + (tmp_path / "lab.log").read_text()[-2000:])
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_tour_runs_in_jupyterlab_and_dashboard_renders(lab):
    from playwright.sync_api import sync_playwright

    url, token = lab
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), headless=True,
                                    args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{url}/lab/tree/00-tour.ipynb?token={token}")
        page.wait_for_selector(".jp-Notebook", timeout=60_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                               timeout=60_000)
        try:
            _run_all_and_check(page)
        except Exception:
            page.screenshot(path=str(SHOTS / "00-tour-failure.png"))
            raise
        text = page.inner_text(".jp-Notebook")
        news = page.get_by_role("button", name="No")  # JupyterLab's news prompt, if shown
        if news.count():
            news.first.click()
        dashboard = page.locator(".widget-button:has-text('Run')").first
        dashboard.scroll_into_view_if_needed()
        page.wait_for_timeout(1500)  # let bokeh finish drawing
        page.screenshot(path=str(SHOTS / "00-tour.png"))
        browser.close()
    assert "Traceback" not in text  # an exception in any cell
    assert "numpy" in text and "verified:" in text


def _run_all_and_check(page) -> None:
    """Run every cell from the Run menu; wait for the dashboard and a chart to render."""
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('Idle')", timeout=60_000)
    for attempt in range(3):  # a click before the kernel is fully connected can be lost
        page.click(".lm-MenuBar-itemLabel:text-is('Run')")
        page.click("li[data-command='runmenu:run-all']")
        try:
            page.wait_for_function(
                "[...document.querySelectorAll('.jp-InputPrompt')]"
                ".some(e => /\\[[0-9*]+\\]/.test(e.textContent))", timeout=20_000)
            break
        except Exception:
            if attempt == 2:
                raise
    # the dashboard: its Run button, its progress bar saying done, and a bokeh chart
    # (JupyterLab renders off-screen cells lazily: wait for them attached, not visible)
    page.wait_for_selector(".widget-button:has-text('Run')", state="attached",
                           timeout=180_000)
    page.wait_for_function(
        "[...document.querySelectorAll('.widget-label')]"
        ".some(e => e.textContent.trim() === 'done')", timeout=180_000)
    page.wait_for_function(_HAS_CANVAS, timeout=120_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']",
                           timeout=180_000)
