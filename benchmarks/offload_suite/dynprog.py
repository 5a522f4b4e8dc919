"""Dynamic programming and scans whose loops carry their dependence: they must stay serial."""

from __future__ import annotations

import numpy as np

from . import designs_grid as _d
from ._spec import SuiteKernel, rng


# -- longest common subsequence table -----------------------------------------------------------
def lcs_table(a, b, T):
    """T[i, j] = LCS length of a[:i] and b[:j]; a (n,), b (m,) int64, T (n + 1, m + 1) int64."""
    n = a.shape[0]
    m = b.shape[0]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            if a[i - 1] == b[j - 1]:
                T[i, j] = T[i - 1, j - 1] + 1
            else:
                T[i, j] = max(T[i - 1, j], T[i, j - 1])


def args_lcs(n, seed):
    g = rng(seed)
    return (g.integers(0, 4, n), g.integers(0, 4, n + 17), np.zeros((n + 1, n + 18), np.int64))


# -- Nussinov-like base-pair maximization over intervals ----------------------------------------
def pair_folding(seq, F):
    """F[i, j] = most complementary pairs in seq[i..j] (seq (n,) int64 of 0..3, F (n, n) int64).

    Bases b and 3 - b pair; an interval grows from the end of the sequence inward.
    """
    n = seq.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            best = F[i + 1, j] if i + 1 < n else 0
            if F[i, j - 1] > best:
                best = F[i, j - 1]
            if seq[i] + seq[j] == 3:
                inner = F[i + 1, j - 1] + 1 if i + 1 <= j - 1 else 1
                if inner > best:
                    best = inner
            for k in range(i + 1, j):
                split = F[i, k] + F[k + 1, j]
                if split > best:
                    best = split
            F[i, j] = best


def args_fold(n, seed):
    return (rng(seed).integers(0, 4, n), np.zeros((n, n), np.int64))


# -- inclusive prefix scan ---------------------------------------------------------------------
def prefix_scan(x, out):
    """out[i] = x[0] + … + x[i]; x, out (n,) float64."""
    run = 0.0
    for i in range(x.shape[0]):
        run = run + x[i]
        out[i] = run


def args_scan(n, seed):
    g = rng(seed)
    return (g.random(n), np.zeros(n))


# the answer keys: the design of designs_grid kept for each kernel (README.md says why)
lcs_table_hand = _d.lcs_table_run1
pair_folding_hand = _d.pair_folding_transposed
prefix_scan_hand = _d.prefix_scan_serial

KERNELS = [
    SuiteKernel("lcs_table", "dynprog", lcs_table, args_lcs, lcs_table_hand, 2500, 12, (),
                False, "T[i, j] from its left, upper and diagonal neighbours; int64; max()"),
    SuiteKernel("pair_folding", "dynprog", pair_folding, args_fold, pair_folding_hand, 480, 12,
                (), False, "interval DP with a descending range(n - 1, -1, -1) and a split loop"),
    SuiteKernel("prefix_scan", "dynprog", prefix_scan, args_scan, prefix_scan_hand, 3_000_000,
                60, (), False, "a running scalar carried across iterations"),
]
