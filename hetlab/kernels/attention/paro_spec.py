"""Specs of the PARO kernels: ``attention_reorder`` and ``block_sparse_attention``.

``block_sparse_attention`` is an approximation of attention: its reference is the float64
numpy implementation of *the same* approximation (:mod:`.paro`), and backends are held to
that within :data:`.spec.TOLERANCE`. How far the approximation is from dense attention is a
separate, reported figure (:mod:`.evaluate`).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.metrics import mismatch_fraction, relative_error
from ...core.params import Param
from ...core.spec import Cost, KernelSpec
from ...core.validation import as_array, check_int, check_positive
from ...errors import InvalidInputError
from . import paro
from .spec import TOLERANCE, check_heads, check_qkv

__all__ = ["ATTENTION_REORDER", "BLOCK_SPARSE_ATTENTION", "MAX_BLOCK", "check_grid",
           "check_mask", "check_order", "validate_calibration"]

#: the largest block edge accepted, in tokens
MAX_BLOCK = 1024


def _square(kernel: str, q: Any, k: Any) -> None:
    if q.shape[1] != k.shape[1]:
        raise InvalidInputError(
            f"{kernel}: q and k must hold the same tokens (n_q == n_k, self-attention); got "
            f"n_q={q.shape[1]}, n_k={k.shape[1]}."
        )


def check_grid(kernel: str, grid: Any, n: int) -> tuple[int, int, int]:
    """``grid`` as three positive ints (F, H, W) with F·H·W = n."""
    g = as_array(kernel, "grid", grid)
    if g.shape != (3,) or (g.dtype.kind not in "iu"):
        raise InvalidInputError(
            f"{kernel}: grid must be three integers (F, H, W); got {g.dtype} of shape "
            f"{tuple(g.shape)}."
        )
    f, h, w = (int(x) for x in g)
    if min(f, h, w) < 1 or f * h * w != n:
        raise InvalidInputError(
            f"{kernel}: grid must be positive with F·H·W equal to the tokens n={n}; got "
            f"({f}, {h}, {w})."
        )
    return f, h, w


def _validate_reorder(q: Any, k: Any, grid: Any, block: Any = 64) -> dict[str, Any]:
    kernel = "attention_reorder"
    b = check_int(kernel, "block", block, 1, MAX_BLOCK)
    q, k, _ = check_heads(kernel, q, k, None, with_values=False)
    _square(kernel, q, k)
    g = check_grid(kernel, grid, q.shape[1])
    return {"q": np.asarray(q), "k": np.asarray(k), "grid": g, "block": b}


def check_order(kernel: str, order: Any, heads: int, n: int) -> np.ndarray | None:
    if order is None:
        return None
    o = as_array(kernel, "order", order)
    if o.shape != (heads, n) or o.dtype.kind not in "iu":
        raise InvalidInputError(
            f"{kernel}: order must be integers of shape (heads={heads}, n={n}), e.g. from "
            f"hl.attention_reorder; got {o.dtype} of shape {tuple(o.shape)}."
        )
    o = np.ascontiguousarray(o, dtype=np.int64)
    if not np.array_equal(np.sort(o, axis=1), np.broadcast_to(np.arange(n), o.shape)):
        raise InvalidInputError(
            f"{kernel}: order must hold a permutation of 0…{n - 1} in every head; got a row "
            "with repeated or out-of-range indices."
        )
    return o


def check_mask(kernel: str, mask: Any, heads: int, n: int, block: int) -> np.ndarray | None:
    """A static block mask: integers of shape (heads, n_blocks, keep), 1 ≤ keep ≤ n_blocks,
    each row distinct key-block indices in [0, n_blocks); returned sorted ascending per row,
    int64 (None stays None)."""
    if mask is None:
        return None
    nb = -(-n // block)
    m = as_array(kernel, "mask", mask)
    if (m.dtype.kind not in "iu" or m.ndim != 3 or m.shape[:2] != (heads, nb)
            or not 1 <= m.shape[2] <= nb):
        raise InvalidInputError(
            f"{kernel}: mask must be integers of shape (heads={heads}, n_blocks={nb}, keep) "
            f"with 1 ≤ keep ≤ {nb} (n={n}, block={block}), e.g. from "
            f"calibrate_block_mask with the same block; got {m.dtype} of shape "
            f"{tuple(m.shape)}."
        )
    m = np.sort(np.asarray(m, dtype=np.int64), axis=2)
    if m[..., 0].min() < 0 or m[..., -1].max() >= nb or (np.diff(m, axis=2) == 0).any():
        raise InvalidInputError(
            f"{kernel}: mask must hold distinct key-block indices in [0, {nb}) in every row; "
            f"got values from {int(m.min())} to {int(m.max())} or a repeated index."
        )
    return np.ascontiguousarray(m)


def validate_calibration(q: Any, k: Any, order: Any, density: Any,
                         block: Any) -> dict[str, Any]:
    """The arguments of :func:`hetlab.kernels.attention.calibrate_block_mask`, validated."""
    kernel = "calibrate_block_mask"
    dens = _check_density(kernel, density)
    b = check_int(kernel, "block", block, 1, MAX_BLOCK)
    q, k, _ = check_heads(kernel, q, k, None, with_values=False)
    _square(kernel, q, k)
    o = check_order(kernel, order, q.shape[0], q.shape[1])
    return {"q": np.asarray(q), "k": np.asarray(k), "order": o, "density": dens, "block": b}


def _check_density(kernel: str, density: Any) -> float:
    dens = check_positive(kernel, "density", density)
    if dens > 1.0:
        raise InvalidInputError(f"{kernel}: density must be in (0, 1]; got {density}.")
    return dens


def _validate_block_sparse(q: Any, k: Any, v: Any, order: Any = None, density: Any = 0.25,
                           bits: Any = 8, block: Any = 64, mask: Any = None) -> dict[str, Any]:
    kernel = "block_sparse_attention"
    dens = _check_density(kernel, density)
    if bits is not None and (not isinstance(bits, numbers.Integral) or isinstance(bits, bool)
                             or int(bits) not in (4, 8)):
        raise InvalidInputError(f"{kernel}: bits must be 8, 4 or None; got {bits!r}.")
    b = check_int(kernel, "block", block, 1, MAX_BLOCK)
    kw = check_qkv(kernel, q, k, v, False)
    _square(kernel, kw["q"], kw["k"])
    h, n = kw["q"].shape[:2]
    o = check_order(kernel, order, h, n)
    return {"q": np.asarray(kw["q"]), "k": np.asarray(kw["k"]), "v": np.asarray(kw["v"]),
            "order": o, "density": dens, "bits": None if bits is None else int(bits),
            "block": b, "mask": check_mask(kernel, mask, h, n, b)}


def _grid_of(n: int) -> tuple[int, int, int]:
    h = max(x for x in range(1, int(n**0.5) + 1) if n % x == 0)
    return 1, h, n // h


def _case_reorder(size: int, rng: np.random.Generator) -> dict[str, Any]:
    grid = _grid_of(size)
    names = [paro.AXIS_ORDERS[int(i)] for i in rng.integers(0, 6, size=2)]
    q, k, _ = paro.planted_grid(grid, names, 8, rng)
    return {"q": q.astype(np.float32), "k": k.astype(np.float32),
            "grid": np.array(grid, np.int64), "block": 4}


def _case_block_sparse(size: int, rng: np.random.Generator) -> dict[str, Any]:
    q, k, v = (rng.standard_normal((2, size, 16), dtype=np.float32) for _ in range(3))
    order = np.stack([rng.permutation(size) for _ in range(2)])
    bits = (8, 4, None)[int(rng.integers(3))]
    # a static mask calibrated on other inputs of the same shape (as PARO's offline mask)
    qc, kc = (rng.standard_normal((2, size, 16)) for _ in range(2))
    mask = paro.block_plan(paro.permute(qc, order), paro.permute(kc, order), 0.5, 8)
    return {"q": q, "k": k, "v": v, "order": order, "density": 0.5, "bits": bits, "block": 8,
            "mask": mask}


def _cost_reorder(a: Mapping[str, Any]) -> Cost:
    h, n, d = a["q"].shape
    rows = min(n, paro.MASS_QUERIES)
    return Cost(flops=2.0 * h * rows * n * d + 6.0 * h * rows * n,
                bytes=float(a["q"].dtype.itemsize * 2 * h * n * d + 8 * h * n))


def _cost_block_sparse(a: Mapping[str, Any]) -> Cost:
    (h, n, d), dv = a["q"].shape, a["v"].shape[2]
    nb = -(-n // a["block"])
    keep = (max(1, min(nb, int(a["density"] * nb + 0.5))) if a.get("mask") is None
            else a["mask"].shape[2])
    kept = keep / nb
    b = a["q"].dtype.itemsize
    return Cost(flops=2.0 * h * n * n * kept * (d + dv),
                bytes=float(b * h * n * (2 * d + 2 * dv)))


ATTENTION_REORDER = KernelSpec(
    name="attention_reorder",
    params=(
        Param("q", "array", "queries of shape (heads, n, d), n = F·H·W grid tokens", ndim=3),
        Param("k", "array", "keys of shape (heads, n, d)", ndim=3),
        Param("grid", "array", "the token grid (F, H, W), three positive ints", ndim=1),
        Param("block", "int", "block edge of the diagonal-mass measure, in tokens",
              default=64, lo=1, hi=MAX_BLOCK),
    ),
    validate=_validate_reorder,
    reference=paro.attention_reorder,
    error=mismatch_fraction,
    tolerance=0.0,
    make_case=_case_reorder,
    cost=_cost_reorder,
    arrays=("q", "k"),
    size_unit="tokens",
    description="PARO: per head, the grid axis order that makes attention block-wise",
)

BLOCK_SPARSE_ATTENTION = KernelSpec(
    name="block_sparse_attention",
    params=(
        Param("q", "array", "queries of shape (heads, n, d)", ndim=3),
        Param("k", "array", "keys of shape (heads, n, d)", ndim=3),
        Param("v", "array", "values of shape (heads, n, d_v)", ndim=3),
        Param("order", "array", "token permutation per head, int (heads, n), or None",
              default=None, ndim=2, none_ok=True),
        Param("density", "float", "fraction of key blocks kept, in (0, 1]", default=0.25,
              positive=True, hi=1.0),
        Param("bits", "int", "INT8/INT4 products, or None for floating point", default=8,
              lo=4, hi=8, none_ok=True),
        Param("block", "int", "block edge, in tokens", default=64, lo=1, hi=MAX_BLOCK),
        Param("mask", "array", "static kept key blocks (heads, n_blocks, keep), or None: "
              "chosen per call", default=None, ndim=3, none_ok=True),
    ),
    validate=_validate_block_sparse,
    reference=paro.block_sparse_attention,
    error=relative_error,
    tolerance=TOLERANCE,
    make_case=_case_block_sparse,
    cost=_cost_block_sparse,
    arrays=("q", "k", "v", "order", "mask"),
    size_unit="tokens",
    description="PARO: reordered block-sparse attention, INT8/INT4 per-block quantization",
)
