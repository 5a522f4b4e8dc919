"""Reductions the compiled serial variant shows are not on numbers.

``analyze`` cannot know the types of parameters: ``acc += x`` is a ``+`` reduction whether
``acc`` is a float or a str. numba's type inference of the serial ``njit`` (compiled by
``search`` anyway) does know them: a reduction whose accumulator numba types as anything else
than a number or a bool (a str, a list, a tuple) cannot run under ``prange`` (numba has no
parallel reduction for it, and a concatenation is not commutative), so ``search`` turns that
loop sequential, with the reason, before any candidate is built.
"""

from __future__ import annotations

from typing import Any

from ..analysis.report import SEQUENTIAL, Report

__all__ = ["non_numeric_reductions", "keep_numeric_reductions"]


def non_numeric_reductions(report: Report, dispatcher: Any) -> dict[str, str]:
    """Loop id → reason, for each reduction whose accumulator numba types as a non-number.

    Parameters
    ----------
    report : Report
        The function's analysis.
    dispatcher : numba dispatcher
        The serial ``njit`` of the function, called at least once (its type annotations).

    Returns
    -------
    dict of str to str
        Empty when every reduction is on numbers (or numba's types cannot be read).
    """
    from numba.core import types

    overloads = getattr(dispatcher, "overloads", {}) or {}
    typemaps = [getattr(getattr(cr, "type_annotation", None), "typemap", None)
                for cr in overloads.values()]
    typemaps = [t for t in typemaps if t]
    out: dict[str, str] = {}
    for lp in report.loops:
        for var in lp.reductions:
            seen = {str(t) for tm in typemaps for k, t in tm.items()
                    if (k == var or k.startswith(var + "."))
                    and not isinstance(t, (types.Number, types.Boolean))}
            if seen:
                out[lp.id] = (f"scalar {var} is typed {', '.join(sorted(seen))} by numba, not a "
                              f"number: its {lp.reductions[var]} updates are not a parallel "
                              "reduction")
    return out


def keep_numeric_reductions(report: Report, dispatcher: Any) -> list[str]:
    """Make the loops of :func:`non_numeric_reductions` sequential in ``report`` (the reason
    their only one); returns the notes saying so."""
    bad = non_numeric_reductions(report, dispatcher)
    for key, why in bad.items():
        lp = report.loop(key)
        lp.verdict, lp.reasons, lp.reductions = SEQUENTIAL, [why], {}
    return [f"{key}: kept serial ({why})" for key, why in bad.items()]
