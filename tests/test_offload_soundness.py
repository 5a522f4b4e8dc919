"""Soundness of the dependence test on generated kernels: whenever the analysis calls a loop
parallel, running that loop's iterations in reverse order gives the same result."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hetlab import offload

from ._source_modules import load_source


def _load(src: str):
    """Import ``src`` from a real file so inspect can read its source."""
    return load_source(src, prefix="sound")


def _sub(coef: int, var: str, off: int) -> str:
    return f"{coef} * {var} + {off}" if coef else str(off)


coefs = st.integers(0, 3)
offs = st.integers(0, 6)


@settings(max_examples=120, deadline=None)
@given(lo=st.integers(0, 4), trips=st.integers(1, 10), step=st.sampled_from([1, 2, 3]),
       w=st.tuples(coefs, offs), r=st.tuples(coefs, offs), r2=st.tuples(coefs, offs))
def test_parallel_1d_loops_are_order_independent(lo, trips, step, w, r, r2):
    hi = lo + trips * step
    body = (f"A[{_sub(w[0], 'i', w[1])}] = 0.5 * A[{_sub(r[0], 'i', r[1])}] "
            f"+ A[{_sub(r2[0], 'i', r2[1])}] + B[i]")
    src = f"def k(A, B):\n    for i in range({lo}, {hi}, {step}):\n        {body}\n"
    verdict = offload.analyze(_load(src)).loops[0].verdict
    size = 3 * hi + 8
    rng = np.random.default_rng(0)
    A, B = rng.random(size), rng.random(size)
    fwd, rev = {}, {}
    exec(src, fwd)
    exec(src.replace(f"range({lo}, {hi}, {step})",
                     f"list(range({lo}, {hi}, {step}))[::-1]"), rev)
    a1, a2 = A.copy(), A.copy()
    fwd["k"](a1, B)
    rev["k"](a2, B)
    if verdict == "parallel":
        np.testing.assert_array_equal(a1, a2, err_msg=src)
    else:
        assert verdict == "sequential", src


@settings(max_examples=150, deadline=None)
@given(n=st.integers(2, 6), tri=st.sampled_from(["full", "from_i", "to_i"]),
       wi=st.tuples(st.integers(0, 1), offs),
       wj=st.tuples(st.integers(0, 1), offs), ri=st.tuples(st.integers(0, 2), offs),
       rj=st.tuples(st.integers(0, 2), offs), swap=st.booleans())
def test_parallel_2d_loops_are_order_independent(n, tri, wi, wj, ri, rj, swap):
    jrange = {"full": f"range({n})", "from_i": f"range(i, {n})", "to_i": "range(i + 1)"}[tri]
    rd = (f"A[{_sub(rj[0], 'j', rj[1])}, {_sub(ri[0], 'i', ri[1])}]" if swap
          else f"A[{_sub(ri[0], 'i', ri[1])}, {_sub(rj[0], 'j', rj[1])}]")
    src = (f"def k(A):\n    for i in range({n}):\n        for j in {jrange}:\n"
           f"            A[{_sub(wi[0], 'i', wi[1])}, {_sub(wj[0], 'j', wj[1])}] = "
           f"{rd} * 0.5 + 1.0\n")
    loops = offload.analyze(_load(src)).loops
    size = 3 * n + 8
    A = np.random.default_rng(1).random((size, size))
    ns: dict = {}
    exec(src, ns)
    want = A.copy()
    ns["k"](want)
    outer_rev = src.replace(f"for i in range({n}):", f"for i in list(range({n}))[::-1]:", 1)
    inner_rev = src.replace(f"for j in {jrange}:", f"for j in list({jrange})[::-1]:", 1)
    for loop, variant in zip(loops, [outer_rev, inner_rev], strict=True):
        if loop.verdict != "parallel":
            continue
        ns = {}
        exec(variant, ns)
        got = A.copy()
        ns["k"](got)
        np.testing.assert_array_equal(got, want, err_msg=f"{loop.id} parallel?\n{src}")


def _signed_sub(coef: int, var: str, off: int) -> str:
    return f"{coef} * {var} + ({off})" if coef else f"({off})"


@settings(max_examples=150, deadline=None)
@given(lo=st.integers(0, 4), trips=st.integers(1, 10), step=st.sampled_from([1, 2, 3]),
       w=st.tuples(st.integers(-2, 2), st.integers(-8, 6)),
       r=st.tuples(st.integers(-2, 2), st.integers(-8, 6)))
def test_wrap_around_subscripts_are_never_parallel_when_order_matters(lo, trips, step, w, r):
    """Negative subscripts wrap to the end of the array (``A[-i]`` is ``A[n - i]``): a loop
    called parallel must give the same result run backwards, wrap-around included."""
    hi = lo + trips * step
    wsub, rsub = _signed_sub(w[0], "i", w[1]), _signed_sub(r[0], "i", r[1])
    src = (f"def k(A, B):\n    for i in range({lo}, {hi}, {step}):\n"
           f"        A[{wsub}] = 0.5 * A[{rsub}] + B[i]\n")
    verdict = offload.analyze(_load(src)).loops[0].verdict
    touched = [c * i + o for i in range(lo, hi, step) for c, o in (w, r)]
    n = max(hi, *(x + 1 for x in touched), *(-x for x in touched))  # tight: wraps collide
    rng = np.random.default_rng(2)
    A, B = rng.random(n), rng.random(n)
    fwd, rev = {}, {}
    exec(src, fwd)
    exec(src.replace(f"range({lo}, {hi}, {step})",
                     f"list(range({lo}, {hi}, {step}))[::-1]"), rev)
    a1, a2 = A.copy(), A.copy()
    fwd["k"](a1, B)
    rev["k"](a2, B)
    if verdict == "parallel":
        np.testing.assert_array_equal(a1, a2, err_msg=src)
    else:
        assert verdict == "sequential", src
