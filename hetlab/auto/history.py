"""History beats the model: auto's own calls, measured, decide the ambiguous cases.

The cost model is calibrated once; the machine drifts (load, thermal state, another
process's threads), and near a crossover a model off by 25% picks the slower device. As
history-based schedulers do (StarPU's history performance models), ``device="auto"``
records the observed time of each of its own calls per (kernel, variant, device, size
bucket), in memory, for this process only. A call is **ambiguous** when another eligible
device's predicted time lies within the models' margin (:func:`~hetlab.auto.chooser.margin_of`)
of the model's pick. In an ambiguous bucket auto explores, once per bucket and bounded:

- the model's pick and every device predicted within the margin of it (the *candidates*;
  only eligible devices — never an unavailable one, a modeled one such as the FPGA emulator,
  a recorded model, or another device than the one holding device arrays) take turns on the
  next calls, the one with the fewest calls first, until each has ``MIN_SAMPLES`` counted
  observations or ``MIN_SAMPLES + 1`` calls (a device's first call in the process is not
  counted: it may hold JIT compilation); results are always right, since every device
  meets the kernel's reference contract;
- then the candidate with the lowest *history-corrected* time wins: its model prediction
  for this call × the smallest of its observed / predicted ratios in the bucket (calls of
  different sizes in one bucket compare fairly; the fastest call, as the calibration keeps).
  The winner's later calls keep updating it (the last ``KEEP``), so a device that drifts
  slower loses to the measured other.

Calls that are not ambiguous follow the model; their observations are kept (shown by
:func:`history`) but never explored. ``hl.explain`` shows when history decided.

>>> h = History()
>>> key = ("spmv", "", (20, 18))
>>> h.samples(key, "numba")
0
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.spec import Cost
from ..errors import InvalidInputError

__all__ = ["History", "Decision", "bucket_of", "HISTORY", "history", "forget_history",
           "configure_history", "MIN_SAMPLES", "KEEP"]

#: counted observations per candidate before history decides
MIN_SAMPLES = 3
#: observations kept per (kernel, variant, device, bucket): the most recent
KEEP = 16

#: a key of the history: (kernel, variant, bucket)
Key = tuple[str, str, tuple[int, int]]


def bucket_of(cost: Cost) -> tuple[int, int]:
    """The size bucket of a call: ``floor(log2)`` of its declared bytes and flops (×2 wide).

    >>> bucket_of(Cost(flops=1024.0, bytes=4096.0))
    (12, 10)
    """
    return (math.floor(math.log2(max(float(cost.bytes), 1.0))),
            math.floor(math.log2(max(float(cost.flops), 1.0))))


@dataclass(frozen=True)
class Decision:
    """Where one call runs and why: ``by`` is ``"model"``, ``"exploring"`` or ``"history"``."""

    device: str
    reason: str
    by: str = "model"


class History:
    """Observed times of auto's calls and the exploration state, per process (thread-safe).

    Parameters
    ----------
    min_samples : int, default MIN_SAMPLES
        Counted observations per candidate before history decides.
    explore : bool, default True
        False: record only, never explore (the model decides every call).
    """

    def __init__(self, min_samples: int = MIN_SAMPLES, explore: bool = True) -> None:
        self.min_samples, self.explore = min_samples, explore
        self._lock = threading.Lock()
        #: (kernel, variant, bucket, device) → recent log(observed / predicted)
        self._ratios: dict[tuple[Any, ...], deque[float]] = {}
        #: (kernel, variant, bucket) → device → calls assigned while exploring
        self._assigned: dict[Key, dict[str, int]] = {}
        #: (kernel, variant, device) whose first call in the process was seen (not counted)
        self._warm: set[tuple[str, str, str]] = set()

    def clear(self) -> None:
        """Forget every observation and exploration."""
        with self._lock:
            self._ratios.clear()
            self._assigned.clear()
            self._warm.clear()

    def samples(self, key: Key, device: str) -> int:
        """Counted observations of ``device`` in ``key``'s bucket."""
        return len(self._ratios.get((*key, device), ()))

    def ratio(self, key: Key, device: str) -> float:
        """Smallest observed / predicted time of ``device`` in the bucket (NaN when none):
        preemption and late thread wake-ups only add time, so the fastest of the kept calls
        is the statistic least moved by the load of the moment (as in the calibration)."""
        r = self._ratios.get((*key, device))
        return math.exp(min(r)) if r else math.nan

    def record(self, key: Key, device: str, predicted_s: float, observed_s: float) -> bool:
        """Record one call of ``device`` (seconds); returns whether it was counted (a device's
        first call per kernel and variant in the process is not; nor a non-positive or
        non-finite time)."""
        if not (observed_s > 0 and predicted_s > 0 and math.isfinite(observed_s)
                and math.isfinite(predicted_s)):
            return False
        with self._lock:
            warm = (key[0], key[1], device)
            if warm not in self._warm:
                self._warm.add(warm)
                return False
            q = self._ratios.setdefault((*key, device), deque(maxlen=KEEP))
            q.append(math.log(observed_s / predicted_s))
            return True

    def decide(self, key: Key, preds: Sequence[Any], model: str, reason: str,
               margin: Any, *, commit: bool = True) -> Decision:
        """Refine the model's choice ``model`` (with its ``reason``) by history.

        Parameters
        ----------
        key : (kernel, variant, bucket)
        preds : sequence of :class:`~hetlab.auto.chooser.Prediction`
            This call's predictions.
        model, reason : str
            The model's pick (:func:`~hetlab.auto.chooser.decide`) and why.
        margin : callable(sigma_a, sigma_b) -> float
            The models' margin in log time (:func:`~hetlab.auto.chooser.margin_of`).
        commit : bool, default True
            Count this call as one of the exploration (False: a look, as ``hl.explain``).
        """
        by = {p.device: p for p in preds}
        pick = by.get(model)
        if pick is None or not pick.eligible:
            return Decision(model, reason)
        with self._lock:
            # predicted within the margin of the pick, either way (the pick's *measured* time
            # here is not used: auto's calls are spaced by Python work, and numba's threads,
            # woken after each gap, ran 1.3-2.5x slower than back to back on this machine,
            # numpy's not: confident picks were re-opened and lost to that bias)
            cands = [pick] + [p for p in preds if p.eligible and p.device != model
                              and abs(math.log(p.total_s / pick.total_s))
                              <= margin(pick.sigma, p.sigma)]
            if len(cands) == 1:
                return Decision(model, reason)
            assigned = self._assigned.get(key, {})
            need = [p for p in cands if self.explore
                    and self.samples(key, p.device) < self.min_samples
                    and assigned.get(p.device, 0) < self.min_samples + 1]
            if need:
                # the fewest calls first; ties go to the model's pick (listed first)
                nxt = min(need, key=lambda p: assigned.get(p.device, 0))
                if commit:
                    self._assigned.setdefault(key, {})[nxt.device] = \
                        assigned.get(nxt.device, 0) + 1
                others = ", ".join(p.device for p in cands if p.device != model)
                return Decision(nxt.device, f"ambiguous ({reason}); exploring {model} and "
                                f"{others}: call {sum(assigned.values()) + 1} of at most "
                                f"{len(cands) * (self.min_samples + 1)}", "exploring")
            known = [(p.total_s * self.ratio(key, p.device), p) for p in cands
                     if self.samples(key, p.device) >= self.min_samples]
        if len(known) < 2:  # nothing measured to compare with
            return Decision(model, reason)
        _, best = min(known, key=lambda tp: tp[0])
        parts = ", ".join(f"{p.device} {tp:.3g} s ({self.samples(key, p.device)} calls)"
                          for tp, p in sorted(known, key=lambda tp: tp[0]))
        return Decision(best.device, f"history: measured here {parts} (model's pick "
                        f"{model}: {reason})", "history")

    def table(self, kernel: str | None = None) -> list[dict[str, Any]]:
        """One row per (kernel, variant, bucket, device) with observations."""
        with self._lock:
            items = list(self._ratios.items())
        return [{"kernel": k, "variant": v, "bucket": b, "device": d, "samples": len(q),
                 "observed_over_predicted": math.exp(min(q))}
                for (k, v, b, d), q in items if kernel is None or k == kernel]


#: the history of this process, used by ``device="auto"``
HISTORY = History()


def history(kernel: Any = None) -> Any:
    """The observations behind ``device="auto"``'s history decisions, this process only.

    Parameters
    ----------
    kernel : kernel function, name or KernelSpec, optional
        Limit to one kernel.

    Returns
    -------
    pandas.DataFrame
        Columns ``kernel``, ``variant``, ``bucket`` (floor log2 of declared bytes, flops),
        ``device``, ``samples`` (counted calls kept) and ``observed_over_predicted`` (the
        smallest ratio of observed to predicted time, what history uses).

    Raises
    ------
    InvalidInputError
        An unknown kernel.

    Examples
    --------
    >>> import hetlab as hl
    >>> list(hl.auto.history("spmv").columns)[:4]
    ['kernel', 'variant', 'bucket', 'device']
    """
    import pandas as pd

    from ..core.registry import get_kernel

    name = None if kernel is None else get_kernel(kernel).name
    cols = ["kernel", "variant", "bucket", "device", "samples", "observed_over_predicted"]
    return pd.DataFrame(HISTORY.table(name), columns=cols)


def forget_history() -> None:
    """Forget every observation and exploration of ``device="auto"`` in this process."""
    HISTORY.clear()


def configure_history(explore: bool = True, min_samples: int = MIN_SAMPLES) -> None:
    """Turn exploration of ambiguous calls on or off, and set the samples it needs.

    Parameters
    ----------
    explore : bool, default True
        False: the model decides every call (observations are still kept).
    min_samples : int, default 3
        Counted calls per candidate device before history decides (1 to 100).

    Raises
    ------
    InvalidInputError
        ``explore`` not a bool, ``min_samples`` not an int in [1, 100].
    """
    if not isinstance(explore, bool):
        raise InvalidInputError(f"configure_history: explore must be True or False; got "
                                f"{explore!r}.")
    if isinstance(min_samples, bool) or not isinstance(min_samples, int) \
            or not 1 <= min_samples <= 100:
        raise InvalidInputError(f"configure_history: min_samples must be an int in [1, 100]; "
                                f"got {min_samples!r}.")
    with HISTORY._lock:
        HISTORY.explore, HISTORY.min_samples = explore, min_samples
