"""A static time model of a candidate, used to prune the search before measuring.

The model knows the serial njit time (measured) and the loop tree (from the analysis). Per
loop it estimates a trip count by evaluating the ``range(…)`` bounds on the actual arguments
(names bound by simple assignments before the loops, such as ``n = A.shape[0]``, are
evaluated too; an enclosing loop's variable is replaced by its middle value, so a triangular
bound counts half). A bound it cannot evaluate gets the largest dimension among the array
arguments. The work of the function is the sum, over innermost loops, of the product of the
trip counts on their path; a candidate offloads the share ``f`` of the work under its
outermost offloaded loops, and pays one parallel launch per iteration of the loops around
each of them::

    predicted = serial_s * ((1 - f) + f / threads) + launches * launch_s

(Amdahl's law plus launch overhead). It is a coarse figure meant for one decision: a
candidate predicted far slower than the best measured one (:attr:`MeasureOptions.prune`)
is not run. ``launch_s`` (5 µs) is an assumed order of magnitude for one numba parallel
region on a few threads, not a measurement of this machine.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..analysis.report import Report
from ..targets.base import for_nodes

__all__ = ["StaticModel", "LAUNCH_S"]

#: assumed cost of one numba parallel region launch (seconds; an order of magnitude)
LAUNCH_S = 5e-6
_SAFE = {"len": len, "min": min, "max": max, "int": int, "abs": abs, "range": range}


def _pure(node: ast.AST) -> bool:
    """Only names, constants, attributes, subscripts, arithmetic and calls of ``_SAFE``."""
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            if not (isinstance(n.func, ast.Name) and n.func.id in _SAFE):
                return False
        elif isinstance(n, (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)):
            return False
    return True


def _eval(node: ast.AST, env: dict[str, Any]) -> Any:
    if not _pure(node):
        raise ValueError("not a pure expression")
    code = compile(ast.Expression(node), "<hetlab.offload model>", "eval")
    return eval(code, {"__builtins__": _SAFE}, env)


def _largest_dim(args: Sequence[Any]) -> int:
    dims = [max(a.shape) for a in args if isinstance(a, np.ndarray) and a.ndim]
    return max(dims, default=1)


class StaticModel:
    """Predicted time of a candidate from the loop tree, the arguments and the serial time.

    Parameters
    ----------
    report : Report
        The analysis of the function.
    args : tuple
        The arguments the search runs it on (only shapes and scalars are read).
    threads : int
        Threads of a parallel loop.
    launch_s : float
        Cost of one parallel launch (s).

    Examples
    --------
    >>> import numpy as np
    >>> from hetlab.offload import analyze
    >>> from hetlab.offload.examples import EXAMPLES
    >>> ex = EXAMPLES["matmul"]
    >>> m = StaticModel(analyze(ex.fn), ex.make_args(100), threads=2)  # A 100×103, B 103×101
    >>> m.trips
    {'L1': 100, 'L2': 101, 'L3': 103}
    >>> round(m.predict(["L1"], serial_s=1.0), 3)   # half the time, one launch
    0.5
    >>> m.predict(["L3"], serial_s=0.01) > 3 * 0.01  # 10 100 launches of a short loop
    True
    """

    def __init__(self, report: Report, args: Sequence[Any], threads: int,
                 launch_s: float = LAUNCH_S) -> None:
        self.report, self.threads, self.launch_s = report, max(int(threads), 1), launch_s
        self.trips = self._trips(args)
        self.work = {lp.id: self._work(lp.index) for lp in report.loops}
        self.total = sum(self.work[lp.id] for lp in report.loops if lp.parent is None) or 1.0

    def _trips(self, args: Sequence[Any]) -> dict[str, int]:
        fallback = _largest_dim(args)
        env: dict[str, Any] = dict(zip(self.report.params, args, strict=False))
        fn = self.report.source.tree
        for st in fn.body:  # simple assignments before the loops: n = A.shape[0]
            if isinstance(st, ast.Assign) and len(st.targets) == 1 \
                    and isinstance(st.targets[0], ast.Name):
                try:
                    env[st.targets[0].id] = _eval(st.value, env)
                except Exception:  # not evaluable here: the bounds using it fall back
                    continue
        nodes = list(for_nodes(fn.body))  # the analysis' numbering
        trips: dict[str, int] = {}
        for lp, node in zip(self.report.loops, nodes, strict=False):
            trips[lp.id] = self._trip(node, lp, env, trips, fallback)
        for lp in self.report.loops:
            trips.setdefault(lp.id, fallback)
        return trips

    def _trip(self, node: ast.For, lp: Any, env: dict[str, Any], trips: dict[str, int],
              fallback: int) -> int:
        it = node.iter
        if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name)
                and it.func.id in ("range", "prange") and 1 <= len(it.args) <= 3):
            return fallback
        local = dict(env)
        p = lp.parent
        while p is not None:  # enclosing loop variables at their middle value
            outer = self.report.loops[p]
            local[outer.var] = local.get(f"__mid_{outer.id}", trips.get(outer.id, 1) // 2)
            p = outer.parent
        try:
            bounds = [int(_eval(a, local)) for a in it.args]
            r = range(*bounds)
        except Exception:
            return fallback
        env[f"__mid_{lp.id}"] = r[len(r) // 2] if len(r) else 0
        return len(r)

    def _work(self, index: int) -> float:
        lp = self.report.loops[index]
        inner = sum(self._work(c) for c in lp.children)
        return float(self.trips[lp.id]) * max(inner, 1.0)

    def _outer(self, loop_id: str) -> float:
        """Iterations of the loops around ``loop_id`` (launches of a prange on it)."""
        n, p = 1.0, self.report.loop(loop_id).parent
        while p is not None:
            n *= self.trips[self.report.loops[p].id]
            p = self.report.loops[p].parent
        return n

    def predict(self, loops: Sequence[str], serial_s: float) -> float:
        """Predicted time (s) of the variant offloading ``loops``, given the serial time."""
        chosen = set(loops)

        def inside(k: str) -> bool:
            p = self.report.loop(k).parent
            while p is not None:
                if self.report.loops[p].id in chosen:
                    return True
                p = self.report.loops[p].parent
            return False

        top = [k for k in chosen if not inside(k)]  # nested prange runs serially in numba
        f = min(sum(self.work[k] for k in top) / self.total, 1.0)
        launches = sum(self._outer(k) for k in top)
        if not math.isfinite(serial_s):
            return math.inf
        return serial_s * ((1.0 - f) + f / self.threads) + launches * self.launch_s
