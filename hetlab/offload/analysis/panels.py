"""Triangular rows in panels: the products of a triangular nest's rows as one GEMM per panel of
rows, the rest of each row (its small triangle, its elementwise statements) row by row.

:mod:`.triangular` turns ``for i`` around triangular inner bounds into one library call per row
(a GEMV of length about ``i``): n calls of O(n·m) each, one row at a time. :func:`panel_form`
rewrites the same row statements so that the products run as matrix-matrix calls. The rows
``[start, stop)`` are cut into panels ``[r0, r1)``; for each product term of a row statement
whose operands are arrays the nest does not write (or rows of the written array the panel
never writes, see below), one GEMM computes the term for every row of the panel at once into a
temporary ``P`` before the panel's rows run, and each row then reads its slice of ``P``:

* a free (output) index with a bound ``i + c`` is widened to the panel's *hull*, the union of
  the panel's row ranges (``j < i + 1`` → ``j < r1``): the extra elements are computed and
  never written, and every operand element they read is one the loop reads (the hull is the
  union of the ranges the rows read), so nothing out of bounds is touched and the untouched
  triangle is neither read nor written;
* a summed index with a bound ``i + c`` is split into the panel's *common* range (the part
  every row of the panel sums over: ``k < r0 + c`` for ``k < i + c``, ``k >= r1 - 1 + c`` for
  ``k >= i + c``), computed by the GEMM, and the row's *remainder* (at most the panel height
  long), kept as the row's own GEMV call. Every product the loop forms is formed exactly once
  and no other (no masking with zeros, which would turn ``0 * inf`` into NaN): the result
  equals the loop's up to summation order.

Reads of the written array itself (in place, ``B[i, j] += A[k, i] * B[k, j]`` for ``k > i``)
are at rows :mod:`.triangular` proved are never the row written; their *common* part lies
outside the panel (rows ``>= r1`` not yet written, rows ``< r0`` final), which no row of the
panel changes, so computing it before the panel reads what the loop reads; the remainder (rows
inside the panel) stays in the row loop, in the loop's order. A term with such a read on a
free (hulled) index, reading a temporary of the row, or with two summed indices bounded by
``i`` stays a per-row call.

Before that, two row statements that read one symmetric operand from its two triangles are
merged into one product with the mirrored matrix (:mod:`.mirror`). Panel height: the whole
range as one panel when no bound is widened or split (one GEMM, as for the mirrored product),
and when a transposed pair (``A[i,k] B[j,k] + B[i,k] A[j,k]``, a rank-2k update of a
triangle that spans the rows' range) shares one product over the whole square, the second
term reading it transposed (one GEMM instead of two: as a hand-written SYR2K);
:data:`PANEL_SPLIT` rows when a summed bound is split (each row's remainder is at most that
long: numba runs it as loops), :data:`PANEL` rows otherwise (option (b) of the design note).
In the numba form a split term whose rows read nothing the panel wrote before them (a trmm,
a triangular matvec; not a forward substitution) runs its common range and its remainders as
one GEMM on a masked copy of the panel's block, guarded by a finite check (:mod:`.masked`);
panels are then :data:`PANEL_MASKED` rows. A scaling shared by a product's terms is applied
to it in place (``P *= alpha``).

Measured by ``benchmarks/offload_triangular_panels.py`` (figures in
``benchmarks/results/offload_triangular_panels.txt``, a shared machine; min of 11 calls,
OpenBLAS on one thread): on the suite's three triangular kernels the per-row form ran
0.30–0.70× their hand-written keys, the panel form 0.69–1.35×. While choosing, one full GEMM
per term over all rows (twice the triangle's flops), panels of 32–150 rows on the rank-2k
update, and split panels of 16–64 rows with the remainders as GEMV calls on slices were
tried; the shapes above were the fastest (ad hoc runs on the loaded machine, not committed:
a direction, not figures). The masked form and its height: ``benchmarks/offload_masked_panels.py``.
A ``prange`` over rows was not used: rows that read other rows are not independent, and BLAS
calls inside numba's parallel regions fight OpenBLAS's threads.

>>> import ast
>>> from hetlab.offload.analysis.triangular import match_triangular
>>> src = '''
... for i in range(C.shape[0]):
...     for j in range(i + 1):
...         for k in range(A.shape[1]):
...             C[i, j] += A[i, k] * A[j, k]
... '''
>>> print(match_triangular(ast.parse(src).body[0])[1])  # doctest: +NORMALIZE_WHITESPACE
for _hbr0 in range(0, C.shape[0], 64):
    _hbr1 = min(_hbr0 + 64, C.shape[0])
    _hbq1 = (np.ascontiguousarray(A[_hbr0:_hbr1, :]) @ np.ascontiguousarray(A[:_hbr1, :]).T)
    for i in range(_hbr0, _hbr1):
        C[i, :i + 1] += _hbq1[i - _hbr0, 0:max(i + 1, 0)]
"""

from __future__ import annotations

import ast

from .catalogue import LIBRARY, emit
from .masked import add_lines, masked_form, row_lines
from .mirror import mirrored
from .panel_shape import _R0, _R1, Shape
from .refs_text import names_in, positions, written_as
from .rowfuse import fused_row
from .tensor import Ref, Stmt, TensorNest, Term

__all__ = ["panel_form", "positions", "PANEL", "PANEL_SPLIT", "PANEL_MASKED"]

#: rows per panel when only output bounds depend on the row (the products' hull)
PANEL = 64
#: rows per panel when a summed index is split (each row's remainder is at most this long)
PANEL_SPLIT = 32
#: rows per panel when every split term runs as one masked GEMM per panel (:mod:`.masked`)
PANEL_MASKED = 96
class _Panels:
    def __init__(self, rows: TensorNest, row: str, others: set[int],
                 numba: bool = False) -> None:
        self.rows, self.row, self.numba = rows, row, numba
        self.pairs = False  # whether a transposed pair may share one whole-range product
        self.span = ("", "")  # the row loop's (start, stop)
        self.paired = self.widened = False
        self.verbatim: dict[int, list[str]] = {}
        self.others = {r for s in rows.stmts for r in s.reads if id(r) in others}
        self.bounds = dict(rows.bounds)
        self.temps = set(rows.temps.values()) | {t for t, _ in rows.private.values()}
        self.write_pos = {s.out.name: dict(s.out.fixed) for s in rows.stmts if s.out.fixed}
        self.written = {s.out.name for s in rows.stmts}
        self.origin: dict[str, dict[int, str]] = {}
        self.pre: list[str] = []
        self.split = False
        self.k = 0
        #: id of each remainder term → its summed variable, the remainder's, the shape
        self.splits: dict[int, tuple[str, str, Shape]] = {}
        #: id of a fused term's parts (:meth:`fuse`) → (product, flag, common term) for the
        #: remainder, None for the common product
        self.fused: dict[int, tuple[str, str, Term] | None] = {}

    def plan(self, t: Term, s: Stmt) -> dict[str, Shape] | None:
        """The row-dependent variables of a hoistable term (name → shape), or None."""
        if len(t.refs) != 2 or not any(r.fixed for r in t.refs):
            return None
        tvars = {v for r in t.refs for v in r.idx}
        summed = tvars - set(s.out.idx)
        if not summed or any(r.name in self.temps or any(v != self.row for _, v in r.fixed)
                             for r in t.refs):
            return None
        dep = {v: Shape(self.bounds[v], self.row) for v in tvars
               if self.row in names_in("({}, {})".format(*self.bounds[v]))}
        if any(not sh.ok for sh in dep.values()) or len(set(dep) & summed) > 1:
            return None
        for r in t.refs:
            if r.name not in self.written:
                continue
            if r not in self.others or r.name not in self.write_pos:
                return None  # a read of the written array not proven to be another row
            (pos,) = self.write_pos[r.name]
            v = positions(r)[pos]
            if v not in summed or v not in dep:
                return None  # its rows would be widened into the panel's own rows
        if any(v in dep and v not in summed for r in t.refs if r.name in self.written
               for v in r.idx):
            return None
        return dep

    def stmt(self, s: Stmt) -> list[Stmt]:
        """``s``, or ``s`` split into the statements of its kept terms (first, with ``s``'s
        operator, since they may read the element written), then ``+=`` the panel product's
        slice and each remainder: one sum, regrouped."""
        if s.terms is None or s.scale is not None:
            return [s]
        groups: dict[frozenset[str], list[tuple[Term, dict[str, Shape]]]] = {}
        kept: list[Term] = []
        for t in s.terms:
            dep = self.plan(t, s)
            if dep is None:
                kept.append(t)
            else:
                summed = frozenset(v for r in t.refs for v in r.idx) - set(s.out.idx)
                groups.setdefault(summed, []).append((t, dep))
        new: list[Term] = []
        rest: list[Term] = []
        for summed, members in groups.items():
            at = len(self.pre)
            got = self.hoist(s, summed, members)
            if got is None:
                kept += [t for t, _ in members]
                continue
            new.append(got[0])
            rest += got[1]
            if self.numba and s.op == "+=" and len(members) == 1 and len(got[1]) == 1 \
                    and id(got[1][0]) in self.splits:  # every part "+=": any order
                self.fuse(s, members[0][0], got[0], got[1][0], at)
        if not new:
            return [s]
        parts = ([kept] if kept else []) + [[t] for t in new + rest]
        out = []
        for n, terms in enumerate(parts):
            used = set(s.out.idx) | {v for t in terms for r in t.refs for v in r.idx}
            vs = tuple(v for v in s.vars if v in used) + tuple(sorted(used - set(s.vars)))
            reads = tuple(r for t in terms for r in t.refs) + tuple(
                r for r in s.reads if not r.array)
            op = s.op if n == 0 else "+="
            node = written_as(s.out, op, terms, self.origin)
            out.append(Stmt((0,) * len(vs), vs, s.out, op, terms, node, None, reads,
                            node.value))
            if self.numba and (terms[0] in rest or id(terms[0]) in self.fused):
                self.verbatim[id(out[-1])] = self.row_part(s.out, terms[0])
        return out

    def fuse(self, s: Stmt, t: Term, common: Term, rem: Term, at: int) -> None:
        """The split term ``t`` as one masked GEMM per panel (:mod:`.masked`) when it applies:
        the common product (``self.pre[at:]``) and the remainder ``rem`` then run only where
        the masked product is not finite."""
        v, _, sh = self.splits[id(rem)]
        self.k += 1
        got = masked_form(t, s.out, v, self.row, self.bounds, sh.hull(), sh.by_k(v),
                          sh.lo_c is not None and sh.lo_c >= 1, self.written, self.k,
                          self.origin)
        if got is None:
            return
        lines, prod, flag = got
        self.pre[at:] = [*lines, f"if not {flag}:", *("    " + ln for ln in self.pre[at:])]
        self.fused[id(common)] = None
        self.fused[id(rem)] = (prod, flag, common)

    def row_part(self, out: Ref, t: Term) -> list[str]:
        """The numba lines of a row's remainder ``out += t``: loops, or for a fused term
        (:meth:`fuse`) its guarded slice of the masked product (none for its common part)."""
        if id(t) in self.fused:
            got = self.fused[id(t)]
            if got is None:
                return []  # the common product of a fused term: read in the remainder's lines
            prod, flag, common = got
            fallback = add_lines(out, common, self.bounds, self.origin) + self.loops(out, t)
            return row_lines(out, prod, flag, self.row, self.bounds, self.origin, fallback)
        return self.loops(out, t)

    def loops(self, out: Ref, t: Term) -> list[str]:
        """A remainder ``out += t`` as loops (numba form): the summed variables outside, the
        output's innermost (unit stride along the output's last axis). Each element still sums
        its remainder in increasing order."""
        summed = [v for r in t.refs for v in r.idx if v not in out.idx]
        order = list(dict.fromkeys(summed)) + list(out.idx)
        lines = []
        for d, v in enumerate(order):
            lines.append("    " * d + f"for {v} in range({self.bounds[v][0]}, "
                         f"{self.bounds[v][1]}):")
        stmt = ast.unparse(written_as(out, "+=", [t], self.origin))
        return [*lines, "    " * len(order) + stmt]

    def hoist(self, s: Stmt, summed: frozenset[str], members: list[tuple[Term, dict[str, Shape]]]
              ) -> tuple[Term, list[Term]] | None:
        """One GEMM over the panel for ``members``; the row's terms reading it (and the
        remainders), or None when the catalogue has no call for it."""
        self.k += 1
        name = f"_hbq{self.k}"
        pb = {self.row: (_R0, _R1)}
        origin = {0: _R0}
        for d, v in enumerate(s.out.idx):
            sh = next((dep[v] for _, dep in members if v in dep), None)
            pb[v] = self.bounds[v] if sh is None else sh.hull()
            self.widened |= sh is not None
            origin[d + 1] = pb[v][0]
        pair = self.pair(s, summed, members, pb)
        if pair is not None:
            members = [members[0]]
        # one scaling shared by every term: applied to the product in place (one array
        # fewer; ``P *= a * b`` is ``a * b * P`` element for element)
        coef, div = members[0][0].coef, members[0][0].div
        shared = all(t.coef == coef and t.div == div for t, _ in members)
        terms, rest = [], []
        for t, dep in members:
            for v in summed:
                pb[v] = dep[v].common() if v in dep else self.bounds[v]
            # the row's operand first: the product comes out in (row, …) order, unit stride
            # for the rows reading it (products of two factors commute exactly)
            order = sorted(t.refs, key=lambda r: not r.fixed)
            refs = tuple(Ref(r.name, tuple(positions(r))) for r in order)
            terms.append(Term((), refs) if shared else Term(t.coef, refs, t.div))
            for v in summed & set(dep):
                self.split = True
                self.k += 1
                fresh = f"_hbk{self.k}"
                self.bounds[fresh] = dep[v].remainder()
                rest.append(Term(t.coef, tuple(
                    Ref(r.name, tuple(fresh if x == v else x for x in r.idx), r.fixed)
                    for r in t.refs), t.div))
                self.splits[id(rest[-1])] = (v, fresh, dep[v])
        out = Ref(name, (self.row, *s.out.idx))
        vars_ = (self.row, *s.out.idx, *sorted(summed))
        st = Stmt((0,) * len(vars_), vars_, out, "=", terms, ast.Pass(), None,
                  tuple(r for t in terms for r in t.refs), None)
        got = emit(TensorNest(pb, [st], [], {name: name}), sizes=frozenset({_R0, _R1}),
                   origin=self.origin, nocopy=self.numba)
        if got is None or not all(k in LIBRARY for k in got[0].split("+")):
            self.k -= 1
            return None
        self.pre += got[1].splitlines()
        def par(c: str) -> str:
            return c if c.isidentifier() else f"({c})"

        if shared and coef:
            self.pre.append(f"{name} *= {' * '.join(par(c) for c in coef)}")
        self.pre += [f"{name} /= {par(d)}" for d in (div if shared else ())]
        self.origin[name] = origin
        if pair is not None:  # the second term at (i, j) is the first's product at (j, i)
            self.paired = True
            return Term((), (Ref(name, s.out.idx, ((0, self.row),)),)), [
                Term((), (Ref(name, s.out.idx, ((1, self.row),)),))]
        return Term((), (Ref(name, s.out.idx, ((0, self.row),)),)), rest

    def pair(self, s: Stmt, summed: frozenset[str], members: list[tuple[Term, dict[str, Shape]]],
             pb: dict[str, tuple[str, str]]) -> str | None:
        """The output variable ``j`` when ``members`` are two terms, the second the first with
        ``row`` and ``j`` swapped (``A[i,k] B[j,k] + B[i,k] A[j,k]``, a rank-2k update), over
        a square product: ``j``'s hull over the whole-range panel is the rows' range
        (``j <= i`` from row 0, ``j >= i`` up to the last row), summed ranges not split. One
        GEMM then serves both (as a hand-written SYR2K does), the second term read
        transposed."""
        if not self.pairs or len(members) != 2 or len(s.out.idx) != 1:
            return None
        (v,) = s.out.idx
        (t1, d1), (t2, d2) = members
        whole = {_R0: self.span[0], _R1: self.span[1]}  # the one panel: all rows
        if v not in d1 or v not in d2 or summed & (set(d1) | set(d2)) \
                or tuple(whole.get(b, b) for b in pb[v]) != self.span \
                or sorted(t1.coef) != sorted(t2.coef) \
                or sorted(t1.div) != sorted(t2.div):
            return None

        def canon(t: Term, swap: bool) -> list[tuple[str, tuple[str, ...]]]:
            a, b = (v, self.row) if swap else (self.row, v)
            return sorted((r.name, tuple("@R" if x == a else "@J" if x == b else x
                                         for x in positions(r))) for r in t.refs)

        return v if canon(t1, False) == canon(t2, True) else None


def panel_form(rows: TensorNest, row: str, start: str, stop: str, others: set[int],
               numba: bool = False) -> tuple[str, str] | None:
    """(entry, source) of the triangular nest ``for row in range(start, stop)`` around the row
    statements ``rows`` (:func:`.triangular.row_nest`) with its products hoisted into one GEMM
    per panel of rows; None when no product can be hoisted (the per-row form stays).

    Parameters
    ----------
    rows : TensorNest
        The statements of one row, legal to run one after the other (:mod:`.triangular`).
    row : str
        The row variable.
    start, stop : str
        The row loop's bounds (source text, invariant, ``start`` non-negative).
    others : set of int
        ``id`` of the reads of written arrays proven to be at rows other than ``row``.
    numba : bool, default False
        The numba form: each row's remainder (at most :data:`PANEL` long) as plain loops,
        unit stride along the output's rows, instead of a GEMV call on a copied slice (numba
        copies every sliced operand of ``@`` into a contiguous array).

    Returns
    -------
    tuple of str or None
        The catalogue entry of the row statements and the source replacing the nest.
    """
    mir, orig = mirrored(rows, row, start, stop), rows
    if mir is not None:
        rows = TensorNest({**rows.bounds, **mir.bounds}, mir.stmts, rows.fors, rows.temps,
                          rows.private, rows.written, rows.nonneg)
    for pairs in (True, False):
        p = _Panels(rows, row, others, numba)
        p.pairs, p.span = pairs, (start, stop)
        if mir is not None:
            p.origin.update(mir.origin)
        stmts = [x for s in rows.stmts for x in p.stmt(s)]
        if not (p.paired and p.split):
            break  # a shared product needs the whole range as one panel: no split term
    if not any(name.startswith("_hbq") for name in p.origin):
        return None
    nest = TensorNest(p.bounds, stmts, rows.fors, rows.temps, rows.private, rows.written,
                      rows.nonneg | {_R0, _R1})
    got = emit(nest, origin=p.origin, verbatim=p.verbatim)
    if got is None:
        return None
    one = fused_row(stmts, p.bounds, p.origin, p.temps) if numba and mir is None else None
    if one is not None:  # the row's elementwise statements as one loop (:mod:`.rowfuse`)
        got = (got[0], one)
    whole = p.paired or not (p.split or p.widened)
    fused = p.split and all(key in p.fused for key in p.splits)
    step = f"max({stop} - {start}, 1)" if whole else str(
        PANEL_MASKED if fused else PANEL_SPLIT if p.split else PANEL)
    lines = [f"for {_R0} in range({start}, {stop}, {step}):",
             f"    {_R1} = min({_R0} + {step}, {stop})"]
    lines += ["    " + ln for ln in p.pre]
    lines += [f"    for {row} in range({_R0}, {_R1}):"]
    lines += ["        " + ln for ln in got[1].splitlines()]
    if mir is None:
        return got[0], "\n".join(lines)
    slow = emit(orig)
    if slow is None:
        return None
    lines = [f"if {' and '.join(mir.guards)}:", *("    " + ln for ln in mir.setup + lines),
             "else:  # a row's first range passes the mirrored columns: the rows' own calls",
             f"    for {row} in range({start}, {stop}):",
             *("        " + ln for ln in slow[1].splitlines())]
    return got[0], "\n".join(lines)
