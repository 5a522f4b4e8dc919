"""COO: coordinate lists, the format to build matrices from; canonicalized into CSR.

Duplicate policy: a (row, col) pair may appear several times in a COO. ``tocsr`` either adds
the values up (``duplicates="sum"``, the default, as ``scipy.sparse`` does) or refuses them
(``duplicates="refuse"``: :class:`~hetlab.errors.InvalidInputError` naming the first repeated
pair). Entries need not be sorted; ``tocsr`` sorts them row-major.

Ownership: a validated COO keeps private copies of its arrays (NumPy ones read-only), like
:class:`~hetlab.sparse.CSR`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..core.owned import OwnsArrays
from ..core.validation import array_module, check_allocation, owned_copy, read_only
from ..errors import InvalidInputError
from ._checks import (
    as_index_array,
    as_values,
    check_duplicates,
    check_in_range,
    check_shape,
    choose_index_dtype,
    narrow_index,
)
from .csr import CSR

__all__ = ["COO"]


class COO(OwnsArrays):
    """Entries as three equal-length arrays ``row``, ``col``, ``data``.

    Parameters
    ----------
    row, col : array-like of shape (nnz,), integer
        Coordinates, ``0 <= row < n_rows``, ``0 <= col < n_cols``; any order, repeats allowed.
    data : array-like of shape (nnz,), real
        Finite values; float32/float64 kept, integers converted to float64.
    shape : (int, int)
    check : bool, default True
        Validate lengths, ranges and values, and copy; ``False`` adopts the arrays as given
        (hetlab's own conversions).

    Notes
    -----
    The container owns its arrays: a validated COO keeps private copies (``row``/``col`` in
    the index dtype chosen by size, int32 whenever it fits; NumPy arrays read-only), so later
    writes to the caller's arrays cannot change it. CuPy arrays are copied on their device.
    Coordinates are range-checked on the caller's values, before any narrowing.

    Examples
    --------
    >>> from hetlab import sparse
    >>> A = sparse.COO([1, 0, 1], [0, 2, 0], [1.0, 2.0, 3.0], shape=(2, 3))
    >>> A.tocsr().toarray()
    array([[0., 0., 2.],
           [4., 0., 0.]])
    """

    __slots__ = ("col", "data", "row", "shape")
    format = "coo"

    def __init__(self, row: Any, col: Any, data: Any, shape: Any, *, check: bool = True) -> None:
        if not check:
            self.row, self.col, self.data = map(read_only, (row, col, data))
            self.shape = (int(shape[0]), int(shape[1]))
            return
        who = "sparse.COO"
        shape = check_shape(who, shape)
        row = as_index_array(who, "row", row)
        col = as_index_array(who, "col", col)
        if row.shape[0] != col.shape[0]:
            raise InvalidInputError(
                f"{who}: row and col must have the same length; got {row.shape[0]} and "
                f"{col.shape[0]}."
            )
        data = as_values(who, data, row.shape[0])
        check_in_range(who, "row", row, shape[0])
        check_in_range(who, "col", col, shape[1])
        dt = choose_index_dtype(row.shape[0], shape)
        self.row = read_only(narrow_index(who, "row", row, dt))
        self.col = read_only(narrow_index(who, "col", col, dt))
        self.data, self.shape = owned_copy(data), shape

    @property
    def nnz(self) -> int:
        """Number of stored entries (repeats counted)."""
        return int(self.row.shape[0])

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def nbytes(self) -> int:
        return int(self.row.nbytes + self.col.nbytes + self.data.nbytes)

    @property
    def bytes_per_nonzero(self) -> float:
        """``nbytes / nnz`` (NaN when empty)."""
        return self.nbytes / self.nnz if self.nnz else float("nan")

    def __repr__(self) -> str:
        return f"<COO {self.shape[0]}x{self.shape[1]}, nnz={self.nnz}, {self.dtype}>"

    def map_arrays(self, fn: Callable[[Any], Any]) -> COO:
        """A new COO with ``fn`` applied to each array, unchecked."""
        return COO(fn(self.row), fn(self.col), fn(self.data), self.shape, check=False)

    def toarray(self) -> Any:
        """Dense array (repeated entries added up); refused with InvalidInputError when it
        would not fit in memory."""
        xp = array_module(self.data)
        check_allocation("COO.toarray", float(self.shape[0]) * self.shape[1]
                         * self.data.dtype.itemsize, f"a dense array of shape {self.shape}",
                         "Keep the matrix sparse (e.g. tocsr()).")
        out = xp.zeros(self.shape, dtype=self.dtype)
        xp.add.at(out, (self.row, self.col), self.data)
        return out

    def tocsr(self, *, duplicates: str = "sum", index_dtype: Any = None) -> CSR:
        """Canonical CSR: entries sorted row-major, repeats added up or refused.

        Parameters
        ----------
        duplicates : {"sum", "refuse"}
            What a repeated (row, col) does: add the values, or raise.
        index_dtype : {None, numpy.int32, numpy.int64}
            Default: chosen by size (int32 whenever it fits).
        """
        check_duplicates("sparse", duplicates)
        xp = array_module(self.data)
        n_rows, n_cols = self.shape
        row = self.row.astype(xp.int64)
        col = self.col.astype(xp.int64)
        order = xp.lexsort(xp.stack([col, row])) if row.size else xp.arange(0)
        row, col, data = row[order], col[order], self.data[order]
        if row.size > 1:
            same = (row[1:] == row[:-1]) & (col[1:] == col[:-1])
            if bool(same.any()):
                if duplicates == "refuse":
                    k = int(xp.flatnonzero(same)[0])
                    raise InvalidInputError(
                        f"sparse: entries must not repeat (duplicates='refuse'); got "
                        f"({int(row[k])}, {int(col[k])}) more than once. Pass "
                        "duplicates='sum' to add repeats up."
                    )
                first = xp.concatenate([xp.ones(1, dtype=bool), ~same])
                starts = xp.flatnonzero(first)
                data = xp.add.reduceat(data, starts)
                row, col = row[starts], col[starts]
        dt = choose_index_dtype(row.shape[0], self.shape, index_dtype)
        check_allocation("COO.tocsr", 8.0 * (n_rows + 1), f"indptr for {n_rows} rows",
                         "Check the shape.")
        counts = xp.bincount(row, minlength=n_rows) if row.size else xp.zeros(n_rows, xp.int64)
        indptr = xp.zeros(n_rows + 1, dtype=dt)
        indptr[1:] = xp.cumsum(counts)
        return CSR(indptr, col.astype(dt), xp.ascontiguousarray(data), (n_rows, n_cols),
                   check=False)

    def to_scipy(self) -> Any:
        """A ``scipy.sparse.coo_array`` (host copies)."""
        import scipy.sparse

        from .csr import _to_host

        h = self.map_arrays(_to_host)
        return scipy.sparse.coo_array((h.data.copy(), (h.row.copy(), h.col.copy())),
                                      shape=self.shape)
