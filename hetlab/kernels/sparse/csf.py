"""CSF: compressed sparse fibers for 3-D tensors — CSR generalized to one more level.

A fiber tree with a dense first level and two compressed ones: slice ``i`` owns the
positions ``ptr1[i] … ptr1[i+1]-1`` of level 1, whose coordinates ``idx1`` are the ``j`` of its
non-empty (i, j) fibers; position ``p`` of level 1 owns ``ptr2[p] … ptr2[p+1]-1`` of level 2,
coordinates ``idx2`` (the ``k``) and values ``data``. Coordinates are strictly increasing within
each fiber. Host (NumPy) arrays, int64 indices.

Ownership: a CSF is built only by :meth:`CSF.from_coords` / :meth:`CSF.from_dense`, into
fresh arrays (never the caller's), exposed read-only.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ...core.owned import OwnsArrays
from ...core.validation import as_array, check_allocation, read_only
from ...errors import InvalidInputError
from ._checks import INT64_MAX, as_values, check_duplicates

__all__ = ["CSF"]


class CSF(OwnsArrays):
    """A 3-D sparse tensor as a fiber tree (dense i, compressed j, compressed k).

    Build with :meth:`from_coords` or :meth:`from_dense`. The tensor owns its arrays: they
    are fresh (never the caller's) and read-only.
    """

    __slots__ = ("data", "idx1", "idx2", "ptr1", "ptr2", "shape")
    format = "csf"
    ndim = 3

    @classmethod
    def from_coords(cls, coords: Any, data: Any, shape: Any, *,
                    duplicates: str = "sum") -> CSF:
        """From integer coordinates of shape (nnz, 3) and values of shape (nnz,).

        Repeated coordinates are added up (``duplicates="sum"``) or refused
        (``"refuse"``); values must be finite.
        """
        who = "sparse.CSF"
        check_duplicates(who, duplicates)
        try:
            dims = tuple(shape)
        except TypeError:
            dims = ()
        if len(dims) != 3 or not all(
                isinstance(d, numbers.Integral) and not isinstance(d, bool)
                and 0 <= int(d) < INT64_MAX for d in dims):
            raise InvalidInputError(f"{who}: shape must be 3 non-negative ints; got {shape!r}.")
        dims = tuple(int(d) for d in dims)
        c = as_array(who, "coords", coords)
        if c.size == 0:
            c = c.reshape(0, 3).astype(np.int64)
        if c.ndim != 2 or c.shape[1] != 3 or c.dtype.kind not in "iu":
            raise InvalidInputError(
                f"{who}: coords must be integers of shape (nnz, 3); got {c.dtype} "
                f"{tuple(c.shape)}."
            )
        vals = as_values(who, data, c.shape[0])
        for axis in range(3):  # on the caller's values: before any cast could wrap them
            bad = (c[:, axis] < 0) | (c[:, axis] >= dims[axis])
            if bad.any():
                raise InvalidInputError(
                    f"{who}: coords[:, {axis}] must be in [0, {dims[axis]}); got "
                    f"{int(c[np.flatnonzero(bad)[0], axis])}."
                )
        check_allocation(who, 8.0 * (dims[0] + 1), f"ptr1 for {dims[0]} slices",
                         "Check the shape.")
        c = c.astype(np.int64)
        order = np.lexsort((c[:, 2], c[:, 1], c[:, 0]))
        c, vals = c[order], vals[order]
        if c.shape[0] > 1:
            same = (np.diff(c, axis=0) == 0).all(axis=1)
            if same.any():
                if duplicates == "refuse":
                    k = int(np.flatnonzero(same)[0])
                    raise InvalidInputError(
                        f"{who}: entries must not repeat (duplicates='refuse'); got "
                        f"{tuple(int(v) for v in c[k])} more than once."
                    )
                starts = np.flatnonzero(np.concatenate([[True], ~same]))
                vals = np.add.reduceat(vals, starts)
                c = c[starts]
        nnz = c.shape[0]
        new_fiber = np.ones(nnz, dtype=bool)
        if nnz > 1:
            new_fiber[1:] = (c[1:, 0] != c[:-1, 0]) | (c[1:, 1] != c[:-1, 1])
        heads = np.flatnonzero(new_fiber)
        self = cls.__new__(cls)
        self.shape = dims
        self.ptr1 = np.zeros(dims[0] + 1, dtype=np.int64)
        self.ptr1[1:] = np.cumsum(np.bincount(c[heads, 0], minlength=dims[0]))
        self.idx1 = c[heads, 1].copy()
        self.ptr2 = np.append(heads, nnz).astype(np.int64)
        self.idx2 = c[:, 2].copy()
        self.data = vals  # vals[order] above: a copy, never the caller's array
        for name in ("ptr1", "idx1", "ptr2", "idx2", "data"):
            setattr(self, name, read_only(getattr(self, name)))
        return self

    @classmethod
    def from_dense(cls, a: Any) -> CSF:
        """From a dense 3-D array (its nonzero entries)."""
        arr = as_array("sparse.CSF", "a", a)
        if arr.ndim != 3:
            raise InvalidInputError(f"sparse.CSF: a must be 3-D; got shape {arr.shape}.")
        coords = np.argwhere(arr)
        return cls.from_coords(coords, arr[tuple(coords.T)], arr.shape)

    @property
    def nnz(self) -> int:
        return int(self.data.shape[0])

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.ptr1, self.idx1, self.ptr2, self.idx2,
                                          self.data)))

    def levels(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """``[(ptr, idx)]`` of the compressed levels 1 and 2 (the fiber tree below level 0)."""
        return [(self.ptr1, self.idx1), (self.ptr2, self.idx2)]

    def toarray(self) -> np.ndarray:
        check_allocation("CSF.toarray", float(np.prod([float(d) for d in self.shape]))
                         * self.dtype.itemsize, f"a dense array of shape {self.shape}",
                         "Keep the tensor sparse.")
        out = np.zeros(self.shape, dtype=self.dtype)
        i = np.repeat(np.arange(self.shape[0]), np.diff(self.ptr1))
        f = np.repeat(np.arange(self.idx1.size), np.diff(self.ptr2))
        out[i[f], self.idx1[f], self.idx2] = self.data
        return out

    def __repr__(self) -> str:
        return f"<CSF {'x'.join(map(str, self.shape))}, nnz={self.nnz}, {self.dtype}>"
