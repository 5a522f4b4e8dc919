"""Every public kernel refuses bad input with an InvalidInputError naming the argument."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl

P = np.random.default_rng(0).random((10, 3), dtype=np.float32)
NAN = P.copy()
NAN[3, 1] = np.nan
INF = P.copy()
INF[0, 0] = np.inf

CASES = [
    # (call, argument named in the message)
    (lambda: hl.fps(P[:, :2], 2), "points must have shape"),
    (lambda: hl.fps(P[None], 2), "points must have shape"),
    (lambda: hl.fps(P.astype(np.complex64), 2), "points must hold real numbers"),
    (lambda: hl.fps(np.array([["a", "b", "c"]]), 1), "points must hold real numbers"),
    (lambda: hl.fps(NAN, 2), "points must be finite"),
    (lambda: hl.fps(INF, 2), "points must be finite"),
    (lambda: hl.fps(np.empty((0, 3)), 1), "points must hold at least one point"),
    (lambda: hl.fps(P, 11), r"n_samples must be an int in \[1, 10\]"),
    (lambda: hl.fps(P, 0), r"n_samples must be an int in \[1, 10\]"),
    (lambda: hl.fps(P, 2.0), "n_samples must be an int"),
    (lambda: hl.fps(P, True), "n_samples must be an int"),
    (lambda: hl.fps(P, 2, start=10), r"start must be an int in \[0, 9\]"),
    (lambda: hl.knn(P, P, 11), r"k must be an int in \[1, 10\]"),
    (lambda: hl.knn(P, P[:, :2], 1), "queries must have shape"),
    (lambda: hl.knn(P, NAN, 1), "queries must be finite"),
    (lambda: hl.knn(np.empty((0, 3)), P, 1), "points must hold at least one point"),
    (lambda: hl.ball_query(P, P, -1.0, 2), "radius must be a finite number > 0"),
    (lambda: hl.ball_query(P, P, 0.0, 2), "radius must be a finite number > 0"),
    (lambda: hl.ball_query(P, P, float("nan"), 2), "radius must be a finite number > 0"),
    (lambda: hl.ball_query(P, P, "1", 2), "radius must be a positive number"),
    (lambda: hl.ball_query(P, P, 0.5, 11), r"k must be an int in \[1, 10\]"),
    (lambda: hl.fps_knn(P, 11, 2), "n_samples must be an int"),
    (lambda: hl.fps_knn(P, 2, 11), "k must be an int"),
    (lambda: hl.voxel_downsample(P, -0.1), "voxel_size must be a finite number > 0"),
    (lambda: hl.voxel_downsample(P * 1e15, 1e-300), "voxel_size must keep voxel coordinates"),
    (lambda: hl.voxel_downsample(NAN, 0.1), "points must be finite"),
    # values whose squares (or whose cast to the points' dtype) would overflow
    (lambda: hl.fps(P * 1e20, 2), r"points must have \|coordinates\| < 5.33e\+18"),
    (lambda: hl.knn(P.astype(np.float64) * 1e200, P, 1), r"points must have \|coordinates\|"),
    (lambda: hl.knn(P, P.astype(np.float64) * 1e100, 1), r"queries \(cast to the points'"),
    (lambda: hl.ball_query(P, P, 1e30, 2), r"radius must be < 1.84e\+19"),
]


@pytest.mark.parametrize("call,message", CASES, ids=[c[1][:30] for c in CASES])
@pytest.mark.parametrize("device", ["numpy", "numba"])
def test_bad_input_raises_invalid_input(call, message, device, monkeypatch):
    # validation happens before any kernel runs, whatever the device
    import hetlab.core.dispatch as dispatch

    real_run = dispatch.run
    monkeypatch.setattr(
        "hetlab.kernels.pointcloud.api.run",
        lambda spec, dev, keep, **kw: real_run(spec, device, keep, **kw),
    )
    with pytest.raises(hl.InvalidInputError, match=message):
        call()


def test_integers_are_converted_to_float64():
    pts = np.array([[0, 0, 0], [3, 0, 0], [1, 0, 0]], dtype=np.int32)
    assert hl.fps(pts, 3).tolist() == [0, 1, 2]
    idx, d2 = hl.knn(pts, pts, 1)
    assert d2.dtype == np.float64 and idx[:, 0].tolist() == [0, 1, 2]


def test_lists_are_accepted_and_float16_widened():
    assert hl.fps([[0, 0, 0], [1, 1, 1]], 2).tolist() == [0, 1]
    _, d2 = hl.knn(np.zeros((2, 3), dtype=np.float16), [[1, 0, 0]], 1)
    assert d2.dtype == np.float32


def test_queries_take_the_points_dtype():
    _, d2 = hl.knn(P, P.astype(np.float64), 2)
    assert d2.dtype == np.float32
