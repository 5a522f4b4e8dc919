"""Every statement list of a syntax tree (bodies and ``else`` branches), for the rewrites
and checks that look at a statement together with the ones after it in its block."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

__all__ = ["statement_lists", "exits_iteration", "rewrite_statements"]


def statement_lists(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    """Each ``body`` and ``orelse`` list under ``tree`` (the lists themselves: a caller may
    replace an element in place).

    >>> t = ast.parse("for i in x:\\n    if i:\\n        a = 1\\n    else:\\n        b = 2")
    >>> [len(b) for b in statement_lists(t)]
    [1, 1, 1, 1]
    """
    for node in ast.walk(tree):
        for field_ in ("body", "orelse"):
            block = getattr(node, field_, None)
            if isinstance(block, list) and block:
                yield block


def rewrite_statements(stmts: list[ast.stmt], rewrite: Callable[
        [ast.stmt, list[ast.stmt]], list[ast.stmt] | None]) -> list[ast.stmt]:
    """``stmts`` rebuilt innermost first: the bodies and ``else`` branches of each statement
    (not of nested functions or classes), then the statement itself replaced by
    ``rewrite(stmt, before)`` unless that is None (``before``: the statements already placed
    ahead of it in its block).

    >>> t = ast.parse("for i in x:\\n    a = 1\\nb = 2")
    >>> out = rewrite_statements(t.body, lambda s, before: [s, s] if isinstance(
    ...     s, ast.Assign) else None)
    >>> print(ast.unparse(ast.Module(out, [])))
    for i in x:
        a = 1
        a = 1
    b = 2
    b = 2
    """
    out: list[ast.stmt] = []
    for s in stmts:
        if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for field_ in ("body", "orelse", "finalbody"):
                inner = getattr(s, field_, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(s, field_, rewrite_statements(inner, rewrite))
        new = rewrite(s, out)
        out += [s] if new is None else new
    return out


def exits_iteration(body: list[ast.stmt]) -> bool:
    """Whether ``body`` (a loop's body) may leave an iteration early: a ``break`` or
    ``continue`` of that loop (not of a loop inside it), a ``return``, ``raise`` or ``yield``.
    Such an iteration may skip an assignment that ``analysis.scalars.exposed_reads`` counts
    as made."""
    def visit(node: ast.AST, nested: bool) -> bool:
        if isinstance(node, (ast.Break, ast.Continue)) and not nested:
            return True
        if isinstance(node, (ast.Return, ast.Raise, ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):  # ``else:`` is not inside
            return any(visit(c, True) for c in node.body) or any(
                visit(c, nested) for c in node.orelse)
        return any(visit(c, nested) for c in ast.iter_child_nodes(node))

    return any(visit(s, False) for s in body)


def range_call_args(it: ast.expr, names: tuple[str, ...] = ("range", "prange"),
                    positive_step: bool = True) -> list[ast.expr] | None:
    """The one to three positional arguments of ``it`` when it is a call of one of ``names``
    (``range(n)``, ``range(lo, hi, step)``; no ``*args``) whose step, if given, is an ``int``
    constant — positive when ``positive_step``, else non-zero; otherwise None."""
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id in names
            and 1 <= len(it.args) <= 3 and not it.keywords
            and not any(isinstance(a, ast.Starred) for a in it.args)):
        return None
    if len(it.args) == 3:
        st, sign = it.args[2], 1
        if isinstance(st, ast.UnaryOp) and isinstance(st.op, ast.USub):
            st, sign = st.operand, -1
        if not (isinstance(st, ast.Constant) and type(st.value) is int
                and (sign * st.value > 0 if positive_step else st.value != 0)):
            return None
    return list(it.args)
