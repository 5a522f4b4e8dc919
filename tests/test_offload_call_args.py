"""What a compiled variant or plan does with arguments and state the search did not see.

- arguments numba cannot type (an empty list): a plan runs the original function, with a
  RuntimeWarning; a variant (what the search measures) raises, so the search never times
  Python for a compiled candidate; an exception the compiled code raises itself is not
  caught;
- a list of numbers holds no array: the per-call alias check does not walk its items;
- module-level and enclosing arrays the function reads are trailing parameters of the
  compiled function, filled at each call: numba would freeze them as constants.
"""

from __future__ import annotations

import warnings

import numba
import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.runtime.guard import array_leaves, untypable

QUICK = dict(budget=4, progress=False, reference="njit")

#: a lookup table the kernels below read (tests change it in place and restore it)
_LEVELS = np.array([0.0, 0.5, 1.0, 2.0])


def quantize_to_levels(codes, out):
    for i in range(codes.shape[0]):
        out[i] = _LEVELS[codes[i] % 4] * 2.0


def checked_sqrt(x, out):
    for i in range(x.shape[0]):
        if x[i] < 0.0:
            raise ValueError("negative input")
        out[i] = np.sqrt(x[i])


def list_total(vals, w):
    s = 0.0
    for i in range(len(vals)):
        s += vals[i] * w[i]
    return s


def test_untypable_tells_numbas_typing_errors_from_errors_the_code_raises():
    assert untypable(ValueError("cannot compute fingerprint of empty list"))
    with pytest.raises(numba.core.errors.TypingError) as caught:
        numba.njit(lambda x: x.no_such_attribute)(np.zeros(2))
    assert untypable(caught.value)
    assert not untypable(ValueError("negative input"))
    assert not untypable(IndexError("index 9 is out of bounds"))


def test_a_plan_runs_python_on_arguments_numba_cannot_type_and_a_variant_raises():
    plan = offload.search(list_total, ([1.0, 2.0, 3.0], np.ones(3)), **QUICK)
    f = plan.compile()
    with pytest.warns(RuntimeWarning, match="original function ran instead"):
        assert f([], np.ones(0)) == 0.0
    variant = plan.variant().compile()
    with pytest.raises(ValueError, match="fingerprint"):
        variant([], np.ones(0))


def test_an_exception_the_compiled_code_raises_is_not_hidden():
    plan = offload.search(checked_sqrt, (np.arange(1.0, 50.0), np.zeros(49)), **QUICK)
    f = plan.compile()
    x = np.arange(1.0, 50.0)
    x[7] = -1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback to Python
        with pytest.raises(ValueError, match="negative input"):
            f(x, np.zeros(49))


def test_a_list_of_numbers_is_not_walked_item_by_item():
    found: list = []
    assert array_leaves([1.0] * 200_000, "vals", found) and found == []
    assert array_leaves([np.zeros(2), np.ones(3)], "arrays", found) and len(found) == 2


def test_a_module_array_is_read_at_each_call_not_frozen():
    codes = np.arange(12)
    report = offload.analyze(quantize_to_levels)
    variant = offload.transform(report, ["L1"])
    assert "def quantize_to_levels(codes, out, _LEVELS):" in variant.source
    f = variant.compile()
    got = np.zeros(12)
    f(codes, got)
    saved = _LEVELS.copy()
    try:
        _LEVELS[:] = [9.0, 8.0, 7.0, 6.0]  # updated in place after compiling
        want, got = np.zeros(12), np.zeros(12)
        quantize_to_levels(codes, want)
        f(codes, got)
    finally:
        _LEVELS[:] = saved
    np.testing.assert_array_equal(got, want)


def test_an_enclosing_array_is_passed_too():
    table = np.array([1.0, 2.0, 3.0])

    def scaled_lookup(codes, out):
        for i in range(codes.shape[0]):
            out[i] = table[codes[i]] * 0.5

    report = offload.analyze(scaled_lookup)
    f = offload.transform(report, ["L1"]).compile()
    codes = np.array([0, 2, 1, 2])
    f(codes, got := np.zeros(4))
    table[2] = 10.0
    f(codes, got)
    np.testing.assert_array_equal(got, [0.5, 5.0, 1.0, 5.0])
