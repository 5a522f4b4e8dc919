"""Conformance: every registered kernel × every backend that runs here, from its declaration.

A kernel joins this suite by being registered. For each one:
- its public function ``hetlab.<name>`` has exactly the declared parameters (names, order,
  defaults), then ``device`` and ``keep_on_device``; so does its spec's validator;
- its docstring's ``device`` line names exactly the backends registered for it;
- every backend's implementation equals the numpy reference on generated cases, edge sizes
  included, and leaves its inputs unchanged;
- every declared parameter gets each bad-input class of its kind (``core.params.bad_values``)
  and the call answers with an ``InvalidInputError`` whose message names the parameter.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import hetlab as hl
from hetlab.core.docs import devices_of
from hetlab.core.params import REQUIRED, bad_values, device_line
from hetlab.core.registry import get_backend, get_kernel, kernel_names

from .fuzz.engine import same, snapshot

KERNELS = kernel_names()
#: sizes of the generated cases: edge sizes first (one point, two), then a small case
SIZES = (1, 2, 33)


def _pairs() -> list:
    """(kernel, backend) params; backends that cannot run here are skipped with their reason."""
    params = []
    for k in KERNELS:
        for b in devices_of(k):
            reason = get_backend(b).why_not()
            marks = [pytest.mark.skip(reason=f"{b}: {reason}")] if reason else []
            params.append(pytest.param(k, b, marks=marks, id=f"{k}-{b}"))
    return params


@pytest.mark.parametrize("kernel", KERNELS)
def test_public_signature_matches_the_declaration(kernel):
    spec = get_kernel(kernel)
    assert spec.params, f"{kernel}: no parameters declared"
    sig = inspect.signature(getattr(hl, kernel)).parameters
    names = list(sig)
    assert names[-2:] == ["device", "keep_on_device"], names
    assert names[:-2] == [p.name for p in spec.params]
    for p in spec.params:
        default = sig[p.name].default
        assert (default is inspect.Parameter.empty) == (p.default is REQUIRED), p.name
        if not p.required:
            assert default == p.default, p.name
    validator = list(inspect.signature(spec.validate).parameters)
    assert validator == [p.name for p in spec.params], validator


@pytest.mark.parametrize("kernel", KERNELS)
def test_docstring_device_line_comes_from_the_registry(kernel):
    doc = getattr(hl, kernel).__doc__
    line = next(ln.strip() for ln in doc.splitlines() if ln.strip().startswith("device :"))
    assert line == "device : " + device_line(devices_of(kernel))
    assert "numpy" in devices_of(kernel)


CASES = _pairs()


@pytest.mark.parametrize("kernel,backend", CASES)
def test_backend_equals_reference_and_keeps_inputs(kernel, backend):
    spec = get_kernel(kernel)
    fn = getattr(hl, kernel)
    ran = 0
    for size in SIZES:
        try:
            kw = spec.make_case(size, np.random.default_rng(size))
        except hl.InvalidInputError:
            continue
        before = {k: snapshot(v) for k, v in kw.items()}
        result = fn(**kw, device=backend)
        for k, v in kw.items():
            assert same(before[k], v), f"{kernel} on {backend} changed its input {k}"
        expected = fn(**before, device="numpy")
        err, ok = spec.verified(result, expected)
        assert ok, f"{kernel} on {backend}, size {size}: error {err} > {spec.tolerance}"
        ran += 1
    assert ran, f"{kernel}: no generated case at sizes {SIZES}"


BAD = [(k, p.name, label) for k in KERNELS for p in get_kernel(k).params
       for label, _ in bad_values(p, get_kernel(k).make_case(33, np.random.default_rng(0))
                                  .get(p.name, p.default))]


@pytest.mark.parametrize("kernel,param,label", BAD, ids=[f"{k}-{p}-{c}" for k, p, c in BAD])
def test_every_declared_parameter_refuses_bad_input(kernel, param, label):
    spec = get_kernel(kernel)
    kw = spec.make_case(33, np.random.default_rng(0))
    p = next(q for q in spec.params if q.name == param)
    value = dict(bad_values(p, kw.get(param, p.default)))[label]
    with pytest.raises(hl.InvalidInputError) as info:
        getattr(hl, kernel)(**{**kw, param: value})
    assert param in str(info.value), f"the message does not name {param!r}: {info.value}"


def test_the_suite_covers_every_registered_kernel():
    covered = {c.values[0] for c in CASES}
    assert covered == set(KERNELS)
    assert {k for k, _, _ in BAD} == set(KERNELS)
