"""Delinearization for the dependence test: ``out[i * n + j]`` compared as ``out[i, j]``.

A subscript read as digits and radices (:mod:`..front.strided`) takes the place of its one
dimension in the dependence test when, for every access of that array inside the tested loop
``L``:

- the subscript in that dimension is such a form, with the same radices (``n`` in each);
- no radix reads a name that changes inside ``L`` or a loop variable;
- over every iteration that executes the access, each digit after the first stays in
  ``[0, radix − 1]`` and the first is never negative (bounds from the loops around the access:
  :func:`~.deps.lowest_value`, which is conservative).

Then two subscripts are equal exactly when all their digits are (mixed-radix numbers with
digits in range), and the value is never negative (Python would wrap a negative index around
to the end of the array).

Where the digits may leave their range (``out[i * ld + j]`` over ``range(n)`` with ``ld`` and
``n`` unrelated) but every access has the same leading digits and radices, reading only the
variables of loops around ``L`` and names ``L`` leaves unchanged, the leading part of the
value is one number for both iterations compared: the dimension is compared by its last digit
alone (the ``j`` loop is parallel, the ``i`` loop stays unproved), provided the value is never
negative (every digit and radix at least 0). Anything unproved leaves the subscript unknown,
as before.

>>> import ast
>>> from hetlab.offload.front.loops import build_tree
>>> src = '''
... def flat(A, out):
...     m, n = A.shape
...     for i in range(m):
...         for j in range(n):
...             out[i * n + j] = A[i, j]
... '''
>>> t = build_tree(ast.parse(src).body[0], {}, 1)
>>> accs = delinearized(t.loops[0], t.loops, t.accesses, set(), frozenset())
>>> [str(s) for s in next(a for a in accs if a.array == "out").subs]
['i', 'j']
>>> src2 = src.replace("i * n + j", "i * (n - 1) + j")  # rows overlap: not delinearized
>>> t2 = build_tree(ast.parse(src2).body[0], {}, 1)
>>> accs2 = delinearized(t2.loops[0], t2.loops, t2.accesses, set(), frozenset())
>>> next(a for a in accs2 if a.array == "out").subs
(None,)
>>> inner = delinearized(t2.loops[1], t2.loops, t2.accesses, set(), frozenset())
>>> [str(s) for s in next(a for a in inner if a.array == "out").subs]  # over j: i is fixed
['j']
"""

from __future__ import annotations

from dataclasses import replace

from ..front.affine import Affine
from ..front.loops import Access, Loop
from ..front.strided import Strided
from .deps import lowest_value

__all__ = ["delinearized"]


def _names(aff: Affine) -> set[str]:
    out: set[str] = set()
    for key in aff.coefs:
        out |= aff.opaque.get(key, frozenset({key}))
    return out


def _in_range(form: Strided, acc: Access, loops: list[Loop], changing: set[str],
              nonneg: frozenset[str]) -> bool:
    """Whether the digits of ``form`` provably stay within their radices at ``acc``."""
    if any(_names(r) & changing for r in form.radices):
        return False
    unknown = changing - {loops[li].var for li in acc.loops}
    if lowest_value(form.digits[0], acc, loops, unknown, nonneg) < 0:
        return False
    for digit, radix in zip(form.digits[1:], form.radices, strict=True):
        if lowest_value(digit, acc, loops, unknown, nonneg) < 0:
            return False
        room = radix - digit + Affine(const=-1)  # radix − 1 − digit ≥ 0
        if lowest_value(room, acc, loops, unknown, nonneg) < 0:
            return False
    return True


def _same(xs: tuple[Affine, ...], ys: tuple[Affine, ...]) -> bool:
    return len(xs) == len(ys) and all(x.coefs == y.coefs and x.const == y.const
                                      for x, y in zip(xs, ys, strict=True))


def _fixed_head(form: Strided, acc: Access, loops: list[Loop], changing: set[str],
                around: set[str], nonneg: frozenset[str]) -> bool:
    """Whether the leading digits and the radices of ``form`` are one value over ``L``'s
    iterations (they read only ``around``, the variables of the loops around ``L``, and
    names ``L`` leaves unchanged) and the whole value is never negative."""
    head = (*form.digits[:-1], *form.radices)
    if any(_names(x) & (changing - around) for x in head):
        return False
    unknown = changing - {loops[li].var for li in acc.loops}
    return all(lowest_value(x, acc, loops, unknown, nonneg) >= 0
               for x in (*form.digits, *form.radices))


def _dimension_kind(accs: list[Access], k: int, loops: list[Loop], changing: set[str],
                    around: set[str], nonneg: frozenset[str]) -> str | None:
    """How dimension ``k`` of every access in ``accs`` (one array) is compared: ``"digits"``
    (all of them), ``"last"`` (the last digit; the rest is fixed over L), or None."""
    having = [a for a in accs if len(a.subs) > k]
    forms = [a.strided[k] if k < len(a.strided) else None for a in having]
    first = forms[0] if forms else None
    if first is None or any(f is None or not _same(first.radices, f.radices) for f in forms):
        return None
    if all(_in_range(f, a, loops, changing, nonneg)  # type: ignore[arg-type]
           for f, a in zip(forms, having, strict=True)):
        return "digits"
    if all(_same(first.digits[:-1], f.digits[:-1])  # type: ignore[union-attr]
           and _fixed_head(f, a, loops, changing, around, nonneg)  # type: ignore[arg-type]
           for f, a in zip(forms, having, strict=True)):
        return "last"
    return None


def delinearized(L: Loop, loops: list[Loop], accesses: list[Access], written: set[str],
                 nonneg: frozenset[str] = frozenset()) -> list[Access]:
    """``accesses`` with the linearized subscripts of arrays accessed inside ``L`` replaced by
    their digits where that is exact (see the module docstring); ``written``: names assigned
    inside ``L``."""
    changing = set(written) | {lp.var for lp in loops}
    around: set[str] = set()
    up = L.parent
    while up is not None:
        around.add(loops[up].var)
        up = loops[up].parent
    by_array: dict[str, list[Access]] = {}
    for a in accesses:
        if L.index in a.loops:
            by_array.setdefault(a.array, []).append(a)
    split: dict[str, dict[int, str]] = {}
    for name, accs in by_array.items():
        width = max(len(a.subs) for a in accs)
        kinds = {k: _dimension_kind(accs, k, loops, changing, around, nonneg)
                 for k in range(width)
                 if any(k < len(a.strided) and a.strided[k] is not None for a in accs)}
        dims = {k: kind for k, kind in kinds.items() if kind is not None}
        if dims:
            split[name] = dims
    if not split:
        return accesses
    out = []
    for a in accesses:
        dims = split.get(a.array) if L.index in a.loops else None
        if not dims:
            out.append(a)
            continue
        subs: list[Affine | None] = []
        for k, f in enumerate(a.subs):
            form = a.strided[k] if k in dims else None
            if form is None:
                subs.append(f)
            else:
                subs.extend(form.digits if dims[k] == "digits" else form.digits[-1:])
        out.append(replace(a, subs=tuple(subs)))
    return out
