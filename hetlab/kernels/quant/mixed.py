"""Mixed precision: choose bits per layer (or per block of output rows) to meet an average.

Importance
----------
The error of quantizing unit ``u`` (a layer, or ``block_rows`` rows of one) at ``b`` bits is
the importance-weighted squared weight error

    E[u, b] = λ_u · Σ_r Σ_c h_c (W − Q_b(W))²_rc

with ``h`` a per-input-channel importance: the Hessian-diagonal proxy ``h_c = mean_t x_tc²``
of the layer's calibration inputs (for ``y = W x`` the output error is ``ΔW x``, whose
expected square is ``Σ_c h_c ΔW_rc²`` when channels are uncorrelated), or 1 without
calibration data. ``λ_u`` is an optional per-layer multiplier (a measured output
sensitivity). Costs are the formats' true storage (``bits_per_weight`` × weights: scales,
zero points and padding included), so the average met is the honest one.

Allocation
----------
Greedy on marginal gains: every unit starts at the smallest candidate; while the budget
allows, the unit whose next step up in bits buys the largest error decrease per extra bit
is upgraded. With error convex in bits (as RTN errors are) this is the Lagrangian optimum
at the budget's breakpoints.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import InvalidInputError
from .formats import BITS, QuantizedMatrix, check_weights, quantize

__all__ = ["BitPlan", "allocate_bits", "channel_importance"]


@dataclass
class BitPlan:
    """Result of :func:`allocate_bits`.

    Attributes
    ----------
    bits : list of int
        Bits of each unit, in order (layer by layer, row blocks within a layer).
    units : list of (layer index, row slice)
    matrices : list of QuantizedMatrix
        One per unit, in the chosen format; a layer's rows are the concatenation of its
        units' rows.
    average_bits : float
        Storage bits per weight over all layers (scales, zeros, padding included).
    error : float
        Total importance-weighted error Σ E[u, bits_u].
    errors : ndarray (units, candidates)
        E[u, b] for every candidate (``candidates`` order).
    """

    bits: list[int]
    units: list[tuple[int, slice]]
    matrices: list[QuantizedMatrix]
    average_bits: float
    error: float
    candidates: tuple[int, ...]
    errors: np.ndarray = field(repr=False)

    def layer_bits(self, layer: int) -> list[int]:
        """Bits of the units of one layer."""
        return [b for b, (li, _) in zip(self.bits, self.units, strict=True) if li == layer]

    def dequantize(self, layer: int) -> np.ndarray:
        """Effective weights of one layer (its units' rows stacked), float32."""
        return np.concatenate([m.dequantize() for m, (li, _) in
                               zip(self.matrices, self.units, strict=True) if li == layer])


def channel_importance(X: Any) -> np.ndarray:
    """Hessian-diagonal proxy ``mean_t x_tc²`` of calibration inputs X (tokens, in)."""
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] == 0 or not np.isfinite(arr).all():
        raise InvalidInputError(
            f"channel_importance: X must be a finite array of shape (tokens ≥ 1, in); got "
            f"shape {arr.shape}."
        )
    return (arr**2).mean(axis=0)


def _importance(i: int, imp: Any, n_in: int) -> tuple[np.ndarray, float]:
    """(h of shape (in,), λ) for layer i from None, a scalar, h (in,) or activations (t, in)."""
    if imp is None:
        return np.ones(n_in), 1.0
    if isinstance(imp, numbers.Real) and not isinstance(imp, bool):
        if not np.isfinite(imp) or imp < 0:
            raise InvalidInputError(f"allocate_bits: importance[{i}] must be ≥ 0; got {imp}.")
        return np.ones(n_in), float(imp)
    arr = np.asarray(imp, dtype=np.float64)
    if arr.ndim == 2 and arr.shape[1] == n_in:
        return channel_importance(arr), 1.0
    if arr.shape == (n_in,) and np.isfinite(arr).all() and (arr >= 0).all():
        return arr, 1.0
    raise InvalidInputError(
        f"allocate_bits: importance[{i}] must be None, a number ≥ 0, channel importances of "
        f"shape ({n_in},) or calibration inputs of shape (tokens, {n_in}); got shape "
        f"{arr.shape}."
    )


def allocate_bits(layers: Sequence[Any], target_bits: float, *, importance: Sequence[Any] |
                  None = None, candidates: Sequence[int] = (2, 3, 4, 8), group_size: int = 128,
                  symmetric: bool = False, block_rows: int | None = None,
                  relative: bool = False) -> BitPlan:
    """Bits per layer (or per block of output rows) meeting an average, least weighted error.

    Parameters
    ----------
    layers : sequence of array-like (out_i, in_i), float
        Weight matrices.
    target_bits : float
        Largest allowed storage bits per weight over all layers (e.g. 3.45), scales and zero
        points included; must allow at least the smallest candidate everywhere.
    importance : sequence, optional
        Per layer: None, a multiplier λ ≥ 0, channel importances (in_i,), or calibration
        inputs (tokens, in_i) for the Hessian-diagonal proxy (module docstring).
    candidates : sequence of int, default (2, 3, 4, 8)
        Allowed bit widths (subset of {2, 3, 4, 8}).
    group_size, symmetric
        Format of every unit, as in :func:`~hetlab.quant.quantize`.
    block_rows : int, optional
        Split layers into blocks of this many output rows, each a unit; default whole layers.
    relative : bool, default False
        Divide each unit's error by its weighted energy ``Σ_r Σ_c h_c W²_rc`` (relative
        output error), so layers whose outputs differ in scale compare fairly.

    Returns
    -------
    BitPlan

    Examples
    --------
    >>> import numpy as np
    >>> from hetlab import quant
    >>> rng = np.random.default_rng(0)
    >>> ws = [rng.normal(0, s, (64, 128)) for s in (1.0, 0.1)]
    >>> plan = quant.allocate_bits(ws, 3.75, candidates=(3, 4), importance=[10.0, 1.0])
    >>> plan.bits, plan.average_bits <= 3.75
    ([4, 3], True)
    """
    if not layers:
        raise InvalidInputError("allocate_bits: layers must be a non-empty sequence of matrices.")
    cands = tuple(sorted({int(b) for b in candidates}))
    if not cands or any(b not in BITS for b in cands):
        raise InvalidInputError(
            f"allocate_bits: candidates must be a non-empty subset of {BITS}; got {candidates!r}."
        )
    if importance is not None and len(importance) != len(layers):
        raise InvalidInputError(
            f"allocate_bits: importance must have one entry per layer ({len(layers)}); got "
            f"{len(importance)}."
        )
    ws = [check_weights(f"allocate_bits: layers[{i}]", w).astype(np.float64)
          for i, w in enumerate(layers)]
    units: list[tuple[int, slice]] = []
    errors, costs, mats = [], [], []
    for i, w in enumerate(ws):
        h, lam = _importance(i, None if importance is None else importance[i], w.shape[1])
        step = block_rows or w.shape[0]
        for r0 in range(0, w.shape[0], step):
            rows = slice(r0, min(r0 + step, w.shape[0]))
            units.append((i, rows))
            scale = lam / float(((w[rows] ** 2) @ h).sum()) if relative else lam
            e_row, c_row, m_row = [], [], []
            for b in cands:
                qw = quantize(w[rows], bits=b, group_size=group_size, symmetric=symmetric)
                d = qw.dequantize(np.float64) - w[rows]
                e_row.append(scale * float(((d * d) @ h).sum()))
                c_row.append(8.0 * qw.nbytes)
                m_row.append(qw)
            errors.append(e_row)
            costs.append(c_row)
            mats.append(m_row)
    err = np.array(errors)
    cost = np.array(costs)
    n_weights = sum(w.size for w in ws)
    budget = float(target_bits) * n_weights
    level = np.zeros(len(units), dtype=int)
    if cost[:, 0].sum() > budget * (1 + 1e-12):
        raise InvalidInputError(
            f"allocate_bits: target_bits must allow the smallest candidate everywhere (≥ "
            f"{cost[:, 0].sum() / n_weights:.4f} here); got {target_bits}."
        )
    spent = cost[:, 0].sum()
    while True:
        best, best_gain = -1, -np.inf
        for u in range(len(units)):
            lv = level[u]
            if lv + 1 >= len(cands):
                continue
            extra = cost[u, lv + 1] - cost[u, lv]
            if spent + extra > budget * (1 + 1e-12):
                continue
            gain = (err[u, lv] - err[u, lv + 1]) / extra
            if gain > best_gain:
                best, best_gain = u, gain
        if best < 0:
            break
        spent += cost[best, level[best] + 1] - cost[best, level[best]]
        level[best] += 1
    bits = [cands[lv] for lv in level]
    chosen = [mats[u][lv] for u, lv in enumerate(level)]
    total_err = float(sum(err[u, lv] for u, lv in enumerate(level)))
    return BitPlan(bits, units, chosen, float(spent / n_weights), total_err, cands, err)
