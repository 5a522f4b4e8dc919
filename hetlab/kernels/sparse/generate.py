"""Generated test and benchmark matrices, built directly as canonical CSR (vectorized)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.validation import check_allocation, check_int
from ...errors import InvalidInputError
from .formats import CSR

__all__ = ["make_matrix", "KINDS"]

KINDS = ("banded", "laplacian3d", "powerlaw", "uniform", "mixed")
#: largest ``n`` (and ``nnz_per_row``) accepted
MAX_N = 1 << 40


def _csr_from_row_counts(counts: np.ndarray, cols: np.ndarray, n_cols: int,
                         values: np.ndarray) -> CSR:
    """CSR from per-row counts and row-grouped columns: sorts within rows, drops repeats."""
    n = counts.shape[0]
    rows = np.repeat(np.arange(n, dtype=np.int64), counts)
    key = rows * n_cols + cols
    key.sort()
    keep = np.ones(key.size, dtype=bool)
    keep[1:] = key[1:] != key[:-1]
    key = key[keep]
    rows, cols = np.divmod(key, n_cols)
    dt = np.int32 if max(key.size, n, n_cols) < 2**31 else np.int64
    indptr = np.zeros(n + 1, dtype=dt)
    indptr[1:] = np.cumsum(np.bincount(rows, minlength=n))
    return CSR(indptr, cols.astype(dt), values[: key.size], (n, n_cols), check=False)


def make_matrix(n: int, rng: np.random.Generator, *, kind: str = "uniform",
                nnz_per_row: int = 16, dtype: Any = np.float64) -> CSR:
    """A square-ish test matrix with about ``nnz_per_row`` entries per row.

    Parameters
    ----------
    n : int
        Rows (and columns; ``"laplacian3d"`` rounds to the nearest cube ``g**3``).
    rng : numpy.random.Generator
    kind : {"banded", "laplacian3d", "powerlaw", "uniform", "mixed"}
        ``"banded"``: ``nnz_per_row`` consecutive diagonals around the main one.
        ``"laplacian3d"``: the 7-point stencil on a g×g×g grid (values 6 and -1).
        ``"powerlaw"``: row lengths Pareto-distributed (α = 1.5, skewed: a few rows hold
        much), uniform columns. ``"uniform"``: Poisson row lengths, uniform columns.
        ``"mixed"``: uniform rows, about a quarter of them empty, plus one row holding
        half the columns (the edge cases kernels must get right).
    nnz_per_row : int
        Average entries per row (before removing repeated columns).
    dtype : float32 or float64
        Values, uniform in [-1, 1) except for the Laplacian.
    """
    if not isinstance(kind, str) or kind not in KINDS:
        raise InvalidInputError(f"make_matrix: kind must be one of {KINDS}; got {kind!r}.")
    n = check_int("make_matrix", "n", n, 1, MAX_N)
    w = check_int("make_matrix", "nnz_per_row", nnz_per_row, 0, MAX_N)
    w = max(w, 1)
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        dt = None
    if dt is None or dtype is None or dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise InvalidInputError(f"make_matrix: dtype must be float32 or float64; got {dtype!r}.")
    if not isinstance(rng, np.random.Generator):
        raise InvalidInputError(
            f"make_matrix: rng must be a numpy.random.Generator (numpy.random.default_rng(0)); "
            f"got {type(rng).__name__}."
        )
    check_allocation("make_matrix", 12.0 * n * min(w, n), f"about {n} × {w} entries",
                     "Ask for fewer rows or entries per row.")
    if kind == "banded":
        offsets = np.arange(w, dtype=np.int64) - w // 2
        lo = np.clip(-offsets.min() - np.arange(n), 0, w)  # leading invalid offsets per row
        hi = np.clip(np.arange(n) + offsets.max() - (n - 1), 0, w)
        counts = (w - lo - hi).astype(np.int64)
        dt = np.int32 if n * w < 2**31 else np.int64
        indptr = np.zeros(n + 1, dtype=dt)
        indptr[1:] = np.cumsum(counts)
        nnz = int(indptr[-1])
        # entry k of row i has column i + offsets[0] + lo[i] + (k - indptr[i])
        cols = np.arange(nnz, dtype=dt)
        cols -= np.repeat((indptr[:-1] - np.arange(n, dtype=dt) - offsets[0] - lo).astype(dt),
                          counts)
        vals = (rng.random(nnz, dtype=np.float64) * 2 - 1).astype(dtype)
        return CSR(indptr, cols, vals, (n, n), check=False)
    if kind == "laplacian3d":
        g = max(round(n ** (1 / 3)), 1)
        n = g**3
        idx = np.arange(n, dtype=np.int64)
        x, y, z = idx % g, (idx // g) % g, idx // (g * g)
        parts = []
        for off, ok in ((-g * g, z > 0), (-g, y > 0), (-1, x > 0), (0, None),
                        (1, x < g - 1), (g, y < g - 1), (g * g, z < g - 1)):
            keep = idx if ok is None else idx[ok]
            parts.append((keep, keep + off, 6.0 if off == 0 else -1.0))
        rows = np.concatenate([p[0] for p in parts])
        cols = np.concatenate([p[1] for p in parts])
        vals = np.concatenate([np.full(p[0].size, p[2]) for p in parts])
        order = np.argsort(rows * n + cols)
        dt = np.int32 if rows.size < 2**31 else np.int64
        indptr = np.zeros(n + 1, dtype=dt)
        indptr[1:] = np.cumsum(np.bincount(rows, minlength=n))
        return CSR(indptr, cols[order].astype(dt), vals[order].astype(dtype), (n, n),
                   check=False)
    if kind == "powerlaw":
        raw = rng.pareto(1.5, n) + 1.0
        counts = np.minimum(np.round(raw * w / raw.mean()).astype(np.int64), n)
    else:
        counts = rng.poisson(w, n).astype(np.int64)
    if kind == "mixed":
        counts[rng.random(n) < 0.25] = 0
        counts[rng.integers(n)] = max(n // 2, 1)
    cols = rng.integers(0, n, int(counts.sum()), dtype=np.int64)
    vals = (rng.random(cols.size) * 2 - 1).astype(dtype)
    return _csr_from_row_counts(counts, cols, n, vals)
