"""The FPGA target object: nest roots → HLS C++ kernels (C-simulation, modeled time)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ....errors import InvalidInputError
from ...analysis.report import Report
from ..base import TargetBase, Variant, check_blocks, lookup
from .nests import find_nests
from .variant import fpga_variant

__all__ = ["FpgaTarget"]


class FpgaTarget(TargetBase):
    """Vitis-HLS-style kernels for chosen nests, searched last on top of the CPU plan."""

    name = "fpga"
    device = "fpga"
    stage = "nests"
    host = "numba"

    def ready(self) -> str | None:
        from ....fpga.csim import compiler

        if compiler() is None:
            return "the C-simulation needs a C++ compiler: install g++ or set CXX"
        return None

    def generate(self, report: Report, loops: Iterable[str | int] = (), *, args: Any = None,
                 unroll: int | dict[str, int] = 1, board: str | None = None,
                 blocks: Iterable[str | int] = (), **_: Any) -> Variant:
        from ....fpga.device import default_board

        chosen_blocks = check_blocks(report, blocks)
        if not isinstance(args, (tuple, list)):
            raise InvalidInputError("offload.transform: target='fpga' needs args=, the "
                                    "arguments the kernels are generated for (dtypes, sizes); "
                                    f"got {type(args).__name__}.")
        nests = {n.root: n for n in find_nests(report, tuple(args), threshold=0.0)}
        chosen = []
        for key in loops:
            lp = lookup(report.loop, key)
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
        return fpga_variant(report, chosen, factors, blocks=chosen_blocks,
                            board=board or default_board())
