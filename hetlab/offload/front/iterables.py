"""``for`` loops over a sequence rewritten as loops over ``range`` of its length, so the analysis
(which models ``range`` loops only) sees the index:

- ``for v in X:`` → ``for _hl_i_v in range(len(X)): v = X[_hl_i_v]`` (also ``for row in A``);
- ``for i, v in enumerate(X):`` → ``for i in range(len(X)): v = X[i]``
  (``enumerate(X, s)``: ``for i in range(s, len(X) + s): v = X[i - s]``; a body that rebinds
  ``i``: a hidden index, ``i = _hl_i_v + s``);
- ``for a, b in zip(X, Y):`` → ``for _hl_i_a in range(min(len(X), len(Y))): a = X[…]; b = Y[…]``;
- nested, with targets of the same shape: ``for i, (a, b) in enumerate(zip(X, Y)):`` →
  ``for i in range(min(len(X), len(Y))): a = X[i]; b = Y[i]``;
- ``for i in reversed(range(a, b)):`` → ``for i in range(b - 1, a - 1, -1):`` (step 1 or -1
  only; numba cannot type ``reversed``), and ``reversed(X)`` yields ``X[len(X) - 1 - k]``.

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
from dataclasses import dataclass
from typing import Any

__all__ = ["range_for_iterables"]

_BUILTINS = ("enumerate", "zip", "len", "min", "range", "reversed")


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


@dataclass(frozen=True)
class _Seq:
    """An iterable of the loop head: a plain name ``X`` (``items`` empty), ``zip`` of such
    iterables (``items``, length the shortest) or ``enumerate`` of one (``start``, ``items``
    one long)."""

    kind: str  #: "name", "zip", "enumerate" or "reversed" (of a name)
    name: str = ""
    items: tuple[_Seq, ...] = ()
    start: ast.expr | None = None

    def length(self) -> ast.expr:
        if self.kind in ("name", "reversed"):
            return ast.Call(_load("len"), [_load(self.name)], [])
        if self.kind == "enumerate":
            return self.items[0].length()
        return ast.Call(_load("min"), [s.length() for s in self.items], [])


def _sequence(it: ast.expr, plain) -> _Seq | None:
    """The :class:`_Seq` that ``it`` is, or None (anything else, or keywords but
    ``zip(..., strict=False)``)."""
    if plain(it):
        return _Seq("name", it.id)
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)):
        return None
    if it.func.id == "reversed" and not it.keywords and len(it.args) == 1 \
            and plain(it.args[0]):
        return _Seq("reversed", it.args[0].id)
    if it.func.id == "enumerate" and not it.keywords and len(it.args) in (1, 2):
        inner = _sequence(it.args[0], plain)
        start = it.args[1] if len(it.args) == 2 else ast.Constant(0)
        return None if inner is None else _Seq("enumerate", items=(inner,), start=start)
    if it.func.id == "zip" and len(it.args) >= 2 and all(
            k.arg == "strict" and isinstance(k.value, ast.Constant) and k.value.value is False
            for k in it.keywords):
        items = [_sequence(a, plain) for a in it.args]
        return None if None in items else _Seq("zip", items=tuple(items))
    return None


def _bind(tgt: ast.expr, seq: _Seq, index: ast.expr, out: list[ast.stmt]) -> bool:
    """Append to ``out`` the assignments that bind ``tgt`` to element ``index`` of ``seq``;
    False when the target's shape does not match the element's (unpacking a row of an
    array, say)."""
    if seq.kind in ("name", "reversed"):
        if not isinstance(tgt, ast.Name):
            return False
        at = _copy(index) if seq.kind == "name" else ast.BinOp(ast.BinOp(
            seq.length(), ast.Sub(), ast.Constant(1)), ast.Sub(), _copy(index))
        out.append(ast.Assign([ast.Name(tgt.id, ast.Store())],
                              ast.Subscript(_load(seq.name), at, ast.Load())))
        return True
    parts = (None, seq.items[0]) if seq.kind == "enumerate" else seq.items
    if not (isinstance(tgt, ast.Tuple) and len(tgt.elts) == len(parts)):
        return False
    for t, part in zip(tgt.elts, parts, strict=True):
        if part is None:  # enumerate's counter: index + start
            if not isinstance(t, ast.Name):
                return False
            value = (_copy(index) if isinstance(seq.start, ast.Constant) and seq.start.value == 0
                     else ast.BinOp(_copy(index), ast.Add(), _copy(seq.start)))
            out.append(ast.Assign([ast.Name(t.id, ast.Store())], value))
        elif not _bind(t, part, index, out):
            return False
    return True


def _reversed_range(r: ast.expr) -> ast.Call | None:
    """``range(b - 1, a - 1, -1)`` for ``range(a, b)`` (``range(b)``: from 0), ``range(b + 1,
    a + 1)`` for ``range(a, b, -1)``; None for another step (its last element depends on the
    trip count) or anything but ``range``."""
    if not (isinstance(r, ast.Call) and isinstance(r.func, ast.Name) and r.func.id == "range"
            and not r.keywords and 1 <= len(r.args) <= 3
            and not any(isinstance(a, ast.Starred) for a in r.args)):
        return None
    args = [ast.Constant(0), *r.args] if len(r.args) == 1 else list(r.args)
    step = args[2] if len(args) == 3 else ast.Constant(1)
    value = ast.literal_eval(step) if isinstance(step, (ast.Constant, ast.UnaryOp)) else None
    if value not in (1, -1) or isinstance(value, bool):
        return None
    def minus(e: ast.expr) -> ast.expr:
        if isinstance(e, ast.Constant) and type(e.value) is int:
            return ast.Constant(e.value - value)
        return ast.BinOp(_copy(e), ast.Sub() if value == 1 else ast.Add(), ast.Constant(1))

    return ast.Call(_load("range"), [minus(args[1]), minus(args[0]), ast.Constant(-value)], [])


def _first_name(tgt: ast.expr) -> str:
    return next(n.id for n in ast.walk(tgt) if isinstance(n, ast.Name))


def _rewrite(node: ast.For, avoid: set[str], namespace: dict[str, Any]) -> bool:
    if any(namespace.get(b, getattr(builtins, b)) is not getattr(builtins, b)
           for b in _BUILTINS):
        return False
    body_stored, called = _stored(node.body), _method_called(node.body)

    def plain(e: ast.expr) -> bool:
        return (isinstance(e, ast.Name) and e.id not in body_stored and e.id not in called
                and e.id not in avoid)

    it, tgt = node.iter, node.target
    if (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "reversed"
            and len(it.args) == 1 and not it.keywords):
        backwards = _reversed_range(it.args[0])
        if backwards is not None:
            node.iter = ast.copy_location(backwards, node.iter)
            return True
    seq = _sequence(it, plain)
    if seq is None or not any(isinstance(n, ast.Name) for n in ast.walk(tgt)) or any(
            not isinstance(n, (ast.Name, ast.Tuple, ast.Store, ast.Load))
            for n in ast.walk(tgt)):
        return False
    starts = [n for c in ast.walk(it) if isinstance(c, ast.Call) and len(c.args) == 2
              and isinstance(c.func, ast.Name) and c.func.id == "enumerate"
              for n in ast.walk(c.args[1])]
    if any(isinstance(n, ast.Name) and n.id in body_stored for n in starts):
        return False  # a start would be read again after the body changed it
    bound: list[ast.expr] = [seq.length()]
    first: list[ast.stmt] = []
    counter = tgt.elts[0] if seq.kind == "enumerate" and isinstance(tgt, ast.Tuple) \
        and tgt.elts and isinstance(tgt.elts[0], ast.Name) else None
    if counter is not None and counter.id not in body_stored:
        # for i, v in enumerate(X, s): i stays the loop variable over range(s, len(X) + s)
        index = counter.id
        start = seq.start
        at: ast.expr = _load(index)
        if not (isinstance(start, ast.Constant) and start.value == 0):
            bound = [start, ast.BinOp(bound[0], ast.Add(), _copy(start))]
            at = ast.BinOp(_load(index), ast.Sub(), _copy(start))
        if not _bind(tgt.elts[1], seq.items[0], at, first):
            return False
    else:  # a hidden index (the body rebinds i, or no enumerate outside)
        index = f"_hl_i_{_first_name(tgt.elts[-1] if counter is not None else tgt)}"
        if not _bind(tgt, seq, _load(index), first):
            return False
    for s in first:
        ast.copy_location(s, node.body[0])
    node.target = ast.Name(index, ast.Store())
    node.iter = ast.copy_location(ast.Call(_load("range"), bound, []), node.iter)
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
