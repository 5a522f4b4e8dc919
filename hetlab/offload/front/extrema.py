"""Conditional running extrema (``if e > m: m = e``) read as ``m = max(m, e)``.

A running maximum written with an ``if`` is the commonest way scientists write it (the row
maximum of a softmax, the largest residual). Python's ``max(m, e)`` returns ``m`` unless
``e > m`` and ``min(m, e)`` returns ``m`` unless ``e < m`` (NaN compares false, so a NaN ``e``
is skipped both ways), so the two spellings compute the same value, and numba's ``max``/``min``
of two scalars agrees. :func:`fold_extrema` rewrites the ``if`` in place when

* the ``if`` has no ``else`` and its body is the single assignment ``m = e`` to a name (or
  the statement is ``m = e if test else m``);
* the test is ``e > m`` / ``m < e`` (max) or ``e < m`` / ``m > e`` (min), strict, with the
  same ``e`` as assigned (``>=`` keeps the later of equal values: left alone);
* ``e`` has no side effects and does not read ``m``: names, constants, subscripts, arithmetic
  and ``abs``/``math``/NumPy ufunc calls;
* ``max``/``min`` are the builtins (not rebound in the function or its namespace).

The loop analysis then sees a ``max``/``min`` reduction and numba's ``prange`` reduces it.
Two statements in the body (``m = d; lab = c``: an argmin) are left to
:mod:`hetlab.offload.analysis.argmin`.

>>> import ast
>>> t = ast.parse("def f(x):\\n    m = x[0]\\n    for i in range(1, len(x)):\\n"
...               "        if x[i] > m:\\n            m = x[i]\\n    return m").body[0]
>>> fold_extrema(t, {})
1
>>> print(ast.unparse(t.body[1]))
for i in range(1, len(x)):
    m = max(m, x[i])
"""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from .walk import statement_lists

__all__ = ["fold_extrema"]

_PURE_MODULES = ("math",)


def _pure(e: ast.AST, namespace: dict[str, Any]) -> bool:
    for n in ast.walk(e):
        if isinstance(n, ast.Call):
            f = n.func
            if n.keywords:
                return False
            if isinstance(f, ast.Name) and f.id == "abs" and f.id not in namespace:
                continue
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                mod = getattr(namespace.get(f.value.id), "__name__", "")
                if mod in _PURE_MODULES or (mod == "numpy" and isinstance(
                        getattr(np, f.attr, None), np.ufunc)):
                    continue
            return False
        if isinstance(n, (ast.NamedExpr, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom,
                          ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            return False
    return True


def _fold(node: ast.If, namespace: dict[str, Any]) -> ast.Assign | None:
    if node.orelse or len(node.body) != 1:
        return None
    s = node.body[0]
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)):
        return None
    m, e = s.targets[0].id, s.value
    t = node.test
    if not (isinstance(t, ast.Compare) and len(t.ops) == 1
            and isinstance(t.ops[0], (ast.Gt, ast.Lt))):
        return None
    left, right, gt = t.left, t.comparators[0], isinstance(t.ops[0], ast.Gt)
    if isinstance(right, ast.Name) and right.id == m:
        other, fn = left, ("max" if gt else "min")   # e > m / e < m
    elif isinstance(left, ast.Name) and left.id == m:
        other, fn = right, ("min" if gt else "max")  # m > e / m < e
    else:
        return None
    if ast.dump(other) != ast.dump(e) or not _pure(e, namespace) or any(
            isinstance(n, ast.Name) and n.id == m for n in ast.walk(e)):
        return None
    call = ast.Call(ast.Name(fn, ast.Load()), [ast.Name(m, ast.Load()), e], [])
    out = ast.Assign([ast.Name(m, ast.Store())], call)
    return ast.fix_missing_locations(ast.copy_location(out, node))


def _as_if(st: ast.stmt) -> ast.If | None:
    """``st`` when it is an ``if``; ``m = e if c else m`` as ``if c: m = e`` (the same value
    in every case, NaN included); else None (``m = m if c else e`` takes ``e`` when ``c`` is
    false, a NaN ``e`` too, where ``max`` keeps ``m``: not folded)."""
    if isinstance(st, ast.If):
        return st
    if not (isinstance(st, ast.Assign) and len(st.targets) == 1
            and isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.IfExp)):
        return None
    m, v = st.targets[0].id, st.value
    if not (isinstance(v.orelse, ast.Name) and v.orelse.id == m):
        return None
    body = ast.Assign([ast.Name(m, ast.Store())], v.body)
    return ast.copy_location(ast.If(v.test, [ast.copy_location(body, st)], []), st)


def fold_extrema(tree: ast.FunctionDef, namespace: dict[str, Any]) -> int:
    """Rewrite the conditional running extrema of ``tree`` in place (see the module's text);
    return how many were rewritten."""
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Store)} | {a.arg for a in ast.walk(tree.args)
                                                  if isinstance(a, ast.arg)}
    if {"max", "min"} & (bound | set(namespace)):
        return 0
    count = 0
    for block in statement_lists(tree):
        for k, st in enumerate(block):
            cond = _as_if(st)
            if cond is not None:
                new = _fold(cond, namespace)
                if new is not None:
                    block[k] = new
                    count += 1
    return count
