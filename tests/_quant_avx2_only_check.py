"""Run by tests/test_quant_avx2.py in a subprocess with NUMBA_CPU_NAME=haswell: each AVX2
block dot compiled for a CPU without AVX-512 (no zmm, no EVEX) against its integer formula."""

from __future__ import annotations

import numba
import numpy as np

from hetlab.kernels.quant._simd_avx2 import KINDS, avx2_dot
from hetlab.kernels.quant.formats import pack_codes

BITS = {"w2": 2, "w3": 3, "w4": 4, "w8": 8, "w4a8": 4}
TOP = {"w2": 127, "w3": 127, "w4": 127, "w8": 64, "w4a8": 127}


def check(kind: str, rng: np.random.Generator) -> None:
    dot = avx2_dot[kind]
    nsplit, nlimbs = KINDS[kind]

    @numba.njit
    def run(q, wh, xl, acc):
        dot(q, 0, wh, xl, 0, acc, np.float32(1))

    bits = BITS[kind]
    codes = rng.integers(0, 2**bits, (1, 128))
    codes[0, :5] = 2**bits - 1
    q = pack_codes(codes, bits, 128).reshape(-1)
    for small in (True, False):
        limbs = np.stack([rng.integers(-TOP[kind], TOP[kind] + 1, 128)]
                         + [rng.integers(-64, 64, 128) for _ in range(nlimbs - 1)])
        if small:  # only the last limb: every sum below 2**24, exact in float32
            limbs[:-1] = 0
        xl = np.zeros(128 * nlimbs, np.int8)
        i = np.arange(128)
        for ll in range(nlimbs):
            xl[128 * ll + (128 // nsplit) * (i % nsplit) + i // nsplit] = limbs[ll]
        acc = np.zeros(8, np.float32)
        run(q, 8, xl, acc)
        weights = 2 ** (7 * np.arange(nlimbs - 1, -1, -1))
        want = int((codes[0].astype(np.int64) * (weights @ limbs)).sum())
        got = float(acc.astype(np.float64).sum())
        assert (got == want) if small else abs(got - want) <= 2**-21 * abs(want) + 1, (
            kind, small, got, want)
    asm = run.inspect_asm(run.signatures[0])
    assert "vpmaddubsw" in asm and "zmm" not in asm, kind


if __name__ == "__main__":
    assert numba.config.CPU_NAME == "haswell"
    gen = np.random.default_rng(0)
    for k in sorted(KINDS):
        check(k, gen)
    print("ok", sorted(KINDS))
