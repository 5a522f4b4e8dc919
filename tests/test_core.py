"""The spine: registry, dispatch policy, backend contract, import hygiene."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import hetlab as hl
from hetlab.backends.base import Backend
from hetlab.core import registry
from hetlab.core.dispatch import resolve_backend
from hetlab.core.registry import get_backend, get_kernel
from tests.conftest import backend_params


def test_import_hetlab_imports_no_backend_library():
    code = (
        "import sys, hetlab; "
        "print(sorted(m for m in ('numba', 'cupy', 'pynq', 'hvplot', 'holoviews') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_incomplete_backend_cannot_be_instantiated():
    class Half(Backend):
        name = "half"

        def why_not(self):
            return None

    with pytest.raises(TypeError):
        Half()


@pytest.mark.parametrize("name", hl.backend_names())
def test_backend_contract(name):
    b = get_backend(name)
    assert b.name == name and b.kind in ("cpu", "gpu", "fpga")
    reason = b.why_not()
    assert reason is None or (isinstance(reason, str) and reason)
    assert b.is_available() == (reason is None)
    assert b.timing_source in ("measured", "modeled")
    if reason is not None:
        with pytest.raises(hl.BackendUnavailable, match=name):
            b.require()
        return
    a = np.arange(6.0).reshape(2, 3)
    dev = b.to_device(a)
    assert b.owns(dev)
    b.synchronize()
    np.testing.assert_array_equal(b.from_device(dev), a)
    info = b.info()
    assert {"device_name", "threads"} <= set(info)
    assert {"peak_bandwidth_gbps", "peak_gflops", "peak_source"} <= set(b.peaks())


def test_unknown_device_lists_choices():
    with pytest.raises(hl.InvalidInputError, match="'numpy', 'numba', 'cupy', 'fpga'"):
        hl.fps(np.zeros((3, 3)), 1, device="tpu")


def test_unknown_kernel_lists_choices():
    with pytest.raises(hl.InvalidInputError, match="'fps'"):
        get_kernel("nope")
    assert get_kernel(hl.fps) is get_kernel("fps")


@pytest.mark.skipif(get_backend("cupy").is_available(), reason="a GPU is present")
def test_unavailable_device_raises_with_reason_never_falls_back():
    with pytest.raises(hl.BackendUnavailable, match=r"cupy: .+; available: numpy"):
        hl.fps(np.zeros((3, 3)), 1, device="cupy")


def test_kernel_without_overlay_on_fpga_says_so():
    with pytest.raises(hl.KernelNotSupported, match="fpga: no overlay for this kernel yet"):
        hl.voxel_downsample(np.zeros((3, 3)), 1.0, device="fpga")


class _FakeDeviceArray:
    """Stands in for a device array: hetlab recognizes arrays by their module's family."""

    __module__ = "cupy._core"

    def __init__(self, shape):
        self.shape = shape


def test_mixed_host_and_device_arrays_are_refused():
    with pytest.raises(hl.DeviceMismatchError, match="points on host, queries on cupy"):
        resolve_backend(get_kernel("knn"), None, {"points": np.zeros((2, 3)),
                                                  "queries": _FakeDeviceArray((1, 3))})


def test_device_array_on_a_host_device_is_refused():
    with pytest.raises(hl.DeviceMismatchError, match=r"points is a cupy array but device='numba'"):
        resolve_backend(get_kernel("fps"), "numba", {"points": _FakeDeviceArray((4, 3))})


def test_host_arrays_default_to_numpy_and_device_arrays_to_their_device():
    spec = get_kernel("fps")
    assert resolve_backend(spec, None, {"points": [[0, 0, 0]]})[0].name == "numpy"
    backend, on_host = resolve_backend(spec, None, {"points": _FakeDeviceArray((4, 3))})
    assert backend.name == "cupy" and not on_host


def test_set_threads_validates():
    numba_backend = get_backend("numba")
    before = numba_backend.threads()
    hl.set_threads(1)
    assert numba_backend.threads() == 1
    hl.set_threads(before)
    with pytest.raises(hl.InvalidInputError, match="threads must be an int"):
        hl.set_threads(0)


def test_errors_subclass_builtins():
    assert issubclass(hl.InvalidInputError, ValueError)
    assert issubclass(hl.BackendUnavailable, ImportError)
    assert issubclass(hl.KernelNotSupported, NotImplementedError)
    assert all(issubclass(e, hl.HetlabError) for e in (
        hl.InvalidInputError, hl.DeviceMismatchError, hl.BackendUnavailable,
        hl.KernelNotSupported, hl.VerificationError))


def test_devices_table_lists_every_backend():
    table = hl.devices(peaks=False)
    assert list(table.index) == hl.backend_names()
    for name, row in table.iterrows():
        assert row["available"] == get_backend(name).is_available()
        assert (row["reason"] == "") == row["available"]


@pytest.mark.parametrize("device", backend_params("fps"))
def test_registry_lists_supported_backends(device):
    assert device in registry.supported_backends("fps")


def test_numba_cuda_numpy_alias_restored_only_where_needed(monkeypatch):
    """NumPy 2.5 removed np.row_stack, which numba-cuda builds before it overload: the GPU
    probe restores the alias when numba-cuda is installed, and touches nothing otherwise."""
    import importlib.util

    from hetlab.backends import cupy as cupy_backend

    real_find_spec = importlib.util.find_spec
    for installed in (False, True):
        monkeypatch.delattr(np, "row_stack", raising=False)
        monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, installed=installed:
                            (object() if installed else None) if name == "numba_cuda"
                            else real_find_spec(name, *a))
        cupy_backend._numba_cuda_numpy_compat()
        assert hasattr(np, "row_stack") is installed
        if installed:
            assert getattr(np, "row_stack") is np.vstack  # noqa: B009 (NPY201)
