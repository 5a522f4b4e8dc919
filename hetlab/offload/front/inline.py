"""Helpers that write their arguments (or build NumPy temporaries), inlined where a
statement calls them.

A loop body that calls ``_scale_to_unit_sum(A[i])`` — a module-level helper that divides the
row it is given by the row's sum, in place — hides its writes from the dependence test: the
call is an unknown function, so the row loop stays serial although each iteration touches
its own row. A helper that is pure (:mod:`.helpers`) reads only its arguments and is modelled
as an elementwise call; one that is pure **but for writing its arguments** (element stores,
``+=`` on an argument) is what this pass inlines, and so is a pure helper without loops that
calls NumPy (``return np.sqrt(np.sum((a - b) ** 2))``: inlined, the variant's fixed passes see
its array temporaries, :mod:`~hetlab.offload.analysis.transforms.slice_sums`; a pure scalar
helper stays a call, which numba compiles as well). :func:`inline_helpers` replaces, in place,

- ``helper(a₁, …)`` (a call statement),
- ``t = helper(a₁, …)`` (one target: a name, a tuple of names or a subscript)

by the helper's body, its parameters bound to the arguments and its locals renamed apart
(``_hl_<helper>_<name>``), its final ``return e`` becoming ``t = e``. The result is the same
Python program: the arguments are evaluated once, in order, before the body runs (a parameter
the helper never rebinds takes a name or number argument directly; any other argument is
bound by an assignment first, so ``row = A[i]`` then ``row[j] = …`` is read through ``A`` by
:mod:`.views`; a pure helper, which writes nothing, reads an element or row argument
``X[e…]`` in place unless it takes its attributes), and every name the helper reads from its
module is the very object the caller sees under that name. The dependence test then judges
the loop on what it really does.

A call is left as it is unless all of this holds: the callee is a plain ``def`` bound under
its name in the caller's namespace (not a local of the caller, no closure cells, no
decorator); pure but for writing its arguments, or pure with no loop and a NumPy call or
array method (:mod:`.helpers`: no ``try``, ``global``,
``yield``, nested functions, calls only to math/NumPy functions and such helpers, three levels
deep at most); its only ``return`` is its last statement; positional or keyword arguments
only, no ``*``/``**``, missing ones filled from constant defaults; each name it reads from its
module is the same object in the caller's namespace and not a local of the caller. Inlined
statements carry the call's line number (reasons and loop ids cite the caller's line).
Inlining repeats for helpers the inlined bodies call (three rounds).

>>> import ast, numpy as np
>>> def _halve(row):
...     for j in range(row.shape[0]):
...         row[j] = row[j] * 0.5
>>> t = ast.parse("def f(A):\\n    for i in range(A.shape[0]):\\n        _halve(A[i])").body[0]
>>> inline_helpers(t, {"_halve": _halve, "np": np})
['_halve (line 3)']
>>> print(ast.unparse(t))
def f(A):
    for i in range(A.shape[0]):
        _hl_halve_row = A[i]
        for _hl_halve_j in range(_hl_halve_row.shape[0]):
            _hl_halve_row[_hl_halve_j] = _hl_halve_row[_hl_halve_j] * 0.5
"""

from __future__ import annotations

import ast
import builtins
import copy
import types
from typing import Any

from .calls import np_call_chain
from .helpers import _is_pure, _tree

__all__ = ["inline_helpers"]

_ROUNDS = 3


def _stored(tree: ast.AST) -> set[str]:
    """Names bound anywhere in ``tree`` (assignments, loop targets, ``+=``)."""
    return {n.id for n in ast.walk(tree)
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}


def _callee(stmt: ast.stmt) -> ast.Call | None:
    """The call of ``helper(…)`` or ``t = helper(…)`` (one target), else None."""
    if isinstance(stmt, ast.Expr):
        value = stmt.value
    elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        value = stmt.value
    else:
        return None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return value
    return None


def _uses_numpy(tree: ast.FunctionDef, ns: dict[str, Any]) -> bool:
    """Whether ``tree`` calls a NumPy function or an array method, or multiplies matrices
    (array temporaries the variant's fixed passes may remove once the body is inlined)."""
    for n in ast.walk(tree):
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.MatMult):
            return True
        if isinstance(n, ast.Call):
            chain = np_call_chain(n.func, ns)
            if (chain is not None and chain[0] == "numpy") or (
                    isinstance(n.func, ast.Attribute) and chain is None):
                return True
    return False


def _helper_tree(fn: Any) -> tuple[ast.FunctionDef, bool] | None:
    """``fn``'s parsed def and whether it writes nothing, when it is inlined: a plain
    function pure but for writing its arguments, or pure, without loops, calling NumPy
    (a pure scalar helper is modelled as a call and stays one); its only ``return`` its last
    statement, constant defaults. Else None."""
    if not isinstance(fn, types.FunctionType) or fn.__closure__:
        return None
    if not _is_pure(fn, (), writes_ok=True):
        return None
    tree = _tree(fn)
    if tree is None or tree.name != fn.__name__:
        return None
    pure = _is_pure(fn, ())
    if pure and (any(isinstance(n, (ast.For, ast.While)) for n in ast.walk(tree))
                 or not _uses_numpy(tree, fn.__globals__)):
        return None
    returns = [n for n in ast.walk(tree) if isinstance(n, ast.Return)]
    if returns and (len(returns) > 1 or returns[0] is not tree.body[-1]):
        return None
    if any(not isinstance(d, ast.Constant) for d in tree.args.defaults):
        return None
    return tree, pure


def _plain_subscript(a: ast.expr) -> bool:
    """``X[e…]`` with ``X`` a name and each ``e`` names, constants, ``:`` and arithmetic."""
    if not isinstance(a, ast.Subscript) or not isinstance(a.value, ast.Name):
        return False
    return all(isinstance(n, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.Slice,
                              ast.Tuple, ast.operator, ast.unaryop, ast.expr_context))
               for n in ast.walk(a.slice))


def _bound_args(tree: ast.FunctionDef, call: ast.Call) -> list[tuple[str, ast.expr]] | None:
    """(parameter, argument expression) of each parameter of ``tree`` at ``call``, in the
    order Python evaluates them (positional, then keywords as written, then the defaults),
    or None when the call does not bind plainly (``*``, ``**``, unknown or missing names)."""
    params = [p.arg for p in (*tree.args.posonlyargs, *tree.args.args)]
    positional_only = {p.arg for p in tree.args.posonlyargs}
    if len(call.args) > len(params) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    got: dict[str, ast.expr] = dict(zip(params, call.args, strict=False))
    for k in call.keywords:
        if k.arg is None or k.arg not in params or k.arg in got or k.arg in positional_only:
            return None
        got[k.arg] = k.value  # dicts keep insertion order: the order of evaluation
    defaults = dict(zip(params[len(params) - len(tree.args.defaults):], tree.args.defaults,
                        strict=True))
    for p in params:
        if p not in got:
            if p not in defaults:
                return None
            got[p] = copy.deepcopy(defaults[p])
    return list(got.items())


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict[str, ast.expr]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.expr:
        new = self.names.get(node.id)
        if new is None:
            return node
        if isinstance(new, ast.Name):
            return ast.Name(new.id, node.ctx)
        return copy.deepcopy(new)  # a constant argument of a parameter never rebound


def _inlined(fn: types.FunctionType, tree: ast.FunctionDef, pure: bool, stmt: ast.stmt,
             call: ast.Call,
             namespace: dict[str, Any], caller_locals: set[str],
             taken: set[str]) -> list[ast.stmt] | None:
    """The statements replacing ``stmt`` (which calls ``fn`` as ``call``), or None."""
    args = _bound_args(tree, call)
    if args is None:
        return None
    params = [p.arg for p in (*tree.args.posonlyargs, *tree.args.args)]
    stored = _stored(tree)
    local = set(params) | stored
    for n in ast.walk(tree):  # names from the helper's module: the caller sees the same ones
        if isinstance(n, ast.Name) and n.id not in local:
            mine = fn.__globals__.get(n.id, getattr(builtins, n.id, None))
            theirs = namespace.get(n.id, getattr(builtins, n.id, None))
            if n.id in caller_locals or theirs is not mine:
                return None
    stem = fn.__name__.strip("_") or "helper"
    names: dict[str, ast.expr] = {}
    for name in sorted(local):
        fresh, k = f"_hl_{stem}_{name}", 1
        while fresh in taken or fresh in namespace:
            k += 1
            fresh = f"_hl_{stem}{k}_{name}"
        taken.add(fresh)
        names[name] = ast.Name(fresh, ast.Load())
    # ``v.shape`` of an element or view argument stays on a bound name (.views reads it)
    attributed = {n.value.id for n in ast.walk(tree)
                  if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    attributed |= {n.args[0].id for n in ast.walk(tree) if isinstance(n, ast.Call)
                   and isinstance(n.func, ast.Name) and n.func.id == "len" and n.args
                   and isinstance(n.args[0], ast.Name)}
    out: list[ast.stmt] = []
    for p, a in args:
        if p not in stored and (isinstance(a, (ast.Constant, ast.Name)) or (
                pure and _plain_subscript(a) and p not in attributed)):
            # never rebound: the argument itself (renaming is one pass); an element or view
            # read again only where the helper writes nothing (it reads what it read then)
            names[p] = a
        else:
            out.append(ast.Assign([ast.Name(names[p].id, ast.Store())], copy.deepcopy(a)))
    body = copy.deepcopy(tree.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    result = None
    if body and isinstance(body[-1], ast.Return):
        result = body.pop().value
    rename = _Rename(names)
    out += [rename.visit(s) for s in body]
    if isinstance(stmt, ast.Assign):
        if result is None:
            return None  # ``t = helper(…)`` of a helper returning None: left as it is
        out.append(ast.Assign([copy.deepcopy(stmt.targets[0])], rename.visit(result)))
    elif result is not None and not isinstance(result, (ast.Name, ast.Constant)):
        out.append(ast.Expr(rename.visit(result)))  # evaluated, its value dropped
    for s in out:
        for n in ast.walk(s):
            if "lineno" in n._attributes:
                ast.copy_location(n, stmt)
    return out or [ast.Pass()]


def _pass(body: list[ast.stmt], namespace: dict[str, Any], caller_locals: set[str],
          taken: set[str], notes: list[str]) -> None:
    i = 0
    while i < len(body):
        stmt = body[i]
        for field in ("body", "orelse"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list) and not isinstance(stmt, (ast.FunctionDef, ast.ClassDef,
                                                                 ast.AsyncFunctionDef)):
                _pass(inner, namespace, caller_locals, taken, notes)
        call = _callee(stmt)
        name = call.func.id if call is not None and isinstance(call.func, ast.Name) else None
        fn = namespace.get(name) if name is not None and name not in caller_locals else None
        got = _helper_tree(fn)
        new = None if got is None else _inlined(fn, *got, stmt, call, namespace,
                                                caller_locals, taken)
        if new is None:
            i += 1
            continue
        body[i:i + 1] = new
        notes.append(f"{name} (line {stmt.lineno})")
        i += len(new)


def inline_helpers(tree: ast.FunctionDef, namespace: dict[str, Any]) -> list[str]:
    """Inline, in place, the calls of ``tree``'s body to helpers that write their arguments
    (module docstring); returns ``"helper (line N)"`` per call inlined."""
    notes: list[str] = []
    for _ in range(_ROUNDS):
        before = len(notes)
        caller_locals = _stored(tree) | {a.arg for a in ast.walk(tree.args)
                                         if isinstance(a, ast.arg)}
        taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | caller_locals
        _pass(tree.body, namespace, caller_locals, taken, notes)
        if len(notes) == before:
            break
    return notes
