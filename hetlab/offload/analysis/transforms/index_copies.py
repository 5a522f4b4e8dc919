"""Copies of a ``prange`` index that the body then changes, written as fresh values.

numba (0.68) copy-propagates ``t = i`` in a ``prange`` body and then refuses a later
``t = t + b`` (or ``t += 1``) as "Overwrite of parallel loop index" (UnsupportedRewriteError),
though Python only rebinds ``t``. ``t = i + 0`` is the same integer and a fresh value, so such
a copy is written that way (found while testing the index hoist,
``tests/test_offload_hoist.py``).
"""

from __future__ import annotations

import ast

from .statements import is_prange

__all__ = ["fresh_index_copies"]


def fresh_index_copies(func: ast.FunctionDef) -> list[str]:
    """Rewrite, in place, each ``t = i`` (``i`` a ``prange`` index) whose ``t`` the loop
    assigns again as ``t = i + 0``; one note per loop changed."""
    notes = []
    for node in [n for n in ast.walk(func) if is_prange(n)]:
        assert isinstance(node, ast.For)
        if not isinstance(node.target, ast.Name):
            continue
        index = node.target.id
        stores: dict[str, int] = {}
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                stores[n.id] = stores.get(n.id, 0) + 1
        done = []
        for s in ast.walk(node):
            if isinstance(s, ast.Assign) and len(s.targets) == 1 \
                    and isinstance(t := s.targets[0], ast.Name) and stores[t.id] > 1 \
                    and isinstance(s.value, ast.Name) and s.value.id == index:
                s.value = ast.BinOp(ast.Name(index, ast.Load()), ast.Add(), ast.Constant(0))
                done.append(t.id)
        if done:
            notes.append(f"prange over {index}: {', '.join(done)} = {index} written "
                         f"{index} + 0 (numba refuses a copy of the index assigned again)")
    return notes
