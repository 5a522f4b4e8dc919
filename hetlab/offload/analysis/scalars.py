"""Scalars in a loop: private (written before read in every iteration), reduction, or carried.

Upward-exposed reads are found by a walk that tracks the names definitely assigned so far; an
``if`` defines what both branches define, a loop body defines nothing for what follows it (it
may run zero times).
"""

from __future__ import annotations

import ast

from ..front.walk import exits_iteration

__all__ = ["exposed_reads", "written_names", "reduction_op", "update_op", "live_after",
           "exits_iteration", "breaks_out"]

_RED_OPS = {ast.Add: "+", ast.Sub: "+", ast.Mult: "*"}


def _loads(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)}


def _stores(target: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Store)}


def exposed_reads(stmts: list[ast.stmt], defined: set[str],
                  runs_once: frozenset[int] = frozenset()) -> tuple[set[str], set[str]]:
    """Names read before any definite assignment in ``stmts``; and the names defined after.

    ``runs_once``: ``id``s of ``for`` statements known to run at least one iteration
    whenever they are reached; their target is defined after them (any other loop may run
    zero times and defines nothing for what follows it).

    The names defined after are those defined on every path out of ``stmts``, the early
    ones included: from a statement that may leave them (``if c: continue``, ``break``,
    ``return``), only what was defined before it counts (a ``t = 0.0`` after
    ``if z[i] > 0: continue`` does not kill ``t`` for the next iteration or after a
    ``break``)."""
    defined = set(defined)
    exposed: set[str] = set()
    on_exit: set[str] | None = None  # defined where a path may first leave ``stmts``
    for s in stmts:
        if on_exit is None and exits_iteration([s]):
            on_exit = set(defined)
        if isinstance(s, ast.Assign):
            exposed |= (_loads(s.value) | set().union(*(_loads(t) for t in s.targets))) - defined
            for t in s.targets:
                defined |= _stores(t)
        elif isinstance(s, ast.AugAssign):
            exposed |= (_loads(s.value) | _loads(s.target) | _stores(s.target)) - defined
            defined |= _stores(s.target)
        elif isinstance(s, ast.AnnAssign):
            exposed |= (_loads(s.value) | _loads(s.target)) - defined
            defined |= _stores(s.target)
        elif isinstance(s, ast.For):
            exposed |= _loads(s.iter) - defined
            inner, _ = exposed_reads(s.body, defined | _stores(s.target), runs_once)
            exposed |= inner
            if id(s) in runs_once:
                defined |= _stores(s.target)
        elif isinstance(s, ast.While):
            exposed |= _loads(s.test) - defined
            inner, _ = exposed_reads(s.body, defined, runs_once)
            exposed |= inner
        elif isinstance(s, ast.If):
            exposed |= _loads(s.test) - defined
            e1, d1 = exposed_reads(s.body, defined, runs_once)
            e2, d2 = exposed_reads(s.orelse, defined, runs_once)
            exposed |= e1 | e2
            defined = d1 & d2
        else:
            exposed |= _loads(s) - defined
    return exposed, defined if on_exit is None else on_exit & defined


def written_names(stmts: list[ast.stmt]) -> set[str]:
    """Every plain name assigned anywhere in ``stmts`` (loop targets included)."""
    out: set[str] = set()
    for s in stmts:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


def _is_name(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def update_op(s: ast.stmt, name: str) -> str | None:
    """The reduction operator of a statement ``name op= e`` / ``name = name op e`` / min/max."""
    if isinstance(s, ast.AugAssign) and _is_name(s.target, name):
        op = _RED_OPS.get(type(s.op))
        return op if op and name not in _loads(s.value) else None
    if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and _is_name(s.targets[0], name)):
        return None
    v = s.value
    if isinstance(v, ast.BinOp) and type(v.op) in _RED_OPS:
        if _is_name(v.left, name) and name not in _loads(v.right):
            return _RED_OPS[type(v.op)]
        if (_is_name(v.right, name) and name not in _loads(v.left)
                and isinstance(v.op, (ast.Add, ast.Mult))):
            return _RED_OPS[type(v.op)]
        return None
    if (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id in ("min", "max")
            and len(v.args) == 2 and not v.keywords):
        a, b = v.args
        if (_is_name(a, name) and name not in _loads(b)) or \
                (_is_name(b, name) and name not in _loads(a)):
            return v.func.id
    return None


def reduction_op(body: list[ast.stmt], name: str) -> str | None:
    """The operator (``+``, ``*``, ``min``, ``max``) when every use of ``name`` in ``body`` is an
    update ``name = name op e`` of one kind (``e`` not reading ``name``); otherwise None."""
    ops: set[str] = set()

    def visit(stmts: list[ast.stmt]) -> bool:
        for s in stmts:
            if isinstance(s, (ast.For, ast.While, ast.If)):
                head = s.iter if isinstance(s, ast.For) else s.test
                if name in _loads(head) or (isinstance(s, ast.For)
                                            and name in _stores(s.target)):
                    return False
                if not visit(s.body) or not visit(s.orelse):
                    return False
                continue
            uses = name in _loads(s) or name in written_names([s])
            if not uses:
                continue
            op = update_op(s, name)
            if op is None:
                return False
            ops.add(op)
        return True

    return ops.pop() if visit(body) and len(ops) == 1 else None


def live_after(path: list[tuple[list[ast.stmt], int, str]], name: str) -> bool:
    """Whether ``name``'s value after the statement at the end of ``path`` may be read later."""
    for stmts, k, owner in reversed(path):
        exposed, defined = exposed_reads(stmts[k + 1:], set())
        if name in exposed:
            return True
        if name in defined:
            return False
        if owner == "loop":  # the next iteration of the enclosing loop runs stmts[:k] first
            exposed, _ = exposed_reads(stmts[:k], set())
            if name in exposed:
                return True
    return False


def breaks_out(loop: ast.For | ast.While) -> bool:
    """Whether ``loop`` has a ``break`` of its own (not of a loop inside it): its later
    iterations may not run, so its writes cover no whole range."""
    def visit(node: ast.AST) -> bool:
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While, ast.FunctionDef,
                             ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        return any(visit(c) for c in ast.iter_child_nodes(node))

    return any(visit(s) for s in loop.body)
