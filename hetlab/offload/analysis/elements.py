"""Locals bound to an element read and never written through (``w = A[i, j]``, ``t = x[i]``).

Without the arrays' ranks, ``A[i, j]`` may be a number or a view of a row, so
:mod:`.aliases` follows such a local as an alias of ``A``. A view matters to the dependence
test only when something is written through it (``t[k] = …``, ``t += …`` on a view, a call
that writes its argument) or when it carries storage from one iteration to another. A local
that is never written through and is bound, in every iteration of a loop, before it is read
(not an exposed read) reads only what its binding ``A[…]`` reads in that iteration — an access
the dependence test already sees. An update in place (``acc += …``) is allowed when each
element binding ``acc = C[i, j]`` is followed in its block by the store ``C[i, j] = …`` (the
same subscript): whatever the update writes through a view lies in what that store writes.
:func:`read_only_elements` finds the locals for which this holds at every binding; the
loop report then drops the alias between them and their arrays (``report._alias_reasons``).

>>> import ast
>>> src = '''
... def lu_row(A, i, n):
...     for j in range(i, n):
...         w = A[i, j]
...         for k in range(i):
...             w = w - A[i, k] * A[k, j]
...         A[i, j] = w
...     r = A[i]
...     r[0] = 1.0
... '''
>>> sorted(read_only_elements(ast.parse(src).body[0], {}))
['w']
"""

from __future__ import annotations

import ast
from typing import Any

from ..front.calls import hidden_write, np_call_chain
from ..front.walk import statement_lists

__all__ = ["read_only_elements"]

#: builtins that neither keep nor write their arguments
_PURE_BUILTINS = frozenset({"abs", "min", "max", "float", "int", "round", "len", "bool"})
#: attributes of a value that read nothing through it
_VALUE_ATTRS = frozenset({"shape", "size", "ndim", "dtype", "itemsize"})


def _element_read(v: ast.AST) -> bool:
    """``A[i, j]`` or ``A[i]``: a subscript of a name with no slice in it (one element, or a
    view of whole rows)."""
    return (isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name)
            and not any(isinstance(n, ast.Slice) for n in ast.walk(v.slice)))


def _fresh_value(v: ast.AST, namespace: dict[str, Any]) -> bool:
    """Arithmetic, a constant or a ``math`` call: a new value, never a view."""
    if isinstance(v, (ast.BinOp, ast.UnaryOp, ast.Constant)):
        return True
    if isinstance(v, ast.Call):
        chain = np_call_chain(v.func, namespace)
        return chain is not None and chain[0] == "math"
    return False


def _pure_call(call: ast.Call, namespace: dict[str, Any]) -> bool:
    chain = np_call_chain(call.func, namespace)
    if chain is not None:
        return chain[0] in ("math", "cmath") or (
            chain[0] == "numpy" and len(chain) == 2 and hidden_write(chain) is None)
    return isinstance(call.func, ast.Name) and call.func.id in _PURE_BUILTINS \
        and call.func.id not in namespace


def read_only_elements(tree: ast.FunctionDef, namespace: dict[str, Any]) -> frozenset[str]:
    """Locals of ``tree`` whose every binding is an element read or a fresh value and which
    are never written through, stored into, updated in place (unless stored back, see the
    module's text), passed to a call that is not a pure ``math``/NumPy/builtin function, nor
    read through an attribute other than ``.shape``/``.size``/``.ndim``/``.dtype``."""
    a = tree.args
    params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    names: set[str] = set()
    bad: set[str] = set(params)
    augmented: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name):
                    names.add(t.id)
                    if not (_element_read(n.value) or _fresh_value(n.value, namespace)):
                        bad.add(t.id)
        elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            augmented.add(n.target.id)  # ``t += e`` writes a view in place
        elif isinstance(n, ast.Call) and not _pure_call(n, namespace):
            bad |= {m.id for arg in (*n.args, *(k.value for k in n.keywords), n.func)
                    for m in ast.walk(arg) if isinstance(m, ast.Name)}
        elif isinstance(n, ast.Attribute) and n.attr not in _VALUE_ATTRS:
            bad |= {m.id for m in ast.walk(n.value) if isinstance(m, ast.Name)}
        elif isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store):
            bad |= {m.id for m in ast.walk(n.value) if isinstance(m, ast.Name)}
        elif isinstance(n, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr,
                            ast.AnnAssign, ast.comprehension)):
            targets = [getattr(n, "target", None)] + [
                i.optional_vars for i in getattr(n, "items", [])]
            bad |= {m.id for t in targets if t is not None for m in ast.walk(t)
                    if isinstance(m, ast.Name)}
        if isinstance(n, ast.Assign) and not all(isinstance(t, ast.Name) for t in n.targets):
            bad |= {m.id for t in n.targets for m in ast.walk(t)
                    if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Store)}
    # ``acc = C[i, j]; acc += …; C[i, j] = acc``: what ``acc += …`` may write through a view
    # is inside ``C[i, j]``, which a later statement of the same block stores anyway
    bad |= {y for y in augmented if not _stored_back(tree, y)}
    return frozenset(names - bad)


def _stored_back(tree: ast.FunctionDef, name: str) -> bool:
    """Whether every element binding ``name = X[s]`` is followed, in the same block, by a
    store ``X[s] = …`` (the same subscript, none of its names bound in between)."""
    for block in statement_lists(tree):
        for k, st in enumerate(block):
            if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                    and isinstance(st.targets[0], ast.Name) and st.targets[0].id == name
                    and _element_read(st.value)):
                continue
            if not _store_follows(st.value, block[k + 1:]):  # type: ignore[arg-type]
                return False
    return True


def _store_follows(read: ast.Subscript, rest: list[ast.stmt]) -> bool:
    want = ast.dump(read.value) + ast.dump(read.slice)
    used = {n.id for n in ast.walk(read) if isinstance(n, ast.Name)}
    for st in rest:
        if isinstance(st, ast.Assign) and any(
                isinstance(t, ast.Subscript) and ast.dump(t.value) + ast.dump(t.slice) == want
                for t in st.targets):
            return True
        if any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in used
               for n in ast.walk(st)):
            return False
    return False
