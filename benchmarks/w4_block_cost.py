"""What one 128-weight block costs the VNNI W4 GEMV when the weights are in cache.

Plain script; run from the repository root::

    PYTHONPATH=$PWD python benchmarks/w4_block_cost.py          # ~1 minute
    PYTHONPATH=$PWD python benchmarks/w4_block_cost.py --rows 512 --rounds 60

Question: is the W4 GEMV of :mod:`hetlab.kernels.quant._numba_w4` held back by the
arithmetic of its block dot (six ``vpdpbusd``, two shifts, one conversion per 128 weights,
all on port 0 of Intel cores for 512-bit vectors) or by something else? Method: the same
row driver (:mod:`hetlab.kernels.quant._w4_driver`) runs with block dots that do less
arithmetic than the real one — the limb shifts dropped, two limbs, one limb (W4A8's dot) —
on a matrix whose codes fit in L2 (``--rows`` × 4096, 4 bits: 512 KB at 256 rows), one
thread, so memory bandwidth is out of the picture. Variants that drop work give wrong
outputs: they are timed, never used. If the block cost fell in proportion to the
``vpdpbusd`` count, the dot's arithmetic would be the limit.

Each line: the variant, its ``vpdpbusd``/shift count per block, the median over rounds of
the best of 20 calls, ns per block (a call's fixed cost — activation preparation, allocation,
one parallel launch — included), and the ratio to the kernel's own dot (timed first). The
CPU and the numba threading layer are printed first. Needs AVX512-VNNI (exits with a message
otherwise).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from hetlab import quant
from hetlab.kernels.quant import _simd
from hetlab.kernels.quant import _w4_driver as drv
from hetlab.kernels.quant import numba as qn
from hetlab.kernels.quant._numba_w4 import group_sums, prepare_limbs


def _dot_variant(nlimbs: int, shifts: bool):
    """A block dot like :data:`~._simd.gdot4_vnni_acc` with ``nlimbs`` limbs, with or
    without the limb shifts (the same loads, ``and``s and high-nibble extraction)."""

    @intrinsic
    def dot(typingctx, q, wb, xl, xb, acc, f):
        sig = types.void(q, types.int64, xl, types.int64, acc, types.float32)

        def codegen(context, builder, signature, args):
            q_, wb_, xl_, xb_, acc_, f_ = args
            words, _ = _simd._load(context, builder, signature.args[0], q_, wb_, _simd._VI)
            lo = builder.and_(words, _simd._splat_i(0x0F0F0F0F))
            hi = _simd._high_nibbles(builder, words)
            dp = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(_simd._VI, [_simd._VI] * 3), _simd._VNNI)
            d = None
            for limb in range(nlimbs):
                a = ir.Constant(_simd._VI, None)
                for k, codes in enumerate((lo, hi)):
                    off = builder.add(xb_, ir.Constant(_simd._I64, 128 * limb + 64 * k))
                    x, _ = _simd._load(context, builder, signature.args[2], xl_, off,
                                       _simd._VI, align=1)
                    a = builder.call(dp, [a, codes, x])
                if shifts and limb < nlimbs - 1:
                    a = builder.shl(a, _simd._splat_i(7 * (nlimbs - 1 - limb)))
                d = a if d is None else builder.add(d, a)
            a, aptr = _simd._load(context, builder, signature.args[4], acc_,
                                  ir.Constant(_simd._I64, 0), _simd._VF)
            scaled = _simd._fma(builder, _simd._splat(builder, f_, _simd._VF),
                                builder.sitofp(d, _simd._VF), a)
            builder.store(scaled, aptr, align=4)
            return context.get_dummy_value()

        return sig, codegen

    return dot


def _kernel(dot):
    """A GEMV entry like :func:`~._numba_w4.gemv4_vnni` (outlier-free activations only)."""
    drive = drv.make_gemv(drv.make_row_w4(drv.vnni_dot(dot), _simd.LANES), _simd.LANES)

    @numba.njit(nogil=True)
    def run(qflat, nw, scales, zeros, zsym, x, table, gs, out, nchunk):
        n = x.shape[0]
        xsum = np.empty(scales.shape[1], np.float32)
        xl = _simd.empty64_i8(3 * n)  # on a line, as in the kernels
        xf = np.empty(n // 128, np.float32)
        ok = np.empty(n // 128, np.bool_)
        prepare_limbs(x, xl, xf, ok)
        group_sums(x, gs, xsum)
        return drive(qflat, nw, scales, zeros, zsym,
                     (xl, xf, ok, np.empty(0, np.float32), xsum, True), table, gs, out, nchunk)

    return run


#: (label, limbs, shifts) of the variants, each limb's dots shifted and added; the kernel's own
#: dot (:data:`~._simd.gdot4_vnni_acc`, three limbs chained Horner-style) is timed first
VARIANTS = [("3 limbs, shifted and added", 3, True), ("3 limbs, no shifts", 3, False),
            ("2 limbs + shift", 2, True), ("1 limb (W4A8's dot)", 1, False)]
KERNEL = "the kernel's dot (3 limbs, Horner)"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=256, help="output rows (codes: rows × 2 KB)")
    p.add_argument("--rounds", type=int, default=30)
    a = p.parse_args(argv)
    if not _simd.HAS_VNNI:
        print("this CPU has no AVX512-VNNI: nothing to measure here")
        return 0
    numba.set_num_threads(1)
    n_in = 4096
    rng = np.random.default_rng(0)
    qw = quant.quantize(rng.normal(0, 0.02, (a.rows, n_in)).astype(np.float32), 4, 128)
    x = rng.standard_normal(n_in).astype(np.float32)
    head, _ = qn._common(qw)
    y = np.empty(a.rows, np.float32)
    runs = {KERNEL: _kernel(_simd.gdot4_vnni_acc)}
    runs.update({label: _kernel(_dot_variant(nl, sh)) for label, nl, sh in VARIANTS})
    for run in runs.values():
        run(*head, x, qn._F16, 128, y, 1)  # compile
    best: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(a.rounds):  # variants interleaved, so each sees the same background
        for label, run in runs.items():
            ts = []
            for _ in range(20):
                t0 = time.perf_counter()
                run(*head, x, qn._F16, 128, y, 1)
                ts.append(time.perf_counter() - t0)
            best[label].append(min(ts))
    blocks = a.rows * n_in // 128
    cpu = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo")
                if ln.startswith("model name")), platform.processor())
    print(f"CPU: {cpu}; numba {numba.__version__}, 1 thread, threading layer "
          f"{numba.threading_layer()}; {a.rows}×{n_in} W4 g128 ({qw.qweight.nbytes / 1e3:.0f} KB"
          f" of codes, in L2), {blocks} blocks, median over {a.rounds} rounds of the best of 20")
    ref = statistics.median(best[KERNEL])
    for label, nl, sh in [(KERNEL, 3, True), *VARIANTS]:
        med = statistics.median(best[label])
        print(f"  {label:36s} vpdpbusd {2 * nl}, shifts {(nl - 1) if sh else 0}:  "
              f"{med * 1e6:7.1f} µs  {med / blocks * 1e9:5.2f} ns/block  "
              f"{med / ref:4.2f}× the kernel's dot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
