"""Integer forms with floor division and modulo by positive constants: ``e // c``, ``e % c``.

:func:`to_divform` reads an integer expression as an affine form over plain names, loop-invariant
opaque symbols (as :func:`~.affine.to_affine`) and *quotient atoms*: each ``e // c`` (``c`` a
positive integer constant, ``e`` itself such a form) is one atom ``q`` with the exact integer
meaning ``c·q ≤ e ≤ c·q + c − 1`` (Python's floor division, for either sign of ``e``), and
``e % c`` is ``e − c·(e // c)`` (Python's modulo by ``c > 0``: ``0 ≤ e % c ≤ c − 1``). Nothing
is approximated: the dependence tests (:mod:`..analysis.divdeps`) turn each atom into a fresh
integer unknown bound by those two inequalities.

The plain :class:`~.affine.Affine` forms the rest of the engine reads are unchanged (a subscript
``a[i // 2]`` stays non-affine there); these forms travel beside them (``Access.divs``,
``Loop.div_lower``/``div_upper``).

Examples
--------
>>> import ast
>>> f = to_divform(ast.parse("n - 1 - i % 4", mode="eval").body)
>>> sorted(f.form.coefs.items()), f.form.const
([('i', -1), ('n', 1), ('⌊i/4⌋', 4)], -1)
>>> f.quotients["⌊i/4⌋"]
(Affine(coefs={'i': 1}, const=0, opaque={}), 4)
>>> to_divform(ast.parse("i // k", mode="eval").body) is None  # divisor not a constant
True
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .affine import Affine, _opaque_ok, names_in

__all__ = ["DivForm", "to_divform", "has_quotients"]


@dataclass(frozen=True)
class DivForm:
    """``form`` (an :class:`Affine` whose keys may name quotient atoms) and ``quotients``:
    atom key → (numerator, positive divisor), inner atoms before the atoms that read them."""

    form: Affine
    quotients: dict[str, tuple[Affine, int]] = field(default_factory=dict)

    def combine(self, other: DivForm, form: Affine) -> DivForm:
        return DivForm(form, {**self.quotients, **other.quotients})


def has_quotients(*forms: DivForm | None) -> bool:
    """Whether any of ``forms`` holds a quotient atom."""
    return any(f is not None and f.quotients for f in forms)


def _const(f: DivForm) -> int | None:
    if f.form.is_const() and not f.form.opaque and not f.quotients:
        return f.form.const
    return None


def to_divform(node: ast.AST) -> DivForm | None:
    """The form of an integer expression with ``//`` and ``%`` by positive integer constants,
    or None when it is not one (a product of two unknowns, a division by a name, a float)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.FloorDiv, ast.Mod)):
        left, right = to_divform(node.left), to_divform(node.right)
        if left is None or right is None:
            return None
        c = _const(right)
        if c is None or c <= 0:
            return None
        num = left.form
        key = f"⌊{num}/{c}⌋"
        quotients = {**left.quotients, key: (num, c)}
        atom = Affine({key: 1})
        if isinstance(node.op, ast.FloorDiv):
            return DivForm(atom, quotients)
        return DivForm(num - atom.scale(c), quotients)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        left, right = to_divform(node.left), to_divform(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add):
            return left.combine(right, left.form + right.form)
        if isinstance(node.op, ast.Sub):
            return left.combine(right, left.form - right.form)
        cl, cr = _const(left), _const(right)
        if cl is not None:
            return DivForm(right.form.scale(cl), right.quotients)
        if cr is not None:
            return DivForm(left.form.scale(cr), left.quotients)
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = to_divform(node.operand)
        if inner is None or isinstance(node.op, ast.UAdd):
            return inner
        return DivForm(inner.form.scale(-1), inner.quotients)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return DivForm(Affine(const=node.value))
    if isinstance(node, ast.Name):
        return DivForm(Affine({node.id: 1}))
    if isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)) and _opaque_ok(node):
        key = ast.unparse(node)
        return DivForm(Affine({key: 1}, 0, {key: frozenset(names_in(node))}))
    return None
