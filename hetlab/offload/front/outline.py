"""Find the loops of a function that can be cut out of it and compiled alone (outlining).

A function with a formatted ``print``, a dict, a ``try`` statement or a call numba lacks
*outside* its loops cannot be compiled as a whole, so :func:`hetlab.offload.search` runs it
as written; its loops often could compile. This module finds them: a **segment** is one loop
that is not inside another loop (so it runs at most once per call), inside the function's
body or an ``if``/``with`` block of it (never a ``try``: numba raises other exceptions than
Python, e.g. none for an index out of range), together with the plain assignments before it
that set up the names it reads (``s = 0.0``, ``i = 0`` before a ``while``, ``out =
np.empty(n)``). The loops in the body of a loop that cannot be outlined itself (a ``print``
of each epoch in it) are segments too, found on request (``find_segments(tree, under=…)``).

Moving an earlier assignment into the segment reorders it past the statements between the
two; that is done only for an assignment of a *pure* expression (constants, names,
arithmetic: no call, no subscript) whose names those statements neither read nor write. An
assignment right before the loop (nothing between) may hold calls. None may read a name it or
a later one of them binds (``x = np.asarray(x)``, ``s *= 2``): the segment's inputs are the
values recorded when the loop is reached, after those bindings. When the segment with its
assignments does not compile (a call numba lacks among them), the loop alone is tried
(:attr:`Segment.bare`).

The segment's interface is decided when the function runs (:mod:`hetlab.offload.searching.
outline` records the names bound when the loop is reached):

- its **inputs** are the names it reads that are bound then (minus those its own
  assignments bind first);
- its **outputs** (:attr:`Segment.live_out`) are the names it binds that are live after it:
  read later before being bound again (a liveness analysis; a later loop's body may run zero
  times, a ``try`` binds nothing for sure); each must be bound when the segment ends — bound
  before it or by one of its own assignments — or the segment is not outlined.

This module only reads and rewrites syntax trees (it does not import the analysis).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

__all__ = ["Segment", "block_at", "find_segments", "progress_bars", "segment_def", "with_records",
           "with_calls"]

#: constructs a segment cannot hold: they leave the loop (return), make the function
#: something else (yield, await), bind names in other scopes (global, nonlocal, nested
#: definitions, lambdas, imports, del) or catch exceptions numba raises differently (try)
_NOT_IN_SEGMENT: tuple[type, ...] = (
    ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Global, ast.Nonlocal,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.Delete, ast.Try,
    getattr(ast, "TryStar", ast.Try), ast.Import, ast.ImportFrom, ast.AsyncFor, ast.AsyncWith)

#: expression nodes numba cannot compile in an assignment moved into a segment
_NOT_IN_PREFIX: tuple[type, ...] = (
    ast.JoinedStr, ast.Dict, ast.DictComp, ast.Set, ast.SetComp, ast.ListComp,
    ast.GeneratorExp, ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr,
    ast.Starred)

#: expression nodes of a pure assignment (moved past other statements)
_PURE: tuple[type, ...] = (
    ast.Constant, ast.Name, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp,
    ast.Tuple, ast.Load, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)

#: how far before its loop an assignment is looked for
_PREFIX_REACH = 12


@dataclass(frozen=True)
class Segment:
    """One loop of a function, with the assignments moved in with it.

    ``path`` leads from the function's body to the block holding the loop: ``((3, "body"),)``
    is the body of the function's fourth statement (an ``if``); ``()`` the function's body.
    """

    #: 1-based, in the order the loops appear in the source
    index: int
    path: tuple[tuple[int, str], ...]
    #: positions in that block of the statements moved in (ascending), then of the loop
    members: tuple[int, ...]
    #: line of the loop in the function's dedented source (1 = the ``def``)
    line: int
    #: names the segment may read before binding them (live at its start), in the order
    #: they first appear: its inputs are those bound when it is reached
    reads: tuple[str, ...]
    #: names it binds that are live after it (read later before being bound again):
    #: returned by the outlined function
    live_out: tuple[str, ...]
    #: names its moved-in assignments bind before the loop (never inputs)
    bound_first: frozenset[str]
    #: why the loop is not outlined ("" when it can be)
    refusal: str = ""
    #: the loop alone, without its moved-in assignments (tried when this one fails)
    bare: Segment | None = None

    @property
    def loop(self) -> int:
        """Position of the loop in its block."""
        return self.members[-1]


class _Names(ast.NodeVisitor):
    """Names read and bound by some statements, in source order; a comprehension's own
    variables are its own; names read inside nested functions and lambdas count as read."""

    def __init__(self) -> None:
        self.loads: dict[str, None] = {}
        self.stores: dict[str, None] = {}

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.loads.setdefault(node.id)
        else:  # Store, Del
            self.stores.setdefault(node.id)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):  # reads the name before binding it
            self.loads.setdefault(node.target.id)
        self.generic_visit(node)

    def _comprehension(self, node: ast.AST) -> None:
        inner = _Names()
        inner.generic_visit(node)
        own = {n.id for g in node.generators for n in ast.walk(g.target)  # type: ignore[attr-defined]
               if isinstance(n, ast.Name)}
        for n in inner.loads:
            if n not in own:
                self.loads.setdefault(n)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension

    def _nested(self, node: ast.AST) -> None:
        inner = _Names()  # a closure reads the enclosing function's names
        inner.generic_visit(node)
        for n in inner.loads:
            self.loads.setdefault(n)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.stores.setdefault(node.name)

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = visit_ClassDef = _nested


def _names(nodes: Iterable[ast.AST]) -> _Names:
    v = _Names()
    for n in nodes:
        v.visit(n)
    return v


def _has(nodes: Iterable[ast.AST], kinds: tuple[type, ...]) -> ast.AST | None:
    for n in nodes:
        for sub in ast.walk(n):
            if isinstance(sub, kinds):
                return sub
    return None


def _assigned_names(stmt: ast.stmt) -> list[str] | None:
    """Names a plain assignment binds (``a = …``, ``a, b = …``, ``a += …``, ``a: t = …``);
    None for any other statement or target (a subscript, an attribute)."""
    if isinstance(stmt, ast.Assign):
        targets: list[ast.expr] = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)) and stmt.value is not None:
        targets = [stmt.target]
    else:
        return None
    out: list[str] = []
    for t in targets:
        parts = t.elts if isinstance(t, ast.Tuple) else [t]
        if not all(isinstance(p, ast.Name) for p in parts):
            return None
        out.extend(p.id for p in parts)  # type: ignore[attr-defined]
    return out


def _prefix(block: list[ast.stmt], at: int) -> list[int]:
    """Positions of the assignments before ``block[at]`` (a loop) moved in with it."""
    members = [at]
    reads = set(_names([block[at]]).loads)
    bound_after: set[str] = set()  # by the assignments already moved in
    between_loads: set[str] = set()
    between_stores: set[str] = set()
    for j in range(at - 1, max(at - 1 - _PREFIX_REACH, -1), -1):
        stmt = block[j]
        names = _names([stmt])
        bound = _assigned_names(stmt)
        value = getattr(stmt, "value", None)
        # it may not read what it or a later one binds (``x = np.asarray(x)``, ``s *= 2``):
        # the inputs are recorded when the loop is reached, after those bindings
        usable = (bound is not None and value is not None and bool(reads & set(bound))
                  and _has([value], _NOT_IN_PREFIX) is None
                  and not set(names.loads) & (set(bound) | bound_after))
        if usable and (between_loads or between_stores):  # moved past other statements
            usable = (all(isinstance(n, _PURE) for n in ast.walk(value))
                      and not set(names.stores) & (between_loads | between_stores)
                      and not set(names.loads) & between_stores)
        if usable:
            members.insert(0, j)
            reads |= set(names.loads)
            bound_after |= set(bound or ())
        else:
            between_loads |= set(names.loads)
            between_stores |= set(names.stores)
    return members


def _blocks(body: list[ast.stmt], path: tuple[tuple[int, str], ...] = ()
            ) -> Iterable[tuple[tuple[tuple[int, str], ...], list[ast.stmt]]]:
    """The function's blocks that run at most once per call: its body, and the bodies of
    ``if``/``with`` statements in them (loops and ``try`` statements not entered)."""
    yield path, body
    for k, stmt in enumerate(body):
        if isinstance(stmt, ast.If):
            yield from _blocks(stmt.body, (*path, (k, "body")))
            yield from _blocks(stmt.orelse, (*path, (k, "orelse")))
        elif isinstance(stmt, ast.With):
            yield from _blocks(stmt.body, (*path, (k, "body")))


def block_at(tree: ast.FunctionDef, path: tuple[tuple[int, str], ...]) -> list[ast.stmt]:
    """The block ``path`` leads to in ``tree`` (see :class:`Segment`)."""
    body = tree.body
    for k, name in path:
        body = getattr(body[k], name)
    return body


def find_segments(tree: ast.FunctionDef, under: tuple[tuple[int, str], ...] | None = None,
                  first: int = 1) -> list[Segment]:
    """The loops of ``tree`` that run at most once per call, each with its prefix
    assignments, its reads and outputs, or the reason it cannot be outlined.

    ``under``: instead, the loops in the block this path leads to, the body of a loop that
    cannot be outlined itself (a ``print`` in it, a ``return``): ``seg.path + ((seg.loop,
    "body"),)``; they run once per iteration of it. ``first``: the index of the first
    segment found.

    Examples
    --------
    >>> import ast
    >>> src = '''
    ... def f(x):
    ...     s = 0.0
    ...     for v in x:
    ...         s += v * v
    ...     print(f"{s:.3f}")
    ...     return s
    ... '''
    >>> seg, = find_segments(ast.parse(src).body[0])
    >>> seg.members, seg.reads, seg.live_out, sorted(seg.bound_first)
    ((0, 1), ('x',), ('s',), ['s'])
    """
    found: list[tuple[int, tuple[tuple[int, str], ...], list[int], ast.stmt]] = []
    body = block_at(tree, under) if under is not None else tree.body
    for path, block in _blocks(body, under or ()):
        for k, stmt in enumerate(block):
            if isinstance(stmt, (ast.For, ast.While)):
                found.append((stmt.lineno, path, _prefix(block, k), stmt))
    found.sort(key=lambda f: f[0])
    out: list[Segment] = []
    for index, (line, path, members, loop) in enumerate(found, start=first):
        block = block_at(tree, path)
        stmts = [block[m] for m in members]
        live = _live_after(tree, path, members[-1])
        bad = _has([loop], _NOT_IN_SEGMENT)
        refusal = (f"a {type(bad).__name__.lower()} statement or expression in the loop "
                   f"(line {getattr(bad, 'lineno', line)})" if bad is not None else "")
        seg = _segment(index, path, members, line, stmts, live, refusal)
        if len(members) > 1 and not refusal:
            seg = replace(seg, bare=_segment(index, path, members[-1:], line, stmts[-1:], live,
                                             refusal))
        out.append(seg)
    return out


def _segment(index: int, path: tuple[tuple[int, str], ...], members: list[int], line: int,
             stmts: list[ast.stmt], live: set[str], refusal: str) -> Segment:
    """The segment of ``stmts`` (its moved-in assignments, then its loop), given the names
    ``live`` after it."""
    names = _names(stmts)
    bound_first = frozenset(n for s in stmts[:-1] for n in _assigned_names(s) or ())
    live_out = tuple(n for n in names.stores if n in live)
    live_in = _live(stmts, set(live_out))
    reads = tuple(n for n in dict.fromkeys([*names.loads, *live_out]) if n in live_in)
    return Segment(index, path, tuple(members), line, reads, live_out, bound_first, refusal)


def _stored(node: ast.AST) -> set[str]:
    """Names a simple statement surely binds (comprehension and nested scopes excluded)."""
    out: set[str] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif not isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                ast.GeneratorExp, ast.NamedExpr)):
            todo.extend(ast.iter_child_nodes(n))
    return out


def _reads(*nodes: ast.AST | None) -> set[str]:
    return set(_names([n for n in nodes if n is not None]).loads)


def _live(stmts: list[ast.stmt], live: set[str]) -> set[str]:
    """Names read by ``stmts`` before they bind them, given ``live`` after them (liveness,
    backwards; a loop's body may run zero times, a ``try`` kills nothing)."""
    for stmt in reversed(stmts):
        if isinstance(stmt, ast.If):
            live = _live(stmt.body, live) | _live(stmt.orelse, live) | _reads(stmt.test)
        elif isinstance(stmt, (ast.For, ast.While)):
            live = _head(stmt, live) | _reads(stmt.iter if isinstance(stmt, ast.For) else None)
        elif isinstance(stmt, ast.With):
            bound = set().union(*(_stored(i.optional_vars) for i in stmt.items
                                  if i.optional_vars is not None))
            live = (_live(stmt.body, live) - bound) | _reads(*(i.context_expr
                                                              for i in stmt.items))
        elif isinstance(stmt, (ast.Return, ast.Raise)):
            live = _reads(stmt)
        elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr,
                               ast.FunctionDef, ast.ClassDef)):
            live = (live - _stored(stmt)) | _reads(stmt)
        else:  # try, match, del, assert, …: every name read, none killed
            live = live | _reads(stmt)
    return live


def _head(loop: ast.For | ast.While, live: set[str]) -> set[str]:
    """Names live at the head of ``loop`` (where its body's end goes back to: a ``for``
    binds its target after it), given ``live`` after the loop."""
    exit_ = _live(loop.orelse, live)
    head = exit_ | live
    for _ in range(3):  # the body's end reaches its head again (or, by break, after)
        body = _live(loop.body, head | live)
        if isinstance(loop, ast.For):
            body -= _stored(loop.target)
        head = exit_ | body | (_reads(loop.test) if isinstance(loop, ast.While) else set())
    return head


def _live_after(tree: ast.FunctionDef, path: tuple[tuple[int, str], ...], at: int
                ) -> set[str]:
    """Names live after ``block_at(tree, path)[at]`` (the function's end: none; a loop
    body's end: its loop's head)."""
    after: set[str] = set()
    if path:
        k, field = path[-1]
        after = _live_after(tree, path[:-1], k)
        holder = block_at(tree, path[:-1])[k]
        if isinstance(holder, (ast.For, ast.While)) and field == "body":
            after = _head(holder, after) | after
    return _live(block_at(tree, path)[at + 1:], after)


def progress_bars(stmts: Iterable[ast.stmt], kind: Callable[[ast.expr], str]
                  ) -> list[ast.For]:
    """The ``for`` loops among ``stmts`` (at any depth) whose iterable is a progress bar:
    ``kind(call.func)`` is ``"tqdm"`` (``tqdm(it, …)``: iterates ``it``) or ``"trange"``
    (``trange(a, b, …)``: iterates ``range(a, b, …)``)."""
    return [n for s in stmts for n in ast.walk(s)
            if isinstance(n, ast.For) and isinstance(n.iter, ast.Call) and n.iter.args
            and not any(isinstance(a, ast.Starred) for a in n.iter.args)
            and kind(n.iter.func) in ("tqdm", "trange")]


def _drop_progress(stmts: list[ast.stmt], kind: Callable[[ast.expr], str]) -> None:
    """Each progress bar of :func:`progress_bars` replaced, in place, by what it iterates."""
    for loop in progress_bars(stmts, kind):
        call = loop.iter
        assert isinstance(call, ast.Call)
        loop.iter = (call.args[0] if kind(call.func) == "tqdm"
                     else ast.Call(ast.Name("range", ast.Load()), call.args[:3], []))


def segment_def(tree: ast.FunctionDef, seg: Segment, name: str, params: list[str],
                progress: Callable[[ast.expr], str] | None = None) -> str:
    """Source of ``def name(*params): <the segment>; return (*live_out,)`` (no return
    statement when nothing is live out); with ``progress`` (see :func:`progress_bars`),
    its progress bars replaced by what they iterate."""
    block = block_at(tree, seg.path)
    body = [copy.deepcopy(block[m]) for m in seg.members]
    if progress is not None:
        _drop_progress(body, progress)
    if seg.live_out:
        body.append(ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in seg.live_out],
                                         ast.Load())))
    fn = ast.FunctionDef(name=name, args=ast.arguments(
        posonlyargs=[], args=[ast.arg(p) for p in params], kwonlyargs=[], kw_defaults=[],
        defaults=[]), body=body, decorator_list=[], returns=None, type_params=[])
    return ast.unparse(ast.fix_missing_locations(fn)) + "\n"


def _rewrite(tree: ast.FunctionDef, segments: list[Segment],
             make: dict[int, ast.stmt], around: dict[int, ast.stmt] | None = None
             ) -> ast.FunctionDef:
    """A copy of ``tree`` where ``make[index]`` replaces each segment (its loop; its
    moved-in assignments removed), or, with ``around``, is put before its loop and
    ``around[index]`` after it."""
    out = copy.deepcopy(tree)
    blocks = {seg.index: block_at(out, seg.path) for seg in segments}  # before any edit
    dropped: list[tuple[list[ast.stmt], int]] = []
    for seg in sorted(segments, key=lambda s: s.loop, reverse=True):
        block = blocks[seg.index]
        if around is not None:  # inserting at the later places first keeps the earlier ones
            block.insert(seg.loop + 1, around[seg.index])
            block.insert(seg.loop, make[seg.index])
        else:
            block[seg.loop] = make[seg.index]
            dropped.extend((block, m) for m in seg.members[:-1])
    for block, m in sorted(dropped, key=lambda d: d[1], reverse=True):
        del block[m]  # after every replacement: positions are the original ones till here
    return ast.fix_missing_locations(out)


def with_records(tree: ast.FunctionDef, segments: list[Segment], recorder: str
                 ) -> ast.FunctionDef:
    """A copy of ``tree`` calling ``recorder(index, locals())`` right before each segment's
    loop and ``recorder(index, None)`` right after it (the function otherwise unchanged)."""
    def call(index: int, frame: ast.expr) -> ast.stmt:
        return ast.Expr(ast.Call(ast.Name(recorder, ast.Load()), [ast.Constant(index), frame],
                                 []))

    make = {s.index: call(s.index, ast.Call(ast.Name("locals", ast.Load()), [], []))
            for s in segments}
    after = {s.index: call(s.index, ast.Constant(None)) for s in segments}
    return _rewrite(tree, segments, make, after)


def with_calls(tree: ast.FunctionDef, calls: dict[int, tuple[Segment, str, list[str]]]
               ) -> ast.FunctionDef:
    """A copy of ``tree`` where each segment (``calls[index] = (segment, callee, inputs)``)
    is replaced by ``(*live_out,) = callee(*inputs)`` at its loop's place (its moved-in
    assignments removed from theirs)."""
    make: dict[int, ast.stmt] = {}
    for index, (seg, callee, inputs) in calls.items():
        call = ast.Call(ast.Name(callee, ast.Load()),
                        [ast.Name(p, ast.Load()) for p in inputs], [])
        make[index] = (ast.Assign([ast.Tuple([ast.Name(n, ast.Store()) for n in seg.live_out],
                                             ast.Store())], call)
                       if seg.live_out else ast.Expr(call))
    return _rewrite(tree, [c[0] for c in calls.values()], make)
