"""Public sparse kernels: ``hl.spmv``, ``hl.spmm``, ``hl.sddmm``.

Each validates once (converting the matrix to canonical CSR), dispatches to the requested
backend and returns the caller's array type (see :mod:`hetlab.core.dispatch`; a CSR argument
is a container its dispatch moves part by part).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.base import Backend
from ...core.dispatch import run
from ...core.registry import register_impl, register_kernel
from .formats import CSR
from .spec import SDDMM, SPMM, SPMV

__all__ = ["spmv", "spmm", "sddmm"]

Device = str | Backend | None

# registration: the family's one place (specs, then implementations imported on first use)
for _spec in (SPMV, SPMM, SDDMM):
    register_kernel(_spec)
    for _backend in ("numba", "cupy"):
        register_impl(_spec.name, _backend, f"hetlab.kernels.sparse.{_backend}:{_spec.name}")
register_impl("spmv", "fpga", "hetlab.kernels.sparse.fpga:spmv")  # the spmv overlay


def spmv(A: Any, x: Any, *, device: Device = None, keep_on_device: bool = False) -> np.ndarray:
    """Sparse matrix × vector, ``y = A @ x``.

    Parameters
    ----------
    A : CSR or anything :func:`hetlab.sparse.csr` accepts, shape (n_rows, n_cols)
        scipy/cupyx matrices and COO are converted (sorted; duplicates added up).
    x : array-like of shape (n_cols,)
        Cast to ``A``'s value dtype; must be finite in it (a float64 ``1e300`` for a
        float32 matrix is refused, not turned into inf).
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Where to run; default: where ``A`` lives (the host → ``"numpy"``).
    keep_on_device : bool, default False
        Return device arrays instead of copying results back to the host.

    Returns
    -------
    ndarray of shape (n_rows,), ``A``'s value dtype
        Empty rows give 0. Sums may be added in another order than the reference's
        (relative difference within 1e-5 of max ``|y|``).

    Raises
    ------
    InvalidInputError
        An invalid matrix (unsorted raw CSR, out-of-range index, NaN), a wrong length of
        ``x``, NaN/inf in ``x`` or values beyond ``A``'s dtype.

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> from hetlab import sparse
    >>> A = sparse.csr(np.array([[1.0, 0, 2], [0, 0, 0], [0, 3, 0]]))
    >>> hl.spmv(A, [1.0, 1.0, 1.0], device="numba")
    array([3., 0., 3.])
    """
    return run(SPMV, device, keep_on_device, A=A, x=x)


def spmm(A: Any, X: Any, *, device: Device = None, keep_on_device: bool = False) -> np.ndarray:
    """Sparse matrix × dense matrix, ``Y = A @ X``.

    Parameters
    ----------
    A : CSR or anything :func:`hetlab.sparse.csr` accepts, shape (n_rows, n_cols)
    X : array-like of shape (n_cols, k), 1 ≤ k ≤ 256
        Cast to ``A``'s value dtype (C order); must be finite.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Where to run; default: where the matrix lives (the host → ``"numpy"``).
    keep_on_device : bool, default False
        Return device arrays instead of copying results back to the host.

    Returns
    -------
    ndarray of shape (n_rows, k), ``A``'s value dtype

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> from hetlab import sparse
    >>> A = sparse.csr(np.array([[1.0, 0], [0, 2.0]]))
    >>> hl.spmm(A, np.ones((2, 3)), device="numba")
    array([[1., 1., 1.],
           [2., 2., 2.]])
    """
    return run(SPMM, device, keep_on_device, A=A, X=X)


def sddmm(S: Any, X: Any, Y: Any, *, device: Device = None,
          keep_on_device: bool = False) -> CSR:
    """Sampled dense-dense product ``S ⊙ (X @ Y.T)``, computed only on ``S``'s pattern.

    The attention-mask pattern: with ``S`` a 0/1 mask, ``X`` queries and ``Y`` keys, the result
    holds the scores ``X[i] · Y[j]`` of the allowed pairs only.

    Parameters
    ----------
    S : CSR or anything :func:`hetlab.sparse.csr` accepts, shape (m, n)
    X : array-like of shape (m, k)
    Y : array-like of shape (n, k)
        Both cast to ``S``'s value dtype; must be finite.
    device : str or Backend, optional  (the registered backends: filled in by hetlab)
        Where to run; default: where the matrix lives (the host → ``"numpy"``).
    keep_on_device : bool, default False
        Return device arrays instead of copying results back to the host.

    Returns
    -------
    CSR of shape (m, n)
        ``S``'s pattern (``indptr``, ``indices`` shared with ``S``), values
        ``S[i, j] * (X[i] · Y[j])``.

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> from hetlab import sparse
    >>> mask = sparse.csr(np.tril(np.ones((3, 3))))
    >>> q = np.arange(6.0).reshape(3, 2)
    >>> hl.sddmm(mask, q, q, device="numba").toarray()
    array([[ 1.,  0.,  0.],
           [ 3., 13.,  0.],
           [ 5., 23., 41.]])
    """
    return run(SDDMM, device, keep_on_device, S=S, X=X, Y=Y)


for _fn, _spec in ((spmv, SPMV), (spmm, SPMM), (sddmm, SDDMM)):
    _fn.spec = _spec  # type: ignore[attr-defined]
