"""GPU reductions: loops a numba.cuda kernel can run with atomic updates, and the rewrite.

Two kinds of loop are offloadable to the GPU beyond the plainly parallel ones:

* **scalar reductions** (verdict ``reduction``) with ``+`` (``s += e``, ``s -= e``,
  ``s = s + e``), ``min`` or ``max`` (``m = max(m, e)``). Inside a thread the scalar becomes a
  thread-local accumulator (``_acc_s``: 0 for ``+``; for min/max the device value read at
  the thread's start, harmless since min and max are idempotent); at the thread's end one
  ``cuda.atomic.add / max / min`` folds it into a 1-element device array ``_r_s``, which the
  host initialises from the scalar's value before the launch and copies back once after it.
  Product reductions (``s *= e``) have no atomic and stay on the host.
* **array-element updates**: a loop the analysis keeps sequential only because an array is
  updated ``A[sub] += e`` (``-=``, ``A[sub] = A[sub] + e``, ``A[sub] = max(A[sub], e)``,
  ``min``) from several iterations — ``y[i] += …`` inside a ``j`` loop, or the histogram's
  indirect ``counts[b] += 1`` — where every access to ``A`` in the loop is such an update of
  one kind and neither ``e`` nor ``sub`` reads ``A``. Each update becomes
  ``cuda.atomic.add(A, sub, e)`` (``max``/``min``). Any other carried dependence, or a
  scalar that carries a value, keeps the loop off the GPU.

Float atomics add in whatever order the threads arrive, so a sum is reassociated: its last
bits differ from the serial loop's and from one run to the next. The search's verification
rule (NPBench: ``allclose(rtol=1e-5, atol=1e-8)`` or relative L2 error < 1e-5) accepts that;
integer sums, min and max are exact.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass, field

from ...analysis.report import Report

__all__ = ["Atomics", "atomic_plan", "gpu_offloadable", "rewrite_kernel_body"]

_ATOMIC = {"+": "add", "min": "min", "max": "max"}


@dataclass
class Atomics:
    """What a kernel loop needs atomics for: scalar reductions and updated arrays (→ op)."""

    scalars: dict[str, str] = field(default_factory=dict)
    arrays: dict[str, str] = field(default_factory=dict)

    def merge(self, other: Atomics) -> Atomics:
        return Atomics({**self.scalars, **other.scalars}, {**self.arrays, **other.arrays})

    def __bool__(self) -> bool:
        return bool(self.scalars or self.arrays)

    def describe(self) -> str:
        parts = [f"{s} ({op})" for s, op in self.scalars.items()]
        parts += [f"{a}[…] ({op})" for a, op in self.arrays.items()]
        return "atomic " + ", ".join(parts) if parts else ""


def _elem_update(s: ast.stmt) -> tuple[str, str, ast.expr, ast.expr] | None:
    """``A[sub] op= e`` forms as (array, op, subscript node, value expression)."""
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Subscript) \
            and isinstance(s.target.value, ast.Name):
        if isinstance(s.op, ast.Add):
            return s.target.value.id, "+", s.target.slice, s.value
        if isinstance(s.op, ast.Sub):
            return s.target.value.id, "+", s.target.slice, ast.UnaryOp(ast.USub(), s.value)
        return None
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Subscript)
            and isinstance(s.targets[0].value, ast.Name)):
        return None
    t, v = s.targets[0], s.value
    name, key = t.value.id, ast.dump(t)  # type: ignore[union-attr]

    def same(node: ast.AST) -> bool:
        return isinstance(node, ast.Subscript) and ast.dump(
            ast.Subscript(node.value, node.slice, ast.Store())) == key

    if isinstance(v, ast.BinOp) and isinstance(v.op, ast.Add):
        if same(v.left):
            return name, "+", t.slice, v.right
        if same(v.right):
            return name, "+", t.slice, v.left
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in ("min", "max") \
            and len(v.args) == 2 and not v.keywords:
        a, b = v.args
        if same(a):
            return name, v.func.id, t.slice, b
        if same(b):
            return name, v.func.id, t.slice, a
    return None


def _reads(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _array_op(body: list[ast.stmt], array: str) -> str | None:
    """The one update kind of ``array`` in ``body`` when every access to it is an update."""
    ops: set[str] = set()
    updates = 0
    for s in (n for st in body for n in ast.walk(st) if isinstance(n, ast.stmt)):
        got = _elem_update(s)
        if got is not None and got[0] == array:
            _, op, sub, val = got
            if _reads(sub, array) or _reads(val, array):
                return None
            ops.add(op)
            updates += 1
    uses = sum(1 for st in body for n in ast.walk(st)
               if isinstance(n, ast.Name) and n.id == array)
    # an augmented update names the array once; ``A[s] = A[s] + e`` / max(...) twice
    expected = sum(1 if isinstance(s, ast.AugAssign) else 2
                   for st in body for s in ast.walk(st)
                   if isinstance(s, ast.stmt) and (g := _elem_update(s)) is not None
                   and g[0] == array)
    if not updates or uses != expected or len(ops) != 1:
        return None
    return ops.pop()


def atomic_plan(report: Report, loop_id: str) -> Atomics | None:
    """The atomics a kernel over ``loop_id`` needs, or None when the loop cannot be one."""
    lp = report.loop(loop_id)
    if lp.verdict == "parallel":
        return Atomics()
    if lp.verdict == "reduction":
        if any(op not in _ATOMIC for op in lp.reductions.values()):
            return None
        return Atomics(dict(lp.reductions))
    if lp.verdict != "sequential" or not lp.dependences \
            or any(op not in _ATOMIC for op in lp.reductions.values()):
        return None
    if len(lp.reasons) != len(lp.dependences):  # a scalar carries a value, or is live after
        return None
    node = next(n for k, n in enumerate(_for_nodes(report)) if k == lp.index)
    arrays: dict[str, str] = {}
    for d in lp.dependences:
        if d.array not in arrays:
            op = _array_op(node.body, d.array)
            if op is None:
                return None
            arrays[d.array] = op
    return Atomics(dict(lp.reductions), arrays)


def _for_nodes(report: Report) -> list[ast.For]:
    from ..base import for_nodes

    return list(for_nodes(report.source.tree.body))


def gpu_offloadable(report: Report) -> dict[str, Atomics]:
    """Loops a numba.cuda kernel can be made of (id → the atomics it needs), in order."""
    out = {}
    for lp in report.loops:
        got = atomic_plan(report, lp.id)
        if got is not None:
            out[lp.id] = got
    return out


class _Rewrite(ast.NodeTransformer):
    def __init__(self, atomics: Atomics) -> None:
        self.atomics = atomics

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.atomics.scalars:
            return ast.copy_location(ast.Name(f"_acc_{node.id}", node.ctx), node)
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.stmt):
            got = _elem_update(node)  # type: ignore[arg-type]
            if got is not None and got[0] in self.atomics.arrays:
                name, op, sub, val = got
                call = ast.Call(
                    ast.Attribute(ast.Attribute(ast.Name("cuda", ast.Load()), "atomic",
                                                ast.Load()), _ATOMIC[op], ast.Load()),
                    [ast.Name(name, ast.Load()), self.visit(copy.deepcopy(sub)),
                     self.visit(copy.deepcopy(val))], [])
                return ast.copy_location(ast.Expr(call), node)
        return super().generic_visit(node)


def rewrite_kernel_body(body: list[ast.stmt], atomics: Atomics) -> list[ast.stmt]:
    """A thread's body with reductions on local accumulators and array updates as atomics.

    Scalar ``s`` becomes ``_acc_s`` (initialised at the top, folded into ``_r_s[0]`` by one
    atomic at the end); each update of an array in ``atomics.arrays`` becomes one
    ``cuda.atomic.<op>`` call.
    """
    new = [_Rewrite(atomics).visit(copy.deepcopy(s)) for s in body]
    head, tail = [], []
    for s, op in atomics.scalars.items():
        init = "0" if op == "+" else f"_r_{s}[0]"
        head.append(f"_acc_{s} = {init}")
        tail.append(f"cuda.atomic.{_ATOMIC[op]}(_r_{s}, 0, _acc_{s})")
    return ast.parse("\n".join(head)).body + new + ast.parse("\n".join(tail)).body
