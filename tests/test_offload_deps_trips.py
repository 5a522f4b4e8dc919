"""Subscripts offset by a loop's symbolic trip count (``analysis/deps.py``, ``_through_trips``).

Two iterations of a step-1 loop over ``range(lo, hi)`` are at most ``hi - lo - 1`` apart, so
``x[i + h] = x[i]`` over ``range(h)`` (a local ``h = n // 2`` or a parameter) touches no element
twice; a symbol that is not a multiple of the trip count (``x[i + h - 1]``, ``range(2 * h)``)
proves nothing. A brute-force check over generated one-loop kernels holds the rule to exact
element sets, negative (wrapping) subscripts included.
"""

from __future__ import annotations

import linecache
import random
import textwrap

import pytest

from hetlab import offload

from .offload_corpus.heldout_probe7 import upper_half_from_lower  # h = len(x) // 2


def lower_from_upper(x, h):
    for i in range(h):
        x[i] = x[i + h]


def from_one(x, h):
    for i in range(1, h):
        x[i + h] = x[i] * 2.0


def rows_below(A, h):
    for i in range(h):
        for j in range(A.shape[1]):
            A[i + h, j] = A[i, j]


def doubled_stride(x, h):
    for i in range(h):
        x[2 * i + 2 * h] = x[2 * i]


def one_short(x, h):  # i = 0 writes x[h - 1], read by i = h - 1
    for i in range(h):
        x[i + h - 1] = x[i]


def twice_the_span(x, h):  # i = 0 writes x[h], read by i = h
    for i in range(2 * h):
        x[i + h] = x[i]


def behind_the_start(x, h):  # x[i - h] wraps to the back of x
    for i in range(h):
        x[i] = x[i - h] + 1.0


def span_changed_inside(x, h):
    for i in range(h):
        x[i + h] = x[i]
        h = h


@pytest.mark.parametrize("fn", [upper_half_from_lower, lower_from_upper, from_one,
                                rows_below, doubled_stride])
def test_an_offset_by_the_trip_count_is_independent(fn):
    report = offload.analyze(fn)
    assert report.loop("L1").verdict == "parallel", str(report)


@pytest.mark.parametrize("fn", [one_short, twice_the_span, behind_the_start,
                                span_changed_inside])
def test_other_offsets_keep_the_loop_sequential(fn):
    report = offload.analyze(fn)
    assert report.loop("L1").verdict == "sequential", str(report)


def _kernel(k: int, lo: str, hi: str, write: str, read: str):
    src = textwrap.dedent(f"""
    def gen{k}(x, h):
        for i in range({lo}, {hi}):
            x[{write}] = x[{read}] + 1.0
    """)
    name = f"<deps-trips-{k}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    ns: dict = {}
    exec(compile(src, name, "exec"), ns)
    return ns[f"gen{k}"]


def _carried(lo: str, hi: str, sub_w, sub_r, n: int) -> bool | None:
    """Whether two iterations touch one element of an ``n``-array, one of them writing it,
    for some ``h`` in 0..13 (None when a subscript leaves the array: Python would raise)."""
    for h in range(14):
        touched: dict[int, set[tuple[int, str]]] = {}
        for i in range(eval(lo, {"h": h}), eval(hi, {"h": h})):
            for kind, idx in (("w", sub_w(i, h)), ("r", sub_r(i, h))):
                if not -n <= idx < n:
                    return None
                touched.setdefault(idx % n, set()).add((i, kind))
        for hits in touched.values():
            if len({i for i, _ in hits}) > 1 and any(k == "w" for _, k in hits):
                return True
    return False


def test_generated_kernels_judged_parallel_touch_no_element_twice():
    rng = random.Random(12)
    n, parallel = 80, 0
    for k in range(300):
        a, e = rng.choice([1, 1, 1, 2, -1]), rng.choice([1, 1, 2, 0, -1])
        b, f = rng.choice([0, 1, 1, 2, -1]), rng.choice([0, 0, 1, -1])
        c, g = rng.randint(-2, 3), rng.randint(-2, 3)
        lo, hi = rng.choice(["0", "1", "0"]), rng.choice(["h", "h", "h - 1", "2 * h", "h + 1"])
        fn = _kernel(k, lo, hi, f"{a} * i + {b} * h + {c}", f"{e} * i + {f} * h + {g}")
        if offload.analyze(fn).loop("L1").verdict != "parallel":
            continue
        parallel += 1
        carried = _carried(lo, hi, lambda i, h, a=a, b=b, c=c: a * i + b * h + c,
                           lambda i, h, e=e, f=f, g=g: e * i + f * h + g, n)
        assert carried is not True, (lo, hi, a, b, c, e, f, g)
    assert parallel >= 20  # the rule is exercised
