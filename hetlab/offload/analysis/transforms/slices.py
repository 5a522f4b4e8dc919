"""Slice statements inside loops as element loops (a fixed pass of the numba target).

``A[i, :] += u[i] * v`` in a loop over ``i`` is, in numba, an array expression evaluated
into a fresh temporary for every ``i`` and then added to the row: an allocation and a second
pass over the row per iteration (3× the time of the element loop on a 1500 × 1500 rank-1
update). When the statement is elementwise over one axis, it runs as one loop over that
axis with no temporary::

    if A.shape[1] == v.shape[0]:
        for _hl_s0 in range(A.shape[1]):
            A[i, _hl_s0] += u[i] * v[_hl_s0]
    else:
        A[i, :] += u[i] * v

Rewritten only when each element gets what NumPy computes for it, and the whole statement's
values are those NumPy would produce:

- the target is a row, column or whole 1-D array of a floating-point array parameter (an
  integer array would refuse ``+= 0.5`` in NumPy), ``:`` on exactly one axis, the others
  indexed by numbers (``A[i]`` of a 2-D ``A`` is ``A[i, :]``); ranks come from the search's
  arguments (``report.array_ranks``; the plan refuses arguments of other ranks);
- the value reads only numbers (constants, number parameters, locals proven numbers, full-
  rank elements) and one-axis slices or 1-D array parameters, through ``+ - *``, unary
  minus, ``** k`` (integer constant ``k``), ``/`` by a number (the guard checks it is not 0:
  numba's scalar division raises where NumPy's gives inf) or by a row (``np.divide`` of the
  elements: NumPy's inf and nan) and elementwise NumPy functions;
- the target's array is read only at the target's own slice (NumPy evaluates the value
  before the store; the loop would read elements it already wrote), no parameter read or
  written is rebound in the function, and every slice's length equals the target's (else the
  statement runs as written: broadcasting or NumPy's error).

A row view the scalar replacement bound before the statement (``_hl_r0 = A[i]``) is read
through its array again (:class:`_Unhoist`). Everything else keeps the slice form.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from dataclasses import dataclass

from .unsigned import uncast

__all__ = ["slice_loops"]

#: elementwise NumPy functions of one argument (their scalar form in numba computes each
#: element; transcendental ones may differ from the array form in the last bit)
_UFUNCS = frozenset({"sqrt", "abs", "absolute", "fabs", "exp", "log", "sin", "cos", "tanh",
                     "negative"})


@dataclass
class _Context:
    ranks: dict[str, int]  #: float or numeric array parameter → number of dimensions
    numbers: frozenset[str]  #: names that hold numbers
    var: str  #: the element loop's variable


def _full(node: ast.expr) -> bool:
    return isinstance(node, ast.Slice) and node.lower is None and node.upper is None \
        and node.step is None


def _axes(sub: ast.Subscript, ranks: dict[str, int]) -> tuple[str, list[ast.expr], int] | None:
    """(array, subscripts with implicit trailing ``:`` made explicit, the sliced axis) of a
    one-axis slice of an array of known rank; None otherwise."""
    if not isinstance(sub.value, ast.Name) or sub.value.id not in ranks:
        return None
    idx = list(sub.slice.elts) if isinstance(sub.slice, ast.Tuple) else [sub.slice]
    rank = ranks[sub.value.id]
    if len(idx) > rank or any(isinstance(e, ast.Starred) for e in idx):
        return None
    idx += [ast.Slice() for _ in range(rank - len(idx))]
    sliced = [k for k, e in enumerate(idx) if isinstance(e, ast.Slice)]
    if len(sliced) != 1 or not _full(idx[sliced[0]]):
        return None
    return sub.value.id, idx, sliced[0]


def _power(node: ast.BinOp) -> bool:
    """``x ** k`` with ``k`` a non-negative integer constant (``0.0 ** -1`` raises in numba's
    scalar form where NumPy's array form gives inf)."""
    k = node.right
    return isinstance(k, ast.Constant) and type(k.value) is int and k.value >= 0


def _number(node: ast.expr, ctx: _Context) -> bool:
    """Whether ``node`` is a number expression (no array of any rank in it)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.Name):
        return node.id in ctx.numbers
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _number(node.operand, ctx)
    if (inner := uncast(node)) is not node:  # the unsigned pass's cast of an index
        return _number(inner, ctx)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        return _power(node) and _number(node.left, ctx)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult,
                                                            ast.Div)):
        return _number(node.left, ctx) and _number(node.right, ctx)
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        idx = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        return ctx.ranks.get(node.value.id, -1) == len(idx) and all(
            _number(e, ctx) for e in idx)
    return False


class _Rewrite:
    """The element form of a value; ``lengths`` collects each slice's length expression and
    ``reads`` the slices read."""

    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx
        self.lengths: list[str] = []
        self.reads: list[str] = []

    def slice_elem(self, sub: ast.Subscript) -> ast.expr | None:
        got = _axes(sub, self.ctx.ranks)
        if got is None:
            return None
        name, idx, axis = got
        if not all(isinstance(e, ast.Slice) or _number(e, self.ctx) for e in idx):
            return None
        self.lengths.append(f"{name}.shape[{axis}]")
        self.reads.append(ast.unparse(sub))
        idx[axis] = ast.Name(self.ctx.var, ast.Load())
        return ast.Subscript(ast.Name(name, ast.Load()), ast.Tuple(idx, ast.Load())
                             if len(idx) > 1 else idx[0], ast.Load())

    def elem(self, node: ast.expr) -> ast.expr | None:
        ctx = self.ctx
        if _number(node, ctx):
            return node
        if isinstance(node, ast.Name) and ctx.ranks.get(node.id) == 1:
            self.lengths.append(f"{node.id}.shape[0]")
            self.reads.append(f"{node.id}[:]")
            return ast.Subscript(ast.Name(node.id, ast.Load()),
                                 ast.Name(ctx.var, ast.Load()), ast.Load())
        if isinstance(node, ast.Subscript):
            return self.slice_elem(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = self.elem(node.operand)
            return None if inner is None else ast.UnaryOp(node.op, inner)
        if isinstance(node, ast.BinOp):
            op = node.op
            if isinstance(op, ast.Pow):
                left = self.elem(node.left) if _power(node) else None
                return None if left is None else ast.BinOp(left, op, node.right)
            if isinstance(op, ast.Div):
                left = self.elem(node.left)
                if left is None or _number(node.right, ctx):
                    # by a number: the caller checks it is not 0 before the loop runs
                    return None if left is None else ast.BinOp(left, op, node.right)
                # by a row: NumPy's division of the elements (inf or nan, never a raise)
                right = self.elem(node.right)
                return None if right is None else ast.Call(
                    ast.Attribute(ast.Name("np", ast.Load()), "divide", ast.Load()),
                    [left, right], [])
            if isinstance(op, (ast.Add, ast.Sub, ast.Mult)):
                left, right = self.elem(node.left), self.elem(node.right)
                return None if left is None or right is None else ast.BinOp(left, op, right)
            return None
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            f = node.func
            ok = (isinstance(f, ast.Attribute) and f.attr in _UFUNCS
                  and isinstance(f.value, ast.Name) and f.value.id in ("np", "numpy")) or (
                isinstance(f, ast.Name) and f.id == "abs")
            inner = self.elem(node.args[0]) if ok else None
            return None if inner is None else ast.Call(f, [inner], [])
        return None


class _Unhoist(ast.NodeTransformer):
    """Names the scalar replacement bound to a row view (``_hl_r0 = X[i]`` before the loop)
    read as the view again: the view is what the element loop indexes."""

    def __init__(self, views: dict[str, ast.expr]) -> None:
        self.views = views

    def visit_Name(self, node: ast.Name) -> ast.expr:
        view = self.views.get(node.id)
        return copy.deepcopy(view) if view is not None else node


def _hoisted_views(func: ast.FunctionDef, ranks: dict[str, int]) -> dict[str, ast.expr]:
    """``_hl_rN`` → ``X[e…]`` for the row views :mod:`.rewrite`'s scalar replacement bound
    once (``X`` an array parameter never rebound, so the view reads what ``X[e…]`` does)."""
    binds: dict[str, list[ast.expr]] = {}
    for n in ast.walk(func):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 \
                and isinstance(n.targets[0], ast.Name) and n.targets[0].id.startswith("_hl_r"):
            binds.setdefault(n.targets[0].id, []).append(n.value)
    return {k: v[0] for k, v in binds.items() if len(v) == 1
            and isinstance(v[0], ast.Subscript) and isinstance(v[0].value, ast.Name)
            and v[0].value.id in ranks}


def _reduced_numbers(func: ast.FunctionDef) -> set[str]:
    """The scalars :mod:`.slice_sums` computed (``_hl_qN``: a row reduced to a number) and
    the names bound once, to one of them (``c = _hl_q0``)."""
    binds: dict[str, list[ast.expr | None]] = {}
    for n in ast.walk(func):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            binds.setdefault(n.id, [])
    for n in ast.walk(func):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                for m in ast.walk(t):
                    if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Store):
                        binds[m.id].append(n.value if t is m else None)
        elif isinstance(n, (ast.AugAssign, ast.For, ast.AnnAssign, ast.NamedExpr)):
            target = n.target
            for m in ast.walk(target):
                if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Store):
                    binds[m.id].append(None)  # bound otherwise: not a plain copy
    reduced = {k for k in binds if k.startswith("_hl_q") and k[5:].isdigit()}
    copies = {k for k, vs in binds.items() if len(vs) == 1 and isinstance(vs[0], ast.Name)
              and vs[0].id in reduced}
    return reduced | copies


def _stored_names(func: ast.FunctionDef) -> set[str]:
    return {n.id for n in ast.walk(func) if isinstance(n, ast.Name)
            and isinstance(n.ctx, (ast.Store, ast.Del))}


def _loop_form(s: ast.stmt, ctx: _Context, floats: frozenset[str],
               unhoist: _Unhoist) -> ast.If | None:
    if isinstance(s, ast.AugAssign) and isinstance(s.op, (ast.Add, ast.Sub, ast.Mult)):
        target, value = s.target, s.value
    elif isinstance(s, ast.Assign) and len(s.targets) == 1:
        target, value = s.targets[0], s.value
    else:
        return None
    value = unhoist.visit(copy.deepcopy(value))
    if not isinstance(target, ast.Subscript):
        return None
    got = _axes(target, ctx.ranks)
    if got is None or got[0] not in floats:
        return None
    name, idx, axis = got
    if not all(isinstance(e, ast.Slice) or _number(e, ctx) for e in idx):
        return None
    # numba's scalar ``/`` raises on 0 where the array form gives inf or nan: a number
    # divisor is checked against 0 before the loop runs, a row divisor is ``np.divide``
    divs = [n.right for n in ast.walk(value) if isinstance(n, ast.BinOp)
            and isinstance(n.op, ast.Div) and _number(n.right, ctx)]
    rw = _Rewrite(ctx)
    elem = rw.elem(value)
    if elem is None or not rw.reads:
        return None  # a number stored in a slice: a fill, no temporary to save
    own = ast.unparse(target)
    at_own = {id(sub.value) for sub in ast.walk(value)
              if isinstance(sub, ast.Subscript) and ast.unparse(sub) == own}
    if any(isinstance(n, ast.Name) and n.id == name and id(n) not in at_own
           for n in ast.walk(value)) or any(
            isinstance(n, ast.Name) and n.id == name
            for e in idx if not isinstance(e, ast.Slice) for n in ast.walk(e)):
        return None  # the value reads the target's array elsewhere: NumPy reads it first
    idx[axis] = ast.Name(ctx.var, ast.Load())
    store = ast.Subscript(ast.Name(name, ast.Load()), ast.Tuple(idx, ast.Load())
                          if len(idx) > 1 else idx[0], ast.Store())
    body: ast.stmt = (ast.AugAssign(store, s.op, elem) if isinstance(s, ast.AugAssign)
                      else ast.Assign([store], elem))
    length = f"{name}.shape[{axis}]"
    checks = [f"{length} == {x}" for x in dict.fromkeys(rw.lengths) if x != length]
    checks += [f"({d}) != 0" for d in dict.fromkeys(ast.unparse(d) for d in divs)]
    loop = ast.For(ast.Name(ctx.var, ast.Store()),
                   ast.parse(f"range({length})", mode="eval").body, [body], [])
    if not checks:
        return ast.If(ast.Constant(True), [loop], [])
    return ast.If(ast.parse(" and ".join(checks), mode="eval").body, [loop], [s])


def rewrite_in_loops(stmts: list[ast.stmt],
                     rewrite: Callable[[ast.stmt], list[ast.stmt] | None],
                     in_loop: bool = False) -> None:
    """Replace, in place, each statement of ``stmts`` that is inside a loop (at any depth,
    through ``if`` branches) by ``rewrite(s)`` when that gives statements; a compound
    statement's own body is visited first. New statements carry ``s``'s location."""
    k = 0
    while k < len(stmts):
        s = stmts[k]
        if isinstance(s, (ast.For, ast.While)):
            rewrite_in_loops(s.body, rewrite, True)
            rewrite_in_loops(s.orelse, rewrite, in_loop)
        elif isinstance(s, ast.If):
            rewrite_in_loops(s.body, rewrite, in_loop)
            rewrite_in_loops(s.orelse, rewrite, in_loop)
        new = rewrite(s) if in_loop else None
        if new is None:
            k += 1
            continue
        for t in new:
            if t is not s:
                for n in ast.walk(t):
                    if "lineno" in n._attributes:
                        ast.copy_location(n, s)
        stmts[k:k + 1] = new
        k += len(new)


def slice_loops(func: ast.FunctionDef, ranks: dict[str, int], floats: frozenset[str],
                numbers: frozenset[str], scalar_params: frozenset[str]) -> list[str]:
    """Rewrite, in place, the one-axis slice statements inside ``func``'s loops as element
    loops (module docstring). ``ranks``: array parameter → number of dimensions; ``floats``:
    the floating-point ones; ``numbers``: locals that hold numbers (loop indices included);
    ``scalar_params``: parameters the search saw holding numbers. Returns one line per
    statement rewritten."""
    stored = _stored_names(func)
    ranks = {k: v for k, v in ranks.items() if k not in stored}
    nums = frozenset(numbers | (scalar_params - stored) | _reduced_numbers(func))
    unhoist = _Unhoist(_hoisted_views(func, ranks))
    notes: list[str] = []
    count = 0

    def rewrite(s: ast.stmt) -> list[ast.stmt] | None:
        nonlocal count
        new = _loop_form(s, _Context(ranks, nums, f"_hl_s{count}"), floats, unhoist)
        if new is None:
            return None
        notes.append(f"slice statement as an element loop (no temporary): {ast.unparse(s)}")
        count += 1
        return [new.body[0] if isinstance(new.test, ast.Constant) else new]

    rewrite_in_loops(func.body, rewrite)
    if notes:
        ast.fix_missing_locations(func)
    return notes
