"""``for`` loops over a sequence rewritten as loops over ``range`` of its length, so the analysis
(which models ``range`` loops only) sees the index:

- ``for v in X:`` → ``for _hl_i_v in range(len(X)): v = X[_hl_i_v]`` (also ``for row in A``);
- ``for i, v in enumerate(X):`` → ``for i in range(len(X)): v = X[i]``
  (``enumerate(X, s)``: ``for i in range(s, len(X) + s): v = X[i - s]``; a body that rebinds
  ``i``: a hidden index, ``i = _hl_i_v + s``);
- ``for a, b in zip(X, Y):`` → ``for _hl_i_a in range(min(len(X), len(Y))): a = X[…]; b = Y[…]``.

Iterating an array (or a list, a tuple, a string) yields ``X[0]``, ``X[1]``, … read when each
iteration starts, which is what the rewrite reads. Only plain names are rewritten, and only when
the loop neither rebinds them nor calls a method on them (``X.append`` would change the length),
and ``enumerate``/``zip``/``len``/``min``/``range`` are the builtins. A dict or set (whose
iteration is not by position) is left alone when the function binds it from a display or
``dict()``/``set()``; a dict passed in would fail the serial njit or its check against Python, so
``search`` runs the function as written.

>>> import ast
>>> t = ast.parse("def f(x, out):\\n    for i, v in enumerate(x):\\n        out[i] = v * v").body[0]
>>> range_for_iterables(t, {})
1
>>> print(ast.unparse(t))
def f(x, out):
    for i in range(len(x)):
        v = x[i]
        out[i] = v * v
"""

from __future__ import annotations

import ast
import builtins
from typing import Any

__all__ = ["range_for_iterables"]

_BUILTINS = ("enumerate", "zip", "len", "min", "range")


def _stored(body: list[ast.stmt]) -> set[str]:
    return {n.id for s in body for n in ast.walk(s)
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}


def _method_called(body: list[ast.stmt]) -> set[str]:
    return {n.func.value.id for s in body for n in ast.walk(s)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)}


def _not_positional(tree: ast.FunctionDef) -> set[str]:
    """Locals bound to a dict or set (iterated by key, not by position)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            v = node.value
            if isinstance(v, (ast.Dict, ast.Set, ast.DictComp, ast.SetComp)) or (
                    isinstance(v, ast.Call) and isinstance(v.func, ast.Name)
                    and v.func.id in ("dict", "set", "frozenset")):
                out |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return out


def _copy(node: ast.expr) -> ast.expr:
    return ast.parse(ast.unparse(node), mode="eval").body


def _load(name: str) -> ast.Name:
    return ast.Name(name, ast.Load())


def _element(var: ast.expr, seq: str, index: str) -> ast.Assign:
    return ast.Assign([var], ast.Subscript(_load(seq), _load(index), ast.Load()))


def _rewrite(node: ast.For, avoid: set[str], namespace: dict[str, Any]) -> bool:
    if any(namespace.get(b, getattr(builtins, b)) is not getattr(builtins, b)
           for b in _BUILTINS):
        return False
    body_stored, called = _stored(node.body), _method_called(node.body)

    def plain(e: ast.expr) -> bool:
        return (isinstance(e, ast.Name) and e.id not in body_stored and e.id not in called
                and e.id not in avoid)

    it, tgt = node.iter, node.target
    first: list[ast.stmt] = []
    if plain(it) and isinstance(tgt, ast.Name):  # for v in X
        index = f"_hl_i_{tgt.id}"
        bound = ast.Call(_load("len"), [_load(it.id)], [])
        first = [_element(tgt, it.id, index)]
    elif (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and not it.keywords
          and it.func.id == "enumerate" and len(it.args) in (1, 2) and plain(it.args[0])
          and isinstance(tgt, ast.Tuple) and len(tgt.elts) == 2
          and isinstance(tgt.elts[0], ast.Name) and isinstance(tgt.elts[1], ast.Name)):
        seq, (ivar, vvar) = it.args[0].id, tgt.elts
        start = it.args[1] if len(it.args) == 2 else ast.Constant(0)
        if any(isinstance(n, ast.Name) and n.id in body_stored for n in ast.walk(start)):
            return False  # the start would be read again after the body changed it
        bound = ast.Call(_load("len"), [_load(seq)], [])
        if ivar.id in body_stored:  # the body rebinds i: a hidden index, i bound from it
            index = f"_hl_i_{vvar.id}"
            first = [ast.Assign([ast.Name(ivar.id, ast.Store())],
                                ast.BinOp(_load(index), ast.Add(), start))]
            first.append(_element(vvar, seq, index))
        elif len(it.args) == 1:  # for i in range(len(X)): v = X[i]
            index = ivar.id
            first = [_element(vvar, seq, index)]
        else:  # for i in range(s, len(X) + s): v = X[i - s] (i stays the loop variable)
            index = ivar.id
            bound = [start, ast.BinOp(bound, ast.Add(), _copy(start))]
            first = [ast.Assign([vvar], ast.Subscript(
                _load(seq), ast.BinOp(_load(index), ast.Sub(), _copy(start)), ast.Load()))]
    elif (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
          and all(k.arg == "strict" and isinstance(k.value, ast.Constant)
                  and k.value.value is False for k in it.keywords)
          and it.func.id == "zip" and len(it.args) >= 2 and all(map(plain, it.args))
          and isinstance(tgt, ast.Tuple) and len(tgt.elts) == len(it.args)
          and all(isinstance(t, ast.Name) for t in tgt.elts)):
        index = f"_hl_i_{tgt.elts[0].id}"
        bound = ast.Call(_load("min"), [ast.Call(_load("len"), [_load(a.id)], [])
                                        for a in it.args], [])
        first = [_element(t, a.id, index) for t, a in zip(tgt.elts, it.args, strict=True)]
    else:
        return False
    for s in first:
        ast.copy_location(s, node.body[0])
    node.target = ast.Name(index, ast.Store())
    args = bound if isinstance(bound, list) else [bound]
    node.iter = ast.copy_location(ast.Call(_load("range"), args, []), node.iter)
    node.body[:0] = first
    return True


def range_for_iterables(tree: ast.FunctionDef, namespace: dict[str, Any]) -> int:
    """Rewrite, in place, the ``for`` loops of ``tree`` over a sequence, ``enumerate`` or
    ``zip`` of names as loops over ``range`` (see the module docstring); returns how many."""
    avoid = _not_positional(tree)
    count = sum(_rewrite(node, avoid, namespace) for node in ast.walk(tree)
                if isinstance(node, ast.For))
    if count:
        ast.fix_missing_locations(tree)
    return count
