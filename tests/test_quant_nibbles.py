"""The VNNI group dot's nibble split, lane by lane against numpy (exact integers).

On CPUs with AVX512-VBMI the high nibbles come from ``vpmultishiftqb`` (a rotating byte
select) instead of a shift: every byte position of a word, the top byte of each qword included
(where the selection wraps), must give the same codes as ``(w >> 4) & 0xF``.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from hetlab.kernels.quant import _simd

pytestmark = pytest.mark.skipif(not _simd.HAS_VNNI, reason="needs AVX512-VNNI")


@numba.njit(cache=False)
def _idot(q, xl, acc):  # pragma: no cover - compiled
    _simd.idot4_vnni_acc(q, 0, xl, 0, acc, np.float32(1.0))


def _expected(q: np.ndarray, xl: np.ndarray) -> np.ndarray:
    b = q.view(np.uint8).reshape(16, 4).astype(np.int64)  # lane i: bytes 4i … 4i+3
    x = xl.astype(np.int64)
    return ((b & 0xF) * x[:64].reshape(16, 4) + (b >> 4) * x[64:].reshape(16, 4)).sum(axis=1)


@pytest.mark.parametrize("seed", range(4))
def test_vnni_dot_splits_every_nibble_exactly(seed):
    rng = np.random.default_rng(seed)
    q = rng.integers(0, 2**32, 16, dtype=np.uint64).astype(np.uint32)
    q[0], q[1] = 0xF0F0F0F0, 0x0F0F0F0F  # high and low nibbles alone
    xl = rng.integers(-127, 128, 128).astype(np.int8)
    acc = np.zeros(16, np.float32)
    _idot(q, xl, acc)
    np.testing.assert_array_equal(acc.astype(np.int64), _expected(q, xl))


def test_a_changed_high_nibble_changes_its_lane():
    q = np.zeros(16, np.uint32)
    xl = np.ones(128, np.int8)
    q[5] = 0x70000000  # high nibble of byte 3 (top byte of lane 5's half of the qword)
    acc = np.zeros(16, np.float32)
    _idot(q, xl, acc)
    assert acc[5] == 7 and acc.sum() == 7
