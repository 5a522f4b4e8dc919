"""NumPy calls seen in the source: the dotted name a call resolves to, and which write state.

Front-end helpers shared by the loop tree (:mod:`.loops`) and the alias pass
(:mod:`hetlab.offload.analysis.aliases`).
"""

from __future__ import annotations

import ast
import sys
import types
from typing import Any

__all__ = ["np_call_chain", "hidden_write", "imported_function", "FRESH_NP", "fresh_np_call",
           "FRESH_METHODS", "VIEW_METHODS"]


#: modules whose functions a plain name imported from them (``from math import sqrt``) may be
_NAME_MODULES = ("math", "cmath", "numpy")


def imported_function(name: str, namespace: dict[str, Any]) -> list[str] | None:
    """``["math", "sqrt"]`` when ``name`` is bound in ``namespace`` to the very function
    ``math.sqrt`` (``from math import sqrt``, also renamed: ``from numpy import sqrt as s``),
    else None. Only top-level functions of :data:`_NAME_MODULES` are recognized: a name
    imported from ``numpy.random`` is not (its calls change hidden state)."""
    obj = namespace.get(name)
    fname = getattr(obj, "__name__", None)
    if obj is None or isinstance(obj, types.ModuleType) or not isinstance(fname, str):
        return None
    for mod_name in _NAME_MODULES:
        mod = sys.modules.get(mod_name)
        if mod is not None and getattr(mod, fname, None) is obj and callable(obj):
            return [mod_name, fname]
    return None


def np_call_chain(func: ast.AST, namespace: dict[str, Any]) -> list[str] | None:
    """``["numpy", "add", "at"]`` for ``np.add.at`` (the module's real dotted name split, then
    the attributes) when ``func`` is an attribute chain on a module name; ``["math", "sqrt"]``
    for a plain name bound to a function of math, cmath or numpy (:func:`imported_function`);
    else None."""
    if isinstance(func, ast.Name):
        return imported_function(func.id, namespace)
    chain: list[str] = []
    node = func
    while isinstance(node, ast.Attribute):
        chain.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or not chain:
        return None
    obj = namespace.get(node.id)
    if isinstance(obj, types.ModuleType):
        return [*obj.__name__.split("."), *chain]
    if obj is None and node.id in ("np", "numpy", "math"):
        return ["numpy" if node.id != "math" else "math", *chain]
    return None


#: array methods whose result is new storage (or a scalar): they write nothing (an ``out=``
#: keyword aside, which the callers refuse)
FRESH_METHODS = frozenset({
    "copy", "sum", "prod", "mean", "std", "var", "min", "max", "argmin", "argmax", "any",
    "all", "cumsum", "cumprod", "dot", "flatten", "tolist", "item", "round", "clip",
    "nonzero", "trace", "tobytes", "argsort", "astype",
})
#: array methods returning a view of the array (no write)
VIEW_METHODS = frozenset({"reshape", "view", "ravel", "transpose", "swapaxes", "squeeze",
                          "diagonal"})


#: NumPy functions that write an argument in place
_HIDDEN_NP = frozenset({"copyto", "put", "place", "putmask", "fill_diagonal", "put_along_axis",
                        "seterr", "setbufsize", "seterrcall", "set_printoptions", "save",
                        "savez", "savez_compressed", "savetxt", "load", "loadtxt",
                        "genfromtxt", "fromfile", "tofile"})


def hidden_write(chain: list[str]) -> str | None:
    """Why a call of NumPy function ``chain`` writes state it does not return, or None."""
    name = ".".join(["np", *chain[1:]])
    if len(chain) >= 2 and chain[1] == "random":
        return f"{name}() changes NumPy's global random state"
    if chain[-1] == "at" and len(chain) >= 3:
        return f"{name}() writes its first argument in place (unbuffered)"
    if chain[-1] in _HIDDEN_NP:
        return f"{name}() writes an argument or global state in place"
    if len(chain) >= 3 and chain[1] not in ("linalg", "fft", "emath") and chain[-1] not in (
            "reduce", "accumulate", "outer", "reduceat"):
        return f"{name}() is not a NumPy call the analysis models"
    return None


#: NumPy functions whose result is new storage (unless ``out=`` / ``copy=False`` says otherwise)
FRESH_NP = frozenset({
    "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like",
    "arange", "linspace", "logspace", "geomspace", "eye", "identity", "copy", "array", "tri",
    "sum", "prod", "mean", "std", "var", "min", "max", "amin", "amax", "argmin", "argmax",
    "nansum", "nanmean", "nanmin", "nanmax", "median", "cumsum", "cumprod", "dot", "vdot",
    "inner", "outer", "matmul", "tensordot", "einsum", "kron", "cross", "trace", "norm",
    "concatenate", "stack", "vstack", "hstack", "dstack", "column_stack", "tile", "repeat",
    "sort", "argsort", "unique", "where", "clip", "round", "around", "abs", "absolute",
    "isnan", "isinf", "isfinite", "allclose", "isclose", "array_equal", "any", "all",
    "count_nonzero", "nonzero", "flatnonzero", "searchsorted", "histogram", "bincount",
    "diff", "convolve", "correlate", "interp", "polyval", "meshgrid", "tril", "triu",
    "float64", "float32", "int64", "int32", "int8",
    "uint8", "complex128", "bool_", "exp", "log", "sqrt", "sin", "cos", "tan",
})


def fresh_np_call(chain: list[str], keywords: dict[str, ast.expr]) -> bool:
    """Whether the NumPy call ``chain`` (:func:`np_call_chain`) with these keyword arguments
    returns new storage or a number, never a view of an argument: a function of
    :data:`FRESH_NP` or a ufunc, without ``out=``, and not ``np.array(…, copy=False/None)``."""
    import numpy as np

    if len(chain) != 2 or chain[0] != "numpy" or "out" in keywords:
        return False
    copy = keywords.get("copy")
    if chain[1] == "array" and isinstance(copy, ast.Constant) and copy.value is not True:
        return False
    return chain[1] in FRESH_NP or isinstance(getattr(np, chain[1], None), np.ufunc)
