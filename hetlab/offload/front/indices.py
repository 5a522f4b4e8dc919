"""Index scalars substituted into the subscripts and inner bounds that read them.

Scientists often name an index before using it::

    for i in range(m):
        base = i * n
        for j in range(n):
            idx = base + j
            out[idx] = A[i, j] * 2.0

The dependence test sees ``out[idx]``, a scalar assigned in the loop, and proves nothing.
:func:`substitute_indices` rewrites, in place, each read of such a scalar inside a subscript,
inside the ``range(...)`` of an inner ``for`` loop or inside the definition of a later index
scalar with the expression that defines it (outer loops first), so the
analysis sees ``out[i * n + j]`` (which :mod:`.strided` reads as two digits) and
``range(i + 1, n)`` (a triangular bound) where the source says ``out[idx]`` and
``range(lo, n)``. The assignment stays (the scalar may be read elsewhere), so the function
computes what it did. A read is replaced when:

- the assignment ``name = expr`` is a statement of a ``for`` loop's body, or of a branch or
  body of a statement inside one (an ``if``); ``expr`` is built from integer constants,
  names, ``+ - * // %``, unary minus, ``len(x)`` and ``x.shape[c]``, and reads neither
  ``name`` nor an array element;
- the read is in a later statement of the same statement list, and neither that statement
  nor any statement between stores ``name`` or a name ``expr`` reads (at any depth: an inner loop, a
  tuple target, an augmented assignment, a ``for`` target, ``del``).

>>> t = ast.parse('''
... def f(A, out):
...     m, n = A.shape
...     for i in range(m):
...         base = i * n
...         for j in range(n):
...             idx = base + j
...             out[idx] = A[i, j] * 2.0
... ''').body[0]
>>> substitute_indices(t)
2
>>> print(ast.unparse(t.body[1]))
for i in range(m):
    base = i * n
    for j in range(n):
        idx = i * n + j
        out[i * n + j] = A[i, j] * 2.0
"""

from __future__ import annotations

import ast
import copy

__all__ = ["stored_names", "substitute_indices"]

_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod)


def _index_expr(node: ast.AST) -> bool:
    """Whether ``node`` is an integer index expression of the allowed kinds."""
    if isinstance(node, ast.Constant):
        return type(node.value) is int
    if isinstance(node, ast.Name):
        return True
    if isinstance(node, ast.BinOp):
        return isinstance(node.op, _OPS) and _index_expr(node.left) and _index_expr(node.right)
    if isinstance(node, ast.UnaryOp):
        return isinstance(node.op, (ast.USub, ast.UAdd)) and _index_expr(node.operand)
    if isinstance(node, ast.Call):
        return (isinstance(node.func, ast.Name) and node.func.id == "len"
                and len(node.args) == 1 and not node.keywords
                and isinstance(node.args[0], ast.Name))
    if isinstance(node, ast.Subscript):  # x.shape[c]
        return (isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
                and isinstance(node.value.value, ast.Name)
                and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int)
    return False


def stored_names(node: ast.AST) -> set[str]:
    """Names stored anywhere in ``node`` (assignments, loop targets, ``del``, walrus)."""
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            out.update(n.names)
    return out


class _Into(ast.NodeTransformer):
    """Replace loads of ``name`` by ``expr`` inside subscripts and inner ``range`` calls."""

    def __init__(self, name: str, expr: ast.AST) -> None:
        self.name, self.expr, self.count, self.depth = name, expr, 0, 0

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if self.depth and node.id == self.name and isinstance(node.ctx, ast.Load):
            self.count += 1
            return copy.deepcopy(self.expr)
        return node

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        node.value = self.visit(node.value)
        self.depth += 1
        node.slice = self.visit(node.slice)
        self.depth -= 1
        return node

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and _index_expr(node.value):  # a later index scalar: ``idx = base + j``
            self.depth += 1
            node.value = self.visit(node.value)
            self.depth -= 1
            return node
        return self.generic_visit(node)

    def visit_For(self, node: ast.For) -> ast.AST:
        it = node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            self.depth += 1
            it.args = [self.visit(a) for a in it.args]
            self.depth -= 1
        node.body = [self.visit(s) for s in node.body]
        node.orelse = [self.visit(s) for s in node.orelse]
        return node


def _bodies_in_loops(tree: ast.FunctionDef) -> list[list[ast.stmt]]:
    """The statement lists inside ``for`` loops (their bodies, and the branches and bodies of
    the statements in them), outer ones first."""
    out: list[list[ast.stmt]] = []
    for loop in [n for n in ast.walk(tree) if isinstance(n, ast.For)]:
        for node in ast.walk(loop):
            if node is loop:
                out.append(loop.body)
                continue
            for name in ("body", "orelse", "finalbody"):
                block = getattr(node, name, None)
                if isinstance(block, list) and block and isinstance(block[0], ast.stmt) \
                        and not any(block is b for b in out):
                    out.append(block)
    return out


def substitute_indices(tree: ast.FunctionDef) -> int:
    """Rewrite, in place, reads of index scalars in ``tree``'s loop bodies (module
    docstring); the number of reads replaced."""
    done = 0
    for body in _bodies_in_loops(tree):
        for k, st in enumerate(body):
            if not (isinstance(st, ast.Assign) and len(st.targets) == 1
                    and isinstance(st.targets[0], ast.Name) and _index_expr(st.value)):
                continue
            name = st.targets[0].id
            reads = {n.id for n in ast.walk(st.value) if isinstance(n, ast.Name)}
            if name in reads:
                continue
            for later in body[k + 1:]:
                if stored_names(later) & (reads | {name}):
                    break
                into = _Into(name, st.value)
                into.visit(later)
                done += into.count
    if done:
        ast.fix_missing_locations(tree)
    return done
