"""The many-core CPU target: ``@njit(parallel=True)`` with ``prange`` on the chosen loops.

Loop transformations (:mod:`hetlab.offload.analysis.transforms`): a variant with at least one
parallel loop also gets the fixed passes — interchange for unit stride (unless it would move a
chosen loop inward) and scalar replacement: static decisions that help every schedule, so
they are not genes that would double the search — and a chosen loop that is parallel only
with privatized arrays gets its privatization (part of that loop's gene: the copies cost
memory and a sum, which only pays when the loop runs in parallel). The serial baseline stays
the function as written.

Tiling (:mod:`hetlab.offload.analysis.transforms.tiling`) is a gene: :meth:`NumbaTarget.\
option_genes` offers two bits per legal band with reuse whose working set at the search's
arguments exceeds L2 (ids ``"L1:t1"``, ``"L1:t2"``: tile size index into ``TILE_SIZES``);
:meth:`NumbaTarget.generate` accepts them among ``loops``.

Reassociation is a gene too (:data:`REASSOC`, ``"fp:reassoc"``, offered when the function
updates a scalar with ``+``/``-``/``*`` inside a loop and takes floating-point arrays): the
variant is compiled with ``fastmath={'contract', 'reassoc'}``, so LLVM may reorder a sum and
fuse multiply-adds — a serial dot-product loop then vectorizes (a left-looking Cholesky ran
3.3× faster here). Results change in the last bits, as a ``prange`` reduction's or a BLAS
call's do; the search verifies every candidate against the reference like any other, and no
flag about NaN or infinities is set (they keep their meaning). The search also tries the
reassociated twin of its fittest candidates before the confirmation round
(:data:`NumbaTarget.twin_genes`).

Reductions need no rewrite (numba recognizes ``s += …`` and ``s = max(s, …)`` in a prange
loop), except one whose updates all sit in a loop under an ``if`` of the body, which numba
0.68 drops: it is accumulated around that ``if`` and added once
(:mod:`hetlab.offload.analysis.transforms.partials`). Chosen function blocks
(:mod:`hetlab.offload.analysis.blocks`) replace their whole nest by one NumPy statement
(``A @ B``, ``np.dot``) inside the same ``njit`` function. After the search, the resource
amount (Yamato 2020): the smallest thread count within a tolerance of the best.
"""

from __future__ import annotations

import ast
import copy
import statistics
from collections.abc import Iterable, Mapping
from typing import Any

from ...errors import InvalidInputError
from ..analysis.listargs import read_only_sequences
from ..analysis.report import Report
from ..analysis.scalars import update_op
from ..analysis.transforms import tag_loops, tile_genes, tile_size
from ..analysis.transforms.slice_sums import reduction_call
from ..front.helpers import jit_helpers
from ..runtime.measure import measure
from .base import (
    TargetBase,
    Variant,
    check_blocks,
    check_parallel,
    numba_source,
    passed_globals,
)

__all__ = ["NumbaTarget", "REASSOC", "reassociable", "thread_sweep"]

#: the reassociation gene: the variant compiled with ``fastmath={'contract', 'reassoc'}``
REASSOC = "fp:reassoc"
_ACCUMULATING = (ast.Add, ast.Sub, ast.Mult)


def _accumulates(loop: ast.For | ast.While) -> bool:
    """``loop``'s own body (not its inner loops) updates a scalar with ``+``/``-``/``*``, or,
    for a ``for``, an element it does not index."""
    for s in loop.body:
        if isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) \
                and isinstance(s, ast.AugAssign) and isinstance(s.op, _ACCUMULATING) \
                and isinstance(s.target, ast.Subscript) \
                and loop.target.id not in {n.id for n in ast.walk(s.target.slice)
                                           if isinstance(n, ast.Name)}:
            return True  # an element accumulated over the loop (accumulate.py holds it)
        todo: list[ast.AST] = [s]
        while todo:
            n = todo.pop()
            if isinstance(n, (ast.For, ast.While)):
                continue  # an inner loop: looked at on its own
            if isinstance(n, (ast.Assign, ast.AugAssign)) and isinstance(
                    t := n.target if isinstance(n, ast.AugAssign) else n.targets[0], ast.Name) \
                    and update_op(n, t.id) in ("+", "*"):
                return True  # s += e, s = s * e, s = e + s (scalars.update_op)
            if isinstance(n, ast.expr) and reduction_call(n) is not None:
                return True  # np.sum(row expression): an element loop (slice_sums) or numba's
            todo.extend(ast.iter_child_nodes(n))
    return False


def reassociable(report: Report, args: tuple, skip: frozenset[str] = frozenset()) -> bool:
    """Whether reordering floating-point arithmetic may speed ``report``'s function up: a
    floating-point (or complex) array among ``args`` and a scalar updated with ``+``, ``-`` or
    ``*`` inside a loop (``s += a[k] * b[k]``, ``s = s - t``), or an element the loop does
    not index (``x[i] -= L[i, j] * x[j]`` over ``j``, held in a scalar by
    :mod:`~hetlab.offload.analysis.transforms.accumulate`): the serial sums LLVM keeps in
    order unless allowed to reassociate. Loops whose ids are in ``skip`` (inside the function
    blocks chosen: library calls) do not count."""
    if not any(getattr(getattr(a, "dtype", None), "kind", "") in "fc"
               for a in args if hasattr(a, "dtype")):
        return False
    tree = copy.deepcopy(report.source.tree)
    fors = tag_loops(tree, [lp.id for lp in report.loops])
    loops: list[ast.For | ast.While] = [n for k, n in fors.items() if k not in skip]
    loops += [n for n in ast.walk(tree) if isinstance(n, ast.While)]
    return any(_accumulates(loop) for loop in loops)


class NumbaTarget(TargetBase):
    """numba ``prange`` on the CPU's cores (always ready: numba is a dependency)."""

    name = "numba"
    device = "numba"
    loop_kind = "prange"
    #: option genes the search also tries on its fittest candidates before confirming them
    twin_genes = (REASSOC,)

    def generate(self, report: Report, loops: Iterable[str | int] = (), *,
                 parallel: bool | None = None, blocks: Iterable[str | int] = (),
                 transforms: bool | None = None, **_: Any) -> Variant:
        loops = list(loops)
        fast = REASSOC in loops
        loops = [k for k in loops if k != REASSOC]
        bits = {k for k in loops if isinstance(k, str) and ":t" in k}
        tiles = {t.loops[0]: s for t in report.transforms.tilings
                 if (s := tile_size(t.loops[0], bits)) is not None}
        known = {g for t in report.transforms.tilings for g in t.genes()}
        if bits - known:
            raise InvalidInputError(
                f"offload.transform: {', '.join(sorted(bits - known))} are not tile genes of "
                f"{report.name}; its tile genes are {', '.join(sorted(known)) or 'none'}.")
        chosen = check_parallel(report, [k for k in loops if k not in bits], private_ok=True)
        chosen_blocks = check_blocks(report, blocks, chosen)
        fixed = bool(chosen or tiles) if transforms is None else transforms
        passed = passed_globals(report)
        return Variant(report.name, self.name, chosen,
                       numba_source(report, chosen, parallel=parallel, blocks=chosen_blocks,
                                    transforms=fixed, tiles=tiles, fastmath=fast,
                                    passed=passed),
                       jit_helpers(report.source.tree, report.source.namespace),
                       blocks=chosen_blocks, passed=passed,
                       as_arrays=read_only_sequences(report.source.tree))

    def option_genes(self, report: Report, args: tuple, blocks: tuple[str, ...] = (), *,
                     trips: Mapping[str, int]) -> list[str]:
        """Tile-size gene bits (two per band) of the tileable bands outside ``blocks`` whose
        working set at ``args`` exceeds this machine's L2 (``trips``: loop id → trip count at
        ``args``, from the search's static model); none for smaller nests, so they cost the
        search nothing. Then :data:`REASSOC` when :func:`reassociable`."""
        inside = {k for b in blocks for k in report.block(b).loops}
        fast = [REASSOC] if reassociable(report, args, frozenset(inside)) else []
        if not report.transforms.tilings:
            return fast
        sizes = {n: a.dtype.itemsize for n, a in zip(report.params, args, strict=False)
                 if hasattr(a, "dtype")}
        return tile_genes(report.transforms.tilings, trips, sizes, inside) + fast

    def fixed_serial(self, report: Report, blocks: tuple[str, ...] = ()) -> Variant | None:
        """The serial ``njit`` with the fixed passes (a serial loop nest gains from an
        interchange to unit stride as much as a parallel one); None when no pass applies."""
        v = self.generate(report, (), blocks=blocks, transforms=True)
        plain = self.generate(report, (), blocks=blocks, transforms=False)
        return v if v.source != plain.source else None

    def genes(self, report: Report) -> list[str]:
        """The parallelizable loops and those parallel with privatized arrays (their
        privatization is part of the gene: a chosen loop gets it)."""
        keys = {lp.id for lp in report.parallelizable} | set(report.transforms.privatizable())
        return [lp.id for lp in report.loops if lp.id in keys]

    def refine(self, plan: Any, args: tuple, expected: tuple, *, repeats: int,
               thread_tolerance: float) -> None:
        if any(plan.best):
            plan.threads, plan.thread_choice = thread_sweep(
                plan.variants[plan.best], args, expected, repeats, thread_tolerance)


def thread_sweep(variant: Variant, args: tuple, expected: tuple, repeats: int,
                 tolerance: float, rounds: int = 3) -> tuple[dict[int, float], int | None]:
    """Resource amount (Yamato 2020): time per thread count, and the smallest count within
    ``tolerance`` of the best. Counts are measured in interleaved rounds and compared as
    ratios to the all-threads time of the same round (load drifts cancel)."""
    import numba

    fn = variant.compile()
    before = numba.get_num_threads()
    counts = list(range(numba.config.NUMBA_NUM_THREADS, 0, -1))  # all threads first: baseline
    per_round: dict[int, list[float]] = {n: [] for n in counts}
    try:
        numba.set_num_threads(counts[0])
        if not measure(fn, args, expected, repeats=1).verified:
            return {}, None
        for _ in range(rounds):
            for n in counts:
                numba.set_num_threads(n)
                per_round[n].append(measure(fn, args, None, repeats=repeats).time_s)
    finally:
        numba.set_num_threads(before)
    base = per_round[counts[0]]
    base_s = statistics.median(base)
    times = {n: base_s * statistics.median(t / b for t, b in zip(v, base, strict=True))
             for n, v in sorted(per_round.items())}
    best = min(times.values())
    return times, min(n for n, t in times.items() if t <= best * (1 + tolerance))
