"""Differential fuzzing of the row-reduction pass
(:mod:`hetlab.offload.analysis.transforms.slice_sums`) on generated kernels.

Each kernel computes ``out[i, j]`` as a sum of one or two random reductions (``np.sum``,
``.sum()``, ``np.mean``, ``np.max``, ``.min()``, ``np.linalg.norm``, ``np.dot``) of random
elementwise expressions over ``X[i]``, ``Y[j]``, ``w``, a number ``s`` and constants (``+ -
*``, ``/ s``, ``/`` by a row, ``** 2``, ``np.abs``), run on rows that may be empty, broadcast
(``Y`` one column), hold a NaN, with ``s`` and entries of ``w`` possibly 0. The numba variant
with the fixed passes, serial and (where nothing broadcasts or raises: numba's parallel array
expressions refuse a broadcast, and an error inside a ``prange`` region surfaces as a
SystemError) with the row loop in ``prange``, must leave ``out`` as the plain function does, or
raise the same error, wherever the plain function's serial njit does (numba's own differences
from NumPy, such as ``np.float64(2.0) / 0.0`` raising, are not the pass's: the search refuses
the serial njit there).

    python -m tests.fuzz.slice_sums_differential --seed 0 --count 200
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from tests._source_modules import load_source

_OPERANDS = ("X[i]", "Y[j]", "w", "s", "0.5", "2.0")
_REDUCTIONS = ("np.sum({})", "({}).sum()", "np.mean({})", "np.max({})", "({}).min()",
               "np.linalg.norm({})")


def random_expr(rng: np.random.Generator, depth: int) -> str:
    """A random elementwise expression of the operands, ``depth`` operators deep at most."""
    if depth == 0 or rng.random() < 0.3:
        return str(rng.choice(_OPERANDS))
    kind = rng.integers(0, 7)
    a = random_expr(rng, depth - 1)
    if kind == 0:
        return f"np.abs({a})"
    if kind == 1:
        return f"({a}) ** 2"
    if kind == 2:
        return f"({a}) / s"
    if kind == 3:
        return f"({a}) / {rng.choice(['w', 'Y[j]'])}"  # by a row, which may hold 0
    op = ("+", "-", "*")[kind - 4]
    return f"({a} {op} {random_expr(rng, depth - 1)})"


def row_expr(rng: np.random.Generator, depth: int) -> str:
    """A random expression reading at least one row (a reduction of numbers alone is not
    what numba or the pass takes)."""
    while True:
        e = random_expr(rng, depth)
        if any(r in e for r in ("X[i]", "Y[j]", "w")):
            return e


def random_kernel(rng: np.random.Generator) -> str:
    """The source of a kernel ``k(X, Y, w, s, out)`` with one or two reductions per entry."""
    reds = []
    for _ in range(int(rng.integers(1, 3))):
        if rng.random() < 0.2:
            reds.append(f"np.dot({row_expr(rng, 1)}, {row_expr(rng, 1)})")
        else:
            reds.append(str(rng.choice(_REDUCTIONS)).format(row_expr(rng, 3)))
    return ("import numpy as np\n\n\ndef k(X, Y, w, s, out):\n"
            "    for i in range(X.shape[0]):\n"
            "        for j in range(Y.shape[0]):\n"
            f"            out[i, j] = {' + '.join(reds)}\n")


def random_args(rng: np.random.Generator) -> tuple:
    """``X`` (4, d), ``Y`` (3, d or 1), ``w`` (d,), ``s``, ``out`` (4, 3); d in 0, 1, 3, 5."""
    d = int(rng.choice([0, 1, 3, 5]))
    d_y = d if rng.random() < 0.8 else 1  # a row of Y that broadcasts
    X, Y, w = rng.random((4, d)) - 0.5, rng.random((3, d_y)) - 0.5, rng.random(d) - 0.5
    if d and rng.random() < 0.3:
        X[int(rng.integers(0, 4)), int(rng.integers(0, d))] = np.nan
    if d and rng.random() < 0.3:
        w[int(rng.integers(0, d))] = 0.0
    s = float(rng.choice([0.0, 0.5, -2.0]))
    return X, Y, w, s, np.zeros((4, 3))


def outcome(fn: Callable[..., Any], args: list) -> type | None:
    """The type of the error ``fn(*args)`` raises (ValueError, ZeroDivisionError), or None."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            fn(*args)
    except (ValueError, ZeroDivisionError) as exc:
        return type(exc)
    return None


def _njit_agrees(fn: Callable[..., Any], args: tuple) -> bool:
    """Whether the plain function under ``numba.njit`` leaves ``out`` as Python does: where
    it does not (``np.float64(2.0) / 0.0`` raises in numba, gives inf in NumPy), the search
    refuses every variant as it refuses the serial njit, and a difference is numba's, not the
    pass's."""
    import numba

    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    raised = outcome(fn, want)
    if outcome(numba.njit(fn), got) is not raised:
        return False
    return raised is not None or bool(np.allclose(got[-1], want[-1], rtol=1e-9, atol=1e-12,
                                                  equal_nan=True))


def check_seed(seed: int, variant: Callable[..., Any]) -> list[str]:
    """Findings for the kernel of ``seed`` on three argument sets; ``variant(fn, args,
    loops, scalars)`` builds the numba variant as the search does."""
    rng = np.random.default_rng(seed)
    fn = load_source(random_kernel(rng), prefix="slice_sums")
    found = []
    for _ in range(3):
        args = random_args(rng)
        parallel = [()] + ([("L1",)] if args[1].shape[1] == args[0].shape[1] else [])
        for loops in parallel:
            v = variant(fn, args, loops, ("s",))
            want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
            raised = outcome(fn, want)
            if raised is not None and loops:
                continue  # an error inside a prange region: numba's SystemError, pass or not
            why = None
            if outcome(v.compile(), got) is not raised:
                why = "raised differently"
            elif raised is None and not np.allclose(got[-1], want[-1], rtol=1e-9, atol=1e-12,
                                                    equal_nan=True):
                why = "values differ"
            if why is not None and _njit_agrees(fn, args):
                found.append(f"seed {seed} {loops}: {why}\n{v.source}")
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=100)
    a = ap.parse_args(argv)
    from tests.test_offload_slice_sums import _variant

    findings: list[str] = []
    for seed in range(a.seed, a.seed + a.count):
        findings += check_seed(seed, _variant)
    for f in findings:
        print(f)
    print(f"slice_sums differential: seeds {a.seed}..{a.seed + a.count - 1}, "
          f"{len(findings)} findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
