"""Validation shared by the sparse formats: index dtype choice, index and value checks.

Every check runs in the arrays' own namespace (NumPy or CuPy) and never copies to another
device. Messages follow the project shape: ``"<who>: <what> must be …; got …."``.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ...core.validation import array_module, as_array, cast_finite
from ...errors import InvalidInputError

__all__ = ["INT32_MAX", "INT64_MAX", "choose_index_dtype", "check_shape", "as_index_array",
           "narrow_index", "as_values", "check_in_range", "check_strictly_increasing_rows",
           "DUPLICATE_POLICIES", "check_duplicates"]

INT32_MAX = int(np.iinfo(np.int32).max)
INT64_MAX = int(np.iinfo(np.int64).max)

#: what to do with repeated (row, col) entries: add them up, or raise
DUPLICATE_POLICIES = ("sum", "refuse")


def check_duplicates(who: str, duplicates: Any) -> str:
    """Return ``duplicates`` after checking it is one of :data:`DUPLICATE_POLICIES`."""
    if not isinstance(duplicates, str) or duplicates not in DUPLICATE_POLICIES:
        raise InvalidInputError(
            f"{who}: duplicates must be one of {DUPLICATE_POLICIES}; got {duplicates!r}."
        )
    return duplicates


def choose_index_dtype(nnz: int, shape: tuple[int, int], requested: Any = None) -> np.dtype:
    """The index dtype of a sparse matrix: int32 when every index and offset fits, else int64.

    ``indptr`` holds offsets up to ``nnz`` and ``indices`` values below ``shape[1]``, so int32
    suffices while ``max(nnz, *shape) <= 2**31 - 1``; it halves the bytes an index costs.
    ``requested`` (``numpy.int32`` or ``numpy.int64``) overrides the choice; int32 is refused
    when it cannot hold the matrix.
    """
    need64 = max(int(nnz), *map(int, shape)) > INT32_MAX
    if requested is None:
        return np.dtype(np.int64 if need64 else np.int32)
    try:
        dt = np.dtype(requested)
    except (TypeError, ValueError):
        raise InvalidInputError(
            f"sparse: index_dtype must be int32 or int64; got {requested!r}."
        ) from None
    if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise InvalidInputError(f"sparse: index_dtype must be int32 or int64; got {dt}.")
    if dt == np.int32 and need64:
        raise InvalidInputError(
            f"sparse: index_dtype int32 cannot hold nnz={nnz} with shape {shape}; use int64."
        )
    return dt


def check_shape(who: str, shape: Any) -> tuple[int, int]:
    """Return ``shape`` as two non-negative ints."""
    try:
        dims = tuple(shape)
    except TypeError:
        dims = ()
    if len(dims) != 2 or not all(
        isinstance(d, numbers.Integral) and not isinstance(d, bool) and 0 <= int(d) < INT64_MAX
        for d in dims
    ):
        raise InvalidInputError(
            f"{who}: shape must be a pair of non-negative ints (n_rows, n_cols); got {shape!r}."
        )
    return int(dims[0]), int(dims[1])


def as_index_array(who: str, name: str, a: Any) -> Any:
    """Return ``a`` as a fresh contiguous 1-D int64 array (exact: no value is changed).

    Integers of any width are accepted; uint64 values beyond int64 are refused, floats
    (even whole ones: ``2.5`` would be truncated) and bools are refused, so the range checks
    that follow see the caller's values, never wrapped or truncated ones. An empty array of
    any dtype counts as an empty index list.
    """
    xp = array_module(a)
    arr = as_array(who, name, a)
    if arr.ndim != 1:
        raise InvalidInputError(f"{who}: {name} must be 1-D; got shape {tuple(arr.shape)}.")
    if arr.dtype.kind not in "iu" and arr.size:
        raise InvalidInputError(
            f"{who}: {name} must hold integers; got dtype {arr.dtype}. Convert whole-number "
            f"floats with {name}.astype(numpy.int64) after checking them."
        )
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > INT64_MAX:
        raise InvalidInputError(
            f"{who}: {name} must be in [0, {INT64_MAX}] (int64); got {int(arr.max())}."
        )
    return xp.ascontiguousarray(arr.astype(xp.int64))


def narrow_index(who: str, name: str, arr: Any, dtype: Any) -> Any:
    """``arr`` (checked int64) in the index ``dtype``, refusing values that would not fit
    (a narrowing cast must never wrap around); a fresh array."""
    dt = np.dtype(dtype)
    info = np.iinfo(dt)
    if arr.size and (int(arr.min()) < info.min or int(arr.max()) > info.max):
        raise InvalidInputError(
            f"{who}: {name} must fit in {dt} ([{info.min}, {info.max}]); got values in "
            f"[{int(arr.min())}, {int(arr.max())}]. Use index_dtype=numpy.int64."
        )
    return arr.astype(dt)


def as_values(who: str, a: Any, n: int | None = None, *, ndim: int = 1) -> Any:
    """Return stored values as a contiguous float32/float64 array, checked finite.

    Integers and bools become float64, float16 becomes float32; complex, object and strings
    are refused. Wider floats (longdouble) become float64, refused when a value would
    overflow it (finiteness is checked on the values as stored).
    """
    xp = array_module(a)
    arr = as_array(who, "data", a)
    kind = arr.dtype.kind
    if kind == "f":
        if arr.dtype.itemsize < 4:
            arr = arr.astype(xp.float32)
        elif arr.dtype.itemsize > 8:
            arr = cast_finite(who, "data", arr, xp.float64)
    elif kind in "iub":
        arr = arr.astype(xp.float64)
    else:
        raise InvalidInputError(
            f"{who}: data must hold real numbers (float32/float64, or integers to convert); "
            f"got dtype {arr.dtype}."
        )
    if arr.ndim != ndim:
        raise InvalidInputError(f"{who}: data must be {ndim}-D; got shape {tuple(arr.shape)}.")
    if n is not None and arr.shape[0] != n:
        raise InvalidInputError(
            f"{who}: data must have one value per stored entry ({n}); got {arr.shape[0]}."
        )
    if arr.size and not bool(xp.isfinite(arr).all()):
        bad = int((~xp.isfinite(arr)).sum())
        raise InvalidInputError(
            f"{who}: data must be finite; got {bad} NaN/inf value(s). Drop those entries or "
            "replace them (e.g. numpy.nan_to_num) first."
        )
    return xp.ascontiguousarray(arr)


def check_in_range(who: str, name: str, idx: Any, hi: int) -> None:
    """Refuse indices outside ``[0, hi)``, naming the first offender."""
    if idx.size == 0:
        return
    xp = array_module(idx)
    lo_v, hi_v = int(idx.min()), int(idx.max())
    if lo_v < 0 or hi_v >= hi:
        pos = int(xp.flatnonzero((idx < 0) | (idx >= hi))[0])
        raise InvalidInputError(
            f"{who}: {name} must be in [0, {hi}); got {int(idx[pos])} at position {pos}."
        )


def check_strictly_increasing_rows(who: str, indptr: Any, indices: Any) -> None:
    """Refuse column indices that are unsorted or repeated within a row (canonical CSR)."""
    nnz = indices.shape[0]
    if nnz < 2:
        return
    xp = array_module(indices)
    step = xp.diff(indices.astype(xp.int64))
    bad = xp.flatnonzero(step <= 0)
    if bad.size == 0:
        return
    # a drop at a row boundary is fine: the next entry starts a new row
    starts = xp.zeros(nnz + 1, dtype=bool)
    starts[indptr[1:-1]] = True
    bad = bad[~starts[bad + 1]]
    if bad.size == 0:
        return
    pos = int(bad[0]) + 1
    row = int(xp.searchsorted(indptr, pos, side="right")) - 1
    if int(step[pos - 1]) == 0:
        raise InvalidInputError(
            f"{who}: indices must not repeat within a row; got column {int(indices[pos])} twice "
            f"in row {row}. Build the matrix with sparse.coo(..., duplicates='sum').tocsr() to "
            "add duplicates up."
        )
    raise InvalidInputError(
        f"{who}: indices must be sorted within each row; got row {row} unsorted (column "
        f"{int(indices[pos])} after {int(indices[pos - 1])}). Build the matrix with "
        "sparse.coo(...).tocsr() or sparse.csr(scipy_matrix), which sort."
    )
