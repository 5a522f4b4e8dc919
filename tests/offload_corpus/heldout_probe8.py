"""An eighth held-out probe of the offload search, with answer keys (``heldout_probe8_keys.py``):
FLAT BUFFERS AND NAMED INDICES, the way code ported from C or written for images is spelled —
a matrix stored row after row in a 1-D array (``C[i * n + j]``), a transpose between two flat
buffers, images padded by one pixel (``img[(i + 1) * (w + 2) + j + 1]``), a 3-D volume flattened
(``(i * ny + j) * nz + k``), a row's start named first (``base = i * n``) or the whole index
(``idx = i * n + j``), a triangle walked from a named start (``lo = i + 1``), a leading
dimension given apart from the width (``src[i * ld + j]``), rows scanned in place, a recurrence
down the columns, rows that overlap by one element (``x[i * (n - 1) + j]``), interleaved
coordinates (``pos[3 * i + d]``) and blocks summed from a flat array.

Every verdict was decided from the code's semantics, not from the engine's output:
``parallel``/``reduction`` loops are safe in any order; ``serial`` loops carry a true dependence;
``limits`` names loops parallel in truth which the engine keeps serial, with the reason.
``key`` is the expert numba version of the same computation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import heldout_probe8_keys as keys
from .heldout_probe4 import Probe4


@dataclass(frozen=True)
class Probe8(Probe4):
    """A :class:`Probe4` (kernel, maker, verdicts, sizes, limits, answer key)."""


# -- dense algebra on flat buffers -----------------------------------------------------------------
def flat_gemm(A, B, C, m, k, n):
    """C (m·n, flat) = A (m·k, flat) B (k·n, flat), each stored row after row; a dot product
    per element of C (rows and columns parallel, the inner sum a reduction)."""
    for i in range(m):
        for j in range(n):
            s = 0.0
            for p in range(k):
                s += A[i * k + p] * B[p * n + j]
            C[i * n + j] = s


def flat_transpose_copy(src, dst, m, n):
    """dst (n·m, flat) = srcᵀ for src (m·n, flat): ``dst[j * m + i] = src[i * n + j]``."""
    for i in range(m):
        for j in range(n):
            dst[j * m + i] = src[i * n + j]


def row_base_scale(x, s, m, n):
    """Each row of x (m·n, flat) scaled by s[i] in place, the row's start named first."""
    for i in range(m):
        base = i * n
        for j in range(n):
            x[base + j] = x[base + j] * s[i]


def named_index_average(A, out):
    """out (m·n, flat) = the mean of A[i, j] and its mirror A[i, n - 1 - j], the flat index
    named ``idx`` first."""
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            idx = i * n + j
            out[idx] = 0.5 * (A[i, j] + A[i, n - 1 - j])


def lower_from_upper_flat(U, L, n):
    """L (n·n, flat) gets the transpose of U's upper triangle: ``L[j * n + i] = U[i * n + j]``
    for ``j >= i``, walked from a named start ``lo = i``."""
    for i in range(n):
        lo = i
        for j in range(lo, n):
            L[j * n + i] = U[i * n + j]


def leading_dimension_copy(src, ld, m, n, dst):
    """dst (m·n, flat) = the first n columns of src stored with leading dimension ld >= n (a
    submatrix of a wider buffer)."""
    for i in range(m):
        for j in range(n):
            dst[i * n + j] = 2.0 * src[i * ld + j]


# -- images and volumes ------------------------------------------------------------------------
def padded_box_blur(img, h, w, out):
    """out (h·w, flat) = the 3×3 mean of img ((h + 2)·(w + 2), flat, padded by one pixel)."""
    for i in range(h):
        for j in range(w):
            s = 0.0
            for di in range(3):
                for dj in range(3):
                    s += img[(i + di) * (w + 2) + j + dj]
            out[i * w + j] = s / 9.0


def volume_gradient_x(v, nx, ny, nz, out):
    """out[i, j, k] = v[i + 1, j, k] − v[i, j, k] on a flattened volume v ((nx + 1)·ny·nz)
    into out (nx·ny·nz), both indexed ``(i * ny + j) * nz + k``."""
    for i in range(nx):
        for j in range(ny):
            for k in range(nz):
                out[(i * ny + j) * nz + k] = v[((i + 1) * ny + j) * nz + k] \
                    - v[(i * ny + j) * nz + k]


# -- recurrences on flat buffers -----------------------------------------------------------------
def flat_row_prefix(x, m, n):
    """A running sum along each row of x (m·n, flat) in place: rows are independent (parallel),
    each row a recurrence (serial)."""
    for i in range(m):
        for j in range(1, n):
            x[i * n + j] += x[i * n + j - 1]


def flat_column_recurrence(x, m, n, a):
    """x[i, j] += a · x[i − 1, j] down the columns of x (m·n, flat) in place: each row needs
    the one above (serial), the columns are independent (parallel)."""
    for i in range(1, m):
        for j in range(n):
            x[i * n + j] += a * x[(i - 1) * n + j]


def overlapping_rows_accumulate(x, A):
    """x[i·(n − 1) + j] += A[i, j]: consecutive rows share one element (the last of row i is the
    first of row i + 1), so the row loop is a true dependence; within a row, parallel."""
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            x[i * (n - 1) + j] += A[i, j]


# -- interleaved and blocked -------------------------------------------------------------------
def interleaved_norms(pos, out):
    """out[i] = |p_i| for points stored x, y, z interleaved in pos (3·n,)."""
    n = out.shape[0]
    for i in range(n):
        out[i] = math.sqrt(pos[3 * i] ** 2 + pos[3 * i + 1] ** 2 + pos[3 * i + 2] ** 2)


def flat_block_means(x, bs, out):
    """out[b] = the mean of block b of x (nb·bs,), the block's start named ``start``."""
    nb = out.shape[0]
    for b in range(nb):
        start = b * bs
        s = 0.0
        for t in range(bs):
            s += x[start + t]
        out[b] = s / bs


# -- makers --------------------------------------------------------------------------------------
def _gemm(g, n):
    m, k = n + 1, max(n - 1, 0)
    return g.random(m * k), g.random(k * n), np.zeros(m * n), m, k, n


def _pair(g, n):
    m = n + 2
    return g.random(m * n), np.zeros(m * n), m, n


def _rows(g, n):
    m = n + 1
    return g.random(m * n), g.random(m), m, n


def _mat(g, n):
    return g.random((n + 1, n)), np.zeros((n + 1) * n)


def _square(g, n):
    return g.random(n * n), np.zeros(n * n), n


def _ld(g, n):
    m, ld = n + 1, n + 3
    return g.random(m * ld), ld, m, n, np.zeros(m * n)


def _image(g, n):
    h, w = n + 1, n
    return g.random((h + 2) * (w + 2)), h, w, np.zeros(h * w)


def _volume(g, n):
    nx, ny, nz = n, n + 1, 3
    return g.random((nx + 1) * ny * nz), nx, ny, nz, np.zeros(nx * ny * nz)


def _scan(g, n):
    m = n + 1
    return g.random(m * n), m, n


def _column(g, n):
    m = n + 1
    return g.random(m * n), m, n, 0.5


def _overlap(g, n):
    m = n + 1
    return np.zeros(m * max(n - 1, 0) + 1), g.random((m, n))


def _points(g, n):
    return g.random(3 * n), np.zeros(n)


def _blocks(g, n):
    bs = 4
    return g.random(n * bs), bs, np.zeros(n)


PROBES: dict[str, Probe8] = {
    "flat_gemm": Probe8(flat_gemm, _gemm, parallel=("L1", "L2"), reduction=("L3",),
                        key=keys.flat_gemm, sizes=(0, 1, 2, 7), moderate=300),
    "flat_transpose_copy": Probe8(flat_transpose_copy, _pair, parallel=("L1", "L2"),
                                  key=keys.flat_transpose_copy, sizes=(0, 1, 2, 7),
                                  moderate=1500),
    "row_base_scale": Probe8(row_base_scale, _rows, parallel=("L1", "L2"),
                             key=keys.row_base_scale, sizes=(0, 1, 2, 7), moderate=2000),
    "named_index_average": Probe8(named_index_average, _mat, parallel=("L1", "L2"),
                                  key=keys.named_index_average, sizes=(0, 1, 2, 7),
                                  moderate=1500),
    "lower_from_upper_flat": Probe8(lower_from_upper_flat, _square, parallel=("L1", "L2"),
                                    key=keys.lower_from_upper_flat, sizes=(0, 1, 2, 7),
                                    moderate=1500),
    "leading_dimension_copy": Probe8(leading_dimension_copy, _ld, parallel=("L1", "L2"),
                                     key=keys.leading_dimension_copy, sizes=(0, 1, 2, 7),
                                     moderate=2000),
    "padded_box_blur": Probe8(padded_box_blur, _image, parallel=("L1", "L2"),
                              reduction=("L3", "L4"), key=keys.padded_box_blur,
                              sizes=(0, 1, 2, 7), moderate=1000),
    "volume_gradient_x": Probe8(volume_gradient_x, _volume, parallel=("L1", "L2", "L3"),
                                key=keys.volume_gradient_x, sizes=(0, 1, 2, 7), moderate=600),
    "flat_row_prefix": Probe8(flat_row_prefix, _scan, parallel=("L1",), serial=("L2",),
                              key=keys.flat_row_prefix, sizes=(0, 1, 2, 7), moderate=2000),
    "flat_column_recurrence": Probe8(flat_column_recurrence, _column, parallel=("L2",),
                                     serial=("L1",), key=keys.flat_column_recurrence,
                                     sizes=(0, 1, 2, 7), moderate=2000),
    "overlapping_rows_accumulate": Probe8(overlapping_rows_accumulate, _overlap,
                                          parallel=("L2",), serial=("L1",),
                                          key=keys.overlapping_rows_accumulate,
                                          sizes=(0, 1, 2, 7), moderate=2000),
    "interleaved_norms": Probe8(interleaved_norms, _points, parallel=("L1",),
                                key=keys.interleaved_norms, sizes=(0, 1, 2, 7),
                                moderate=2_000_000),
    "flat_block_means": Probe8(flat_block_means, _blocks, parallel=("L1",), reduction=("L2",),
                               key=keys.flat_block_means, sizes=(0, 1, 2, 7),
                               moderate=1_000_000),
}
