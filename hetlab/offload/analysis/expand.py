"""Scalar temporaries of a normalized nest expanded to temporary arrays.

Split from :mod:`.contraction`: :func:`expand_scalars` rewrites a
:class:`~.tensor.TensorNest` in place (``s = 0.0; s += …; C[i, j] = s`` → ``_hb0[i, j]``).
"""

from __future__ import annotations

import ast

from .tensor import TEMP_PREFIX, Ref, Stmt, TensorNest, Term

__all__ = ["expand_scalars"]


def expand_scalars(nest: TensorNest) -> bool:
    """Scalar temporaries → temporary arrays; read-only scalars → coefficients. False when a
    scalar is used in a way this cannot express."""
    firsts: dict[str, Stmt] = {}
    for s in nest.stmts:
        if not s.out.idx and s.out.name not in firsts:
            firsts[s.out.name] = s
    temps = {n: f"{TEMP_PREFIX}{k}" for k, n in enumerate(sorted(
        n for n, s in firsts.items() if s.op == "="))}
    for name, first in firsts.items():
        if name in temps:
            if any(r.name == name for r in first.reads):
                return False  # ``c = d * c + x[i]``: the previous iteration's value
            where = first.loops
            writers = [s.loops[:len(where) + 1] for s in nest.stmts if s.out.name == name]
            for n, s in enumerate(nest.stmts):
                uses = s.out.name == name or any(r.name == name for r in s.reads)
                if uses and s.loops[:len(where)] != where:
                    return False  # used outside the loops of its first assignment
                if uses and n < nest.stmts.index(first) and s is not first:
                    return False  # read before it is set: the previous iteration's value
                if any(r.name == name for r in s.reads) and s.out.name != name \
                        and s.loops != where and s.loops[:len(where) + 1] in writers:
                    return False  # read where it is being accumulated: not one value
        else:  # accumulated into: only `+=` sums, never read by another statement
            for s in nest.stmts:
                if s.out.name == name and s.op != "+=":
                    return False
                if any(r.name == name for r in s.reads) and s.out.name != name:
                    return False
    nest.temps = temps
    depth = {n: len(firsts[n].loops) for n in temps}

    def fix(r: Ref, vs: tuple[str, ...]) -> Ref:
        return Ref(temps[r.name], vs[:depth[r.name]]) if r.name in temps else r

    for s in nest.stmts:
        s.out = fix(s.out, s.vars)
        s.reads = tuple(fix(r, s.vars) for r in s.reads)
        if s.terms is None:
            continue
        divs = {n.id for t in s.terms for d in t.div for n in ast.walk(ast.parse(d))
                if isinstance(n, ast.Name)}
        if divs & (set(temps) | nest.written):
            s.terms = None  # divided by a temporary: kept as written (an elementwise map)
            continue
        terms = []
        for t in s.terms:
            coef, refs = list(t.coef), []
            for r in t.refs:
                if r.idx or r.name in temps:
                    refs.append(fix(r, s.vars))
                elif r.name in nest.written:
                    return False  # a scalar that changes inside the nest
                else:
                    coef.append(r.name)
            terms.append(Term(tuple(coef), tuple(refs), t.div))
        s.terms = terms
    for s in nest.stmts:
        if s.scale is not None and ({n.id for n in ast.walk(ast.parse(s.scale))
                                     if isinstance(n, ast.Name)} & nest.written):
            return False
    return True
