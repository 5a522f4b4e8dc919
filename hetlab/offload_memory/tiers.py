"""The slow tier: named blobs of arrays in one file, read with direct I/O where Linux allows it.

How the reads bypass the page cache (Linux)
-------------------------------------------
The file is opened with ``os.O_DIRECT``: the kernel then moves data between the device and the
caller's buffer without the page cache, which requires the buffer address, the file offset and
the length to be multiples of the logical block size. Every blob therefore starts at a multiple
of :data:`ALIGN` (4096) bytes and is padded to one, and every read lands in a page-aligned
buffer from an anonymous ``mmap`` (:func:`aligned_empty`). Each read is a real read of the
device: a second forward reads the same bytes from the device again.

Where ``O_DIRECT`` is refused (``EINVAL`` on open, read or write: some tmpfs and overlay file
systems, macOS, Windows), the file is read with ordinary buffered I/O and, after every read and
write, ``posix_fadvise(POSIX_FADV_DONTNEED)`` asks the kernel to drop the range from the page
cache (written data is flushed with ``fdatasync`` first, since only clean pages are dropped), so
later reads go to the device again; :attr:`TierFile.io_mode` is then ``"buffered+dontneed"``.
Without ``posix_fadvise`` (not Linux) it is ``"buffered"``, and reads may be served from the page
cache: the run reports it and never claims direct I/O it did not do.

>>> import tempfile, os, numpy as np
>>> d = tempfile.mkdtemp()
>>> t = TierFile(os.path.join(d, "w.bin"))
>>> t.write("L0", {"w": np.arange(6, dtype=np.float32).reshape(2, 3)})
>>> arrays, nbytes = t.read("L0")
>>> arrays["w"].tolist(), nbytes, t.io_mode in IO_MODES
([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], 4096, True)
>>> t.close()
"""

from __future__ import annotations

import errno
import mmap
import os
from dataclasses import dataclass

import numpy as np

from ..errors import HetlabError, InvalidInputError
from ..log import get_logger

__all__ = ["ALIGN", "IO_MODES", "aligned_empty", "round_up", "TierFile", "Entry"]

#: alignment of buffers, offsets and lengths for O_DIRECT (the page size; block sizes divide it)
ALIGN = 4096
#: what :attr:`TierFile.io_mode` can be
IO_MODES = ("direct", "buffered+dontneed", "buffered")
_TENSOR_ALIGN = 64
_log = get_logger(__name__)


def round_up(n: int, align: int = ALIGN) -> int:
    """``n`` rounded up to a multiple of ``align``."""
    return -(-int(n) // align) * align


def aligned_empty(nbytes: int) -> np.ndarray:
    """A page-aligned uint8 buffer of ``round_up(nbytes)`` bytes (an anonymous mmap).

    The memory is returned to the system when the last view of it is dropped.
    """
    n = max(round_up(nbytes), ALIGN)
    return np.frombuffer(mmap.mmap(-1, n), dtype=np.uint8)


@dataclass(frozen=True)
class Entry:
    """Where one array of a blob lives: byte offset inside the blob, dtype and shape."""

    name: str
    offset: int
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return int(np.dtype(self.dtype).itemsize * int(np.prod(self.shape, dtype=np.int64)))


def _pack_layout(tensors: dict[str, np.ndarray]) -> tuple[list[Entry], int]:
    entries, pos = [], 0
    for name, a in tensors.items():
        a = np.asarray(a)
        entries.append(Entry(name, pos, a.dtype.str, tuple(int(s) for s in a.shape)))
        pos = -(-(pos + a.nbytes) // _TENSOR_ALIGN) * _TENSOR_ALIGN
    return entries, pos


class TierFile:
    """A file of named blobs (dicts of arrays) on the slow tier.

    Parameters
    ----------
    path : str or os.PathLike
        The file (created or truncated).
    io : {"auto", "direct", "buffered"}
        ``"auto"``: direct I/O, falling back to buffered + DONTNEED where it is refused;
        ``"direct"``: direct I/O or an error; ``"buffered"``: the fallback, forced (tests).

    Attributes
    ----------
    io_mode : str
        One of :data:`IO_MODES`: what was used (updated if direct I/O is refused mid-way).
    """

    def __init__(self, path: str | os.PathLike[str], io: str = "auto") -> None:
        if io not in ("auto", "direct", "buffered"):
            raise InvalidInputError(
                f"io must be 'auto', 'direct' or 'buffered'; got {io!r}. 'auto' uses direct I/O "
                "where the file system allows it."
            )
        self.path = os.fspath(path)
        self._want = io
        self._blobs: dict[str, tuple[int, int, list[Entry]]] = {}
        self._end = 0
        self.fd = -1
        flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC
        if io != "buffered" and hasattr(os, "O_DIRECT"):
            try:
                self.fd = os.open(self.path, flags | os.O_DIRECT, 0o600)
                self.io_mode = "direct"
            except OSError as exc:
                self._refused(exc)
        if self.fd < 0:
            if io == "direct":
                raise HetlabError(
                    f"io='direct': this platform has no O_DIRECT; use io='auto' to fall back to "
                    f"buffered reads (reported as such). Path: {self.path}."
                )
            self.fd = os.open(self.path, flags, 0o600)
            self.io_mode = ("buffered+dontneed" if hasattr(os, "posix_fadvise")
                            else "buffered")

    # --- direct I/O refused: fall back, say so --------------------------------------------

    def _refused(self, exc: OSError) -> None:
        if exc.errno != errno.EINVAL:
            raise exc
        if self._want == "direct":
            raise HetlabError(
                f"io='direct': the file system of {self.path} refuses O_DIRECT (EINVAL); use "
                "io='auto' to fall back to buffered reads + POSIX_FADV_DONTNEED, or put the "
                "file on a disk file system (ext4, xfs) with path=."
            ) from exc
        _log.warning("offload_memory: O_DIRECT refused on %s (%s); buffered reads + "
                     "POSIX_FADV_DONTNEED instead", self.path, exc)

    def _fall_back(self, exc: OSError) -> None:
        self._refused(exc)
        old = self.fd
        self.fd = os.open(self.path, os.O_RDWR)
        os.close(old)
        self.io_mode = "buffered+dontneed" if hasattr(os, "posix_fadvise") else "buffered"

    def _drop_cache(self, offset: int, nbytes: int, written: bool) -> None:
        if self.io_mode == "buffered+dontneed":
            if written:
                os.fdatasync(self.fd) if hasattr(os, "fdatasync") else os.fsync(self.fd)
            os.posix_fadvise(self.fd, offset, nbytes, os.POSIX_FADV_DONTNEED)

    # --- writing and reading -------------------------------------------------------------

    def write(self, name: str, tensors: dict[str, np.ndarray]) -> None:
        """Append a blob: the arrays packed (64-byte aligned) and padded to :data:`ALIGN`."""
        entries, size = _pack_layout(tensors)
        buf = aligned_empty(size)
        for e, a in zip(entries, tensors.values(), strict=True):
            buf[e.offset : e.offset + e.nbytes] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
        offset = self._end
        self._transfer(os.pwritev, buf, offset)
        self._drop_cache(offset, len(buf), written=True)
        self._blobs[name] = (offset, len(buf), entries)
        self._end = offset + len(buf)

    def _transfer(self, op: object, buf: np.ndarray, offset: int) -> None:
        mv = memoryview(buf)
        done = 0
        while done < len(buf):
            try:
                k = op(self.fd, [mv[done:]], offset + done)  # type: ignore[operator]
            except OSError as exc:
                if self.io_mode != "direct" or exc.errno != errno.EINVAL:
                    raise
                self._fall_back(exc)
                continue
            if k <= 0:
                raise HetlabError(f"offload_memory: short transfer at byte {offset + done} of "
                                  f"{self.path} (file truncated?)")
            done += k

    def nbytes(self, name: str) -> int:
        """Bytes a read of blob ``name`` moves (and the buffer it needs): a multiple of 4096."""
        return self._blobs[name][1]

    def names(self) -> list[str]:
        return list(self._blobs)

    def entries(self, name: str) -> list[Entry]:
        return list(self._blobs[name][2])

    def read(self, name: str) -> tuple[dict[str, np.ndarray], int]:
        """Read blob ``name`` from the device into a fresh aligned buffer.

        Returns the arrays (read-only views of the buffer) and the bytes read.
        """
        offset, size, entries = self._blobs[name]
        buf = aligned_empty(size)
        self._transfer(os.preadv, buf, offset)
        self._drop_cache(offset, size, written=False)
        buf.flags.writeable = False
        return {e.name: buf[e.offset : e.offset + e.nbytes].view(e.dtype).reshape(e.shape)
                for e in entries}, size

    def rows_nbytes(self, name: str, tensor: str, rows: np.ndarray) -> int:
        """Bytes :meth:`read_rows` moves for these rows (whole aligned pages around them)."""
        return sum(b - a for a, b in self._row_spans(name, tensor, rows))

    def _row_spans(self, name: str, tensor: str, rows: np.ndarray) -> list[tuple[int, int]]:
        offset, _, entries = self._blobs[name]
        e = next(e for e in entries if e.name == tensor)
        row_bytes = e.nbytes // e.shape[0]
        spans: list[tuple[int, int]] = []
        for r in np.unique(rows):
            a = (offset + e.offset + int(r) * row_bytes) // ALIGN * ALIGN
            b = round_up(offset + e.offset + (int(r) + 1) * row_bytes)
            if spans and a <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(spans[-1][1], b))
            else:
                spans.append((a, b))
        return spans

    def read_rows(self, name: str, tensor: str, rows: np.ndarray) -> tuple[np.ndarray, int]:
        """Rows ``rows`` of a 2-D array of a blob (an embedding lookup), reading only the pages
        that hold them. Returns the rows (len(rows), cols) and the bytes read."""
        _, _, entries = self._blobs[name]
        e = next(e for e in entries if e.name == tensor)
        row_bytes = e.nbytes // e.shape[0]
        base = self._blobs[name][0] + e.offset
        spans = self._row_spans(name, tensor, rows)
        out = np.empty((len(rows), e.shape[1]), dtype=e.dtype)
        total = 0
        for a, b in spans:
            buf = aligned_empty(b - a)
            self._transfer(os.preadv, buf, a)
            self._drop_cache(a, b - a, written=False)
            total += b - a
            for i, r in enumerate(rows):
                start = base + int(r) * row_bytes
                if a <= start and start + row_bytes <= b:
                    out[i] = buf[start - a : start - a + row_bytes].view(e.dtype)
        return out, total

    def close(self) -> None:
        """Close and delete the file."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            try:
                os.remove(self.path)
            except FileNotFoundError:
                pass

    def __del__(self) -> None:  # files of a forgotten run do not pile up
        try:
            self.close()
        except Exception:
            pass
