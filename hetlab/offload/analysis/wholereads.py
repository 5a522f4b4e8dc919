"""Whole-array reads of an array the loop writes element by element.

The dependence test compares element accesses (``x[i]``, ``A[i - 1]``). A bare name read as
a whole — ``x[i] = np.dot(x, x)``, ``out[i] = np.sum(out) + v[i]``, ``y[i] = helper(y, i)`` —
reads *every* element, including those other iterations write: a dependence no subscript
pair shows. :func:`whole_array_reads` finds such reads of an array written in the loop, so the
loop stays sequential with the reason. Reads that touch no element are skipped: ``x.shape``,
``x.size``, ``x.ndim``, ``x.dtype``, ``len(x)``, ``np.shape(x)``/``np.size(x)``/``np.ndim(x)``,
and ``y = x`` (an alias: :mod:`.aliases` follows it).

>>> import ast
>>> src = '''
... def f(x, v, out):
...     for i in range(len(x)):
...         out[i] = np.dot(out, v) + x.shape[0] + len(x)
...         x[i] = v[i]
... '''
>>> loop = ast.parse(src).body[0].body[0]
>>> whole_array_reads(loop.body, {"out"})
['whole array out read at line 4 while out[…] is written in the loop']
>>> whole_array_reads(loop.body, {"x"})
[]
"""

from __future__ import annotations

import ast

__all__ = ["whole_array_reads"]

#: attributes that read no element of the array
_NO_ELEMENTS = frozenset({"shape", "size", "ndim", "dtype", "itemsize", "nbytes", "strides"})
#: NumPy functions of an array's size only (``np.shape(x)``)
_SIZE_CALLS = frozenset({"shape", "size", "ndim"})


def _skipped(body: list[ast.stmt]) -> set[int]:
    """ids of Name nodes whose load reads no element (or is an alias binding)."""
    skip: set[int] = set()
    for s in body:
        for n in ast.walk(s):
            if isinstance(n, ast.Subscript):
                base = n.value
                while isinstance(base, ast.Subscript):
                    base = base.value
                if isinstance(base, ast.Attribute):  # x.T[i], x.shape[0]
                    base = base.value
                skip.add(id(base))
            elif isinstance(n, ast.Attribute) and n.attr in _NO_ELEMENTS:
                skip.add(id(n.value))
            elif isinstance(n, ast.Call) and len(n.args) == 1 and (
                    (isinstance(n.func, ast.Name) and n.func.id == "len")
                    or (isinstance(n.func, ast.Attribute) and n.func.attr in _SIZE_CALLS)):
                skip.add(id(n.args[0]))  # len(x), np.shape(x), np.size(x), np.ndim(x)
            elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Name):
                skip.add(id(n.value))  # y = x: an alias, followed by the alias analysis
    return skip


def whole_array_reads(body: list[ast.stmt], written: set[str], line0: int = 1) -> list[str]:
    """Reasons, one per array in ``written`` (arrays the loop writes through subscripts) that
    ``body`` also reads as a whole by its bare name; ``line0``: the line of the function's
    first line in its file."""
    skip = _skipped(body)
    found: dict[str, int] = {}
    for s in body:
        for n in ast.walk(s):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) \
                    and n.id in written and id(n) not in skip:
                found.setdefault(n.id, line0 + n.lineno - 1)
    return [f"whole array {name} read at line {line} while {name}[…] is written in the loop"
            for name, line in sorted(found.items())]
