"""Point-cloud kernel specs: validation, generated cases, error metrics and cost models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.metrics import mismatch_fraction, relative_error
from ...core.params import Param
from ...core.spec import Cost, KernelSpec
from ...core.validation import (
    array_module,
    check_allocation,
    check_int,
    check_points,
    check_positive,
)
from ...errors import InvalidInputError
from . import reference

__all__ = ["FPS", "KNN", "BALL_QUERY", "FPS_KNN", "VOXEL_DOWNSAMPLE", "make_cloud"]

#: largest number of centres/queries a generated case uses (keeps references fast)
CASE_QUERIES = 4096
CASE_SAMPLES = 1024
#: the cloud every point-cloud kernel takes first
POINTS = Param("points", "points",
               "array-like of shape (n, 3), float32/float64 (integers to float64), finite")


def make_cloud(n: int, rng: np.random.Generator, *, kind: str = "uniform") -> np.ndarray:
    """A float32 cloud of shape (n, 3) in the unit cube: ``"uniform"`` or ``"clustered"``.

    ``"clustered"`` draws 16 Gaussian blobs (σ = 0.02) plus 10% uniform background, a
    stand-in for the uneven density of LiDAR scans.

    ``n`` is an int ≥ 0 (a cloud that would not fit this machine's memory is refused before
    it is allocated), ``rng`` a ``numpy.random.Generator``; InvalidInputError otherwise.

    >>> make_cloud(4, np.random.default_rng(0)).shape
    (4, 3)
    """
    n = check_int("make_cloud", "n", n, 0, 2**62)
    if not isinstance(rng, np.random.Generator):
        raise InvalidInputError(
            f"make_cloud: rng must be a numpy.random.Generator; got {type(rng).__name__}. "
            "Pass np.random.default_rng(seed).")
    if not isinstance(kind, str):
        raise InvalidInputError(
            f"make_cloud: kind must be 'uniform' or 'clustered'; got {kind!r}.")
    # float64 draws of the clustered cloud, its permutation and the float32 result
    check_allocation("make_cloud", 3.0 * n * (8 * 3 + 4) + 8.0 * n,
                     f"a cloud of n={n} points", "Use a smaller n.")
    if kind == "uniform":
        return rng.random((n, 3), dtype=np.float32)
    if kind == "clustered":
        n_bg = n // 10
        centres = rng.random((16, 3))
        which = rng.integers(0, 16, n - n_bg)
        blobs = centres[which] + rng.normal(0.0, 0.02, (n - n_bg, 3))
        pts = np.concatenate([blobs, rng.random((n_bg, 3))])
        return rng.permutation(pts).astype(np.float32)
    raise InvalidInputError(f"make_cloud: kind must be 'uniform' or 'clustered'; got {kind!r}.")


def _itemsize(a: Any) -> int:
    return int(a.dtype.itemsize)


def _points(kernel: str, name: str, a: Any, *, allow_empty: bool = False) -> Any:
    """:func:`check_points`, plus coordinates small enough for squared distances to be finite.

    A squared distance sums three squared differences of up to twice the largest coordinate,
    so ``|coordinate|`` must stay below ``sqrt(max / 12)`` of the dtype (~5.3e18 for float32,
    ~3.9e153 for float64); beyond that distances overflow to inf and comparisons break.
    """
    pts = check_points(kernel, name, a, allow_empty=allow_empty)
    if pts.size:
        xp = array_module(pts)
        limit = float(np.sqrt(np.finfo(pts.dtype).max / 12.0))
        biggest = float(xp.abs(pts).max())
        if biggest >= limit:
            raise InvalidInputError(
                f"{kernel}: {name} must have |coordinates| < {limit:.3g} for {pts.dtype} so "
                f"squared distances stay finite; got {biggest:.3g}. Rescale the cloud "
                f"(e.g. {name} / {name}.max())"
                + (" or pass float64 points." if pts.dtype == np.float32 else ".")
            )
    return pts


def _same_dtype(kernel: str, name: str, points: Any, other: Any) -> Any:
    """Return ``other`` contiguous in the dtype of ``points``, refusing values the cast would
    turn into inf (a float64 query of 1e300 against float32 points)."""
    xp = array_module(points)
    cast = xp.ascontiguousarray(other.astype(points.dtype, copy=False))
    if cast.dtype != other.dtype:
        _points(kernel, f"{name} (cast to the points' {points.dtype})", cast, allow_empty=True)
    return cast


# --- fps ---------------------------------------------------------------------------------


def _validate_fps(points: Any, n_samples: Any, start: Any = 0) -> dict[str, Any]:
    pts = _points("fps", "points", points)
    n = pts.shape[0]
    return {
        "points": pts,
        "n_samples": check_int("fps", "n_samples", n_samples, 1, n),
        "start": check_int("fps", "start", start, 0, n - 1),
    }


def _fps_cost(a: Mapping[str, Any]) -> Cost:
    n, s, b = a["points"].shape[0], a["n_samples"], _itemsize(a["points"])
    # naive algorithm: every step reads all points and distances and writes distances back
    return Cost(flops=9.0 * n * s, bytes=float(s) * n * 5 * b)


FPS = KernelSpec(
    name="fps",
    params=(
        POINTS,
        Param("n_samples", "int", "points to pick, 1 ≤ n_samples ≤ n", lo=1),
        Param("start", "int", "index of the first point", default=0, lo=0),
    ),
    validate=_validate_fps,
    reference=reference.fps,
    error=mismatch_fraction,
    make_case=lambda size, rng: {
        "points": make_cloud(size, rng),
        "n_samples": min(size, CASE_SAMPLES),
    },
    cost=_fps_cost,
    arrays=("points",),
    size_unit="points",
    description="farthest point sampling (exact; ties to the lowest index)",
)

# --- knn ---------------------------------------------------------------------------------


def _result_fits(kernel: str, rows: int, rows_name: str, k: int, bytes_per: int) -> int:
    """``k``, after checking that a (rows, k) result of ``bytes_per`` bytes an entry fits in
    this machine's memory (k ≤ n alone allows n² entries: 10⁵ points, k = n is 120 GB)."""
    check_allocation(kernel, float(rows) * k * bytes_per,
                     f"the result of shape ({rows_name}={rows}, k={k})",
                     f"Pass a smaller k, or split {rows_name} into batches.")
    return k


def _validate_knn(points: Any, queries: Any, k: Any) -> dict[str, Any]:
    pts = _points("knn", "points", points)
    q = _points("knn", "queries", queries, allow_empty=True)
    return {
        "points": pts,
        "queries": _same_dtype("knn", "queries", pts, q),
        "k": _result_fits("knn", q.shape[0], "queries",
                          check_int("knn", "k", k, 1, pts.shape[0]), 8 + _itemsize(pts)),
    }


def _knn_cost(a: Mapping[str, Any]) -> Cost:
    n, m, k, b = a["points"].shape[0], a["queries"].shape[0], a["k"], _itemsize(a["points"])
    return Cost(flops=8.0 * n * m, bytes=float(3 * b * (n + m) + m * k * (8 + b)))


def _knn_error(result: Any, expected: Any) -> float:
    return max(mismatch_fraction(result[0], expected[0]), relative_error(result[1], expected[1]))


def _knn_case(size: int, rng: np.random.Generator) -> dict[str, Any]:
    pts = make_cloud(size, rng)
    return {"points": pts, "queries": make_cloud(min(size, CASE_QUERIES), rng), "k": min(16, size)}


KNN = KernelSpec(
    name="knn",
    params=(
        POINTS,
        Param("queries", "points", "array-like of shape (m, 3), cast to the points' dtype",
              empty_ok=True),
        Param("k", "int", "neighbours per query, 1 ≤ k ≤ n", lo=1),
    ),
    validate=_validate_knn,
    reference=reference.knn,
    error=_knn_error,
    make_case=_knn_case,
    cost=_knn_cost,
    arrays=("points", "queries"),
    size_unit="points",
    description="k nearest neighbours (sorted by distance, ties by index)",
)

# --- ball query --------------------------------------------------------------------------


def _validate_ball_query(points: Any, centers: Any, radius: Any, k: Any) -> dict[str, Any]:
    pts = _points("ball_query", "points", points)
    c = _points("ball_query", "centers", centers, allow_empty=True)
    radius = check_positive("ball_query", "radius", radius)
    r = pts.dtype.type(radius) if radius < float(np.sqrt(np.finfo(pts.dtype).max)) else np.inf
    if not np.isfinite(r * r):
        raise InvalidInputError(
            f"ball_query: radius must be < {np.sqrt(np.finfo(pts.dtype).max):.3g} for "
            f"{pts.dtype} points (its square must be finite); got {radius:g}."
        )
    return {
        "points": pts,
        "centers": _same_dtype("ball_query", "centers", pts, c),
        "radius2": r * r,
        "k": _result_fits("ball_query", c.shape[0], "centers",
                          check_int("ball_query", "k", k, 1, pts.shape[0]), 8),
    }


def _ball_cost(a: Mapping[str, Any]) -> Cost:
    n, m, k, b = a["points"].shape[0], a["centers"].shape[0], a["k"], _itemsize(a["points"])
    return Cost(flops=8.0 * n * m, bytes=float(3 * b * (n + m) + 8 * m * k))


def _ball_case(size: int, rng: np.random.Generator) -> dict[str, Any]:
    pts = make_cloud(size, rng)
    m = min(size, CASE_QUERIES)
    # radius holding ~32 points on average in a uniform unit cube
    radius = float((32 * 3 / (4 * np.pi * size)) ** (1 / 3))
    return {"points": pts, "centers": pts[:m].copy(), "radius": radius, "k": min(32, size)}


BALL_QUERY = KernelSpec(
    name="ball_query",
    params=(
        POINTS,
        Param("centers", "points", "array-like of shape (m, 3), cast to the points' dtype",
              empty_ok=True),
        Param("radius", "float", "ball radius, in the points' units", positive=True),
        Param("k", "int", "most neighbours kept per centre, 1 ≤ k ≤ n", lo=1),
    ),
    validate=_validate_ball_query,
    reference=reference.ball_query,
    error=mismatch_fraction,
    make_case=_ball_case,
    cost=_ball_cost,
    arrays=("points", "centers"),
    size_unit="points",
    description="ball query (first k within radius, padded with the first hit; PointNet++)",
)

# --- fused fps + knn ---------------------------------------------------------------------


def _validate_fps_knn(points: Any, n_samples: Any, k: Any, start: Any = 0) -> dict[str, Any]:
    pts = _points("fps_knn", "points", points)
    n = pts.shape[0]
    s = check_int("fps_knn", "n_samples", n_samples, 1, n)
    return {
        "points": pts,
        "n_samples": s,
        "k": _result_fits("fps_knn", s, "n_samples", check_int("fps_knn", "k", k, 1, n),
                          8 + _itemsize(pts)),
        "start": check_int("fps_knn", "start", start, 0, n - 1),
    }


def _fps_knn_cost(a: Mapping[str, Any]) -> Cost:
    f = _fps_cost(a)
    n, s, k, b = a["points"].shape[0], a["n_samples"], a["k"], _itemsize(a["points"])
    return Cost(flops=f.flops + 8.0 * n * s, bytes=f.bytes + float(3 * b * n + s * k * (8 + b)))


def _fps_knn_error(result: Any, expected: Any) -> float:
    return max(mismatch_fraction(result[0], expected[0]), _knn_error(result[1:], expected[1:]))


FPS_KNN = KernelSpec(
    name="fps_knn",
    params=(
        POINTS,
        Param("n_samples", "int", "centres to pick, 1 ≤ n_samples ≤ n", lo=1),
        Param("k", "int", "neighbours per centre, 1 ≤ k ≤ n", lo=1),
        Param("start", "int", "index of the first centre", default=0, lo=0),
    ),
    validate=_validate_fps_knn,
    reference=reference.fps_knn,
    error=_fps_knn_error,
    make_case=lambda size, rng: {
        "points": make_cloud(size, rng),
        "n_samples": min(size, CASE_SAMPLES),
        "k": min(16, size),
    },
    cost=_fps_knn_cost,
    arrays=("points",),
    size_unit="points",
    description="fused FPS + kNN transition-down (PTrAcc)",
)

# --- voxel downsampling ------------------------------------------------------------------

_MAX_VOXEL_COORD = 2.0**52


def _validate_voxel(points: Any, voxel_size: Any) -> dict[str, Any]:
    pts = _points("voxel_downsample", "points", points)
    vs = check_positive("voxel_downsample", "voxel_size", voxel_size)
    xp = array_module(pts)
    span = float(xp.abs(pts).max()) / vs
    if span >= _MAX_VOXEL_COORD:
        raise InvalidInputError(
            f"voxel_downsample: voxel_size must keep voxel coordinates (|points| / voxel_size) "
            f"below 2**52; got voxel_size={voxel_size} for points with |coordinate| up to "
            f"{span * vs:g}. Increase voxel_size, or drop or rescale the far points."
        )
    return {"points": pts, "voxel_size": vs}


def _voxel_cost(a: Mapping[str, Any]) -> Cost:
    n, b = a["points"].shape[0], _itemsize(a["points"])
    return Cost(flops=9.0 * n, bytes=float(2 * 3 * b * n))


VOXEL_DOWNSAMPLE = KernelSpec(
    name="voxel_downsample",
    params=(
        POINTS,
        Param("voxel_size", "float", "edge of a voxel, in the points' units", positive=True),
    ),
    validate=_validate_voxel,
    reference=reference.voxel_downsample,
    error=relative_error,
    tolerance=1e-6,
    make_case=lambda size, rng: {"points": make_cloud(size, rng), "voxel_size": 0.05},
    cost=_voxel_cost,
    arrays=("points",),
    size_unit="points",
    description="voxel-grid downsampling (one centroid per occupied voxel)",
)
