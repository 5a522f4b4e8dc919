"""A KV cache that spills to the slow tier once it outgrows its share of the budget.

Simple and correct rather than clever: per layer, new keys and values are appended to a
resident tail; when a layer's tail holds more than its share (half of ``kv_budget`` split
evenly over the layers), its oldest tokens are written to the slow-tier file in blocks of
``block`` tokens and dropped from memory. Attention of layer ``i`` reads that layer's spilled
blocks back (direct I/O, like the weights), concatenates them with the tail, and releases the
copy when the layer is done (:meth:`SpillingKV.done`). Every byte held — tails, the blocks read
back and the concatenated keys/values — is accounted in the budget's ``"kv"`` pool; a sequence
whose read-back cannot fit raises :class:`~.budget.BudgetError` naming ``kv_budget``.

The read-back is synchronous (inside the layer's compute, reported as ``kv_read_s``), not
prefetched with the layer's weights: a layer's blocks change while it runs (its new tokens can
spill older ones just before attention reads them, so a prefetch would have to be merged with
blocks spilled after it), and the ``"kv"`` pool is sized for one layer's read-back at a time, so
reading the next layer's blocks ahead would need a second read-back's room in the budget.
"""

from __future__ import annotations

import time

import numpy as np

from .budget import Pool
from .tiers import TierFile

__all__ = ["SpillingKV"]


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
        Per layer: ``bytes_read``, ``read_s``, ``bytes_written``, ``write_s`` since the last
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
        self.stats: dict[int, dict[str, float]] = {}

    def _stat(self, layer: int) -> dict[str, float]:
        return self.stats.setdefault(layer, {"bytes_read": 0, "read_s": 0.0,
                                             "bytes_written": 0, "write_s": 0.0})

    def take_stats(self) -> dict[int, dict[str, float]]:
        out, self.stats = self.stats, {}
        return out

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
        st = self._stat(layer)
        st["write_s"] += time.perf_counter() - t0
        st["bytes_written"] += self.tier.nbytes(name)
        self._spilled.setdefault(layer, []).append((name, n))
        freed = tk[:n].nbytes * 2
        self._tail_k[layer], self._tail_v[layer] = tk[n:].copy(), tv[n:].copy()
        self.pool.release(freed)

    def get(self, layer: int) -> tuple[np.ndarray, np.ndarray]:
        """All keys and values of a layer (T, H, d): spilled blocks read back + the tail.

        Holds the concatenated copy (accounted) until :meth:`done`.
        """
        spilled = self._spilled.get(layer, [])
        tk, tv = self._tail_k[layer], self._tail_v[layer]
        if not spilled:
            self._open[layer] = 0
            return tk, tv
        read_bytes = sum(self.tier.nbytes(name) for name, _ in spilled)
        full = self.length(layer) * 2 * int(np.prod(tk.shape[1:])) * tk.itemsize
        self.pool.acquire(read_bytes + full, what=f"KV read-back of layer {layer} "
                          f"({self.length(layer)} tokens; raise kv_budget)")
        st = self._stat(layer)
        ks, vs = [], []
        t0 = time.perf_counter()
        for name, _ in spilled:
            arrays, nbytes = self.tier.read(name)
            ks.append(arrays["k"])
            vs.append(arrays["v"])
            st["bytes_read"] += nbytes
        st["read_s"] += time.perf_counter() - t0
        keys, values = np.concatenate([*ks, tk]), np.concatenate([*vs, tv])
        del ks, vs
        self.pool.release(read_bytes)
        self._open[layer] = full
        return keys, values

    def done(self, layer: int) -> None:
        """The layer's attention is over: release the concatenated keys/values."""
        self.pool.release(self._open.pop(layer, 0))

    def reset(self) -> None:
        """Forget the sequence (resident bytes released; spilled blocks are abandoned)."""
        held = sum(a.nbytes for a in self._tail_k.values()) * 2
        self._tail_k.clear()
        self._tail_v.clear()
        self._spilled.clear()
        self.pool.release(held)
