"""Attention specs: validation, generated cases, error metric, cost models, tolerance.

Shapes: ``q`` (heads, n_q, d), ``k`` (heads, n_k, d), ``v`` (heads, n_k, d_v); the output is
(heads, n_q, d_v) in the common dtype of the three (float32 when all are float32, else
float64). Scores are ``scale · q·k`` with ``scale = 1/√d``.

Float32 tolerance (derivation)
------------------------------
The reference accumulates in float64; a float32 kernel (u = 2⁻²⁴ ≈ 6.0e-8) differs from it by
rounding only. With ``S = scale · max_i Σ_c |q_ic|·|k_jc|`` (the largest score magnitude
before cancellation) and tiles of ``B`` keys:

* a score is a d-term dot product: ``|δs| ≤ γ_d · S ≈ d·u·S`` (scaled once more: +u·S);
* each weight ``exp(s − m)`` adds u (exp) and, per tile, one rescale ``exp(m_old − m_new)``
  (``n_k/B`` rescales: ``(n_k/B)·u``); the running sum ``l`` and the output accumulator add
  ``γ_B + (n_k/B)·u``;
* so every normalized weight ``p_j/l`` carries a relative error
  ``η ≤ 2·(d·S + n_k/B + B + 2)·u``, and ``|δo| ≤ 2·η·max|v|`` (error of the numerator and
  the denominator).

For the generated cases (q, k, v standard normal, d = 64, so S ≈ 0.8·√d ≈ 6.4; n_k ≤ 16384,
B = 64): η ≤ 2·(410 + 256 + 64 + 2)·u ≈ 8.8e-5 in the worst case, where every rounding
error points the same way. Rounding errors of independent operations add like a random walk,
so the observed errors are about √ of the term count smaller (measured: 1e-7 … 2e-6 relative
to max|o| on the generated cases). The error metric is ``max|o − o_ref| / max|o_ref|`` and the
tolerance is 1e-4 — the worst-case η, which also leaves room for max|o_ref| being a few times
smaller than max|v| (o is a weighted mean of the rows of v). Float64 kernels are held to the
same number and land near 1e-15.

Validation: every array real and finite *in the dtype the kernel computes in*; heads, key
counts and head dims agree; ``1 ≤ d, d_v ≤ 256``; scores and sums must stay finite in that
dtype (``max|q|·max|k|·d·scale`` and ``max|v|·n_k·2³²`` below its largest value — the 2³²
leaves room for the unified-max softmax's ``e²⁰`` headroom); ``causal`` only where
``n_q = n_k`` (prefill) or ``n_q = 1`` (decode: the one query is the last position and sees
every key). Decode defers the value checks of ``k_cache`` and ``v_cache`` (when they need no
cast) from validation to the implementation — the same rules, :func:`check_cache`: the
numpy reference scans first, the numba kernel folds the checks into its one pass over the
cache (a separate scan read the cache twice more, as long as the kernel itself took) and
raises the same errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.metrics import relative_error
from ...core.params import Param
from ...core.spec import Cost, KernelSpec
from ...core.validation import array_module, as_float_array, cast_finite, check_bool, check_int
from ...errors import InvalidInputError
from . import reference
from ._scan import max_abs

__all__ = ["ATTENTION", "DECODE_ATTENTION", "SOFTMAX_CHOICES", "MAX_HEAD_DIM", "TOLERANCE",
           "check_qkv", "check_bool", "check_heads", "check_ranges", "check_cache",
           "score_scale"]

#: the largest head dimension accepted (d and d_v)
MAX_HEAD_DIM = 256
#: ``max|o − o_ref| / max|o_ref|`` a float32 kernel may reach (module docstring)
TOLERANCE = 1e-4
#: the decode softmax schemes
SOFTMAX_CHOICES = ("synchronized", "unified-max")
#: most parts a decode call may split its cache into
MAX_PARTS = 4096


def score_scale(d: int) -> float:
    """The softmax temperature ``1/√d`` of a head dimension ``d``."""
    return 1.0 / float(np.sqrt(d))


def _array(kernel: str, name: str, a: Any, ndim: int, shape_doc: str) -> Any:
    arr = as_float_array(kernel, name, a)
    if arr.ndim != ndim:
        raise InvalidInputError(
            f"{kernel}: {name} must have shape {shape_doc}; got shape {tuple(arr.shape)}."
        )
    if 0 in arr.shape:
        raise InvalidInputError(
            f"{kernel}: {name} must not be empty (every axis ≥ 1); got shape "
            f"{tuple(arr.shape)}."
        )
    return arr


def check_heads(kernel: str, q: Any, k: Any, v: Any, q_ndim: int = 3, *,
                with_values: bool = True, defer_cache: bool = False) -> tuple[Any, Any, Any]:
    """Shapes and dtypes of ``q``, ``k``, ``v`` (``q`` of rank ``q_ndim``: 3, or 2 for
    decode; ``with_values=False`` where a kernel takes no values: ``v`` ignored, None
    returned); returns the three cast to their common dtype, checked finite in it and
    within range (:func:`check_ranges`). ``defer_cache=True`` (decode): ``k`` and ``v``
    that need no cast are not scanned and no range is checked — the caller's implementation
    must run :func:`check_cache` or fold the same checks into its own pass."""
    if not with_values:
        v = None
    qd = "(heads, n_q, d)" if q_ndim == 3 else "(heads, d)"
    kn, vn = ("k", "v") if q_ndim == 3 else ("k_cache", "v_cache")
    qn = "q" if q_ndim == 3 else "q1"
    q = _array(kernel, qn, q, q_ndim, qd)
    k = _array(kernel, kn, k, 3, "(heads, n_k, d)")
    heads, d = q.shape[0], q.shape[-1]
    if k.shape[0] != heads or k.shape[2] != d:
        raise InvalidInputError(
            f"{kernel}: {kn} must have shape (heads={heads}, n_k, d={d}) to match {qn}; got "
            f"{tuple(k.shape)}."
        )
    dims = [(qn, d)]
    if with_values:
        v = _array(kernel, vn, v, 3, "(heads, n_k, d_v)")
        if v.shape[0] != heads or v.shape[1] != k.shape[1]:
            raise InvalidInputError(
                f"{kernel}: {vn} must have shape (heads={heads}, n_k={k.shape[1]}, d_v) to "
                f"match {kn}; got {tuple(v.shape)}."
            )
        dims.append((vn, v.shape[2]))
    for name, dim in dims:
        if dim > MAX_HEAD_DIM:
            raise InvalidInputError(
                f"{kernel}: the head dimension of {name} must be ≤ {MAX_HEAD_DIM}; got {dim}. "
                "Split the heads (more heads of a smaller dimension)."
            )
    arrays = [(qn, q), (kn, k)] + ([(vn, v)] if v is not None else [])
    dt = np.result_type(*(a.dtype for _, a in arrays))
    xp = array_module(q)
    out, peaks = [], []
    for n, a in arrays:
        deferred = defer_cache and n != qn and a.dtype == dt
        top = max_abs(a) if a.dtype == dt and not deferred else float("nan")
        if not deferred and not np.isfinite(top):  # a cast, or a non-finite value
            a = cast_finite(kernel, n, a, dt)
            top = max_abs(a)
        out.append(xp.ascontiguousarray(a))
        peaks.append(top)
    if not defer_cache:
        check_ranges(kernel, (qn, kn, vn if v is not None else None), out[0], out[1],
                     out[2] if v is not None else None, tuple(peaks))
    return out[0], out[1], (out[2] if v is not None else None)


def check_ranges(kernel: str, names: tuple[str, str, str | None], q: Any, k: Any,
                 v: Any | None, peaks: tuple[float, ...]) -> None:
    """Refuse inputs whose scores or sums would overflow their dtype, from ``peaks`` =
    (max|q|, max|k|[, max|v|]) — measured by a scan, or by a kernel's own pass over k, v."""
    qn, kn, vn = names
    dt = q.dtype
    d = q.shape[-1]
    big = float(np.finfo(dt).max)
    qmax, kmax = peaks[:2]
    if qmax * kmax * d * score_scale(d) > big / 4:
        raise InvalidInputError(
            f"{kernel}: scores of {qn} and {kn} would overflow {dt} (max|{qn}|={qmax:.3g}, "
            f"max|{kn}|={kmax:.3g}, d={d}); scale the inputs down or use float64."
        )
    if v is not None:
        vmax = peaks[2]
        if vmax * k.shape[1] * 2.0**32 > big:
            raise InvalidInputError(
                f"{kernel}: {vn} is too large for sums over {k.shape[1]} keys in {dt} "
                f"(max|{vn}|={vmax:.3g}); scale it down or use float64."
            )


def check_cache(q1: Any, k_cache: Any, v_cache: Any) -> None:
    """The value checks :func:`_validate_decode` defers (validated, same-dtype arrays):
    ``k_cache`` and ``v_cache`` finite, scores and sums within range — one ``max`` and one
    ``min`` pass over each. The reference runs it before computing; the numba kernel folds
    the same checks into its own pass and calls this only to name the fault."""
    kernel = "decode_attention"
    peaks = [max_abs(q1)]
    for name, a in (("k_cache", k_cache), ("v_cache", v_cache)):
        top = max_abs(a)
        if not np.isfinite(top):
            cast_finite(kernel, name, a, a.dtype)  # raises, naming the argument
        peaks.append(top)
    check_ranges(kernel, ("q1", "k_cache", "v_cache"), q1, k_cache, v_cache, tuple(peaks))


def check_qkv(kernel: str, q: Any, k: Any, v: Any, causal: Any) -> dict[str, Any]:
    """The validated keywords of :func:`hetlab.attention` (also used by block-sparse)."""
    c = check_bool(kernel, "causal", causal)
    q, k, v = check_heads(kernel, q, k, v)
    n_q, n_k = q.shape[1], k.shape[1]
    if c and not (n_q == n_k or n_q == 1):
        raise InvalidInputError(
            f"{kernel}: causal=True needs n_q == n_k (prefill) or n_q == 1 (decode); got "
            f"n_q={n_q}, n_k={n_k}. Pass causal=False for cross-attention."
        )
    return {"q": q, "k": k, "v": v, "causal": c}


def _validate(q: Any, k: Any, v: Any, causal: Any = False) -> dict[str, Any]:
    return check_qkv("attention", q, k, v, causal)


def _validate_decode(q1: Any, k_cache: Any, v_cache: Any, softmax: Any = "synchronized",
                     parts: Any = 0) -> dict[str, Any]:
    kernel = "decode_attention"
    if not isinstance(softmax, str) or softmax not in SOFTMAX_CHOICES:
        raise InvalidInputError(
            f"{kernel}: softmax must be one of {SOFTMAX_CHOICES}; got {softmax!r}."
        )
    p = check_int(kernel, "parts", parts, 0, MAX_PARTS)
    q1, k, v = check_heads(kernel, q1, k_cache, v_cache, q_ndim=2, defer_cache=True)
    return {"q1": q1, "k_cache": k, "v_cache": v, "softmax": softmax, "parts": p}


def _reference_decode(q1: Any, k_cache: Any, v_cache: Any, softmax: str = "synchronized",
                      parts: int = 0) -> Any:
    """The float64 reference of decode attention, after the value checks validation
    deferred (:func:`check_cache`)."""
    check_cache(q1, k_cache, v_cache)
    return reference.decode_attention(q1, k_cache, v_cache, softmax, parts)


def _cost(a: Mapping[str, Any]) -> Cost:
    (h, n_q, d), n_k, dv = a["q"].shape, a["k"].shape[1], a["v"].shape[2]
    pairs = h * n_q * n_k * (0.5 if a["causal"] and n_q == n_k else 1.0)
    b = a["q"].dtype.itemsize
    return Cost(flops=2.0 * pairs * (d + dv),
                bytes=float(b * h * (n_q * d + n_k * (d + dv) + n_q * dv)))


def _cost_decode(a: Mapping[str, Any]) -> Cost:
    (h, n, d), dv = a["k_cache"].shape, a["v_cache"].shape[2]
    b = a["q1"].dtype.itemsize
    return Cost(flops=2.0 * h * n * (d + dv), bytes=float(b * h * (d + n * (d + dv) + dv)))


#: heads and head dimension of generated cases (the benchmarks' shape)
CASE_HEADS, CASE_DIM = 8, 64


def _case(size: int, rng: np.random.Generator) -> dict[str, Any]:
    shape = (CASE_HEADS, size, CASE_DIM)
    q, k, v = (rng.standard_normal(shape, dtype=np.float32) for _ in range(3))
    return {"q": q, "k": k, "v": v, "causal": bool(rng.random() < 0.5)}


def _case_decode(size: int, rng: np.random.Generator) -> dict[str, Any]:
    shape = (CASE_HEADS, size, CASE_DIM)
    q1 = rng.standard_normal((CASE_HEADS, CASE_DIM), dtype=np.float32)
    k, v = (rng.standard_normal(shape, dtype=np.float32) for _ in range(2))
    return {"q1": q1, "k_cache": k, "v_cache": v,
            "softmax": SOFTMAX_CHOICES[int(rng.integers(2))], "parts": 0}


ATTENTION = KernelSpec(
    name="attention",
    params=(
        Param("q", "array", "queries of shape (heads, n_q, d), float32/float64", ndim=3),
        Param("k", "array", "keys of shape (heads, n_k, d)", ndim=3),
        Param("v", "array", "values of shape (heads, n_k, d_v)", ndim=3),
        Param("causal", "bool", "mask keys after each query (n_q = n_k, or n_q = 1)",
              default=False),
    ),
    validate=_validate,
    reference=reference.attention,
    error=relative_error,
    tolerance=TOLERANCE,
    make_case=_case,
    cost=_cost,
    arrays=("q", "k", "v"),
    size_unit="tokens",
    description="softmax(q kᵀ/√d) v per head, causal or not",
)

DECODE_ATTENTION = KernelSpec(
    name="decode_attention",
    params=(
        Param("q1", "array", "one query per head, shape (heads, d)", ndim=2),
        Param("k_cache", "array", "cached keys of shape (heads, n, d)", ndim=3),
        Param("v_cache", "array", "cached values of shape (heads, n, d_v)", ndim=3),
        Param("softmax", "choice", "how the split parts agree on the softmax maximum",
              default="synchronized", choices=SOFTMAX_CHOICES),
        Param("parts", "int", "parts the cache is split into (0: chosen from n and threads)",
              default=0, lo=0, hi=MAX_PARTS),
    ),
    validate=_validate_decode,
    reference=_reference_decode,
    error=relative_error,
    tolerance=TOLERANCE,
    make_case=_case_decode,
    cost=_cost_decode,
    arrays=("q1", "k_cache", "v_cache"),
    size_unit="cached tokens",
    description="one query per head against a KV cache (split-KV, two softmax schemes)",
)

