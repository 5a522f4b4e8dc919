"""The per-row group scales of the integer W4/W3/W2/W8 rows (``_w4_driver.group_scales``: 16
float16 scales per ``vcvtph2ps``, a table lookup for the tail) and the cache-line placement
of the packed codes — each against a plain reference, at group counts around the vector
width (the kernel tests elsewhere use rows of at most a few groups)."""

from __future__ import annotations

import os
import tempfile

import numba
import numpy as np
import pytest

import hetlab as hl
from hetlab import quant
from hetlab.core.aligned import aligned_copy, aligned_empty, is_aligned
from hetlab.kernels.quant import _simd, reference
from hetlab.kernels.quant import _w4_driver as drv
from hetlab.kernels.quant import numba as qn
from hetlab.kernels.quant._simd import HAS_F16C, f16x16_to_f32
from hetlab.kernels.quant.formats import F16_TO_F32
from hetlab.kernels.quant.spec import TOLERANCE

NO_F16C = pytest.mark.skipif(not HAS_F16C, reason="this CPU has no F16C (vcvtph2ps)")
#: group counts: under, at, just over one and two vectors of 16, and 4096×11008's 86
GROUPS = [1, 15, 16, 17, 33, 86]


@numba.njit
def _convert(src, i, n):
    dst = np.full(n, np.float32(-1))
    f16x16_to_f32(src, i, dst, 0)
    return dst


@NO_F16C
def test_f16_vector_conversion_equals_numpy_on_every_kind_of_value():
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 6.1e-5, 6e-8, -6e-8, 65504.0,
                        -65504.0, 1.0, 0.5, 3.14, -2.0, 1e-3, 7.0], np.float16)
    rng = np.random.default_rng(3)
    rand = rng.integers(0, 2**16, 64, dtype=np.uint16)
    for bits in (special.view(np.uint16), rand):
        for i in range(0, bits.size - 15, 7):
            got = _convert(bits, i, 20)
            want = bits[i:i + 16].view(np.float16).astype(np.float32)
            np.testing.assert_array_equal(got[:16], want)  # NaN positions included
            assert np.all(got[16:] == -1)  # nothing written past 16 values
    two_d = rand.reshape(4, 16)
    np.testing.assert_array_equal(_convert(two_d, 2 * 16, 16),
                                  two_d[2].view(np.float16).astype(np.float32))


def _scales_fn(impl):
    @numba.njit
    def run(scales, zeros, zsym, xsum, r, off):
        acc = np.full(off + 2 * scales.shape[1] + 3, np.float32(-7))
        zdot = impl(scales, zeros, zsym, xsum, F16_TO_F32, r, acc, off)
        return zdot, acc

    return run


@pytest.mark.parametrize("ng", GROUPS)
@pytest.mark.parametrize("sym", [True, False])
def test_group_scales_fill_the_scales_and_sum_the_zero_points(ng, sym):
    rng = np.random.default_rng(ng)
    rows, off, r = 3, 8, 1
    scales = rng.uniform(0, 0.1, (rows, ng)).astype(np.float16)
    zeros = (np.zeros((0, 0), np.float16) if sym
             else rng.integers(0, 16, (rows, ng)).astype(np.float16))
    xsum = rng.normal(0, 10, ng).astype(np.float32)
    zsym = np.float32(8)
    s64 = scales[r].astype(np.float64)
    z64 = np.full(ng, 8.0) if sym else zeros[r].astype(np.float64)
    want = float(np.sum(s64 * z64 * xsum))
    impls = [drv._group_scales_table] + ([drv._group_scales_f16c] if HAS_F16C else [])
    for impl in impls:
        zdot, acc = _scales_fn(impl)(scales.view(np.uint16), zeros.view(np.uint16), zsym,
                                     xsum, r, off)
        np.testing.assert_array_equal(acc[off:off + ng], scales[r].astype(np.float32))
        if not sym:
            np.testing.assert_array_equal(acc[off + ng:off + 2 * ng],
                                          zeros[r].astype(np.float32))
        assert np.all(acc[:off] == -7) and np.all(acc[off + 2 * ng:] == -7)
        bound = 1e-6 * float(np.sum(np.abs(s64 * z64 * xsum))) + 1e-30
        assert abs(float(zdot) - want) <= bound


def _paths():
    """Every integer GEMV path of this CPU at g128, as (id, callable(qw, x))."""
    out = []
    for path in qn.w4_paths():
        if path == "float32":
            continue

        def run(qw, x, path=path):
            qn.use_w4_path(path)
            try:
                return hl.gemv_q(qw, x, device="numba")
            finally:
                qn.use_w4_path(None)

        out.append((f"w4-{path}", run))
    if qn.w4_paths()[0] != "float32":
        out.append(("w4a8", lambda qw, x: hl.gemv_w4a8(qw, x, device="numba")))
    return out


@pytest.mark.parametrize("ng", [16, 17, 33])
@pytest.mark.parametrize("sym", [True, False])
def test_integer_paths_at_group_counts_around_the_vector_width(ng, sym):
    paths = _paths()
    if not paths:
        pytest.skip("this CPU has no integer W4 path (float32 only)")
    rng = np.random.default_rng(ng + 100 * sym)
    n_in = ng * 128 - 5  # a ragged last group
    qw = quant.quantize(rng.normal(0, 0.05, (37, n_in)).astype(np.float32), 4, 128,
                        symmetric=sym)
    x = rng.standard_normal(n_in).astype(np.float32)
    xp = np.pad(x, (0, qw.padded_in - n_in))
    for name, run in paths:
        want = (reference.gemv_w4a8(qw, xp) if name == "w4a8" else reference.gemv_q(qw, xp))
        assert hl.gemv_q.spec.error(run(qw, x), want) <= TOLERANCE, name


def test_w4a8_stays_exact_on_integers_past_one_vector_of_groups():
    """Unit scales, integer zero points and activations: every step is exact, so W4A8 must
    equal the float64 product bit for bit, here with 17 groups (a vector and a tail)."""
    if qn.w4_paths()[0] == "float32":
        pytest.skip("this CPU has no integer W4A8 path")
    rng = np.random.default_rng(17)
    ng, out = 17, 9
    for zeros in (None, rng.integers(0, 16, (out, ng)).astype(np.float16)):
        qw = quant.QuantizedMatrix.from_codes(rng.integers(0, 16, (out, ng * 128)),
                                              np.ones((out, ng), np.float16), zeros, 4, 128,
                                              ng * 128)
        x = rng.integers(-127, 128, ng * 128).astype(np.float32)
        exact = (qw.dequantize(np.float64) @ x).astype(np.float32)
        np.testing.assert_array_equal(hl.gemv_w4a8(qw, x, device="numba"), exact)


# --- cache-line placement of the codes ------------------------------------------------------

def test_aligned_helpers():
    for shape, dtype in (((7, 3), np.uint32), (0, np.float32), ((2, 2, 5), np.int8)):
        a = aligned_empty(shape, dtype)
        assert is_aligned(a) and a.flags.c_contiguous and a.dtype == dtype
        assert a.shape == ((shape,) if isinstance(shape, int) else shape)
    src = np.arange(60, dtype=np.uint32).reshape(6, 10)[:, 1:9]  # strided, not contiguous
    c = aligned_copy(src)
    assert is_aligned(c) and c.flags.c_contiguous and c.flags.writeable
    np.testing.assert_array_equal(c, src)
    off = np.empty(100, np.uint8)[1:]
    assert not (is_aligned(off) and is_aligned(np.empty(100, np.uint8)[2:]))


def test_codes_are_kept_on_a_cache_line_whatever_they_came_from():
    rng = np.random.default_rng(5)
    qw = quant.quantize(rng.normal(size=(40, 384)).astype(np.float32), 4, 128)
    assert is_aligned(qw.qweight) and not qw.qweight.flags.writeable
    raw = np.empty(qw.qweight.nbytes + 64, np.uint8)
    start = (-raw.ctypes.data) % 64 + 16  # 16 bytes past a line
    shifted = raw[start:start + qw.qweight.nbytes].view(np.uint32).reshape(qw.qweight.shape)
    shifted[...] = qw.qweight
    assert not is_aligned(shifted)
    built = quant.QuantizedMatrix(shifted, qw.scales, qw.zeros, 4, 128, 384)
    assert is_aligned(built.qweight) and not built.qweight.flags.writeable
    np.testing.assert_array_equal(built.qweight, qw.qweight)
    shifted[0, 0] ^= 1  # the caller's array: the matrix keeps its own copy
    assert built.qweight[0, 0] == qw.qweight[0, 0]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "w.npz")
        qw.save(path)
        loaded = quant.QuantizedMatrix.load(path)
    assert is_aligned(loaded.qweight)
    np.testing.assert_array_equal(loaded.qweight, qw.qweight)
    x = rng.standard_normal(384).astype(np.float32)
    np.testing.assert_array_equal(hl.gemv_q(built, x, device="numba"),
                                  hl.gemv_q(qw, x, device="numba"))


# --- the kernels' scratch on a cache line ---------------------------------------------------

@numba.njit
def _scratch_offsets(n):
    """(address mod 64, length, all writes read back) of each scratch helper's array."""
    a = _simd.empty64_u8(n)
    b = _simd.empty64_i8(n)
    c = _simd.empty64_i32(n)
    d = _simd.empty64_f32(n)
    for i in range(n):
        a[i] = i % 251
        b[i] = i % 127
        c[i] = i
        d[i] = np.float32(i)
    same = True
    for i in range(n):
        same &= a[i] == i % 251 and b[i] == i % 127 and c[i] == i and d[i] == np.float32(i)
    offs = np.array([a.ctypes.data % 64, b.ctypes.data % 64, c.ctypes.data % 64,
                     d.ctypes.data % 64])
    return offs, np.array([a.size, b.size, c.size, d.size]), same


def test_kernel_scratch_starts_on_a_cache_line_at_every_length():
    # numba's own np.empty starts on 32 bytes: every other array would be half a line off
    for n in (0, 1, 3, 16, 17, 100, 384, 4096, 12288 + 5):
        offs, sizes, same = _scratch_offsets(n)
        assert offs.tolist() == [0, 0, 0, 0], n
        assert sizes.tolist() == [n] * 4 and same
    assert _simd.empty64_f32(5).dtype == np.float32 and _simd.empty64_i8(5).dtype == np.int8
    assert _simd.empty64_i32(5).flags.c_contiguous and _simd.empty64_u8(5).dtype == np.uint8
