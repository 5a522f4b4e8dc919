"""Checks the held-out offload probes share (tests/test_offload_heldout_probe*.py)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

SUITE = Path(__file__).parent.parent / "benchmarks" / "offload_suite"


def suite_function_names() -> set[str]:
    """Names of every function defined in benchmarks/offload_suite (a probe must be new)."""
    return {node.name for f in SUITE.glob("*.py")
            for node in ast.walk(ast.parse(f.read_text()))
            if isinstance(node, ast.FunctionDef)}


def assert_verdicts(report: Any, probe: Any) -> None:
    """The probe's parallel, reduction, serial and (where it has them) unsupported loops have
    those verdicts in ``report``; a serial loop (a true dependence) is never parallel."""
    for lp_id in probe.parallel:
        assert report.loop(lp_id).verdict == "parallel", (lp_id, report.loop(lp_id).why)
    for lp_id in probe.reduction:
        assert report.loop(lp_id).verdict == "reduction", (lp_id, report.loop(lp_id).why)
    for lp_id in probe.serial:
        assert not report.loop(lp_id).parallelizable, (lp_id, report.loop(lp_id).verdict)
    for lp_id in getattr(probe, "unsupported", ()):
        lp = report.loop(lp_id)
        assert lp.verdict == "unsupported" and "unsupported:" in lp.why, (lp_id, lp.why)


def assert_decided(report: Any, probe: Any) -> None:
    """:func:`assert_verdicts`, then the probe's known conservative verdicts (``limits``)
    are kept serial with a reason, and every loop of ``report`` has a verdict in the probe."""
    assert_verdicts(report, probe)
    for lp_id in probe.limits:  # known conservative verdicts: kept serial, with a reason
        lp = report.loop(lp_id)
        assert not lp.parallelizable and lp.why, (lp_id, lp.verdict)
    named = {*probe.parallel, *probe.reduction, *probe.serial, *probe.limits,
             *getattr(probe, "unsupported", ())}
    assert named == {lp.id for lp in report.loops}, "every loop has a decided verdict"


def search_genes(report: Any) -> list[str]:
    """The loops the numba search may choose: the parallelizable ones and those parallel once
    their arrays are privatized (a histogram's ``hist[b] += 1``, a scratch row reused by
    every row)."""
    private = set(report.transforms.privatizable())
    return [lp.id for lp in report.loops if lp.parallelizable or lp.id in private]


def agrees_seeded(probe: Any, compiled: Any, sizes: Any, base: int) -> None:
    """``compiled`` leaves the arguments as ``probe.fn`` does and returns what it returns, on
    fresh inputs of every size (seeded ``n + base``)."""
    import numpy as np

    from .test_offload_heldout_probe2 import _same

    for n in sizes:
        want = probe.make(np.random.default_rng(n + base), n)
        got = probe.make(np.random.default_rng(n + base), n)
        r_want, r_got = probe.fn(*want), compiled(*got)
        assert (why := _same([*got, r_got], [*want, r_want], strict=False)) is None, (n, why)


def loop_and_block_choices(probes: dict[str, Any], report_of: Any) -> list:
    """(kernel, what) for every loop the search may choose and every function block of
    ``probes`` (``report_of(probe)``: the report the search works from)."""
    import pytest

    out = []
    for name in sorted(probes):
        report = report_of(probes[name])
        for what in search_genes(report) + [b.id for b in report.blocks]:
            out.append(pytest.param(name, what, id=f"{name}-{what}"))
    return out
