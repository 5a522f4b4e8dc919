"""``offload.analyze(fn)``: the loop nests of a function, parallel or not, and why."""

from __future__ import annotations

import ast
import html
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..front.calls import np_call_chain
from ..front.loops import SAFE_BUILTINS, Loop, LoopTree, build_tree
from ..front.source import FunctionSource, read_function
from .aliases import AliasInfo, alias_info
from .blocks import Block, find_blocks
from .delinear import delinearized
from .deps import Dependence, carried_dependences, unmodelable_subscripts
from .elements import read_only_elements
from .parhelp import install
from .scalars import exits_iteration, exposed_reads, live_after, reduction_op, written_names
from .transforms import Transforms, find_transforms
from .wholereads import whole_array_reads

__all__ = ["LoopReport", "Report", "analyze"]

PARALLEL, REDUCTION, SEQUENTIAL, UNSUPPORTED = "parallel", "reduction", "sequential", \
    "unsupported"


@dataclass
class LoopReport:
    """The analysis of one loop.

    ``verdict`` is ``"parallel"``, ``"reduction"`` (parallel with the reductions listed),
    ``"sequential"`` (``reasons`` says which dependence forbids it) or ``"unsupported"``.
    """

    index: int
    var: str
    line: int
    depth: int
    parent: int | None
    children: list[int]
    bounds: str
    verdict: str
    reasons: list[str] = field(default_factory=list)
    arrays_read: list[str] = field(default_factory=list)
    arrays_written: list[str] = field(default_factory=list)
    scalars_read: list[str] = field(default_factory=list)
    scalars_written: list[str] = field(default_factory=list)
    private: list[str] = field(default_factory=list)
    reductions: dict[str, str] = field(default_factory=dict)
    dependences: list[Dependence] = field(default_factory=list)
    #: private scalars read after the loop, assigned on every path of every iteration: the
    #: numba target runs the last iteration after the others (``transforms.lastprivate``)
    lastprivate: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"L{self.index + 1}"

    @property
    def parallelizable(self) -> bool:
        return self.verdict in (PARALLEL, REDUCTION)

    @property
    def why(self) -> str:
        if self.verdict == REDUCTION:
            return "reduction " + ", ".join(f"{k} ({op})" for k, op in self.reductions.items())
        if self.verdict == PARALLEL:
            return "no loop-carried dependence" + (
                f"; private {', '.join(self.private)}" if self.private else "")
        more = len(self.reasons) - 2
        return "; ".join(self.reasons[:2]) + (f"; and {more} more" if more > 0 else "")


@dataclass
class Report:
    """What :func:`analyze` found: one :class:`LoopReport` per loop, in source order."""

    name: str
    params: list[str]
    loops: list[LoopReport]
    notes: list[str]
    source: FunctionSource = field(repr=False)
    #: function blocks: nests recognized as a library routine
    #: (:mod:`hetlab.offload.analysis.blocks`)
    blocks: list[Block] = field(default_factory=list)
    #: which names may share storage, which parameters may be written (:mod:`.aliases`)
    aliases: AliasInfo = field(default=None, repr=False)  # type: ignore[assignment]
    #: loop transformations found legal (:mod:`hetlab.offload.analysis.transforms`)
    transforms: Transforms = field(default_factory=Transforms)
    #: array parameters ``search`` saw holding floating-point or complex numbers (set by
    #: the search; the numba target's accumulator promotion needs them,
    #: :mod:`hetlab.offload.analysis.transforms.accumulate`)
    float_arrays: frozenset[str] = frozenset()
    #: the float64 ones among them (the numba target's reductions of row expressions,
    #: :mod:`hetlab.offload.analysis.transforms.slice_sums`)
    double_arrays: frozenset[str] = frozenset()
    #: numeric array parameter → its number of dimensions (``analyze``'s ``arrays``), and
    #: the parameters that held numbers in the search's arguments (set by the search); the
    #: numba target's slice loops need them (:mod:`hetlab.offload.analysis.transforms.slices`)
    array_ranks: dict[str, int] = field(default_factory=dict)
    scalar_params: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.aliases is None:
            self.aliases = alias_info(self.source.tree, self.source.namespace,
                                      self.source.first_line)

    @property
    def refusals(self) -> tuple[str, ...]:
        """Why the function as a whole runs as written (never compiled), or ``()``."""
        return self.source.refusals

    @property
    def parallelizable(self) -> list[LoopReport]:
        """Loops that may run in parallel (verdict parallel or reduction)."""
        return [lp for lp in self.loops if lp.parallelizable]

    def loop(self, key: str | int) -> LoopReport:
        """A loop by id (``"L3"``) or index."""
        for lp in self.loops:
            if key in (lp.id, lp.index):
                return lp
        raise KeyError(f"offload: no loop {key!r}; loops are "
                       f"{', '.join(lp.id for lp in self.loops)}")

    def outermost(self, keys: list[str]) -> tuple[int, ...]:
        """For each loop id in ``keys``, 1 if no loop of ``keys`` encloses it, else 0: the
        static rule's choice (outermost parallel loops, as in OpenMP practice), which
        :func:`hetlab.offload.search` puts in the GA's first population."""
        ids = set(keys)

        def enclosed(key: str) -> bool:
            parent = self.loop(key).parent
            while parent is not None:
                lp = self.loop(parent)
                if lp.id in ids:
                    return True
                parent = lp.parent
            return False

        return tuple(0 if enclosed(k) else 1 for k in keys)

    def block(self, key: str | int) -> Block:
        """A function block by id (``"B1"``), index, or the id of the nest it replaces."""
        for b in self.blocks:
            if key in (b.id, b.index, b.nest):
                return b
        raise KeyError(f"offload: no function block {key!r}; blocks are "
                       f"{', '.join(b.id for b in self.blocks) or 'none'}")

    def rows(self) -> list[dict[str, Any]]:
        return [{"loop": lp.id, "line": lp.line, "nest": "  " * lp.depth + f"for {lp.var}",
                 "bounds": lp.bounds, "verdict": lp.verdict, "why": lp.why,
                 "writes": ", ".join(lp.arrays_written)} for lp in self.loops]

    def __str__(self) -> str:
        head = f"offload.analyze({self.name}): {len(self.loops)} loops, " \
               f"{len(self.parallelizable)} parallelizable"
        lines = [head]
        for r in self.rows():
            lines.append(f"  {r['loop']:>4} line {r['line']:<4} {r['nest']:<16} "
                         f"{r['verdict']:<11} {r['why']}")
        lines += [f"  block {b}" for b in self.blocks]
        lines += [f"  transform {t}" for t in self.transforms.lines()]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        cols = ["loop", "line", "nest", "bounds", "verdict", "why", "writes"]
        colors = {PARALLEL: "#d9f2d9", REDUCTION: "#e6f0ff", SEQUENTIAL: "#fbe3d6",
                  UNSUPPORTED: "#eeeeee"}
        out = [f"<p><b>offload.analyze({html.escape(self.name)})</b>: {len(self.loops)} loops, "
               f"{len(self.parallelizable)} parallelizable</p><table><tr>"
               + "".join(f"<th>{c}</th>" for c in cols) + "</tr>"]
        for r, lp in zip(self.rows(), self.loops, strict=True):
            cells = "".join(
                f"<td style='text-align:left;white-space:pre'>{html.escape(str(r[c]))}</td>"
                for c in cols)
            out.append(f"<tr style='background:{colors[lp.verdict]}'>{cells}</tr>")
        out.append("</table>")
        out += [f"<p>block {html.escape(str(b))}</p>" for b in self.blocks]
        out += [f"<p>transform {html.escape(t)}</p>" for t in self.transforms.lines()]
        out += [f"<p>note: {html.escape(n)}</p>" for n in self.notes]
        return "".join(out)


def _bounds(loop: Loop) -> str:
    return ast.unparse(loop.node.iter)


def _bind_targets(node: ast.AST) -> list[ast.AST]:
    """The targets a statement or expression (re)binds (not augmented assignments)."""
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, (ast.AnnAssign, ast.For, ast.NamedExpr)):
        return [node.target]
    if isinstance(node, ast.With):
        return [i.optional_vars for i in node.items if i.optional_vars is not None]
    return []


def _alias_reasons(loop: Loop, accs: list[Any], aliases: AliasInfo,
                   namespace: dict[str, Any], bound_first: frozenset[str]) -> list[str]:
    """Why storage written in ``loop`` may be reached under two names (or a name that changes
    from one iteration to the next), which the dependence test cannot see: views and aliases
    made inside the function (``b = a[1:]``, ``b = a.T``, ``b = f(a)``). ``bound_first``: read-only
    element locals bound in each iteration before they are read (:mod:`.elements`)."""
    body = loop.node.body
    stored = {a.array for a in accs if a.write}
    stored |= {n.target.id for s in body for n in ast.walk(s)
               if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
    touched = {a.array for a in accs} | {
        n.id for s in body for n in ast.walk(s) if isinstance(n, ast.Name)
        and n.id not in SAFE_BUILTINS and not isinstance(namespace.get(n.id), types.ModuleType)}
    rebound = {n.id for s in body for node in ast.walk(s)
               if not isinstance(node, ast.AugAssign)
               for t in _bind_targets(node) for n in ast.walk(t)
               if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    reasons: list[str] = []
    for x in sorted(stored - bound_first):
        if x in rebound and not aliases.is_fresh(x) and x in aliases.roots:
            reasons.append(f"{x} is written and bound anew inside the loop to storage that is "
                           f"not freshly allocated{aliases.why(x)}: iterations may write the "
                           "same elements")
        elif x in aliases.containers:
            reasons.append(f"{x} is a list or tuple{aliases.why(x)} whose elements may be the "
                           "same array: its element accesses cannot be told apart")
        elif x in aliases.roots and "?" in aliases.roots_of(x):
            reasons.append(f"{x} may not be freshly allocated storage{aliases.why(x)} (the "
                           "analysis cannot tell what it refers to)")
        for y in sorted(touched - {x} - bound_first):
            if aliases.may_alias(x, y) and not aliases.distinct_in(x, y, loop.node):
                reasons.append(f"{x} (written) may share memory with {y}"
                               f"{aliases.why(x) or aliases.why(y)}: a view or alias the "
                               "dependence test cannot follow")
    return reasons


def _analyze_loop(loop: Loop, loops: list[Loop], tree: LoopTree,
                  namespace: dict[str, Any], aliases: AliasInfo,
                  nonneg: frozenset[str], readonly: frozenset[str] = frozenset()) -> LoopReport:
    body = loop.node.body
    accs = [a for a in tree.accesses if loop.index in a.loops]
    written = written_names(body)
    inner_vars = {loops[c].var for c in _descendants(loop, loops)}
    exposed, assigned = exposed_reads(body, {loop.var})
    rep = LoopReport(loop.index, loop.var, loop.line, loop.depth, loop.parent,
                     list(loop.children), _bounds(loop), PARALLEL)
    rep.arrays_read = sorted({a.array for a in accs if not a.write})
    rep.arrays_written = sorted({a.array for a in accs if a.write})
    reads = {n.id for s in body for n in ast.walk(s)
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    arrays = {a.array for a in accs}
    not_data = {n for n in reads if n in SAFE_BUILTINS
                or isinstance(namespace.get(n), types.ModuleType)}
    rep.scalars_read = sorted(reads - arrays - inner_vars - {loop.var} - not_data)
    rep.scalars_written = sorted(written - inner_vars - {loop.var})
    if loop.unsupported:
        rep.verdict = UNSUPPORTED
        rep.reasons = list(loop.unsupported)
        return rep
    if loop.var in written:
        rep.verdict, rep.reasons = UNSUPPORTED, [
            f"unsupported: loop variable {loop.var} reassigned in its body at line {loop.line}"]
        return rep
    reasons: list[str] = []
    private = set(inner_vars)
    # an inner loop's variable read after that loop holds the value of its last iteration
    # that ran, an earlier iteration's of this loop when it runs none: carried, unless the
    # inner loop provably runs (``range(n)`` inside ``range(n)``, ``range(i + 1)``)
    once = frozenset(id(loops[c].node) for c in _descendants(loop, loops)
                     if _runs_once(loops[c], loops))
    for v in sorted(inner_vars & exposed_reads(body, {loop.var}, once)[0]):
        reasons.append(f"loop variable {v} of an inner loop is read after that loop, which "
                       "may run no iteration (it would hold a value from an earlier "
                       f"iteration of {loop.var})")
    # a loop variable read after the loop holds the last iteration's value in Python; in a
    # parallel loop (numba's prange) it would hold any iteration's, or none's
    for v in sorted({loop.var} | inner_vars):
        if live_after(loop.path, v):
            if v == loop.var:
                reasons.append(f"loop variable {v} is read after the loop (its last value "
                               "would be needed)")
                if not exits_iteration(body):
                    rep.lastprivate.append(v)
            else:
                reasons.append(f"loop variable {v} of an inner loop is read after the loop "
                               "(its value comes from the last iteration whose inner loop ran)")
    for s in rep.scalars_written:
        if s not in exposed:
            if live_after(loop.path, s):
                reasons.append(f"scalar {s} is assigned in the loop and read after it "
                               "(its last value would be needed)")
                if s in assigned and not exits_iteration(body):
                    rep.lastprivate.append(s)  # the last iteration's value, run last
                    private.add(s)
            else:
                private.add(s)
                rep.private.append(s)
            continue
        op = reduction_op(body, s)
        held = _not_a_number(loop, s, namespace)
        if op is not None and held is not None:
            reasons.append(f"scalar {s} holds {held}, not a number: its {op} updates are not a "
                           "parallel reduction")
        elif op is not None and s not in arrays:
            rep.reductions[s] = op
        else:
            reasons.append(f"scalar {s} carries a value from one iteration to the next")
    bound_first = readonly - exposed  # element reads the dependence test sees (.elements)
    alias_why = _alias_reasons(loop, accs, aliases, namespace, bound_first)
    private -= {p for p in private  # views are not private copies
                if not aliases.is_fresh(p) and p not in bound_first}
    accesses, wrap_why = unmodelable_subscripts(loop, loops, tree.accesses, written, nonneg)
    accesses = delinearized(loop, loops, accesses, written, nonneg)
    deps = carried_dependences(loop, loops, accesses, written, private)
    rep.dependences = deps
    # an array allocated afresh in each iteration before it is read (private) is read whole
    # only within its iteration
    whole_why = whole_array_reads(body, {a.array for a in accs if a.write} - private,
                                  loop.line - loop.node.lineno + 1)
    # a subscript that may be negative proves nothing (it may wrap around), but another
    # dimension of the same access may still prove two iterations apart (``out[c, t]`` over
    # ``t``): the wrap is a reason only where the test, blind to it, still finds a dependence
    reasons += [str(d) for d in deps] + (wrap_why if deps else []) + alias_why + whole_why
    if reasons:
        rep.verdict, rep.reasons = SEQUENTIAL, reasons
    elif rep.reductions:
        rep.verdict = REDUCTION
    return rep


_NOT_NUMBERS = {ast.List: "a list", ast.Tuple: "a tuple", ast.Dict: "a dict",
                ast.Set: "a set", ast.ListComp: "a list", ast.SetComp: "a set",
                ast.DictComp: "a dict", ast.JoinedStr: "a str"}


#: NumPy functions that allocate an array (never a scalar)
_NP_ALLOCS = frozenset({"zeros", "ones", "empty", "full", "zeros_like", "ones_like",
                        "empty_like", "full_like", "array", "copy", "arange", "linspace",
                        "eye", "identity"})


def _not_a_number(loop: Loop, name: str, namespace: dict[str, Any] | None = None) -> str | None:
    """What ``name`` holds when some assignment in the function (or an update in ``loop``)
    gives it a str, bytes or container value (``out = ""``, ``acc += [x]``) or a NumPy array
    (``acc = np.zeros(m)``: numba's parallel ``acc = acc + A[i]`` over an array gives wrong
    sums), or None.

    Only the value's own form counts (a literal, or an operand of ``+``/``*``, or a branch of
    ``a if c else b``): ``s = A[i, j]`` or ``s = f((1, 2))`` hold whatever the subscript or
    call gives, not the tuple written inside them."""
    function_body = loop.path[0][0] if loop.path else loop.node.body
    for node in (n for s in function_body for n in ast.walk(s)):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if not any(isinstance(t, ast.Name) and t.id == name for t in targets) \
                    or node.value is None:
                continue
            held = _literal_kind(node.value)
            if held is not None:
                return held
            v = node.value
            chain = np_call_chain(v.func, namespace or {}) if isinstance(v, ast.Call) else None
            if chain is not None and chain[0] == "numpy" and chain[-1] in _NP_ALLOCS:
                return f"an array (np.{chain[-1]})"
    return None


def _literal_kind(v: ast.expr) -> str | None:
    """"a str", "a list", … when the expression ``v`` itself builds such a value."""
    if isinstance(v, ast.Constant) and isinstance(v.value, (str, bytes)):
        return f"a {type(v.value).__name__}"
    if type(v) in _NOT_NUMBERS:
        return _NOT_NUMBERS[type(v)]
    if isinstance(v, ast.BinOp):
        return _literal_kind(v.left) or _literal_kind(v.right)
    if isinstance(v, ast.IfExp):
        return _literal_kind(v.body) or _literal_kind(v.orelse)
    return None


def _size_names(tree: ast.FunctionDef) -> frozenset[str]:
    """Names every assignment of which is a size (``A.shape[0]``, ``len(x)``, ``A.size``, an
    element of ``n, m = A.shape``) or a non-negative expression of sizes and non-negative
    int constants (``h = n // 2``, ``m = (n + 1) // 2``, ``t = n * k``, ``min``/``max``/
    ``abs`` of them): never negative."""
    def size(node: ast.AST) -> bool:
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute):
            return node.value.attr == "shape"
        if isinstance(node, ast.Attribute):
            return node.attr == "size"
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
            and node.func.id == "len"

    def nonneg(node: ast.AST, known: set[str]) -> bool:
        if size(node):
            return True
        if isinstance(node, ast.Constant):
            return type(node.value) is int and node.value >= 0
        if isinstance(node, ast.Name):
            return node.id in known
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mult,
                                                                  ast.FloorDiv)):
            return nonneg(node.left, known) and nonneg(node.right, known)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args \
                and not node.keywords:
            if node.func.id == "min":
                return all(nonneg(a, known) for a in node.args)
            if node.func.id == "max":
                return any(nonneg(a, known) for a in node.args)
            return node.func.id == "abs" and len(node.args) == 1
        return False

    binds: dict[str, list[ast.AST | None]] = {}  # None: a binding that is no plain value
    for n in ast.walk(tree):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(
            n, (ast.AugAssign, ast.AnnAssign, ast.For, ast.NamedExpr)) else []
        for t in targets:
            for name in (x for x in ast.walk(t) if isinstance(x, ast.Name)):
                if isinstance(n, ast.Assign) and t is name:
                    binds.setdefault(name.id, []).append(n.value)
                elif isinstance(n, ast.Assign) and isinstance(t, ast.Tuple) \
                        and name in t.elts and isinstance(n.value, ast.Attribute) \
                        and n.value.attr == "shape":  # n, m = A.shape
                    binds.setdefault(name.id, []).append(ast.Attribute(n.value, "size"))
                else:
                    binds.setdefault(name.id, []).append(None)
    params = {a.arg for a in (*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs)}
    known: set[str] = set()
    while True:  # each round may prove names bound from names proved before
        more = {k for k, vs in binds.items() if k not in known and k not in params
                and all(v is not None and nonneg(v, known) for v in vs)}
        if not more:
            return frozenset(known)
        known |= more


def _runs_once(lp: Loop, loops: list[Loop]) -> bool:
    """Whether ``lp`` runs at least one iteration whenever it is reached: a constant trip
    count of at least one, a span ``Σ c·v + k`` (``c > 0``, ``k >= 1``) over variables of
    loops around it that start at a constant >= 0 and count up (``range(i + 1)``), or the
    bounds of a loop around it (which runs, so its range is not empty) when no name in
    them is written inside that loop."""
    if lp.step is None or lp.lower is None or lp.upper is None:
        return False
    outer: list[Loop] = []
    p = lp.parent
    while p is not None:
        outer.append(loops[p])
        p = loops[p].parent
    span = lp.upper - lp.lower if lp.step > 0 else lp.lower - lp.upper
    counting = {o.var for o in outer if o.step is not None and o.step > 0
                and o.lower is not None and o.lower.is_const() and o.lower.const >= 0
                and o.var not in written_names(o.node.body)}
    if span.const >= 1 and all(c > 0 and v in counting and v not in span.opaque
                               for v, c in span.coefs.items()):
        return True
    names = {n for f in (lp.lower, lp.upper) for k in f.coefs
             for n in f.opaque.get(k, frozenset({k}))}
    return any(o.step == lp.step and o.lower == lp.lower and o.upper == lp.upper
               and not names & written_names(o.node.body) for o in outer)


def _descendants(loop: Loop, loops: list[Loop]) -> list[int]:
    out: list[int] = []
    todo = list(loop.children)
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(loops[c].children)
    return out


def analyze(fn: Callable[..., Any] | FunctionSource, *,
            arrays: Iterable[str] | Mapping[str, int] = (),
            fortran: Iterable[str] = ()) -> Report:
    """Find the loop nests of ``fn`` and decide, per loop, whether it may run in parallel.

    Parameters
    ----------
    fn : function
        A plain Python function (defined with ``def`` in a file or notebook cell) whose work
        is explicit ``for … in range(…)`` loops over NumPy arrays and scalars.
    arrays : iterable of str or mapping of str to int, optional
        Parameters known to be NumPy arrays (``search`` passes those of its arguments): an
        element store ``out[i] = v`` into one copies ``v``'s value, so ``out`` holds no
        reference to ``v`` (without it, ``out`` might be a list keeping ``v``). A mapping
        gives each array's number of dimensions, -1 for an array whose elements are not
        numbers (``{"A": 2}``, as ``search`` passes): a full-rank element read of a numeric
        array (``s = A[j, j]``) is then a number, not a view.
    fortran : iterable of str, optional
        Array parameters stored in Fortran (column-major) order (``search`` passes those of
        its arguments that are F- but not C-contiguous, a transposed view ``A.T`` among
        them): their first subscript is the unit-stride one, which the loop interchange
        for unit stride weighs (a speed choice only: any layout gives the same results).

    Returns
    -------
    Report
        One :class:`LoopReport` per loop in source order: read/write sets, private scalars,
        reductions, carried dependences (with distance vectors) and the verdict. Constructs
        that cannot be analyzed (unknown calls, attributes, global writes; a ``break`` for
        the ``for`` it leaves) make the loops around them ``"unsupported"`` (reason ``"unsupported:
        <construct> at line N"``; a ``while`` loop inside them is analyzed as part of their
        iterations); a function
        numba cannot compile as called (``*args``, ``**kwargs``, keyword-only parameters, a
        bound method, a generator, a ``try`` statement) has every loop unsupported and its
        reasons in ``report.refusals`` and ``report.notes`` (``search`` runs it as written).
        Nothing is raised for them. The analysis is conservative:
        when unsure, sequential. Array arguments are assumed not to alias one another
        (compiled variants check that at every call); names bound inside the function to
        views or aliases (``b = a[1:]``, ``a.T``, ``a.reshape(…)``, ``f(a)``), hidden writes
        (``np.add.at``, ``np.copyto``, ``out=``, ``np.random.*``) and subscripts that may be
        negative (``a[-i]`` wraps around) keep a loop sequential or unsupported, with the
        reason.
        ``report.blocks`` lists the nests recognized as function blocks (matmul, matvec, dot,
        axpy, transpose) with the NumPy call each maps to (:mod:`hetlab.offload.analysis.blocks`).

    Raises
    ------
    hetlab.InvalidInputError
        ``fn`` is not a Python function or its source is not available.

    Examples
    --------
    >>> from hetlab.offload import analyze
    >>> from hetlab.offload.examples import EXAMPLES
    >>> print(analyze(EXAMPLES["prefix_sum"].fn).loops[0].verdict)
    sequential
    """
    src = fn if isinstance(fn, FunctionSource) else read_function(fn)
    tree = build_tree(src.tree, src.namespace, src.first_line)
    ndims = {k: v for k, v in arrays.items() if v >= 0} if isinstance(arrays, Mapping) else {}
    aliases = alias_info(src.tree, src.namespace, src.first_line, frozenset(arrays), ndims)
    nonneg = _size_names(src.tree)
    readonly = read_only_elements(src.tree, src.namespace)
    reports = [_analyze_loop(lp, tree.loops, tree, src.namespace, aliases, nonneg, readonly)
               for lp in tree.loops]
    if src.refusals:  # the function runs as written: no loop of it is offloaded
        for rep in reports:
            own = rep.reasons if rep.verdict == UNSUPPORTED else []
            rep.verdict, rep.reasons = UNSUPPORTED, [*src.refusals, *own]
            rep.reductions, rep.private, rep.lastprivate = {}, [], []
        return Report(src.name, src.params, reports, [*src.refusals, *tree.notes], src, [],
                      aliases)
    blocks = find_blocks(tree.loops, aliases, nonneg, ndims)
    for b in blocks:  # the blocks' parallel helpers, defined in the namespace copy (.parhelp)
        install(b.numba_call or b.call, src.namespace)
    return Report(src.name, src.params, reports, tree.notes, src, blocks, aliases,
                  find_transforms(src.tree, tree, reports, aliases, frozenset(fortran)),
                  array_ranks=ndims)
