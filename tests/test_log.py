"""The hetlab logger: silent by default; records each run-time choice once it is asked to."""

from __future__ import annotations

import logging
import subprocess
import sys

import numpy as np

import hetlab as hl
from hetlab import quant


def test_silent_by_default():
    code = ("import numpy as np, hetlab as hl; from hetlab import quant;"
            "qw = quant.quantize(np.ones((8, 128), np.float32), bits=4);"
            "hl.gemv_q(qw, np.ones(128, np.float32), device='numba')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "hetlab" not in proc.stderr and proc.stdout == ""


def test_w4_path_choice_is_logged(caplog):
    from hetlab import log
    from hetlab.kernels.quant.numba import w4_path

    log._seen.clear()  # the choice is logged once per process: forget earlier calls
    qw = quant.quantize(np.ones((8, 128), np.float32), bits=4)
    with caplog.at_level(logging.INFO, logger="hetlab"):
        hl.gemv_q(qw, np.ones(128, np.float32), device="numba")
    path = w4_path("gemv")
    msgs = [r.getMessage() for r in caplog.records if r.name.startswith("hetlab")]
    assert any(f"W4 gemv takes the {path} path" in m for m in msgs), msgs


def test_log_once_logs_a_key_once(caplog):
    from hetlab.log import get_logger, log_once

    log = get_logger("hetlab.test")
    with caplog.at_level(logging.INFO, logger="hetlab"):
        for _ in range(3):
            log_once(log, "k", "chose %s", "x")
    assert [r.getMessage() for r in caplog.records] == ["chose x"]


def test_sparse_conv_dataflow_choice_is_logged(caplog):
    from hetlab.kernels.sparseconv.numba import TUNER

    rng = np.random.default_rng(3)
    vox = np.unique(rng.integers(0, 6, (40, 3)), axis=0)
    feats = rng.random((len(vox), 5), dtype=np.float32)
    w = rng.random((27, 5, 7), dtype=np.float32)
    TUNER.cache.clear()
    with caplog.at_level(logging.INFO, logger="hetlab"):
        hl.sparse_conv3d(vox, feats, w, device="numba", dataflow="auto")
    assert any("sparse_conv3d: dataflow" in r.getMessage() for r in caplog.records)
