"""A symmetric operand stored as one triangle: two row statements that sum
``X[i, k] Y[k, …]`` over ``k < i + c`` and ``X[k, i] Y[k, …]`` over ``k >= i + c`` are one product
with the mirrored matrix ``S`` (``S[i, k] = X[i, k]`` below, ``X[k, i]`` from ``i + c`` on).

:func:`mirrored` finds such a pair among a triangular nest's row statements (:mod:`.triangular`)
and replaces it by one statement over a fresh summed variable reading ``S``; the setup lines
build ``S`` once, in one pass over exactly the elements of ``X`` the loop reads (no zeros, no
element of the other triangle), and :mod:`.panels` then hoists the product ``S @ Y`` like any
other. Every product ``X·Y`` the loop forms is formed once: the result equals the loop's up to
summation order. ``S`` covers columns ``[L, H)`` (the first range's start, the second's stop):
exact only when ``i + c <= H`` for every row (the first range never passes ``H``), which the
caller checks at run time (:attr:`Mirror.guard`), keeping the rows' own calls otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .catalogue import _minus
from .refs_text import positions, row_offset, written_as
from .tensor import Ref, Stmt, TensorNest, Term

__all__ = ["Mirror", "mirrored"]


@dataclass
class Mirror:
    """Row statements with mirrored pairs merged, the lines building each ``S`` (before the
    rows run), the run-time condition for them, the arrays' origins and new bounds."""

    stmts: list[Stmt]
    setup: list[str] = field(default_factory=list)
    guards: list[str] = field(default_factory=list)
    origin: dict[str, dict[int, str]] = field(default_factory=dict)
    bounds: dict[str, tuple[str, str]] = field(default_factory=dict)


def _split(t: Term, row: str, at: int) -> tuple[Ref, Ref, str] | None:
    """(X, Y, k) for a term ``X[…] Y[…]`` whose X holds ``row`` at axis ``at`` of two and the
    summed ``k`` at the other, Y not holding ``row``."""
    if len(t.refs) != 2:
        return None
    for x, y in (t.refs, t.refs[::-1]):
        px = positions(x)
        if len(px) == 2 and px[at] == row and px[1 - at] != row and not y.fixed \
                and px[1 - at] in y.idx:
            return x, y, px[1 - at]
    return None


def _pair(s1: Stmt, s2: Stmt, nest: TensorNest, row: str, span: tuple[str, str],
          written: set[str], k: int
          ) -> tuple[Stmt, list[str], str, dict[int, str], str, tuple[str, str]] | None:
    if s1.terms is None or s2.terms is None or s1.scale or s2.scale or s1.out != s2.out \
            or s1.op != "+=" or s2.op != "+=" or len(s1.terms) != 1 or len(s2.terms) != 1:
        return None
    (t1,), (t2,) = s1.terms, s2.terms
    if sorted(t1.coef) != sorted(t2.coef) or sorted(t1.div) != sorted(t2.div):
        return None
    a, b = _split(t1, row, 0), _split(t2, row, 1)
    if a is None or b is None:
        return None
    (x1, y1, v1), (x2, y2, v2) = a, b
    temps = set(nest.temps.values())
    if x1.name != x2.name or y1.name != y2.name or {x1.name, y1.name} & (written | temps) \
            or [v1 if p == v2 else p for p in positions(y2)] != positions(y1):
        return None
    (lo, hi), (lo2, hi2) = nest.bounds[v1], nest.bounds[v2]
    c = row_offset(hi, row)
    if c is None or row_offset(lo2, row) != c or row in lo or row in hi2:
        return None  # (a row-free start and stop: names other than the row are invariant)
    s, v = f"_hbs{k}", f"_hbm{k}"
    at = f"{row} + {c}" if c else row
    start, stop = span
    setup = [f"{s} = np.empty((max({stop} - {start}, 0), max({hi2} - {lo}, 0)), "
             f"dtype={x1.name}.dtype)",
             f"for {row} in range({start}, {stop}):",
             f"    for {v} in range({lo}, min({at}, {hi2})):",
             f"        {s}[{_minus(row, start)}, {_minus(v, lo)}] = {x1.name}[{row}, {v}]",
             f"    for {v} in range(max({at}, {lo}), {hi2}):",
             f"        {s}[{_minus(row, start)}, {_minus(v, lo)}] = {x1.name}[{v}, {row}]"]
    guard = f"{stop} - 1 + {c} <= {hi2}"
    y = Ref(y1.name, tuple(v if p == v1 else p for p in y1.idx), y1.fixed)
    term = Term(t1.coef, (Ref(s, (v,), ((0, row),)), y), t1.div)
    vs = (*s1.out.idx, v)
    node = written_as(s1.out, "+=", [term], {s: {0: start, 1: lo}})
    st = Stmt((0,) * len(vs), vs, s1.out, "+=", [term], node, None,
              (*term.refs, *(r for r in s1.reads if not r.array)), node.value)
    return st, setup, guard, {0: start, 1: lo}, v, (lo, hi2)


def mirrored(rows: TensorNest, row: str, start: str, stop: str) -> Mirror | None:
    """The row statements with each mirrored pair (two consecutive ``+=`` statements of one
    output) merged; None when there is none.

    Parameters
    ----------
    rows : TensorNest
        One row's statements (:func:`.triangular.row_nest`).
    row, start, stop : str
        The row variable and the row loop's bounds (source text).
    """
    written = {s.out.name for s in rows.stmts}
    m = Mirror([])
    n = 0
    while n < len(rows.stmts):
        got = None
        if n + 1 < len(rows.stmts):
            got = _pair(rows.stmts[n], rows.stmts[n + 1], rows, row, (start, stop), written,
                        len(m.guards) + 1)
        if got is None:
            m.stmts.append(rows.stmts[n])
            n += 1
            continue
        st, setup, guard, origin, v, bounds = got
        m.stmts.append(st)
        m.setup += setup
        m.guards.append(guard)
        m.origin[st.terms[0].refs[0].name] = origin  # type: ignore[index]
        m.bounds[v] = bounds
        n += 2
    return m if m.guards else None
