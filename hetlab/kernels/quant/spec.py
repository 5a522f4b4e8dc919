"""Quantized-kernel specs: validation, generated cases, error metric, cost model.

Tolerance
---------
The fused kernels accumulate in float32 (group dots, then the scaled sum over groups) with
reassociation allowed; the reference is float64 rounded to float32. The error is
``max |y - y_ref| / max |y_ref|`` over the output; the tolerance, 1e-4, is about 50× the
worst values measured on random 4096-wide rows (~2e-7 … 4e-7) and far below any decoding
mistake (a wrong code shifts an output by ~1/√n of its scale, ≥ 1e-3 here).

On AVX512-VNNI CPUs the numba W4 path (group sizes multiples of 128) represents each block of
128 activations in 22-bit fixed point (error ≤ ~2^-22.4 · the block's max |x| per value;
blocks whose max exceeds 64× their mean |x| stay float32) and sums exact integer products;
measured errors there are ~1e-6 on random 4096-wide rows, the same order as the float path.
On AMX CPUs the tile kernels use 28-bit fixed point (error ≤ 2^-29 · the block's max |x| per
value; a block whose max exceeds 4096× the mean of its other entries sends the call to the
VNNI kernel); measured ~4e-7 on the same rows.
On CPUs with AVX2 (the default W4 path where AVX512-VNNI is missing; W2/W3/W8 with group
sizes that are multiples of 128 on every AVX2 CPU) the kernels of ``_numba_avx2`` keep the
VNNI contract: 22-bit fixed point per 128-activation block (W8: 21-bit), exact integer
``vpmaddubsw``/``vpmaddwd`` sums, rounding only in the int→float conversion and the float32
scale-and-add; blocks whose max exceeds 64× the mean |x| of their nonzero entries go to the
float32 kernels (``tests/test_quant_avx2.py`` holds every width to :data:`TOLERANCE`).
All fused kernels factor the zero point out (``Σ q·x − z·Σ x``): one activation many orders
of magnitude above the rest cancels against its own zero-point term in float32, so an output
whose weights for it are zero can lose precision the reference keeps (a known limit; 1e6
against entries ~1 gives ~1e-3 relative).

The tolerance is relative to ``max |y_ref|``, so it assumes the outputs do not cancel much:
it holds up to a :func:`condition` of :data:`MAX_CONDITION` (``Σ|w·x|`` at most 100× the
largest ``|y|``). Beyond that the rounding of the terms themselves (each ~2^-24 · |w·x| in
float32, ~2^-22.4 · the block's max |x| · |w| in fixed point) can exceed 1e-4 · max |y|:
one 232-wide output of condition 1577 measured 8.5e-5 on the float32 W4 kernel and 2.8e-4
on the VNNI one, while both stayed within 2e-7 of ``Σ|w·x|``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.aligned import aligned_empty
from ...core.metrics import relative_error
from ...core.params import Param
from ...core.spec import Cost, KernelSpec
from ...core.validation import array_module, as_array, cast_finite
from ...errors import InvalidInputError
from . import reference
from .formats import QuantizedMatrix, quantize

__all__ = ["GEMV_Q", "GEMM_Q", "GEMV_W4A8", "TOLERANCE", "MAX_CONDITION", "condition",
           "MAX_ROWS", "MAX_W4A8_GROUP",
           "make_quantized"]

TOLERANCE = 1e-4
#: the largest :func:`condition` for which :data:`TOLERANCE` is promised
MAX_CONDITION = 100.0
#: largest group of gemv_w4a8: its int32 group dots stay below 2**31 (255 · 127 · 65536 < 2**31)
MAX_W4A8_GROUP = 65536
#: most rows of X a gemm_q call takes ("flat GEMM": decode-bound small batches)
MAX_ROWS = 64


def condition(qw: QuantizedMatrix, x: Any) -> float:
    """How much the outputs of ``W x`` cancel: ``max Σ_k |w_rk · x_k| / max |y_r|``.

    Parameters
    ----------
    qw : QuantizedMatrix of shape (out, in)
    x : ndarray of shape (in,) or (m, in), or padded to ``qw.padded_in``; float

    Returns
    -------
    float ≥ 1 (inf when every output is 0 and some term is not), computed in float64 from
    the dequantized weights; :data:`TOLERANCE` is promised up to :data:`MAX_CONDITION`.
    """
    X = np.atleast_2d(np.asarray(x, dtype=np.float64))[:, : qw.in_features]
    W = qw.dequantize(np.float64)[:, : qw.in_features]
    terms = float((np.abs(X) @ np.abs(W).T).max(initial=0.0))
    top = float(np.abs(X @ W.T).max(initial=0.0))
    if terms == 0.0:
        return 1.0
    return terms / top if top > 0 else float("inf")


def make_quantized(out: int, n_in: int, rng: np.random.Generator, *, bits: int = 4,
                   group_size: int = 128, symmetric: bool = False) -> QuantizedMatrix:
    """A quantized Gaussian matrix (σ = 0.02, like transformer weights) of shape (out, n_in).

    Drawn and quantized in blocks of rows (the same values as one draw of the whole matrix,
    which is never held: 4096×4096 W4 peaks near its codes' size plus one block's
    temporaries, about 20 MB, not the 67 MB float32 matrix plus quantize's temporaries).
    """
    block = max(1, (1 << 20) // max(n_in, 1))
    parts = [quantize(rng.normal(0.0, 0.02, (min(block, out - r), n_in)).astype(np.float32),
                      bits=bits, group_size=group_size, symmetric=symmetric)
             for r in range(0, out, block)]
    if len(parts) == 1:
        return parts[0]
    qweight = aligned_empty((out, parts[0].qweight.shape[1]), np.uint32)
    np.concatenate([p.qweight for p in parts], out=qweight)
    zeros = None if symmetric else np.concatenate([p.zeros for p in parts])
    return QuantizedMatrix._adopt(qweight, np.concatenate([p.scales for p in parts]), zeros,
                                  parts[0].bits, parts[0].group_size, n_in)


def _check_qw(kernel: str, qw: Any) -> QuantizedMatrix:
    if not isinstance(qw, QuantizedMatrix):
        raise InvalidInputError(
            f"{kernel}: qw must be a QuantizedMatrix (from hetlab.quant.quantize); got "
            f"{type(qw).__name__}."
        )
    return qw


def _check_activations(kernel: str, name: str, a: Any, qw: QuantizedMatrix, ndim: int) -> Any:
    """Float activations with last axis in_features → float32, zero-padded to padded_in.

    Finiteness is checked on the float32 values the kernels read: a float64 value beyond
    float32's range (1e300) is refused rather than turned into inf."""
    xp = array_module(a)
    arr = as_array(kernel, name, a)
    if arr.dtype.kind != "f":
        raise InvalidInputError(
            f"{kernel}: {name} must be a float16/float32/float64 array; got dtype {arr.dtype}."
        )
    want = "(in_features,)" if ndim == 1 else f"(m, in_features) with 1 ≤ m ≤ {MAX_ROWS}"
    bad_rows = ndim == 2 and not 1 <= (arr.shape[0] if arr.ndim == 2 else 0) <= MAX_ROWS
    if arr.ndim != ndim or arr.shape[-1] != qw.in_features or bad_rows:
        raise InvalidInputError(
            f"{kernel}: {name} must have shape {want} = {qw.in_features}; got shape "
            f"{tuple(arr.shape)}."
        )
    arr = cast_finite(kernel, name, arr, xp.float32)
    pad = qw.padded_in - qw.in_features
    if pad:
        widths = [(0, 0)] * (ndim - 1) + [(0, pad)]
        arr = xp.pad(arr, widths)
    return xp.ascontiguousarray(arr)


def _validate_gemv(qw: Any, x: Any) -> dict[str, Any]:
    q = _check_qw("gemv_q", qw)
    return {"qw": q, "x": _check_activations("gemv_q", "x", x, q, 1)}


def _validate_gemm(qw: Any, X: Any) -> dict[str, Any]:
    q = _check_qw("gemm_q", qw)
    return {"qw": q, "X": _check_activations("gemm_q", "X", X, q, 2)}


def _validate_w4a8(qw: Any, x: Any) -> dict[str, Any]:
    q = _check_qw("gemv_w4a8", qw)
    if q.group_size > MAX_W4A8_GROUP:
        raise InvalidInputError(
            f"gemv_w4a8: qw.group_size must be at most {MAX_W4A8_GROUP} (int32 group dots); "
            f"got {q.group_size}."
        )
    return {"qw": q, "x": _check_activations("gemv_w4a8", "x", x, q, 1)}


def _cost(a: Mapping[str, Any], key: str) -> Cost:
    qw: QuantizedMatrix = a["qw"]
    act = a[key]
    m = 1 if act.ndim == 1 else act.shape[0]
    out, n_in = qw.shape
    # weights (codes, scales, zeros) once, activations once (as given), outputs once (fp32)
    return Cost(flops=2.0 * m * out * n_in,
                bytes=float(qw.nbytes + act.nbytes + 4 * m * out))


def _cost_w4a8(a: Mapping[str, Any]) -> Cost:
    qw: QuantizedMatrix = a["qw"]
    out, n_in = qw.shape
    # weights once, int8 activations once, fp32 outputs once
    return Cost(flops=2.0 * out * n_in, bytes=float(qw.nbytes + qw.padded_in + 4 * out))


def _gemv_case(size: int, rng: np.random.Generator) -> dict[str, Any]:
    return {"qw": make_quantized(size, size, rng),
            "x": rng.standard_normal(size).astype(np.float32)}


def _gemm_case(size: int, rng: np.random.Generator) -> dict[str, Any]:
    return {"qw": make_quantized(size, size, rng),
            "X": rng.standard_normal((8, size)).astype(np.float32)}


GEMV_Q = KernelSpec(
    name="gemv_q",
    params=(
        Param("qw", "quantized", "QuantizedMatrix of shape (out, in)"),
        Param("x", "array", "activations of shape (in,), float16/32/64, finite in float32",
              ndim=1),
    ),
    validate=_validate_gemv,
    reference=reference.gemv_q,
    error=relative_error,
    tolerance=TOLERANCE,
    make_case=_gemv_case,
    cost=lambda a: _cost(a, "x"),
    arrays=("qw", "x"),
    size_unit="rows",
    description="fused dequantize + GEMV, W{8,4,3,2}A16, fp32 accumulate (case: W4 g128, n×n)",
)

GEMM_Q = KernelSpec(
    name="gemm_q",
    params=(
        Param("qw", "quantized", "QuantizedMatrix of shape (out, in)"),
        Param("X", "array", "activations of shape (m, in), 1 ≤ m ≤ 64, finite in float32",
              ndim=2),
    ),
    validate=_validate_gemm,
    reference=reference.gemm_q,
    error=relative_error,
    tolerance=TOLERANCE,
    make_case=_gemm_case,
    cost=lambda a: _cost(a, "X"),
    arrays=("qw", "X"),
    size_unit="rows",
    description="fused dequantize + flat GEMM (1–64 rows), fp32 accumulate (case: W4 g128, 8 rows)",
)

GEMV_W4A8 = KernelSpec(
    name="gemv_w4a8",
    params=(
        Param("qw", "quantized", "QuantizedMatrix of shape (out, in)"),
        Param("x", "array", "activations of shape (in,), quantized to int8 per call", ndim=1),
    ),
    validate=_validate_w4a8,
    reference=reference.gemv_w4a8,
    error=relative_error,
    tolerance=TOLERANCE,
    make_case=_gemv_case,
    cost=_cost_w4a8,
    arrays=("qw", "x"),
    size_unit="rows",
    description="GEMV with int8 per-token activations, integer group dots, one rescale per "
                "group (case: W4 g128, n×n)",
)
