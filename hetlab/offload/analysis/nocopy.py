"""Operands of a block's library call without copies where the slice is the whole array.

The catalogue (:mod:`.catalogue`) slices each operand to the loops' ranges; a slice that is
not ``:`` on every axis is, in general, not contiguous, and numba's ``@``/``np.dot`` want
contiguous operands, so the NumPy form passes it through ``np.ascontiguousarray``. But the
bounds of a nest are often sizes that at run time *are* the array's extents (``range(ni)``
with ``ni = C.shape[0]``, ``range(A.shape[1])`` over ``B``'s rows): then the slice is the
whole array, contiguous already (C- or F-ordered: numba hands either to BLAS as it is), and
in numba the copy is a full pass over the operand for nothing (a sliced array has numba's
``'A'`` layout, so ``np.ascontiguousarray`` copies it whatever its strides).

So, in the numba form, each operand of a product is passed uncopied when a run-time check
says its slice is a block of whole rows of its array: every axis but the first covers the
array (``nk == A.shape[1]``), the first axis's range is kept as written (``A[:ni]``, which
numba types C-ordered: a block of rows of a C-ordered array is contiguous; a whole
F-ordered array is passed as it is, and any other layout numba's ``@`` copies itself). Each
operand has its own check, so the product is a conditional expression with one branch per
outcome, every branch binding the *product* (a fresh C-ordered array, or a scalar for
``np.dot`` of vectors), never the operands: numba types all branches alike whatever the
arguments' layouts::

    (((A[:ni] @ B[:nk]) if nj == B.shape[1] else (A[:ni] @ <copy of B[:nk, :nj]>))
     if nk == A.shape[1] else (... the same with the copy of A[:ni, :nk] ...))

The checks are exact (``stop == X.shape[d]``, and ``start == 0`` for a non-literal start);
a vector or a slice whose other axes are whole as written needs no check at all; a slice
that holds a row fixed (triangular rows), starts at a non-zero literal on another axis or
reads a shifted panel product keeps its copy. The NumPy (and CuPy) form is unchanged: there
``np.ascontiguousarray`` of a contiguous slice is no copy.

>>> import ast
>>> from hetlab.offload.analysis.contraction import normalize
>>> from hetlab.offload.analysis.catalogue import emit
>>> src = '''
... for i in range(ni):
...     for j in range(nj):
...         for k in range(A.shape[1]):
...             C[i, j] += A[i, k] * B[k, j]
... '''
>>> code = emit(normalize(ast.parse(src).body[0]), numba=True)[1]
>>> print(code.splitlines()[0])  # doctest: +NORMALIZE_WHITESPACE
_hbt1 = ((A[:max(ni, 0)] @ B[:A.shape[1]]) if nj == B.shape[1]
  else (A[:max(ni, 0)] @ np.ascontiguousarray(B[:A.shape[1], :max(nj, 0)])))
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .tensor import Ref

__all__ = ["whole_checks", "row_block", "product", "contiguous"]

_SIMPLE = re.compile(r"^[\w.]+(\[\d+\])?$")


def _par(text: str) -> str:
    return text if _SIMPLE.match(text) or re.match(r"^len\(\w+\)$", text) else f"({text})"


def row_block(em: Any, r: Ref) -> tuple[str, list[str]] | None:
    """``r``'s slice as a block of whole rows, and the run-time conditions for it to be one.

    A slice of a C-ordered array whose only partial axis is the first is contiguous, and numba
    types ``X[a:b]`` (one slice, on the first axis) as C-ordered: no copy for ``@``. So the
    first axis's range is kept as written and only the other axes are checked.

    Returns
    -------
    tuple of (str, list of str) or None
        ``(X or X[a:b], conditions on the other axes)``; None when the slice is never such a
        block (a fixed row, a literal non-zero start on another axis, a shifted panel product).
    """
    if r.name in em.temps:
        return r.name, []
    if r.fixed or r.name in em.origin or not r.idx:
        return None
    checks = whole_checks(em, Ref(r.name, r.idx), first=1)
    if checks is None:
        return None
    first = em.parts(r)[0]
    return (r.name if first == ":" else f"{r.name}[{first}]"), checks


def whole_checks(em: Any, r: Ref, first: int = 0) -> list[str] | None:
    """Run-time conditions under which ``r``'s slice (:meth:`.catalogue._Emitter.sliced`) is
    its whole array.

    Parameters
    ----------
    em : catalogue._Emitter
        The emitter (``nest.bounds``, ``temps``, ``origin``).
    r : Ref
        An operand.
    first : int, default 0
        The first axis checked (1: all but the rows, :func:`row_block`).

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
        if d < first:
            continue
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
    # per operand: (uncopied source, its run-time conditions, the copy)
    choices: list[tuple[str, list[str], str]] = []
    for (r, order), text in zip(operands, copies, strict=True):
        block = row_block(em, r)
        if block is None:  # never a block of rows: the copy
            choices.append((text, [], text))
        else:
            choices.append((em.orient(block[0], list(r.idx), tuple(order)), block[1], text))

    def build(k: int, chosen: list[str]) -> str:
        # each operand decided by its own check (one operand's partial slice does not
        # cost the other its copy-free branch)
        if k == len(choices):
            return make(chosen)
        bare, conds, copy = choices[k]
        if not conds:  # a block of rows as written (no copy, no check), or never one
            return build(k + 1, [*chosen, bare])
        return f"({build(k + 1, [*chosen, bare])} if {' and '.join(conds)} " \
            f"else {build(k + 1, [*chosen, copy])})"

    return build(0, [])


def contiguous(em: Any, r: Ref, order: Sequence[str]) -> str:
    """Source of ``r`` oriented to ``order`` as a C-ordered array (for a reshape): the array
    itself through ``np.ascontiguousarray`` (no copy when it is C-ordered) when whole at run
    time, in the numba form; a copy of the slice otherwise."""
    text = f"np.ascontiguousarray({em.oriented(r, list(order))})"
    checks = whole_checks(em, r) if em.nocopy else None
    if not checks or tuple(order) != r.idx:
        return text
    return f"(np.ascontiguousarray({r.name}) if {' and '.join(checks)} else {text})"
