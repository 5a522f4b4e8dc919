"""Contraction recognition by shape: each catalogue entry in several writing styles, near misses
that must stay loops, and the generated code equal to the plain Python function."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload.analysis.parhelp import install
from hetlab.offload.runtime.measure import copy_args, outputs_of, verify

from . import _offload_contraction_cases as K

R = np.random.default_rng(7)


def _m(*shape):
    return R.random(shape)


def _run(fn, args):
    work = copy_args(args)
    return outputs_of(fn(*work), work)


_DIR = Path(tempfile.mkdtemp(prefix="hetlab-contractions-"))


def _python_variant(fn):
    """The block variant as plain Python (``@njit`` dropped): the emitted NumPy, no compile."""
    report = offload.analyze(fn)
    src = offload.transform(report, blocks=[b.id for b in report.blocks]).source
    src = "\n".join(ln for ln in src.splitlines() if not ln.startswith("@njit"))
    path = _DIR / f"_c_{fn.__name__}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    install(src, vars(mod), python=True)  # parallel helpers (parhelp) as plain Python
    return getattr(mod, report.name)


n, m, p = 5, 4, 6
POSITIVE = {  # kernel: (block patterns, arguments)
    "gemm_split": (["matmul"], lambda: (1.5, 0.5, _m(n, p), _m(n, m), _m(m, p))),
    "gemm_sizes": (["matmul"], lambda: (1.5, 0.5, _m(n, p), _m(n, m), _m(m, p), n - 1, p, m)),
    "gemm_scalar_acc": (["matmul"], lambda: (1.5, 0.5, _m(n, p), _m(n, m), _m(m, p))),
    "gemm_at_b": (["matmul"], lambda: (_m(m, p), _m(n, m), _m(n, p))),
    "gemm_out_t": (["matmul"], lambda: (_m(p, n), _m(n, m), _m(m, p))),
    "gemv_pair": (["matvec+matvec"], lambda: (_m(n, n), _m(n), _m(n), _m(n), _m(n))),
    "atax": (["matvec+matvec"], lambda: (_m(n, m), _m(m), _m(m), _m(n))),
    "two_mm": (["matmul", "matmul"],
               lambda: (_m(n, m), _m(m, p), _m(p, 3), _m(n, 3), _m(n, p), 1.5, 0.5, n, p, m, 3)),
    "ger": (["rank-1"], lambda: (_m(n, m), _m(n), _m(m), 2.0)),
    "outer": (["outer"], lambda: (_m(n), _m(m), _m(n, m))),
    "syr2k_full": (["rank-2k"], lambda: (_m(n, n), _m(n, m), _m(n, m), 0.5)),
    "dot_plus": (["dot"], lambda: (_m(n), _m(n))),
    "axpy_sub": (["axpy"], lambda: (0.5, _m(n), _m(n))),
    "scal": (["scal"], lambda: (_m(n, m), 0.5)),
    "colsum": (["sum"], lambda: (_m(n, m), _m(m))),
    "colmean": (["mean"], lambda: (_m(n, m), _m(m), float(n))),
    "contract": (["contraction"], lambda: (_m(3, 4, 5), _m(5, 6), _m(3, 4, 6))),
    "batched": (["batched-matmul"], lambda: (_m(3, 4, 5), _m(3, 5, 2), _m(3, 4, 2))),
    "gemm_relu": (["matmul+epilogue"], lambda: (_m(n, m) - 0.5, _m(m, p), _m(n, p))),
}

NEAR = ["nm_offset", "nm_indirect", "nm_same_in_out",
        "nm_local_view", "nm_dependence_through_output",
        "nm_assign_in_reduction", "nm_three_factors_diag", "nm_step", "nm_acc_read_after",
        "nm_scalar_changes"]


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_catalogue_entry_is_recognized(name):
    patterns, _ = POSITIVE[name]
    assert [b.pattern for b in offload.analyze(getattr(K, name)).blocks] == patterns


@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_generated_code_equals_the_original(name):
    fn = getattr(K, name)
    args = POSITIVE[name][1]()
    ok, err = verify(_run(_python_variant(fn), args), _run(fn, args))
    assert ok, err


@pytest.mark.parametrize("name", NEAR)
def test_near_misses_stay_loops(name):
    assert offload.analyze(getattr(K, name)).blocks == []


def test_alpha_anywhere_and_transposes_in_the_call():
    (b,) = offload.analyze(K.gemm_sizes).blocks
    assert "alpha * (" in b.call and "beta" in b.call and "range(" not in b.call
    (b,) = offload.analyze(K.gemm_at_b).blocks
    assert ".T @" in b.call
    (b,) = offload.analyze(K.gemv_pair).blocks
    assert b.call.count("@") == 2 and ").T @" in b.call


def test_epilogue_is_a_fused_loop_after_the_library_call():
    (b,) = offload.analyze(K.gemm_relu).blocks
    first, *rest = b.call.splitlines()
    assert "@" in first and rest[0].startswith("for ") and "max(" in b.call


def test_bounds_that_may_be_negative_are_clamped():
    (b,) = offload.analyze(K.gemm_sizes).blocks
    assert "max(NI, 0)" in b.call
    fn = _python_variant(K.gemm_sizes)
    args = (1.5, 0.5, _m(n, p), _m(n, m), _m(m, p), -2, p, m)  # no iteration in the original
    ok, err = verify(_run(fn, args), _run(K.gemm_sizes, args))
    assert ok, err


pytest.importorskip("numba")

NJIT = ["gemm_split", "atax", "contract", "batched", "gemm_relu", "syr2k_full"]


@pytest.mark.parametrize("name", NJIT)
def test_njit_variant_equals_the_original(name):
    fn = getattr(K, name)
    v = offload.transform(fn, blocks=["B1"])
    args = POSITIVE[name][1]()
    ok, err = verify(_run(v.compile(), args), _run(fn, args))
    assert ok, err


def test_views_of_one_array_as_two_arguments_are_refused():
    v = offload.transform(K.gemv_pair, blocks=["B1"])
    A = _m(n, n)
    with pytest.raises(hl.InvalidInputError):
        v.compile()(A, A[0], _m(n), _m(n), _m(n))  # x1 is a view of A
