"""The numba form of a product statement's epilogue: one pass over the output.

The NumPy form of ``C[i, j] = beta * C[i, j] + alpha * Σ_k A[i, k] B[k, j]`` is an array
expression, ``C[…] = beta * C[…] + alpha * (A @ B)``, and of a scaling followed by an update
(``C[i, j] *= beta`` then ``C[i, j] += alpha * A[i, k] B[k, j]``) two statements,
``C[…] *= beta`` and ``C[…] += alpha * (A @ B)``. numba runs each as separate passes over the
output with a temporary for ``alpha * P`` (and for the right-hand side before it is stored).
In the numba form, a statement with a library product among its terms (matmul, matvec,
outer, contraction, batched product, an axis sum) becomes: each product into a temporary
``P``, then one loop nest over the output (in its subscript order, unit stride) that computes
every element once, ``C[i, j] = C[i, j] * beta + alpha * P[i, j]``; a scaling of the output
just before (nothing between them touching the output) is folded into it.

Exactness: every element gets the same floating-point operations in the same order as the
NumPy form (the scaling first, ``(C * beta) + (alpha * P)``; several terms summed left to right
and added as one, ``C + (t1 + t2)``), so results are bit-identical to it, NaN and inf
included (``C * 0`` stays NaN for a NaN ``C``; nothing is simplified away). Not fused (the
NumPy form is kept): a statement whose terms read the output at another element, or read it
at all after a scaling; constant terms; a temporary as output; triangular rows and panels.

>>> import ast
>>> from hetlab.offload.analysis.contraction import normalize
>>> from hetlab.offload.analysis.catalogue import emit
>>> src = '''
... for i in range(C.shape[0]):
...     for j in range(C.shape[1]):
...         C[i, j] *= beta
...         for k in range(A.shape[1]):
...             C[i, j] += alpha * A[i, k] * B[k, j]
... '''
>>> print(emit(normalize(ast.parse(src).body[0]), numba=True)[1])  # doctest: +ELLIPSIS
_hbt1 = ((A[:C.shape[0]] @ B[:A.shape[1]]) if C.shape[1] == B.shape[1] else (... @ ...))
for i in range(C.shape[0]):
    for j in range(C.shape[1]):
        C[i, j] = C[i, j] * beta + alpha * _hbt1[i, j]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .tensor import Stmt, Term, scaled

__all__ = ["fuse", "folds_scale", "scaling", "PRODUCTS"]

#: term entries whose array is computed into a temporary before the pass
PRODUCTS = frozenset({"matmul", "matvec", "outer", "contraction", "batched-matmul", "sum"})
_ELEMENTWISE = frozenset({"axpy", "transpose"})


def folds_scale(em: Any, s: Stmt, nxt: Stmt | None) -> bool:
    """Whether the scaling ``s`` (``C[i, j] *= beta``, :func:`scaling`) may wait for ``nxt``,
    the next statement touching its output, to be folded into its pass: ``nxt`` updates the
    same elements (``+=``) without reading the output (the numba form only)."""
    return em.numba and scaling(s) and nxt is not None \
        and not em.origin and not em.verbatim and s.out.array and not s.out.fixed \
        and s.out.name not in em.temps and nxt.out == s.out and nxt.op == "+=" \
        and nxt.scale is None and nxt.terms is not None \
        and not any(r.name == s.out.name for r in nxt.reads)


def scaling(s: Stmt) -> bool:
    """``C[i, j] *= beta``, ``/=``, or ``C[i, j] = beta * C[i, j]`` (scalar factors and divisors
    of the output's own element)."""
    if s.scale is not None:
        return s.op in ("*=", "/=")
    return s.op == "=" and s.terms is not None and len(s.terms) == 1 \
        and s.terms[0].refs == (s.out,) and bool(s.terms[0].coef or s.terms[0].div)


def _uses(em: Any, name: str) -> int:
    """How many statements of the nest read ``name`` (a temporary): a temporary computed by a
    pass-free product is folded into its reader's pass only when it has exactly one."""
    return sum(any(r.name == name for r in st.reads) for st in em.nest.stmts)


def _par(text: str) -> str:
    return text if re.match(r"^[\w.]+$", text) else f"({text})"


def fuse(em: Any, s: Stmt, op: str, cores: Sequence[tuple[str, str, Term]],
         scale: Stmt | None) -> list[str] | None:
    """Lines computing ``s`` as products then one pass over its output, or None.

    Parameters
    ----------
    em : catalogue._Emitter
        The emitter (``nest.bounds``, ``temps``, ``fresh``).
    s : Stmt
        The statement; ``op`` is ``"="`` when a zero initialization was merged into it.
    op : str
        ``"="`` or ``"+="``.
    cores : sequence of (str, str, Term)
        Each term's entry, array expression without its scalar factors, and the term
        (:meth:`.catalogue._Emitter.term_core`).
    scale : Stmt or None
        A scaling of the output to fold in (:func:`folds_scale`).

    Returns
    -------
    list of str or None
        The product temporaries' assignments and the loop nest; None when the statement has
        no product to fuse with, or is one the pass would not compute exactly.
    """
    out = s.out
    if not out.array or out.fixed or em.origin or op not in ("=", "+="):
        return None
    temp = out.name in em.temps
    if temp and (op != "=" or scale is not None or _uses(em, out.name) != 1
                 or any(t == out.name for t, _ in em.nest.private.values())):
        return None
    kinds = [k for k, _, _ in cores]
    # a deferred temporary read elementwise by the pass (its assignment is dropped and its
    # elements computed in the pass); one read inside a product keeps its assignment
    deferred = [r for k, _, t in cores if k not in PRODUCTS for r in t.refs
                if r.name in em.deferred and r.idx == em.deferred[r.name][1]]
    if not (any(k in PRODUCTS - {"sum"} for k in kinds) or deferred) \
            or not set(kinds) <= PRODUCTS | _ELEMENTWISE:
        return None
    if scale is None and op == "=" and len(cores) == 1 and not cores[0][2].coef \
            and not cores[0][2].div and not temp:
        return None  # a plain copy of the product: nothing to fuse
    zero_based = all(em.nest.bounds[v][0] == "0" for v in out.idx)
    lines: list[str] = []
    elems: list[str] = []
    arrays: list[str] = []  # the NumPy form of a temporary's terms (.deferred)
    for kind, text, t in cores:
        if kind in PRODUCTS:
            p = em.fresh()
            lines.append(f"{p} = {text}")
            idx = [v if em.nest.bounds[v][0] == "0" else f"{v} - {_par(em.nest.bounds[v][0])}"
                   for v in out.idx]
            elems.append(scaled(t, f"{p}[{', '.join(idx)}]"))
            arrays.append(scaled(t, p))
            continue
        factors = []
        for r in t.refs:
            if r.fixed or set(r.idx) != set(out.idx) or len(r.idx) != len(out.idx):
                return None
            if r.name == out.name and (r.idx != out.idx or scale is not None):
                return None  # the output at another element, or after its scaling
            if r in deferred:
                factors.append(f"({em.deferred[r.name][0]})")
                continue
            if r.name in em.temps and not zero_based:
                return None  # temporaries are indexed from 0
            factors.append(f"{r.name}[{', '.join(r.idx)}]")
        elems.append(scaled(t, " * ".join(factors)))
        arrays.append(text)
    rhs = " + ".join(elems)
    lhs = f"{out.name}[{', '.join(out.idx)}]"
    if temp:
        if len(arrays) != len(elems) or any(k not in PRODUCTS for k in kinds):
            return None
        # computed as the NumPy form would, from the products; a reader that fuses it
        # deletes this line and reads its elements instead
        line = f"{out.name} = {' + '.join(arrays)}".replace("+ -1 * ", "- ")
        em.deferred[out.name] = (rhs.replace("+ -1 * ", "- "), out.idx, line)
        return [*lines, line]
    for r in deferred:
        em.lines.remove(em.deferred.pop(r.name)[2])
    if scale is not None:
        if scale.scale is not None:
            first = f"{lhs} {'*' if scale.op == '*=' else '/'} {_par(scale.scale)}"
        else:  # C = beta * C: the same operations, in the same order
            first = scaled(scale.terms[0], lhs)  # type: ignore[index]
        rhs = f"{first} + {rhs if len(elems) == 1 else f'({rhs})'}"
        op = "="
    pad = ""
    for v in out.idx:
        start, stop = em.nest.bounds[v]
        lines.append(f"{pad}for {v} in range({stop if start == '0' else f'{start}, {stop}'}):")
        pad += "    "
    # x + (-1) * y is x - y exactly (a negation is exact)
    lines.append(f"{pad}{lhs} {op} {rhs}".replace("+ -1 * ", "- ").replace("+ (-1) * ", "- "))
    return lines
