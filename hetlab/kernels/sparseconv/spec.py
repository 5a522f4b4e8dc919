"""Sparse 3-D convolution spec: validation, voxelized cases, error metric, cost model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.metrics import relative_error
from ...core.params import Param
from ...core.spec import Cost, KernelSpec
from ...core.validation import (
    as_array,
    as_float_array,
    cast_finite,
    check_axes_nonempty,
    check_int,
    check_points,
)
from ...errors import InvalidInputError
from . import reference

__all__ = ["SPARSE_CONV3D", "voxelize", "DATAFLOW_CHOICES"]

DATAFLOW_CHOICES = ("auto", "gather_scatter", "fetch_on_demand")
_LIMIT = 1 << 19  # kernel_map.COORD_LIMIT, kept here so validation does not import numba


def voxelize(points: Any, voxel_size: float) -> np.ndarray:
    """Distinct voxels ``floor(p / voxel_size)`` of a cloud (the point-cloud family's rule),
    int32 of shape (v, 3), sorted by (x, y, z)."""
    pts = check_points("voxelize", "points", points)
    return np.unique(np.floor(np.asarray(pts, np.float64) / voxel_size).astype(np.int32), axis=0)


def _validate(voxels: Any, features: Any, weights: Any, kernel_size: Any = 3, stride: Any = 1,
              dataflow: Any = "auto") -> dict[str, Any]:
    k = "sparse_conv3d"
    v = as_array(k, "voxels", voxels)
    if v.ndim != 2 or v.shape[1] != 3 or (v.size and v.dtype.kind not in "iu"):
        raise InvalidInputError(
            f"{k}: voxels must be integers of shape (n, 3); got {v.dtype} {tuple(v.shape)}."
        )
    # the range is checked on the caller's values, before the cast to int32 could wrap them
    if v.size and (int(v.min()) < -_LIMIT or int(v.max()) >= _LIMIT):
        raise InvalidInputError(
            f"{k}: voxels must lie in [-{_LIMIT}, {_LIMIT}); got {int(v.min())} … "
            f"{int(v.max())}."
        )
    v = np.ascontiguousarray(v.astype(np.int32))
    if v.shape[0] > 1:
        uniq = np.unique(v, axis=0)
        if uniq.shape[0] != v.shape[0]:
            raise InvalidInputError(
                f"{k}: voxels must be distinct; got {v.shape[0] - uniq.shape[0]} repeated. "
                "Merge them first (e.g. numpy.unique(voxels, axis=0) and sum their features)."
            )
    ks = check_int(k, "kernel_size", kernel_size, 1, 7)
    s = check_int(k, "stride", stride, 1, 8)
    f = as_float_array(k, "features", features)
    if f.ndim != 2 or f.shape[0] != v.shape[0]:
        raise InvalidInputError(
            f"{k}: features must have shape (n_voxels={v.shape[0]}, C_in); got "
            f"{tuple(f.shape)}."
        )
    check_axes_nonempty(k, "features", f, {1: "input channel (C_in)"})
    w = as_float_array(k, "weights", weights)
    if w.ndim != 3 or w.shape[0] != ks**3 or w.shape[1] != f.shape[1]:
        raise InvalidInputError(
            f"{k}: weights must have shape (kernel_size**3={ks**3}, C_in={f.shape[1]}, C_out);"
            f" got {tuple(w.shape)}."
        )
    check_axes_nonempty(k, "weights", w, {2: "output channel (C_out)"})
    f = cast_finite(k, "features", f, f.dtype)
    # weights are cast to the features' dtype: finite in that dtype (1e300 → float32 is inf)
    w = cast_finite(k, "weights", w, f.dtype)
    if not isinstance(dataflow, str) or dataflow not in DATAFLOW_CHOICES:
        raise InvalidInputError(f"{k}: dataflow must be one of {DATAFLOW_CHOICES}; got "
                                f"{dataflow!r}.")
    return {"voxels": v, "features": np.ascontiguousarray(f),
            "weights": np.ascontiguousarray(w), "kernel_size": ks,
            "stride": s, "dataflow": dataflow}


def _error(result: Any, expected: Any) -> float:
    (rv, rf), (ev, ef) = result, expected
    if rv.shape != ev.shape or not np.array_equal(rv, ev) or rf.shape != ef.shape:
        return float("inf")
    return relative_error(rf, ef)


def _cost(a: Mapping[str, Any]) -> Cost:
    n, (k3, c_in, c_out) = a["voxels"].shape[0], a["weights"].shape
    b = a["features"].dtype.itemsize
    # upper bound of work: every output meets all K³ offsets; bytes: inputs once, outputs once
    return Cost(flops=2.0 * n * k3 * c_in * c_out,
                bytes=float(n * (12 + b * (c_in + c_out)) + b * k3 * c_in * c_out))


def _case(size: int, rng: np.random.Generator) -> dict[str, Any]:
    from ..pointcloud.spec import make_cloud

    vox = voxelize(make_cloud(size, rng, kind="clustered"), 1 / 32)
    return {"voxels": vox, "features": rng.standard_normal((vox.shape[0], 16)).astype(np.float32),
            "weights": (rng.standard_normal((27, 16, 32)) / 12).astype(np.float32),
            "kernel_size": 3, "stride": 1}


SPARSE_CONV3D = KernelSpec(
    name="sparse_conv3d",
    params=(
        Param("voxels", "array", "distinct integer voxel coordinates of shape (n, 3)", ndim=2),
        Param("features", "array", "input features of shape (n, C_in), finite", ndim=2),
        Param("weights", "array", "kernel weights of shape (kernel_size³, C_in, C_out)", ndim=3),
        Param("kernel_size", "int", "edge of the cubic kernel, in voxels", default=3, lo=1, hi=7),
        Param("stride", "int", "output stride, in voxels", default=1, lo=1, hi=8),
        Param("dataflow", "choice", "how the kernel map is walked", default="auto",
              choices=DATAFLOW_CHOICES),
    ),
    validate=_validate,
    reference=reference.sparse_conv3d,
    error=_error,
    tolerance=1e-4,
    make_case=_case,
    cost=_cost,
    arrays=("voxels", "features", "weights"),
    size_unit="points",
    description="sparse 3-D convolution on voxels (submanifold or strided)",
)
