"""Proving that a small system of integer linear constraints has no solution.

The system is ``eqs`` (each form ``= 0``) and ``ineqs`` (each form ``≥ 0``) over integer
unknowns, the forms :class:`~hetlab.offload.front.affine.Affine` (keys are unknowns; opaque
names are not read here). :func:`infeasible` answers True only with a proof; False means "not
proved" (the caller then keeps its conservative answer). The steps, each valid over the
integers:

* an equality with no unknown and a nonzero constant, or whose coefficients' GCD does not divide
  its constant, has no solution; one with a coefficient ±1 is solved for that unknown and
  substituted everywhere; any other becomes two inequalities;
* an inequality ``Σ aᵢxᵢ + c ≥ 0`` is divided by ``g = gcd(aᵢ)`` with the constant rounded down
  (``Σ (aᵢ/g)xᵢ + ⌊c/g⌋ ≥ 0``: the integer hull of one constraint);
* Fourier–Motzkin elimination: an unknown bounded on one side only is dropped with its
  constraints; otherwise every lower bound is combined with every upper bound. A rational
  solution of the result extends to the eliminated unknown, so an infeasible result proves the
  system infeasible (the rounding only adds integer-valid cuts). Unknowns whose names start with
  ``prefer_last`` (quotient atoms) are eliminated last, so the cuts reach them.

Examples
--------
>>> from hetlab.offload.front.affine import Affine as A
>>> # 2q ≤ 2e ≤ 2q + 1 forces q = e: q = e + d with d ≥ 1 is impossible
>>> infeasible([A({"q": 1, "e": -1, "d": -1})],
...            [A({"e": 2, "q": -2}), A({"q": 2, "e": -2}, 1), A({"d": 1}, -1)])
True
>>> infeasible([], [A({"x": 2}, -1), A({"x": -2}, 1)])  # 2x = 1: no integer x
True
>>> infeasible([], [A({"x": 1}, -1), A({"x": -1}, 3)])  # 1 ≤ x ≤ 3
False
"""

from __future__ import annotations

import math

from ..front.affine import Affine

__all__ = ["infeasible"]

#: most constraints kept while eliminating before giving up (not proved)
LIMIT = 600


def _tighten(f: Affine) -> Affine | None:
    """``f ≥ 0`` with coefficients divided by their GCD (constant rounded down); None when it
    holds whatever the unknowns (no unknown, constant ≥ 0)."""
    if not f.coefs:
        return None if f.const >= 0 else f
    g = math.gcd(*f.coefs.values())
    if g == 1:
        return Affine(dict(f.coefs), f.const)
    return Affine({k: v // g for k, v in f.coefs.items()}, f.const // g)


def _key(f: Affine) -> tuple[tuple[tuple[str, int], ...], int]:
    return tuple(sorted(f.coefs.items())), f.const


def _solve_equalities(eqs: list[Affine], ineqs: list[Affine]) -> list[Affine] | None:
    """The inequalities left after the equalities are used; None when they prove the system
    infeasible."""
    todo = [Affine(dict(e.coefs), e.const) for e in eqs]
    out = [Affine(dict(f.coefs), f.const) for f in ineqs]
    while todo:
        e = todo.pop()
        if not e.coefs:
            if e.const:
                return None
            continue
        g = math.gcd(*e.coefs.values())
        if e.const % g:
            return None
        unit = next((k for k, v in e.coefs.items() if abs(v) == 1), None)
        if unit is None:
            out += [e, e.scale(-1)]
            continue
        c = e.coefs[unit]
        rest = Affine({k: v for k, v in e.coefs.items() if k != unit}, e.const)
        value = rest.scale(-c)
        todo = [t.substitute(unit, value) for t in todo]
        out = [t.substitute(unit, value) for t in out]
    return out


def infeasible(eqs: list[Affine], ineqs: list[Affine], prefer_last: str = "⌊") -> bool:
    """True when no integers satisfy every ``eqs[k] = 0`` and ``ineqs[k] ≥ 0`` (a proof);
    False when that is not proved."""
    rows = _solve_equalities(eqs, ineqs)
    if rows is None:
        return True
    while True:
        kept: dict[tuple, Affine] = {}
        for f in rows:
            t = _tighten(f)
            if t is None:
                continue
            if not t.coefs:
                return True  # a negative constant ≥ 0
            kept.setdefault(_key(t), t)
        rows = list(kept.values())
        if not rows:
            return False
        if len(rows) > LIMIT:
            return False
        unknowns = {k for f in rows for k in f.coefs}
        best, best_cost = None, None
        for x in unknowns:
            pos = sum(1 for f in rows if f.coefs.get(x, 0) > 0)
            neg = sum(1 for f in rows if f.coefs.get(x, 0) < 0)
            cost = (x.startswith(prefer_last) and pos * neg > 0, pos * neg, x)
            if best_cost is None or cost < best_cost:
                best, best_cost = x, cost
        x = best
        lows = [f for f in rows if f.coefs.get(x, 0) > 0]
        ups = [f for f in rows if f.coefs.get(x, 0) < 0]
        rest = [f for f in rows if x not in f.coefs]
        for lo in lows:
            for up in ups:
                a, b = lo.coefs[x], -up.coefs[x]
                rest.append(lo.scale(b) + up.scale(a))
        rows = rest
