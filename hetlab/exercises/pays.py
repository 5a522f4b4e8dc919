"""Checkers of notebook 08 (which device pays): the break-even size of two linear cost
models, and the time/energy Pareto front of a table."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from ._core import Case, Verdict, finish, run_cases

__all__ = ["check_break_even", "check_pareto_names", "break_even_size", "pareto_names"]


def break_even_size(home_overhead_s: float, home_slope_s: float, dev_overhead_s: float,
                    dev_slope_s: float) -> int | None:
    """Smallest size ``n >= 1`` at which the device is strictly faster than home.

    Each side costs ``overhead + slope · n`` seconds per call (a launch/wake-up/transfer
    latency and a per-item cost). None when the device is never faster.

    >>> break_even_size(1e-6, 1e-8, 1.2e-4, 1e-9)   # 1.19e-4 / 9e-9 = 13222.2
    13223
    >>> break_even_size(1e-5, 1e-9, 1e-4, 1e-8) is None
    True
    """
    gap_a = dev_overhead_s - home_overhead_s
    gap_s = home_slope_s - dev_slope_s
    if gap_a < 0:  # faster at n = 0 already: n = 1 if still so there (else never again)
        return 1 if gap_a < gap_s else None
    if gap_s <= 0:
        return None
    return max(math.floor(gap_a / gap_s) + 1, 1)


def pareto_names(rows: Sequence[tuple[str, float, float]]) -> list[str]:
    """Names of the rows no other row dominates (time and energy both minimized), in input
    order: a row is dominated by one that is at least as good in both and better in one.

    >>> pareto_names([("a", 1.0, 5.0), ("b", 2.0, 2.0), ("c", 2.0, 6.0)])
    ['a', 'b']
    """
    out = []
    for name, t, e in rows:
        if not any(t2 <= t and e2 <= e and (t2 < t or e2 < e) for _, t2, e2 in rows):
            out.append(name)
    return out


def check_break_even(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 08.1: ``fn(home_overhead_s, home_slope_s, dev_overhead_s, dev_slope_s)`` is
    the smallest size from which the device pays (None: never).

    Parameters
    ----------
    fn : callable
        ``fn(home_overhead_s, home_slope_s, dev_overhead_s, dev_slope_s) -> int or None``;
        each side costs ``overhead + slope · n`` seconds per call of size ``n``.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    specs = [
        ("home 1 µs + 10 ns/item, device 120 µs + 1 ns/item", (1e-6, 1e-8, 1.2e-4, 1e-9),
         "solve overhead_home + slope_home·n > overhead_dev + slope_dev·n for n: n > "
         "(overhead_dev − overhead_home) / (slope_home − slope_dev), then the next integer."),
        ("equal at n = 2048 exactly (home 0 s + 2**-28 s/item, device 2**-18 s + 2**-29 "
         "s/item: powers of two, exact in floating point)", (0.0, 2.0**-28, 2.0**-18, 2.0**-29),
         "at the crossing the two cost the same: the device pays only strictly after it, "
         "so the answer is 2049, not 2048."),
        ("device slower per item too (home 10 µs + 1 ns, device 100 µs + 10 ns)",
         (1e-5, 1e-9, 1e-4, 1e-8), "a device with more overhead and a steeper slope never "
         "pays: return None."),
        ("same slope, more overhead on the device", (1e-6, 1e-9, 1e-5, 1e-9),
         "equal slopes never close an overhead gap: None (and no division by zero)."),
        ("device cheaper in both (home 50 µs + 5 ns, device 5 µs + 1 ns)",
         (5e-5, 5e-9, 5e-6, 1e-9), "when the device wins at every size the break-even is the "
         "smallest size, 1."),
    ]
    cases = [Case(label, dict(zip(("home_overhead_s", "home_slope_s", "dev_overhead_s",
                                   "dev_slope_s"), args, strict=True)),
                  break_even_size(*args), nudge) for label, args, nudge in specs]
    verdict = run_cases("08.1 break_even", fn, cases, lambda got, exp: (
        got is None if exp is None else (got is not None and int(got) == exp)))
    return finish(verdict, raise_on_fail)


def check_pareto_names(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 08.2: ``fn(rows)`` names the rows on the time/energy Pareto front.

    Parameters
    ----------
    fn : callable
        ``fn(rows: list[tuple[str, float, float]]) -> list[str]``; each row is
        ``(device, time_s, energy_j)``; both figures are minimized; answer in input order.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    specs = [
        ("numpy (2 s, 12 J), numba (0.5 s, 25 J), gpu (0.1 s, 30 J)",
         [("numpy", 2.0, 12.0), ("numba", 0.5, 25.0), ("gpu", 0.1, 30.0)],
         "faster but hungrier is not worse: each of these wins on one axis."),
        ("numba is faster and cheaper than numpy",
         [("numpy", 2.0, 12.0), ("numba", 0.5, 6.0)],
         "a row is off the front when another row is at least as good in both figures."),
        ("fpga ties numba's energy but is slower",
         [("numba", 0.5, 6.0), ("fpga", 0.8, 6.0), ("gpu", 0.1, 9.0)],
         "a tie on one axis and a loss on the other is dominated: <= in both, < in one."),
        ("two identical rows", [("a", 1.0, 1.0), ("b", 1.0, 1.0)],
         "identical rows do not dominate each other (neither is better in one): keep both."),
        ("one row", [("numpy", 3.0, 3.0)], "a lone row is its own front."),
    ]
    cases = [Case(label, {"rows": list(rows)}, pareto_names(rows), nudge)
             for label, rows, nudge in specs]
    verdict = run_cases("08.2 pareto_names", fn, cases,
                        lambda got, exp: [str(g) for g in got] == exp)
    return finish(verdict, raise_on_fail)
