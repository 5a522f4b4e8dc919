"""Module-level lambdas called from a loop are helpers like ``def`` ones (``front/helpers.py``).

``SQUARE_PLUS = lambda v: v * v + 1.0`` at module level, called in the loop, is pure when its
expression is (the same rules as a ``def`` helper: no closure, pure calls only); the loop is
then parallel and the numba variant binds ``numba.njit(lambda)``. Two lambdas with the same
parameters on one source line cannot be told apart, so neither is a helper.
"""

from __future__ import annotations

import numpy as np

from hetlab import offload
from hetlab.offload.front.helpers import pure_helper

SQUARE_PLUS = lambda v: v * v + 1.0  # noqa: E731  (the style under test)
SCALED = lambda v, s=3.0: v * s  # noqa: E731
LOUD = lambda v: print(v)  # noqa: E731  (print is not a pure builtin)
TWIN_A, TWIN_B = lambda v: v + 1.0, lambda v: v - 1.0


def _make_closure():
    k = 2.0
    return lambda v: v * k  # a closure: reads a cell


CLOSED = _make_closure()


def square_plus_map(x, out):
    for i in range(x.shape[0]):
        out[i] = SQUARE_PLUS(x[i]) + SCALED(x[i])


def twin_map(x, out):
    for i in range(x.shape[0]):
        out[i] = TWIN_A(x[i])


def test_a_pure_module_lambda_is_a_helper_and_compiles():
    report = offload.analyze(square_plus_map)
    assert report.loop("L1").verdict == "parallel", str(report)
    x = np.random.default_rng(0).standard_normal(50)
    want, got = np.zeros(50), np.zeros(50)
    square_plus_map(x, want)
    offload.transform(report, ["L1"]).compile()(x, got)
    np.testing.assert_allclose(got, want)


def test_impure_closed_or_ambiguous_lambdas_are_not_helpers():
    ns = {"LOUD": LOUD, "CLOSED": CLOSED, "TWIN_A": TWIN_A, "TWIN_B": TWIN_B,
          "SQUARE_PLUS": SQUARE_PLUS}
    assert pure_helper("SQUARE_PLUS", ns) is SQUARE_PLUS
    for name in ("LOUD", "CLOSED", "TWIN_A", "TWIN_B"):
        assert pure_helper(name, ns) is None, name
    report = offload.analyze(twin_map)
    assert report.loop("L1").verdict == "unsupported" and "TWIN_A" in report.loop("L1").why
