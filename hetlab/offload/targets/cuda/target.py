"""The GPU target object (registered as device ``"cupy"``; ``"cuda"`` and ``"gpu"`` are
aliases resolved by the registry)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from ....errors import InvalidInputError
from ...analysis.report import Report
from ...runtime.measure import copy_args
from ..base import TargetBase, Variant, by_number, check_blocks, lookup
from .atomics import gpu_offloadable
from .kernels import Transfers, cuda_ready, cuda_source, gpu_loops

__all__ = ["CudaTarget"]


def _simulated() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


class CudaTarget(TargetBase):
    """numba.cuda kernels per chosen nest (atomics for reductions), CuPy/cuBLAS for blocks."""

    name = "cuda"  # what plans record (kept: stored plans and code read plan.alternatives["cuda"])
    device = "cupy"  # the kernel API's backend name
    resource = "gpu"
    loop_kind = "kernel"

    def ready(self) -> str | None:
        return cuda_ready()

    def synchronize(self) -> None:
        from numba import cuda

        cuda.synchronize()

    def genes(self, report: Report) -> list[str]:
        return gpu_loops(report)

    def notes(self, report: Report, function_blocks: bool) -> list[str]:
        if not _simulated():
            return []
        return ["cuda: times measured in numba's CUDA simulator, not on a GPU"]

    def blocks_ready(self) -> str | None:
        return "the simulator has no cuBLAS; CuPy needs a GPU" if _simulated() else None

    def generate(self, report: Report, loops: Iterable[str | int] = (), *,
                 transfers: str = "reduced", blocks: Iterable[str | int] = (),
                 array_module: Any = None, **_: Any) -> Variant:
        gpu = gpu_offloadable(report)
        chosen = []
        for key in loops:
            lp = lookup(report.loop, key)
            if lp.id not in gpu:
                ok = ", ".join(gpu) or "none"
                raise InvalidInputError(
                    f"offload.transform: loop {lp.id} ({lp.var}, line {lp.line}) is "
                    f"{lp.verdict} ({lp.why}); the cuda target offloads parallel loops, "
                    f"+/min/max reductions and atomic array updates; offloadable loops: {ok}.")
            chosen.append(lp.id)
        chosen_loops = by_number(chosen)
        chosen_blocks = check_blocks(report, blocks, chosen_loops)
        if transfers not in ("reduced", "naive"):
            raise InvalidInputError("offload.transform: transfers must be 'reduced' or "
                                    f"'naive'; got {transfers!r}.")
        if array_module is None and chosen_blocks and _simulated():
            import numpy

            array_module = numpy
        ns = dict(report.source.namespace)
        ns["_rt"] = counter = Transfers(array_module=array_module)
        if chosen_blocks:
            ns["_xp"] = array_module if array_module is not None else _cupy()
        return Variant(report.name, self.name, chosen_loops,
                       cuda_source(report, chosen_loops, transfers, chosen_blocks), ns,
                       counter, blocks=chosen_blocks)

    def refine(self, plan: Any, args: tuple, expected: tuple, *, repeats: int,
               thread_tolerance: float) -> None:
        if any(plan.best):
            plan.transfers = self.count_transfers(plan.report, plan.loops, args)

    def count_transfers(self, report: Report, loops: list[str],
                        args: tuple) -> dict[str, dict[str, int]]:
        """Host↔device copies and bytes of one call, per-launch copies vs the reduced plan."""
        out = {}
        for mode in ("naive", "reduced"):
            v = self.generate(report, loops, transfers=mode)
            v.compile()(*copy_args(args))
            t = v.transfers
            out[mode] = {"copies": t.copies, "bytes": t.bytes}
        return out


def _cupy() -> Any:
    import cupy

    return cupy
