"""Mirrored Gram products (hetlab.offload.analysis.gram): one matrix product and row-wise
copies in place of C[a, b] = C[b, a] = Σ X[i, a] Y[i, b] over b ≥ a; near misses stay loops;
aliased arguments refused."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.errors import InvalidInputError
from hetlab.offload.runtime.measure import copy_args, outputs_of, verify

from . import _offload_gram_cases as K

R = np.random.default_rng(3)


def _run(fn, args):
    work = copy_args(args)
    return outputs_of(fn(*work), work)


def _gram(fn):
    return [b for b in offload.analyze(fn).blocks if b.pattern == "gram (mirrored)"]


POSITIVE = {
    "cov_scalar": lambda: (R.random((23, 9)), np.full((9, 9), -1.0)),
    "corr_array_acc": lambda: (R.random((17, 8)), np.full((8, 8), -1.0), 8),
    "cross_plus_form": lambda: (R.random((19, 7)), R.random((19, 7)), np.full((7, 7), -1.0),
                                0.5),
}


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_recognized_and_equal_to_the_loops(name):
    fn = getattr(K, name)
    (b,) = _gram(fn)
    assert "@" in b.call and b.call.count("for ") == 1  # one product, a loop of row copies
    v = offload.transform(fn, blocks=[b.id])
    args = POSITIVE[name]()
    got, want = _run(v.compile(), args), _run(fn, args)
    ok, err = verify(got, want)
    assert ok, err
    at = 3 if name == "cross_plus_form" else 2  # (return value, *array arguments)
    out, untouched = got[at], want[at] == -1.0
    assert np.array_equal(out == -1.0, untouched)  # exactly the elements the loops write
    assert np.array_equal(np.where(untouched, 0, out), np.where(untouched, 0, out).T)


def test_no_iterations_leave_the_output_alone():
    v = offload.transform(K.corr_array_acc, blocks=[_gram(K.corr_array_acc)[0].id])
    for m in (0, -2, 1):
        args = (R.random((5, 4)), np.full((4, 4), -1.0), m)
        np.testing.assert_array_equal(_run(v.compile(), args)[2],
                                      _run(K.corr_array_acc, args)[2])


@pytest.mark.parametrize("name", ["nm_mirror_differs", "nm_scale_reads_array", "nm_offset_two",
                                  "nm_int_init", "nm_output_is_operand", "nm_swapped_operands",
                                  "nm_live_temp"])
def test_near_misses_stay_loops(name):
    assert _gram(getattr(K, name)) == []


def test_output_that_is_a_view_of_the_operand_is_refused():
    v = offload.transform(K.cov_scalar, blocks=["B1"])
    X = R.random((9, 9))
    with pytest.raises(InvalidInputError):
        v.compile()(X, X)
    want, got = X.copy(), X.copy()
    K.cov_scalar(want, want)
    v.compile(on_alias="serial")(got, got)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_cuda_block_array_code_check_with_numpy_standing_in_for_cupy(name):
    """The CuPy side: the generated code run with ``_xp = numpy`` (an array-code check of the
    statements and transfers, not a GPU run)."""
    fn = getattr(K, name)
    (b,) = _gram(fn)
    v = offload.transform(fn, [], target="cupy", blocks=[b.id], array_module=np)
    args = POSITIVE[name]()
    ok, err = verify(_run(v.compile(), args), _run(fn, args))
    assert ok, err


def test_numba_form_uses_whole_operands_uncopied_and_copies_partial_ones():
    (b,) = _gram(K.cov_scalar)  # rows up to n = X.shape[0]: whole at run time
    assert "if n == X.shape[0]:\n    _hg = X.T @ X\nelse:" in b.numba_call
    assert "_hx = np.ascontiguousarray(X[:max(n, 0), :])" in b.numba_call.split("else:")[1]
    assert " if " not in b.call and "np.ascontiguousarray" in b.call  # NumPy/CuPy form kept
    (b,) = _gram(K.cross_plus_form)  # literal starts 1 and 2: never whole, no check
    assert b.numba_call == ""
    v = offload.transform(K.corr_array_acc, blocks=[_gram(K.corr_array_acc)[0].id]).compile()
    for m in (8, 5):  # whole, then partial columns (the copy)
        args = (R.random((17, 8)), np.full((8, 8), -1.0), m)
        ok, err = verify(_run(v, args), _run(K.corr_array_acc, args))
        assert ok, (m, err)
