"""Unsigned loop indices: a fixed pass that lets LLVM vectorize loops with a variable start.

numba accepts negative subscripts (``a[-1]`` is the last element), so each ``a[j]`` with an
``int64`` ``j`` carries a wrap-around test (``j < 0 → j + len``) unless LLVM proves ``j ≥ 0``.
It proves that for ``range(n)`` and ``range(2, n)``, but not for ``range(i, n)`` or a tile's
``range(t, min(t + 64, n))``, and the test left in the loop stops vectorization: a tiled matmul
nest ran 3–4× slower than the untiled one for this reason alone (measured on this project's
2-core Xeon, numba 0.68). A ``uint64`` index has no wrap-around test.

The pass rewrites an innermost ``for j in range(lo, hi)`` into
``for j in range(_hl_u64(lo), _hl_u64(max(lo, hi)))`` when

* ``lo`` is provably non-negative (a constant ≥ 0, a length, a shape, an enclosing loop's index
  whose own start is non-negative, or sums, products, ``min``/``max`` of those), so the
  indices are the same values as before — ``max(lo, hi)`` keeps an empty range empty where
  ``hi < lo`` (a negative ``hi`` would otherwise wrap to a huge unsigned bound);
* ``j`` is used in the body only as a whole subscript index (``X[i, j]``): numba types
  ``uint64`` mixed with ``int64`` arithmetic as ``float64``, so ``j - 1`` or ``x = j`` would
  change the program's types;
* the body does not assign ``j`` and nothing after the loop reads ``j``.

It is a fixed pass, not a gene: it changes no value and only removes a test, and the search
verifies every variant against the reference as always.
"""

from __future__ import annotations

import ast

from ...front.walk import range_call_args
from .tiling import _ID

__all__ = ["uncast", "unsigned_indices", "unsigned_subscripts"]

_U64 = "_hl_u64"


def uncast(e: ast.expr) -> ast.expr:
    """``e`` without this pass's cast (``_hl_u64(x)`` holds the value of ``x``)."""
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == _U64 \
            and len(e.args) == 1 and not e.keywords:
        return e.args[0]
    return e


def _fors(stmts: list[ast.stmt], outer: tuple[ast.For, ...] = ()):
    for s in stmts:
        if isinstance(s, ast.For):
            yield s, outer
            yield from _fors(s.body, (*outer, s))
        elif isinstance(s, (ast.While, ast.If, ast.With)):
            yield from _fors(s.body, outer)
            yield from _fors(getattr(s, "orelse", []), outer)


def _range_args(node: ast.For, names: tuple[str, ...] = ("range",)) -> list[ast.expr] | None:
    """The arguments of ``range(...)`` (or of one of ``names``) with a positive constant step."""
    return range_call_args(node.iter, names) if isinstance(node.target, ast.Name) else None


def _shape_names(func: ast.FunctionDef) -> set[str]:
    """Names bound once at the top level of ``func`` to a length, a shape entry, or an
    expression of those that is provably non-negative (``max(…, 0)``)."""
    counts: dict[str, int] = {}
    for n in ast.walk(func):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
    found: set[str] = set()
    for s in func.body:  # in order: a later binding may use an earlier one
        if not (isinstance(s, ast.Assign) and len(s.targets) == 1):
            continue
        tgt, val = s.targets[0], s.value
        if isinstance(tgt, ast.Tuple) and isinstance(val, ast.Attribute) and val.attr == "shape":
            found |= {e.id for e in tgt.elts if isinstance(e, ast.Name)
                      and counts.get(e.id) == 1}
        elif isinstance(tgt, ast.Name) and counts.get(tgt.id) == 1 and (
                _is_size(val) or _nonneg(val, found)):
            found.add(tgt.id)
    return found


def _is_size(e: ast.expr) -> bool:
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id == "len":
        return True
    return (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute)
            and e.value.attr == "shape")


def _nonneg(e: ast.expr, known: set[str]) -> bool:
    if isinstance(e, ast.Constant):
        return isinstance(e.value, int) and not isinstance(e.value, bool) and e.value >= 0
    if isinstance(e, ast.Name):
        return e.id in known
    if _is_size(e):
        return True
    if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Mult, ast.FloorDiv)):
        return _nonneg(e.left, known) and _nonneg(e.right, known)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.args and not e.keywords:
        if e.func.id == "min":
            return all(_nonneg(a, known) for a in e.args)
        if e.func.id == "max":
            return any(_nonneg(a, known) for a in e.args)
    return False


def _index_only(var: str, body: list[ast.stmt]) -> bool:
    ok = True

    def visit(node: ast.AST, as_index: bool) -> None:
        nonlocal ok
        if isinstance(node, ast.Name) and node.id == var:
            ok = ok and as_index and isinstance(node.ctx, ast.Load)
            return
        if isinstance(node, ast.Subscript):
            visit(node.value, False)
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for e in parts:
                visit(e, True)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, False)

    for stmt in body:
        visit(stmt, False)
    return ok


def _read_outside(func: ast.FunctionDef, node: ast.For, var: str) -> bool:
    inside = {id(n) for n in ast.walk(node)}
    return any(isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Load)
               and id(n) not in inside for n in ast.walk(func))


def _store_counts(func: ast.FunctionDef) -> dict[str, int]:
    """How many times each name is bound in ``func`` (an enclosing index is trusted only
    when its loop is its one binding)."""
    stored: dict[str, int] = {}
    for n in ast.walk(func):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stored[n.id] = stored.get(n.id, 0) + 1
    return stored


def _innermost(node: ast.For) -> bool:
    return not any(isinstance(n, (ast.For, ast.While)) for s in node.body for n in ast.walk(s))


def _nonneg_indices(outer: tuple[ast.For, ...], shapes: set[str],
                    stored: dict[str, int]) -> set[str]:
    """``shapes`` and the indices of the enclosing loops ``outer`` (outermost first) that
    start at a non-negative value and are never reassigned."""
    known = set(shapes)
    for o in outer:
        oargs = _range_args(o, ("range", "prange"))
        name = getattr(o.target, "id", None)
        if oargs is not None and name is not None and stored.get(name, 0) == 1 and (
                len(oargs) == 1 or _nonneg(oargs[0], known)):
            known.add(name)
    return known


def unsigned_indices(func: ast.FunctionDef) -> list[str]:
    """Rewrite the qualifying innermost ``range`` loops of ``func`` in place (see the module
    docstring); one line per loop changed, naming its index."""
    shapes, stored = _shape_names(func), _store_counts(func)
    notes = []
    for node, outer in list(_fors(func.body)):
        args = _range_args(node)
        if args is None:
            continue
        if not _innermost(node):
            continue
        known = _nonneg_indices(outer, shapes, stored)
        var = node.target.id  # type: ignore[attr-defined]
        lo = args[0] if len(args) > 1 else ast.Constant(0)
        if len(args) == 1 or not _nonneg(lo, known):
            continue  # range(n) and constant starts are proven by LLVM already
        if isinstance(lo, ast.Constant):
            continue
        if not _index_only(var, node.body) or _read_outside(func, node, var):
            continue
        lo_s, hi_s = ast.unparse(lo), ast.unparse(args[1])
        new = [ast.parse(f"{_U64}({lo_s})", mode="eval").body,
               ast.parse(f"{_U64}(max({lo_s}, {hi_s}))", mode="eval").body, *args[2:]]
        node.iter.args = new  # type: ignore[attr-defined]
        key = getattr(node.iter, _ID, None)
        notes.append(f"{key + ' ' if key else ''}({var}): unsigned index (start {lo_s} ≥ 0; "
                     "no wrap-around test, so the loop vectorizes)")
    return notes


def _offset(e: ast.expr, var: str) -> int | None:
    """``c`` when ``e`` is ``var``, ``var + c``, ``c + var`` or ``var - c`` (``c`` an int
    constant); otherwise None."""
    if isinstance(e, ast.Name) and e.id == var:
        return 0
    if not isinstance(e, ast.BinOp) or not isinstance(e.op, (ast.Add, ast.Sub)):
        return None
    left, right = e.left, e.right
    def const(x: ast.expr) -> int | None:
        ok = isinstance(x, ast.Constant) and isinstance(x.value, int) \
            and not isinstance(x.value, bool)
        return x.value if ok else None  # type: ignore[union-attr]
    if isinstance(left, ast.Name) and left.id == var and const(right) is not None:
        return const(right) if isinstance(e.op, ast.Add) else -const(right)  # type: ignore
    if isinstance(e.op, ast.Add) and isinstance(right, ast.Name) and right.id == var \
            and const(left) is not None:
        return const(left)
    return None


def unsigned_subscripts(func: ast.FunctionDef) -> list[str]:
    """Subscripts ``var + c`` of an innermost ``prange`` loop cast to ``uint64`` where they are
    provably non-negative; rewritten in place, one line per loop changed.

    Inside numba's parallel region the loop's bounds come from the scheduler, so LLVM cannot
    prove ``var ≥ start`` and every ``a[var - 1]`` keeps its wrap-around test, which stops
    vectorization (the serial ``njit`` proves the bound itself; the A/B is
    ``benchmarks/offload_unsigned_ab.py``). A component ``var + c`` (``c`` an int constant,
    ``var - c`` as ``c < 0``) becomes
    ``_hl_u64(var + c)`` when the loop's start ``lo`` satisfies ``lo + c ≥ 0``: ``lo`` a
    constant, or provably non-negative (as for :func:`unsigned_indices`) with ``c ≥ 0``. The
    index's value is unchanged (it is never negative), the loop variable keeps its type, and
    only loops of step 1 that assign nothing to ``var`` are touched."""
    shapes, stored = _shape_names(func), _store_counts(func)
    notes = []
    for node, outer in list(_fors(func.body)):
        args = _range_args(node, ("prange",))
        if args is None or (len(args) == 3 and not (isinstance(args[2], ast.Constant)
                                                     and args[2].value == 1)):
            continue
        if not _innermost(node):
            continue
        var = node.target.id  # type: ignore[attr-defined]
        if any(isinstance(n, ast.Name) and n.id == var and isinstance(n.ctx, ast.Store)
               for s in node.body for n in ast.walk(s)):
            continue
        known = _nonneg_indices(outer, shapes, stored)
        lo = args[0] if len(args) > 1 else ast.Constant(0)
        if isinstance(lo, ast.Constant) and isinstance(lo.value, int) and lo.value >= 0:
            low: int | None = lo.value
        else:
            low = 0 if _nonneg(lo, known) else None
        if low is None:
            continue
        count = 0
        for sub in [n for s in node.body for n in ast.walk(s) if isinstance(n, ast.Subscript)]:
            tup = isinstance(sub.slice, ast.Tuple)
            parts = list(sub.slice.elts) if tup else [sub.slice]  # type: ignore[attr-defined]
            changed = False
            for k, e in enumerate(parts):
                off = _offset(e, var)
                if off is not None and low + off >= 0:
                    parts[k] = ast.Call(ast.Name(_U64, ast.Load()), [e], [])
                    changed = True
                    count += 1
            if changed:
                sub.slice = ast.Tuple(parts, ast.Load()) if tup else parts[0]
        if count:
            key = getattr(node.iter, _ID, None)
            notes.append(f"{key + ' ' if key else ''}({var}): {count} subscripts of {var} as "
                         f"unsigned (start {ast.unparse(lo)}; no wrap-around test in the "
                         "parallel loop, so it vectorizes)")
    return notes
