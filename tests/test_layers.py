"""Import structure: no cycles between hetlab's modules, and the layers import one way only.

Layer order (lowest first; a module may import from its own layer and the ones below):
errors < core < backends < kernels (and the FPGA infrastructure) < bench, results, sweep,
offload < viz, widgets, the ``ds.hetlab`` accessor < cli. ``results`` builds Datasets that
sweeps return, so it sits beside them rather than above.
Imports inside functions count too (a lazy import is still a dependency), except those under
``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "hetlab"

#: top-level module or package of hetlab → its layer (higher imports lower, never the reverse)
LAYERS: dict[str, int] = {
    # 0: the error classes, the logger, the version and the shipped-files finder
    "errors": 0, "log": 0, "_version": 0, "_resources": 0,
    # 1: the kernel contract, registry and dispatch; machine facts
    "core": 1, "machine": 1,
    # 2: backends (device detection and array movement)
    "backends": 2, "devices": 2,
    # 3: kernel families and the FPGA infrastructure they run on
    "fpga": 3, "kernels": 3, "sparse": 3, "quant": 3,
    # 4: what runs kernels: measurement, results, sweeps, offload, the learners' checker
    "bench": 4, "results": 4, "sweep": 4, "_sweep_args": 4, "distributed": 4, "recorded": 4,
    "offload": 4, "check": 4, "auto": 4, "energy": 4, "offload_memory": 4,
    # 5: presentation
    "viz": 5, "widgets": 5, "accessor": 5, "exercises": 5,
    # 6: entry points
    "cli": 6, "__main__": 6, "__init__": 6,
}


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """hetlab modules that ``path`` imports (absolute or relative, any depth)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text())
    skip = _type_checking_lines(tree)
    found: set[str] = set()
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                root = ".".join(base + ([node.module] if node.module else []))
            else:
                root = node.module or ""
            # ``from pkg import mod`` is an edge to pkg.mod; ``from mod import name`` to mod
            targets = [f"{root}.{a.name}" if f"{root}.{a.name}" in modules else root
                       for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name and t.startswith("hetlab"):
                found.add(t)
    return found


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(files)
    g = {m: imports_of(p, modules) for m, p in files.items()}
    # a package's __init__ importing its own submodules is how re-exports work: not an edge
    # that can close a cycle through the package itself
    return {m: {t for t in deps if not t.startswith(m + ".")} for m, deps in g.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def layer(module: str) -> int:
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    if top not in LAYERS:
        pytest.fail(f"{module}: top-level name {top!r} has no layer; add it to LAYERS")
    return LAYERS[top]


def test_no_import_cycles():
    found = cycles(graph())
    assert not found, "import cycles:\n" + "\n".join(" ↔ ".join(c) for c in found)


def test_layers_import_downwards():
    bad = []
    for m, deps in graph().items():
        if m == "hetlab":
            continue
        for d in deps:
            if d != "hetlab" and layer(d) > layer(m):
                bad.append(f"{m} (layer {layer(m)}) imports {d} (layer {layer(d)})")
            if d == "hetlab" and layer(m) < LAYERS["cli"]:
                bad.append(f"{m} imports the hetlab package itself (import the module instead)")
    assert not bad, "\n".join(sorted(bad))


def test_the_checker_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
