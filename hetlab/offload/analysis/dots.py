"""``np.dot`` of two vectors (or ``np.sum`` of one) inside a loop, read as the sum it computes
(for block matching).

``for i in range(n): y[i] = np.dot(A[i, :], x)`` is a matrix-vector product written one row at
a time; as a loop nest it is ``y[i] = 0; for k: y[i] += A[i, k] * x[k]``, which the catalogue
recognizes (:mod:`.catalogue`: one GEMV instead of ``n`` short dots, each a call with slices).
:func:`expand_dots` rewrites a copy of a nest that way so that :func:`~.blocks.match_nest` can
try it; the nest itself is untouched (a block replaces it whole, or nothing changes).

Only when both operands are provably vectors, from the ranks of the function's arrays (known
when ``search`` passes its arguments, ``analyze(fn, arrays={"A": 2, …})``): a 1-D array by
name or as ``x[:]``, or a row of a 2-D one, ``A[i]`` or ``A[i, :]`` (``i`` a plain name or
constant). The sum runs over the first operand's length (``A.shape[1]``, ``x.shape[0]``);
NumPy requires both lengths equal, so on valid arguments the results are the same (for
operands of unequal length ``np.dot`` raises and the block may not). The statement is
``t = np.dot(u, v)`` or ``t += np.dot(u, v)`` (``t`` a name or an element of an array that is
not an operand: ``x[i] = np.dot(A[i], x)`` reads the old ``x[i]``), nothing else around the
call. ``np.sum(u)`` of one vector the same way (``s = 0.0; for k: s += u[k]``: row sums).

>>> import ast
>>> src = '''
... for i in range(A.shape[0]):
...     y[i] = np.dot(A[i, :], x)
... '''
>>> print(ast.unparse(expand_dots(ast.parse(src).body[0], {"A": 2, "x": 1, "y": 1})))
for i in range(A.shape[0]):
    y[i] = 0.0
    for _hd0 in range(A.shape[1]):
        y[i] += A[i, _hd0] * x[_hd0]
>>> expand_dots(ast.parse(src).body[0], {"A": 3, "x": 1, "y": 1}) is None  # A[i, :] 2-D
True
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Mapping

from ..front.calls import np_call_chain

__all__ = ["expand_dots"]


def _is_np(node: ast.AST, name: str, nargs: int) -> bool:
    """``node`` calls ``np.<name>`` (or ``numpy.<name>``) with ``nargs`` positional arguments."""
    return isinstance(node, ast.Call) and len(node.args) == nargs and not node.keywords \
        and isinstance(node.func, ast.Attribute) \
        and np_call_chain(node.func, {}) == ["numpy", name]


def _full(s: ast.expr) -> bool:
    return isinstance(s, ast.Slice) and s.lower is None and s.upper is None and s.step is None


def _vector(e: ast.expr, ndims: Mapping[str, int]) -> tuple[str, list[ast.expr], str] | None:
    """(array, fixed leading subscripts, length text) of a vector operand, else None."""
    if isinstance(e, ast.Name) and ndims.get(e.id) == 1:
        return e.id, [], f"{e.id}.shape[0]"
    if not (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name)):
        return None
    name, parts = e.value.id, (list(e.slice.elts) if isinstance(e.slice, ast.Tuple)
                               else [e.slice])
    nd = ndims.get(name)
    if nd == 1 and len(parts) == 1 and _full(parts[0]):
        return name, [], f"{name}.shape[0]"
    if nd == 2 and isinstance(parts[0], (ast.Name, ast.Constant)) \
            and (len(parts) == 1 or (len(parts) == 2 and _full(parts[1]))):
        return name, [parts[0]], f"{name}.shape[1]"
    return None


def expand_dots(root: ast.For, ndims: Mapping[str, int]) -> ast.For | None:
    """A copy of ``root`` with each statement ``t = np.dot(u, v)`` / ``t += np.dot(u, v)`` of
    two vectors written as its loop (module docstring); None when there is none."""
    if not ndims:
        return None
    new = copy.deepcopy(root)
    count = 0

    def visit(stmts: list[ast.stmt]) -> list[ast.stmt]:
        nonlocal count
        out: list[ast.stmt] = []
        for s in stmts:
            for field in ("body", "orelse"):
                inner = getattr(s, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    setattr(s, field, visit(inner))
            value = s.value if isinstance(s, (ast.Assign, ast.AugAssign)) else None
            target = (s.targets[0] if isinstance(s, ast.Assign) and len(s.targets) == 1
                      else s.target if isinstance(s, ast.AugAssign) else None)
            ops = [_vector(a, ndims) for a in value.args  # type: ignore[union-attr]
                   ] if _is_np(value, "dot", 2) or _is_np(value, "sum", 1) else []
            base = target.value if isinstance(target, ast.Subscript) else target
            if not ops or None in ops or not isinstance(base, ast.Name) \
                    or base.id in {o[0] for o in ops if o is not None} \
                    or (isinstance(s, ast.AugAssign) and not isinstance(s.op, ast.Add)):
                out.append(s)
                continue
            k = f"_hd{count}"
            count += 1
            length = ops[0][2]  # type: ignore[index]
            elems = [f"{x}[{', '.join([*map(ast.unparse, f), k])}]"
                     for x, f, _ in ops]  # type: ignore[misc]
            t = ast.unparse(target)
            if isinstance(s, ast.Assign):
                out.append(ast.parse(f"{t} = 0.0").body[0])
            out.append(ast.parse(f"for {k} in range({length}):\n"
                                 f"    {t} += {' * '.join(elems)}").body[0])
        return out

    new.body = visit(new.body)
    return new if count else None
