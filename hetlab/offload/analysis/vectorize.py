"""An elementwise loop statement as one NumPy array expression (broadcasting, ufuncs).

:func:`array_expr` rewrites the right-hand side of a statement kept as written by
:mod:`.contraction` (``Z[i, j] = (X[i, j] - mu[j]) / sd[j]``, ``v[j] += (X[i, j] - m[j]) ** 2``)
into an expression over whole arrays whose axes are the statement's loop variables in a chosen
order: each element read becomes its array (sliced to the loop ranges, transposed to that
order, ``None`` axes where it has no subscript), each call a NumPy ufunc. Only what keeps the
value of every element exactly as the loop computes it is rewritten: arithmetic
(``+ - * / **``, unary minus), constants and names invariant in the nest, and ``math``/NumPy
functions that are elementwise (``sqrt``, ``exp``, ``log``, ``abs``, …). ``max``/``min``
(their NaN order differs from ``np.maximum``), comparisons, conditionals and loop variables
used as values are refused: the caller keeps such a statement as a loop.

>>> import ast
>>> from hetlab.offload.analysis.contraction import Ref
>>> e = ast.parse("(X[i, j] - mu[j]) / math.sqrt(v[j])", mode="eval").body
>>> array_expr(e, ["i", "j"], lambda r: r.name, ("j", "i"))
'(X - mu[None, :]) / np.sqrt(v[None, :])'
>>> array_expr(e, ["j", "i"], lambda r: r.name, ("j", "i"))
'(X.T - mu[:, None]) / np.sqrt(v[:, None])'
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from .contraction import Ref

__all__ = ["array_expr", "UFUNCS"]

#: elementwise functions (as written) → the NumPy ufunc computing the same value per element
UFUNCS = {f"{mod}.{f}": f"np.{f}" for mod in ("np", "numpy", "math")
          for f in ("sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "log1p", "expm1")}
UFUNCS.update({"abs": "np.abs", "np.abs": "np.abs", "np.absolute": "np.abs",
               "math.fabs": "np.abs", "np.fabs": "np.abs"})
_OPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)


class _Refuse(ValueError):
    pass


class _Vec(ast.NodeTransformer):
    def __init__(self, axes: list[str], operand: Callable[[Ref], str],
                 loop_vars: tuple[str, ...]) -> None:
        self.axes, self.operand, self.loop_vars = axes, operand, loop_vars
        self.seen: list[set[str]] = []

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if not isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Constant, ast.expr_context,
                                 ast.operator, ast.unaryop)):
            raise _Refuse(type(node).__name__)
        if isinstance(node, ast.BinOp) and not isinstance(node.op, _OPS):
            raise _Refuse("operator")
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, (ast.USub, ast.UAdd)):
            raise _Refuse("operator")
        return super().generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.loop_vars:
            raise _Refuse("a loop variable used as a value")
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        raise _Refuse("attribute")

    def visit_Call(self, node: ast.Call) -> ast.AST:
        name = ast.unparse(node.func)
        if node.keywords:
            raise _Refuse("keywords")
        if name == "float" and len(node.args) == 1 and not any(
                isinstance(n, ast.Subscript) or (isinstance(n, ast.Name)
                                                 and n.id in self.loop_vars)
                for n in ast.walk(node.args[0])):
            return node  # a scalar conversion of an invariant
        if name not in UFUNCS or len(node.args) != 1:
            raise _Refuse(f"call {name}")
        return ast.Call(ast.parse(UFUNCS[name], mode="eval").body,
                        [self.visit(node.args[0])], [])

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not isinstance(node.value, ast.Name) or not all(
                isinstance(p, ast.Name) and p.id in self.axes for p in parts):
            raise _Refuse("subscript")
        idx = tuple(p.id for p in parts)  # type: ignore[union-attr]
        self.seen.append(set(idx))
        text = self.operand(Ref(node.value.id, idx))
        want = [v for v in self.axes if v in idx]
        perm = tuple(idx.index(v) for v in want)
        if perm != tuple(range(len(perm))):
            text = f"{text}.T" if len(perm) == 2 else f"np.transpose({text}, {perm})"
        if len(want) < len(self.axes):
            text += "[" + ", ".join(":" if v in idx else "None" for v in self.axes) + "]"
        return ast.parse(text, mode="eval").body


def array_expr(value: ast.expr, axes: list[str], operand: Callable[[Ref], str],
               loop_vars: tuple[str, ...]) -> str | None:
    """``value`` as a NumPy expression whose axes are ``axes``, or None when it cannot be.

    Parameters
    ----------
    value : ast.expr
        Right-hand side of a loop statement; array reads are ``X[v1, v2, …]`` with loop
        variables as subscripts (temporaries already written as their elements).
    axes : list of str
        The loop variables, in the axis order of the result.
    operand : callable (Ref) -> str
        Source text of the whole array an element read stands for (sliced to the loop ranges).
    loop_vars : tuple of str
        Every loop variable of the nest (none may be used as a value).

    Returns
    -------
    str or None
        The expression; None when a construct is not elementwise-exact, or when no array read
        spans every axis (the result would be a broadcast larger than every operand).
    """
    v = _Vec(axes, operand, loop_vars)
    try:
        out = v.visit(ast.parse(ast.unparse(value), mode="eval").body)
    except _Refuse:
        return None
    if not any(s == set(axes) for s in v.seen):
        return None
    return ast.unparse(out)
