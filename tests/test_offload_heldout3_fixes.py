"""Engine fixes found by the third held-out probe (tests/offload_corpus/heldout_probe3.py),
each with a positive case and a negative one (a case that must stay as it was)."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload import GAOptions, MeasureOptions

from .offload_corpus import heldout_probe3 as hp

pytest.importorskip("numba")

QUICK = dict(targets=("numba",), budget=2, progress=False, function_blocks=False,
             reference="njit", ga=GAOptions(population=2, generations=1),
             measure=MeasureOptions(repeats=1, warmup=0, confirm=0, among_work=0))

#: a module global the kernels below read or write
COUNTER = 0.0
SCALE = 3.0


# -- a whole-array read of an array the loop writes is a dependence ------------------------------
def renorm_inplace(x):
    for i in range(x.shape[0]):
        x[i] = x[i] / np.sqrt(np.dot(x, x))


def _sum_all(v):
    return np.sum(v)


def helper_reads_all(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + _sum_all(x)


def transposed_view_read(A):
    for i in range(A.shape[0]):
        A[i, 0] = np.sum(A.T)


def sizes_only(x):
    for i in range(x.shape[0]):
        x[i] = x[i] + x.shape[0] + len(x) + x.size + np.size(x) + np.shape(x)[0]


@pytest.mark.parametrize("fn", [hp.center_inplace, renorm_inplace, helper_reads_all,
                                transposed_view_read])
def test_a_whole_array_read_of_a_written_array_keeps_the_loop_serial(fn):
    lp = offload.analyze(fn).loop("L1")
    assert lp.verdict == "sequential" and "whole array" in lp.why, lp.why


def test_the_whole_array_read_plan_gives_the_plain_result():
    x = np.random.default_rng(0).random(5000)
    plan = offload.search(hp.center_inplace, (x.copy(),), **QUICK)
    assert not plan.loops
    want, got = x.copy(), x.copy()
    hp.center_inplace(want)
    plan.compile()(got)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)  # numba's np.mean


@pytest.mark.parametrize("fn", [hp.center_into, sizes_only, hp.add_first_entry])
def test_reads_of_no_element_or_of_unwritten_arrays_stay_parallel(fn):
    assert offload.analyze(fn).loop("L1").verdict == "parallel"


# -- a loop writing a global is refused with the reason ---------------------------------------
def count_into_global(x):
    global COUNTER
    for i in range(x.shape[0]):
        COUNTER += x[i]
    return COUNTER


def scale_by_global(x, out):
    for i in range(x.shape[0]):
        out[i] = SCALE * x[i]


def test_a_loop_writing_a_global_is_unsupported_and_runs_as_written():
    global COUNTER
    lp = offload.analyze(count_into_global).loop("L1")
    assert lp.verdict == "unsupported" and "global or nonlocal COUNTER" in lp.why, lp.why
    x = np.arange(4.0)
    plan = offload.search(count_into_global, (x,), **QUICK)
    assert not plan.loops
    COUNTER = 0.0
    assert plan.compile()(x) == 6.0 and COUNTER == 6.0


def test_a_global_only_read_stays_parallel():
    assert offload.analyze(scale_by_global).loop("L1").verdict == "parallel"


# -- a complex element's .real / .imag is a read of the element ---------------------------------
def imag_parts(z, out):
    for i in range(z.shape[0]):
        out[i] = z[i].imag - z[i].real


def store_real_attr(z, x):
    for i in range(x.shape[0]):
        z.real = x[i]


def sum_real_view(z):
    for i in range(z.shape[0]):
        z[i] = np.sum(z.real)


def test_real_and_imag_of_an_element_are_element_reads():
    assert offload.analyze(hp.complex_energy).loop("L1").verdict == "reduction"
    report = offload.analyze(imag_parts)
    assert report.loop("L1").verdict == "parallel"
    z = np.arange(9.0) + 1j * np.arange(9.0)[::-1]
    want, got = np.zeros(9), np.zeros(9)
    imag_parts(z, want)
    offload.transform(report, ["L1"]).compile()(z, got)
    np.testing.assert_array_equal(got, want)


def test_an_attribute_store_or_a_whole_view_read_is_not_parallel():
    lp = offload.analyze(store_real_attr).loop("L1")
    assert lp.verdict == "unsupported" and "store to attribute z.real" in lp.why, lp.why
    assert not offload.analyze(sum_real_view).loop("L1").parallelizable


# -- a while loop inside a for loop runs within its iteration ---------------------------------
def newton_cbrt(a, out):
    for i in range(a.shape[0]):
        x = 1.0
        it = 0
        while it < 60:
            x = x - (x * x * x - a[i]) / (3.0 * x * x)
            if abs(x * x * x - a[i]) < 1e-12:
                break
            it += 1
        out[i] = x


def carried_counter(idx, out):
    k = 0
    for i in range(idx.shape[0]):
        while k < idx[i]:
            k += 1
        out[i] = k


def break_out_of_for(x, out):
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            if x[j] > x[i]:
                break
        out[i] = j


def test_a_per_element_while_loop_leaves_the_for_loop_parallel():
    report = offload.analyze(newton_cbrt)
    assert report.loop("L1").verdict == "parallel", report.loop("L1").why
    assert offload.analyze(hp.escape_time).loop("L1").verdict == "parallel"
    a = np.random.default_rng(1).random(300) * 8 + 0.5
    want, got = np.zeros(300), np.zeros(300)
    newton_cbrt(a, want)
    offload.transform(report, ["L1"]).compile()(a, got)
    np.testing.assert_array_equal(got, want)


def test_a_while_loop_carrying_or_shifting_across_iterations_stays_serial():
    assert not offload.analyze(carried_counter).loop("L1").parallelizable
    assert not offload.analyze(hp.insertion_sort).loop("L1").parallelizable
    x = np.random.default_rng(2).random(200)
    plan = offload.search(hp.insertion_sort, (x.copy(),), **QUICK)
    got = x.copy()
    plan.compile()(got)
    np.testing.assert_array_equal(got, np.sort(x))


def test_a_break_out_of_a_for_loop_refuses_only_that_loop():
    report = offload.analyze(break_out_of_for)
    assert report.loop("L2").verdict == "unsupported" and "break" in report.loop("L2").why
    # each row runs its own inner loop, which always runs (range(n) inside range(n)): j is
    # bound in the row before it is read
    assert report.loop("L1").verdict == "parallel", report.loop("L1").why
    x = np.random.default_rng(3).random(97)
    want, got = np.zeros(97), np.zeros(97)
    break_out_of_for(x, want)
    offload.transform(report, ["L1"]).compile()(x, got)
    np.testing.assert_array_equal(got, want)


def test_a_nest_holding_a_while_loop_is_no_fpga_candidate():
    from hetlab.offload.targets.fpga.nests import find_nests

    report = offload.analyze(hp.escape_time)
    args = hp.PROBES["escape_time"].make(np.random.default_rng(0), 8)
    (nest,) = find_nests(report, args, threshold=0.0)
    assert not nest.candidate and "while loop at line" in nest.why
    (plain,) = find_nests(offload.analyze(hp.axpy_3d_inplace),
                          hp.PROBES["axpy_3d_inplace"].make(np.random.default_rng(0), 6),
                          threshold=0.0)
    assert plain.candidate, plain.why


# -- an accumulator holding a NumPy array is no parallel reduction -----------------------------
def column_totals(A):
    acc = np.zeros(A.shape[1])
    for i in range(A.shape[0]):
        acc = acc + A[i]
    return acc


def column_totals_into(A, acc):
    for i in range(A.shape[0]):
        acc = acc + A[i]
    return acc


def scalar_total(x):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + x[i]
    return s


def test_an_array_accumulator_is_not_a_reduction():
    lp = offload.analyze(column_totals).loop("L1")
    assert lp.verdict == "sequential" and "holds an array (np.zeros)" in lp.why, lp.why
    A = np.random.default_rng(3).random((4000, 3))
    plan = offload.search(column_totals, (A,), **QUICK)
    np.testing.assert_allclose(plan.compile()(A), A.sum(axis=0), rtol=1e-12)


def test_number_accumulators_stay_reductions_and_array_arguments_are_typed_at_search():
    assert offload.analyze(scalar_total).loop("L1").verdict == "reduction"
    # a parameter may be a number: analyze says reduction, search sees numba's array type
    assert offload.analyze(column_totals_into).loop("L1").verdict == "reduction"
    A = np.random.default_rng(4).random((4000, 3))
    plan = offload.search(column_totals_into, (A, np.zeros(3)), **QUICK)
    assert "L1" not in plan.loops
    np.testing.assert_allclose(plan.compile()(A, np.zeros(3)), A.sum(axis=0), rtol=1e-12)


# -- search tells the analysis which parameters are arrays -------------------------------------
def copy_positive(x, out):
    for i in range(len(x)):
        v = x[i]
        out[i] = v if v > 0 else 0.0


def store_rows(rows, x):
    for i in range(len(rows)):
        rows[i] = x


def test_search_knows_array_arguments_so_element_stores_copy_values():
    assert not offload.analyze(copy_positive).loop("L1").parallelizable  # out may be a list
    assert offload.analyze(copy_positive, arrays={"x", "out"}).loop("L1").verdict == "parallel"
    x = np.random.default_rng(5).random(500) - 0.5
    plan = offload.search(copy_positive, (x, np.zeros(500)), **QUICK)
    assert plan.report.loop("L1").verdict == "parallel" and "L1" in plan.genes
    out = np.zeros(500)
    plan.compile()(x, out)
    np.testing.assert_array_equal(out, np.maximum(x, 0.0))
    plan = offload.search(hp.masked_fill, hp.PROBES["masked_fill"].make(
        np.random.default_rng(0), 12), **QUICK)
    assert plan.report.loop("L1").verdict == "parallel"


def test_a_list_argument_still_may_hold_a_reference():
    rows = [np.zeros(3) for _ in range(4)]
    plan = offload.search(store_rows, (rows, np.ones(3)), **QUICK)
    assert not plan.report.loop("L1").parallelizable and "L1" not in plan.loops
