"""Finding and replacing a statement (by identity) in a function's AST, and renaming names in
it, for the rewrites."""

from __future__ import annotations

import ast

__all__ = ["container", "is_prange", "splice", "Rename"]


def is_prange(node: ast.AST) -> bool:
    """``node`` is a ``for … in prange(...)`` loop."""
    return isinstance(node, ast.For) and isinstance(node.iter, ast.Call) \
        and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "prange"


def container(stmts: list[ast.stmt], node: ast.stmt) -> list[ast.stmt] | None:
    """The statement list under ``stmts`` (bodies and ``else`` branches) that holds ``node``."""
    for s in stmts:
        if s is node:
            return stmts
        for name in ("body", "orelse"):
            inner = getattr(s, name, None)
            if isinstance(inner, list):
                found = container(inner, node)
                if found is not None:
                    return found
    return None


def splice(stmts: list[ast.stmt], node: ast.stmt, new: list[ast.stmt]) -> bool:
    """Replace ``node`` under ``stmts`` by the statements ``new``; False if it is not there."""
    box = container(stmts, node)
    if box is None:
        return False
    k = next(i for i, s in enumerate(box) if s is node)
    box[k:k + 1] = new
    return True


class Rename(ast.NodeTransformer):
    """Renames the plain names given (``{old: new}``), loads and stores alike."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.Name:
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
        return node
