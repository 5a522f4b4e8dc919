"""A matmul or matvec assigned to its whole output, written by BLAS into the output itself.

``C[i, j] = Σ_k A[i, k] B[k, j]`` (or the ``C = 0`` then ``+=`` form) is, in the numba form,
``C[:ni, :nj] = A[:ni] @ B[:nk]``: numba allocates the product, then copies it into ``C``, a
second pass over the output. When the slice is the whole of ``C`` at run time, BLAS can write
``C`` directly (``np.dot(a, b, out)``), as a hand-written kernel does. So, for a statement

- of one term of two factors with no scalar factor or divisor, assigned with ``=``,
- that is a matmul or matvec whose output index order is the product's (no transpose),
- whose output is an argument array (not a temporary, not a panel's shifted product, no row
  held fixed) not read by the product,

the numba form is::

    if <ni == C.shape[0] and nj == C.shape[1]>:      # the slice is the whole of C
        _hl_dot_into(<A operand>, <B operand>, C)
    else:
        C[:ni, :nj] = <the product, as before>

where ``_hl_dot_into`` (:mod:`hetlab.offload.runtime.dotinto`) calls ``np.dot(a, b, out)``
only when that is exact and safe for the argument types and the call's memory (``out``
C-contiguous, one float dtype, no overlap with an operand) and otherwise does what the plain
statement does. The operands are chosen as for every product (:mod:`.nocopy`). The NumPy and
CuPy forms are unchanged.

>>> import ast
>>> from hetlab.offload.analysis.contraction import normalize
>>> from hetlab.offload.analysis.catalogue import emit
>>> src = '''
... for i in range(ni):
...     for j in range(C.shape[1]):
...         C[i, j] = 0.0
...         for k in range(A.shape[1]):
...             C[i, j] += A[i, k] * B[k, j]
... '''
>>> print(emit(normalize(ast.parse(src).body[0]), numba=True)[1])
... # doctest: +NORMALIZE_WHITESPACE
if ni == C.shape[0]:
    (_hl_dot_into(A[:max(ni, 0)], B[:A.shape[1]], C) if C.shape[1] == B.shape[1]
     else _hl_dot_into(A[:max(ni, 0)], np.ascontiguousarray(B[:A.shape[1], :C.shape[1]]), C))
else:
    C[:max(ni, 0), :] = ((A[:max(ni, 0)] @ B[:A.shape[1]]) if C.shape[1] == B.shape[1]
     else (A[:max(ni, 0)] @ np.ascontiguousarray(B[:A.shape[1], :C.shape[1]])))
"""

from __future__ import annotations

from typing import Any

from .nocopy import whole_checks
from .tensor import Stmt

__all__ = ["INTO", "IMPORT", "written_into"]

#: the name generated code calls, and the import that binds it
INTO = "_hl_dot_into"
IMPORT = f"from hetlab.offload.runtime.dotinto import dot_into as {INTO}"


def written_into(em: Any, s: Stmt, op: str, kinds: list[str], plain: str,
                 nomatch: type[Exception] = Exception) -> list[str] | None:
    """The lines writing ``s``'s product into its whole output at run time, else ``plain``;
    None when ``s`` is not such a statement (see the module docstring).

    Parameters
    ----------
    em : catalogue._Emitter
        The emitter (numba form with run-time operand checks, ``em.nocopy``).
    s : Stmt
        The statement; ``op`` its operator as emitted (``=`` after a folded zero fill).
    kinds : list of str
        The catalogue entries of its terms.
    plain : str
        The statement's line as emitted otherwise (the fallback branch).
    nomatch : exception type
        The emitter's no-match exception: the term has no product form.
    """
    if not em.nocopy or op != "=" or kinds not in (["matmul"], ["matvec"]) \
            or s.terms is None or len(s.terms) != 1:
        return None
    t, out = s.terms[0], s.out
    if t.div or any(c not in ("1", "1.0") for c in t.coef) or len(t.refs) != 2:
        return None
    if not out.array or out.name in em.temps or out.name in em.origin or out.fixed \
            or any(r.name == out.name for r in t.refs):
        return None
    checks = whole_checks(em, out)
    if checks is None:
        return None
    mark, em.into = len(em.lines), out.name
    try:
        _, text, _ = em.term_core(t, out.idx)
    except nomatch:
        text = ""
    finally:
        em.into = None
    if len(em.lines) != mark or INTO not in text:
        del em.lines[mark:]
        return None
    if not checks:
        return [text]
    return [f"if {' and '.join(checks)}:", f"    {text}", "else:", f"    {plain}"]
