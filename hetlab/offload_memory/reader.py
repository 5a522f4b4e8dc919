"""The executor's reader thread: weights read ahead, and the KV read-back, on one queue.

With ``prefetch=p ≥ 1`` a :class:`~.executor.StreamRun` computes on the calling thread while
:func:`read_ahead` runs on a second one (both release the GIL: ``preadv`` and the numba
kernels). The reader takes *jobs* in this order:

- ``"kv"``: layer ``l + 1``'s spilled KV blocks, queued as soon as layer ``l`` has released
  its own read-back (:mod:`.kvcache`; layer 0's while the embedding computes) — first, because
  the compute thread will need it sooner than the next weights;
- ``"resident"``: a layer held in fast memory from an earlier pass, handed over unread;
- ``"weights"``: the next item, when one of the ``p + 1`` slots is free *and* its bytes fit
  the budget now (checked under the budget's lock; the time it waited is ``budget_wait_s``).

Nothing here blocks inside the budget: the reader reads an item only when its bytes fit now,
so a KV job is never stuck behind a weight read that waits for the compute thread (which may
itself be waiting for that job). Items reach the compute thread through a queue in order; an
exception on the reader is put on the queue and raised on the compute thread.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from .report import ItemTiming

if TYPE_CHECKING:  # pragma: no cover
    from .executor import StreamRun

__all__ = ["pipelined", "read_ahead"]


def pipelined(run: StreamRun, ids: np.ndarray, m: Any, flat: np.ndarray,
              timing: dict[str, ItemTiming], t0: float, keep: set[str]) -> Any:
    """One forward pass of ``run`` with the reader thread (:func:`read_ahead`) reading ahead.

    Parameters
    ----------
    run : StreamRun
        The run (its ``prefetch`` ≥ 1 sets the slots: items read but not yet computed).
    ids, m : numpy.ndarray, optional
        Token ids (as prepared by the model) and the encoder's mask.
    flat : numpy.ndarray
        ``ids`` flattened (the embedding rows to read).
    timing : dict of str to ItemTiming
        Filled in place: read, compute and KV-prefetch intervals (seconds from ``t0``).
    t0 : float
        ``time.perf_counter()`` at the start of the pass.
    keep : set of str
        Layers to keep resident after this pass.

    Returns
    -------
    numpy.ndarray
        The pass's output, float32.
    """
    items = run.model.items
    resident = dict(run._resident)
    ready: queue.Queue[Any] = queue.Queue()
    cond = run.budget.cond  # one lock and condition: slots, budget and KV jobs
    state = {"slots": run.prefetch + 1, "stop": False, "kv": deque()}  # type: dict[str, Any]
    planned = set(run.kv.plan(range(run.model.n_layers))) if run.kv is not None else set()

    def kv_go(layer: int) -> None:  # layer l's read-back is released: read l + 1's now
        if layer + 1 in planned:
            with cond:
                state["kv"].append(layer + 1)
                cond.notify_all()

    if run.kv is not None:
        run.kv.on_done = kv_go
        kv_go(-1)  # layer 0's blocks: read while the embedding computes
    thread = threading.Thread(target=read_ahead, name="hetlab-offload-reader", daemon=True,
                              args=(run, items, resident, flat, timing, t0, ready, state,
                                    planned))
    thread.start()
    x: Any = None
    try:
        for item in items:
            s0 = time.perf_counter()
            _got, payload, need = ready.get()
            timing[item].stall_s = time.perf_counter() - s0
            if isinstance(payload, BaseException):
                raise payload
            if item in resident:
                timing[item].resident = True
                x = run._compute(item, payload, x, ids, m, timing[item], t0)
                continue
            kept = False
            try:
                x = run._compute(item, payload, x, ids, m, timing[item], t0)
                if item in keep:
                    run._resident[item], kept = (payload, need), True
            finally:
                del payload
                with cond:
                    if not kept:
                        run._weights.release(need)
                    state["slots"] += 1
                    cond.notify_all()
    finally:
        with cond:
            state["stop"] = True
            cond.notify_all()
        thread.join()
        if run.kv is not None:
            run.kv.on_done = None
            run.kv.drop_prefetched()
        while not ready.empty():  # items read ahead of an error
            _, payload, need = ready.get()
            del payload
            run._weights.release(need)
    return x


def _next_job(run: StreamRun, items: list[str], i: int, resident: dict[str, Any],
              flat: np.ndarray, timing: dict[str, ItemTiming], state: dict[str, Any],
              kv_left: int) -> tuple[tuple[str, Any] | None, int]:
    """Wait (under the budget's lock) for the next job; ``(None, i)`` means stop."""
    cond, weights = run.budget.cond, run._weights
    with cond:
        waited = None
        while True:
            if state["stop"]:
                return None, i
            if state["kv"]:
                return ("kv", state["kv"].popleft()), i
            if i < len(items) and items[i] in resident:
                return ("resident", items[i]), i + 1
            if i < len(items) and state["slots"] > 0:
                need = run._need(items[i], flat)
                if weights.held + need <= weights.limit:
                    weights.acquire(need, what=f"item {items[i]!r}")
                    state["slots"] -= 1
                    if waited is not None:
                        timing[items[i]].budget_wait_s = time.perf_counter() - waited
                    return ("weights", (items[i], need)), i + 1
                waited = waited if waited is not None else time.perf_counter()
                if need > weights.limit:  # never fits: say so
                    weights.acquire(need, what=f"item {items[i]!r}")
            elif i >= len(items) and kv_left == 0:
                return None, i
            cond.wait()


def read_ahead(run: StreamRun, items: list[str], resident: dict[str, Any], flat: np.ndarray,
               timing: dict[str, ItemTiming], t0: float, ready: queue.Queue[Any],
               state: dict[str, Any], planned: set[int]) -> None:
    """The reader thread's loop (see the module): run jobs until the pass ends or stops.

    Puts ``(item, payload, bytes accounted)`` on ``ready`` in item order, or
    ``(None, exception, 0)`` if a read failed.
    """
    kv_left = len(planned)
    i = 0
    try:
        while True:
            job, i = _next_job(run, items, i, resident, flat, timing, state, kv_left)
            if job is None:
                return
            kind, what = job
            if kind == "resident":
                ready.put((what, resident[what][0], 0))
            elif kind == "kv":
                kv_left -= 1
                pre = run.kv.prefetch(what) if run.kv is not None else None
                tm = timing[f"L{what}"]
                if pre is not None and pre.names:
                    tm.kv_prefetch_bytes = pre.nbytes
                    tm.kv_prefetch_start, tm.kv_prefetch_end = pre.start - t0, pre.end - t0
                tm.kv_prefetch_skipped = pre.skipped if pre is not None else ""
            else:
                item, need = what
                tm = timing[item]
                try:
                    tm.read_start = time.perf_counter() - t0
                    payload, tm.bytes_read = run._load(item, flat)
                    tm.read_end = time.perf_counter() - t0
                except BaseException:
                    run._weights.release(need)
                    raise
                ready.put((item, payload, need))
    except BaseException as exc:  # handed to the main thread, raised there
        ready.put((None, exc, 0))
    finally:
        if run.kv is not None:
            run.kv.cancel()  # a layer waiting for a prefetch reads it itself
