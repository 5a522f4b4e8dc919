"""A KV cache that spills to the slow tier once it outgrows its share of the budget.

Simple and correct rather than clever: per layer, new keys and values are appended to a
resident tail; when a layer's tail holds more than its share (half of ``kv_budget`` split
evenly over the layers), its oldest tokens are written to the slow-tier file in blocks of
``block`` tokens and dropped from memory. Attention of layer ``i`` reads that layer's spilled
blocks back (direct I/O, like the weights), concatenates them with the tail, and releases the
copy when the layer is done (:meth:`SpillingKV.done`). Every byte held — tails, the blocks read
back and the concatenated keys/values — is accounted in the budget's ``"kv"`` pool; a sequence
whose read-back cannot fit raises :class:`~.budget.BudgetError` naming ``kv_budget``.

Read-back prefetch (the executor, ``prefetch ≥ 1``). Layer ``l + 1``'s spilled blocks are read
back on the executor's reader thread while layer ``l`` computes: :meth:`SpillingKV.plan` marks,
at the start of a pass, the layers that have spilled blocks; the reader calls
:meth:`SpillingKV.prefetch` for layer ``l + 1`` once layer ``l`` has released its own read-back
(:meth:`done` calls ``on_done``), so the ``"kv"`` pool holds at most one layer's read-back and
one layer's prefetched blocks, the footprint of one synchronous read-back. The prefetch reads
the blocks spilled *when it starts* (a snapshot); blocks the layer's own new tokens spill
afterwards are read in :meth:`get`, synchronously, and reported apart (``kv_bytes_read``). A
prefetch that does not fit the pool when it starts is skipped (``prefetch_skipped``) and the
layer reads everything in :meth:`get`, as with ``prefetch=0``; :meth:`get` waits for a planned
prefetch that has not finished (``prefetch_wait_s``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .budget import BudgetError, Pool
from .tiers import TierFile

__all__ = ["SpillingKV", "Prefetched"]


@dataclass
class Prefetched:
    """One layer's read-back prefetch: the blocks read, the bytes held, when (perf_counter)."""

    done: threading.Event = field(default_factory=threading.Event)
    names: list[str] = field(default_factory=list)
    keys: list[np.ndarray] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)
    nbytes: int = 0
    start: float = float("nan")
    end: float = float("nan")
    skipped: str = ""


class SpillingKV:
    """The executor's KV cache (see the module docstring).

    Parameters
    ----------
    tier : TierFile
        Where spilled blocks go (its own file).
    pool : Pool
        The budget's ``"kv"`` pool.
    n_layers : int
    block : int
        Tokens per spilled block.

    Attributes
    ----------
    stats : dict of int → dict
        Per layer: ``bytes_read``, ``read_s``, ``bytes_written``, ``write_s``,
        ``prefetch_wait_s`` and ``spans`` (the ``(start, end)`` ``perf_counter`` seconds of each
        of those writes, reads and waits, on the calling thread) since the last
        :meth:`take_stats`.
    """

    def __init__(self, tier: TierFile, pool: Pool, n_layers: int, block: int = 16) -> None:
        self.tier, self.pool, self.block = tier, pool, int(block)
        self.per_layer = max(pool.limit // 2 // max(n_layers, 1), 0)
        self._tail_k: dict[int, np.ndarray] = {}
        self._tail_v: dict[int, np.ndarray] = {}
        self._spilled: dict[int, list[tuple[str, int]]] = {}
        self._open: dict[int, int] = {}
        self._n = 0
        self.stats: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()  # _spilled and stats, between main and reader threads
        self._pre: dict[int, Prefetched] = {}
        #: called with the layer by :meth:`done` (the executor schedules the next prefetch)
        self.on_done: Callable[[int], None] | None = None

    def _stat(self, layer: int) -> dict[str, Any]:
        # "spans": (start, end) perf_counter of each write, read and wait on the caller's thread
        return self.stats.setdefault(layer, {"bytes_read": 0, "read_s": 0.0,
                                             "bytes_written": 0, "write_s": 0.0,
                                             "prefetch_wait_s": 0.0, "spans": []})

    def take_stats(self, layer: int | None = None) -> dict[int, dict[str, Any]]:
        """Stats since the last call (all layers, or only ``layer``'s), then forgotten."""
        with self._lock:
            if layer is None:
                out, self.stats = self.stats, {}
                return out
            return {layer: self.stats.pop(layer)} if layer in self.stats else {}

    # --- read-back prefetch (see the module docstring) -----------------------------------

    def plan(self, layers: range | list[int]) -> list[int]:
        """Mark for prefetch those of ``layers`` that have spilled blocks; returns them."""
        with self._lock:
            planned = [i for i in layers if self._spilled.get(i)]
            for i in planned:
                self._pre[i] = Prefetched()
        return planned

    def prefetch(self, layer: int) -> Prefetched | None:
        """Read layer ``layer``'s spilled blocks back now (the reader thread); None if unplanned.

        Holds their bytes in the ``"kv"`` pool until :meth:`get` uses them; skipped (nothing
        held, ``skipped`` says why) when they do not fit the pool now.
        """
        pre = self._pre.get(layer)
        if pre is None:
            return None
        try:
            with self._lock:
                names = [name for name, _ in self._spilled.get(layer, [])]
            nbytes = sum(self.tier.nbytes(name) for name in names)
            try:  # never waits: a full pool means this layer reads in get(), as without prefetch
                self.pool.acquire(nbytes, what=f"KV read-back prefetch of layer {layer}")
            except BudgetError:
                pre.skipped = "kv pool full"
                return pre
            pre.nbytes, pre.start = nbytes, time.perf_counter()
            for name in names:
                arrays, _ = self.tier.read(name)
                pre.keys.append(arrays["k"])
                pre.values.append(arrays["v"])
                pre.names.append(name)
            pre.end = time.perf_counter()
        except Exception as exc:  # the layer reads synchronously instead, and says why
            pre.skipped = f"{type(exc).__name__}: {exc}"
        finally:
            pre.done.set()
        return pre

    def cancel(self) -> None:
        """Unblock every pending prefetch (the reader stopped); :meth:`get` then reads itself."""
        for pre in list(self._pre.values()):
            pre.done.set()

    def drop_prefetched(self) -> None:
        """Release prefetched blocks no :meth:`get` used (end of a pass, or an error)."""
        for pre in self._pre.values():
            pre.done.set()
            if pre.nbytes:
                self.pool.release(pre.nbytes)
                pre.nbytes = 0
        self._pre.clear()

    def length(self, layer: int) -> int:
        tail = self._tail_k.get(layer)
        return (0 if tail is None else len(tail)) + sum(n for _, n in self._spilled.get(layer, []))

    def append(self, layer: int, k: np.ndarray, v: np.ndarray) -> None:
        """Add n tokens' keys and values (n, H, d) float32; spill the oldest past the share."""
        self.pool.acquire(k.nbytes + v.nbytes, what=f"KV cache of layer {layer} (new tokens)")
        tk, tv = self._tail_k.get(layer), self._tail_v.get(layer)
        self._tail_k[layer] = k.copy() if tk is None else np.concatenate([tk, k])
        self._tail_v[layer] = v.copy() if tv is None else np.concatenate([tv, v])
        while self._tail_k[layer].nbytes * 2 > self.per_layer and len(self._tail_k[layer]):
            self._spill(layer, min(self.block, len(self._tail_k[layer])))

    def _spill(self, layer: int, n: int) -> None:
        tk, tv = self._tail_k[layer], self._tail_v[layer]
        name = f"kv.L{layer}.{self._n}"
        self._n += 1
        t0 = time.perf_counter()
        self.tier.write(name, {"k": tk[:n], "v": tv[:n]})
        with self._lock:
            st = self._stat(layer)
            t1 = time.perf_counter()
            st["write_s"] += t1 - t0
            st["spans"].append((t0, t1))
            st["bytes_written"] += self.tier.nbytes(name)
            self._spilled.setdefault(layer, []).append((name, n))
        freed = tk[:n].nbytes * 2
        self._tail_k[layer], self._tail_v[layer] = tk[n:].copy(), tv[n:].copy()
        self.pool.release(freed)

    def get(self, layer: int) -> tuple[np.ndarray, np.ndarray]:
        """All keys and values of a layer (T, H, d): spilled blocks read back + the tail.

        Uses the blocks a prefetch read (waiting for it if it is still running) and reads the
        others here. Holds the concatenated copy (accounted) until :meth:`done`.
        """
        pre = self._pre.get(layer)  # popped only once done: the reader looks it up
        wait = 0.0
        if pre is not None and not pre.done.is_set():
            w0 = time.perf_counter()
            pre.done.wait()
            wait = time.perf_counter() - w0
        self._pre.pop(layer, None)
        with self._lock:
            spilled = list(self._spilled.get(layer, []))
            if wait:
                self._stat(layer)["prefetch_wait_s"] += wait
                self._stat(layer)["spans"].append((w0, w0 + wait))
        tk, tv = self._tail_k[layer], self._tail_v[layer]
        got = dict(zip(pre.names, zip(pre.keys, pre.values, strict=True), strict=True)
                   ) if pre is not None else {}
        held = pre.nbytes if pre is not None else 0
        if not spilled:
            if held:
                self.pool.release(held)
            self._open[layer] = 0
            return tk, tv
        missing = [name for name, _ in spilled if name not in got]
        read_bytes = sum(self.tier.nbytes(name) for name in missing)
        full = self.length(layer) * 2 * int(np.prod(tk.shape[1:])) * tk.itemsize
        try:
            self.pool.acquire(read_bytes + full, what=f"KV read-back of layer {layer} "
                              f"({self.length(layer)} tokens; raise kv_budget)")
        except BaseException:
            if held:
                self.pool.release(held)
            raise
        ks, vs = [], []
        t0 = time.perf_counter()
        n_read = 0
        for name, _ in spilled:
            if name in got:
                k, v = got[name]
            else:
                arrays, nbytes = self.tier.read(name)
                k, v = arrays["k"], arrays["v"]
                n_read += nbytes
            ks.append(k)
            vs.append(v)
        with self._lock:
            st = self._stat(layer)
            st["bytes_read"] += n_read
            if missing:
                t1 = time.perf_counter()
                st["read_s"] += t1 - t0
                st["spans"].append((t0, t1))
        keys, values = np.concatenate([*ks, tk]), np.concatenate([*vs, tv])
        del ks, vs, got
        self.pool.release(read_bytes + held)
        self._open[layer] = full
        return keys, values

    def done(self, layer: int) -> None:
        """The layer's attention is over: release the concatenated keys/values."""
        self.pool.release(self._open.pop(layer, 0))
        if self.on_done is not None:
            self.on_done(layer)

    def reset(self) -> None:
        """Forget the sequence (resident bytes released; spilled blocks are abandoned)."""
        self.drop_prefetched()
        held = sum(a.nbytes for a in self._tail_k.values()) * 2
        self._tail_k.clear()
        self._tail_v.clear()
        self._spilled.clear()
        self.pool.release(held)
