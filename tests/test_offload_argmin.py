"""Argmin/argmax reductions as exact array code: the same index and the same distance bits as
the loop (ties, near-ties, NaN, all-NaN rows, no candidate), near misses left as loops."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.analysis.parhelp import install

from . import _offload_argmin_cases as K


def _python_variant(fn):
    """The block variant as plain Python (``@njit`` dropped), in the kernel module's names."""
    report = offload.analyze(fn)
    src = offload.transform(report, blocks=[b.id for b in report.blocks]).source
    src = "\n".join(ln for ln in src.splitlines() if not ln.startswith("@njit"))
    ns = dict(vars(K))
    install(src, ns, python=True)  # parallel helpers (parhelp) as plain Python
    exec(compile(src, f"<variant of {fn.__name__}>", "exec"), ns)
    return ns[report.name]

R = np.random.default_rng(23)


def _inputs(n=600, k=7, m=5):
    X, C = R.random((n, m)), R.random((k, m))
    X[3] = C[2]                       # a zero distance
    C[5] = C[1]                       # exact ties: the first index wins
    X[10, 0] = np.nan                 # every distance NaN: the row keeps its initial values
    C[4, 2] = np.nan                  # one candidate NaN for every row: never chosen
    X[11] = C[0] + 1e-17              # near-ties
    C[6] = C[0] + np.array([0, 0, 0, 0, 2.0 ** -52])
    return X, C


def _both(fn, make):
    a, b = make(), make()
    fn(*a)
    _python_variant(fn)(*b)
    return a, b


@pytest.mark.parametrize("name, kind", [("assign", "argmin"), ("assign_direct", "argmin"),
                                        ("farthest", "argmax")])
def test_argmin_is_recognized(name, kind):
    (b,) = offload.analyze(getattr(K, name)).blocks
    assert b.pattern == kind and f"np.{kind}(" in b.call and "np.isnan" in b.call
    assert "@" not in b.call  # the direct form, never the expansion


@pytest.mark.parametrize("name", ["assign", "assign_direct", "farthest", "nm_exp"])
def test_matching_leaves_the_functions_tree_as_written(name):
    """The serial variant is built from the same tree: the matcher must not edit it."""
    report = offload.analyze(getattr(K, name))
    assert "_hb" not in offload.transform(report, []).source


def test_assignment_is_bit_identical_with_ties_and_nan():
    X, C = _inputs()
    want, got = _both(K.assign, lambda: (X, C, np.full(len(X), -5), np.zeros(len(X))))
    assert np.array_equal(want[2], got[2])
    assert np.array_equal(want[3].view(np.int64), got[3].view(np.int64))
    assert got[2][10] == 0 and np.isinf(got[3][10])  # all-NaN row: initial values kept
    assert 4 not in got[2] and got[2][3] == 2


@pytest.mark.parametrize("name", ["assign_direct", "farthest"])
def test_other_styles_give_the_loops_labels(name):
    X, C = _inputs()
    want, got = _both(getattr(K, name), lambda: (X, C, np.full(len(X), -5)))
    assert np.array_equal(want[2], got[2])


def test_no_candidate_and_no_row():
    X, C = _inputs()
    for Xs, Cs in ((X, C[:0]), (X[:0], C), (X[:, :0], C[:, :0])):
        want, got = _both(K.assign, lambda Xs=Xs, Cs=Cs: (Xs, Cs, np.full(len(Xs), -5),
                                                          np.zeros(len(Xs))))
        assert np.array_equal(want[2], got[2]) and np.array_equal(want[3], got[3])


@pytest.mark.parametrize("name", ["nm_non_strict", "nm_writes_what_it_reads", "nm_exp",
                                  "nm_else", "nm_step", "nm_view"])
def test_near_misses_stay_loops(name):
    assert offload.analyze(getattr(K, name)).blocks == []


pytest.importorskip("numba")


def test_njit_variant_is_bit_identical():
    v = offload.transform(K.assign, blocks=["B1"]).compile()
    X, C = _inputs(n=700)
    a = (X, C, np.full(len(X), -5), np.zeros(len(X)))
    b = tuple(x.copy() for x in a)
    K.assign(*a)
    v(*b)
    assert np.array_equal(a[2], b[2]) and np.array_equal(a[3].view(np.int64), b[3].view(np.int64))
