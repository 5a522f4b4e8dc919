"""The element written by the previous iteration, carried in a scalar (a fixed pass of the
numba target).

A recurrence in place reads, in each iteration of its innermost loop, the element the previous
iteration wrote: ``x[i * n + j] += x[i * n + j - 1]`` (a running sum along the rows of a flat
buffer), ``T[i, j] = max(T[i - 1, j], T[i, j - 1])`` (a DP table), ``u[i, j] = (u[i, j - 1] +
…) / 4`` (Gauss–Seidel). Compiled as written, each iteration loads that element back from
memory; when LLVM cannot prove the load's address is the previous store's (numba's
negative-index wrap-around stands between them), the loop runs at the speed of a store-to-load
round trip per element: a flat row scan of 4 M elements took 13.4 ms, the same loop with the
value carried in a register 3.3 ms (AMD EPYC, serial njit; ``tests/test_offload_carry.py``).

:func:`carry_previous` rewrites such a loop ``for v in range(lo, hi[, st])`` when:

- its body holds no loop, ``break``, ``continue`` or ``return``, and the loop is not a
  ``prange``;
- every store the body makes into ``X`` (an assignment, under ``if`` branches too) is to
  one element ``X[S]`` (compared as polynomials over the names of the subscripts:
  ``i * n + j - 1`` is ``i * n + (j - 1)``), ``X`` is passed to no call and not rebound, and
  ``S`` reads ``v`` but neither ``X`` nor another name the body stores;
- the reads ``X[S′]``, ``S′`` being ``S`` at ``v − st``, all run before any store into ``X``
  on their path through the iteration, and one of them runs whenever the iteration does (not
  under a branch: the read before the loop must be one the first iteration makes).

Then those reads take a scalar, loaded once before the loop (under ``if`` the loop runs) and
set at the end of each iteration by reading ``X[S]`` back — the element as memory holds it then,
whether or not a branch stored it, after any conversion to ``X``'s dtype; LLVM folds that load
into the store it follows. Between that read-back and the next iteration's reads nothing stores
into ``X``, so the scalar always holds what memory holds. Memory is written as before, so every
other read is unchanged.
"""

from __future__ import annotations

import ast
import copy

from ...front.indices import stored_names
from .statements import is_prange

__all__ = ["carry_previous"]

Poly = dict[tuple[str, ...], int]
#: calls a range bound may make (evaluated twice: in the guard and in the range)
_PURE = frozenset({"len", "min", "max", "int", "abs"})


def _poly(node: ast.AST, fixed: frozenset[str] = frozenset()) -> Poly | None:
    """``node`` as a polynomial with integer coefficients over names (other expressions that
    read no subscript and none of the names in ``fixed`` are atoms by their text); None when
    that is not possible."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return {(): node.value} if node.value else {}
    if isinstance(node, ast.Name):
        return {(node.id,): 1}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _poly(node.operand, fixed)
        if inner is None:
            return None
        return {k: -c for k, c in inner.items()} if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        left, right = _poly(node.left, fixed), _poly(node.right, fixed)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Mult):
            return _mul(left, right)
        sign = -1 if isinstance(node.op, ast.Sub) else 1
        return _add(left, {k: sign * c for k, c in right.items()})
    if isinstance(node, (ast.Attribute, ast.Subscript, ast.Call, ast.BinOp)) and not any(
            (isinstance(n, ast.Subscript) and not isinstance(n.value, ast.Attribute))
            or (isinstance(n, ast.Name) and n.id in fixed) for n in ast.walk(node)):
        return {(f"⟨{ast.unparse(node)}⟩",): 1}  # ``A.shape[1]``, ``n // 2``: one atom
    return None  # an atom reading the loop variable (``j // 2``) would not shift with it


def _add(a: Poly, b: Poly) -> Poly:
    out = dict(a)
    for k, c in b.items():
        out[k] = out.get(k, 0) + c
    return {k: c for k, c in out.items() if c}


def _mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ka, ca in a.items():
        for kb, cb in b.items():
            k = tuple(sorted(ka + kb))
            out[k] = out.get(k, 0) + ca * cb
    return {k: c for k, c in out.items() if c}


def _shift(p: Poly, var: str, by: int) -> Poly:
    """``p`` with ``var`` replaced by ``var + by``."""
    out: Poly = {}
    for k, c in p.items():
        term: Poly = {(): c}
        for name in k:
            term = _mul(term, {(var,): 1, (): by} if name == var else {(name,): 1})
        out = _add(out, term)
    return out


def _index(sub: ast.Subscript) -> list[ast.AST]:
    sl = sub.slice
    return list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]


def _polys(sub: ast.Subscript, fixed: frozenset[str]) -> list[Poly] | None:
    out = []
    for part in _index(sub):
        if isinstance(part, ast.Slice):
            return None
        p = _poly(part, fixed)
        if p is None:
            return None
        out.append(p)
    return out


def _range(node: ast.For) -> tuple[str, str, int] | None:
    """``(lo, hi, step)`` texts of ``range(...)`` with a constant nonzero step."""
    it = node.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
            and it.func.id == "range" and 1 <= len(it.args) <= 3 and not it.keywords):
        return None
    a = it.args
    if any(isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id in _PURE)
           for x in a for n in ast.walk(x)):
        return None  # evaluated again by the read before the loop: no call with effects
    lo = ast.unparse(a[0]) if len(a) > 1 else "0"
    hi = ast.unparse(a[1] if len(a) > 1 else a[0])
    st = 1
    if len(a) == 3:
        s = a[2]
        if isinstance(s, ast.UnaryOp) and isinstance(s.op, ast.USub) \
                and isinstance(s.operand, ast.Constant):
            s = ast.Constant(-s.operand.value)
        if not (isinstance(s, ast.Constant) and type(s.value) is int and s.value):
            return None
        st = s.value
    return lo, hi, st


class _Carry(ast.NodeTransformer):
    def __init__(self, ids: set[int], name: str) -> None:
        self.ids, self.name = ids, name

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if id(node) in self.ids:
            return ast.copy_location(ast.Name(self.name, ast.Load()), node)
        return self.generic_visit(node)


class _At(ast.NodeTransformer):
    """``var`` replaced by an expression."""

    def __init__(self, var: str, expr: ast.expr) -> None:
        self.var, self.expr = var, expr

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return copy.deepcopy(self.expr) if node.id == self.var else node


def _stores_of(body: list[ast.stmt], array: str) -> list[ast.Subscript] | None:
    """The element stores into ``array`` in ``body`` (assignment targets, at any depth under
    ``if``); None when ``array`` is written otherwise (passed to a call, a slice store, a
    store nested in another subscript)."""
    out = []
    for s in body:
        for n in ast.walk(s):
            if isinstance(n, ast.Call) and any(
                    isinstance(a, ast.Name) and a.id == array
                    for a in (*n.args, *(k.value for k in n.keywords))):
                return None
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
                base = n.value
                while isinstance(base, (ast.Subscript, ast.Attribute)):
                    base = base.value
                if isinstance(base, ast.Name) and base.id == array:
                    if not isinstance(n.value, ast.Name):
                        return None
                    out.append(n)
    return out


def _matching(node: ast.AST, array: str, prev: list[Poly], fixed: frozenset[str]
              ) -> list[ast.Subscript]:
    """Reads of ``array[prev]`` in ``node``. ``fixed``: the loop variable and the names the
    body stores; a read whose subscript holds one in an atom (``j // 2``) or reads a stored
    name is not one (it stays a load: the read before the loop could not evaluate it)."""
    return [n for n in ast.walk(node)
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
            and isinstance(n.value, ast.Name) and n.value.id == array
            and _polys(n, fixed) == prev and not (_names(n.slice) & fixed - set(_keys(prev)))]


def _keys(polys: list[Poly]) -> set[str]:
    """The plain names the polynomials ``polys`` read."""
    return {name for p in polys for k in p for name in k if not name.startswith("⟨")}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _before_stores(stmts: list[ast.stmt], array: str, prev: list[Poly], fixed: frozenset[str],
                   stored: bool, found: list[ast.Subscript]) -> tuple[bool, bool]:
    """Walk ``stmts`` in order: ``(ok, stored after)``; ``ok`` is False when a read of the
    previous element may run after a store into ``array`` in the same iteration."""
    for s in stmts:
        if isinstance(s, ast.If):
            reads = _matching(s.test, array, prev, fixed)
            if reads and stored:
                return False, stored
            found += reads
            ok_b, st_b = _before_stores(s.body, array, prev, fixed, stored, found)
            ok_e, st_e = _before_stores(s.orelse, array, prev, fixed, stored, found)
            if not (ok_b and ok_e):
                return False, stored
            stored = st_b or st_e
            continue
        target = s.target if isinstance(s, ast.AugAssign) else (
            s.targets[0] if isinstance(s, ast.Assign) and len(s.targets) == 1 else None)
        writes = isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
            and target.value.id == array
        reads = _matching(s.value if writes else s, array, prev,  # type: ignore[attr-defined]
                          fixed)
        if reads and stored:
            return False, stored
        found += reads
        stored = stored or writes or any(
            isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store)
            and isinstance(n.value, ast.Name) and n.value.id == array for n in ast.walk(s))
    return True, stored


def _candidate(node: ast.For, array: str, var: str, st: int, stored: set[str]
               ) -> tuple[ast.Subscript, list[ast.Subscript]] | None:
    """The store into ``array`` (every one the body makes is this element) and the reads of
    the previous iteration's element, or None."""
    if array in stored:
        return None
    targets = _stores_of(node.body, array)
    if not targets:
        return None
    fixed = frozenset(stored)  # the loop variable and every name the body stores
    here = _polys(targets[0], fixed)
    if here is None or any(_polys(t, fixed) != here for t in targets[1:]):
        return None
    names = _names(targets[0].slice)
    if array in names or var not in names or names & (stored - {var}):
        return None
    prev = [_shift(p, var, -st) for p in here]
    reads: list[ast.Subscript] = []
    ok, _ = _before_stores(node.body, array, prev, fixed, False, reads)
    plain = {id(n) for b in node.body if not isinstance(b, ast.If)
             for n in _unconditional(b)}
    if not ok or not reads or not any(id(r) in plain for r in reads):
        return None  # the first iteration may not read it: no read before the loop either
    return targets[0], reads


def _unconditional(stmt: ast.AST) -> list[ast.AST]:
    """The nodes of ``stmt`` evaluated whenever it is (not under a branch)."""
    out, todo = [], [stmt]
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.If, ast.IfExp, ast.BoolOp, ast.Lambda)) and n is not stmt:
            if isinstance(n, (ast.If, ast.IfExp)):
                todo.append(n.test)  # the condition itself always runs
            elif isinstance(n, ast.BoolOp):
                todo.append(n.values[0])
            continue
        out.append(n)
        todo.extend(ast.iter_child_nodes(n))
    return out


def carry_previous(func: ast.FunctionDef, node: ast.For, container: list[ast.stmt],
                   counter: list[int], key: str) -> str | None:
    """Rewrite ``node`` (an innermost loop in ``container``) as the module docstring says;
    a note, or None when nothing applies."""
    if is_prange(node) or not isinstance(node.target, ast.Name) or any(
            isinstance(n, (ast.For, ast.While, ast.Break, ast.Continue, ast.Return))
            for s in node.body for n in ast.walk(s)):
        return None
    bounds = _range(node)
    if bounds is None:
        return None
    lo, hi, st = bounds
    var = node.target.id
    stored = set().union(*(stored_names(s) for s in node.body))
    if var in stored:
        return None  # the loop variable rebound in the body
    stored.add(var)
    first_reads: list[tuple[str, ast.Subscript]] = []
    parts = []
    arrays = sorted({t.value.id for b in node.body for t in ast.walk(b)
                     if isinstance(t, ast.Subscript) and isinstance(t.ctx, ast.Store)
                     and isinstance(t.value, ast.Name)})
    for array in arrays:
        found = _candidate(node, array, var, st, stored)
        if found is None:
            continue
        target, reads = found
        name = f"_hl_c{counter[0]}"
        counter[0] += 1
        swap = _Carry({id(r) for r in reads}, name)
        node.body = [swap.visit(b) for b in node.body]
        back = ast.Assign([ast.Name(name, ast.Store())],
                          ast.Subscript(ast.Name(array, ast.Load()),
                                        copy.deepcopy(target.slice), ast.Load()), lineno=0)
        node.body.append(back)  # the element as memory holds it at the iteration's end
        start = _At(var, ast.parse(lo, mode="eval").body).visit(copy.deepcopy(reads[0]))
        first_reads.append((name, start))
        parts.append(f"{ast.unparse(reads[0])} carried from the previous iteration")
    if not first_reads:
        return None
    cond = f"({lo}) < ({hi})" if st > 0 else f"({lo}) > ({hi})"
    guard = ast.parse(f"if {cond}:\n" + "".join(
        f"    {nm} = {ast.unparse(rd)}\n" for nm, rd in first_reads) + "    pass").body[0]
    assert isinstance(guard, ast.If)
    guard.body[-1:] = [node]
    at = next(j for j, s in enumerate(container) if s is node)
    container[at:at + 1] = [guard]
    ast.fix_missing_locations(func)
    return f"{key} ({var}): " + "; ".join(parts)
