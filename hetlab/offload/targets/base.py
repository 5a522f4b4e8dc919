"""What every target shares: the :class:`Target` protocol, :class:`Variant`, codegen helpers.

A target turns an analysis :class:`~hetlab.offload.analysis.report.Report` and chosen loops
into a :class:`Variant` (generated source + callable). The numba variant's source
(:func:`numba_source`: the function's own source with ``range`` replaced by ``prange`` on the
chosen loops, function blocks replaced by their NumPy call, ``@njit(parallel=…)``) is here
because the FPGA host code is built on it too. Targets are found through
:mod:`hetlab.offload.targets.registry`; nothing outside a target's own module branches on its
name.
"""

from __future__ import annotations

import ast
import copy
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

import numpy as np

from ...errors import InvalidInputError
from ..analysis.dotinto import IMPORT as INTO_IMPORT
from ..analysis.dotinto import INTO
from ..analysis.report import Report
from ..analysis.transforms import apply_transforms, tag_loops
from ..analysis.transforms.accumulate import promote_accumulators
from ..analysis.transforms.hoist import hoist_invariant_indices
from ..analysis.transforms.index_copies import fresh_index_copies
from ..analysis.transforms.nanexact import NAN_IMPORT, NAN_NAMES, nan_exact_calls
from ..analysis.transforms.partials import local_partials, reduction_operand_first
from ..analysis.transforms.slice_sums import slice_sums
from ..analysis.transforms.slices import slice_loops
from ..analysis.transforms.statements import splice
from ..runtime.guard import AliasGuard, check_on_alias
from ..runtime.listargs import lists_as_arrays
from .steps import unit_step_pranges

__all__ = ["Target", "TargetBase", "Variant", "for_nodes", "numba_source", "alias_guard",
           "wrap_like", "check_parallel", "check_blocks", "passed_globals"]


@runtime_checkable
class Target(Protocol):
    """One offload destination (numba, cuda, fpga): generates variants of a function.

    ``name`` is what variants and plans record (``Variant.target``, ``Plan.target``, the keys
    of ``plan.alternatives``); ``device`` the name a user gives the device (the kernel API's
    backend name); the registry accepts both, and the target's ``aliases``.
    """

    name: str
    device: str

    def ready(self) -> str | None:
        """Why this target cannot run here (None: it can)."""

    def generate(self, report: Report, loops: tuple[str | int, ...], **options: Any) -> Variant:
        """The variant offloading ``loops`` (ids or indices) of ``report``'s function."""

    def synchronize(self) -> None:
        """Wait for work the target launched asynchronously (timing boundary)."""


class TargetBase:
    """Defaults for the optional hooks :func:`~hetlab.offload.search` uses.

    A target subclasses this and sets :attr:`name`, :attr:`device`, implements
    :meth:`generate`; the rest has working defaults for a CPU-like target searched by the
    loop GA.
    """

    #: what variants and plans record as their target
    name: ClassVar[str] = ""
    #: the device the user names (the kernel API's backend name)
    device: ClassVar[str] = ""
    #: other names the registry accepts for this target
    aliases: ClassVar[tuple[str, ...]] = ()
    #: how ``search`` explores it: ``"loops"`` (GA over the loops of :meth:`genes`) or
    #: ``"nests"`` (the FPGA step: nests of high intensity on top of the host target's plan)
    stage: ClassVar[str] = "loops"
    #: the Dask worker resource a remote measurement of its variants asks for
    resource: ClassVar[str] = "cpu-bench"
    #: what an offloaded loop becomes, for ``plan.table()`` ("prange", "kernel")
    loop_kind: ClassVar[str] = ""
    #: the target whose plan runs the host part (``stage == "nests"``)
    host: ClassVar[str] = ""

    def ready(self) -> str | None:
        return None

    def synchronize(self) -> None:
        return None

    def generate(self, report: Report, loops: tuple[str | int, ...],
                 **options: Any) -> Variant:  # pragma: no cover - every target overrides
        raise NotImplementedError

    def genes(self, report: Report) -> list[str]:
        """Loops the GA may offload: the parallelizable ones."""
        return [lp.id for lp in report.parallelizable]

    def notes(self, report: Report, function_blocks: bool) -> list[str]:
        """Notes for ``plan.notes`` about how this target's times were obtained."""
        return []

    def blocks_ready(self) -> str | None:
        """Why function blocks cannot be tried on this target here (None: they can)."""
        return None

    def refine(self, plan: Any, args: tuple, expected: tuple, *, repeats: int,
               thread_tolerance: float) -> None:
        """After the search: figures of the chosen plan (thread amount, transfers…)."""
        return None

    def fixed_serial(self, report: Report, blocks: tuple[str, ...] = ()) -> Variant | None:
        """A serial variant with this target's fixed loop passes applied (interchange, scalar
        replacement), a candidate beside the plain serial one; None when the target has no
        such passes or none applies."""
        return None


def for_nodes(stmts: list[ast.stmt]) -> Iterator[ast.For]:
    """``for`` statements in the pre-order :func:`~hetlab.offload.analysis.report.analyze`
    numbers."""
    for s in stmts:
        if isinstance(s, ast.For):
            yield s
            yield from for_nodes(s.body)
        elif isinstance(s, ast.While):
            yield from for_nodes(s.body)
        elif isinstance(s, ast.If):
            yield from for_nodes(s.body)
            yield from for_nodes(s.orelse)


@dataclass
class Variant:
    """One generated variant: the target, the loops it offloads, its source and callable."""

    name: str
    target: str
    loops: tuple[str, ...]
    source: str
    namespace: dict[str, Any] = field(repr=False)
    #: host↔device copies counted by a cuda variant (None for numba)
    transfers: Any = None
    #: ids of the function blocks replaced by library calls
    blocks: tuple[str, ...] = ()
    _compiled: Callable[..., Any] | None = field(default=None, repr=False)
    #: module-level arrays the function reads, passed as trailing arguments at each call
    #: (:func:`passed_globals`), looked up in :attr:`namespace` then
    passed: tuple[str, ...] = ()
    #: the no-alias assumption checked at every call (None: nothing assumed, or rebuilt
    #: from source in a worker)
    guard: AliasGuard | None = field(default=None, repr=False)
    #: positions of parameters only read as sequences: a list of numbers there is passed as
    #: an array (:mod:`hetlab.offload.analysis.listargs`; numba's reflected lists cost about
    #: 0.7 µs per element per call)
    as_arrays: tuple[int, ...] = ()

    def compile(self, on_alias: str = "raise") -> Callable[..., Any]:
        """The variant's callable (built once: exec of :attr:`source`; numba compiles lazily).

        Parameters
        ----------
        on_alias : {"raise", "serial"}
            What a call does when an array the function writes shares memory with another
            argument (``f(x, x)``, ``f(x[:-1], x[1:])``), which the parallel loops and library
            calls assume never happens: raise :class:`~hetlab.errors.InvalidInputError`
            naming the two arguments, or run the original (serial Python) function.

        Returns
        -------
        callable
            With ``fn``'s positional signature.
        """
        check_on_alias(on_alias, "offload: Variant.compile")
        raw = lists_as_arrays(self._build(), self.as_arrays)
        if self.passed:
            raw = _passing(raw, self.namespace, self.passed)
        if self.guard is None:
            return raw
        return self.guard.wrap(raw, on_alias)

    def _build(self) -> Callable[..., Any]:
        """The unguarded callable, built once."""
        if self._compiled is None:
            ns = self.namespace
            exec(compile(self.source, f"<hetlab.offload {self.name}>", "exec"), ns)
            self._compiled = ns[self.name]
        return self._compiled


def _passing(raw: Callable[..., Any], namespace: dict[str, Any],
             names: tuple[str, ...]) -> Callable[..., Any]:
    """``raw`` called with the current values of ``names`` appended to the arguments."""
    @functools.wraps(raw)
    def call(*args: Any) -> Any:
        return raw(*args, *[namespace[g] for g in names])

    return call


def passed_globals(report: Report) -> tuple[str, ...]:
    """Module-level (or enclosing) NumPy arrays ``report``'s function reads: numba compiles
    a global array as a constant, so a plan would keep the values it had when compiled while
    the function reads the array as it is at each call (a lookup table updated in place).
    Passed as parameters of the same names, they are read at each call."""
    ns = report.source.namespace
    return tuple(g for g in sorted(report.aliases.globals_read)
                 if isinstance(ns.get(g), np.ndarray) and g not in report.params)


def lookup(get: Callable[[str | int], Any], key: str | int) -> Any:
    """``get(key)`` (a loop or a block of the report), its KeyError as bad input."""
    try:
        return get(key)
    except KeyError as exc:
        raise InvalidInputError(str(exc.args[0])) from None


def by_number(ids: Iterable[str]) -> tuple[str, ...]:
    """Distinct ids like ``"L3"``/``"B1"`` in numeric order."""
    return tuple(sorted(set(ids), key=lambda k: int(k[1:])))


def check_parallel(report: Report, loops: Iterable[str | int],
                   private_ok: bool = False) -> tuple[str, ...]:
    """Ids of ``loops`` in numeric order; each must be parallelizable (numba ``prange``), or,
    with ``private_ok``, parallel once its arrays are privatized (``report.transforms``)."""
    chosen = []
    extra = set(report.transforms.privatizable()) if private_ok else set()
    for key in loops:
        lp = lookup(report.loop, key)
        if not lp.parallelizable and lp.id not in extra:
            ok = ", ".join([x.id for x in report.parallelizable] + sorted(extra)) or "none"
            raise InvalidInputError(
                f"offload.transform: loop {lp.id} ({lp.var}, line {lp.line}) is {lp.verdict} "
                f"({lp.why}); parallelizable loops: {ok}.")
        chosen.append(lp.id)
    return by_number(chosen)


def check_blocks(report: Report, blocks: Iterable[str | int],
                 loops: tuple[str, ...] = ()) -> tuple[str, ...]:
    """Ids of function ``blocks`` in numeric order; none may contain one of ``loops``."""
    chosen = []
    for key in blocks:
        b = lookup(report.block, key)
        clash = by_number(set(b.loops) & set(loops))
        if clash:
            raise InvalidInputError(
                f"offload.transform: loops {', '.join(clash)} are inside function block {b.id} "
                f"({b.pattern}), which replaces them; choose the block or the loops.")
        chosen.append(b.id)
    return by_number(chosen)


def _inside(report: Report, key: str, chosen: tuple[str, ...]) -> bool:
    parent = report.loop(key).parent
    while parent is not None:
        if report.loop(parent).id in chosen:
            return True
        parent = report.loop(parent).parent
    return False


def numba_source(report: Report, chosen: tuple[str, ...], *, parallel: bool | None = None,
                 header: str = "", blocks: tuple[str, ...] = (),
                 replace: dict[str, str] | None = None, transforms: bool = False,
                 tiles: dict[str, int] | None = None, fastmath: bool = False,
                 passed: tuple[str, ...] = ()) -> str:
    """Source of the numba variant: ``prange`` on ``chosen``, ``blocks`` replaced by their
    NumPy call, the nests rooted at ``replace``'s loop ids replaced by its statements (the
    FPGA host code), decorated ``@njit``.

    A chosen loop that is parallel only with privatized arrays (``report.transforms.private``)
    runs over chunks with a private copy each; one parallel but for scalars read after it
    (``report.transforms.lastprivate``) runs its last iteration after the others;
    ``transforms`` also applies the fixed passes
    (interchange for unit stride, scalar replacement); ``tiles`` (band root id → size) tiles
    those bands; ``fastmath`` compiles it with ``fastmath={'contract', 'reassoc'}`` (the
    numba target's reassociation gene); ``passed`` (:func:`passed_globals`) become trailing
    parameters, which :meth:`Variant.compile` fills at each call. Each change is a comment
    line of the source (:mod:`hetlab.offload.analysis.transforms`)."""
    tree = copy.deepcopy(report.source.tree)
    ids = tag_loops(tree, [lp.id for lp in report.loops])
    private, lastp = report.transforms.private, report.transforms.lastprivate
    chunked = tuple(k for k in chosen if k in private and not _inside(report, k, chosen))
    peeled = tuple(k for k in chosen if k in lastp and k not in private
                   and not _inside(report, k, chosen))
    for key in chosen:
        if key in private or key in lastp:
            continue  # chunked or peeled below, or serial inside another chosen loop
        node = ids[key]
        assert isinstance(node.iter, ast.Call)
        node.iter.func = ast.Name("prange", ast.Load())
    for key in blocks:
        b = report.block(key)
        call = ast.parse(b.numba_call or b.call).body
        if not splice(tree.body, ids[b.nest], call):  # pragma: no cover - ids come from tree
            raise AssertionError(f"block {b.id}: nest {b.nest} not found")
    for key, text in (replace or {}).items():
        splice(tree.body, ids[key], ast.parse(text).body)
    skip = frozenset(lp.id for lp in report.loops if lp.verdict == "unsupported")
    notes = apply_transforms(tree, report.transforms, report.aliases, chunked=chunked,
                             fixed=transforms, skip=skip, parallel=chosen,
                             collapsible=frozenset(lp.id for lp in report.loops
                                                   if lp.verdict == "parallel"), tiles=tiles,
                             peeled=peeled)
    unit_step_pranges(tree)  # numba's prange takes step 1 only
    notes += local_partials(tree)  # reductions numba would drop (a loop under an if)
    notes += reduction_operand_first(tree)  # ``s = e + s`` → ``s = s + e`` (numba's order)
    notes += fresh_index_copies(tree)  # ``t = i`` then ``t += 1``: numba's "overwrite"
    if transforms:  # slice statements in loops as element loops (no temporaries)
        notes += slice_sums(tree, report.array_ranks, report.double_arrays,
                            report.aliases.numbers, report.scalar_params)
        notes += slice_loops(tree, report.array_ranks, report.float_arrays,
                             report.aliases.numbers, report.scalar_params)
        notes += hoist_invariant_indices(tree)  # ``(i + a - 1) % h`` once before its loop
    par = bool(chosen) if parallel is None else parallel
    notes += nan_exact_calls(tree, report.source.namespace, par)  # NumPy's NaN rule kept
    flags = [ast.keyword("parallel", ast.Constant(par))]
    if fastmath:
        notes += promote_accumulators(tree, report.float_arrays, report.aliases)
        flags.append(ast.keyword("fastmath", ast.Set([ast.Constant("contract"),
                                                      ast.Constant("reassoc")])))
        notes.append("fastmath contract, reassoc: sums may be reordered (vectorized) and "
                     "multiply-adds fused; results differ in the last bits")
    tree.decorator_list = [ast.Call(ast.Name("njit", ast.Load()), [], flags)]
    if passed:  # numba would freeze them as constants at compile time
        tree.args.args += [ast.arg(g) for g in passed]
        notes.append(f"global arrays {', '.join(passed)} passed at each call (numba would "
                     "freeze their values when it compiles)")
    body = ast.unparse(ast.fix_missing_locations(tree))
    loops = ", ".join(f"{k} ({report.loop(k).var}, line {report.loop(k).line})"
                      for k in chosen) or "none (serial)"
    head = header or f"# hetlab.offload: numba variant of {report.name}; prange on {loops}"
    if blocks:
        head += "\n# function blocks: " + "; ".join(
            f"{b} ({report.block(b).pattern} at {report.block(b).nest})" for b in blocks)
        head += "\nimport numpy as np"
    head += "".join(f"\n# transform: {n}" for n in notes)
    if chunked:
        head += "\nimport numpy as _hl_np\nfrom numba import get_num_threads as _hl_threads"
    elif "_hl_threads()" in body:  # a collapsed nest's run-time choice
        head += "\nfrom numba import get_num_threads as _hl_threads"
    if INTO in body:  # a product written into its output (analysis/dotinto.py)
        head += "\n" + INTO_IMPORT
    if any(f"{name}(" in body for name in NAN_NAMES.values()):
        head += "\n" + NAN_IMPORT
    imports = "njit, prange, uint64 as _hl_u64" if "_hl_u64(" in body else "njit, prange"
    return f"{head}\nfrom numba import {imports}\n\n\n{body}\n"


def alias_guard(report: Report) -> AliasGuard:
    """The per-call no-alias check of ``report``'s function (see :mod:`.guard`)."""
    aliases = report.aliases
    return AliasGuard(report.name, tuple(report.params), aliases.written_params(),
                      report.source.namespace, tuple(sorted(aliases.globals_read)),
                      report.source.fn)


def wrap_like(original: Callable[..., Any], impl: Callable[..., Any]) -> Callable[..., Any]:
    """A callable with ``original``'s name, docstring and signature that calls ``impl``.

    Arguments are bound as ``original`` binds them (keywords, defaults filled in) and passed
    to ``impl`` by position: a compiled variant takes positional arguments only.

    >>> def f(x, scale=2.0, shift=0.0):
    ...     return x * scale + shift
    >>> g = wrap_like(f, lambda *a: a)
    >>> g(1.0, shift=0.5)
    (1.0, 2.0, 0.5)
    """
    try:
        sig: inspect.Signature | None = inspect.signature(original)
    except (TypeError, ValueError):  # no signature to bind with: positional as given
        sig = None

    n_params = len(sig.parameters) if sig is not None else -1

    @functools.wraps(original)
    def call(*args: Any, **kwargs: Any) -> Any:
        if sig is None or (not kwargs and len(args) == n_params):  # every one by position
            return impl(*args, **kwargs)
        bound = sig.bind(*args, **kwargs)  # the original's TypeError for a bad call
        bound.apply_defaults()
        return impl(*bound.args, **bound.kwargs)

    return call
