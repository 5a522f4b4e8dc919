"""Linearized subscripts (issue 17): ``out[i * n + j]``, ``K[i * p + k, j * q + l]``,
``u[(i + 1) * (w + 2) + j + 1]`` are compared digit by digit when each digit provably stays in
its radix, so flat-buffer code gets parallel loops; overlapping rows, digits that leave their
range and radices that change stay serial. Positive cases are judged parallel and their prange
variant gives the plain result on fresh inputs of several sizes, 0 and 1 included; randomly
generated kernels judged parallel give the same result with that loop's iterations reversed
and shuffled, on arrays sized so that a negative subscript wraps onto a written element."""

from __future__ import annotations

import ast
import random

import numpy as np
import pytest

from hetlab import offload

from ._source_modules import load_source
from .offload_corpus.heldout_probe4 import kron_product
from .test_offload_indices import _agrees

SIZES = ((0, 0), (1, 1), (1, 3), (3, 1), (4, 5), (7, 6))


# -- positive cases ---------------------------------------------------------------------------
def flat_scale(A, out):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            out[i * n + j] = A[i, j] * 2.0


def flat_transpose(A, out):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            out[j * m + i] = A[i, j]


def flat_row_update(A, x):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            x[n * i + j] = x[n * i + j] * 0.5 + A[i, j]


def padded_laplacian(u, h, w, out):
    for i in range(h):
        for j in range(w):
            c = (i + 1) * (w + 2) + j + 1
            out[i * w + j] = (u[(i + 1) * (w + 2) + j] + u[(i + 1) * (w + 2) + j + 2]
                              + u[i * (w + 2) + j + 1] + u[(i + 2) * (w + 2) + j + 1]
                              - 4.0 * u[c])


def volume_scale(V, n, p, out):
    m = out.shape[0] // (n * p) if n * p else 0
    for i in range(m):
        for j in range(n):
            for k in range(p):
                out[(i * n + j) * p + k] = V[i * n * p + j * p + k] + 1.0


def lower_triangle_flat(A, out):
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1):
            out[i * n + j] = A[i, j] + A[j, i]


def _mat(rng, m, n):
    return rng.random((m, n))


POSITIVE = {
    "flat_scale": (flat_scale, ("L1", "L2"),
                   lambda r, m, n: (_mat(r, m, n), np.zeros(m * n))),
    "flat_transpose": (flat_transpose, ("L1", "L2"),
                       lambda r, m, n: (_mat(r, m, n), np.zeros(m * n))),
    "flat_row_update": (flat_row_update, ("L1", "L2"),
                        lambda r, m, n: (_mat(r, m, n), r.random(m * n))),
    "kron_flat": (kron_product, ("L1", "L2", "L3", "L4"),
                  lambda r, m, n: (_mat(r, m, n), _mat(r, n, m + 1),
                                   np.zeros((m * n, n * (m + 1))))),
    "padded_laplacian": (padded_laplacian, ("L1", "L2"),
                         lambda r, m, n: (r.random((m + 2) * (n + 2)), m, n, np.zeros(m * n))),
    "volume_scale": (volume_scale, ("L1", "L2", "L3"),
                     lambda r, m, n: (r.random(m * n * 3), n, 3, np.zeros(m * n * 3))),
    "lower_triangle_flat": (lower_triangle_flat, ("L1", "L2"),
                            lambda r, m, n: (_mat(r, n, n), np.zeros(n * n))),
}


# -- negative cases: a real overlap, or nothing proves there is none ---------------------------
def overlapping_rows(A, out):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            out[i * (n - 1) + j] = out[i * (n - 1) + j] + A[i, j]


def digit_past_radix(A, out):
    m, n = A.shape
    for i in range(m):
        for j in range(n + 1):
            out[i * n + j] += A[i, j % n]


def reads_previous_row(x, n):
    m = x.shape[0] // n if n else 0
    for i in range(1, m):
        for j in range(n):
            x[i * n + j] = x[(i - 1) * n + j] * 0.5 + 1.0


def shifted_into_previous_row(A, out):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            out[i * n + j - 1] = out[i * n + j - 1] + A[i, j]


def radix_from_a_parameter(A, ld, out):
    m, n = A.shape
    for i in range(m):
        for j in range(n):
            out[i * ld + j] = out[i * ld + j] + A[i, j]


NEGATIVE = {  # name: (function, the loop that must stay serial, a loop that may be parallel)
    "overlapping_rows": (overlapping_rows, "L1", "L2"),
    "digit_past_radix": (digit_past_radix, "L1", None),
    "reads_previous_row": (reads_previous_row, "L1", "L2"),
    # ``out[-1]`` at i = j = 0 wraps around: not even the j loop is proved
    "shifted_into_previous_row": (shifted_into_previous_row, "L1", None),
    # ``ld`` may be negative (a negative subscript wraps around): not even the j loop is proved
    "radix_from_a_parameter": (radix_from_a_parameter, "L1", None),
}


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_linearized_subscripts_in_range_make_the_loops_parallel(name):
    fn, loops, _ = POSITIVE[name]
    report = offload.analyze(fn)
    for lp in loops:
        assert report.loop(lp).verdict == "parallel", (lp, report.loop(lp).reasons)


@pytest.mark.parametrize("name", ["flat_transpose", "kron_flat", "padded_laplacian",
                                  "volume_scale", "lower_triangle_flat"])
def test_the_prange_variant_gives_the_plain_result(name):
    pytest.importorskip("numba")
    fn, loops, make = POSITIVE[name]
    variant = offload.transform(offload.analyze(fn), [loops[0]])
    assert "prange" in variant.source
    _agrees(fn, variant.compile(), make, SIZES)


@pytest.mark.parametrize("name", sorted(NEGATIVE))
def test_overlap_or_unproved_range_stays_serial(name):
    fn, serial, inner = NEGATIVE[name]
    report = offload.analyze(fn)
    lp = report.loop(serial)
    assert lp.verdict == "sequential", lp.verdict
    assert any("dependence" in r for r in lp.reasons), lp.reasons
    if inner is not None:  # over the inner loop the row is one number: parallel
        assert report.loop(inner).verdict == "parallel", report.loop(inner).reasons


def test_a_radix_that_changes_in_the_loop_proves_nothing():
    src = '''
def k(A, out):
    m, n = A.shape
    w = n
    for i in range(m):
        for j in range(n):
            out[i * w + j] = A[i, j]
        w = w - 1
'''
    report = offload.analyze(load_source(src, prefix="delinear"))
    assert report.loop("L1").verdict == "sequential"


# -- random kernels: a loop judged parallel is order-independent ------------------------------
_RADICES = ("n", "n", "n - 1", "n + 1", "n + 2", "m", "2 * n")
_HIGH = ("i", "i", "i + 1", "i - 1", "2 * i", "m - 1 - i")
_LOW = ("j", "j", "j + 1", "j - 1", "2 * j", "n - 1 - j", "i")
_INNER = ("range(n)", "range(n)", "range(1, n - 1)", "range(n + 1)", "range(m)",
          "range(i)", "range(n - 1)", "range(i, n)")
_OUTER = ("range(m)", "range(m)", "range(1, m)", "range(m - 1)")


def _random_kernel(rng: random.Random) -> str:
    r = rng.choice(_RADICES)

    def sub() -> str:
        return f"({rng.choice(_HIGH)}) * ({r}) + {rng.choice(_LOW)}"

    w = sub()
    rd = w if rng.random() < 0.5 else sub()
    body = f"A[{w}] = A[{rd}] * 0.5 + B[i] + {rng.randint(1, 9)}.0"
    if rng.random() < 0.3:
        body += f"\n            A[{sub()}] = B[j] - A[{sub()}]"
    return (f"def k(A, B, m, n):\n    for i in {rng.choice(_OUTER)}:\n"
            f"        for j in {rng.choice(_INNER)}:\n            {body}\n")


def _run(src: str, m: int, n: int, size: int, which: int, order: str) -> np.ndarray | None:
    """Run the kernel with loop ``which`` (0 outer, 1 inner) in ``order``; None when a
    subscript is out of range (IndexError)."""
    tree = ast.parse(src)
    outer = tree.body[0].body[0]
    loop = outer if which == 0 else outer.body[0]
    loop.iter = ast.Call(ast.Name("_order", ast.Load()), [loop.iter], [])
    ast.fix_missing_locations(tree)

    def _order(it):
        items = list(it)
        if order == "reversed":
            items.reverse()
        elif order == "shuffled":
            random.Random(m * 31 + n).shuffle(items)
        return items

    ns: dict = {"_order": _order}
    exec(compile(tree, "<kernel>", "exec"), ns)
    A, B = np.arange(float(size)) * 0.01 + 1.0, np.arange(40.0)
    try:
        ns["k"](A, B, m, n)
    except IndexError:
        return None
    return A


def _tight_size(src: str, m: int, n: int) -> int:
    """One more than the largest subscript the kernel writes or reads: a negative subscript
    then wraps around onto elements other iterations touch."""
    tree = ast.parse(src)
    seen: list[int] = []

    class Probe(ast.NodeTransformer):
        def visit_Subscript(self, node):
            self.generic_visit(node)
            if isinstance(node.value, ast.Name) and node.value.id == "A":
                node.slice = ast.Call(ast.Name("_see", ast.Load()), [node.slice], [])
            return node

    tree = ast.fix_missing_locations(Probe().visit(tree))
    ns: dict = {"_see": lambda v: seen.append(v) or 0}
    exec(compile(tree, "<probe>", "exec"), ns)
    ns["k"](np.zeros(1), np.arange(40.0), m, n)
    return max([v for v in seen if v >= 0], default=0) + 1


def test_random_linearized_kernels_judged_parallel_are_order_independent():
    rng = random.Random(15)
    parallel = order_dependent = 0
    for _ in range(300):
        src = _random_kernel(rng)
        report = offload.analyze(load_source(src, prefix="delinear"))
        for which, label in ((0, "L1"), (1, "L2")):
            verdict = report.loop(label).verdict
            same = True
            for m, n in ((3, 4), (4, 3), (2, 6), (5, 5)):
                size = _tight_size(src, m, n)
                plain = _run(src, m, n, size, which, "plain")
                if plain is None:
                    continue
                for order in ("reversed", "shuffled"):
                    got = _run(src, m, n, size, which, order)
                    same = same and got is not None and np.array_equal(got, plain)
            if verdict == "parallel":
                parallel += 1
                assert same, (label, src)
            elif not same:
                order_dependent += 1
    print(parallel, order_dependent)
    assert parallel >= 60 and order_dependent >= 60, (parallel, order_dependent)
