"""The two formats sparse kernels are built from: CSR, what every kernel runs on, and COO,
what matrices are built from (one module, so neither imports the other).

CSR: ``indptr`` (n_rows + 1) holds where each row starts in ``indices``/``data``; ``indices``
are column numbers, strictly increasing within a row (sorted, no duplicates: the canonical
form); ``data`` the values, float32 or float64 and finite. ``indptr`` and ``indices`` share one
index dtype: int32 while every offset and column fits (``max(nnz, n_rows, n_cols) < 2**31``),
else int64 (see :func:`~hetlab.kernels.sparse._checks.choose_index_dtype`).

The arrays may be NumPy or CuPy arrays; :meth:`CSR.map_arrays` moves a matrix between devices,
which is how :mod:`hetlab.core.dispatch` passes it to a device backend.

COO: coordinate lists, canonicalized into CSR. Duplicate policy: a (row, col) pair may appear
several times in a COO. ``tocsr`` either adds the values up (``duplicates="sum"``, the
default, as ``scipy.sparse`` does) or refuses them (``duplicates="refuse"``:
:class:`~hetlab.errors.InvalidInputError` naming the first repeated pair). Entries need not be
sorted; ``tocsr`` sorts them row-major. Ownership: a validated COO keeps private copies of its
arrays (NumPy ones read-only), like :class:`~hetlab.sparse.CSR`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...core.owned import OwnsArrays
from ...core.validation import (
    array_module,
    cast_finite,
    check_allocation,
    owned_copy,
    read_only,
)
from ...errors import InvalidInputError
from ._checks import (
    as_index_array,
    as_values,
    check_duplicates,
    check_in_range,
    check_shape,
    check_strictly_increasing_rows,
    choose_index_dtype,
    narrow_index,
)

__all__ = ["CSR", "COO"]


class CSR(OwnsArrays):
    """A canonical CSR matrix (validated at construction).

    Parameters
    ----------
    indptr : array-like of shape (n_rows + 1,), integer
        Row offsets: 0 first, non-decreasing, ``nnz`` last.
    indices : array-like of shape (nnz,), integer
        Column of each stored entry, in ``[0, n_cols)``, strictly increasing within a row.
    data : array-like of shape (nnz,), real
        Stored values, finite; float32/float64 kept, integers converted to float64.
    shape : (int, int)
        ``(n_rows, n_cols)``.
    index_dtype : {None, numpy.int32, numpy.int64}
        Force the index dtype; default: chosen by size (int32 whenever it fits).
    check : bool, default True
        Validate everything (O(nnz)) and copy; ``False`` is for hetlab's own conversions that
        produce fresh canonical arrays already (adopted without a copy).

    Raises
    ------
    InvalidInputError
        Lengths that do not match, offsets that are not monotone, indices out of range,
        unsorted or repeated within a row, NaN/inf values, non-integer indices.

    Notes
    -----
    The container owns its arrays: a validated construction (``check=True``) keeps private
    copies of what it is given, and NumPy arrays are exposed read-only (``A.data[0] = 1``
    raises ``ValueError: assignment destination is read-only``; take ``A.data.copy()``), so
    nothing the caller still holds can change a validated matrix behind the kernels' back.
    CuPy arrays are copied on their device (CuPy has no read-only flag). ``check=False`` and
    :meth:`map_arrays` adopt the arrays they get without a copy, as read-only views.
    Indices are range-checked on the caller's values before any narrowing to int32.

    Examples
    --------
    >>> from hetlab import sparse
    >>> A = sparse.CSR([0, 2, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], shape=(3, 3))
    >>> A
    <CSR 3x3, nnz=3, float64, int32 indices>
    >>> A.toarray()
    array([[1., 0., 2.],
           [0., 0., 0.],
           [0., 3., 0.]])
    """

    __slots__ = ("data", "indices", "indptr", "shape")
    format = "csr"

    def __init__(self, indptr: Any, indices: Any, data: Any, shape: Any, *,
                 index_dtype: Any = None, check: bool = True) -> None:
        if not check:
            self.indptr, self.indices, self.data = map(read_only, (indptr, indices, data))
            self.shape = (int(shape[0]), int(shape[1]))
            return
        who = "sparse.CSR"
        shape = check_shape(who, shape)
        indices = as_index_array(who, "indices", indices)  # int64, the caller's values
        dt = choose_index_dtype(indices.shape[0], shape, index_dtype)
        indptr = as_index_array(who, "indptr", indptr)
        if indptr.shape[0] != shape[0] + 1:
            raise InvalidInputError(
                f"{who}: indptr must have n_rows + 1 = {shape[0] + 1} entries; "
                f"got {indptr.shape[0]}."
            )
        nnz = indices.shape[0]
        xp = array_module(indptr)
        if int(indptr[0]) != 0 or int(indptr[-1]) != nnz:
            raise InvalidInputError(
                f"{who}: indptr must start at 0 and end at nnz = len(indices) = {nnz}; got "
                f"{int(indptr[0])} … {int(indptr[-1])}."
            )
        if shape[0] and bool((xp.diff(indptr) < 0).any()):
            row = int(xp.flatnonzero(xp.diff(indptr) < 0)[0])
            raise InvalidInputError(
                f"{who}: indptr must be non-decreasing; got indptr[{row + 1}] < indptr[{row}]."
            )
        data = as_values(who, data, nnz)
        check_in_range(who, "indices", indices, shape[1])
        check_strictly_increasing_rows(who, indptr, indices)
        # fresh arrays (narrow_index casts, owned_copy copies): nothing shared with the caller
        self.indptr = read_only(narrow_index(who, "indptr", indptr, dt))
        self.indices = read_only(narrow_index(who, "indices", indices, dt))
        self.data, self.shape = owned_copy(data), shape

    # --- facts --------------------------------------------------------------------------

    @property
    def nnz(self) -> int:
        """Number of stored entries."""
        return int(self.indices.shape[0])

    @property
    def dtype(self) -> np.dtype:
        """dtype of the values."""
        return self.data.dtype

    @property
    def index_dtype(self) -> np.dtype:
        """dtype of ``indptr`` and ``indices`` (int32 or int64)."""
        return self.indices.dtype

    @property
    def nbytes(self) -> int:
        """Bytes of the three arrays."""
        return int(self.indptr.nbytes + self.indices.nbytes + self.data.nbytes)

    @property
    def bytes_per_nonzero(self) -> float:
        """``nbytes / nnz`` (NaN for an empty matrix): 12 + 4·(n_rows+1)/nnz for float64 with
        int32 indices."""
        return self.nbytes / self.nnz if self.nnz else float("nan")

    def row_lengths(self) -> Any:
        """Stored entries per row, shape (n_rows,)."""
        xp = array_module(self.indptr)
        return xp.diff(self.indptr)

    def __repr__(self) -> str:
        where = "" if isinstance(self.data, np.ndarray) else f", on {type(self.data).__module__}"
        return (f"<CSR {self.shape[0]}x{self.shape[1]}, nnz={self.nnz}, {self.dtype}, "
                f"{self.index_dtype} indices{where}>")

    # --- devices and conversions --------------------------------------------------------

    def map_arrays(self, fn: Callable[[Any], Any]) -> CSR:
        """A new CSR with ``fn`` applied to each array (e.g. ``cupy.asarray``), unchecked."""
        return CSR(fn(self.indptr), fn(self.indices), fn(self.data), self.shape, check=False)

    def astype(self, dtype: Any) -> CSR:
        """The same pattern with values cast to ``dtype`` (float32 or float64).

        Raises
        ------
        InvalidInputError
            ``dtype`` not float32/float64, or a value that would overflow it (e.g. 1e300 to
            float32: it would become inf).
        """
        try:
            dt = np.dtype(dtype)
        except (TypeError, ValueError):
            dt = None
        # (``dt is None`` first: numpy compares ``dtype == None`` as float64)
        if dt is None or dtype is None or dt not in (np.dtype(np.float32),
                                                     np.dtype(np.float64)):
            raise InvalidInputError(
                f"CSR.astype: dtype must be float32 or float64; got {dtype!r}."
            )
        data = cast_finite("CSR.astype", "data", self.data, dt)
        if data is self.data:
            return self
        return CSR(self.indptr, self.indices, data, self.shape, check=False)

    def with_index_dtype(self, dtype: Any) -> CSR:
        """The same matrix with int32 or int64 indices."""
        dt = choose_index_dtype(self.nnz, self.shape, dtype)
        return CSR(self.indptr.astype(dt), self.indices.astype(dt), self.data, self.shape,
                   check=False)

    def row_ids(self) -> Any:
        """Row of each stored entry, shape (nnz,), the index dtype."""
        xp = array_module(self.indptr)
        return xp.repeat(xp.arange(self.shape[0], dtype=self.index_dtype), self.row_lengths())

    def toarray(self) -> Any:
        """Dense array of shape ``shape`` (on the matrix's device); refused with
        InvalidInputError when it would not fit in memory."""
        xp = array_module(self.data)
        check_allocation("CSR.toarray", float(self.shape[0]) * self.shape[1]
                         * self.data.dtype.itemsize, f"a dense array of shape {self.shape}",
                         "Keep the matrix sparse (e.g. use hl.spmv / to_scipy()).")
        out = xp.zeros(self.shape, dtype=self.dtype)
        out[self.row_ids(), self.indices] = self.data
        return out

    def tocoo(self) -> Any:
        """The same entries as a :class:`~hetlab.sparse.COO` (row-major order)."""
        return COO(self.row_ids(), self.indices, self.data, self.shape, check=False)

    def tocsr(self) -> CSR:
        """Itself."""
        return self

    def to_scipy(self) -> Any:
        """A ``scipy.sparse.csr_array`` of its own (writable copies of the arrays, from the
        device when there)."""
        import scipy.sparse

        host = self.map_arrays(_to_host)
        return scipy.sparse.csr_array((host.data.copy(), host.indices.copy(),
                                       host.indptr.copy()), shape=self.shape)

    def to_cupy(self) -> Any:
        """A ``cupyx.scipy.sparse.csr_matrix`` on the current GPU (needs CuPy and a GPU)."""
        import cupy
        import cupyx.scipy.sparse

        dev = self.map_arrays(lambda a: cupy.array(a, copy=True))  # its own arrays
        return cupyx.scipy.sparse.csr_matrix((dev.data, dev.indices, dev.indptr),
                                             shape=self.shape)


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

        h = self.map_arrays(_to_host)
        return scipy.sparse.coo_array((h.data.copy(), (h.row.copy(), h.col.copy())),
                                      shape=self.shape)


def _to_host(a: Any) -> np.ndarray:
    if isinstance(a, np.ndarray):
        return a
    import cupy

    return cupy.asnumpy(a)
