"""Build the notebook series from its sources, execute it, and store checkable outputs.

Sources are ``notebooks/src/NN-topic.py`` in the "percent" format (``# %%`` starts a code cell,
``# %% [markdown]`` a markdown cell whose lines start with ``# ``). Each notebook is executed
with nbclient in ``notebooks/``; outputs of deterministic cells are stored so nbval can compare
them; cells whose first line is ``# NBVAL_IGNORE_OUTPUT`` (timings, plots, device tables) are
stored without outputs.

Usage::

    python scripts/build_notebooks.py            # rebuild every notebook (executes them)
    python scripts/build_notebooks.py 04         # only notebooks whose name starts with 04
    python scripts/build_notebooks.py --check    # fail if a notebook is stale or holds
                                                 # outputs of ignored cells (no execution)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
IGNORE = "# NBVAL_IGNORE_OUTPUT"
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def parse_source(path: Path) -> list[nbformat.NotebookNode]:
    """Cells of a percent-format source file."""
    cells: list[nbformat.NotebookNode] = []
    kind, lines = None, []

    def flush() -> None:
        text = "\n".join(lines).strip("\n")
        if kind == "markdown":
            md = "\n".join(ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in
                           text.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(md))
        elif kind == "code" and text:
            cells.append(nbformat.v4.new_code_cell(text))

    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# %%"):
            flush()
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        elif kind is not None:
            lines.append(line)
    flush()
    return cells


def _ignored(cell: nbformat.NotebookNode) -> bool:
    return cell.cell_type == "code" and cell.source.startswith(IGNORE)


def build(src: Path, timeout: int = 600) -> tuple[Path, float]:
    """Execute ``src`` and write its notebook; returns the path and run time in seconds."""
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook(cells=parse_source(src))
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.metadata["language_info"] = {"name": "python"}
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    elapsed = time.perf_counter() - t0
    for i, cell in enumerate(nb.cells):
        cell.id = f"cell-{i:02d}"
        cell.metadata = {}
        if _ignored(cell):
            cell.outputs, cell.execution_count = [], None
    nb.metadata.pop("widgets", None)
    target = NOTEBOOKS / f"{src.stem}.ipynb"
    nbformat.write(nb, target)
    return target, elapsed


def check(src: Path) -> list[str]:
    """Problems of the stored notebook for ``src``: missing, stale sources, ignored outputs."""
    target = NOTEBOOKS / f"{src.stem}.ipynb"
    if not target.exists():
        return [f"{target.name}: missing (run scripts/build_notebooks.py)"]
    stored = nbformat.read(target, as_version=4)
    want = [(c.cell_type, c.source) for c in parse_source(src)]
    have = [(c.cell_type, c.source) for c in stored.cells]
    problems = []
    if want != have:
        problems.append(f"{target.name}: cells differ from {src.name} (rebuild it)")
    for i, cell in enumerate(stored.cells):
        if _ignored(cell) and cell.outputs:
            problems.append(f"{target.name}: cell {i} is NBVAL_IGNORE_OUTPUT but stores outputs")
        if cell.cell_type == "code" and not _ignored(cell) and cell.execution_count is None \
                and cell.source.strip():
            problems.append(f"{target.name}: cell {i} was never executed (rebuild it)")
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
