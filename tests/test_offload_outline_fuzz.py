"""A few seeds of the outlining fuzzer (``tests/fuzz/outline_differential.py``): generated
kernels with formatted strings numba cannot compile inserted at random places; each plan
gives Python's outputs on other sizes."""

from __future__ import annotations

import pytest

from tests.fuzz.outline_differential import BREAKER, broken_source, check


@pytest.mark.parametrize("seed", [0, 6, 7, 10])  # seeds whose plans outlined loops
def test_outlined_plans_of_generated_kernels_agree_with_python(seed):
    what, _, source = check(seed)
    assert what in ("", "skip"), f"{what}\n{source}"
    assert BREAKER in source


def test_breakers_keep_the_source_valid():
    import random

    src = "def f(n, x):\n    s = 0\n    for i in range(n):\n        if i:\n            s += 1\n" \
          "        else:\n            s -= 1\n    return s\n"
    for seed in range(20):
        out = broken_source(src, random.Random(seed))
        compile(out, "<test>", "exec")
        assert out.count(BREAKER) == 2 and "\n" + " " * 8 + BREAKER + "\n        else" not in out
