"""Answer keys of the eighth held-out probe (``heldout_probe8.py``): for each kernel the version an
expert would write — the flat buffer reshaped into the matrix it stores and handed to ``@`` or an
array expression, ``prange`` over independent rows with the inner loop unit-stride, the serial
loop where the computation is a true recurrence — same arguments, same effect on them. Each is
checked against the plain function by ``tests/test_offload_heldout_probe8.py``.
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange


@numba.njit
def flat_gemm(A, B, C, m, k, n):
    if m * n == 0:
        return
    if k == 0:
        C[:] = 0.0
        return
    C[:] = (A.reshape((m, k)) @ B.reshape((k, n))).ravel()


@numba.njit(parallel=True)
def flat_transpose_copy(src, dst, m, n):
    # tiles of 32 rows: each dst row is written in runs, src read row by row
    for jb in prange((n + 31) // 32):
        for i in range(m):
            for j in range(jb * 32, min(n, jb * 32 + 32)):
                dst[j * m + i] = src[i * n + j]


@numba.njit(parallel=True)
def row_base_scale(x, s, m, n):
    for i in prange(m):
        base = i * n
        si = s[i]
        for j in range(n):
            x[base + j] *= si


@numba.njit(parallel=True)
def named_index_average(A, out):
    m, n = A.shape
    for i in prange(m):
        for j in range(n):
            out[i * n + j] = 0.5 * (A[i, j] + A[i, n - 1 - j])


@numba.njit(parallel=True)
def lower_from_upper_flat(U, L, n):
    # row j of L takes column j of U's upper part: L[j, i] = U[i, j] for i <= j
    for j in prange(n):
        for i in range(j + 1):
            L[j * n + i] = U[i * n + j]


@numba.njit(parallel=True)
def leading_dimension_copy(src, ld, m, n, dst):
    for i in prange(m):
        for j in range(n):
            dst[i * n + j] = 2.0 * src[i * ld + j]


@numba.njit(parallel=True)
def padded_box_blur(img, h, w, out):
    w2 = w + 2
    for i in prange(h):
        r0, r1, r2 = i * w2, (i + 1) * w2, (i + 2) * w2
        for j in range(w):
            s = (img[r0 + j] + img[r0 + j + 1] + img[r0 + j + 2]
                 + img[r1 + j] + img[r1 + j + 1] + img[r1 + j + 2]
                 + img[r2 + j] + img[r2 + j + 1] + img[r2 + j + 2])
            out[i * w + j] = s / 9.0


@numba.njit(parallel=True)
def volume_gradient_x(v, nx, ny, nz, out):
    plane = ny * nz
    for i in prange(nx):
        for t in range(plane):
            out[i * plane + t] = v[(i + 1) * plane + t] - v[i * plane + t]


@numba.njit(parallel=True)
def flat_row_prefix(x, m, n):
    for i in prange(m):
        base = i * n
        acc = x[base] if n > 0 else 0.0
        for j in range(1, n):
            acc += x[base + j]
            x[base + j] = acc


@numba.njit
def flat_column_recurrence(x, m, n, a):
    for i in range(1, m):
        up, here = (i - 1) * n, i * n
        for j in range(n):
            x[here + j] += a * x[up + j]


@numba.njit
def overlapping_rows_accumulate(x, A):
    m, n = A.shape
    for i in range(m):
        base = i * (n - 1)
        for j in range(n):
            x[base + j] += A[i, j]


@numba.njit(parallel=True)
def interleaved_norms(pos, out):
    for i in prange(out.shape[0]):
        a, b, c = pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]
        out[i] = math.sqrt(a * a + b * b + c * c)


@numba.njit(parallel=True)
def flat_block_means(x, bs, out):
    for b in prange(out.shape[0]):
        out[b] = np.sum(x[b * bs:(b + 1) * bs]) / bs
