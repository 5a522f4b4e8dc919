"""Dependence tests on affine subscripts: GCD and Banerjee-style bounds, distance vectors.

For a loop ``L`` and two accesses to one array, at least one a write, the question is whether
two *different* iterations of ``L`` (same iteration of every loop around ``L``) may touch the
same element. Each loop variable is rewritten ``v = lower + step·e`` with ``e ≥ 0`` (lower
bounds substituted from the outer loops, which keeps triangular bounds exact enough), the later
iteration of ``L`` as ``v₁ + step·d`` with ``d ≥ 1``. Then per subscript dimension the equation
``f₁ − f₂ = 0`` is tested: no integer solution (GCD) or zero outside the bounds (Banerjee)
proves independence. Anything not affine, or a symbol that changes inside ``L``, proves nothing:
the test is conservative.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..front.affine import Affine
from ..front.loops import Access, Loop, trip_span
from .divdeps import disjoint, involves_quotients, nonnegative

__all__ = ["Dependence", "carried_dependences", "coupled_infeasible", "unmodelable_subscripts"]

_INF = math.inf
#: the atom ``d ≥ 1`` separating the two iterations of L (":" keeps it apart from user names)
_D = "Δ:d"
#: the slack ``t ≥ 0`` of ``d ≤ T − 1`` (T: the trip count of L)
_T = "Δ:t"


@dataclass(frozen=True)
class Dependence:
    """A dependence carried by a loop: ``source`` happens in an earlier iteration than ``sink``."""

    array: str
    kind: str  # "flow" (write→read), "anti" (read→write), "output" (write→write)
    source: str
    sink: str
    distance: tuple[int | str, ...]  # over the loops common to both accesses; "*" = unknown
    loop_vars: tuple[str, ...]

    def __str__(self) -> str:
        dist = ", ".join(str(d) for d in self.distance)
        where = ", ".join(self.loop_vars)
        return (f"{self.kind} dependence on {self.array}: {self.source} → {self.sink} "
                f"(distance ({dist}) in ({where}))")


def _symbols_ok(aff: Affine, written: set[str]) -> bool:
    for key in aff.coefs:
        if ":" in key:
            continue  # an atom of the rewrite (user names cannot hold ":"), not a symbol
        names = aff.opaque.get(key, frozenset({key}))
        if names & written:
            return False
    return True


class _Binder:
    """Rewrites the loop variables of one access pair into atoms with known ranges."""

    def __init__(self, loops: list[Loop], pos: int, written: set[str]) -> None:
        self.loops, self.pos, self.written = loops, pos, written
        self.ranges: dict[str, tuple[float, float]] = {}
        self.common: dict[int, Affine] = {}

    def bind(self, acc: Access, side: str, l1: Affine | None = None) -> dict[str, Affine] | None:
        """Loop variable → affine form over atoms, outermost first; None when L cannot carry.

        Side "1" is the earlier iteration of L; side "2" (given ``l1``, side 1's form of L's
        variable) the later one, ``v₂ = v₁ + step·d`` with ``1 ≤ d ≤ trips − 1``.
        """
        scope: dict[str, Affine] = {}
        for q, li in enumerate(acc.loops):
            lp = self.loops[li]
            if q < self.pos and li in self.common:
                scope[lp.var] = self.common[li]
                continue
            if q == self.pos and side == "2" and l1 is not None and lp.step is not None:
                span = trip_span(lp)
                if span < 1:
                    return None
                self.ranges[_D] = (1.0, span)
                scope[lp.var] = l1 + Affine({_D: lp.step})
                continue
            atom = f"c:{li}" if q < self.pos else f"{side}:{li}"
            lower = lp.lower
            if lower is not None:
                for var, expr in scope.items():
                    lower = lower.substitute(var, expr)
            upper = _from_top(lp, scope)
            if upper is not None and _symbols_ok(upper, self.written) and (
                    lower is None or not any(":" in k for k in lower.coefs)):
                # a bound tied to outer loops only at the top (``range(i)``): count down from it
                expr = upper + Affine({atom: -1}, -1)
                self.ranges[atom] = (0.0, trip_span(lp))
            elif lower is None or lp.step is None or not _symbols_ok(lower, self.written):
                expr, self.ranges[atom] = Affine({atom: 1}), (-_INF, _INF)
            else:
                expr = lower + Affine({atom: lp.step})
                self.ranges[atom] = (0.0, trip_span(lp))
            scope[lp.var] = expr
            if q < self.pos:
                self.common[li] = expr
        return scope


def _from_top(lp: Loop, scope: dict[str, Affine]) -> Affine | None:
    """``lp``'s upper bound over atoms when it has step 1 and depends on an outer loop."""
    if lp.step != 1 or lp.upper is None:
        return None
    upper = lp.upper
    for var, expr in scope.items():
        upper = upper.substitute(var, expr)
    return upper if any(":" in k for k in upper.coefs) else None


def _bound_test(eq: Affine, ranges: dict[str, tuple[float, float]]) -> bool:
    """True when ``eq = 0`` has no solution (GCD or bounds): the dimension proves independence."""
    coefs = list(eq.coefs.values())
    g = math.gcd(*coefs) if coefs else 0
    if g == 0:
        return eq.const != 0
    if eq.const % g:
        return True
    lo = hi = float(eq.const)
    for atom, c in eq.coefs.items():
        a, b = ranges.get(atom, (-_INF, _INF))
        vals = [c * a, c * b]
        vals = [v if not math.isnan(v) else 0.0 for v in vals]
        lo += min(vals)
        hi += max(vals)
    return lo > 0 or hi < 0


def _subscript(aff: Affine, scope: dict[str, Affine]) -> Affine:
    out = aff
    for var, expr in scope.items():
        out = out.substitute(var, expr)
    return out


def _may_depend(a: Access, b: Access, loops: list[Loop], L: Loop, pos: int,
                written: set[str]) -> bool:
    """Whether ``a`` in one iteration of L and ``b`` in a later one may touch the same element."""
    binder = _Binder(loops, pos, written)
    s1 = binder.bind(a, "1")
    if s1 is None:
        return False
    s2 = binder.bind(b, "2", s1[L.var])
    if s2 is None:
        return False
    if _D not in binder.ranges:  # L's step unknown: the two iterations are unrelated atoms
        return True
    eqs: list[Affine] = []
    for fa, fb in zip(a.subs, b.subs, strict=False):
        if fa is None or fb is None:
            continue
        ea, eb = _subscript(fa, s1), _subscript(fb, s2)
        if not _symbols_ok(ea, written) or not _symbols_ok(eb, written):
            continue  # a subscript reads a scalar that changes inside L
        eq = ea - eb
        if any(":" not in k for k in eq.coefs):
            eq = _through_trips(eq, L, s1, written, binder.ranges)  # type: ignore[assignment]
            if eq is None:
                continue  # a symbol that does not cancel: unknown offset
        if _bound_test(eq, binder.ranges):
            return False
        eqs.append(eq)
    if coupled_infeasible(eqs, binder.ranges):
        return False
    if involves_quotients(a, loops) or involves_quotients(b, loops):
        return not disjoint(a, b, loops, L, pos, written)  # exact for ``//`` and ``%``
    return True


def _through_trips(eq: Affine, L: Loop, scope: dict[str, Affine], written: set[str],
                   ranges: dict[str, tuple[float, float]]) -> Affine | None:
    """``eq`` with its symbols replaced through L's trip count, or None when they are not a
    multiple of it. Two iterations of L ``d`` apart (step 1, bounds ``lo``/``hi`` not written
    in L) satisfy ``d ≤ T − 1`` with ``T = hi − lo``: ``T = d + 1 + t``, ``t ≥ 0``. A subscript
    offset by the trip count (``x[i + h]`` over ``range(h)``, ``x[i + hi - lo]`` over
    ``range(lo, hi)``) then meets ``x[i]`` only where ``d = T``, which no pair reaches.

    >>> from hetlab.offload.front.affine import Affine
    >>> from hetlab.offload.front.loops import Loop
    >>> L = Loop(0, "i", None, 1, None, 0, Affine(), Affine({"h": 1}))
    >>> r = {_D: (1.0, _INF)}
    >>> str(_through_trips(Affine({"h": 1, _D: -1}), L, {}, set(), r))  # i₁ + h = i₁ + d
    'Δ:t + 1'
    >>> _through_trips(Affine({"k": 1, _D: -1}), L, {}, set(), r) is None  # another symbol
    True
    """
    if L.step != 1 or L.lower is None or L.upper is None:
        return None
    trips = _subscript(L.upper - L.lower, scope)
    if not _symbols_ok(trips, written):
        return None
    sym_t = {k: v for k, v in trips.coefs.items() if ":" not in k}
    sym_e = {k: v for k, v in eq.coefs.items() if ":" not in k}
    if not sym_t or set(sym_e) != set(sym_t):
        return None
    k0 = next(iter(sym_t))
    alpha, left = divmod(sym_e[k0], sym_t[k0])
    if left or any(sym_e[k] != alpha * v for k, v in sym_t.items()):
        return None
    ranges[_T] = (0.0, _INF)
    atoms = Affine({k: v for k, v in trips.coefs.items() if ":" in k}, trips.const)
    rest = Affine({k: v for k, v in eq.coefs.items() if ":" in k}, eq.const)
    return rest + (Affine({_D: 1, _T: 1}, 1) - atoms).scale(alpha)


def coupled_infeasible(eqs: list[Affine], ranges: dict[str, tuple[float, float]]) -> bool:
    """True when the subscript equations ``eqs`` (all ``= 0``, over atoms with ``ranges``)
    have no common integer solution, found by elimination: an atom with coefficient ±1 in one
    equation is solved for and substituted into the others, and every equation so derived gets
    the GCD and bounds test. Coupled subscripts need it: ``cov[i, j]`` and ``cov[j, i]``
    written by iterations ``i₁ < i₂`` of ``for i: for j in range(i + 1)`` meet only where
    ``i₁ = j = i₂``; each dimension alone has a solution, the pair has none. Dropping the
    eliminated atom's range only relaxes the system, so a proof stays a proof.

    Examples
    --------
    >>> from hetlab.offload.front.affine import Affine
    >>> r = {"a": (0.0, 9.0), "d": (1.0, 9.0)}
    >>> coupled_infeasible([Affine({"a": -1}), Affine({"a": 1, "d": -1})], r)  # a=0, a=d≥1
    True
    >>> coupled_infeasible([Affine({"a": -1}), Affine({"a": 1, "d": -1}, 1)], r)  # d = 1
    False
    """
    todo = [e for e in eqs if e.coefs]
    for _ in range(len(todo)):
        pick = next(((k, atom) for k, e in enumerate(todo) for atom, c in e.coefs.items()
                     if abs(c) == 1 and any(atom in o.coefs for o in todo if o is not e)),
                    None)
        if pick is None:
            return False
        k, atom = pick
        e = todo.pop(k)
        c = e.coefs[atom]
        rest = Affine({x: v for x, v in e.coefs.items() if x != atom}, e.const, e.opaque)
        value = rest.scale(-c)  # c·atom + rest = 0 with c = ±1: atom = −c·rest
        todo = [o.substitute(atom, value) for o in todo]
        if any(_bound_test(o, ranges) for o in todo):
            return True
        todo = [o for o in todo if o.coefs]
    return False


def _distance(a: Access, b: Access, loops: list[Loop], pos: int) -> tuple[int | str, ...]:
    """Per common loop, ``iteration(b) − iteration(a)`` when a subscript pins it, else "*"."""
    common = []
    for la, lb in zip(a.loops, b.loops, strict=False):
        if la != lb:
            break
        common.append(la)
    out: list[int | str] = []
    for q, li in enumerate(common):
        if q < pos:
            out.append(0)
            continue
        var = loops[li].var
        found: int | str = "*"
        for fa, fb in zip(a.subs, b.subs, strict=False):
            if fa is None or fb is None:
                continue
            ca, cb = fa.coefs.get(var, 0), fb.coefs.get(var, 0)
            rest_a = {k: v for k, v in fa.coefs.items() if k != var}
            rest_b = {k: v for k, v in fb.coefs.items() if k != var}
            if ca and ca == cb and rest_a == rest_b and not any(
                    loops[x].var in rest_a for x in common[q:]):
                diff = fa.const - fb.const
                if diff % ca == 0:
                    found = diff // ca
                    break
        out.append(found)
    return tuple(out)


def carried_dependences(L: Loop, loops: list[Loop], accesses: list[Access],
                        written: set[str], private: set[str]) -> list[Dependence]:
    """Every dependence between array accesses carried by loop ``L`` (conservative)."""
    written = set(written) | {lp.var for lp in loops}  # opaque symbols reading a loop variable
    inside = [a for a in accesses if L.index in a.loops and a.array not in private]
    pos = inside[0].loops.index(L.index) if inside else 0
    found: list[Dependence] = []
    seen: set[tuple[str, str, str]] = set()
    by_array: dict[str, list[Access]] = {}
    for a in inside:
        by_array.setdefault(a.array, []).append(a)
    for name, accs in by_array.items():
        for x in accs:
            for y in accs:
                if not (x.write or y.write):
                    continue
                # ``A[i]`` is ``A[i, :]``: with fewer subscripts, only the leading ones compare
                if not _may_depend(x, y, loops, L, pos, written):
                    continue
                kind = "output" if x.write and y.write else "flow" if x.write else "anti"
                key = (kind, x.text, y.text)
                if key in seen:
                    continue
                seen.add(key)
                dist = _distance(x, y, loops, pos)
                common_vars = tuple(loops[li].var for li in x.loops[:len(dist)])
                found.append(Dependence(name, kind, x.text, y.text, dist, common_vars))
    return found


def _symbol_low(key: str, aff: Affine, acc: Access, loops: list[Loop],
                nonneg: frozenset[str]) -> float:
    """A lower bound of a loop-invariant symbol of a subscript, -inf when none is known."""
    if key in aff.opaque:
        text = key.replace(" ", "")
        if text.startswith("len(") or ".shape[" in text or text.endswith(".size"):
            return 0.0
        return -_INF
    if key in nonneg:
        return 0.0
    best = -_INF
    for li in acc.loops:  # ``for i in range(lo, key + k)`` ran, so key + k ≥ lo + 1
        lp = loops[li]
        up = lp.upper
        if lp.step is not None and lp.step > 0 and up is not None and lp.lower is not None \
                and lp.lower.is_const() and up.coefs == {key: 1}:
            best = max(best, float(lp.lower.const + 1 - up.const))
    return best


def lowest_value(aff: Affine, acc: Access, loops: list[Loop], unknown: set[str],
                 nonneg: frozenset[str] = frozenset()) -> float:
    """A lower bound of subscript ``aff`` over the iterations that execute ``acc``: loop
    variables are replaced, innermost first, by the end of their range that minimizes the
    form (bounds are affine in the outer variables); the remaining symbols need a known lower
    bound (shapes, ``len``, an enclosing ``range(symbol)``). -inf when nothing is proved;
    ``unknown``: names that change inside the loop (and loop variables)."""
    expr = aff
    for li in reversed(acc.loops):
        lp = loops[li]
        c = expr.coefs.get(lp.var, 0)
        if not c:
            continue
        if lp.step is None:
            return -_INF
        # the smallest value of the index when c > 0, else its largest: only that bound is
        # needed (``range(min(len(x), len(y)))`` has no affine upper bound but starts at 0)
        first = (c > 0) == (lp.step > 0)
        bound = lp.lower if first else lp.upper
        if bound is None:
            return -_INF
        extreme = bound if first else bound + Affine(const=-1 if lp.step > 0 else 1)
        expr = expr.substitute(lp.var, extreme)
    total = float(expr.const)
    for key, c in expr.coefs.items():
        names = expr.opaque.get(key, frozenset({key}))
        if names & unknown or c < 0:
            return -_INF
        total += c * _symbol_low(key, expr, acc, loops, nonneg)
    return total


def unmodelable_subscripts(L: Loop, loops: list[Loop], accesses: list[Access],
                           written: set[str], nonneg: frozenset[str] = frozenset()
                           ) -> tuple[list[Access], list[str]]:
    """Accesses of arrays written inside ``L`` with every subscript that may be negative
    (Python wraps it around to the end: ``a[-i]`` is ``a[n - i]``) made unknown, and the
    reasons. A subscript that reads a name changing inside ``L`` is unknown to the test
    already and is left alone."""
    inside = [a for a in accesses if L.index in a.loops]
    ids = {id(a) for a in inside}
    arrays = {a.array for a in inside if a.write}
    loop_vars = {lp.var for lp in loops}
    unknown = set(written) | loop_vars
    out, reasons = [], []
    for a in accesses:
        if id(a) not in ids or a.array not in arrays:
            out.append(a)
            continue
        subs = list(a.subs)
        for k, f in enumerate(subs):
            if f is None:
                continue
            opaque_vars = any(names & loop_vars for names in f.opaque.values())
            if not opaque_vars and not _symbols_ok(f, set(written)):
                continue  # reads a name assigned inside L: unknown to the test already
            if (opaque_vars or lowest_value(f, a, loops, unknown - {
                    loops[li].var for li in a.loops}, nonneg) < 0) and not (
                    involves_quotients(a, loops) and nonnegative(a, k, loops)):
                subs[k] = None
                msg = (f"subscript {k} of {a.text} may be negative or is not modelable "
                       f"(a negative index wraps around to the end of {a.array}): "
                       "dependences on it are unknown")
                if msg not in reasons:
                    reasons.append(msg)
        out.append(replace(a, subs=tuple(subs)) if subs != list(a.subs) else a)
    return out, reasons
