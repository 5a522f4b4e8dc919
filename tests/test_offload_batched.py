"""Leading-index products (analysis/batched.py): a contraction whose output's leading index
leads one factor only runs as a loop of 2-D products written into the output slices; equal to
the loops in the plain NumPy form and the numba variant; near misses keep their old path."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload.analysis.parhelp import install
from hetlab.offload.runtime.measure import copy_args, outputs_of

R = np.random.default_rng(17)


def _m(*shape):
    return R.random(shape)


# -- kernels ------------------------------------------------------------------------------------
def mode2(X, M, Y):
    na = X.shape[0]
    nl = X.shape[1]
    nc = X.shape[2]
    nb = M.shape[0]
    for a in range(na):
        for b in range(nb):
            for c in range(nc):
                t = 0.0
                for l in range(nl):  # noqa: E741
                    t += M[b, l] * X[a, l, c]
                Y[a, b, c] = t


def mode2_sub(X, M, Y, n):
    for a in range(1, n):
        for b in range(1, M.shape[0]):
            for c in range(X.shape[2]):
                for l in range(X.shape[1]):  # noqa: E741
                    Y[a, b, c] += 0.5 * M[b, l] * X[a, l, c]


def mode2_mt(X, Mt, Y):  # the matrix read transposed: Mt is (nl, nb)
    for a in range(X.shape[0]):
        for b in range(Mt.shape[1]):
            for c in range(X.shape[2]):
                s = 0.0
                for l in range(X.shape[1]):  # noqa: E741
                    s += X[a, l, c] * Mt[l, b]
                Y[a, b, c] = s


def mode3_xt(X, M, Y):  # Y[a, c, b] = sum_l X[a, l, b] M[c, l]: the slice read transposed
    for a in range(X.shape[0]):
        for c in range(M.shape[0]):
            for b in range(X.shape[2]):
                s = 0.0
                for l in range(X.shape[1]):  # noqa: E741
                    s += M[c, l] * X[a, l, b]
                Y[a, c, b] = s


def mode1(M, X, Y):  # Y[b, j, c] = sum_a M[b, a] X[a, j, c]: one GEMM, no copy, kept
    for b in range(M.shape[0]):
        for j in range(X.shape[1]):
            for c in range(X.shape[2]):
                s = 0.0
                for a in range(X.shape[0]):
                    s += M[b, a] * X[a, j, c]
                Y[b, j, c] = s


def mode3_lead(X, M, Y):  # M first, X's rows in order: the factors swap, one GEMM, no copy
    for a in range(X.shape[0]):
        for b in range(X.shape[1]):
            for c in range(M.shape[0]):
                s = 0.0
                for l in range(X.shape[2]):  # noqa: E741
                    s += X[a, b, l] * M[c, l]
                Y[a, b, c] = s


def mode1_lead(M, X, Y):  # b leads Y and M, but each slice is a vector times a 3-D array
    for b in range(M.shape[0]):
        for a in range(X.shape[0]):
            for c in range(X.shape[2]):
                s = 0.0
                for l in range(M.shape[1]):  # noqa: E741
                    s += M[b, l] * X[a, l, c]
                Y[b, a, c] = s


def mode2_vec(X, v, Y):  # a matvec per slice: Y[a, c] = sum_l X[a, l, c] v[l]
    for a in range(X.shape[0]):
        for c in range(X.shape[2]):
            s = 0.0
            for l in range(X.shape[1]):  # noqa: E741
                s += v[l] * X[a, l, c]
            Y[a, c] = s


def mode3_rows(X, M, Y):  # X lies as the rows of one GEMM: the single reshaped GEMM is kept
    for a in range(X.shape[0]):
        for b in range(X.shape[1]):
            for c in range(M.shape[0]):
                s = 0.0
                for l in range(X.shape[2]):  # noqa: E741
                    s += M[c, l] * X[a, b, l]
                Y[a, b, c] = s


def shared_lead(A, B, C):  # the leading index in both factors: the existing batched path
    for b in range(A.shape[0]):
        for i in range(A.shape[1]):
            for j in range(B.shape[2]):
                for k in range(A.shape[2]):
                    C[b, i, j] += A[b, i, k] * B[b, k, j]


def reads_output(X, M, Y):  # the product reads its own output
    for a in range(X.shape[0]):
        for b in range(M.shape[0]):
            for c in range(X.shape[2]):
                for l in range(M.shape[1]):  # noqa: E741
                    Y[a, b, c] += M[b, l] * Y[a, l, c]


na, nl, nc, nb = 3, 5, 4, 6
POSITIVE = {  # kernel: arguments
    "mode2": lambda: (_m(na, nl, nc), _m(nb, nl), np.zeros((na, nb, nc))),
    "mode2_sub": lambda: (_m(na + 1, nl, nc), _m(nb, nl), _m(na + 1, nb, nc), na),
    "mode2_mt": lambda: (_m(na, nl, nc), _m(nl, nb), np.zeros((na, nb, nc))),
    "mode3_xt": lambda: (_m(na, nl, nc), _m(nb, nl), np.zeros((na, nb, nc))),
    "mode2_vec": lambda: (_m(na, nl, nc), _m(nl), np.zeros((na, nc))),
}


def _run(fn, args):
    work = copy_args(args)
    return outputs_of(fn(*work), work)


def _close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        if w is None:  # the return value of a function returning nothing
            assert g is None
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


_DIR = Path(tempfile.mkdtemp(prefix="hetlab-batched-"))


def _python_variant(fn):
    """The block variant as plain Python (``@njit`` dropped): the emitted NumPy, no compile."""
    report = offload.analyze(fn)
    src = offload.transform(report, blocks=[b.id for b in report.blocks]).source
    src = "\n".join(ln for ln in src.splitlines() if not ln.startswith("@njit"))
    path = _DIR / f"_b_{fn.__name__}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    install(src, vars(mod), python=True)
    return getattr(mod, report.name)


# -- recognition --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_leading_index_product_is_a_loop_of_slice_products(name):
    (b,) = offload.analyze(globals()[name]).blocks
    assert b.pattern == "contraction" and "for " not in b.call  # NumPy/CuPy form: one GEMM
    assert "for " in b.numba_call and ("@" in b.numba_call or "np.dot(" in b.numba_call)
    assert "np.transpose" not in b.numba_call and "reshape" not in b.numba_call  # no copy


def test_numba_form_writes_the_gemm_into_the_output_slice():
    src = offload.transform(mode2, blocks=["B1"]).source
    assert "np.dot(" in src and "ctypes.data" in src and "np.transpose" not in src
    assert "Y[a, b, c] = " not in src  # the copy out of the accumulator is gone
    assert "prange(" in src and "parallel=True" in src  # the slices in a parallel helper


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_plain_numpy_form_equals_the_loops(name):
    fn, args = globals()[name], POSITIVE[name]()
    _close(_run(_python_variant(fn), args), _run(fn, args))


# -- near misses --------------------------------------------------------------------------------
NEAR = {  # kernel: (block, arguments): shapes that keep the general contraction
    "mode3_rows": (lambda: (_m(na, nb, nl), _m(nc, nl), np.zeros((na, nb, nc)))),
    "mode3_lead": (lambda: (_m(na, nb, nl), _m(nc, nl), np.zeros((na, nb, nc)))),
    "mode1": (lambda: (_m(nb, na), _m(na, nl, nc), np.zeros((nb, nl, nc)))),
    "mode1_lead": (lambda: (_m(nb, nl), _m(na, nl, nc), np.zeros((nb, na, nc)))),
}


@pytest.mark.parametrize("name", sorted(NEAR))
def test_other_contractions_keep_the_general_path(name):
    fn, args = globals()[name], NEAR[name]()
    (b,) = offload.analyze(fn).blocks
    assert b.pattern == "contraction" and "for " not in b.call
    assert "for " not in b.numba_call
    if name != "mode1_lead":  # the larger factor lies as the GEMM's rows: no copy of it
        assert "np.transpose" not in b.call
    _close(_run(_python_variant(fn), args), _run(fn, args))


def test_leading_index_shared_by_both_factors_keeps_the_batched_path():
    (b,) = offload.analyze(shared_lead).blocks
    assert b.pattern == "batched-matmul" and "np.empty" in b.call  # the existing form
    args = (_m(3, 4, 5), _m(3, 5, 2), _m(3, 4, 2))
    _close(_run(_python_variant(shared_lead), args), _run(shared_lead, args))


def test_product_reading_its_output_is_refused():
    assert offload.analyze(reads_output).blocks == []


pytest.importorskip("numba")


@pytest.mark.parametrize("name", ["mode2", "mode2_sub", "mode3_xt", "mode2_vec"])
def test_njit_variant_equals_the_loops(name):
    fn, args = globals()[name], POSITIVE[name]()
    _close(_run(offload.transform(fn, blocks=["B1"]).compile(), args), _run(fn, args))


def test_njit_variant_writes_strided_views_and_empty_extents():
    f = offload.transform(mode2, blocks=["B1"]).compile()
    X = np.zeros((na, nl, 2 * nc))[:, :, ::2]
    X[:] = _m(na, nl, nc)
    M = _m(nb, nl)
    base = np.zeros((na, 2 * nb, nc))
    Y = base[:, ::2, :]  # not contiguous: numba's np.dot would write a copy of it
    f(X, M, Y)
    want = np.zeros((na, nb, nc))
    mode2(X, M, want)
    _close([Y], [want])
    assert not base[:, 1::2, :].any()
    Y0 = np.ones((na, nb, nc))
    f(np.zeros((na, 0, nc)), np.zeros((nb, 0)), Y0)  # nothing summed: zeros, as the loops
    _close([Y0], [np.zeros((na, nb, nc))])


def test_output_aliasing_an_input_is_refused():
    f = offload.transform(mode2, blocks=["B1"]).compile()
    X = _m(na, nb, nb)
    with pytest.raises(hl.InvalidInputError):
        f(X, _m(nb, nb), X)  # Y is X
