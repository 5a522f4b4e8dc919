"""Contraction recognition, second round: temporaries read in deeper loops, privatized shared
array temporaries, three-factor products, elementwise statements and reductions with an
elementwise body; near misses that must stay loops; the generated code equal to the plain
function run as Python, and compiled by numba."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload.runtime.measure import verify

from . import _offload_contraction_cases2 as K
from .test_offload_contractions import _python_variant, _run

R = np.random.default_rng(11)


def _m(*shape):
    return R.random(shape) + 0.1


n, m, p = 5, 4, 6
POSITIVE = {  # kernel: (block patterns, arguments)
    "outer_hoisted": (["axpy+outer"], lambda: (0.75, _m(n), _m(m), np.zeros((n, m)))),
    "row_normalize": (["sum+map"], lambda: (_m(n, m), np.zeros((n, m)))),
    "doitgen": (["contraction"], lambda: (_m(3, 4, p), _m(p, p), np.zeros(p))),
    "doitgen_sum_style": (["contraction"], lambda: (_m(2, 3, p), _m(p, p), _m(p))),
    "scaled_product": (["matmul"], lambda: (1.5, _m(n, m), _m(m, p), _m(m), _m(n, p))),
    "row_scaled_product": (["matmul"], lambda: (_m(n, m), _m(m, p), _m(n), _m(n, p))),
    "bilinear": (["sum"], lambda: (_m(n), _m(n, m), _m(m))),
    "zscore_np": (["mean+sum+map"], lambda: (_m(7, 3), np.zeros((7, 3)))),
    "column_std_math": (["mean", "sum+map"], lambda: (_m(7, 3), np.zeros(3), np.zeros(3))),
}
NEAR = ["nm_running_sum", "nm_read_before_set", "nm_shared_not_reset", "nm_shared_local_view",
        "nm_inplace_matvec", "nm_inplace_product", "nm_three_chain", "nm_max_in_reduction",
        "nm_index_as_value"]


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_entry_is_recognized(name):
    assert [b.pattern for b in offload.analyze(getattr(K, name)).blocks] == POSITIVE[name][0]


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_generated_code_equals_the_original(name):
    fn = getattr(K, name)
    args = POSITIVE[name][1]()
    ok, err = verify(_run(_python_variant(fn), args), _run(fn, args))
    assert ok, err


@pytest.mark.parametrize("name", NEAR)
def test_near_misses_stay_loops(name):
    assert offload.analyze(getattr(K, name)).blocks == []


def test_three_factors_become_a_scaled_operand_of_one_product():
    (b,) = offload.analyze(K.scaled_product).blocks
    assert b.call.count("@") == 1 and "d[" in b.call and "for " not in b.call
    (b,) = offload.analyze(K.row_scaled_product).blocks
    assert "[:, None]" in b.call and b.call.count("@") == 1


def test_privatized_temporary_is_copied_back_from_the_last_iteration():
    (b,) = offload.analyze(K.doitgen).blocks
    assert "@" in b.call and "[-1, -1, :]" in b.call and "acc[" in b.call
    fn = _python_variant(K.doitgen)
    for shape in ((0, 3, p), (2, 0, p), (2, 3, 0)):  # no iteration: acc keeps its values
        args = (_m(*shape), _m(shape[2], shape[2]), _m(shape[2]))
        ok, err = verify(_run(fn, args), _run(K.doitgen, args))
        assert ok, err


def test_elementwise_body_and_sqrt_become_ufuncs_not_loops():
    (b,) = offload.analyze(K.zscore_np).blocks
    assert "np.sqrt(" in b.call and "np.sum(" in b.call and "for " not in b.call
    b = offload.analyze(K.column_std_math).blocks[1]
    assert "np.sqrt(" in b.call and "math." not in b.call


pytest.importorskip("numba")

NJIT = ["doitgen", "row_scaled_product", "zscore_np", "outer_hoisted"]


@pytest.mark.parametrize("name", NJIT)
def test_njit_variant_equals_the_original(name):
    fn = getattr(K, name)
    report = offload.analyze(fn)
    v = offload.transform(report, blocks=[b.id for b in report.blocks])
    args = POSITIVE[name][1]()
    ok, err = verify(_run(v.compile(), args), _run(fn, args))
    assert ok, err


def test_shared_temporary_that_is_a_view_of_the_output_is_refused():
    v = offload.transform(K.doitgen, blocks=["B1"])
    A = _m(2, 3, p)
    with pytest.raises(hl.InvalidInputError):
        v.compile()(A, _m(p, p), A[0, 0])  # acc is a view of A


@pytest.mark.parametrize("name", ["doitgen", "scaled_product", "zscore_np", "row_normalize"])
def test_cuda_block_array_code_check_with_numpy_standing_in_for_cupy(name):
    """The CuPy side of the new entries: the generated code run with ``_xp = numpy`` (an
    array-code check of the statements and transfers, not a GPU run)."""
    fn = getattr(K, name)
    v = offload.transform(fn, [], target="cupy", blocks=["B1"], array_module=np)
    assert "range(" not in v.source
    args = POSITIVE[name][1]()
    ok, err = verify(_run(v.compile(), args), _run(fn, args))
    assert ok, err
