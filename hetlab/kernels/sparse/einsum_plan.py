"""The sparse einsum planner: an expression over fiber trees becomes a loop nest of joins and
merges (FEASTA's view of sparse tensor algebra).

Each sparse operand is a fiber tree: CSR is a dense level (rows) over a compressed level
(columns); CSF adds a second compressed level. Loops run in the first sparse operand's level
order, then over the other operand's remaining indices (*concordant* traversal: every sparse
operand is walked root to leaf). Per loop index the planner picks how it is iterated:

* ``dense``  — ``range(n)``; dense operands are indexed directly (a *locate*);
* ``fiber``  — the compressed fiber of one sparse operand (its coordinates, in order);
* ``join``   — two sparse fibers co-iterated, keeping common coordinates only (an
  intersection by two-pointer merge: a product is zero where either factor is);

and how the output is produced:

* ``scalar`` / ``dense`` — accumulate into a number or a dense array;
* ``aligned`` — the output's pattern is a prefix of one sparse operand's tree: values land in
  that operand's positions (sampling, ``ij,ij->ij`` with a dense factor; ``ijk,k->ij``);
* ``append``  — a sparse output made by a join, emitted in sorted order;
* ``workspace`` — a *merge* (union) of fibers into a row accumulator, as in Gustavson's
  sparse × sparse product (``ik,kj->ij``): row i is the union of rows B[k, :] over A[i, k] ≠ 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...errors import InvalidInputError

__all__ = ["SUPPORTED", "Loop", "Plan", "canonical", "plan"]

#: expressions sparse.einsum accepts (any index letters with the same structure)
SUPPORTED = ("ij,j->i", "ik,kj->ij", "ij,ij->ij", "ij,ij->", "ijk,k->ij")


def _parse(expr: str) -> tuple[list[str], str]:
    text = expr.replace(" ", "") if isinstance(expr, str) else ""
    lhs, arrow, rhs = text.partition("->")
    ops = lhs.split(",")
    ok = (arrow and len(ops) == 2 and all(o and o.isalpha() and o.islower() for o in ops)
          and (rhs == "" or (rhs.isalpha() and rhs.islower()))
          and all(len(set(o)) == len(o) for o in [*ops, rhs])
          and set(rhs) <= set("".join(ops)))
    if not ok:
        raise InvalidInputError(
            f"sparse.einsum: subscripts must be two operands and an explicit output, e.g. "
            f"'ik,kj->ij'; got {expr!r}. Supported: {', '.join(SUPPORTED)}."
        )
    return ops, rhs


def canonical(expr: str) -> str:
    """Rename indices by first appearance (``"ab,b->a"`` → ``"ij,j->i"``)."""
    ops, rhs = _parse(expr)
    names: dict[str, str] = {}
    for c in "".join(ops):
        names.setdefault(c, "ijklmnop"[len(names)])
    return ",".join("".join(names[c] for c in o) for o in ops) + "->" + "".join(
        names[c] for c in rhs)


_SUPPORTED_CANONICAL = {canonical(e) for e in SUPPORTED}


@dataclass(frozen=True)
class Loop:
    """One loop of the nest: its index, how it is iterated, which sparse levels it walks."""

    index: str
    kind: str  # "dense" | "fiber" | "join"
    levels: tuple[tuple[str, int], ...]  # (operand, level) walked by this loop
    contracted: bool


@dataclass
class Plan:
    """A planned expression (canonical letters) for given operand kinds."""

    expr: str
    subs: tuple[str, str]
    sparse: tuple[bool, bool]
    loops: list[Loop]
    output: str
    mode: str
    aligned_with: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def names(self) -> tuple[str, str]:
        return ("A", "B")

    def describe(self) -> str:
        """The loop nest in words: joins, merges, fibers and locates."""
        kinds = [f"{n}[{s}]: {'sparse fiber tree' if sp else 'dense'}"
                 for n, s, sp in zip(self.names, self.subs, self.sparse, strict=True)]
        lines = [f"einsum {self.expr}   " + "; ".join(kinds)]
        for depth, lp in enumerate(self.loops):
            pad = "  " * (depth + 1)
            walked = ", ".join(f"{n} level {lv}" + (" (dense)" if lv == 0 else "")
                               for n, lv in lp.levels)
            what = {"dense": "dense loop" + (f" over {walked}" if walked else ""),
                    "fiber": f"walk the compressed fiber of {walked}",
                    "join": f"JOIN (intersection) of the fibers of {walked}"}[lp.kind]
            locate = [n for n, s, sp in zip(self.names, self.subs, self.sparse, strict=True)
                      if not sp and lp.index in s]
            if locate:
                what += f"; locate {', '.join(locate)} directly"
            role = "contracted (summed)" if lp.contracted else "output index"
            lines.append(f"{pad}for {lp.index}: {what}   [{role}]")
        out = {"scalar": "accumulate one number",
               "dense": f"accumulate into dense out[{self.output}]",
               "aligned": f"write into the positions of {self.aligned_with}'s tree (output "
                          f"pattern = {self.aligned_with}'s {self.output} fibers)",
               "append": "append (sorted) to a sparse output: pattern = the join",
               "workspace": f"MERGE (union) into a dense row workspace of out[{self.output[:1]},"
                            f" :], then emit its touched columns sorted"}[self.mode]
        lines.append("  " * (len(self.loops) + 1) + f"product → {out}")
        return "\n".join(lines + self.notes)


def plan(expr: str, sparse: tuple[bool, bool], ndims: tuple[int, int]) -> Plan:
    """Plan ``expr`` for operands that are sparse or dense with the given dimensions."""
    canon = canonical(expr)
    if canon not in _SUPPORTED_CANONICAL:
        raise InvalidInputError(
            f"sparse.einsum: {expr!r} is not supported; supported (any index letters): "
            f"{', '.join(SUPPORTED)}."
        )
    ops, rhs = _parse(canon)
    for name, s, nd, sp in zip(("A", "B"), ops, ndims, sparse, strict=True):
        if len(s) != nd:
            raise InvalidInputError(
                f"sparse.einsum: operand {name} has {nd} dimension(s) but subscripts {s!r}."
            )
        if sp and nd == 1:
            raise InvalidInputError(
                f"sparse.einsum: operand {name} is 1-D: pass it as a dense array."
            )
    if not any(sparse):
        raise InvalidInputError("sparse.einsum: at least one operand must be sparse "
                                "(use numpy.einsum for dense operands).")
    first = 0 if sparse[0] else 1
    order = list(ops[first]) + [c for c in ops[1 - first] if c not in ops[first]]
    for name, s, sp in zip(("A", "B"), ops, sparse, strict=True):
        if sp and [c for c in order if c in s] != list(s):
            raise InvalidInputError(
                f"sparse.einsum: operand {name}[{s}] would be walked against its level order "
                f"(loop order {''.join(order)}); transpose it first."
            )
    loops = []
    for x in order:
        levels = tuple((n, s.index(x)) for n, s, sp in zip(("A", "B"), ops, sparse, strict=True)
                       if sp and x in s)
        compressed = [lv for lv in levels if lv[1] > 0]
        kind = "dense" if not compressed else "fiber" if len(compressed) == 1 else "join"
        loops.append(Loop(x, kind, levels, x not in rhs))
    p = Plan(canon, (ops[0], ops[1]), sparse, loops, rhs, "dense")
    by_index = {lp.index: lp for lp in loops}
    if rhs == "":
        p.mode = "scalar"
    elif (len(rhs) >= 2 and order[0] == rhs[0] and [c for c in order if c in rhs] == list(rhs)
          and all(by_index[c].kind != "dense" for c in rhs[1:])):
        # a sparse output: its first index is the outermost loop, the rest come from fibers
        last = order.index(rhs[-1])
        if any(lp.contracted for lp in loops[:last]):
            p.mode = "workspace"
        elif any(by_index[c].kind == "join" for c in rhs[1:]):
            p.mode = "append"
        else:
            p.mode = "aligned"
            p.aligned_with = next(n for n, lv in by_index[rhs[1]].levels if lv > 0)
    return p
