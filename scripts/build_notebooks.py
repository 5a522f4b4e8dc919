"""Build the notebook series from its sources, execute it, and store checkable outputs.

Sources are ``notebooks/src/<NN>-<topic>.py`` (e.g. ``00-tour.py``) in jupytext's "percent"
format, paired with ``notebooks/<NN>-<topic>.ipynb`` by ``notebooks/jupytext.toml`` (so
JupyterLab with jupytext keeps the two in step; the sources carry no header). Each notebook is
executed with nbclient in ``notebooks/`` and written twice:

- ``notebooks/<NN>-<topic>.ipynb``, for learners and nbval: outputs of deterministic cells only;
  cells whose first line is ``# NBVAL_IGNORE_OUTPUT`` (timings, plots, device tables) are
  stored without outputs.
- ``site/notebooks/<NN>-<topic>.ipynb``, for the site (``make site``): every output, charts
  included, less the inlined BokehJS (the site serves it from ``_static``) and widget views
  (they need a live kernel), plotly figures turned into HTML, with a cell after the title
  naming the machine and date of the run.

Usage::

    python scripts/build_notebooks.py            # rebuild every notebook (executes them)
    python scripts/build_notebooks.py 04         # only notebooks whose name starts with 04
    python scripts/build_notebooks.py --check    # fail if a notebook or its site copy is stale
                                                 # or holds outputs of ignored cells (no run)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
SITE_NOTEBOOKS = ROOT / "site" / "notebooks"
IGNORE = "# NBVAL_IGNORE_OUTPUT"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
#: tag of the site copy's provenance cell (not part of the source)
PROVENANCE_TAG = "hetlab-provenance"
PLOTLY = "application/vnd.plotly.v1+json"
#: output MIME types the site copy drops: inlined BokehJS loaders, live widget views
_DROP_MIME = ("application/vnd.holoviews_load.v0+json", "application/vnd.holoviews_exec.v0+json",
              "application/vnd.jupyter.widget-view+json")


def parse_source(path: Path) -> list[nbformat.NotebookNode]:
    """Cells of a percent-format source file, read by jupytext."""
    return list(jupytext.read(path, fmt="py:percent").cells)


def _ignored(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and cell.source.startswith(IGNORE)


def coalesce_streams(outputs: list) -> list:
    """Consecutive stream outputs of one name merged into one: the stored text no longer depends
    on when the kernel flushed its output."""
    merged: list = []
    for out in outputs:
        prev = merged[-1] if merged else None
        if (out.output_type == "stream" and prev is not None and prev.output_type == "stream"
                and prev.name == out.name):
            prev.text += out.text
        else:
            merged.append(out)
    return merged


def _after_load(html: str) -> str:
    """``html``'s scripts run on the page's load event (a theme may load plotly.js last)."""
    wrapped = re.sub(r"(<script[^>]*>)", r'\1window.addEventListener("load", function () {', html)
    return wrapped.replace("</script>", "});</script>")


#: a tqdm progress bar in a stream output
_PROGRESS = re.compile(r"\d+%\|.*\| \d+/\d+")


def _site_outputs(outputs: list) -> list:
    """The outputs a static page can show: loaders, widget views and progress bars dropped."""
    kept = []
    for out in outputs:
        if out.get("name") == "stderr" and _PROGRESS.search(out.get("text", "")):
            continue  # a tqdm bar frozen at its first frame ("0%| | 0/6") means nothing on a page
        data = out.get("data")
        if data is not None:
            if "application/vnd.holoviews_load.v0+json" in data:
                continue  # inlined BokehJS/Panel (megabytes): the site loads them once
            if PLOTLY in data:  # a plotly figure: HTML that draws it once plotly.js is loaded
                import plotly.io

                fig = plotly.io.from_json(json.dumps(data.pop(PLOTLY)))
                data["text/html"] = _after_load(plotly.io.to_html(fig, include_plotlyjs=False,
                                                                  full_html=False))
            for mime in _DROP_MIME:
                data.pop(mime, None)
                out.get("metadata", {}).pop(mime, None)
            if not data:
                continue
            text = data.get("text/plain", "")
            if set(data) == {"text/plain"} and _PROGRESS.search("".join(text)):
                continue  # a progress widget's text form, frozen at its first frame
        kept.append(out)
    return kept


def _provenance_cell(elapsed: float) -> nbformat.NotebookNode:
    from hetlab.machine import host_facts

    facts = host_facts()
    when = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    text = (f"*The outputs on this page were computed when `scripts/build_notebooks.py` executed "
            f"this notebook on {facts['cpu_model']} ({facts['cpu_count']} logical cores, "
            f"{facts['os']}, Python {facts['python']}) on {when}, in {elapsed:.0f} s. Timings, "
            f"device tables and charts are that machine's: run the notebook to see yours.*")
    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata = {"tags": [PROVENANCE_TAG]}
    return cell


def site_copy(nb: nbformat.NotebookNode, elapsed: float) -> nbformat.NotebookNode:
    """The executed notebook as the site shows it: all outputs, a provenance cell second."""
    site = nbformat.from_dict(nbformat.v4.new_notebook(metadata=dict(nb.metadata)))
    site.cells = [nbformat.from_dict(dict(c)) for c in nb.cells]
    for cell in site.cells:
        if cell.cell_type == "code":
            cell.outputs = _site_outputs(cell.outputs)
    site.cells.insert(1 if site.cells else 0, _provenance_cell(elapsed))
    for i, cell in enumerate(site.cells):
        cell.id = f"cell-{i:02d}"
    return site


def build(src: Path, timeout: int = 600) -> tuple[Path, float]:
    """Execute ``src`` and write its notebook and site copy; returns the path and run time (s)."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=parse_source(src))
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    elapsed = time.perf_counter() - t0
    nb.metadata.pop("widgets", None)
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:02d}"
        cell.metadata = {}
        if cell.cell_type == "code":
            cell.outputs = coalesce_streams(cell.outputs)
    SITE_NOTEBOOKS.mkdir(parents=True, exist_ok=True)
    nbformat.write(site_copy(nb, elapsed), SITE_NOTEBOOKS / f"{src.stem}.ipynb")
    for cell in nb.cells:
        if _ignored(cell):
            cell.outputs, cell.execution_count = [], None
    target = NOTEBOOKS / f"{src.stem}.ipynb"
    nbformat.write(nb, target)
    return target, elapsed


def _cells(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source) for c in nb.cells
            if PROVENANCE_TAG not in c.get("metadata", {}).get("tags", [])]


def check(src: Path) -> list[str]:
    """Problems of the stored notebook for ``src`` and its site copy: missing, stale, outputs."""
    target = NOTEBOOKS / f"{src.stem}.ipynb"
    if not target.exists():
        return [f"{target.name}: missing (run scripts/build_notebooks.py)"]
    stored = nbformat.read(target, as_version=4)
    want = [(c.cell_type, c.source) for c in parse_source(src)]
    problems = []
    if _cells(stored) != want:
        problems.append(f"{target.name}: cells differ from {src.name} (rebuild it)")
    for i, cell in enumerate(stored.cells):
        if _ignored(cell) and cell.outputs:
            problems.append(f"{target.name}: cell {i} is NBVAL_IGNORE_OUTPUT but stores outputs")
        if cell.cell_type == "code" and not _ignored(cell) and cell.execution_count is None \
                and cell.source.strip():
            problems.append(f"{target.name}: cell {i} was never executed (rebuild it)")
    site = SITE_NOTEBOOKS / target.name
    if not site.exists():
        problems.append(f"site/notebooks/{target.name}: missing (rebuild {src.stem})")
    elif _cells(nbformat.read(site, as_version=4)) != want:
        problems.append(f"site/notebooks/{target.name}: cells differ from {src.name} (rebuild it)")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("only", nargs="*", help="name prefixes, e.g. 04")
    p.add_argument("--check", action="store_true", help="check, do not execute")
    args = p.parse_args(argv)
    sources = sorted((NOTEBOOKS / "src").glob("[0-9][0-9]-*.py"))
    if args.only:
        sources = [s for s in sources if s.stem.startswith(tuple(args.only))]
    if args.check:
        problems = [msg for s in sources for msg in check(s)]
        print("\n".join(problems) or f"{len(sources)} notebooks up to date")
        return 1 if problems else 0
    for src in sources:
        target, elapsed = build(src)
        print(f"{target.relative_to(ROOT)}: executed in {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
