"""Parameters a function only reads as a sequence of numbers: a plan may pass them as arrays.

numba types a Python list of numbers as a *reflected* list: every call unboxes each element
into a native list and, on return, writes them all back — about 0.7 µs per element, so a
200 000-float list cost 143 ms a call where the loop itself took under 1 ms (the seventh
held-out probe's ``weights_from_list``; its answer key calls ``np.asarray`` first). A
parameter every use of which is a read — ``vals[i]`` (not stored, deleted or updated),
``len(vals)``, the iterable of a ``for`` or of ``enumerate``/``zip``/``reversed`` there — has
the same values as an array of its elements, so the numba variant receives
``np.asarray(vals)`` instead (:func:`hetlab.offload.runtime.listargs.lists_as_arrays`).
A parameter rebound, called, passed to any other function, returned, compared, sliced or
used any other way keeps the list.
"""

from __future__ import annotations

import ast

__all__ = ["read_only_sequences"]

_ITER_CALLS = frozenset({"enumerate", "zip", "reversed"})


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}


def _reading_use(name: ast.Name, parents: dict[int, ast.AST]) -> bool:
    """Whether this occurrence of the parameter only reads it as a sequence."""
    p = parents.get(id(name))
    if isinstance(p, ast.Subscript) and p.value is name:
        return isinstance(p.ctx, ast.Load) and not isinstance(p.slice, ast.Slice) \
            and not isinstance(parents.get(id(p)), ast.AugAssign)
    if isinstance(p, ast.Call) and name in p.args and isinstance(p.func, ast.Name):
        if p.func.id == "len" and len(p.args) == 1:
            return True
        if p.func.id in _ITER_CALLS:
            return isinstance(g := parents.get(id(p)), ast.For) and g.iter is p
    return isinstance(p, ast.For) and p.iter is name


def read_only_sequences(func: ast.FunctionDef) -> tuple[int, ...]:
    """Positions of ``func``'s positional parameters used only as read sequences (module
    docstring)."""
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    parents = _parents(func)
    uses: dict[str, list[ast.Name]] = {p: [] for p in params}
    for n in ast.walk(func):
        if isinstance(n, ast.Name) and n.id in uses:
            uses[n.id].append(n)
    return tuple(k for k, p in enumerate(params)
                 if uses[p] and all(_reading_use(n, parents) for n in uses[p]))
