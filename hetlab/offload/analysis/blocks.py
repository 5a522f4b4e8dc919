"""Function blocks (Yamato 2020/2024): loop nests that compute a known routine, as library calls.

A nest is recognized only in an exact form: loops ``for v in range(E)`` (start 0, step 1, ``E``
an array extent ``X.shape[d]``, ``len(X)`` or a plain name not assigned in the nest), subscripts
that are the loop variables themselves (no offsets), distinct array names, and a body with
nothing else in it. When unsure, no match. Recognized patterns:

========== ============================================== =====================================
pattern    loop form (any loop order where it is legal)   replacement
========== ============================================== =====================================
matmul     ``C[i,j] += A[i,k]*B[k,j]``; or ``s = 0``,      ``C[:n,:m] += A[:n,:p] @ B[:p,:m]``
           ``s += A[i,k]*B[k,j]``, ``C[i,j] = s``          (``=`` when the nest sets C)
matvec     ``y[i] += A[i,j]*x[j]`` (or via a scalar s)    ``y[:n] += A[:n,:m] @ x[:m]``
dot        ``s += x[i]*y[i]``                             ``s += np.dot(x[:n], y[:n])``
axpy       ``y[i] = a*x[i] + y[i]`` / ``y[i] += a*x[i]``   ``y[:n] += a * x[:n]``
transpose  ``B[j,i] = A[i,j]``                            ``B[:m,:n] = A[:n,:m].T``
========== ============================================== =====================================

A slice equal to the whole extent (``A.shape[0]`` on A's first axis) is written ``:``, and an
operand sliced on every axis is passed whole; a partially sliced operand of ``@``/``np.dot`` is
wrapped in ``np.ascontiguousarray`` (numba's BLAS calls want contiguous arrays). The
replacement is plain NumPy that numba's ``njit`` compiles (float arrays: numba has no integer
``@``), so the rest of the function keeps its loops.

>>> from hetlab import offload
>>> from hetlab.offload.examples import EXAMPLES
>>> print(offload.analyze(EXAMPLES["axpy"].fn).blocks[0])
B1: axpy at L1 (line 33) → y[:x.shape[0]] += a * x
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from ..front.loops import Loop
from .scalars import live_after

__all__ = ["Block", "find_blocks"]


@dataclass(frozen=True)
class Block:
    """One recognized function block: the nest it replaces and the statement replacing it."""

    index: int
    nest: str
    loops: tuple[str, ...]
    line: int
    pattern: str
    call: str

    @property
    def id(self) -> str:
        return f"B{self.index + 1}"

    def __str__(self) -> str:
        return f"{self.id}: {self.pattern} at {self.nest} (line {self.line}) → {self.call}"


# -- small AST matchers ----------------------------------------------------------------------
def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _elem(node: ast.AST) -> tuple[str, tuple[str, ...]] | None:
    """``X[v]`` or ``X[v, w]`` with plain-name subscripts: (X, (v, w))."""
    if not isinstance(node, ast.Subscript) or _name(node.value) is None:
        return None
    sl = node.slice
    parts = sl.elts if isinstance(sl, ast.Tuple) else [sl]
    names = [_name(p) for p in parts]
    if any(n is None for n in names):
        return None
    return node.value.id, tuple(names)  # type: ignore[union-attr, arg-type]


def _product(node: ast.AST) -> tuple[tuple[str, tuple[str, ...]], ...] | None:
    """``P * Q`` of two element reads, in either order: both elements."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult)):
        return None
    a, b = _elem(node.left), _elem(node.right)
    return None if a is None or b is None else (a, b)


def _zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) \
        and node.value == 0


def _single_for(stmts: list[ast.stmt]) -> ast.For | None:
    return stmts[0] if len(stmts) == 1 and isinstance(stmts[0], ast.For) else None


class _Nest:
    """Loop variables and their extents (source text) of the nest being matched."""

    def __init__(self, loops: dict[int, Loop]) -> None:
        self.by_node = {id(lp.node): lp for lp in loops.values()}
        self.ext: dict[str, str] = {}
        self.ids: list[str] = []

    def take(self, node: ast.For) -> bool:
        lp = self.by_node.get(id(node))
        it = node.iter
        if lp is None or lp.unsupported or _name(node.target) is None or node.orelse:
            return False
        if not (isinstance(it, ast.Call) and _name(it.func) == "range" and len(it.args) == 1
                and not it.keywords):
            return False
        e = it.args[0]
        ok = (isinstance(e, ast.Name)
              or (isinstance(e, ast.Call) and _name(e.func) == "len" and len(e.args) == 1
                  and _name(e.args[0]) is not None)
              or (isinstance(e, ast.Subscript) and isinstance(e.value, ast.Attribute)
                  and e.value.attr == "shape" and _name(e.value.value) is not None
                  and isinstance(e.slice, ast.Constant) and type(e.slice.value) is int))
        if not ok or lp.var in self.ext:
            return False
        self.ext[lp.var] = ast.unparse(e)
        self.ids.append(lp.id)
        return True

    def operand(self, array: str, subs: tuple[str, ...], contiguous: bool = False) -> str:
        """``array`` restricted to the loops' ranges on each axis (``:`` when whole)."""
        parts = []
        for d, v in enumerate(subs):
            e = self.ext[v]
            whole = e == f"{array}.shape[{d}]" or (d == 0 and e == f"len({array})")
            parts.append(":" if whole else f":{e}")
        if all(p == ":" for p in parts):
            return array
        text = f"{array}[{', '.join(parts)}]"
        return f"np.ascontiguousarray({text})" if contiguous else text

    def target(self, array: str, subs: tuple[str, ...]) -> str:
        """The written array restricted to the loops' ranges (always subscripted)."""
        parts = [":" if self.ext[v] == f"{array}.shape[{d}]" else f":{self.ext[v]}"
                 for d, v in enumerate(subs)]
        return f"{array}[{', '.join(parts)}]"


def _distinct(*names: str) -> bool:
    return len(set(names)) == len(names)


# -- the patterns --------------------------------------------------------------------------
def _gemm_like(nest: _Nest, out: tuple[str, tuple[str, ...]],
               prod: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[str, str] | None:
    """Recognize ``out += prod`` as matmul or matvec: (pattern, right-hand side)."""
    o, osub = out
    for (a, asub), (b, bsub) in (prod, prod[::-1]):
        if len(osub) == 2 and len(asub) == 2 and len(bsub) == 2:
            i, j = osub
            if asub[0] == i and bsub[1] == j and asub[1] == bsub[0] \
                    and _distinct(i, j, asub[1]) and _distinct(o, a, b):
                return "matmul", (f"{nest.operand(a, asub, True)} @ "
                                  f"{nest.operand(b, bsub, True)}")
        if len(osub) == 1 and len(asub) == 2 and len(bsub) == 1:
            (i,) = osub
            if asub[0] == i and asub[1] == bsub[0] and _distinct(i, asub[1]) \
                    and _distinct(o, a, b):
                return "matvec", (f"{nest.operand(a, asub, True)} @ "
                                  f"{nest.operand(b, bsub, True)}")
    return None


def _match(node: ast.For, nest: _Nest) -> tuple[str, str] | None:
    """(pattern, replacement statement) for the nest rooted at ``node``, or None."""
    fors: list[ast.For] = []
    cur: ast.For | None = node
    body: list[ast.stmt] = []
    while cur is not None:
        if not nest.take(cur):
            return None
        fors.append(cur)
        body = cur.body
        cur = _single_for(body)
    n = len(fors)
    loopvars = set(nest.ext)
    # perfect nest with one statement
    if len(body) == 1:
        s = body[0]
        if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add):
            out, prod, tgt = _elem(s.target), _product(s.value), _name(s.target)
            if out is not None and prod is not None and set(out[1]) | {
                    v for _, sub in prod for v in sub} == loopvars and n in (2, 3):
                got = _gemm_like(nest, out, prod)
                if got is not None and len(loopvars) == n and (got[0] == "matmul") == (n == 3):
                    return got[0], f"{nest.target(*out)} += {got[1]}"
            if tgt is not None and prod is not None and n == 1 and tgt not in loopvars:
                (x, xs), (y, ys) = prod
                if xs == ys == (fors[0].target.id,) and x != y:  # type: ignore[attr-defined]
                    return "dot", (f"{tgt} += np.dot({nest.operand(x, xs, True)}, "
                                   f"{nest.operand(y, ys, True)})")
            if out is not None and n == 1 and len(out[1]) == 1:
                got = _axpy_term(s.value, out, loopvars, nest)
                if got is not None:
                    return "axpy", f"{nest.target(*out)} += {got}"
        if isinstance(s, ast.Assign) and len(s.targets) == 1:
            out = _elem(s.targets[0])
            if out is not None and n == 1 and len(out[1]) == 1 and isinstance(s.value, ast.BinOp) \
                    and isinstance(s.value.op, ast.Add):
                for term, rest in ((s.value.left, s.value.right),
                                   (s.value.right, s.value.left)):
                    if _elem(rest) == out:
                        got = _axpy_term(term, out, loopvars, nest)
                        if got is not None:
                            return "axpy", f"{nest.target(*out)} += {got}"
            src = _elem(s.value)
            if out is not None and src is not None and n == 2 and len(out[1]) == 2 \
                    and out[1] == src[1][::-1] and set(src[1]) == loopvars \
                    and _distinct(out[0], src[0]) and _distinct(*src[1]):
                return "transpose", (f"{nest.target(*out)} = "
                                     f"{nest.operand(*src)}.T")
    # C[i,j] = 0 / s = 0, then one k loop accumulating, (then C[i,j] = s)
    return _with_init(fors, body, nest, loopvars)


def _axpy_term(term: ast.AST, out: tuple[str, tuple[str, ...]], loopvars: set[str],
               nest: _Nest) -> str | None:
    """``a * x[i]`` (either order; ``a`` a plain name or number) for ``y[i] += …``: text."""
    if not (isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult)):
        return None
    for sc, el in ((term.left, term.right), (term.right, term.left)):
        x = _elem(el)
        scalar = (_name(sc) is not None and _name(sc) not in loopvars and _name(sc) != out[0]
                  and _name(sc) != (x[0] if x else None)) \
            or (isinstance(sc, ast.Constant) and type(sc.value) in (int, float))
        if x is not None and scalar and x[1] == out[1] and x[0] != out[0]:
            return f"{ast.unparse(sc)} * {nest.operand(*x)}"
    return None


def _with_init(fors: list[ast.For], body: list[ast.stmt], nest: _Nest,
               loopvars: set[str]) -> tuple[str, str] | None:
    if len(body) not in (2, 3) or not isinstance(body[0], ast.Assign) \
            or len(body[0].targets) != 1 or not _zero(body[0].value) \
            or not isinstance(body[1], ast.For):
        return None
    init = body[0].targets[0]
    inner = body[1]
    if not nest.take(inner):
        return None
    inner_vars = set(nest.ext)
    acc = inner.body
    if len(acc) != 1 or not isinstance(acc[0], ast.AugAssign) or not isinstance(acc[0].op,
                                                                                  ast.Add):
        return None
    prod = _product(acc[0].value)
    if prod is None or {v for _, sub in prod for v in sub} != inner_vars:
        return None
    n = len(fors) + 1
    if _elem(init) is not None and len(body) == 2:      # C[i,j] = 0; for k: C[i,j] += …
        out = _elem(init)
        if _elem(acc[0].target) != out or set(out[1]) != loopvars:  # type: ignore[arg-type]
            return None
        got = _gemm_like(nest, out, prod)  # type: ignore[arg-type]
        op = "="
    elif _name(init) is not None and len(body) == 3:    # s = 0; for k: s += …; C[i,j] (+)= s
        s = _name(init)
        fin = body[2]
        if _name(acc[0].target) != s or s in inner_vars:
            return None
        if isinstance(fin, ast.Assign) and len(fin.targets) == 1 and _name(fin.value) == s:
            out, op = _elem(fin.targets[0]), "="
        elif isinstance(fin, ast.AugAssign) and isinstance(fin.op, ast.Add) \
                and _name(fin.value) == s:
            out, op = _elem(fin.target), "+="
        else:
            return None
        if out is None or set(out[1]) != loopvars or s in {out[0], prod[0][0], prod[1][0]}:
            return None
        got = _gemm_like(nest, out, prod)
    else:
        return None
    if got is None or (got[0] == "matmul") != (n == 3):
        return None
    return got[0], f"{nest.target(*out)} {op} {got[1]}"


def _written_in(node: ast.stmt) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
    return out


def find_blocks(loops: list[Loop]) -> list[Block]:
    """The function blocks among ``loops`` (a function's loop tree, pre-order).

    Parameters
    ----------
    loops : list of Loop
        :func:`~hetlab.offload.front.loops.build_tree`'s loops; each nest is tried from its
        outermost loop, and loops inside a recognized block are not tried again.

    Returns
    -------
    list of Block
        In source order, ids ``B1, B2, …``; empty when nothing matches exactly.
    """
    found: list[Block] = []
    covered: set[int] = set()
    for lp in loops:
        if lp.index in covered:
            continue
        nest = _Nest({k: x for k, x in enumerate(loops)})
        got = _match(lp.node, nest)
        if got is None:
            continue
        pattern, call = got
        written = _written_in(lp.node)
        kept = {call.split()[0]} if pattern == "dot" else set()  # the dot's own sum
        extents = {n.id for e in nest.ext.values() for n in ast.walk(ast.parse(e))
                   if isinstance(n, ast.Name)}
        # loop variables and private scalars must be dead after the nest; extents invariant
        if any(live_after(lp.path, v) for v in written - kept) or extents & written:
            continue
        ids = tuple(loops[k].id for k in range(len(loops))
                    if loops[k].id in nest.ids)
        covered |= {loops[k].index for k in range(len(loops)) if loops[k].id in ids}
        found.append(Block(len(found), lp.id, ids, lp.line, pattern, call))
    return found
