"""NumPy's NaN rule kept in generated numba code (a fixed pass of the numba target).

numba compiles a few NumPy reductions with another NaN rule than NumPy's
(:mod:`hetlab.offload.runtime.nanexact` says which and shows it): under ``parallel=True``,
``np.max``/``np.min``/``np.amax``/``np.amin`` and ``.max()``/``.min()`` skip NaN, and
``np.median`` may skip one in any mode. A variant verified on inputs without NaN would then
return another result than the Python function on data with one. This pass rewrites those
calls to the runtime's ``nan_max``/``nan_min``/``nan_median``, which return NumPy's result:

    out[i] = np.max(A[i]) - np.min(A[i])
    # becomes
    out[i] = _hl_nan_max(A[i]) - _hl_nan_min(A[i])

Only the one-argument forms are rewritten (``axis=``, ``out=`` or ``initial=`` keep numba's
own handling); extrema only in a variant compiled ``parallel=True``, since numba's serial
``np.max`` already follows NumPy. A call is recognized by the module its name resolves to
(``np``, ``numpy``, ``import numpy as xp``, ``from numpy import amax``); a method call
``e.max()`` with no argument is an array's (numba has no other ``.max()``).
"""

from __future__ import annotations

import ast
from typing import Any

from ...front.calls import np_call_chain

__all__ = ["nan_exact_calls", "NAN_IMPORT", "NAN_NAMES"]

#: the runtime functions, as the generated source names them
NAN_NAMES = {"max": "_hl_nan_max", "min": "_hl_nan_min", "median": "_hl_nan_median"}
NAN_IMPORT = ("from hetlab.offload.runtime.nanexact import nan_max as _hl_nan_max, "
              "nan_min as _hl_nan_min, nan_median as _hl_nan_median")
_NP_NAMES = {"max": "max", "amax": "max", "min": "min", "amin": "min", "median": "median"}


def _kind(call: ast.Call, namespace: dict[str, Any]) -> str | None:
    """``"max"``/``"min"``/``"median"`` when ``call`` is a one-argument NumPy form of it."""
    if call.keywords:
        return None
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr in ("max", "min") and not call.args \
            and np_call_chain(f, namespace) is None:
        return f.attr  # an array's method
    chain = np_call_chain(f, namespace)
    if len(call.args) == 1 and not isinstance(call.args[0], ast.Starred) and chain \
            and len(chain) == 2 and chain[0] == "numpy":
        return _NP_NAMES.get(chain[1])
    return None


def nan_exact_calls(tree: ast.AST, namespace: dict[str, Any], parallel: bool) -> list[str]:
    """Rewrite, in place, ``tree``'s calls whose NaN rule numba changes (extrema only when
    ``parallel``); the transform notes (one per kind rewritten), empty when none was."""
    done: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        kind = _kind(node, namespace)
        if kind is None or (kind != "median" and not parallel):
            continue
        arg = node.args[0] if node.args else node.func.value  # type: ignore[attr-defined]
        node.func = ast.Name(NAN_NAMES[kind], ast.Load())
        node.args = [arg]
        done[kind] = done.get(kind, 0) + 1
    why = {"max": "numba's parallel np.max skips NaN", "min": "numba's parallel np.min skips NaN",
           "median": "numba's np.median may skip NaN"}
    return [f"NaN rule kept: {n} {k} call{'s' if n > 1 else ''} → {NAN_NAMES[k]} ({why[k]})"
            for k, n in sorted(done.items())]
