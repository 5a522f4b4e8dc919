"""hetlab.offload imports one way: front < analysis < targets < searching < cli; no cycles.

``runtime`` (alias guard, measurement) imports nothing else of the package. The import graph
(function-level imports included) and the cycle finder are tests/test_layers.py's.
"""

from __future__ import annotations

import re
from pathlib import Path

from .test_layers import cycles, graph

ROOT = Path(__file__).resolve().parents[1] / "hetlab" / "offload"
PREFIX = "hetlab.offload"
#: layer of each top-level module or subpackage of hetlab.offload (higher imports lower)
LAYERS = {"runtime": 0, "front": 0, "examples": 0, "analysis": 1, "targets": 2,
          "searching": 3, "cli": 4, "__init__": 5}


def _offload_graph() -> dict[str, set[str]]:
    def inside(mod: str) -> bool:  # hetlab.offload and below, not hetlab.offload_memory
        return mod == PREFIX or mod.startswith(PREFIX + ".")

    return {m: {d for d in deps if inside(d)} for m, deps in graph().items() if inside(m)}


def _layer(mod: str) -> int:
    parts = mod.split(".")
    return LAYERS[parts[2] if len(parts) > 2 else "__init__"]


def test_no_import_cycles_inside_offload():
    assert cycles(_offload_graph()) == []


def test_offload_layers_import_downwards():
    bad = [f"{m} imports {d}" for m, deps in _offload_graph().items() for d in deps
           if d != PREFIX and _layer(d) > _layer(m)]
    assert not bad, "\n".join(sorted(bad))


def test_runtime_and_front_import_nothing_above():
    for m, deps in _offload_graph().items():
        for low in ("runtime", "front"):
            if m.startswith(f"{PREFIX}.{low}"):
                assert all(d.startswith(f"{PREFIX}.{low}") for d in deps), (m, deps)


def test_no_target_name_branches_outside_targets():
    pattern = re.compile(r"target\s*[!=]=\s*\"(numba|cuda|cupy|fpga)\"")
    hits = [f"{p.relative_to(ROOT)}:{k}" for p in ROOT.rglob("*.py")
            for k, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits
