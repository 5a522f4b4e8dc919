"""The offload evaluation suite (benchmarks/offload_suite): every answer key equals its plain
function, every plain function compiles with numba.njit as written, and analyze reads it."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

pytest.importorskip("numba")
import numba

from hetlab import offload
from hetlab.offload.runtime.measure import copy_args, outputs_of

# benchmarks/ on sys.path only for this import: left there, its distributed.py would shadow
# the dask package for test files that run later in the same process
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
try:
    from offload_suite import FAMILIES, SUITE
    from offload_suite.compare_keys import DESIGNS
finally:
    sys.path.pop(0)

NAMES = list(SUITE)


def _outputs(fn, args):
    work = copy_args(args)
    return outputs_of(fn(*work), work)


def _assert_same(got, want, what):
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        if w is None:
            assert g is None, f"{what}: output {k} should be None"
            continue
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-9, atol=1e-12,
                                   err_msg=f"{what}: output {k}")


def test_suite_shape():
    assert len(SUITE) >= 25
    assert {k.family for k in SUITE.values()} == set(FAMILIES)
    assert sum(k.has_parallel for k in SUITE.values()) >= 19
    for k in SUITE.values():
        assert k.tiny < k.full
        assert k.has_parallel == bool(k.parallel) or k.name == "value_histogram"
        assert isinstance(k.hand, numba.core.registry.CPUDispatcher), k.name


@pytest.mark.parametrize("name", NAMES)
def test_hand_written_equals_plain_python(name):
    """The answer key (run as Python through py_func) gives what the plain loops give."""
    k = SUITE[name]
    args = k.make_args(k.tiny, 3)
    want = _outputs(k.fn, args)
    got = _outputs(k.hand.py_func, args)
    _assert_same(got, want, f"{name} hand-written (Python)")
    # the inputs changed something: a kernel whose outputs equal its inputs proves nothing
    inputs = [a for a in args if isinstance(a, np.ndarray)]
    assert want[0] is not None or any(
        not np.array_equal(w, a) for w, a in zip(want[1:], inputs, strict=True))


@pytest.mark.parametrize("name", NAMES)
def test_plain_compiles_with_njit_and_analyze_runs(name):
    k = SUITE[name]
    args = k.make_args(k.tiny, 4)
    want = _outputs(k.fn, args)
    _assert_same(_outputs(numba.njit(k.fn), args), want, f"{name} njit as written")
    report = offload.analyze(k.fn)
    assert report.loops, f"{name}: analyze found no loop"


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_hand_written_compiled_equals_plain(name):
    """The compiled answer key (prange, BLAS) agrees too, at a size other than tiny."""
    k = SUITE[name]
    args = k.make_args(k.tiny + 5, 5)
    _assert_same(_outputs(k.hand, args), _outputs(k.fn, args), f"{name} hand-written (njit)")


DESIGN_CASES = [(n, label) for n in NAMES for label in DESIGNS.get(n, {})]


def test_every_key_was_chosen_among_timed_designs():
    """Each kernel's answer key is one of the designs compare_keys.py times, with at least one
    alternative, and its docstring says which designs were tried."""
    for name, k in SUITE.items():
        designs = DESIGNS[name]
        assert len(designs) >= 2, name
        assert any(fn is k.hand for fn in designs.values()), f"{name}: key not among designs"
        assert "Tried" in (k.hand.__doc__ or ""), f"{name}: key does not say what was tried"


@pytest.mark.parametrize(("name", "label"), DESIGN_CASES)
def test_every_design_equals_plain_python(name, label):
    """Every design tried (not only the kept one) computes what the plain loops compute."""
    k = SUITE[name]
    args = k.make_args(k.tiny, 6)
    got = _outputs(DESIGNS[name][label].py_func, args)
    _assert_same(got, _outputs(k.fn, args), f"{name} design {label} (Python)")


def test_a_wrong_answer_key_is_caught():
    """The comparison above can fail: a key off by one scaling is refused."""
    k = SUITE["gemm_beta_first"]
    args = k.make_args(k.tiny, 3)
    want = _outputs(k.fn, args)

    def off(alpha, beta, C, A, B):
        k.hand.py_func(alpha * 1.001, beta, C, A, B)

    with pytest.raises(AssertionError):
        _assert_same(_outputs(off, args), want, "perturbed key")


@pytest.mark.slow
def test_benchmark_suite_quick_prints_its_table(tmp_path, capsys):
    """benchmarks/offload.py --suite --quick on two kernels: the table, the means, the JSON."""
    import importlib.util
    import json

    path = pathlib.Path(__file__).resolve().parents[1] / "benchmarks" / "offload.py"
    spec = importlib.util.spec_from_file_location("offload_bench_suite", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out_file = tmp_path / "suite.json"
    rc = mod.main(["--suite", "--quick", "--kernels", "axpy_loop,prefix_scan", "--budget", "2",
                   "--out", str(out_file)])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert "plan_vs_hand" in out and "axpy_loop" in out and "prefix_scan" in out
    assert "geometric mean over them: plan vs hand-written" in out
    assert "threading layer" in out and "wrong results: 0" in out
    data = json.loads(out_file.read_text())
    rows = {r["kernel"]: r for r in data["rows"]}
    assert set(rows) == {"axpy_loop", "prefix_scan"}
    assert rows["axpy_loop"]["wrong"] == 0 and rows["axpy_loop"]["plan_vs_hand"] > 0
    # a scan has nothing to offload: serial, perhaps compiled with the reassociation option
    assert rows["prefix_scan"]["plan"] in ("(serial)", "fp:reassoc")
    assert data["summary"]["with_parallel_loop"] == 1
