"""Floor division and modulo by positive constants in loop bounds and subscripts (issue 17):
``range(n // 2)``, ``out[i // 2]``, ``b[2 * (i // 2)]``, ``c[b, i % 4]`` are modelled exactly
(a quotient unknown ``q`` with ``c·q ≤ e ≤ c·q + c − 1``), so provably disjoint accesses make
a loop parallel and everything else stays serial. Positive cases are judged parallel and their
prange variant (the loop alone) and search plan give the plain function's result on fresh inputs
of odd and even sizes, 0, 1 and 2 included; negative cases stay serial; randomly generated
kernels judged parallel give the same result with their iterations reversed and shuffled."""

from __future__ import annotations

import ast
import random

import numpy as np
import pytest

from hetlab import offload
from hetlab.offload import GAOptions, MeasureOptions
from hetlab.offload.analysis.intsys import infeasible
from hetlab.offload.front.affine import Affine

from ._source_modules import load_source

QUICK = dict(targets=("numba",), budget=2, progress=False, function_blocks=False,
             ga=GAOptions(population=2, generations=1),
             measure=MeasureOptions(repeats=1, warmup=0, confirm=0, among_work=0))
SIZES = (0, 1, 2, 7, 8)


# -- positive cases: parallel in truth, now judged parallel ---------------------------------
def half_swap(a):
    n = len(a)
    for i in range(n // 2):
        a[i], a[n - 1 - i] = a[n - 1 - i], a[i]


def pair_sums_stepped(x, out):
    for i in range(0, len(x) - 1, 2):
        out[i // 2] = x[i] + x[i + 1]


def pair_products_added(x, out):
    for i in range(0, x.shape[0] - 1, 2):
        out[i // 2] += x[i] * x[i + 1]


def even_slots(x, b):
    for i in range(0, x.shape[0], 2):
        b[2 * (i // 2)] = 3.0 * x[i]


def rebuilt_index(x, b):
    for i in range(x.shape[0]):
        b[2 * (i // 2) + i % 2] = x[i] + 1.0


def blocked_mod(x, c):
    nb = c.shape[0]
    for b in range(nb):
        for i in range(4 * b, 4 * b + 4):
            c[b, i % 4] = 2.0 * x[i] - c[b, i % 4]


def unpack_rows(x, out):
    for i in range(x.shape[0]):
        out[i // 4, i % 4] = x[i] * x[i]


def read_the_middle(a):
    n = a.shape[0]
    for i in range(n // 2):
        a[i] = a[n // 2] + a[n - 1 - i]


def two_halves(x, out):
    n = x.shape[0]
    for i in range(n // 2):
        out[i] = x[2 * i] + x[2 * i + 1]
        out[n // 2 + i] = x[2 * i] - x[2 * i + 1]


def _vec(g, n):
    return (g.random(n),)


def _pair(g, n):
    return g.random(n), g.random(n // 2 + 1)


def _same_len(g, n):
    return g.random(n), g.random(n)


def _blocks(g, n):
    return g.random(4 * n), g.random((n, 4))


def _unpack(g, n):
    return g.random(4 * n), np.zeros((n, 4))


POSITIVE = {  # function, loop judged parallel, arguments for size n
    "half_swap": (half_swap, "L1", _vec),
    "half_swap_2d_int": (half_swap, "L1",
                         lambda g, n: (g.integers(0, 99, (n, 3)).astype(np.int32),)),
    "pair_sums_stepped": (pair_sums_stepped, "L1", _pair),
    "pair_products_added": (pair_products_added, "L1", _pair),
    "even_slots": (even_slots, "L1", _same_len),
    "rebuilt_index": (rebuilt_index, "L1", _same_len),
    "blocked_mod": (blocked_mod, "L2", _blocks),
    "unpack_rows": (unpack_rows, "L1", _unpack),
    "read_the_middle": (read_the_middle, "L1", _vec),
    "two_halves": (two_halves, "L1", lambda g, n: (g.random(n), np.zeros(n))),
}


# -- negative cases: a real dependence, kept serial -----------------------------------------
def previous_pair(a):
    for i in range(2, a.shape[0]):
        a[i // 2] += a[i // 2 - 1]


def read_written_middle(a):
    n = a.shape[0]
    for i in range(n):
        a[i] = a[n // 2] + 1.0


def read_middle_one_too_far(a):
    n = a.shape[0]
    for i in range(n // 2 + 1):
        a[i] = a[n // 2] + 1.0


def last_of_pair_wins(x, out):
    for i in range(x.shape[0]):
        out[i // 2] = x[i]


def pair_sums_every_i(x, out):
    for i in range(x.shape[0]):
        out[i // 2] += x[i]


def mod_bins(x, c):
    for i in range(x.shape[0]):
        c[i % 4] = c[i % 4] + x[i]


def swap_past_half(a):
    n = len(a)
    for i in range(n // 2 + 1):
        a[i], a[n - 1 - i] = a[n - 1 - i], a[i]


def parent_from_child(a):
    for i in range(1, a.shape[0]):
        a[i] = a[(i - 1) // 2] + 1.0


def wrapped_write(a):
    n = a.shape[0]
    for i in range(n // 2):
        a[i - n // 2] = a[n - 1 - i] + 1.0  # a negative index: a[n - n // 2 + i]


NEGATIVE = {
    "wrapped_write": (wrapped_write, _vec),
    "previous_pair": (previous_pair, _vec),
    "read_written_middle": (read_written_middle, _vec),
    "read_middle_one_too_far": (read_middle_one_too_far, _vec),
    "last_of_pair_wins": (last_of_pair_wins, _pair),
    "pair_sums_every_i": (pair_sums_every_i, _pair),
    "mod_bins": (mod_bins, lambda g, n: (g.random(n), np.zeros(4))),
    "swap_past_half": (swap_past_half, lambda g, n: (g.random(n + 1),)),  # n + 1 ≥ 1 rows
    "parent_from_child": (parent_from_child, _vec),
}


def _agrees(fn, compiled, make) -> None:
    for n in SIZES:
        want = make(np.random.default_rng(n), n)
        got = make(np.random.default_rng(n), n)
        r_want, r_got = fn(*want), compiled(*got)
        assert r_want is None and r_got is None
        for w, g in zip(want, got, strict=True):
            np.testing.assert_allclose(g, w, rtol=1e-12, err_msg=f"n={n}")


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_provably_disjoint_accesses_are_parallel_and_the_variant_agrees(name):
    pytest.importorskip("numba")
    fn, loop, make = POSITIVE[name]
    report = offload.analyze(fn)
    assert report.loop(loop).verdict == "parallel", report.loop(loop).reasons
    variant = offload.transform(report, [loop])
    assert "prange" in variant.source
    _agrees(fn, variant.compile(), make)


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_a_real_dependence_through_floor_division_stays_serial(name):
    fn, _ = NEGATIVE[name]
    lp = offload.analyze(fn).loop("L1")
    assert lp.verdict == "sequential", lp.verdict
    assert any("dependence" in r for r in lp.reasons)


@pytest.mark.parametrize("name", ["half_swap", "pair_sums_stepped", "blocked_mod"])
def test_the_plan_gives_the_plain_result(name):
    pytest.importorskip("numba")
    fn, _, make = POSITIVE[name]
    plan = offload.search(fn, make(np.random.default_rng(0), 64), **QUICK)
    assert not plan.fallback
    _agrees(fn, plan.compile(), make)


@pytest.mark.parametrize("name", ["pair_sums_every_i", "swap_past_half"])
def test_the_plan_of_a_serial_case_gives_the_plain_result(name):
    pytest.importorskip("numba")
    fn, make = NEGATIVE[name]
    plan = offload.search(fn, make(np.random.default_rng(0), 64), **QUICK)
    _agrees(fn, plan.compile(), make)


def test_the_probe_kernels_are_now_parallel():
    from .offload_corpus import heldout_probe2 as hp

    assert offload.analyze(hp.reverse_swap).loop("L1").verdict == "parallel"
    assert offload.analyze(hp.pair_sums_stepped).loop("L1").verdict == "parallel"


def test_the_integer_system_is_exact_about_rounding():
    # 4(q₂ − q₁) = d with 1 ≤ d ≤ 3: no integers, though rationals exist
    d = Affine({"q2": 4, "q1": -4})
    assert infeasible([], [d + Affine(const=-1), Affine(const=3) - d])
    assert not infeasible([], [d + Affine(const=-1), Affine(const=4) - d])  # d = 4


# -- random kernels: a loop judged parallel is order-independent ----------------------------
_SUBS = ("{c} * (i // {k}) + {o}", "i // {k} + {o}", "{c} * (i % {k}) + {o}",
         "i % {k} + {c} * (i // {k}) + {o}", "(i + {o}) // {k}", "{o} - i // {k}",
         "i // {k} - n // {k2}", "n // {k2} - 1 - i", "i - n // {k2}", "n - 1 - i // {k}")


def _random_kernel(rng: random.Random) -> tuple[str, int]:
    def sub() -> str:
        return rng.choice(_SUBS).format(c=rng.choice((1, 2, 3)), k=rng.choice((2, 3, 4)),
                                        k2=rng.choice((1, 2, 3)), o=rng.randint(-1, 6))

    step = rng.choice((1, 1, 2, 3, -1, -2))
    bound = rng.choice(("n", "n // 2", "n // 3", "(n + 1) // 2"))
    rng_text = (f"range({bound})" if step == 1 else
                f"range(0, {bound}, {step})" if step > 0 else f"range({bound} - 1, -1, {step})")
    w = sub()
    r = w if rng.random() < 0.5 else sub()  # the same element: parallel when w is one-to-one
    body = f"A[{w}] = A[{r}] * 0.5 + B[i] + {rng.randint(1, 9)}.0"
    if rng.random() < 0.3:
        body += f"\n    A[{sub()}] = B[i] - A[{sub()}]"
    src = f"def k(A, B, n):\n    for i in {rng_text}:\n        " + body.replace(
        "\n    ", "\n        ") + "\n"
    return src, rng.randint(0, 20)


def _run(src: str, n: int, order: str) -> np.ndarray:
    tree = ast.parse(src)
    loop = tree.body[0].body[0]
    loop.iter = ast.Call(ast.Name("_order", ast.Load()), [loop.iter], [])
    ast.fix_missing_locations(tree)

    def _order(r):
        items = list(r)
        if order == "reversed":
            items.reverse()
        elif order == "shuffled":
            random.Random(n).shuffle(items)
        return items

    ns: dict = {"_order": _order}
    exec(compile(tree, "<kernel>", "exec"), ns)
    A, B = np.arange(40.0) * 0.01 + 1.0, np.arange(40.0)  # subscripts in [-20, 40)
    ns["k"](A, B, n)
    return A


def _load(src: str):
    """Import ``src`` from a real file so inspect can read its source."""
    return load_source(src, prefix="floordiv")


def test_random_floordiv_kernels_judged_parallel_are_order_independent():
    rng = random.Random(17)
    parallel = order_dependent = 0
    for _ in range(600):
        src, n = _random_kernel(rng)
        verdict = offload.analyze(_load(src)).loop("L1").verdict
        plain = _run(src, n, "plain")
        same = all(np.array_equal(_run(src, n, o), plain) for o in ("reversed", "shuffled"))
        if verdict == "parallel":
            parallel += 1
            assert same, src
        elif not same:
            order_dependent += 1
    assert parallel >= 40 and order_dependent >= 100, (parallel, order_dependent)


def test_an_empty_written_array_is_not_refused_as_self_overlapping():
    from hetlab.offload.runtime.guard import self_overlaps

    assert not self_overlaps(np.zeros((0, 4)))  # NumPy gives it strides (0, 0)
    assert self_overlaps(np.broadcast_to(np.zeros(4), (3, 4)))
