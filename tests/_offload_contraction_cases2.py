"""Kernels for tests/test_offload_contractions2.py (second round): scalar temporaries read in
deeper loops, shared array temporaries privatized, products of three factors, elementwise
statements and reductions with an elementwise body (means, ``sqrt``) as array expressions; and
near misses that must stay loops. (A module, so ``inspect`` reads their source.)"""

import math

import numpy as np


# -- a scalar temporary set in a loop and read in a deeper one --------------------------------
def outer_hoisted(a, x, y, P):
    for i in range(x.shape[0]):
        xi = a * x[i]
        for j in range(y.shape[0]):
            P[i, j] = xi * y[j]


def row_normalize(A, B):
    for i in range(A.shape[0]):
        s = 0.0
        for k in range(A.shape[1]):
            s = s + A[i, k]
        for j in range(A.shape[1]):
            B[i, j] = A[i, j] / s


# -- a shared array temporary, privatized per iteration, copied back -----------------------------
def doitgen(A, C4, acc):
    nr, nq, npp = A.shape
    for r in range(nr):
        for q in range(nq):
            for p in range(npp):
                acc[p] = 0.0
                for s in range(npp):
                    acc[p] += A[r, q, s] * C4[s, p]
            for p in range(npp):
                A[r, q, p] = acc[p]


def doitgen_sum_style(A, C4, tmp):
    for r in range(0, A.shape[0]):
        for q in range(0, A.shape[1]):
            for p in range(0, C4.shape[1]):
                tmp[p] = 0.0
            for s in range(0, C4.shape[0]):
                for p in range(0, C4.shape[1]):
                    tmp[p] = tmp[p] + A[r, q, s] * C4[s, p]
            for p in range(0, C4.shape[1]):
                A[r, q, p] = tmp[p]


# -- three factors -----------------------------------------------------------------------------
def scaled_product(alpha, A, B, d, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += alpha * A[i, k] * B[k, j] * d[k]


def row_scaled_product(A, B, d, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            C[i, j] = 0.0
            for k in range(A.shape[1]):
                C[i, j] = C[i, j] + d[i] * A[i, k] * B[k, j]


def bilinear(x, A, y):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += x[i] * A[i, j] * y[j]
    return s


# -- reductions with an elementwise body, means and sqrt after ---------------------------------
def zscore_np(X, Z):
    rows, cols = X.shape
    for j in range(cols):
        s = 0.0
        for i in range(rows):
            s += X[i, j]
        mu = s / rows
        v = 0.0
        for i in range(rows):
            v += (X[i, j] - mu) ** 2
        sd = np.sqrt(v / rows)
        for i in range(rows):
            Z[i, j] = (X[i, j] - mu) / sd


def column_std_math(X, mean, std):
    n = X.shape[0]
    for j in range(X.shape[1]):
        mean[j] = 0.0
        for i in range(n):
            mean[j] += X[i, j]
        mean[j] = mean[j] / n
    for j in range(X.shape[1]):
        std[j] = 0.0
        for i in range(n):
            std[j] += (X[i, j] - mean[j]) * (X[i, j] - mean[j])
        std[j] = math.sqrt(std[j] / n)


# -- near misses -----------------------------------------------------------------------------------
def nm_running_sum(A, B):
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j]
            B[i, j] = s  # read while it accumulates: a prefix sum, not one value per row


def nm_read_before_set(A, x, y):
    t = 0.0
    for i in range(A.shape[0]):
        y[i] = t  # the previous row's value
        t = 0.0
        for j in range(A.shape[1]):
            t += A[i, j] * x[j]


def nm_shared_not_reset(A, C4, acc):
    nr, nq, npp = A.shape
    for r in range(nr):
        for q in range(nq):
            for p in range(npp):
                for s in range(npp):
                    acc[p] += A[r, q, s] * C4[s, p]  # carried over (r, q): no reset
            for p in range(npp):
                A[r, q, p] = acc[p]


def nm_shared_local_view(A, C4):
    acc = A[0, 0, :]
    nr, nq, npp = A.shape
    for r in range(nr):
        for q in range(nq):
            for p in range(npp):
                acc[p] = 0.0
                for s in range(npp):
                    acc[p] += A[r, q, s] * C4[s, p]
            for p in range(npp):
                A[r, q, p] = acc[p]


def nm_inplace_matvec(A, x):
    for i in range(A.shape[0]):
        t = 0.0
        for k in range(A.shape[1]):
            t += A[i, k] * x[k]
        x[i] = t  # x[k] read by later rows: written in another iteration


def nm_inplace_product(A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            for k in range(B.shape[0]):
                B[i, j] += A[k, i] * B[k, j]


def nm_three_chain(A, B, C, D):
    for i in range(A.shape[0]):
        for m in range(C.shape[1]):
            for k in range(A.shape[1]):
                for j in range(B.shape[1]):
                    D[i, m] += A[i, k] * B[k, j] * C[j, m]


def nm_max_in_reduction(X, s):
    for j in range(X.shape[1]):
        for i in range(X.shape[0]):
            s[j] += max(X[i, j], 0.0)


def nm_index_as_value(X, s):
    for j in range(X.shape[1]):
        for i in range(X.shape[0]):
            s[j] += X[i, j] * i
