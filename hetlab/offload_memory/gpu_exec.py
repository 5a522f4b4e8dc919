"""``stream(model, tier="gpu")``: layers in pinned host memory, copied to device slots on a
copy stream while the compute stream runs the layer before (CuPy; cuBLAS matmuls).

Buffers. Device memory is the budget: ``prefetch + 1`` *slots*, each as large as the largest
item, are allocated once and accounted in the ``"weights"`` pool, beside each pass's
activations (a bound read off :mod:`.gpu_ops`' code), the float32 scratch a W8/W4/fp16 weight is
dequantized into, and the embedding rows; the KV cache lives in the ``"kv"`` pool
(:mod:`.gpu_kv`). Item ``j`` (after the embedding) goes to slot ``(j − 1) mod (prefetch + 1)``.

Ordering, with CUDA events (all issued from one host thread, which runs ahead of the GPU):
the copy of item ``j`` waits on the copy stream for the event recorded when the compute stream
finished the slot's previous item, copies, and records ``copied[j]``; the compute of item ``j``
waits for ``copied[j]`` on the compute stream and records ``computed[j]``. Copies are issued
``prefetch`` items ahead of compute, so with ``prefetch ≥ 1`` layer ``l + 1``'s copy runs on
the copy engine while layer ``l`` computes; with ``prefetch = 0`` (one slot) they alternate.
The report's read (copy) and compute intervals are the elapsed times between these events
and one recorded at the pass's start.

``dev`` is the array-module interface (:class:`CupyDevice` here); the tests pass a NumPy
stand-in to check rotation, accounting and event order on the CPU — never for a figure.
Without CuPy or a GPU, :class:`CupyDevice` raises :class:`~hetlab.BackendUnavailable`.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .budget import Budget, BudgetError, format_bytes, parse_budget
from .gpu import require_gpu
from .gpu_kv import GpuKV
from .gpu_ops import (
    decoder_block,
    device_weights,
    encoder_block,
    layer_norm,
    rms_norm,
    scratch_nbytes,
)
from .model import Model, to_blob
from .report import ItemTiming, Report
from .tiers import _pack_layout, round_up

__all__ = ["CupyDevice", "GpuStreamRun", "IO_MODE"]

#: the report's io_mode on the GPU tier
IO_MODE = "pinned-host-to-device"


class CupyDevice:
    """The array-module interface on an NVIDIA GPU (CuPy): streams, events, pinned buffers."""

    def __init__(self) -> None:
        cp = require_gpu()
        import cupyx.scipy.special

        self.cp = self.xp = cp
        self.erf = cupyx.scipy.special.erf
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        name = props.get("name", b"GPU")
        self.name = name.decode() if isinstance(name, bytes) else str(name)

    def stream(self) -> Any:
        return self.cp.cuda.Stream(non_blocking=True)

    def event(self) -> Any:
        return self.cp.cuda.Event()

    def record(self, ev: Any, stream: Any) -> None:
        ev.record(stream)

    def wait(self, stream: Any, ev: Any) -> None:
        stream.wait_event(ev)

    def on(self, stream: Any) -> Any:
        return stream  # ``with stream:`` makes it current (cuBLAS included)

    def pinned(self, nbytes: int) -> np.ndarray:
        mem = self.cp.cuda.alloc_pinned_memory(max(int(nbytes), 1))
        return np.frombuffer(mem, np.uint8, int(nbytes))

    def pinned_like(self, a: Any) -> np.ndarray:
        return self.pinned(a.nbytes).view(np.dtype(a.dtype.str)).reshape(a.shape)

    def empty(self, nbytes: int) -> Any:
        return self.cp.empty(int(nbytes), self.cp.uint8)

    def copy_h2d(self, dst: Any, src: np.ndarray, stream: Any) -> None:
        dst.set(src, stream=stream)

    def copy_d2h(self, dst: np.ndarray, src: Any, stream: Any) -> None:
        try:
            src.get(stream=stream, out=dst, blocking=False)
        except TypeError:  # CuPy before `blocking`: a synchronous copy, still correct
            src.get(stream=stream, out=dst)

    def elapsed_s(self, a: Any, b: Any) -> float:
        return self.cp.cuda.get_elapsed_time(a, b) / 1e3

    def synchronize(self) -> None:
        self.cp.cuda.Device().synchronize()

    def to_host(self, x: Any) -> np.ndarray:
        return self.cp.asnumpy(x)

    def pool_used_bytes(self) -> int:
        return int(self.cp.get_default_memory_pool().used_bytes())


class GpuStreamRun:
    """A model streamed through device memory; built by ``stream(model, tier="gpu", ...)``.

    Attributes are those of :class:`~.executor.StreamRun` (``report``, ``reports``, ``budget``,
    ``io_mode``), plus ``slots`` (the device buffers), ``slot_bytes`` and ``device_name``.
    """

    def __init__(self, model: Model, budget: Any, prefetch: int, bits: int, *, kv: int,
                 group_size: int = 128, kv_block: int = 16, dev: Any = None) -> None:
        self.dev = CupyDevice() if dev is None else dev
        self.device_name = str(getattr(self.dev, "name", "GPU"))
        self.model, self.prefetch, self.bits, self.group_size = model, prefetch, bits, group_size
        self.tier, self.io_mode, self.pin = "gpu", IO_MODE, False
        total = parse_budget(budget)
        self.budget = Budget(total, {"weights": total - kv, "kv": kv})
        self._weights = self.budget.pool("weights")
        self.copy_stream, self.compute_stream = self.dev.stream(), self.dev.stream()
        self._host: dict[str, tuple[np.ndarray, list[Any], dict[str, np.ndarray]]] = {}
        self._scratch = 0
        for item in model.items[1:]:  # the slow tier: each item packed in one pinned buffer
            arrays = to_blob(model.tensors(item, bits, group_size))
            entries, size = _pack_layout(arrays)
            host = self.dev.pinned(round_up(size))
            for e, a in zip(entries, arrays.values(), strict=True):
                host[e.offset : e.offset + e.nbytes] = np.ascontiguousarray(a).reshape(-1).view(
                    np.uint8)
            meta = {k: np.asarray(v) for k, v in arrays.items() if k.endswith("#meta")}
            self._host[item] = (host, entries, meta)
            self._scratch = max(self._scratch, scratch_nbytes(device_weights(arrays, meta)))
        self._table = to_blob(model.tensors("embed"))
        self.slot_bytes = max(len(h[0]) for h in self._host.values())
        n = prefetch + 1
        self._weights.acquire(n * self.slot_bytes, what=f"{n} device slots of "
                              f"{format_bytes(self.slot_bytes)} (prefetch {prefetch} + 1)")
        self.slots = [self.dev.empty(self.slot_bytes) for _ in range(n)]
        self.kv = (GpuKV(self.dev, self.budget.pool("kv"), model.n_layers, kv_block,
                         self.copy_stream, self.compute_stream)
                   if model.kind == "decoder" else None)
        self.reports: list[Report] = []
        self.pool_used_bytes: list[int] = []

    @property
    def report(self) -> Report:
        return self.reports[-1]

    def activation_nbytes(self, shape: tuple[int, ...], kv_len: int) -> int:
        """Bound of a pass's activations on the device: the numba path's bound twice (array
        code keeps more temporaries) plus the scores, mask and probabilities of every head
        over every key (three float32 (H, n, T) arrays) — read off :mod:`.gpu_ops`."""
        heads = int(self.model.config["n_heads"])
        rows, keys = (int(np.prod(shape)), kv_len + int(np.prod(shape))) if (
            self.model.kind == "decoder") else (int(np.prod(shape)), int(shape[-1]))
        return 2 * self.model.activation_nbytes(shape, kv_len) + 12 * heads * rows * keys

    def _views(self, buf: Any, entries: list[Any], meta: dict[str, np.ndarray]) -> dict[str, Any]:
        arrays = {e.name: buf[e.offset : e.offset + e.nbytes].view(np.dtype(e.dtype)).reshape(
            e.shape) for e in entries}
        return device_weights(arrays, meta)

    def forward(self, tokens: Any, mask: Any = None) -> np.ndarray:
        """As :meth:`.executor.StreamRun.forward`, on the device (float32, cuBLAS order)."""
        dev, model, items = self.dev, self.model, self.model.items
        ids, m = model.prepare(tokens, mask)
        flat = ids.reshape(-1)
        kv_len = self.kv.length(0) if self.kv is not None else 0
        emb = {"rows": self._table["tok"][flat]} | {k: v for k, v in self._table.items()
                                                    if k != "tok"}
        e_entries, e_size = _pack_layout(emb)
        act = self.activation_nbytes(ids.shape, kv_len)
        extra = act + self._scratch + round_up(e_size)
        self._weights.acquire(extra, what="activations, dequantization scratch and embedding "
                              "rows of this pass (raise the budget or pass fewer tokens)")
        timing = {item: ItemTiming(item) for item in items}
        ev: dict[str, dict[str, Any]] = {k: {} for k in ("c0", "c1", "r0", "r1")}
        free: dict[int, Any] = {}
        w0 = time.perf_counter()
        try:
            e_host = dev.pinned(round_up(e_size))
            for e, a in zip(e_entries, emb.values(), strict=True):
                e_host[e.offset : e.offset + e.nbytes] = np.ascontiguousarray(a).reshape(
                    -1).view(np.uint8)
            with dev.on(self.compute_stream):
                e_dev = dev.empty(len(e_host))
                start = dev.event()
                dev.record(start, self.compute_stream)
            dev.wait(self.copy_stream, start)
            payload: dict[str, Any] = {}

            def issue(j: int) -> None:
                item = items[j]
                for key in ("r0", "r1"):
                    ev[key][item] = dev.event()
                if j == 0:
                    host, entries, meta, buf = e_host, e_entries, {}, e_dev
                else:
                    host, entries, meta = self._host[item]
                    slot = (j - 1) % len(self.slots)
                    buf = self.slots[slot]
                    if slot in free:  # the slot's previous item is computed
                        dev.wait(self.copy_stream, free[slot])
                dev.record(ev["r0"][item], self.copy_stream)
                dev.copy_h2d(buf[: len(host)], host, self.copy_stream)
                dev.record(ev["r1"][item], self.copy_stream)
                timing[item].bytes_read = len(host)
                payload[item] = self._views(buf, entries, meta)

            issued = 0
            x: Any = None
            for i, item in enumerate(items):
                while issued <= min(i + self.prefetch, len(items) - 1):
                    issue(issued)
                    issued += 1
                if self.kv is not None and item != "final":  # next layer's KV read-back
                    layer = 0 if item == "embed" else int(item[1:]) + 1
                    if layer < model.n_layers:
                        self.kv.prefetch(layer)
                with dev.on(self.compute_stream):
                    dev.wait(self.compute_stream, ev["r1"][item])
                    ev["c0"][item], ev["c1"][item] = dev.event(), dev.event()
                    dev.record(ev["c0"][item], self.compute_stream)
                    x = self._compute(item, payload.pop(item), x, ids, m)
                    dev.record(ev["c1"][item], self.compute_stream)
                if i:
                    free[(i - 1) % len(self.slots)] = ev["c1"][item]
                if self.kv is not None and item.startswith("L"):
                    self._kv_stats(timing[item], self.kv.take_stats(int(item[1:])), start)
            out = dev.to_host(x)  # waits for the compute stream
            dev.synchronize()
            self._times(timing, ev, start)
            if hasattr(dev, "pool_used_bytes"):
                self.pool_used_bytes.append(dev.pool_used_bytes())
        finally:
            dev.synchronize()
            if self.kv is not None:
                self.kv.drop_prefetched()
            self._weights.release(extra)
        wall = time.perf_counter() - w0
        self.reports.append(Report(self.io_mode, "gpu", self.prefetch, self.bits,
                                   self.budget.total, self.budget.peak, wall, model.name,
                                   list(timing.values())))
        return np.asarray(out, dtype=np.float32)

    def _kv_stats(self, tm: ItemTiming, st: dict[str, Any], start: Any) -> None:
        tm.kv_bytes_written = int(st.get("spilled_bytes", 0))
        tm.kv_bytes_read = int(st.get("sync_bytes", 0))
        if st.get("prefetch_events"):
            tm.kv_prefetch_bytes = int(st["prefetch_bytes"])
            tm._kv_events = st["prefetch_events"]  # type: ignore[attr-defined]

    def _times(self, timing: dict[str, ItemTiming], ev: dict[str, dict[str, Any]],
               start: Any) -> None:
        t = self.dev.elapsed_s
        prev = 0.0
        for item, tm in timing.items():
            tm.read_start, tm.read_end = t(start, ev["r0"][item]), t(start, ev["r1"][item])
            tm.compute_start, tm.compute_end = t(start, ev["c0"][item]), t(start, ev["c1"][item])
            tm.stall_s = max(0.0, min(tm.compute_start, tm.read_end) - prev)
            prev = tm.compute_end
            kev = getattr(tm, "_kv_events", None)
            if kev is not None:
                tm.kv_prefetch_start, tm.kv_prefetch_end = t(start, kev[0]), t(start, kev[1])
                del tm._kv_events  # type: ignore[attr-defined]

    def _compute(self, item: str, w: dict[str, Any], x: Any, ids: np.ndarray, m: Any) -> Any:
        model, xp, cfg = self.model, self.dev.xp, self.model.config
        eps = float(cfg["eps"])
        if item == "embed":
            x = w["rows"]
            if model.kind == "encoder":
                bsz, length = ids.shape
                d = x.shape[1]
                x = x.reshape(bsz, length, d) + w["pos"][:length][None] + w["type"][0]
                x = layer_norm(self.dev, x, w["ln.g"], w["ln.b"], eps)
            return x + xp.float32(0)  # its own array: the slot may be refilled
        if item == "final":
            return rms_norm(self.dev, x, w["norm"], eps)
        if model.kind == "decoder":
            return decoder_block(self.dev, x, w, self.kv, int(item[1:]), int(cfg["n_heads"]), eps)
        mask = xp.asarray(m)
        return encoder_block(self.dev, x, w, mask, int(cfg["n_heads"]), eps)

    def reset(self) -> None:
        """Start a new sequence (the KV cache is emptied)."""
        if self.kv is not None:
            self.kv.reset()

    def close(self) -> None:
        """Free the device slots (the pinned host buffers go with the run)."""
        self.dev.synchronize()
        if self.slots:
            self._weights.release(len(self.slots) * self.slot_bytes)
            self.slots = []

    def __enter__(self) -> GpuStreamRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_fits(run: GpuStreamRun) -> None:  # pragma: no cover - a helper for scripts
    """Raise BudgetError if a model would fit its budget whole (a recording must stream)."""
    whole = sum(len(h[0]) for h in run._host.values())
    if whole <= run._weights.limit:
        raise BudgetError(f"the model's {format_bytes(whole)} fit the budget's weights share "
                          f"{format_bytes(run._weights.limit)}: nothing to stream")
