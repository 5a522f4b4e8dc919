"""GPTQ: column-by-column quantization with second-order error feedback (Frantar et al. 2022).

For a layer ``y = W x`` and calibration inputs ``x_t`` (token weights ``p_t``), the output
error of a weight change ``ΔW`` is ``Σ_t p_t ‖ΔW x_t‖² = Σ_r ΔW_r H ΔW_rᵀ`` with the
Hessian ``H = Σ_t p_t x_t x_tᵀ`` (GPTQ writes ``2XᵀX``; a constant factor changes nothing).
GPTQ quantizes the columns of ``W`` one at a time, left to right; after column ``c`` is
rounded, its error is spread over the columns not yet quantized so that the output error
stays minimal (the Optimal Brain Surgeon update). With ``U`` the upper Cholesky factor of
``H⁻¹`` (``H⁻¹ = UᵀU``) the update is

    e = (W[:, c] − Q(W[:, c])) / U[c, c];   W[:, c+1:] −= e ⊗ U[c, c+1:].

Implementation notes (this module's own NumPy version, float64 throughout):

* **Dampening**: ``H += damp · mean(diag H) · I`` (``damp = 0.01`` by default, as in the
  paper) keeps ``H`` positive definite when there are fewer tokens than input channels or
  correlated channels; input channels that never fire (``H_cc = 0``) get ``H_cc = 1`` first.
* **Groups**: the format is the project's group-wise :class:`QuantizedMatrix` (groups of
  ``group_size`` consecutive input channels). A group's fp16 scale and integer zero point are
  computed when the walk reaches the group's first column, from the *updated* weights of
  that group (the columns still carry the feedback of the groups before them).
* **Clipping** (optional, ``clip_ratios``): at that moment each row's range may be shrunk to
  ``ρ ×`` its range; each (row, group) keeps the ratio whose round-to-nearest error
  ``dᵀ H_gg d`` on the group's block of ``H`` is smallest (ρ = 1: no clipping).
* **Act-order** (optional, ``act_order``): the walk takes the columns in order of
  decreasing ``H_cc`` (the most active inputs first, while many columns are left to absorb
  their error), with *static* groups: every group's scale and zero point are fixed from the
  original weights before the walk, so groups stay contiguous and the format unchanged.
* **Refinement** (optional, ``refine`` sweeps): after the walk, coordinate descent on the
  codes with the scales fixed; each step moves one code to the integer minimizing the
  (dampened) output error given the others, so the error never grows.
* **Lazy batch**: inside a group the update touches only the group's columns; the feedback
  to the columns right of the group is applied once per group as one matrix product
  ``E · U[group, rest]`` (the paper's block trick, with block = group).

The result is a plain :class:`QuantizedMatrix` in the requested format, so every kernel
(``gemv_q``, ``gemm_q``, W4A8) runs it unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.args import flag, integer, real_array
from ...core.validation import as_array
from ...errors import InvalidInputError
from .formats import (
    QuantizedMatrix,
    _scales_and_codes,
    check_bits,
    check_group_size,
    check_weights,
)

__all__ = ["CLIP_RATIOS", "check_tokens", "gptq", "hessian"]

#: clipping ratios tried per (row, group) by the calibrated GPTQ configurations (1 = no
#: clipping); benchmarks/quant_gptq_options.py measures what they add on MiniLM
CLIP_RATIOS = np.linspace(1.0, 0.75, 11)


def hessian(X: np.ndarray, p: np.ndarray, n_cols: int) -> np.ndarray:
    """``H = Σ_t p_t x_t x_tᵀ`` of shape (n_cols, n_cols), float64; columns past X's width
    (row padding) are left zero."""
    H = np.zeros((n_cols, n_cols))
    n_in = X.shape[1]
    H[:n_in, :n_in] = (X * p[:, None]).T @ X
    return H


def _inverse_cholesky(H: np.ndarray, damp: float) -> np.ndarray:
    """Upper Cholesky factor ``U`` of ``H⁻¹`` (``H⁻¹ = UᵀU``); ``damp`` only for the error."""
    try:
        # With J the reversal permutation and J H J = L Lᵀ: H⁻¹ = (J L⁻¹ J)ᵀ (J L⁻¹ J), and
        # J L⁻¹ J is upper triangular with a positive diagonal, so it is U.
        L = np.linalg.cholesky(H[::-1, ::-1])
        return np.ascontiguousarray(np.linalg.inv(L)[::-1, ::-1])
    except np.linalg.LinAlgError:
        raise InvalidInputError(
            f"gptq: the calibration Hessian is not positive definite with damp={damp}; "
            f"raise damp (0.01 is the usual choice) or give more calibration tokens."
        ) from None


def _group_params(wg: np.ndarray, Hgg: np.ndarray, bits: int, symmetric: bool,
                  ratios: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """fp16-exact scale and zero point (float64, shape (out,)) of one group of columns."""
    s16, z16, _ = _scales_and_codes(wg[:, None, :], bits, symmetric)
    s = s16[:, 0].astype(np.float64)
    z = np.full(s.shape, 2.0 ** (bits - 1)) if z16 is None else z16[:, 0].astype(np.float64)
    if ratios is None:
        return s, z
    lo = np.minimum(wg.min(axis=1, keepdims=True), 0.0)
    hi = np.maximum(wg.max(axis=1, keepdims=True), 0.0)
    if symmetric:
        hi = np.maximum(hi, -lo)
        lo = -hi
    best = np.full(s.shape, np.inf)
    for rho in ratios:
        sr, zr, q = _scales_and_codes(np.clip(wg, rho * lo, rho * hi)[:, None, :], bits,
                                      symmetric)
        sr = sr[:, 0].astype(np.float64)
        zr = np.full(s.shape, 2.0 ** (bits - 1)) if zr is None else zr[:, 0].astype(np.float64)
        d = (q[:, 0, :] - zr[:, None]) * sr[:, None] - wg
        err = np.einsum("rc,cd,rd->r", d, Hgg, d)
        better = err < best
        best = np.where(better, err, best)
        s = np.where(better, sr, s)
        z = np.where(better, zr, z)
    return s, z


def check_tokens(where: str, X: Any, n_in: int, token_weights: Any
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Calibration inputs as float64 (tokens, n_in) and token weights summing to 1.

    ``X`` must be a finite float array small enough that ``Xᵀ X`` stays finite in float64;
    ``token_weights`` (optional) finite numbers ≥ 0, one per token, with a positive sum.
    """
    arr = X if isinstance(X, np.ndarray) else as_array(where, "X", X)
    if arr.dtype.kind != "f" or arr.ndim != 2 or arr.shape[1] != n_in or arr.shape[0] == 0:
        raise InvalidInputError(
            f"{where}: X must be a float array of shape (tokens ≥ 1, {n_in}) (in_features of "
            f"w); got {arr.dtype} of shape {arr.shape}."
        )
    if not np.isfinite(arr).all():
        raise InvalidInputError(f"{where}: X must be finite; got NaN or inf values.")
    x64 = real_array(where, "X", arr, ndim=2)
    t = arr.shape[0]
    limit = float(np.sqrt(np.finfo(np.float64).max / (4.0 * t * n_in)))
    if float(np.abs(x64).max()) >= limit:
        raise InvalidInputError(
            f"{where}: X must have |values| below {limit:.3g} so its second moments stay "
            f"finite in float64; got {float(np.abs(x64).max()):.3g}. Rescale X.")
    if token_weights is None:
        return x64, np.full(t, 1.0 / t)
    p = real_array(where, "token_weights", token_weights, nonempty=False)
    if p.shape != (t,) or (p < 0).any() or p.sum() <= 0:
        raise InvalidInputError(
            f"{where}: token_weights must be {t} finite non-negative numbers (one per row of "
            f"X) with a positive sum; got shape {p.shape}."
        )
    return x64, p / p.sum()


def gptq(w: Any, X: Any, *, bits: int = 4, group_size: int = 128, symmetric: bool = False,
         token_weights: Any = None, damp: float = 0.01, clip_ratios: Any = None,
         act_order: bool = False, refine: int = 0) -> QuantizedMatrix:
    """Quantize ``w`` with GPTQ on calibration inputs ``X`` (module docstring).

    Parameters
    ----------
    w : array-like of shape (out, in), float
        Layer weights (``y = w @ x``), finite.
    X : array-like of shape (tokens, in), float
        Calibration inputs of this layer, finite. Fewer tokens than ``in`` is allowed: the
        dampening keeps ``H`` invertible (the fit is then only as good as the data).
    bits, group_size, symmetric
        The format, as in :func:`~hetlab.quant.quantize`.
    token_weights : array-like of shape (tokens,), optional
        Non-negative token weights ``p_t`` in ``H`` (e.g. MBQ's); default uniform.
    damp : float, default 0.01
        Dampening as a fraction of the mean diagonal of ``H``; must be > 0.
    clip_ratios : array-like of float in (0, 1], optional
        Range-clipping ratios tried per (row, group) when the walk reaches a group; default
        none (plain min/max range).
    act_order : bool, default False
        Walk the columns in order of decreasing ``H_cc`` (the paper's "act-order"), with
        *static* groups: every group's scale and zero point are fixed from the original
        weights before the walk (the format keeps contiguous groups).
    refine : int, default 0
        Coordinate-descent sweeps over the codes after the walk (stops early when a sweep
        changes nothing); never increases the dampened calibration error.

    Returns
    -------
    QuantizedMatrix
        Same format and storage (``bits_per_weight``) as ``quantize(w, bits, group_size,
        symmetric=symmetric)``; only the codes, scales and zero points differ.

    Raises
    ------
    InvalidInputError
        Bad format, weights or calibration inputs (wrong width, NaN/inf, no tokens), damp
        not > 0, clip ratios outside (0, 1], refine not an int ≥ 0, or a Hessian still
        singular after dampening.

    Examples
    --------
    >>> import numpy as np
    >>> from hetlab import quant
    >>> rng = np.random.default_rng(0)
    >>> w, X = rng.normal(size=(16, 64)), rng.normal(size=(256, 64))
    >>> qw = quant.gptq(w, X, bits=4, group_size=32)
    >>> qw.bits_per_weight
    5.0
    """
    bits = check_bits("gptq", bits)
    group_size = check_group_size("gptq", group_size)
    w64 = check_weights("gptq", w).astype(np.float64)
    out, n_in = w64.shape
    x64, p = check_tokens("gptq", X, n_in, token_weights)
    if isinstance(damp, bool) or not isinstance(damp, (int, float)) or not damp > 0 \
            or not np.isfinite(damp):
        raise InvalidInputError(f"gptq: damp must be a number > 0 (e.g. 0.01); got {damp!r}.")
    ratios = None
    symmetric = flag("gptq", "symmetric", symmetric)
    act_order = flag("gptq", "act_order", act_order)
    if clip_ratios is not None:
        ratios = np.atleast_1d(real_array("gptq", "clip_ratios", clip_ratios, nonempty=False))
        if ratios.ndim != 1 or ratios.size == 0 or not ((ratios > 0) & (ratios <= 1)).all():
            raise InvalidInputError(
                f"gptq: clip_ratios must be numbers in (0, 1]; got {clip_ratios!r}."
            )
    refine = integer("gptq", "refine", refine, 0, 1000)
    ng = -(-n_in // group_size)
    n_pad = ng * group_size
    W = np.zeros((out, n_pad))
    W[:, :n_in] = w64
    H = hessian(x64, p, n_pad)
    dead = np.diagonal(H) <= 0
    H[dead, dead] = 1.0
    H[np.diag_indices_from(H)] += float(damp) * float(np.diagonal(H).mean())
    scales = np.empty((out, ng), dtype=np.float16)
    zeros = None if symmetric else np.empty((out, ng), dtype=np.float16)
    params = np.empty((2, out, ng))  # scale, zero point of every group (float64, fp16-exact)

    def set_params(g: int, wg: np.ndarray) -> None:
        c0 = g * group_size
        params[:, :, g] = _group_params(wg, H[c0 : c0 + group_size, c0 : c0 + group_size],
                                        bits, bool(symmetric), ratios)

    if act_order:  # static groups: every group's parameters from the original weights
        for g in range(ng):
            set_params(g, W[:, g * group_size : (g + 1) * group_size])
        perm = np.argsort(-np.diagonal(H), kind="stable")
    else:
        perm = np.arange(n_pad)
    Wp = W[:, perm]
    U = _inverse_cholesky(H[np.ix_(perm, perm)], float(damp))
    codes_p = _walk(Wp, U, perm, params, group_size, bits,
                    None if act_order else set_params)
    codes = np.empty_like(codes_p)
    codes[:, perm] = codes_p
    for _ in range(refine):
        if not _refine_sweep(W, codes, params, H, group_size, bits):
            break
    scales[:] = params[0]
    if zeros is not None:
        zeros[:] = params[1]
    return QuantizedMatrix.from_codes(codes, scales, zeros, bits, group_size, n_in)


def _walk(W: np.ndarray, U: np.ndarray, perm: np.ndarray, params: np.ndarray,
          group_size: int, bits: int, set_params: Any) -> np.ndarray:
    """GPTQ's column walk over ``W`` (columns in ``perm`` order, updated in place), in blocks
    of ``group_size`` columns; ``set_params(g, w_group)`` (when given) fixes group ``g``'s
    parameters as the walk reaches the block that is group ``g``. Returns the codes."""
    out, n = W.shape
    qmax = 2**bits - 1
    codes = np.empty((out, n), dtype=np.uint8)
    for c0 in range(0, n, group_size):
        c1 = c0 + group_size
        if set_params is not None:  # natural order: this block is group c0 // group_size
            set_params(c0 // group_size, W[:, c0:c1])
        E = np.empty((out, group_size))
        for j in range(group_size):
            c = c0 + j
            s, z = params[:, :, perm[c] // group_size]
            live = s > 0
            col = W[:, c]
            q = np.where(live, np.clip(np.rint(col / np.where(live, s, 1.0)) + z, 0, qmax), z)
            codes[:, c] = q
            e = (col - (q - z) * s) / U[c, c]
            E[:, j] = e
            W[:, c + 1 : c1] -= np.outer(e, U[c, c + 1 : c1])
        W[:, c1:] -= E @ U[c0:c1, c1:]
    return codes


def _refine_sweep(W: np.ndarray, codes: np.ndarray, params: np.ndarray, H: np.ndarray,
                  group_size: int, bits: int) -> bool:
    """One coordinate-descent sweep over the codes (in place); True if any code changed.

    With ``D = Q − W`` (row-wise error) and ``G = D H``, moving code ``(r, c)`` by ``k``
    changes row ``r``'s error ``D_r H D_rᵀ`` by ``2 k s G_rc + k² s² H_cc``; the integer
    ``k`` nearest to the minimizer ``−G_rc / (s H_cc)`` (clipped to the code range) never
    increases it. ``G`` is updated inside a block of columns exactly and for the rest of
    the row once per block.
    """
    out, n = W.shape
    qmax = 2**bits - 1
    s_all = np.repeat(params[0], group_size, axis=1)
    z_all = np.repeat(params[1], group_size, axis=1)
    D = (codes - z_all) * s_all - W
    G = D @ H
    changed = False
    for c0 in range(0, n, group_size):
        c1 = c0 + group_size
        delta = np.zeros((out, group_size))
        for j in range(group_size):
            c = c0 + j
            s = s_all[:, c]
            live = s > 0
            k = np.where(live, np.rint(-G[:, c] / (np.where(live, s, 1.0) * H[c, c])), 0.0)
            q = codes[:, c].astype(np.float64)
            k = np.clip(q + k, 0, qmax) - q
            if not k.any():
                continue
            changed = True
            codes[:, c] = q + k
            delta[:, j] = k * s
            G[:, c0:c1] += np.outer(delta[:, j], H[c, c0:c1])
        G[:, :c0] += delta @ H[c0:c1, :c0]
        G[:, c1:] += delta @ H[c0:c1, c1:]
    return changed
