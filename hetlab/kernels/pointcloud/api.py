"""Public point-cloud kernels: ``hl.fps``, ``hl.knn``, ``hl.ball_query``, ``hl.fps_knn``,
``hl.voxel_downsample``.

Each validates its arguments once, dispatches to the requested backend and returns arrays of
the caller's type (see :mod:`hetlab.core.dispatch`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.base import Backend
from ...core.dispatch import run
from ...core.registry import register_impl, register_kernel
from .spec import BALL_QUERY, FPS, FPS_KNN, KNN, VOXEL_DOWNSAMPLE

__all__ = ["fps", "knn", "ball_query", "fps_knn", "voxel_downsample"]

Device = str | Backend | None

# registration: the family's one place (specs, then implementations imported on first use)
for _spec in (FPS, KNN, BALL_QUERY, FPS_KNN, VOXEL_DOWNSAMPLE):
    register_kernel(_spec)
    for _backend in ("numba", "cupy"):
        register_impl(_spec.name, _backend, f"hetlab.kernels.pointcloud.{_backend}:{_spec.name}")
register_impl("fps", "fpga", "hetlab.kernels.pointcloud.fpga:fps")  # the fps overlay


def fps(
    points: Any,
    n_samples: int,
    *,
    start: int = 0,
    device: Device = None,
    keep_on_device: bool = False,
) -> np.ndarray:
    """Farthest point sampling.

    Picks ``n_samples`` points one at a time, each the point farthest (squared Euclidean
    distance) from those already picked; ties go to the lowest index and no point is picked
    twice. Exact on every backend: all return the reference's indices.

    Parameters
    ----------
    points : array-like of shape (n, 3)
        Coordinates (any length unit); float32/float64 kept, integers converted to float64.
    n_samples : int
        How many points to pick, 1 ≤ n_samples ≤ n.
    start : int, default 0
        Index of the first pick.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Where to run; default: where ``points`` lives (the host → ``"numpy"``).
    keep_on_device : bool, default False
        Return device arrays instead of copying results back to the host.

    Returns
    -------
    ndarray of shape (n_samples,), int64
        Indices into ``points`` in pick order; the first is ``start``.

    Raises
    ------
    InvalidInputError
        Bad shape, dtype, NaN/inf, empty cloud, n_samples or start out of range.
    BackendUnavailable
        ``device`` cannot run here (the message says why).

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> pts = np.array([[0, 0, 0], [1, 0, 0], [0.1, 0, 0], [0, 2, 0]], dtype=np.float32)
    >>> hl.fps(pts, 3)
    array([0, 3, 1])
    """
    return run(FPS, device, keep_on_device, points=points, n_samples=n_samples, start=start)


def knn(
    points: Any,
    queries: Any,
    k: int,
    *,
    device: Device = None,
    keep_on_device: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """k nearest neighbours of each query among ``points``.

    Parameters
    ----------
    points : array-like of shape (n, 3)
        The cloud searched; float32/float64 (integers converted to float64).
    queries : array-like of shape (m, 3)
        Query coordinates, cast to the dtype of ``points``; m may be 0.
    k : int
        Neighbours per query, 1 ≤ k ≤ n.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Where to run; default: where ``points`` lives (the host → ``"numpy"``).
    keep_on_device : bool, default False
        Return device arrays instead of copying results back to the host.

    Returns
    -------
    indices : ndarray of shape (m, k), int64
        Neighbour indices sorted by ascending distance, ties by ascending index.
    sq_dists : ndarray of shape (m, k), dtype of ``points``
        Squared distances (length unit²), in the same order.

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> pts = np.array([[0, 0, 0], [1, 0, 0], [3, 0, 0]], dtype=np.float32)
    >>> idx, d2 = hl.knn(pts, pts[:1], 2)
    >>> idx, d2
    (array([[0, 1]]), array([[0., 1.]], dtype=float32))
    """
    return run(KNN, device, keep_on_device, points=points, queries=queries, k=k)


def ball_query(
    points: Any,
    centers: Any,
    radius: float,
    k: int,
    *,
    device: Device = None,
    keep_on_device: bool = False,
) -> np.ndarray:
    """Up to ``k`` points within ``radius`` of each center (PointNet++ grouping).

    A point is inside when its squared distance is strictly below ``radius**2`` (computed in
    the points' dtype). Hits are taken in index order; a row with fewer than ``k`` hits is
    padded with its first hit, a row with none is filled with -1.

    Parameters
    ----------
    points : array-like of shape (n, 3)
    centers : array-like of shape (m, 3)
        Cast to the dtype of ``points``.
    radius : float
        Ball radius (> 0), same length unit as the points.
    k : int
        Hits per center, 1 ≤ k ≤ n.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Where to run; default: where ``points`` lives (the host → ``"numpy"``).
    keep_on_device : bool, default False
        Return device arrays instead of copying results back to the host.

    Returns
    -------
    ndarray of shape (m, k), int64

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> pts = np.array([[0, 0, 0], [5, 0, 0], [0.5, 0, 0]], dtype=np.float32)
    >>> hl.ball_query(pts, pts[:2], radius=1.0, k=3)
    array([[0, 2, 0],
           [1, 1, 1]])
    """
    return run(
        BALL_QUERY, device, keep_on_device, points=points, centers=centers, radius=radius, k=k
    )


def fps_knn(
    points: Any,
    n_samples: int,
    k: int,
    *,
    start: int = 0,
    device: Device = None,
    keep_on_device: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fused transition-down (PTrAcc): FPS centres and the k nearest neighbours of each.

    Equal to ``c = fps(points, n_samples, start=start); knn(points, points[c], k)``, computed
    in one pass where the backend supports fusion.

    Parameters
    ----------
    points : array-like of shape (n, 3)
    n_samples : int
        Centres to pick, 1 ≤ n_samples ≤ n.
    k : int
        Neighbours per centre, 1 ≤ k ≤ n.
    start : int, default 0
        Index of the first centre.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Where to run; default: where ``points`` lives (the host → ``"numpy"``).
    keep_on_device : bool, default False
        Return device arrays instead of copying results back to the host.

    Returns
    -------
    centres : ndarray of shape (n_samples,), int64
    indices : ndarray of shape (n_samples, k), int64
    sq_dists : ndarray of shape (n_samples, k), dtype of ``points``
    """
    return run(
        FPS_KNN, device, keep_on_device, points=points, n_samples=n_samples, k=k, start=start
    )


def voxel_downsample(
    points: Any,
    voxel_size: float,
    *,
    device: Device = None,
    keep_on_device: bool = False,
) -> np.ndarray:
    """Voxel-grid downsampling: one centroid per occupied voxel.

    Voxel of a point: ``floor(p / voxel_size)`` per axis (in float64). Output voxels are
    ordered by their integer coordinates (x, then y, then z); centroids are float64 means
    rounded to the points' dtype.

    Parameters
    ----------
    points : array-like of shape (n, 3)
    voxel_size : float
        Edge of a cubic voxel (> 0), same unit as the points.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Where to run; default: where ``points`` lives (the host → ``"numpy"``).
    keep_on_device : bool, default False
        Return device arrays instead of copying results back to the host.

    Returns
    -------
    ndarray of shape (v, 3), dtype of ``points``

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> pts = np.array([[0.1, 0, 0], [0.3, 0, 0], [1.5, 0, 0]])
    >>> hl.voxel_downsample(pts, 1.0)
    array([[0.2, 0. , 0. ],
           [1.5, 0. , 0. ]])
    """
    return run(VOXEL_DOWNSAMPLE, device, keep_on_device, points=points, voxel_size=voxel_size)


for _fn, _spec in (
    (fps, FPS), (knn, KNN), (ball_query, BALL_QUERY), (fps_knn, FPS_KNN),
    (voxel_downsample, VOXEL_DOWNSAMPLE),
):
    _fn.spec = _spec  # type: ignore[attr-defined]
