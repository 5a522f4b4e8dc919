"""Front doors: ``sparse.csr(anything)`` and ``sparse.coo(row, col, data, shape)``.

Accepted by :func:`csr`: a hetlab format (CSR returned as is, COO/BSR/ELL/SELL converted), a
``scipy.sparse`` matrix or array of any format, a ``cupyx.scipy.sparse`` matrix (stays on its
GPU), a ``(data, (row, col))`` tuple as scipy takes, or a dense 2-D array. scipy and CuPy are
imported only when such an object is given.
"""

from __future__ import annotations

from typing import Any

from ...core.validation import array_module, as_array, cast_finite
from ...errors import InvalidInputError
from ._checks import as_index_array, check_duplicates
from .formats import COO, CSR

__all__ = ["csr", "coo"]


def _family(obj: Any) -> str:
    return type(obj).__module__.split(".")[0]


def coo(row: Any, col: Any, data: Any, shape: Any) -> COO:
    """A validated :class:`COO` from coordinate arrays (see :class:`COO`)."""
    return COO(row, col, data, shape)


def csr(A: Any, *, shape: Any = None, duplicates: str = "sum", index_dtype: Any = None) -> CSR:
    """Convert ``A`` to a canonical :class:`CSR` (sorted, no duplicates, finite values).

    Parameters
    ----------
    A : CSR, COO, BSR, ELL, SELL, scipy.sparse matrix/array, cupyx.scipy.sparse matrix,
        ``(data, (row, col))`` tuple, or dense array-like of shape (n_rows, n_cols)
    shape : (int, int), optional
        Required for the tuple form when it cannot be inferred; ignored otherwise.
    duplicates : {"sum", "refuse"}, default "sum"
        Repeated (row, col) entries (possible in COO input and non-canonical scipy/cupyx
        matrices): add them up, or raise :class:`~hetlab.errors.InvalidInputError`.
    index_dtype : {None, numpy.int32, numpy.int64}
        Default: int32 whenever ``max(nnz, n_rows, n_cols) < 2**31``, else int64.

    Returns
    -------
    CSR
        On the host, except for cupyx input, which stays on its GPU.

    Raises
    ------
    InvalidInputError
        Unsupported type, repeated entries with ``duplicates="refuse"``, NaN/inf values,
        out-of-range indices.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from hetlab import sparse
    >>> sparse.csr(sp.random(4, 5, density=0.5, random_state=0, format="coo"))
    <CSR 4x5, nnz=10, float64, int32 indices>
    >>> sparse.csr(([1.0, 2.0], ([0, 0], [1, 1])), shape=(2, 2)).toarray()
    array([[0., 3.],
           [0., 0.]])
    """
    check_duplicates("sparse.csr", duplicates)
    if isinstance(A, CSR):
        return A if index_dtype is None else A.with_index_dtype(index_dtype)
    if isinstance(A, COO):
        return A.tocsr(duplicates=duplicates, index_dtype=index_dtype)
    if hasattr(A, "tocsr") and _family(A) == "hetlab":
        return csr(A.tocsr(), index_dtype=index_dtype)
    fam = _family(A)
    if fam == "scipy" and hasattr(A, "tocsr"):
        return _from_scipy_like(A.tocsr(), duplicates, index_dtype)
    if fam == "cupyx" and hasattr(A, "tocsr"):
        return _from_scipy_like(A.tocsr(), duplicates, index_dtype)
    if isinstance(A, tuple) and len(A) == 2 and isinstance(A[1], tuple) and len(A[1]) == 2:
        data, (row, col) = A
        if shape is None:  # inferred from the checked coordinates (negatives: refused by COO)
            r = as_index_array("sparse.csr", "row", row)
            c = as_index_array("sparse.csr", "col", col)
            shape = (max(int(r.max()) + 1, 0) if r.size else 0,
                     max(int(c.max()) + 1, 0) if c.size else 0)
        return COO(row, col, data, shape).tocsr(duplicates=duplicates, index_dtype=index_dtype)
    if hasattr(A, "shape") or isinstance(A, (list, tuple)):
        xp = array_module(A)
        dense = as_array("sparse.csr", "A", A)
        if dense.ndim != 2:
            raise InvalidInputError(
                f"sparse.csr: a dense A must be 2-D; got shape {tuple(dense.shape)}."
            )
        if dense.dtype.kind not in "fiub":
            raise InvalidInputError(
                "sparse.csr: a dense A must hold real numbers (float32/float64, or integers "
                f"to convert); got dtype {dense.dtype}."
            )
        if dense.dtype.kind == "f":  # NaN/inf are refused here, naming A, not inside COO
            cast_finite("sparse.csr", "A", dense, dense.dtype)
        row, col = xp.nonzero(dense)
        return COO(row, col, dense[row, col], dense.shape).tocsr(index_dtype=index_dtype)
    raise InvalidInputError(
        "sparse.csr: A must be a hetlab sparse matrix, a scipy.sparse or cupyx.scipy.sparse "
        f"matrix, a (data, (row, col)) tuple or a dense 2-D array; got {type(A).__name__}."
    )


def _from_scipy_like(A: Any, duplicates: str, index_dtype: Any) -> CSR:
    """CSR from a scipy or cupyx CSR matrix, canonicalizing through COO when needed."""
    canonical = bool(getattr(A, "has_canonical_format", False))
    if canonical:
        return CSR(A.indptr, A.indices, A.data, A.shape, index_dtype=index_dtype)
    c = A.tocoo()
    return COO(c.row, c.col, c.data, A.shape).tocsr(duplicates=duplicates,
                                                    index_dtype=index_dtype)
