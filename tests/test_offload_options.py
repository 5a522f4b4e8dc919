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
