"""A scratch vector allocated inside a nest (``s = np.zeros(n)`` per iteration) read as a shared
temporary zeroed per iteration, so the nest may still be a block.

A doitgen written with a fresh ``s = np.zeros(np_)`` in the ``(r, q)`` loops is, element for
element, the nest with ``for p in range(np_): s[p] = 0.0`` in its place when ``s`` is read and
written only as ``s[p]`` (one loop variable ``p``, after the allocation), assigned nowhere else
in the nest, and not read after it: each iteration sees a vector of zeros either way.
:func:`zeroed_locals` makes that rewrite on a copy of the nest and gives the line that binds
``s`` once before the block (the block's privatized temporary copies its last values back into
``s``, which nothing reads; a length that may be negative is bound as ``max(n, 0)``: the nest
may not run at all, where ``np.zeros`` of a negative length would raise). The caller
(:func:`.blocks.match_nest`) checks liveness.

>>> import ast
>>> src = '''
... for r in range(nr):
...     s = np.zeros(m)
...     for p in range(m):
...         for t in range(m):
...             s[p] += A[r, t] * W[t, p]
...     for p in range(m):
...         A[r, p] = s[p]
... '''
>>> fresh, prelude, names = zeroed_locals(ast.parse(src).body[0])
>>> print(prelude, names)
['s = np.zeros(max(m, 0))'] ['s']
>>> print(ast.unparse(fresh.body[0]))
for p in range(m):
    s[p] = 0.0
"""

from __future__ import annotations

import ast
import copy

from .gram import _len

__all__ = ["zeroed_locals"]


def _zeros_of(node: ast.stmt) -> tuple[str, ast.expr] | None:
    """``(s, n)`` for ``s = np.zeros(n)`` (or ``numpy.zeros``; ``n`` or ``(n,)``, no dtype)."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Call)):
        return None
    call = node.value
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr == "zeros" and isinstance(f.value, ast.Name)
            and f.value.id in ("np", "numpy") and len(call.args) == 1 and not call.keywords):
        return None
    n = call.args[0]
    if isinstance(n, ast.Tuple):
        if len(n.elts) != 1:
            return None
        n = n.elts[0]
    return node.targets[0].id, n


def _uses(root: ast.AST, name: str) -> list[ast.Name]:
    return [n for n in ast.walk(root) if isinstance(n, ast.Name) and n.id == name]


def zeroed_locals(root: ast.For) -> tuple[ast.For, list[str], list[str]] | None:
    """A copy of the nest with each qualifying ``s = np.zeros(n)`` replaced by a zeroing loop,
    the lines binding those names before the nest, and the names; None when there is none or
    one is used any other way (see the module docstring)."""
    fresh = copy.deepcopy(root)
    stored = {n.id for n in ast.walk(fresh) if isinstance(n, ast.Name)
              and isinstance(n.ctx, ast.Store)}
    prelude: list[str] = []
    names: list[str] = []
    for holder in [n for n in ast.walk(fresh) if isinstance(n, ast.For)]:
        for pos, stmt in enumerate(list(holder.body)):
            got = _zeros_of(stmt)
            if got is None:
                continue
            s, n = got
            if {x.id for x in ast.walk(n) if isinstance(x, ast.Name)} & stored:
                return None  # the length changes inside the nest
            subs = [x for x in ast.walk(fresh) if isinstance(x, ast.Subscript)
                    and isinstance(x.value, ast.Name) and x.value.id == s]
            if len(_uses(fresh, s)) != len(subs) + 1 or not subs:
                return None  # bound again, passed whole, or read as a name
            later = [u for st in holder.body[pos + 1:] for u in ast.walk(st)]
            if any(all(x is not u for u in later) for x in subs):
                return None  # used outside the statements after the allocation
            idx = {ast.unparse(x.slice) for x in subs}
            if len(idx) != 1 or not isinstance(subs[0].slice, ast.Name):
                return None
            v = subs[0].slice.id  # type: ignore[attr-defined]
            zero = ast.parse(f"for {v} in range({ast.unparse(n)}):\n    {s}[{v}] = 0.0").body[0]
            holder.body[pos] = zero
            prelude.append(f"{s} = np.zeros({_len(ast.unparse(n))})")  # never negative
            names.append(s)
    if not names:
        return None
    return ast.fix_missing_locations(fresh), prelude, names
