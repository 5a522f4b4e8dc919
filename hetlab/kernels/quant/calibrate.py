"""Calibration: activation-aware scaling (AWQ-style) and modality-balanced weighting (MBQ).

AWQ-style search
----------------
Salient input channels (large activations) lose less when the weights of that channel are
scaled up before quantization and the activations scaled down by the same factor:
``W x = (W diag(s)) (x / s)``. With ``a_c`` the (token-weighted) mean |x_c| on calibration
tokens, the search tries ``s = a ** α`` (normalized to geometric mean 1, rounded to
float16) for ``α`` on a grid in [0, 1), quantizes ``W diag(s)`` round-to-nearest, and keeps
the ``α`` with the smallest token-weighted output error
``Σ_t p_t ‖X_t (Q(W diag(s)) / s)ᵀ − X_t Wᵀ‖² / out``. ``α = 0`` is plain round-to-nearest.
A second search clips each group's range (:func:`clip_search`; ratio 1 is no clipping).
Both searches include the unmodified choice, so on the calibration tokens the result is
never worse than RTN. With ``quantizer="gptq"`` the scaled matrix ``W diag(s)`` is then
quantized by :func:`~hetlab.quant.gptq` on the scaled inputs ``X / s`` (act-order, and the
clip search inside GPTQ's walk when ``clip``) instead of round-to-nearest.

MBQ: modality-balanced weights
------------------------------
Calibration tokens carry a group label (a modality: vision/language in MBQ). With uniform
weights the group with most tokens dominates the loss; MBQ weights each group by its
measured *sensitivity* instead: every token of group ``g`` gets ``p_t = σ_g / n_g``
(normalized), so group ``g`` contributes in proportion to ``σ_g`` whatever its token count.
How ``σ_g`` is measured is the caller's choice; :mod:`hetlab.kernels.quant.minilm` measures it
loss-based: the increase of the model's final loss per unit of noise energy injected into
that group's layer inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.args import flag, integer, real_array
from ...core.validation import as_array
from ...errors import InvalidInputError
from .formats import QuantizedMatrix, check_weights, quantize
from .gptq import CLIP_RATIOS, check_tokens, gptq

#: most α values :func:`calibrate_awq` tries (each quantizes the whole matrix once)
MAX_GRID = 1000

__all__ = [
    "ScaledQuantizedMatrix", "calibrate_awq", "clip_search", "mbq_token_weights", "output_error",
]


@dataclass(frozen=True, eq=False)
class ScaledQuantizedMatrix:
    """``W ≈ Q(W diag(s)) diag(1/s)``: a quantized matrix and its per-input-channel scale.

    Attributes
    ----------
    qw : QuantizedMatrix
        The quantized ``W diag(s)``.
    input_scale : ndarray of shape (in,), float32
        ``s`` (float16 values); the layer computes ``qw @ (x / s)``. In a model ``1/s`` is
        folded into the previous operation (LayerNorm, previous linear), so it costs no
        time; it is counted in :attr:`bits_per_weight` as one float16 per input channel.
    alpha : float
        The chosen exponent (0 = plain round-to-nearest).
    losses : ndarray of shape (grid,)
        Token-weighted output error of every ``α`` tried (``alphas``).
    alphas : ndarray of shape (grid,)
    """

    qw: QuantizedMatrix
    input_scale: np.ndarray
    alpha: float
    losses: np.ndarray
    alphas: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.qw.shape

    @property
    def bits_per_weight(self) -> float:
        out, n_in = self.qw.shape
        return self.qw.bits_per_weight + 16.0 * n_in / (out * n_in)

    def dequantize(self, dtype: Any = np.float32) -> np.ndarray:
        """The effective weights ``Q(W diag(s)) / s``, shape (out, in)."""
        return (self.qw.dequantize(np.float64) / self.input_scale).astype(dtype)

    def matvec(self, x: Any, *, device: Any = None) -> np.ndarray:
        """``W x`` with the fused kernel: ``gemv_q(qw, x / s)``."""
        from .api import gemv_q

        return gemv_q(self.qw, np.asarray(x, np.float32) / self.input_scale, device=device)


def output_error(w_eff: np.ndarray, w: np.ndarray, X: np.ndarray, p: np.ndarray) -> float:
    """Token-weighted mean squared output error ``Σ_t p_t ‖X_t (w_eff − w)ᵀ‖² / out``.

    Parameters
    ----------
    w_eff, w : array-like of shape (out, in), real
        Effective (e.g. dequantized) and original weights.
    X : array-like of shape (tokens, in), real
        Calibration inputs.
    p : array-like of shape (tokens,), real ≥ 0
        Token weights.

    Raises
    ------
    InvalidInputError
        Shapes that do not fit, NaN/inf, non-real dtypes, or values so large that the error
        overflows float64.
    """
    where = "output_error"
    we = real_array(where, "w_eff", w_eff, ndim=2)
    w64 = real_array(where, "w", w, ndim=2)
    x64 = real_array(where, "X", X, ndim=2)
    p64 = real_array(where, "p", p, ndim=1, nonneg=True)
    if we.shape != w64.shape:
        raise InvalidInputError(
            f"{where}: w_eff must have the shape of w {w64.shape}; got {we.shape}.")
    if x64.shape[1] != w64.shape[1]:
        raise InvalidInputError(
            f"{where}: X must have {w64.shape[1]} columns (in_features of w); got shape "
            f"{x64.shape}.")
    if p64.shape != (x64.shape[0],):
        raise InvalidInputError(
            f"{where}: p must have one weight per row of X ({x64.shape[0]}); got shape "
            f"{p64.shape}.")
    with np.errstate(over="ignore", invalid="ignore"):
        err = x64 @ (we - w64).T
        value = float(p64 @ np.einsum("to,to->t", err, err) / w64.shape[0])
    if not np.isfinite(value):
        raise InvalidInputError(
            f"{where}: w_eff, w and X must be small enough for the squared error to stay "
            f"finite in float64; got |w_eff - w| up to {float(np.abs(we - w64).max()):.3g} "
            f"and |X| up to {float(np.abs(x64).max()):.3g}. Rescale them.")
    return value


def clip_search(w: np.ndarray, X: np.ndarray, p: np.ndarray, *, bits: int, group_size: int,
                symmetric: bool, ratios: np.ndarray) -> QuantizedMatrix:
    """Per (row, group) range clipping minimizing the token-weighted output error.

    For each ratio ρ the weights of every group are clipped to ρ × their range before
    round-to-nearest; each (row, group) keeps the ρ whose error ``dᵀ H_g d`` is smallest,
    with ``d`` the group's weight error and ``H_g = Σ_t p_t x_tg x_tgᵀ`` (ρ = 1 is RTN).
    """
    out, n_in = w.shape
    ng = -(-n_in // group_size)
    n_pad = ng * group_size
    wp = np.zeros((out, n_pad))
    wp[:, :n_in] = w
    xp = np.zeros((X.shape[0], n_pad))
    xp[:, :n_in] = X
    xg = xp.reshape(-1, ng, group_size)
    xt = xg.transpose(1, 0, 2)  # (groups, tokens, group_size)
    H = np.matmul(xt.transpose(0, 2, 1) * p, xt)
    wg = wp.reshape(out, ng, group_size)
    lo = np.minimum(wg.min(axis=2, keepdims=True), 0)
    hi = np.maximum(wg.max(axis=2, keepdims=True), 0)
    if symmetric:
        hi = np.maximum(hi, -lo)
        lo = -hi
    best_err = np.full((out, ng), np.inf)
    codes = np.zeros((out, n_pad), dtype=np.uint8)
    scales = np.zeros((out, ng), dtype=np.float16)
    zeros = None if symmetric else np.zeros((out, ng), dtype=np.float16)
    for rho in ratios:
        clipped = np.clip(wg, rho * lo, rho * hi).reshape(out, n_pad)
        qw = quantize(clipped, bits=bits, group_size=group_size, symmetric=symmetric)
        d = (qw.dequantize(np.float64) - wp).reshape(out, ng, group_size)
        hd = np.matmul(d.transpose(1, 0, 2), H).transpose(1, 0, 2)
        err = (hd * d).sum(axis=2)
        better = err < best_err
        best_err = np.where(better, err, best_err)
        rows_better = np.repeat(better, group_size, axis=1)
        codes = np.where(rows_better, qw.codes(), codes)
        scales = np.where(better, qw.scales, scales)
        if zeros is not None:
            zeros = np.where(better, qw.zeros, zeros)
    return QuantizedMatrix.from_codes(codes, scales, zeros, bits, group_size, n_in)


def calibrate_awq(w: Any, X: Any, *, bits: int = 4, group_size: int = 128,
                  symmetric: bool = False, token_weights: Any = None, grid: int = 20,
                  clip: bool = True, quantizer: str = "rtn", damp: float = 0.01
                  ) -> ScaledQuantizedMatrix:
    """Activation-aware scale search (AWQ-style), optionally with MBQ token weights.

    Parameters
    ----------
    w : array-like of shape (out, in), float
        Layer weights (``y = w @ x``).
    X : array-like of shape (tokens, in), float
        Calibration inputs of this layer.
    bits, group_size, symmetric
        The format, as in :func:`~hetlab.quant.quantize`.
    token_weights : array-like of shape (tokens,), optional
        Non-negative weights of the tokens in the loss and in the activation statistic
        (:func:`mbq_token_weights` for MBQ); default uniform (plain AWQ).
    grid : int, default 20
        Number of exponents ``α = 0, 1/grid, …`` tried.
    clip : bool, default True
        After the scale search, search a clipping ratio per (row, group) in [0.5, 1]
        (:func:`clip_search`, AWQ's second step); with GPTQ, the ratios
        :data:`~hetlab.kernels.quant.gptq.CLIP_RATIOS` inside GPTQ's walk.
    quantizer : {"rtn", "gptq"}, default "rtn"
        How the scaled matrix is finally quantized: round-to-nearest (AWQ) or
        :func:`~hetlab.quant.gptq` with ``act_order=True`` on the scaled calibration inputs
        (the scale exponent is always searched with round-to-nearest).
    damp : float, default 0.01
        GPTQ's dampening (``quantizer="gptq"`` only).

    Returns
    -------
    ScaledQuantizedMatrix
    """
    w64 = check_weights("calibrate_awq", w).astype(np.float64)
    x64, p = check_tokens("calibrate_awq", X, w64.shape[1], token_weights)
    grid = integer("calibrate_awq", "grid", grid, 1, MAX_GRID)
    symmetric = flag("calibrate_awq", "symmetric", symmetric)
    clip = flag("calibrate_awq", "clip", clip)
    if not isinstance(quantizer, str) or quantizer not in ("rtn", "gptq"):
        raise InvalidInputError(
            f"calibrate_awq: quantizer must be 'rtn' or 'gptq'; got {quantizer!r}."
        )
    a = np.maximum(p @ np.abs(x64), 1e-8)
    alphas = np.arange(grid) / grid
    losses = np.empty(grid)
    best = None
    for i, alpha in enumerate(alphas):
        s = a**alpha
        s = s / np.sqrt(s.max() * s.min())
        s = s.astype(np.float16).astype(np.float64)
        qw = quantize(w64 * s, bits=bits, group_size=group_size, symmetric=symmetric)
        losses[i] = output_error(qw.dequantize(np.float64) / s, w64, x64, p)
        if best is None or losses[i] < losses[best[0]]:
            best = (i, qw, s)
    i, qw, s = best  # type: ignore[misc]
    if quantizer == "gptq":
        qw = gptq(w64 * s, x64 / s, bits=bits, group_size=group_size, symmetric=symmetric,
                  token_weights=p, damp=damp, clip_ratios=CLIP_RATIOS if clip else None,
                  act_order=True)
    elif clip:
        qw = clip_search(w64 * s, x64 / s, p, bits=bits, group_size=group_size,
                         symmetric=symmetric, ratios=np.linspace(1.0, 0.5, 11))
    return ScaledQuantizedMatrix(qw, s.astype(np.float32), float(alphas[i]), losses, alphas)


def mbq_token_weights(labels: Any, sensitivity: Any) -> np.ndarray:
    """Modality-balanced token weights: ``σ_g / n_g`` for each token of group ``g``, summing to 1.

    Parameters
    ----------
    labels : array-like of shape (tokens,), int
        Group (modality) of each calibration token, values in ``range(len(sensitivity))``.
    sensitivity : array-like of shape (groups,), float ≥ 0
        Measured sensitivity of each group (see the module docstring).

    Returns
    -------
    ndarray of shape (tokens,), float64

    Examples
    --------
    >>> mbq_token_weights([0, 0, 0, 1], [1.0, 1.0])   # both groups weigh the same
    array([0.16666667, 0.16666667, 0.16666667, 0.5       ])
    """
    lab = as_array("mbq_token_weights", "labels", labels)
    sens = real_array("mbq_token_weights", "sensitivity", sensitivity, nonempty=False)
    if sens.ndim != 1 or sens.size == 0 or (sens < 0).any():
        raise InvalidInputError(
            f"mbq_token_weights: sensitivity must be a 1-D array of finite numbers ≥ 0; got "
            f"{sens!r}."
        )
    if lab.ndim != 1 or lab.size == 0 or lab.dtype.kind not in "iu" or lab.min() < 0 \
            or lab.max() >= sens.size:
        raise InvalidInputError(
            f"mbq_token_weights: labels must be a non-empty 1-D int array in [0, {sens.size}); "
            f"got {lab.dtype} of shape {lab.shape}."
        )
    counts = np.bincount(lab, minlength=sens.size).astype(np.float64)
    p = sens[lab] / counts[lab]
    if p.sum() <= 0:
        raise InvalidInputError("mbq_token_weights: sensitivity of the present groups is all 0.")
    return p / p.sum()
