"""C-simulation of an overlay: its HLS C++ built by g++ into a shared library, cached.

The library is named by a hash of the sources, headers, flags and compiler, and kept in
``$HETLAB_CACHE/csim`` (default ``~/.cache/hetlab/csim``), so a changed source rebuilds and
an unchanged one loads in milliseconds. Nothing is compiled at import time.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from functools import cache
from pathlib import Path

from ..errors import BackendUnavailable, HetlabError
from .manifest import Manifest

__all__ = ["compiler", "cache_dir", "library_path", "build", "load_library", "call_lock"]

_locks_guard = threading.Lock()
_call_locks: dict[str, threading.Lock] = {}


def compiler() -> str | None:
    """The C++ compiler used for C-simulation: ``$CXX`` or ``g++`` on PATH; None if absent."""
    cxx = os.environ.get("CXX", "g++")
    return shutil.which(cxx)


def cache_dir() -> Path:
    """Where compiled C-simulation libraries are kept (``$HETLAB_CACHE/csim``)."""
    base = os.environ.get("HETLAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "hetlab"
    )
    return Path(base) / "csim"


@cache
def _compiler_version(cxx: str) -> str:
    out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else cxx


def _require_compiler() -> str:
    cxx = compiler()
    if cxx is None:
        raise BackendUnavailable(
            "fpga: the emulator builds each overlay's HLS C++ with a C++ compiler and none was "
            "found (install g++, e.g. apt-get install g++, or set CXX)."
        )
    return cxx


def library_path(manifest: Manifest) -> Path:
    """The cached library path for ``manifest``'s current sources (may not exist yet)."""
    cxx = _require_compiler()
    ov = manifest.data["overlay"]
    h = hashlib.sha256()
    for rel in [*ov["hls_sources"], *ov.get("hls_headers", [])]:
        h.update(rel.encode())
        h.update(manifest.path(rel).read_bytes())
    h.update(" ".join(ov["cflags"]).encode())
    h.update(_compiler_version(cxx).encode())
    return cache_dir() / f"hetlab_{manifest.name}_{h.hexdigest()[:16]}.so"


def build(manifest: Manifest) -> Path:
    """Compile the overlay's HLS sources into its cached shared library; return its path.

    Raises
    ------
    BackendUnavailable
        No C++ compiler.
    HetlabError
        The compiler failed (its message is included).
    """
    target = library_path(manifest)
    if target.exists():
        return target
    cxx = _require_compiler()
    ov = manifest.data["overlay"]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so", dir=target.parent)
    os.close(fd)
    srcs = [str(manifest.path(s)) for s in ov["hls_sources"]]
    cmd = [cxx, *ov["cflags"], "-shared", "-o", tmp, *srcs]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        os.unlink(tmp)
        raise HetlabError(
            f"fpga: building the C-simulation of {manifest.name} failed:\n{' '.join(cmd)}\n"
            f"{proc.stderr.strip()}"
        )
    os.replace(tmp, target)  # atomic: a concurrent build never sees half a file
    return target


@cache
def _load(path: str) -> ctypes.CDLL:
    return ctypes.CDLL(path)


def load_library(manifest: Manifest) -> ctypes.CDLL:
    """Build if needed and load the overlay's C-simulation library."""
    return _load(str(build(manifest)))


def call_lock(manifest: Manifest) -> threading.Lock:
    """The lock every call into ``manifest``'s C-simulation holds.

    An HLS top keeps its on-chip buffers in ``static`` arrays, and one loaded library is shared
    by every emulator in the process, so two calls at once (ctypes releases the GIL) would
    overwrite each other's buffers. One lock per overlay serializes them, as the one IP
    instance on a board would.
    """
    with _locks_guard:
        return _call_locks.setdefault(manifest.name, threading.Lock())
