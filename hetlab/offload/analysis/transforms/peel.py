"""Last-iteration peeling for scalars read after a parallel loop (lastprivate).

A loop whose only obstacle is a scalar it assigns on every path of every iteration and that
is read after the loop (``last = out[i]`` … ``return last``) is parallel once the scalar's
final value is the last iteration's: the numba variant runs iterations ``0 … T-2`` under
``prange`` with the scalar renamed to a name of their own (so the parallel region never
writes it), then the last iteration as written, which leaves every name as the sequential
loop does. The range's bounds and step are evaluated once, before either part, as Python
evaluates ``range(...)`` once.

>>> import ast
>>> node = ast.parse("for i in range(1, n):\\n    last = x[i] * 2.0\\n    out[i] = last").body[0]
>>> print("\\n".join(ast.unparse(s) for s in peel(node, ["last"], "L1")))
_hl_loL1 = 1
_hl_stL1 = 1
_hl_TL1 = len(range(_hl_loL1, n, _hl_stL1))
for _hl_kL1 in prange(_hl_TL1 - 1):
    i = _hl_loL1 + _hl_kL1 * _hl_stL1
    _hl_last_L1 = x[i] * 2.0
    out[i] = _hl_last_L1
for _hl_kL1 in range(max(_hl_TL1 - 1, 0), _hl_TL1):
    i = _hl_loL1 + _hl_kL1 * _hl_stL1
    last = x[i] * 2.0
    out[i] = last
"""

from __future__ import annotations

import ast
import copy

from .statements import Rename

__all__ = ["peel"]


def peel(node: ast.For, names: list[str], tag: str) -> list[ast.stmt]:
    """``node`` (``for v in range(...)``, constant nonzero step) as the parallel loop over all
    but the last iteration, ``names`` renamed in it (``v`` too when it is one of them: the
    index read after the loop), then the last iteration as written."""
    assert isinstance(node.iter, ast.Call) and isinstance(node.target, ast.Name)
    args = [ast.unparse(a) for a in node.iter.args]
    lower, upper, step = ("0", args[0], "1") if len(args) == 1 else (
        args[0], args[1], args[2] if len(args) == 3 else "1")
    lo, st, trip, k = f"_hl_lo{tag}", f"_hl_st{tag}", f"_hl_T{tag}", f"_hl_k{tag}"
    var = node.target.id
    head = ast.parse(f"{lo} = {lower}\n{st} = {step}\n"
                     f"{trip} = len(range({lo}, {upper}, {st}))").body
    renamed = Rename({n: f"_hl_{n}_{tag}" for n in names})
    pvar = f"_hl_{var}_{tag}" if var in names else var  # the loop's own index, read after it
    par = ast.parse(f"for {k} in prange({trip} - 1):\n    {pvar} = {lo} + {k} * {st}\n").body[0]
    last = ast.parse(f"for {k} in range(max({trip} - 1, 0), {trip}):\n"
                     f"    {var} = {lo} + {k} * {st}\n").body[0]
    assert isinstance(par, ast.For) and isinstance(last, ast.For)
    par.body += [renamed.visit(copy.deepcopy(s)) for s in node.body]
    last.body += copy.deepcopy(node.body)
    for part in (par, last):
        ast.copy_location(part, node)
    return [*head, par, last]
