"""Public sparse convolution: ``hl.sparse_conv3d``."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.base import Backend
from ...core.dispatch import run
from ...core.registry import register_impl, register_kernel
from .spec import SPARSE_CONV3D

__all__ = ["sparse_conv3d", "autotune_table"]

# registration: the family's one place (spec, then implementations imported on first use)
register_kernel(SPARSE_CONV3D)
register_impl("sparse_conv3d", "numba", "hetlab.kernels.sparseconv.numba:sparse_conv3d")


def sparse_conv3d(voxels: Any, features: Any, weights: Any, *, kernel_size: int = 3,
                  stride: int = 1, dataflow: str = "auto", device: str | Backend | None = None,
                  keep_on_device: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Sparse 3-D convolution of features living on voxels.

    Output voxel ``q`` gets ``Σ_δ features[v] @ weights[δ]`` over the K³ offsets δ
    (``d - (K-1)//2`` per axis, d = 0…K-1, x slowest) for which the voxel
    ``v = q·stride + δ`` is occupied. ``stride=1`` is the submanifold convolution (outputs =
    inputs); ``stride > 1`` outputs the distinct ``floor(v / stride)``.

    Parameters
    ----------
    voxels : array-like of shape (n, 3), integer
        Distinct voxel coordinates in [-2**19, 2**19), e.g. from
        :func:`hetlab.kernels.sparseconv.voxelize` of a point cloud.
    features : array-like of shape (n, C_in)
        float32/float64 (integers → float64), finite.
    weights : array-like of shape (kernel_size**3, C_in, C_out)
        Cast to the features' dtype; must be finite in it.
    kernel_size : int, default 3
        K, 1 ≤ K ≤ 7.
    stride : int, default 1
        1 ≤ stride ≤ 8.
    dataflow : {"auto", "gather_scatter", "fetch_on_demand"}
        The numba backend's strategy; ``"auto"`` measures both on this layer's kernel map
        once per layer class and caches the choice
        (``hetlab.kernels.sparseconv.numba.TUNER.cache``). The numpy reference ignores it.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Where to run; default: where the arrays live. ``"numpy"`` is the dense-grid
        reference, for small sizes only: a grid over the voxels' bounding box beyond 4 GiB
        is refused with InvalidInputError; use ``"numba"`` there.
    keep_on_device : bool, default False
        Return device arrays instead of copying results back to the host.

    Returns
    -------
    out_voxels : ndarray of shape (m, 3), int32
        The inputs (stride 1) or the distinct downsampled voxels sorted by (x, y, z).
    out_features : ndarray of shape (m, C_out), the features' dtype

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> vox = np.array([[0, 0, 0], [1, 0, 0]])
    >>> w = np.zeros((27, 1, 1)); w[13] = 1.0; w[22] = 10.0   # centre; offset (+1, 0, 0)
    >>> hl.sparse_conv3d(vox, [[1.0], [2.0]], w, device="numba")[1]
    array([[21.],
           [ 2.]])
    """
    return run(SPARSE_CONV3D, device, keep_on_device, voxels=voxels, features=features,
               weights=weights, kernel_size=kernel_size, stride=stride, dataflow=dataflow)


sparse_conv3d.spec = SPARSE_CONV3D  # type: ignore[attr-defined]


def autotune_table() -> Any:
    """What ``dataflow="auto"`` has measured so far in this process, as a pandas DataFrame.

    One row per layer class the numba autotuner has met (the class is its cache key):
    ``log2_voxels`` (⌊log2⌋ of the output voxels), ``kernel_size``, ``stride``, ``c_in``,
    ``c_out``, ``neighbours`` (matched inputs per output, rounded: the kernel map's density),
    ``dtype``; then the best measured time of each dataflow in milliseconds and the
    ``choice`` (the faster one, used for every later layer of that class). Empty until a
    numba ``sparse_conv3d(..., dataflow="auto")`` has run.
    """
    import pandas as pd

    from .numba import DATAFLOWS, TUNER

    cols = ["log2_voxels", "kernel_size", "stride", "c_in", "c_out", "neighbours", "dtype"]
    rows = [{**dict(zip(cols, key, strict=True)),
             **{f"{d}_ms": entry["times_s"][d] * 1e3 for d in DATAFLOWS},
             "choice": entry["choice"]} for key, entry in TUNER.cache.items()]
    return pd.DataFrame(rows, columns=[*cols, *(f"{d}_ms" for d in DATAFLOWS), "choice"])
