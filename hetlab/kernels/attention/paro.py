"""PARO-style token reordering and block-sparse, block-quantized attention (numpy reference).

Token grid
    n = F·H·W tokens numbered row-major in (frame, height, width). An *axis order* names the
    axes from slowest to fastest ("FHW" is the given order, "WHF" puts frames fastest);
    :func:`grid_permutation` flattens the grid in that order.
Block-diagonal mass (the reorder measure)
    For a permutation π and blocks of ``block`` consecutive positions in the new order,
    ``mass(π) = mean_i Σ_{j in the block of i} P_ij``, P the exact softmax map; queries: all,
    or an evenly strided sample of :data:`MASS_QUERIES`. A head whose mass is high has a
    block-wise map in that order, which is what block sparsity and per-block quantization need.
Mask (per call by default, or static)
    Per head and query block ``I``, key blocks are ranked by ``|J|·exp(ŝ_IJ − max_J ŝ_IJ)``
    with ``ŝ_IJ = scale · mean(q_I) · mean(k_J)`` (block-pooled scores); the diagonal block is
    always kept, then the best up to ``round(density · n_blocks)`` (at least 1), stable ties
    (:func:`block_plan`). *Per call* (the default: ``mask=None``) this selection is made
    from the call's own q and k, O((n/block)²·d) — a few percent of the attention — and
    follows whatever the input attends to. *Static* (PARO's choice): the same selection made
    once on calibration inputs (:func:`hetlab.kernels.attention.calibrate_block_mask`) and
    passed as ``mask`` to later calls, which then skip the selection; it assumes the heads
    attend the same way on later inputs (PARO's observation for reordered visual heads).
    Per call stays the default because a call carries no calibration set and a stale mask
    fails silently (the error table of :func:`.evaluate.static_mask_report` measures how
    much a static mask loses on inputs it was not calibrated on).
Quantization (``bits`` = 8 or 4, ``Q = 2^(bits−1) − 1``)
    k is smoothed first (its mean over tokens subtracted: every score of a query moves by
    the same amount, so the softmax is unchanged). q, k and v: per head and block of tokens,
    symmetric, scale ``max|x| / Q`` (1 for an
    all-zero block), ``round(x / scale)`` half away from zero. Scores of a block pair:
    ``(Σ q̂·k̂) · s_q · s_k · scale`` — exact integer dots. Weights: with online softmax
    (key blocks in ascending order, running max m), ``P = exp(S − m)`` ∈ (0, 1] is
    quantized per block with scale ``max(P) / Q`` (half up), ``l`` sums the unquantized P,
    and ``acc += (P̂ · v̂) · s_P · s_v``. Integer dots make the numba kernel reproduce this
    reference up to the last bits of ``exp``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .reference import softmax_rows

__all__ = ["AXIS_ORDERS", "MASS_QUERIES", "grid_permutation", "order_names", "reorder_masses",
           "attention_reorder", "block_plan", "quantize_blocks", "permute", "unpermute",
           "block_sparse_attention", "planted_grid", "qmax", "quantized_operands"]

_AXES = "FHW"
#: the 6 axis orders, slowest axis first, as names and as axis tuples
AXIS_ORDERS: tuple[str, ...] = tuple("".join(_AXES[a] for a in p)
                                     for p in itertools.permutations(range(3)))
#: most queries whose softmax rows measure the block-diagonal mass
MASS_QUERIES = 1024


def _axes(name: str) -> tuple[int, int, int]:
    return tuple(_AXES.index(c) for c in name)  # type: ignore[return-value]


def grid_permutation(grid: tuple[int, int, int], name: str) -> np.ndarray:
    """Token indices flattened in axis order ``name`` (slowest first), int64 of length n.

    >>> grid_permutation((1, 2, 3), "FWH").tolist()
    [0, 3, 1, 4, 2, 5]
    """
    return np.arange(int(np.prod(grid))).reshape(grid).transpose(_axes(name)).ravel()


def order_names(order: np.ndarray, grid: tuple[int, int, int]) -> list[str | None]:
    """The axis-order name of each head's permutation (None: not one of the 6)."""
    perms = {n: grid_permutation(tuple(grid), n) for n in AXIS_ORDERS}  # type: ignore[arg-type]
    return [next((n for n, p in perms.items() if np.array_equal(p, row)), None)
            for row in np.asarray(order)]


def reorder_masses(q: np.ndarray, k: np.ndarray, grid: tuple[int, int, int],
                   block: int) -> np.ndarray:
    """Block-diagonal mass of every head (rows) under every axis order (columns, in
    :data:`AXIS_ORDERS` order), float64 of shape (heads, 6)."""
    h, n, d = q.shape
    idx = np.linspace(0, n - 1, min(n, MASS_QUERIES)).round().astype(np.int64)
    bids = []
    for name in AXIS_ORDERS:
        inv = np.empty(n, np.int64)
        inv[grid_permutation(grid, name)] = np.arange(n)
        bids.append(inv // block)
    out = np.zeros((h, len(AXIS_ORDERS)))
    k64 = k.astype(np.float64)
    for c0 in range(0, idx.size, 256):
        rows = idx[c0:c0 + 256]
        p = softmax_rows(np.einsum("hid,hjd->hij", q[:, rows].astype(np.float64), k64)
                         / math.sqrt(d))
        for o, bid in enumerate(bids):
            same = bid[None, :] == bid[rows][:, None]
            out[:, o] += (p * same[None]).sum(axis=(1, 2))
    return out / idx.size


def attention_reorder(q: np.ndarray, k: np.ndarray, grid: tuple[int, int, int],
                      block: int = 64) -> np.ndarray:
    """Reference of :func:`hetlab.attention_reorder` (validated arguments): per head the
    permutation of the axis order with the largest block-diagonal mass."""
    best = reorder_masses(q, k, grid, block).argmax(axis=1)
    return np.stack([grid_permutation(grid, AXIS_ORDERS[b]) for b in best])


def permute(x: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    """Tokens of each head in ``order`` (contiguous copy; ``x`` itself when order is None)."""
    if order is None:
        return x
    return np.ascontiguousarray(np.take_along_axis(x, order[:, :, None], axis=1))


def unpermute(y: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    """Undo :func:`permute` on an output of shape (heads, n, d_v)."""
    if order is None:
        return y
    out = np.empty_like(y)
    for h in range(y.shape[0]):
        out[h, order[h]] = y[h]
    return out


def qmax(bits: int) -> int:
    """Largest quantized magnitude of a symmetric ``bits``-bit integer: 127 or 7."""
    return (1 << (bits - 1)) - 1


def quantize_blocks(x: np.ndarray, block: int, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric per-(head, token block) quantization: ``(codes int8 like x, scales float64
    of shape (heads, n_blocks))``; ``x ≈ codes · scale`` of the token's block."""
    h, n, _ = x.shape
    nb = -(-n // block)
    qm = qmax(bits)
    x64 = x.astype(np.float64)
    pad = np.zeros((h, nb * block, x.shape[2]))
    pad[:, :n] = np.abs(x64)
    scales = pad.reshape(h, nb, -1).max(axis=2) / qm
    scales[scales == 0] = 1.0
    per_token = np.repeat(scales, block, axis=1)[:, :n, None]
    codes = np.sign(x64) * np.floor(np.abs(x64) / per_token + 0.5)
    return np.clip(codes, -qm, qm).astype(np.int8), scales


def quantized_operands(qp: np.ndarray, kp: np.ndarray, vp: np.ndarray, block: int,
                       bits: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """``(codes, scales)`` of q, k and v (already permuted); k is first smoothed by
    subtracting its mean over the tokens of each head (SageAttention's trick: it shifts
    every score of a query by the same amount, so the softmax is unchanged, and removes the
    channel offsets that would otherwise set k's block scales)."""
    k64 = kp.astype(np.float64)
    ks = k64 - k64.mean(axis=1, keepdims=True)
    return tuple(quantize_blocks(x, block, bits) for x in (qp, ks, vp))


def block_plan(q: np.ndarray, k: np.ndarray, density: float, block: int) -> np.ndarray:
    """Kept key blocks per (head, query block), ascending: int64 (heads, n_blocks, keep)."""
    h, n, d = q.shape
    nb = -(-n // block)
    sizes = np.minimum(block, n - block * np.arange(nb)).astype(np.float64)

    def pooled(x: np.ndarray) -> np.ndarray:
        pad = np.zeros((h, nb * block, d))
        pad[:, :n] = x
        return pad.reshape(h, nb, block, d).sum(axis=2) / sizes[None, :, None]

    est = np.einsum("hid,hjd->hij", pooled(q), pooled(k)) / math.sqrt(d)
    mass = sizes[None, None, :] * np.exp(est - est.max(axis=2, keepdims=True))
    mass[:, np.arange(nb), np.arange(nb)] = np.inf
    keep = max(1, min(nb, int(density * nb + 0.5)))
    kept = np.argsort(-mass, axis=2, kind="stable")[:, :, :keep]
    return np.sort(kept, axis=2)


def block_sparse_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray,
                           order: np.ndarray | None = None, density: float = 0.25,
                           bits: int | None = 8, block: int = 64,
                           mask: np.ndarray | None = None) -> np.ndarray:
    """Reference of :func:`hetlab.block_sparse_attention` (validated arguments, float64);
    ``mask``: a static plan (kept key blocks per head and query block) used instead of
    :func:`block_plan`."""
    qp, kp, vp = permute(q, order), permute(k, order), permute(v, order)
    kept = block_plan(qp, kp, density, block) if mask is None else mask
    h, n, d = q.shape
    scale = 1.0 / math.sqrt(d)
    out = np.empty((h, n, v.shape[2]))
    if bits:
        (qi, sq), (ki, sk), (vi, sv) = quantized_operands(qp, kp, vp, block, bits)
        qi, ki, vi = (x.astype(np.int64) for x in (qi, ki, vi))
        qm = qmax(bits)
    q64, k64, v64 = (x.astype(np.float64) for x in (qp, kp, vp))
    for hh in range(h):
        for bi in range(kept.shape[1]):
            r0, r1 = bi * block, min(n, bi * block + block)
            m = np.full(r1 - r0, -np.inf)
            lsum = np.zeros(r1 - r0)
            acc = np.zeros((r1 - r0, v.shape[2]))
            for bj in kept[hh, bi]:
                c0, c1 = bj * block, min(n, bj * block + block)
                if bits:
                    s = (qi[hh, r0:r1] @ ki[hh, c0:c1].T).astype(np.float64) * (
                        sq[hh, bi] * sk[hh, bj] * scale)
                else:
                    s = (q64[hh, r0:r1] @ k64[hh, c0:c1].T) * scale
                m_new = np.maximum(m, s.max(axis=1))
                alpha = np.exp(m - m_new)
                p = np.exp(s - m_new[:, None])
                lsum = lsum * alpha + p.sum(axis=1)
                if bits:
                    sp = p.max() / qm
                    pq = np.floor(p / sp + 0.5).astype(np.int64)
                    pv = (pq @ vi[hh, c0:c1]).astype(np.float64) * (sp * sv[hh, bj])
                else:
                    pv = p @ v64[hh, c0:c1]
                acc = acc * alpha[:, None] + pv
                m = m_new
            out[hh, r0:r1] = acc / lsum[:, None]
    return unpermute(out, order).astype(q.dtype)


def planted_grid(grid: tuple[int, int, int], orders: list[str], d: int,
                 rng: np.random.Generator, sharpness: float = 1.0) -> tuple[np.ndarray, ...]:
    """Synthetic q, k, v (heads = len(orders), n, d) whose attention is planted to be local
    along a grid: head h's score is ``−Σ_a α_a (x_ia − x_ja)²`` with the smallest α on the
    fastest axis of ``orders[h]`` (0.1), then 0.5, and 3 on its slowest axis (times
    ``sharpness``), so ``orders[h]`` is the order that makes it block-wise. d ≥ 5; the
    remaining features and v are standard normal noise (q, k noise scaled by 0.05).
    """
    n = int(np.prod(grid))
    coords = np.indices(grid).reshape(3, n).T.astype(np.float64)
    coords -= coords.mean(axis=0)
    heads = len(orders)
    q = 0.05 * rng.standard_normal((heads, n, d))
    k = 0.05 * rng.standard_normal((heads, n, d))
    root = math.sqrt(d)
    for h, name in enumerate(orders):
        alpha = np.empty(3)
        alpha[list(_axes(name))] = np.array([3.0, 0.5, 0.1]) * sharpness
        sq = (alpha * coords**2).sum(axis=1)
        q[h, :, :3] = 2 * alpha * coords * root
        q[h, :, 3], q[h, :, 4] = -sq * root, root
        k[h, :, :3] = coords
        k[h, :, 3], k[h, :, 4] = 1.0, -sq
    v = rng.standard_normal((heads, n, d))
    return q, k, v
