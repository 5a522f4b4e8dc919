"""``prange`` over a range with a step other than 1, which numba refuses ("Only constant step
size of 1 is supported for prange"): rewritten over the trip count, the loop variable computed
from it.

``for i in prange(lo, hi, st)`` → ``for _hl_k_i in prange(max(0, -((lo - hi) // st))):``
``i = lo + st * _hl_k_i`` (the trip count of ``range(lo, hi, st)`` for either sign of ``st``;
the analysis called the loop parallel only for a nonzero constant step).

>>> import ast
>>> tree = ast.parse("for i in prange(n - 1, -1, -1):\\n    out[n - 1 - i] = a[i]")
>>> unit_step_pranges(tree)
1
>>> print(ast.unparse(tree))
for _hl_k_i in prange(max(0, -((n - 1 - -1) // -1))):
    i = n - 1 + -1 * _hl_k_i
    out[n - 1 - i] = a[i]
>>> i_values = [8 + -1 * k for k in range(max(0, -((8 - -1) // -1)))]
>>> i_values == list(range(8, -1, -1))
True

A bound that is itself a sum keeps its own parentheses (``range(2, n - 1, 2)``):

>>> tree = ast.parse("for i in prange(2, n - 1, 2):\\n    a[i] = 0.0")
>>> _ = unit_step_pranges(tree)
>>> print(ast.unparse(tree).splitlines()[0])
for _hl_k_i in prange(max(0, -((2 - (n - 1)) // 2))):
"""

from __future__ import annotations

import ast

__all__ = ["unit_step_pranges"]


def _is_one(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == 1


def _copy(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


def unit_step_pranges(tree: ast.AST) -> int:
    """Rewrite, in place, every ``for … in prange(lo, hi, step)`` whose step is not the
    literal 1 over a unit-step ``prange`` of its trip count; returns how many. A loop whose
    body assigns a name ``lo`` or ``step`` reads is left as it is (numba then refuses it,
    and the search reports that candidate as failed)."""
    count = 0
    for node in ast.walk(tree):
        it = getattr(node, "iter", None)
        if not (isinstance(node, ast.For) and isinstance(it, ast.Call)
                and isinstance(it.func, ast.Name) and it.func.id == "prange"
                and len(it.args) == 3 and not _is_one(it.args[2])
                and isinstance(node.target, ast.Name)):
            continue
        lo, hi, st = it.args
        var = node.target.id
        used = {n.id for e in (lo, st) for n in ast.walk(e) if isinstance(n, ast.Name)}
        stored = {n.id for s in node.body for n in ast.walk(s)
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if used & stored:  # the bound would be read again after the body changed it: leave
            continue
        k = f"_hl_k_{var}"
        # built as nodes, not text: ``hi = n - 1`` must stay one operand of ``lo - hi``
        diff = ast.BinOp(_copy(lo), ast.Sub(), _copy(hi))
        trip = ast.Call(ast.Name("max", ast.Load()), [ast.Constant(0), ast.UnaryOp(
            ast.USub(), ast.BinOp(diff, ast.FloorDiv(), _copy(st)))], [])
        node.iter = ast.Call(ast.Name("prange", ast.Load()), [trip], [])
        node.target = ast.Name(k, ast.Store())
        value = ast.BinOp(_copy(lo), ast.Add(), ast.BinOp(_copy(st), ast.Mult(),
                                                          ast.Name(k, ast.Load())))
        first = ast.Assign([ast.Name(var, ast.Store())], value)
        node.body.insert(0, first)
        count += 1
    if count:
        ast.fix_missing_locations(tree)
    return count
