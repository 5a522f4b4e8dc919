"""Counters kept in step with a loop (``k += 1`` beside ``for row in A``) replaced by the loop
index, so the analysis sees ``out[i]`` where the source says ``out[k]``.

A scientist iterating ``for row in A`` (a range loop after :mod:`.iterables`) often keeps the
row number by hand::

    k = 0
    for row in A:            # for _hl_i_row in range(len(A)): row = A[_hl_i_row]
        out[k] = np.max(row)
        k += 1

``k`` is a scalar carried from one iteration to the next, which keeps the loop serial; but in
iteration ``t`` (counted from 0) it holds ``k0 + c·t`` before the update and ``k0 + c·(t + 1)``
after it. :func:`substitute_counters` rewrites, in place, each read of such a counter with
that expression, drops the update and sets the counter's final value after the loop
(``k0 + c·trips``), when all of this holds:

- the loop is ``for i in range(hi)`` or ``range(lo, hi)`` with an integer constant ``lo``,
  ``i`` is not assigned in its body, and ``hi`` reads no name the body assigns and calls
  nothing but ``len``;
- the counter is set to an integer constant ``k0`` earlier in the same statement list, with no
  store of it in between; in the body its only store is one ``k += c`` / ``k = k + c``
  (or ``-``; ``c`` an integer constant) among the body's own statements (not under an ``if``
  or an inner loop), and the body has no ``break``, ``continue`` or ``return``;
- ``len`` is the builtin.

Integers only, so ``k0 + c·t`` is exactly what the additions give.

>>> t = ast.parse("def f(A, out):\\n    k = 0\\n    for i in range(len(A)):\\n"
...               "        out[k] = A[i]\\n        k += 1\\n    return k").body[0]
>>> substitute_counters(t, {})
1
>>> print(ast.unparse(t))
def f(A, out):
    k = 0
    for i in range(len(A)):
        out[i] = A[i]
    k = len(A) if len(A) > 0 else 0
    return k
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

from .walk import exits_iteration, statement_lists

__all__ = ["substitute_counters"]


def _stores(node: ast.AST, name: str) -> list[ast.AST]:
    return [n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name
            and isinstance(n.ctx, (ast.Store, ast.Del))]


def _int(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int(node.operand)
        return None if v is None else -v
    return None


def _step(s: ast.stmt, name: str) -> int | None:
    """``c`` of ``name += c`` / ``name = name + c`` (``-= c``, ``- c``: ``-c``), else None."""
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name) \
            and s.target.id == name and isinstance(s.op, (ast.Add, ast.Sub)):
        c = _int(s.value)
    elif isinstance(s, ast.Assign) and len(s.targets) == 1 \
            and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name \
            and isinstance(s.value, ast.BinOp) and isinstance(s.value.op, (ast.Add, ast.Sub)) \
            and isinstance(s.value.left, ast.Name) and s.value.left.id == name:
        c = _int(s.value.right)
    else:
        return None
    op = s.op if isinstance(s, ast.AugAssign) else s.value.op  # type: ignore[union-attr]
    return None if c is None else (c if isinstance(op, ast.Add) else -c)


def _plain_bound(e: ast.expr) -> bool:
    """Names, constants, attributes, subscripts, arithmetic and ``len`` calls only."""
    for n in ast.walk(e):
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id == "len"
                                            and len(n.args) == 1 and not n.keywords):
            return False
        if isinstance(n, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom,
                          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return False
    return True


class _Replace(ast.NodeTransformer):
    def __init__(self, name: str, value: str) -> None:
        self.name, self.value = name, value

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.name and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.parse(self.value, mode="eval").body, node)
        return node


def _counter(block: list[ast.stmt], k: int, loop: ast.For,
             outer: set[str]) -> tuple[str, int, int, int] | None:
    """(name, k0, c, index of the update in the body) of a counter of ``loop`` (``block[k]``);
    ``outer``: names declared global or nonlocal (never counters)."""
    body = loop.body
    for u, s in enumerate(body):
        name = _assigned_name(s)
        c = None if name is None else _step(s, name)
        if c is None or name == getattr(loop.target, "id", None) or name in outer:
            continue
        if sum(len(_stores(t, name)) for t in body) != 1:
            continue  # stored elsewhere in the body too
        prev = next((p for p in reversed(block[:k]) if _stores(p, name)), None)
        if prev is not None and _assigned_name(prev) == name and isinstance(prev, ast.Assign) \
                and (k0 := _int(prev.value)) is not None:  # the nearest earlier binding
            return name, k0, c, u
    return None


def _assigned_name(s: ast.stmt) -> str | None:
    """The name ``s`` assigns when it is ``name = …`` or ``name op= …``."""
    if isinstance(s, ast.AugAssign) and isinstance(s.target, ast.Name):
        return s.target.id
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name):
        return s.targets[0].id
    return None


def _linear(x: str, c: int, b: int) -> str:
    """Source of ``c·x + b``, without the parts that are 1 or 0."""
    term = x if c == 1 else f"{c} * {x}"
    if not b:
        return term
    return f"({term} + {b})" if b > 0 else f"({term} - {-b})"


def substitute_counters(tree: ast.FunctionDef, namespace: dict[str, Any]) -> int:
    """Rewrite the counters of ``tree``'s loops in place (module docstring); returns how many
    were substituted."""
    if namespace.get("len", builtins.len) is not builtins.len or any(
            n.id == "len" for n in ast.walk(tree) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)):
        return 0
    outer = {name for n in ast.walk(tree) if isinstance(n, (ast.Global, ast.Nonlocal))
             for name in n.names}
    count = 0
    for block in list(statement_lists(tree)):
        k = 0
        while k < len(block):
            loop = block[k]
            k += 1
            if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name)
                    and isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name)
                    and loop.iter.func.id == "range" and not loop.iter.keywords
                    and len(loop.iter.args) in (1, 2) and not loop.orelse):
                continue
            args = loop.iter.args
            lo = 0 if len(args) == 1 else _int(args[0])
            hi = args[-1]
            var = loop.target.id
            assigned = {n.id for s in loop.body for n in ast.walk(s)
                        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
            if lo is None or var in assigned or not _plain_bound(hi) or exits_iteration(
                    loop.body) or any(isinstance(n, ast.Name) and n.id in assigned
                                      for n in ast.walk(hi)):
                continue
            at = k - 1  # the loop's place in its block (the final values go after it)
            while (got := _counter(block, at, loop, outer)) is not None:
                name, k0, c, u = got
                before = _linear(var, c, k0 - c * lo)
                after = _linear(var, c, k0 + c * (1 - lo))
                loop.body = [_Replace(name, before if j < u else after).visit(s)
                             for j, s in enumerate(loop.body) if j != u] or [ast.Pass()]
                h = ast.unparse(hi)
                trips = f"{h} - {lo}" if lo else h
                final = ast.parse(f"{name} = {_linear(f'({trips} if {h} > {lo} else 0)', c, k0)}"
                                  ).body[0]
                block.insert(k, ast.copy_location(final, loop))
                k += 1
                count += 1
    if count:
        ast.fix_missing_locations(tree)
    return count
