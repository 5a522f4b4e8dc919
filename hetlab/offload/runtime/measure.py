"""Measure and verify one variant the way :mod:`hetlab.bench` does: the first call (compiling)
apart, warm-up calls untimed, then repeats timed, median kept; every call on fresh copies of
the arguments, so the user's arrays are never touched and a stale buffer cannot pass."""

from __future__ import annotations

import copy
import math
import statistics
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...bench import _timed

__all__ = ["Measurement", "copy_args", "outputs_of", "verify", "measure", "RTOL", "ATOL",
           "REL_L2", "blas_work", "among_work"]

#: NPBench's verification rule: allclose(rtol, atol), or a relative L2 error below REL_L2
RTOL, ATOL, REL_L2 = 1e-5, 1e-8, 1e-5


def _nosync() -> None:
    return None


def copy_args(args: tuple) -> tuple:
    """A deep copy of ``args`` for one run: arrays copied, and every mutable value (lists,
    dicts, arrays inside tuples, objects) copied with :func:`copy.deepcopy` (one memo: a
    value met twice is copied once), so no run can change the caller's data or see another
    run's. Values deepcopy cannot copy (modules, locks, …) are passed as they are."""
    memo: dict[int, Any] = {}
    out = []
    for a in args:
        try:
            out.append(copy.deepcopy(a, memo))
        except Exception:  # not copyable: the same object (nothing else can be done)
            out.append(a)
    return tuple(out)


def _arrays_in(value: Any, out: list[Any], depth: int = 0) -> None:
    if isinstance(value, np.ndarray):
        out.append(value)
    elif isinstance(value, (tuple, list)) and depth < 16:
        for v in value:
            _arrays_in(v, out, depth + 1)
    elif isinstance(value, dict) and depth < 16:
        for v in value.values():
            _arrays_in(v, out, depth + 1)


def outputs_of(result: Any, args: tuple) -> tuple:
    """What a call produced: its return value and every array argument after the call (also
    arrays inside tuples, lists and dicts)."""
    arrays: list[Any] = []
    for a in args:
        _arrays_in(a, arrays)
    return (result, *arrays)


def _close(got: Any, want: Any) -> tuple[bool, float]:
    if want is None or got is None:
        return got is None and want is None, 0.0 if got is want else math.inf
    if isinstance(want, (tuple, list)) and isinstance(got, (tuple, list)):
        # element by element: a tuple of an array and a count is not one array
        if len(got) != len(want):
            return False, math.inf
        return verify(tuple(got), tuple(want))
    if isinstance(want, dict) or isinstance(got, dict):
        if not (isinstance(want, dict) and isinstance(got, dict)) or set(got) != set(want):
            return False, math.inf
        return verify(tuple(got[k] for k in want), tuple(want.values()))
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape:
        return False, math.inf
    if w.dtype.kind not in "fc":
        ok = bool(np.array_equal(g, w))
        return ok, 0.0 if ok else math.inf
    kind = np.complex128 if "c" in (g.dtype.kind, w.dtype.kind) else np.float64
    g, w = g.astype(kind), w.astype(kind)
    if np.allclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True):
        return True, float(np.max(np.abs(g - w), initial=0.0))
    norm = float(np.linalg.norm(w))
    rel = float(np.linalg.norm(g - w)) / norm if norm else math.inf
    return rel < REL_L2, rel


def verify(got: tuple, want: tuple) -> tuple[bool, float]:
    """NPBench's rule on every output: ``(all verified, worst error)``."""
    worst, ok = 0.0, True
    for g, w in zip(got, want, strict=True):
        good, err = _close(g, w)
        ok &= good
        worst = max(worst, err)
    return ok, worst


@dataclass
class Measurement:
    """Figures of one candidate (seconds). ``status``: ok, wrong, timeout, pruned (not run:
    the static model predicted it far slower than the best measured) or failed: …"""

    status: str = "ok"
    times_s: list[float] = field(default_factory=list)
    first_call_s: float = math.nan
    error: float = math.nan
    verified: bool = False
    #: "measured", or "modeled" (FPGA candidates: host part measured, kernels modeled)
    source: str = "measured"

    @property
    def time_s(self) -> float:
        return statistics.median(self.times_s) if self.times_s else math.inf


def measure(fn: Callable[..., Any], args: tuple, expected: tuple | None, *, repeats: int = 3,
            warmup: int = 1, timeout_s: float = math.inf,
            sync: Callable[[], None] | None = None, cut_s: float = math.inf) -> Measurement:
    """Time ``fn(*copies of args)`` and verify its outputs against ``expected``.

    A timed call longer than ``timeout_s`` stops the candidate (status ``"timeout"``, no
    times); one longer than ``cut_s`` (a candidate clearly worse than the best so far) ends
    the repeats: the times taken so far are kept (status ``"ok"``, fewer repeats).
    """
    m = Measurement()
    sync = sync or _nosync
    try:
        work = copy_args(args)
        out, m.first_call_s = _timed(lambda: fn(*work), sync)
        if expected is not None:
            m.verified, m.error = verify(outputs_of(out, work), expected)
            if not m.verified:
                m.status = "wrong"
                return m
        else:
            m.verified = True
        for k in range(max(warmup - 1, 0) + repeats):
            work = copy_args(args)
            _, t = _timed(lambda: fn(*work), sync)  # noqa: B023
            if t > timeout_s:
                m.status, m.times_s = "timeout", []
                return m
            if k >= max(warmup - 1, 0):
                m.times_s.append(t)
                if t > cut_s:
                    break
    except Exception as exc:
        m.status = "failed: " + traceback.format_exception_only(type(exc), exc)[-1].strip()
        m.verified = False
    return m


def confirm_times(contenders: dict[Any, tuple[Callable[..., Any], Any]], args: tuple,
             repeats: int, rounds: int = 5) -> dict[Any, float]:
    """Times of already verified callables, robust to a shared machine's changing load.

    In each round every contender is measured back to back (median of ``repeats`` calls) and
    divided by the first contender's (the baseline) time of the same round; a contender's
    figure is the baseline's median time × its median ratio, so load that drifts between
    rounds cancels out.
    """
    keys = list(contenders)
    per_round: dict[Any, list[float]] = {k: [] for k in keys}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(rounds):
            for key in keys:
                fn, sync = contenders[key]
                m = measure(fn, args, None, repeats=repeats, sync=sync)
                per_round[key].append(m.time_s)
    base = per_round[keys[0]]
    base_s = statistics.median(base)
    return {k: base_s * statistics.median(t / b for t, b in zip(v, base, strict=True))
            for k, v in per_round.items() if all(math.isfinite(t) for t in v)}


def blas_work(n: int = 160, length: int = 200_000) -> Callable[[], float]:
    """The "other work" :func:`among_work` runs between calls: a call that uses the BLAS
    (OpenBLAS, MKL…) the way a program around a plan does — ``np.linalg.norm`` of a
    ``length`` vector (BLAS ``nrm2``/``dot``) and an ``n`` × ``n`` float64 matrix product
    (``gemm``, multi-threaded by the BLAS). Returns a function doing it once."""
    rng = np.random.default_rng(0)
    v, a = rng.random(length), rng.random((n, n))

    def work() -> float:
        return float(np.linalg.norm(v)) + float((a @ a)[0, 0])

    return work


def among_work(fn: Callable[..., Any], args: tuple, *, repeats: int = 5,
               work: Callable[[], Any] | None = None,
               sync: Callable[[], None] | None = None) -> list[float]:
    """Times (s) of ``fn`` called the way a program calls it: each call right after NumPy/BLAS
    ``work`` (default :func:`blas_work`), on fresh copies of ``args`` made before that work.

    A BLAS that keeps its worker threads spinning after a call (OpenBLAS does, for a while)
    competes with ``fn``'s own threads on a machine with few cores, so these times can be
    well above the quiet ones of :func:`measure`; ``threadpoolctl.threadpool_limits`` around
    the call is the remedy (docs/offload.md).

    Examples
    --------
    >>> import numpy as np
    >>> times = among_work(lambda x: x.sum(), (np.ones(10),), repeats=3)
    >>> len(times), all(t > 0 for t in times)
    (3, True)
    """
    work = work or blas_work()
    sync = sync or _nosync
    times: list[float] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(repeats):
            fresh = copy_args(args)
            work()
            _, t = _timed(lambda: fn(*fresh), sync)  # noqa: B023
            times.append(t)
    return times
