"""Privatized arrays: a sequential loop whose every reason is a dependence on arrays that are
each an array reduction (only ``y[s] += e`` / ``y[s] -= e`` / ``y[s] = y[s] + e`` with ``e``
not reading ``y``: ``+`` only, since ``*``, ``min`` or a scaled update ``y[j] = y[j]*c + e`` do
not sum per-chunk copies) or a temporary (every element read in an iteration was written
earlier in the same iteration, :class:`_Cover`) becomes parallel over chunks with one private
copy each. A temporary whose value after the loop may be read (a parameter, a global, a local
read later) is copied back from the last chunk, which needs every iteration to write the same
elements (:func:`_regular_writes`). Arrays that may be views of other storage are never
privatized.
"""

from __future__ import annotations

import ast
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...front.loops import Loop
from ..scalars import breaks_out, live_after, written_names

if TYPE_CHECKING:
    from ..aliases import AliasInfo
    from ..report import LoopReport

__all__ = ["Privatization", "plan_private", "array_reduction"]


@dataclass(frozen=True)
class Privatization:
    """An array made private per chunk of a parallel loop."""

    loop: str
    array: str
    kind: str  #: "reduction" (private zeros, summed after) or "temporary"
    copy_out: bool = False  #: temporary: the last chunk's copy is written back

    def __str__(self) -> str:
        if self.kind == "reduction":
            return f"{self.loop}: {self.array} privatized (array reduction, +)"
        out = "; last iteration's values copied back" if self.copy_out else ""
        return (f"{self.loop}: {self.array} privatized per thread (temporary written before "
                f"it is read in each iteration){out}")


def _dep_reasons_only(rep: LoopReport) -> bool:
    return len(rep.reasons) == len(rep.dependences)


def _mentions(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def _is_elem(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) \
        and node.value.id == name and not _mentions(node.slice, name)


def _reduction_stmt(s: ast.stmt, name: str) -> bool:
    if isinstance(s, ast.AugAssign):
        return _is_elem(s.target, name) and isinstance(s.op, (ast.Add, ast.Sub)) \
            and not _mentions(s.value, name)
    if isinstance(s, ast.Assign) and len(s.targets) == 1 and _is_elem(s.targets[0], name):
        v, t = s.value, ast.unparse(s.targets[0])
        if isinstance(v, ast.BinOp) and isinstance(v.op, (ast.Add, ast.Sub)):
            if _is_elem(v.left, name) and ast.unparse(v.left) == t:
                return not _mentions(v.right, name)
            if isinstance(v.op, ast.Add) and _is_elem(v.right, name) \
                    and ast.unparse(v.right) == t:
                return not _mentions(v.left, name)
    return False


def array_reduction(body: list[ast.stmt], name: str) -> str | None:
    """None when every use of array ``name`` in ``body`` is a ``+``/``-`` element update not
    reading it otherwise; else why not."""
    for s in body:
        if isinstance(s, (ast.For, ast.While, ast.If)):
            head = s.iter if isinstance(s, ast.For) else s.test
            if _mentions(head, name):
                return f"{name} is read in a loop or branch condition"
            why = array_reduction(s.body, name) or array_reduction(s.orelse, name)
            if why:
                return why
        elif _mentions(s, name) and not _reduction_stmt(s, name):
            return (f"{name} is read or written other than by '{name}[…] += …' "
                    f"(line: {ast.unparse(s)[:60]})")
    return None


class _Cover:
    """Whether every element of array ``name`` read in one iteration of a loop was written
    earlier in the same iteration (elements as loop variables, invariants, whole ranges)."""

    def __init__(self, name: str, varying: set[str]) -> None:
        self.name, self.varying = name, varying
        self.covered: set[tuple[tuple[str, str], ...]] = set()
        self.open: dict[str, str | None] = {}
        self.why: str | None = None

    def desc(self, node: ast.Subscript) -> tuple[tuple[str, str], ...] | None:
        sl = node.slice
        idx = list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]
        out = []
        for i in idx:
            names = {n.id for n in ast.walk(i) if isinstance(n, ast.Name)}
            if isinstance(i, ast.Name) and i.id in self.open:
                out.append(("var", i.id))
            elif isinstance(i, ast.Slice) or names & (self.varying | set(self.open)):
                return None
            else:
                out.append(("inv", ast.unparse(i)))
        return tuple(out)

    def _forms(self, d: tuple[tuple[str, str], ...]) -> list[tuple[tuple[str, str], ...]]:
        opts = []
        for kind, text in d:
            alt = [(kind, text)]
            if kind == "var" and self.open.get(text) is not None:
                alt.append(("range", self.open[text] or ""))
            opts.append(alt)
        return [tuple(x) for x in itertools.product(*opts)]

    def reads(self, node: ast.AST, skip: ast.AST | None = None) -> None:
        for n in ast.walk(node):
            if n is skip:
                continue
            if isinstance(n, ast.Name) and n.id == self.name:
                parent_ok = any(
                    isinstance(m, (ast.Subscript, ast.Attribute)) and m.value is n
                    for m in ast.walk(node))
                if not parent_ok:
                    self.fail(f"{self.name} is used as a whole")
            if isinstance(n, ast.Subscript) and _is_elem(n, self.name) and n is not skip:
                d = self.desc(n)
                if d is None or not any(f in self.covered for f in self._forms(d)):
                    self.fail(f"{ast.unparse(n)} may be read before it is written")

    def fail(self, why: str) -> None:
        if self.why is None:
            self.why = why

    def write(self, target: ast.AST, cond: bool) -> None:
        if _is_elem(target, self.name) and not cond:
            d = self.desc(target)  # type: ignore[arg-type]
            if d is not None:
                self.covered.add(d)

    def walk(self, stmts: list[ast.stmt], cond: bool = False) -> None:
        for s in stmts:
            if isinstance(s, ast.For):
                self.reads(s.iter)
                var = s.target.id if isinstance(s.target, ast.Name) else None
                names = {n.id for n in ast.walk(s.iter) if isinstance(n, ast.Name)}
                key = ast.unparse(s.iter) if not names & (self.varying | set(self.open)) \
                    else None
                before = set(self.covered)
                if var is not None:
                    self.open[var] = key
                self.walk(s.body, cond or breaks_out(s))  # a break: later iterations may not run
                if var is not None:
                    del self.open[var]
                new = {tuple(("range", key) if x == ("var", var) else x for x in e)
                       for e in self.covered - before
                       if key is not None and ("var", var) in e}
                self.covered = before | new
            elif isinstance(s, ast.If):
                self.reads(s.test)
                before = set(self.covered)
                self.walk(s.body, True)
                self.covered = set(before)
                self.walk(s.orelse, True)
                self.covered = before
            elif isinstance(s, ast.While):
                self.fail("while loop")
            elif isinstance(s, ast.Assign):
                self.reads(s.value)
                for t in s.targets:
                    self.reads(t, skip=t)
                for t in s.targets:
                    self.write(t, cond)
            elif isinstance(s, ast.AugAssign):
                self.reads(s.value)
                self.reads(s.target)
                self.write(s.target, cond)
            else:
                self.reads(s)


def _stores_elem(node: ast.AST, name: str) -> bool:
    return any(isinstance(n, ast.Subscript) and _is_elem(n, name)
               and isinstance(n.ctx, ast.Store) for n in ast.walk(node))


def _regular_writes(loop: Loop, name: str) -> bool:
    """Every iteration of ``loop`` writes the same elements of ``name``: no write under an
    ``if``, loops on the way with bounds and subscripts that do not change with the loop."""
    varying = written_names(loop.node.body) | {loop.var}

    def ok(stmts: list[ast.stmt], inner: set[str]) -> bool:
        for s in stmts:
            if isinstance(s, ast.For):
                names = {n.id for n in ast.walk(s.iter) if isinstance(n, ast.Name)}
                if names & ((varying - inner) | {loop.var}) and _mentions(s, name):
                    return False
                tgt = s.target.id if isinstance(s.target, ast.Name) else ""
                if breaks_out(s) and _stores_elem(s, name):
                    return False
                if not ok(s.body, inner | {tgt}):
                    return False
            elif isinstance(s, (ast.If, ast.While)):
                if _stores_elem(s, name):
                    return False
            else:
                for n in ast.walk(s):
                    if isinstance(n, ast.Subscript) and _is_elem(n, name) and isinstance(
                            n.ctx, ast.Store):
                        used = {m.id for m in ast.walk(n.slice) if isinstance(m, ast.Name)}
                        if used & (varying - inner):
                            return False
        return True

    return ok(loop.node.body, set())


def plan_private(loop: Loop, rep: LoopReport, aliases: AliasInfo,
                  refused: list[str]) -> list[Privatization] | None:
    if rep.verdict != "sequential" or not rep.dependences or not _dep_reasons_only(rep) \
            or loop.step is None:
        return None
    out = []
    for name in sorted({d.array for d in rep.dependences}):
        if aliases.roots_of(name) != frozenset({name}) or name in aliases.containers:
            refused.append(f"{loop.id}: {name} not privatized (it may be a view of other "
                           "storage)")
            return None
        why_red = array_reduction(loop.node.body, name)
        if why_red is None:
            out.append(Privatization(loop.id, name, "reduction"))
            continue
        cover = _Cover(name, written_names(loop.node.body) - {loop.var})
        cover.walk(loop.node.body)
        if cover.why is not None:
            refused.append(f"{loop.id}: {name} not privatized ({why_red}; as a temporary: "
                           f"{cover.why})")
            return None
        copy_out = not aliases.is_fresh(name) or live_after(loop.path, name)
        if copy_out and not _regular_writes(loop, name):
            refused.append(f"{loop.id}: {name} not privatized (its value after the loop is "
                           "needed and iterations do not all write the same elements)")
            return None
        out.append(Privatization(loop.id, name, "temporary", copy_out))
    return out
