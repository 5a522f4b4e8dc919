"""``hl.check(my_fn, hl.fps)``: test a student's implementation against the reference.

The function is called like the public kernel (same positional arguments, host NumPy arrays)
on generated cases of growing size; each result is compared with the kernel's own checker, and
its median time is shown beside hetlab's own backends on the same cases.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._sweep_args import check_devices, check_int, check_kernel, check_sizes
from .core.registry import get_backend, get_impl
from .errors import InvalidInputError

__all__ = ["check", "CheckReport", "median_time"]


@dataclass
class CheckReport:
    """Outcome of :func:`check`: one row per case, plus an overall verdict."""

    kernel: str
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when every case matched the reference."""
        return bool(self.rows) and all(r["passed"] for r in self.rows)

    def table(self) -> Any:
        """The rows as a pandas DataFrame (times in seconds)."""
        import pandas as pd

        return pd.DataFrame(self.rows).set_index("size")

    def __str__(self) -> str:
        n_ok = sum(r["passed"] for r in self.rows)
        verdict = "PASS" if self.passed else "FAIL"
        lines = [f"{verdict}: {n_ok}/{len(self.rows)} cases of {self.kernel} match the reference"]
        for r in self.rows:
            mark = "ok " if r["passed"] else "BAD"
            times = ", ".join(f"{k[:-2]} {v * 1e3:.3g} ms" for k, v in r.items()
                              if k.endswith("_s") and np.isfinite(v))
            lines.append(f"  {mark} size {r['size']:>7}: {r['detail']}; {times}")
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    """(last result, median seconds) of ``repeats`` calls of ``fn`` (wall clock, no warm-up:
    call it once first if its first call compiles).

    Parameters
    ----------
    fn : callable
        Called with no arguments.
    repeats : int
        Number of timed calls, >= 1.
    """
    if not callable(fn):
        raise InvalidInputError(f"median_time: fn must be callable; got {type(fn).__name__}.")
    repeats = check_int("median_time", "repeats", repeats, minimum=1)
    out, times = None, []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, float(np.median(times))


def check(fn: Callable[..., Any], kernel: Any, *, sizes: Sequence[int] = (1, 2, 17, 300, 3000),
          against: Sequence[str] = ("numpy", "numba"), repeats: int = 3,
          seed: int = 0) -> CheckReport:
    """Check ``fn`` against ``kernel``'s reference on generated cases; time it beside hetlab.

    Parameters
    ----------
    fn : callable
        Called with the case's arguments as keywords, e.g. ``fn(points=..., n_samples=...)``.
    kernel : str or hetlab kernel function (``hl.fps``)
    sizes : sequence of int
        Case sizes in the kernel's unit (points for ``fps``); small ones catch edge cases.
    against : sequence of str
        hetlab backends timed on the same cases (unavailable ones are left out).
    repeats : int
        Timed calls per case (>= 1); the median is reported.
    seed : int
        Non-negative seed of the generated cases.

    Returns
    -------
    CheckReport
        ``report.passed``; ``print(report)``; ``report.table()``.
    """
    if not callable(fn):
        raise InvalidInputError(f"check: fn must be callable; got {type(fn).__name__}.")
    spec = check_kernel("check", kernel)
    sizes = check_sizes("check", sizes)
    empty = against is None or (isinstance(against, list | tuple) and not against)
    against = [] if empty else check_devices("check", against, name="against")
    repeats = check_int("check", "repeats", repeats, minimum=1)
    seed = check_int("check", "seed", seed, minimum=0)
    report = CheckReport(kernel=spec.name)
    backends = [b for b in against if get_backend(b).is_available()]
    for size in sizes:
        row: dict[str, Any] = {"size": size}
        try:
            case = spec.make_case(size, np.random.default_rng([seed, size]))
            validated = spec.validate(**case)
            expected = spec.reference(**validated)
        except Exception as exc:  # not the student's bug: say so, keep the other sizes
            row["passed"], row["yours_s"] = False, float("nan")
            row["detail"] = f"case not generated: {type(exc).__name__}: {exc}"
            report.rows.append(row)
            continue
        try:
            got, row["yours_s"] = median_time(lambda c=case: fn(**c), repeats)
            err, ok = spec.verified(_to_host(got), expected)
            row["passed"], row["detail"] = ok, f"error {err:.3g}" if not ok else "equal"
        except Exception as exc:  # the student's bug is the report, not a crash
            row["passed"], row["yours_s"] = False, float("nan")
            row["detail"] = f"raised {type(exc).__name__}: {exc}"
        for b in backends:
            try:
                impl = get_impl(spec.name, b)
                impl(**validated)  # warm-up (JIT)
                row[f"{b}_s"] = median_time(lambda i=impl, v=validated: i(**v), repeats)[1]
            except Exception:  # a failing backend costs its column, not the report
                row[f"{b}_s"] = float("nan")
        report.rows.append(row)
    return report


def _to_host(result: Any) -> Any:
    if isinstance(result, tuple):
        return tuple(_to_host(r) for r in result)
    return np.asarray(result)
