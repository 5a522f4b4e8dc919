"""Checkers of notebook 00 (the tour): your own FPS, and reading a comparison Dataset."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import xarray as xr

from ..kernels.pointcloud.reference import fps as _fps
from ._core import Case, Verdict, arrays_equal, finish, run_cases
from ._speed import with_speed

__all__ = ["check_fps", "check_fastest_verified", "comparison"]


def _fps_case(label: str, pts: list[list[float]], n: int, start: int, nudge: str) -> Case:
    points = np.asarray(pts, dtype=np.float32)
    return Case(label, {"points": points, "n_samples": n, "start": start},
                _fps(points, n, start), nudge)


def check_fps(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 00.1: ``fn(points, n_samples, start=0)`` is farthest point sampling.

    Hand-made clouds first (ties, a start other than 0, duplicate points), then ``hl.check``'s
    generated clouds, timed beside hetlab's numpy and numba backends.

    Parameters
    ----------
    fn : callable
        ``fn(points: (n, 3) float32, n_samples: int, start: int = 0) -> (n_samples,) ints``.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    line = [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]]
    cases = [
        _fps_case("one point, n_samples=1", [[0.5, 0.5, 0.5]], 1, 0,
                  "the first pick is `start` itself."),
        _fps_case("4 points on a line x=0,1,2,3, n_samples=3", line, 3, 0,
                  "after picking x=0 and x=3, the points x=1 and x=2 are equally far from the "
                  "picked ones: ties go to the lowest index (np.argmax returns the first "
                  "maximum)."),
        _fps_case("the same line, start=2, n_samples=2", line, 2, 2,
                  "begin at `start`, not at point 0."),
        _fps_case("two identical points and one more, n_samples=3",
                  [[0, 0, 0], [0, 0, 0], [1, 0, 0]], 3, 0,
                  "a duplicate of a picked point is at distance 0 — exactly like the picked "
                  "point itself. Never pick a point twice: keep picked points out of the argmax."),
    ]
    verdict = run_cases("00.1 my_fps", fn, cases, arrays_equal)
    verdict = with_speed(verdict, fn, "fps", (17, 300, 3000),
                         "keep, for every point, its squared distance to the nearest pick so far "
                         "(np.minimum), and pick the argmax of that.")
    return finish(verdict, raise_on_fail)


def comparison(times: dict[str, list[float]], verified: dict[str, bool], *,
               size: int = 1000) -> xr.Dataset:
    """A minimal comparison Dataset at one size (the layout ``hl.compare`` returns).

    Parameters
    ----------
    times : dict
        Device name → its timed repeats in seconds (NaN for a device that did not run).
    verified : dict
        Device name → whether its result matched the reference.
    size : int
        The one size of the Dataset.

    Examples
    --------
    >>> ds = comparison({"numpy": [2.0, 2.1], "numba": [0.5, 0.4]}, {"numpy": True, "numba": True})
    >>> dict(ds.sizes)
    {'device': 2, 'size': 1, 'repeat': 2}
    """
    devices = list(times)
    t = np.array([times[d] for d in devices], dtype=float)[:, None, :]
    ok = np.array([[verified[d]] for d in devices])
    return xr.Dataset({"time_s": (("device", "size", "repeat"), t),
                       "verified": (("device", "size"), ok)},
                      coords={"device": devices, "size": [size], "repeat": range(t.shape[2])})


def _fastest(ds: xr.Dataset, size: int) -> str | None:
    at = ds.sel(size=size)
    med = at["time_s"].median("repeat").where(at["verified"])
    if not bool(med.notnull().any()):
        return None
    return str(med["device"].values[int(np.argmin(med.fillna(np.inf).values))])


def check_fastest_verified(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 00.2: ``fn(ds, size)`` names the fastest device whose result was verified.

    Parameters
    ----------
    fn : callable
        ``fn(ds: xarray.Dataset from hl.compare, size: int) -> str or None``; the median over
        ``repeat`` of ``time_s`` decides; None when no device is verified at that size.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    two = comparison({"numpy": [2.0, 2.1, 2.0], "numba": [0.5, 0.4, 0.6]},
                     {"numpy": True, "numba": True})
    wrong = comparison({"numpy": [2.0, 2.1, 2.0], "numba": [0.5, 0.4, 0.6],
                        "fpga": [0.1, 0.1, 0.1]}, {"numpy": True, "numba": True, "fpga": False})
    stray = comparison({"numpy": [1.0, 1.0, 90.0], "numba": [2.0, 2.0, 2.0]},
                       {"numpy": True, "numba": True})
    absent = comparison({"numpy": [3.0, 3.0, 3.0], "cupy": [np.nan] * 3},
                        {"numpy": True, "cupy": False})
    none = comparison({"numpy": [1.0, 1.0, 1.0]}, {"numpy": False})
    two_sizes = xr.concat([two, comparison({"numpy": [2.0, 2.0, 2.0], "numba": [3.0, 3.0, 3.0]},
                                           {"numpy": True, "numba": True}, size=10)], "size")
    cases = [
        ("numpy 2.0 s, numba 0.5 s, both verified", two, 1000,
         "take the median of time_s over the 'repeat' dimension and the device with the least."),
        ("fpga fastest but NOT verified", wrong, 1000,
         "a device whose result was wrong (verified is False) wins nothing, however fast."),
        ("numpy repeats 1, 1, 90 s; numba 2, 2, 2 s", stray, 1000,
         "use the median over repeats, not the mean: one stray slow call must not decide."),
        ("cupy absent (time NaN, not verified)", absent, 1000,
         "devices that did not run have NaN times and verified False: skip them."),
        ("no device verified", none, 1000, "return None when nothing was verified."),
        ("two sizes: numba wins at 1000, numpy at 10", two_sizes, 10,
         "select the size you were asked about: ds.sel(size=size)."),
    ]
    verdict = run_cases("00.2 fastest_verified", fn,
                        [Case(label, {"ds": ds, "size": s}, _fastest(ds, s), nudge)
                         for label, ds, s, nudge in cases],
                        lambda got, exp: (got is None and exp is None) or str(got) == exp)
    return finish(verdict, raise_on_fail)
