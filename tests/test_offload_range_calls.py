"""``front.walk.range_call_args``: the one reading of ``range(...)`` headers that the unsigned,
accumulator and collapse passes share."""

from __future__ import annotations

import ast

import pytest

from hetlab import offload
from hetlab.offload.front.walk import range_call_args


def _args(text: str, **kw) -> list[str] | None:
    found = range_call_args(ast.parse(text, mode="eval").body, **kw)
    return None if found is None else [ast.unparse(a) for a in found]


@pytest.mark.parametrize("text, kw, want", [
    ("range(n)", {}, ["n"]),
    ("prange(1, n - 1)", {}, ["1", "n - 1"]),
    ("range(0, n, 2)", {}, ["0", "n", "2"]),
    ("range(n, 0, -1)", {"positive_step": False}, ["n", "0", "-1"]),
    ("prange(n)", {"names": ("prange",)}, ["n"]),
])
def test_read(text, kw, want):
    assert _args(text, **kw) == want


@pytest.mark.parametrize("text, kw", [
    ("range(n, 0, -1)", {}),            # a negative step where a positive one is asked
    ("range(n, 0, -(1))", {}),
    ("range(0, n, 0)", {"positive_step": False}),
    ("range(0, n, k)", {}),             # a step that is not a constant
    ("range(0, n, 2.0)", {}),           # nor an int
    ("range(0, n, True)", {}),
    ("range()", {}),
    ("range(*bounds)", {}),
    ("range(n, step=2)", {}),
    ("prange(n)", {"names": ("range",)}),
    ("np.arange(n)", {}),
    ("enumerate(x)", {}),
])
def test_refused(text, kw):
    assert _args(text, **kw) is None


def starred_bounds(A, out, b):
    for i in range(*b):
        for j in range(A.shape[1]):
            out[i, j] = 2.0 * A[i, j]


def test_a_loop_over_unpacked_range_arguments_is_unsupported():
    """``range(*b)``: bounds and step unknown to the analysis, and numba's ``prange(*b)``
    fails to compile (IndexError in its parfor pass): the loop is refused with the reason;
    the loop inside it stays parallel."""
    rep = offload.analyze(starred_bounds)
    assert rep.loop("L1").verdict == "unsupported"
    assert "unpacked (*) arguments" in " ".join(rep.loop("L1").reasons)
    assert rep.loop("L2").verdict == "parallel"
