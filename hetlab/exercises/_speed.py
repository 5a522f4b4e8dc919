"""Exercises where speed is the point: after the hand-made cases, ``hl.check`` runs the
learner's function on the kernel's generated cases and times it beside hetlab's backends."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..check import check
from ._core import Verdict


def with_speed(verdict: Verdict, fn: Callable[..., Any], kernel: str, sizes: Sequence[int],
               nudge: str, *, against: Sequence[str] = ("numpy", "numba"),
               repeats: int = 3) -> Verdict:
    """Extend a verdict whose hand-made cases all passed with ``hl.check``'s generated cases.

    Parameters
    ----------
    verdict : Verdict
        From :func:`hetlab.exercises._core.run_cases`; left unchanged when it already failed.
    fn : callable
        The learner's function, called with the kernel's case keywords.
    kernel : str
        hetlab kernel name ("fps", "spmv", ...).
    sizes : sequence of int
        Generated case sizes, in the kernel's unit.
    nudge : str
        What to look at when a generated case fails.
    against : sequence of str
        hetlab backends timed beside the learner (unavailable ones are left out).
    repeats : int
        Timed calls per case; medians are shown.

    Returns
    -------
    Verdict
        The same object, with ``n_cases`` grown by the generated cases, their speed rows, and a
        hint naming the first generated case that failed.
    """
    if not verdict.passed:
        return verdict
    report = check(fn, kernel, sizes=sizes, against=against, repeats=repeats)
    verdict.n_cases += len(report.rows)
    for row in report.rows:
        if not row["passed"]:
            verdict.hint = (f"(generated case: a seeded {kernel} case of size {row['size']}, "
                            f"made by hl.{kernel}.spec.make_case): {row['detail']}. "
                            f"Look at: {nudge}")
            return verdict
        verdict.n_passed += 1
        verdict.speed.append({k: v for k, v in row.items()
                              if k == "size" or (k.endswith("_s") and np.isfinite(v))})
    return verdict
