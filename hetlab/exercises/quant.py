"""Checkers of notebook 02 (quantization): the true bits per weight, and 3-bit packing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..kernels.quant.formats import pack_codes, quantize
from ._core import Case, Verdict, arrays_equal, finish, run_cases

__all__ = ["check_bits_per_weight", "check_pack3"]


def check_bits_per_weight(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 02.1: ``fn(bits, group_size, symmetric)`` is the storage cost per weight.

    The expected figure is ``quant.quantize(w, ...).bits_per_weight`` of a matrix whose rows
    fill whole groups.

    Parameters
    ----------
    fn : callable
        ``fn(bits: int, group_size: int, symmetric: bool) -> float`` (bits per weight).
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    w = np.random.default_rng(0).normal(0, 0.02, (4, 256)).astype(np.float32)
    nudge = {True: "a symmetric group stores one float16 scale (16 bits) and no zero point; "
                   "spread it over the group's weights.",
             False: "an asymmetric group stores a float16 scale AND a float16 zero point: "
                    "32 bits per group, spread over group_size weights."}
    cases = [Case(f"bits={b}, group_size={g}, symmetric={s}",
                  {"bits": b, "group_size": g, "symmetric": s},
                  quantize(w, bits=b, group_size=g, symmetric=s).bits_per_weight, nudge[s])
             for b, g, s in ((4, 128, False), (4, 32, True), (3, 128, False), (8, 32, False),
                             (2, 64, True))]
    verdict = run_cases("02.1 bits_per_weight", fn, cases,
                        lambda got, exp: abs(float(got) - exp) < 1e-9)
    return finish(verdict, raise_on_fail)


def _word_diff(got: Any, expected: np.ndarray) -> str:
    g = np.asarray(got)
    if g.dtype.kind not in "ui":
        return f"dtype {g.dtype}: the words must be unsigned 32-bit integers (np.uint32)"
    if g.shape != expected.shape:
        return f"shape {g.shape} instead of {expected.shape}"
    r, c = np.argwhere(g.astype(np.uint64) != expected.astype(np.uint64))[0]
    return (f"first wrong word: row {r}, word {c}: expected {int(expected[r, c]):032b}, "
            f"got {int(g[r, c]) & 0xFFFFFFFF:032b}")


def check_pack3(fn: Callable[..., Any], *, raise_on_fail: bool = True) -> Verdict:
    """Exercise 02.2: ``fn(codes)`` packs 3-bit codes, groups of 32, as ``quant.pack_codes``.

    Per group of 32 codes: word 0 holds the low two bits of codes 0–15, word 1 those of codes
    16–31 (code ``k`` at bits ``2·(k % 16)``), word 2 the high bit of codes 0–31 (bit ``k``).

    Parameters
    ----------
    fn : callable
        ``fn(codes: (rows, n) uint8 in [0, 8), n a multiple of 32) -> (rows, 3·n/32) uint32``.
    raise_on_fail : bool
        Raise :class:`hetlab.VerificationError` with the hint when a case fails.

    Returns
    -------
    Verdict
    """
    def one(k: int, value: int, n: int = 32) -> np.ndarray:
        c = np.zeros((1, n), np.uint8)
        c[0, k] = value
        return c

    rng = np.random.default_rng(3)
    specs = [
        ("all zeros, 1 row of 32", np.zeros((1, 32), np.uint8),
         "the result has 3 words per 32 codes, dtype uint32."),
        ("code 0 is 1, the others 0", one(0, 1), "code k's low two bits go to word k // 16 at "
         "bit 2·(k % 16) — least-significant bits first."),
        ("code 17 is 3, the others 0", one(17, 3), "codes 16–31 fill the second word of the "
         "low plane: bit 2·(k − 16)."),
        ("code 5 is 4, the others 0", one(5, 4), "the high bit (code >> 2) of code k goes to "
         "word 2, bit k."),
        ("code 31 is 7, the others 0", one(31, 7), "bit 31 of a word: shift a np.uint32, not a "
         "Python or int32 value, so it does not overflow into a sign."),
        ("codes 0,1,…,7 repeated, 1 row of 32", (np.arange(32) % 8).astype(np.uint8)[None],
         "OR the shifted codes into their word; do not add planes of different codes."),
        ("3 rows of 96 random codes (3 groups per row)", rng.integers(0, 8, (3, 96), np.uint8),
         "each group of 32 takes its own 3 words, groups one after another along the row."),
    ]
    cases = [Case(label, {"codes": c.copy()}, pack_codes(c, 3, 32), nudge)
             for label, c, nudge in specs]
    detail: list[str] = []

    def same(got: Any, expected: np.ndarray) -> bool:
        if arrays_equal(got, expected):
            return True
        detail.append(_word_diff(got, expected))
        return False

    verdict = run_cases("02.2 my_pack3", fn, cases, same)
    if detail:
        verdict.hint += f" ({detail[-1]})"
    return finish(verdict, raise_on_fail)
