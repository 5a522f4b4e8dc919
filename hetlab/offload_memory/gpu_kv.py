"""The GPU tier's KV cache: device tails in the ``"kv"`` pool, spilled to pinned host memory.

As :mod:`.kvcache`, on a device: per layer the recent keys/values are device arrays; past the
layer's share (half of ``kv_budget`` over the layers) the oldest ``block`` tokens are copied
to page-locked host buffers (device → host on the compute stream, an event marks the copy
done) and dropped. :meth:`GpuKV.prefetch` issues layer ``l``'s read-back on the copy stream
(it waits for the spills it reads and for the compute issued so far, whose freed memory the
new buffer may reuse) before layer ``l − 1``'s compute is issued, so the copy runs while that
layer computes; :meth:`GpuKV.get` makes the compute stream wait for it and copies any block
spilled since. Every device byte is accounted in the pool when it is issued; a prefetch that
does not fit is skipped (the layer copies its blocks itself).
"""

from __future__ import annotations

from typing import Any

from .budget import BudgetError, Pool

__all__ = ["GpuKV"]


class GpuKV:
    """The GPU run's KV cache (see the module docstring); ``dev`` as in :mod:`.gpu_exec`."""

    def __init__(self, dev: Any, pool: Pool, n_layers: int, block: int, copy_stream: Any,
                 compute_stream: Any) -> None:
        self.dev, self.pool, self.block = dev, pool, int(block)
        self.copy, self.compute = copy_stream, compute_stream
        self.per_layer = max(pool.limit // 2 // max(n_layers, 1), 0)
        self._tail: dict[int, tuple[Any, Any]] = {}
        self._spilled: dict[int, list[tuple[Any, Any, Any, int]]] = {}  # host k, v, event, n
        self._pre: dict[int, tuple[int, Any, Any, Any, int]] = {}  # count, k, v, event, bytes
        self._open: dict[int, int] = {}
        self.stats: dict[int, dict[str, Any]] = {}

    def _stat(self, layer: int) -> dict[str, Any]:
        return self.stats.setdefault(layer, {"spilled_bytes": 0, "prefetch_bytes": 0,
                                             "prefetch_events": None, "sync_bytes": 0})

    def length(self, layer: int) -> int:
        tail = self._tail.get(layer)
        return (0 if tail is None else tail[0].shape[0]) + sum(
            s[3] for s in self._spilled.get(layer, []))

    def append(self, layer: int, k: Any, v: Any) -> None:
        xp = self.dev.xp
        self.pool.acquire(k.nbytes + v.nbytes, what=f"KV cache of layer {layer} (new tokens)")
        tk, tv = self._tail.get(layer, (None, None))
        tk = k.copy() if tk is None else xp.concatenate([tk, k])
        tv = v.copy() if tv is None else xp.concatenate([tv, v])
        while tk.nbytes * 2 > self.per_layer and tk.shape[0]:
            n = min(self.block, tk.shape[0])
            hk, hv = self.dev.pinned_like(tk[:n]), self.dev.pinned_like(tv[:n])
            self.dev.copy_d2h(hk, tk[:n], self.compute)
            self.dev.copy_d2h(hv, tv[:n], self.compute)
            ev = self.dev.event()
            self.dev.record(ev, self.compute)
            self._spilled.setdefault(layer, []).append((hk, hv, ev, n))
            self._stat(layer)["spilled_bytes"] += hk.nbytes + hv.nbytes
            freed = tk[:n].nbytes * 2
            tk, tv = tk[n:].copy(), tv[n:].copy()
            self.pool.release(freed)
        self._tail[layer] = (tk, tv)

    def _upload(self, blocks: list[tuple[Any, Any, Any, int]], stream: Any) -> tuple[Any, Any]:
        xp = self.dev.xp
        n = sum(b[3] for b in blocks)
        shape = (n, *blocks[0][0].shape[1:])
        with self.dev.on(self.compute):  # allocated in the compute stream's pool
            k, v = xp.empty(shape, xp.float32), xp.empty(shape, xp.float32)
        row = 0
        for hk, hv, ev, m in blocks:
            self.dev.wait(stream, ev)
            self.dev.copy_h2d(k[row : row + m], hk, stream)
            self.dev.copy_h2d(v[row : row + m], hv, stream)
            row += m
        return k, v

    def prefetch(self, layer: int) -> bool:
        """Issue layer ``layer``'s read-back on the copy stream now; False if none or no room."""
        blocks = list(self._spilled.get(layer, []))
        if not blocks or layer in self._pre:
            return False
        nbytes = sum(b[0].nbytes + b[1].nbytes for b in blocks)
        try:
            self.pool.acquire(nbytes, what=f"KV read-back prefetch of layer {layer}")
        except BudgetError:
            return False
        issued = self.dev.event()
        self.dev.record(issued, self.compute)  # memory freed by compute issued so far
        self.dev.wait(self.copy, issued)
        start, end = self.dev.event(), self.dev.event()
        self.dev.record(start, self.copy)
        k, v = self._upload(blocks, self.copy)
        self.dev.record(end, self.copy)
        self._pre[layer] = (len(blocks), k, v, end, nbytes)
        st = self._stat(layer)
        st["prefetch_bytes"] += nbytes
        st["prefetch_events"] = (start, end)
        return True

    def get(self, layer: int) -> tuple[Any, Any]:
        xp = self.dev.xp
        tk, tv = self._tail[layer]
        blocks = self._spilled.get(layer, [])
        if not blocks:
            self._open[layer] = 0
            return tk, tv
        count, pk, pv, ev, held = self._pre.pop(layer, (0, None, None, None, 0))
        rest = blocks[count:]
        rest_bytes = sum(b[0].nbytes + b[1].nbytes for b in rest)
        full = (self.length(layer) * tk[0].nbytes) * 2
        self.pool.acquire(rest_bytes + full, what=f"KV read-back of layer {layer} "
                          f"({self.length(layer)} tokens; raise kv_budget)")
        ks, vs = [], []
        if count:
            self.dev.wait(self.compute, ev)
            ks.append(pk)
            vs.append(pv)
        if rest:
            k, v = self._upload(rest, self.compute)
            ks.append(k)
            vs.append(v)
            self._stat(layer)["sync_bytes"] += rest_bytes
        keys, values = xp.concatenate([*ks, tk]), xp.concatenate([*vs, tv])
        del ks, vs, pk, pv
        self.pool.release(rest_bytes + held)
        self._open[layer] = full
        return keys, values

    def done(self, layer: int) -> None:
        self.pool.release(self._open.pop(layer, 0))

    def take_stats(self, layer: int) -> dict[str, Any]:
        return self.stats.pop(layer, {})

    def drop_prefetched(self) -> None:
        for _, _, _, _, held in self._pre.values():
            self.pool.release(held)
        self._pre.clear()

    def reset(self) -> None:
        self.drop_prefetched()
        held = sum(k.nbytes + v.nbytes for k, v in self._tail.values())
        self._tail.clear()
        self._spilled.clear()
        self.pool.release(held)
