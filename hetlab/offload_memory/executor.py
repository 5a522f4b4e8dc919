"""The layer-streaming executor: ``stream(model, budget=…, prefetch=…, bits=…)``.

The model is written once to a file on the slow tier (:class:`~.tiers.TierFile`, read with
direct I/O). A forward pass then reads each item (the embedding rows of the tokens, each
layer, the final norm) into a fresh page-aligned buffer, computes it, and frees it. With
``prefetch=p ≥ 1`` a reader thread reads up to ``p`` items ahead while the main thread computes
(both release the GIL: ``preadv`` and the numba kernels); with ``prefetch=0`` reading and
computing alternate on one thread (synchronous). Every buffer is accounted in the budget before
it is allocated: the reader waits for the budget (``budget_wait_s``) when the next layers do
not fit yet, so a tight budget lowers the effective prefetch depth, and an item that can never
fit raises :class:`~.budget.BudgetError` when the run is built.

Resident layers (``pin=True``, the default). The ``"weights"`` pool first sets aside the
pass's activations (:meth:`.Model.activation_nbytes`) and room for the streamed items in
flight (the largest item, twice when prefetching); the **first** layers that fit in the rest
(:func:`~.costmodel.resident_layers`) are read once, on the first pass, and then stay in fast
memory; every later pass streams only the others. The first layers rather than the largest:
in the decoder and MiniLM every layer has the same size, so no choice of layers saves more
bytes, but the choice of *where* matters — with the first ``k`` resident, the reader starts on
layer ``k`` at the start of the pass and reads behind ``k`` layers of compute, which is the
``max(L·c, (L−k)·r)`` of :mod:`.costmodel`; with the last ``k`` resident the first streamed
read would stall every pass and the resident compute at the end would hide nothing. The plan
is made again each pass (a longer input needs more activation room and may unpin layers).

Activations are counted in the ``"weights"`` pool for the whole pass (their bound from the
shapes; see :meth:`.Model.activation_nbytes`); the KV cache in the ``"kv"`` pool. With
``prefetch ≥ 1`` the same reader thread reads layer l + 1's spilled KV blocks back while layer
l computes, as soon as layer l has released its own read-back (:mod:`.kvcache`). The reader
thread, its job queue and the pipelined pass are in :mod:`.reader`.
"""

from __future__ import annotations

import numbers
import os
import shutil
import tempfile
import time
from typing import Any

import numpy as np

from ..errors import InvalidInputError
from ..kernels.quant.formats import check_group_size
from .budget import Budget, BudgetError, format_bytes, parse_budget
from .costmodel import resident_layers
from .kvcache import SpillingKV
from .model import Model, check_bits, from_blob
from .reader import pipelined
from .report import ItemTiming, Report
from .store import write_store
from .tiers import TierFile, round_up

__all__ = ["stream", "StreamRun", "TIERS", "write_store"]

#: slow tiers: a file on disk; host memory copied to a GPU (needs cupy and a GPU)
TIERS = ("disk", "gpu")
#: how the disk tier reads (see :class:`~.tiers.TierFile`)
IO_CHOICES = ("auto", "direct", "buffered")


def _check_int(name: str, value: Any, low: int, high: int = 2**31 - 1) -> int:
    if (isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low
            or value > high):
        raise InvalidInputError(
            f"stream: {name} must be an int in [{low}, {high}]; got {value!r}.")
    return int(value)


def check_disk_args(where: str, group_size: Any, io: Any, path: Any) -> int:
    """The disk tier's own arguments checked; returns ``group_size`` as an int."""
    gs = check_group_size(where, group_size)
    if not isinstance(io, str) or io not in IO_CHOICES:
        raise InvalidInputError(f"{where}: io must be one of {IO_CHOICES}; got {io!r}.")
    if path is not None and (not isinstance(path, (str, os.PathLike))
                             or not os.path.isdir(os.fspath(path))):
        raise InvalidInputError(
            f"{where}: path must be None or an existing directory for the tier files; got "
            f"{path!r}.")
    return gs


def _checked(model: Any, budget: Any, tier: Any, prefetch: Any, bits: Any, kv_budget: Any
             ) -> tuple[int, int, int, int]:
    """The arguments every tier shares, checked: (budget bytes, prefetch, bits, kv bytes)."""
    if not isinstance(model, Model):
        raise InvalidInputError(
            f"stream: model must be a hetlab.offload_memory.Model (Model.decoder(...) or "
            f"Model.from_minilm()); got {type(model).__name__}."
        )
    total = parse_budget(budget)
    if not isinstance(tier, str) or tier not in TIERS:
        raise InvalidInputError(f"stream: tier must be one of {TIERS}; got {tier!r}.")
    prefetch = _check_int("prefetch", prefetch, 0)
    bits = check_bits(bits)
    kv = (total // 4 if model.kind == "decoder" else 0) if kv_budget is None else (
        parse_budget(kv_budget, "kv_budget"))
    if kv >= total:
        raise InvalidInputError(
            f"stream: kv_budget ({format_bytes(kv)}) must be smaller than budget "
            f"({format_bytes(total)}): the rest holds the layers."
        )
    return total, prefetch, bits, kv


class StreamRun:
    """A model bound to a budget and a slow tier; build it with :func:`stream`.

    Attributes
    ----------
    report : Report
        The last forward pass.
    reports : list of Report
        Every forward pass of this run.
    io_mode : str
        ``"direct"``, ``"buffered+dontneed"`` or ``"buffered"``.
    budget : Budget
        The accountant (``budget.peak`` ≤ ``budget.total``, always).
    """

    def __init__(self, model: Model, budget: Any, tier: str, prefetch: int, bits: int, *,
                 kv_budget: Any = None, group_size: int = 128, io: str = "auto",
                 path: str | None = None, kv_block: int = 16,
                 store: TierFile | None = None, pin: bool = True) -> None:
        total, self.prefetch, self.bits, kv = _checked(model, budget, tier, prefetch, bits,
                                                       kv_budget)
        if tier == "gpu":
            raise InvalidInputError("StreamRun is the disk tier's run; build a GPU run with "
                                    "stream(model, tier='gpu', ...).")
        group_size = check_disk_args("stream", group_size, io, path)
        if not isinstance(pin, (bool, np.bool_)):
            raise InvalidInputError(f"stream: pin must be True or False; got {pin!r}.")
        self.model, self.tier, self.group_size = model, tier, group_size
        self.budget = Budget(total, {"weights": total - kv, "kv": kv})
        self._weights = self.budget.pool("weights")
        self._own_dir = None
        if store is None:
            directory = path
            if directory is None:
                directory = self._own_dir = tempfile.mkdtemp(prefix="hetlab-offload-")
            store = write_store(model, self.bits, self.group_size, directory, io,
                                limit=self._weights.limit)
            self._own_store = True
        else:
            self._own_store = False
            if (getattr(store, "bits", None), getattr(store, "group_size", None)) != (
                    self.bits, self.group_size):
                raise InvalidInputError(
                    f"stream: store holds bits={getattr(store, 'bits', None)}, group_size="
                    f"{getattr(store, 'group_size', None)}; this run asks for bits={self.bits}, "
                    f"group_size={self.group_size}. Pass a store written at these."
                )
            too_big = [n for n in store.names() if not n.startswith(("embed.tok", "kv."))
                       and store.nbytes(n) > self._weights.limit]
            if too_big:
                raise BudgetError(
                    f"budget: item {too_big[0]!r} needs {format_bytes(store.nbytes(too_big[0]))} "
                    f"but the weights share is {format_bytes(self._weights.limit)}; raise the "
                    "budget or use fewer bits."
                )
        self.store = store
        self.kv: SpillingKV | None = None
        if model.kind == "decoder":
            kv_dir = path or self._own_dir or os.path.dirname(store.path)
            fd, kv_path = tempfile.mkstemp(prefix="hetlab-offload-kv-", dir=kv_dir)
            os.close(fd)
            self.kv = SpillingKV(TierFile(kv_path, io=io), self.budget.pool("kv"),
                                 model.n_layers, _check_int("kv_block", kv_block, 1))
        self.reports: list[Report] = []
        self.pin = bool(pin)
        #: layers kept in fast memory between passes: item → (payload, bytes accounted)
        self._resident: dict[str, tuple[Any, int]] = {}

    @property
    def resident(self) -> list[str]:
        """The layers held in fast memory between passes (the first ones; see the module)."""
        return list(self._resident)

    def _plan(self, flat: np.ndarray, act: int) -> set[str]:
        """Layers to keep resident this pass; releases those no longer kept."""
        layers = [it for it in self.model.items if it.startswith("L")]
        biggest = max(self._need(it, flat) for it in self.model.items)
        if act + biggest > self._weights.limit:
            raise BudgetError(
                f"budget: this input's activations ({format_bytes(act)}, for tokens of shape "
                f"{tuple(flat.shape)}) and the largest item ({format_bytes(biggest)}) need "
                f"{format_bytes(act + biggest)} but the weights share is "
                f"{format_bytes(self._weights.limit)}; raise the budget, pass fewer tokens "
                "or use fewer bits.")
        k = 0
        if self.pin:
            reserve = act + biggest * (2 if self.prefetch else 1)
            k = resident_layers([self._need(it, flat) for it in layers], self._weights.limit,
                                reserve)
        keep = set(layers[:k])
        for item in [it for it in self._resident if it not in keep]:
            _, need = self._resident.pop(item)
            self._weights.release(need)
        return keep

    @property
    def io_mode(self) -> str:
        return self.store.io_mode

    @property
    def report(self) -> Report:
        if not self.reports:
            raise InvalidInputError("run.report: no forward pass yet; call run.forward(tokens).")
        return self.reports[-1]

    # --- reading one item ------------------------------------------------------------------

    def _need(self, item: str, ids: np.ndarray) -> int:
        """Bytes a read of ``item`` holds (accounted before it is read)."""
        if item != "embed":
            return self.store.nbytes(item)
        d = int(self.model.config["d_model"])
        misc = self.store.nbytes("embed.misc") if "embed.misc" in self.store.names() else 0
        rows = self.store.rows_nbytes("embed.tok", "tok", ids)
        return rows + round_up(ids.size * d * 4) + misc

    def _load(self, item: str, ids: np.ndarray) -> tuple[Any, int]:
        if item != "embed":
            arrays, nbytes = self.store.read(item)
            return from_blob(arrays), nbytes
        rows, nbytes = self.store.read_rows("embed.tok", "tok", ids)
        misc: dict[str, Any] = {}
        if "embed.misc" in self.store.names():
            misc, more = self.store.read("embed.misc")
            nbytes += more
        return (rows, misc), nbytes

    # --- the forward pass ------------------------------------------------------------------

    def forward(self, tokens: Any, mask: Any = None) -> np.ndarray:
        """Stream the model over ``tokens``; same output as ``model.forward`` (in memory).

        Decoder: a 1-D array of token ids, appended to the run's KV cache (call again to
        decode further; :meth:`reset` starts a new sequence); returns (n, d_model) float32.
        Encoder: (batch, length) ids (with ``mask``) or a list of sentences; returns
        (batch, length, d_model) float32.
        """
        ids, m = self.model.prepare(tokens, mask)
        flat = ids.reshape(-1)
        timing = {item: ItemTiming(item) for item in self.model.items}
        kv_len = self.kv.length(0) if self.kv is not None else 0
        act = self.model.activation_nbytes(ids.shape, kv_len)
        keep = self._plan(flat, act)
        self._weights.acquire(act, what="activations of this pass")
        t0 = time.perf_counter()
        peak0 = self.budget.peak
        x: Any = None
        try:
            if self.prefetch == 0:
                for item in self.model.items:
                    tm = timing[item]
                    if item in self._resident:
                        tm.resident = True
                        x = self._compute(item, self._resident[item][0], x, ids, m, tm, t0)
                        continue
                    need = self._need(item, flat)
                    self._weights.acquire(need, what=f"item {item!r}")
                    kept = False
                    try:
                        tm.read_start = time.perf_counter() - t0
                        payload, tm.bytes_read = self._load(item, flat)
                        tm.read_end = time.perf_counter() - t0
                        x = self._compute(item, payload, x, ids, m, tm, t0)
                        if item in keep:
                            self._resident[item], kept = (payload, need), True
                        del payload
                    finally:
                        if not kept:
                            self._weights.release(need)
            else:
                x = self._pipelined(ids, m, flat, timing, t0, keep)
        finally:
            self._weights.release(act)
        wall = time.perf_counter() - t0
        self.reports.append(Report(self.io_mode, self.tier, self.prefetch, self.bits,
                                   self.budget.total, max(self.budget.peak, peak0), wall,
                                   self.model.name, list(timing.values())))
        return x

    def _compute(self, item: str, payload: Any, x: Any, ids: np.ndarray, m: Any,
                 tm: ItemTiming, t0: float) -> Any:
        tm.compute_start = time.perf_counter() - t0
        if item == "embed":
            rows, misc = payload
            x = self.model.embed(rows, misc, ids.shape)
        elif item == "final":
            x = self.model.finish(x, payload)
        else:
            x = self.model.block(x, int(item[1:]), payload, self.kv, m)
            if self.kv is not None:
                st = self.kv.take_stats(int(item[1:])).get(int(item[1:]), {})
                tm.kv_bytes_read = int(st.get("bytes_read", 0))
                tm.kv_wait_s = float(st.get("prefetch_wait_s", 0.0))
                tm.kv_read_s = float(st.get("read_s", 0.0))
                tm.kv_bytes_written = int(st.get("bytes_written", 0))
                tm.kv_write_s = float(st.get("write_s", 0.0))
                tm.kv_spans = [(a - t0, b - t0) for a, b in st.get("spans", [])]
        tm.compute_end = time.perf_counter() - t0
        return x

    def _pipelined(self, ids: np.ndarray, m: Any, flat: np.ndarray,
                   timing: dict[str, ItemTiming], t0: float, keep: set[str]) -> Any:
        """Compute on this thread while one reader thread reads ahead (:mod:`.reader`)."""
        return pipelined(self, ids, m, flat, timing, t0, keep)

    def reset(self) -> None:
        """Start a new sequence (the decoder's KV cache is emptied)."""
        if self.kv is not None:
            self.kv.reset()

    def close(self) -> None:
        """Delete the run's files."""
        for _, need in self._resident.values():
            self._weights.release(need)
        self._resident.clear()
        if self.kv is not None:
            self.kv.tier.close()
        if self._own_store:
            self.store.close()
        if self._own_dir:
            shutil.rmtree(self._own_dir, ignore_errors=True)

    def __enter__(self) -> StreamRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stream(model: Model, budget: Any = "256MB", tier: str = "disk", prefetch: int = 2,
           bits: int = 32, *, kv_budget: Any = None, group_size: int = 128, io: str = "auto",
           path: str | None = None, kv_block: int = 16, store: TierFile | None = None,
           pin: bool = True, gpu_device: Any = None) -> Any:
    """Run ``model`` within a fast-memory ``budget``, streaming it from a slower ``tier``.

    Parameters
    ----------
    model : Model
        :meth:`Model.decoder` (seeded weights) or :meth:`Model.from_minilm`.
    budget : int or str
        Bytes of weights and KV cache the run may hold at once: ``"256MB"``, ``"1.5GiB"``,
        ``4096``. One item (a layer, at ``bits``) must fit in ``budget − kv_budget``.
    tier : {"disk", "gpu"}
        ``"disk"``: a file read with direct I/O (see :mod:`.tiers`). ``"gpu"``: device memory
        is the budget, the model sits in pinned host memory and is copied on a CUDA stream
        (:mod:`.gpu_exec`; CuPy). Without CuPy or a GPU it raises
        :class:`~hetlab.BackendUnavailable` saying why; ``io``, ``path``, ``store`` and ``pin``
        are the disk tier's and are ignored there.
    prefetch : int
        Items read ahead of the one computed (0: synchronous).
    bits : {32, 16, 8, 4}
        Format of the linear weights on the tier: float32, float16, W8, W4 (group-wise).
    kv_budget : int or str, optional
        The KV cache's share of ``budget`` (decoder; default a quarter). Half of it holds
        recent tokens, the rest the keys/values read back for one layer's attention.
    group_size : int
        Group size of the W8/W4 formats.
    io : {"auto", "direct", "buffered"}
        ``"buffered"`` forces the fallback (buffered reads + POSIX_FADV_DONTNEED).
    path : str, optional
        Directory of the tier files (default: a new temporary directory).
    kv_block : int
        Tokens per spilled KV block.
    store : TierFile, optional
        A model file written by an earlier run (``run.store``) at the same ``bits``.
    pin : bool
        Keep the first layers that fit resident between passes (read on the first pass
        only); False streams every layer on every pass.
    gpu_device : optional
        ``tier="gpu"`` only: the array-module interface (default: CuPy's,
        :class:`~.gpu_exec.CupyDevice`); the tests pass a NumPy stand-in.

    Returns
    -------
    StreamRun or GpuStreamRun
        ``run.forward(tokens)``, ``run.report``, ``run.io_mode``; ``run.close()`` deletes its files.

    Examples
    --------
    >>> import numpy as np
    >>> m = Model.decoder(d_model=64, n_heads=4, d_ff=128, n_layers=3, vocab=50)
    >>> with stream(m, budget="1MB", prefetch=1) as run:
    ...     y = run.forward(np.array([1, 2, 3]))
    ...     bool(np.array_equal(y, m.forward(np.array([1, 2, 3])))), run.budget.peak <= 10**6
    (True, True)
    """
    if tier == "gpu":
        from .gpu_exec import GpuStreamRun

        total, prefetch, bits, kv = _checked(model, budget, tier, prefetch, bits, kv_budget)
        return GpuStreamRun(model, total, prefetch, bits, kv=kv, group_size=group_size,
                            kv_block=_check_int("kv_block", kv_block, 1), dev=gpu_device)
    return StreamRun(model, budget, tier, prefetch, bits, kv_budget=kv_budget,
                     group_size=group_size, io=io, path=path, kv_block=kv_block, store=store,
                     pin=pin)
