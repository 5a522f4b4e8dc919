"""The cost model of one (kernel, device): ``t = overhead + k · roofline_time ** p``, corrected
to the calibration points (its ratio to them interpolated between them).

``roofline_time`` is the kernel's declared cost (``spec.cost``: flops, bytes) on the device's
measured peaks, ``max(bytes / bandwidth, flops / flop_rate)``; ``overhead`` (launch, thread
wake-up, Python dispatch), ``k`` and ``p`` are fitted to a short calibration run
(:mod:`hetlab.auto.calibrate`). The model's error margin ``sigma`` is measured, not assumed:
the robust spread (1.4826 × median |error|) of ``log(predicted / observed)`` over the
calibration points, each predicted by a model that did not see it (held out: every other
point of the ×2 calibration grid predicted from the rest, so the held-out error is that of
a ×4 grid — more than the final model, which uses every point, commits). The errors are
kept per point: :meth:`DeviceFit.sigma_at` is the error *near* a call's size, where the
choice is made, not an average over sizes where the devices are far apart.

>>> import numpy as np
>>> r = np.array([1e-6, 1e-5, 1e-4, 1e-3]); t = 2e-5 + 3.0 * r
>>> a, k, p, sigma = fit_points(r, t)
>>> bool(abs(a - 2e-5) < 1e-6 and abs(k - 3.0) < 0.05)
True
>>> round(sigma, 3)    # each point predicted from the others: the law holds through the knee
0.0
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..core.spec import Cost

__all__ = ["DeviceFit", "fit_points", "held_out_errors", "interpolate", "robust_sigma",
           "roofline_s"]

#: exponents tried for ``p`` (a grid: robust, no optimizer)
_POWERS = np.round(np.arange(0.5, 1.501, 0.025), 3)


def roofline_s(cost: Cost, bandwidth_gbps: float, gflops: float) -> float:
    """Roofline time of ``cost`` (s): the larger of bytes / bandwidth and flops / flop rate.

    A peak that is unknown (NaN, 0) drops its term; with both unknown the result is NaN.
    """
    terms = []
    if bandwidth_gbps > 0 and math.isfinite(bandwidth_gbps):
        terms.append(float(cost.bytes) / (bandwidth_gbps * 1e9))
    if gflops > 0 and math.isfinite(gflops):
        terms.append(float(cost.flops) / (gflops * 1e9))
    return max(terms) if terms else float("nan")


def _fit_fixed_p(r: np.ndarray, t: np.ndarray, p: float) -> tuple[float, float, float]:
    """Least squares in relative error of ``t ≈ a + k r^p`` with a, k >= 0; returns
    (a, k, sum of squared relative residuals)."""
    x = r**p
    A = np.stack([np.ones_like(x), x], axis=1) / t[:, None]
    b = np.ones_like(t)
    best = (float("nan"), float("nan"), float("inf"))
    sol = np.linalg.lstsq(A, b, rcond=None)[0]
    candidates = [sol] if (sol >= 0).all() else []
    # the boundary solutions: only the overhead, or no overhead
    candidates.append(np.array([1.0 / np.mean(1.0 / t), 0.0]))
    k0 = float(np.dot(x / t, b) / np.dot(x / t, x / t)) if np.any(x > 0) else 0.0
    candidates.append(np.array([0.0, max(k0, 0.0)]))
    for a, k in candidates:
        res = float(np.sum((A @ np.array([a, k]) - b) ** 2))
        if res < best[2]:
            best = (float(a), float(k), res)
    return best


def _fit(r: np.ndarray, t: np.ndarray) -> tuple[float, float, float]:
    best = (float("nan"), float("nan"), 1.0)
    err = float("inf")
    for p in _POWERS:
        a, k, res = _fit_fixed_p(r, t, float(p))
        if res < err:
            best, err = (a, k, float(p)), res
    return best


def interpolate(points: Any, r: float, a: float, k: float, p: float) -> float:
    """Time at roofline time ``r`` from calibration ``points`` ((r, t) pairs): the law
    ``a + k r^p`` corrected to the points — its ratio to the measured times interpolated
    log-linearly in ``r`` between them, held at the first point's ratio below them (the
    law's curvature at the knee between fixed cost and throughput is kept, which a log-log
    interpolation of the times cuts straight across); above the largest point, the fixed
    cost plus a roofline term linear in ``r``, scaled to meet that point.

    >>> pts = [(1e-6, 2e-6), (1e-5, 1.1e-5), (1e-4, 1.01e-4)]      # t = 1e-6 + r
    >>> round(interpolate(pts, 1e-3, 1e-6, 1.0, 1.0) * 1e3, 4)       # ms, beyond: linear
    1.001
    """
    pr = np.array([q[0] for q in points], dtype=float)
    pt = np.array([q[1] for q in points], dtype=float)
    order = np.argsort(pr)
    pr, pt = pr[order], pt[order]
    laws = a + k * pr**p
    if r > pr[-1]:
        # beyond the largest point the work dominates: time grows with the declared work
        # (the roofline term linear in r), not with an exponent fitted where the fixed cost
        # and the caches still bend the curve (p = 1.3 vs 1.05 extrapolated ×16 in work
        # turned a 1.4× faster device into a predicted 1.4× slower one)
        c = k * pr[-1] ** p
        end, lin = a + c, a + c * r / pr[-1]
        return float(pt[-1] * lin / end) if end > 0 else float(pt[-1] * r / pr[-1])
    law = a + k * r**p
    if not (law > 0 and np.all(laws > 0)):  # no usable law: the times themselves, log-log
        return float(np.exp(np.interp(np.log(r), np.log(pr), np.log(pt))))
    ratio = np.interp(np.log(r), np.log(pr), np.log(pt / laws))  # constant below the first
    return float(law * np.exp(ratio))


def held_out_errors(r: Any, t: Any) -> np.ndarray:
    """``log(predicted / observed)`` of each calibration point, predicted without it.

    With 5 or more points (sorted by ``r``) the points are split in two alternating halves
    and each half is predicted by :func:`interpolate` from a fit to the other (two-fold
    cross-validation: on the ×2 calibration grid each prediction bridges a ×4 gap, or
    extrapolates one step at the ends); with 3–4 points each is left out in turn; with fewer,
    the in-sample error of the fitted law (a lower bound).

    Parameters
    ----------
    r, t : array-like of float, shape (n,)
        Roofline times and measured times (s) of the calibration points, > 0.

    Returns
    -------
    ndarray of float64, shape (n,)
        The held-out log errors, in the order of ``r``.

    Examples
    --------
    >>> import numpy as np
    >>> r = np.geomspace(1e-6, 1e-3, 7); t = 1e-5 + 2.0 * r
    >>> bool(np.abs(held_out_errors(r, t)).max() < 0.1)
    True
    """
    r, t = np.asarray(r, dtype=float), np.asarray(t, dtype=float)
    n = len(r)
    if n < 3:
        a, k, p = _fit(r, t)
        return np.log(np.maximum(a + k * r**p, 1e-12) / t)
    order = np.argsort(r)
    rank = np.empty(n, dtype=int)
    rank[order] = np.arange(n)
    groups = [rank % 2 == g for g in (0, 1)] if n >= 5 else [np.arange(n) == i for i in range(n)]
    errs = np.zeros(n)
    for out in groups:
        keep = ~out
        ai, ki, pi = _fit(r[keep], t[keep])
        pts = list(zip(r[keep], t[keep], strict=True))
        for i in np.flatnonzero(out):
            pred = interpolate(pts, float(r[i]), ai, ki, pi)
            errs[i] = math.log(max(pred, 1e-12) / t[i])
    return errs


def robust_sigma(errs: Any) -> float:
    """1.4826 × median |error|: the RMS of normal errors, but one point hit by a preempted
    run on a shared machine does not set the margin of every call (inf when empty)."""
    e = np.abs(np.asarray(errs, dtype=float))
    return float(1.4826 * np.median(e)) if e.size else float("inf")


def fit_points(r: Any, t: Any) -> tuple[float, float, float, float]:
    """Fit ``t = a + k · r**p`` to calibration points; returns ``(a, k, p, sigma)``.

    Parameters
    ----------
    r : array-like of float, shape (n,)
        Roofline times of the calibration cases (s), > 0.
    t : array-like of float, shape (n,)
        Their measured times (s), > 0.

    Returns
    -------
    a : float
        Fixed cost per call (s): launch, thread wake-up, dispatch.
    k, p : float
        Scale and exponent of the roofline term (``p`` in [0.5, 1.5]).
    sigma : float
        :func:`robust_sigma` of the :func:`held_out_errors`: what a size between
        calibration points risks, over all sizes.
    """
    r, t = np.asarray(r, dtype=float), np.asarray(t, dtype=float)
    a, k, p = _fit(r, t)
    return a, k, p, robust_sigma(held_out_errors(r, t))


@dataclass(frozen=True)
class DeviceFit:
    """The calibrated model of one kernel on one device.

    Attributes
    ----------
    device, kind : str
        Backend name and kind (``"cpu"``, ``"gpu"``, ``"fpga"``).
    source : str
        ``"measured"`` (calibrated on this machine) or ``"recorded"`` (fitted to a recording
        of an absent device: shown, never chosen).
    overhead_s, scale, power : float
        ``t = overhead_s + scale · roofline_s ** power`` (s).
    sigma : float
        Measured error margin over all sizes: :func:`robust_sigma` of ``errors``.
    jit_s : float
        First-call extra time seen while calibrating (JIT compile; s).
    bandwidth_gbps, gflops : float
        The peaks the roofline time is computed with (GB/s, GFLOP/s).
    h2d_gbps, latency_s : float
        Host↔device copy bandwidth (GB/s) and latency per copy (s); NaN/0 on the host.
    sizes : tuple of int
        The calibration sizes.
    """

    device: str
    kind: str
    source: str
    overhead_s: float
    scale: float
    power: float
    sigma: float
    jit_s: float
    bandwidth_gbps: float
    gflops: float
    h2d_gbps: float = float("nan")
    latency_s: float = 0.0
    sizes: tuple[int, ...] = ()
    #: the calibration points (roofline s, best measured s), when kept
    points: tuple[tuple[float, float], ...] = ()
    #: held-out ``log(predicted / observed)`` of each point (:func:`held_out_errors`)
    errors: tuple[float, ...] = ()
    #: the calibrated variant of the call (its choice and flag arguments), "" for any
    variant: str = ""

    def sigma_at(self, cost: Cost) -> float:
        """The model's error near ``cost``: the RMS held-out error of the two calibration
        points nearest (in log roofline time) to the call; ``sigma`` without kept errors.

        Where the choice is close (the crossover), the error that matters is the one
        measured there: a model good at the crossover and poor far from it gets a narrow
        margin where a wrong pick would cost little, not its worst error everywhere.
        """
        r = roofline_s(cost, self.bandwidth_gbps, self.gflops)
        if len(self.errors) < 2 or len(self.errors) != len(self.points) or not r > 0:
            return self.sigma
        lr = np.log([q[0] for q in self.points])
        near = np.argsort(np.abs(lr - math.log(r)), kind="stable")[:2]
        e = np.asarray(self.errors)[near]
        return float(np.sqrt(np.mean(e**2)))

    def time_s(self, cost: Cost) -> float:
        """Predicted time of one call (s), launch overhead included.

        Between calibration points: log-log interpolation of the measured times (the fit's
        shape, corrected to what was measured: caches and thread counts change the slope
        where a single power law cannot); outside them the fitted law, scaled to meet the
        nearest point.
        """
        r = roofline_s(cost, self.bandwidth_gbps, self.gflops)
        law = self.overhead_s + (self.scale * r**self.power if r > 0 else 0.0)
        if len(self.points) < 2 or not r > 0:
            return law
        return interpolate(self.points, r, self.overhead_s, self.scale, self.power)

    def compute_s(self, cost: Cost) -> float:
        """Predicted time of the roofline term (s), the launch overhead excluded."""
        return max(self.time_s(cost) - self.overhead_s, 0.0)

    def transfer_s(self, bytes_in: float, bytes_out: float, resident: bool) -> float:
        """Predicted host↔device copies of one call (s): 0 on the host or for resident data."""
        if self.kind == "cpu" or resident:
            return 0.0
        if not self.h2d_gbps > 0:
            return float("nan")
        return 2 * self.latency_s + (bytes_in + bytes_out) / (self.h2d_gbps * 1e9)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["sizes"] = list(self.sizes)
        d["points"] = [list(p) for p in self.points]
        d["errors"] = list(self.errors)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> DeviceFit:
        return cls(**{**d, "sizes": tuple(d.get("sizes", ())),
                      "points": tuple(tuple(p) for p in d.get("points", ())),
                      "errors": tuple(d.get("errors", ()))})
