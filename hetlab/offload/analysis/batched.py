"""Leading-index products: a contraction whose output's leading indices lead one factor only,
emitted as a loop over those indices with one 2-D product per slice, written into the output.

The mode-2 product ``Y[a, b, c] = Σ_l M[b, l] X[a, l, c]`` is such a statement: ``a`` leads
``Y`` and ``X`` and is not an index of ``M``. The general contraction of :mod:`.catalogue`
would copy ``X`` transposed to ``(l, a, c)``, run one GEMM, and write ``Y`` through a transposed
(strided) view; here each slice is ``Y[a] = M @ X[a]`` with no copy of ``X`` when its slices
are contiguous, and the numba form writes the GEMM straight into ``Y[a]``.

When it applies: one term of two factors ``F`` and ``G`` (no array temporary, no triangular
row), ``op`` ``=`` or ``+=``; the longest prefix ``L`` of the output's indices that is also the
prefix of ``F``'s and no index of ``G`` is not empty; per slice, one summed index, at most one
other free index per factor, and at least one free index left in the output (a matmul or a
matvec); the output is not read by the product; and the general contraction would need a
transposed copy (when ``F``, ``G`` and the output already lie in contraction order, the single
reshaped GEMM of :mod:`.catalogue` is kept). Each output element is the same sum as the loop
nest's, in BLAS's order; bounds are sliced as for every block (:meth:`_Emitter.sliced`), so a
block is exact for any extents.

numba's ``np.dot(a, b, out)`` copies an ``out`` not typed contiguous and writes the copy (the
caller's array is left unchanged), so the numba form hands it ``np.ascontiguousarray(Y[q])``
(a view when that slice is contiguous at run time, numba checks) and copies back only when it
got a copy; an update (``+=``, a scalar factor) is ``Y[q] += c * (M @ X[q])``. Only the numba
form (``Block.numba_call``) is a loop: the NumPy form, which the CuPy variant runs, keeps the
single GEMM (a host loop of small cuBLAS calls costs a launch per slice), so the block's
pattern stays ``contraction``.

The slices run in a parallel helper (:mod:`.parhelp`, :data:`PARALLEL`): ``prange`` over the
first leading index, one BLAS call per slice on each thread, as the hand-written
``Y[a] = M @ X[a]`` in a ``prange`` does (unlike the other helpers, this one calls BLAS: the
per-slice products are small, and on the suite's mode-2 product the parallel form measured
faster than the serial loop; ``benchmarks/offload.py --suite --kernels mode2_product``). Each
output slice is written by one thread.

>>> import ast
>>> from hetlab.offload.analysis.contraction import normalize
>>> from hetlab.offload.analysis.catalogue import emit
>>> src = '''
... for a in range(X.shape[0]):
...     for b in range(M.shape[0]):
...         for c in range(X.shape[2]):
...             for l in range(X.shape[1]):
...                 Y[a, b, c] += M[b, l] * X[a, l, c]
... '''
>>> from hetlab.offload.analysis.parhelp import readable
>>> kind, code = emit(normalize(ast.parse(src).body[0]), numba=True)
>>> kind
'batched-matmul'
>>> print(readable(code))  # doctest: +ELLIPSIS
_hbt1 = X
_hbt2 = np.ascontiguousarray(M[:, :X.shape[1]])
_hbt3 = Y[:X.shape[0], :M.shape[0], :X.shape[2]]
# hetlab.offload parallel helper
import numba as _hl_numba
import numpy as np
<BLANKLINE>
<BLANKLINE>
@_hl_numba.njit(parallel=True, cache=False)
def _hlp_...(_hbt3, _hbt2, _hbt1):
    for _hbt4 in _hl_numba.prange(_hbt1.shape[0]):
        _hbt3[_hbt4] += _hbt2 @ np.ascontiguousarray(_hbt1[_hbt4])
_hlp_...(_hbt3, _hbt2, _hbt1)
>>> emit(normalize(ast.parse(src).body[0]))[0]  # the NumPy (CuPy) form: one GEMM
'contraction'
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from .parhelp import free_names, helper
from .tensor import Ref, Stmt

if TYPE_CHECKING:  # pragma: no cover
    from .catalogue import _Emitter

__all__ = ["leading_product", "rows_first", "swap_first"]

#: the slices in a parallel helper (:mod:`.parhelp`), ``prange`` over the first leading index
PARALLEL = True


def leading_product(em: _Emitter, s: Stmt, op: str) -> str | None:
    """Append ``s`` to ``em.lines`` as a loop of 2-D products over its leading indices.

    Parameters
    ----------
    em : _Emitter
        The catalogue's emitter of the nest (its bounds, slicing and fresh names).
    s : Stmt
        One tensor statement; only its first term is read.
    op : str
        ``"="`` (after a zero initialization was merged) or ``"+="``.

    Returns
    -------
    str or None
        ``"batched-matmul"`` when the lines were appended; None (nothing appended) when the
        statement is not of this shape or the general contraction needs no copy.
    """
    got = _shape(em, s, op) if em.numba else None
    if got is None:
        return None
    f, g, lead, left_is_f, coef, out = got
    rest = out.idx[len(lead):]
    k = next(v for v in g.idx if v not in out.idx)
    fs, gs, ys = em.fresh(), em.fresh(), em.fresh()
    fview, _ = em.sliced(f)
    gwant = ([rest[0], k] if len(g.idx) == 2 else [k]) if not left_is_f \
        else ([k, rest[-1]] if len(g.idx) == 2 else [k])
    em.lines += [f"{fs} = {fview}", f"{gs} = {em.oriented(g, gwant, True)}",
                 f"{ys} = {em.target(out)}"]
    qs = [em.fresh() for _ in lead]
    body, pad = [], ""
    for d, q in enumerate(qs):
        body.append(f"{pad}for {q} in {'prange' if d == 0 else 'range'}({fs}.shape[{d}]):")
        pad += "    "
    q = ", ".join(qs)
    frest = list(f.idx[len(lead):])
    fwant = ([rest[0], k] if len(frest) == 2 else [k]) if left_is_f \
        else ([k, rest[-1]] if len(frest) == 2 else [k])
    fslice = em.orient(f"np.ascontiguousarray({fs}[{q}])", frest, tuple(fwant))
    a, b = (fslice, gs) if left_is_f else (gs, fslice)
    if op == "=" and not coef:
        y, c = em.fresh(), em.fresh()
        body += [f"{pad}{y} = {ys}[{q}]",
                 f"{pad}{c} = np.ascontiguousarray({y})",
                 f"{pad}np.dot({a}, {b}, {c})",
                 f"{pad}if {c}.ctypes.data != {y}.ctypes.data:",
                 f"{pad}    {y}[:] = {c}"]
    else:
        prod = f"{a} @ {b}"
        if coef:
            prod = f"{coef} * ({prod})"
        body.append(f"{pad}{ys}[{q}] {op} {prod}")
    if not PARALLEL:
        em.lines += [line.replace("prange(", "range(", 1) for line in body]
        return "batched-matmul"
    params = free_names([ast.parse("\n".join(body))], qs)
    _, lines = helper(params, body)
    text = ast.literal_eval(lines[0])  # the slices' products read numpy as np
    lines[0] = repr(text.replace("import numba as _hl_numba\n",
                                 "import numba as _hl_numba\nimport numpy as np\n", 1))
    em.lines += lines
    return "batched-matmul"


def _forward(em: _Emitter, s: Stmt, op: str) -> Ref | None:
    """``s.out`` itself, or, for a temporary (a scalar accumulator expanded, ``t = 0.0 …
    Y[a, b, c] = t``) whose only reader is the next statement ``Y[…] = t[…]``, ``Y``'s
    reference: the product is written there and that copy is emitted as nothing."""
    if s.out.name not in em.temps:
        return s.out
    stmts = em.nest.stmts
    n = next((m for m, u in enumerate(stmts) if u is s), None)
    if op != "=" or n is None or n + 1 >= len(stmts) \
            or s.out.name in {t for t, _ in em.nest.private.values()}:
        return None
    nxt = stmts[n + 1]
    readers = [u for u in stmts[n + 1:] if u.out.name == s.out.name
               or any(r.name == s.out.name for r in u.reads)]
    if readers != [nxt] or nxt.op != "=" or nxt.scale is not None or nxt.terms is None \
            or len(nxt.terms) != 1 or nxt.terms[0].coef or nxt.terms[0].div \
            or nxt.terms[0].refs != (s.out,) or nxt.out.idx != s.out.idx or nxt.out.fixed \
            or nxt.out.name in em.temps or id(nxt) in em.verbatim:
        return None
    return nxt.out


def _split(f: Ref, g: Ref, out: tuple[str, ...]) -> tuple[Ref, Ref, tuple[str, ...],
                                                         tuple[str, ...], list[str]] | None:
    """The shortest prefix of ``out`` that leads ``f``, is no index of ``g``, and leaves a
    matmul or matvec per slice: (f, g, prefix, the rest of out, f's free indices in it)."""
    for n in range(1, len(out)):
        if len(f.idx) <= n or f.idx[n - 1] != out[n - 1] or out[n - 1] in g.idx:
            return None
        rest, frest = out[n:], f.idx[n:]
        k = [v for v in frest if v not in out]
        ff = [v for v in frest if v in out]
        gf = [v for v in g.idx if v in out]
        if len(k) == 1 and [v for v in g.idx if v not in out] == k and len(ff) <= 1 \
                and len(gf) <= 1 and sorted(rest) == sorted(ff + gf):
            return f, g, out[:n], rest, ff
    return None


def rows_first(x: Ref, y: Ref, out: tuple[str, ...]) -> bool:
    """True when ``x``, of no lower rank than ``y``, lies as the rows of one GEMM (its free
    indices in ``out``'s order, then the summed one) and so does ``out`` (``x``'s free indices
    first): the general contraction with ``x`` first copies at most the smaller ``y``.

    >>> from hetlab.offload.analysis.tensor import Ref
    >>> rows_first(Ref("X", ("a", "b", "l")), Ref("M", ("c", "l")), ("a", "b", "c"))
    True
    >>> rows_first(Ref("X", ("a", "l", "c")), Ref("M", ("b", "l")), ("a", "b", "c"))
    False
    """
    fa = [v for v in out if v in x.idx]
    k = [v for v in x.idx if v not in out]
    return len(k) == 1 and bool(fa) and len(x.idx) >= len(y.idx) \
        and list(x.idx) == fa + k and list(out[:len(fa)]) == fa \
        and set(out[len(fa):]) <= set(y.idx)


def swap_first(x: Ref, y: Ref, out: tuple[str, ...]) -> bool:
    """True when a contraction over several free indices (no batch index) copies no larger
    factor with ``y`` first and does with ``x`` first."""
    fa = [v for v in out if v in x.idx]
    fb = [v for v in out if v in y.idx]
    return (len(fa) > 1 or len(fb) > 1) and not set(fa) & set(fb) \
        and rows_first(y, x, out) and not rows_first(x, y, out)


def _shape(em: _Emitter, s: Stmt,
           op: str) -> tuple[Ref, Ref, tuple[str, ...], bool, str, Ref] | None:
    """(F, G, leading indices, whether F's slice is the left operand, scalar factor text, the
    output written)."""
    if s.terms is None or len(s.terms) != 1 or s.scale is not None or op not in ("=", "+="):
        return None
    t = s.terms[0]
    out = _forward(em, s, op)
    if out is None:
        return None
    if len(t.refs) != 2 or t.div or out.fixed or any(r.fixed for r in t.refs):
        return None
    names = {out.name, *(r.name for r in t.refs)}
    if len(names) != 3 or names & (em.temps | set(em.origin)):
        return None  # the output read by the product, a temporary, a panel
    if any(len(set(r.idx)) != len(r.idx) for r in (out, *t.refs)):
        return None  # a diagonal
    x, y = t.refs
    fa = [v for v in out.idx if v in x.idx]
    fb = [v for v in out.idx if v in y.idx]
    if len(fa) <= 1 and len(fb) <= 1:
        return None  # a plain matmul/matvec: one call, no loop
    if rows_first(x, y, out.idx) or rows_first(y, x, out.idx):
        return None  # one GEMM over the flattened rows needs no copy of the larger factor
    got = _split(x, y, out.idx) or _split(y, x, out.idx)
    if got is None:
        return None
    f, g, lead, rest, ff = got
    left_is_f = rest[0] in ff
    coef = " * ".join(c if c.replace(".", "").replace("_", "").isalnum() else f"({c})"
                      for c in t.coef if c not in ("1", "1.0"))
    if out is not s.out:  # the copy out of the temporary: written by this product
        n = next(m for m, u in enumerate(em.nest.stmts) if u is s)
        em.verbatim[id(em.nest.stmts[n + 1])] = []
    return f, g, tuple(lead), left_is_f, coef, out
