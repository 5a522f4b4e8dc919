"""Kernels for tests/test_offload_triangular.py: triangular bounds (``range(i + 1)``,
``range(i)``, ``range(i, n)``, ``range(i + 1, n)``) in GEMM-like, in-place triangular and
matvec shapes, and near misses that must stay loops. (A module, so ``inspect`` reads them.)"""


# -- GEMM-like: symmetric rank-k / rank-2k updates of one triangle -----------------------------
def syrk_lower(alpha, beta, C, A):
    n = C.shape[0]
    for i in range(n):
        for j in range(i + 1):
            C[i, j] *= beta
        for k in range(A.shape[1]):
            for j in range(i + 1):
                C[i, j] += alpha * A[i, k] * A[j, k]


def syr2k_upper(alpha, beta, C, A, B):
    for i in range(C.shape[0]):
        for j in range(i, C.shape[1]):
            C[i, j] = C[i, j] * beta
            for k in range(A.shape[1]):
                C[i, j] = C[i, j] + alpha * A[i, k] * B[j, k] + alpha * B[i, k] * A[j, k]


def strict_lower_product(C, A, B):
    for i in range(C.shape[0]):
        for j in range(i):
            acc = 0.0
            for k in range(A.shape[1]):
                acc += A[i, k] * B[k, j]
            C[i, j] = acc


def symm_lower(alpha, beta, C, A, B):
    n = A.shape[0]
    for i in range(n):
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(i + 1):
                acc += A[i, k] * B[k, j]
            for k in range(i + 1, n):
                acc += A[k, i] * B[k, j]
            C[i, j] = beta * C[i, j] + alpha * acc


# -- in place: rows read are never the row written ----------------------------------------------
def trmm_inplace(alpha, A, B):
    n = B.shape[0]
    for i in range(n):
        for j in range(B.shape[1]):
            for k in range(i + 1, n):
                B[i, j] += A[k, i] * B[k, j]
            B[i, j] = alpha * B[i, j]


def forward_substitution(L, x):
    """Unit lower-triangular solve in place: row i reads the rows solved before it."""
    for i in range(x.shape[0]):
        for j in range(i):
            x[i] -= L[i, j] * x[j]


# -- matvec shapes ----------------------------------------------------------------------------
def trmv_lower(L, x, y):
    for i in range(L.shape[0]):
        for j in range(i + 1):
            y[i] += L[i, j] * x[j]


def trmv_upper_t(U, x, y):
    for i in range(U.shape[0]):
        for j in range(i + 1, U.shape[1]):
            y[i] = y[i] + U[j, i] * x[j]


# -- near misses --------------------------------------------------------------------------------
def nm_reads_written_row(A, B):
    """k runs over i itself: row i reads its own, partly updated, elements."""
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            for k in range(i, B.shape[0]):
                B[i, j] += A[i, k] * B[k, j]


def nm_reads_written_row_below(A, B):
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            for k in range(i + 1):
                B[i, j] += A[i, k] * B[k, j]


def nm_reads_written_column(C):
    """Row i of C updated from column i of C: C[k, i] with k > i is another row, but row
    k's column i is written by a later iteration, and C[i, k] here is the same row."""
    for i in range(C.shape[0]):
        for k in range(i + 1, C.shape[0]):
            C[i, k] += C[k, i]
            C[k, i] = 0.0


def nm_two_variable_bounds(A, C):
    for i in range(C.shape[0]):
        for j in range(i + 1):
            for k in range(j + 1):
                C[i, j] += A[i, k] * A[j, k]


def nm_step(A, x, y):
    for i in range(A.shape[0]):
        for j in range(i + 1, A.shape[1], 2):
            y[i] += A[i, j] * x[j]


def nm_negative_offset(A, x, y):
    for i in range(A.shape[0]):
        for j in range(i - 1):
            y[i] += A[i, j] * x[j]


def nm_scaled_bound(A, x, y):
    for i in range(A.shape[0]):
        for j in range(2 * i):
            y[i] += A[i, j] * x[j]


def nm_view_of_output(A, C):
    V = C.T  # a view: A @ V writes what it reads
    for i in range(C.shape[0]):
        for j in range(i + 1):
            for k in range(A.shape[1]):
                C[i, j] += A[i, k] * V[j, k]


def nm_bound_from_row_start(A, x, y, s):
    for i in range(s, A.shape[0]):  # a row start that may be negative
        for j in range(i + 1):
            y[i] += A[i, j] * x[j]


# -- a transposed pair: the second term is the first with i and j swapped ----------------------
def syr2k_lower(alpha, C, A, B):
    for i in range(C.shape[0]):
        for j in range(i + 1):
            for k in range(A.shape[1]):
                C[i, j] += A[j, k] * alpha * B[i, k] + alpha * B[j, k] * A[i, k]


def not_a_pair_lower(alpha, C, A, B):
    """Two terms that are not each other's transpose (A with A, B with A)."""
    for i in range(C.shape[0]):
        for j in range(i + 1):
            for k in range(A.shape[1]):
                C[i, j] += A[j, k] * alpha * A[i, k] + alpha * B[j, k] * A[i, k]


# -- a symmetric operand read from one triangle, the second range cut at an argument ----------
def symm_lower_cut(C, A, B, m):
    """k < i + 1 from A's row i, then i + 1 <= k < m from A's column i: the mirrored matrix
    has columns [0, m), exact only when every row's first range stays below m."""
    for i in range(A.shape[0]):
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(i + 1):
                acc += A[i, k] * B[k, j]
            for k in range(i + 1, m):
                acc += A[k, i] * B[k, j]
            C[i, j] = acc


def not_mirrored(C, A, D, B):
    """The second range reads another array's column: no mirror, panels with a split."""
    n = A.shape[0]
    for i in range(n):
        for j in range(B.shape[1]):
            acc = 0.0
            for k in range(i + 1):
                acc += A[i, k] * B[k, j]
            for k in range(i + 1, n):
                acc += D[k, i] * B[k, j]
            C[i, j] = acc


def syr2k_upper_n(alpha, C, A, B):
    """The transposed pair over the upper triangle, up to the last row."""
    n = C.shape[0]
    for i in range(n):
        for j in range(i, n):
            for k in range(A.shape[1]):
                C[i, j] += alpha * A[i, k] * B[j, k] + alpha * B[i, k] * A[j, k]
