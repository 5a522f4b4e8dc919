"""offload.analyze, offload.transform and offload.search on a ninth held-out probe
(tests/offload_corpus/heldout_probe9.py): NumPy on rows inside loops — squared distances
``np.sum((X[i] - C[k]) ** 2)``, ``.sum()`` of a row expression, ``np.linalg.norm`` of a row
difference, ``np.dot`` and ``@`` of rows, ``np.mean`` of a row, pure helpers returning such a
reduction, a helper writing its row, a division by a variance row, a scatter into centroids.
Verdicts match the semantics (a truly serial loop is never judged parallel); every loop the
search may choose, alone, and the plan ``offload.search`` keeps give the plain function's
results on fresh inputs of small and odd sizes; every answer key gives the plain function's
results; the plans of the row-distance kernels run their reductions as element loops."""

from __future__ import annotations

import numpy as np
import pytest

from hetlab import offload

from ._probe_checks import (
    agrees_seeded,
    assert_decided,
    loop_and_block_choices,
    search_genes,
    suite_function_names,
)
from .offload_corpus import heldout_probe as hp1
from .offload_corpus import heldout_probe2 as hp2
from .offload_corpus import heldout_probe3 as hp3
from .offload_corpus import heldout_probe4 as hp4
from .offload_corpus import heldout_probe5 as hp5
from .offload_corpus import heldout_probe6 as hp6
from .offload_corpus import heldout_probe7 as hp7
from .offload_corpus import heldout_probe8 as hp8
from .offload_corpus import heldout_probe9 as hp
from .test_offload_heldout_probe6 import QUICK
from .test_offload_heldout_probe7 import _report

pytest.importorskip("numba")


def _agrees(probe, compiled, sizes) -> None:
    agrees_seeded(probe, compiled, sizes, 90)


def test_the_probe_is_new():
    assert all(p.key is not None and p.fn.__doc__ for p in hp.PROBES.values())
    seen = suite_function_names() | {p.fn.__name__ for m in (hp1, hp2, hp3, hp4, hp5, hp6, hp7,
                                                             hp8)
                                     for p in m.PROBES.values()}
    assert not {p.fn.__name__ for p in hp.PROBES.values()} & seen


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_verdicts(name):
    probe = hp.PROBES[name]
    plain, ranked = offload.analyze(probe.fn), _report(probe)
    for lp_id in probe.serial:
        assert not plain.loop(lp_id).parallelizable, (lp_id, plain.loop(lp_id).why)
    assert_decided(ranked, probe)


CHOICES = loop_and_block_choices(hp.PROBES, _report)


@pytest.mark.parametrize(("name", "what"), CHOICES)
def test_each_parallel_loop_and_block_alone(name, what):
    probe = hp.PROBES[name]
    report = _report(probe)
    assert what not in probe.serial or what in report.transforms.privatizable()
    chosen = dict(blocks=[what]) if what.startswith("B") else dict(loops=[what])
    compiled = offload.transform(report, **chosen).compile()
    _agrees(probe, compiled, (*probe.sizes, probe.small + 3))


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_search_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    plan = offload.search(probe.fn, probe.make(np.random.default_rng(0), probe.small), **QUICK)
    for lp_id in probe.serial:
        assert lp_id not in plan.loops, (lp_id, plan.loops)
    assert set(plan.loops) <= set(search_genes(plan.report))
    _agrees(probe, plan.compile(), (*probe.sizes, probe.small + 3))


@pytest.mark.parametrize("name", sorted(hp.PROBES))
def test_the_answer_key_gives_the_plain_result(name):
    probe = hp.PROBES[name]
    _agrees(probe, probe.key, (*probe.sizes, probe.small + 3))


@pytest.mark.parametrize("name", ["assign_to_nearest_center", "pairwise_distance_helper",
                                  "pairwise_norm_matrix", "cosine_similarity_rows"])
def test_the_row_reductions_become_element_loops(name):
    """The numba variant with the first loop in parallel sums each row expression in an
    element loop (transforms/slice_sums.py; the helper inlined first), no temporary."""
    probe = hp.PROBES[name]
    args = probe.make(np.random.default_rng(0), probe.small)
    params = offload.analyze(probe.fn).params
    report = _report(probe)
    report.double_arrays = frozenset(p for p, a in zip(params, args, strict=False)
                                     if isinstance(a, np.ndarray) and a.dtype == np.float64)
    variant = offload.transform(report, ["L1"])
    assert "reduction of a row expression as an element loop" in variant.source
    _agrees(probe, variant.compile(), (*probe.sizes, probe.small + 3))
