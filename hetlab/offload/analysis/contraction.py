"""A loop nest normalized into tensor statements: index sets, bounds, accesses, sums of products.

:func:`normalize` reads one nest (``for`` loops over ``range`` with step 1 and bounds invariant
in the nest, statements that are assignments) into a :class:`TensorNest`: each statement
becomes ``out[O] op Σ_t c_t · Π_f X_f[I_f]`` — ``op`` one of ``=``, ``+=``, ``*=``, ``/=``,
``O`` and ``I_f`` tuples of loop variables (a permutation is a transpose), ``c_t`` scalar
factors (names and numbers invariant in the nest, anywhere in the product), and the loop
variables of the statement not in ``O`` summed. ``x = x + e`` reads as ``x += e`` and
``x -= e`` as ``x += -1 * e``. A scalar first assigned inside the nest (``s = 0.0`` then
``s += …`` then ``C[i, j] = s``) is expanded to a temporary array over the loops around its
first assignment. A statement that is not a sum of products (``C[i, j] = max(s, 0.0)``) is
kept as written (``raw``): the catalogue may emit it as a fused loop.

:func:`.legality.legal` says whether running each statement over its whole index set, one statement
after the other (loop distribution), computes what the nest computes. When unsure, it says no:
bounds that depend on loop variables (triangular), subscripts that are not plain loop
variables (offsets, indirection), an output read by its own contraction, arrays that may share
storage (:mod:`.aliases`), or two statements touching one array where an element would be
reached in a different iteration of a loop around both.

>>> import ast
>>> src = '''
... for i in range(n):
...     for j in range(0, C.shape[1]):
...         C[i, j] *= beta
...         for k in range(len(B)):
...             C[i, j] = C[i, j] + alpha * A[i, k] * B[k, j]
... '''
>>> nest = normalize(ast.parse(src).body[0])
>>> [(s.out, s.op, [t.coef for t in s.terms]) for s in nest.stmts][1]
(Ref(name='C', idx=('i', 'j')), '+=', [('alpha',)])
>>> nest.bounds["k"]
('0', 'len(B)')
"""

from __future__ import annotations

import ast
import copy

from .expand import expand_scalars
from .privatize import privatize
from .rebase import rebased
from .tensor import TEMP_PREFIX, Ref, Stmt, TensorNest, Term

__all__ = ["Ref", "Term", "Stmt", "TensorNest", "normalize", "TEMP_PREFIX"]

class _Fail(Exception):
    """Not a nest this module normalizes."""


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _is_zero(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) \
        and node.value == 0


class _Reader:
    def __init__(self, row: bool = False) -> None:
        self.row: str | None = None if not row else ""  # "": the root's variable, once read
        self.bounds: dict[str, tuple[str, str]] = {}
        self.stmts: list[Stmt] = []
        self.fors: list[ast.For] = []

    def loop(self, node: ast.For, loops: tuple[int, ...], vs: tuple[str, ...]) -> None:
        var, it = _name(node.target), node.iter
        if var is None or node.orelse or var in vs:
            raise _Fail("loop target")
        if not (isinstance(it, ast.Call) and _name(it.func) == "range" and not it.keywords
                and 1 <= len(it.args) <= 3):
            raise _Fail("not range")
        args = it.args
        if len(args) == 3 and not (isinstance(args[2], ast.Constant) and args[2].value == 1):
            raise _Fail("step")
        start = args[0] if len(args) > 1 else ast.Constant(0)
        stop = args[1] if len(args) > 1 else args[0]
        if not (isinstance(start, ast.Constant) and type(start.value) is int
                and start.value >= 0) and not _extent(start) and not self.by_row(start):
            raise _Fail("start")  # a start that may be negative would wrap around
        for e in (start, stop):
            if any(isinstance(n, ast.Name) and n.id in vs for n in ast.walk(e)) \
                    and not self.by_row(e):
                raise _Fail("triangular bounds")
        if self.row == "" and not vs:
            if not (isinstance(start, ast.Constant) or _extent(start)):
                raise _Fail("row start")  # the row variable must be known non-negative
            self.row = var
        bounds = (ast.unparse(start), ast.unparse(stop))
        if self.bounds.setdefault(var, bounds) != bounds:
            if not self.row:
                raise _Fail("one variable, two ranges")  # sibling loops reusing a name
            # a sibling loop reusing the name over another range: a fresh name for this one
            fresh = f"{TEMP_PREFIX}v_{var}"
            while fresh in self.bounds or any(isinstance(n, ast.Name) and n.id == fresh
                                              for n in ast.walk(node)):
                fresh += "_"
            for n in ast.walk(node):
                if isinstance(n, ast.Name) and n.id == var:
                    n.id = fresh
            return self.loop(node, loops, vs)
        self.fors.append(node)
        self.body(node.body, (*loops, id(node)), (*vs, var))

    def by_row(self, e: ast.expr) -> bool:
        """``e`` is ``row`` or ``row + c`` (``c`` a non-negative int): a bound of a triangular
        nest, non-negative because the row variable is."""
        if not self.row:
            return False
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add) \
                and isinstance(e.right, ast.Constant) and type(e.right.value) is int \
                and e.right.value >= 0:
            e = e.left
        return isinstance(e, ast.Name) and e.id == self.row

    def body(self, stmts: list[ast.stmt], loops: tuple[int, ...], vs: tuple[str, ...]) -> None:
        for s in stmts:
            if isinstance(s, ast.For):
                self.loop(s, loops, vs)
            elif isinstance(s, (ast.Assign, ast.AugAssign)):
                self.stmts.append(self.stmt(s, loops, vs))
            else:
                raise _Fail(type(s).__name__)

    def ref(self, node: ast.AST, vs: tuple[str, ...]) -> Ref | None:
        if isinstance(node, ast.Name):
            return Ref(node.id, ())
        parts: list[ast.AST] = []
        base = node  # ``A[i][k]`` (chained) reads what ``A[i, k]`` reads
        while isinstance(base, ast.Subscript):
            sl = base.slice
            parts[:0] = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
            base = base.value
        if base is node or _name(base) is None:
            return None
        idx = tuple(_name(p) for p in parts)
        if any(v is None or v not in vs for v in idx) or len(set(idx)) != len(idx):
            return None
        return Ref(base.id, idx)  # type: ignore[attr-defined, arg-type]

    def terms(self, node: ast.AST, vs: tuple[str, ...]) -> list[Term] | None:
        """``node`` as a sum of products, or None."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            a, b = self.terms(node.left, vs), self.terms(node.right, vs)
            if a is None or b is None:
                return None
            if isinstance(node.op, ast.Sub):
                b = [Term(("-1", *t.coef), t.refs, t.div) for t in b]
            return a + b
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            a = self.terms(node.operand, vs)
            return None if a is None else [Term(("-1", *t.coef), t.refs, t.div) for t in a]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
            a, b = self.terms(node.left, vs), self.terms(node.right, vs)
            if a is None or b is None:
                return None
            return [Term(x.coef + y.coef, x.refs + y.refs, x.div + y.div) for x in a for y in b]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            a = self.terms(node.left, vs)
            if a is None or not self.scalar(node.right, vs):
                return None
            return [Term(t.coef, t.refs, (*t.div, ast.unparse(node.right))) for t in a]
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return [Term((repr(node.value),), ())]
        if isinstance(node, ast.Name):
            if node.id in vs:
                return None  # a loop index used as a value
            return [Term((), (Ref(node.id, ()),))]  # resolved later: scalar factor or temp
        r = self.ref(node, vs)
        return None if r is None or not r.idx else [Term((), (r,))]

    def scalar(self, node: ast.AST, vs: tuple[str, ...]) -> bool:
        """A scalar expression of names and numbers (no subscripts, calls or loop variables)."""
        return all(isinstance(n, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator,
                                  ast.unaryop, ast.expr_context)) for n in ast.walk(node)) \
            and not any(isinstance(n, ast.Name) and n.id in vs for n in ast.walk(node))

    def stmt(self, s: ast.Assign | ast.AugAssign, loops: tuple[int, ...],
             vs: tuple[str, ...]) -> Stmt:
        if isinstance(s, ast.Assign):
            if len(s.targets) != 1:
                raise _Fail("multiple targets")
            target, value, op = s.targets[0], s.value, "="
            rest = _without(value, ast.unparse(target))
            if rest is not None:
                op, value = "+=", rest
        else:
            target, value = s.target, s.value
            ops = {ast.Add: "+=", ast.Sub: "+=", ast.Mult: "*=", ast.Div: "/="}
            op = ops.get(type(s.op), "")
            if not op:
                raise _Fail("operator")
            if isinstance(s.op, ast.Sub):
                value = ast.UnaryOp(ast.USub(), value)
        out = self.ref(target, vs)
        if out is None:
            raise _Fail("target")
        reads = self.reads(value, vs)
        if op in ("*=", "/="):
            if not self.scalar(value, vs):
                raise _Fail("scaling by a non-scalar")
            return Stmt(loops, vs, out, op, [], s, ast.unparse(value), reads)
        return Stmt(loops, vs, out, op, self.terms(value, vs), s, None, reads, value)

    def reads(self, node: ast.AST, vs: tuple[str, ...]) -> tuple[Ref, ...]:
        """Every array element and scalar name read; a subscript that is not plain loop
        variables fails (its element cannot be placed)."""
        out: list[Ref] = []

        def visit(n: ast.AST) -> None:
            if isinstance(n, ast.Subscript):
                r = self.ref(n, vs)
                if r is None:
                    raise _Fail("subscript")
                out.append(r)
                return
            if isinstance(n, ast.Name) and n.id not in vs:
                out.append(Ref(n.id, ()))
            for c in ast.iter_child_nodes(n):
                visit(c)

        visit(node)
        return tuple(out)


def _without(value: ast.expr, target: str) -> ast.expr | None:
    """``value`` minus one ``+ target`` term of its top-level sum (``x = x + a + b``,
    ``x = a + x - b``), or None when ``target`` is not such a term."""
    terms: list[tuple[bool, ast.expr]] = []

    def flat(e: ast.expr, neg: bool) -> None:
        if isinstance(e, ast.BinOp) and isinstance(e.op, (ast.Add, ast.Sub)):
            flat(e.left, neg)
            flat(e.right, neg ^ isinstance(e.op, ast.Sub))
        else:
            terms.append((neg, e))

    flat(value, False)
    hit = next((k for k, (neg, e) in enumerate(terms)
                if not neg and ast.unparse(e) == target), None)
    if hit is None or len(terms) < 2:
        return None
    del terms[hit]
    out: ast.expr | None = None
    for neg, e in terms:
        if out is None:
            out = ast.UnaryOp(ast.USub(), e) if neg else e
        else:
            out = ast.BinOp(out, ast.Sub() if neg else ast.Add(), e)
    return out


def _extent(node: ast.AST) -> bool:
    """``X.shape[d]`` or ``len(X)``: never negative."""
    return (isinstance(node, ast.Call) and _name(node.func) == "len" and len(node.args) == 1
            and _name(node.args[0]) is not None) \
        or (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute)
            and node.value.attr == "shape" and _name(node.value.value) is not None
            and isinstance(node.slice, ast.Constant) and type(node.slice.value) is int)


def normalize(root: ast.For, row: bool = False) -> TensorNest | None:
    """The nest rooted at ``root`` as tensor statements, or None when it is not one.

    Parameters
    ----------
    root : ast.For
        The outermost loop of the nest.
    row : bool
        Whether inner bounds may be ``r`` or ``r + c`` for the root's variable ``r`` (a
        triangular nest, :mod:`.triangular`); bounds reading any other loop variable never.

    Returns
    -------
    TensorNest or None
        Scalars first assigned in the nest are expanded to temporaries ``_hb<k>`` indexed by
        the loops around their first assignment; scalar names only read are scalar factors.
    """
    r = _Reader(row)
    fresh = rebased(root)  # one-based loops (``A[i - 1, j - 1]``) re-based: a copy
    if row and fresh is root:
        fresh = copy.deepcopy(root)  # sibling loops may be renamed
    root = fresh
    try:
        r.loop(root, (), ())
    except _Fail:
        return None
    written = {n.id for f in r.fors for n in ast.walk(f)
               if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    for start, stop in r.bounds.values():
        names = {n.id for n in ast.walk(ast.parse(f"({start}, {stop})"))
                 if isinstance(n, ast.Name)}
        if (names - {r.row}) & written:
            return None  # an extent changed inside the nest (the row variable: only its own)
    nest = TensorNest(r.bounds, r.stmts, r.fors, written=written)
    if not expand_scalars(nest):
        return None
    privatize(nest)
    return nest
