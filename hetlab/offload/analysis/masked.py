"""A split panel product as one masked GEMM: the rows' common range and their remainders
(:mod:`.panels`) in one product per panel, guarded at run time.

A summed index with a bound ``i + c`` gives each row ``i`` of a panel ``[r0, r1)`` a range
that :mod:`.panels` splits into the part every row sums (one GEMM for the panel) and each row's
short remainder inside the panel (a triangle of the panel's block of ``X``), which numba runs
as scalar loops: about ``h²/2`` multiply-adds per column of ``Y`` per panel, and a second,
thinner GEMM call per panel. :func:`masked_form` computes both for the whole panel in one
GEMM: ``T`` holds, at row ``i - r0`` and column ``k - l``, the element of ``X`` the loop reads
when ``k`` is in row ``i``'s range and 0 elsewhere (built from exactly the elements the loop
reads: the untouched triangle is never read), and ``R = T @ Y[l:u, J]`` (``[l, u)`` the union
of the rows' ranges) gives each row its whole sum; the row adds its slice of ``R``.

Exact, or the split form:

* *Dependence.* ``R`` is computed before the panel's rows run, so every ``Y`` element it reads
  must hold, then, the value the row reads. Arrays the nest does not write: always. The written
  array (in place): only when the rows read are *after* the row (``k >= i + c``, ``c >= 1``,
  a trmm): the panel's rows after ``i`` are written after row ``i`` reads them, the rows
  below the panel later still. Rows read *before* the row (``k < i``, a forward substitution:
  rows of the panel just solved) keep the split form, the remainder in the loop's order.
* *Masked zeros.* ``T``'s zeros multiply ``Y`` elements the row does not read; ``0 * inf`` or
  ``0 * nan`` would make the row NaN where the loop is finite. When ``R`` is finite, every
  product the GEMM formed is (a sum holding inf or NaN is inf or NaN), so the zeros added
  nothing: ``R`` equals the loop's sums up to summation order (and the sign of a zero). So the
  rows read ``R`` only when ``sum(R)`` is finite (one pass over ``R``); otherwise (or on an
  overflowing sum, which is only slower) the panel runs the split form: the common GEMM and
  each row's remainder loop.

Only a term of the form above is taken: ``X`` two-dimensional (the row and ``k``), ``Y``
holding ``k`` and output indices only, the output's bounds independent of the row. ``T`` is
laid out as ``X`` (filled along ``X``'s last axis: unit stride on both sides).
"""

from __future__ import annotations

import ast
import re

from .catalogue import LIBRARY, _minus, emit
from .panel_shape import _R0, _R1
from .refs_text import element, names_in, positions, written_as
from .tensor import Ref, Stmt, TensorNest, Term

__all__ = ["masked_form", "row_lines", "add_lines"]


def masked_form(t: Term, out: Ref, k: str, row: str, bounds: dict[str, tuple[str, str]],
                full: tuple[str, str], by_k: tuple[str, str], after: bool, written: set[str],
                tag: int, origin: dict[str, dict[int, str]]) -> tuple[list[str], str, str] | None:
    """(panel lines, product name, flag name) computing ``out += t`` summed over ``k`` for
    every row of a panel as one GEMM on a masked block; None when the term is not of that form.

    Parameters
    ----------
    t : Term
        The term, summed over ``k`` (``bounds[k]``: the row's range, source text reading
        ``row``).
    out : Ref
        The row statement's output (``row`` fixed at one axis, or a temporary of the row).
    k, row : str
        The summed variable and the row variable.
    bounds : dict
        Bounds ``(start, stop)`` (source text) of the nest's variables.
    full : tuple of str
        ``[l, u)``: the union of the panel's rows' ranges (text reading ``_hbr0``, ``_hbr1``).
    by_k : tuple of str
        The panel's rows whose range holds ``k`` (text reading ``k``).
    after : bool
        Whether the rows read are after the row (``k >= row + c``, ``c >= 1``).
    written : set of str
        Arrays the nest writes.
    tag : int
        A number making the new names unique (``_hbt<tag>``, ``_hbq<tag>``, ``_hbf<tag>`` …).
    origin : dict
        ``{array: {axis: offset}}`` of the panel's temporaries; the product's is added.

    Returns
    -------
    tuple or None
        The lines to run once per panel before its rows (mask, GEMM, finite flag: a bool),
        the product's name (``origin`` gets its offsets) and the flag's name.

    Examples
    --------
    >>> from hetlab.offload.analysis.tensor import Ref, Term
    >>> t = Term((), (Ref("A", ("k",), ((1, "i"),)), Ref("B", ("k", "j"))))
    >>> b = {"k": ("i + 1", "n"), "j": ("0", "m")}
    >>> got = masked_form(t, Ref("B", ("j",), ((0, "i"),)), "k", "i", b, ("_hbr0 + 1", "n"),
    ...                   ("_hbr0", "min(_hbr1, k)"), True, {"B"}, 3, {})
    >>> print("\\n".join(got[0][:6]))
    _hbl3 = _hbr0 + 1
    _hbu3 = max(n, _hbl3)
    _hbt3 = np.zeros((_hbu3 - _hbl3, _hbr1 - _hbr0), dtype=A.dtype)
    for k in range(_hbl3, _hbu3):
        for i in range(_hbr0, min(_hbr1, k)):
            _hbt3[k - _hbl3, i - _hbr0] = A[k, i]
    """
    if len(t.refs) != 2 or sum(bool(r.fixed) for r in t.refs) != 1:
        return None
    x, y = sorted(t.refs, key=lambda r: not r.fixed)
    px, py = positions(x), positions(y)
    if sorted(px) != sorted([row, k]) or x.name in written or row in py \
            or py.count(k) != 1 or not set(py) <= {k, *out.idx} \
            or any(v != row for _, v in out.fixed):
        return None
    if y.name in written and not after:
        return None  # rows of the panel written before the row reads them: the loop's order
    if any(row in names_in("({}, {})".format(*bounds[v])) for v in out.idx):
        return None
    lo, hi, mask, prod, flag = (f"_hbl{tag}", f"_hbu{tag}", f"_hbt{tag}", f"_hbq{tag}",
                                f"_hbf{tag}")
    ext = {row: f"{_R1} - {_R0}", k: f"{hi} - {lo}"}
    at = {row: _R0, k: lo}
    # filled along X's last axis: the rows of k (by_k) inner when X is X[k, row]
    loops = ([(row, (_R0, _R1)), (k, bounds[k])] if px[1] == k
             else [(k, (lo, hi)), (row, by_k)])
    lines = [f"{lo} = {full[0]}", f"{hi} = max({full[1]}, {lo})",
             f"{mask} = np.zeros(({ext[px[0]]}, {ext[px[1]]}), dtype={x.name}.dtype)",
             f"for {loops[0][0]} in range({loops[0][1][0]}, {loops[0][1][1]}):",
             f"    for {loops[1][0]} in range({loops[1][1][0]}, {loops[1][1][1]}):",
             f"        {mask}[{', '.join(_minus(v, at[v]) for v in px)}] = {element(x, {})}"]
    pb = {row: (_R0, _R1), k: (lo, hi), **{v: bounds[v] for v in out.idx}}
    refs = (Ref(mask, tuple(px)), Ref(y.name, tuple(py)))
    vs = (row, *out.idx, k)
    st = Stmt((0,) * len(vs), vs, Ref(prod, (row, *out.idx)), "=",
              [Term(t.coef, refs, t.div)], ast.Pass(), None, refs, None)
    got = emit(TensorNest(pb, [st], [], {prod: prod}), sizes=frozenset({_R0, _R1, lo, hi}),
               origin={**origin, mask: {d: at[v] for d, v in enumerate(px)}}, nocopy=True)
    if got is None or not all(e in LIBRARY for e in got[0].split("+")):
        return None
    # the mask's slice is always the whole mask (its bounds are its extents): no copy of it
    gemm = re.sub(rf"np\.ascontiguousarray\({mask}\[[^\[\]]*\]\)|{mask}\[[^\[\]]*\]",
                  mask, got[1])
    origin[prod] = {0: _R0, **{d + 1: bounds[v][0] for d, v in enumerate(out.idx)}}
    lines += gemm.splitlines()
    lines.append(f"{flag} = np.isfinite(np.sum({prod}))")
    return lines, prod, flag


def add_lines(out: Ref, t: Term, bounds: dict[str, tuple[str, str]],
              origin: dict[str, dict[int, str]]) -> list[str]:
    """``out += t`` as loops over the output's variables (unit stride innermost)."""
    lines = [" " * 4 * d + f"for {v} in range({bounds[v][0]}, {bounds[v][1]}):"
             for d, v in enumerate(out.idx)]
    return [*lines, " " * 4 * len(out.idx) + ast.unparse(written_as(out, "+=", [t], origin))]


def row_lines(out: Ref, prod: str, flag: str, row: str, bounds: dict[str, tuple[str, str]],
              origin: dict[str, dict[int, str]], fallback: list[str]) -> list[str]:
    """The row's part: its slice of the panel's masked product when the flag holds, else
    ``fallback`` (the split form's lines)."""
    read = Term((), (Ref(prod, out.idx, ((0, row),)),))
    return [f"if {flag}:", *("    " + ln for ln in add_lines(out, read, bounds, origin)),
            "else:", *("    " + ln for ln in fallback)]
