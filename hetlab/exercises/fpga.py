"""Checkers of notebook 05 (FPGA overlays): a pipelined loop's cycles, and driving the fps
overlay's registers by hand on the strict emulator (a forgotten flush gives a wrong answer)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..fpga.emulator import Emulator
from ..fpga.timing import pipelined_cycles
from ..kernels.pointcloud.reference import fps
from ..kernels.pointcloud.spec import make_cloud
from ._core import Case, Verdict, arrays_equal, finish, require_callable, run_cases

__all__ = ["check_pipelined_cycles", "check_fps_by_hand"]


def check_pipelined_cycles(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 05.1: ``fn(depth, ii, trip)`` is the cycle count of a pipelined HLS loop.

    Parameters
    ----------
    fn : callable
        ``fn(depth: int, ii: int, trip: int) -> int`` cycles (``ii``: initiation interval).
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    specs = [((3, 1, 100), "the first iteration takes `depth` cycles; each later one starts "
                           "`ii` cycles after the one before."),
             ((5, 2, 10), "with ii = 2 a new iteration starts every other cycle."),
             ((7, 1, 1), "one iteration: just the pipeline's depth."),
             ((7, 1, 0), "a loop that runs zero times takes no cycles.")]
    cases = [Case(f"depth={d}, ii={ii}, trip={t}", {"depth": d, "ii": ii, "trip": t},
                  pipelined_cycles(d, ii, t), nudge) for (d, ii, t), nudge in specs]
    verdict = run_cases("05.1 pipelined_cycles", fn, cases,
                        lambda got, exp: float(got) == exp)
    return finish(verdict, raise_on_fail)


_NUDGE = ("allocate both buffers, copy the points in and flush() the input, write both 64-bit "
          "addresses (low word, then high word at +4), n at 0x28, n_samples at 0x30, start at "
          "0x38, 1 to 0x00, poll bit 1 of 0x00, invalidate() the output, copy it, free both.")


def _cases() -> list[Case]:
    out = []
    for label, n, m, seed in (("1,000 points, n_samples=8", 1_000, 8, 5),
                              ("300 other points, n_samples=16", 300, 16, 6)):
        pts = make_cloud(n, np.random.default_rng(seed))
        out.append(Case(label, {"points": pts, "n_samples": m}, fps(pts, m, 0), _NUDGE))
    return out


def _run(fn: Callable[..., Any], strict: bool) -> tuple[Verdict, int]:
    emu = Emulator("pynq-z2", strict=strict)
    cases = _cases()
    verdict = run_cases("05.2 fps_by_hand", lambda **kw: fn(emu, **kw), cases, arrays_equal)
    return verdict, len(emu.memory.regions())


def check_fps_by_hand(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 05.2: ``fn(emu, points, n_samples)`` runs the fps overlay by its registers.

    Runs on a fresh strict emulator (CPU caches not coherent with the IP, as on a Zynq); when
    that fails, once more on a coherent one to tell a missing ``flush``/``invalidate`` from a
    wrong register sequence. Buffers left allocated afterwards fail the last case.

    Parameters
    ----------
    fn : callable
        ``fn(emu: hetlab.fpga.Emulator, points: (n, 3) float32, n_samples: int) -> (n_samples,)
        ints``; ``emu.load("fps")`` gives the IP, ``emu.allocate`` the buffers.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    require_callable("check_fps_by_hand", fn)
    verdict, left = _run(fn, strict=True)
    verdict.n_cases += 1
    if verdict.hint and "still the stub" not in verdict.hint:
        coherent, _ = _run(fn, strict=False)
        if coherent.passed:
            verdict.hint += (" — On a coherent emulator the same code is RIGHT: your register "
                             "sequence works, but the IP read stale DDR or you read a stale "
                             "cache. Did you flush() the input after writing it and "
                             "invalidate() the output before reading it?")
    elif not verdict.hint:
        if left:
            verdict.hint = (f"(case {verdict.n_cases} of {verdict.n_cases}: buffers after the "
                            f"calls): expected 0 allocated, got {left}. Look at: emu.free(buf) "
                            "each buffer when done — the board's contiguous memory is small.")
        else:
            verdict.n_passed += 1
    return finish(verdict, raise_on_fail)

