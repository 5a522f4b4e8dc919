"""Kernels for tests/test_offload_gram.py (module-level: the analysis reads their source)."""


def cov_scalar(X, cov):
    n = X.shape[0]
    for a in range(X.shape[1]):
        for b in range(a, X.shape[1]):
            c = 0.0
            for i in range(n):
                c += X[i, a] * X[i, b]
            c = c / (n - 1.0)
            cov[a, b] = c
            cov[b, a] = c


def corr_array_acc(X, corr, m):
    for a in range(m - 1):
        corr[a, a] = 1.0
        for b in range(a + 1, m):
            corr[a, b] = 0.0
            for i in range(X.shape[0]):
                corr[a, b] += X[i, a] * X[i, b]
            corr[b, a] = corr[a, b]


def cross_plus_form(X, Y, C, q):
    for a in range(2, X.shape[1]):
        for b in range(a + 1, X.shape[1]):
            s = 0.0
            for i in range(1, X.shape[0]):
                s = s + X[i, a] * Y[i, b]
            s *= q
            C[b, a] = s
            C[a, b] = s


# -- near misses: stay loops -------------------------------------------------------------------
def nm_mirror_differs(X, C):
    for a in range(X.shape[1]):
        for b in range(a, X.shape[1]):
            c = 0.0
            for i in range(X.shape[0]):
                c += X[i, a] * X[i, b]
            C[a, b] = c
            C[b, a] = 2.0 * c


def nm_scale_reads_array(X, C, w):
    for a in range(X.shape[1]):
        for b in range(a, X.shape[1]):
            c = 0.0
            for i in range(X.shape[0]):
                c += X[i, a] * X[i, b]
            c = c / w[a]
            C[a, b] = c
            C[b, a] = c


def nm_offset_two(X, C):
    for a in range(X.shape[1]):
        for b in range(a + 2, X.shape[1]):
            c = 0.0
            for i in range(X.shape[0]):
                c += X[i, a] * X[i, b]
            C[a, b] = c
            C[b, a] = c


def nm_int_init(X, C):
    for a in range(X.shape[1]):
        for b in range(a, X.shape[1]):
            c = 0
            for i in range(X.shape[0]):
                c += X[i, a] * X[i, b]
            C[a, b] = c
            C[b, a] = c


def nm_output_is_operand(X):
    for a in range(X.shape[1]):
        for b in range(a, X.shape[1]):
            c = 0.0
            for i in range(X.shape[0]):
                c += X[i, a] * X[i, b]
            X[a, b] = c
            X[b, a] = c


def nm_swapped_operands(X, C):
    for a in range(X.shape[1]):
        for b in range(a, X.shape[1]):
            c = 0.0
            for i in range(X.shape[0]):
                c += X[a, i] * X[i, b]
            C[a, b] = c
            C[b, a] = c


def nm_live_temp(X, C):
    c = 0.0
    for a in range(X.shape[1]):
        for b in range(a, X.shape[1]):
            c = 0.0
            for i in range(X.shape[0]):
                c += X[i, a] * X[i, b]
            C[a, b] = c
            C[b, a] = c
    return c
