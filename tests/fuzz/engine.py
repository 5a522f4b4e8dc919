"""Fuzzing every registered kernel: valid and invalid inputs drawn from its declaration.

For each kernel in the registry (so a new kernel joins by being registered), a base case comes
from its spec's ``make_case``; every argument is then replaced, one at a time, by variants of
its kind (array, container, int, float) from the classes below. Each call must end in one of:

``clear``      a :class:`~hetlab.errors.HetlabError` subclass was raised;
``equal``      a result came back that equals the numpy reference within the spec's tolerance
               (numpy device: every float in it is finite, since finite inputs must not turn
               into NaN/inf);
and never in:
``raw``        any other exception (an ``IndexError`` from inside a kernel, a ``MemoryError``);
``wrong``      a result that differs from the reference, or a non-finite result;
``mutated``    an input that changed during the call.

A crash (segfault) of the process is the fourth failure: the driver (``python -m
tests.fuzz.engine``) writes each case's id *before* running it, so the parent test names the
case that killed the interpreter. Valid inputs are also drawn with hypothesis (sizes, seeds).

Run by hand: ``python -m tests.fuzz.engine --device numba`` prints a table per kernel.
"""

from __future__ import annotations

import argparse
import copy
import inspect
import json
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

import hetlab as hl
from hetlab.core.registry import get_kernel, kernel_names, supported_backends
from hetlab.errors import HetlabError

BAD = ("raw", "wrong", "mutated")

# --------------------------------------------------------------------------- input classes


@dataclass(frozen=True)
class Variant:
    """One replacement of one argument: ``make(value) -> new value`` (may raise ``Skip``)."""

    cls: str
    make: Callable[[Any], Any]


class Skip(Exception):
    """The variant does not apply to this value (e.g. ravel of a 1-D array)."""


def _strided(a: np.ndarray) -> np.ndarray:
    wide = np.repeat(a, 2, axis=-1)
    return wide[..., ::2]


def _extra_column(a: np.ndarray) -> np.ndarray:
    if a.ndim < 2:
        raise Skip
    return np.concatenate([a, a[..., :1]], axis=-1)


def _poke(value: float) -> Callable[[np.ndarray], np.ndarray]:
    def make(a: np.ndarray) -> np.ndarray:
        if a.size == 0:
            raise Skip
        out = a.astype(np.float64 if abs(value) > 1e38 else np.result_type(a, np.float32))
        out.flat[out.size // 2] = value
        return out

    return make


def _ravel(a: np.ndarray) -> np.ndarray:
    if a.ndim < 2:
        raise Skip
    return a.ravel()


ARRAY_VARIANTS = (
    # valid: must give the reference's answer (or a clear refusal)
    Variant("valid:list", lambda a: a.tolist()),
    Variant("valid:strided", _strided),
    Variant("valid:fortran", np.asfortranarray),
    Variant("valid:readonly", lambda a: _readonly(a.copy())),
    # wrong shape
    Variant("shape:extra-axis", lambda a: a[..., None]),
    Variant("shape:ravel", _ravel),
    Variant("shape:extra-column", _extra_column),
    Variant("shape:scalar", lambda a: np.asarray(a.flat[0]) if a.size else np.float64(0)),
    Variant("empty", lambda a: a[:0]),
    # wrong dtype
    Variant("dtype:complex", lambda a: a.astype(np.complex128)),
    Variant("dtype:bool", lambda a: a.astype(bool)),
    Variant("dtype:str", lambda a: a.astype(str)),
    Variant("dtype:object", lambda a: a.astype(object)),
    # bad values
    Variant("value:nan", _poke(np.nan)),
    Variant("value:inf", _poke(np.inf)),
    Variant("value:-inf", _poke(-np.inf)),
    Variant("value:1e300", _poke(1e300)),
    Variant("value:-1e300", _poke(-1e300)),
    # wrong type
    Variant("type:None", lambda a: None),
    Variant("type:str", lambda a: "abc"),
    Variant("type:dict", lambda a: {"a": 1}),
)

INT_VARIANTS = (
    Variant("valid:numpy-int", lambda v: np.int64(v)),
    Variant("range:zero", lambda v: 0),
    Variant("range:negative", lambda v: -1),
    Variant("range:huge", lambda v: 2**62),
    Variant("range:beyond-int64", lambda v: 2**70),
    Variant("type:float", lambda v: v + 0.5),
    Variant("type:float-integral", lambda v: float(v)),
    Variant("type:bool", lambda v: True),
    Variant("type:None", lambda v: None),
    Variant("type:str", lambda v: str(v)),
    Variant("value:nan", lambda v: float("nan")),
    Variant("type:array", lambda v: np.array([v, v])),
)

FLOAT_VARIANTS = (
    Variant("valid:numpy-float32", lambda v: np.float32(v)),
    Variant("range:zero", lambda v: 0.0),
    Variant("range:negative", lambda v: -abs(v) - 1.0),
    Variant("range:tiny", lambda v: 1e-300),
    Variant("range:huge", lambda v: 1e300),
    Variant("value:nan", lambda v: float("nan")),
    Variant("value:inf", lambda v: float("inf")),
    Variant("type:bool", lambda v: True),
    Variant("type:None", lambda v: None),
    Variant("type:str", lambda v: "1"),
    Variant("type:complex", lambda v: complex(v, 1)),
)


def _readonly(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _container_arrays(obj: Any) -> list[tuple[str, np.ndarray]]:
    """``(attribute, array)`` pairs of a container's NumPy arrays, as it stores them."""
    names = list(getattr(obj, "__slots__", ())) + list(getattr(obj, "__dict__", {}))
    fields = getattr(obj, "__dataclass_fields__", {})
    names += [n for n in fields if n not in names]
    found = []
    for n in names:
        v = getattr(obj, n, None)
        if isinstance(v, np.ndarray) and v.size:
            found.append((n, v))
    return found


def _tamper(name: str, bad: float) -> Callable[[Any], Any]:
    """Write a bad value into a container's stored array ``name`` after construction."""

    def make(c: Any) -> Any:
        c = copy.deepcopy(c)
        arr = dict(_container_arrays(c))[name]
        if not arr.flags.writeable:  # the container owns its data: no write gets through
            raise TamperRefused(name)
        arr.flat[arr.size // 2] = bad
        return c

    return make


class TamperRefused(Exception):
    """The container's arrays are read-only: a tamper variant counts as a clear refusal."""


def container_variants(c: Any) -> tuple[Variant, ...]:
    """Tampering with each stored array (NaN into floats; -5 and 2**31-1 into integers),
    and arguments of the wrong kind."""
    tamper = []
    for name, arr in _container_arrays(c):
        if arr.dtype.kind == "f":
            tamper.append(Variant(f"tamper:{name}:nan", _tamper(name, np.nan)))
        elif arr.dtype.kind == "i":
            tamper.append(Variant(f"tamper:{name}:negative", _tamper(name, -5)))
            tamper.append(Variant(f"tamper:{name}:huge", _tamper(name, 2**31 - 1)))
        elif arr.dtype.kind == "u":
            tamper.append(Variant(f"tamper:{name}:max", _tamper(name, np.iinfo(arr.dtype).max)))
    return (*tamper,
            Variant("type:None", lambda c: None),
            Variant("type:str", lambda c: "matrix"),
            Variant("type:dense", lambda c: np.ones(c.shape)))


def variants_for(value: Any) -> tuple[Variant, ...]:
    """The input classes that apply to an argument of this kind."""
    if isinstance(value, bool):
        return ()
    if isinstance(value, np.ndarray):
        return ARRAY_VARIANTS
    if callable(getattr(value, "map_arrays", None)):
        return container_variants(value)
    if isinstance(value, (int, np.integer)):
        return INT_VARIANTS
    if isinstance(value, (float, np.floating)):
        return FLOAT_VARIANTS
    return ()


# --------------------------------------------------------------------------- one call


def snapshot(value: Any) -> Any:
    """A deep copy of an argument, containers' arrays included."""
    if callable(getattr(value, "map_arrays", None)):
        return value.map_arrays(lambda a: np.array(a, copy=True))
    return copy.deepcopy(value)


def same(a: Any, b: Any) -> bool:
    """Whether two arguments hold the same values (NaN equal to NaN), arrays and containers."""
    if callable(getattr(a, "map_arrays", None)):
        xs, ys = [], []
        a.map_arrays(lambda v: xs.append(v) or v)
        b.map_arrays(lambda v: ys.append(v) or v)
        return len(xs) == len(ys) and all(same(x, y) for x, y in zip(xs, ys, strict=True))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (a != a and b != b)
    try:
        return bool(a == b)
    except Exception:  # values that do not compare are "not the same"
        return False


def all_finite(result: Any) -> bool:
    """Whether every float array in a result (array, container, tuple) is finite."""
    if isinstance(result, tuple):
        return all(all_finite(r) for r in result)
    if callable(getattr(result, "map_arrays", None)):
        ok = []
        result.map_arrays(lambda v: ok.append(all_finite(v)) or v)
        return all(ok)
    a = np.asarray(result)
    return a.dtype.kind not in "fc" or bool(np.isfinite(a).all())


def outcome(kernel: str, device: str, kwargs: dict[str, Any]) -> tuple[str, str]:
    """Run ``hl.<kernel>(**kwargs, device=device)``; return ``(class, detail)``."""
    fn = getattr(hl, kernel)
    spec = get_kernel(kernel)
    try:
        inspect.signature(fn).bind(**kwargs, device=device)
    except TypeError as e:  # Python's own refusal of a missing or unknown argument
        return "clear", f"TypeError: {e}"
    before = {k: snapshot(v) for k, v in kwargs.items()}
    try:
        result = fn(**kwargs, device=device)
    except HetlabError as e:
        return "clear", type(e).__name__
    except Exception as e:  # the point: anything else is a finding
        return "raw", f"{type(e).__name__}: {str(e)[:200]}"
    for k, v in kwargs.items():
        if not same(before[k], v):
            return "mutated", k
    if not all_finite(result):
        return "wrong", "non-finite result from finite-or-refused inputs"
    if device != "numpy":
        try:
            expected = fn(**before, device="numpy")
        except Exception as e:  # the reference refused what the device accepted
            return "wrong", f"reference raised {type(e).__name__} but {device} returned"
        err, ok = spec.verified(result, expected)
        if not ok:
            return "wrong", f"error {err:.3g} > tolerance {spec.tolerance:.3g}"
    return "equal", ""


# --------------------------------------------------------------------------- the corpus


@dataclass(frozen=True)
class Case:
    id: str
    kernel: str
    input_class: str
    kwargs: dict[str, Any]


FUZZ_SIZES = (1, 2, 17)


def base_cases(kernel: str, sizes: tuple[int, ...] = FUZZ_SIZES, seed: int = 0) -> Iterator[Case]:
    """Valid cases from the spec's generator at a few sizes (sizes it cannot make are skipped)."""
    spec = get_kernel(kernel)
    for size in sizes:
        try:
            kw = spec.make_case(size, np.random.default_rng(seed + size))
        except HetlabError:
            continue
        yield Case(f"{kernel}/valid/{size}", kernel, "valid:generated", kw)


def mutated_cases(kernel: str, size: int = 17) -> Iterator[Case]:
    """Each argument of a base case replaced by each variant of its kind."""
    spec = get_kernel(kernel)
    kw = spec.make_case(size, np.random.default_rng(size))
    for name, value in kw.items():
        for var in variants_for(value):
            try:
                new = var.make(value)
            except Skip:
                continue
            except TamperRefused:
                yield Case(f"{kernel}/{name}/{var.cls}", kernel, var.cls, {"__refused__": name})
                continue
            yield Case(f"{kernel}/{name}/{var.cls}", kernel, var.cls, {**kw, name: new})
    for name in kw:  # a required argument left out
        rest = {k: v for k, v in kw.items() if k != name}
        yield Case(f"{kernel}/{name}/missing", kernel, "type:missing", rest)


def corpus(kernels: list[str], device: str) -> Iterator[Case]:
    for kernel in kernels:
        if device not in supported_backends(kernel):
            continue
        yield from base_cases(kernel)
        yield from mutated_cases(kernel)


def run_case(case: Case, device: str) -> tuple[str, str]:
    if "__refused__" in case.kwargs:
        return "clear", "container arrays are read-only"
    return outcome(case.kernel, device, case.kwargs)


def hypothesis_valid(kernel: str, device: str, examples: int,
                     start: Callable[[Case], None], emit: Callable[..., None]) -> None:
    """Valid inputs over random sizes and seeds (hypothesis), each equal to the reference."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    spec = get_kernel(kernel)

    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(size=st.integers(1, 64), seed=st.integers(0, 2**31 - 1))
    def check(size: int, seed: int) -> None:
        try:
            kw = spec.make_case(size, np.random.default_rng(seed))
        except HetlabError:
            return
        case = Case(f"{kernel}/hypothesis/{size}/{seed}", kernel, "valid:hypothesis", kw)
        start(case)
        emit(case, *run_case(case, device))

    check()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="numpy")
    p.add_argument("--kernels", default="", help="comma-separated; default every registered")
    p.add_argument("--out", default="-", help="JSON lines: one 'start' and one result per case")
    p.add_argument("--examples", type=int, default=5, help="hypothesis examples per kernel")
    p.add_argument("--budget", type=float, default=600.0, help="seconds before stopping")
    args = p.parse_args(argv)
    kernels = args.kernels.split(",") if args.kernels else kernel_names()
    out = sys.stdout if args.out == "-" else open(args.out, "w")
    t_end = time.monotonic() + args.budget

    def emit(case: Case, cls: str, detail: str) -> None:
        out.write(json.dumps({"id": case.id, "kernel": case.kernel, "class": case.input_class,
                              "outcome": cls, "detail": detail}) + "\n")
        out.flush()

    def start(case: Case) -> None:
        out.write(json.dumps({"start": case.id}) + "\n")
        out.flush()

    for case in corpus(kernels, args.device):
        if time.monotonic() > t_end:
            out.write(json.dumps({"stopped": "budget"}) + "\n")
            return 0
        start(case)
        emit(case, *run_case(case, args.device))
    for kernel in kernels:
        if args.device in supported_backends(kernel) and args.examples:
            hypothesis_valid(kernel, args.device, args.examples, start, emit)
    out.write(json.dumps({"done": True}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
