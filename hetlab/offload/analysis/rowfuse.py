"""One loop for a panel row's elementwise statements (the numba form of :mod:`.panels`).

Once a triangular nest's products are hoisted into one GEMM per panel, each row is left with
elementwise statements over the same column range: ``C[i, :i + 1] = beta * C[i, :i + 1]``, then
``+=`` a row of the product, then ``+=`` a column of it (a rank-2k update's transposed term).
As NumPy slices, numba evaluates each into a temporary and passes over the row once per
statement. When every statement of the row runs over the one variable ``j`` with the same
bounds, sums over nothing, and reads the arrays the row writes only at the element it writes
(``C[i, j]``), running them one after the other for each ``j`` computes what running each over
the whole row does: one loop, no temporaries::

    for j in range(0, i + 1):
        C[i, j] = beta * C[i, j]
        C[i, j] += _hbq1[i - _hbr0, j]
        C[i, j] += _hbq1[j - _hbr0, i]

Every element gets the same operations in the same order, so the result is bit-identical to
the slice form. Anything else (a summed remainder, a read of the written array at another
element, a temporary of the row, a scalar output) keeps the slice form.

>>> from hetlab.offload.analysis.tensor import Ref, Stmt, Term
>>> out = Ref("C", ("j",), ((0, "i"),))
>>> row = [Stmt((0,), ("j",), out, "*=", None, None, "beta", (out,)),
...        Stmt((0,), ("j",), out, "+=",
...             [Term(("alpha",), (Ref("P", ("j",), ((0, "i"),)),))], None)]
>>> print(fused_row(row, {"j": ("0", "i + 1")}, {"P": {0: "r0"}}))
for j in range(0, i + 1):
    C[i, j] *= beta
    C[i, j] += alpha * P[i - r0, j]
>>> row[1] = Stmt((0,), ("j",), out, "+=", [Term((), (Ref("C", ("j",), ((1, "i"),)),))], None)
>>> print(fused_row(row, {"j": ("0", "i + 1")}, {}))  # reads C[j, i]: another element
None
"""

from __future__ import annotations

import ast

from .refs_text import element, names_in, written_as
from .tensor import Ref, Stmt

__all__ = ["fused_row"]


def _key(r: Ref) -> tuple[str, tuple[str, ...], tuple[tuple[int, str], ...]]:
    return r.name, r.idx, r.fixed


def _text(s: Stmt, origin: dict[str, dict[int, str]]) -> str | None:
    """The element statement of ``s``, or None for a statement kept as written."""
    if s.scale is not None:
        return f"{element(s.out, origin)} {s.op} {s.scale}" if s.op in ("*=", "/=") else None
    if s.terms:
        return ast.unparse(written_as(s.out, s.op, s.terms, origin))
    return None


def fused_row(stmts: list[Stmt], bounds: dict[str, tuple[str, str]],
              origin: dict[str, dict[int, str]], temps: set[str] = frozenset()) -> str | None:
    """Source of ``stmts`` (one row's statements, the row variable held fixed) as one loop
    over their shared variable, or None when they do not qualify (module docstring).

    Parameters
    ----------
    stmts : list of Stmt
        The row's statements after the panel form split them (products read from ``_hbq``).
    bounds : dict
        Variable → (start, stop) source text.
    origin : dict
        The panel products' origins (:func:`~.refs_text.element`).
    temps : set of str
        The row's temporaries (scalars expanded into arrays the emitted slices create):
        any of them keeps the slice form.
    """
    if temps or len(stmts) < 2 or len({s.vars for s in stmts}) != 1:
        return None
    (var,) = stmts[0].vars if len(stmts[0].vars) == 1 else (None,)
    if var is None or var not in bounds:
        return None
    if any(not s.out.array or s.out.idx != (var,) or s.summed for s in stmts):
        return None
    outs = {_key(s.out) for s in stmts}
    written = {s.out.name for s in stmts}
    lines = []
    for s in stmts:
        reads = [r for t in s.terms for r in t.refs] if s.terms is not None else list(s.reads)
        if any(r.name in written and _key(r) not in outs for r in reads):
            return None  # another element of an array the row writes: the order matters
        scalars = [c for t in s.terms or () for c in (*t.coef, *t.div)] + [s.scale or "0"]
        if any(names_in(c) & written for c in scalars):
            return None  # a factor reading a written array (``/= C[i, i]``)
        if any(v != var for r in reads for v in r.idx):
            return None
        text = _text(s, origin)
        if text is None:
            return None
        lines.append(text)
    lo, hi = bounds[var]
    return "\n".join([f"for {var} in range({lo}, {hi}):", *("    " + ln for ln in lines)])
