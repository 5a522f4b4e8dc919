"""``sparse.einsum``: two-operand Einstein sums over sparse fiber trees and dense arrays.

The planner (:mod:`hetlab.sparse.einsum_plan`) turns the expression into a loop nest of
dense loops, fiber walks, joins and merges; this module writes that nest as Python source,
compiles it with numba (serial) and caches it per (canonical expression, operand kinds), so
``"ab,b->a"`` and ``"ij,j->i"`` share one compiled kernel. :func:`explain` shows the plan and
the generated source.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from .csf import CSF
from .csr import CSR
from .einsum_plan import Plan, plan

__all__ = ["einsum", "explain", "generated_source"]

_CACHE: dict[tuple[str, tuple[bool, bool], tuple[int, int]], tuple[Plan, str, Callable]] = {}


def _operand(name: str, x: Any) -> Any:
    if isinstance(x, (CSR, CSF)):
        return x
    if type(x).__module__.split(".")[0] in ("scipy", "hetlab") and hasattr(x, "tocsr"):
        from .convert import csr

        return csr(x)
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiub":
        raise InvalidInputError(
            f"sparse.einsum: operand {name} must be real; got dtype {arr.dtype}."
        )
    if not np.isfinite(arr).all():
        raise InvalidInputError(f"sparse.einsum: operand {name} must be finite.")
    return arr


def _levels(x: CSR | CSF) -> list[tuple[np.ndarray, np.ndarray]]:
    return [(x.indptr, x.indices)] if isinstance(x, CSR) else x.levels()


# --- code generation ---------------------------------------------------------------------


def _emit(p: Plan) -> str:
    """Python source of the kernel for plan ``p``."""
    names = p.names
    ndim = {n: len(s) for n, s in zip(names, p.subs, strict=True)}
    sparse = dict(zip(names, p.sparse, strict=True))
    args = []
    for n in names:
        if sparse[n]:
            for lv in range(1, ndim[n]):
                args += [f"{n}_ptr{lv}", f"{n}_idx{lv}"]
            args.append(f"{n}_vals")
        else:
            args.append(n)
    args += [f"n_{c}" for c in sorted({c for lp in p.loops for c in lp.index})]
    if p.mode == "dense":
        args.append("out")
    elif p.mode == "aligned":
        args.append("out_vals")
    elif p.mode in ("append", "workspace"):
        args += ["out_counts", "out_cols", "out_vals"]
    if p.mode == "workspace":
        args += ["w", "mark", "touched"]
    lines = [f"def kernel({', '.join(args)}):"]
    lines += [f"    # {ln}" for ln in p.describe().splitlines()]
    if p.mode == "scalar":
        lines.append("    acc = 0.0")
    if p.mode in ("append", "workspace"):
        lines.append("    nout = 0")
    product = " * ".join(
        f"{n}_vals[p{n}{ndim[n] - 1}]" if sparse[n]
        else f"{n}[{', '.join('x_' + c for c in s)}]"
        for n, s in zip(names, p.subs, strict=True)
    )
    depth = 1
    epilogue: list[tuple[int, list[str]]] = []
    for li, lp in enumerate(p.loops):
        pad = "    " * depth
        x = f"x_{lp.index}"
        dense_levels = [n for n, lv in lp.levels if lv == 0]
        comp = [(n, lv) for n, lv in lp.levels if lv > 0]
        if lp.kind == "dense":
            lines.append(f"{pad}for {x} in range(n_{lp.index}):")
            inner = "    " * (depth + 1)
            depth += 1
        elif lp.kind == "fiber":
            (n, lv), = comp
            lines.append(f"{pad}for p{n}{lv} in range({n}_ptr{lv}[p{n}{lv - 1}], "
                         f"{n}_ptr{lv}[p{n}{lv - 1} + 1]):")
            inner = "    " * (depth + 1)
            lines.append(f"{inner}{x} = {n}_idx{lv}[p{n}{lv}]")
            depth += 1
        else:  # join: two-pointer intersection of two sorted fibers
            (a, la), (b, lb) = comp
            q = f"_{lp.index}"
            lines += [f"{pad}qa{q} = {a}_ptr{la}[p{a}{la - 1}]",
                      f"{pad}ea{q} = {a}_ptr{la}[p{a}{la - 1} + 1]",
                      f"{pad}qb{q} = {b}_ptr{lb}[p{b}{lb - 1}]",
                      f"{pad}eb{q} = {b}_ptr{lb}[p{b}{lb - 1} + 1]",
                      f"{pad}while qa{q} < ea{q} and qb{q} < eb{q}:",
                      f"{pad}    xa{q} = {a}_idx{la}[qa{q}]",
                      f"{pad}    xb{q} = {b}_idx{lb}[qb{q}]",
                      f"{pad}    if xa{q} < xb{q}:",
                      f"{pad}        qa{q} += 1",
                      f"{pad}    elif xb{q} < xa{q}:",
                      f"{pad}        qb{q} += 1",
                      f"{pad}    else:"]
            inner = "    " * (depth + 2)
            lines += [f"{inner}{x} = xa{q}", f"{inner}p{a}{la} = qa{q}",
                      f"{inner}p{b}{lb} = qb{q}"]
            epilogue.append((depth + 2, [f"qa{q} += 1", f"qb{q} += 1"]))
            depth += 2
        for n in dense_levels:
            lines.append(f"{inner}p{n}0 = {x}")
        if p.mode == "workspace" and li == 0:
            lines.append(f"{inner}nt = 0")
            ws_depth = depth
    pad = "    " * depth
    lines.append(f"{pad}v = {product}")
    o = p.output
    if p.mode == "scalar":
        lines.append(f"{pad}acc += v")
    elif p.mode == "dense":
        lines.append(f"{pad}out[{', '.join('x_' + c for c in o)}] += v")
    elif p.mode == "aligned":
        s = p.aligned_with
        lines.append(f"{pad}out_vals[p{s}{len(o) - 1}] += v")
    elif p.mode == "append":
        lines += [f"{pad}out_cols[nout] = x_{o[1]}", f"{pad}out_vals[nout] = v",
                  f"{pad}out_counts[x_{o[0]}] += 1", f"{pad}nout += 1"]
    else:  # workspace: merge into the row accumulator
        j = f"x_{o[1]}"
        lines += [f"{pad}if mark[{j}] != x_{o[0]}:", f"{pad}    mark[{j}] = x_{o[0]}",
                  f"{pad}    touched[nt] = {j}", f"{pad}    nt += 1", f"{pad}    w[{j}] = v",
                  f"{pad}else:", f"{pad}    w[{j}] += v"]
    for d, stmts in reversed(epilogue):
        lines += ["    " * d + st for st in stmts]
    if p.mode == "workspace":
        pad = "    " * ws_depth
        lines += [f"{pad}cols = np.sort(touched[:nt])", f"{pad}for t in range(nt):",
                  f"{pad}    out_cols[nout] = cols[t]", f"{pad}    out_vals[nout] = w[cols[t]]",
                  f"{pad}    nout += 1", f"{pad}out_counts[x_{o[0]}] = nt"]
    if p.mode == "scalar":
        lines.append("    return acc")
    elif p.mode in ("append", "workspace"):
        lines.append("    return nout")
    else:
        lines.append("    return 0")
    return "\n".join(lines) + "\n"


def _compiled(expr: str, sparse: tuple[bool, bool], ndims: tuple[int, int]
              ) -> tuple[Plan, str, Callable]:
    from .einsum_plan import canonical

    key = (canonical(expr), sparse, ndims)
    if key not in _CACHE:
        p = plan(expr, sparse, ndims)
        src = _emit(p)
        import numba

        namespace: dict[str, Any] = {"np": np}
        exec(compile(src, f"<hetlab einsum {p.expr}>", "exec"), namespace)
        _CACHE[key] = (p, src, numba.njit(nogil=True)(namespace["kernel"]))
    return _CACHE[key]


def generated_source(expr: str, *operands: Any) -> str:
    """The Python source numba compiles for ``expr`` on these operands' kinds."""
    ops = [_operand(n, x) for n, x in zip("AB", operands, strict=True)]
    return _compiled(expr, *_kinds(ops))[1]


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
    p, _, kernel = _compiled(expr, sp, nd)
    sizes: dict[str, int] = {}
    for name, s, o in zip("AB", p.subs, ops, strict=True):
        for c, n in zip(s, o.shape, strict=True):
            if sizes.setdefault(c, int(n)) != int(n):
                raise InvalidInputError(
                    f"sparse.einsum: index {c!r} has size {sizes[c]} in one operand and {n} "
                    f"in {name} (shape {tuple(o.shape)})."
                )
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
    n_rows = shape[0]
    if p.mode == "append":
        cap = min(o.nnz for o in ops if isinstance(o, (CSR, CSF)))
    else:  # workspace: at most one entry per (A[i, k], B[k, j]) pair
        Aop, Bop = ops
        cap = int(np.diff(Bop.indptr)[Aop.indices].sum()) if Aop.nnz else 0
    counts = np.zeros(n_rows, dtype=np.int64)
    cols = np.empty(cap, dtype=np.int64)
    vals = np.empty(cap, dtype=dtype)
    extra = ()
    if p.mode == "workspace":
        n_j = shape[1]
        extra = (np.zeros(n_j, dtype), np.full(n_j, -1, np.int64), np.empty(n_j, np.int64))
    nout = kernel(*args, counts, cols, vals, *extra)
    indptr = np.zeros(n_rows + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return _narrow(CSR(indptr, cols[:nout].copy(), vals[:nout].copy(), shape, check=False))


def _narrow(A: CSR) -> CSR:
    """Indices in the dtype chosen by size (int32 when it fits)."""
    from ._checks import choose_index_dtype

    dt = choose_index_dtype(A.nnz, A.shape)
    return A if A.index_dtype == dt else A.with_index_dtype(dt)
