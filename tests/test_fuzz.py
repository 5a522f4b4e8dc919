"""The fuzzing suite: every registered kernel × every backend that runs here × every input class.

Each device's corpus runs in its own interpreter (``python -m tests.fuzz.engine``), so a
segfault in a compiled kernel fails this test, naming the case, instead of killing pytest.
What the classes are and what counts as a pass: tests/fuzz/engine.py.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hetlab.core.registry import get_backend

from .fuzz.engine import BAD

ROOT = Path(__file__).resolve().parents[1]
#: seconds one device's corpus may take (numba compiles every kernel the first time)
BUDGET = {"numpy": 300, "numba": 900, "fpga": 600}
#: the FPGA emulator runs a handful of kernels slowly: fewer hypothesis draws
EXAMPLES = {"numpy": 5, "numba": 5, "fpga": 2}


def run_corpus(device: str, tmp_path: Path) -> list[dict]:
    out = tmp_path / f"fuzz-{device}.jsonl"
    cmd = [sys.executable, "-m", "tests.fuzz.engine", "--device", device, "--out", str(out),
           "--examples", str(EXAMPLES[device]), "--budget", str(BUDGET[device])]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                          timeout=BUDGET[device] + 120, env={**os.environ, "PYTHONHASHSEED": "0"})
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    if proc.returncode != 0:
        started = [r["start"] for r in rows if "start" in r]
        pytest.fail(f"{device}: the fuzzing process died (exit {proc.returncode}) during case "
                    f"{started[-1] if started else '(none)'}:\n{proc.stderr[-3000:]}")
    assert rows and "done" in rows[-1], f"{device}: corpus unfinished within its budget"
    return [r for r in rows if "outcome" in r]


def summary(device: str, results: list[dict]) -> str:
    by_kernel: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for r in results:
        by_kernel[r["kernel"]][r["outcome"]] += 1
    classes = {(r["kernel"], r["class"]) for r in results}
    lines = [f"fuzz on {device}: {len(results)} calls, {len(by_kernel)} kernels, "
             f"{len(classes)} kernel × input-class pairs"]
    for k, c in by_kernel.items():
        lines.append(f"  {k:18s} " + " ".join(f"{o}={c[o]}" for o in ("clear", "equal", *BAD)))
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.parametrize("device", ["numpy", "numba", "fpga"])
def test_fuzz_every_kernel(device, tmp_path):
    reason = get_backend(device).why_not()
    if reason is not None:
        pytest.skip(f"{device}: {reason}")
    results = run_corpus(device, tmp_path)
    print(summary(device, results))
    bad = [f"{r['id']}: {r['outcome']} ({r['detail']})" for r in results if r["outcome"] in BAD]
    assert not bad, f"{len(bad)} unsound outcome(s) on {device}:\n" + "\n".join(bad[:40])
    outcomes = collections.Counter(r["outcome"] for r in results)
    assert outcomes["clear"] > 0 and outcomes["equal"] > 0  # both sides of the corpus ran
