"""Sparse kernel specs: validation, generated cases, error metrics and cost models.

Every sparse kernel runs on a canonical :class:`~hetlab.sparse.CSR`; anything
:func:`hetlab.sparse.csr` accepts (scipy/cupyx matrices, COO, …) is converted at the boundary.
Dense operands are cast to the matrix's value dtype (as ``knn`` casts queries to the points'
dtype), so a float32 matrix runs in float32 whatever the vector's dtype.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.metrics import relative_error
from ...core.params import Param
from ...core.spec import Cost, KernelSpec
from ...core.validation import array_module, as_float_array, cast_finite, check_axes_nonempty
from ...errors import InvalidInputError
from . import reference
from .convert import csr
from .formats import CSR
from .generate import make_matrix

__all__ = ["SPMV", "SPMM", "SDDMM", "MAX_SPMM_COLUMNS", "rel_diff"]

#: widest dense right-hand side spmm accepts
MAX_SPMM_COLUMNS = 256
#: rows of a generated case's matrix per ``size`` unit, entries per row
CASE_NNZ_PER_ROW = 16


def _matrix(kernel: str, name: str, A: Any) -> CSR:
    try:
        return csr(A)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{kernel}: {name} is not a valid sparse matrix: {exc}") from None


def _dense(kernel: str, name: str, a: Any, shape: tuple[int | None, ...], A: CSR, *,
           free_nonempty: bool = True) -> Any:
    """``a`` as a contiguous array of ``shape`` (None: any length ≥ 1, unless the caller
    checks that axis itself: ``free_nonempty=False``) in ``A``'s dtype, finite in that dtype
    (a float64 1e300 cast to a float32 matrix's dtype would be inf: refused)."""
    arr = as_float_array(kernel, name, a)
    want = "(" + ", ".join("k" if s is None else str(s) for s in shape) + (",)" if len(
        shape) == 1 else ")")
    if arr.ndim != len(shape) or any(s is not None and d != s for d, s in zip(
            arr.shape, shape, strict=True)):
        raise InvalidInputError(
            f"{kernel}: {name} must have shape {want} to match the matrix of shape {A.shape}; "
            f"got shape {tuple(arr.shape)}."
        )
    # a free axis (the columns of X in spmm/sddmm) of length 0 is a mistake, not an edge case
    if free_nonempty:
        check_axes_nonempty(kernel, name, arr,
                            {i: "column" for i, s in enumerate(shape) if s is None})
    xp = array_module(arr)
    return xp.ascontiguousarray(cast_finite(kernel, name, arr, A.dtype))


def rel_diff(result: Any, expected: Any) -> float:
    """Largest |result − expected| relative to max |expected|; inf when shapes or sparsity
    patterns differ. Accepts arrays or CSR matrices."""
    if isinstance(expected, CSR):
        if not isinstance(result, CSR) or result.shape != expected.shape or not (
                np.array_equal(result.indptr, expected.indptr)
                and np.array_equal(result.indices, expected.indices)):
            return float("inf")
        result, expected = result.data, expected.data
    return relative_error(result, expected)


def _csr_bytes(A: CSR) -> float:
    return float(A.nbytes)


# --- spmv --------------------------------------------------------------------------------


def _validate_spmv(A: Any, x: Any) -> dict[str, Any]:
    M = _matrix("spmv", "A", A)
    return {"A": M, "x": _dense("spmv", "x", x, (M.shape[1],), M)}


def _spmv_cost(a: Mapping[str, Any]) -> Cost:
    A, b = a["A"], a["A"].data.itemsize
    return Cost(flops=2.0 * A.nnz, bytes=_csr_bytes(A) + b * (A.shape[1] + A.shape[0]))


def _matrix_case(size: int, rng: np.random.Generator) -> CSR:
    # float32 values, int32 indices: the common SpMV case, and what the GPU and FPGA paths take
    return make_matrix(size, rng, kind="powerlaw", nnz_per_row=CASE_NNZ_PER_ROW,
                       dtype=np.float32)


SPMV = KernelSpec(
    name="spmv",
    params=(
        Param("A", "csr", "sparse matrix of shape (n_rows, n_cols)"),
        Param("x", "array", "vector of shape (n_cols,), finite in A's dtype", ndim=1),
    ),
    validate=_validate_spmv,
    reference=reference.spmv,
    error=rel_diff,
    tolerance=1e-5,
    make_case=lambda size, rng: {"A": (A := _matrix_case(size, rng)),
                                 "x": rng.random(A.shape[1]) * 2 - 1},
    cost=_spmv_cost,
    arrays=("A", "x"),
    size_unit="rows",
    description="sparse matrix × dense vector (CSR)",
)

# --- spmm --------------------------------------------------------------------------------


def _validate_spmm(A: Any, X: Any) -> dict[str, Any]:
    M = _matrix("spmm", "A", A)
    X = _dense("spmm", "X", X, (M.shape[1], None), M, free_nonempty=False)  # 1..256: below
    if not 1 <= X.shape[1] <= MAX_SPMM_COLUMNS:
        raise InvalidInputError(
            f"spmm: X must have 1 to {MAX_SPMM_COLUMNS} columns; got {X.shape[1]}. Split a "
            "wider X into column blocks."
        )
    return {"A": M, "X": X}


def _spmm_cost(a: Mapping[str, Any]) -> Cost:
    A, k, b = a["A"], a["X"].shape[1], a["A"].data.itemsize
    return Cost(flops=2.0 * A.nnz * k, bytes=_csr_bytes(A) + b * k * (A.shape[1] + A.shape[0]))


SPMM = KernelSpec(
    name="spmm",
    params=(
        Param("A", "csr", "sparse matrix of shape (n_rows, n_cols)"),
        Param("X", "array", "dense matrix of shape (n_cols, k), 1 ≤ k ≤ 256", ndim=2),
    ),
    validate=_validate_spmm,
    reference=reference.spmm,
    error=rel_diff,
    tolerance=1e-5,
    make_case=lambda size, rng: {"A": (A := _matrix_case(size, rng)),
                                 "X": rng.random((A.shape[1], 16)) * 2 - 1},
    cost=_spmm_cost,
    arrays=("A", "X"),
    size_unit="rows",
    description="sparse matrix × dense matrix (CSR, 1–256 columns)",
)

# --- sddmm -------------------------------------------------------------------------------


def _validate_sddmm(S: Any, X: Any, Y: Any) -> dict[str, Any]:
    M = _matrix("sddmm", "S", S)
    X = _dense("sddmm", "X", X, (M.shape[0], None), M)
    Y = _dense("sddmm", "Y", Y, (M.shape[1], X.shape[1]), M)
    return {"S": M, "X": X, "Y": Y}


def _sddmm_cost(a: Mapping[str, Any]) -> Cost:
    S, k, b = a["S"], a["X"].shape[1], a["S"].data.itemsize
    return Cost(flops=(2.0 * k + 1) * S.nnz,
                bytes=_csr_bytes(S) + b * (k * (S.shape[0] + S.shape[1]) + S.nnz))


def _sddmm_case(size: int, rng: np.random.Generator) -> dict[str, Any]:
    S = make_matrix(size, rng, kind="banded", nnz_per_row=CASE_NNZ_PER_ROW)
    S = CSR(S.indptr, S.indices, np.ones_like(S.data), S.shape, check=False)  # a 0/1 mask
    return {"S": S, "X": rng.random((size, 32)) - 0.5, "Y": rng.random((size, 32)) - 0.5}


SDDMM = KernelSpec(
    name="sddmm",
    params=(
        Param("S", "csr", "sparsity pattern of shape (m, n)"),
        Param("X", "array", "dense matrix of shape (m, k)", ndim=2),
        Param("Y", "array", "dense matrix of shape (n, k)", ndim=2),
    ),
    validate=_validate_sddmm,
    reference=reference.sddmm,
    error=rel_diff,
    tolerance=1e-5,
    make_case=_sddmm_case,
    cost=_sddmm_cost,
    arrays=("S", "X", "Y"),
    size_unit="rows",
    description="sampled dense-dense product S ⊙ (X Yᵀ) (attention-mask pattern)",
)
