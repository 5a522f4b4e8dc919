"""``sum(<generator expression>)`` (and ``any``/``all`` of one) as an accumulating loop.

Python code sums with a generator expression (``out[i] = sum(A[i, k] * x[k] for k in
range(m))``); numba cannot compile one (``UnsupportedError``: the whole function then runs as
Python) and the analysis cannot look inside it. :func:`sums_as_loops` rewrites, in place, such
a call into the loop Python runs for it, placed before the statement that holds it::

    _hl_g0 = 0
    for _hl_g0_k in range(m):
        _hl_g0 += A[i, _hl_g0_k] * x[_hl_g0_k]
    out[i] = _hl_g0

Python's ``sum`` starts from the integer 0 and adds the items in order, as the loop does; the
generator's variables are renamed (they do not leak into the function, as in Python), several
``for`` clauses become nested loops and ``if`` clauses an ``if`` around the update.
``any(e for v in x)`` starts from ``False`` and becomes ``True`` at the first true ``e``, then
``break`` (as Python stops there); ``all`` starts from ``True`` (one ``for`` clause only: a
``break`` leaves one loop). An iterable that is neither a name nor a call (``A[i]``) is bound
to a name first. Rewritten only when the function is the builtin, the call has
that one argument, and evaluating it before its statement cannot change what the statement
does: the statement is an assignment, an augmented assignment, a ``return``, an expression,
an ``if`` test or a ``for`` loop's iterable (evaluated once), the call is not under a
conditional expression, ``and``/``or``, a lambda or another comprehension, and the generator
holds no comprehension, lambda or ``:=`` of its own.
"""

from __future__ import annotations

import ast
import builtins
import copy
from typing import Any

from .walk import rewrite_statements

__all__ = ["sums_as_loops"]

_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp,
           ast.NamedExpr)


#: builtins rewritten, with the values their accumulator starts from
_REDUCERS = {"sum": 0, "any": False, "all": True}


def _is_builtin_sum(call: ast.Call, namespace: dict[str, Any], local: set[str]) -> bool:
    """``sum``/``any``/``all`` (the builtins) of one generator expression (``any``/``all``:
    of one ``for`` clause, which a ``break`` leaves)."""
    f = call.func
    if not (isinstance(f, ast.Name) and f.id in _REDUCERS and f.id not in local
            and namespace.get(f.id, getattr(builtins, f.id)) is getattr(builtins, f.id)
            and len(call.args) == 1 and not call.keywords
            and isinstance(call.args[0], ast.GeneratorExp)):
        return False
    return f.id == "sum" or len(call.args[0].generators) == 1


def _candidates(roots: list[ast.AST], namespace: dict[str, Any],
                local: set[str]) -> list[ast.Call]:
    """``sum(<genexpr>)`` calls under ``roots`` that are evaluated unconditionally, once."""
    found: list[ast.Call] = []

    def walk(n: ast.AST) -> None:
        if isinstance(n, ast.Call) and _is_builtin_sum(n, namespace, local):
            gen = n.args[0]
            if not any(isinstance(m, _SCOPES) for m in ast.walk(gen) if m is not gen):
                found.append(n)
            return
        if isinstance(n, (*_SCOPES, ast.IfExp, ast.BoolOp)):
            return
        for c in ast.iter_child_nodes(n):
            walk(c)

    for r in roots:
        walk(r)
    return found


def _heads(stmt: ast.stmt) -> list[ast.AST] | None:
    """The parts of ``stmt`` evaluated once before anything else it does, or None."""
    if isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Return, ast.Expr)):
        return [stmt]
    if isinstance(stmt, ast.If):
        return [stmt.test]
    if isinstance(stmt, ast.For):
        return [stmt.iter]
    return None


class _Rename(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
        return node


def _loop_for(call: ast.Call, acc: str) -> list[ast.stmt]:
    gen = copy.deepcopy(call.args[0])
    assert isinstance(gen, ast.GeneratorExp)
    names: dict[str, str] = {}
    loops: list[tuple[ast.expr, ast.expr, list[ast.expr]]] = []
    for comp in gen.generators:
        it = _Rename(dict(names)).visit(comp.iter)  # earlier clauses' variables only
        for n in ast.walk(comp.target):
            if isinstance(n, ast.Name):
                names[n.id] = f"{acc}_{n.id}"
        rename = _Rename(dict(names))
        loops.append((rename.visit(comp.target), it, [rename.visit(c) for c in comp.ifs]))
    kind = call.func.id  # type: ignore[attr-defined]
    elt = _Rename(names).visit(gen.elt)
    body: list[ast.stmt]
    if kind == "sum":
        body = [ast.AugAssign(ast.Name(acc, ast.Store()), ast.Add(), elt)]
    else:  # any: True at the first true item; all: False at the first false one
        test = elt if kind == "any" else ast.UnaryOp(ast.Not(), elt)
        body = [ast.If(test, [ast.Assign([ast.Name(acc, ast.Store())],
                                         ast.Constant(kind == "any")), ast.Break()], [])]
    for k, (target, it, ifs) in reversed(list(enumerate(loops))):
        for cond in reversed(ifs):
            body = [ast.If(cond, body, [])]
        if isinstance(it, (ast.Name, ast.Call)):
            body = [ast.For(target, it, body, [])]
        else:  # ``for v in A[i]``: a name, which :mod:`.iterables` and :mod:`.views` read
            seq = f"{acc}_seq{k}"
            body = [ast.Assign([ast.Name(seq, ast.Store())], it),
                    ast.For(target, ast.Name(seq, ast.Load()), body, [])]
    return [ast.Assign([ast.Name(acc, ast.Store())], ast.Constant(_REDUCERS[kind])), *body]


def sums_as_loops(tree: ast.FunctionDef, namespace: dict[str, Any]) -> int:
    """Rewrite, in place, the ``sum(<genexpr>)`` calls of ``tree`` (module docstring); the
    number rewritten.

    >>> t = ast.parse("def f(A, out):\\n    for i in range(A.shape[0]):\\n"
    ...               "        out[i] = sum(A[i, k] for k in range(A.shape[1]) if k % 2)\\n"
    ...               ).body[0]
    >>> sums_as_loops(t, {})
    1
    >>> print(ast.unparse(t))
    def f(A, out):
        for i in range(A.shape[0]):
            _hl_g0 = 0
            for _hl_g0_k in range(A.shape[1]):
                if _hl_g0_k % 2:
                    _hl_g0 += A[i, _hl_g0_k]
            out[i] = _hl_g0
    """
    local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Store)}
    local |= {a.arg for a in (*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs)}
    count = 0

    def rewrite(s: ast.stmt, before: list[ast.stmt]) -> list[ast.stmt] | None:
        nonlocal count
        heads = _heads(s)
        calls = _candidates(heads, namespace, local) if heads else []
        if not calls:
            return None
        out: list[ast.stmt] = []
        for call in calls:
            acc = f"_hl_g{count}"
            count += 1
            out += _loop_for(call, acc)
            # the call becomes the accumulator: replace it where it stands
            for parent in ast.walk(s):
                for field, value in ast.iter_fields(parent):
                    if value is call:
                        setattr(parent, field, ast.Name(acc, ast.Load()))
                    elif isinstance(value, list) and any(v is call for v in value):
                        setattr(parent, field, [ast.Name(acc, ast.Load()) if v is call
                                                else v for v in value])
        return [*out, s]

    tree.body = rewrite_statements(tree.body, rewrite)
    if count:
        ast.fix_missing_locations(tree)
    return count
