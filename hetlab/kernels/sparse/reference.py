"""NumPy references of the sparse kernels: deliberately plain (gather, multiply, segment sums).

Segment sums use ``numpy.add.reduceat`` over the starts of the non-empty rows only: between two
consecutive non-empty rows lie only empty rows, so each segment is exactly one row.
"""

from __future__ import annotations

import numpy as np

from .formats import CSR

__all__ = ["spmv", "spmm", "sddmm"]

#: columns of X handled per pass in spmm (bounds the nnz × block temporary)
_BLOCK = 8


def _row_sums(A: CSR, products: np.ndarray, out: np.ndarray) -> np.ndarray:
    lengths = np.diff(A.indptr)
    rows = np.flatnonzero(lengths)
    if rows.size:
        out[rows] = np.add.reduceat(products, A.indptr[rows].astype(np.intp), axis=0)
    return out


def spmv(A: CSR, x: np.ndarray) -> np.ndarray:
    """``y = A @ x``; shape (n_rows,), dtype of ``A``."""
    y = np.zeros(A.shape[0], dtype=A.dtype)
    return _row_sums(A, A.data * x[A.indices], y)


def spmm(A: CSR, X: np.ndarray) -> np.ndarray:
    """``Y = A @ X``; shape (n_rows, k), dtype of ``A``."""
    k = X.shape[1]
    Y = np.zeros((A.shape[0], k), dtype=A.dtype)
    for c in range(0, k, _BLOCK):
        block = A.data[:, None] * X[A.indices, c:c + _BLOCK]
        Y[:, c:c + _BLOCK] = _row_sums(A, block, np.zeros((A.shape[0], block.shape[1]), A.dtype))
    return Y


def sddmm(S: CSR, X: np.ndarray, Y: np.ndarray) -> CSR:
    """``S ⊙ (X @ Y.T)`` on the pattern of ``S``: value ``S[i, j] * (X[i] · Y[j])``."""
    rows = S.row_ids()
    dots = np.einsum("ij,ij->i", X[rows], Y[S.indices]) if S.nnz else np.zeros(0, S.dtype)
    return CSR(S.indptr, S.indices, (S.data * dots).astype(S.dtype), S.shape, check=False)
