"""One-based loops (a Fortran port: ``for i in range(1, n + 1): … A[i - 1, j - 1] …``) re-based
to zero, so the catalogue sees plain loop variables.

A loop ``for v in range(a, b)`` (step 1, ``a`` an int constant) whose variable is used in its
body only as ``v - c`` — one positive int constant ``c ≤ a`` for every use — runs the same
statements as ``for v in range(a - c, b - c)`` with each ``v - c`` written ``v``. Only the
loop variable's value after the loop differs; the function-block matcher refuses a nest whose
loop variables are read after it. :func:`rebased` returns a rewritten copy of a nest (or the
nest itself when no loop needs it).

>>> import ast
>>> nest = ast.parse("for i in range(1, n + 1):\\n    y[i - 1] = 2.0 * x[i - 1]").body[0]
>>> print(ast.unparse(rebased(nest)))
for i in range(0, n):
    y[i] = 2.0 * x[i]
"""

from __future__ import annotations

import ast
import copy

__all__ = ["rebased"]


def _shift(loop: ast.For) -> int:
    """The ``c`` of every use ``v - c`` of the loop's variable in its body, or 0."""
    v = loop.target.id if isinstance(loop.target, ast.Name) else None
    it = loop.iter
    if v is None or not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                         and it.func.id == "range" and len(it.args) == 2 and not it.keywords):
        return 0
    start = it.args[0]
    if not (isinstance(start, ast.Constant) and type(start.value) is int and start.value > 0):
        return 0
    shifted: set[int] = set()
    plain = 0
    for stmt in loop.body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Sub) \
                    and isinstance(n.left, ast.Name) and n.left.id == v \
                    and isinstance(n.right, ast.Constant) and type(n.right.value) is int:
                shifted.add(n.right.value)
            elif isinstance(n, ast.Name) and n.id == v:
                plain += 1
    if len(shifted) != 1 or plain != sum(1 for s in loop.body for n in ast.walk(s)
                                         if isinstance(n, ast.BinOp)
                                         and isinstance(n.left, ast.Name) and n.left.id == v
                                         and isinstance(n.op, ast.Sub)
                                         and isinstance(n.right, ast.Constant)):
        return 0
    c = shifted.pop()
    return c if 0 < c <= start.value else 0


class _Drop(ast.NodeTransformer):
    def __init__(self, var: str, c: int) -> None:
        self.var, self.c = var, c

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        if isinstance(node.op, ast.Sub) and isinstance(node.left, ast.Name) \
                and node.left.id == self.var and isinstance(node.right, ast.Constant) \
                and node.right.value == self.c:
            return ast.copy_location(ast.Name(self.var, ast.Load()), node)
        return self.generic_visit(node)


def _minus(e: ast.expr, c: int) -> ast.expr:
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) \
            and isinstance(e.right, ast.Constant) and e.right.value == c:
        return e.left  # ``n + 1`` − 1 → ``n``
    return ast.BinOp(e, ast.Sub(), ast.Constant(c))


def rebased(root: ast.For) -> ast.For:
    """``root`` with every one-based loop of the nest re-based to zero (a copy), or ``root``."""
    if not any(isinstance(n, ast.For) and _shift(n) for n in ast.walk(root)):
        return root
    out = copy.deepcopy(root)
    for loop in [n for n in ast.walk(out) if isinstance(n, ast.For)]:
        c = _shift(loop)
        if c:
            start, stop = loop.iter.args  # type: ignore[attr-defined]
            loop.iter.args = [ast.Constant(start.value - c), _minus(stop, c)]  # type: ignore
            loop.body = [_Drop(loop.target.id, c).visit(s)  # type: ignore[attr-defined]
                         for s in loop.body]
    return ast.fix_missing_locations(out)
