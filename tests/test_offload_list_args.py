"""Lists of numbers a function only reads reach the numba variant as arrays
(:mod:`hetlab.offload.analysis.listargs`, :mod:`hetlab.offload.runtime.listargs`): same
results, no reflected list; parameters used any other way keep the list."""

from __future__ import annotations

import ast
import inspect
import textwrap

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.analysis.listargs import read_only_sequences
from hetlab.offload.runtime.listargs import as_array
from tests.offload_corpus.heldout_probe7 import weights_from_list


def iterated(vals, out):
    for i, v in enumerate(vals):
        out[i] = 2.0 * v + len(vals)


def looped(vals):
    s = 0
    for v in vals:
        s += v * v
    return s


def written(vals, w):
    for i in range(len(vals)):
        vals[i] = vals[i] * w[i]


def updated(vals):
    for i in range(len(vals)):
        vals[i] += 1.0


def appended(vals):
    for i in range(3):
        vals.append(float(i))


def returned(vals):
    for _i in range(len(vals)):
        pass
    return vals


def sliced(vals):
    s = 0.0
    for v in vals[1:]:
        s += v
    return s


def rebound(vals):
    vals = [*vals, 1.0]
    s = 0.0
    for i in range(len(vals)):
        s += vals[i]
    return s


def _tree(fn) -> ast.FunctionDef:
    node = ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


@pytest.mark.parametrize("fn, want", [
    (weights_from_list, (0, 1)), (iterated, (0,)), (looped, (0,)),  # w: an array, never a list
    (written, (1,)),  # vals is written; w only read
    (updated, ()), (appended, ()), (returned, ()), (sliced, ()), (rebound, ()),
])
def test_which_parameters_qualify(fn, want):
    assert read_only_sequences(_tree(fn)) == want


@pytest.mark.parametrize("value, kind", [
    ([0.5, 1.5, -2.0], "f"), ([0.5, 1, 2], "f"), ([1, 2, 3], "i"), ([True, False], "b"),
    ([0.5, float("nan"), float("inf")], "f"),
])
def test_converted(value, kind):
    arr = as_array(value)
    assert isinstance(arr, np.ndarray) and arr.dtype.kind == kind
    np.testing.assert_array_equal(arr, value)  # NaN positions equal too


@pytest.mark.parametrize("value", [
    [], [1, 2.5], [True, 2], [1, 2**70], [[1.0], [2.0]], ["a"], (1.0, 2.0), np.ones(3), 3.0,
    [1.0, "a"], [1.0, None], [1.0, [2.0]], [1.0, 2j],
])
def test_kept(value):
    assert as_array(value) is value


def test_a_plan_gets_the_list_as_an_array_with_the_same_result():
    rng = np.random.default_rng(1)
    vals, w = rng.random(5000).tolist(), rng.random(5000)
    rep = offload.analyze(weights_from_list)
    variant = offload.transform(rep, loops=["L1"])
    assert variant.as_arrays == (0, 1)
    got = variant.compile()(vals, w)
    assert got == pytest.approx(weights_from_list(vals, w), rel=1e-12)
    assert isinstance(vals, list) and len(vals) == 5000  # the caller's list untouched
    out = np.zeros(4)
    offload.transform(offload.analyze(iterated), loops=["L1"]).compile()([1, 2, 3, 4], out)
    np.testing.assert_array_equal(out, [6.0, 8.0, 10.0, 12.0])
