"""Checkers of notebook 04 (point clouds): a ball query and a brute-force kNN."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..kernels.pointcloud.reference import ball_query, knn
from ._core import Case, Verdict, arrays_equal, finish, run_cases
from ._speed import with_speed

__all__ = ["check_ball_query", "check_knn"]


def _pts(rows: list[list[float]]) -> np.ndarray:
    return np.asarray(rows, dtype=np.float32)


def check_ball_query(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 04.1: ``fn(points, centers, radius, k)`` is PointNet++'s ball query.

    For each centre: the first ``k`` points, in index order, whose squared distance is
    strictly below ``radius²``; a row with fewer hits is padded with its first hit, a row
    with none is all ``-1``. Then ``hl.check``'s generated clouds, timed beside hetlab.

    Parameters
    ----------
    fn : callable
        ``fn(points: (n, 3) float32, centers: (m, 3) float32, radius: float, k: int)
        -> (m, k) int``.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    line = _pts([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]])
    backwards = _pts([[2, 0, 0], [1, 0, 0], [0, 0, 0], [0.5, 0, 0]])
    specs = [
        ("points x=0,1,2,3; centre x=0, radius 1.5, k=3", line, _pts([[0, 0, 0]]), 1.5, 3,
         "two points are inside; fill the rest of the row with the FIRST hit."),
        ("the same points; centre x=0, radius 1.0 (point x=1 exactly on the sphere), k=2",
         line, _pts([[0, 0, 0]]), 1.0, 2,
         "inside means squared distance strictly below radius²: a point on the sphere is out."),
        ("the same points; centre x=10, radius 1, k=2", line, _pts([[10, 0, 0]]), 1.0, 2,
         "no point inside: the whole row is -1."),
        ("points x=2,1,0,0.5; centre x=0, radius 3, k=2", backwards, _pts([[0, 0, 0]]), 3.0, 2,
         "keep the first k hits in INDEX order, not the k nearest."),
        ("two centres at once", line, _pts([[0, 0, 0], [3, 0, 0]]), 1.5, 2,
         "one row per centre, in the centres' order."),
    ]
    cases = [Case(label, {"points": p, "centers": c, "radius": r, "k": k},
                  ball_query(p, c, np.float32(r) * np.float32(r), k), nudge)
             for label, p, c, r, k, nudge in specs]
    verdict = run_cases("04.1 my_ball_query", fn, cases, arrays_equal)
    verdict = with_speed(verdict, fn, "ball_query", (17, 300, 3000),
                         "compare squared distances with radius * radius in the points' dtype; "
                         "np.flatnonzero(inside)[:k] gives the first hits in index order.")
    return finish(verdict, raise_on_fail)


def check_knn(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 04.2: ``fn(points, queries, k)`` returns each query's ``k`` nearest points.

    ``(indices (m, k) int, squared distances (m, k))``, nearest first, ties to the lower point
    index. Then ``hl.check``'s generated clouds, timed beside hetlab.

    Parameters
    ----------
    fn : callable
        ``fn(points: (n, 3) float32, queries: (m, 3) float32, k: int) -> (idx, d2)``.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    line = _pts([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]])
    specs = [
        ("points x=0,1,2,3; query x=2.9, k=2", line, _pts([[2.9, 0, 0]]), 2,
         "return (indices, squared distances), nearest first."),
        ("the same points; query x=1.5 (x=1 and x=2 tie), k=3", line, _pts([[1.5, 0, 0]]), 3,
         "equal distances go to the lower index: sort with a stable sort (kind='stable')."),
        ("the same points; queries x=0 and x=3, k=4 (k = n)", line, _pts([[0, 0, 0], [3, 0, 0]]),
         4, "one row per query; with k = n every point appears once."),
    ]
    cases = [Case(label, {"points": p, "queries": q, "k": k}, knn(p, q, k), nudge)
             for label, p, q, k, nudge in specs]
    verdict = run_cases("04.2 my_knn", fn, cases,
                        lambda got, exp: arrays_equal(got[0], exp[0])
                        and np.allclose(got[1], exp[1], rtol=1e-6))
    verdict = with_speed(verdict, fn, "knn", (17, 300, 3000),
                         "squared distances in the points' dtype, then the k smallest per row "
                         "(np.argsort(d, axis=1, kind='stable')[:, :k]).")
    return finish(verdict, raise_on_fail)
