"""Linearized subscripts read as mixed-radix digits: ``a[i * n + j]`` as ``a[i, j]``, radix ``n``.

Code ported from C, or written for flat buffers (images, matrices stored row after row), indexes
one dimension with a product of a loop variable and a loop-invariant symbol: ``out[i * n + j]``,
``K[i * p + k, j * q + l]``, ``u[(i + 1) * (w + 2) + j + 1]``, ``v[(i * n + j) * p + k]``. Such
a subscript is not affine (``i * n``), so the plain dependence test proves nothing about it.
:func:`to_strided` reads it as *digits* ``(d₀, d₁, …, dₘ)`` (affine forms) and *radices*
``(s₁, …, sₘ)`` (affine forms over loop-invariant symbols) with value
``(…(d₀·s₁ + d₁)·s₂ + …)·sₘ + dₘ``. Where every digit after the first provably stays in
``[0, sₜ − 1]`` and the first is never negative (checked by the analysis, which knows the loop
bounds: :mod:`..analysis.delinear`), two such subscripts are equal exactly when all their
digits are, and the digits can take the place of the one subscript in the dependence test.

Examples
--------
>>> import ast
>>> def digits(text, loop_vars):
...     f = to_strided(ast.parse(text, mode="eval").body, loop_vars)
...     return None if f is None else ([str(d) for d in f.digits], [str(r) for r in f.radices])
>>> digits("i * n + j", {"i", "j"})
(['i', 'j'], ['n'])
>>> digits("(i + 1) * (w + 2) + j + 1", {"i", "j"})
(['i + 1', 'j + 1'], ['w + 2'])
>>> digits("i * n * p + j * p + k", {"i", "j", "k"})
(['i', 'j', 'k'], ['n', 'p'])
>>> digits("n * i + j - n", {"i", "j"})
(['i - 1', 'j'], ['n'])
>>> digits("i * 4 + j", {"i", "j"}) is None  # affine already: the plain test handles it
True
>>> digits("i * j", {"i", "j"}) is None  # no loop-invariant radix
True
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from .affine import Affine, names_in, to_affine

__all__ = ["Strided", "to_strided"]

#: deepest nesting of radices read (``((i·n + j)·p + k)·q + l`` has three)
_MAX_RADICES = 4


@dataclass(frozen=True)
class Strided:
    """Digits ``(d₀, …, dₘ)`` and radices ``(s₁, …, sₘ)`` of a linearized subscript."""

    digits: tuple[Affine, ...]
    radices: tuple[Affine, ...]


def _terms(node: ast.AST, sign: int = 1) -> list[tuple[int, ast.AST]]:
    """``node`` as signed summands."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        right = -sign if isinstance(node.op, ast.Sub) else sign
        return _terms(node.left, sign) + _terms(node.right, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return _terms(node.operand, -sign)
    return [(sign, node)]


def _factors(node: ast.AST) -> list[ast.AST]:
    """``node`` as factors of a product."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) + _factors(node.right)
    return [node]


def _product(factors: list[ast.AST]) -> ast.AST:
    if not factors:
        return ast.Constant(1)
    out = factors[0]
    for f in factors[1:]:
        out = ast.BinOp(out, ast.Mult(), f)
    return out


def _sum(terms: list[tuple[int, ast.AST]]) -> ast.AST:
    out: ast.AST = ast.Constant(0)
    for sign, t in terms:
        out = ast.BinOp(out, ast.Add() if sign > 0 else ast.Sub(), t)
    return out


def _split(terms: list[tuple[int, ast.AST]], radix: ast.AST
           ) -> tuple[list[tuple[int, ast.AST]], list[tuple[int, ast.AST]]]:
    """Summands holding the factor ``radix`` (divided by it), and the others."""
    key = ast.dump(radix)
    high, low = [], []
    for sign, t in terms:
        fs = _factors(t)
        at = next((k for k, f in enumerate(fs) if ast.dump(f) == key), None)
        if at is None:
            low.append((sign, t))
        else:
            high.append((sign, _product(fs[:at] + fs[at + 1:])))
    return high, low


def to_strided(node: ast.AST, loop_vars: set[str], depth: int = 0) -> Strided | None:
    """The digits and radices of a linearized subscript, or None when it is not one.

    ``loop_vars``: the variables of the loops around the subscript; a radix reads none of
    them. Only subscripts that are not affine are read (an affine one needs no radix).
    """
    if depth == 0 and to_affine(node) is not None:
        return None
    if depth > _MAX_RADICES:
        return None
    terms = _terms(node)
    nonaffine = [t for _, t in terms if to_affine(t) is None]
    if not nonaffine:
        return None
    # a radix: a factor of every non-affine summand that reads no loop variable
    candidates: list[ast.AST] = []
    for f in _factors(nonaffine[0]):
        if names_in(f) & loop_vars or not names_in(f):
            continue
        if to_affine(f) is None:
            continue
        if all(any(ast.dump(g) == ast.dump(f) for g in _factors(t)) for t in nonaffine[1:]):
            candidates.append(f)
    for radix in candidates:
        high, low = _split(terms, radix)
        low_aff = to_affine(_sum(low))
        if low_aff is None:
            continue
        high_node = _sum(high)
        high_aff = to_affine(high_node)
        if high_aff is not None:
            head: Strided | None = Strided((high_aff,), ())
        else:
            head = to_strided(high_node, loop_vars, depth + 1)
        if head is None:
            continue
        radix_aff = to_affine(radix)
        assert radix_aff is not None
        return Strided((*head.digits, low_aff), (*head.radices, radix_aff))
    return None
