"""Sparse 3-D convolution: every dataflow equals the dense-grid reference; kernel map by
hashing equals brute force; the autotuner measures once per layer class; bad input."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab.kernels.sparseconv import numba as conv_numba
from hetlab.kernels.sparseconv import reference, voxelize
from hetlab.kernels.sparseconv.kernel_map import build_kernel_map
from tests.conftest import backend_params


def _layer(n_points, rng, c_in=5, c_out=3, k=3, dtype=np.float64, spread=1 / 12):
    vox = voxelize(hl.make_cloud(n_points, rng, kind="clustered"), spread) - 4  # negatives too
    f = rng.standard_normal((vox.shape[0], c_in)).astype(dtype)
    w = rng.standard_normal((k**3, c_in, c_out)).astype(dtype)
    return vox, f, w


@pytest.mark.parametrize("device", backend_params("sparse_conv3d"))
@pytest.mark.parametrize("dataflow", ["auto", "gather_scatter", "fetch_on_demand"])
@pytest.mark.parametrize("k,stride", [(3, 1), (1, 1), (2, 2), (3, 2), (5, 1), (3, 3)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_equals_dense_grid_reference(device, dataflow, k, stride, dtype):
    rng = np.random.default_rng(k * 10 + stride)
    vox, f, w = _layer(800, rng, k=k, dtype=dtype)
    ev, ef = reference.sparse_conv3d(vox, f, w, k, stride)
    gv, gf = hl.sparse_conv3d(vox, f, w, kernel_size=k, stride=stride, dataflow=dataflow,
                              device=device)
    np.testing.assert_array_equal(gv, ev)
    assert gf.dtype == dtype and gf.shape == (ev.shape[0], 3)
    tol = 1e-12 if dtype == np.float64 else 1e-5
    assert np.max(np.abs(gf - ef)) <= tol * np.max(np.abs(ef))


@pytest.mark.parametrize("device", backend_params("sparse_conv3d"))
def test_edge_cases(device):
    w = np.arange(27.0).reshape(27, 1, 1)
    one = hl.sparse_conv3d([[5, -7, 2]], [[2.0]], w, device=device)
    np.testing.assert_array_equal(one[1], [[26.0]])  # only the centre offset meets itself
    empty = hl.sparse_conv3d(np.zeros((0, 3), int), np.zeros((0, 1)), w, device=device)
    assert empty[0].shape == (0, 3) and empty[1].shape == (0, 1)
    far = hl.sparse_conv3d([[0, 0, 0], [9, 9, 9]], [[1.0], [1.0]], w, device=device)
    np.testing.assert_array_equal(far[1], [[13.0], [13.0]])  # isolated voxels
    down = hl.sparse_conv3d([[0, 0, 0], [1, 1, 1], [-1, 0, 0]], np.ones((3, 1)),
                            np.ones((8, 1, 1)), kernel_size=2, stride=2, device=device)
    np.testing.assert_array_equal(down[0], [[-1, 0, 0], [0, 0, 0]])
    np.testing.assert_array_equal(down[1], [[1.0], [2.0]])


def test_kernel_map_equals_brute_force():
    rng = np.random.default_rng(0)
    vox = voxelize(rng.random((400, 3)) * 6 - 3, 1.0)
    for k, s in [(3, 1), (2, 2), (3, 2)]:
        km = build_kernel_map(vox, k, s)
        where = {tuple(v): i for i, v in enumerate(vox.tolist())}
        offs = reference.kernel_offsets(k)
        for o, q in enumerate(km.out_voxels.tolist()):
            for d, off in enumerate(offs.tolist()):
                p = tuple(q[a] * s + off[a] for a in range(3))
                assert km.nbr[o, d] == where.get(p, -1)
        assert 1 <= km.mean_neighbours <= k**3


def test_autotuner_measures_once_per_layer_class_and_picks_the_fastest(monkeypatch):
    rng = np.random.default_rng(1)
    vox, f, w = _layer(1500, rng)
    tuner = conv_numba.Autotuner(repeats=2)
    monkeypatch.setattr(conv_numba, "TUNER", tuner)
    calls = []
    real = conv_numba.run_dataflow
    monkeypatch.setattr(conv_numba, "run_dataflow",
                        lambda name, *a: calls.append(name) or real(name, *a))
    hl.sparse_conv3d(vox, f, w, device="numba")
    # one warm-up and 2 timed rounds each, 4 more rounds when the race is close, the final run
    assert set(calls) == set(conv_numba.DATAFLOWS) and len(calls) in (2 * 3 + 1, 2 * 7 + 1)
    (entry,) = tuner.cache.values()
    assert entry["choice"] == min(entry["times_s"], key=entry["times_s"].get)
    calls.clear()
    hl.sparse_conv3d(vox, f * 2, w, device="numba")  # same layer class: cached
    assert calls == [entry["choice"]]


def test_autotune_table_lists_what_the_tuner_measured(monkeypatch):
    from hetlab.kernels.sparseconv import autotune_table

    monkeypatch.setattr(conv_numba, "TUNER", conv_numba.Autotuner(repeats=1))
    assert autotune_table().empty
    rng = np.random.default_rng(4)
    vox, f, w = _layer(1500, rng)
    hl.sparse_conv3d(vox, f, w, device="numba")
    hl.sparse_conv3d(vox, f, w, stride=2, device="numba")
    table = autotune_table()
    assert len(table) == 2 and list(table["stride"]) == [1, 2]
    assert list(table["c_in"]) == [f.shape[1]] * 2 and list(table["c_out"]) == [w.shape[2]] * 2
    for (key, entry), row in zip(conv_numba.TUNER.cache.items(), table.itertuples(),
                                 strict=True):
        assert row.neighbours == key[5] and row.choice == entry["choice"]
        times = {d: getattr(row, f"{d}_ms") for d in conv_numba.DATAFLOWS}
        assert times == {d: t * 1e3 for d, t in entry["times_s"].items()}
        assert row.choice == min(times, key=times.get)


def test_bench_unit_verifies():
    from hetlab.bench import measure_unit

    unit = measure_unit("sparse_conv3d", "numba", 2000, repeats=1)
    assert unit.status == "ok" and unit.verified, unit.status


V = np.array([[0, 0, 0], [1, 0, 0]])
F = np.ones((2, 2))
W = np.ones((27, 2, 3))
BAD = [
    (lambda: hl.sparse_conv3d(V[:, :2], F, W), r"voxels must be integers of shape \(n, 3\)"),
    (lambda: hl.sparse_conv3d(V * 0.5, F, W), "voxels must be integers"),
    (lambda: hl.sparse_conv3d([[0, 0, 0], [0, 0, 0]], F, W), "voxels must be distinct"),
    (lambda: hl.sparse_conv3d(V + 2**19, F, W), "voxels must lie in"),
    (lambda: hl.sparse_conv3d(V, F[:1], W), r"features must have shape \(n_voxels=2"),
    (lambda: hl.sparse_conv3d(V, [[1.0, np.nan], [1, 1]], W), "features must be finite"),
    (lambda: hl.sparse_conv3d(V, F, W[:26]), r"weights must have shape \(kernel_size\*\*3=27"),
    (lambda: hl.sparse_conv3d(V, F, np.ones((27, 3, 3))), "C_in=2"),
    (lambda: hl.sparse_conv3d(V, F, W, kernel_size=0), r"kernel_size must be an int in \[1, 7\]"),
    (lambda: hl.sparse_conv3d(V, F, W, stride=0), r"stride must be an int in \[1, 8\]"),
    (lambda: hl.sparse_conv3d(V, F, W, dataflow="implicit_gemm"), "dataflow must be one of"),
]


@pytest.mark.parametrize("call,message", BAD, ids=[m[:30] for _, m in BAD])
def test_bad_input(call, message):
    with pytest.raises(hl.InvalidInputError, match=message):
        call()


def test_docstring_example_runs():
    import doctest

    from hetlab.kernels.sparseconv import api

    assert doctest.testmod(api).failed == 0
