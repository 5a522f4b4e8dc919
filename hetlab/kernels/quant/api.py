"""Public quantized kernels: ``hl.gemv_q`` and ``hl.gemm_q``."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ...backends.base import Backend
from ...core.dispatch import run
from ...core.registry import get_backend, register_impl, register_kernel
from ...errors import HetlabError
from .formats import QuantizedMatrix
from .prepared import w4_call
from .spec import GEMM_Q, GEMV_Q, GEMV_W4A8

__all__ = ["gemv_q", "gemm_q", "gemv_w4a8"]

Device = str | Backend | None

# registration: the family's one place (specs, then implementations imported on first use)
for _spec in (GEMV_Q, GEMM_Q):
    register_kernel(_spec)
    register_impl(_spec.name, "numba", f"hetlab.kernels.quant.numba:{_spec.name}")
    register_impl(_spec.name, "cupy", f"hetlab.kernels.quant.cupy:{_spec.name}")
register_kernel(GEMV_W4A8)
register_impl("gemv_w4a8", "numba", "hetlab.kernels.quant.numba:gemv_w4a8")
register_impl("gemv_w4a8", "cupy", "hetlab.kernels.quant.cupy:gemv_w4a8")
register_impl("gemv_q", "fpga", "hetlab.kernels.quant.fpga:gemv_q")  # the gemv_q overlay


def gemv_q(qw: QuantizedMatrix, x: Any, *, device: Device = None,
           keep_on_device: bool = False) -> np.ndarray:
    """Quantized matrix–vector product ``y = W x`` with W in a group-wise integer format.

    Fused on the compiled backends: codes are unpacked and dequantized group by group while
    the dot products run; the weights are never expanded to a float matrix.
    Accumulation is float32 (see :mod:`hetlab.kernels.quant.spec` for the tolerance); on
    AVX512-VNNI CPUs the numba W4 kernel (group size a multiple of 128) multiplies the codes
    with a 22-bit fixed-point copy of ``x`` in exact integer arithmetic instead — same
    tolerance, documented in the spec (``hetlab.kernels.quant.numba.w4_paths()`` lists this
    CPU's paths; on AMX CPUs ``gemm_q`` runs on the tile unit).

    Parameters
    ----------
    qw : QuantizedMatrix of shape (out, in)
        From :func:`hetlab.quant.quantize` (bits 8, 4, 3 or 2).
    x : array-like of shape (in,), float16/float32/float64
        Activations ("A16": float16 is exact; float64 is rounded to float32); finite.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Default: where the arrays live (host → the numpy reference). "cupy" runs the
        numba.cuda kernel on CuPy arrays (tested in numba's CUDA simulator, and on a GPU
        by tests/gpu).
    keep_on_device : bool, default False

    Returns
    -------
    ndarray of shape (out,), float32

    Raises
    ------
    InvalidInputError
        qw not a QuantizedMatrix; x of the wrong length, dtype or with NaN/inf, or with
        values beyond float32 (the kernels' dtype: refused rather than turned into inf).

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> from hetlab import quant
    >>> w = np.arange(-64, 64, dtype=np.float32).reshape(2, 64) / 64
    >>> qw = quant.quantize(w, bits=8, group_size=64)
    >>> x = np.ones(64, dtype=np.float32)
    >>> np.allclose(hl.gemv_q(qw, x), w.sum(axis=1), atol=0.05)
    True
    """
    if (device == "numba" and type(x) is np.ndarray and x.dtype == np.float32
            and x.flags.c_contiguous):
        # a W4 fast matrix and a ready x: the kernel's call kept per matrix (GemvPlan's
        # route; qw was checked when built). Anything else, or NaN/inf found on the output,
        # takes the dispatch below, whose checks raise.
        call = _numba_w4_call(qw)
        if call is not None and x.shape == call.xshape:
            y = np.empty(call.out_features, np.float32)
            if call(x, y):
                return y
    return run(GEMV_Q, device, keep_on_device, qw=qw, x=x)


def _numba_w4_call(qw: Any) -> Any:
    """:func:`~.prepared.w4_call` once the numba backend is known to run here (else None)."""
    return w4_call(qw) if _numba_runs() else None


@functools.cache
def _numba_runs() -> bool:
    """Whether the numba backend runs here (asked once per process)."""
    try:
        get_backend("numba").require()
    except HetlabError:
        return False
    return True


def gemm_q(qw: QuantizedMatrix, X: Any, *, device: Device = None,
           keep_on_device: bool = False) -> np.ndarray:
    """Quantized small-batch product ``Y = X Wᵀ`` ("flat GEMM", 1–64 rows of X).

    Parameters
    ----------
    qw : QuantizedMatrix of shape (out, in)
    X : array-like of shape (m, in), 1 ≤ m ≤ 64, float16/float32/float64
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Default: where the arrays live (host → the numpy reference).
    keep_on_device : bool, default False
        Return device arrays instead of copying results back to the host.

    Returns
    -------
    ndarray of shape (m, out), float32
    """
    return run(GEMM_Q, device, keep_on_device, qw=qw, X=X)


def gemv_w4a8(qw: QuantizedMatrix, x: Any, *, device: Device = None,
              keep_on_device: bool = False) -> np.ndarray:
    """W4A8 GEMV ``y ≈ W x``: int8 activations, integer dot products, one rescale per group.

    The activation vector (one token) is quantized symmetrically to int8 with one float32
    scale ``sx = max|x| / 127`` (:func:`~hetlab.kernels.quant.reference.quantize_activations`);
    each group's dot runs on integers, ``d[r, g] = Σ_k (q − z) · xq`` (exact integers), and is
    rescaled once: ``y[r] = sx · Σ_g s[r, g] · d[r, g]`` (float32 accumulation). Works for
    every weight width (the name follows the common W4 case).

    Accuracy: the integer dots equal the reference bit for bit (on AVX512-VNNI CPUs the numba
    W4 kernel rescales each group's 16 exact lane sums rather than their total); the float
    rescale differs by rounding only (the tolerance of :mod:`hetlab.kernels.quant.spec`,
    1e-4 relative to ``max |y|``). Against the A16 :func:`gemv_q` the int8 activations add
    their own rounding error — about ``0.3 · max|x| / 127 · ‖w_r‖`` per output for random
    inputs, i.e. ~1% of ``max |y|`` for Gaussian x of length 4096 (measured in the tests).

    Parameters
    ----------
    qw : QuantizedMatrix of shape (out, in)
        Any of bits 8, 4, 3, 2; group_size at most 65536.
    x : array-like of shape (in,), float16/float32/float64
        One token's activations; finite.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Default: where the arrays live (host → the numpy reference). "cupy" quantizes the
        activations on the host (the shared int8 format) and runs a numba.cuda kernel with
        exact int32 word dots.
    keep_on_device : bool, default False

    Returns
    -------
    ndarray of shape (out,), float32

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> from hetlab import quant
    >>> w = np.arange(-64, 64, dtype=np.float32).reshape(2, 64) / 64
    >>> qw = quant.quantize(w, bits=4, group_size=64)
    >>> x = np.ones(64, dtype=np.float32)
    >>> np.allclose(hl.gemv_w4a8(qw, x), hl.gemv_q(qw, x), atol=1e-5)
    True
    """
    return run(GEMV_W4A8, device, keep_on_device, qw=qw, x=x)


gemv_q.spec = GEMV_Q  # type: ignore[attr-defined]
gemm_q.spec = GEMM_Q  # type: ignore[attr-defined]
gemv_w4a8.spec = GEMV_W4A8  # type: ignore[attr-defined]
