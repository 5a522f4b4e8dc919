"""Affine forms ``c0 + Σ c_v·v`` read from subscript and bound expressions."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

__all__ = ["Affine", "to_affine", "names_in"]


@dataclass(frozen=True)
class Affine:
    """An integer affine form: ``const + Σ coefs[name]·name``.

    ``opaque`` maps the name of a loop-invariant expression that is not itself affine (``n``,
    ``A.shape[0]``) to the plain names it reads, so a test can check those stay unchanged.
    """

    coefs: dict[str, int] = field(default_factory=dict)
    const: int = 0
    opaque: dict[str, frozenset[str]] = field(default_factory=dict)

    def __add__(self, other: Affine) -> Affine:
        coefs = dict(self.coefs)
        for k, v in other.coefs.items():
            coefs[k] = coefs.get(k, 0) + v
        return Affine({k: v for k, v in coefs.items() if v}, self.const + other.const,
                      {**self.opaque, **other.opaque})

    def scale(self, c: int) -> Affine:
        if c == 0:
            return Affine()
        return Affine({k: v * c for k, v in self.coefs.items()}, self.const * c, self.opaque)

    def __sub__(self, other: Affine) -> Affine:
        return self + other.scale(-1)

    def substitute(self, name: str, expr: Affine) -> Affine:
        """Replace ``name`` by ``expr``."""
        c = self.coefs.get(name, 0)
        if not c:
            return self
        rest = Affine({k: v for k, v in self.coefs.items() if k != name}, self.const,
                      self.opaque)
        return rest + expr.scale(c)

    def is_const(self) -> bool:
        return not self.coefs

    def __str__(self) -> str:
        parts = [f"{'' if c == 1 else '-' if c == -1 else c}{k}" for k, c in self.coefs.items()]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts).replace("+ -", "- ")


def names_in(node: ast.AST) -> set[str]:
    """Plain names read anywhere in an expression."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _opaque_ok(node: ast.AST) -> bool:
    """Loop-invariant-looking expressions kept as opaque symbols: shapes, len(), plain names."""
    for n in ast.walk(node):
        if isinstance(n, ast.Subscript) and not isinstance(n.value, ast.Attribute):
            return False  # an array element: not invariant
        if isinstance(n, ast.Slice):
            return False
        if isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name)
                                            and n.func.id in ("len", "int")):
            return False
    return True


def to_affine(node: ast.AST) -> Affine | None:
    """The affine form of an integer expression, or None when it is not affine."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return Affine(const=node.value)
    if isinstance(node, ast.Name):
        return Affine({node.id: 1})
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = to_affine(node.operand)
        return None if inner is None else inner.scale(-1)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
        return to_affine(node.operand)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
        left, right = to_affine(node.left), to_affine(node.right)
        if left is None or right is None:
            return None
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if left.is_const() and not left.opaque:
            return right.scale(left.const)
        if right.is_const() and not right.opaque:
            return left.scale(right.const)
        return None
    if isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)) and _opaque_ok(node):
        key = ast.unparse(node)
        return Affine({key: 1}, 0, {key: frozenset(names_in(node))})
    return None
