"""The outlining corpus (``tests/offload_corpus/outlining.py``): every function's answer key and
every plan ``search`` returns give the function's results and effects on fresh arguments of
other sizes; each function numba cannot compile as a whole."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.runtime.measure import copy_args, outputs_of, verify
from tests.offload_corpus import outlining as corpus

QUICK = dict(budget=4, progress=False)
SMALL = 60


def _agrees(fn, case, sizes):
    rng = np.random.default_rng(11)
    for n in sizes:
        args = case.make(rng, n)
        work, plain = copy_args(args), copy_args(args)
        with contextlib.redirect_stdout(io.StringIO()) as got_text:
            got = outputs_of(fn(*work), work)
        with contextlib.redirect_stdout(io.StringIO()) as want_text:
            want = outputs_of(case.fn(*plain), plain)
        ok, err = verify(got, want)
        assert ok, (case.fn.__name__, n, err)
        assert len(got_text.getvalue().splitlines()) == len(want_text.getvalue().splitlines())


@pytest.mark.parametrize("name", sorted(corpus.CASES))
def test_the_answer_key_gives_the_plain_result(name):
    case = corpus.CASES[name]
    _agrees(case.key, case, (3, SMALL))


@pytest.mark.parametrize("name", sorted(corpus.CASES))
def test_the_plan_gives_the_plain_result(name):
    case = corpus.CASES[name]
    args = case.make(np.random.default_rng(0), SMALL)
    with contextlib.redirect_stdout(io.StringIO()):
        plan = offload.search(case.fn, args, **QUICK)
    assert plan.fallback, f"{name} compiles as a whole: not an outlining case"
    for out in plan.outlined:  # each outlined loop's plan was searched and verified
        assert out.plan.verified and not out.plan.fallback
    _agrees(plan.compile(), case, (3, SMALL + 7))
