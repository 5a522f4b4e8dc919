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

from ...core.args import flag, integer, number, real_array, sequence
from ...errors import InvalidInputError
from .formats import BITS, QuantizedMatrix, check_bits, check_group_size, check_weights, quantize

__all__ = ["BitPlan", "FusedPlan", "allocate_bits", "channel_importance"]


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

    def __post_init__(self) -> None:
        _check_plan(self)

    def layer_bits(self, layer: int) -> list[int]:
        """Bits of the units of one layer."""
        return [b for b, (li, _) in zip(self.bits, self.units, strict=True) if li == layer]

    def dequantize(self, layer: int) -> np.ndarray:
        """Effective weights of one layer (its units' rows stacked), float32."""
        return np.concatenate([m.dequantize() for m, (li, _) in
                               zip(self.matrices, self.units, strict=True) if li == layer])


def _check_plan(p: BitPlan) -> None:
    """A BitPlan's fields agree: one bit width, unit and matrix per unit, each matrix of its
    unit's rows, finite error figures (what :class:`FusedPlan` and the methods rely on)."""
    w = "BitPlan"
    bits = sequence(w, "bits", p.bits)
    units = sequence(w, "units", p.units)
    mats = sequence(w, "matrices", p.matrices)
    cands = sequence(w, "candidates", p.candidates)
    for b in (*bits, *cands):
        check_bits(w + ": bits and candidates", b)
    if not len(bits) == len(units) == len(mats):
        raise InvalidInputError(
            f"{w}: bits, units and matrices must have one entry per unit; got lengths "
            f"{len(bits)}, {len(units)}, {len(mats)}.")
    for i, (u, m) in enumerate(zip(units, mats, strict=True)):
        ok = (isinstance(u, tuple) and len(u) == 2 and isinstance(u[1], slice)
              and isinstance(u[0], numbers.Integral) and not isinstance(u[0], bool)
              and u[0] >= 0)
        if not ok:
            raise InvalidInputError(
                f"{w}: units[{i}] must be a (layer index ≥ 0, row slice) pair; got {u!r}.")
        if not isinstance(m, QuantizedMatrix):
            raise InvalidInputError(
                f"{w}: matrices[{i}] must be a QuantizedMatrix; got {type(m).__name__}.")
        rows = u[1]
        if (not all(isinstance(v, numbers.Integral) for v in (rows.start, rows.stop))
                or rows.step not in (None, 1) or rows.stop - rows.start != m.out_features
                or rows.start < 0):
            raise InvalidInputError(
                f"{w}: units[{i}] must slice the {m.out_features} rows of matrices[{i}] "
                f"(slice(start, start + {m.out_features})); got {rows!r}.")
        if m.bits != bits[i]:
            raise InvalidInputError(
                f"{w}: bits[{i}] must be the width of matrices[{i}] ({m.bits}); got {bits[i]!r}.")
    layers = {u[0] for u in units}
    if layers != set(range(len(layers))):
        raise InvalidInputError(
            f"{w}: units must cover layers 0…{len(layers) - 1} without gaps; got layers "
            f"{sorted(layers)}.")
    number(w, "average_bits", p.average_bits, lo=0.0)
    number(w, "error", p.error, lo=0.0)
    errs = real_array(w, "errors", p.errors, ndim=2, nonempty=False)
    if errs.shape != (len(units), len(cands)):
        raise InvalidInputError(
            f"{w}: errors must have shape (units, candidates) = {(len(units), len(cands))}; "
            f"got {errs.shape}.")


def channel_importance(X: Any) -> np.ndarray:
    """Hessian-diagonal proxy ``mean_t x_tc²`` of calibration inputs X (tokens, in).

    ``X`` is a finite 2-D array of real numbers (tokens ≥ 1, in); values whose square
    would overflow float64 are refused.
    """
    arr = real_array("channel_importance", "X", X, ndim=2)
    big = float(np.abs(arr).max())
    limit = float(np.sqrt(np.finfo(np.float64).max / arr.shape[0]))
    if big >= limit:
        raise InvalidInputError(
            f"channel_importance: X must have |values| whose squares sum within float64 "
            f"(below about {limit:.3g}); got "
            f"{big:.3g}. Rescale X.")
    return (arr**2).mean(axis=0)


def _importance(i: int, imp: Any, n_in: int) -> tuple[np.ndarray, float]:
    """(h of shape (in,), λ) for layer i from None, a scalar, h (in,) or activations (t, in)."""
    if imp is None:
        return np.ones(n_in), 1.0
    name = f"importance[{i}]"
    if isinstance(imp, numbers.Real) and not isinstance(imp, bool):
        return np.ones(n_in), number("allocate_bits", name, imp, lo=0.0)
    arr = real_array("allocate_bits", name, imp, nonempty=False)
    if arr.ndim == 2 and arr.shape[1] == n_in:
        try:
            return channel_importance(arr), 1.0
        except InvalidInputError as exc:
            raise InvalidInputError(f"allocate_bits: {name}: {exc}") from None
    if arr.shape == (n_in,) and (arr >= 0).all():
        return arr, 1.0
    raise InvalidInputError(
        f"allocate_bits: importance[{i}] must be None, a number ≥ 0, channel importances of "
        f"shape ({n_in},) or calibration inputs of shape (tokens, {n_in}) for layers[{i}]; "
        f"got shape {arr.shape}."
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
    where = "allocate_bits"
    if isinstance(layers, np.ndarray) and layers.ndim == 2:
        raise InvalidInputError(
            f"{where}: layers must be a list of weight matrices; got one 2-D array (pass "
            "[w]).")
    layers = sequence(where, "layers", layers)
    listed = sequence(where, "candidates", candidates, nonempty=False)
    if not listed or not all(isinstance(b, numbers.Integral) and not isinstance(b, bool)
                             and int(b) in BITS for b in listed):
        raise InvalidInputError(
            f"allocate_bits: candidates must be a non-empty subset of {BITS}; got {candidates!r}."
        )
    cands = tuple(sorted({int(b) for b in listed}))
    if importance is not None:
        importance = sequence(where, "importance", importance)
        if len(importance) != len(layers):
            raise InvalidInputError(
                f"{where}: importance must have one entry per layer (matrix of layers) "
                f"({len(layers)}); got {len(importance)}.")
    target = number(where, "target_bits", target_bits, lo=0.0, lo_open=True)
    if block_rows is not None:
        block_rows = integer(where, "block_rows", block_rows, 1, 2**62)
    relative = flag(where, "relative", relative)
    group_size = check_group_size(where, group_size)
    symmetric = flag(where, "symmetric", symmetric)
    ws = [check_weights(f"{where}: layers[{i}]", w).astype(np.float64)
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
                try:  # a matrix that cannot be quantized is refused naming it
                    qw = quantize(w[rows], bits=b, group_size=group_size, symmetric=symmetric)
                except InvalidInputError as exc:
                    raise InvalidInputError(f"{where}: layers[{i}]: {exc}") from None
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
    budget = target * n_weights
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


class FusedPlan:
    """The GEMVs of every layer of a :class:`BitPlan`, run in one numba call.

    Built once per plan (the units' packed words, scales and zero points are concatenated);
    each call prepares every layer's activations, then one parallel kernel computes all
    units' rows, whatever their widths (:mod:`._numba_mixed`: AVX2 integer block dots,
    the exactness of the AVX2 path, tolerance of :mod:`.spec`). Where that kernel cannot run
    — a CPU without AVX2, a group size not a multiple of 128, ``use_w4_path("float32")``, or
    activation outliers in a 128-block (see :mod:`._numba_avx2`) — each unit runs through the
    numba ``gemv_q`` instead (same results within the tolerance; :attr:`path` says which).

    Parameters
    ----------
    plan : BitPlan
        From :func:`allocate_bits`.

    Attributes
    ----------
    in_features, out_features : list of int
        Per layer.

    Examples
    --------
    >>> import numpy as np
    >>> from hetlab import quant
    >>> rng = np.random.default_rng(0)
    >>> ws = [rng.normal(0, s, (64, 256)) for s in (1.0, 0.1)]
    >>> plan = quant.allocate_bits(ws, 3.75, candidates=(3, 4), importance=[10.0, 1.0])
    >>> run = quant.FusedPlan(plan)
    >>> xs = [rng.standard_normal(256) for _ in ws]
    >>> ys = run(xs)
    >>> [y.shape for y in ys]
    [(64,), (64,)]
    >>> ref = [plan.dequantize(i) @ x for i, x in enumerate(xs)]
    >>> all(np.abs(y - r).max() <= 1e-4 * np.abs(r).max() for y, r in zip(ys, ref))
    True
    """

    def __init__(self, plan: BitPlan) -> None:
        if not isinstance(plan, BitPlan):
            raise InvalidInputError(
                f"FusedPlan: plan must be a BitPlan (from hetlab.quant.allocate_bits); got "
                f"{type(plan).__name__}.")
        self.plan = plan
        n_layers = max(li for li, _ in plan.units) + 1
        self._first: list[QuantizedMatrix | None] = [None] * n_layers
        self.out_features = [0] * n_layers
        for qw, (li, rows) in zip(plan.matrices, plan.units, strict=True):
            first = self._first[li]
            if first is not None and first.in_features != qw.in_features:
                raise InvalidInputError(
                    f"FusedPlan: the units of layer {li} must share in_features; got "
                    f"{first.in_features} and {qw.in_features}.")
            self._first[li] = first or qw
            self.out_features[li] = max(self.out_features[li], rows.stop)
        if any(f is None for f in self._first):
            raise InvalidInputError(f"FusedPlan: every layer 0…{n_layers - 1} needs a unit.")
        self.in_features = [f.in_features for f in self._first]  # type: ignore[union-attr]
        self._yoff = np.concatenate([[0], np.cumsum(self.out_features)]).astype(np.int64)
        self._fusable = all(m.group_size % 128 == 0 for m in plan.matrices)
        if self._fusable:
            self._build()

    def _build(self) -> None:
        from ._numba_avx2 import KIND_OF_BITS, TOP
        from ._numba_w4 import BLOCK_ROWS
        from ._simd_avx2 import KINDS

        keys: dict[tuple[int, int, int, int], tuple[int, int, int]] = {}
        xl = xf = xs = 0
        meta, q, s, z = [], [], [], []
        qoff = soff = zoff = 0
        for qw, (li, rows) in zip(self.plan.matrices, self.plan.units, strict=True):
            kind = KIND_OF_BITS[qw.bits]
            key = (li, qw.group_size, KINDS[kind][0], TOP[kind])
            if key not in keys:
                keys[key] = (xl, xf, xs)
                xl, xf, xs = xl + 3 * qw.padded_in, xf + qw.padded_in // 128, xs + qw.n_groups
            nw, ng = qw.qweight.shape[1], qw.n_groups
            meta.append((qw.bits, qw.group_size, nw, qoff, soff, ng,
                         -1 if qw.zeros is None else zoff, self._yoff[li] + rows.start,
                         *keys[key], qw.out_features))
            q.append(qw.qweight.reshape(-1))
            s.append(qw.scales.view(np.uint16).reshape(-1))
            if qw.zeros is not None:
                z.append(qw.zeros.view(np.uint16).reshape(-1))
                zoff += qw.zeros.size
            qoff += qw.qweight.size
            soff += qw.scales.size
        self._keys = keys
        self._sizes = (xl, xf, xs)
        self._meta = np.array(meta, dtype=np.int64)
        self._q = np.concatenate(q)
        self._s = np.concatenate(s)
        self._z = np.concatenate(z) if z else np.zeros(1, np.uint16)
        items = [(u, r0) for u, m in enumerate(meta) for r0 in range(0, m[-1], BLOCK_ROWS)]
        self._items = np.array(items, dtype=np.int64).reshape(-1, 2)

    @property
    def path(self) -> str:
        """"avx2" where the fused kernel runs (this CPU, these formats), else "float32"."""
        from .numba import w4_path, w4_paths

        ok = self._fusable and "avx2" in w4_paths() and w4_path("gemv") != "float32"
        return "avx2" if ok else "float32"

    def _check(self, xs: Any) -> list[np.ndarray]:
        from .spec import _check_activations

        n = len(self.in_features)
        if isinstance(xs, np.ndarray) and xs.ndim == 1 and len(set(self.in_features)) == 1:
            xs = [xs] * n
        if isinstance(xs, (str, bytes)) or not isinstance(xs, Sequence) or len(xs) != n:
            got = f"length {len(xs)}" if isinstance(xs, Sequence) else type(xs).__name__
            raise InvalidInputError(
                f"FusedPlan: xs must be a sequence of {n} activation vectors, one per layer "
                f"(in_features {self.in_features}); got {got}.")
        return [_check_activations("FusedPlan", f"xs[{i}]", x, first, 1)
                for i, (x, first) in enumerate(zip(xs, self._first, strict=True))]

    def __call__(self, xs: Any) -> list[np.ndarray]:
        """``[W_i @ xs[i] for each layer i]``, float32 arrays of shape (out_i,).

        Parameters
        ----------
        xs : sequence of array-like (in_i,), float, finite in float32
            One vector per layer (a single vector when all layers share ``in``).
        """
        import numba

        from ._numba_avx2 import prepare_bits
        from ._numba_mixed import fused_gemv
        from .formats import F16_TO_F32

        xs = self._check(xs)
        out = np.empty(int(self._yoff[-1]), np.float32)
        if self.path == "avx2":
            xl = np.empty(self._sizes[0], np.int8)
            xf = np.empty(self._sizes[1], np.float32)
            xsum = np.empty(self._sizes[2], np.float32)
            ok = True
            for (li, gs, nsplit, top), (a, b, c) in self._keys.items():
                pl, pf, pok, ps = prepare_bits(xs[li], gs, nsplit, top)
                xl[a:a + pl.size], xf[b:b + pf.size], xsum[c:c + ps.size] = pl, pf, ps
                ok = ok and bool(pok)
            if ok:
                fused_gemv(self._q, self._s, self._z, F16_TO_F32, self._meta, self._items, xl,
                           xf, xsum, out, numba.get_num_threads())
                return [out[a:b] for a, b in zip(self._yoff[:-1], self._yoff[1:], strict=True)]
        from .numba import gemv_q

        for qw, (li, rows) in zip(self.plan.matrices, self.plan.units, strict=True):
            y0 = int(self._yoff[li])
            out[y0 + rows.start:y0 + rows.stop] = gemv_q(qw, xs[li])
        return [out[a:b] for a, b in zip(self._yoff[:-1], self._yoff[1:], strict=True)]
