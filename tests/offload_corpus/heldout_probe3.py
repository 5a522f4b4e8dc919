"""A third held-out probe of the offload search: *kinds* of computation the first two probes lack —
sparse rows (CSR ``indptr`` loops), gathers and scatters through index arrays, periodic
stencils with ``% n``, pairwise forces written to one or both particles, a 2-D convolution with
boundary ``if``s, image thresholding, escape-time iterations (``while`` with ``break``), RGB to
gray on ``(h, w, 3)``, bilinear resizing with ``int()`` casts, scans (cumulative max, running
mean, cumulative product), symmetric in-place updates (``A[i, j]``/``A[j, i]``), complex128 and
float32 data, NumPy reductions of row slices inside a loop (``np.sum(A[i])``,
``np.dot(A[i], x)``, ``np.argmax(A[i])``), slice writes ``out[i, :] = …``, early ``return``,
nested ``def``/``lambda``, ``global`` writes, forward differences in and out of place,
triangular solves, a 2-D histogram, bit manipulation, boolean masks, 3-D in-place updates and
wavefronts.

Every verdict below was decided from the code's semantics, not from what the engine says:
``parallel``/``reduction`` loops are safe to run in any order; ``serial`` loops carry a true
dependence (or write through an index array that may repeat); ``unsupported`` loops hold a
construct the analysis must refuse with a reason. ``limits`` names loops that are parallel in
truth but that the engine keeps serial, each with the reason (known limits, not bugs).

``PROBES`` maps a name to a :class:`Probe3`; ``sizes`` are the ``n`` the test calls the plan at
(``make(rng, n)`` gives arrays of about ``n`` elements per axis; 0 where the plain function
accepts empty input).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .heldout_probe2 import Probe2

#: a module-level value a kernel writes with ``global`` (must be refused)
LAST_SEEN = 0.0


@dataclass(frozen=True)
class Probe3(Probe2):
    """A :class:`Probe2` with the sizes to check and the known conservative verdicts."""

    sizes: tuple[int, ...] = (0, 1, 2, 7)
    #: loop id → why the engine keeps a truly parallel loop serial (a known limit)
    limits: dict[str, str] = field(default_factory=dict)


# -- sparse rows, gathers and scatters -------------------------------------------------------------
def csr_matvec(indptr, indices, data, x, y):
    """y = A x for A in CSR form: the row loop writes y[i] only (parallel); the inner loop runs
    from ``indptr[i]`` to ``indptr[i + 1]`` and sums into a scalar (a reduction)."""
    for i in range(len(indptr) - 1):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * x[indices[k]]
        y[i] = acc


def gather(x, idx, out):
    """out[i] = x[idx[i]]: reads through an index array, writes out[i] (parallel)."""
    for i in range(idx.shape[0]):
        out[i] = x[idx[i]]


def scatter_add(idx, v, out):
    """out[idx[i]] += v[i]: two i may hit the same element (serial in the verdicts)."""
    for i in range(len(idx)):
        out[idx[i]] += v[i]


def permute_scatter(perm, x, out):
    """out[perm[i]] = x[i]: parallel only if perm is a permutation, which nothing proves; with a
    repeated index the last write wins (serial)."""
    for i in range(x.shape[0]):
        p = perm[i]
        out[p] = x[i]


# -- periodic stencils -----------------------------------------------------------------------------
def periodic_laplacian(u, out):
    """out[i] = u[i-1] - 2 u[i] + u[i+1] with wrap-around ``% n``; u only read (parallel)."""
    n = u.shape[0]
    for i in range(n):
        out[i] = u[(i - 1) % n] - 2.0 * u[i] + u[(i + 1) % n]


def periodic_smooth_inplace(u):
    """u[i] = (u[i-1] + u[i+1]) / 2 in place with wrap-around: a Gauss–Seidel sweep (serial)."""
    n = len(u)
    for i in range(n):
        u[i] = 0.5 * (u[(i - 1) % n] + u[(i + 1) % n])


# -- pairwise forces -------------------------------------------------------------------------------
def pair_forces_symmetric(pos, f):
    """Newton's third law: each pair (i, j > i) adds to f[i] and subtracts from f[j]. The i loop
    updates elements other iterations update too (serial); within one i, f[i] accumulates
    over j (an element reduction) and each f[j] is touched once."""
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            d = pos[j] - pos[i]
            w = d / (abs(d) ** 3 + 0.01)
            f[i] += w
            f[j] -= w


def pair_forces_onesided(pos, f):
    """Each i sums over all j != i into a scalar and writes f[i] (outer parallel, inner a
    reduction)."""
    n = pos.shape[0]
    for i in range(n):
        fi = 0.0
        for j in range(n):
            if j != i:
                d = pos[j] - pos[i]
                fi += d / (abs(d) ** 3 + 0.01)
        f[i] = fi


# -- images ----------------------------------------------------------------------------------------
def conv2d_zero_pad(img, ker, out):
    """2-D convolution, zero padding by boundary ``if``s; 4 nested loops (rows and columns
    parallel, the kernel loops sum into a scalar)."""
    h, w = img.shape
    kh, kw = ker.shape
    rh = kh // 2
    rw = kw // 2
    for i in range(h):
        for j in range(w):
            acc = 0.0
            for a in range(kh):
                for b in range(kw):
                    ii = i + a - rh
                    jj = j + b - rw
                    if ii >= 0 and ii < h and jj >= 0 and jj < w:
                        acc += img[ii, jj] * ker[a, b]
            out[i, j] = acc


def threshold_classes(img, lo, hi, out):
    """Three classes with if / elif / else (parallel)."""
    for i in range(img.shape[0]):
        for j in range(img.shape[1]):
            v = img[i, j]
            if v < lo:
                out[i, j] = 0
            elif v < hi:
                out[i, j] = 1
            else:
                out[i, j] = 2


def clip_inplace(img, lo, hi):
    """Clipping in place with if / elif (parallel)."""
    for i in range(img.shape[0]):
        for j in range(img.shape[1]):
            if img[i, j] < lo:
                img[i, j] = lo
            elif img[i, j] > hi:
                img[i, j] = hi


def escape_time(cre, cim, max_iter, counts):
    """Mandelbrot-style escape time: an inner ``while`` with ``break`` per pixel; each pixel's
    iteration is its own (both loops parallel)."""
    for i in range(cre.shape[0]):
        for j in range(cim.shape[0]):
            zr = 0.0
            zi = 0.0
            k = 0
            while k < max_iter:
                zr, zi = zr * zr - zi * zi + cre[i], 2.0 * zr * zi + cim[j]
                if zr * zr + zi * zi > 4.0:
                    break
                k += 1
            counts[i, j] = k


def insertion_sort(a):
    """Insertion sort in place: an inner ``while`` shifts earlier entries (serial)."""
    for i in range(1, a.shape[0]):
        v = a[i]
        j = i - 1
        while j >= 0 and a[j] > v:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = v


def rgb_to_gray(rgb):
    """Luma of an (h, w, 3) image into a new (h, w) array (parallel)."""
    h, w = rgb.shape[0], rgb.shape[1]
    gray = np.empty((h, w))
    for i in range(h):
        for j in range(w):
            gray[i, j] = 0.299 * rgb[i, j, 0] + 0.587 * rgb[i, j, 1] + 0.114 * rgb[i, j, 2]
    return gray


def bilinear_resize(img, out):
    """Bilinear interpolation from img to out's shape with ``int()`` casts (parallel)."""
    h, w = img.shape
    oh, ow = out.shape
    sy = (h - 1) / max(oh - 1, 1)
    sx = (w - 1) / max(ow - 1, 1)
    for i in range(oh):
        for j in range(ow):
            y = i * sy
            x = j * sx
            y0 = int(y)
            x0 = int(x)
            y1 = min(y0 + 1, h - 1)
            x1 = min(x0 + 1, w - 1)
            fy = y - y0
            fx = x - x0
            top = img[y0, x0] * (1 - fx) + img[y0, x1] * fx
            bot = img[y1, x0] * (1 - fx) + img[y1, x1] * fx
            out[i, j] = top * (1 - fy) + bot * fy


# -- scans -----------------------------------------------------------------------------------------
def cumulative_max(x, out):
    """out[i] = max(x[:i+1]): the running maximum is stored every step (a scan: serial)."""
    m = -np.inf
    for i in range(x.shape[0]):
        m = max(m, x[i])
        out[i] = m


def running_mean(x, out):
    """out[i] = mean(x[:i+1]) with a carried sum (serial)."""
    s = 0.0
    for i in range(len(x)):
        s += x[i]
        out[i] = s / (i + 1)


def cumulative_product_inplace(x):
    """x[i] *= x[i-1] (serial)."""
    for i in range(1, x.shape[0]):
        x[i] *= x[i - 1]


# -- symmetric in-place updates --------------------------------------------------------------------
def symmetrize_upper(A):
    """A[i, j] = A[j, i] = (A[i, j] + A[j, i]) / 2 over j > i: every pair once (parallel)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            t = 0.5 * (A[i, j] + A[j, i])
            A[i, j] = t
            A[j, i] = t


def transpose_add_full(A):
    """A[i, j] += A[j, i] over the whole square: A[j, i] was (or will be) updated by row j
    (the row loop is serial); within a row, A[i, j] and A[j, i] meet only at j = i, one
    iteration (the column loop is parallel)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            A[i, j] = A[i, j] + A[j, i]


def mirror_lower_to_upper(A):
    """A[j, i] = A[i, j] for j < i: reads the strict lower triangle, writes the upper
    (parallel)."""
    for i in range(A.shape[0]):
        for j in range(i):
            A[j, i] = A[i, j]


# -- complex and float32 data ----------------------------------------------------------------------
def complex_rotate(z, theta, out):
    """out[i] = z[i] e^{iθ} on complex128 (parallel)."""
    c = complex(math.cos(theta), math.sin(theta))
    for i in range(z.shape[0]):
        out[i] = z[i] * c


def complex_energy(z):
    """Σ |z|² of complex128 data through .real/.imag, returned (a reduction)."""
    s = 0.0
    for i in range(len(z)):
        s += z[i].real * z[i].real + z[i].imag * z[i].imag
    return s


def float32_weighted_sum(x, w):
    """Σ w x on float32 arrays from an ``np.float32`` start (a reduction)."""
    s = np.float32(0.0)
    for i in range(x.shape[0]):
        s += w[i] * x[i]
    return s


# -- NumPy calls on row slices, slice writes -------------------------------------------------------
def row_sum_normalize(A, out):
    """Each row divided by its sum ``np.sum(A[i])`` (parallel rows and columns)."""
    for i in range(A.shape[0]):
        s = np.sum(A[i])
        for j in range(A.shape[1]):
            out[i, j] = A[i, j] / s


def rowwise_dot(A, x, y):
    """y[i] = np.dot(A[i], x) (parallel)."""
    for i in range(A.shape[0]):
        y[i] = np.dot(A[i], x)


def row_slice_write(A, out):
    """out[i, :] = 2 A[i, :] + 1: a slice write per row (parallel)."""
    for i in range(A.shape[0]):
        out[i, :] = 2.0 * A[i, :] + 1.0


def row_argmax(A, idx):
    """idx[i] = np.argmax(A[i]) (parallel)."""
    for i in range(A.shape[0]):
        idx[i] = np.argmax(A[i])


def row_shift_down(A):
    """A[i, :] = A[i - 1, :] for i from 1: each row copies the row above after it was
    overwritten (serial)."""
    for i in range(1, A.shape[0]):
        A[i, :] = A[i - 1, :]


# -- refused constructs ----------------------------------------------------------------------------
def find_index_return(x, target):
    """The first index where x equals target, with ``return`` in the loop (unsupported)."""
    for i in range(x.shape[0]):
        if x[i] == target:
            return i
    return -1


def nested_def_map(x, out):
    """A nested ``def`` called in the loop (unsupported)."""

    def cube(v):
        return v * v * v

    for i in range(x.shape[0]):
        out[i] = cube(x[i])


def lambda_map(x, out):
    """A ``lambda`` bound to a name and called in the loop (unsupported)."""
    sq = lambda v: v * v  # noqa: E731 (written as scientists write it)
    for i in range(len(x)):
        out[i] = sq(x[i]) + 1.0


def global_last(x, out):
    """Writes a module global in the loop (unsupported: numba cannot write globals)."""
    global LAST_SEEN
    for i in range(x.shape[0]):
        out[i] = 2.0 * x[i]
        LAST_SEEN = out[i]
    return LAST_SEEN


# -- differences, triangular solves ----------------------------------------------------------------
def forward_diff(x, out):
    """out[i] = x[i+1] - x[i] over ``range(len(x) - 1)`` (parallel)."""
    for i in range(len(x) - 1):
        out[i] = x[i + 1] - x[i]


def forward_diff_inplace(x):
    """x[i] = x[i+1] - x[i] in place: iteration i reads what iteration i+1 overwrites
    (anti-dependence: serial)."""
    for i in range(len(x) - 1):
        x[i] = x[i + 1] - x[i]


def lower_solve(L, b, x):
    """Forward substitution L x = b (row loop serial, the inner sum a reduction)."""
    n = L.shape[0]
    for i in range(n):
        s = b[i]
        for j in range(i):
            s -= L[i, j] * x[j]
        x[i] = s / L[i, i]


def upper_solve_inplace(U, b):
    """Back substitution U x = b overwriting b, walked from the end (serial)."""
    n = U.shape[0]
    for i in range(n - 1, -1, -1):
        for j in range(i + 1, n):
            b[i] = b[i] - U[i, j] * b[j]
        b[i] = b[i] / U[i, i]


def histogram_2d(x, y, nbins):
    """Counts of points in [0, 1)² on an nbins × nbins grid (indirect updates: serial)."""
    H = np.zeros((nbins, nbins), dtype=np.int64)
    for k in range(x.shape[0]):
        i = int(x[k] * nbins)
        j = int(y[k] * nbins)
        H[i, j] += 1
    return H


# -- integers and masks ----------------------------------------------------------------------------
def unpack_nibbles(packed, lo, hi):
    """Low and high 4 bits of each uint8 with ``&`` and ``>>`` (parallel)."""
    for i in range(packed.shape[0]):
        lo[i] = packed[i] & 15
        hi[i] = (packed[i] >> 4) & 15


def xor_checksum(words):
    """XOR of all int64 words (``^=``): a reduction in truth; kept serial when the engine does
    not know the operator."""
    h = 0
    for i in range(words.shape[0]):
        h ^= words[i]
    return h


def masked_fill(x, mask, value, out):
    """out[i] = value where mask[i] else x[i] on a boolean mask (parallel)."""
    for i in range(x.shape[0]):
        if mask[i]:
            out[i] = value
        else:
            out[i] = x[i]


def masked_count_sum(x, mask):
    """(count, sum) of x where mask, two reductions."""
    count = 0
    total = 0.0
    for i in range(len(x)):
        if mask[i]:
            count += 1
            total += x[i]
    return count, total


def squares_empty_like(x):
    """Squares into ``np.empty_like(x)``, returned (parallel)."""
    sq = np.empty_like(x)
    for i in range(x.shape[0]):
        sq[i] = x[i] * x[i]
    return sq


# -- 3-D and wavefronts ----------------------------------------------------------------------------
def axpy_3d_inplace(V, W, a):
    """V += a W on (l, m, n) arrays with ``+=`` (parallel in all three loops)."""
    for i in range(V.shape[0]):
        for j in range(V.shape[1]):
            for k in range(V.shape[2]):
                V[i, j, k] += a * W[i, j, k]


def smooth_z_3d_inplace(V):
    """V[i, j, k] += V[i, j, k - 1]: i and j parallel, the k loop a recurrence (serial)."""
    for i in range(V.shape[0]):
        for j in range(V.shape[1]):
            for k in range(1, V.shape[2]):
                V[i, j, k] += V[i, j, k - 1]


def wavefront_sum(A):
    """A[i, j] = A[i-1, j] + A[i, j-1] (both loops carry a dependence: serial)."""
    for i in range(1, A.shape[0]):
        for j in range(1, A.shape[1]):
            A[i, j] = A[i - 1, j] + A[i, j - 1]


def last_value_kept(x, out):
    """Each out[i] independent, but ``last`` — read after the loop — keeps the final
    iteration's value (lastprivate): parallel in truth, kept serial."""
    last = 0.0
    for i in range(x.shape[0]):
        out[i] = x[i] + 1.0
        last = out[i]
    return last


# -- whole-array reads, carried filters ------------------------------------------------------------
def center_inplace(x):
    """x[i] -= np.mean(x) in place: each mean sees the entries already centred (serial; the
    whole-array read is a dependence no subscript shows)."""
    for i in range(x.shape[0]):
        x[i] = x[i] - np.mean(x)


def center_into(x, out):
    """out[i] = x[i] - np.mean(x): x only read (parallel)."""
    for i in range(x.shape[0]):
        out[i] = x[i] - np.mean(x)


def ema_filter(x, alpha, out):
    """Exponential moving average s = α x[i] + (1 - α) s, stored each step (serial)."""
    s = 0.0
    for i in range(len(x)):
        s = alpha * x[i] + (1.0 - alpha) * s
        out[i] = s


def hold_last_valid(x, out):
    """Sample and hold: ``t`` changes only where x > 0.5, so out[i] may read the value of an
    earlier iteration (serial)."""
    t = 0.0
    for i in range(x.shape[0]):
        if x[i] > 0.5:
            t = x[i]
        out[i] = t


def add_first_entry(x):
    """x[i] += x[0] for i from 1: x[0] is never written in the loop (parallel)."""
    for i in range(1, x.shape[0]):
        x[i] += x[0]


def column_sums_by_rows(A):
    """Column sums with a whole-row accumulator ``acc = acc + A[i]`` on an ``np.zeros`` array:
    a reduction in truth, kept serial (numba's parallel array reduction of this form is
    wrong)."""
    acc = np.zeros(A.shape[1])
    for i in range(A.shape[0]):
        acc = acc + A[i]
    return acc


# -- argument makers -------------------------------------------------------------------------------
def _csr(g, n):
    rows = n
    cols = n + 2
    nnz_row = g.integers(0, 4, rows)
    indptr = np.zeros(rows + 1, dtype=np.int64)
    indptr[1:] = np.cumsum(nnz_row)
    nnz = int(indptr[-1])
    indices = g.integers(0, cols, nnz).astype(np.int64)
    return (indptr, indices, g.random(nnz), g.random(cols), np.zeros(rows))


def _dup_idx(g, n):
    m = 4 * n
    return (g.integers(0, max(n, 1), m).astype(np.int64), g.random(m), np.zeros(max(n, 1)))


def _perm_dups(g, n):
    m = 4 * n
    perm = g.integers(0, max(m, 1), m).astype(np.int64)  # repeats on purpose
    return (perm, g.random(m), np.zeros(max(m, 1)))


def _gather(g, n):
    m = 4 * n
    return (g.random(m + 1), g.integers(0, m + 1, m).astype(np.int64), np.zeros(m))


def _img(g, n):
    return (g.random((n, n + 2)), g.random((3, 3)) - 0.3, np.zeros((n, n + 2)))


def _escape(g, n):
    return (np.linspace(-2.0, 0.5, n), np.linspace(-1.2, 1.2, n + 1), 30,
            np.zeros((n, n + 1), dtype=np.int64))


def _lower(g, n):
    L = np.tril(g.random((n, n))) + n * np.eye(n)
    return (L, g.random(n), np.zeros(n))


def _upper(g, n):
    return (np.triu(g.random((n, n))) + n * np.eye(n), g.random(n))


def _hist2d(g, n):
    return (g.random(8 * n), g.random(8 * n), 4)


def _bits(g, n):
    m = 8 * n
    return (g.integers(0, 256, m).astype(np.uint8), np.zeros(m, np.uint8), np.zeros(m, np.uint8))


def _mask(g, n):
    m = 8 * n
    return (g.random(m), g.random(m) > 0.5)


def _complex(g, n):
    m = 8 * n
    return g.random(m) + 1j * g.random(m)


def _pos_rows(g, n):
    return (g.random((n, n + 1)) + 0.1,)


PROBES: dict[str, Probe3] = {
    "csr_matvec": Probe3(csr_matvec, _csr, parallel=("L1",), reduction=("L2",)),
    "gather": Probe3(gather, _gather, parallel=("L1",)),
    "scatter_add": Probe3(scatter_add, _dup_idx, serial=("L1",)),
    "permute_scatter": Probe3(permute_scatter, _perm_dups, serial=("L1",)),
    "periodic_laplacian": Probe3(periodic_laplacian,
                                 lambda g, n: (g.random(4 * n), np.zeros(4 * n)),
                                 parallel=("L1",)),
    "periodic_smooth_inplace": Probe3(periodic_smooth_inplace, lambda g, n: (g.random(4 * n),),
                                      serial=("L1",)),
    "pair_forces_symmetric": Probe3(pair_forces_symmetric,
                                    lambda g, n: (np.sort(g.random(4 * n)) + np.arange(4 * n),
                                                  np.zeros(4 * n)),
                                    serial=("L1",),
                                    limits={"L2": "f[i] += w over j is an array-element "
                                                  "reduction: sequential in the verdicts"}),
    "pair_forces_onesided": Probe3(pair_forces_onesided,
                                   lambda g, n: (g.random(4 * n) + np.arange(4 * n),
                                                 np.zeros(4 * n)),
                                   parallel=("L1",), reduction=("L2",)),
    "conv2d_zero_pad": Probe3(conv2d_zero_pad, _img, parallel=("L1", "L2"),
                              reduction=("L3", "L4")),
    "threshold_classes": Probe3(threshold_classes,
                                lambda g, n: (g.random((n, n + 1)), 0.3, 0.7,
                                              np.zeros((n, n + 1), dtype=np.int32)),
                                parallel=("L1", "L2")),
    "clip_inplace": Probe3(clip_inplace, lambda g, n: (g.random((n + 1, n)), 0.2, 0.8),
                           parallel=("L1", "L2")),
    "escape_time": Probe3(escape_time, _escape, parallel=("L1", "L2")),
    "insertion_sort": Probe3(insertion_sort, lambda g, n: (g.random(4 * n),), serial=("L1",)),
    "rgb_to_gray": Probe3(rgb_to_gray, lambda g, n: (g.random((n, n + 1, 3)),),
                          parallel=("L1", "L2")),
    "bilinear_resize": Probe3(bilinear_resize,
                              lambda g, n: (g.random((n + 1, n + 2)),
                                            np.zeros((2 * n, 2 * n + 1))),
                              parallel=("L1", "L2"), sizes=(1, 2, 7)),
    "cumulative_max": Probe3(cumulative_max, lambda g, n: (g.random(4 * n), np.zeros(4 * n)),
                             serial=("L1",)),
    "running_mean": Probe3(running_mean, lambda g, n: (g.random(4 * n), np.zeros(4 * n)),
                           serial=("L1",)),
    "cumulative_product_inplace": Probe3(cumulative_product_inplace,
                                         lambda g, n: (g.random(4 * n) + 0.5,), serial=("L1",)),
    "symmetrize_upper": Probe3(symmetrize_upper, lambda g, n: (g.random((n, n)),),
                               parallel=("L1", "L2")),
    "transpose_add_full": Probe3(transpose_add_full, lambda g, n: (g.random((n, n)),),
                                 serial=("L1",), parallel=("L2",)),
    "mirror_lower_to_upper": Probe3(mirror_lower_to_upper, lambda g, n: (g.random((n, n)),),
                                    parallel=("L1", "L2")),
    "complex_rotate": Probe3(complex_rotate,
                             lambda g, n: (_complex(g, n), 0.7,
                                           np.zeros(8 * n, dtype=np.complex128)),
                             parallel=("L1",)),
    "complex_energy": Probe3(complex_energy, lambda g, n: (_complex(g, n),), reduction=("L1",)),
    "float32_weighted_sum": Probe3(float32_weighted_sum,
                                   lambda g, n: (g.random(8 * n).astype(np.float32),
                                                 g.random(8 * n).astype(np.float32)),
                                   reduction=("L1",)),
    "row_sum_normalize": Probe3(row_sum_normalize,
                            lambda g, n: (g.random((n, n + 3)) + 0.1, np.zeros((n, n + 3))),
                            parallel=("L1", "L2")),
    "rowwise_dot": Probe3(rowwise_dot,
                          lambda g, n: (g.random((n, n + 3)), g.random(n + 3), np.zeros(n)),
                          parallel=("L1",)),
    "row_slice_write": Probe3(row_slice_write,
                              lambda g, n: (g.random((n, n + 3)), np.zeros((n, n + 3))),
                              parallel=("L1",)),
    "row_argmax": Probe3(row_argmax,
                         lambda g, n: (np.floor(g.random((n, n + 3)) * 4),
                                       np.zeros(n, dtype=np.int64)),
                         parallel=("L1",)),
    "row_shift_down": Probe3(row_shift_down, _pos_rows, serial=("L1",)),
    "find_index_return": Probe3(find_index_return,
                                lambda g, n: (np.floor(g.random(8 * n) * 5), 3.0),
                                unsupported=("L1",)),
    "nested_def_map": Probe3(nested_def_map, lambda g, n: (g.random(8 * n), np.zeros(8 * n)),
                             unsupported=("L1",)),
    "lambda_map": Probe3(lambda_map, lambda g, n: (g.random(8 * n), np.zeros(8 * n)),
                         unsupported=("L1",)),
    "global_last": Probe3(global_last, lambda g, n: (g.random(8 * n), np.zeros(8 * n)),
                          unsupported=("L1",)),
    "forward_diff": Probe3(forward_diff, lambda g, n: (g.random(8 * n), np.zeros(8 * n)),
                           parallel=("L1",)),
    "forward_diff_inplace": Probe3(forward_diff_inplace, lambda g, n: (g.random(8 * n),),
                                   serial=("L1",)),
    "lower_solve": Probe3(lower_solve, _lower, serial=("L1",), reduction=("L2",)),
    "upper_solve_inplace": Probe3(upper_solve_inplace, _upper, serial=("L1",),
                                  limits={"L2": "b[i] -= … over j is an array-element "
                                                "reduction: sequential in the verdicts"}),
    "histogram_2d": Probe3(histogram_2d, _hist2d, serial=("L1",)),
    "unpack_nibbles": Probe3(unpack_nibbles, _bits, parallel=("L1",)),
    "xor_checksum": Probe3(xor_checksum,
                           lambda g, n: (g.integers(0, 2**40, 8 * n).astype(np.int64),),
                           limits={"L1": "^= is no reduction operator (numba's prange has none "
                                         "for it)"}),
    "masked_fill": Probe3(masked_fill,
                          lambda g, n: (*_mask(g, n), -1.0, np.zeros(8 * n)),
                          limits={"L1": "nothing in the function says out is an array: "
                                        "out[i] = value may store a reference to value in a "
                                        "list (search, which sees the arrays, lifts it)"}),
    "masked_count_sum": Probe3(masked_count_sum, _mask, reduction=("L1",)),
    "squares_empty_like": Probe3(squares_empty_like, lambda g, n: (g.random(8 * n),),
                                 parallel=("L1",)),
    "axpy_3d_inplace": Probe3(axpy_3d_inplace,
                              lambda g, n: (g.random((n, n + 1, 3)), g.random((n, n + 1, 3)),
                                            0.5),
                              parallel=("L1", "L2", "L3")),
    "smooth_z_3d_inplace": Probe3(smooth_z_3d_inplace, lambda g, n: (g.random((n, 3, n + 2)),),
                                  parallel=("L1", "L2"), serial=("L3",)),
    "wavefront_sum": Probe3(wavefront_sum, lambda g, n: (g.random((n + 1, n + 2)),),
                            serial=("L1", "L2")),
    "center_inplace": Probe3(center_inplace, lambda g, n: (g.random(4 * n),), serial=("L1",)),
    "center_into": Probe3(center_into, lambda g, n: (g.random(4 * n), np.zeros(4 * n)),
                          parallel=("L1",)),
    "ema_filter": Probe3(ema_filter, lambda g, n: (g.random(4 * n), 0.3, np.zeros(4 * n)),
                         serial=("L1",)),
    "hold_last_valid": Probe3(hold_last_valid, lambda g, n: (g.random(4 * n), np.zeros(4 * n)),
                              serial=("L1",)),
    "add_first_entry": Probe3(add_first_entry, lambda g, n: (g.random(4 * n),),
                              parallel=("L1",)),
    "column_sums_by_rows": Probe3(column_sums_by_rows, lambda g, n: (g.random((4 * n, 3)),),
                                  limits={"L1": "an array accumulator is no parallel "
                                                "reduction"}),
    "last_value_kept": Probe3(last_value_kept, lambda g, n: (g.random(8 * n), np.zeros(8 * n)),
                              limits={"L1": "a scalar read after the loop is not lastprivate"}),
}
