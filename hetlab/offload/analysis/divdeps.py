"""Dependence and sign tests exact for ``//`` and ``%`` by positive constants in subscripts and
loop bounds (``range(n // 2)``, ``out[i // 2]``, ``c[b, i % 4]``).

The accesses and bounds are read as :class:`~hetlab.offload.front.floordiv.DivForm`; each
quotient ``e // c`` becomes an integer unknown ``q`` with ``c·q ≤ e ≤ c·q + c − 1``, each loop
variable ``v`` of ``range(lo, hi, st)`` an unknown with ``v = lo + st·t``, ``t ≥ 0``,
``v ≤ hi − 1`` (``st > 0``; ``v ≥ hi + 1`` for ``st < 0``), and two iterations of the tested
loop ``L`` are ``v₂ = v₁ + st·d`` with ``d ≥ 1``. Equal subscripts in every dimension then
form an integer system; :func:`~.intsys.infeasible` proving it has no solution proves the two
accesses never meet. A constraint that would read a name changing where it matters is left out
(fewer constraints only make a proof harder), a subscript that may be negative (Python wraps it
around) proves nothing, and anything unproved leaves the dependence in place.

>>> import ast
>>> from hetlab.offload.front.loops import build_tree
>>> src = '''
... def swap(a):
...     n = len(a)
...     for i in range(n // 2):
...         a[i], a[n - 1 - i] = a[n - 1 - i], a[i]
... '''
>>> t = build_tree(ast.parse(src).body[0], {}, 1)
>>> w = [x for x in t.accesses if x.write]
>>> disjoint(w[0], w[1], t.loops, t.loops[0], 0, {"i"})
True
>>> all(nonnegative(x, 0, t.loops) for x in t.accesses)
True
"""

from __future__ import annotations

from ..front.affine import Affine
from ..front.floordiv import DivForm, has_quotients
from ..front.loops import Access, Loop
from .intsys import infeasible
from .scalars import written_names

__all__ = ["involves_quotients", "disjoint", "nonnegative"]

_D = "Δ:d"


def involves_quotients(acc: Access, loops: list[Loop]) -> bool:
    """Whether a subscript of ``acc`` or a bound of a loop around it holds ``//`` or ``%``."""
    return has_quotients(*acc.divs) or any(
        has_quotients(loops[li].div_lower, loops[li].div_upper) for li in acc.loops)


class _System:
    """Integer constraints over the loop variables of one or two accesses."""

    def __init__(self, loops: list[Loop], written: set[str]) -> None:
        self.loops, self.written = loops, written
        self.eqs: list[Affine] = []
        self.ineqs: list[Affine] = []
        self.seen: set[str] = set()
        self.changed: dict[int, set[str]] = {}

    def changed_in(self, lp: Loop) -> set[str]:
        if lp.index not in self.changed:
            self.changed[lp.index] = written_names(lp.node.body)
        return self.changed[lp.index]

    def lin(self, aff: Affine, scope: dict[str, Affine], atoms: dict[str, Affine],
            unknown: set[str]) -> Affine | None:
        """``aff`` over unknowns; None when it reads a name in ``unknown``."""
        out = Affine(const=aff.const)
        for key, c in aff.coefs.items():
            if key in atoms:
                e = atoms[key]
            elif key in scope:
                e = scope[key]
            else:
                if aff.opaque.get(key, frozenset({key})) & unknown:
                    return None
                e = Affine({key: 1})
            out = out + e.scale(c)
        return Affine(out.coefs, out.const)

    def term(self, f: DivForm | None, scope: dict[str, Affine],
             unknown: set[str]) -> Affine | None:
        """``f`` over unknowns, its quotients' constraints added; None when not modelable."""
        if f is None:
            return None
        atoms: dict[str, Affine] = {}
        for key, (num, c) in f.quotients.items():
            n = self.lin(num, scope, atoms, unknown)
            if n is None:
                return None
            name = f"⌊{sorted(n.coefs.items())}{n.const:+d}/{c}⌋"
            q = Affine({name: 1})
            if name not in self.seen:  # c·q ≤ n ≤ c·q + c − 1
                self.seen.add(name)
                self.ineqs += [n - q.scale(c), q.scale(c) + Affine(const=c - 1) - n]
            atoms[key] = q
        return self.lin(f.form, scope, atoms, unknown)

    def bind(self, acc: Access, side: str, pos: int, l1: Affine | None = None
             ) -> dict[str, Affine] | None:
        """Loop variable → unknown for the loops around ``acc``, their bounds constrained.
        Loops before position ``pos`` are common to both sides; at ``pos`` side "2" is a later
        iteration than ``l1``. None when the tested loop's step is unknown."""
        scope: dict[str, Affine] = {}
        for q, li in enumerate(acc.loops):
            lp = self.loops[li]
            name = f"c:{li}" if q < pos else f"{side}:{li}"
            var = Affine({name: 1})
            if q == pos and lp.step is None:
                return None
            if q == pos and side == "2" and l1 is not None:
                self.eqs.append(var - l1 - Affine({_D: lp.step}))
                self.ineqs.append(Affine({_D: 1}, -1))
            changed = self.changed_in(lp)
            if lp.var not in changed and name not in self.seen:
                self.seen.add(name)
                self.bounds(lp, var, name, scope, changed | self.other_vars(acc))
            scope[lp.var] = var
        return scope

    def other_vars(self, acc: Access) -> set[str]:
        mine = {self.loops[li].var for li in acc.loops}
        return {lp.var for lp in self.loops} - mine

    def bounds(self, lp: Loop, var: Affine, name: str, scope: dict[str, Affine],
               unknown: set[str]) -> None:
        if not lp.step:
            return
        lo = self.term(lp.div_lower, scope, unknown)
        hi = self.term(lp.div_upper, scope, unknown)
        if lo is not None:
            t = Affine({f"{name}:t": 1})
            self.eqs.append(var - lo - t.scale(lp.step))
            self.ineqs.append(t)
        if hi is not None:
            self.ineqs.append(hi - var - Affine(const=1) if lp.step > 0
                              else var - hi - Affine(const=1))


def nonnegative(acc: Access, k: int, loops: list[Loop]) -> bool:
    """Whether subscript ``k`` of ``acc`` is ≥ 0 in every iteration that runs ``acc`` (proved
    from its loops' bounds; other names are any integer)."""
    if k >= len(acc.divs) or acc.divs[k] is None:
        return False
    system = _System(loops, set())
    scope = system.bind(acc, "1", -1)
    if scope is None:
        return False
    f = system.term(acc.divs[k], scope, system.other_vars(acc))
    if f is None:
        return False
    return infeasible(system.eqs, [*system.ineqs, f.scale(-1) + Affine(const=-1)])


def disjoint(a: Access, b: Access, loops: list[Loop], L: Loop, pos: int,
             written: set[str]) -> bool:
    """True when ``a`` in one iteration of ``L`` and ``b`` in a later one (same iteration of
    every loop around ``L``) provably never touch the same element; ``pos``: ``L``'s place in
    their loop lists; ``written``: names that change inside ``L`` (and loop variables)."""
    if len(a.divs) != len(b.divs) or not a.divs:
        return False
    system = _System(loops, written)
    s1 = system.bind(a, "1", pos)
    if s1 is None or L.var not in s1:
        return False
    s2 = system.bind(b, "2", pos, s1[L.var])
    if s2 is None:
        return False
    eqs = []
    for k, (fa, fb) in enumerate(zip(a.divs, b.divs, strict=True)):
        ta = system.term(fa, s1, written - set(s1))
        tb = system.term(fb, s2, written - set(s2))
        if ta is None or tb is None:
            continue
        if not (nonnegative(a, k, loops) and nonnegative(b, k, loops)):
            continue
        eqs.append(ta - tb)
    if not eqs:
        return False
    return infeasible([*system.eqs, *eqs], system.ineqs)
