"""Sphinx configuration of hetlab's site: the notebook series with its figures, docs/, the API.

Built by ``make site`` (``sphinx-build -W --keep-going -b html site site/_build/html``), offline:
the notebooks are not executed here (``nb_execution_mode = "off"``); their pages show the
outputs ``scripts/build_notebooks.py`` stored in ``site/notebooks/`` when it last executed the
series, with the machine and date in a cell after each title. BokehJS, Panel's bundle and
plotly.js are copied from the installed packages into ``_static`` and loaded by the pages that
hold such a chart (the notebook copies hold no inlined JavaScript), so the charts render without
a network. ``docs/*.md`` are copied to ``site/docs/`` at each build (a generated folder: edit
the files in ``docs/``). Why Sphinx with MyST-NB: ``building.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

import _site  # noqa: E402  (site/_site.py: staging of docs and JavaScript, link rewriting)

import hetlab  # noqa: E402

project = "hetlab"
author = "hetlab contributors"
copyright = "hetlab contributors"
version = release = hetlab.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
templates_path = ["_templates"]

# notebooks: stored outputs, never executed at site build
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3
suppress_warnings: list[str] = []

# API reference from the docstrings (numpydoc style, read by napoleon)
autosummary_generate = True
autosummary_imported_members = False
autosummary_ignore_module_all = False  # a module page documents what its __all__ names
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "description"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "furo"
html_title = f"hetlab {release}"
html_static_path = [str(_site.STATIC)]


def setup(app):
    _site.stage_docs(ROOT / "docs", HERE / "docs")
    _site.stage_static()
    app.connect("html-page-context", _site.add_page_scripts)
    app.connect("build-finished", _site.rewrite_cdn_links)
