"""The plan of a function the engine leaves alone: it runs as written, and says why.

``search`` returns such a plan instead of raising when the function cannot be compiled as a
whole (``report.refusals``: ``*args``, keyword-only parameters, a bound method, a generator,
a ``try`` statement) or when its serial ``njit`` does not compile, fails, or computes
something else than Python does (integer widths and overflow, object arrays, strings,
dictionaries, calls numba lacks). The reason is ``plan.fallback``, the first line of
``plan.notes`` and of ``plan.summary()``.
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from typing import Any

from ..analysis.report import Report
from ..runtime.measure import Measurement, measure
from ..targets.base import Variant
from .ga import GAResult
from .plan import Plan

__all__ = ["as_written", "as_written_plan", "why_serial_failed", "codegen_failure"]


def as_written(original: Callable[..., Any]) -> Callable[..., Any]:
    """A callable running ``original`` itself (keywords and defaults passed through)."""

    @functools.wraps(original)
    def call(*args: Any, **kwargs: Any) -> Any:
        return original(*args, **kwargs)

    return call


def codegen_failure(exc: BaseException) -> str:
    """One line naming an exception raised while generating or building a variant."""
    text = traceback.format_exception_only(type(exc), exc)[-1].strip().splitlines()[0]
    return text[:300]


def why_serial_failed(name: str, m: Measurement) -> str:
    """The reason a function runs as written, from its serial ``njit``'s measurement."""
    if m.status == "wrong":
        return (f"the serial njit of {name} computes another result than Python (error "
                f"{m.error:.3g}): numba's integer widths, overflow or semantics differ here")
    status = m.status.removeprefix("failed: ").splitlines()[0][:300]
    return f"the serial njit of {name} does not compile or run ({status})"


def as_written_plan(report: Report, args: tuple, expected: tuple, reason: str, *,
                    repeats: int, warmup: int, target: str = "numba",
                    timed: bool = True) -> Plan:
    """A :class:`Plan` offloading nothing whose callable is the original function.

    Parameters
    ----------
    report : Report
        The function's analysis.
    args : tuple
        The search's arguments (the original is timed and verified on copies of them).
    expected : tuple
        The original's outputs on ``args`` (:func:`~hetlab.offload.runtime.measure.outputs_of`).
    reason : str
        Why the engine leaves the function alone (``plan.fallback``).
    repeats, warmup : int
        Timed and untimed calls of the original.
    target : str
        The target the search was asked for (recorded as ``plan.target``).
    timed : bool
        Time the original (False: an outlined loop's search, whose fallback plan is only
        read for its reason; no figures).

    Returns
    -------
    Plan
        ``plan.loops == []``, ``plan.fallback == reason``, speedup 1 (the original against
        itself), ``plan.compile()`` the original function.
    """
    original = report.source.call
    if not timed:  # a loop cut out of a function, which stays in it as written: no figures
        m = Measurement(status="not timed", verified=False)
    else:
        m = measure(original, args, expected, repeats=repeats, warmup=warmup)
    if timed and not m.times_s:  # e.g. a function whose result differs from call to call
        m = measure(original, args, None, repeats=repeats, warmup=warmup)
        m.status, m.verified = "ok (its own results differ from call to call)", False
    source = (f"# hetlab.offload: {report.name} runs as written: {reason}\n"
              f"{report.source.text}")
    variant = Variant(report.name, "python", (), source, {}, _compiled=as_written(original))
    ga = GAResult(best=(), fitness=1.0, evaluations=0)
    plan = Plan(report, target, [], (), {(): m}, m.time_s, float("nan"), ga, None,
                variants={(): variant}, fallback=reason)
    plan.notes = [f"runs as written: {reason}"]
    return plan
