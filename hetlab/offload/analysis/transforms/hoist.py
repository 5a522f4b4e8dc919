"""Loop-invariant index arithmetic with ``%`` or ``//``, computed once before its loop (a fixed
pass of the numba target).

Python's ``%`` and ``//`` on integers round toward minus infinity and raise on a zero divisor;
numba compiles each into a division, a sign fix-up and a zero check that may raise, and LLVM
then keeps an index such as ``(i + a - 1 + h) % h`` inside the loop over ``b`` although it
does not change there. A 3×3 convolution on a torus (the fifth held-out probe's
``conv2d_periodic_mod``) ran at 0.54× its hand-written answer key, which names that row
index before the ``b`` loop. With this pass the serial variant ran 2.74–2.92× the serial njit
(``benchmarks/offload_hoist_ab.py``, results in ``benchmarks/results/quiet-2026-12-07-s13/``).
It does::

    for a in range(3):
        for b in range(3):
            s += k[a, b] * img[(i + a - 1 + h) % h, (j + b - 1 + w) % w]

becomes::

    for a in range(3):
        _hl_h0 = (i + a - 1 + h) % h
        for b in range(3):
            s += k[a, b] * img[_hl_h0, (j + b - 1 + w) % w]

Hoisted: the largest subexpressions of a subscript (or of a slice bound) inside a ``range``
loop that hold a ``%`` or ``//`` and read only integer constants and names the loop never
assigns (its variable, the targets of everything inside it excluded), through ``+ - * % //``,
unary minus, ``min``/``max``/``abs``, ``len(x)`` and ``x.shape[k]`` — no array element, no
other call, so the value before the loop is the value in every iteration. It is computed
only when the loop runs at least once (``_hl_h0 = e if lo < hi else 0``; no guard for
constant bounds that run; the guard repeats the loop's bounds when they are plain: names,
constants, arithmetic, ``len``, ``.shape[k]``; otherwise nothing is hoisted), so a zero
divisor still raises only where Python raises — at the loop rather than at the statement
inside it that reads the index (in a serial loop: numba's ``prange`` bodies do not raise
ZeroDivisionError, hoisted or not). ``prange`` loops and loops over anything but ``range``
are left alone.
"""

from __future__ import annotations

import ast

from ...front.walk import range_call_args
from .rewrite import loop_id
from .statements import splice

__all__ = ["hoist_invariant_indices"]

_INDEX_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Mod, ast.FloorDiv)
_CHEAP_CALLS = frozenset({"min", "max", "abs", "len"})


def _stored(loop: ast.For) -> set[str]:
    """Every name ``loop`` (its variable, its body, loops inside it) assigns, and every name
    whose method it calls (``lst.append(v)`` changes ``len(lst)``)."""
    return {n.id for n in ast.walk(loop) if isinstance(n, ast.Name)
            and isinstance(n.ctx, (ast.Store, ast.Del))} | {
        n.func.value.id for n in ast.walk(loop) if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name)}


def _integer_arith(e: ast.expr, variant: set[str]) -> bool:
    """``e`` is integer arithmetic on names outside ``variant``, int constants, ``len(x)`` and
    ``x.shape[k]``."""
    def ok(n: ast.AST) -> bool:
        if isinstance(n, ast.Name):
            return n.id not in variant
        if isinstance(n, ast.Constant):
            return type(n.value) is int
        if isinstance(n, ast.BinOp):
            return isinstance(n.op, _INDEX_OPS) and ok(n.left) and ok(n.right)
        if isinstance(n, ast.UnaryOp):
            return isinstance(n.op, (ast.USub, ast.UAdd)) and ok(n.operand)
        if isinstance(n, ast.Call):
            return isinstance(n.func, ast.Name) and n.func.id in _CHEAP_CALLS \
                and n.func.id not in variant and not n.keywords and bool(n.args) \
                and all(ok(a) for a in n.args)
        if isinstance(n, ast.Attribute):  # x.shape (only under a constant subscript)
            return False
        if isinstance(n, ast.Subscript):  # x.shape[k]
            return isinstance(n.value, ast.Attribute) \
                and n.value.attr == "shape" and isinstance(n.value.value, ast.Name) \
                and n.value.value.id not in variant and isinstance(n.slice, ast.Constant) \
                and type(n.slice.value) is int
        return False
    return ok(e)


def _divides(e: ast.expr) -> bool:
    return any(isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Mod, ast.FloorDiv))
               for n in ast.walk(e))


def _largest(e: ast.expr, variant: set[str], out: list[ast.expr]) -> None:
    """The largest subexpressions of ``e`` worth hoisting (invariant, holding ``%``/``//``)."""
    if not isinstance(e, (ast.Name, ast.Constant)) and _divides(e) \
            and _integer_arith(e, variant):
        out.append(e)
        return
    for c in ast.iter_child_nodes(e):
        if isinstance(c, ast.expr):
            _largest(c, variant, out)


def _index_parts(sub: ast.Subscript) -> list[ast.expr]:
    parts = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    out: list[ast.expr] = []
    for p in parts:
        if isinstance(p, ast.Slice):
            out += [b for b in (p.lower, p.upper, p.step) if b is not None]
        else:
            out.append(p)
    return out


def _runs_once(loop: ast.For) -> str | None:
    """Source text of a condition true exactly when ``loop`` (over ``range``) runs at least
    once: ``"True"`` for constant bounds that do; None when the loop cannot run, or its
    bounds are not plain enough to evaluate twice."""
    args = range_call_args(loop.iter, ("range",), positive_step=False)
    if args is None or not all(_integer_arith(a, set()) for a in args):
        return None
    if len(args) == 1:
        lo, hi, up = ast.Constant(0), args[0], True
    else:
        lo, hi = args[0], args[1]
        st = args[2] if len(args) == 3 else ast.Constant(1)
        up = not isinstance(st, ast.UnaryOp)  # a step is a constant, "-k" when negative
    if isinstance(lo, ast.Constant) and isinstance(hi, ast.Constant):
        runs = lo.value < hi.value if up else lo.value > hi.value
        return "True" if runs else None
    return f"({ast.unparse(lo)}) {'<' if up else '>'} ({ast.unparse(hi)})"


class _Replace(ast.NodeTransformer):
    def __init__(self, text: str, name: str) -> None:
        self.text, self.name = text, name

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr) and not isinstance(node, (ast.Name, ast.Constant)) \
                and ast.unparse(node) == self.text:
            return ast.Name(self.name, ast.Load())
        return super().generic_visit(node)


def _guarded(value: str, guard: str) -> str:
    return value if guard == "True" else f"({value}) if {guard} else 0"


def hoist_invariant_indices(func: ast.FunctionDef) -> list[str]:
    """Hoist, in place, the invariant ``%``/``//`` index arithmetic of ``func``'s ``range``
    loops (module docstring), innermost loops first, each as far out as it is invariant (an
    index hoisted into a loop's body that the loop does not change moves before that loop
    too, under that loop's guard as well: ``i // bs`` kept inside a ``prange`` body's inner
    loop ran at about 0.84x the form left in place, ``benchmarks/offload_hoist_ab.py``'s
    ``blocked_columns``); one note per loop changed."""
    notes: list[str] = []
    k = 0
    made: set[int] = set()  # the assignments this pass wrote
    loops = [n for n in ast.walk(func) if isinstance(n, ast.For)]
    for loop in reversed(loops):  # ast.walk is breadth-first: deeper loops come later
        if not isinstance(loop.target, ast.Name):
            continue
        guard = _runs_once(loop)
        if guard is None:
            continue
        variant = _stored(loop)
        moved = [s for s in loop.body if id(s) in made and isinstance(s, ast.Assign)
                 and not {n.id for n in ast.walk(s.value) if isinstance(n, ast.Name)} & variant]
        found: list[ast.expr] = []
        for n in ast.walk(ast.Module(loop.body, [])):
            if isinstance(n, ast.Subscript):
                for part in _index_parts(n):
                    _largest(part, variant, found)
        texts = list(dict.fromkeys(ast.unparse(e) for e in found))
        if not texts and not moved:
            continue
        before: list[ast.stmt] = []
        for s in moved:
            loop.body.remove(s)
            s.value = ast.parse(_guarded(ast.unparse(s.value), guard), mode="eval").body
            before.append(s)
        for text in texts:
            name = f"_hl_h{k}"
            k += 1
            before.append(ast.parse(f"{name} = {_guarded(text, guard)}").body[0])
            made.add(id(before[-1]))
            loop.body = [_Replace(text, name).visit(s) for s in loop.body]
        if not loop.body:  # pragma: no cover - a loop body always keeps the statement reading it
            loop.body = [ast.Pass()]
        if not splice(func.body, loop, [*before, loop]):  # pragma: no cover - same tree
            raise AssertionError("loop not found")
        where = loop_id(loop) or f"the loop over {loop.target.id}"
        what = [f"invariant index {'; '.join(texts)} computed once before the loop"] \
            if texts else []
        what += [f"{', '.join(ast.unparse(s.targets[0]) for s in moved)} moved before it "
                 "(the loop does not change it)"] if moved else []
        notes.append(f"{where} ({loop.target.id}): {'; '.join(what)}")
    return list(dict.fromkeys(notes))  # a nest copied into two branches: one note
