"""Generated kernels imported from real files, so ``inspect.getsource`` (which the offload
analysis reads) finds their source: one temporary folder per test session."""

from __future__ import annotations

import importlib.util
import itertools
import sys
import tempfile
from pathlib import Path
from typing import Any

_DIR: list[Path] = []
_COUNT = itertools.count()


def load_source(src: str, name: str = "k", prefix: str = "gen") -> Any:
    """Write ``src`` to a fresh module file, import it, and return its attribute ``name``."""
    if not _DIR:
        _DIR.append(Path(tempfile.mkdtemp(prefix="hetlab-tests-src-")))
    mod_name = f"_{prefix}_{next(_COUNT)}"
    path = _DIR[0] / f"{mod_name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    spec.loader.exec_module(mod)
    return getattr(mod, name)
