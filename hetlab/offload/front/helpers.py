"""Module-level helper functions a loop may call: pure ones are modelled as elementwise calls.

A helper (``def _clamp01(v): return 0.0 if v < 0.0 else …`` at module level, called by name in
the loop) is **pure** when its own source shows it cannot write state or read changing state:
no store into a subscript or attribute (it cannot write its arguments), no ``v += e`` unless
``v`` holds a number or an array the helper allocated (on an argument, or a view of one, it
writes in place), no ``global`` /
``nonlocal``, no ``yield``, ``try``, nested ``def``, lambda, class or comprehension, no closure
cells, globals read only when they are modules, numbers or other pure helpers, and calls only to
the pure builtins, ``math``/``cmath``/``numpy`` functions that write nothing
(:func:`~.calls.hidden_write`; keyword arguments such as ``dtype=`` on those only, never
``out=``) and other pure helpers (three levels deep at most, no recursion).
Such a call reads only its arguments, so the dependence test treats it as it treats
``math.exp``; the numba target binds the helper as ``numba.njit(helper)`` in the variant's
namespace (:func:`jit_helpers`: numba cannot call a plain Python function). Anything else stays
``call to unknown function``.

>>> import math
>>> def half(v):
...     return 0.5 * math.fabs(v)
>>> def bump(a):
...     a[0] += 1.0
...     return a
>>> ns = {"half": half, "bump": bump, "math": math}
>>> pure_helper("half", ns) is half, pure_helper("bump", ns)
(True, None)
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import numbers
import textwrap
import types
from typing import Any

from .calls import fresh_np_call, hidden_write, np_call_chain

__all__ = ["pure_helper", "jit_helpers"]

#: builtins a pure helper may call (no I/O, no mutation, numba-typable)
_PURE_BUILTINS = frozenset({"abs", "min", "max", "int", "float", "bool", "round", "len",
                            "pow", "range", "divmod", "complex"})
_FORBIDDEN = (ast.Global, ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.Try, ast.Lambda,
              ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ListComp, ast.SetComp,
              ast.DictComp, ast.GeneratorExp, ast.Await, ast.With, ast.Raise, ast.Delete)
_MAX_DEPTH = 3


def _tree(fn: types.FunctionType) -> ast.FunctionDef | None:
    """``fn``'s definition; a lambda as the ``def`` returning its expression."""
    try:
        module = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    if fn.__name__ == "<lambda>":
        return _lambda_tree(module, fn)
    defs = [n for n in module.body if isinstance(n, ast.FunctionDef)]
    return defs[0] if defs and not defs[0].decorator_list else None


def _lambda_tree(module: ast.Module, fn: types.FunctionType) -> ast.FunctionDef | None:
    """The one lambda of ``module`` (the source lines of ``fn``) with ``fn``'s parameters, as a
    ``def``; None when there are several (``f, g = lambda x: x, lambda x: -x``) or none."""
    code = fn.__code__
    names = list(code.co_varnames[:code.co_argcount])
    found = [n for n in ast.walk(module) if isinstance(n, ast.Lambda)
             and [a.arg for a in (*n.args.posonlyargs, *n.args.args)] == names]
    if len(found) != 1:
        return None
    lam = found[0]
    tree = ast.FunctionDef(name="<lambda>", args=lam.args, body=[ast.Return(lam.body)],
                           decorator_list=[], returns=None, type_comment=None)
    return ast.fix_missing_locations(ast.copy_location(tree, lam))




def _updates_in_place_safely(tree: ast.FunctionDef, params: set[str],
                             ns: dict[str, Any]) -> bool:
    """Whether every augmented assignment to a name (``v += e``) updates a number or an
    array the helper allocated: on an array argument, or a local bound to one or to a view
    of one (``t = dst``, ``t = dst[1:]``, ``t = x[0]`` of a 2-D ``x``), ``+=`` writes the
    caller's array in place."""
    binds: dict[str, list[ast.AST]] = {}
    for n in ast.walk(tree):
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
            for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                for m in ast.walk(t):
                    if isinstance(m, ast.Name):  # a tuple target: the element is unknown
                        binds.setdefault(m.id, []).append(
                            n.value if isinstance(t, ast.Name) and n.value is not None
                            else ast.Name("?", ast.Load()))
        elif isinstance(n, ast.For):
            for m in ast.walk(n.target):
                if isinstance(m, ast.Name):
                    ok = isinstance(n.target, ast.Name) and isinstance(n.iter, ast.Call) \
                        and isinstance(n.iter.func, ast.Name) and n.iter.func.id == "range"
                    binds.setdefault(m.id, []).append(
                        ast.Constant(0) if ok else ast.Name("?", ast.Load()))

    def fresh(e: ast.AST, seen: frozenset[str]) -> bool:
        if isinstance(e, ast.Constant):
            return True
        if isinstance(e, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            return True  # a new array or a number
        if isinstance(e, ast.IfExp):
            return fresh(e.body, seen) and fresh(e.orelse, seen)
        if isinstance(e, ast.Name):
            return e.id not in params and e.id not in seen and e.id in binds and all(
                fresh(v, seen | {e.id}) for v in binds[e.id])
        if isinstance(e, ast.Attribute):
            return e.attr in ("size", "ndim")
        if isinstance(e, ast.Subscript):
            return isinstance(e.value, ast.Attribute) and e.value.attr == "shape"
        if isinstance(e, ast.Call):
            f = e.func
            if isinstance(f, ast.Name) and f.id in _PURE_BUILTINS and f.id not in binds:
                return True
            chain = np_call_chain(f, ns)
            return chain is not None and (chain[0] in ("math", "cmath") or fresh_np_call(
                chain, {k.arg: k.value for k in e.keywords if k.arg}))
        return False

    return all(fresh(ast.Name(n.target.id, ast.Load()), frozenset())
               for n in ast.walk(tree)
               if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name))


def _is_pure(fn: types.FunctionType, seen: tuple[Any, ...], writes_ok: bool = False) -> bool:
    """Whether ``fn`` is a pure helper (module docstring); ``writes_ok``: whether it is one
    but for writing its arguments (element stores, ``+=`` on them), which numba compiles too."""
    if fn in seen or len(seen) >= _MAX_DEPTH or fn.__closure__:
        return False
    tree = _tree(fn)
    if tree is None:
        return False
    a = tree.args
    if a.vararg or a.kwarg or a.kwonlyargs:
        return False
    params = {p.arg for p in (*a.posonlyargs, *a.args)}
    ns = fn.__globals__
    local = params | {n.id for n in ast.walk(tree)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    if not writes_ok and not _updates_in_place_safely(tree, params, ns):
        return False
    for node in ast.walk(tree):
        if isinstance(node, _FORBIDDEN) and node is not tree:
            return False
        if isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(
                node.ctx, ast.Load) and not (writes_ok and isinstance(node, ast.Subscript)):
            return False
        if isinstance(node, ast.Call):
            f = node.func
            if node.keywords and (np_call_chain(f, ns) is None or any(
                    k.arg in (None, "out") for k in node.keywords)):
                return False  # keywords only on math/NumPy calls (``dtype=``), never ``out=``
            if isinstance(f, ast.Name) and f.id not in local and f.id not in ns \
                    and f.id in _PURE_BUILTINS:
                continue
            chain = np_call_chain(f, ns)
            if chain is not None:
                if chain[0] not in ("math", "cmath", "numpy") or hidden_write(chain):
                    return False
                continue
            if isinstance(f, ast.Name) and f.id not in local and isinstance(
                    ns.get(f.id), types.FunctionType) and _is_pure(ns[f.id], (*seen, fn),
                                                                   writes_ok):
                continue
            return False
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                and node.id not in local:
            obj = ns.get(node.id, getattr(builtins, node.id, None))
            if not isinstance(obj, (types.ModuleType, types.FunctionType,
                                    types.BuiltinFunctionType, numbers.Number, type)):
                return False
    return True


def pure_helper(name: str, namespace: dict[str, Any]) -> types.FunctionType | None:
    """The plain Python function ``name`` is bound to in ``namespace`` when it is a pure
    helper (see the module docstring), else None."""
    obj = namespace.get(name)
    if not isinstance(obj, types.FunctionType):
        return None
    return obj if _is_pure(obj, ()) else None


def jit_helpers(tree: ast.AST, namespace: dict[str, Any]) -> dict[str, Any]:
    """``namespace`` with every helper ``tree`` calls by name that is pure but for writing
    its arguments (and the helpers those call, in their own modules' globals seen by numba)
    bound as ``numba.njit(helper)``: a loop calling one that writes stays as written (an
    unknown call to the analysis), but the function still compiles."""
    import numba

    out = dict(namespace)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            obj = namespace.get(node.func.id)
            fn = obj if isinstance(obj, types.FunctionType) \
                and _is_pure(obj, (), writes_ok=True) else None
            if fn is not None:
                out[node.func.id] = _jitted(fn, numba)
    return out


@functools.cache
def _jitted(fn: types.FunctionType, numba: Any) -> Any:
    """``numba.njit`` of ``fn`` whose own helper calls resolve to njit versions too."""
    tree = _tree(fn)
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Name)} if tree is not None else set()
    inner = {c: fn.__globals__[c] for c in calls
             if isinstance(fn.__globals__.get(c), types.FunctionType)}
    if not inner:
        return numba.njit(fn)
    glb = dict(fn.__globals__)
    glb.update({c: _jitted(f, numba) for c, f in inner.items()})
    clone = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__)
    return numba.njit(clone)
