"""Every statement list of a syntax tree (bodies and ``else`` branches), for the rewrites
and checks that look at a statement together with the ones after it in its block."""

from __future__ import annotations

import ast
from collections.abc import Iterator

__all__ = ["statement_lists"]


def statement_lists(tree: ast.AST) -> Iterator[list[ast.stmt]]:
    """Each ``body`` and ``orelse`` list under ``tree`` (the lists themselves: a caller may
    replace an element in place).

    >>> t = ast.parse("for i in x:\\n    if i:\\n        a = 1\\n    else:\\n        b = 2")
    >>> [len(b) for b in statement_lists(t)]
    [1, 1, 1, 1]
    """
    for node in ast.walk(tree):
        for field_ in ("body", "orelse"):
            block = getattr(node, field_, None)
            if isinstance(block, list) and block:
                yield block
