"""The per-call alias check's fast path (:func:`hetlab.offload.runtime.guard._clear_check`)
never clears a call that the full check refuses."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from hetlab.offload.runtime.guard import AliasGuard

BASE = np.arange(24.0)
MATRIX = np.arange(24.0).reshape(4, 6)
VALUES = {
    "fresh": lambda: np.zeros(6),
    "base": lambda: BASE,
    "base_head": lambda: BASE[:12],
    "base_tail": lambda: BASE[12:],
    "base_shifted": lambda: BASE[1:13],
    "reversed": lambda: BASE[::-1],
    "strided": lambda: BASE[::2],
    "column": lambda: MATRIX[:, 1],
    "fortran": lambda: np.asfortranarray(MATRIX),
    "broadcast": lambda: np.broadcast_to(np.zeros(1), (6,)),
    "empty": lambda: BASE[:0],
    "number": lambda: 2.5,
    "tuple": lambda: (BASE[:3], np.zeros(2)),
    "objects": lambda: np.empty(2, dtype=object),
}


def _guard(written):
    return AliasGuard("f", ("a", "b", "c"), frozenset(written), {}, (), lambda *a: None)


@pytest.mark.parametrize("written", [("a",), ("c",), ("a", "b"), ()])
def test_the_fast_path_agrees_with_the_full_check(written):
    guard = _guard(written)
    slow = _guard(written)
    object.__setattr__(slow, "_clear", lambda args: False)  # always the full check
    for names in itertools.product(VALUES, repeat=3):
        args = tuple(VALUES[n]() for n in names)
        assert guard.problem(args) == slow.problem(args), names
    assert guard.problem((BASE, BASE)) == slow.problem((BASE, BASE))  # too few: full check
