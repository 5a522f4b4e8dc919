"""offload.analyze: the verdict of every loop of every example kernel, and the reasons."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload.examples import EXAMPLES


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_verdicts(name):
    ex = EXAMPLES[name]
    report = offload.analyze(ex.fn)
    assert tuple((lp.var, lp.verdict) for lp in report.loops) == ex.expected


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs_on_its_small_args(name):
    ex = EXAMPLES[name]
    ex.fn(*ex.make_args())  # the generator fits the function


def test_suite_spans_all_verdicts():
    verdicts = {v for ex in EXAMPLES.values() for _, v in ex.expected}
    assert verdicts == {"parallel", "reduction", "sequential", "unsupported"}
    assert len(EXAMPLES) >= 15


def test_reasons_name_the_dependence():
    rep = offload.analyze(EXAMPLES["prefix_sum"].fn)
    (loop,) = rep.loops
    assert any(d.array == "out" and d.kind == "flow" and d.distance == (1,)
               for d in loop.dependences)
    seidel = offload.analyze(EXAMPLES["seidel_2d"].fn)
    i_loop = seidel.loops[1]
    assert any(d.distance[:2] == (0, 1) for d in i_loop.dependences), i_loop.reasons
    assert "carries a value" in offload.analyze(EXAMPLES["running_sum"].fn).loops[0].why


def test_private_and_reduction_scalars():
    rep = offload.analyze(EXAMPLES["nbody_forces"].fn)
    outer, inner = rep.loops
    assert {"ax", "ay", "az", "dx", "r2", "inv"} <= set(outer.private)
    assert inner.reductions == {"ax": "+", "ay": "+", "az": "+"}
    assert offload.analyze(EXAMPLES["array_max"].fn).loops[0].reductions == {"m": "max"}
    himeno = offload.analyze(EXAMPLES["himeno"].fn)
    assert "read after it" in himeno.loops[0].reasons[0]  # gosa is returned


def test_read_write_sets():
    lp = offload.analyze(EXAMPLES["matvec"].fn).loops[0]
    assert lp.arrays_read == ["A", "x"] and lp.arrays_written == ["y"]
    assert lp.scalars_written == ["s"]


def _uses_helper(x, y):
    for i in range(x.shape[0]):
        y[i] = np.cos(x[i]) + _helper(x[i])


_SEEN: list[float] = []


def _helper(v):  # impure (appends to a global list); a pure helper is modelled (front/helpers)
    _SEEN.append(v)
    return v * 2


class _Obj:
    scale = 2.0


def _uses_attribute(x, obj):
    for i in range(x.shape[0]):
        x[i] = x[i] * obj.scale


def _breaks(x):
    for i in range(x.shape[0]):
        if x[i] < 0:
            break
        x[i] = 1.0


def _scalar_subscript(x, k):
    for i in range(x.shape[0] - 1):
        x[i + k] = x[i] * 2.0  # k unknown: may overlap


def _shifted_by_param(x, n):
    for i in range(n):
        x[i + n] = x[i]  # offset by the trip count: writes [n, 2n), reads [0, n)


def _shifted_by_other_param(x, n, k):
    for i in range(n):
        x[i + k] = x[i]  # a symbol on one side only, not the trip count: conservative


def _odd_even(x):
    for i in range(0, x.shape[0] - 1, 2):
        x[i + 1] = x[i]  # step 2: writes odd, reads even — parallel (GCD)


@pytest.mark.parametrize(("fn", "text"), [
    (_uses_helper, "call to unknown function _helper()"),
    (_uses_attribute, "attribute access obj.scale"),
    (_breaks, "break"),
])
def test_unsupported_constructs_are_reported_not_raised(fn, text):
    (loop,) = offload.analyze(fn).loops
    assert loop.verdict == "unsupported"
    assert any(text in r for r in loop.reasons)


def test_conservative_on_unknown_offsets_and_exact_on_strides():
    assert offload.analyze(_scalar_subscript).loops[0].verdict == "sequential"
    assert offload.analyze(_shifted_by_param).loops[0].verdict == "parallel"
    assert offload.analyze(_shifted_by_other_param).loops[0].verdict == "sequential"
    assert offload.analyze(_odd_even).loops[0].verdict == "parallel"


def test_bad_functions_raise_clear_errors():
    with pytest.raises(hl.InvalidInputError, match="lambda"):
        offload.analyze(lambda x: x)
    with pytest.raises(hl.InvalidInputError, match="built-in"):
        offload.analyze(len)
    with pytest.raises(hl.InvalidInputError, match="Python function"):
        offload.analyze(np.add)
    ns: dict = {}
    exec("def f(x):\n    for i in range(3):\n        x[i] = 0\n", ns)
    with pytest.raises(hl.InvalidInputError, match="source of 'f' is not available"):
        offload.analyze(ns["f"])


def test_report_views():
    rep = offload.analyze(EXAMPLES["jacobi_2d"].fn)
    text = str(rep)
    assert "5 loops, 4 parallelizable" in text and "L1" in text
    html = rep._repr_html_()
    assert "<table>" in html and "sequential" in html
    assert rep.loop("L2").var == "i"
    with pytest.raises(KeyError, match="L1, L2"):
        rep.loop("L9")


def _user_scalar_named_d(x, d):
    for i in range(x.shape[0] // 2 - 4):
        x[2 * i] = x[2 * i + d] * 0.5  # d is the caller's offset (-2 overlaps): sequential


def test_user_names_do_not_collide_with_internal_atoms():
    assert offload.analyze(_user_scalar_named_d).loops[0].verdict == "sequential"


# -- names bound to non-negative expressions of sizes (report._size_names) ----------------------
def _second_half(x, out):
    n = x.shape[0]
    h = n // 2
    for i in range(h, n):
        out[i] = 2.0 * x[i]


def _chained_sizes(x, out):
    n = len(x)
    q = (n + 1) // 2
    r = min(q * 2, n)
    for i in range(q, r):
        out[i] = x[i] - x[i - q]


def _abs_start(x, out, k):
    n = x.shape[0]
    s = abs(k)
    for i in range(s, n):
        out[i] = 2.0 * x[i]


def _may_be_minus_one(x, out):
    n = x.shape[0]
    h = n // 2 - 1  # -1 when n < 2: out[-1] is out[n - 1], written twice
    for i in range(h, n):
        out[i] = 2.0 * x[i]


def _rebound(x, out, k):
    n = x.shape[0]
    h = n // 2
    if k:
        h = k  # a caller's value: may be negative
    for i in range(h, n):
        out[i] = 2.0 * x[i]


@pytest.mark.parametrize("fn, verdict", [(_second_half, "parallel"), (_chained_sizes, "parallel"),
                                         (_abs_start, "parallel"),
                                         (_may_be_minus_one, "sequential"),
                                         (_rebound, "sequential")])
def test_sizes_divided_or_combined_stay_non_negative(fn, verdict):
    assert offload.analyze(fn).loops[0].verdict == verdict
