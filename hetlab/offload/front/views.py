"""Row views bound in a loop body (``row = A[i]``, ``for row in A``) read through their array.

A scientist writes ``row = A[i]`` (or iterates ``for row in A``, a range loop binding
``row = A[_hl_i_row]`` after :mod:`.iterables`) and then ``row[j] = row[j] * w[j]``. ``row``
is a view of ``A``, bound anew in each iteration, so the dependence test, which compares
subscripts of one array name, sees writes to "``row``" that every iteration shares and keeps
the loop serial. :func:`substitute_views` rewrites, in place, each use of such a view through
its array — ``row[j]`` becomes ``A[i, j]``, ``row[1:]`` ``A[i, 1:]``, a bare ``row``
``A[i]`` — and drops the binding, when all of this holds:

- the binding ``v = X[e₁, …, eₖ]`` is a statement of a ``for`` loop's own body, ``X`` a plain
  name, each ``eₘ`` built from names, integer constants and ``+ - * // %`` (trailing ``:``
  dropped: ``A[i, :]`` is ``A[i]``; any other slice or a ``...`` refuses);
- ``v`` is stored nowhere else in the function (not a parameter, no ``v += …``, no other
  binding) and read only in the statements after the binding in that body, at least once as
  ``v[…]`` (so ``v`` is an array: a number cannot be subscripted; a view shares ``X``'s memory,
  so every use sees what ``X[e…]`` holds at that moment);
- neither ``X`` nor a name of the ``eₘ`` is stored in those statements;
- an attribute of ``v`` is a method called (``row.sum()``: ``X[e…].sum()``) or
  ``v.shape[c]`` (``X.shape[c + k]``).
"""

from __future__ import annotations

import ast
import copy
from collections import Counter

__all__ = ["substitute_views"]

_INDEX_NODES = (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Load, ast.Add, ast.Sub,
                ast.Mult, ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd)


def _stores(nodes: list[ast.stmt] | ast.AST) -> Counter[str]:
    """How often each name is bound (assigned, a loop or ``with`` target, augmented)."""
    out: Counter[str] = Counter()
    for root in nodes if isinstance(nodes, list) else [nodes]:
        for n in ast.walk(root):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                out[n.id] += 1
    return out


def _loads(nodes: list[ast.stmt] | ast.AST, name: str) -> int:
    return sum(1 for root in (nodes if isinstance(nodes, list) else [nodes])
               for n in ast.walk(root)
               if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load))


def _view_index(value: ast.AST) -> tuple[str, list[ast.expr]] | None:
    """``(X, [e₁, …])`` when ``value`` is ``X[e₁, …]`` with plain index expressions."""
    if not isinstance(value, ast.Subscript) or not isinstance(value.value, ast.Name):
        return None
    sl = value.slice
    elts = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
    while elts and isinstance(elts[-1], ast.Slice) and elts[-1].lower is None \
            and elts[-1].upper is None and elts[-1].step is None:
        elts.pop()  # A[i, :] is A[i]
    if not elts or not all(isinstance(n, _INDEX_NODES) for e in elts for n in ast.walk(e)):
        return None
    if any(isinstance(n, ast.Constant) and not isinstance(n.value, int)
           for e in elts for n in ast.walk(e)):
        return None
    return value.value.id, elts


class _Through(ast.NodeTransformer):
    """Uses of ``name`` rewritten through ``X[e…]``."""

    def __init__(self, name: str, array: str, index: list[ast.expr]) -> None:
        self.name, self.array, self.index = name, array, index

    def _base(self) -> list[ast.expr]:
        return [copy.deepcopy(e) for e in self.index]

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        v = node.value
        if isinstance(v, ast.Attribute) and v.attr == "shape" and isinstance(v.value, ast.Name) \
                and v.value.id == self.name:  # row.shape[c] is X.shape[c + k]
            axis = ast.Constant(node.slice.value + len(self.index))  # type: ignore[attr-defined]
            return ast.copy_location(ast.Subscript(ast.Attribute(
                ast.Name(self.array, ast.Load()), "shape", ast.Load()), axis, ast.Load()), node)
        if isinstance(node.value, ast.Name) and node.value.id == self.name:
            sl = self.visit(node.slice)
            tail = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
            elts = self._base() + tail
            return ast.copy_location(ast.Subscript(
                ast.Name(self.array, ast.Load()),
                ast.Tuple(elts, ast.Load()) if len(elts) > 1 else elts[0], node.ctx), node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.name and isinstance(node.ctx, ast.Load):
            elts = self._base()
            return ast.copy_location(ast.Subscript(
                ast.Name(self.array, ast.Load()),
                ast.Tuple(elts, ast.Load()) if len(elts) > 1 else elts[0], ast.Load()), node)
        return node


def _attributes_ok(rest: list[ast.stmt], name: str) -> bool:
    """Every attribute of ``name`` in ``rest`` is a method called (``row.sum()``, a read of
    ``X[e…]`` the loop walker accepts) or ``row.shape[c]`` with ``c ≥ 0`` a constant."""
    called = {id(n.func) for s in rest for n in ast.walk(s) if isinstance(n, ast.Call)}
    shapes = {id(n.value) for s in rest for n in ast.walk(s) if isinstance(n, ast.Subscript)
              and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, int)
              and not isinstance(n.slice.value, bool) and n.slice.value >= 0}
    return all(id(n) in called or (n.attr == "shape" and id(n) in shapes)
               for s in rest for n in ast.walk(s)
               if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
               and n.value.id == name)


def _subscripted(rest: list[ast.stmt], name: str) -> bool:
    return any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)
               and n.value.id == name for s in rest for n in ast.walk(s))


def substitute_views(tree: ast.FunctionDef) -> int:
    """Rewrite, in place, the row views of ``tree``'s loop bodies (module docstring); the
    number of views substituted.

    >>> t = ast.parse("def f(A, w):\\n    for i in range(A.shape[0]):\\n        row = A[i]\\n"
    ...               "        for j in range(A.shape[1]):\\n"
    ...               "            row[j] = row[j] * w[j]\\n").body[0]
    >>> substitute_views(t)
    1
    >>> print(ast.unparse(t))
    def f(A, w):
        for i in range(A.shape[0]):
            for j in range(A.shape[1]):
                A[i, j] = A[i, j] * w[j]
    """
    params = {a.arg for a in (*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs)}
    done = 0
    for loop in [n for n in ast.walk(tree) if isinstance(n, ast.For)]:
        k = 0
        while k < len(loop.body):
            st = loop.body[k]
            k += 1
            if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                    and isinstance(st.targets[0], ast.Name)):
                continue
            name = st.targets[0].id
            view = _view_index(st.value)
            if view is None or name in params or name == view[0]:
                continue
            array, index = view
            rest = loop.body[k:]
            stored = _stores(rest)
            index_names = {n.id for e in index for n in ast.walk(e) if isinstance(n, ast.Name)}
            if _stores(tree)[name] != 1 or _loads(tree, name) != _loads(rest, name) \
                    or not _subscripted(rest, name) or not _attributes_ok(rest, name) \
                    or stored[array] \
                    or any(stored[x] for x in index_names):
                continue
            through = _Through(name, array, index)
            loop.body[k:] = [through.visit(s) for s in rest]
            del loop.body[k - 1]
            k -= 1
            done += 1
    if done:
        ast.fix_missing_locations(tree)
    return done
