"""The streaming safetensors reader (hetlab.kernels.quant.safetensors_zip) on files it writes
itself: every float dtype, row subsets, skipped tensors, and damaged or unexpected input."""

from __future__ import annotations

import io
import json
import struct
import zipfile

import numpy as np
import pytest

from hetlab.errors import HetlabError
from hetlab.kernels.quant import safetensors_zip as sz

_CODES = {np.dtype(np.float32): "F32", np.dtype(np.float16): "F16",
          np.dtype(np.float64): "F64", np.dtype(np.int64): "I64"}


def _safetensors(tensors: dict[str, np.ndarray], meta: bool = True) -> bytes:
    header, blobs, pos = {}, [], 0
    for name, arr in tensors.items():
        raw = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": _CODES[arr.dtype], "shape": list(arr.shape),
                        "data_offsets": [pos, pos + len(raw)]}
        blobs.append(raw)
        pos += len(raw)
    if meta:
        header["__metadata__"] = {"format": "np"}
    head = json.dumps(header).encode()
    return struct.pack("<Q", len(head)) + head + b"".join(blobs)


def _zipped(data: bytes) -> zipfile.ZipFile:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("model.safetensors", data)
    return zipfile.ZipFile(io.BytesIO(buf.getvalue()))


def _tensors(rng):
    return {"a": rng.standard_normal((300, 70)).astype(np.float32),
            "ids": np.arange(5, dtype=np.int64),
            "half": rng.standard_normal((9, 3)).astype(np.float16),
            "wide": rng.standard_normal(7),
            "big": rng.standard_normal((5000, 64)).astype(np.float32),  # > one read chunk
            "scalar": np.array(2.5, np.float32)}


def test_reads_every_float_tensor_as_float32_exactly():
    t = _tensors(np.random.default_rng(0))
    with _zipped(_safetensors(t)) as zf, zf.open("model.safetensors") as f:
        got = sz.read_float_tensors(f, lambda name, dtype: dtype in sz.FLOAT_DTYPES)
    assert set(got) == {"a", "half", "wide", "big", "scalar"}
    for name, arr in got.items():
        assert arr.dtype == np.float32 and arr.flags.c_contiguous
        np.testing.assert_array_equal(arr, t[name].astype(np.float32))


def test_keeps_only_what_is_asked_and_only_the_rows_asked():
    t = _tensors(np.random.default_rng(1))
    rows = np.array([0, 17, 4999, 2048])
    with _zipped(_safetensors(t, meta=False)) as zf, zf.open("model.safetensors") as f:
        got = sz.read_float_tensors(f, lambda name, _: name in ("big", "wide"), {"big": rows})
    assert set(got) == {"big", "wide"}
    want = np.zeros_like(t["big"])
    want[rows] = t["big"][rows]
    np.testing.assert_array_equal(got["big"], want)
    np.testing.assert_array_equal(got["wide"], t["wide"].astype(np.float32))


def test_refuses_a_kept_integer_tensor_and_a_truncated_file():
    t = _tensors(np.random.default_rng(2))
    with _zipped(_safetensors(t)) as zf, zf.open("model.safetensors") as f:
        with pytest.raises(HetlabError, match="ids has dtype I64"):
            sz.read_float_tensors(f, lambda name, _: True, where="test")
    data = _safetensors(t)
    with _zipped(data[:-100]) as zf, zf.open("model.safetensors") as f:
        with pytest.raises(HetlabError, match="ends inside a tensor"):
            sz.read_float_tensors(f, lambda name, dtype: dtype in sz.FLOAT_DTYPES)
