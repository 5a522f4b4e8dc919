"""``device="auto"``: the lowest predicted time, moved off the data's home only with margin.

Home is where the data lives: host (NumPy) arrays → ``"numpy"``, the reference; CuPy arrays →
``"cupy"``. A call moves off home only when the predicted gain beats the models' own error:
``log(t_home / t_best) > margin``, ``margin = sqrt(sigma_home² + sigma_best²)`` with each
``sigma`` its model's held-out error *near this call's size* (:meth:`DeviceFit.sigma_at`),
floored at ``SIGMA_FLOOR`` — risk-aware gating, as in GPU-accelerated OLAP engines that
offload only when a calibrated model says it pays.

Why the margin is capped at ``MAX_MARGIN = sqrt(ACCEPTED_REGRET)``: staying home while
another device is predicted up to ``m``× faster costs up to ``m × e`` when the prediction
is off by a factor ``e``. Near the crossover the devices are close and either pick costs
little; the large regrets come from a confident prediction that is wrong, and a wide gate
adds its own width to that error. A band of ``sqrt(R)`` keeps the regret of a kept call
within ``R`` (1.25, the evaluation's goal) whenever the model is within ``sqrt(R)`` of the
truth; where the models are less sure than that, the point prediction decides (it has the
lowest expected regret: with errors symmetric in log time, moving and staying risk alike).

Never chosen: a device that is unavailable, one whose timing is modeled (the FPGA emulator),
one whose model comes from a recording, or another device than the one holding device
arrays (hetlab never moves device arrays silently). Every choice is logged on the
``hetlab.auto`` logger (INFO, once per kernel, device and reason kind).

Inside the margin the model cannot tell the devices apart: there this process's history of
auto's own calls decides (:mod:`hetlab.auto.history`: a bounded exploration once per size
bucket, then the measured-faster device).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.registry import backend_names, get_backend, supported_backends
from ..core.spec import Cost, KernelSpec
from ..log import get_logger, log_once
from .history import HISTORY, Decision, Key, bucket_of
from .model import DeviceFit

__all__ = ["Prediction", "predict", "decide", "decide_call", "choose", "observe",
           "last_choice", "home_device", "bytes_of", "margin_of",
           "SIGMA_FLOOR", "MAX_MARGIN", "ACCEPTED_REGRET"]

_log = get_logger("hetlab.auto")
#: this thread's last auto call: (kernel, id(validated), key, predicted s per device, Decision)
_LAST = threading.local()
#: smallest error a model is trusted to (log time): timing noise at ~3%
SIGMA_FLOOR = 0.03
#: the worst regret (time of the pick / best time) the evaluation accepts
ACCEPTED_REGRET = 1.25
#: the gate's widest band: a device predicted this many times faster is always taken (the
#: band and a model error of the same size together stay within ACCEPTED_REGRET; a 2.0 cap
#: held back predicted 1.3-2x gains that were real 2-2.7x ones, a 1.25 cap a real 1.5x)
MAX_MARGIN = math.sqrt(ACCEPTED_REGRET)


def margin_of(sigma_home: float, sigma_best: float) -> float:
    """The gate's margin in log time: ``hypot`` of the floored sigmas, capped at
    ``log(MAX_MARGIN)``.

    >>> round(margin_of(0.0, 0.0), 4)            # floored: 0.03 * sqrt(2)
    0.0424
    >>> round(math.exp(margin_of(5.0, float("inf"))), 3)   # capped at sqrt(1.25)
    1.118
    """
    s1, s2 = max(sigma_home, SIGMA_FLOOR), max(sigma_best, SIGMA_FLOOR)
    return min(math.hypot(s1, s2), math.log(MAX_MARGIN))


@dataclass(frozen=True)
class Prediction:
    """One device's predicted cost of one call (seconds) and whether it may be chosen."""

    device: str
    available: bool
    source: str                 # "measured", "recorded", "modeled" or "none"
    compute_s: float = math.nan
    transfer_s: float = math.nan
    launch_s: float = math.nan
    jit_s: float = math.nan
    sigma: float = math.inf
    why_not: str = ""           # "" when the device may be chosen

    @property
    def total_s(self) -> float:
        """Predicted steady-state time of one call: launch + compute + transfers (s); the
        first call's JIT cost is shown apart and not counted."""
        return self.launch_s + self.compute_s + self.transfer_s

    @property
    def eligible(self) -> bool:
        return not self.why_not and math.isfinite(self.total_s)


def home_device(home: str) -> str:
    """The backend that is home for data living on ``home`` (``"host"`` → ``"numpy"``)."""
    return "numpy" if home == "host" else home


def bytes_of(spec: KernelSpec, validated: Mapping[str, Any]) -> float:
    """Bytes of the array arguments of a call (containers counted part by part)."""
    total = 0

    def add(a: Any) -> Any:
        nonlocal total
        total += int(getattr(a, "nbytes", 0))
        return a

    for name in spec.arrays:
        v = validated.get(name)
        if v is None:
            continue
        if callable(getattr(v, "arrays", None)):
            for a in v.arrays():
                add(a)
        elif callable(getattr(v, "map_arrays", None)):
            v.map_arrays(add)
        else:
            add(v)
    return float(total)


def predict(spec: KernelSpec, validated: Mapping[str, Any], home: str,
            fits: Mapping[str, DeviceFit], devices: Sequence[str] | None = None,
            ) -> list[Prediction]:
    """Each device's predicted cost of one call of ``spec`` with ``validated`` arguments.

    Parameters
    ----------
    spec : KernelSpec
    validated : mapping
        What ``spec.validate`` returned for the call.
    home : str
        Where the arrays live (``"host"``, ``"cupy"``).
    fits : mapping of device name → DeviceFit
        The calibrated models (:func:`hetlab.auto.calibrate.fits_for`).
    devices : list of str, optional
        Devices to predict; default every registered backend that implements ``spec``.
    """
    cost: Cost = spec.cost(validated)
    b_in = bytes_of(spec, validated)
    b_out = max(float(cost.bytes) - b_in, 0.0)
    names = devices if devices is not None else [
        b for b in backend_names() if b in supported_backends(spec.name)]
    out = []
    for name in names:
        backend = get_backend(name)
        reason = backend.why_not()
        available = reason is None
        fit = fits.get(name)
        why = ""
        if not available:
            why = f"unavailable: {reason}"
        elif backend.timing_source != "measured":
            why = "modeled timing (emulator): never chosen for real work"
        elif home != "host" and name != home:
            why = f"data lives on {home}: hetlab never moves device arrays silently"
        if fit is None:
            out.append(Prediction(name, available, backend.timing_source
                                  if backend.timing_source == "modeled" else "none",
                                  why_not=why or "no calibrated model"))
            continue
        if fit.source == "recorded" and not why:
            why = "model from a recording: shown, never chosen"
        resident = home != "host" and name == home
        out.append(Prediction(name, available, fit.source, compute_s=fit.compute_s(cost),
                              transfer_s=fit.transfer_s(b_in, b_out, resident),
                              launch_s=fit.overhead_s, jit_s=fit.jit_s,
                              sigma=fit.sigma_at(cost),
                              why_not=why))
    return out


def decide(preds: Sequence[Prediction], home: str) -> tuple[str, str]:
    """Pick a device from predictions: ``(device, reason)``; see the module docstring.

    The home device (:func:`home_device`) is kept unless an eligible device's predicted gain
    over it exceeds the margin :func:`margin_of` (in log time; at most ``log(MAX_MARGIN)``).
    """
    home_name = home_device(home)
    by = {p.device: p for p in preds}
    ok = [p for p in preds if p.eligible]
    if not ok:
        return home_name, "no device has a usable model: staying where the data lives"
    best = min(ok, key=lambda p: p.total_s)
    hp = by.get(home_name)
    if hp is None or not hp.eligible:
        return best.device, f"lowest predicted time ({best.total_s:.3g} s); home has no model"
    if best.device == home_name:
        return home_name, f"home ({home_name}) is predicted fastest ({hp.total_s:.3g} s)"
    gain = math.log(hp.total_s / best.total_s)
    margin = margin_of(hp.sigma, best.sigma)
    ratio, band = math.exp(gain), math.exp(margin)
    if gain > margin:
        return best.device, (f"predicted {ratio:.2f}× faster than {home_name}, beyond the "
                             f"models' margin ({band:.2f}×)")
    return home_name, (f"{best.device} predicted {ratio:.2f}× faster, within the models' "
                       f"margin ({band:.2f}×): staying on {home_name}")


def decide_call(spec: KernelSpec, validated: Mapping[str, Any], home: str, *,
                commit: bool = True) -> tuple[list[Prediction], Decision, Key]:
    """This call's predictions, the decision (the model's, refined by this process's
    history of auto's calls: :mod:`hetlab.auto.history`) and its history key.

    ``commit=False`` looks without counting the call as one of an exploration
    (``hl.explain``, the evaluation's steady-state pick).
    """
    from .calibrate import fits_for_call, variant_of

    preds = predict(spec, validated, home, fits_for_call(spec, validated))
    device, reason = decide(preds, home)
    key = (spec.name, variant_of(spec, validated), bucket_of(spec.cost(validated)))
    return preds, HISTORY.decide(key, preds, device, reason, margin_of, commit=commit), key


def choose(spec: KernelSpec, validated: dict[str, Any], home: str) -> str:
    """The chooser behind ``device="auto"`` (installed by ``import hetlab.auto``)."""
    preds, d, key = decide_call(spec, validated, home)
    _LAST.call = (spec.name, id(validated), key, {p.device: p.total_s for p in preds}, d)
    log_once(_log, (spec.name, d.device, d.by, d.reason.split(" ")[0]),
             "auto: %s on %s (%s)", spec.name, d.device, d.reason)
    _log.debug("auto: %s on %s (%s)", spec.name, d.device, d.reason)
    return d.device


def observe(spec: KernelSpec, validated: dict[str, Any], device: str, seconds: float) -> None:
    """Record the time of the ``device="auto"`` call :func:`choose` just decided (the hook
    ``core.dispatch`` calls after it returned) in :data:`~hetlab.auto.history.HISTORY`."""
    last = getattr(_LAST, "call", None)
    if last is None or last[0] != spec.name or last[1] != id(validated):
        return
    _, _, key, predicted, _ = last
    if device in predicted:
        HISTORY.record(key, device, predicted[device], seconds)


def last_choice() -> Decision | None:
    """The decision of this thread's last ``device="auto"`` call (None before the first)."""
    last = getattr(_LAST, "call", None)
    return None if last is None else last[4]
