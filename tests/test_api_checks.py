"""Input checks of the public API beyond the registered kernels (the kernels: test_fuzz.py).

Every function of :data:`tests.fuzz.api_table.APIS` gets its valid base call, then each
argument replaced by each input class of its kind and left out (tests/fuzz/api.py says which
classes and what counts as a pass). A pass is a hetlab error naming the argument or a right
result; a failure is any other exception, a hetlab error that does not name the argument, a
NaN result from finite inputs, a changed input, a hang, or a result whose use breaks later.
Run by hand: ``python -m tests.fuzz.api`` prints a table per function.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import hetlab as hl
from hetlab.errors import InvalidInputError

from .fuzz.api import BAD, Api, run_api
from .fuzz.api_table import APIS


@pytest.mark.parametrize("api", APIS, ids=[a.name for a in APIS])
def test_public_function_refuses_bad_input_clearly(api: Api) -> None:
    rows = run_api(api)
    bad = [f"{r['id']}: {r['outcome']} ({r['detail']})" for r in rows if r["outcome"] in BAD]
    assert not bad, f"{len(bad)} unsound outcome(s) of {api.name}:\n" + "\n".join(bad[:40])
    counts = collections.Counter(r["outcome"] for r in rows)
    assert rows[0]["outcome"] == "ok", rows[0]  # the base call itself works
    assert counts["clear"] > 0  # and bad inputs were tried


def test_every_listed_function_is_covered() -> None:
    names = {a.name for a in APIS}
    wanted = {f"quant.{n}" for n in (
        "quantize", "allocate_bits", "BitPlan", "FusedPlan", "GemvPlan", "gptq",
        "calibrate_awq", "channel_importance", "mbq_token_weights", "output_error",
        "pack_codes", "unpack_codes", "save", "load")}
    wanted |= {"hl.make_cloud", "hl.compare", "hl.save", "hl.load", "hl.set_threads",
               "hl.explain", "bench.measure_unit", "energy.energy_of",
               "offload_memory.stream", "offload_memory.Model.decoder"}
    assert wanted <= names, sorted(wanted - names)


# --- the harness can fail: each bad outcome is detected -------------------------------------


def _sloppy(x: np.ndarray, n: int = 2) -> np.ndarray:
    if not isinstance(n, int):
        raise InvalidInputError("sloppy: a count must be an int.")  # does not name n
    x *= 1.0  # writes into its input (a no-op on values, but an int array would change)
    return np.log(x - x.min()) + n  # -inf from finite inputs


def test_harness_reports_raw_unnamed_wrong_and_mutated() -> None:
    api = Api("sloppy", _sloppy, lambda: {"x": np.arange(4.0), "n": 2})
    outcomes = {r["outcome"] for r in run_api(api)}
    assert {"raw", "unnamed", "wrong"} <= outcomes, outcomes


def test_harness_reports_a_changed_input() -> None:
    def writes(x: np.ndarray) -> float:
        x[...] = 0
        return 0.0

    rows = run_api(Api("writes", writes, lambda: {"x": np.ones(3)}))
    assert rows[0]["outcome"] == "mutated"


# --- huge sizes are refused before anything is allocated ------------------------------------


@pytest.mark.parametrize("call", [
    lambda: hl.make_cloud(2**40, np.random.default_rng(0)),
    lambda: hl.bench.case_args("fps", 2**40, 0),
    lambda: hl.offload_memory.Model.decoder(d_model=2**20, n_heads=1, d_ff=2**20, n_layers=1,
                                            vocab=10),
])
def test_huge_sizes_are_refused_not_memoryerror(call) -> None:
    with pytest.raises(InvalidInputError, match="memory"):
        call()
