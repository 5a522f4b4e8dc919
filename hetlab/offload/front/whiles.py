"""Counting ``while`` loops as ``for`` loops over a ``range``.

C-style Python counts by hand::

    i = 0
    while i < n:
        out[i] = 2.0 * x[i]
        i += 1

The analysis models ``for`` loops over a ``range`` only (a ``while`` is walked as part of the
iterations around it), so such a loop was never offloaded. :func:`whiles_as_fors` rewrites it,
in place, into the loop it is::

    for i in range(0, n, 1):
        out[i] = 2.0 * x[i]
    i = 0 + 1 * max(0, (n - 0 + 0) // 1)

(the last line gives ``i`` the value the ``while`` leaves it with), when all of this holds:

- the counter ``i`` is bound to an integer constant earlier in the same statement list, with
  no store of ``i`` in between; the test is ``i < e``, ``i <= e``, ``i > e`` or ``i >= e``
  (``e`` made of names, integer constants, ``+ - * // %``, ``len(…)``, ``.shape[k]`` and
  ``.size``, none of whose names the body stores), with ``i += c`` (``<``, ``<=``) or
  ``i -= c`` (``>``, ``>=``), ``c`` a positive integer constant, as the body's last
  statement and its only store of ``i``;
- the body has no ``break`` or ``continue`` of its own, no ``return``, ``raise`` or
  ``yield``, and the ``while`` no ``else``.
"""

from __future__ import annotations

import ast

from .walk import exits_iteration, rewrite_statements

__all__ = ["whiles_as_fors"]

_BOUND_NODES = (ast.Name, ast.Constant, ast.BinOp, ast.Attribute, ast.Subscript, ast.Call,
                ast.Load, ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.UnaryOp,
                ast.USub)


def _stored(nodes: list[ast.stmt]) -> set[str]:
    return {n.id for s in nodes for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}


def _bound_ok(e: ast.expr) -> bool:
    for n in ast.walk(e):
        if not isinstance(n, _BOUND_NODES):
            return False
        if isinstance(n, ast.Constant) and (not isinstance(n.value, int)
                                            or isinstance(n.value, bool)):
            return False
        if isinstance(n, ast.Attribute) and n.attr not in ("shape", "size"):
            return False
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name)
                                            and n.func.id == "len" and len(n.args) == 1):
            return False
        if isinstance(n, ast.Subscript) and not (isinstance(n.value, ast.Attribute)
                                                 and n.value.attr == "shape"):
            return False
    return True


def _step(stmt: ast.stmt, name: str) -> int | None:
    """``c`` for ``name += c``, ``-c`` for ``name -= c`` (``c`` a positive int), else None."""
    if not (isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name)
            and stmt.target.id == name and isinstance(stmt.value, ast.Constant)
            and isinstance(stmt.value.value, int) and not isinstance(stmt.value.value, bool)
            and stmt.value.value > 0):
        return None
    if isinstance(stmt.op, ast.Add):
        return stmt.value.value
    return -stmt.value.value if isinstance(stmt.op, ast.Sub) else None


def _initial(stmts: list[ast.stmt], k: int, name: str) -> int | None:
    """The int constant ``name`` is bound to before ``stmts[k]`` (not stored since), or None."""
    for s in reversed(stmts[:k]):
        if isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Name) and s.targets[0].id == name:
            v = s.value
            if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub) \
                    and isinstance(v.operand, ast.Constant):  # i = -3
                v = ast.Constant(-v.operand.value) if isinstance(v.operand.value, int) else v
            ok = isinstance(v, ast.Constant) and isinstance(v.value, int) \
                and not isinstance(v.value, bool)
            return v.value if ok else None  # type: ignore[union-attr]
        if name in _stored([s]):
            return None
    return None


def _as_for(w: ast.While, start: int) -> list[ast.stmt] | None:
    t = w.test
    if w.orelse or not (isinstance(t, ast.Compare) and len(t.ops) == 1
                        and isinstance(t.left, ast.Name) and w.body):
        return None
    name, op, bound = t.left.id, t.ops[0], t.comparators[0]
    step = _step(w.body[-1], name)
    body = w.body[:-1]
    if step is None or not body or not _bound_ok(bound) or exits_iteration(body) \
            or name in _stored(body) or (_stored(w.body) & {n.id for n in ast.walk(bound)
                                                           if isinstance(n, ast.Name)}):
        return None
    up = {ast.Lt: 0, ast.LtE: 1}.get(type(op))
    down = {ast.Gt: 0, ast.GtE: -1}.get(type(op))
    if step > 0 and up is not None:
        stop = ast.BinOp(bound, ast.Add(), ast.Constant(up)) if up else bound
    elif step < 0 and down is not None:
        stop = ast.BinOp(bound, ast.Add(), ast.Constant(down)) if down else bound
    else:
        return None
    stop_src, a = ast.unparse(stop), abs(step)
    loop = ast.parse(f"for {name} in range({start}, {stop_src}, {step}):\n    pass").body[0]
    loop.body = body  # type: ignore[attr-defined]
    if step > 0:
        final = f"{start} + {a} * max(0, ({stop_src} - {start} + {a - 1}) // {a})"
    else:
        final = f"{start} - {a} * max(0, ({start} - ({stop_src}) + {a - 1}) // {a})"
    return [loop, *ast.parse(f"{name} = {final}").body]


def whiles_as_fors(tree: ast.FunctionDef) -> int:
    """Rewrite, in place, ``tree``'s counting ``while`` loops (module docstring), innermost
    first; the number rewritten.

    >>> t = ast.parse("def f(x, out):\\n    i = 0\\n    while i < len(x):\\n"
    ...               "        out[i] = x[i]\\n        i += 1\\n    return i").body[0]
    >>> whiles_as_fors(t)
    1
    >>> print(ast.unparse(t))
    def f(x, out):
        i = 0
        for i in range(0, len(x), 1):
            out[i] = x[i]
        i = 0 + 1 * max(0, (len(x) - 0 + 0) // 1)
        return i
    """
    count = 0

    def rewrite(s: ast.stmt, before: list[ast.stmt]) -> list[ast.stmt] | None:
        nonlocal count
        if not (isinstance(s, ast.While) and isinstance(s.test, ast.Compare)
                and isinstance(s.test.left, ast.Name)):
            return None
        start = _initial(before, len(before), s.test.left.id)
        new = None if start is None else _as_for(s, start)
        count += new is not None
        return new

    tree.body = rewrite_statements(tree.body, rewrite)
    if count:
        ast.fix_missing_locations(tree)
    return count
