"""The :class:`Plan` :func:`~hetlab.offload.search` returns: chosen loops, figures, views."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInputError
from .analysis import Report
from .codegen import Variant, transform, wrap_like
from .ga import GAResult
from .measure import Measurement

__all__ = ["Plan"]


@dataclass
class Plan:
    """The result of :func:`search`: the chosen loops, the figures behind the choice."""

    report: Report
    target: str
    genes: list[str]
    best: tuple[int, ...]
    measurements: dict[tuple[int, ...], Measurement]
    serial_s: float
    auto_s: float
    ga: GAResult
    exhaustive: GAResult | None
    threads: dict[int, float] = field(default_factory=dict)
    thread_choice: int | None = None
    variants: dict[tuple[int, ...], Variant] = field(default_factory=dict, repr=False)
    #: cuda: host↔device copies and bytes of one call, {"naive": …, "reduced": …}
    transfers: dict[str, dict[str, int]] = field(default_factory=dict)
    #: every target's plan (this one included), and targets skipped with the reason
    alternatives: dict[str, Plan] = field(default_factory=dict, repr=False)
    notes: list[str] = field(default_factory=list)
    #: medians of the confirmation round (gene or "auto" → seconds), measured back to back
    confirmed: dict[Any, float] = field(default_factory=dict)
    #: function blocks replaced by library calls in every candidate (numba), and each tried
    #: block set's measurement (tried before the loop search)
    blocks: tuple[str, ...] = ()
    block_trials: dict[tuple[str, ...], Measurement] = field(default_factory=dict)

    @property
    def loops(self) -> list[str]:
        """Ids of the loops the plan offloads."""
        return [g for g, bit in zip(self.genes, self.best, strict=True) if bit]

    @property
    def time_s(self) -> float:
        """Median time of the plan (from the confirmation round when there was one)."""
        if self.best in self.confirmed:
            return self.confirmed[self.best]
        return self.measurements[self.best].time_s

    @property
    def speedup(self) -> float:
        """Plan time against the serial ``njit`` of the original."""
        return self.serial_s / self.time_s

    @property
    def verified(self) -> bool:
        return self.measurements[self.best].verified

    def variant(self) -> Variant:
        if self.best not in self.variants:
            self.variants[self.best] = transform(self.report, self.loops, target=self.target,
                                                 blocks=self.blocks)
        return self.variants[self.best]

    def compile(self) -> Callable[..., Any]:
        """A callable with the original's signature running the chosen variant."""
        return wrap_like(self.report.source.fn, self.variant().compile())

    def source(self, target: str | None = None) -> str:
        """The generated source of the chosen variant (or of another searched target's)."""
        target = {"cupy": "cuda"}.get(target or self.target, target or self.target)
        if target == self.target:
            return self.variant().source
        if target in self.alternatives:
            return self.alternatives[target].source(target)
        raise InvalidInputError(f"offload: plan.source target must be one of "
                                f"{sorted(self.alternatives) or [self.target]}; got {target!r}.")

    def table(self) -> Any:
        """pandas DataFrame: one row per loop with verdict and destination."""
        import pandas as pd

        rows = []
        in_block = {k: self.report.block(b) for b in self.blocks
                    for k in self.report.block(b).loops}
        for lp in self.report.loops:
            kind = "prange" if self.target == "numba" else "kernel"
            dest = f"{self.target} {kind}" if lp.id in self.loops else "host"
            if lp.id in in_block:
                b = in_block[lp.id]
                dest = f"block {b.id} ({b.pattern}: {b.call})"
            rows.append({"loop": lp.id, "line": lp.line, "nest": "  " * lp.depth + lp.var,
                         "verdict": lp.verdict, "destination": dest})
        return pd.DataFrame(rows).set_index("loop")

    def candidates(self) -> Any:
        """pandas DataFrame of every measured gene: loops, median time, speedup, status."""
        import pandas as pd

        base = self.measurements[(0,) * len(self.genes)].time_s
        zero = f"(blocks {'+'.join(self.blocks)})" if self.blocks else "(serial)"
        rows = [{"loops": "+".join(g for g, b in zip(self.genes, gene, strict=True) if b)
                 or zero, "time_s": m.time_s, "speedup": base / m.time_s
                 if m.times_s else 0.0, "status": m.status, "error": m.error}
                for gene, m in self.measurements.items()]
        return pd.DataFrame(rows).sort_values("time_s").reset_index(drop=True)

    def summary(self) -> str:
        ex = (f"; exhaustive optimum {self.exhaustive.fitness:.2f}× over all "
              f"{2 ** len(self.genes)} patterns" if self.exhaustive else "")
        thr = (f"; {self.thread_choice} threads within tolerance of the best"
               if self.thread_choice else "")
        moved = ""
        if self.transfers:
            nv, rd = self.transfers["naive"], self.transfers["reduced"]
            moved = (f"; transfers {nv['copies']} copies / {nv['bytes']} B per-launch → "
                     f"{rd['copies']} / {rd['bytes']} B reduced")
        notes = "".join(f"\nnote: {n}" for n in self.notes)
        blk = f", replace function blocks {', '.join(self.blocks)}" if self.blocks else ""
        if self.block_trials:
            tried = ", ".join(f"{'+'.join(bs)} {m.time_s * 1e3:.3g} ms ({m.status})"
                              for bs, m in self.block_trials.items())
            kept = "+".join(self.blocks) or "none kept"
            notes = f"; function blocks tried first: {tried}; replaced: {kept}" + notes
        return (f"offload.search({self.report.name}, target={self.target}): offload "
                f"{', '.join(self.loops) or 'nothing'}{blk}; {self.time_s * 1e3:.3g} ms vs serial "
                f"njit {self.serial_s * 1e3:.3g} ms ({self.speedup:.2f}×), njit(parallel=True) "
                f"auto {self.auto_s * 1e3:.3g} ms; verified={self.verified}; GA best "
                f"{self.ga.fitness:.2f}× after {self.ga.evaluations} evaluations{ex}{thr}"
                f"{moved}{notes}")

    def __repr__(self) -> str:
        return self.summary() + "\n" + self.table().to_string()

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.summary())}</p>" + self.table().to_html()
