"""FPGA candidates: loop nests, their arithmetic intensity with the actual arguments, and why a
nest is (not) worth an FPGA kernel.

A **nest** is the subtree of an outermost parallelizable loop (verdict parallel or reduction,
its parent not parallelizable). Its **arithmetic intensity** is flops per byte of distinct
array traffic, counted from the AST with the trip counts the actual arguments give:

* flops: every arithmetic operation outside subscripts (``+ - * / // % **``, an augmented
  assignment's operator, a call to ``min``/``max``/``abs`` or a ``math``/``numpy`` function:
  1 each; comparisons, index arithmetic and loop control: 0), times the product of the trip
  counts of the nest loops around the statement (both branches of an ``if`` counted);
* bytes: per array, the elements inside the bounding box of its subscripts over the nest's
  iteration space (per dimension, clipped to the array's extent; a subscript that is not
  affine or uses a value unknown when the nest starts spans the whole extent) × item size,
  counted once if only read or only written and twice if both.

A nest is an FPGA **candidate** when its intensity is at least the threshold
(:data:`INTENSITY_THRESHOLD`, 2 flop/B by default: below it a nest is bandwidth-bound on
either side — the modeled PYNQ-Z2 port moves 0.8 GB/s — and an FPGA kernel cannot pay for
its hours of compilation) and the emulator can run and pipeline it: every loop of the nest
has a trip count fixed when the nest starts (bounds from arguments, shapes and names assigned
once outside loops), every array it touches is a C-contiguous float32/float64/int32/int64
argument of the function indexed by affine subscripts, and every scalar it writes is a
reduction of its root or private to it.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...analysis.report import Report
from ...analysis.scalars import live_after
from ...front.loops import build_tree
from ..base import for_nodes

__all__ = ["INTENSITY_THRESHOLD", "Nest", "static_env", "find_nests", "kind_of"]

#: flops per byte of distinct traffic from which a nest is an FPGA candidate (documented above)
INTENSITY_THRESHOLD = 2.0
_DTYPES = {"float64": "double", "float32": "float", "int64": "int64_t", "int32": "int32_t"}
_SAFE = {"len": len, "int": int, "min": min, "max": max, "abs": abs, "float": float,
         "range": range}
_FLOP_CALLS = {"min", "max", "abs"}


@dataclass
class Nest:
    """One candidate-or-not nest with the facts its FPGA kernel is generated from."""

    root: str
    loops: list[str]
    line: int
    node: ast.For = field(repr=False)
    flops: float = math.nan
    bytes: float = math.nan
    candidate: bool = False
    why: str = ""
    #: arrays: name → (C type, shape, read, written)
    arrays: dict[str, tuple[str, tuple[int, ...], bool, bool]] = field(default_factory=dict)
    #: scalars the kernel reads (passed by value): name → "i" | "f"
    scalars: dict[str, str] = field(default_factory=dict)
    #: reductions of the root (in/out through a 1-element pointer): name → op
    reductions: dict[str, str] = field(default_factory=dict)
    #: private scalars declared in the kernel: name → "i" | "f"
    private: dict[str, str] = field(default_factory=dict)
    #: trip count of each loop of the nest with the actual arguments (id → trips)
    trips: dict[str, int] = field(default_factory=dict)
    #: extents of arrays the nest does not index but whose shape it reads: "X_d0" → (X, 0)
    shapes: dict[str, tuple[str, int]] = field(default_factory=dict)

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes else math.nan


def static_env(report: Report, args: tuple) -> dict[str, Any]:
    """Values known when the function starts: its arguments and names assigned exactly once,
    at the top level (outside loops), from expressions of those (``n = A.shape[0]``)."""
    env = dict(zip(report.params, args, strict=True))
    stores: dict[str, int] = {}
    for n in ast.walk(report.source.tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] = stores.get(n.id, 0) + 1
    for s in report.source.tree.body:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Name) and stores[s.targets[0].id] == 1 \
                and s.targets[0].id not in env:
            try:
                env[s.targets[0].id] = _eval(s.value, env)
            except Exception:
                continue
    return env


def _eval(node: ast.AST, env: dict[str, Any]) -> Any:
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name)
                                            and n.func.id in _SAFE):
            raise ValueError("call")
        if isinstance(n, ast.Attribute) and n.attr not in ("shape", "size", "ndim"):
            raise ValueError("attribute")
    code = compile(ast.Expression(ast.fix_missing_locations(copy_expr(node))), "<env>", "eval")
    return eval(code, {"__builtins__": _SAFE}, dict(env))


def copy_expr(node: ast.AST) -> ast.expr:
    import copy

    return copy.deepcopy(node)  # type: ignore[return-value]


def kind_of(node: ast.AST, scal: dict[str, str], arrays: dict[str, Any]) -> str:
    """``"f"`` when the expression is a float in Python, else ``"i"`` (ints and bools)."""
    if isinstance(node, ast.Constant):
        return "f" if isinstance(node.value, float) else "i"
    if isinstance(node, ast.Name):
        return scal.get(node.id, "i")
    if isinstance(node, ast.Subscript):
        base = node.value
        if isinstance(base, ast.Name) and base.id in arrays:
            return "f" if np.dtype(arrays[base.id]).kind == "f" else "i"
        return "i"  # A.shape[d]
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Div):
            return "f"
        k = {kind_of(node.left, scal, arrays), kind_of(node.right, scal, arrays)}
        return "f" if "f" in k else "i"
    if isinstance(node, ast.UnaryOp):
        return "i" if isinstance(node.op, ast.Not) else kind_of(node.operand, scal, arrays)
    if isinstance(node, ast.IfExp):
        k = {kind_of(node.body, scal, arrays), kind_of(node.orelse, scal, arrays)}
        return "f" if "f" in k else "i"
    if isinstance(node, ast.Call):
        f = node.func
        name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) \
            else ""
        if name in ("int", "len"):
            return "i"
        if name in ("min", "max", "abs"):
            k = {kind_of(a, scal, arrays) for a in node.args}
            return "f" if "f" in k else "i"
        return "f"
    return "i"


def _scalar_kinds(report: Report, env: dict[str, Any], arrays: dict[str, Any]) -> dict[str, str]:
    """Kind of every scalar name of the function (fixpoint over its assignments)."""
    tree = report.source.tree
    kinds: dict[str, str] = {}
    for k, v in report.source.namespace.items():  # module-level numbers the nest may read
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            kinds[k] = "f" if isinstance(v, (float, np.floating)) else "i"
    for k, v in env.items():
        if not isinstance(v, np.ndarray):
            kinds[k] = "f" if isinstance(v, (float, np.floating)) else "i"
    assigns = [(t.id, s.value) for s in ast.walk(tree) if isinstance(s, ast.Assign)
               for t in s.targets if isinstance(t, ast.Name)]
    assigns += [(s.target.id, s.value) for s in ast.walk(tree)
                if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name)]
    for _ in range(4):
        for name, value in assigns:
            if name not in env and kind_of(value, kinds, arrays) == "f":
                kinds[name] = "f"
    return kinds


def _flops(node: ast.AST) -> int:
    if isinstance(node, ast.Subscript):
        return _flops(node.value)
    n = 0
    if isinstance(node, (ast.BinOp, ast.AugAssign)):
        n = 1
    elif isinstance(node, ast.Call):
        f = node.func
        n = 1 if (isinstance(f, ast.Name) and f.id in _FLOP_CALLS) \
            or isinstance(f, ast.Attribute) else 0
    return n + sum(_flops(c) for c in ast.iter_child_nodes(node)
                   if not isinstance(c, (ast.For, ast.If, ast.While)))


def _trip(node: ast.For, env: dict[str, Any]) -> int:
    return len(_eval(node.iter, env))


def find_nests(report: Report, args: tuple, threshold: float = INTENSITY_THRESHOLD
               ) -> list[Nest]:
    """Every nest of ``report`` with its intensity and candidacy for the arguments ``args``."""
    env = static_env(report, args)
    params = dict(zip(report.params, args, strict=True))
    nodes = list(for_nodes(report.source.tree.body))
    tree = build_tree(report.source.tree, report.source.namespace, report.source.first_line)
    array_dtypes = {k: v.dtype for k, v in params.items() if isinstance(v, np.ndarray)}
    kinds = _scalar_kinds(report, env, array_dtypes)
    out = []
    for lp in report.loops:
        parent = report.loops[lp.parent] if lp.parent is not None else None
        if not lp.parallelizable or (parent is not None and parent.parallelizable):
            continue
        node = nodes[lp.index]
        inside = [x.id for x in report.loops if x.index == lp.index
                  or _within(report, x.index, lp.index)]
        nest = Nest(lp.id, inside, lp.line, node, reductions=dict(lp.reductions))
        _fill(nest, report, tree, env, params, kinds, nodes)
        if not nest.why and nest.intensity < threshold:
            nest.why = (f"not an FPGA candidate: intensity {nest.intensity:.3g} flop/B < "
                        f"threshold {threshold:g}")
        nest.candidate = not nest.why
        out.append(nest)
    return out


def _within(report: Report, idx: int, root: int) -> bool:
    p = report.loops[idx].parent
    while p is not None:
        if p == root:
            return True
        p = report.loops[p].parent
    return False


def _fill(nest: Nest, report: Report, tree: Any, env: dict[str, Any], params: dict[str, Any],
          kinds: dict[str, str], nodes: list[ast.For]) -> None:
    """Trips, flops, bytes, arrays, scalars of ``nest``; ``nest.why`` on the first obstacle."""
    idx = {report.loop(k).index for k in nest.loops}
    loose = next((n for n in ast.walk(nest.node) if isinstance(n, ast.While)), None)
    if loose is not None:  # escape-time / Newton iterations: not a fixed pipeline
        line = report.source.first_line + loose.lineno - 1
        nest.why = (f"not an FPGA candidate: the while loop at line {line} has no trip count "
                    "fixed when the nest starts")
        return
    for k in nest.loops:
        lp = report.loop(k)
        if lp.verdict == "unsupported":
            nest.why = f"not an FPGA candidate: loop {k} is unsupported ({lp.why})"
            return
        try:
            nest.trips[k] = _trip(nodes[lp.index], env)
        except Exception:
            nest.why = (f"not an FPGA candidate: loop {k} ({lp.var}) has no trip count fixed "
                        f"when the nest starts ({ast.unparse(nodes[lp.index].iter)})")
            return
    # flops: per statement × trips of the nest loops around it
    flops = 0.0

    def walk(stmts: list[ast.stmt], mult: float) -> None:
        nonlocal flops
        for s in stmts:
            if isinstance(s, ast.For):
                k = report.loops[nodes.index(s)].id
                walk(s.body, mult * nest.trips[k])
            elif isinstance(s, ast.If):
                flops += mult * _flops(s.test)
                walk(s.body, mult)
                walk(s.orelse, mult)
            else:
                flops += mult * _flops(s)

    walk([nest.node], 1.0)
    nest.flops = flops
    accs = [a for a in tree.accesses if a.loops and a.loops[-1] in idx]
    ranges = _var_ranges(nest, report, nodes, env)
    total = 0.0
    for name in dict.fromkeys(a.array for a in accs):
        mine = [a for a in accs if a.array == name]
        arr = params.get(name)
        if not isinstance(arr, np.ndarray):
            nest.why = nest.why or (f"not an FPGA candidate: {name} is not an array argument "
                                    "of the function")
            continue
        if str(arr.dtype) not in _DTYPES or not arr.flags.c_contiguous:
            nest.why = nest.why or (f"not an FPGA candidate: {name} must be a C-contiguous "
                                    f"float32/float64/int32/int64 array; got {arr.dtype}")
        if any(s is None for a in mine for s in a.subs) or any(len(a.subs) != arr.ndim
                                                               for a in mine):
            nest.why = nest.why or (f"not an FPGA candidate: a subscript of {name} is not "
                                    "affine (or indexes fewer dimensions than it has)")
        read, written = any(not a.write for a in mine), any(a.write for a in mine)
        nest.arrays[name] = (_DTYPES.get(str(arr.dtype), "?"), arr.shape, read, written)
        elems = 1.0
        for d in range(arr.ndim):
            lo, hi = math.inf, -math.inf
            for a in mine:
                r = _span(a.subs[d] if d < len(a.subs) else None, ranges, env)
                lo, hi = (0, arr.shape[d] - 1) if r is None else (min(lo, r[0]),
                                                                  max(hi, r[1]))
                if r is None:
                    break
            lo, hi = max(lo, 0), min(hi, arr.shape[d] - 1)
            elems *= max(hi - lo + 1, 0)
        total += elems * arr.itemsize * (int(read) + int(written))
    nest.bytes = total
    if nest.why:
        return
    lp = report.loop(nest.root)
    loop_vars = {report.loop(k).var for k in nest.loops}
    written = {n.id for n in ast.walk(nest.node) if isinstance(n, ast.Name)
               and isinstance(n.ctx, ast.Store)} - loop_vars
    private = set(lp.private) | {s for k in nest.loops for s in report.loop(k).private}
    for s in sorted(written):
        if s in nest.reductions:
            continue
        if s in private and not live_after(tree.loops[lp.index].path, s):
            nest.private[s] = kinds.get(s, "i")
        else:
            nest.why = f"not an FPGA candidate: scalar {s} is written and used after the nest"
            return
    skip = set(nest.arrays) | loop_vars | set(nest.private) | set(nest.reductions) | {
        "range", "min", "max", "abs", "int", "float", "len", "np", "numpy", "math"}
    shape_of: set[int] = set()
    for n in ast.walk(nest.node):  # X.shape[d] / len(X) of an array the nest does not index
        base, d = None, 0
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Attribute) \
                and n.value.attr == "shape" and isinstance(n.value.value, ast.Name) \
                and isinstance(n.slice, ast.Constant):
            base, d = n.value.value, int(n.slice.value)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" \
                and len(n.args) == 1 and isinstance(n.args[0], ast.Name):
            base = n.args[0]
        if base is not None:
            shape_of.add(id(base))
            if base.id not in nest.arrays:
                if not isinstance(params.get(base.id), np.ndarray):
                    nest.why = (f"not an FPGA candidate: the shape of {base.id} is read but "
                                f"{base.id} is not an array argument")
                    return
                nest.shapes[f"{base.id}_d{d}"] = (base.id, d)
    for n in ast.walk(nest.node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in skip \
                and id(n) not in shape_of:
            nest.scalars[n.id] = kinds.get(n.id, "i")


def _var_ranges(nest: Nest, report: Report, nodes: list[ast.For], env: dict[str, Any]
                ) -> dict[str, tuple[float, float]]:
    out = {}
    for k in nest.loops:
        lp = report.loop(k)
        r = _eval(nodes[lp.index].iter, env)
        if len(r):
            out[lp.var] = (min(r[0], r[-1]), max(r[0], r[-1]))
        else:
            out[lp.var] = (math.inf, -math.inf)
    return out


def _span(aff: Any, ranges: dict[str, tuple[float, float]], env: dict[str, Any]
          ) -> tuple[float, float] | None:
    """[min, max] of an affine subscript over the nest; None when something is unknown."""
    if aff is None:
        return None
    lo = hi = float(aff.const)
    for key, c in aff.coefs.items():
        if key in ranges:
            a, b = ranges[key]
            lo += min(c * a, c * b)
            hi += max(c * a, c * b)
            continue
        try:
            v = float(_eval(ast.parse(key, mode="eval").body, env))
        except Exception:
            return None
        lo += c * v
        hi += c * v
    return lo, hi
