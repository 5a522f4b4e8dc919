"""The FPGA destination of offload extraction: arithmetic intensity and candidacy per nest,
Vitis-HLS-style C++ kernels, the C-simulation functional model verified against the original,
the modeled time (hetlab.fpga.timing), and the mixed-destination order of offload.search.

No board here: every FPGA time is modeled and must say so."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hetlab as hl
from hetlab import offload
from hetlab.fpga import timing
from hetlab.fpga.manifest import load_manifest
from hetlab.offload import FpgaOptions, GAOptions, MeasureOptions
from hetlab.offload.examples import EXAMPLES
from hetlab.offload.runtime.measure import copy_args, outputs_of, verify
from hetlab.offload.targets.fpga import BOARD_OVERLAY, find_nests, model_nest

from ._source_modules import load_source

pytest.importorskip("numba")
needs_gxx = pytest.mark.skipif(shutil.which("g++") is None,
                               reason="the C-simulation needs g++ (not installed)")


def _nests(name, *args, threshold=2.0):
    ex = EXAMPLES[name]
    rep = offload.analyze(ex.fn)
    return rep, {n.root: n for n in find_nests(rep, args or ex.make_args(), threshold)}


def test_intensity_follows_the_documented_counting_rule():
    n = 10
    _rep, nests = _nests("matmul", *EXAMPLES["matmul"].make_args(n))
    mm = nests["L1"]
    m, p = n + 3, n + 1
    assert mm.flops == 2 * n * p * m  # s += A*B: one add, one multiply
    assert mm.bytes == 8 * (n * m + m * p + n * p)  # A, B read; C only written
    assert mm.intensity == pytest.approx(mm.flops / mm.bytes)
    _, nb = _nests("nbody_forces", *EXAMPLES["nbody_forces"].make_args(24))
    # per pair: 3 subtractions, r2 (3 mul + 3 add), inv (div, mul, sqrt), 3 × (+= and *)
    assert nb["L1"].flops == 18 * 24 * 24
    assert nb["L1"].bytes == 8 * (24 * 3 + 24 + 24 * 3)
    # a stencil reads the bounding box of its subscripts (corners included): A read, B written
    _, jac = _nests("jacobi_2d", *EXAMPLES["jacobi_2d"].make_args(12))
    assert jac["L2"].flops == 5 * 10 * 10
    assert jac["L2"].bytes == 8 * 12 * 12 + 8 * 10 * 10


def test_candidacy_and_the_reasons_given():
    _, nb = _nests("nbody_forces")
    assert nb["L1"].candidate and not nb["L1"].why
    _, jac = _nests("jacobi_2d")
    assert not jac["L2"].candidate
    assert jac["L2"].why.startswith("not an FPGA candidate: intensity 0.")
    assert "< threshold 2" in jac["L2"].why
    _, cov = _nests("covariance")
    assert "L6 (j) has no trip count fixed" in cov["L5"].why
    _, lu = _nests("lu")
    assert "L2 (i) has no trip count fixed" in lu["L2"].why
    _, hist = _nests("histogram")
    assert hist == {}  # sequential: no nest at all


@needs_gxx
@pytest.mark.parametrize("name", ["matmul", "nbody_forces", "jacobi_2d", "himeno", "dot",
                                  "array_max", "covariance", "heat_3d", "blur_rows"])
def test_fpga_variant_matches_the_original_through_the_c_simulation(name):
    ex = EXAMPLES[name]
    rep = offload.analyze(ex.fn)
    args = ex.make_args()
    roots = [n.root for n in find_nests(rep, args, 0.0) if n.candidate]
    assert roots
    v = offload.transform(rep, roots, target="fpga", args=args, unroll=2)
    assert v.target == "fpga" and v.source.count('extern "C" void') == len(roots)
    assert "#pragma HLS PIPELINE II=" in v.source and "m_axi port=" in v.source
    w = copy_args(args)
    want = outputs_of(ex.fn(*w), w)
    w = copy_args(args)
    v.reset()
    ok, err = verify(outputs_of(v.compile()(*w), w), want)
    assert ok, err
    seconds, calls = v.stats()
    assert seconds > 0 and all(c >= 1 for c in calls)


def shifted(x, out, s):
    for i in range(out.shape[0]):
        out[i] = 2.0 * x[i + s]


@needs_gxx
@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 12), extra=st.integers(0, 3), s=st.integers(-4, 4))
def test_subscripts_are_range_checked_before_the_kernel_runs(n, extra, s):
    """A Python negative index wraps; C would read outside the buffer: the host refuses."""
    x, out = np.arange(n + extra, dtype=np.float64), np.zeros(n)
    v = _shift_variant()
    want = out.copy()
    try:
        shifted(x, want, s)
        python_ok = s >= 0
    except IndexError:
        python_ok = False
    got = out.copy()
    if python_ok:
        v(x, got, s)
        assert np.array_equal(got, want)
    else:
        with pytest.raises(IndexError, match="out of range"):
            v(x, got, s)


_SHIFT: list = []


def _shift_variant():
    if not _SHIFT:
        args = (np.arange(16.0), np.zeros(12), 1)
        _SHIFT.append(offload.transform(shifted, ["L1"], target="fpga", args=args).compile())
    return _SHIFT[0]


@needs_gxx
def test_the_variant_refuses_arguments_it_was_not_generated_for():
    f = _shift_variant()
    with pytest.raises(hl.InvalidInputError, match="must be a C-contiguous float64 array"):
        f(np.arange(16, dtype=np.float32), np.zeros(12), 1)
    with pytest.raises(hl.InvalidInputError, match="at most 16 elements"):
        f(np.arange(40.0), np.zeros(12), 1)


def test_transform_fpga_refusals():
    ex = EXAMPLES["nbody_forces"]
    with pytest.raises(hl.InvalidInputError, match="needs args="):
        offload.transform(ex.fn, ["L1"], target="fpga")
    with pytest.raises(hl.InvalidInputError, match="must be the root of a nest"):
        offload.transform(ex.fn, ["L2"], target="fpga", args=ex.make_args())
    cov = EXAMPLES["covariance"]
    with pytest.raises(hl.InvalidInputError, match="no trip count fixed"):
        offload.transform(cov.fn, ["L5"], target="fpga", args=cov.make_args())


def test_modeled_time_is_the_timing_model_of_the_kernel_structure():
    n = 24
    rep, nests = _nests("nbody_forces", *EXAMPLES["nbody_forces"].make_args(n))
    nest = nests["L1"]
    t = model_nest(rep, nest, 1, "pynq-z2")
    assert t.source == "modeled" and "MODELED" in str(t)
    b = load_manifest(BOARD_OVERLAY).board("pynq-z2")
    f = b["clock_mhz"] * 1e6
    # i: not pipelined, overhead 4; j: pipelined leaf carrying ax += …: II 4
    leaf = next(lp for lp in t.loops if lp.name == "L1")
    depth = leaf.cycles / n - 4 - 4 * (n - 1)
    assert depth == int(depth) and 3 < depth < 100  # 3 + 4 × arithmetic depth
    assert leaf.cycles == n * (4 + timing.pipelined_cycles(depth, 4, n))
    assert t.compute_s == pytest.approx(leaf.cycles / f)
    lat = load_manifest(BOARD_OVERLAY).data["m_axi"]["latency_cycles"]
    load_pos = next(lp for lp in t.loops if lp.name == "load_pos")
    assert load_pos.cycles == timing.pipelined_cycles(lat + 2, 1, n * 3)
    # launch: 3 pointers × 2 words + 5 dims + n + eps + ap_start writes, one poll
    assert t.launch_s == pytest.approx((2 * 3 + 5 + 2 + 1) * b["mmio_write_us"] * 1e-6
                                       + b["mmio_read_us"] * 1e-6)
    assert model_nest(rep, nest, 1, "kv260").total_s < t.total_s


def test_unroll_factor_shortens_the_pipelined_parallel_loop_until_resources_run_out():
    from hetlab.offload.targets.fpga import fits

    rep, nests = _nests("jacobi_2d", *EXAMPLES["jacobi_2d"].make_args(34), threshold=0.0)
    nest = nests["L2"]
    cyc = [model_nest(rep, nest, u, "pynq-z2").compute_s for u in (1, 2, 4, 8)]
    assert cyc == sorted(cyc, reverse=True)
    # 32 rows, each j loop of 32 trips shortened to ⌈32/U⌉: (31 − 3) cycles saved per row
    assert cyc[0] - cyc[3] == pytest.approx(32 * (31 - 3) / 100e6)
    v = offload.transform(rep, ["L2"], target="fpga", args=EXAMPLES["jacobi_2d"].make_args(34),
                          unroll=4)
    assert "#pragma HLS UNROLL factor=4" in v.source
    rep3, h = _nests("heat_3d", *EXAMPLES["heat_3d"].make_args(8), threshold=0.0)
    assert fits(rep3, h["L2"], 1, "pynq-z2") == ""
    assert "DSPs (estimate) exceed the 220 of pynq-z2" in fits(rep3, h["L2"], 8, "pynq-z2")
    big = EXAMPLES["matmul"].make_args(200)
    repm, mm = _nests("matmul", *big)
    assert "exceed the" in fits(repm, mm["L1"], 1, "pynq-z2") and "BRAM" in fits(
        repm, mm["L1"], 1, "pynq-z2")


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not installed")
def test_generated_hls_source_passes_gxx_syntax_check(tmp_path):
    ex = EXAMPLES["himeno"]
    rep = offload.analyze(ex.fn)
    v = offload.transform(rep, ["L2", "L5"], target="fpga", args=ex.make_args(), unroll=2)
    path = tmp_path / "kernels.cpp"
    path.write_text(v.source)
    out = subprocess.run(["g++", "-std=c++14", "-fsyntax-only", "-Wall", "-Werror",
                          "-Wno-unknown-pragmas", "-Wno-unused-label", "-Wno-unused-function",
                          str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "double *gosa_io" in v.source and "gosa_io[0] = gosa;" in v.source


@needs_gxx
def test_search_tries_fpga_last_and_only_on_high_intensity_nests():
    ex = EXAMPLES["nbody_forces"]
    plan = offload.search(ex.fn, ex.make_args(32), targets=["fpga", "cupy", "numba"], budget=1,
                          progress=False, ga=GAOptions(exhaustive=False),
                          measure=MeasureOptions(repeats=1, confirm=0))
    assert set(plan.alternatives) >= {"numba", "fpga"}
    fp = plan.alternatives["fpga"]
    assert fp.genes == ["L1"] and fp.fpga.outcome["L1"]
    tried = fp.candidates()
    assert (tried.source == "modeled").sum() == 1 and (tried.source == "measured").sum() == 1
    assert any("MODELED" in n for n in plan.notes)
    d = plan.destinations()
    assert d.loc["L1", "source"] == "modeled" and d.loc["L1", "fpga_s"] > 0
    assert d.loc["L1", "numba"] != "not asked"
    if "cuda" not in plan.alternatives:
        assert d.loc["L1", "cuda"].startswith("skipped")
    assert "extern \"C\" void nbody_forces_L1" in plan.source("fpga")
    # the FPGA plan, when it offloads, says its time is modeled
    on = dataclasses.replace(fp, best=(1,), confirmed={})
    assert "time MODELED" in on.summary() and on.table().loc["L1", "destination"]

    jac = EXAMPLES["jacobi_2d"]
    p2 = offload.search(jac.fn, jac.make_args(12), targets=["numba", "fpga"], budget=1,
                        progress=False, ga=GAOptions(exhaustive=False),
                        measure=MeasureOptions(repeats=1, confirm=0))
    assert "fpga" not in p2.alternatives
    assert "intensity" in p2.destinations().loc["L2", "fpga"]
    assert any(n.startswith("fpga: no nest tried") for n in p2.notes)
    assert "< threshold 2" in p2.table().loc["L2", "fpga"]


KERNEL = '''
import numpy as np


def pairs(x, out):
    for i in range(x.shape[0]):
        acc = 0.0
        for j in range(x.shape[0]):
            d = x[i] - x[j]
            acc += d * d * 0.5 + d * 0.25 + 1.0
        out[i] = acc


def args_pairs():
    return np.linspace(0.0, 1.0, 40), np.zeros(40)
'''


@needs_gxx
def test_cli_mixed_destinations(tmp_path, capsys):
    import argparse

    from hetlab.offload import register_offload_cli

    path = tmp_path / "kern.py"
    path.write_text(KERNEL)
    p = argparse.ArgumentParser(prog="hetlab")
    register_offload_cli(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(["offload", f"{path}:pairs", "--targets", "numba,cupy,fpga", "--quiet",
                         "--repeats", "1", "--budget", "2", "--show-source"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "destinations per nest" in out and "fpga_s is MODELED" in out
    assert "modeled" in out and "MODELED" in out
    assert 'extern "C" void pairs_L1' in out and "#pragma HLS PIPELINE" in out


SCALE = 0.5


def scaled_pairs(x, out):
    for i in range(x.shape[0]):
        acc = 0.0
        for j in range(x.shape[0]):
            acc += SCALE * (x[i] - x[j]) * (x[i] - x[j]) + 1.0
        out[i] = acc


@needs_gxx
def test_module_level_float_constant_is_passed_as_a_double():
    args = (np.linspace(0.0, 1.0, 9), np.zeros(9))
    v = offload.transform(scaled_pairs, ["L1"], target="fpga", args=args)
    assert "double SCALE" in v.source
    want = args[1].copy()
    scaled_pairs(args[0], want)
    got = args[1].copy()
    v.compile()(args[0], got)
    assert np.allclose(got, want, rtol=1e-12)


# -- the C++ translation on generated kernels (hypothesis) ------------------------------------
def _exprs(ints: bool):
    arr = "q" if ints else "x"
    leaves = st.sampled_from([f"{arr}[i, j]", f"{arr}[i - 1, j]", f"{arr}[i, j + 1]",
                              f"{arr}[i + 1, j - 1]", "i", "j", "3", "k"]
                             + ([] if ints else ["0.5", "x[i, j] * 1.5"]))

    def grow(sub):
        pair = st.tuples(sub, sub)
        ops = [pair.map(lambda t: f"({t[0]} + {t[1]})"), pair.map(lambda t: f"({t[0]} - {t[1]})"),
               pair.map(lambda t: f"({t[0]} * {t[1]})"), pair.map(lambda t: f"min({t[0]}, {t[1]})"),
               pair.map(lambda t: f"max({t[0]}, {t[1]})"), sub.map(lambda a: f"abs({a})"),
               pair.map(lambda t: f"({t[0]} if {t[0]} > {t[1]} else {t[1]})")]
        if ints:
            ops += [pair.map(lambda t: f"({t[0]} // (abs({t[1]}) + 1))"),
                    pair.map(lambda t: f"({t[0]} % (abs({t[1]}) + 1))")]
        else:
            ops += [pair.map(lambda t: f"({t[0]} / (abs({t[1]}) + 1.0))")]
        return st.one_of(ops)

    return st.recursive(leaves, grow, max_leaves=6)


def _load(src: str):
    return load_source(src, "kern", prefix="fpga_gen")


@needs_gxx
@settings(max_examples=5, deadline=None)  # 60 examples passed once (30 s)
@given(fexpr=_exprs(False), iexpr=_exprs(True), seed=st.integers(0, 2**16))
def test_generated_kernels_translate_to_cpp_with_python_semantics(fexpr, iexpr, seed):
    src = ("def kern(x, q, out, iout, k):\n"
           "    for i in range(1, x.shape[0] - 1):\n"
           "        for j in range(1, x.shape[1] - 1):\n"
           f"            out[i, j] = {fexpr}\n"
           f"            iout[i, j] = {iexpr}\n")
    fn = _load(src)
    rng = np.random.default_rng(seed)
    args = (rng.random((6, 7)) * 4 - 2, rng.integers(-9, 10, (6, 7)), np.zeros((6, 7)),
            np.zeros((6, 7), dtype=np.int64), 2)
    v = offload.transform(fn, ["L1"], target="fpga", args=args)
    want = copy_args(args)
    fn(*want)
    got = copy_args(args)
    v.compile()(*got)
    assert np.allclose(got[2], want[2], rtol=1e-12, atol=1e-12), v.source
    assert np.array_equal(got[3], want[3]), v.source


@needs_gxx
def test_fpga_search_over_nests_and_unroll_factors():
    """jacobi-2d below the default threshold, searched anyway (threshold 0.1): per nest one
    on/off gene and two unroll genes; exhaustive over 6 bits, one functional run per nest set."""
    ex = EXAMPLES["jacobi_2d"]
    plan = offload.search(ex.fn, ex.make_args(10), targets=["fpga"], budget=8, progress=False,
                          measure=MeasureOptions(repeats=1, confirm=0),
                          fpga=FpgaOptions(threshold=0.1))
    fp = plan.alternatives["fpga"]
    assert fp.genes == ["L2", "L2:u2", "L2:u4", "L4", "L4:u2", "L4:u4"]
    assert fp.exhaustive is not None and len(fp.measurements) == 1 + 4 + 4 + 16
    unrolled = [v for v in fp.variants.values() if getattr(v, "unroll", None)
                and 4 in v.unroll.values()]
    assert unrolled and "#pragma HLS UNROLL factor=4" in unrolled[0].source
    m = fp.measurements
    # more unrolling of L2 alone shortens the modeled time (same measured host part) …
    alone = [m[(1, a, b, 0, 0, 0)].time_s for a, b in ((0, 0), (0, 1), (1, 0))]
    assert alone == sorted(alone, reverse=True) and alone[0] > alone[2]
    # … until the estimated DSPs of 8 double-precision lanes exceed the PYNQ-Z2's 220
    assert m[(1, 1, 1, 0, 0, 0)].status.startswith("over resources: L2: about")
    assert fp.candidates().query("status == 'ok'").source.eq("modeled").sum() == 15


@needs_gxx
def test_benchmark_script_runs(tmp_path):
    import os
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    proc = subprocess.run([sys.executable, str(root / "benchmarks" / "offload_fpga.py"),
                           "--only", "nbody_forces", "--size", "24", "--budget", "1", "--quick"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "fpga_call_ms (modeled)" in proc.stdout and "MODELED" in proc.stdout
