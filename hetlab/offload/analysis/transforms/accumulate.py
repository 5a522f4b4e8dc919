"""Array-element accumulators held in a scalar across an innermost loop (with the numba
target's reassociation gene).

``for k in range(j): A[i, j] -= A[i, k] * A[j, k]`` (a Cholesky or LU update, a forward
substitution's ``x[i] -= L[i, j] * x[j]``, a Gram–Schmidt ``R[k, j] += Q[i, k] * A[i, j]``)
loads and stores ``A[i, j]`` at every ``k``: LLVM cannot keep it in a register, since the
other reads of ``A`` might be the same element as far as it knows, and so it neither
vectorizes nor even pipelines the sum. When the reads are provably other elements, the
element is read once before the loop into a scalar, accumulated there and stored once after::

    if 0 < j:
        _hl_a0 = A[i, j]
        for k in range(j):
            _hl_a0 -= A[i, k] * A[j, k]
        A[i, j] = _hl_a0

With ``fastmath={'reassoc'}`` the scalar sum then vectorizes like a dot product. Applied only
with the ``fp:reassoc`` gene (the search verifies it like any candidate) and only to arrays the
search saw as floating-point (``report.float_arrays``): on an integer array ``A[i, j] -= 0.5``
truncates at every step, which a float scalar would not.

Legality, checked on the variant's final AST: an innermost ``for v in range(lo, hi)`` (step 1
or a positive constant) whose body has no loop, ``break``, ``continue``, ``return`` or bare use
of the array (a call given ``A`` may write it); the target ``A[S]`` is updated with ``+=``,
``-=`` or ``*=``; ``S`` reads nothing the body writes and not ``v``; ``A`` is not stored at any
other subscript in the body, shares no storage with another array it touches, and every other
read ``A[T]`` differs from ``A[S]`` in some position ``d`` where ``T[d]`` is ``v`` and ``S[d]``
lies outside ``[lo, hi)`` (``S[d] >= hi`` or ``S[d] < lo``, proven from the enclosing loops'
bounds: ``k < j`` in ``for k in range(j)``, ``k < i <= j`` when ``j`` runs over
``range(i, n)``). A read of ``A[S]`` itself reads the scalar.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from ...front.walk import range_call_args
from .rewrite import loop_id
from .statements import splice
from .unsigned import uncast

if TYPE_CHECKING:
    from ..aliases import AliasInfo

__all__ = ["promote_accumulators"]

_OPS = (ast.Add, ast.Sub, ast.Mult)
_Bounds = dict[str, tuple[str, str]]


def _range_bounds(node: ast.For, kinds: tuple[str, ...] = ("range", "prange")
                  ) -> tuple[str, str] | None:
    """``(lo, hi)`` source text of ``for v in range(lo, hi[, step > 0])``, else None (the
    unsigned pass's ``range(_hl_u64(lo), _hl_u64(max(lo, hi)))`` read as ``(lo, hi)``: the
    same iterations)."""
    found = range_call_args(node.iter, kinds) if isinstance(node.target, ast.Name) else None
    if found is None:
        return None
    args = [uncast(a) for a in found[:2]]
    if len(args) == 1:
        return "0", ast.unparse(args[0])
    lo, hi = args
    if isinstance(hi, ast.Call) and isinstance(hi.func, ast.Name) and hi.func.id == "max" \
            and len(hi.args) == 2 and ast.unparse(hi.args[0]) == ast.unparse(lo):
        hi = hi.args[1]
    return ast.unparse(lo), ast.unparse(hi)


def _ge(a: str, b: str, outer: _Bounds, depth: int = 0) -> bool:
    """Whether ``a >= b`` is provable from the enclosing loops' bounds ``outer``."""
    if a == b:
        return True
    if depth > 4:
        return False
    if a in outer and _ge(outer[a][0], b, outer, depth + 1):
        return True  # a >= its loop's start >= b
    return b in outer and _ge(a, outer[b][1], outer, depth + 1)  # b < its stop <= a


def _lt(a: str, b: str, outer: _Bounds) -> bool:
    """Whether ``a < b`` is provable: ``b`` is ``a + c`` (``c`` a positive int), or ``a`` is
    an enclosing loop's index whose stop is at most ``b``."""
    e = ast.parse(b, mode="eval").body
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) \
            and ast.unparse(e.left) == a and isinstance(e.right, ast.Constant) \
            and isinstance(e.right.value, int) and e.right.value > 0:
        return True
    return a in outer and _ge(b, outer[a][1], outer)


def _parts(sub: ast.Subscript) -> list[ast.expr]:
    s = sub.slice
    return list(s.elts) if isinstance(s, ast.Tuple) else [s]


def _distinct(read: ast.Subscript, target: ast.Subscript, var: str, lo: str, hi: str,
              outer: _Bounds) -> bool:
    """Whether ``read`` is never the element ``target`` while ``var`` runs over [lo, hi)."""
    r, t = _parts(read), _parts(target)
    if len(r) != len(t):
        return False
    for rd, td in zip(r, t, strict=True):
        if isinstance(rd, ast.Name) and rd.id == var:
            s = ast.unparse(td)
            if _ge(s, hi, outer) or _lt(s, lo, outer):
                return True
    return False


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _candidate(node: ast.For, outer: _Bounds, floats: frozenset[str],
               aliases: AliasInfo) -> tuple[str, str, str] | None:
    """(array, subscript text, element text) of the accumulator ``node`` may hold in a
    scalar, or None."""
    bounds = _range_bounds(node, ("range",))  # a prange's iterations are not in order
    if bounds is None or any(isinstance(n, (ast.For, ast.While, ast.Break, ast.Continue,
                                            ast.Return, ast.Try, ast.With))
                             for s in node.body for n in ast.walk(s)):
        return None
    var = node.target.id  # type: ignore[union-attr]
    stored = {var} | {n.id for s in node.body for n in ast.walk(s)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    subs = [n for s in node.body for n in ast.walk(s) if isinstance(n, ast.Subscript)
            and isinstance(n.value, ast.Name)]
    written = {n.value.id for n in subs if isinstance(n.ctx, ast.Store)}  # type: ignore
    for s in node.body:
        if not (isinstance(s, ast.AugAssign) and isinstance(s.op, _OPS)
                and isinstance(s.target, ast.Subscript) and isinstance(s.target.value, ast.Name)
                and s.target.value.id in floats):
            continue
        x, key = s.target.value.id, ast.unparse(s.target.slice)
        if _names(s.target.slice) & (stored | written) or any(
                isinstance(m, ast.Slice) for m in ast.walk(s.target.slice)):
            continue
        mine = [n for n in subs if n.value.id == x]  # type: ignore[attr-defined]
        bare = sum(isinstance(n, ast.Name) and n.id == x for b in node.body for n in ast.walk(b))
        if bare != len(mine):
            continue  # the array used whole (a call, an alias): not only by element
        others = {n.value.id for n in subs} - {x}  # type: ignore[attr-defined]
        if any(aliases.may_alias(x, y) for y in others):
            continue
        ok = True
        for n in mine:
            if ast.unparse(n.slice) == key:
                continue
            if isinstance(n.ctx, ast.Store) or not _distinct(n, s.target, var, *bounds, outer):
                ok = False
                break
        if ok:
            return x, key, ast.unparse(s.target)
    return None


class _ToScalar(ast.NodeTransformer):
    def __init__(self, array: str, key: str, name: str) -> None:
        self.array, self.key, self.name = array, key, name

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == self.array \
                and ast.unparse(node.slice) == self.key:
            return ast.copy_location(ast.Name(self.name, type(node.ctx)()), node)
        return self.generic_visit(node)


def _walk(stmts: list[ast.stmt], outer: _Bounds, out: list[tuple[ast.For, _Bounds]]) -> None:
    for s in stmts:
        if isinstance(s, ast.For):
            b = _range_bounds(s)
            inner = dict(outer)
            if b is not None:
                inner[s.target.id] = b  # type: ignore[union-attr]
            else:
                for n in ast.walk(s.target):
                    inner.pop(getattr(n, "id", ""), None)
            out.append((s, outer))
            _walk(s.body, inner, out)
        elif isinstance(s, (ast.While, ast.If, ast.With, ast.Try)):
            _walk(getattr(s, "body", []), outer, out)
            _walk(getattr(s, "orelse", []), outer, out)


def promote_accumulators(func: ast.FunctionDef, floats: frozenset[str],
                         aliases: AliasInfo) -> list[str]:
    """Hold each provably private array-element accumulator of an innermost loop of ``func``
    in a scalar (module docstring); ``floats``: the floating-point array parameters. Modifies
    ``func`` in place; returns one line per change."""
    if not floats:
        return []
    found: list[tuple[ast.For, _Bounds]] = []
    _walk(func.body, {}, found)
    # names assigned inside a loop but as a loop index: a bound reading one may change
    # while the loop it bounds runs (names set once before the loops keep their value)
    fors = [f for f in ast.walk(func) if isinstance(f, (ast.For, ast.While))]
    heads = {id(f.target) for f in fors if isinstance(f, ast.For)}
    assigned = {n.id for f in fors for s in f.body for n in ast.walk(s)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                and id(n) not in heads}
    notes, k = [], 0
    for node, outer in found:
        facts = {v: b for v, b in outer.items() if v not in assigned and not (
            (_names(ast.parse(b[0], mode="eval")) | _names(ast.parse(b[1], mode="eval")))
            & assigned)}
        got = _candidate(node, facts, floats, aliases)
        if got is None:
            continue
        x, key, elem = got
        name = f"_hl_a{k}"
        k += 1
        lo, hi = _range_bounds(node)  # type: ignore[misc]
        node.body = [_ToScalar(x, key, name).visit(s) for s in node.body]
        guard = ast.parse(f"if {lo} < {hi}:\n    {name} = {elem}\n    pass\n"
                          f"    {elem} = {name}").body[0]
        assert isinstance(guard, ast.If)
        splice(func.body, node, [guard])
        guard.body[1] = node
        where = loop_id(node) or "the loop"
        notes.append(f"{where} ({node.target.id}): {elem} accumulated in a scalar "  # type: ignore[union-attr]
                     "(one load before the loop, one store after)")
    return notes
