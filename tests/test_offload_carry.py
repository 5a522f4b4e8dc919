"""The element the previous iteration wrote, carried in a scalar (issue 17,
``analysis/transforms/carry.py``): a running sum along flat rows, a min-cost table's left
neighbour, Gauss–Seidel's ``u[i, j - 1]``, a reversed suffix sum, a step-2 recurrence, stores
in both branches of an ``if`` and an integer array (the stored value after conversion) are
rewritten and give the plain function's results on sizes 0, 1, 2 and 7; a read after a store,
a second element stored, only conditional reads, the array passed to a call and a rebound loop
variable are left alone."""

from __future__ import annotations

import ast
import random

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload.analysis.transforms.carry import carry_previous

from ._source_modules import load_source

pytest.importorskip("numba")


def flat_row_prefix(x, m, n):
    for i in range(m):
        for j in range(1, n):
            x[i * n + j] += x[i * n + j - 1]


def min_cost_table(C):
    for i in range(1, C.shape[0]):
        for j in range(1, C.shape[1]):
            C[i, j] += min(C[i - 1, j], C[i, j - 1])


def branch_stores(x, a):
    for j in range(1, x.shape[0]):
        t = x[j - 1]
        if t > 0.5:
            x[j] = t * 0.5 + a[j]
        else:
            x[j] = a[j] - t


def gauss_seidel(u, steps):
    n = u.shape[0]
    for _ in range(steps):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                u[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])


def suffix_sums(x):
    n = x.shape[0]
    for j in range(n - 2, -1, -1):
        x[j] = x[j] + x[j + 1]


def every_other(x):
    for j in range(2, x.shape[0], 2):
        x[j] += 0.5 * x[j - 2]


def int_growth(c):
    for j in range(1, c.shape[0]):
        c[j] = c[j - 1] * 1.5 + 1


def _vec(rng, n):
    return (rng.random(n),)


POSITIVE = {
    "flat_row_prefix": (flat_row_prefix, lambda r, n: (r.random((n + 1) * n), n + 1, n)),
    "min_cost_table": (min_cost_table, lambda r, n: (r.random((n + 1, n + 2)),)),
    "branch_stores": (branch_stores, lambda r, n: (r.random(n), r.random(n))),
    "gauss_seidel": (gauss_seidel, lambda r, n: (r.random((n + 2, n + 2)), 2)),
    "suffix_sums": (suffix_sums, _vec),
    "every_other": (every_other, _vec),
    "int_growth": (int_growth, lambda r, n: (r.integers(0, 5, n),)),
}


def _serial_with_passes(fn):
    from hetlab.offload.targets.numba import NumbaTarget

    return NumbaTarget().generate(offload.analyze(fn), (), transforms=True)


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_the_previous_element_is_carried_and_the_result_is_the_same(name):
    fn, make = POSITIVE[name]
    variant = _serial_with_passes(fn)
    assert "carried from the previous iteration" in variant.source, variant.source
    compiled = variant.compile()
    for n in (0, 1, 2, 7):
        want, got = make(np.random.default_rng(n), n), make(np.random.default_rng(n), n)
        fn(*want)
        compiled(*got)
        for w, g in zip(want, got, strict=True):
            np.testing.assert_array_equal(g, w, err_msg=f"n={n}")


def test_inside_a_parallel_row_loop():
    report = offload.analyze(flat_row_prefix)
    variant = offload.transform(report, ["L1"])
    assert "prange" in variant.source and "carried" in variant.source
    x = np.random.default_rng(5).random(9 * 8)
    want = x.copy()
    flat_row_prefix(want, 9, 8)
    variant.compile()(x, 9, 8)
    np.testing.assert_allclose(x, want, rtol=1e-12)


_LEFT_ALONE = {
    "read after the store": '''
def k(x, y):
    for j in range(1, x.shape[0]):
        x[j] = x[j - 1] + 1.0
        y[j] = x[j - 1]
''',
    "a second store": '''
def k(x):
    for j in range(1, x.shape[0]):
        x[j] = x[j - 1] + 1.0
        x[0] = 2.0
''',
    "the only read under an if": '''
def k(x):
    for j in range(1, x.shape[0]):
        if x[j] > 0.5:
            x[j] = x[j - 1] + 1.0
''',
    "a read after a store in a branch": '''
def k(x):
    for j in range(1, x.shape[0]):
        if x[j] > 0.5:
            x[j] = 1.0
        x[j] = x[j] + x[j - 1]
        x[j] = x[j - 1] * 2.0
''',
    "the array passed to a call": '''
def k(x):
    for j in range(1, x.shape[0]):
        x[j] = x[j - 1] + np.sum(x)
''',
    "only a conditional read": '''
def k(x):
    for j in range(1, x.shape[0]):
        x[j] = x[j - 1] if x[j] > 0.5 else 0.0
''',
    "the loop variable rebound": '''
def k(x):
    for j in range(1, x.shape[0] - 1):
        x[j] = x[j - 1] + 1.0
        j = j + 1
''',
    "an atom reading the loop variable": '''
def k(x):
    for j in range(1, x.shape[0]):
        x[j // 2] = x[(j - 1) // 2] + 1.0
''',
    "a subscript reading a name the body stores": '''
def k(x, idx):
    for j in range(1, x.shape[0]):
        t = idx[j]
        x[t] = x[t - 1] + 1.0
''',
}


@pytest.mark.parametrize("why", sorted(_LEFT_ALONE))
def test_left_alone(why):
    func = ast.parse(_LEFT_ALONE[why]).body[0]
    loop = func.body[0]
    assert carry_previous(func, loop, func.body, [0], "L1") is None


@pytest.mark.parametrize("why", sorted(_LEFT_ALONE))
def test_left_alone_variants_still_agree(why):
    fn = load_source(_LEFT_ALONE[why], prefix="carry")
    fn.__globals__["np"] = np
    variant = _serial_with_passes(fn)
    assert "carried" not in variant.source
    rng = np.random.default_rng(3)
    args = [rng.random(9)] + ([np.arange(9) % 7 + 1] if "idx" in _LEFT_ALONE[why] else
                              [np.zeros(9)] if "y)" in _LEFT_ALONE[why] else [])
    want = [a.copy() for a in args]
    got = [a.copy() for a in args]
    fn(*want)
    variant.compile()(*got)
    for w, g in zip(want, got, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12)


# -- random recurrences: every rewritten loop gives Python's result ---------------------------
def _random_recurrence(rng: random.Random) -> str:
    st = rng.choice((1, 1, 2, -1))
    if st > 0:
        head = f"range({rng.choice((0, 1, 2))}, x.shape[0] - 1, {st})"
    else:
        head = rng.choice(("range(x.shape[0] - 2, -1, -1)", "range(x.shape[0] - 2, 0, -1)"))
    s = rng.choice(("j", "j", "j + 1"))

    def at(k: int) -> str:  # the element written k iterations later (k = -1: the previous)
        return f"x[{s} + {k * st}]" if k else f"x[{s}]"

    def expr() -> str:
        parts = [rng.choice((at(-1), at(-1), at(0), at(1), at(-2), "a[j]", "t"))
                 for _ in range(rng.choice((1, 2, 3)))]
        return " + 0.5 * ".join(parts)

    lines = ["t = 0.25"]
    for _ in range(rng.choice((1, 2, 3))):
        p = rng.random()
        if p < 0.3:
            lines.append(f"t = {expr()}")
        elif p < 0.6:
            lines.append(f"x[{s}] = {expr()}")
        elif p < 0.8:
            lines += ["if a[j] > 0.5:", f"    x[{s}] = {expr()}", "else:",
                      f"    y[j] = {expr()}"]
        else:
            lines.append(f"y[j] = {expr()}")
    if not any(line.lstrip().startswith(f"x[{s}] =") for line in lines):
        lines.append(f"x[{s}] += {expr()}")
    body = "".join(f"        {line}\n" for line in lines)
    return f"def k(x, a, y):\n    for j in {head}:\n{body}"


def test_random_recurrences_rewritten_give_the_plain_result():
    from hetlab.offload.targets.numba import NumbaTarget

    rng = random.Random(15)
    rewritten = 0
    for _ in range(160):
        src = _random_recurrence(rng)
        fn = load_source(src, prefix="carry-random")
        variant = NumbaTarget().generate(offload.analyze(fn), (), transforms=True)
        if "carried" not in variant.source:
            continue
        rewritten += 1
        compiled = variant.compile()
        for n in (0, 1, 2, 3, 9):
            g = np.random.default_rng(n)
            args = (g.random(n), g.random(n), np.zeros(n))
            want = [a.copy() for a in args]
            got = [a.copy() for a in args]
            try:
                fn(*want)
            except IndexError:
                continue
            compiled(*got)
            for w, v in zip(want, got, strict=True):
                np.testing.assert_array_equal(v, w, err_msg=f"n={n}\n{src}\n{variant.source}")
        if rewritten >= 40:
            break
    assert rewritten >= 40, rewritten
