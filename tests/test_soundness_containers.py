"""Soundness of the sparse and quantized containers and kernels: containers own their data,
values are checked as the kernel will use them, integers are range-checked before any
narrowing, and bad input gives a hetlab error naming the argument (never a raw exception,
a crash or a silently wrong result)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import hetlab as hl
from hetlab import quant, sparse
from hetlab.errors import HetlabError, InvalidInputError
from hetlab.kernels.quant.formats import QuantizedMatrix

DEVICES = ["numpy", "numba"]
LONGDOUBLE_WIDER = np.finfo(np.longdouble).max > np.finfo(np.float64).max
needs_longdouble = pytest.mark.skipif(not LONGDOUBLE_WIDER,
                                      reason="longdouble is float64 on this platform")


def _writes_refused(arr: np.ndarray) -> bool:
    try:
        arr[...] = arr
    except ValueError:
        return True
    return False


# --- item 1: containers own their arrays ---------------------------------------------


_CRASH_SCRIPT = r"""
import json, sys
import numpy as np
import hetlab as hl
from hetlab import sparse
bad, device = int(sys.argv[1]), sys.argv[2]
indptr = np.array([0, 2, 3, 5], np.int32)
indices = np.array([0, 2, 1, 0, 2], np.int32)   # int32: no dtype conversion on the way in
data = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
A = sparse.CSR(indptr, indices, data, shape=(3, 3))
indices[2] = bad          # the caller keeps writing into its arrays after construction
indptr[1] = 5
data[:] = np.nan
y = hl.spmv(A, np.array([1.0, 10.0, 100.0]), device=device)
print(json.dumps([float(v) for v in y]))
"""


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("bad", [-5, 3, -(2**31)], ids=["negative", "n_cols", "int32_min"])
def test_writing_caller_arrays_after_construction_changes_nothing(bad, device):
    """Once a crash (SIGSEGV) or garbage: run in a subprocess so a crash fails this test."""
    root = str(Path(hl.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (root, os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run([sys.executable, "-c", _CRASH_SCRIPT, str(bad), device],
                          capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    y = json.loads(proc.stdout.strip().splitlines()[-1])
    dense = np.array([[1.0, 0, 2.0], [0, 3.0, 0], [4.0, 0, 5.0]])
    np.testing.assert_allclose(y, dense @ np.array([1.0, 10.0, 100.0]))


def _csr_from_arrays():
    indptr = np.array([0, 2, 3], np.int32)
    indices = np.array([0, 1, 1], np.int32)
    data = np.array([1.0, 2.0, 3.0])
    return (indptr, indices, data), sparse.CSR(indptr, indices, data, (2, 2))


def _coo_from_arrays():
    row, col, data = np.array([0, 1, 1]), np.array([1, 0, 1]), np.array([1.0, 2.0, 3.0])
    return (row, col, data), sparse.COO(row, col, data, (2, 2))


def _csf_from_arrays():
    coords = np.array([[0, 0, 0], [1, 1, 1]])
    data = np.array([1.0, 2.0])
    return (coords, data), sparse.CSF.from_coords(coords, data, (2, 2, 2))


def _qm_from_arrays():
    qw = quant.quantize(np.linspace(-1, 1, 128, dtype=np.float32).reshape(2, 64), 4, 32)
    arrays = (qw.qweight.copy(), qw.scales.copy(), qw.zeros.copy())
    return arrays, QuantizedMatrix(*arrays, 4, 32, 64)


def _from_codes():
    codes = np.tile(np.arange(16), (2, 4))
    scales, zeros = np.ones((2, 2), np.float16), np.full((2, 2), 8, np.float16)
    return (codes, scales, zeros), QuantizedMatrix.from_codes(codes, scales, zeros, 4, 32)


def _csr_from_scipy():
    m = sp.csr_array(np.array([[1.0, 0.0], [2.0, 3.0]]))
    return (m.data, m.indices, m.indptr), sparse.csr(m)


def _snapshot(c):
    if isinstance(c, QuantizedMatrix):
        return c.dequantize(np.float64)
    return c.toarray()


@pytest.mark.parametrize("build", [_csr_from_arrays, _coo_from_arrays, _csf_from_arrays,
                                   _qm_from_arrays, _from_codes, _csr_from_scipy])
def test_containers_keep_private_read_only_arrays(build):
    arrays, c = build()
    before = _snapshot(c)
    for a in arrays:  # scribble over everything the caller still holds
        a[...] = np.zeros((), a.dtype) + (3 if a.dtype.kind in "iu" else np.nan)
    np.testing.assert_array_equal(_snapshot(c), before)
    own = [v for v in vars_of(c) if isinstance(v, np.ndarray)]
    assert own and all(_writes_refused(v) for v in own)


def vars_of(c):
    """Every attribute value of a container (slots along the class chain, or dataclass
    fields)."""
    if hasattr(c, "__dataclass_fields__"):
        return [getattr(c, n) for n in c.__dataclass_fields__]
    names = {n for k in type(c).__mro__ for n in getattr(k, "__slots__", ())}
    return [getattr(c, n) for n in sorted(names)]


@pytest.mark.parametrize("fmt", ["bsr", "ell", "sell"])
def test_blocked_formats_are_read_only(fmt):
    (_, _, data), A = _csr_from_arrays()
    B = {"bsr": lambda: sparse.BSR.from_csr(A, (1, 1)), "ell": lambda: sparse.ELL.from_csr(A),
         "sell": lambda: sparse.SELL.from_csr(A, C=1, sigma=1)}[fmt]()
    data[:] = -1.0
    np.testing.assert_array_equal(B.toarray(), [[1.0, 2.0], [0.0, 3.0]])
    own = [v for v in vars_of(B) if isinstance(v, np.ndarray)]
    assert own and all(_writes_refused(v) for v in own)


def test_exports_are_writable_copies():
    _, A = _csr_from_arrays()
    m = A.to_scipy()
    m.data[:] = 7.0  # a scipy matrix of the caller's own: writable, not shared
    np.testing.assert_array_equal(A.toarray(), [[1.0, 2.0], [0.0, 3.0]])
    b = sparse.BSR.from_csr(A, (1, 1)).to_scipy()
    b.data[:] = 7.0
    np.testing.assert_array_equal(A.toarray(), [[1.0, 2.0], [0.0, 3.0]])


def test_own_conversions_still_work_on_read_only_arrays(rng):
    A = sparse.make_matrix(50, rng, kind="mixed", nnz_per_row=4)
    assert not A.data.flags.writeable
    dense = A.toarray()
    for B in (A.tocoo().tocsr(), A.with_index_dtype(np.int64), A.astype(np.float32),
              sparse.csr(A.to_scipy()), sparse.SELL.from_csr(A, C=4, sigma=8).tocsr(),
              sparse.BSR.from_csr(A, (5, 5)).tocsr()):
        np.testing.assert_allclose(B.toarray(), dense, rtol=1e-6)
    S = hl.sddmm(A, np.ones((50, 2)), np.ones((50, 2)), device="numba")
    np.testing.assert_allclose(S.toarray(), 2 * dense)


# --- item 5: finite in the dtype the kernel uses ---------------------------------------

A32 = sparse.CSR([0, 1, 2], [0, 1], np.array([1.0, 2.0], np.float32), (2, 2))
QW = quant.quantize(np.linspace(-1, 1, 128, dtype=np.float32).reshape(2, 64), 4, 32)
BIG = np.array([1e300, 1.0])
VOX = np.array([[0, 0, 0], [1, 0, 0]])

OVERFLOW_CASES = [
    (lambda d: hl.spmv(A32, BIG, device=d), "spmv: x must fit in float32"),
    (lambda d: hl.spmm(A32, BIG[:, None], device=d), "spmm: X must fit in float32"),
    (lambda d: hl.sddmm(A32, BIG[:, None], np.ones((2, 1)), device=d),
     "sddmm: X must fit in float32"),
    (lambda d: hl.sddmm(A32, np.ones((2, 1)), BIG[:, None], device=d),
     "sddmm: Y must fit in float32"),
    (lambda d: hl.gemv_q(QW, np.r_[1e300, np.ones(63)], device=d),
     "gemv_q: x must fit in float32"),
    (lambda d: hl.gemm_q(QW, np.r_[1e300, np.ones(63)][None], device=d),
     "gemm_q: X must fit in float32"),
    (lambda d: hl.gemv_w4a8(QW, np.r_[1e300, np.ones(63)], device=d),
     "gemv_w4a8: x must fit in float32"),
    (lambda d: hl.sparse_conv3d(VOX, np.ones((2, 1), np.float32), np.full((27, 1, 1), 1e300),
                                device=d), "sparse_conv3d: weights must fit in float32"),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("call,message", OVERFLOW_CASES, ids=[c[1][:22] for c in OVERFLOW_CASES])
def test_values_beyond_the_kernel_dtype_are_refused(call, message, device):
    with pytest.raises(InvalidInputError, match=message):
        call(device)


def test_astype_refuses_values_that_overflow():
    A = sparse.CSR([0, 1], [0], [1e300], (1, 1))
    with pytest.raises(InvalidInputError, match="data must fit in float32"):
        A.astype(np.float32)
    B = sparse.CSR([0, 1], [0], [3.0], (1, 1)).astype(np.float32)
    assert B.dtype == np.float32 and B.toarray()[0, 0] == 3.0


@needs_longdouble
def test_longdouble_narrowed_to_float64_is_checked():
    huge = np.array([np.longdouble("1e400"), 1.0])
    with pytest.raises(InvalidInputError, match="data must fit in float64"):
        sparse.coo([0, 1], [0, 1], huge, (2, 2))
    with pytest.raises(InvalidInputError, match="operand B must fit in float64"):
        sparse.einsum("ij,j->i", sparse.csr(np.eye(2)), huge)
    with pytest.raises(InvalidInputError, match="w must fit in float64"):
        quant.quantize(np.full((1, 32), np.longdouble("1e400")), 8, 32)
    with pytest.raises(InvalidInputError, match="x must fit in float64"):
        hl.spmv(sparse.csr(np.eye(2)), huge)


# --- item 6: range checks see the caller's values ---------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_sparse_conv3d_coordinates_are_checked_before_int32(device):
    with pytest.raises(InvalidInputError, match="voxels must lie in"):
        hl.sparse_conv3d(np.array([[2**32, 0, 0], [1, 0, 0]]), np.ones((2, 1)),
                         np.ones((27, 1, 1)), device=device)
    with pytest.raises(InvalidInputError, match="voxels must lie in"):
        hl.sparse_conv3d(np.array([[2**63 + 1, 0, 0]], np.uint64), np.ones((1, 1)),
                         np.ones((27, 1, 1)), device=device)


NARROW_CASES = [
    (lambda: sparse.CSR([0, 1], np.array([2**32 + 1]), [1.0], (1, 3)), "indices must be in"),
    (lambda: sparse.CSR([0, 1], np.array([2**64 - 1], np.uint64), [1.0], (1, 3)),
     "indices must be in"),
    (lambda: sparse.CSR(np.array([0, 2, 1, 2], np.uint64), [0, 1], [1.0, 2.0], (3, 3)),
     "indptr must be non-decreasing"),
    (lambda: sparse.CSR([0, 1], [2.5], [1.0], (1, 3)), "indices must hold integers"),
    (lambda: sparse.CSR([0.0, 1.0], [1], [1.0], (1, 3)), "indptr must hold integers"),
    (lambda: sparse.coo(np.array([2**32]), [0], [1.0], (1, 1)), "row must be in"),
    (lambda: sparse.coo([0], [True], [1.0], (1, 2)), "col must hold integers"),
    (lambda: sparse.csr(([1.0], ([2**32], [0])), shape=(2, 2)), "row must be in"),
    (lambda: sparse.CSF.from_coords(np.array([[2**64 - 1, 0, 0]], np.uint64), [1.0],
                                    (2, 2, 2)), r"coords\[:, 0\] must be in"),
    (lambda: sparse.CSF.from_coords([[0, 0, 0]], [1.0], (2.5, 2, 2)), "shape must be 3"),
    (lambda: sparse.CSR([0, 1], [0], [1.0], (1.0, 3)), "shape must be a pair"),
    (lambda: QuantizedMatrix.from_codes(np.full((1, 32), 2.5), np.ones((1, 1), np.float16),
                                        None, 4, 32), "codes must hold integers"),
    (lambda: QuantizedMatrix.from_codes(np.full((1, 32), 2**32 + 1), np.ones((1, 1)),
                                        None, 4, 32), r"codes must lie in \[0, 16\)"),
]


@pytest.mark.parametrize("call,message", NARROW_CASES, ids=[c[1][:24] for c in NARROW_CASES])
def test_integers_are_checked_before_narrowing(call, message):
    with pytest.raises(InvalidInputError, match=message):
        call()


def test_int64_indices_that_need_int64_are_kept():
    A = sparse.CSR([0, 1], np.array([2**32 + 1]), [1.0], (1, 2**33))
    assert A.index_dtype == np.int64 and int(A.indices[0]) == 2**32 + 1


# --- item 9: QuantizedMatrix values, the reference's memory, save/load -------------------


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf, -0.5])
def test_quantized_matrix_refuses_bad_scales(value):
    sc = QW.scales.copy()
    sc[1, 0] = value
    with pytest.raises(InvalidInputError, match="scales must be finite and >= 0"):
        QuantizedMatrix(QW.qweight, sc, QW.zeros, 4, 32, 64)
    with pytest.raises(InvalidInputError, match="scales must"):
        QuantizedMatrix.from_codes(QW.codes(), sc, QW.zeros, 4, 32)


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
@pytest.mark.parametrize("offset", [1, 40, -1, 0.5, np.nan])
def test_quantized_matrix_refuses_zero_points_outside_the_codes(bits, offset):
    qw = quant.quantize(np.linspace(-1, 1, 128, dtype=np.float32).reshape(2, 64), bits, 32)
    z = qw.zeros.copy()
    z[0, 1] = (2**bits - 1 + offset) if offset > 0 else offset
    if np.isnan(offset):
        z[0, 1] = np.nan
    with pytest.raises(InvalidInputError, match=rf"zeros must be whole numbers in \[0, "
                                                rf"{2**bits - 1}\]"):
        QuantizedMatrix(qw.qweight, qw.scales, z, bits, 32, 64)


def test_zero_scales_and_edge_zero_points_are_valid():
    codes = np.zeros((2, 32), np.int64)
    qw = QuantizedMatrix.from_codes(codes, np.zeros((2, 1)), [[0], [15]], 4, 32)
    np.testing.assert_array_equal(hl.gemv_q(qw, np.ones(32, np.float32)), 0.0)


def test_reference_sparse_conv3d_refuses_a_huge_dense_grid():
    vox = np.array([[0, 0, 0], [2399, 2399, 2399]])  # ~103 GiB of dense grid
    feats, w = np.ones((2, 1)), np.ones((27, 1, 1))
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(InvalidInputError, match=r'GiB.*device="numba"'):
            hl.sparse_conv3d(vox, feats, w, device="numpy")
        elapsed = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert elapsed < 2.0 and peak < 50 << 20
    # the suggested device handles it: isolated voxels keep only the centre tap
    w = np.zeros((27, 1, 1))
    w[13] = 2.0
    out_v, out_f = hl.sparse_conv3d(vox, [[1.0], [3.0]], w, device="numba")
    np.testing.assert_array_equal(out_v, vox)
    np.testing.assert_array_equal(out_f, [[2.0], [6.0]])


def _fields(qw: QuantizedMatrix) -> dict:
    return {"bits": qw.bits, "group_size": qw.group_size, "in_features": qw.in_features,
            "qweight": qw.qweight, "scales": qw.scales, "zeros": qw.zeros}


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
@pytest.mark.parametrize("group_size", [32, 64, 128])
@pytest.mark.parametrize("symmetric", [False, True])
def test_quantized_matrix_save_load_round_trip(bits, group_size, symmetric, tmp_path, rng):
    w = rng.normal(0, 0.02, (5, 200)).astype(np.float32)  # 200: the last group is padded
    qw = quant.quantize(w, bits, group_size, symmetric=symmetric)
    path = tmp_path / "w.npz"
    qw.save(path)
    back = QuantizedMatrix.load(path)
    for (name, a), b in zip(_fields(qw).items(), _fields(back).values(), strict=True):
        if isinstance(a, np.ndarray):
            assert b.dtype == a.dtype and b.shape == a.shape, name
            np.testing.assert_array_equal(b, a, err_msg=name)
        else:
            assert b == a and type(b) is type(a), name
    assert back.symmetric == symmetric
    x = rng.standard_normal(200).astype(np.float32)
    np.testing.assert_array_equal(hl.gemv_q(back, x), hl.gemv_q(qw, x))
    quant.save(back, tmp_path / "again")  # the exact path, no suffix added
    np.testing.assert_array_equal(quant.load(tmp_path / "again").codes(), qw.codes())


def test_load_refuses_what_save_did_not_write(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a matrix")
    other = tmp_path / "other.npz"
    np.savez(other, a=np.ones(3))
    single = tmp_path / "single.npy"
    np.save(single, np.ones(3))
    broken = tmp_path / "broken.npz"
    QW.save(broken)
    with np.load(broken) as f:
        fields = dict(f)
    fields["zeros"] = fields["zeros"] + np.float16(100)
    tampered = tmp_path / "tampered.npz"
    np.savez(tampered, **fields)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(broken.read_bytes()[:100])
    for path in (text, other, single, tampered, truncated, tmp_path):
        with pytest.raises(InvalidInputError, match="QuantizedMatrix"):
            QuantizedMatrix.load(path)
    with pytest.raises(FileNotFoundError):
        QuantizedMatrix.load(tmp_path / "missing.npz")
    with pytest.raises(InvalidInputError, match="path must be"):
        QuantizedMatrix.load(None)


# --- the bad-input table ----------------------------------------------------------------

A = sparse.csr(np.array([[1.0, 0, 2], [0, 3, 0]]))
X3 = np.ones(3)
X64 = np.ones(64, np.float32)
V3 = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0]])
F3 = np.ones((3, 1))
W27 = np.ones((27, 1, 1))
RAGGED = [[1.0, 2.0], [3.0]]

BAD = [
    # spmv / spmm / sddmm
    (lambda: hl.spmv(None, X3), "A is not a valid sparse matrix"),
    (lambda: hl.spmv("abc", X3), "A is not a valid sparse matrix"),
    (lambda: hl.spmv(np.ones((2, 2, 2)), X3), "A is not a valid sparse matrix"),
    (lambda: hl.spmv(np.ones((2, 3), complex), X3), "A is not a valid sparse matrix"),
    (lambda: hl.spmv(np.array([["a", "b"]]), X3), "A is not a valid sparse matrix"),
    (lambda: hl.spmv(RAGGED, X3), "A is not a valid sparse matrix"),
    (lambda: hl.spmv(A, None), "x must hold real numbers"),
    (lambda: hl.spmv(A, "abc"), "x must hold real numbers"),
    (lambda: hl.spmv(A, 2.5), r"x must have shape \(3,\)"),
    (lambda: hl.spmv(A, np.ones(3, complex)), "x must hold real numbers"),
    (lambda: hl.spmv(A, np.array([1, None, 2])), "x must hold real numbers"),
    (lambda: hl.spmv(A, np.array([1.0, np.nan, 1.0])), "x must be finite"),
    (lambda: hl.spmv(A, np.array([np.inf, 1.0, 1.0])), "x must be finite"),
    (lambda: hl.spmv(A, np.empty(0)), r"x must have shape \(3,\)"),
    (lambda: hl.spmv(A, np.ones((3, 1))), r"x must have shape \(3,\)"),
    (lambda: hl.spmv(A, RAGGED), "x must be a numeric array"),
    (lambda: hl.spmm(A, np.ones(3)), "X must have shape"),
    (lambda: hl.spmm(A, np.ones((3, 0))), "X must have 1 to 256 columns"),
    (lambda: hl.spmm(A, np.full((3, 2), np.nan)), "X must be finite"),
    (lambda: hl.spmm(A, np.ones((3, 2), complex)), "X must hold real numbers"),
    (lambda: hl.sddmm(A, np.ones((2, 2)), np.ones((3, 3))), "Y must have shape"),
    (lambda: hl.sddmm(A, None, np.ones((3, 2))), "X must hold real numbers"),
    (lambda: hl.sddmm(A, np.ones((2, 2)), np.full((3, 2), np.inf)), "Y must be finite"),
    # sparse_conv3d
    (lambda: hl.sparse_conv3d(None, F3, W27), "voxels must be integers"),
    (lambda: hl.sparse_conv3d(V3 + 0.5, F3, W27), "voxels must be integers"),
    (lambda: hl.sparse_conv3d(V3.astype(bool), F3, W27), "voxels must be integers"),
    (lambda: hl.sparse_conv3d(RAGGED, F3, W27), "voxels must be a numeric array"),
    (lambda: hl.sparse_conv3d(V3[:, :2], F3, W27), "voxels must be integers of shape"),
    (lambda: hl.sparse_conv3d(V3[[0, 0]], F3[:2], W27), "voxels must be distinct"),
    (lambda: hl.sparse_conv3d(V3, F3[:2], W27), "features must have shape"),
    (lambda: hl.sparse_conv3d(V3, F3.astype(complex), W27), "features must hold real"),
    (lambda: hl.sparse_conv3d(V3, F3 * np.nan, W27), "features must be finite"),
    (lambda: hl.sparse_conv3d(V3, "abc", W27), "features must hold real"),
    (lambda: hl.sparse_conv3d(V3, F3, W27[:8]), "weights must have shape"),
    (lambda: hl.sparse_conv3d(V3, F3, W27 * np.inf), "weights must be finite"),
    (lambda: hl.sparse_conv3d(V3, F3, W27, kernel_size=2.0), "kernel_size must be an int"),
    (lambda: hl.sparse_conv3d(V3, F3, W27, kernel_size=True), "kernel_size must be an int"),
    (lambda: hl.sparse_conv3d(V3, F3, W27, kernel_size=None), "kernel_size must be an int"),
    (lambda: hl.sparse_conv3d(V3, F3, W27, kernel_size=0), "kernel_size must be an int"),
    (lambda: hl.sparse_conv3d(V3, F3, W27, stride="2"), "stride must be an int"),
    (lambda: hl.sparse_conv3d(V3, F3, W27, stride=2**70), "stride must be an int"),
    (lambda: hl.sparse_conv3d(V3, F3, W27, dataflow=None), "dataflow must be one of"),
    (lambda: hl.sparse_conv3d(V3, F3, W27, dataflow=np.array(["auto"])),
     "dataflow must be one of"),
    # quantized kernels
    (lambda: hl.gemv_q(None, X64), "qw must be a QuantizedMatrix"),
    (lambda: hl.gemv_q(np.ones((2, 64)), X64), "qw must be a QuantizedMatrix"),
    (lambda: hl.gemv_q(QW, None), "x must be a float16/float32/float64 array"),
    (lambda: hl.gemv_q(QW, "abc"), "x must be a float16/float32/float64 array"),
    (lambda: hl.gemv_q(QW, np.ones(64, int)), "x must be a float16/float32/float64 array"),
    (lambda: hl.gemv_q(QW, np.ones(64, bool)), "x must be a float16/float32/float64 array"),
    (lambda: hl.gemv_q(QW, np.ones(64, complex)), "x must be a float16/float32/float64 array"),
    (lambda: hl.gemv_q(QW, np.ones(63)), "x must have shape"),
    (lambda: hl.gemv_q(QW, np.empty(0)), "x must have shape"),
    (lambda: hl.gemv_q(QW, np.full(64, np.nan)), "x must be finite"),
    (lambda: hl.gemv_q(QW, RAGGED), "x must be a numeric array"),
    (lambda: hl.gemm_q(QW, np.ones((0, 64))), "X must have shape"),
    (lambda: hl.gemm_q(QW, np.ones((65, 64))), "X must have shape"),
    (lambda: hl.gemm_q(QW, np.full((2, 64), np.inf)), "X must be finite"),
    (lambda: hl.gemv_w4a8(QW, np.ones((1, 64))), "x must have shape"),
    (lambda: hl.gemv_w4a8(QW, np.full(64, -np.inf)), "x must be finite"),
    # quantize and the QuantizedMatrix constructors
    (lambda: quant.quantize(None), "w must be a float16/float32/float64 array"),
    (lambda: quant.quantize("abc"), "w must be a float16/float32/float64 array"),
    (lambda: quant.quantize(RAGGED), "w must be a numeric array"),
    (lambda: quant.quantize({}), "w must be a float16/float32/float64 array"),
    (lambda: quant.quantize(np.ones((2, 32), complex)), "w must be a float16/float32/float64"),
    (lambda: quant.quantize(np.ones((2, 32), int)), "w must be a float16/float32/float64"),
    (lambda: quant.quantize(np.ones((0, 32))), "w must be a non-empty 2-D"),
    (lambda: quant.quantize(np.full((2, 32), np.nan)), "w must be finite"),
    (lambda: quant.quantize(np.ones((2, 32)), bits=5), "bits must be one of"),
    (lambda: quant.quantize(np.ones((2, 32)), bits=4.0), "bits must be one of"),
    (lambda: quant.quantize(np.ones((2, 32)), bits=None), "bits must be one of"),
    (lambda: quant.quantize(np.ones((2, 32)), group_size=48), "group_size must be a positive"),
    (lambda: quant.quantize(np.ones((2, 32)), group_size=True), "group_size must be a positive"),
    (lambda: quant.quantize(np.ones((2, 32)), group_size=2**70), "group_size must be a positive"),
    (lambda: quant.quantize(np.ones((2, 32)), group_size=32, symmetric="yes"),
     "symmetric must be True or False"),
    (lambda: QuantizedMatrix(QW.qweight, QW.scales, QW.zeros, 4, 32, True), "in_features must"),
    (lambda: QuantizedMatrix(QW.qweight, QW.scales, QW.zeros, 4, 32, 64.0), "in_features must"),
    (lambda: QuantizedMatrix(QW.qweight.tolist(), QW.scales, QW.zeros, 4, 32, 64),
     "qweight must be a 2-D uint32"),
    (lambda: QuantizedMatrix(QW.qweight, None, QW.zeros, 4, 32, 64), "scales must be a float16"),
    (lambda: QuantizedMatrix.from_codes(RAGGED, np.ones((1, 1)), None, 4, 32),
     "codes must be a numeric array"),
    (lambda: QuantizedMatrix.from_codes(np.zeros((1, 32), int), np.array([[1e6]]), None, 4,
                                        32), "scales must fit in float16"),
    (lambda: QuantizedMatrix.from_codes(np.zeros((1, 32), int), [["a"]], None, 4, 32),
     "scales must hold real numbers"),
    (lambda: QuantizedMatrix.from_codes(np.zeros((1, 32), int), [[1.0]], [[np.nan]], 4, 32),
     "zeros must be finite"),
    # sparse formats
    (lambda: sparse.CSR(None, [0], [1.0], (1, 1)), "indptr must be 1-D"),
    (lambda: sparse.CSR([0, 1], RAGGED, [1.0], (1, 1)), "indices must be a numeric array"),
    (lambda: sparse.CSR([0, 1], ["a"], [1.0], (1, 1)), "indices must hold integers"),
    (lambda: sparse.CSR([0, 1], [0], [1 + 2j], (1, 1)), "data must hold real numbers"),
    (lambda: sparse.CSR([0, 1], [0], ["a"], (1, 1)), "data must hold real numbers"),
    (lambda: sparse.CSR([0, 1], [0], [None], (1, 1)), "data must hold real numbers"),
    (lambda: sparse.CSR([0, 1], [0], RAGGED, (1, 1)), "data must be a numeric array"),
    (lambda: sparse.CSR([0, 1], [0], [np.nan], (1, 1)), "data must be finite"),
    (lambda: sparse.CSR([0, 1], [0], [], (1, 1)), "data must have one value per"),
    (lambda: sparse.CSR([0, 1], [0], [1.0], None), "shape must be a pair"),
    (lambda: sparse.CSR([0, 1], [0], [1.0], (1, True)), "shape must be a pair"),
    (lambda: sparse.CSR([0, 1], [0], [1.0], (1, 2**70)), "shape must be a pair"),
    (lambda: sparse.CSR([0, 1], [0], [1.0], (1, 1), index_dtype="abc"), "index_dtype must"),
    (lambda: sparse.CSR([0, 1], [0], [1.0], (1, 1), index_dtype=np.float32),
     "index_dtype must"),
    (lambda: sparse.CSR([0, 1], [-1], [1.0], (1, 1)), "indices must be in"),
    (lambda: sparse.CSR([0, 2], [1, 0], [1.0, 1.0], (1, 2)), "indices must be sorted"),
    (lambda: sparse.CSR([1, 1], [], [], (1, 1)), "indptr must start at 0"),
    (lambda: sparse.coo([0], [0], [1.0], (1, -1)), "shape must be a pair"),
    (lambda: sparse.coo([0, 1], [0], [1.0, 1.0], (2, 2)), "row and col must have the same"),
    (lambda: sparse.coo([0], [0], [1.0], (1, 1)).tocsr(duplicates=None), "duplicates must"),
    (lambda: sparse.csr(A, duplicates=np.array(["sum"])), "duplicates must be one of"),
    (lambda: sparse.csr(None), "A must be a hetlab sparse matrix"),
    (lambda: sparse.csr(np.ones(3)), "a dense A must be 2-D"),
    (lambda: sparse.csr(np.array([["a", "b"]])), "a dense A must hold real numbers"),
    (lambda: sparse.csr(RAGGED), "A must be a numeric array"),
    (lambda: sparse.csr(([1.0], ([0.5], [0])), shape=None), "row must hold integers"),
    (lambda: sparse.csr(([1.0], ([-1], [0]))), "row must be in|shape must be"),
    (lambda: sparse.BSR.from_csr(A, 4), "blocksize must be a pair"),
    (lambda: sparse.BSR.from_csr(A, (0, 1)), "blocksize must be an int"),
    (lambda: sparse.BSR.from_csr(A, (4, 4)), "blocksize must divide"),
    (lambda: sparse.BSR.from_csr(None), "A must be a hetlab sparse matrix"),
    (lambda: sparse.SELL.from_csr(A, C=0), "C must be an int"),
    (lambda: sparse.SELL.from_csr(A, C=2.0), "C must be an int"),
    (lambda: sparse.SELL.from_csr(A, C=2, sigma=3), "sigma must be 1 or a multiple"),
    (lambda: sparse.ELL.from_csr("abc"), "A must be a hetlab sparse matrix"),
    (lambda: sparse.CSF.from_coords(None, [1.0], (1, 1, 1)), "coords must be integers"),
    (lambda: sparse.CSF.from_coords([[0.5, 0, 0]], [1.0], (1, 1, 1)), "coords must be integ"),
    (lambda: sparse.CSF.from_coords([[0, 0, 0]], [np.nan], (1, 1, 1)), "data must be finite"),
    (lambda: sparse.CSF.from_coords([[0, 0, 0]], [1.0], None), "shape must be 3"),
    (lambda: sparse.CSF.from_coords([[0, 0, 0]], [1.0], (1, 1, 1), duplicates="max"),
     "duplicates must be one of"),
    (lambda: sparse.CSF.from_dense(np.ones((2, 2))), "a must be 3-D"),
    (lambda: sparse.CSF.from_dense(RAGGED), "a must be a numeric array"),
    (lambda: sparse.CSF.from_dense(np.ones((1, 1, 2), complex)), "data must hold real"),
    (lambda: A.astype(None), "dtype must be float32 or float64"),
    (lambda: A.astype(np.int32), "dtype must be float32 or float64"),
    (lambda: A.astype("abc"), "dtype must be float32 or float64"),
    (lambda: sparse.make_matrix(None, np.random.default_rng(0)), "n must be an int"),
    (lambda: sparse.make_matrix(2.5, np.random.default_rng(0)), "n must be an int"),
    (lambda: sparse.make_matrix(0, np.random.default_rng(0)), "n must be an int"),
    (lambda: sparse.make_matrix(10, 0), "rng must be a numpy.random.Generator"),
    (lambda: sparse.make_matrix(10, np.random.default_rng(0), dtype=int), "dtype must be"),
    (lambda: sparse.make_matrix(10, np.random.default_rng(0), kind=None), "kind must be"),
    (lambda: sparse.make_matrix(10, np.random.default_rng(0), nnz_per_row="4"),
     "nnz_per_row must be an int"),
    # einsum
    (lambda: sparse.einsum(None, A, X3), "sparse.einsum"),
    (lambda: sparse.einsum("ij,j->i", A, RAGGED), "operand B must be a numeric array"),
    (lambda: sparse.einsum("ij,j->i", A, np.ones(3, complex)), "operand B must be real"),
    (lambda: sparse.einsum("ij,j->i", A, np.array([1.0, np.nan, 1.0])), "operand B must be fin"),
    (lambda: sparse.einsum("ij,j->i", A, np.ones(4)), "index 'j' has size"),
    (lambda: sparse.einsum("ij,j->i", np.ones((2, 3)), X3), "at least one operand"),
]


@pytest.mark.parametrize("call,message", BAD, ids=[f"{i}-{c[1][:28]}" for i, c in
                                                   enumerate(BAD)])
@pytest.mark.parametrize("device", DEVICES)
def test_bad_input_raises_a_hetlab_error(call, message, device, monkeypatch):
    """Validation runs before any kernel, whatever the device: every public kernel of the
    sparse and quant families is routed to ``device``."""
    import hetlab.core.dispatch as dispatch

    real_run = dispatch.run
    for mod in ("sparse", "quant", "sparseconv"):
        monkeypatch.setattr(f"hetlab.kernels.{mod}.api.run",
                            lambda spec, dev, keep, **kw: real_run(spec, device, keep, **kw))
    with pytest.raises(HetlabError, match=message) as info:
        call()
    assert isinstance(info.value, InvalidInputError)


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_copies_and_pickles_of_containers_stay_read_only(how):
    import copy
    import pickle

    from hetlab import quant, sparse

    A = sparse.CSR([0, 2, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], shape=(3, 3))
    things = [A, A.tocoo() if hasattr(A, "tocoo") else A,
              quant.quantize(np.ones((4, 128), np.float32), bits=4, group_size=128)]
    dup = {"copy": copy.copy, "deepcopy": copy.deepcopy,
           "pickle": lambda o: pickle.loads(pickle.dumps(o))}[how]
    for thing in things:
        twin = dup(thing)
        arrays = [v for v in vars_of(twin) if isinstance(v, np.ndarray)]
        assert arrays and not any(a.flags.writeable for a in arrays), type(thing).__name__
        with pytest.raises(ValueError, match="read-only"):
            arrays[0][...] = 0

