"""Operands of a block's library call without copies where the slice is the whole array.

The catalogue (:mod:`.catalogue`) slices each operand to the loops' ranges; a slice that is
not ``:`` on every axis is, in general, not contiguous, and numba's ``@``/``np.dot`` want
contiguous operands, so the NumPy form passes it through ``np.ascontiguousarray``. But the
bounds of a nest are often sizes that at run time *are* the array's extents (``range(ni)``
with ``ni = C.shape[0]``, ``range(A.shape[1])`` over ``B``'s rows): then the slice is the
whole array, contiguous already (C- or F-ordered: numba hands either to BLAS as it is), and
in numba the copy is a full pass over the operand for nothing (a sliced array has numba's
``'A'`` layout, so ``np.ascontiguousarray`` copies it whatever its strides).

So, in the numba form, a product whose operands may be whole at run time is written as a
conditional expression: the product on the arrays themselves when a run-time check says
every such slice is whole, the product on the copies otherwise::

    ((A @ B) if ni == A.shape[0] and nk == A.shape[1] and nk == B.shape[0] and ...
     else (np.ascontiguousarray(A[:ni, :nk]) @ np.ascontiguousarray(B[:nk, :nj])))

Both branches bind the *product* (a fresh C-ordered array, or a scalar for ``np.dot`` of
vectors), never the operands, so numba types the two branches alike whatever the layouts of
the arguments. The check is exact: a start ``== 0`` and a stop ``== X.shape[d]`` on each
sliced axis; a slice that holds a row fixed (triangular rows), starts at a non-zero literal or
reads a shifted panel product is never whole and keeps its copy. The NumPy (and CuPy) form is
unchanged: there ``np.ascontiguousarray`` of a contiguous whole slice is no copy.

>>> import ast
>>> from hetlab.offload.analysis.contraction import normalize
>>> from hetlab.offload.analysis.catalogue import emit
>>> src = '''
... for i in range(ni):
...     for j in range(nj):
...         for k in range(nk):
...             C[i, j] += A[i, k] * B[k, j]
... '''
>>> code = emit(normalize(ast.parse(src).body[0]), numba=True)[1]
>>> print(code.splitlines()[0])  # doctest: +NORMALIZE_WHITESPACE
_hbt1 = ((A @ B) if ni == A.shape[0] and nk == A.shape[1] and nk == B.shape[0] and
  nj == B.shape[1] else (np.ascontiguousarray(A[:max(ni, 0), :max(nk, 0)]) @
  np.ascontiguousarray(B[:max(nk, 0), :max(nj, 0)])))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .tensor import Ref

__all__ = ["whole_checks", "product", "contiguous"]

_SIMPLE = re.compile(r"^[\w.]+(\[\d+\])?$")


def _par(text: str) -> str:
    return text if _SIMPLE.match(text) or re.match(r"^len\(\w+\)$", text) else f"({text})"


def whole_checks(em: Any, r: Ref) -> list[str] | None:
    """Run-time conditions under which ``r``'s slice (:meth:`.catalogue._Emitter.sliced`) is
    its whole array.

    Parameters
    ----------
    em : catalogue._Emitter
        The emitter (``nest.bounds``, ``temps``, ``origin``).
    r : Ref
        An operand.

    Returns
    -------
    list of str or None
        ``[]`` when the slice is ``:`` on every axis (whole as written), the conditions (source
        text, all to hold) when it may be whole at run time, None when it never is (a fixed
        row, a literal non-zero start, an array shifted to a panel's origin).
    """
    if r.name in em.temps:
        return []
    if r.fixed or r.name in em.origin:
        return None
    conds: list[str] = []
    for d, v in enumerate(r.idx):
        start, stop = em.nest.bounds[v]
        if start == "0" and (stop == f"{r.name}.shape[{d}]"
                             or (d == 0 and stop == f"len({r.name})")):
            continue
        if start != "0":
            if re.match(r"^\d+$", start):
                return None  # a non-zero literal start: never the whole axis
            conds.append(f"{_par(start)} == 0")
        conds.append(f"{_par(stop)} == {r.name}.shape[{d}]")
    return conds


def product(em: Any, operands: Sequence[tuple[Ref, Sequence[str]]],
            make: Callable[[list[str]], str]) -> str:
    """Source of a product of ``operands`` (each oriented to its index order), without copies
    of operands that are whole at run time in the numba form.

    Parameters
    ----------
    em : catalogue._Emitter
        The emitter; its ``nocopy`` flag (the numba form) chooses the form.
    operands : sequence of (Ref, sequence of str)
        Each operand and the index order the product wants it in (a transpose when it differs
        from the operand's own).
    make : callable (list of str) -> str
        The product's source from its operands' sources (``lambda o: f"({o[0]} @ {o[1]})"``).

    Returns
    -------
    str
        ``make`` of the copied operands, or in the numba form, when some operand may be whole,
        ``(make(arrays) if <checks> else make(copies))``.
    """
    copies = [em.oriented(r, list(order), True) for r, order in operands]
    if not em.nocopy:
        return make(copies)
    conds: list[str] = []
    bare: list[str] = []
    for (r, order), text in zip(operands, copies, strict=True):
        checks = whole_checks(em, r)
        if not checks:  # whole as written (no copy there), or never whole
            bare.append(text)
            continue
        conds += [c for c in checks if c not in conds]
        bare.append(em.orient(r.name, list(r.idx), tuple(order)))
    if not conds:
        return make(copies)
    return f"({make(bare)} if {' and '.join(conds)} else {make(copies)})"


def contiguous(em: Any, r: Ref, order: Sequence[str]) -> str:
    """Source of ``r`` oriented to ``order`` as a C-ordered array (for a reshape): the array
    itself through ``np.ascontiguousarray`` (no copy when it is C-ordered) when whole at run
    time, in the numba form; a copy of the slice otherwise."""
    text = f"np.ascontiguousarray({em.oriented(r, list(order))})"
    checks = whole_checks(em, r) if em.nocopy else None
    if not checks or tuple(order) != r.idx:
        return text
    return f"(np.ascontiguousarray({r.name}) if {' and '.join(checks)} else {text})"
