"""``offload.transform``: the numba variant of a function with ``prange`` on chosen loops.

The variant is the function's own source with ``range`` replaced by ``prange`` on the chosen
loops and an ``@njit(parallel=…)`` decorator; reductions need no rewrite (numba recognizes
``s += …`` and ``s = max(s, …)`` in a prange loop). Chosen function blocks
(:mod:`hetlab.offload.blocks`) replace their whole nest by one NumPy statement (``A @ B``,
``np.dot``) inside the same ``njit`` function. The generated source is kept, readable.
"""

from __future__ import annotations

import ast
import copy
import functools
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInputError
from .analysis import Report, analyze
from .guard import AliasGuard, check_on_alias

__all__ = ["Variant", "transform", "for_nodes", "TARGETS"]

#: destinations a variant can be generated for
TARGETS = ("numba", "cuda", "fpga")


def for_nodes(stmts: list[ast.stmt]) -> Iterator[ast.For]:
    """``for`` statements in the pre-order :func:`~hetlab.offload.analysis.analyze` numbers."""
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
    #: the no-alias assumption checked at every call (None: nothing assumed, or rebuilt
    #: from source in a worker)
    guard: AliasGuard | None = field(default=None, repr=False)

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
        raw = self._build()
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


def _lookup(get: Callable[[str | int], Any], key: str | int) -> Any:
    """``get(key)`` (a loop or a block of the report), its KeyError as bad input."""
    try:
        return get(key)
    except KeyError as exc:
        raise InvalidInputError(str(exc.args[0])) from None


def _by_number(ids: Iterable[str]) -> tuple[str, ...]:
    """Distinct ids like ``"L3"``/``"B1"`` in numeric order."""
    return tuple(sorted(set(ids), key=lambda k: int(k[1:])))


def _check_loops(report: Report, loops: Iterable[str | int],
                 target: str = "numba") -> tuple[str, ...]:
    gpu = None
    if target == "cuda":
        from .atomics import gpu_offloadable

        gpu = gpu_offloadable(report)
    chosen = []
    for key in loops:
        lp = _lookup(report.loop, key)
        if gpu is not None and lp.id not in gpu:
            ok = ", ".join(gpu) or "none"
            raise InvalidInputError(
                f"offload.transform: loop {lp.id} ({lp.var}, line {lp.line}) is {lp.verdict} "
                f"({lp.why}); the cuda target offloads parallel loops, +/min/max reductions "
                f"and atomic array updates; offloadable loops: {ok}.")
        if gpu is None and not lp.parallelizable:
            ok = ", ".join(x.id for x in report.parallelizable) or "none"
            raise InvalidInputError(
                f"offload.transform: loop {lp.id} ({lp.var}, line {lp.line}) is {lp.verdict} "
                f"({lp.why}); parallelizable loops: {ok}.")
        chosen.append(lp.id)
    return _by_number(chosen)


def _check_blocks(report: Report, blocks: Iterable[str | int], loops: tuple[str, ...],
                  target: str) -> tuple[str, ...]:
    chosen = []
    for key in blocks:
        b = _lookup(report.block, key)
        clash = _by_number(set(b.loops) & set(loops))
        if clash:
            raise InvalidInputError(
                f"offload.transform: loops {', '.join(clash)} are inside function block {b.id} "
                f"({b.pattern}), which replaces them; choose the block or the loops.")
        chosen.append(b.id)
    return _by_number(chosen)


def _replace(stmts: list[ast.stmt], old: ast.stmt, new: list[ast.stmt]) -> bool:
    """Replace statement ``old`` (by identity) somewhere under ``stmts`` by ``new``."""
    for k, s in enumerate(stmts):
        if s is old:
            stmts[k:k + 1] = new
            return True
        for field_ in ("body", "orelse"):
            inner = getattr(s, field_, None)
            if isinstance(inner, list) and _replace(inner, old, new):
                return True
    return False


def numba_source(report: Report, chosen: tuple[str, ...], *, parallel: bool | None = None,
                 header: str = "", blocks: tuple[str, ...] = (),
                 replace: dict[str, str] | None = None) -> str:
    """Source of the numba variant: ``prange`` on ``chosen``, ``blocks`` replaced by their
    NumPy call, the nests rooted at ``replace``'s loop ids replaced by its statements (the
    FPGA host code), decorated ``@njit``."""
    tree = copy.deepcopy(report.source.tree)
    ids = {report.loops[k].id: node for k, node in enumerate(for_nodes(tree.body))}
    for key in chosen:
        node = ids[key]
        assert isinstance(node.iter, ast.Call)
        node.iter.func = ast.Name("prange", ast.Load())
    for key in blocks:
        b = report.block(key)
        call = ast.parse(b.call).body
        if not _replace(tree.body, ids[b.nest], call):  # pragma: no cover - ids come from tree
            raise AssertionError(f"block {b.id}: nest {b.nest} not found")
    for key, text in (replace or {}).items():
        _replace(tree.body, ids[key], ast.parse(text).body)
    par = bool(chosen) if parallel is None else parallel
    tree.decorator_list = [ast.Call(ast.Name("njit", ast.Load()), [],
                                    [ast.keyword("parallel", ast.Constant(par))])]
    body = ast.unparse(ast.fix_missing_locations(tree))
    loops = ", ".join(f"{k} ({report.loop(k).var}, line {report.loop(k).line})"
                      for k in chosen) or "none (serial)"
    head = header or f"# hetlab.offload: numba variant of {report.name}; prange on {loops}"
    if blocks:
        head += "\n# function blocks: " + "; ".join(
            f"{b} ({report.block(b).pattern} at {report.block(b).nest})" for b in blocks)
        head += "\nimport numpy as np"
    return f"{head}\nfrom numba import njit, prange\n\n\n{body}\n"


def transform(fn: Callable[..., Any] | Report, loops: Iterable[str | int] = (), *,
              target: str = "numba", parallel: bool | None = None,
              transfers: str = "reduced", blocks: Iterable[str | int] = (),
              array_module: Any = None, args: Any = None, unroll: int | dict[str, int] = 1,
              board: str | None = None) -> Variant:
    """Generate the variant of ``fn`` that offloads ``loops`` to ``target``.

    Parameters
    ----------
    fn : function or Report
        The function (or its :func:`analyze` report).
    loops : iterable of str or int
        Loop ids (``"L2"``) or indices to run in parallel; each must be parallelizable.
        Empty: the serial ``njit`` variant.
    target : {"numba", "cuda", "cupy", "fpga"}
        ``"numba"``: ``njit(parallel=True)`` with ``prange`` on the chosen loops (many-core
        CPU). ``"cuda"`` (alias ``"cupy"``): a numba.cuda kernel per chosen nest (parallel
        loops; reductions and array updates with atomics), launched
        from the host Python code on CuPy arrays, or in numba's simulator under
        ``NUMBA_ENABLE_CUDASIM=1`` (see :mod:`hetlab.offload.gpu`). ``"fpga"``: ``loops``
        are nest roots (outermost parallelizable loops); each nest becomes a Vitis-HLS-style
        C++ kernel run through the emulator's C-simulation from an ``njit`` host, its time
        modeled (:mod:`hetlab.offload.fpga`); ``variant.source`` is the C++,
        ``variant.host_source`` the host code, ``variant.models()`` the modeled times.
    parallel : bool, optional
        numba only: force ``parallel=`` (``True`` with no loops gives numba's own automatic
        parallelization, a baseline).
    transfers : {"reduced", "naive"}
        cuda only: arrays kept on the device across a region of offloaded nests (copied in
        once, out once), or copied around every launch; ``variant.transfers`` counts them.
    blocks : iterable of str or int
        Function blocks (``report.blocks`` ids ``"B1"``, or the id of the nest) whose nest is
        replaced by a library call. numba: its NumPy/BLAS statement (``C[:, :] += A @ B``,
        ``s += np.dot(x, y)``; ``+=`` and ``=`` kept as in the loops) inside the same
        ``njit`` (float arrays: numba's ``@`` has no integer version). cuda: the same
        statement on the device arrays through the array module ``_xp`` (CuPy: cuBLAS for
        ``@`` and ``dot``), inside the variant's transfer plan
        (:mod:`hetlab.offload.gpu_blocks`). A loop inside a chosen block cannot be in
        ``loops``.
    args : tuple, optional
        fpga only (required): arguments the kernels are generated for (dtypes, sizes).
    unroll : int or dict, default 1
        fpga only: ``UNROLL`` factor of the innermost parallel loop, for every nest or per
        nest root id.
    board : str, optional
        fpga only: the board whose figures the timing model uses (default
        ``$HETLAB_FPGA_BOARD`` or pynq-z2).
    array_module : module, optional
        cuda only: the module bound as ``_xp`` and whose arrays stand for device arrays.
        None: CuPy on a GPU (numba's simulated device arrays under
        ``NUMBA_ENABLE_CUDASIM=1``; with blocks chosen, NumPy stands in there, since the
        simulator has no cuBLAS). ``numpy``: the array-code check — the generated code runs
        on NumPy copies; it checks the code, not the GPU.

    Returns
    -------
    Variant
        ``variant.source`` is the generated code; ``variant.compile()`` the callable, with
        ``fn``'s signature. Variants assume (as the analysis does) that arrays ``fn`` writes
        share no memory with its other arguments; the callable checks that at every call
        and raises :class:`~hetlab.errors.InvalidInputError` naming the two arguments
        (``variant.compile(on_alias="serial")`` runs the original function instead).
    """
    report = fn if isinstance(fn, Report) else analyze(fn)
    variant = _transform(report, loops, target=target, parallel=parallel, transfers=transfers,
                         blocks=blocks, array_module=array_module, args=args, unroll=unroll,
                         board=board)
    variant.guard = alias_guard(report)  # the analysis behind every variant assumed it
    return variant


def alias_guard(report: Report) -> AliasGuard:
    """The per-call no-alias check of ``report``'s function (see :mod:`.guard`)."""
    aliases = report.aliases
    return AliasGuard(report.name, tuple(report.params), aliases.written_params(),
                      report.source.namespace, tuple(sorted(aliases.globals_read)),
                      report.source.fn)


def _transform(report: Report, loops: Iterable[str | int], *, target: str,
               parallel: bool | None, transfers: str, blocks: Iterable[str | int],
               array_module: Any, args: Any, unroll: int | dict[str, int],
               board: str | None) -> Variant:
    target = {"cupy": "cuda"}.get(target, target)
    if target not in TARGETS:
        raise InvalidInputError(f"offload.transform: target must be one of {TARGETS}; "
                                f"got {target!r}.")
    if target == "fpga":
        return _fpga(report, loops, args, unroll, board, _check_blocks(report, blocks, (),
                                                                      target))
    chosen = _check_loops(report, loops, target)
    chosen_blocks = _check_blocks(report, blocks, chosen, target)
    ns = dict(report.source.namespace)
    if target == "cuda":
        from .gpu import Transfers, cuda_source

        if transfers not in ("reduced", "naive"):
            raise InvalidInputError("offload.transform: transfers must be 'reduced' or "
                                    f"'naive'; got {transfers!r}.")
        if array_module is None and chosen_blocks \
                and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
            import numpy

            array_module = numpy
        ns["_rt"] = counter = Transfers(array_module=array_module)
        if chosen_blocks:
            ns["_xp"] = array_module if array_module is not None else _cupy()
        return Variant(report.name, "cuda", chosen,
                       cuda_source(report, chosen, transfers, chosen_blocks), ns, counter,
                       blocks=chosen_blocks)
    return Variant(report.name, "numba", chosen,
                   numba_source(report, chosen, parallel=parallel, blocks=chosen_blocks), ns,
                   blocks=chosen_blocks)


def _fpga(report: Report, loops: Iterable[str | int], args: Any,
          unroll: int | dict[str, int], board: str | None, blocks: tuple[str, ...]) -> Variant:
    from ..fpga.device import default_board
    from .fpga import fpga_variant
    from .fpga_nests import find_nests

    if not isinstance(args, (tuple, list)):
        raise InvalidInputError("offload.transform: target='fpga' needs args=, the arguments "
                                "the kernels are generated for (dtypes, sizes); got "
                                f"{type(args).__name__}.")
    nests = {n.root: n for n in find_nests(report, tuple(args), threshold=0.0)}
    chosen = []
    for key in loops:
        lp = _lookup(report.loop, key)
        if lp.id not in nests:
            raise InvalidInputError(
                f"offload.transform: loop {lp.id} ({lp.var}) must be the root of a nest "
                f"(an outermost parallelizable loop) for the fpga target; roots: "
                f"{', '.join(nests) or 'none'}.")
        if not nests[lp.id].candidate:
            raise InvalidInputError(f"offload.transform: nest {lp.id} cannot be an FPGA "
                                    f"kernel: {nests[lp.id].why}.")
        chosen.append(nests[lp.id])
    factors = unroll if isinstance(unroll, dict) else {n.root: unroll for n in chosen}
    return fpga_variant(report, chosen, factors, blocks=blocks, board=board or default_board())


def _cupy() -> Any:
    import cupy

    return cupy


def wrap_like(original: Callable[..., Any], impl: Callable[..., Any]) -> Callable[..., Any]:
    """A callable with ``original``'s name, docstring and signature that calls ``impl``."""

    @functools.wraps(original)
    def call(*args: Any) -> Any:
        return impl(*args)

    return call
