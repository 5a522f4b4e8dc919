"""Checkers of notebook 01 (offload extraction): predict the verdicts, write a parallel loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._core import Case, Verdict, attempt, brief, finish, require_callable

__all__ = ["PUZZLE", "puzzle", "check_verdicts", "check_parallel_saxpy"]


def puzzle(a, b, c, d, n):
    """Four loops for exercise 01.1: predict each one's verdict before ``analyze`` runs."""
    for i in range(n):
        b[i] = 2.0 * a[i]
    s = 0.0
    for i in range(n):
        s += a[i] * b[i]
    for i in range(1, n):
        c[i] = c[i - 1] + a[i]
    for i in range(n):
        d[i] = a[i] + d[n - 1 - i]
    return s


#: the function whose loops exercise 01.1 asks about
PUZZLE = puzzle

_NUDGES = {
    "parallel": "does any iteration read what another iteration wrote? If no, the loop is "
                "parallel.",
    "reduction": "a scalar that every iteration adds to (`s += …`) is a reduction: parallel once "
                 "each thread keeps its own partial sum.",
    "sequential": "an iteration that reads an element another iteration writes (c[i - 1], or "
                  "d[n - 1 - i] read while d[i] is written) pins the loop: sequential.",
}


def check_verdicts(fn: Callable[[], dict[str, str]], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 01.1: ``fn()`` returns the verdict of each loop of :data:`PUZZLE`.

    Parameters
    ----------
    fn : callable
        ``fn() -> {"L1": "parallel" | "reduction" | "sequential" | "unsupported", ...}``, one
        entry per loop of :data:`PUZZLE` in source order.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a loop is wrong.

    Returns
    -------
    Verdict
        One case per loop; the hint of the first wrong one quotes the reason ``analyze`` gives.
    """
    from .. import offload  # offload sits in the same layer; imported when a learner checks

    require_callable("check_verdicts", fn)
    report = offload.analyze(PUZZLE)
    cases = [Case(f"loop {lp.id}, `for {lp.var} in range({lp.bounds})` at line {lp.line} of "
                  "puzzle", {}, lp, _NUDGES.get(lp.verdict, "")) for lp in report.loops]
    verdict = Verdict("01.1 predict_verdicts", len(cases))
    try:
        answer = fn()
    except NotImplementedError as exc:
        verdict.hint = (f"(case 1 of {len(cases)}: {cases[0].label}): your function is still the "
                        f"stub (it raised NotImplementedError: {exc}). Replace that line with "
                        'your code. Start here: return a dict such as {"L1": "parallel", ...}, '
                        "one entry per loop.")
        return finish(verdict, raise_on_fail)
    if not isinstance(answer, dict):
        verdict.hint = (f"return a dict from loop id to verdict; got {brief(answer)}. "
                        'Example: {"L1": "parallel", "L2": "reduction"}.')
        return finish(verdict, raise_on_fail)
    for i, case in enumerate(cases, 1):
        lp = case.expected
        said = answer.get(lp.id)
        if str(said).strip().lower() != lp.verdict:
            verdict.hint = (f"(case {i} of {len(cases)}: {case.label}): expected "
                            f"{lp.verdict!r}, got {said!r}. analyze says: {lp.why}. "
                            f"Look at: {case.nudge}")
            return finish(verdict, raise_on_fail)
        verdict.n_passed += 1
    return finish(verdict, raise_on_fail)


def check_parallel_saxpy(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 01.2: ``fn(a, x, y, out)`` writes ``out = a * x + y`` with a loop that
    ``offload.analyze`` proves parallel.

    Parameters
    ----------
    fn : callable
        ``fn(a: float, x: (n,) float64, y: (n,) float64, out: (n,) float64) -> None``, a plain
        ``for i in range(...)`` loop writing ``out`` in place (and nothing else).
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    from .. import offload

    require_callable("check_parallel_saxpy", fn)
    rng = np.random.default_rng(1)
    cases = []
    for label, a, n in (("a=2, n=5", 2.0, 5), ("a=-0.5, n=1", -0.5, 1), ("a=3, n=0", 3.0, 0),
                        ("a=1.5, n=1000", 1.5, 1000)):
        x, y = rng.standard_normal(n), rng.standard_normal(n)
        cases.append(Case(label, {"a": a, "x": x, "y": y, "out": np.full(n, np.nan)},
                          a * x + y, "out[i] = a * x[i] + y[i] for every i; write into `out`."))

    verdict = Verdict("01.2 saxpy_loop", len(cases) + 1)
    for i, case in enumerate(cases, 1):
        _, verdict.hint = attempt(fn, case, f"(case {i} of {len(cases) + 1}: {case.label})")
        if verdict.hint:
            return finish(verdict, raise_on_fail)
        out = case.args["out"]
        if not np.allclose(out, case.expected, rtol=1e-12, atol=0):
            verdict.hint = (f"(case {i} of {len(cases) + 1}: {case.label}): expected out = "
                            f"{brief(case.expected)}, out holds {brief(out)}. Look at: "
                            f"{case.nudge}")
            return finish(verdict, raise_on_fail)
        verdict.n_passed += 1
    label = f"(case {len(cases) + 1} of {len(cases) + 1}: offload.analyze(your function))"
    try:
        loops = offload.analyze(fn).loops
    except Exception as exc:  # e.g. no source: say so
        verdict.hint = f"{label}: analyze could not read it: {exc}"
        return finish(verdict, raise_on_fail)
    if not loops:
        verdict.hint = (f"{label}: expected one loop, found none. Look at: write it as "
                        "`for i in range(x.shape[0]):` — a NumPy one-liner has no loop to offload.")
    elif not all(lp.verdict == "parallel" for lp in loops):
        bad = next(lp for lp in loops if lp.verdict != "parallel")
        verdict.hint = (f"{label}: expected every loop parallel, {bad.id} is {bad.verdict}: "
                        f"{bad.why}. Look at: each iteration may write only out[i] and read only "
                        "x[i], y[i] and a.")
    else:
        verdict.n_passed += 1
    return finish(verdict, raise_on_fail)
