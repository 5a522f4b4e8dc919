"""Parallel helpers of function blocks: a block's numba form calls an ``njit(parallel=True)``
function of its own.

A plan that keeps only function blocks is compiled ``@njit(parallel=False)`` (it has no chosen
loop), so a ``prange`` written into the block's statements would run on one thread. A block
whose work is best spread over the cores (an argmin per row, a column sum, an outer product, a
broadcasting map) therefore emits its loops as a separate function decorated
``njit(parallel=True)`` and one call to it; numba compiles the callee with its own flags, so the
call runs in parallel whatever the caller's. The definition travels inside the block's
statements as a one-line string constant (marked :data:`MARK`; CPython drops a constant
expression statement, so numba never sees it), so ``plan.source()`` shows it, and
:func:`install` (called by :func:`~hetlab.offload.analysis.report.analyze`) executes it in the
function's namespace copy, where the variant's code finds it by name. Helpers contain no BLAS
call: OpenBLAS threads inside a numba parallel region compete with numba's for the cores.

>>> name, lines = helper(["x", "n"], ["for i in prange(n):", "    x[i] = 2.0 * x[i]"])
>>> lines[1] == f"{name}(x, n)"
True
>>> ns = {}
>>> install("\\n".join(lines), ns)
1
>>> import numpy as np
>>> x = np.arange(3.0)
>>> ns[name](x, 3)
>>> x
array([0., 2., 4.])
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from typing import Any

from .transforms.unsigned import unsigned_indices

__all__ = ["MARK", "helper", "install", "free_names", "readable"]

#: first line of a helper's definition string
MARK = "# hetlab.offload parallel helper"
#: names that are never passed to a helper: builtins the loops call
_BUILTINS = frozenset({"range", "abs", "min", "max", "len", "float", "int", "bool", "round",
                       "prange"})
#: attributes of an array argument (a name read as ``X.shape`` is an argument; ``np.inf`` not)
_ARRAY_ATTRS = frozenset({"shape", "size", "ndim", "dtype", "T", "itemsize"})


def free_names(nodes: Iterable[ast.AST], bound: Iterable[str] = ()) -> list[str]:
    """The names ``nodes`` read that a helper takes as arguments, in first-use order.

    Loop variables and names stored inside ``nodes`` (or in ``bound``) are the helper's own;
    builtins called (``range``, ``abs`` …) and modules (a name whose attribute is not an array
    attribute: ``np.inf``, ``math.sqrt``) are resolved in the function's namespace instead.
    """
    nodes = list(nodes)
    own = set(bound)
    modules: set[str] = set()
    for top in nodes:
        for n in ast.walk(top):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                own.add(n.id)
            elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                    and n.attr not in _ARRAY_ATTRS:
                modules.add(n.value.id)
    out: list[str] = []
    for top in nodes:
        for n in ast.walk(top):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in own \
                    and n.id not in modules and n.id not in _BUILTINS and n.id not in out:
                out.append(n.id)
    return out


def helper(params: list[str], body: list[str]) -> tuple[str, list[str]]:
    """(name, lines): a parallel helper over ``params`` running ``body`` (its lines, unindented,
    ``prange`` for the parallel loop), as the definition string and the call.

    The name is ``_hlp_`` + a hash of the definition: the same code gets the same helper.
    """
    args = ", ".join(params)
    inner = "\n".join("    " + line for line in body)
    digest = hashlib.sha1(f"{args}\n{inner}".encode()).hexdigest()[:12]
    name = f"_hlp_{digest}"
    func = ast.parse(f"def {name}({args}):\n{inner}\n").body[0]
    assert isinstance(func, ast.FunctionDef)
    unsigned = bool(unsigned_indices(func))  # chunk loops start at a variable offset
    inner = "\n".join(ast.unparse(func).split("\n")[1:])
    text = (f"{MARK}\nimport numba as _hl_numba\n"
            + ("from numba import uint64 as _hl_u64\n" if unsigned else "")
            + f"\n\n@_hl_numba.njit(parallel=True, cache=False)\ndef {name}({args}):\n"
            + inner.replace("prange(", "_hl_numba.prange(") + "\n")
    return name, [repr(text), f"{name}({args})"]


class _PlainPython:
    """Stands in for numba when a variant's code is run as plain Python (tests): ``njit`` keeps
    the function as written, ``prange`` is ``range``."""

    prange = range

    @staticmethod
    def njit(*_a: Any, **_k: Any) -> Any:
        return lambda f: f

    @staticmethod
    def get_num_threads() -> int:
        return 2


def install(code: str, namespace: dict[str, Any], python: bool = False) -> int:
    """Define the helpers whose definitions ``code`` carries in ``namespace``; how many.

    Parameters
    ----------
    code : str
        A block's statements (:attr:`~.blocks.Block.numba_call`).
    namespace : dict
        The analyzed function's namespace (a copy of its globals): the helpers read the same
        names as the function (``math``, ``np``, module constants).
    python : bool, default False
        Define the helpers as plain Python functions (``prange`` as ``range``), for code run
        without numba.
    """
    count = 0
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return 0
    for st in ast.walk(tree):  # a block's statements, or a whole variant's source
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant) \
                and isinstance(st.value.value, str) and st.value.value.startswith(MARK):
            text = st.value.value
            if python:
                text = text.replace("import numba as _hl_numba", "_hl_numba = _hl_plain")
                namespace["_hl_plain"] = _PlainPython
            exec(compile(text, "<hetlab.offload helper>", "exec"), namespace)
            count += 1
    return count


def readable(code: str) -> str:
    """``code`` with each helper's definition string written out as its source lines (for
    reading and tests; the result is not meant to be run)."""
    out = []
    for line in code.splitlines():
        if line.startswith(repr(MARK)[:-1]):
            out += ast.literal_eval(line).splitlines()
        else:
            out.append(line)
    return "\n".join(out)
