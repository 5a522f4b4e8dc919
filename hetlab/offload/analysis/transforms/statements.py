"""Finding and replacing a statement (by identity) in a function's AST, for the rewrites."""

from __future__ import annotations

import ast

__all__ = ["container", "splice"]


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
