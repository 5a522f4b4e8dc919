"""What a choice minimizes: time, energy, or the price of the resources it holds.

The rule of Yamato's resource-amount work, generalized: among the candidates whose
objective is within ``tolerance`` of the best, take the one holding the fewest resources
(fewest accelerators — GPUs, then boards — then fewest threads).

>>> obj = Objective.of({"thread": 1.0, "gpu": 20.0})
>>> obj.value(time_s=2.0, energy_j=float("nan"), resources={"thread": 4})
8.0
>>> cands = [("numba", 1.00, {"thread": 8}), ("numba-2", 1.05, {"thread": 2})]
>>> Objective.of("time", tolerance=0.1).pick(cands)
'numba-2'
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidInputError

__all__ = ["Objective", "RESOURCES", "resources_of"]

#: resources priced per second: CPU threads, GPUs, FPGA boards
RESOURCES = ("thread", "gpu", "board")


def resources_of(kind: str, threads: int = 1) -> dict[str, int]:
    """What a device of ``kind`` holds while it runs: CPU threads, or one accelerator and the
    host thread driving it."""
    if kind == "gpu":
        return {"gpu": 1, "thread": 1}
    if kind == "fpga":
        return {"board": 1, "thread": 1}
    return {"thread": max(int(threads), 1)}


@dataclass(frozen=True)
class Objective:
    """``"time"``, ``"energy"`` or ``"price"`` (a cost per second of each resource).

    Attributes
    ----------
    kind : str
    prices : mapping of resource → price per second (``"price"`` only)
    tolerance : float
        Candidates within this fraction of the best objective count as equal; the one with
        the fewest resources among them wins.
    """

    kind: str = "time"
    prices: Mapping[str, float] = field(default_factory=dict)
    tolerance: float = 0.1

    @classmethod
    def of(cls, objective: Any, tolerance: float = 0.1) -> Objective:
        """An Objective from ``"time"``, ``"energy"``, a price mapping
        (``{"thread": 0.01, "gpu": 1.0, "board": 0.2}`` per second) or an Objective."""
        if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) \
                or not 0 <= tolerance < math.inf:
            raise InvalidInputError(f"objective: tolerance must be a fraction >= 0; got "
                                    f"{tolerance!r}.")
        if isinstance(objective, Objective):
            return objective
        if objective in ("time", "energy"):
            return cls(str(objective), {}, float(tolerance))
        if isinstance(objective, Mapping):
            bad = [k for k in objective if k not in RESOURCES]
            vals = list(objective.values())
            if bad or not objective or any(
                    isinstance(v, bool) or not isinstance(v, (int, float))
                    or not 0 <= v < math.inf for v in vals):
                raise InvalidInputError(
                    f"objective: prices must map {', '.join(RESOURCES)} to a price per "
                    f"second >= 0; got {dict(objective)!r}.")
            return cls("price", {k: float(v) for k, v in objective.items()}, float(tolerance))
        raise InvalidInputError(
            f"objective must be 'time', 'energy' or a mapping of {', '.join(RESOURCES)} to a "
            f"price per second (e.g. {{'thread': 0.01, 'gpu': 1.0}}); got {objective!r}.")

    def value(self, time_s: float, energy_j: float, resources: Mapping[str, int]) -> float:
        """The objective of one candidate (s, J or price units)."""
        if self.kind == "time":
            return float(time_s)
        if self.kind == "energy":
            return float(energy_j)
        rate = sum(self.prices.get(r, 0.0) * n for r, n in resources.items())
        return float(time_s) * rate

    @staticmethod
    def size(resources: Mapping[str, int]) -> tuple[int, int, int]:
        """Order of "fewer resources": GPUs, then boards, then threads."""
        return (resources.get("gpu", 0), resources.get("board", 0), resources.get("thread", 0))

    def pick(self, candidates: Sequence[tuple[Any, float, Mapping[str, int]]]) -> Any:
        """The key of the candidate with the fewest resources among those within
        ``tolerance`` of the best finite objective; None when none is finite."""
        ok = [c for c in candidates if math.isfinite(c[1])]
        if not ok:
            return None
        best = min(c[1] for c in ok)
        near = [c for c in ok if c[1] <= best * (1 + self.tolerance)]
        return min(near, key=lambda c: (self.size(c[2]), c[1]))[0]

    def describe(self) -> str:
        if self.kind == "price":
            per = ", ".join(f"{k} {v:g}/s" for k, v in self.prices.items())
            return f"price ({per}), fewest resources within {self.tolerance:.0%} of the best"
        return f"{self.kind}, fewest resources within {self.tolerance:.0%} of the best"


def rank_dataset(ds: Any, objective: Objective) -> Any:
    """``ds`` with ``objective_value`` (device, size) and ``pick`` (size): the device each
    size's rule chooses, among devices that ran verified (recorded and modeled devices are
    ranked too; ``pick_source`` says what the pick's figure is)."""
    import numpy as np

    med = ds["time_s"].median("repeat")
    energy = ds["energy_j"] if "energy_j" in ds else None
    vals = np.full((ds.sizes["device"], ds.sizes["size"]), np.nan)
    picks, sources = [], []
    for j, size in enumerate(ds["size"].values):
        cands = []
        for i, dev in enumerate(ds["device"].values):
            sel = {"device": dev, "size": size}
            if not bool(ds["verified"].sel(sel)):
                continue
            res = resources_of(str(ds["kind"].sel(device=dev).values),
                               int(ds["threads"].sel(device=dev)))
            e = float(energy.sel(sel)) if energy is not None else math.nan
            vals[i, j] = objective.value(float(med.sel(sel)), e, res)
            cands.append((str(dev), vals[i, j], res))
        pick = objective.pick(cands)
        picks.append(pick or "")
        sources.append(str(ds["source"].sel(device=pick).values) if pick else "")
    ds = ds.assign(objective_value=(("device", "size"), vals,
                                    {"objective": objective.describe()}),
                   pick=("size", np.array(picks, dtype=str)),
                   pick_source=("size", np.array(sources, dtype=str)))
    ds.attrs["objective"] = objective.describe()
    return ds
