"""hetlab.offload imports one way: front < analysis < targets < searching < cli; no cycles.

``runtime`` (alias guard, measurement) imports nothing else of the package. Imports inside
functions count (a lazy import is still a dependency).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "hetlab" / "offload"
#: layer of each top-level module or subpackage of hetlab.offload (higher imports lower)
LAYERS = {"runtime": 0, "front": 0, "analysis": 1, "targets": 2, "searching": 3,
          "examples": 0, "cli": 4, "__init__": 5}


def _name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    files = {_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
                root = ".".join(base + ([node.module] if node.module else []))
                names = [f"{root}.{a.name}" for a in node.names] + [root]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for n in names:
                while n and n not in files:
                    n = n.rpartition(".")[0]
                if n and n != mod and n.startswith("offload") and not n.startswith(mod + "."):
                    deps.add(n)
        graph[mod] = deps
    return graph


def _layer(mod: str) -> int:
    parts = mod.split(".")
    return LAYERS[parts[1] if len(parts) > 1 else "__init__"]


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles_inside_offload():
    assert _cycles(_graph()) == []


def test_offload_layers_import_downwards():
    bad = [f"{m} imports {d}" for m, deps in _graph().items() for d in deps
           if d != "offload" and _layer(d) > _layer(m)]
    assert not bad, "\n".join(sorted(bad))


def test_runtime_and_front_import_nothing_above():
    g = _graph()
    for m, deps in g.items():
        if m.startswith(("offload.runtime", "offload.front")):
            assert all(d.startswith(m.split(".")[0] + "." + m.split(".")[1]) for d in deps), m


def test_no_target_name_branches_outside_targets():
    import re

    pattern = re.compile(r"target\s*[!=]=\s*\"(numba|cuda|cupy|fpga)\"")
    hits = [f"{p.relative_to(ROOT)}:{k}" for p in ROOT.rglob("*.py")
            for k, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, hits
