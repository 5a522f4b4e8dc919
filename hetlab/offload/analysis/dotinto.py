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

A product accumulated in a scalar and stored once (``s = 0.0; s += A[i, k] * B[k, j];
C[i, j] = s``) is, once normalized, a temporary assigned the product and a copy of it into
``C``: :func:`remember_product` keeps the temporary's call, and the copy takes it in place of
the temporary's line when the copy is the temporary's only reader, the temporary is not live
after the nest, and no line was emitted between them (so no operand can change in between).

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

import re
from typing import Any

from .nocopy import whole_checks
from .tensor import Stmt

__all__ = ["INTO", "IMPORT", "written_into", "remember_product"]

#: the name generated code calls, and the import that binds it
INTO = "_hl_dot_into"
IMPORT = f"from hetlab.offload.runtime.dotinto import dot_into as {INTO}"


def written_into(em: Any, s: Stmt, op: str, kinds: list[str], plain: str,
                 nomatch: type[Exception] = Exception) -> list[str] | None:
    """The lines writing ``s``'s product into its whole output at run time, else ``plain``;
    None when ``s`` is not such a statement (see the module docstring).

    Two forms: ``s`` assigns the product to an argument array (``C[i, j] = 0`` then
    ``+=``), or ``s`` copies into one a temporary that the line just emitted computed as
    the product and nothing else reads (``s = 0.0; s += A[i, k] * B[k, j]; C[i, j] = s``):
    the temporary's line is then replaced (the product moves to ``s``'s place, with
    nothing between them).

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
    if not _plain_assignment(em, s, op) or s.out.name in em.temps:  # (temps: remembered)
        return None
    t, out = s.terms[0], s.out  # type: ignore[index]
    if not out.array or out.name in em.origin or out.fixed \
            or any(r.name == out.name for r in t.refs):
        return None
    checks = whole_checks(em, out)
    if checks is None:
        return None
    if _one_product(s, kinds):
        text = _into_text(em, s, nomatch, out.name)
    else:
        text, plain = _from_temp(em, s, plain)
    if text is None:
        return None
    if not checks:
        return [text]
    return [f"if {' and '.join(checks)}:", f"    {text}", "else:", f"    {plain}"]


#: the output's place in a temporary's remembered call
_SLOT = "\x00out\x00"


def _plain_assignment(em: Any, s: Stmt, op: str) -> bool:
    """``s`` (numba form) assigns one term with no scalar factor or divisor."""
    if not em.nocopy or op != "=" or s.terms is None or len(s.terms) != 1:
        return False
    t = s.terms[0]
    return not t.div and all(c in ("1", "1.0") for c in t.coef)


def _one_product(s: Stmt, kinds: list[str]) -> bool:
    """The term of a plain assignment is one matmul or matvec of two factors."""
    return kinds in (["matmul"], ["matvec"]) and len(s.terms[0].refs) == 2  # type: ignore[index]


def remember_product(em: Any, s: Stmt, op: str, kinds: list[str],
                     nomatch: type[Exception] = Exception) -> None:
    """When ``s`` assigns one product to a temporary, keep its ``_hl_dot_into`` call (the
    output left as a slot) for the statement that may copy the temporary into an array."""
    if not _plain_assignment(em, s, op) or s.out.name not in em.temps \
            or not _one_product(s, kinds):
        return
    text = _into_text(em, s, nomatch, _SLOT)
    if text is not None:
        em.into_ready[s.out.name] = text


def _into_text(em: Any, s: Stmt, nomatch: type[Exception], out: str) -> str | None:
    """``s``'s single product as a ``_hl_dot_into(..., out)`` expression, or None."""
    mark, em.into = len(em.lines), out
    try:
        _, text, _ = em.term_core(s.terms[0], s.out.idx)  # type: ignore[index]
    except nomatch:
        text = ""
    finally:
        em.into = None
    if len(em.lines) != mark or INTO not in text:
        del em.lines[mark:]
        return None
    return text


def _from_temp(em: Any, s: Stmt, plain: str) -> tuple[str | None, str]:
    """(the remembered call of the temporary ``s`` copies, the fallback line with the
    temporary's product in its place), the temporary's line removed; (None, plain) when
    ``s`` is not such a copy."""
    (r,) = s.terms[0].refs if len(s.terms[0].refs) == 1 else (None,)  # type: ignore[index]
    if r is None or r.name not in em.into_ready or r.idx != s.out.idx or r.fixed:
        return None, plain
    word = re.compile(rf"\b{re.escape(r.name)}\b")
    readers = sum(1 for st in em.nest.stmts for x in st.reads if x.name == r.name)
    private = {t for t, _ in em.nest.private.values()}
    if readers != 1 or r.name in private or len(word.findall(plain)) != 1:
        return None, plain
    # the temporary's lines, just emitted: ``T = product``, or (a fused temporary,
    # .epilogue) ``p = product`` then ``T = p``
    head, lines = f"{r.name} = ", em.lines
    if len(lines) >= 2 and re.fullmatch(rf"{re.escape(head)}(_hbt\d+)", lines[-1]) \
            and lines[-2].startswith(f"{lines[-1][len(head):]} = "):
        product = lines[-2].split(" = ", 1)[1]
        del lines[-2:]
        em.deferred.pop(r.name, None)
    elif lines and lines[-1].startswith(head):
        product = lines.pop()[len(head):]
    else:
        return None, plain
    plain = word.sub(lambda _m: product if product.startswith("(") else f"({product})", plain)
    return em.into_ready.pop(r.name).replace(_SLOT, s.out.name), plain
