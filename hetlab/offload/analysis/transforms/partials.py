"""Per-iteration partials for ``prange`` reductions numba would drop.

numba (0.68) does not recognize a reduction variable of a ``prange`` loop whose updates all sit
in a loop nested under an ``if`` of the body: the variable then keeps its value from before
the loop (the fifth held-out probe found it; the scalar-replacement guard ``if 0 < n:`` of
:mod:`.rewrite` makes the same shape from a plain nest)::

    for i in prange(n):
        if x[i] > 0.5:
            for j in range(m):
                s += x[j]          # numba returns s unchanged

The same reduction accumulated in a variable of the iteration and added once at the body's
top level is recognized, so each such reduction becomes::

    for i in prange(n):
        _hl_p0 = 0
        if x[i] > 0.5:
            for j in range(m):
                _hl_p0 += x[j]
        s += _hl_p0

``+`` (and ``-=`` updates) start the partial at 0 and add it, ``*`` starts at 1 and multiplies,
``min``/``max`` start at the variable's value before the loop (read into ``_hl_p0s`` there:
the operation is idempotent) and combine with ``min``/``max``. A body with a ``continue`` at
its own level would skip the combination: such a body is written without it — ``if c:
continue`` then ``rest`` becomes ``if c: pass else: rest`` — so the combination after it runs
on every iteration (a ``continue`` in a ``with`` or ``try`` refuses the variant,
:class:`~hetlab.errors.InvalidInputError`, a candidate the search scores 0).

numba also rejects a reduction variable that a ``prange`` body updates more than once
(``s += x[i]; s += 1.0``: "Use of reduction variable s other than in a supported reduction
function"; the fuzzer found it): all of such a body's updates go to one partial the same way,
combined once at the end of the iteration.
"""

from __future__ import annotations

import ast
import copy

from ....errors import InvalidInputError
from ..scalars import reduction_op, update_op
from .rewrite import loop_id
from .statements import Rename, is_prange, splice

__all__ = ["local_partials", "reduction_operand_first"]


def _updates_in_loop(stmts: list[ast.stmt], in_loop: bool, out: set[str]) -> None:
    """Names updated (``s += e``, ``s = max(s, e)``) inside a loop of ``stmts``."""
    for s in stmts:
        if isinstance(s, (ast.For, ast.While)):
            _updates_in_loop(s.body, True, out)
            _updates_in_loop(s.orelse, True, out)
        elif isinstance(s, ast.If):
            _updates_in_loop(s.body, in_loop, out)
            _updates_in_loop(s.orelse, in_loop, out)
        elif in_loop:
            out |= {t.id for t in ast.walk(s) if isinstance(t, ast.Name)
                    and isinstance(t.ctx, ast.Store) and update_op(s, t.id) is not None}


def _risky_ifs(owner: ast.For | ast.While, stmts: list[ast.stmt],
               out: list[tuple[ast.For | ast.While, ast.If, set[str]]]) -> None:
    """The outermost ``if`` statements of ``stmts`` holding a loop that updates a name, each
    with its nearest enclosing loop ``owner`` and the names."""
    for s in stmts:
        if isinstance(s, ast.If):
            names: set[str] = set()
            _updates_in_loop([s], False, names)
            if names:
                out.append((owner, s, names))
                continue
            _risky_ifs(owner, s.body, out)
            _risky_ifs(owner, s.orelse, out)
        elif isinstance(s, (ast.For, ast.While)):
            _risky_ifs(s, s.body, out)


def _has_continue(stmts: list[ast.stmt]) -> bool:
    """A ``continue`` of the loop owning ``stmts`` (not of a loop inside them)."""
    for s in stmts:
        if isinstance(s, ast.Continue):
            return True
        if isinstance(s, ast.If) and (_has_continue(s.body) or _has_continue(s.orelse)):
            return True
        if isinstance(s, (ast.With, ast.Try)) and any(
                isinstance(n, ast.Continue) for n in ast.walk(s)):
            return True  # not rewritten: refused by the caller
    return False


def _structured(stmts: list[ast.stmt], rest: list[ast.stmt]) -> list[ast.stmt] | None:
    """Statements that run ``stmts`` then ``rest`` where a ``continue`` in ``stmts`` skips
    what follows it, ``rest`` included — with no ``continue``: an ``if`` holding one gets
    what follows it in each branch that does not end in one. None when a ``continue`` sits
    in a ``with`` or ``try``."""
    if not stmts:
        return rest
    s, tail = stmts[0], stmts[1:]
    if isinstance(s, ast.Continue):
        return []
    if not _has_continue([s]):
        after = _structured(tail, rest)
        return None if after is None else [s, *after]
    if not isinstance(s, ast.If):
        return None
    after = _structured(tail, rest)
    if after is None:
        return None
    body = _structured(s.body, after)
    orelse = _structured(s.orelse, copy.deepcopy(after))
    if body is None or orelse is None:
        return None
    return [ast.If(s.test, body or [ast.Pass()], orelse)]


#: a body rewritten without ``continue`` may repeat the statements after each ``if`` holding
#: one; beyond this many times the original size, the variant is refused instead
_GROWTH = 4


def _combine_every_iteration(loop: ast.For | ast.While, where: str) -> str | None:
    """When ``loop``'s body may ``continue`` (which would skip a partial's combination at its
    end), rewrite it without: ``if c: continue`` followed by ``rest`` becomes ``if c: pass
    else: rest`` (:func:`_structured`). The note, or None when there is no ``continue``;
    :class:`~hetlab.errors.InvalidInputError` when it cannot be rewritten (a ``continue``
    in a ``with`` or ``try``, or a body that would grow too much)."""
    if not _has_continue(loop.body):
        return None
    new = _structured(loop.body, [])
    size = sum(1 for s in loop.body for _ in ast.walk(s))
    if new is None or sum(1 for s in new for _ in ast.walk(s)) > _GROWTH * size:
        raise InvalidInputError(
            f"offload: {where} holds a reduction numba needs combined once per iteration, "
            "next to a continue that cannot be rewritten as if/else; this variant is not "
            "generated.")
    loop.body = new or [ast.Pass()]
    return ("body written without continue (the statements after each if holding one in "
            "its other branch): the partial's combination runs on every iteration")


_INIT = {"+": "0", "*": "1"}
_COMBINE = {"+": "{s} += {p}", "*": "{s} *= {p}", "max": "{s} = max({s}, {p})",
            "min": "{s} = min({s}, {p})"}


_Found = list[tuple[ast.For | ast.While, ast.If, set[str]]]


def _found(node: ast.For) -> _Found:
    found: _Found = []
    _risky_ifs(node, node.body, found)
    return found


def _owners(found: _Found, ops: dict[str, str | None]) -> list[ast.For | ast.While]:
    """The loops of ``found`` that get a partial (a reduction among their names)."""
    out: dict[int, ast.For | ast.While] = {}
    for o, _, names in found:
        if any(ops.get(n) for n in names):
            out.setdefault(id(o), o)
    return list(out.values())


def local_partials(func: ast.FunctionDef) -> list[str]:
    """Rewrite the ``prange`` loops of ``func`` (in place) whose reductions numba would drop
    (module docstring); one line per reduction rewritten."""
    notes: list[str] = []
    k = 0
    for node in [n for n in ast.walk(func) if is_prange(n)]:
        assert isinstance(node, ast.For)
        where = loop_id(node) or f"the prange loop over {ast.unparse(node.target)}"
        found = _found(node)
        ops = {name: reduction_op(node.body, name) for _, _, names in found for name in names}
        rewritten = False
        for loop in _owners(found, ops):  # first without continue: the ifs may be copied
            once = _combine_every_iteration(loop, where)
            if once is not None:
                notes.append(f"{where}: {once}")
                rewritten = True
        if rewritten:
            found = _found(node)
        before: list[ast.stmt] = []
        for owner in list(dict.fromkeys(id(o) for o, _, _ in found)):
            group = [(o, i, n) for o, i, n in found if id(o) == owner]
            loop = group[0][0]
            todo = sorted({name for _, _, n in group for name in n if ops.get(name)})
            if not todo:
                continue
            for name in todo:
                p = _partial(loop, [stmt for _, stmt, _ in group], name, ops[name], k, before)
                k += 1
                notes.append(f"{where}: reduction {name} ({ops[name]}) accumulated in {p} "
                             "around the if holding its loop (numba drops a reduction updated "
                             "only in a loop under an if)")
        repeated = sorted(_repeated_updates(node))
        if repeated:
            once = _combine_every_iteration(node, where)
            if once is not None:
                notes.append(f"{where}: {once}")
        for name in repeated:
            op = reduction_op(node.body, name)
            assert op is not None
            p = _partial(node, list(node.body), name, op, k, before)
            k += 1
            notes.append(f"{where}: reduction {name} ({op}), updated more than once per "
                         f"iteration, accumulated in {p} and combined once (numba rejects a "
                         "reduction variable used twice)")
        if before:
            splice(func.body, node, [*before, node])
    return notes


def _partial(loop: ast.For | ast.While, stmts: list[ast.stmt], name: str, op: str, k: int,
             before: list[ast.stmt]) -> str:
    """Rename the reduction ``name`` to the partial ``_hl_p<k>`` in ``stmts`` (statements of
    ``loop``'s body, changed in place), start the partial at the top of ``loop``'s body and
    combine it into ``name`` at its end; a ``min``/``max`` partial starts from ``name``'s value
    before the prange loop, read by a statement appended to ``before``. Returns the partial's
    name."""
    p = f"_hl_p{k}"
    for stmt in stmts:
        new = Rename({name: p}).visit(stmt)
        assert new is stmt
    if op in _INIT:
        init = f"{p} = {_INIT[op]}"
    else:
        before.append(ast.parse(f"{p}s = {name}").body[0])
        init = f"{p} = {p}s"
    loop.body.insert(0, ast.parse(init).body[0])
    loop.body.append(ast.parse(_COMBINE[op].format(s=name, p=p)).body[0])
    return p


def _repeated_updates(node: ast.For) -> set[str]:
    """The reductions of the prange loop ``node`` (every use an update of one kind) updated by
    more than one statement of its body: numba accepts one."""
    counts: dict[str, int] = {}
    for s in ast.walk(node):
        if isinstance(s, (ast.Assign, ast.AugAssign)):
            t = s.target if isinstance(s, ast.AugAssign) else s.targets[0]
            if isinstance(t, ast.Name) and update_op(s, t.id) is not None:
                counts[t.id] = counts.get(t.id, 0) + 1
    return {name for name, c in counts.items()
            if c > 1 and reduction_op(node.body, name) is not None}


def reduction_operand_first(func: ast.FunctionDef) -> list[str]:
    """Rewrite, in place, each update ``s = e + s`` (or ``e * s``) of a ``+``/``*`` reduction
    of a ``prange`` loop in ``func`` as ``s = s + e``: numba's parfor lowering fails on the
    first form (``ParforsUnexpectedReduceNodeError``; the fuzzer of
    ``tests/test_offload_fuzz_programs.py`` found it). ``+`` and ``*`` of numbers commute
    exactly, so the value is the same. One note per prange loop rewritten."""
    notes = []
    for node in [n for n in ast.walk(func) if is_prange(n)]:
        assert isinstance(node, ast.For)
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Store)}
        done = []
        for name in sorted(names):
            if reduction_op(node.body, name) not in ("+", "*"):
                continue
            for s in ast.walk(node):
                if isinstance(s, ast.Assign) and update_op(s, name) in ("+", "*") \
                        and isinstance(s.value, ast.BinOp) \
                        and isinstance(s.value.right, ast.Name) and s.value.right.id == name:
                    s.value.left, s.value.right = s.value.right, s.value.left
                    done.append(name)
        if done:
            where = loop_id(node) or f"the prange loop over {ast.unparse(node.target)}"
            notes.append(f"{where}: reduction update{'s' if len(done) > 1 else ''} "
                         f"{', '.join(sorted(set(done)))} = e op … written {done[0]} op e "
                         "(numba lowers only that order)")
    return notes
