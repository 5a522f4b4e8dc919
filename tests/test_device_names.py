"""One name per device: aliases resolve in one place, and wrong words get the right ones."""

from __future__ import annotations

import numpy as np
import pytest

import hetlab as hl
from hetlab.core.registry import get_backend, resolve_name


@pytest.mark.parametrize("word", ["cuda", "gpu", "GPU", "Cuda", "cupy"])
def test_gpu_words_name_the_cupy_backend(word):
    assert resolve_name(word) == "cupy"
    assert get_backend(word).name == "cupy"


def test_a_kernel_called_with_an_alias_reaches_that_device():
    pts = np.random.default_rng(0).random((8, 3))
    if get_backend("cupy").why_not() is None:
        assert hl.fps(pts, 2, device="gpu").tolist() == hl.fps(pts, 2).tolist()
    else:  # the GPU's own reason, not "unknown device"
        with pytest.raises(hl.BackendUnavailable, match="cupy"):
            hl.fps(pts, 2, device="cuda")


def test_cpu_is_ambiguous_and_says_which_words_to_use():
    with pytest.raises(hl.InvalidInputError, match=r"'numpy'.*'numba'"):
        hl.fps(np.zeros((2, 3)), 1, device="cpu")


@pytest.mark.parametrize("bad", ["tpu", "", 3, None.__class__])
def test_unknown_devices_list_names_and_aliases(bad):
    with pytest.raises(hl.InvalidInputError, match=r"'numpy', 'numba', 'cupy'.*'gpu' for 'cupy'"):
        get_backend(bad)


def test_compare_takes_aliases_and_refuses_them_twice():
    with pytest.raises(hl.InvalidInputError, match="repeat"):
        hl.compare(hl.fps, sizes=[8], devices=["cupy", "gpu"])
