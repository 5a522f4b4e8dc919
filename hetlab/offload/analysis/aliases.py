"""Which names of a function may refer to the same storage (views, aliases), and which of the
caller's arguments it may write.

A flow-insensitive, conservative pass over the whole function. Every name gets a set of
**roots**: the storages it may refer to. A parameter or a global is its own root; a name bound
to freshly allocated storage (``np.zeros``, ``a.copy()``, ``np.array(a)``, arithmetic ``a + 1``,
a constant) gets a root of its own; a name bound to a view or to another name (``b = a``,
``a[1:]``, ``a.T``, ``a.reshape(…)``, ``np.asarray(a)``, ``a if c else d``) shares the roots of
what it was bound to. What cannot be proved fresh (``f(a)`` for an unknown ``f``, an attribute
of an object, an unknown method) gets the roots of everything it reads plus :data:`UNKNOWN`,
which may be any storage from outside the function (any parameter or global).
"""

from __future__ import annotations

import ast
import types
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..front.calls import (
    FRESH_METHODS,
    VIEW_METHODS,
    fresh_np_call,
    hidden_write,
    np_call_chain,
)
from ..front.helpers import pure_helper
from ..front.walk import statement_lists

__all__ = ["UNKNOWN", "AliasInfo", "alias_info"]

#: a root standing for "any storage from outside the function" (parameters, globals)
UNKNOWN = "?"
_OWN = "\x00fresh"  # marker: the expression allocates new storage

#: attributes that are plain values, not storage
_VALUE_ATTRS = frozenset({"shape", "size", "ndim", "dtype", "nbytes", "itemsize", "strides"})
#: attributes only NumPy arrays have (not lists, tuples or dicts)
_ARRAY_ATTRS = _VALUE_ATTRS | {"T"}
#: builtins whose result is a new value (min/max return one of their arguments)
_FRESH_BUILTINS = frozenset({"abs", "int", "float", "bool", "round", "len", "range", "pow",
                             "complex", "prange", "sum", "sorted", "list", "tuple", "str",
                             "divmod", "isinstance"})


@dataclass
class AliasInfo:
    """Roots of every name; which parameters the function may write; binding lines."""

    params: tuple[str, ...]
    roots: dict[str, frozenset[str]]
    #: roots (parameters, globals, UNKNOWN, local names) whose storage may be written
    written_roots: frozenset[str]
    #: a line where each local name was bound to something not proved fresh
    view_lines: dict[str, int] = field(default_factory=dict)
    #: names of the function's globals it reads (array-valued ones matter to the guard)
    globals_read: frozenset[str] = frozenset()
    #: locals bound to a list, tuple or dict (element accesses may reach one array twice)
    containers: frozenset[str] = frozenset()
    #: names only ever permuted among themselves (``u, new = new, u``, or through a temporary:
    #: ``t = u; u = new; new = t``) from pairwise distinct
    #: storage: at every point they name distinct arrays (:func:`_swap_groups`)
    distinct: tuple[frozenset[str], ...] = ()
    #: locals that hold a number at every binding (:func:`_scalar_names`)
    numbers: frozenset[str] = frozenset()
    #: ({x, y}, ids of loop nodes) where ``x`` holds storage allocated afresh after ``y`` was
    #: last bound: the two are distinct in those loops though ``y = x`` later (:func:`_fresh_pairs`)
    fresh_pairs: tuple[tuple[frozenset[str], frozenset[int]], ...] = ()

    def distinct_in(self, x: str, y: str, loop: ast.AST) -> bool:
        """Whether ``x`` and ``y`` name distinct storage throughout ``loop`` (a node of the
        function's tree) by :attr:`fresh_pairs`."""
        return any(pair == {x, y} and id(loop) in ids for pair, ids in self.fresh_pairs)

    def roots_of(self, name: str) -> frozenset[str]:
        return self.roots.get(name, frozenset({name}))

    def is_fresh(self, name: str) -> bool:
        """True when every binding of local ``name`` is newly allocated storage."""
        return self.roots_of(name) == frozenset({name}) and name not in self.params

    def _external(self, root: str) -> bool:
        return root in self.params or root in self.globals_read or root == UNKNOWN

    def may_alias(self, x: str, y: str) -> bool:
        """Whether names ``x`` and ``y`` may refer to overlapping storage."""
        if x != y and any(x in g and y in g for g in self.distinct):
            return False  # swapped with each other, never bound to one storage
        rx, ry = self.roots_of(x), self.roots_of(y)
        if rx & ry:
            return True
        if UNKNOWN in rx and any(self._external(r) for r in ry):
            return True
        return UNKNOWN in ry and any(self._external(r) for r in rx)

    def written_params(self) -> frozenset[str]:
        """Parameters whose storage (or what they contain) the function may write."""
        if UNKNOWN in self.written_roots:
            return frozenset(self.params)
        return frozenset(p for p in self.params if p in self.written_roots)

    def why(self, name: str) -> str:
        line = self.view_lines.get(name)
        return f" (bound at line {line})" if line is not None else ""


class _Pass:
    def __init__(self, tree: ast.FunctionDef, namespace: dict[str, Any], line0: int,
                 ndims: Mapping[str, int] | None = None) -> None:
        self.tree, self.ns, self.line0 = tree, namespace, line0
        a = tree.args
        self.params = tuple(p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs))
        self.locals = {n.id for n in ast.walk(tree)
                       if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        self.locals -= set(self.params)
        self.roots: dict[str, set[str]] = {p: {p} for p in self.params}
        for n in self.locals:
            self.roots[n] = set()
        self.lists: set[str] = set()  # locals bound to list displays: subscript stores keep refs
        self.swaps: list[set[str]] = []  # ``a, b = b, a``: names permuted among themselves
        # ``t = a; a = b; b = t``: the rotations through a temporary, and the ids of their
        # statements after the first (the exchange itself, left to :func:`_swap_groups`)
        self.rotation_parts: dict[int, set[str]] = _rotations(tree)
        self.containers: set[str] = set()  # locals bound to lists, tuples, dicts
        self.view_lines: dict[str, int] = {}
        self.globals_read: set[str] = set()
        self.scalars = _scalar_names(tree, namespace, ndims or {})
        # names read through an array attribute (``a.shape``): arrays, never lists, so an
        # element store ``a[i] = hi`` copies a value and keeps no reference to ``hi``
        self.arrays = {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                       and isinstance(n.value, ast.Name) and n.attr in _ARRAY_ATTRS}

    # -- roots of an expression -----------------------------------------------------------
    def name_roots(self, name: str) -> set[str]:
        if name in self.roots:
            return set(self.roots[name])
        obj = self.ns.get(name)
        if obj is None or isinstance(obj, (types.ModuleType, types.FunctionType, type,
                                           int, float, complex, bool, str)):
            return set()
        if callable(obj) and not isinstance(obj, np.ndarray):
            return set()
        self.globals_read.add(name)
        return {name}

    def expr(self, node: ast.AST | None) -> set[str]:
        if node is None:
            return set()
        if isinstance(node, ast.Name):
            return self.name_roots(node.id)
        if isinstance(node, ast.Constant):
            return {_OWN}
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            for child in ast.iter_child_nodes(node):
                self.expr(child)
            return {_OWN}
        if isinstance(node, ast.BoolOp):
            return set().union(*(self.expr(v) for v in node.values))
        if isinstance(node, ast.IfExp):
            self.expr(node.test)
            return self.expr(node.body) | self.expr(node.orelse)
        if isinstance(node, ast.Subscript):
            self.expr(node.slice)
            return self.expr(node.value)
        if isinstance(node, ast.Starred):
            return self.expr(node.value)
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return set().union(set(), *(self.expr(e) for e in node.elts))
        if isinstance(node, ast.Dict):
            return set().union(set(), *(self.expr(v) for v in node.values))
        if isinstance(node, ast.Attribute):
            if np_call_chain(node, self.ns) is not None:
                return {_OWN}
            base = self.expr(node.value)
            if node.attr in _VALUE_ATTRS:
                return {_OWN}
            if node.attr in ("T", "real", "imag", "flat", "base", "mT"):
                return base
            return base | {UNKNOWN}
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.NamedExpr):
            value = self.expr(node.value)
            self.bind(node.target, value, node)
            return value
        # comprehensions, lambdas, f-strings, …: everything they read, and unknown
        out = {UNKNOWN}
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                out |= self.name_roots(n.id)
        return out

    def call(self, node: ast.Call) -> set[str]:
        args = set().union(set(), *(self.expr(a) for a in node.args),
                           *(self.expr(k.value) for k in node.keywords))
        kw = {k.arg: k.value for k in node.keywords}
        f = node.func
        if "out" in kw:
            return self.expr(kw["out"]) | args
        chain = np_call_chain(f, self.ns)
        if chain is not None:
            mod, last = chain[0], chain[-1]
            if mod in ("math", "cmath"):
                return {_OWN}
            if mod == "numpy":
                if last == "array" and isinstance(kw.get("copy"), ast.Constant) \
                        and kw["copy"].value is not True:
                    return args
                if fresh_np_call(chain, kw):
                    return {_OWN}
                if len(chain) >= 3 and chain[1] in ("linalg", "fft", "random"):
                    return {_OWN}
                if len(chain) == 3 and chain[2] in ("reduce", "accumulate", "outer"):
                    return {_OWN}
                return args  # views and pass-through (np.asarray, np.reshape, np.ravel, …)
            return args | {UNKNOWN}
        if isinstance(f, ast.Name) and f.id not in self.roots and f.id not in self.ns:
            if f.id in ("min", "max"):
                return args
            if f.id in _FRESH_BUILTINS:
                return {_OWN}
        if isinstance(f, ast.Attribute):
            base = self.expr(f.value)
            if f.attr in FRESH_METHODS and not (
                    f.attr == "astype" and isinstance(kw.get("copy"), ast.Constant)
                    and kw["copy"].value is not True):
                return {_OWN}
            if isinstance(f.value, ast.Name) and f.value.id in self.roots:
                self.roots[f.value.id] |= args - {_OWN}  # lst.append(a): lst now holds a
            return base | args | {UNKNOWN}
        if isinstance(f, ast.Name) and f.id not in self.roots \
                and pure_helper(f.id, self.ns) is not None:
            return args | {_OWN}  # a pure helper returns its arguments, new storage or numbers
        return self.expr(f) | args | {UNKNOWN}

    # -- bindings -------------------------------------------------------------------------
    def bind(self, target: ast.AST, value: set[str], node: ast.AST,
             value_node: ast.AST | None = None) -> None:
        if isinstance(target, ast.Name):
            name = target.id
            if name not in self.roots:
                self.roots[name] = set()
            if name in self.scalars:  # a number: its value is copied, never shared
                self.roots[name].add(name)
                return
            new = (value - {_OWN}) | ({name} if _OWN in value else set())
            if new - {name}:
                self.view_lines.setdefault(name, self.line0 + getattr(node, "lineno", 1) - 1)
            self.roots[name] |= new
            if isinstance(value_node, (ast.List, ast.ListComp)):
                self.lists.add(name)
            if isinstance(value_node, (ast.List, ast.ListComp, ast.Tuple, ast.GeneratorExp,
                                       ast.Dict, ast.DictComp, ast.Set, ast.SetComp)) or (
                    isinstance(value_node, ast.Call) and isinstance(value_node.func, ast.Name)
                    and value_node.func.id in ("list", "tuple", "dict", "zip")):
                self.containers.add(name)
        elif isinstance(target, (ast.Tuple, ast.List)):
            vals = value_node.elts if isinstance(value_node, (ast.Tuple, ast.List)) else None
            if vals is not None and len(vals) == len(target.elts) and not any(
                    isinstance(e, ast.Starred) for e in (*vals, *target.elts)):
                for t, v in zip(target.elts, vals, strict=True):
                    self.bind(t, self.expr(v), node, v)
            else:
                for t in target.elts:
                    self.bind(t, value, node)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, value, node)
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            self.expr(target)
            base = target.value
            while isinstance(base, (ast.Subscript, ast.Attribute)):
                base = base.value
            # a list element or an attribute keeps a reference; an array element copies
            # its value. ``c[0] = a`` with ``a`` a parameter, global or unknown storage: ``c``
            # may be a list now holding ``a``. ``c[i, j] = a`` (a tuple index) is an array
            # element: lists take no tuple index, and numba compiles no dict of arrays passed in
            if not (isinstance(base, ast.Name) and base.id in self.roots):
                return
            if isinstance(target, ast.Subscript) and (isinstance(target.slice, ast.Tuple)
                                                      or base.id in self.arrays):
                return
            if base.id in self.lists or isinstance(target, ast.Attribute):
                self.roots[base.id] |= value - {_OWN}
            elif value_node is not None and self._bare(value_node):
                self.roots[base.id] |= {r for r in value if r == UNKNOWN or (
                    (r not in self.roots or r in self.params) and r != _OWN)}

    @staticmethod
    def _bare(node: ast.AST) -> bool:
        """A value that is a reference to storage (a name, or a display/choice of names)."""
        if isinstance(node, ast.Name):
            return True
        if isinstance(node, (ast.Tuple, ast.List)):
            return any(_Pass._bare(e) for e in node.elts)
        if isinstance(node, ast.IfExp):
            return _Pass._bare(node.body) or _Pass._bare(node.orelse)
        return False

    def stmt(self, s: ast.stmt) -> None:
        swap = _permutation(s)
        if swap is None:
            swap = self.rotation_parts.get(id(s))
        if swap is not None and swap <= set(self.roots):
            if swap not in self.swaps:
                self.swaps.append(swap)  # names exchanged: roots joined after the pass
        elif isinstance(s, ast.Assign):
            value = self.expr(s.value)
            for t in s.targets:
                self.bind(t, value, s, s.value)
        elif isinstance(s, ast.AnnAssign):
            if s.value is not None:
                self.bind(s.target, self.expr(s.value), s, s.value)
        elif isinstance(s, ast.AugAssign):
            value = self.expr(s.value)
            if isinstance(s.target, ast.Name) and s.target.id in self.lists:
                self.roots[s.target.id] |= value - {_OWN}
            else:
                self.expr(s.target)
        elif isinstance(s, (ast.For, ast.AsyncFor)):
            it = self.expr(s.iter)
            self.bind(s.target, it, s)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            for item in s.items:
                v = self.expr(item.context_expr) | {UNKNOWN}
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, v, s)
        elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                            ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Try,
                            ast.Delete)):
            for n in ast.walk(s):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                    self.bind(n, {UNKNOWN}, s)
                elif isinstance(n, ast.alias):
                    self.bind(ast.Name((n.asname or n.name).split(".")[0], ast.Store()),
                              {UNKNOWN}, s)
        else:
            for child in ast.iter_child_nodes(s):
                if isinstance(child, ast.expr):
                    self.expr(child)
        for field_ in ("body", "orelse", "finalbody"):
            for inner in getattr(s, field_, []) or []:
                if isinstance(inner, ast.stmt):
                    self.stmt(inner)
        for h in getattr(s, "handlers", []) or []:
            for inner in h.body:
                self.stmt(inner)

    def run(self) -> None:
        for _ in range(len(self.roots) + 2):  # fixpoint: each round can only add roots
            before = {k: frozenset(v) for k, v in self.roots.items()}
            for s in self.tree.body:
                self.stmt(s)
            if before == {k: frozenset(v) for k, v in self.roots.items()}:
                break


def _permutation(s: ast.stmt) -> set[str] | None:
    """The names of ``a, b = b, a`` (a tuple of two or more distinct plain names assigned a
    permutation of themselves), or None."""
    if not isinstance(s, ast.Assign) or len(s.targets) != 1:
        return None
    t, v = s.targets[0], s.value
    if not isinstance(t, (ast.Tuple, ast.List)) or not isinstance(v, (ast.Tuple, ast.List)):
        return None
    if not all(isinstance(e, ast.Name) for e in (*t.elts, *v.elts)):
        return None
    left = [e.id for e in t.elts]  # type: ignore[attr-defined]
    right = [e.id for e in v.elts]  # type: ignore[attr-defined]
    if len(left) < 2 or len(set(left)) != len(left) or sorted(left) != sorted(right):
        return None
    return set(left)


def _rotations(tree: ast.FunctionDef) -> dict[int, set[str]]:
    """Rotations of plain names through a temporary, in any statement list of ``tree``:
    ``t = x0; x0 = x1; …; x(k-1) = t`` (``k >= 2`` distinct names, ``t`` none of them; a
    swap when ``k == 2``). Maps the id of each statement after ``t = x0`` to the rotated
    names; ``t = x0`` itself stays an ordinary binding (``t`` keeps one of the storages)."""
    def pair(s: ast.stmt) -> tuple[str, str] | None:
        if isinstance(s, ast.Assign) and len(s.targets) == 1 \
                and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Name):
            return s.targets[0].id, s.value.id
        return None

    found: dict[int, set[str]] = {}
    for node in ast.walk(tree):
        for field_ in ("body", "orelse", "finalbody"):
            body = getattr(node, field_, None)
            if not isinstance(body, list):
                continue
            for at, first in enumerate(body):
                head = pair(first) if isinstance(first, ast.stmt) else None
                if head is None:
                    continue
                temp, names = head[0], [head[1]]
                for k, s in enumerate(body[at + 1:], start=at + 1):
                    step = pair(s)
                    if step is None or step[0] != names[-1]:
                        break
                    if step[1] == temp:  # the rotation closes
                        if len(names) >= 2 and len(set(names)) == len(names) \
                                and temp not in names:
                            for part in body[at + 1:k + 1]:
                                found[id(part)] = set(names)
                        break
                    names.append(step[1])
    return found


def _swap_groups(p: _Pass) -> list[frozenset[str]]:
    """Join the roots of names permuted among themselves, and return the groups whose names
    name pairwise distinct storage at every point.

    The pass skipped the permutations, so ``p.roots`` holds what every *other* binding gives
    each name. A permutation only exchanges those storages between the names: if they are
    pairwise distinct (no shared root, no unknown storage, no container), the names stay
    pairwise distinct after any number of exchanges. Either way each name may now hold any of
    the group's storages: its roots become the group's union (so a third name aliasing one
    of them still aliases all of them).
    """
    groups: list[set[str]] = []
    for sw in p.swaps:  # overlapping permutations form one group
        joined = [g for g in groups if g & sw]
        merged = set(sw).union(*joined)
        groups = [g for g in groups if not g & sw] + [merged]
    distinct = []
    for g in groups:
        roots = [set(p.roots[n]) for n in g]
        ok = all(UNKNOWN not in r and _OWN not in r for r in roots) \
            and not g & (p.lists | p.containers) \
            and sum(len(r) for r in roots) == len(set().union(*roots))
        union = set().union(*roots)
        for n in g:
            p.roots[n] = set(union)
        if ok:
            distinct.append(frozenset(g))
    return distinct


def _fresh_pairs(tree: ast.FunctionDef, p: _Pass) -> tuple[tuple[frozenset[str],
                                                                   frozenset[int]], ...]:
    """The next iterate allocated afresh, then rebound to the current one::

        for t in range(steps):
            new = np.empty_like(u)      # a: new's only binding, a fresh allocation
            for i in range(1, n - 1):   # loops between a and b: new and u are distinct
                new[i] = 0.5 * (u[i - 1] + u[i + 1])
            u = new                     # b: u bound to new; not bound between a and b

    Flow-insensitively ``u`` may hold ``new``'s storage, but between ``a`` and ``b`` in one
    statement list ``new`` holds storage allocated after ``u`` was last bound: no storage
    that existed before ``a``, so not ``u``'s. Returns ``({new, u}, ids of the loops nested in
    the statements between a and b)`` for each such pair."""
    stores: dict[str, int] = {}
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            stores[n.id] = stores.get(n.id, 0) + 1
    out = []
    for block in statement_lists(tree):
        for a, first in enumerate(block):
            if not (isinstance(first, ast.Assign) and len(first.targets) == 1
                    and isinstance(first.targets[0], ast.Name)):
                continue
            x = first.targets[0].id
            if stores.get(x) != 1 or p.roots.get(x) != {x} or x in p.params:
                continue  # not a single fresh allocation
            for b in range(a + 1, len(block)):
                s = block[b]
                if isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(
                        s.targets[0], ast.Name) and isinstance(s.value, ast.Name) \
                        and s.value.id == x and s.targets[0].id != x:
                    y = s.targets[0].id
                    between = block[a + 1:b]
                    if any(isinstance(n, ast.Name) and n.id == y
                           and isinstance(n.ctx, (ast.Store, ast.Del))
                           for t in between for n in ast.walk(t)):
                        break
                    ids = frozenset(id(n) for t in between for n in ast.walk(t)
                                    if isinstance(n, (ast.For, ast.While)))
                    if ids:
                        out.append((frozenset({x, y}), ids))
                    break
    return tuple(out)


def _scalar_names(tree: ast.FunctionDef, namespace: dict[str, Any],
                  ndims: Mapping[str, int]) -> set[str]:
    """Locals that hold a number at every binding: each binding is a numeric literal, a
    NumPy/math constant (``np.inf``), a ``range`` loop index, another such name, arithmetic
    and ``math``/``abs``/``min``/``max``/``int``/``float`` calls of those, or an element of a
    numeric array parameter whose number of dimensions is known (``ndims``: ``search`` knows
    its arguments) indexed by as many such numbers (``s = A[j, j]`` of a 2-D ``A``) — the
    greatest such set. Numbers are copied, never shared: no alias to follow. A name also bound
    to anything else (an element read of an array of unknown rank, which may be a view of a
    row) is left out."""
    a = tree.args
    params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    binds: dict[str, list[ast.AST | None]] = {}  # None: a binding that is never a number

    def add(t: ast.AST, v: ast.AST | None) -> None:
        if isinstance(t, ast.Name):
            binds.setdefault(t.id, []).append(v)
        elif isinstance(t, (ast.Tuple, ast.List)):
            vals = v.elts if isinstance(v, (ast.Tuple, ast.List)) \
                and len(v.elts) == len(t.elts) else [None] * len(t.elts)
            for te, ve in zip(t.elts, vals, strict=True):
                add(te, ve)
        elif isinstance(t, ast.Starred):
            add(t.value, None)

    for n in ast.walk(tree):
        if isinstance(n, ast.Assign):
            for t in n.targets:
                add(t, n.value)
        elif isinstance(n, (ast.AnnAssign, ast.NamedExpr)) and n.value is not None:
            add(n.target, n.value)
        elif isinstance(n, (ast.For, ast.AsyncFor)):
            it = n.iter
            ranged = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) \
                and it.func.id in ("range", "prange") and it.func.id not in binds
            add(n.target, it if ranged else None)
        elif isinstance(n, (ast.With, ast.AsyncWith)):
            for item in n.items:
                if item.optional_vars is not None:
                    add(item.optional_vars, None)
    # names bound only otherwise (imports, nested defs, …) are never numbers here
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id not in binds:
            binds[n.id] = [None]
    found = {k for k in binds if k not in params}

    def number(v: ast.AST | None) -> bool:
        if v is None:
            return False
        if isinstance(v, ast.Constant):
            return isinstance(v.value, (int, float, complex)) and not isinstance(v.value, bool)
        if isinstance(v, ast.Name):
            return v.id in found
        if isinstance(v, ast.Attribute):
            return (isinstance(v.value, ast.Name) and v.attr in ("inf", "nan", "pi", "e", "tau")
                    and getattr(namespace.get(v.value.id), "__name__", "") in ("numpy", "math"))
        if isinstance(v, ast.BinOp):
            return number(v.left) and number(v.right)
        if isinstance(v, ast.UnaryOp):
            return number(v.operand)
        if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) \
                and v.value.id in ndims and v.value.id not in binds:
            idx = v.slice.elts if isinstance(v.slice, ast.Tuple) else [v.slice]
            return len(idx) == ndims[v.value.id] and all(
                not isinstance(e, (ast.Slice, ast.Starred)) and number(e) for e in idx)
        if isinstance(v, ast.Call) and not v.keywords:
            f = v.func
            if isinstance(f, ast.Name) and f.id in ("range", "prange"):
                return True  # a loop index (the For binding above)
            ok = (isinstance(f, ast.Name) and f.id in ("abs", "min", "max", "int", "float")
                  and f.id not in binds) or (
                isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                and getattr(namespace.get(f.value.id), "__name__", "") == "math")
            return ok and all(number(x) for x in v.args)
        return False

    changed = True
    while changed:
        changed = False
        for name in list(found):
            if not all(number(v) for v in binds[name]):
                found.discard(name)
                changed = True
    return found


def _written_roots(p: _Pass) -> set[str]:
    """Roots of every storage the function may write: subscript/attribute stores, in-place
    operators, ``out=``, hidden-write calls, and anything handed to an unknown call."""
    out: set[str] = set()

    def base_roots(node: ast.AST) -> set[str]:
        while isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
            node = node.value
        return p.expr(node)

    for n in ast.walk(p.tree):
        if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.ctx, ast.Store):
            out |= base_roots(n)
        elif isinstance(n, ast.AugAssign):
            out |= base_roots(n.target)
        elif isinstance(n, ast.Call):
            f = n.func
            chain = np_call_chain(f, p.ns)
            kw = {k.arg: k.value for k in n.keywords}
            if "out" in kw:
                out |= p.expr(kw["out"])
            pure = False
            if chain is not None:
                pure = chain[0] in ("math", "cmath") or (
                    chain[0] == "numpy" and hidden_write(chain) is None)
            elif isinstance(f, ast.Name) and f.id not in p.roots and f.id not in p.ns:
                pure = f.id in _FRESH_BUILTINS or f.id in ("min", "max", "print")
            elif isinstance(f, ast.Attribute) and f.attr in FRESH_METHODS | VIEW_METHODS:
                pure = True
            if not pure:
                if isinstance(f, ast.Attribute):
                    out |= p.expr(f.value)
                for a in (*n.args, *(k.value for k in n.keywords)):
                    out |= p.expr(a)
    return out - {_OWN}


def alias_info(tree: ast.FunctionDef, namespace: dict[str, Any], line0: int,
               arrays: frozenset[str] = frozenset(),
               ndims: Mapping[str, int] | None = None) -> AliasInfo:
    """The :class:`AliasInfo` of a function definition; ``arrays``: parameters known to be
    NumPy arrays (``search`` knows its arguments), whose element stores copy values as for a
    name read through ``.shape``; ``ndims``: those of them with numeric elements, and their
    number of dimensions (a full-rank element read is a number, :func:`_scalar_names`)."""
    p = _Pass(tree, namespace, line0, ndims)
    p.arrays |= set(arrays) & set(p.params)
    p.run()
    distinct = _swap_groups(p)
    if p.swaps:
        p.run()  # names bound from a swapped name now reach the whole group
    written = _written_roots(p)
    return AliasInfo(p.params, {k: frozenset(v) for k, v in p.roots.items()},
                     frozenset(written), dict(p.view_lines), frozenset(p.globals_read),
                     frozenset(p.containers), tuple(distinct), frozenset(p.scalars),
                     _fresh_pairs(tree, p))
