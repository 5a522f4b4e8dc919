"""Public attention kernels: ``hl.attention``, ``hl.decode_attention``,
``hl.attention_reorder`` and ``hl.block_sparse_attention``; the family's registration block."""

from __future__ import annotations

from typing import Any

from ...backends.base import Backend
from ...core.dispatch import run
from ...core.registry import register_impl, register_kernel
from .paro_spec import ATTENTION_REORDER, BLOCK_SPARSE_ATTENTION
from .spec import ATTENTION, DECODE_ATTENTION

__all__ = ["attention", "decode_attention", "decode_attention_info", "attention_reorder",
           "block_sparse_attention", "calibrate_block_mask"]

# registration: the family's one place (specs, then implementations imported on first use)
for _spec in (ATTENTION, DECODE_ATTENTION, ATTENTION_REORDER, BLOCK_SPARSE_ATTENTION):
    register_kernel(_spec)
register_impl("attention", "numba", "hetlab.kernels.attention.numba:attention")
register_impl("attention", "cupy", "hetlab.kernels.attention.cupy:attention")
register_impl("decode_attention", "numba", "hetlab.kernels.attention.numba:decode_attention")
register_impl("decode_attention", "cupy", "hetlab.kernels.attention.cupy:decode_attention")
register_impl("block_sparse_attention", "numba",
              "hetlab.kernels.attention.numba_paro:block_sparse_attention")


def attention(q: Any, k: Any, v: Any, causal: bool = False, *,
              device: str | Backend | None = None, keep_on_device: bool = False) -> Any:
    """Scaled dot-product attention per head: ``softmax(q kᵀ / √d) v``.

    Parameters
    ----------
    q : array-like of shape (heads, n_q, d)
        Queries, float32/float64 (integers → float64), finite; 1 ≤ d ≤ 256.
    k : array-like of shape (heads, n_k, d)
        Keys.
    v : array-like of shape (heads, n_k, d_v)
        Values; 1 ≤ d_v ≤ 256. The three are cast to their common dtype.
    causal : bool, default False
        Key ``j`` visible to query ``i`` only when ``j ≤ i`` (n_q = n_k), or, with one query
        (n_q = 1, decode), every key.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        ``"numpy"`` (default for host arrays) is the float64 reference; ``"numba"`` the tiled
        flash attention (online softmax, multithreaded over heads × query tiles); ``"cupy"``
        the numba.cuda flash kernel.
    keep_on_device : bool, default False
        Return a device array instead of copying the result back to the host.

    Returns
    -------
    ndarray of shape (heads, n_q, d_v), the common dtype
        Equal to the reference within ``hl.attention.spec.tolerance`` (1e-4 of max|o|; the
        derivation is in :mod:`hetlab.kernels.attention.spec`).

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> q = np.zeros((1, 2, 4), np.float32); v = np.arange(8, dtype=np.float32).reshape(1, 2, 4)
    >>> hl.attention(q, q, v, causal=True, device="numba")
    array([[[0., 1., 2., 3.],
            [2., 3., 4., 5.]]], dtype=float32)
    """
    return run(ATTENTION, device, keep_on_device, q=q, k=k, v=v, causal=causal)


attention.spec = ATTENTION  # type: ignore[attr-defined]


def decode_attention(q1: Any, k_cache: Any, v_cache: Any, softmax: str = "synchronized",
                     parts: int = 0, *, device: str | Backend | None = None,
                     keep_on_device: bool = False) -> Any:
    """Attention of one new query per head against a KV cache (the decode step).

    Parameters
    ----------
    q1 : array-like of shape (heads, d)
        The new token's query per head.
    k_cache : array-like of shape (heads, n, d)
    v_cache : array-like of shape (heads, n, d_v)
    softmax : {"synchronized", "unified-max"}, default "synchronized"
        How the cache's parts agree on the softmax maximum: each its own, rescaled when they
        are combined (FlashDecoding), or one φ chosen from the inputs with a recompute of the
        parts whose scores leave φ's safe range (FlashDecoding++; details in
        :mod:`hetlab.kernels.attention.numba`). The result is the same within tolerance.
    parts : int, default 0
        Parts the cache is split into; 0 chooses from ``n`` and the thread count.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        ``"numpy"``: the exact reference (ignores ``softmax`` and ``parts``).
    keep_on_device : bool, default False

    Returns
    -------
    ndarray of shape (heads, d_v), the common dtype

    See Also
    --------
    decode_attention_info : the same call, plus how many parts fell back.

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> k = np.zeros((1, 3, 2)); v = np.array([[[3.0, 0.0], [0.0, 3.0], [3.0, 3.0]]])
    >>> hl.decode_attention(np.ones((1, 2)), k, v, softmax="unified-max", device="numba")
    array([[2., 2.]])
    """
    return run(DECODE_ATTENTION, device, keep_on_device, q1=q1, k_cache=k_cache,
               v_cache=v_cache, softmax=softmax, parts=parts)


decode_attention.spec = DECODE_ATTENTION  # type: ignore[attr-defined]


def decode_attention_info(q1: Any, k_cache: Any, v_cache: Any,
                          softmax: str = "unified-max", parts: int = 0) -> tuple[Any, Any]:
    """The numba decode attention of host arrays and its :class:`~.numba.DecodeStats`: parts
    per head, recomputed (fallback) parts per head, φ per head.

    Examples
    --------
    >>> import numpy as np
    >>> k = np.zeros((2, 8, 4)); k[1, 5] = 40.0        # head 1: one key scores 80, the rest 0
    >>> o, info = decode_attention_info(np.ones((2, 4)), k, np.ones((2, 8, 4)), parts=4)
    >>> info.recomputed.tolist(), info.parts  # φ₁ ≈ 88: head 1's other 3 parts sit > 30 below
    ([0, 3], 4)
    """
    from .numba import decode_attention_stats

    kw = DECODE_ATTENTION.validate(q1, k_cache, v_cache, softmax, parts)
    return decode_attention_stats(**kw)


def attention_reorder(q: Any, k: Any, grid: Any, block: int = 64, *,
                      device: str | Backend | None = None, keep_on_device: bool = False) -> Any:
    """PARO token reordering: per head, the flattening order of a (F, H, W) token grid that
    concentrates the most attention mass in diagonal blocks.

    Tokens are numbered row-major in (frame, height, width). For each head and each of the 6
    axis orders (:data:`hetlab.kernels.attention.paro.AXIS_ORDERS`) the tokens are flattened
    in that order and the *block-diagonal mass* is measured: the mean, over queries, of the
    softmax weight a query puts on keys in its own block of ``block`` consecutive tokens
    (queries: all, or an evenly strided sample of 1024). The order with the largest mass
    wins (ties: the first).

    Parameters
    ----------
    q : array-like of shape (heads, n, d)
    k : array-like of shape (heads, n, d)
    grid : array-like of 3 positive ints
        (F, H, W) with F·H·W = n.
    block : int, default 64
        Block edge, in tokens (as in :func:`block_sparse_attention`).
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
    keep_on_device : bool, default False

    Returns
    -------
    ndarray of shape (heads, n), int64
        ``order[h]``: the token indices in their new order (a permutation of 0…n−1), to pass
        as ``block_sparse_attention(..., order=order)``.

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> from hetlab.kernels.attention import paro
    >>> q, k, v = paro.planted_grid((4, 4, 4), ["WHF"], d=8, rng=np.random.default_rng(0))
    >>> order = hl.attention_reorder(q, k, grid=(4, 4, 4), block=8)
    >>> paro.order_names(order, (4, 4, 4))
    ['WHF']
    """
    return run(ATTENTION_REORDER, device, keep_on_device, q=q, k=k, grid=grid, block=block)


attention_reorder.spec = ATTENTION_REORDER  # type: ignore[attr-defined]


def block_sparse_attention(q: Any, k: Any, v: Any, order: Any = None, density: float = 0.25,
                           bits: int | None = 8, block: int = 64, mask: Any = None, *,
                           device: str | Backend | None = None,
                           keep_on_device: bool = False) -> Any:
    """PARO-style block-sparse attention with per-block INT8/INT4 quantization.

    The tokens of each head are permuted by ``order`` (e.g. from :func:`attention_reorder`);
    the n × n map is cut into ``block × block`` blocks; each query block keeps its diagonal
    block and the blocks of highest estimated mass up to ``density`` of the key blocks; the
    output is un-permuted. By default (``mask=None``) the mask is computed **per call** from
    block-pooled scores (``scale · mean(q_I) · mean(k_J)``, O((n/block)²·d)); a **static**
    mask, PARO's offline one, is the same selection made once on calibration inputs by
    :func:`calibrate_block_mask` and passed as ``mask`` (the selection is then skipped).
    Per call is the default: it needs no calibration set and cannot go stale. With
    ``bits``, q·kᵀ runs on q and k quantized per block of tokens (a scale per block,
    symmetric, round half up) and p·v on the weights ``exp(s − m)`` quantized per block
    (scale: the block's largest weight / (2^(bits−1) − 1)) and v quantized per token block;
    the dot products are exact integers, scales applied after. Details:
    :mod:`hetlab.kernels.attention.paro`.

    Parameters
    ----------
    q, k : array-like of shape (heads, n, d)
    v : array-like of shape (heads, n, d_v)
    order : array-like of shape (heads, n), int, optional
        A permutation of 0…n−1 per head; None keeps the given order.
    density : float, default 0.25
        Fraction of key blocks kept per query block, in (0, 1] (at least one: the diagonal).
    bits : {8, 4} or None, default 8
        Integer width of the quantized products; None computes them in floating point.
    block : int, default 64
        Block edge, in tokens, 1 ≤ block ≤ 1024.
    mask : array-like of shape (heads, n_blocks, keep), int, optional
        A static mask: per head and query block, the kept key blocks (positions in the
        ``order``-permuted tokens), e.g. from :func:`calibrate_block_mask` with the same
        ``order`` and ``block``. It replaces the per-call selection, so ``density`` is not
        used (the mask's ``keep / n_blocks`` is its density). None: chosen per call.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        ``"numpy"`` is the reference of this approximation (float64); ``"numba"`` equals it
        within 1e-4 of max|o|. The error against *dense* attention is what
        :func:`hetlab.kernels.attention.evaluate.error_report` measures.
    keep_on_device : bool, default False

    Returns
    -------
    ndarray of shape (heads, n, d_v), the common dtype

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = (rng.standard_normal((1, 16, 8)) for _ in range(3))
    >>> dense = hl.attention(q, k, v)
    >>> full = hl.block_sparse_attention(q, k, v, density=1.0, bits=None, block=4)
    >>> bool(np.allclose(full, dense))
    True
    """
    return run(BLOCK_SPARSE_ATTENTION, device, keep_on_device, q=q, k=k, v=v, order=order,
               density=density, bits=bits, block=block, mask=mask)


block_sparse_attention.spec = BLOCK_SPARSE_ATTENTION  # type: ignore[attr-defined]


def calibrate_block_mask(q: Any, k: Any, order: Any = None, density: float = 0.25,
                         block: int = 64) -> Any:
    """A static block mask for :func:`block_sparse_attention`, calibrated once (PARO).

    The per-call selection (:func:`hetlab.kernels.attention.paro.block_plan`: per head and
    query block, the diagonal block and the key blocks of highest block-pooled score, up to
    ``density``), made on calibration queries and keys after the ``order`` permutation and
    returned for later calls of the same shape: ``block_sparse_attention(..., order=order,
    block=block, mask=mask)`` then skips the selection. On the calibration inputs themselves
    the result equals the per-call one.

    Parameters
    ----------
    q, k : array-like of shape (heads, n, d)
        Calibration queries and keys (e.g. one representative input, or a mean over several).
    order : array-like of shape (heads, n), int, optional
        The token permutation the later calls will use (e.g. from
        :func:`attention_reorder`); the mask's positions are in that order.
    density : float, default 0.25
        Fraction of key blocks kept per query block, in (0, 1].
    block : int, default 64
        Block edge, in tokens.

    Returns
    -------
    ndarray of shape (heads, n_blocks, keep), int64
        Per head and query block, the kept key blocks, ascending.

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = (rng.standard_normal((2, 64, 8)) for _ in range(3))
    >>> mask = calibrate_block_mask(q, k, density=0.5, block=16)
    >>> mask.shape
    (2, 4, 2)
    >>> static = hl.block_sparse_attention(q, k, v, bits=None, block=16, mask=mask)
    >>> per_call = hl.block_sparse_attention(q, k, v, density=0.5, bits=None, block=16)
    >>> bool(np.array_equal(static, per_call))
    True
    """
    from . import paro
    from .paro_spec import validate_calibration

    kw = validate_calibration(q, k, order, density, block)
    qp, kp = paro.permute(kw["q"], kw["order"]), paro.permute(kw["k"], kw["order"])
    return paro.block_plan(qp, kp, kw["density"], kw["block"])
