"""The loop-nest tree of a function and every array access in it, with unsupported constructs.

One walk over the function's AST records each ``for`` loop (bounds as affine forms), each array
element access (subscripts as affine forms or None, the loops around it) and, per loop, what
cannot be analyzed inside it (unknown calls, object attributes, return; a ``break`` only
for the ``for`` it leaves). A ``while`` loop is walked as part of the iterations of the
``for`` loops around it.
"""

from __future__ import annotations

import ast
import math
import types
from dataclasses import dataclass, field
from typing import Any

from .affine import Affine, to_affine
from .calls import FRESH_METHODS, hidden_write, imported_function, np_call_chain
from .floordiv import DivForm, to_divform
from .helpers import pure_helper
from .strided import Strided, to_strided

__all__ = ["Access", "Loop", "LoopTree", "build_tree", "SAFE_BUILTINS"]

#: builtins a loop body may call (pure, understood by numba)
SAFE_BUILTINS = frozenset({"abs", "min", "max", "int", "float", "bool", "round", "len", "range",
                           "pow", "complex", "prange", "sum", "divmod"})
_ARRAY_ATTRS = frozenset({"shape", "size", "ndim", "dtype", "T", "real", "imag"})
#: attributes of an element read that are values (a complex number's parts)
_ELEMENT_ATTRS = frozenset({"real", "imag"})
_SAFE_MODULES = frozenset({"numpy", "math", "cmath", "numba"})
#: array methods a loop body may call: they write nothing but an ``out=`` (refused) and
#: return new storage or a number (``.tolist()``/``.tobytes()`` leave numba's arrays)
_PURE_METHODS = FRESH_METHODS - {"tolist", "tobytes"}


@dataclass
class Access:
    """One array element access: ``array[subs]``, read or written, inside ``loops``."""

    array: str
    subs: tuple[Affine | None, ...]
    write: bool
    loops: tuple[int, ...]
    text: str
    line: int
    #: the subscripts with ``//`` and ``%`` by constants modelled (:mod:`.floordiv`)
    divs: tuple[DivForm | None, ...] = ()
    #: the subscripts that are linearized indices, read as digits (:mod:`.strided`)
    strided: tuple[Strided | None, ...] = ()


@dataclass
class Loop:
    """One ``for`` loop: variable, bounds, place in the tree and what blocks its analysis."""

    index: int
    var: str
    node: ast.For
    line: int
    parent: int | None
    depth: int
    lower: Affine | None = None
    upper: Affine | None = None
    step: int | None = 1
    #: the bounds with ``//`` and ``%`` by constants modelled (:mod:`.floordiv`)
    div_lower: DivForm | None = None
    div_upper: DivForm | None = None
    children: list[int] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)
    #: (statement list, index, owner) from the function body down to this loop's statement
    path: list[tuple[list[ast.stmt], int, str]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"L{self.index + 1}"


@dataclass
class LoopTree:
    """All loops (pre-order), all accesses, and constructs outside loops that were noted."""

    loops: list[Loop]
    accesses: list[Access]
    notes: list[str]


class _Walker:
    def __init__(self, namespace: dict[str, Any], line0: int) -> None:
        self.ns = namespace
        self.line0 = line0
        self.loops: list[Loop] = []
        self.accesses: list[Access] = []
        self.notes: list[str] = []
        self.stack: list[int] = []
        self.path: list[tuple[list[ast.stmt], int, str]] = []
        #: innermost last: True for each ``while`` around the statement, False for a ``for``
        #: (a ``break`` leaves only the innermost; out of a ``while`` it ends no ``for``)
        self.breakable: list[bool] = []
        #: names the function declares ``global``/``nonlocal``: a loop writing one is refused
        self.outer_names: frozenset[str] = frozenset()

    # -- helpers ---------------------------------------------------------------------------
    def line(self, node: ast.AST) -> int:
        return self.line0 + getattr(node, "lineno", 1) - 1

    def problem(self, text: str, node: ast.AST, innermost: bool = False) -> None:
        """Mark every loop around ``node`` unsupported (only the innermost with
        ``innermost``), or note it when no loop is around it."""
        msg = f"unsupported: {text} at line {self.line(node)}"
        if not self.stack:
            self.notes.append(msg)
        for i in self.stack[-1:] if innermost else self.stack:
            if msg not in self.loops[i].unsupported:
                self.loops[i].unsupported.append(msg)

    def is_module(self, node: ast.AST) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        if not isinstance(node, ast.Name):
            return False
        obj = self.ns.get(node.id)
        if isinstance(obj, types.ModuleType):
            return obj.__name__.split(".")[0] in _SAFE_MODULES
        return node.id in ("np", "numpy", "math")

    # -- expressions -----------------------------------------------------------------------
    def expr(self, node: ast.AST | None) -> None:
        if node is None:
            return
        if isinstance(node, ast.Subscript):
            self.subscript(node, write=False)
            return
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in _PURE_METHODS \
                    and not self.is_module(f):  # a.sum(), A[i].max(), x.astype(...)
                self.expr(f.value)
                self.hidden(node)
                for a in (*node.args, *(k.value for k in node.keywords)):
                    self.expr(a)
                return
            ok = (isinstance(f, ast.Name) and f.id in SAFE_BUILTINS
                  and not isinstance(self.ns.get(f.id), types.FunctionType)) \
                or (isinstance(f, ast.Name) and imported_function(f.id, self.ns) is not None) \
                or (isinstance(f, ast.Attribute) and self.is_module(f)) \
                or (isinstance(f, ast.Name) and not node.keywords
                    and pure_helper(f.id, self.ns) is not None)
            if not ok:
                self.problem(f"call to unknown function {ast.unparse(f)}() (it may write its "
                             "arguments or hidden state)", node)
            else:
                self.hidden(node)
            for a in node.args:
                self.expr(a)
            for k in node.keywords:
                self.expr(k.value)
            return
        if isinstance(node, ast.Attribute):
            if self.is_module(node):
                return
            if isinstance(node.value, ast.Name) and node.attr in _ARRAY_ATTRS:
                return
            if isinstance(node.value, ast.Subscript) and node.attr in _ELEMENT_ATTRS:
                self.subscript(node.value, write=False)  # z[i].real: a read of z[i]
                return
            self.problem(f"attribute access {ast.unparse(node)}", node)
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.GeneratorExp, ast.DictComp,
                             ast.SetComp, ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)):
            self.problem(f"{type(node).__name__.lower()} expression", node)
        for child in ast.iter_child_nodes(node):
            self.expr(child)

    def hidden(self, node: ast.Call) -> None:
        """Calls the walker otherwise accepts that write state they do not return."""
        if any(k.arg == "out" for k in node.keywords):
            self.problem(f"{ast.unparse(node.func)}(…, out=…) writes its out= array in place "
                         "(hidden write)", node)
        chain = np_call_chain(node.func, self.ns)
        if chain is not None and chain[0] == "numpy":
            why = hidden_write(chain)
            if why is not None:
                self.problem(f"hidden write: {why}", node)

    def subscript(self, node: ast.Subscript, write: bool) -> None:
        idx: list[ast.AST] = []
        base: ast.AST = node
        while isinstance(base, ast.Subscript):
            sl = base.slice
            idx[:0] = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
            base = base.value
        if isinstance(base, ast.Attribute) and base.attr == "shape":
            self.expr(base)
            return
        if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Name) \
                and base.attr in _ARRAY_ATTRS:
            name, subs = base.value.id, tuple(None for _ in idx)
        elif isinstance(base, ast.Name):
            name = base.id
            subs = tuple(None if isinstance(i, ast.Slice) else to_affine(i) for i in idx)
        else:
            self.expr(base)
            name, subs = ast.unparse(base), tuple(None for _ in idx)
        divs = tuple(None if isinstance(i, ast.Slice) or not isinstance(base, ast.Name)
                     else to_divform(i) for i in idx)
        loop_vars = {self.loops[li].var for li in self.stack}
        strided = tuple(None if isinstance(i, ast.Slice) or not isinstance(base, ast.Name)
                        else to_strided(i, loop_vars) for i in idx)
        self.accesses.append(Access(name, subs, write, tuple(self.stack), ast.unparse(node),
                                    self.line(node), divs, strided))
        for i in idx:
            self.expr(i)

    def target(self, node: ast.AST, aug: bool) -> None:
        if isinstance(node, ast.Subscript):
            if aug:
                self.subscript(node, write=False)
            self.subscript(node, write=True)
        elif isinstance(node, (ast.Tuple, ast.List)):
            for e in node.elts:
                self.target(e, aug)
        elif isinstance(node, ast.Starred):
            self.target(node.value, aug)
        elif isinstance(node, ast.Attribute):
            self.problem(f"store to attribute {ast.unparse(node)}", node)
            self.expr(node.value)
        elif isinstance(node, ast.Name):
            if node.id in self.outer_names:
                self.problem(f"write to global or nonlocal {node.id} (a compiled loop cannot "
                             "write it)", node)
        else:
            self.expr(node)

    # -- statements ------------------------------------------------------------------------
    def body(self, stmts: list[ast.stmt], owner: str) -> None:
        for k, s in enumerate(stmts):
            self.path.append((stmts, k, owner))
            self.stmt(s)
            self.path.pop()

    def stmt(self, s: ast.stmt) -> None:
        if isinstance(s, ast.For):
            self.for_loop(s)
        elif isinstance(s, ast.While):
            self.while_loop(s)
        elif isinstance(s, ast.If):
            self.expr(s.test)
            self.body(s.body, "if")
            self.body(s.orelse, "if")
        elif isinstance(s, ast.Assign):
            self.expr(s.value)
            for t in s.targets:
                self.target(t, aug=False)
        elif isinstance(s, ast.AugAssign):
            self.expr(s.value)
            self.target(s.target, aug=True)
        elif isinstance(s, ast.AnnAssign):
            self.expr(s.value)
            self.target(s.target, aug=False)
        elif isinstance(s, (ast.Expr, ast.Return)):
            if isinstance(s, ast.Return) and self.stack:
                self.problem("return inside the loop", s)
            self.expr(s.value)
        elif isinstance(s, ast.Break):
            if not (self.breakable and self.breakable[-1]):
                # it ends the innermost ``for`` early: that loop is not analyzable, while
                # each iteration of the loops around it still runs whole (their dependences
                # count every iteration of it, which covers the ones it skips)
                self.problem("break", s, innermost=True)
        elif isinstance(s, (ast.Continue, ast.Pass)):
            pass
        elif isinstance(s, ast.Assert):
            self.expr(s.test)
        else:
            self.problem(f"{type(s).__name__} statement", s)

    def while_loop(self, s: ast.While) -> None:
        """A ``while`` inside ``for`` loops runs within one iteration of each (an escape-time
        or Newton iteration per element): its accesses and scalars belong to those iterations,
        its ``break`` ends only itself. Its trip count is unknown, so no ``for`` loop inside
        it is ever tiled or interchanged across it (it is not part of the loop tree)."""
        if not self.stack:  # noted as before: a while loop is not a loop of the tree
            self.problem("while loop", s)
        if s.orelse:
            self.problem("while … else", s)
        self.expr(s.test)
        self.breakable.append(True)
        self.body(s.body, "loop")
        self.breakable.pop()

    def for_loop(self, s: ast.For) -> None:
        parent = self.stack[-1] if self.stack else None
        var = s.target.id if isinstance(s.target, ast.Name) else ast.unparse(s.target)
        loop = Loop(len(self.loops), var, s, self.line(s), parent, len(self.stack),
                    path=list(self.path))
        self.loops.append(loop)
        if parent is not None:
            self.loops[parent].children.append(loop.index)
        it = s.iter
        is_range = (isinstance(it, ast.Call) and not it.keywords and 1 <= len(it.args) <= 3
                    and ((isinstance(it.func, ast.Name) and it.func.id in ("range", "prange"))
                         or (isinstance(it.func, ast.Attribute) and it.func.attr == "prange")))
        self.expr(it)
        self.stack.append(loop.index)
        if not isinstance(s.target, ast.Name):
            self.problem("loop target is not a plain name", s)
        if is_range and any(isinstance(a, ast.Starred) for a in it.args):  # type: ignore[union-attr]
            self.problem("range() with unpacked (*) arguments: bounds and step unknown", s)
            loop.step = None
        elif not is_range:
            self.problem("for loop over something other than range()", s)
            loop.step = None
        else:
            args = [to_affine(a) for a in it.args]  # type: ignore[union-attr]
            divs = [to_divform(a) for a in it.args]  # type: ignore[union-attr]
            if len(args) == 1:
                loop.lower, loop.upper = Affine(), args[0]
                loop.div_lower, loop.div_upper = DivForm(Affine()), divs[0]
            else:
                loop.lower, loop.upper = args[0], args[1]
                loop.div_lower, loop.div_upper = divs[0], divs[1]
            if len(args) == 3:
                st = args[2]
                loop.step = st.const if st is not None and st.is_const() and st.const else None
                if loop.step is None:
                    self.problem("range() step is not a nonzero integer constant", s)
        if s.orelse:
            self.problem("for … else", s)
        self.breakable.append(False)
        self.body(s.body, "loop")
        self.breakable.pop()
        self.stack.pop()


def build_tree(tree: ast.FunctionDef, namespace: dict[str, Any], first_line: int) -> LoopTree:
    """Walk a function definition; loops are numbered in source (pre-)order."""
    w = _Walker(namespace, first_line)
    w.outer_names = frozenset(name for n in ast.walk(tree)
                              if isinstance(n, (ast.Global, ast.Nonlocal)) for name in n.names)
    w.body(tree.body, "func")
    return LoopTree(w.loops, w.accesses, w.notes)


def trip_span(loop: Loop) -> float:
    """Largest ``e`` in ``var = lower + step·e`` when the trip count is a constant, else inf."""
    if loop.lower is None or loop.upper is None or not loop.step:
        return math.inf
    diff = loop.upper - loop.lower
    if not diff.is_const():
        return math.inf
    trip = max(0, -(-diff.const // loop.step))
    return float(trip - 1)
