"""Checkers of notebook 03 (sparse): build CSR from a dense matrix, and a CSR SpMV row loop."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..kernels.sparse.convert import csr
from ._core import Case, Verdict, arrays_equal, finish, run_cases
from ._speed import with_speed

__all__ = ["check_csr_arrays", "check_spmv", "TINY"]

#: the notebook's tiny matrix (row 1 is empty)
TINY = np.array([[5.0, 0, 0, 1], [0, 0, 0, 0], [0, 2, 3, 0], [0, 0, 0, 4]])


def check_csr_arrays(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 03.1: ``fn(dense)`` returns CSR's ``(indptr, indices, data)``.

    Parameters
    ----------
    fn : callable
        ``fn(dense: (n_rows, n_cols) float64) -> (indptr (n_rows + 1,), indices (nnz,),
        data (nnz,))``, columns ascending within each row.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    rng = np.random.default_rng(4)
    rand = rng.random((6, 5)) * (rng.random((6, 5)) < 0.4)
    specs = [
        ("a 1×4 row [0, 7, 0, 8]", np.array([[0.0, 7, 0, 8]]),
         "indptr has n_rows + 1 entries and starts at 0; row i is data[indptr[i]:indptr[i+1]]."),
        ("the notebook's 4×4 matrix (row 1 empty)", TINY,
         "an empty row adds no entry: indptr[i + 1] == indptr[i]."),
        ("an all-zero 3×3 matrix", np.zeros((3, 3)),
         "no nonzeros: indptr is all zeros, indices and data are empty."),
        ("a 6×5 random matrix, 40% nonzero", rand,
         "walk rows in order; within a row, columns ascending (np.flatnonzero(row))."),
    ]
    cases = []
    for label, dense, nudge in specs:
        A = csr(dense)
        cases.append(Case(label, {"dense": dense.copy()}, (A.indptr, A.indices, A.data), nudge))
    verdict = run_cases("03.1 csr_arrays", fn, cases, arrays_equal)
    return finish(verdict, raise_on_fail)


def check_spmv(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 03.2: ``fn(A, x)`` is ``A @ x`` for a CSR matrix, one row at a time.

    Hand-made matrices first (empty rows, a rectangular one), then ``hl.check``'s generated
    power-law matrices, timed beside hetlab's numpy and numba SpMV.

    Parameters
    ----------
    fn : callable
        ``fn(A: hetlab.sparse.CSR (n_rows, n_cols), x: (n_cols,) float) -> y (n_rows,)``.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    rect = np.array([[0.0, 1, 0, 0, 2], [3, 0, 0, 0, 0]])
    specs = [
        ("the notebook's 4×4 matrix, x = [1, 2, 3, 4]", TINY, np.array([1.0, 2, 3, 4]),
         "y[i] = sum of data[p] * x[indices[p]] for p in range(indptr[i], indptr[i + 1])."),
        ("a 3×3 matrix whose last row is empty", np.array([[1.0, 0, 2], [0, 3, 0], [0, 0, 0]]),
         np.array([1.0, 1, 1]), "an empty row gives y[i] = 0: start every row's sum at 0."),
        ("a 2×5 matrix (more columns than rows)", rect, np.arange(5.0),
         "y has one entry per ROW (A.shape[0]); x one per column."),
    ]
    cases = [Case(label, {"A": csr(M), "x": x}, M @ x, nudge) for label, M, x, nudge in specs]
    verdict = run_cases("03.2 my_spmv", fn, cases,
                        lambda got, exp: np.shape(got) == exp.shape and np.allclose(got, exp))
    verdict = with_speed(verdict, fn, "spmv", (17, 300, 3000),
                         "read A.indptr, A.indices and A.data; accumulate each row in float64.")
    return finish(verdict, raise_on_fail)
