"""What every exercise checker shares: run the learner's function on cases, stop at the first
wrong one, and say which input, what was expected, what came, and what to look at next.

A checker returns a :class:`Verdict`. With ``raise_on_fail=True`` (the default) a failing
verdict raises :class:`hetlab.VerificationError` carrying the same hint, so a script or a
test stops; a notebook cell passes ``raise_on_fail=False`` and shows the verdict instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InvalidInputError, VerificationError

__all__ = ["Case", "Verdict", "run_cases", "attempt", "finish", "brief", "arrays_equal",
           "require_callable"]

#: what a stub raises; a checker meeting it says "not written yet" instead of a traceback
STUB_MESSAGE = "your code here"


@dataclass(frozen=True)
class Case:
    """One input of an exercise.

    Parameters
    ----------
    label : str
        The input described in words ("3 points on a line, n_samples=2").
    args : dict
        Keyword arguments passed to the learner's function.
    expected : Any
        The right answer (from hetlab's own implementation or stated by the exercise).
    nudge : str
        What to look at when this case fails.
    """

    label: str
    args: dict[str, Any]
    expected: Any
    nudge: str


@dataclass
class Verdict:
    """Outcome of an exercise checker.

    ``passed``; ``hint`` (empty when passed); ``speed`` (rows of the learner's and hetlab's
    median times in seconds, when speed is the point); ``print(verdict)`` shows all of it.
    """

    exercise: str
    n_cases: int
    n_passed: int = 0
    hint: str = ""
    speed: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when every case gave the expected answer."""
        return self.n_cases > 0 and self.n_passed == self.n_cases and not self.hint

    def __str__(self) -> str:
        head = "PASS" if self.passed else "NOT YET"
        lines = [f"{head} · {self.exercise}: {self.n_passed}/{self.n_cases} cases right"]
        if self.hint:
            lines.append("HINT " + self.hint)
        lines.extend(self.notes)
        if self.speed:
            lines.append("speed (median of repeated calls, this machine, this run):")
            for row in self.speed:
                times = ", ".join(f"{k[:-2]} {v * 1e3:.3g} ms" for k, v in row.items()
                                  if k.endswith("_s") and np.isfinite(v))
                lines.append(f"  size {row['size']:>7}: {times}")
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


def brief(value: Any, limit: int = 8) -> str:
    """A short, printable form of an answer: arrays cut to ``limit`` entries, with shape."""
    if isinstance(value, np.ndarray):
        flat = value.reshape(-1)
        body = np.array2string(flat[:limit], separator=", ", threshold=limit)
        more = f" … ({value.size} values)" if value.size > limit else ""
        return f"{value.dtype} array of shape {value.shape}: {body}{more}"
    if isinstance(value, tuple):
        return "(" + ", ".join(brief(v, limit) for v in value) + ")"
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def run_cases(name: str, fn: Callable[..., Any], cases: Iterable[Case],
              same: Callable[[Any, Any], bool]) -> Verdict:
    """Call ``fn(**case.args)`` on each case in order; stop at the first wrong answer.

    Parameters
    ----------
    name : str
        The exercise, as shown in the verdict.
    fn : callable
        The learner's function.
    cases : iterable of Case
    same : callable
        ``same(got, expected) -> bool``.

    Returns
    -------
    Verdict
        ``hint`` names the first wrong case: its input, the expected and the returned answer,
        and the case's nudge.

    Examples
    --------
    >>> cases = [Case("x=2", {"x": 2}, 4, "square it")]
    >>> print(run_cases("square", lambda x: x + 2, cases, lambda a, b: a == b))
    PASS · square: 1/1 cases right
    >>> v = run_cases("square", lambda x: x * 3, cases, lambda a, b: a == b)
    >>> v.passed, "expected 4, got 6" in v.hint
    (False, True)
    """
    require_callable(name, fn)
    cases = list(cases)
    verdict = Verdict(name, len(cases))
    for i, case in enumerate(cases, 1):
        where = f"(case {i} of {len(cases)}: {case.label})"
        got, verdict.hint = attempt(fn, case, where)
        if verdict.hint:
            return verdict
        try:
            ok = bool(same(got, case.expected))
        except Exception:  # a wrong type or shape is a wrong answer
            ok = False
        if not ok:
            verdict.hint = (f"{where}: expected {brief(case.expected)}, got {brief(got)}. "
                            f"Look at: {case.nudge}")
            return verdict
        verdict.n_passed += 1
    return verdict


def require_callable(name: str, fn: Any) -> None:
    """Refuse a checker argument that is not a function (a common slip: ``check(my_fn())``)."""
    if not callable(fn):
        raise InvalidInputError(f"{name}: fn must be a function; got {type(fn).__name__}. "
                                "Pass the function itself, without calling it: check(my_fn).")


def attempt(fn: Callable[..., Any], case: Case, where: str) -> tuple[Any, str]:
    """``(fn(**case.args), "")``, or ``(None, hint)`` when it raised: a stub's
    NotImplementedError says "not written yet", any other error is named with the nudge."""
    try:
        return fn(**case.args), ""
    except NotImplementedError as exc:
        return None, (f"{where}: your function is still the stub (it raised "
                      f"NotImplementedError: {exc}). Replace that line with your code. "
                      f"Start here: {case.nudge}")
    except Exception as exc:  # the learner's bug is the hint, not a crash
        return None, (f"{where}: your function raised {type(exc).__name__}: {exc}. "
                      f"Look at: {case.nudge}")


def finish(verdict: Verdict, raise_on_fail: bool) -> Verdict:
    """Return ``verdict``; raise :class:`hetlab.VerificationError` with its hint when it failed
    and ``raise_on_fail`` is true."""
    if raise_on_fail and not verdict.passed:
        raise VerificationError(str(verdict))
    return verdict


def arrays_equal(got: Any, expected: Any) -> bool:
    """Same shape and values (any integer or float dtype); tuples compared item by item."""
    if isinstance(expected, tuple):
        return (isinstance(got, tuple | list) and len(got) == len(expected)
                and all(arrays_equal(g, e) for g, e in zip(got, expected, strict=True)))
    g = np.asarray(got)
    return g.shape == np.shape(expected) and bool(np.array_equal(g, expected))
