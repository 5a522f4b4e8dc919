"""The data of a normalized loop nest (:mod:`.contraction`): array references, product terms,
statements and the nest; a module of its own so that the passes over a nest
(:mod:`.expand`, :mod:`.privatize`, :mod:`.legality`) import it without a cycle."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

__all__ = ["Ref", "Term", "Stmt", "TensorNest", "TEMP_PREFIX", "scaled"]

#: prefix of the temporary arrays scalar temporaries are expanded to
TEMP_PREFIX = "_hb"


@dataclass(frozen=True)
class Ref:
    """An array element ``name[idx]`` with plain loop-variable subscripts (``idx == ()`` and no
    ``fixed``: a scalar). ``fixed`` holds ``(position, variable)`` subscripts held fixed while
    the others vary (the row variable of a triangular nest, :mod:`.triangular`)."""

    name: str
    idx: tuple[str, ...]
    fixed: tuple[tuple[int, str], ...] = field(default=(), repr=False)

    @property
    def array(self) -> bool:
        """An array element (not a plain scalar name)."""
        return bool(self.idx or self.fixed)


@dataclass(frozen=True)
class Term:
    """``Π coef · Π refs / Π div``: scalar factors (source text), element factors, divisors."""

    coef: tuple[str, ...]
    refs: tuple[Ref, ...]
    div: tuple[str, ...] = ()


@dataclass
class Stmt:
    """One statement of the nest: ``out op Σ terms`` inside the loops ``loops`` (outer first).

    ``terms`` is None for a statement kept as written (``raw``, its AST in ``node``, the
    right-hand side of ``op`` in ``value``); ``scale`` is the scalar text of ``*=``/``/=``.
    """

    loops: tuple[int, ...]
    vars: tuple[str, ...]
    out: Ref
    op: str
    terms: list[Term] | None
    node: ast.stmt
    scale: str | None = None
    reads: tuple[Ref, ...] = ()
    value: ast.expr | None = None

    @property
    def summed(self) -> tuple[str, ...]:
        return tuple(v for v in self.vars if v not in self.out.idx)


@dataclass
class TensorNest:
    """The statements of one nest, the bounds ``(start, stop)`` of its variables (source
    text, step 1), the scalar temporaries expanded, the scalars accumulated into."""

    bounds: dict[str, tuple[str, str]]
    stmts: list[Stmt]
    fors: list[ast.For]
    temps: dict[str, str] = field(default_factory=dict)
    private: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    written: set[str] = field(default_factory=set)
    #: names known non-negative inside the nest (the row variable of a triangular nest)
    nonneg: frozenset[str] = frozenset()

    @property
    def scalar_outputs(self) -> set[str]:
        return {s.out.name for s in self.stmts if not s.out.array and s.out.name not in
                self.temps.values()}


def scaled(t: Term, text: str) -> str:
    """``text`` (a term's factors) times the term's scalar factors, divided by its divisors,
    in the term's order (``alpha * (A @ B) / n``)."""
    coef = [c for c in t.coef if c not in ("1", "1.0")]
    parts = [c if re.match(r"^[\w.]+$", c) else f"({c})" for c in coef]
    text = " * ".join([*parts, text] if text else parts) or "1.0"
    for d in t.div:
        text += f" / {d}" if re.match(r"^[\w.]+$", d) else f" / ({d})"
    return text
