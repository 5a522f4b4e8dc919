"""Build hook: the wheel carries copies of the top-level ``overlays/``, ``data/`` and notebooks.

All metadata lives in ``pyproject.toml``; this file only adds one step to ``build_py``. The
top-level folders stay the sources: a wheel gets copies under ``hetlab/_data/<folder>``, where
``hetlab._resources.resource_dir`` finds them; a checkout and an editable install (``pip
install -e .``, which ``make`` uses) read the top-level folders directly, so nothing is copied
in editable mode and the sources are never shadowed. A copy made at build time, rather than
symlinks under ``hetlab/`` and ``package-data``, keeps the sources where the build scripts,
docs and notebooks name them and works the same from a checkout and from an sdist
(``MANIFEST.in`` grafts the folders into it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent

#: folder → names left out of its copy (build outputs, caches)
SHIPPED = {
    "overlays": ("build", "__pycache__", "*.pyc", "*.so", "*.o"),
    "data": ("__pycache__", "*.pyc", ".ipynb_checkpoints"),
}
#: the notebook series: only the notebooks themselves (their sources are for maintainers)
NOTEBOOKS = "*.ipynb"


class BuildPyWithData(build_py):
    """``build_py`` that also copies the shipped folders into ``<build_lib>/hetlab/_data``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # the checkout's own folders are read in place
            return
        dest = Path(self.build_lib) / "hetlab" / "_data"
        if dest.exists():
            shutil.rmtree(dest)  # a stale copy from an earlier build must not leak in
        for folder, ignore in SHIPPED.items():
            src = ROOT / folder
            if not src.is_dir():
                raise SystemExit(f"setup.py: {src} is missing; build from a checkout or sdist")
            shutil.copytree(src, dest / folder, ignore=shutil.ignore_patterns(*ignore))
        nb_dest = dest / "notebooks"
        nb_dest.mkdir(parents=True)
        for nb in sorted((ROOT / "notebooks").glob(NOTEBOOKS)):
            shutil.copy2(nb, nb_dest / nb.name)


setup(cmdclass={"build_py": BuildPyWithData})
