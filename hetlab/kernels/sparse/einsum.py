"""``sparse.einsum``: two-operand Einstein sums over sparse fiber trees and dense arrays.

The planner (:mod:`hetlab.kernels.sparse.einsum_plan`) turns the expression into a loop nest of
dense loops, fiber walks, joins and merges; :mod:`hetlab.kernels.sparse.einsum_codegen` writes that
nest as Python source, which is compiled with numba and cached per (canonical expression,
operand kinds, serial or parallel), so ``"ab,b->a"`` and ``"ij,j->i"`` share one compiled
kernel. :func:`explain` shows the plan, :func:`generated_source` the source.

Threads: when the outermost loop runs over output rows (or the sum is a full contraction)
and the operands hold at least ``PARALLEL_WORK`` entries, the rows run in a ``prange`` loop
on all numba threads (``ij,j->i``, ``ik,kj->ij`` with a sparse first operand — sparse ×
dense and Gustavson's sparse × sparse —, ``ij,ij->ij``, ``ij,ij->``, ``ijk,k->ij``). Dense ×
sparse ``ik,kj->ij`` walks the sparse operand's rows, the contracted index, outermost: rows
would add into the same output entries, so it stays serial. Smaller inputs run serially
(starting a parallel region costs more than they take).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...core.validation import as_array, cast_finite
from ...errors import InvalidInputError
from .csf import CSF
from .einsum_codegen import emit, row_parallel
from .einsum_plan import Plan, plan
from .formats import CSR

__all__ = ["einsum", "explain", "generated_source", "PARALLEL_WORK"]

#: entries (nonzeros of the sparse operands, elements of the dense ones, and for Gustavson
#: the products) from which a row-parallel expression runs on all numba threads
PARALLEL_WORK = 1 << 18

_CACHE: dict[tuple[str, tuple[bool, bool], tuple[int, int], bool],
             tuple[Plan, str, Callable]] = {}


def _operand(name: str, x: Any) -> Any:
    if isinstance(x, (CSR, CSF)):
        return x
    if type(x).__module__.split(".")[0] in ("scipy", "hetlab") and hasattr(x, "tocsr"):
        from .convert import csr

        return csr(x)
    arr = as_array("sparse.einsum", f"operand {name}", x)
    if arr.dtype.kind not in "fiub":
        raise InvalidInputError(
            f"sparse.einsum: operand {name} must be real; got dtype {arr.dtype}."
        )
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 8:  # longdouble: computed in float64
        arr = cast_finite("sparse.einsum", f"operand {name}", arr, np.float64)
    if not np.isfinite(arr).all():
        raise InvalidInputError(f"sparse.einsum: operand {name} must be finite.")
    return arr


def _levels(x: CSR | CSF) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(x.indptr, x.indices)] if isinstance(x, CSR) else x.levels()


def _compiled(expr: str, sparse: tuple[bool, bool], ndims: tuple[int, int],
              parallel: bool = False) -> tuple[Plan, str, Callable]:
    from .einsum_plan import canonical

    p = plan(expr, sparse, ndims)
    parallel = parallel and row_parallel(p)
    key = (canonical(expr), sparse, ndims, parallel)
    if key not in _CACHE:
        src = emit(p, parallel)
        import numba

        namespace: dict[str, Any] = {"np": np, "prange": numba.prange,
                                     "get_thread_id": numba.get_thread_id}
        exec(compile(src, f"<hetlab einsum {p.expr}>", "exec"), namespace)
        _CACHE[key] = (p, src, numba.njit(nogil=True, parallel=parallel)(namespace["kernel"]))
    return _CACHE[key]


def generated_source(expr: str, *operands: Any, parallel: bool = False) -> str:
    """The Python source numba compiles for ``expr`` on these operands' kinds (the
    row-parallel variant with ``parallel=True``, where the expression has one)."""
    ops = [_operand(n, x) for n, x in zip("AB", operands, strict=True)]
    return _compiled(expr, *_kinds(ops), parallel)[1]


def explain(expr: str, *operands: Any) -> str:
    """The plan of ``expr`` on these operands: loop order, joins, merges, output mode."""
    ops = [_operand(n, x) for n, x in zip("AB", operands, strict=True)]
    return plan(expr, *_kinds(ops)).describe()


def _kinds(ops: list[Any]) -> tuple[tuple[bool, bool], tuple[int, int]]:
    if len(ops) != 2:
        raise InvalidInputError(f"sparse.einsum: exactly 2 operands; got {len(ops)}.")
    sp = tuple(isinstance(o, (CSR, CSF)) for o in ops)
    nd = tuple(len(o.shape) for o in ops)
    return sp, nd  # type: ignore[return-value]


def einsum(expr: str, A: Any, B: Any) -> Any:
    """Einstein sum of two operands, at least one sparse; numba code generated per expression.

    Parameters
    ----------
    expr : str
        Two operands and an explicit output, one of (any index letters with the same
        structure): ``"ij,j->i"`` (SpMV), ``"ik,kj->ij"`` (sparse × dense, dense × sparse, or
        sparse × sparse by Gustavson's row merge), ``"ij,ij->ij"`` (elementwise product: join
        of two sparse patterns, or sampling of a dense one), ``"ij,ij->"`` (sum of the
        elementwise product), ``"ijk,k->ij"`` (CSF tensor × vector).
    A, B : CSR, CSF (3-D), scipy.sparse matrix, or dense array-like
        2-D sparse operands become CSR (:func:`hetlab.sparse.csr`); 1-D operands are dense.
        Sparse operands are walked in their level order: ``"ki,kj->ij"`` with a sparse A is
        refused (transpose A first).

    Returns
    -------
    float, ndarray or CSR
        A number for a full contraction; a CSR when every output index but the first comes
        from a sparse fiber (pattern: the join, the merge, or the sparse operand's); else a
        dense array. dtype: float64 unless every operand is float32.

    Raises
    ------
    InvalidInputError
        Unsupported expression (the message lists the supported ones), index sizes that
        disagree, a sparse operand walked against its level order, NaN/inf.

    Examples
    --------
    >>> import numpy as np
    >>> from hetlab import sparse
    >>> A = sparse.csr(np.array([[1.0, 0, 2], [0, 3, 0]]))
    >>> sparse.einsum("ij,j->i", A, np.ones(3))
    array([3., 3.])
    >>> sparse.einsum("ik,kj->ij", A, A.to_scipy().T).toarray()
    array([[5., 0.],
           [0., 9.]])
    """
    ops = [_operand(n, x) for n, x in zip("AB", (A, B), strict=True)]
    sp, nd = _kinds(ops)
    p = plan(expr, sp, nd)
    sizes: dict[str, int] = {}
    for name, s, o in zip("AB", p.subs, ops, strict=True):
        for c, n in zip(s, o.shape, strict=True):
            if sizes.setdefault(c, int(n)) != int(n):
                raise InvalidInputError(
                    f"sparse.einsum: index {c!r} has size {sizes[c]} in one operand and {n} "
                    f"in {name} (shape {tuple(o.shape)})."
                )
    bounds = _row_bounds(p, ops)
    work = sum(o.nnz if isinstance(o, (CSR, CSF)) else o.size for o in ops)
    work += int(bounds.sum()) if bounds is not None else 0
    import numba

    threads = int(numba.get_num_threads())
    parallel = work >= PARALLEL_WORK and threads > 1 and row_parallel(p)
    p, _, kernel = _compiled(expr, sp, nd, parallel)
    dtype = np.result_type(*[o.dtype for o in ops], np.float32)
    dtype = np.dtype(np.float32 if dtype == np.float32 else np.float64)
    args: list[Any] = []
    for o in ops:
        if isinstance(o, (CSR, CSF)):
            for ptr, idx in _levels(o):
                args += [ptr, idx]
            args.append(o.data)
        else:
            args.append(np.ascontiguousarray(o, dtype=dtype))
    args += [sizes[c] for c in sorted(sizes)]
    shape = tuple(sizes[c] for c in p.output)
    if p.mode == "scalar":
        return dtype.type(kernel(*args))
    if p.mode == "dense":
        out = np.zeros(shape, dtype=dtype)
        kernel(*args, out)
        return out
    if p.mode == "aligned":
        S = ops["AB".index(p.aligned_with)]
        ptr, idx = _levels(S)[len(p.output) - 2]
        vals = np.zeros(idx.shape[0], dtype=dtype)
        kernel(*args, vals)
        return CSR(ptr, idx, vals, shape, check=False)
    assert bounds is not None  # append or workspace: a sparse output built row by row
    n_rows = shape[0]
    off = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(bounds, out=off[1:])
    counts = np.zeros(n_rows, dtype=np.int64)
    cols = np.empty(int(off[-1]), dtype=np.int64)
    vals = np.empty(int(off[-1]), dtype=dtype)
    extra = ()
    if p.mode == "workspace":
        n_ws, n_j = (threads if parallel else 1), shape[1]
        extra = (np.zeros((n_ws, n_j), dtype), np.full((n_ws, n_j), -1, np.int64),
                 np.empty((n_ws, n_j), np.int64))
    kernel(*args, off, counts, cols, vals, *extra)
    from ._einsum_compact import compact

    indptr, cols, vals = compact(off, counts, cols, vals, parallel=parallel)
    return _narrow(CSR(indptr, cols, vals, shape, check=False))


def _row_bounds(p: Plan, ops: list[Any]) -> np.ndarray | None:
    """Most entries each row of a sparse output can get (None for other outputs): a join
    keeps at most the shorter of the two rows; Gustavson's merge at most the sum over
    A[i, k] ≠ 0 of the lengths of rows B[k, :]."""
    if p.mode == "append":  # ij,ij->ij on two CSR operands
        A, B = ops
        return np.minimum(np.diff(A.indptr), np.diff(B.indptr)).astype(np.int64)
    if p.mode == "workspace":  # ik,kj->ij on two CSR operands
        A, B = ops
        per_entry = np.diff(B.indptr).astype(np.int64)[A.indices]
        run = np.zeros(A.nnz + 1, dtype=np.int64)
        np.cumsum(per_entry, out=run[1:])
        return run[A.indptr[1:]] - run[A.indptr[:-1]]
    return None


def _narrow(A: CSR) -> CSR:
    """Indices in the dtype chosen by size (int32 when it fits)."""
    from ._checks import choose_index_dtype

    dt = choose_index_dtype(A.nnz, A.shape)
    return A if A.index_dtype == dt else A.with_index_dtype(dt)
