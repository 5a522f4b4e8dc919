"""Loop kernels written for hetlab's offload extraction, with the verdict expected per loop.

Every example is a plain Python function whose work is explicit ``for … in range(…)`` loops over
NumPy arrays (PolyBench/C-port style), a small-size argument generator, and ``expected``: the
analysis verdict of every loop in source order (pre-order), as ``(loop variable, verdict)``.
Verdicts are ``"parallel"``, ``"reduction"``, ``"sequential"`` or ``"unsupported"``.

>>> from hetlab.offload.examples import EXAMPLES
>>> ex = EXAMPLES["matmul"]
>>> ex.expected
(('i', 'parallel'), ('j', 'parallel'), ('k', 'reduction'))
>>> A, B, C = ex.make_args(4)
>>> ex.fn(A, B, C); bool(abs(C - A @ B).max() < 1e-12)
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import dense, irregular, stencils

__all__ = ["Example", "EXAMPLES"]

P, R, S, U = "parallel", "reduction", "sequential", "unsupported"


@dataclass(frozen=True)
class Example:
    """One example kernel: the function, its argument generator and the expected verdicts."""

    name: str
    fn: Callable[..., Any]
    make_args: Callable[..., tuple]
    expected: tuple[tuple[str, str], ...]
    note: str = ""


def _ex(module: Any, name: str, expected: list[tuple[str, str]], note: str = "") -> Example:
    return Example(name, getattr(module, name), getattr(module, f"args_{name}"),
                   tuple(expected), note)


_ALL = [
    _ex(dense, "matmul", [("i", P), ("j", P), ("k", R)]),
    _ex(dense, "matvec", [("i", P), ("j", R)]),
    _ex(dense, "axpy", [("i", P)]),
    _ex(dense, "dot", [("i", R)]),
    _ex(dense, "covariance", [("j", P), ("i", R), ("i", P), ("j", P), ("i", P), ("j", P),
                              ("k", R)], "triangular j loop"),
    _ex(dense, "lu", [("k", S), ("i", P), ("j", P)], "triangular bounds prove i, j parallel"),
    _ex(dense, "trisolv", [("i", S), ("j", R)]),
    _ex(dense, "floyd_warshall", [("k", S), ("i", S), ("j", S)],
        "parallel in truth; conservative analysis cannot prove it"),
    _ex(dense, "transpose", [("i", P), ("j", P)]),
    _ex(stencils, "jacobi_1d", [("t", S), ("i", P), ("i", P)]),
    _ex(stencils, "jacobi_2d", [("t", S), ("i", P), ("j", P), ("i", P), ("j", P)]),
    _ex(stencils, "seidel_2d", [("t", S), ("i", S), ("j", S)]),
    _ex(stencils, "heat_3d", [("t", S), ("i", P), ("j", P), ("k", P), ("i", P), ("j", P),
                              ("k", P)]),
    _ex(stencils, "himeno", [("it", S), ("i", R), ("j", R), ("k", R), ("i", P), ("j", P),
                             ("k", P)]),
    _ex(irregular, "nbody_forces", [("i", P), ("j", R)]),
    _ex(irregular, "histogram", [("i", S)], "indirect write counts[b]"),
    _ex(irregular, "prefix_sum", [("i", S)]),
    _ex(irregular, "running_sum", [("i", S)]),
    _ex(irregular, "array_max", [("i", R)]),
    _ex(irregular, "row_norms", [("i", P), ("j", R)]),
    _ex(irregular, "collatz_steps", [("i", P)],
        "a while loop with a data-dependent exit, inside one iteration of i"),
    _ex(irregular, "first_crossing", [("i", U)], "break: an early exit"),
    _ex(irregular, "blur_rows", [("i", P), ("j", P)]),
]

#: every example kernel by name
EXAMPLES: dict[str, Example] = {e.name: e for e in _ALL}
