"""offload.search's option objects, the deprecated keywords, and the target registry."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hetlab as hl
from hetlab import offload
from hetlab.offload import FpgaOptions, GAOptions, MeasureOptions
from hetlab.offload.examples import EXAMPLES
from hetlab.offload.targets import Target, get_target, target_names

pytest.importorskip("numba")


@pytest.mark.parametrize(("make", "field"), [
    (lambda: GAOptions(population=1), "GAOptions.population"),
    (lambda: GAOptions(elite=8), "GAOptions.elite"),
    (lambda: GAOptions(selection="rank"), "GAOptions.selection"),
    (lambda: GAOptions(crossover_rate=1.5), "GAOptions.crossover_rate"),
    (lambda: GAOptions(mutation_rate=-0.1), "GAOptions.mutation_rate"),
    (lambda: GAOptions(generations=2.5), "GAOptions.generations"),
    (lambda: GAOptions(exhaustive="yes"), "GAOptions.exhaustive"),
    (lambda: MeasureOptions(repeats=0), "MeasureOptions.repeats"),
    (lambda: MeasureOptions(warmup=-1), "MeasureOptions.warmup"),
    (lambda: MeasureOptions(timeout_factor=0), "MeasureOptions.timeout_factor"),
    (lambda: MeasureOptions(confirm=True), "MeasureOptions.confirm"),
    (lambda: MeasureOptions(thread_tolerance=float("nan")), "MeasureOptions.thread_tolerance"),
    (lambda: FpgaOptions(threshold=-1.0), "FpgaOptions.threshold"),
    (lambda: FpgaOptions(board=""), "FpgaOptions.board"),
])
def test_options_validate_and_name_the_field(make, field):
    with pytest.raises(hl.InvalidInputError, match=field.replace(".", r"\.")):
        make()


def test_options_are_frozen():
    opts = GAOptions(population=4)
    with pytest.raises(AttributeError):
        opts.population = 5  # type: ignore[misc]
    assert GAOptions().ga_kwargs()["selection"] == "tournament"


def _tiny():
    ex = EXAMPLES["axpy"]
    return ex, ex.make_args(64)


def test_old_keywords_still_work_with_a_deprecation_warning():
    ex, args = _tiny()
    with pytest.warns(DeprecationWarning, match=r"repeats= → measure=MeasureOptions\(repeats="
                      r".*population= → ga=GAOptions\(population="):
        old = offload.search(ex.fn, args, budget=2, repeats=1, population=4, confirm=0,
                             exhaustive=False, progress=False, function_blocks=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = offload.search(ex.fn, args, budget=2, progress=False, function_blocks=False,
                             ga=GAOptions(population=4, exhaustive=False),
                             measure=MeasureOptions(repeats=1, confirm=0))
    assert old.genes == new.genes and old.verified and new.verified
    assert old.exhaustive is None and old.ga.evaluations <= 2
    with pytest.warns(DeprecationWarning, match=r"fpga_threshold= → fpga=FpgaOptions"):
        with pytest.raises(hl.InvalidInputError, match=r"FpgaOptions\.threshold"):
            offload.search(ex.fn, args, fpga_threshold=-1.0, progress=False)


def test_bad_option_objects_and_unknown_keywords():
    ex, args = _tiny()
    with pytest.raises(hl.InvalidInputError, match="ga must be a GAOptions"):
        offload.search(ex.fn, args, ga={"population": 4}, progress=False)
    with pytest.raises(TypeError, match="unexpected keyword argument 'populaton'"):
        offload.search(ex.fn, args, populaton=4, progress=False)


def test_registry_resolves_gpu_names_in_one_place():
    assert target_names() == ("numba", "cupy", "fpga")
    gpu = get_target("gpu")
    assert gpu is get_target("cuda") is get_target("cupy") and gpu.name == "cuda"
    assert all(isinstance(get_target(n), Target) for n in target_names())
    with pytest.raises(hl.InvalidInputError, match=r"numba, cupy, fpga \(aliases: cuda → cupy, "
                                                   r"gpu → cupy\); got 'tpu'"):
        get_target("tpu")
    v = offload.transform(EXAMPLES["axpy"].fn, [], target="gpu", array_module=np)
    assert v.target == "cuda"


# --- objective= (issue 20, part 5): the thread rule generalized to a price per resource ---

def _fake_plans():
    from types import SimpleNamespace

    numba_plan = SimpleNamespace(threads={1: 1.00, 2: 0.55, 4: 0.50}, best=(1,), time_s=0.50)
    cuda_plan = SimpleNamespace(threads={}, best=(1,), time_s=0.40)
    return {"numba": numba_plan, "cuda": cuda_plan}


def test_objective_time_takes_fewest_resources_within_tolerance():
    from hetlab.auto import Objective
    from hetlab.offload.searching.options import choose_plan

    plans = _fake_plans()
    # tolerance 0: the fastest (the GPU); 0.5: numba with 2 threads (0.55 <= 0.40 * 1.5,
    # no GPU held, fewer threads than 4); 2.0: one thread is within the band
    assert choose_plan(plans, Objective.of("time", 0.0), 4)[:2] == ("cuda", None)
    assert choose_plan(plans, Objective.of("time", 0.5), 4)[:2] == ("numba", 2)
    assert choose_plan(plans, Objective.of("time", 2.0), 4)[:2] == ("numba", 1)


def test_objective_prices_and_energy_rank_the_plans():
    from hetlab.auto import Objective
    from hetlab.offload.searching.options import choose_plan

    plans = _fake_plans()
    # a GPU at 100/s (+ its host thread) costs 40.4 per call; 1 thread × 1.0 s costs 1.0,
    # 2 × 0.55 s 1.1, 4 × 0.5 s 2.0: one CPU thread wins
    name, threads, note = choose_plan(plans, Objective.of({"thread": 1.0, "gpu": 100.0}, 0.0), 4)
    assert (name, threads) == ("numba", 1) and "price" in note
    # a GPU priced like a thread: 0.4 × 2 = 0.8 beats every CPU candidate
    assert choose_plan(plans, Objective.of({"thread": 1.0, "gpu": 1.0}, 0.0), 4)[:2] \
        == ("cuda", None)
    # energy: GPU plans have no figure (NaN); CPU energy is modeled ∝ threads × time
    assert choose_plan(plans, Objective.of("energy", 0.0), 4)[:2] == ("numba", 1)
    with pytest.raises(hl.InvalidInputError, match="no finite value"):
        choose_plan({"cuda": plans["cuda"]}, Objective.of("energy"), 4)


def test_search_ranks_by_a_fake_objective():
    from dataclasses import dataclass

    from hetlab.auto import Objective

    @dataclass(frozen=True)
    class FewestThreads(Objective):
        """A fake objective: the value is the thread count, whatever the time."""

        def value(self, time_s, energy_j, resources):
            return float(resources.get("thread", 0))

    ex = EXAMPLES["axpy"]
    args = ex.make_args(4096)
    plan = offload.search(ex.fn, args, budget=2, progress=False, function_blocks=False,
                          ga=GAOptions(population=4, exhaustive=True),
                          measure=MeasureOptions(repeats=1, confirm=0),
                          objective=FewestThreads(tolerance=0.0))
    assert any(n.startswith("objective: time") for n in plan.notes)
    if plan.threads:  # a parallel plan was found: its thread sweep is ranked
        assert plan.thread_choice == 1
    with pytest.raises(hl.InvalidInputError, match="objective"):
        offload.search(ex.fn, args, budget=2, progress=False, objective="speed")
