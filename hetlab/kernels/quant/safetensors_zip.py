"""Stream float tensors out of a ``model.safetensors`` inside a zip, one read buffer at a time.

Reading the member whole (``zf.read``) and handing the bytes to ``safetensors`` holds the
file's bytes, the parsed arrays and their float32 copies at once — about 180 MB at the peak
for all-MiniLM-L6-v2's 91 MB — and glibc keeps much of that as freed but unreturned heap.
Here each tensor is allocated once, in float32, and filled from the (deflated) member
:data:`CHUNK` bytes at a time; a table may keep only some rows (the rest stay zero, and
zeroed pages the allocator hands out are not resident until written).

Format (safetensors): an 8-byte little-endian header length, a JSON header mapping each
name to ``dtype``, ``shape`` and ``data_offsets`` (begin, end) in the data section after it.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from typing import IO

import numpy as np

from ...errors import HetlabError

__all__ = ["FLOAT_DTYPES", "CHUNK", "read_float_tensors"]

#: safetensors dtypes read (as float32); a kept tensor of another dtype is an error
FLOAT_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64}
#: bytes read at a time from the member
CHUNK = 1 << 20


def _fill(f: IO[bytes], out: np.ndarray, dtype: np.dtype, rows: np.ndarray | None) -> None:
    """Fill ``out`` (n, …) float32 from the next ``out.size · dtype.itemsize`` bytes of ``f``;
    with ``rows``, only those rows (the bytes of the others are read and dropped)."""
    n = out.shape[0] if out.ndim else 1
    flat = out.reshape(n, -1)
    row_bytes = flat.shape[1] * dtype.itemsize
    per_chunk = max(1, CHUNK // max(row_bytes, 1))
    for r0 in range(0, n, per_chunk):
        r1 = min(n, r0 + per_chunk)
        want = (r1 - r0) * row_bytes
        data = f.read(want)
        if len(data) != want:
            raise HetlabError(f"safetensors: the file ends inside a tensor ({len(data)} of "
                              f"{want} bytes); the model file is damaged.")
        chunk = np.frombuffer(data, dtype).reshape(r1 - r0, -1)
        if rows is None:
            flat[r0:r1] = chunk
        else:
            mine = rows[(rows >= r0) & (rows < r1)]
            flat[mine] = chunk[mine - r0]


def read_float_tensors(f: IO[bytes], keep: Callable[[str, str], bool],
                       rows: Mapping[str, np.ndarray] | None = None,
                       where: str = "load") -> dict[str, np.ndarray]:
    """The tensors of the safetensors stream ``f`` that ``keep(name, dtype)`` keeps, float32.

    Parameters
    ----------
    f : binary file object positioned at the start of the safetensors data (a zip member)
    keep : callable (name, safetensors dtype such as "F32") → bool
    rows : mapping name → int array, optional
        For these (2-D) tensors only the given rows are filled; the others are zero.
    where : str
        The caller's name, for error messages.

    Returns
    -------
    dict name → ndarray (C-contiguous float32, the tensor's shape)

    Raises
    ------
    HetlabError
        A kept tensor whose dtype is not in :data:`FLOAT_DTYPES`, or a truncated file.
    """
    rows = rows or {}
    (head_len,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(head_len))
    header.pop("__metadata__", None)
    out: dict[str, np.ndarray] = {}
    pos = 0  # position in the data section
    for name, meta in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        if not keep(name, meta["dtype"]):
            continue
        if meta["dtype"] not in FLOAT_DTYPES:
            raise HetlabError(f"{where}: tensor {name} has dtype {meta['dtype']}; expected one "
                              f"of {sorted(FLOAT_DTYPES)}.")
        begin, _ = meta["data_offsets"]
        f.seek(begin - pos, 1)  # forward only: the entries are sorted by offset
        dtype = np.dtype(FLOAT_DTYPES[meta["dtype"]]).newbyteorder("<")
        arr = np.zeros(meta["shape"], np.float32) if name in rows else np.empty(
            meta["shape"], np.float32)
        _fill(f, arr, dtype, rows.get(name))
        out[name] = arr
        pos = meta["data_offsets"][1]
    return out
