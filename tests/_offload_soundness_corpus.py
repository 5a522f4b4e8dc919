"""Small loop functions that tempt an offload analysis into a wrong ``parallel``: views and
aliases made inside the function, hidden writes and global state, wrap-around subscripts,
and aliased arguments. ``CASES`` maps a name to (function, distinct-argument maker, makers of
aliased arguments)."""

from __future__ import annotations

import numpy as np

N = 11


def _vec(n: int = N, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(n)


def _mat(n: int = 6, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).random((n, n))


def _identity(a):
    return a


# -- local views and aliases -----------------------------------------------------------------
def view_slice(a):
    b = a[1:]
    for i in range(b.shape[0]):
        b[i] = a[i] * 0.5 + 1.0


def alias_name(a):
    b = a
    for i in range(1, a.shape[0]):
        b[i] = a[i - 1] * 0.5 + 1.0


def transpose_view(A):
    B = A.T
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            A[i, j] = B[i, j] * 0.5 + 1.0


def reshape_view(A):
    flat = A.reshape(A.size)
    for i in range(A.shape[0]):
        for j in range(1, A.shape[1]):
            A[i, j] = flat[i * A.shape[1] + j - 1] * 0.5 + 1.0


def asarray_view(a):
    b = np.asarray(a)
    for i in range(1, a.shape[0]):
        a[i] = b[i - 1] * 0.5 + 1.0


def view_method(a):
    b = a.view()
    for i in range(1, a.shape[0]):
        b[i] = a[i - 1] * 0.5 + 1.0


def strided_view(a):
    b = a[::2]
    for i in range(b.shape[0] - 1):
        a[2 * i + 2] = b[i] * 0.5 + 1.0


def tuple_unpack_alias(a):
    b, c = a, a
    for i in range(1, a.shape[0]):
        b[i] = c[i - 1] * 0.5 + 1.0


def chained_alias(a):
    b = a
    c = b[:]
    for i in range(1, a.shape[0]):
        c[i] = b[i - 1] * 0.5 + 1.0


def ifexp_alias(a, flag):
    b = a if flag else np.zeros_like(a)
    for i in range(1, a.shape[0]):
        b[i] = a[i - 1] * 0.5 + 1.0


def unknown_call_alias(a):
    b = _identity(a)
    for i in range(1, a.shape[0]):
        b[i] = a[i - 1] * 0.5 + 1.0


def row_view_in_loop(A):
    for i in range(A.shape[0]):
        row = A[0]
        row[0] = row[0] * 0.5 + A[i, 1]


def list_of_same_array(a):
    t = [a, a]
    for i in range(1, a.shape[0]):
        t[0][i] = t[1][i - 1] * 0.5 + 1.0


def stored_into_container(a, box):
    box[0] = a
    b = box[0]
    for i in range(1, a.shape[0]):
        b[i] = a[i - 1] * 0.5 + 1.0


# -- wrap-around and unmodelable subscripts ---------------------------------------------------
def negative_index(a):
    for i in range(1, a.shape[0]):
        a[i] = a[-i] + 1.0


def negative_constant(a):
    for i in range(a.shape[0]):
        a[i] = a[-1] * 0.5 + 1.0


def offset_wraps_at_zero(a):
    for i in range(0, a.shape[0], 2):
        a[i] = a[i - 1] * 0.5 + 1.0


def modulo_wrap(a):
    n = a.shape[0]
    for i in range(n):
        a[i] = a[(i + 1) % n] * 0.5 + 1.0


def indirect_write(a, idx):
    for i in range(a.shape[0]):
        a[idx[i]] = a[i] * 0.5 + 1.0


def opaque_of_loop_var(a):
    for i in range(a.shape[0] - 2):
        a[int(i / 2) + 1] = a[int(i / 2)] * 0.5 + 1.0


def index_assigned_in_loop(a):
    for i in range(a.shape[0] - 1):
        k = i * i % a.shape[0]
        a[k] = a[i + 1] * 0.5 + 1.0


# -- hidden writes and global state -----------------------------------------------------------
def hidden_copyto(x, out):
    for i in range(x.shape[0]):
        np.copyto(out[0:1], x[i:i + 1])


def hidden_add_at(x, out):
    for i in range(x.shape[0]):
        np.multiply.at(out, 0, 0.5)
        np.add.at(out, 0, x[i])


def hidden_out_keyword(x, out):
    for i in range(x.shape[0]):
        np.multiply(out[0:1], 0.5, out=out[0:1])
        np.add(out[0:1], x[i], out=out[0:1])


def hidden_put(x, out):
    for i in range(x.shape[0]):
        np.put(out, 0, x[i])


def hidden_fill_diagonal(x, A):
    for i in range(x.shape[0]):
        np.fill_diagonal(A, x[i])


def global_random(x, out):
    for i in range(x.shape[0]):
        out[i] = x[i] + np.random.random()  # noqa: NPY002 (the global state is the point)


def array_sort_method(A):
    for i in range(A.shape[0]):
        A[i].sort()


def prints(x, out):
    for i in range(x.shape[0]):
        print(x[i])
        out[i] = x[i]


# -- sound parallel loops (fresh storage, distinct arguments) ----------------------------------
def fresh_copy(a):
    b = a.copy()
    for i in range(1, a.shape[0]):
        a[i] = b[i - 1] * 0.5 + 1.0


def fresh_private_array(x, out):
    for i in range(x.shape[0]):
        t = np.zeros(2)
        t[0] = x[i]
        t[1] = t[0] * 2.0
        out[i] = t[1]


def reversed_index(x, out):
    n = x.shape[0]
    for i in range(n):
        out[n - 1 - i] = x[i] * 2.0


def two_args(a, b):
    for i in range(a.shape[0]):
        a[i] = b[i] * 0.5 + 1.0


def pair_in_tuple(pair):
    for i in range(pair[0].shape[0]):
        pair[0][i] = pair[1][i] * 0.5 + 1.0


G = np.linspace(0.0, 1.0, N)


def reads_global(a):
    for i in range(a.shape[0]):
        a[i] = G[i] * 0.5 + 1.0


#: name → (function, distinct arguments, [aliased arguments, …])
CASES = {
    "view_slice": (view_slice, lambda: (_vec(),), []),
    "alias_name": (alias_name, lambda: (_vec(),), []),
    "transpose_view": (transpose_view, lambda: (_mat(),), []),
    "reshape_view": (reshape_view, lambda: (_mat(),), []),
    "asarray_view": (asarray_view, lambda: (_vec(),), []),
    "view_method": (view_method, lambda: (_vec(),), []),
    "strided_view": (strided_view, lambda: (_vec(),), []),
    "tuple_unpack_alias": (tuple_unpack_alias, lambda: (_vec(),), []),
    "chained_alias": (chained_alias, lambda: (_vec(),), []),
    "ifexp_alias": (ifexp_alias, lambda: (_vec(), True), []),
    "unknown_call_alias": (unknown_call_alias, lambda: (_vec(),), []),
    "row_view_in_loop": (row_view_in_loop, lambda: (_mat(),), []),
    "list_of_same_array": (list_of_same_array, lambda: (_vec(),), []),
    "stored_into_container": (stored_into_container, lambda: (_vec(), [None]), []),
    "negative_index": (negative_index, lambda: (_vec(),), []),
    "negative_constant": (negative_constant, lambda: (_vec(),), []),
    "offset_wraps_at_zero": (offset_wraps_at_zero, lambda: (_vec(),), []),
    "modulo_wrap": (modulo_wrap, lambda: (_vec(),), []),
    "indirect_write": (indirect_write, lambda: (_vec(), np.arange(N)[::-1].copy()), []),
    "opaque_of_loop_var": (opaque_of_loop_var, lambda: (_vec(),), []),
    "index_assigned_in_loop": (index_assigned_in_loop, lambda: (_vec(),), []),
    "hidden_copyto": (hidden_copyto, lambda: (_vec(), np.zeros(1)), []),
    "hidden_add_at": (hidden_add_at, lambda: (_vec(), np.ones(1)), []),
    "hidden_out_keyword": (hidden_out_keyword, lambda: (_vec(), np.ones(1)), []),
    "hidden_put": (hidden_put, lambda: (_vec(), np.zeros(2)), []),
    "hidden_fill_diagonal": (hidden_fill_diagonal, lambda: (_vec(), np.zeros((3, 3))), []),
    "global_random": (global_random, lambda: (_vec(), np.zeros(N)), []),
    "array_sort_method": (array_sort_method, lambda: (_mat(),), []),
    "prints": (prints, lambda: (_vec(3), np.zeros(3)), []),
    "fresh_copy": (fresh_copy, lambda: (_vec(),), []),
    "fresh_private_array": (fresh_private_array, lambda: (_vec(), np.zeros(N)), [
        lambda: (lambda x: (x, x))(_vec())]),
    "reversed_index": (reversed_index, lambda: (_vec(), np.zeros(N)), [
        lambda: (lambda x: (x, x))(_vec()),
        lambda: (lambda x: (x[:-1], x[1:]))(_vec(N + 1))]),
    "two_args": (two_args, lambda: (_vec(), _vec(seed=3)), [
        lambda: (lambda x: (x, x))(_vec()),
        lambda: (lambda x: (x[:-1], x[1:]))(_vec(N + 1)),
        lambda: (lambda x: (x[1:], x[:-1]))(_vec(N + 1))]),
    "pair_in_tuple": (pair_in_tuple, lambda: ((_vec(), _vec(seed=4)),), [
        lambda: (lambda x: ((x, x),))(_vec()),
        lambda: (lambda x: ((x[1:], x[:-1]),))(_vec(N + 1))]),
    "reads_global": (reads_global, lambda: (_vec(),), [lambda: (G,)]),
}
