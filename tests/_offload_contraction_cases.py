"""Kernels for tests/test_offload_contractions.py: library-equivalent nests in several writing
styles, and near misses that must stay loops. (A module, so ``inspect`` reads their source.)"""



# -- GEMM with alpha/beta, transposes --------------------------------------------------------
def gemm_split(alpha, beta, C, A, B):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] *= beta
        for k in range(0, A.shape[1]):
            for j in range(C.shape[1]):
                C[i, j] += alpha * A[i, k] * B[k, j]


def gemm_sizes(alpha, beta, C, A, B, NI, NJ, NK):
    for i in range(NI):
        for j in range(NJ):
            C[i, j] = beta * C[i, j]
            for k in range(NK):
                C[i, j] = C[i, j] + A[i, k] * alpha * B[k, j]


def gemm_scalar_acc(alpha, beta, C, A, B):
    for i in range(len(A)):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(B.shape[0]):
                s += A[i, k] * B[k, j]
            C[i, j] = alpha * s + beta * C[i, j]


def gemm_at_b(C, A, B):
    for i in range(A.shape[1]):
        for j in range(B.shape[1]):
            for k in range(A.shape[0]):
                C[i, j] += A[k, i] * B[k, j]


def gemm_out_t(C, A, B):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[j, i] -= A[i, k] * B[k, j]


# -- GEMV pairs, transposed matvec, chained products -------------------------------------------
def gemv_pair(A, x1, x2, y1, y2):
    for i in range(len(x1)):
        for j in range(len(y1)):
            x1[i] = x1[i] + A[i, j] * y1[j]
            x2[i] += A[j, i] * y2[j]


def atax(A, x, y, tmp):
    for i in range(A.shape[0]):
        tmp[i] = 0.0
        for j in range(A.shape[1]):
            tmp[i] = tmp[i] + A[i, j] * x[j]
        for j in range(A.shape[1]):
            y[j] = y[j] + A[i, j] * tmp[i]


def two_mm(A, B, C, D, tmp, alpha, beta, NI, NJ, NK, NL):
    for i in range(0, NI):
        for j in range(NJ):
            tmp[i, j] = 0.0
            for k in range(NK):
                tmp[i, j] += alpha * A[i, k] * B[k, j]
    for i in range(NI):
        for j in range(NL):
            D[i, j] *= beta
            for k in range(NJ):
                D[i, j] += tmp[i, k] * C[k, j]


# -- rank-1, rank-2k, outer, dot, axpy, scal, sums, means -------------------------------------
def ger(A, x, y, a):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] += a * x[i] * y[j]


def outer(x, y, P):
    for i in range(len(x)):
        for j in range(len(y)):
            P[i, j] = x[i] * y[j]


def syr2k_full(C, A, B, alpha):
    n, m = A.shape
    for i in range(n):
        for j in range(n):
            for k in range(m):
                C[i, j] += alpha * A[i, k] * B[j, k] + alpha * B[i, k] * A[j, k]


def dot_plus(x, y):
    s = 0.0
    for i in range(len(x)):
        s = s + x[i] * y[i]
    return s


def axpy_sub(a, x, y):
    for i in range(x.shape[0]):
        y[i] -= x[i] * a


def scal(C, beta):
    for i in range(C.shape[0]):
        for j in range(C.shape[1]):
            C[i, j] *= beta


def colsum(A, s):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s[j] += A[i, j]


def colmean(data, mean, N):
    for j in range(data.shape[1]):
        mean[j] = 0.0
        for i in range(data.shape[0]):
            mean[j] += data[i, j]
        mean[j] /= N


# -- tensor contraction, batched, epilogue ------------------------------------------------------
def contract(A, C4, out):
    for r in range(A.shape[0]):
        for q in range(A.shape[1]):
            for p in range(C4.shape[1]):
                s = 0.0
                for t in range(C4.shape[0]):
                    s += A[r, q, t] * C4[t, p]
                out[r, q, p] = s


def batched(A, B, C):
    for b in range(A.shape[0]):
        for i in range(A.shape[1]):
            for j in range(B.shape[2]):
                for k in range(A.shape[2]):
                    C[b, i, j] += A[b, i, k] * B[b, k, j]


def gemm_relu(A, B, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            s = 0.0
            for k in range(A.shape[1]):
                s += A[i, k] * B[k, j]
            C[i, j] = max(s, 0.0) + abs(s) * 0.5


# -- near misses --------------------------------------------------------------------------------
def nm_triangular(A, B, C):
    for i in range(A.shape[0]):
        for j in range(i + 1):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def nm_triangular_from(A, B, C):
    for i in range(A.shape[0]):
        for j in range(i, A.shape[0]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def nm_offset(A, B, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1] - 1):
                C[i, j] += A[i, k + 1] * B[k, j]


def nm_indirect(A, x, y, idx):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            y[i] += A[i, idx[j]] * x[j]


def nm_same_in_out(A, C):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += C[i, k] * A[k, j]


def nm_local_view(A, B):
    C = A[:, :]
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * B[k, j]


def nm_shared_temp(A, C4, sum_):
    NR, NQ, NP = A.shape
    for r in range(NR):
        for q in range(NQ):
            for p in range(NP):
                sum_[p] = 0.0
                for s in range(NP):
                    sum_[p] += A[r, q, s] * C4[s, p]
            for p in range(NP):
                A[r, q, p] = sum_[p]


def nm_dependence_through_output(A, x, y):
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            y[i] += A[i, j] * y[j]


def nm_assign_in_reduction(A, B, C):
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            for k in range(A.shape[1]):
                C[i, j] = A[i, k] * B[k, j]


def nm_three_factors_diag(A, x):
    s = 0.0
    for i in range(A.shape[0]):
        s += A[i, i] * x[i]
    return s


def nm_step(x, y):
    s = 0.0
    for i in range(0, len(x), 2):
        s += x[i] * y[i]
    return s


def nm_acc_read_after(A, x, y):
    for i in range(A.shape[0]):
        s = 0.0
        for j in range(A.shape[1]):
            s += A[i, j] * x[j]
        y[i] = s
    return s


def nm_scalar_changes(A, x, y):
    a = 1.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            y[i] += a * A[i, j] * x[j]
            a = a * 0.5
