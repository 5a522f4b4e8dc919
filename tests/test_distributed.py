"""Scaling out on a real cluster: a scheduler and two workers on loopback, one killed mid-run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hetlab as hl
from hetlab.distributed import unit_resources

distributed = pytest.importorskip("distributed")
ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawn(args: list[str], log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    return subprocess.Popen([sys.executable, "-m", *args], env=env, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, start_new_session=True)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(10)


@pytest.fixture
def cluster(tmp_path):
    """``dask scheduler`` + two ``dask worker`` processes (cpu-bench=1 each) on 127.0.0.1."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [_spawn(["distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port",
                     str(port), "--dashboard-address", ":0"], tmp_path / "scheduler.log")]
    workers = []
    try:
        for i in range(2):
            w = _spawn(["distributed.cli.dask_worker", address, "--nthreads", "1", "--nworkers",
                        "1", "--resources", "cpu-bench=1", "--name", f"w{i}",
                        "--dashboard-address", ":0", "--no-nanny"], tmp_path / f"w{i}.log")
            workers.append(w)
            procs.append(w)
        client = distributed.Client(address, timeout=60)
        client.wait_for_workers(2, timeout=90)
        yield client, workers
        client.close()
    finally:
        for p in procs:
            _kill(p)


def _same_results(a, b):
    for var in ("status", "verified", "error", "source"):
        np.testing.assert_array_equal(a[var].values, b[var].values, err_msg=var)


@pytest.mark.slow
def test_sweep_on_cluster_equals_in_process_and_survives_a_killed_worker(cluster, tmp_path):
    client, workers = cluster
    kw = {"sizes": [300, 600, 1200, 2400], "devices": ["numpy", "numba", "cupy"], "repeats": 2,
          "progress": False}
    local = hl.compare("fps", **kw)

    killed = []

    def kill_first_worker(unit, done, total):
        if not killed:
            _kill(workers[0])
            killed.append(done)

    ckpt = tmp_path / "sweep.jsonl"
    remote = hl.compare("fps", client=client, checkpoint=ckpt, callback=kill_first_worker, **kw)
    assert killed  # a worker really died during the sweep
    _same_results(local, remote)
    measured = remote["worker"].where(remote["source"] != "skipped", drop=True)
    assert all(str(w).startswith("tcp://127.0.0.1:") for w in measured.values.ravel())
    assert set(remote["host"].values.ravel()) == {socket.gethostname()}
    # everything finished is on disk: a rerun from the checkpoint measures nothing again
    calls = []
    again = hl.compare("fps", checkpoint=ckpt, callback=lambda *a: calls.append(a), **kw)
    assert calls == []
    _same_results(remote, again)


def test_units_ask_for_one_timing_slot_per_machine():
    assert unit_resources("numba", {"cpu-bench"}) == {"cpu-bench": 1}
    assert unit_resources("fpga", {"cpu-bench", "gpu"}) == {"cpu-bench": 1}
    assert unit_resources("cupy", {"cpu-bench", "gpu"}) == {"gpu": 1}
    assert unit_resources("numpy", set()) is None


def test_checkpoint_resumes_an_interrupted_sweep(tmp_path):
    ckpt = tmp_path / "sweep.jsonl"
    kw = {"sizes": [100, 200], "devices": ["numpy"], "repeats": 1, "progress": False}

    class Interrupt(Exception):
        pass

    def stop_after_first(unit, done, total):
        raise Interrupt

    with pytest.raises(Interrupt):
        hl.compare("fps", checkpoint=ckpt, callback=stop_after_first, **kw)
    assert len(ckpt.read_text().splitlines()) == 1
    with ckpt.open("a") as f:
        f.write('{"cut short by a cra')  # a torn last line is ignored
    seen = []
    ds = hl.compare("fps", checkpoint=ckpt, callback=lambda u, d, t: seen.append((u.size, d)),
                    **kw)
    assert seen == [(200, 2)]  # only the unit that had not finished ran
    assert bool(ds["verified"].all())
    # another sweep (other seed) in the same file does not reuse these units
    seen.clear()
    hl.compare("fps", checkpoint=ckpt, seed=1, callback=lambda u, d, t: seen.append(u.size),
               **kw)
    assert seen == [100, 200]


@pytest.mark.slow
def test_offload_search_on_cluster_survives_a_killed_worker(cluster, monkeypatch):
    """GA candidates measured as tasks; a worker dies during the search; nothing is lost."""
    import threading

    from hetlab import offload
    from hetlab.offload import MeasureOptions
    from hetlab.offload.examples import EXAMPLES
    from hetlab.offload.searching import remote

    client, workers = cluster
    ex = EXAMPLES["matmul"]
    args = ex.make_args(24)
    before = [a.copy() for a in args]
    batches = []
    real = remote.measure_variants

    def kill_during_first_batch(client_, variants, *a, **kw):
        if not batches:  # the worker dies while the first generation is being measured
            threading.Timer(0.3, _kill, args=(workers[0],)).start()
        batches.append(len(variants))
        return real(client_, variants, *a, **kw)

    monkeypatch.setattr(remote, "measure_variants", kill_during_first_batch)
    # no time-outs: what is tested is a lost worker, not speed (on a busy machine a slow
    # candidate would otherwise be stopped and recorded as "timeout")
    plan = offload.search(ex.fn, args, budget=8, progress=False, client=client,
                          function_blocks=False,  # the loop GA, not the matmul block
                          measure=MeasureOptions(repeats=2, timeout_factor=1e6))
    assert batches and sum(batches) == len(plan.measurements) - 1  # serial measured locally
    assert workers[0].poll() is not None  # it really died
    for a, b in zip(args, before, strict=True):
        np.testing.assert_array_equal(a, b)
    # every candidate was measured and verified despite the lost worker
    bad = {g: (m.status, m.verified) for g, m in plan.measurements.items()
           if not (m.status == "ok" and m.verified)}
    assert not bad, bad
    assert plan.exhaustive is not None and len(plan.measurements) == 2 ** len(plan.genes)
    out = np.zeros_like(args[2])
    plan.compile()(args[0], args[1], out)
    np.testing.assert_allclose(out, args[0] @ args[1], rtol=1e-12)
