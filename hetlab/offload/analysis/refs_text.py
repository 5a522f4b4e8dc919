"""Element-level text of tensor references, shared by the panel and mirror forms of
triangular products (:mod:`.panels`, :mod:`.mirror`): subscripts in axis order, a bound's
offset from the row index, and the element statement a split or merged statement computes."""

from __future__ import annotations

import ast

from .catalogue import _minus
from .tensor import Ref, Term

__all__ = ["positions", "row_offset", "element", "written_as", "names_in"]


def positions(r: Ref) -> list[str]:
    """``r``'s subscripts in axis order, the fixed (row) ones included."""
    fixed = dict(r.fixed)
    free = iter(r.idx)
    return [fixed[d] if d in fixed else next(free) for d in range(len(r.idx) + len(fixed))]


def names_in(text: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(text, mode="eval")) if isinstance(n, ast.Name)}


def row_offset(text: str, row: str) -> int | None:
    """``c`` for a bound ``row`` or ``row + c``; None for any other text."""
    e = ast.parse(text, mode="eval").body
    if isinstance(e, ast.Name) and e.id == row:
        return 0
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) and isinstance(e.left, ast.Name) \
            and e.left.id == row and isinstance(e.right, ast.Constant) \
            and type(e.right.value) is int:
        return e.right.value
    return None


def element(r: Ref, origin: dict[str, dict[int, str]]) -> str:
    """Source text of the element ``r`` (shifted by ``origin`` for a panel's product)."""
    if not r.array:
        return r.name
    off = origin.get(r.name, {})
    subs = (_minus(x, off.get(d, "0")) for d, x in enumerate(positions(r)))
    return f"{r.name}[{', '.join(subs)}]"


def written_as(out: Ref, op: str, terms: list[Term],
               origin: dict[str, dict[int, str]]) -> ast.AugAssign | ast.Assign:
    """The element statement ``out op Σ terms``: what a statement split or merged here
    computes per element (the emitter's fallbacks read it, never the source's statement)."""
    parts = []
    for t in terms:
        coef = [c if c.replace("_", "").replace(".", "").isalnum() else f"({c})"
                for c in t.coef]
        text = " * ".join([*coef, *(element(r, origin) for r in t.refs)]) or "1.0"
        parts.append(text + "".join(f" / ({d})" for d in t.div))
    node = ast.parse(f"{element(out, origin)} {op} {' + '.join(parts)}").body[0]
    assert isinstance(node, (ast.AugAssign, ast.Assign))
    return node


