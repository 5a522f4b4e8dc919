"""A seeded generator of small Python kernels in the style users write, for the offload engine.

Each kernel takes ``n`` and arrays ``A, B, C`` (2-D, ``(n + 1, n + 1)``) and ``x, y, z`` (1-D,
``2 * n + 2``): room for ``x[2 * i]``, ``x[i + 1]`` and ``A[i, j + 1]`` under every loop bound
the generator writes, so Python raises no ``IndexError`` on well-formed draws (a draw that
does raise is skipped by the differential driver, size by size). Written arrays, read-only
arrays, loop shapes and statements are drawn from :class:`Gen`:

* 1 to 3 nested ``for`` loops over ``range(n)``, ``range(1, n - 1)``, ``range(i)``,
  ``range(i + 1, n)``, ``range(0, n, 2)``, ``range(n - 1, -1, -1)``; sometimes two loop nests
  one after the other;
* element writes and ``+=`` updates with affine subscripts and offsets (``A[i, j]``,
  ``A[j, i]``, ``x[i - 1]``, ``x[2 * i]``, ``x[n - 1 - i]``, ``A[i, j + 1]``); reads also
  periodic and blocked (``x[(i + 1) % n]``, ``A[(j) // 2, i]``);
* scalar temporaries ``t0..t2`` (initialized before the loops: a read before the write in an
  iteration is a carried scalar), accumulators ``s += …``, ``m = max(m, …)``, ``cnt += 1``;
* ``if`` on data (with ``else``), ``continue`` and ``break`` under a data condition;
* whole-row reads ``np.sum(A[i])``, ``A[i].max()``, ``np.max(B[i])``;
* local arrays: ``tmp = np.empty(n)`` per iteration, filled by one inner loop and read by the
  next (privatizable), or ``tmp = np.zeros(...)`` before the loops (a reused scratch);
* ``return`` of a scalar (``s``, ``s + m``, ``cnt``, a temporary, or ``0.0``).

Programs are trees (:class:`Loop`, :class:`If`, :class:`Stmt`) so a failing one can be
minimized by deleting nodes (:func:`removals`).
"""

from __future__ import annotations

import linecache
import random
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

ARR2 = ("A", "B", "C")
ARR1 = ("x", "y", "z")
VARS = ("i", "j", "k")


@dataclass
class Stmt:
    text: str


@dataclass
class If:
    cond: str
    body: list = field(default_factory=list)
    orelse: list = field(default_factory=list)


@dataclass
class Loop:
    var: str
    rng: str
    body: list = field(default_factory=list)


@dataclass
class Program:
    """``pre`` statements, then the loop nests (``body``), then ``return ret``."""

    name: str
    pre: list
    body: list
    ret: str

    def source(self) -> str:
        lines = [f"def {self.name}(n, A, B, C, x, y, z):"]
        for s in self.pre:
            lines.append("    " + s.text)
        _render(self.body, 1, lines)
        lines.append(f"    return {self.ret}")
        return "\n".join(lines) + "\n"


def _render(nodes: list, depth: int, out: list[str]) -> None:
    pad = "    " * depth
    for nd in nodes:
        if isinstance(nd, Stmt):
            out.append(pad + nd.text)
        elif isinstance(nd, Loop):
            out.append(f"{pad}for {nd.var} in {nd.rng}:")
            _render(nd.body or [Stmt("pass")], depth + 1, out)
        else:
            out.append(f"{pad}if {nd.cond}:")
            _render(nd.body or [Stmt("pass")], depth + 1, out)
            if nd.orelse:
                out.append(f"{pad}else:")
                _render(nd.orelse, depth + 1, out)


def load(prog: Program, tag: str = "offload-fuzz", src: str | None = None):
    """Exec the program's source (or ``src``, another text of it) under a ``linecache`` entry
    (``inspect.getsource`` works)."""
    src = prog.source() if src is None else src
    fname = f"<{tag}-{prog.name}>"
    linecache.cache[fname] = (len(src), None, src.splitlines(True), fname)
    import numpy as np

    ns: dict = {"np": np}
    exec(compile(src, fname, "exec"), ns)
    return ns[prog.name]


class Gen:
    """Draws one program from ``random.Random(seed)``."""

    def __init__(self, seed: int, name: str | None = None):
        self.r = random.Random(seed)
        #: a second stream for later additions, so the main one draws the programs it drew
        #: before them (seeds cited in tests keep their programs)
        self.extra = random.Random(seed ^ 0x5EED)
        self.name = name or f"k{seed}"
        self.written1: list[str] = []
        self.written2: list[str] = []
        self.tmp_before = False

    # -- pieces ----------------------------------------------------------------------------
    def sub1(self, scope: list[str]) -> str:
        r = self.r
        if not scope or r.random() < 0.05:
            return r.choice(["0", "n - 1", "n"])
        v = scope[-1] if r.random() < 0.6 else r.choice(scope)
        return r.choice([v, v, v, f"{v} - 1", f"{v} + 1", f"2 * {v}", f"n - 1 - {v}",
                         f"2 * {v} + 1"])

    def sub2(self, scope: list[str]) -> str:
        r = self.r
        if not scope:
            return "0, 0"
        if len(scope) == 1:
            v = scope[0]
            return r.choice([f"{v}, {v}", f"{v}, 0", f"0, {v}", f"{v}, n - 1 - {v}",
                             f"{v} - 1, {v}"])
        a, b = r.sample(scope, 2) if r.random() < 0.3 else (scope[-2], scope[-1])
        return r.choice([f"{a}, {b}", f"{a}, {b}", f"{b}, {a}", f"{a} - 1, {b}",
                         f"{a}, {b} + 1", f"{a}, {b} - 1", f"{a} + 1, {b}", f"{a}, {a}",
                         f"n - 1 - {a}, {b}"])

    def read(self, scope: list[str], temps: bool = True) -> str:
        r = self.r
        p = r.random()
        if p < 0.45:
            return f"{r.choice(ARR1)}[{self.wrapped(self.sub1(scope))}]"
        if p < 0.75:
            sub = self.sub2(scope)
            first, rest = sub.split(", ", 1)
            return f"{r.choice(ARR2)}[{self.wrapped(first)}, {rest}]"
        if p < 0.82 and scope:
            v = r.choice(scope)
            return r.choice([f"np.sum({r.choice(ARR2)}[{v}])", f"{r.choice(ARR2)}[{v}].max()",
                             f"np.max({r.choice(ARR2)}[{v}])"])
        if p < 0.87 and self.tmp_before:
            return f"tmp0[{self.sub1(scope)}]"
        if p < 0.95 and temps:
            return r.choice(["t0", "t1", "t2"])
        if scope and r.random() < 0.5:
            return f"{r.choice(scope)} * 0.25"
        return r.choice(["1.0", "0.5", "2.0"])

    def wrapped(self, sub: str) -> str:
        """``sub``, or sometimes ``(sub + 1) % n`` / ``sub // 2`` (periodic and blocked
        indices: in bounds whenever ``sub`` is, for ``n > 0``)."""
        p = self.extra.random()
        if p < 0.1:
            return f"({sub} + 1) % n"
        if p < 0.15:
            return f"({sub}) // 2"
        return sub

    def expr(self, scope: list[str]) -> str:
        r = self.r
        e = self.read(scope)
        for _ in range(r.choice([0, 1, 1, 2])):
            op = r.choice([" + ", " - ", " * 0.5 + ", " * "])
            e = e + op + self.read(scope)
        if r.random() < 0.3:
            e = f"0.5 * ({e})"
        return e

    def target(self, scope: list[str]) -> str:
        r = self.r
        if r.random() < 0.55:
            name = r.choice(self.written1)
            return f"{name}[{self.sub1(scope)}]"
        name = r.choice(self.written2)
        return f"{name}[{self.sub2(scope)}]"

    def cond(self, scope: list[str]) -> str:
        r = self.r
        return f"{self.read(scope, temps=r.random() < 0.3)} {r.choice(['>', '<'])} " \
               f"{r.choice(['0.0', '0.0', '0.5', '-0.5'])}"

    def simple(self, scope: list[str], in_if: bool = False) -> Stmt:
        r = self.r
        p = r.random()
        if p < 0.32:
            return Stmt(f"{self.target(scope)} = {self.expr(scope)}")
        if p < 0.50:
            return Stmt(f"{self.target(scope)} += {self.expr(scope)}")
        if p < 0.68:
            return Stmt(f"{r.choice(['t0', 't1', 't2'])} = {self.expr(scope)}")
        if p < 0.82:
            return Stmt(f"s += {self.expr(scope)}")
        if p < 0.90:
            return Stmt(f"m = max(m, {self.expr(scope)})")
        if p < 0.95 or not in_if:
            return Stmt("cnt += 1" if in_if else f"s -= {self.read(scope)}")
        return Stmt("cnt += 1")

    def range_for(self, var: str, scope: list[str]) -> str:
        r = self.r
        opts = ["range(n)", "range(n)", "range(1, n - 1)", "range(0, n, 2)",
                "range(n - 1, -1, -1)"]
        if scope:
            o = r.choice(scope)
            opts += [f"range({o})", f"range({o} + 1, n)", f"range({o} + 1)"]
        return r.choice(opts)

    def body(self, scope: list[str], depth_left: int, size: int) -> list:
        r = self.r
        out: list = []
        has_loop = False
        for _ in range(size):
            p = r.random()
            if depth_left > 0 and (p < 0.35 or (not has_loop and p < 0.55)):
                var = VARS[len(scope)]
                inner = self.body([*scope, var], depth_left - 1, r.randint(1, 3))
                out.append(Loop(var, self.range_for(var, scope), inner))
                has_loop = True
            elif depth_left > 0 and p < 0.62 and scope:
                out.extend(self.local_array(scope))
            elif p < 0.75 and scope:
                c = If(self.cond(scope), [self.simple(scope, True)])
                if r.random() < 0.4:
                    c.orelse = [self.simple(scope, True)]
                out.append(c)
            elif p < 0.80 and scope:
                out.append(If(self.cond(scope), [Stmt(r.choice(
                    ["continue", "continue", "break"]))]))
            else:
                out.append(self.simple(scope))
        return out

    def local_array(self, scope: list[str]) -> list:
        """``tmp = np.empty(n)`` per iteration, filled whole, then read by a second loop."""
        r = self.r
        var = VARS[len(scope)]
        alloc = Stmt(f"tmp = np.{r.choice(['empty', 'zeros'])}(n)")
        fill = Loop(var, "range(n)", [Stmt(f"tmp[{var}] = {self.expr([*scope, var])}")])
        use_scope = [*scope, var]
        if r.random() < 0.5:
            use = Stmt(f"{self.target(use_scope)} = tmp[{var}] * 0.5 + {self.read(use_scope)}")
        else:
            use = Stmt(f"s += tmp[{var}]")
        uses = [Loop(var, "range(n)", [use])]
        if r.random() < 0.3:
            uses.append(Stmt("s += np.sum(tmp)"))
        return [alloc, fill, *uses]

    def program(self) -> Program:
        r = self.r
        self.written1 = r.sample(ARR1, r.choice([1, 1, 2]))
        self.written2 = r.sample(ARR2, r.choice([1, 1, 2]))
        self.tmp_before = r.random() < 0.15
        pre = [Stmt("s = 0.0"), Stmt("m = -np.inf"), Stmt("cnt = 0"),
               Stmt("t0 = 0.0"), Stmt("t1 = 1.0"), Stmt("t2 = 0.0")]
        if self.tmp_before:
            pre.append(Stmt("tmp0 = np.zeros(2 * n + 2)"))
            self.written1 = [*self.written1, "tmp0"]
        nests = []
        for _ in range(r.choice([1, 1, 1, 2])):
            depth = r.choice([1, 2, 2, 3])
            var = VARS[0]
            nests.append(Loop(var, self.range_for(var, []),
                              self.body([var], depth - 1, r.randint(1, 4))))
        ret = r.choice(["s", "s + m", "cnt", "t0", "0.0", "s + t1", "s + cnt"])
        if ret == "s + m" and not any("m = max" in t for t in _texts(nests)):
            ret = "s"
        return Program(self.name, pre, nests, ret)


def _texts(nodes: list) -> Iterator[str]:
    for nd in nodes:
        if isinstance(nd, Stmt):
            yield nd.text
        elif isinstance(nd, Loop):
            yield from _texts(nd.body)
        else:
            yield from _texts(nd.body)
            yield from _texts(nd.orelse)


def generate(seed: int) -> Program:
    return Gen(seed).program()


def inputs(n: int, seed: int):
    """Arguments ``(n, A, B, C, x, y, z)``: random floats (normal), where order matters."""
    import numpy as np

    rng = np.random.default_rng(seed)
    mats = [rng.standard_normal((n + 1, n + 1)) for _ in ARR2]
    vecs = [rng.standard_normal(2 * n + 2) for _ in ARR1]
    return [n, *mats, *vecs]


# -- minimization -----------------------------------------------------------------------------
def _lists(nodes: list) -> Iterator[list]:
    yield nodes
    for nd in nodes:
        if isinstance(nd, Loop):
            yield from _lists(nd.body)
        elif isinstance(nd, If):
            yield from _lists(nd.body)
            yield from _lists(nd.orelse)


def _copy(nodes: list) -> list:
    out = []
    for nd in nodes:
        if isinstance(nd, Loop):
            out.append(Loop(nd.var, nd.rng, _copy(nd.body)))
        elif isinstance(nd, If):
            out.append(If(nd.cond, _copy(nd.body), _copy(nd.orelse)))
        else:
            out.append(Stmt(nd.text))
    return out


def removals(prog: Program) -> Iterator[Program]:
    """Every program with one node (statement, ``if``, loop, ``pre`` line) deleted, or a loop
    or ``if`` replaced by its body, or the return simplified."""
    count = sum(len(lst) for lst in _lists(prog.body))
    for idx in range(count):
        for mode in ("drop", "inline"):
            body = _copy(prog.body)
            seen = 0
            done = False
            for lst in _lists(body):
                if seen + len(lst) > idx:
                    nd = lst[idx - seen]
                    if mode == "drop":
                        del lst[idx - seen]
                        done = True
                    elif isinstance(nd, If):
                        lst[idx - seen:idx - seen + 1] = nd.body + nd.orelse
                        done = True
                    break
                seen += len(lst)
            if done:
                yield replace(prog, body=body)
    if prog.ret != "0.0":
        yield replace(prog, ret="0.0")
    for k in range(len(prog.pre)):
        yield replace(prog, pre=prog.pre[:k] + prog.pre[k + 1:])
