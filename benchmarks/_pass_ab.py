"""Shared A/B of one fixed pass of the numba target: each kernel's serial njit as written, the
serial variant with the fixed passes with and without the pass, and the same two with ``L1``
in parallel, each checked against the serial njit (bit for bit), then timed in interleaved
rounds (``confirm_times``: median of 3 calls per round, the rounds' ratios to the serial
njit's time of the same round). Used by ``offload_slice_ab.py`` and ``offload_hoist_ab.py``."""

from __future__ import annotations

import os
from collections.abc import Callable


def run_ab(kernels: dict[str, tuple[Callable, tuple]], pass_name: str, labels: tuple[str, str],
           rounds: int) -> None:
    """Print one line per kernel: times (ms) and speed relative to the serial njit, with
    ``base.<pass_name>`` on (``labels[1]``) and off (``labels[0]``)."""
    import numba
    import numpy as np

    from hetlab import offload
    from hetlab.machine import cpu_model
    from hetlab.offload.runtime.measure import confirm_times, copy_args, outputs_of
    from hetlab.offload.targets import base
    from hetlab.offload.targets.numba import NumbaTarget

    print(f"# CPU {cpu_model()}, numba {numba.__version__}, "
          f"{numba.get_num_threads()} threads, load {os.getloadavg()[0]:.2f}")
    target = NumbaTarget()
    for name, (fn, args) in kernels.items():
        ranks = {p: x.ndim for p, x in zip(offload.analyze(fn).params, args, strict=True)
                 if isinstance(x, np.ndarray)}
        report = offload.analyze(fn, arrays=ranks)
        report.float_arrays = frozenset(p for p, x in zip(report.params, args, strict=True)
                                        if isinstance(x, np.ndarray) and x.dtype.kind == "f")
        report.scalar_params = frozenset(p for p, x in zip(report.params, args, strict=True)
                                         if not isinstance(x, np.ndarray))
        fns = {"serial njit": numba.njit(fn)}
        keep = getattr(base, pass_name)
        for label, off in ((labels[0], True), (labels[1], False)):
            if off:
                setattr(base, pass_name, lambda *_: [])
            try:
                fns[f"serial, {label}"] = target.generate(report, (), transforms=True).compile()
                fns[f"L1, {label}"] = target.generate(report, ["L1"]).compile()
            finally:
                setattr(base, pass_name, keep)
        ref = copy_args(args)
        want = outputs_of(fns["serial njit"](*ref), ref)
        for k, f in fns.items():  # each gives the serial njit's result, bit for bit
            work = copy_args(args)
            got = outputs_of(f(*work), work)
            for w, r in zip(got, want, strict=True):
                np.testing.assert_array_equal(w, r, err_msg=k)
        best = confirm_times({k: (f, None) for k, f in fns.items()}, args, 3, rounds=rounds)
        base_t = best["serial njit"]
        print(f"{name}: " + ", ".join(
            f"{k} {v * 1e3:.3f} ms ({base_t / v:.2f}x serial)" for k, v in best.items()))
