"""Reductions of row expressions inside loops as element loops (a fixed pass of the numba
target).

``d = np.sum((X[i] - C[k]) ** 2)`` in a loop over ``k`` is, in numba, an array expression
evaluated into a fresh temporary for every ``k`` and then summed: an allocation and a second
pass over the row per iteration (probe 9's plans for a k-means assignment and a pairwise
distance matrix on 8 features took 5.54 and 11.01 ms with it, 0.95 and 0.34 ms with this
pass and the inlined helpers: ``benchmarks/results/quiet-2026-12-08-s16/probe9*.txt``). When
the reduced expression is elementwise over one axis, the sum runs as one loop over that axis
with no temporary, before the statement::

    if X.shape[1] == C.shape[1]:
        _hl_q0 = 0.0
        for _hl_s0q in range(X.shape[1]):
            _hl_q0 += (X[i, _hl_s0q] - C[k, _hl_s0q]) ** 2
    else:
        _hl_q0 = np.sum((X[i] - C[k]) ** 2)
    d = _hl_q0

Reductions rewritten: ``np.sum(v)`` and ``v.sum()``, ``np.mean(v)`` and ``v.mean()`` (the sum
divided by the length; an empty row keeps NumPy's form), ``np.dot(a, b)`` and ``a @ b`` of two
rows, ``np.linalg.norm(v)`` (the square root of the sum of squares), ``np.max(v)``,
``np.min(v)``, ``v.max()``, ``v.min()`` (NaN-exact: a NaN anywhere gives NaN, as NumPy's; an
empty row keeps NumPy's error). ``v`` follows the value rules of :mod:`.slices` (one-axis
slices and 1-D arrays of equal length, numbers, ``+ - *``, ``/`` by a nonzero number or by a
row, ``** k``, elementwise NumPy functions) and reads only float64 arrays the search saw
(``report.double_arrays``: the sum is accumulated in a float64 scalar, as NumPy's is). The
statement holding the reduction — an assignment, an augmented assignment, an expression, an
``if`` test or a ``return`` — is inside a loop and calls nothing but math/NumPy functions and
the pure builtins, so computing the reduction just before it changes no other effect's order.
The sum is accumulated in order where NumPy sums pairwise: results may differ in the last bits
(the search verifies every candidate).
"""

from __future__ import annotations

import ast
import copy

from ...front.calls import hidden_write, np_call_chain
from .slices import (
    _Context,
    _hoisted_views,
    _number,
    _Rewrite,
    _stored_names,
    _Unhoist,
    rewrite_in_loops,
)

__all__ = ["reduction_call", "slice_sums"]

_BUILTINS = frozenset({"abs", "min", "max", "float", "int", "len", "round"})
#: row methods rewritten (``(X[i] - c).sum()``)
_METHODS = ("sum", "mean", "max", "min")
_NP = ("np", "numpy")


def _np_attr(f: ast.expr, *names: str) -> bool:
    """``np.<name>`` / ``numpy.<name>`` (``names``: the dotted tail, e.g. "linalg", "norm")."""
    parts = []
    while isinstance(f, ast.Attribute):
        parts.insert(0, f.attr)
        f = f.value
    return isinstance(f, ast.Name) and f.id in _NP and tuple(parts) == names


def _plain_calls(node: ast.AST) -> bool:
    """Every call in ``node`` is a math/NumPy function that writes nothing (no ``out=``,
    no ``np.add.at``, no random draw), a row method or a pure builtin."""
    for n in ast.walk(node):
        if not isinstance(n, ast.Call):
            continue
        f = n.func
        if isinstance(f, ast.Name) and f.id in _BUILTINS:
            continue
        chain = np_call_chain(f, {})
        if chain is not None and chain[0] in ("numpy", "math") and not hidden_write(chain) \
                and all(k.arg not in (None, "out") for k in n.keywords):
            continue
        if isinstance(f, ast.Attribute) and f.attr in _METHODS and not n.args:
            continue
        return False
    return True


def reduction_call(node: ast.expr) -> tuple[str, list[ast.expr]] | None:
    """(kind, operands) of a reduction call this pass rewrites, else None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return "dot", [node.left, node.right]
    if not isinstance(node, ast.Call) or node.keywords:
        return None
    f, args = node.func, node.args
    if isinstance(f, ast.Attribute) and f.attr in _METHODS and not args \
            and not (isinstance(f.value, ast.Name) and f.value.id in _NP):
        return f.attr, [f.value]
    for kind, path, n_args in (("sum", ("sum",), 1), ("mean", ("mean",), 1),
                               ("dot", ("dot",), 2), ("norm", ("linalg", "norm"), 1),
                               ("max", ("max",), 1), ("min", ("min",), 1),
                               ("max", ("amax",), 1), ("min", ("amin",), 1)):
        if _np_attr(f, *path) and len(args) == n_args:
            return kind, list(args)
    return None


class _At(ast.NodeTransformer):
    def __init__(self, var: str, value: ast.expr) -> None:
        self.var, self.value = var, value

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return copy.deepcopy(self.value) if node.id == self.var else node


def _extremum(elem: ast.expr, kind: str, var: str, length: str,
              name: str) -> list[ast.stmt]:
    """NumPy's ``max``/``min`` of a nonempty row by a loop, NaN-exact: the first element,
    then each next one taken unless it is not above (below) the current one, and never once
    the current one is NaN (``m == m and not (e <= m)``: a NaN element is taken and kept)."""
    keep = "<=" if kind == "max" else ">="
    first = _At(var, ast.Constant(0)).visit(copy.deepcopy(elem))
    return ast.parse(
        f"{name} = {ast.unparse(first)}\n"
        f"for {var} in range(1, {length}):\n"
        f"    {name}e = {ast.unparse(elem)}\n"
        f"    if {name} == {name} and not ({name}e {keep} {name}):\n"
        f"        {name} = {name}e\n").body


def _loop_for(call: ast.expr, kind: str, operands: list[ast.expr], ctx: _Context,
              doubles: frozenset[str], name: str) -> list[ast.stmt] | None:
    """The statements computing ``call`` into ``name`` by an element loop, or None."""
    rw = _Rewrite(ctx)
    elems = [rw.elem(op) for op in operands]
    if any(e is None for e in elems) or not rw.reads:
        return None
    if any(isinstance(n, ast.Name) and n.id in ctx.ranks and n.id not in doubles
           for op in operands for n in ast.walk(op)):
        return None  # a float32 or integer array: NumPy's sum has its dtype
    if kind == "dot" and len(rw.reads) != 2:
        return None  # a row times a number: not a 1-D dot of two rows
    divs = [n.right for op in operands for n in ast.walk(op)
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and _number(n.right, ctx)]
    first, *rest = elems
    if kind == "dot":
        elem: ast.expr = ast.BinOp(first, ast.Mult(), rest[0])
    elif kind == "norm":
        elem = ast.BinOp(first, ast.Mult(), copy.deepcopy(first))
    else:
        elem = first
    length = rw.lengths[0]
    checks = [f"{length} == {x}" for x in dict.fromkeys(rw.lengths) if x != length]
    checks += [f"({d}) != 0" for d in dict.fromkeys(ast.unparse(d) for d in divs)]
    if kind == "mean":
        checks.append(f"{length} > 0")  # NumPy's mean of nothing: nan and a warning
    if kind in ("max", "min"):
        checks.append(f"{length} > 0")  # NumPy's max of nothing raises
        body = _extremum(elem, kind, ctx.var, length, name)
    else:
        loop = ast.For(ast.Name(ctx.var, ast.Store()),
                       ast.parse(f"range({length})", mode="eval").body,
                       [ast.AugAssign(ast.Name(name, ast.Store()), ast.Add(), elem)], [])
        body = [ast.parse(f"{name} = 0.0").body[0], loop]
    if kind == "mean":
        body.append(ast.parse(f"{name} = {name} / {length}").body[0])
    elif kind == "norm":
        body.append(ast.parse(f"{name} = np.sqrt({name})").body[0])
    if not checks:
        return body
    guard = ast.If(ast.parse(" and ".join(checks), mode="eval").body, body,
                   [ast.Assign([ast.Name(name, ast.Store())], copy.deepcopy(call))])
    return [guard]


def _rewritable(s: ast.stmt) -> list[ast.expr]:
    """The expressions of ``s`` evaluated before anything else it does (where a reduction may
    be computed first)."""
    if isinstance(s, ast.Assign):
        return [s.value]
    if isinstance(s, (ast.AugAssign, ast.Expr)):
        return [s.value]
    if isinstance(s, ast.If):
        return [s.test]
    if isinstance(s, ast.Return) and s.value is not None:
        return [s.value]
    return []


class _Swap(ast.NodeTransformer):
    def __init__(self, by_id: dict[int, str]) -> None:
        self.by_id = by_id

    def generic_visit(self, node: ast.AST) -> ast.AST:
        name = self.by_id.get(id(node))
        if name is not None:
            return ast.Name(name, ast.Load())
        return super().generic_visit(node)


def slice_sums(func: ast.FunctionDef, ranks: dict[str, int], doubles: frozenset[str],
               numbers: frozenset[str], scalar_params: frozenset[str]) -> list[str]:
    """Rewrite, in place, the reductions of row expressions in ``func``'s loops as element
    loops (module docstring). ``ranks``: array parameter → number of dimensions;
    ``doubles``: the float64 ones; ``numbers``: locals that hold numbers (loop indices
    included); ``scalar_params``: parameters the search saw holding numbers. Returns one line
    per reduction rewritten."""
    stored = _stored_names(func)
    ranks = {k: v for k, v in ranks.items() if k not in stored}
    nums = frozenset(numbers | (scalar_params - stored))
    unhoist = _Unhoist(_hoisted_views(func, ranks))
    notes: list[str] = []
    count = [0]

    def rewrite(s: ast.stmt) -> list[ast.stmt] | None:
        roots = _rewritable(s)
        if not roots or not all(_plain_calls(r) for r in roots):
            return None
        before: list[ast.stmt] = []
        by_id: dict[int, str] = {}
        for root in roots:
            for node in ast.walk(root):
                got = reduction_call(node)
                if got is None or any(id(m) in by_id for m in ast.walk(node)):
                    continue
                name = f"_hl_q{count[0]}"
                ctx = _Context(ranks, nums, f"_hl_s{count[0]}q")
                kind, operands = got
                operands = [unhoist.visit(copy.deepcopy(op)) for op in operands]
                stmts = _loop_for(node, kind, operands, ctx, doubles, name)
                if stmts is None:
                    continue
                count[0] += 1
                by_id[id(node)] = name
                before += stmts
                notes.append(f"reduction of a row expression as an element loop (no "
                             f"temporary): {ast.unparse(node)}")
        if not by_id:
            return None
        swap = _Swap(by_id)
        if isinstance(s, ast.If):
            s.test = swap.visit(s.test)
        else:
            s.value = swap.visit(s.value)  # type: ignore[union-attr]
        return [*before, s]

    rewrite_in_loops(func.body, rewrite)
    if notes:
        ast.fix_missing_locations(func)
    return notes
