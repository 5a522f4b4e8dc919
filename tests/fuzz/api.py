"""Fuzzing hetlab's public API beyond the registered kernels (quant, make_cloud, sweeps, …).

Each entry of :data:`APIS` is one public function with a valid base call (keyword arguments
built fresh by a factory). Every argument is then replaced, one at a time, by the variants of
its kind — the array, int and float classes of :mod:`tests.fuzz.engine`, plus the classes
below (float16/float64/int dtypes, huge sizes, strings, booleans, paths, sequences whose
first element is replaced by each variant of its own kind, objects of the wrong kind) — and
left out. Each call ends in one of:

``clear``      a :class:`~hetlab.errors.HetlabError` whose message names the argument, or
               Python's own ``TypeError`` for a missing/unknown keyword;
``ok``         a result (for ``valid:`` variants: equal to the base call's, where the entry
               says how to compare), with every float in it finite when the inputs were;
and never in:
``raw``        any other exception (``MemoryError``, ``TypeError`` from inside, ``IndexError``);
``unnamed``    a hetlab error whose message does not name the argument that was replaced;
``wrong``      a NaN/inf result from finite inputs, or a valid variant's result that differs;
``later``      a result whose follow-up use (``after``) raises anything but a hetlab error;
``mutated``    an input that changed during the call;
``hang``       a call that took longer than :data:`CALL_LIMIT_S`.

Run by hand: ``python -m tests.fuzz.api`` prints a table per function and every failure.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hetlab.errors import HetlabError

from .engine import (
    ARRAY_VARIANTS,
    FLOAT_VARIANTS,
    INT_VARIANTS,
    Skip,
    TamperRefused,
    Variant,
    all_finite,
    container_variants,
    same,
    snapshot,
)

#: classes no function may accept (a NUL byte: C libraries cut the name there and write
#: another file)
MUST_REFUSE = ("path:nul-byte",)
BAD = ("raw", "unnamed", "wrong", "later", "mutated", "hang")
#: seconds one call may take before it counts as a hang: a first call with a new kind of
#: array (read-only, Fortran order) compiles a numba specialization, which took > 10 s in a
#: clean-clone CI run on a 2-core machine with other jobs (GemvPlan on a read-only x; 1.9 s
#: alone); a real hang still never returns
CALL_LIMIT_S = 30.0

# --------------------------------------------------------------------------- extra classes


def _astype(dtype: Any) -> Callable[[np.ndarray], np.ndarray]:
    def make(a: np.ndarray) -> np.ndarray:
        if a.dtype == np.dtype(dtype):
            raise Skip
        with np.errstate(all="ignore"):
            return a.astype(dtype)

    return make


def _skip() -> Any:
    raise Skip


def _transposed_view(a: np.ndarray) -> np.ndarray:
    if a.ndim != 2:
        raise Skip
    return np.asfortranarray(a).T.copy(order="F").T  # same values, a non-C-contiguous view


ARRAY_EXTRA = (
    Variant("dtype:float16", _astype(np.float16)),
    Variant("dtype:float64", _astype(np.float64)),
    Variant("dtype:float32", _astype(np.float32)),
    Variant("dtype:int", _astype(np.int64)),
    Variant("valid:noncontig-2d", _transposed_view),
    Variant("shape:2d-row", lambda a: a.reshape(1, -1) if a.ndim == 1 else a[None]),
    Variant("type:tuple-of-lists", lambda a: tuple(a.tolist()) if a.ndim else _skip()),
)

INT_EXTRA = (
    Variant("range:huge-2**40", lambda v: 2**40),
    Variant("range:-huge", lambda v: -(2**62)),
    Variant("type:list", lambda v: [v]),
    Variant("type:numpy-float", lambda v: np.float64(v)),
)

FLOAT_EXTRA = (
    Variant("range:-inf", lambda v: float("-inf")),
    Variant("type:list", lambda v: [v]),
    Variant("valid:int", lambda v: int(v) if float(v).is_integer() else _skip()),
)

STR_VARIANTS = (
    Variant("value:empty-str", lambda v: ""),
    Variant("value:unknown-str", lambda v: "no-such-choice"),
    Variant("type:None", lambda v: None),
    Variant("type:int", lambda v: 1),
    Variant("type:bytes", lambda v: v.encode()),
    Variant("type:list", lambda v: [v]),
    Variant("type:float-nan", lambda v: float("nan")),
)

BOOL_VARIANTS = (
    Variant("valid:numpy-bool", lambda v: np.bool_(v)),
    Variant("type:None", lambda v: None),
    Variant("type:str", lambda v: "yes"),
    Variant("type:int-2", lambda v: 2),
    Variant("type:list", lambda v: [v]),
)

OBJECT_VARIANTS = (
    Variant("type:None", lambda v: None),
    Variant("type:str", lambda v: "abc"),
    Variant("type:int", lambda v: 3),
    Variant("type:array", lambda v: np.ones(3)),
    Variant("type:dict", lambda v: {"a": 1}),
)

_SCRATCH = tempfile.mkdtemp(prefix="hetlab-apifuzz-")


def _garbage_file(_: Any) -> str:
    p = os.path.join(_SCRATCH, "garbage.bin")
    with open(p, "wb") as fh:
        fh.write(b"\x00not a file hetlab wrote\xff" * 10)
    return p


class Path_(str):
    """Marks a path argument of a base call (a str subclass: passed as it is)."""


PATH_VARIANTS = (
    Variant("path:missing", lambda v: os.path.join(_SCRATCH, "no", "such", "file.x")),
    Variant("path:directory", lambda v: _SCRATCH),
    Variant("path:garbage", _garbage_file),
    Variant("path:empty-str", lambda v: ""),
    Variant("type:None", lambda v: None),
    Variant("type:int", lambda v: 3),
    Variant("type:list", lambda v: [str(v)]),
    Variant("path:nul-byte", lambda v: "a\x00b"),
)


def _first(inner: Variant) -> Variant:
    """Replace a sequence's first element by ``inner``'s variant of it."""
    def make(seq: Sequence[Any]) -> Any:
        if len(seq) == 0:
            raise Skip
        new = inner.make(seq[0])
        return type(seq)([new, *seq[1:]]) if isinstance(seq, (list, tuple)) else _skip()

    return Variant(f"[0]:{inner.cls}", make)


def seq_variants(seq: Sequence[Any]) -> tuple[Variant, ...]:
    out = [
        Variant("seq:empty", lambda s: type(s)()),
        Variant("valid:tuple" if isinstance(seq, list) else "valid:list",
                lambda s: tuple(s) if isinstance(s, list) else list(s)),
        Variant("seq:doubled", lambda s: type(s)([*s, *s])),
        Variant("type:None", lambda s: None),
        Variant("type:str", lambda s: "abc"),
        Variant("type:int", lambda s: 3),
        Variant("type:set", lambda s: set(range(len(s)))),
    ]
    if len(seq):
        out += [_first(v) for v in variants_for(seq[0]) if not v.cls.startswith("[0]")]
    return tuple(out)


def variants_for(value: Any) -> tuple[Variant, ...]:
    """The input classes that apply to an argument of this kind."""
    if isinstance(value, Path_):
        return PATH_VARIANTS
    if isinstance(value, (bool, np.bool_)):
        return BOOL_VARIANTS
    if isinstance(value, np.ndarray):
        return ARRAY_VARIANTS + ARRAY_EXTRA
    if callable(getattr(value, "map_arrays", None)):
        return container_variants(value)
    if isinstance(value, (int, np.integer)):
        return INT_VARIANTS + INT_EXTRA
    if isinstance(value, (float, np.floating)):
        return FLOAT_VARIANTS + FLOAT_EXTRA
    if isinstance(value, str):
        return STR_VARIANTS
    if isinstance(value, (list, tuple)):
        return seq_variants(value)
    if value is None:
        return ()
    return OBJECT_VARIANTS


# --------------------------------------------------------------------------- one call


@dataclass
class Api:
    """One public function: ``fn(**base())`` is a valid call.

    ``equal(a, b)`` compares two results (valid variants must give the base's); ``after``
    uses a result (a plan's call, a run's forward pass): a non-hetlab exception there means
    the function accepted something it should have refused. ``finite``: results must be
    finite. ``keep``: arguments the call may legitimately change (a Generator).
    ``names``: words any of which counts as naming an argument (default: its own name).
    """

    name: str
    fn: Callable[..., Any]
    base: Callable[[], dict[str, Any]]
    equal: Callable[[Any, Any], bool] | None = None
    after: Callable[[Any], Any] | None = None
    finite: bool = True
    keep: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    names: dict[str, tuple[str, ...]] = field(default_factory=dict)
    cleanup: Callable[[Any], None] | None = None


class _Hang(BaseException):
    """Raised by the alarm: a BaseException, so a library's ``except Exception`` cannot eat it."""


def _alarm(signum: int, frame: Any) -> None:
    raise _Hang


def _finite_input(value: Any) -> bool:
    try:
        return all_finite(value) if isinstance(value, (np.ndarray, tuple)) else (
            not isinstance(value, float) or math.isfinite(value))
    except Exception:
        return True


def _names(name: str, message: str) -> bool:
    """Whether ``message`` names ``name`` as a word (``n`` is not named by "count")."""
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", message) is not None


def _same(a: Any, b: Any) -> bool:
    """Whether an argument kept its values: arrays, containers, sequences and dicts compared
    element by element; other objects by their attributes (identity when they have none)."""
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(
            _same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if (isinstance(a, (np.ndarray, str, bytes, int, float, complex, type(None), np.generic))
            or callable(getattr(a, "map_arrays", None))):
        return same(a, b)
    attrs_a, attrs_b = getattr(a, "__dict__", None), getattr(b, "__dict__", None)
    if attrs_a is None or attrs_b is None or type(a) is not type(b):
        return True  # an object we cannot look into: not judged here
    return _same({k: v for k, v in attrs_a.items() if not k.startswith("_")},
                 {k: v for k, v in attrs_b.items() if not k.startswith("_")})


def outcome(api: Api, arg: str | None, cls: str, kwargs: dict[str, Any],
            expected: Any = None) -> tuple[str, str]:
    """Run one call; return ``(outcome, detail)``."""
    before = {k: snapshot(v) for k, v in kwargs.items() if k not in api.keep}
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CALL_LIMIT_S)
    result: Any = None
    t0 = time.perf_counter()
    try:
        try:
            result = api.fn(**kwargs)
        except TypeError as e:
            if "argument" in str(e) and ("unexpected keyword" in str(e) or "missing" in str(e)):
                return "clear", f"TypeError: {e}"  # Python's own refusal of the call's shape
            return "raw", f"TypeError: {str(e)[:200]}"
        except HetlabError as e:
            names = api.names.get(arg or "", ()) + ((arg,) if arg else ())
            if arg and not any(_names(n, str(e)) for n in names):
                return "unnamed", f"{type(e).__name__}: {str(e)[:200]}"
            return "clear", type(e).__name__
        except _Hang:
            return "hang", f"> {CALL_LIMIT_S} s"
        except Exception as e:  # the point: anything else is a finding
            return "raw", f"{type(e).__name__}: {str(e)[:200]}"
        if time.perf_counter() - t0 > CALL_LIMIT_S:
            return "hang", f"returned after more than {CALL_LIMIT_S} s"
        if cls in MUST_REFUSE:
            return "wrong", f"{cls} was accepted"
        for k, v in kwargs.items():
            if k in before and not _same(before[k], v):
                return "mutated", k
        if api.finite and not all_finite(_arrays_of(result)) and all(
                _finite_input(v) for v in kwargs.values()):
            return "wrong", "non-finite result from finite inputs"
        if cls.startswith("valid") and api.equal is not None and expected is not None:
            try:
                if not api.equal(result, expected):
                    return "wrong", "a valid variant's result differs from the base call's"
            except Exception as e:
                return "wrong", f"results do not compare ({type(e).__name__}: {e})"
        if api.after is not None:
            try:
                api.after(result)
            except HetlabError:
                pass
            except _Hang:
                return "hang", f"use of the result > {CALL_LIMIT_S} s"
            except Exception as e:
                return "later", f"{type(e).__name__}: {str(e)[:200]}"
        return "ok", ""
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if api.cleanup is not None and result is not None:
            try:
                api.cleanup(result)
            except Exception:
                pass


def _arrays_of(result: Any) -> Any:
    """The float arrays of a result, for the finiteness check (objects: their array fields)."""
    if isinstance(result, (np.ndarray, np.floating, float)):
        return np.asarray(result)
    if isinstance(result, (list, tuple)):
        return tuple(_arrays_of(r) for r in result)
    if callable(getattr(result, "map_arrays", None)):
        return result
    return np.zeros(0)


@dataclass(frozen=True)
class Case:
    id: str
    api: str
    arg: str | None
    cls: str
    kwargs: dict[str, Any]


def cases(api: Api) -> Iterator[Case]:
    """The base call, each argument × each variant, and each argument left out."""
    kw = api.base()
    yield Case(f"{api.name}/valid", api.name, None, "valid:base", kw)
    for name in kw:
        if name in api.skip:
            continue
        for var in variants_for(kw[name]):
            fresh = api.base()
            try:
                new = var.make(fresh[name])
            except Skip:
                continue
            except TamperRefused:
                continue  # a read-only container refuses the write itself: nothing to call
            yield Case(f"{api.name}/{name}/{var.cls}", api.name, name, var.cls,
                       {**fresh, name: new})
        rest = {k: v for k, v in api.base().items() if k != name}
        yield Case(f"{api.name}/{name}/missing", api.name, name, "type:missing", rest)


def run_api(api: Api) -> list[dict[str, str]]:
    rows = []
    expected = None
    for case in cases(api):
        if case.cls == "valid:base":
            try:
                expected = api.fn(**api.base())
            except Exception as e:  # the base call itself must work
                rows.append({"id": case.id, "outcome": "raw", "detail": f"base call: {e!r}"})
                continue
        kwargs = case.kwargs if case.cls != "valid:base" else api.base()
        t0 = time.perf_counter()
        out, detail = outcome(api, case.arg, case.cls, kwargs, expected)
        rows.append({"id": case.id, "outcome": out, "detail": detail,
                     "seconds": time.perf_counter() - t0})
    if api.cleanup is not None and expected is not None:
        api.cleanup(expected)
    return rows


def main(argv: list[str] | None = None) -> int:
    from .api_table import APIS

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default="", help="comma-separated substrings of API names")
    p.add_argument("--slow", action="store_true", help="print the slowest calls")
    args = p.parse_args(argv)
    n_bad = 0
    for api in APIS:
        if args.only and not any(s in api.name for s in args.only.split(",")):
            continue
        t0 = time.perf_counter()
        rows = run_api(api)
        counts = {o: sum(r["outcome"] == o for r in rows) for o in ("clear", "ok", *BAD)}
        print(f"{api.name:32s} {time.perf_counter() - t0:6.2f}s "
              + " ".join(f"{k}={v}" for k, v in counts.items() if v), flush=True)
        for r in rows:
            if r["outcome"] in BAD:
                n_bad += 1
                print(f"    {r['outcome']:8s} {r['id']}: {r['detail']}")
        slow = sorted(rows, key=lambda r: -r.get("seconds", 0))[:3]
        if args.slow:
            print("    slowest: " + ", ".join(f"{r['id']} {r.get('seconds', 0):.2f}s"
                                           for r in slow))
    print(f"{n_bad} failure(s)")
    return 0


if __name__ == "__main__":  # run the imported module: api_table's classes are its own
    from tests.fuzz.api import main as _main

    sys.exit(_main())
