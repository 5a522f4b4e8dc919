"""Build helpers for the site (site/conf.py): stage docs/ and JavaScript, keep pages offline.

- :func:`stage_docs` copies ``docs/*.md`` into ``site/docs/`` so links between them resolve.
- :func:`stage_static` copies BokehJS, Panel's bundle and plotly.js from the installed packages
  into ``site/_build/static/`` (served as ``_static/``): the stored notebooks hold no inlined
  JavaScript, and the charts must render with no network. :func:`add_page_scripts` loads them
  on the pages that hold a chart of that kind, and only there.
- :func:`rewrite_cdn_links` points the charts' stylesheet links at the local copy of Panel's
  ``dist/`` folder instead of its CDN.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
STATIC = HERE / "_build" / "static"

#: what ``hv.extension("bokeh", inline=True)`` inlines, in its order (package, path in package)
_BOKEH = [
    ("bokeh", "server/static/js/bokeh.min.js"),
    ("bokeh", "server/static/js/bokeh-gl.min.js"),
    ("bokeh", "server/static/js/bokeh-widgets.min.js"),
    ("bokeh", "server/static/js/bokeh-tables.min.js"),
    ("panel", "dist/panel.min.js"),
]
_PLOTLY = [("plotly", "package_data/plotly.min.js")]
#: (marker in a page's body, scripts that page then needs): each page loads only its own
#: plotly.js first: after Panel's bundle it finds a CommonJS-style ``module`` and sets no global
PAGE_SCRIPTS = [("plotly-graph-div", _PLOTLY), ('data-root-id="', _BOKEH)]


def _package_dir(name: str) -> Path:
    module = __import__(name)
    return Path(module.__file__).resolve().parent


def stage_docs(src: Path, dest: Path) -> list[Path]:
    """Copy every ``*.md`` of ``src`` into ``dest`` (emptied first); returns the copies."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    copies = []
    for path in sorted(src.glob("*.md")):
        copies.append(Path(shutil.copy2(path, dest / path.name)))
    return copies


def stage_static() -> None:
    """Copy the chart JavaScript and Panel's stylesheets into :data:`STATIC`."""
    js = STATIC / "js"
    js.mkdir(parents=True, exist_ok=True)
    for package, rel in _BOKEH + _PLOTLY:
        shutil.copy2(_package_dir(package) / rel, js / Path(rel).name)
    for rel in ("css", "bundled/theme"):  # the stylesheets the charts link to
        dest = STATIC / "panel" / rel
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(_package_dir("panel") / "dist" / rel, dest)


def add_page_scripts(app, pagename, templatename, context, doctree) -> None:
    """Sphinx ``html-page-context`` hook: a page with a chart loads the chart libraries."""
    body = context.get("body", "")
    for order, (marker, bundle) in enumerate(PAGE_SCRIPTS):
        if marker in body:
            for _, rel in bundle:
                app.add_js_file(f"js/{Path(rel).name}", priority=400 + order)


def _cdn_prefix() -> str:
    import panel

    return f"https://cdn.holoviz.org/panel/{panel.__version__}/dist/"


def rewrite_cdn_links(app, exception) -> None:
    """Sphinx ``build-finished`` hook: Panel's CDN stylesheet URLs → ``_static/panel/``."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    prefix = _cdn_prefix()
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if prefix not in text:
            continue
        local = os.path.relpath(out / "_static" / "panel", page.parent).replace(os.sep, "/")
        page.write_text(text.replace(prefix, local + "/"), encoding="utf-8")
