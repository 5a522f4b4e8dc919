"""Padded and blocked formats built from CSR: BSR, ELL and SELL-C-σ.

They trade stored padding for regular access: what that costs shows in
``bytes_per_nonzero`` (counted over the matrix's true nonzeros, padding included in the bytes).
All three keep explicit zeros where CSR had them; converting back gives the same dense matrix.
Host (NumPy) arrays only.

Ownership: the formats are built only by their ``from_csr`` methods, from fresh arrays that
nothing else holds; they are exposed read-only, so a matrix never changes after it is built
(``to_scipy`` returns writable copies).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...core.owned import OwnsArrays
from ...core.validation import check_int, read_only
from ...errors import InvalidInputError
from ._checks import choose_index_dtype
from .formats import COO, CSR

__all__ = ["BSR", "ELL", "SELL"]


def _host_csr(who: str, A: Any) -> CSR:
    from .convert import csr

    A = csr(A)
    if not isinstance(A.data, np.ndarray):
        raise InvalidInputError(f"{who}: the matrix must be on the host; got {type(A.data)}.")
    return A


class BSR(OwnsArrays):
    """Block sparse rows: dense ``R×C`` blocks where any entry of the block is stored.

    ``indptr`` (n_block_rows + 1) and ``indices`` (n_blocks) index blocks as CSR indexes
    entries; ``data`` has shape (n_blocks, R, C). Build with :meth:`from_csr`; it owns its
    arrays (fresh, read-only).
    """

    __slots__ = ("blocksize", "data", "indices", "indptr", "nnz", "shape")
    format = "bsr"

    @classmethod
    def from_csr(cls, A: Any, blocksize: tuple[int, int] = (4, 4)) -> BSR:
        """Block ``A`` (anything :func:`~hetlab.sparse.csr` accepts) into ``blocksize`` tiles,
        which must divide its shape."""
        A = _host_csr("sparse.BSR", A)
        if not isinstance(blocksize, (tuple, list)) or len(blocksize) != 2:
            raise InvalidInputError(
                f"sparse.BSR: blocksize must be a pair of ints (R, C); got {blocksize!r}."
            )
        R, C = (check_int("sparse.BSR", "blocksize", b, 1, 1 << 20) for b in blocksize)
        if A.shape[0] % R or A.shape[1] % C:
            raise InvalidInputError(
                f"sparse.BSR: blocksize must divide the shape {A.shape}; got {(R, C)}."
            )
        rows = A.row_ids().astype(np.int64)
        cols = A.indices.astype(np.int64)
        nbc = A.shape[1] // C
        key = (rows // R) * nbc + cols // C
        uniq, which = np.unique(key, return_inverse=True)
        data = np.zeros((uniq.size, R, C), dtype=A.dtype)
        data[which, rows % R, cols % C] = A.data
        nbr = A.shape[0] // R
        dt = choose_index_dtype(uniq.size, (nbr, nbc))
        indptr = np.zeros(nbr + 1, dtype=dt)
        indptr[1:] = np.cumsum(np.bincount(uniq // nbc, minlength=nbr))
        self = cls.__new__(cls)
        self.indptr, self.indices = read_only(indptr), read_only((uniq % nbc).astype(dt))
        self.data = read_only(data)
        self.shape, self.blocksize, self.nnz = A.shape, (R, C), A.nnz
        return self

    @property
    def nbytes(self) -> int:
        return int(self.indptr.nbytes + self.indices.nbytes + self.data.nbytes)

    @property
    def bytes_per_nonzero(self) -> float:
        """Bytes stored per true nonzero (block padding included)."""
        return self.nbytes / self.nnz if self.nnz else float("nan")

    @property
    def fill(self) -> float:
        """Stored block entries per true nonzero (1.0: no padding)."""
        return self.data.size / self.nnz if self.nnz else float("nan")

    def __repr__(self) -> str:
        return (f"<BSR {self.shape[0]}x{self.shape[1]}, blocks {self.blocksize}, "
                f"{self.data.shape[0]} blocks, nnz={self.nnz}>")

    def tocsr(self) -> CSR:
        """CSR of every stored block entry (block padding becomes explicit zeros)."""
        R, C = self.blocksize
        nbr = self.shape[0] // R
        brow = np.repeat(np.arange(nbr), np.diff(self.indptr))
        r = (brow[:, None, None] * R + np.arange(R)[None, :, None]).repeat(C, axis=2)
        c = (self.indices[:, None, None].astype(np.int64) * C
             + np.arange(C)[None, None, :]).repeat(R, axis=1)
        return COO(r.ravel(), c.ravel(), self.data.ravel(), self.shape, check=False).tocsr()

    def toarray(self) -> np.ndarray:
        return self.tocsr().toarray()

    def to_scipy(self) -> Any:
        """A ``scipy.sparse.bsr_array`` of its own (writable copies of the arrays)."""
        import scipy.sparse

        return scipy.sparse.bsr_array((self.data.copy(), self.indices.copy(),
                                       self.indptr.copy()), shape=self.shape,
                                      blocksize=self.blocksize)


class SELL(OwnsArrays):
    """SELL-C-σ: rows sorted by length inside windows of ``sigma`` rows, cut into slices of
    ``C`` rows, each slice padded to its longest row and stored column by column.

    ``perm[p]`` is the original row at sorted position p; slice s holds positions
    ``s*C … s*C+C-1``, entry j of its r-th row at ``slice_ptr[s] + j*C + r``. Padding has
    column -1 and value 0. ELL is SELL with ``C = n_rows`` and ``sigma = 1`` (see :class:`ELL`).
    Build with :meth:`from_csr`; it owns its arrays (fresh, read-only).
    """

    __slots__ = ("C", "cols", "nnz", "perm", "shape", "sigma", "slice_ptr", "vals")
    format = "sell"

    @classmethod
    def from_csr(cls, A: Any, C: int = 8, sigma: int = 64) -> SELL:
        """Build from anything :func:`~hetlab.sparse.csr` accepts; ``sigma`` must be a
        multiple of ``C`` (or 1: no sorting)."""
        A = _host_csr("sparse.SELL", A)
        n = A.shape[0]
        C = check_int("sparse.SELL", "C", C, 1, max(1 << 20, n))
        sigma = check_int("sparse.SELL", "sigma", sigma, 1, 1 << 30)
        if sigma != 1 and sigma % C:
            raise InvalidInputError(
                f"sparse.SELL: sigma must be 1 or a multiple of C={C}; got {sigma}."
            )
        lengths = np.diff(A.indptr).astype(np.int64)
        perm = np.arange(n)
        if sigma > 1:
            for w in range(0, n, sigma):
                seg = lengths[w:w + sigma]
                perm[w:w + sigma] = w + np.argsort(-seg, kind="stable")
        n_slices = -(-n // C)
        plen = np.zeros(n_slices * C, dtype=np.int64)
        plen[:n] = lengths[perm]
        width = plen.reshape(n_slices, C).max(axis=1) if n else np.zeros(0, np.int64)
        slice_ptr = np.zeros(n_slices + 1, dtype=np.int64)
        slice_ptr[1:] = np.cumsum(width * C)
        dt = choose_index_dtype(int(slice_ptr[-1]), A.shape)
        cols = np.full(int(slice_ptr[-1]), -1, dtype=dt)
        vals = np.zeros(int(slice_ptr[-1]), dtype=A.dtype)
        # destination of every stored entry: its row's sorted position and its rank in the row
        pos = np.empty(n, dtype=np.int64)
        pos[perm] = np.arange(n)
        rows = A.row_ids().astype(np.int64)
        rank = np.arange(A.nnz) - A.indptr[rows]
        p = pos[rows]
        dest = slice_ptr[p // C] + rank * C + p % C
        cols[dest], vals[dest] = A.indices, A.data
        self = cls.__new__(cls)
        self.C, self.sigma = C, sigma
        self.perm, self.slice_ptr = read_only(perm.astype(dt)), read_only(slice_ptr)
        self.cols, self.vals = read_only(cols), read_only(vals)
        self.shape, self.nnz = A.shape, A.nnz
        return self

    @property
    def nbytes(self) -> int:
        return int(self.perm.nbytes + self.slice_ptr.nbytes + self.cols.nbytes + self.vals.nbytes)

    @property
    def bytes_per_nonzero(self) -> float:
        """Bytes stored per true nonzero (padding included)."""
        return self.nbytes / self.nnz if self.nnz else float("nan")

    @property
    def fill(self) -> float:
        """Stored slots per true nonzero (1.0: no padding)."""
        return self.vals.size / self.nnz if self.nnz else float("nan")

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.shape[0]}x{self.shape[1]}, C={self.C}, "
                f"sigma={self.sigma}, nnz={self.nnz}, fill={self.fill:.2f}>")

    def tocsr(self) -> CSR:
        """Back to CSR (padding dropped, original row order)."""
        n = self.shape[0]
        slot = np.flatnonzero(self.cols >= 0)
        s = np.searchsorted(self.slice_ptr, slot, side="right") - 1
        p = s * self.C + (slot - self.slice_ptr[s]) % self.C
        rows = self.perm.astype(np.int64)[p] if n else p
        return COO(rows, self.cols[slot], self.vals[slot], self.shape, check=False).tocsr()

    def toarray(self) -> np.ndarray:
        return self.tocsr().toarray()

    def to_scipy(self) -> Any:
        """A ``scipy.sparse.csr_array`` (scipy has no SELL format)."""
        return self.tocsr().to_scipy()


class ELL(SELL):
    """ELLPACK: every row padded to the longest row (SELL with one slice, no sorting)."""

    __slots__ = ()
    format = "ell"

    @classmethod
    def from_csr(cls, A: Any) -> ELL:  # type: ignore[override]
        """Build from anything :func:`~hetlab.sparse.csr` accepts."""
        A = _host_csr("sparse.ELL", A)
        return super().from_csr(A, C=max(A.shape[0], 1), sigma=1)  # type: ignore[return-value]

    @property
    def width(self) -> int:
        """Entries per row after padding."""
        return int(self.slice_ptr[-1]) // max(self.shape[0], 1)
