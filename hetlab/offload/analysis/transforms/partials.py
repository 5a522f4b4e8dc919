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
its own level would skip the combination: such a variant is refused
(:class:`~hetlab.errors.InvalidInputError`, a candidate the search scores 0) rather than run.

numba also rejects a reduction variable that a ``prange`` body updates more than once
(``s += x[i]; s += 1.0``: "Use of reduction variable s other than in a supported reduction
function"; the fuzzer found it): all of such a body's updates go to one partial the same way,
combined once at the end of the iteration.
"""

from __future__ import annotations

import ast

from ....errors import InvalidInputError
from ..scalars import reduction_op, update_op
from .rewrite import loop_id
from .statements import Rename, splice

__all__ = ["local_partials", "reduction_operand_first"]


def _is_prange(node: ast.AST) -> bool:
    return isinstance(node, ast.For) and isinstance(node.iter, ast.Call) \
        and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "prange"


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


def _continues(stmts: list[ast.stmt]) -> bool:
    """A ``continue`` of the loop owning ``stmts`` (not of a loop inside them)."""
    for s in stmts:
        if isinstance(s, ast.Continue):
            return True
        if isinstance(s, ast.If) and (_continues(s.body) or _continues(s.orelse)):
            return True
    return False


_INIT = {"+": "0", "*": "1"}
_COMBINE = {"+": "{s} += {p}", "*": "{s} *= {p}", "max": "{s} = max({s}, {p})",
            "min": "{s} = min({s}, {p})"}


def local_partials(func: ast.FunctionDef) -> list[str]:
    """Rewrite the ``prange`` loops of ``func`` (in place) whose reductions numba would drop
    (module docstring); one line per reduction rewritten."""
    notes: list[str] = []
    k = 0
    for node in [n for n in ast.walk(func) if _is_prange(n)]:
        assert isinstance(node, ast.For)
        found: list[tuple[ast.For | ast.While, ast.If, set[str]]] = []
        _risky_ifs(node, node.body, found)
        ops = {name: reduction_op(node.body, name) for _, _, names in found for name in names}
        before: list[ast.stmt] = []
        where = loop_id(node) or f"the prange loop over {ast.unparse(node.target)}"
        for owner in list(dict.fromkeys(id(o) for o, _, _ in found)):
            group = [(o, i, n) for o, i, n in found if id(o) == owner]
            loop = group[0][0]
            todo = sorted({name for _, _, n in group for name in n if ops.get(name)})
            if not todo:
                continue
            if _continues(loop.body):
                raise InvalidInputError(
                    f"offload: the prange loop over {ast.unparse(node.target)} updates "
                    f"{', '.join(todo)} in a loop under an if, next to a continue: numba would "
                    "drop that reduction; this variant is not generated.")
            for name in todo:
                p = _partial(loop, [stmt for _, stmt, _ in group], name, ops[name], k, before)
                k += 1
                notes.append(f"{where}: reduction {name} ({ops[name]}) accumulated in {p} "
                             "around the if holding its loop (numba drops a reduction updated "
                             "only in a loop under an if)")
        for name in sorted(_repeated_updates(node)):
            if _continues(node.body):
                raise InvalidInputError(
                    f"offload: the prange loop over {ast.unparse(node.target)} updates {name} "
                    "more than once per iteration, next to a continue: numba rejects such a "
                    "reduction; this variant is not generated.")
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
    for node in [n for n in ast.walk(func) if _is_prange(n)]:
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
