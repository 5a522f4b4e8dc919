"""The public functions fuzzed by :mod:`tests.fuzz.api`, each with a small valid base call."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import hetlab as hl
from hetlab import bench, energy, quant
from hetlab import offload_memory as om
from hetlab.core.registry import get_backend

from .api import _SCRATCH, Api, Path_


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _w(rows: int = 8, cols: int = 64, seed: int = 0) -> np.ndarray:
    return _rng(seed).normal(0, 0.1, (rows, cols)).astype(np.float32)


def _X(tokens: int = 16, cols: int = 64, seed: int = 1) -> np.ndarray:
    return _rng(seed).standard_normal((tokens, cols)).astype(np.float32)


_QW = quant.quantize(_w(), bits=4, group_size=32)
_PLAN = quant.allocate_bits([_w(8, 128), _w(8, 128, 2)], 4.5, candidates=(2, 4), group_size=128)
_FUSED = quant.FusedPlan(_PLAN)
_GEMV = quant.GemvPlan(quant.quantize(_w(8, 128), 4, 128))
_QW_PATH = os.path.join(_SCRATCH, "qw.npz")
quant.save(_QW, _QW_PATH)
_MODEL = om.Model.decoder(d_model=16, n_heads=2, d_ff=32, n_layers=1, vocab=20)


def _allclose(a: Any, b: Any) -> bool:
    return bool(np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                            rtol=1e-3, atol=1e-5))


def _same_qw(a: Any, b: Any) -> bool:
    return _allclose(a.dequantize(), b.dequantize())


def _dataset() -> Any:
    return hl.compare("fps", sizes=[64], devices=["numpy"], repeats=1, warmup=1,
                      progress=False, energy=True)


_DS = _dataset()
_DS_PATH = os.path.join(_SCRATCH, "ds.nc")
hl.save(_DS, _DS_PATH)


def _bitplan_fields() -> dict[str, Any]:
    p = _PLAN
    return {"bits": list(p.bits), "units": list(p.units), "matrices": list(p.matrices),
            "average_bits": float(p.average_bits), "error": float(p.error),
            "candidates": tuple(p.candidates), "errors": p.errors.copy()}


def _use_plan(plan: Any) -> None:
    plan.layer_bits(0)
    plan.dequantize(0)
    quant.FusedPlan(plan)


def _stream_forward(tokens: Any, **kw: Any) -> Any:
    with om.stream(**kw) as run:
        return run.forward(tokens)


def _close(x: Any) -> None:
    close = getattr(x, "close", None)
    if callable(close):
        close()


def _set_threads(n: Any) -> None:
    import numba

    before = numba.get_num_threads()
    try:
        hl.set_threads(n)
    finally:
        numba.set_num_threads(before)


APIS: list[Api] = [
    # --- hetlab.quant -------------------------------------------------------------------
    Api("quant.quantize", quant.quantize,
        lambda: {"w": _w(), "bits": 4, "group_size": 32, "symmetric": False},
        equal=_same_qw),
    Api("quant.allocate_bits", quant.allocate_bits,
        lambda: {"layers": [_w(4, 64), _w(4, 64, 3)], "target_bits": 4.6,
                 "importance": [np.ones(64), 2.0], "candidates": (2, 4), "group_size": 32,
                 "symmetric": False, "block_rows": 2, "relative": False},
        equal=lambda a, b: a.bits == b.bits, after=_use_plan),
    Api("quant.BitPlan", quant.BitPlan, _bitplan_fields, after=_use_plan),
    Api("quant.FusedPlan", quant.FusedPlan, lambda: {"plan": _PLAN},
        after=lambda run: run([np.ones(128, np.float32)] * 2)),
    Api("quant.FusedPlan.__call__", lambda xs: _FUSED(xs),
        lambda: {"xs": [_rng(5).standard_normal(128).astype(np.float32),
                        _rng(6).standard_normal(128).astype(np.float32)]},
        equal=lambda a, b: all(_allclose(x, y) for x, y in zip(a, b, strict=True))),
    Api("quant.GemvPlan", quant.GemvPlan, lambda: {"qw": quant.quantize(_w(8, 128), 4, 128)},
        after=lambda run: run(np.ones(128, np.float32))),
    Api("quant.GemvPlan.__call__", lambda x, out=None: _GEMV(x, out),
        lambda: {"x": _rng(7).standard_normal(128).astype(np.float32),
                 "out": np.zeros(8, np.float32)},
        equal=_allclose, keep=("out",)),
    Api("quant.gptq", quant.gptq,
        lambda: {"w": _w(), "X": _X(), "bits": 4, "group_size": 32, "symmetric": False,
                 "token_weights": np.full(16, 1 / 16), "damp": 0.01,
                 "clip_ratios": (1.0, 0.9), "act_order": False, "refine": 1},
        equal=_same_qw),
    Api("quant.calibrate_awq", quant.calibrate_awq,
        lambda: {"w": _w(), "X": _X(), "bits": 4, "group_size": 32, "symmetric": False,
                 "token_weights": np.full(16, 1 / 16), "grid": 3, "clip": False,
                 "quantizer": "rtn", "damp": 0.01},
        equal=lambda a, b: _allclose(a.dequantize(), b.dequantize()),
        after=lambda s: s.matvec(np.ones(64, np.float32))),
    Api("quant.channel_importance", quant.channel_importance, lambda: {"X": _X()},
        equal=_allclose),
    Api("quant.mbq_token_weights", quant.mbq_token_weights,
        lambda: {"labels": np.array([0, 0, 1, 1, 1]), "sensitivity": np.array([1.0, 2.0])},
        equal=_allclose),
    Api("quant.output_error", quant.output_error,
        lambda: {"w_eff": _QW.dequantize(), "w": _w(), "X": _X(),
                 "p": np.full(16, 1 / 16)},
        equal=_allclose),
    Api("quant.pack_codes", quant.pack_codes,
        lambda: {"codes": _rng(3).integers(0, 16, (2, 64)).astype(np.uint8), "bits": 4,
                 "group_size": 32},
        equal=lambda a, b: bool(np.array_equal(a, b))),
    Api("quant.unpack_codes", quant.unpack_codes,
        lambda: {"qweight": np.asarray(_QW.qweight).copy(), "bits": 4, "group_size": 32},
        equal=lambda a, b: bool(np.array_equal(a, b))),
    Api("quant.save", quant.save,
        lambda: {"qw": _QW, "path": Path_(os.path.join(_SCRATCH, "saved.npz"))}),
    Api("quant.load", quant.load, lambda: {"path": Path_(_QW_PATH)}, equal=_same_qw),
    # --- point clouds, sweeps, results, threads, explain --------------------------------------
    Api("hl.make_cloud", hl.make_cloud, lambda: {"n": 50, "rng": _rng(), "kind": "uniform"},
        keep=("rng",)),
    Api("hl.compare", hl.compare,
        lambda: {"kernel": "fps", "sizes": [32], "devices": ["numpy"], "repeats": 1,
                 "warmup": 1, "seed": 0, "progress": False, "include_recorded": False,
                 "energy": False, "tolerance": 0.1},
        finite=False),
    Api("hl.save", hl.save,
        lambda: {"ds": _DS.copy(), "path": Path_(os.path.join(_SCRATCH, "out.nc"))}),
    Api("hl.load", hl.load, lambda: {"path": Path_(_DS_PATH)}, finite=False),
    Api("hl.set_threads", _set_threads, lambda: {"n": 1}),
    Api("hl.explain", lambda kernel, points, n_samples, start=0:
        hl.explain(kernel, points, n_samples, start),
        lambda: {"kernel": "fps", "points": hl.make_cloud(64, _rng()), "n_samples": 8,
                 "start": 0},
        finite=False),
    # --- bench and energy -------------------------------------------------------------------
    Api("bench.measure_unit", bench.measure_unit,
        lambda: {"kernel": "fps", "device": "numpy", "size": 32, "seed": 0, "repeats": 1,
                 "warmup": 1, "energy": False}, finite=False),
    Api("bench.case_args", bench.case_args,
        lambda: {"kernel": "fps", "size": 32, "seed": 0}),
    Api("energy.energy_of", energy.energy_of,
        lambda: {"kernel": "fps", "backend": get_backend("numpy"), "times_s": [0.01, 0.02],
                 "threads": 1, "metered_j": None, "meter_how": ""}, finite=False),
    Api("energy.cpu_energy_model", energy.cpu_energy_model, lambda: {"threads": 2}),
    Api("energy.pareto_front", energy.pareto_front,
        lambda: {"ds": _DS.copy(), "x": "time_s", "y": "energy_j"}, finite=False),
    # --- memory offload -----------------------------------------------------------------------
    Api("offload_memory.Model.decoder", om.Model.decoder,
        lambda: {"d_model": 16, "n_heads": 2, "d_ff": 32, "n_layers": 1, "vocab": 20,
                 "seed": 0, "eps": 1e-5},
        after=lambda m: m.forward(np.array([1, 2]))),
    Api("offload_memory.stream", _stream_forward,
        lambda: {"model": _MODEL, "budget": "1MB", "tier": "disk", "prefetch": 1, "bits": 8,
                 "kv_budget": 100_000, "group_size": 32, "io": "auto", "kv_block": 4,
                 "pin": True, "tokens": np.array([1, 2, 3])},
        equal=_allclose),
    Api("offload_memory.sweep", om.sweep,
        lambda: {"model": _MODEL, "budgets": ["1MB"], "prefetch": [1], "bits": [8],
                 "tokens": np.array([1, 2]), "repeats": 1, "io": "auto", "group_size": 32},
        finite=False),
    Api("offload_memory.parse_budget", om.parse_budget,
        lambda: {"value": "2MB", "name": "budget"}, names={"value": ("budget",)}),
    Api("offload_memory.break_even_budget", om.break_even_budget,
        lambda: {"layer_bytes": 1000, "n_layers": 4, "read_s": 0.2, "compute_s": 0.1}),
    Api("offload_memory.Budget", om.Budget,
        lambda: {"total": 1000, "shares": {"weights": 600, "kv": 300}}),
]
