"""The catalogue: tensor statements (:mod:`.contraction`) matched to library calls, as NumPy code
numba's ``njit`` compiles.

========================== ===================================== ================================
entry                      statement shape                       emitted
========================== ===================================== ================================
matmul (GEMM, α, β, ᵀ)     ``C[i,j] += α A[i,k] B[k,j]`` any     ``C[…] += α * A @ B`` (``.T`` per
                           index order                           transposed operand or output)
matvec (GEMV, ᵀ)           ``y[i] += A[i,j] x[j]`` / ``A[j,i]``  ``y[…] += A @ x`` / ``A.T @ x``
dot                        ``s += x[i] y[i]``                    ``s += np.dot(x, y)``
outer / rank-1             ``A[i,j] (+)= x[i] y[j]``             ``np.outer(x, y)``
rank-2k                    two matmul terms in one update        ``A @ B.T + B @ A.T``
batched-matmul             ``C[b,i,j] += A[b,i,k] B[b,k,j]``     a loop of ``@`` per batch
(leading index, .batched)  ``Y[a,b,c] = M[b,l] X[a,l,c]``        ``np.dot(M, X[a], Y[a])`` per a
contraction                several free or summed indices        reshapes + ``@``
sum / mean                 ``s[j] += X[i,j]`` (then ``/= n``)    ``np.sum(X, axis=0)``
axpy / copy / transpose    ``y[i] += a x[i]``, ``B[j,i] = A[i,j]`` array expressions
scal                       ``C[i,j] *= β``                       ``C[…] *= β``
(epilogue)                 any other elementwise statement       kept as a fused loop
========================== ===================================== ================================

A statement with a summed index that is none of these is no match (the whole nest stays a
loop nest). Sliced operands of ``@`` are wrapped in ``np.ascontiguousarray`` (the numba form:
only when partial at run time, :mod:`.nocopy`; and one pass over a product's output,
:mod:`.epilogue`); ``C[i,j] = 0``
followed by ``C[i,j] += …`` becomes one ``=``. numba has no ``np.einsum``: contractions over
several indices are reshapes and one ``@``.
"""

from __future__ import annotations

import ast
import re

from .batched import leading_product, swap_first
from .contraction import Ref, Stmt, TensorNest, Term
from .dotinto import INTO, remember_product, written_into
from .epilogue import folds_scale, fuse
from .loopform import loop_form
from .nocopy import contiguous, product
from .tensor import scaled
from .vectorize import array_expr

__all__ = ["emit", "LIBRARY"]

#: entries that are library calls (a nest needs one of them to be a block)
LIBRARY = frozenset({"matmul", "matvec", "dot", "outer", "rank-1", "rank-2k", "batched-matmul",
                     "contraction", "sum", "mean", "axpy", "transpose", "scal"})
_EXTENT = re.compile(r"^(\w+\.shape\[\d+\]|len\(\w+\)|\d+)$")
_ROW = re.compile(r"^(\w+)( \+ \d+)?$")


class _NoMatch(Exception):
    pass


class _Emitter:
    def __init__(self, nest: TensorNest, numba: bool = False,
                 sizes: frozenset[str] = frozenset(),
                 origin: dict[str, dict[int, str]] | None = None,
                 verbatim: dict[int, list[str]] | None = None,
                 nocopy: bool | None = None) -> None:
        self.nest = nest
        #: operands whole at run time are not copied (:mod:`.nocopy`): the numba form
        self.nocopy = numba if nocopy is None else nocopy
        self.origin = origin or {}
        self.verbatim = dict(verbatim or {})
        self.nonneg = nest.nonneg | sizes
        self.numba = numba
        self.init: str | None = None
        #: a scaling of the next statement's output, folded into its pass (.epilogue)
        self.pending: Stmt | None = None
        #: temporaries computed from products, read once: ``{name: (element expression,
        #: subscripts, assignment line)}`` (.epilogue)
        self.deferred: dict[str, tuple[str, tuple[str, ...], str]] = {}
        self.temps = set(nest.temps.values()) | {t for t, _ in nest.private.values()}
        self.lines: list[str] = []
        self.k = 0
        #: the whole output array a matmul/matvec writes into (:mod:`.dotinto`), while set
        self.into: str | None = None
        #: temporaries computed as one product: their ``_hl_dot_into`` call (.dotinto)
        self.into_ready: dict[str, str] = {}

    def fresh(self) -> str:
        self.k += 1
        return f"_hbt{self.k}"

    # -- operands ------------------------------------------------------------------------
    def sliced(self, r: Ref) -> tuple[str, bool]:
        """``r``'s array restricted to its loops' ranges; True when that is the whole array."""
        if r.name in self.temps:
            return r.name, True
        if r.name in self.origin:
            return self.shifted(r), False
        parts = self.parts(r)
        if all(p == ":" for p in parts) and not r.fixed:
            return r.name, True
        return f"{r.name}[{', '.join(parts)}]", False

    def parts(self, r: Ref) -> list[str]:
        """The subscripts of ``r``'s array restricted to its loops' ranges, one per axis."""
        parts = []
        fixed = dict(r.fixed)
        free = iter(r.idx)
        for d in range(len(r.idx) + len(fixed)):
            if d in fixed:  # a row index held fixed (triangular nests)
                parts.append(fixed[d])
                continue
            v = next(free)
            start, stop = self.nest.bounds[v]
            if start == "0" and (stop == f"{r.name}.shape[{d}]"
                                 or (d == 0 and stop == f"len({r.name})")):
                parts.append(":")
                continue
            row = _ROW.match(stop)
            if not _EXTENT.match(stop) and not (row and row.group(1) in self.nonneg):
                stop = f"max({stop}, 0)"
            parts.append(f"{'' if start == '0' else start}:{stop}")
        return parts

    def shifted(self, r: Ref) -> str:
        """``r`` of an array whose element 0 along axis ``d`` is element ``origin[d]`` of the
        loop's index space (a panel's product, :mod:`.panels`)."""
        off, fixed, free = self.origin[r.name], dict(r.fixed), iter(r.idx)
        parts = []
        for d in range(len(r.idx) + len(fixed)):
            o = off.get(d, "0")
            if d in fixed:
                parts.append(_minus(fixed[d], o))
                continue
            start, stop = self.nest.bounds[next(free)]
            parts.append(f"{_minus(start, o)}:max({_minus(stop, o)}, 0)")
        return f"{r.name}[{', '.join(parts)}]"

    def target(self, r: Ref) -> str:
        if not r.array or r.name in self.temps:
            return r.name
        text, whole = self.sliced(r)
        return text if not whole else f"{r.name}[{', '.join(':' for _ in r.idx)}]"

    def oriented(self, r: Ref, order: list[str], contiguous: bool = False) -> str:
        text, whole = self.sliced(r)
        if contiguous and not whole:
            text = f"np.ascontiguousarray({text})"
        perm = tuple(r.idx.index(v) for v in order)
        if perm == tuple(range(len(perm))):
            return text
        if len(perm) == 2:
            return f"{text}.T"
        return f"np.transpose({text}, {perm})"

    @staticmethod
    def orient(text: str, have: list[str], want: tuple[str, ...]) -> str:
        perm = tuple(have.index(v) for v in want)
        if perm == tuple(range(len(perm))):
            return text
        return f"{text}.T" if len(perm) == 2 else f"np.transpose({text}, {perm})"

    # -- terms ---------------------------------------------------------------------------
    def term(self, t: Term, out: tuple[str, ...]) -> tuple[str, str]:
        """(entry, array expression in ``out``'s index order) of one term."""
        kind, text, t = self.term_core(t, out)
        return kind, scaled(t, text)

    def term_core(self, t: Term, out: tuple[str, ...]) -> tuple[str, str, Term]:
        """(entry, array expression of the term's factors without its scalar factors, the
        term with three or more factors merged) of one term."""
        t = self.merge(t)
        if len(t.refs) == 1:
            kind, text = self.unary(t.refs[0], out)
        elif len(t.refs) == 2:
            kind, text = self.binary(t.refs[0], t.refs[1], out)
        elif not t.refs:
            kind, text = "fill", ""
        else:
            raise _NoMatch("three factors")
        return kind, text, t

    def merge(self, t: Term) -> Term:
        """Three or more factors: a factor whose subscripts are all in another's is multiplied
        into it first (``A[i,k] B[k,j] d[k]`` → ``(A * d) @ B``), into a fresh temporary."""
        refs = list(t.refs)
        while len(refs) > 2:
            if any(r.fixed for r in refs):
                raise _NoMatch("three factors in a triangular row")
            pair = next(((a, b) for a in refs for b in refs
                         if a is not b and set(b.idx) <= set(a.idx)), None)
            if pair is None:
                raise _NoMatch("three factors")
            a, b = pair
            node = ast.parse(f"{a.name}[{', '.join(a.idx)}] * {b.name}[{', '.join(b.idx)}]",
                             mode="eval").body
            text = array_expr(node, list(a.idx), lambda r: self.sliced(r)[0], a.idx + b.idx)
            if text is None:
                raise _NoMatch("three factors")
            tmp = self.fresh()
            self.lines.append(f"{tmp} = {text}")
            self.temps.add(tmp)
            refs[refs.index(a)] = Ref(tmp, a.idx)
            refs.remove(b)
        return Term(t.coef, tuple(refs), t.div)

    def unary(self, x: Ref, out: tuple[str, ...]) -> tuple[str, str]:
        if not set(out) <= set(x.idx):
            raise _NoMatch("broadcast")
        text, _ = self.sliced(x)
        have = list(x.idx)
        summed = [d for d, v in enumerate(x.idx) if v not in out]
        if summed and not out:
            return "sum", f"np.sum({text})"
        for d in reversed(summed):
            text = f"np.sum({text}, axis={d})"
            del have[d]
        kind = "sum" if summed else ("axpy" if tuple(have) == out else "transpose")
        return kind, self.orient(text, have, out)

    def binary(self, x: Ref, y: Ref, out: tuple[str, ...]) -> tuple[str, str]:
        if swap_first(x, y, out):
            x, y = y, x  # the factor that lies as the GEMM's rows first: no copy of it
        vx, vy = set(x.idx), set(y.idx)
        if not set(out) <= vx | vy or (vx ^ vy) - set(out):
            raise _NoMatch("an index summed over one factor only")
        batch = [v for v in out if v in vx and v in vy]
        fa = [v for v in out if v in vx and v not in vy]
        fb = [v for v in out if v in vy and v not in vx]
        k = [v for v in x.idx if v not in out]
        if not k:
            if batch and not fa and not fb:  # elementwise product
                return "axpy", f"{self.oriented(x, list(out))} * {self.oriented(y, list(out))}"
            if batch or len(fa) != 1 or len(fb) != 1:
                raise _NoMatch("broadcast product")
            res = product(self, [(x, fa), (y, fb)], lambda o: f"np.outer({o[0]}, {o[1]})")
            return "outer", self.orient(res, fa + fb, out)
        if batch:
            if len(batch) != 1 or len(k) != 1 or len(fa) > 1 or len(fb) > 1:
                raise _NoMatch("batched shape")
            a, b, r, q = self.fresh(), self.fresh(), self.fresh(), self.fresh()
            self.lines += [
                f"{a} = np.ascontiguousarray({self.oriented(x, batch + fa + k)})",
                f"{b} = np.ascontiguousarray({self.oriented(y, batch + k + fb)})",
                f"{r} = np.empty(({a}.shape[0]"
                + (f", {a}.shape[1]" if fa else "") + (f", {b}.shape[-1]" if fb else "")
                + f"), dtype={a}.dtype)",
                f"for {q} in range({a}.shape[0]):",
                f"    {r}[{q}] = {a}[{q}] @ {b}[{q}]"]
            return "batched-matmul", self.orient(r, batch + fa + fb, out)
        if len(fa) <= 1 and len(fb) <= 1 and len(k) == 1:
            ops = [(x, fa + k), (y, k + fb)]
            if not fa and not fb:
                return "dot", product(self, ops, lambda o: f"np.dot({o[0]}, {o[1]})")
            kind = "matmul" if fa and fb else "matvec"
            if self.into is not None and fa + fb == list(out):
                return kind, product(self, ops, lambda o, y=self.into:
                                     f"{INTO}({o[0]}, {o[1]}, {y})")
            return kind, self.orient(product(self, ops, lambda o: f"({o[0]} @ {o[1]})"),
                                     fa + fb, out)
        a, b = self.fresh(), self.fresh()
        self.lines += [f"{a} = {contiguous(self, x, fa + k)}",
                       f"{b} = {contiguous(self, y, k + fb)}"]
        nk = " * ".join(f"{a}.shape[{len(fa) + d}]" for d in range(len(k)))
        am = f"{a}.reshape(({' * '.join(f'{a}.shape[{d}]' for d in range(len(fa)))}, {nk}))" \
            if fa else f"{a}.reshape(({nk},))"
        nb = " * ".join(f"{b}.shape[{len(k) + d}]" for d in range(len(fb)))
        bm = f"{b}.reshape(({nk}, {nb}))" if fb else f"{b}.reshape(({nk},))"
        dims = [f"{a}.shape[{d}]" for d in range(len(fa))] + \
            [f"{b}.shape[{len(k) + d}]" for d in range(len(fb))]
        res = f"({am} @ {bm})"
        if len(dims) > 2 or len(fa) > 1 or len(fb) > 1:
            res = f"{res}.reshape(({', '.join(dims)},))"
        return "contraction", self.orient(res, fa + fb, out)

    # -- statements ----------------------------------------------------------------------
    def stmt(self, s: Stmt, op: str) -> str:
        if id(s) in self.verbatim:  # written by the caller (a panel's remainder loop)
            self.lines += self.verbatim[id(s)]
            return "loop" if self.verbatim[id(s)] else "copy"  # none: written earlier
        tgt = self.target(s.out)
        pend, self.pending = self.pending, None
        flush = len(self.lines)
        if pend is not None:  # a scaling held for this statement's pass (.epilogue)
            self.stmt(pend, pend.op)
        flushed = len(self.lines)
        if s.scale is not None:
            self.lines.append(f"{tgt} {s.op} {s.scale}")
            return "scal"
        if self.numba:
            got_l = loop_form(self, s, op, self.init, self.rewrite)
            if got_l is not None:
                return got_l
        if s.terms is None:
            return self.vector(s, op) or self.loop(s)
        if s.summed and any(set(s.summed) - {v for r in t.refs for v in r.idx}
                            for t in s.terms):  # a term repeated over a summed loop
            got_v = self.vector(s, op)
            if got_v is None:
                raise _NoMatch("a term repeated over a summed loop")
            return got_v
        got_b = leading_product(self, s, op)  # a loop of 2-D products (.batched)
        if got_b is not None:
            return got_b
        mark = len(self.lines)
        try:
            cores = [self.term_core(t, s.out.idx) for t in s.terms]
        except _NoMatch:
            del self.lines[mark:]
            return self.vector(s, op) or self.loop(s)
        kinds = [c[0] for c in cores]
        remember_product(self, s, op, kinds, _NoMatch)  # a product into a temporary
        if "fill" in kinds and (len(kinds) > 1 or s.out.name in self.temps or op != "="):
            if s.summed:
                raise _NoMatch("constant summed")
            return self.loop(s)
        fused = fuse(self, s, op, cores, pend) if self.numba else None
        if fused is not None:  # products, then one pass over the output
            del self.lines[flush:flushed]  # the held scaling: folded into the pass
            self.lines += fused
            return _entry(kinds, s, op)
        got = [(k, scaled(t, text)) for k, text, t in cores]
        rhs = " + ".join(g[1] for g in got).replace("+ -1 * ", "- ")
        if s.out.name in self.temps and op == "=" and kinds in (["axpy"], ["transpose"]) \
                and len(s.terms[0].coef) == 0 and not s.terms[0].div:
            rhs = f"np.copy({rhs})"  # a fresh temporary, not a view
        into = written_into(self, s, op, kinds, f"{tgt} {op} {rhs}", _NoMatch)
        self.lines += into or [f"{tgt} {op} {rhs}"]
        return _entry(kinds, s, op)

    def vector(self, s: Stmt, op: str) -> str | None:
        """``s`` as one array expression (:mod:`.vectorize`), summed with ``np.sum`` over its
        summed loops: "sum" or "map"; None when it is not elementwise-exact."""
        if s.value is None or not s.vars or (s.out.name in self.temps and op != "="
                                              and not self.defined(s)):
            return None
        axes = list(s.out.idx) + list(s.summed)
        node = _Temps(self.nest.temps, s).visit(ast.parse(ast.unparse(s.value)).body[0].value)
        text = array_expr(node, axes, lambda r: self.sliced(r)[0], tuple(self.nest.bounds))
        if text is None:
            return None
        if not s.out.idx:
            text = f"np.sum({text})"
        else:
            for d in reversed(range(len(s.out.idx), len(axes))):
                text = f"np.sum({text}, axis={d})"
        if s.out.name in self.temps and op == "=" and not s.summed and "(" not in text \
                and not any(c in text for c in "+-*/"):
            text = f"np.copy({text})"  # a fresh temporary, not a view
        self.lines.append(f"{self.target(s.out)} {op} {text}")
        return "sum" if s.summed else "map"

    def loop(self, s: Stmt) -> str:
        """An elementwise statement kept as a loop (temporaries read as their elements)."""
        if s.summed or (s.out.name in self.temps and s.op == "=" and not self.defined(s)):
            raise _NoMatch("loop")
        node = _Temps(self.nest.temps, s).visit(ast.parse(ast.unparse(s.node)).body[0])
        pad = ""
        for v in s.vars:
            start, stop = self.nest.bounds[v]
            self.lines.append(f"{pad}for {v} in range({start}, {stop}):")
            pad += "    "
        self.lines.append(pad + ast.unparse(ast.fix_missing_locations(node)))
        return "epilogue"

    def rewrite(self, s: Stmt) -> ast.stmt:
        """``s``'s statement with scalar temporaries read as their elements."""
        return _Temps(self.nest.temps, s).visit(ast.parse(ast.unparse(s.node)).body[0])

    def defined(self, s: Stmt) -> bool:
        return any(line.startswith(f"{s.out.name} ") for line in self.lines)


def _entry(kinds: list[str], s: Stmt, op: str) -> str:
    """The catalogue entry of a statement whose terms are ``kinds``."""
    if kinds == ["fill"]:
        return "fill"
    if len(kinds) == 2 and kinds == ["matmul", "matmul"] and op == "+=":
        return "rank-2k"
    if kinds == ["axpy"] and not s.summed and op == "=":
        refs = s.terms[0].refs  # type: ignore[index]
        if refs == (s.out,):
            return "scal"
        return "copy" if not s.terms[0].coef and not s.terms[0].div else "axpy"  # type: ignore[index]
    if kinds == ["sum"] and s.terms[0].div and s.out.idx:  # type: ignore[index]
        return "mean"
    if len(set(kinds)) == 1:
        return kinds[0] if not (kinds[0] == "outer" and op == "+=") else "rank-1"
    return "+".join(kinds)


class _Temps(ast.NodeTransformer):
    """Scalar temporaries read in an epilogue → their element of the temporary array."""

    def __init__(self, temps: dict[str, str], s: Stmt) -> None:
        idx = {r.name: r.idx for r in (s.out, *s.reads)}
        self.to = {o: (t, idx[t]) for o, t in temps.items() if t in idx}

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id not in self.to:
            return node
        t, idx = self.to[node.id]
        sub = ast.Tuple([ast.Name(v, ast.Load()) for v in idx], ast.Load()) if len(idx) > 1 \
            else ast.Name(idx[0], ast.Load())
        return ast.copy_location(ast.Subscript(ast.Name(t, ast.Load()), sub, node.ctx), node)


def emit(nest: TensorNest, numba: bool = False, sizes: frozenset[str] = frozenset(),
         origin: dict[str, dict[int, str]] | None = None,
         verbatim: dict[int, list[str]] | None = None,
         nocopy: bool | None = None) -> tuple[str, str] | None:
    """(entry name, NumPy statements) replacing ``nest``, or None when not in the catalogue.

    Parameters
    ----------
    nest : TensorNest
        A normalized nest that :func:`.legality.legal` accepted.
    numba : bool, default False
        The numba form: statements over two or more loops that are not contractions become
        ordered, parallel loops (:mod:`.loopform`) instead of NumPy array expressions.
    sizes : frozenset of str, optional
        Names that always hold a size (never negative).
    origin : dict, optional
        ``{array: {axis: offset}}`` for arrays (a panel's product, :mod:`.panels`) that hold
        the loop's element ``offset`` at their element 0 along ``axis``.
    verbatim : dict, optional
        ``{id(statement): lines}``: statements of ``nest`` emitted as the given lines.
    nocopy : bool, optional
        Whether operands that are whole arrays at run time skip their contiguous copy
        (:mod:`.nocopy`); default: ``numba``.

    Returns
    -------
    tuple of str or None
        The entry (``"matmul"``, ``"matvec+matvec"``, ``"sum+scal"`` …) and the replacement
        source (one statement per line; a batched product or an epilogue adds loops).
    """
    em = _Emitter(nest, numba, sizes, origin, verbatim, nocopy)
    kinds: list[tuple[str, Stmt]] = []
    stmts = nest.stmts
    #: statement index → the zero of the initialization folded into it
    inits: dict[int, str] = {}
    try:
        for n, s in enumerate(stmts):
            op = s.op
            nxt = next((m for m in range(n + 1, len(stmts))
                        if stmts[m].out.name == s.out.name
                        or any(r.name == s.out.name for r in stmts[m].reads)), None)
            if n in inits:  # the product starts from the folded zero, in its own place
                em.init = inits.pop(n)
                op = "="
            elif _zero_init(s) and nxt is not None and stmts[nxt].op == "+=" \
                    and stmts[nxt].out == s.out and stmts[nxt].scale is None:
                # ``s = 0`` then ``s += …``: one product, emitted where ``s += …`` stands
                # (statements between may write its operands: ``A[i, j] -= 1`` first)
                inits[nxt] = s.terms[0].coef[0]  # type: ignore[index]
                continue
            elif s.out.name in em.temps and s.op != "=" and not em.defined(s):
                return None
            elif folds_scale(em, s, stmts[nxt] if nxt is not None else None):
                em.pending = s  # written by the next statement touching its output
                kinds.append(("scal", s))
                continue
            kinds.append((em.stmt(s, op), s))
            em.init = None
    except _NoMatch:
        return None
    for name, (temp, shared) in sorted(nest.private.items()):
        # the values the last iteration of the shared loops left in the array
        acc = next(r for s in stmts for r in (s.out, *s.reads) if r.name == temp)
        last = ", ".join(["-1"] * len(shared) + [":"] * (len(acc.idx) - len(shared)))
        em.lines += [f"if {temp}.size > 0:",
                     f"    {em.target(Ref(name, acc.idx[len(shared):]))} = {temp}[{last}]"]
    _inline(em)
    names = [k for k, _ in kinds]
    if not any(k in LIBRARY or "+" in k for k in names) and not em.origin:
        return None  # (with an origin, the library call is the panel's product)
    if not any(k not in ("scal", "fill", "epilogue", "copy", "axpy") for k in names) \
            and len(nest.fors) > 1 and any(k == "epilogue" for k in names):
        return None
    shown = []
    for n, (k, s) in enumerate(kinds):
        later = [kk for kk, ss in kinds[n + 1:] if ss.out.name == s.out.name]
        if (k == "sum" and s.out.idx and any(
                kk == "scal" and (ss.op == "/=" or any(t.div for t in ss.terms or ()))
                for kk, ss in kinds[n + 1:]
                if ss.out.name == s.out.name)) or (k == "sum" and s.out.name in em.temps and any(
                    t.div for _, ss in kinds[n + 1:] for t in ss.terms or ()
                    if any(r.name == s.out.name for r in t.refs))):
            k = "mean"
        if k == "fill" or (k == "scal" and any(kk != "scal" for kk, _ in kinds)
                           and (later or any(ss.out.name == s.out.name
                                             for _, ss in kinds[:n]))):
            continue
        if k in shown and k in ("epilogue", "map"):
            continue
        if k in ("copy", "axpy", "scal", "axpy+axpy", "axpy+scal") and s.terms and all(
                r.name in em.temps or r == s.out for t in s.terms for r in t.refs) \
                and len(kinds) > 1:
            continue  # the write-back of a temporary
        shown.append(k)
    return "+".join(shown) or names[0], "\n".join(em.lines)


def _inline(em: _Emitter) -> None:
    """``_hb0 = R`` used once, in a later top-level line: R written in place of ``_hb0``."""
    for t in sorted(em.temps):
        word = re.compile(rf"\b{t}\b")
        defs = [n for n, line in enumerate(em.lines) if line.startswith(f"{t} = ")]
        uses = [n for n, line in enumerate(em.lines) if word.search(line) and n not in defs]
        if len(defs) != 1 or len(uses) != 1 or em.lines[uses[0]].startswith(" ") \
                or len(word.findall(em.lines[uses[0]])) != 1 or uses[0] < defs[0] \
                or any(line.startswith("for ") for line in em.lines[defs[0]:uses[0]]):
            continue
        rhs = em.lines[defs[0]][len(t) + 3:]
        if rhs.startswith("np.copy("):
            rhs = rhs[len("np.copy("):-1]
        em.lines[uses[0]] = word.sub(lambda _m, r=rhs: r if r.startswith("(") else f"({r})",
                                     em.lines[uses[0]])
        del em.lines[defs[0]]


def _minus(a: str, b: str) -> str:
    """Source text of ``a - b`` (``a`` when ``b`` is ``"0"``)."""
    if b == "0":
        return a
    return f"{a} - {b}" if re.match(r"^\w+$", b) else f"{a} - ({b})"


def _zero_init(s: Stmt) -> bool:
    return s.op == "=" and s.terms is not None and len(s.terms) == 1 \
        and not s.terms[0].refs and s.terms[0].coef in (("0",), ("0.0",))
