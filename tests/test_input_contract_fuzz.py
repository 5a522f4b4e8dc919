"""The input contract of every public kernel entry point, on every backend that runs here.

For each public entry point (every kernel in the registry, i.e. every ``hetlab.<kernel>``
that takes arrays, plus ``quant.quantize`` and ``hl.make_cloud``) a valid call is built from
the spec's own example; then one argument at a time is replaced by a bad or unusual value
(wrong shape/ndim, 0-d, empty, dtype int/bool/complex/object/str/float16, NaN/±inf, a list,
a strided view, Fortran order, a read-only array, out-of-range or mistyped integers and
floats, a wrong ``device=``). Each call must end in one of:

``refused``  a :class:`~hetlab.errors.HetlabError` (``InvalidInputError`` is a ValueError)
             whose message names the function and the argument, raised *before* any backend
             implementation ran (the implementation is wrapped and must not have been called);
``equal``    (only for inputs marked valid-or-refused: lists, views, Fortran order, other
             real dtypes, …) a result equal, within the spec's tolerance, to the numpy
             reference's on the same values given as a plain C-contiguous array.

Anything else fails: a raw exception (numba ``TypingError``, ``IndexError``), a refusal that
does not name the function or argument, a refusal from inside a backend, or a wrong result.
Run by hand for a findings table: ``python -m tests.test_input_contract_fuzz``.
"""

from __future__ import annotations

import copy
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import hetlab as hl
from hetlab.core import dispatch
from hetlab.core.params import REQUIRED, Param
from hetlab.core.registry import get_backend, get_kernel, kernel_names, supported_backends
from hetlab.errors import (
    BackendUnavailable,
    HetlabError,
    InvalidInputError,
    KernelNotSupported,
)

DEVICES = ("numpy", "numba", "fpga")
#: size handed to each spec's ``make_case``: small, but every argument non-trivial
SIZE = 6

REFUSE = "refuse"  # must be refused clearly
EITHER = "either"  # valid (equal to the reference on the same values) or refused clearly


@dataclass(frozen=True)
class Bad:
    label: str
    value: Any
    expect: str


# --------------------------------------------------------------------------- the table


def _poke(a: np.ndarray, v: float) -> np.ndarray:
    out = a.astype(np.float64)
    out.flat[out.size // 2] = v
    return out


def _strided(a: np.ndarray) -> np.ndarray:
    return np.repeat(a, 2, axis=-1)[..., ::2]


def _readonly(a: np.ndarray) -> np.ndarray:
    a = a.copy()
    a.flags.writeable = False
    return a


def _unaligned(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` whose data starts one byte past an aligned address."""
    buf = np.empty(a.nbytes + 1, np.uint8)
    out = buf[1:].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def array_table(p: Param | None, a: np.ndarray) -> Iterator[Bad]:
    """Bad and unusual values of an array argument, derived from a valid one."""
    integral = a.dtype.kind in "iub"
    if a.dtype.itemsize > 1:
        yield Bad("valid:unaligned", _unaligned(a), EITHER)
        yield Bad("dtype:big-endian", a.astype(a.dtype.newbyteorder(">")), EITHER)
    if a.size:
        yield Bad("valid:broadcast", np.broadcast_to(a[(slice(0, 1),) * a.ndim], a.shape), EITHER)
    if a.ndim == 2:
        yield Bad("type:np.matrix", np.asmatrix(a), EITHER)
    yield Bad("dtype:uint8", np.abs(a).astype(np.uint8), EITHER)
    yield Bad("dtype:longdouble", a.astype(np.longdouble), EITHER)
    yield Bad("dtype:datetime", a.astype(np.int64).astype("datetime64[s]"), REFUSE)
    yield Bad("valid:list", a.tolist(), EITHER)
    yield Bad("valid:strided", _strided(a), EITHER)
    yield Bad("valid:fortran", np.asfortranarray(a), EITHER)
    yield Bad("valid:reversed-view", a[::-1], EITHER)
    yield Bad("valid:readonly", _readonly(a), EITHER)
    yield Bad("dtype:float16", a.astype(np.float16), EITHER)
    yield Bad("dtype:int32", a.astype(np.int32), EITHER)
    yield Bad("dtype:bool", a.astype(bool), EITHER)
    yield Bad("dtype:complex", a.astype(np.complex128), REFUSE)
    yield Bad("dtype:object", a.astype(object), REFUSE)
    yield Bad("dtype:str", a.astype(str), REFUSE)
    yield Bad("shape:extra-axis", a[..., None], REFUSE)
    if a.ndim > 1:
        yield Bad("shape:ravel", a.ravel(), REFUSE)
        yield Bad("shape:transposed", np.ascontiguousarray(np.swapaxes(a, 0, -1)), EITHER)
    yield Bad("shape:0-d", np.asarray(a.flat[0]) if a.size else np.float64(1.0), REFUSE)
    yield Bad("type:scalar", float(a.flat[0]) if a.size else 1.0, REFUSE)
    yield Bad("type:None", None, EITHER if p is not None and p.none_ok else REFUSE)
    yield Bad("type:str", "abc", REFUSE)
    yield Bad("type:dict", {"a": 1}, REFUSE)
    yield Bad("type:ragged-list", [[1.0, 2.0], [3.0]], REFUSE)
    if a.size:
        yield Bad("value:nan", _poke(a, np.nan), REFUSE)
        yield Bad("value:inf", _poke(a, np.inf), REFUSE)
        yield Bad("value:-inf", _poke(a, -np.inf), REFUSE)
        yield Bad("value:1e300", _poke(a, 1e300), EITHER)
        yield Bad("value:1e20", _poke(a, 1e20), EITHER)  # its square overflows float32
        if integral:
            yield Bad("value:fraction", _poke(a, 0.5), REFUSE)
            yield Bad("value:beyond-int32", _poke(a, 2.0**40).astype(np.int64), REFUSE)
    if not (p is not None and p.empty_ok) and a.ndim:
        yield Bad("empty", a[:0], REFUSE)
        if a.ndim > 1:
            yield Bad("empty:last-axis", a[..., :0], REFUSE)


#: integers whose valid range depends on the data: (entry, argument) → the first bad value
DATA_BOUND: dict[tuple[str, str], Callable[[dict[str, Any]], int]] = {
    ("fps", "n_samples"): lambda kw: len(kw["points"]) + 1,
    ("fps", "start"): lambda kw: len(kw["points"]),
    ("knn", "k"): lambda kw: len(kw["points"]) + 1,
    ("fps_knn", "n_samples"): lambda kw: len(kw["points"]) + 1,
    ("fps_knn", "k"): lambda kw: len(kw["points"]) + 1,
    ("fps_knn", "start"): lambda kw: len(kw["points"]),
    ("quantize", "group_size"): lambda kw: 7,  # does not divide the 64 columns
}


def int_table(p: Param, v: int) -> Iterator[Bad]:
    yield Bad("valid:np.int32", np.int32(v), EITHER)
    yield Bad("valid:np.int64", np.int64(v), EITHER)
    if v >= 0:
        yield Bad("valid:np.uint64", np.uint64(v), EITHER)
    yield Bad("type:float", v + 0.5, REFUSE)
    yield Bad("type:float-integral", float(v), REFUSE)
    yield Bad("type:bool", True, REFUSE)
    yield Bad("type:str", str(v), REFUSE)
    yield Bad("type:array", np.array([v, v]), REFUSE)
    yield Bad("type:0-d-array", np.array(v), EITHER)
    yield Bad("type:None", None, EITHER if p.none_ok else REFUSE)
    if p.lo is not None:
        yield Bad("range:below", int(p.lo) - 1, REFUSE)
    if p.hi is not None:
        yield Bad("range:above", int(p.hi) + 1, REFUSE)
    yield Bad("range:negative", -1, EITHER if p.lo is None or p.lo <= -1 else REFUSE)
    yield Bad("range:zero", 0, EITHER)
    for odd in (3, 7, 100, 4096):
        yield Bad(f"range:{odd}", odd, EITHER)
    yield Bad("range:huge", 2**62, EITHER)
    yield Bad("range:beyond-int64", 2**70, EITHER)


def float_table(p: Param, v: float) -> Iterator[Bad]:
    yield Bad("valid:np.float32", np.float32(v), EITHER)
    yield Bad("valid:int", max(1, round(v)), EITHER)
    yield Bad("range:tiny", 1e-300, EITHER)
    yield Bad("range:huge", 1e300, EITHER)
    yield Bad("value:nan", float("nan"), REFUSE)
    yield Bad("value:inf", float("inf"), REFUSE)
    yield Bad("value:-inf", float("-inf"), REFUSE)
    yield Bad("type:bool", True, REFUSE)
    yield Bad("type:str", "1", REFUSE)
    yield Bad("type:complex", complex(v, 1), REFUSE)
    yield Bad("type:array", np.array([v, v]), REFUSE)
    yield Bad("type:None", None, EITHER if p.none_ok else REFUSE)
    if p.positive:
        yield Bad("range:zero", 0.0, REFUSE)
        yield Bad("range:negative", -1.0, REFUSE)


def bool_table(p: Param, v: bool) -> Iterator[Bad]:
    yield Bad("valid:np.bool_", np.bool_(v), EITHER)
    yield Bad("type:int", 1, REFUSE)
    yield Bad("type:str", "True", REFUSE)
    yield Bad("type:None", None, REFUSE)
    yield Bad("type:array", np.array([v, v]), REFUSE)


def choice_table(p: Param, v: str) -> Iterator[Bad]:
    yield Bad("choice:unknown", "no-such-choice", REFUSE)
    yield Bad("choice:upper", str(v).upper(), EITHER)
    yield Bad("type:None", None, REFUSE)
    yield Bad("type:int", 3, REFUSE)
    yield Bad("type:list", [v], REFUSE)


def container_table(p: Param, c: Any) -> Iterator[Bad]:
    yield Bad("type:None", None, REFUSE)
    yield Bad("type:str", "matrix", REFUSE)
    yield Bad("type:int", 3, REFUSE)
    dense = np.ones(c.shape)
    if p.kind == "csr":  # dense arrays convert: valid, but their shape must still fit
        yield Bad("valid:dense", c.toarray() if hasattr(c, "toarray") else dense, EITHER)
        yield Bad("shape:dense-3d", dense[..., None], REFUSE)
        yield Bad("dtype:dense-complex", dense.astype(np.complex128), REFUSE)
        yield Bad("value:dense-nan", _poke(dense, np.nan), REFUSE)
        import scipy.sparse as sp

        yield Bad("valid:scipy-csr", sp.csr_matrix(c.toarray()), EITHER)
        yield Bad("valid:scipy-coo-float32", sp.coo_matrix(c.toarray().astype(np.float32)),
                  EITHER)
        yield Bad("valid:int64-indices", hl.sparse.csr(c, index_dtype=np.int64), EITHER)
        r, col = np.nonzero(c.toarray())
        yield Bad("valid:hetlab-coo", hl.sparse.coo(r, col, c.toarray()[r, col], c.shape),
                  EITHER)
        swapped = _built(lambda: hl.sparse.CSR(_swapped(c.indptr), _swapped(c.indices),
                                               _swapped(c.data), c.shape))
    else:
        yield Bad("type:dense", dense.astype(np.float32), REFUSE)
        w = c.dequantize(np.float32)[:, : c.in_features]
        for bits in (2, 3, 8):  # other widths: valid for some kernels, refused by others
            yield Bad(f"qw:bits={bits}", hl.quant.quantize(w, bits, c.group_size), EITHER)
        yield Bad("qw:symmetric", hl.quant.quantize(w, c.bits, c.group_size, symmetric=True),
                  EITHER)
        yield Bad("qw:group=32", hl.quant.quantize(w, c.bits, 32), EITHER)
        yield Bad("qw:group=256", hl.quant.quantize(w, c.bits, 256), EITHER)
        swapped = _built(lambda: hl.quant.QuantizedMatrix(
            _swapped(c.qweight), _swapped(c.scales),
            None if c.zeros is None else _swapped(c.zeros), c.bits, c.group_size,
            c.in_features))
    if swapped is not None:  # a container the constructor accepted from big-endian arrays
        yield Bad("valid:from-big-endian", swapped, EITHER)


def _built(make: Callable[[], Any]) -> Any:
    """``make()``, or None when the constructor refuses clearly (a HetlabError)."""
    try:
        return make()
    except HetlabError:
        return None


def _swapped(a: np.ndarray) -> np.ndarray:
    """``a``'s values stored big-endian (data read from a file written elsewhere)."""
    return np.asarray(a).astype(np.asarray(a).dtype.newbyteorder(">"))


DEVICE_TABLE = (
    Bad("device:unknown", "tpu", REFUSE),
    Bad("device:empty", "", REFUSE),
    Bad("device:cuda-index", "cuda:0", REFUSE),
    Bad("device:ambiguous", "cpu", REFUSE),
    Bad("device:padded", " numpy", REFUSE),
    Bad("device:int", 0, REFUSE),
    Bad("device:list", ["numpy"], REFUSE),
    Bad("device:None", None, EITHER),
    Bad("device:upper", "NUMPY", EITHER),
    Bad("device:auto", "auto", EITHER),
    Bad("device:absent-cupy", "cupy", REFUSE),
)

KEEP_TABLE = (
    Bad("valid:False", False, EITHER),
    Bad("valid:np.bool_", np.bool_(True), EITHER),
    Bad("type:int", 1, REFUSE),
    Bad("type:str", "yes", REFUSE),
    Bad("type:None", None, REFUSE),
    Bad("type:array", np.array([True, False]), REFUSE),
)


def table_for(p: Param | None, value: Any) -> Iterator[Bad]:
    kind = p.kind if p is not None else "array"
    if kind in ("points", "array") and isinstance(value, np.ndarray):
        yield from array_table(p, value)
    elif kind in ("csr", "quantized"):
        yield from container_table(p, value)
    elif kind == "int" and isinstance(value, (int, np.integer)):
        yield from int_table(p, int(value))
    elif kind == "float" and isinstance(value, (float, np.floating)):
        yield from float_table(p, float(value))
    elif kind == "bool":
        yield from bool_table(p, bool(value))
    elif kind == "choice":
        yield from choice_table(p, value)


# --------------------------------------------------------------------------- one call


@dataclass(frozen=True)
class Entry:
    """A public entry point: how to call it, its valid example, its declared params."""

    name: str
    call: Callable[..., Any]
    example: Callable[[], dict[str, Any]]
    params: tuple[Param, ...]
    devices: tuple[str, ...]
    compare: Callable[[Any, Any], bool]


def _kernel_entry(name: str) -> Entry:
    spec = get_kernel(name)
    fn = getattr(hl, name)

    def example() -> dict[str, Any]:
        return spec.make_case(SIZE, np.random.default_rng(7))

    def compare(got: Any, want: Any) -> bool:
        return spec.verified(got, want)[1]

    devs = tuple(d for d in DEVICES if d in supported_backends(name))
    return Entry(name, fn, example, spec.params, devs, compare)


def _quantize_example() -> dict[str, Any]:
    w = np.random.default_rng(3).normal(0, 0.1, (4, 64)).astype(np.float32)
    return {"w": w, "bits": 4, "group_size": 32}


def _same_qw(a: Any, b: Any) -> bool:
    return bool(np.allclose(a.dequantize(np.float64), b.dequantize(np.float64), atol=1e-6))


def _make_cloud(n: int, rng: Any = None, kind: str = "uniform") -> Any:
    return hl.make_cloud(n, np.random.default_rng(0) if rng is None else rng, kind=kind)


def _csr_example() -> dict[str, Any]:
    a = np.random.default_rng(5).normal(0, 1, (5, 4))
    a[a < 0.3] = 0.0
    return {"A": a}


EXTRA = (
    Entry("quantize", hl.quant.quantize, _quantize_example,
          (Param("w", "array", ndim=2), Param("bits", "int", lo=1, hi=8),
           Param("group_size", "int", lo=1), Param("symmetric", "bool", default=False)),
          ("numpy",), _same_qw),
    Entry("make_cloud", _make_cloud, lambda: {"n": 5, "kind": "clustered"},
          (Param("n", "int", lo=0), Param("kind", "choice", choices=("uniform", "clustered"))),
          ("numpy",), lambda a, b: bool(np.array_equal(a, b))),
    Entry("csr", hl.sparse.csr, _csr_example, (Param("A", "array", ndim=2, empty_ok=True),),
          ("numpy",),
          lambda a, b: bool(np.array_equal(a.toarray(), b.toarray()))),
)


def entries() -> dict[str, Entry]:
    out = {name: _kernel_entry(name) for name in kernel_names()}
    out.update({e.name: e for e in EXTRA})
    return out


ENTRIES = entries()


#: checks documented to run inside the implementations (docs/promises.md §1): decode folds
#: the value checks of its caches into the kernel's one pass over them (hetlab.kernels.
#: attention.spec, check_cache); they must still be InvalidInputErrors naming the argument
DEFERRED = {("decode_attention", "k_cache"), ("decode_attention", "v_cache")}


def _backend_may_refuse(name: str, arg: str, e: Exception) -> bool:
    """Whether a refusal raised after the implementation started is allowed: what only the
    device knows (an overlay's float32 datapath, its on-chip limits: KernelNotSupported) or
    a documented deferred value check."""
    if isinstance(e, (KernelNotSupported, BackendUnavailable)):
        return True
    return (name, arg) in DEFERRED and isinstance(e, InvalidInputError)


class _Spy:
    """Wraps every backend implementation dispatch hands out, recording whether one ran."""

    def __init__(self) -> None:
        self.ran = False
        self._real = dispatch.get_impl

    def __call__(self, kernel: str, backend: str) -> Callable[..., Any]:
        impl = self._real(kernel, backend)

        def spied(**kw: Any) -> Any:
            self.ran = True
            return impl(**kw)

        return spied


def _plain(v: Any) -> Any:
    """The same values as a fresh C-contiguous array (what a reference call gets)."""
    if isinstance(v, np.ndarray):
        return np.array(v, order="C", copy=True)
    if isinstance(v, list):
        try:
            return np.array(v)
        except ValueError:
            return v
    return copy.deepcopy(v)


#: whether the last :func:`check_call` returned a result the implementation computed
_last_ok = [False]


def check_call(entry: Entry, device: str, kwargs: dict[str, Any], arg: str, bad: Bad,
               monkeypatch: pytest.MonkeyPatch) -> str | None:
    """Run one call; return None when it kept the contract, else what went wrong."""
    _last_ok[0] = False
    spy = _Spy()
    monkeypatch.setattr(dispatch, "get_impl", spy)
    kw = dict(kwargs)
    if arg == "device":
        dev = bad.value
    else:
        kw[arg] = bad.value
        dev = device
    call_kw = dict(kw)
    if entry.name in ENTRIES and entry not in EXTRA:
        call_kw["device"] = dev
    try:
        inspect.signature(entry.call).bind(**call_kw)
    except TypeError:
        return None  # Python's own refusal of an unknown argument
    try:
        result = entry.call(**call_kw)
    except HetlabError as e:
        msg = str(e)
        if isinstance(e, ValueError) is False and not isinstance(e, (ImportError,
                                                                       NotImplementedError)):
            return f"{type(e).__name__} is not a ValueError: {msg[:160]}"
        if spy.ran and not _backend_may_refuse(entry.name, arg, e):
            return f"refused inside the backend, not before: {type(e).__name__}: {msg[:160]}"
        if entry.name not in msg:
            return f"message does not name the function {entry.name!r}: {msg[:200]}"
        if arg not in msg:
            return f"message does not name the argument {arg!r}: {msg[:200]}"
        return None
    except Exception as e:  # the point: anything else is a finding
        return f"raw {type(e).__name__}: {str(e)[:200]}"
    finally:
        monkeypatch.setattr(dispatch, "get_impl", spy._real)
    _last_ok[0] = spy.ran or entry in EXTRA  # a result, computed by the implementation
    if bad.expect == REFUSE:
        return f"accepted (expected a refusal); returned {type(result).__name__}"
    ref_kw = {k: _plain(v) for k, v in kw.items()}
    if entry not in EXTRA:
        ref_kw["device"] = "numpy"
    try:
        want = entry.call(**ref_kw)
    except HetlabError:
        return "accepted here but the reference refuses the same values"
    if not entry.compare(result, want):
        return "result differs from the reference on the same values"
    return None


def cases(entry: Entry, arg: str) -> list[Bad]:
    kwargs = entry.example()
    if arg == "device":
        return list(DEVICE_TABLE)
    if arg == "keep_on_device":
        return list(KEEP_TABLE)
    p = next((q for q in entry.params if q.name == arg), None)
    if arg not in kwargs:
        if p is None or p.default is REQUIRED:
            return []
        kwargs[arg] = p.default
    out = list(table_for(p, kwargs[arg]))
    if (entry.name, arg) in DATA_BOUND:
        out.append(Bad("range:data", DATA_BOUND[entry.name, arg](kwargs), REFUSE))
    return out


def _args(entry: Entry) -> list[str]:
    names = list(entry.example())
    names += [p.name for p in entry.params if p.name not in names]
    if entry not in EXTRA:
        names += ["device", "keep_on_device"]
    return names


PAIRS = [(dev, name, arg) for name, e in ENTRIES.items() for dev in e.devices
         for arg in _args(e) if not (arg == "device" and dev != "numpy")]


def failures(device: str, name: str, arg: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    entry = ENTRIES[name]
    kwargs = entry.example()
    if arg not in kwargs and arg not in ("device", "keep_on_device"):
        p = next(q for q in entry.params if q.name == arg)
        kwargs[arg] = p.default
    out = []
    base = check_call(entry, device, kwargs, arg,
                      Bad("valid:example", kwargs[arg] if arg in kwargs else
                          {"device": device, "keep_on_device": False}[arg], EITHER), monkeypatch)
    assert base is None, f"{name} on {device}: the valid example itself fails: {base}"
    assert _last_ok[0], f"{name} on {device}: the valid example was refused"
    for bad in cases(entry, arg):
        problem = check_call(entry, device, kwargs, arg, bad, monkeypatch)
        if problem:
            out.append(f"{name}({arg}={bad.label}) on {device}: {problem}")
    return out


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")  # the np.matrix variant
@pytest.mark.parametrize(("device", "name", "arg"), PAIRS,
                         ids=[f"{d}-{n}-{a}" for d, n, a in PAIRS])
def test_input_contract(device: str, name: str, arg: str,
                        monkeypatch: pytest.MonkeyPatch) -> None:
    reason = get_backend(device).why_not()
    if reason is not None:
        pytest.skip(f"{device}: {reason}")
    bad = failures(device, name, arg, monkeypatch)
    assert not bad, f"{len(bad)} broken contract(s):\n" + "\n".join(bad)


@pytest.mark.parametrize("name", ["knn", "ball_query", "fps_knn"])
def test_results_too_large_for_memory_are_refused(name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """k ≤ n alone allows an n × n result: 4·10⁵ points with k = n would be ~2 TB."""
    n = 400_000
    pts = np.random.default_rng(0).random((n, 3), dtype=np.float32)
    kw = {"knn": {"points": pts, "queries": pts, "k": n},
          "ball_query": {"points": pts, "centers": pts, "radius": 0.1, "k": n},
          "fps_knn": {"points": pts, "n_samples": n, "k": n}}[name]
    problem = check_call(ENTRIES[name], "numpy", kw, "k", Bad("too-large", n, REFUSE),
                         monkeypatch)
    assert problem is None, problem


def test_the_spy_sees_backend_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 'refused before the backend ran' check can fail: a refusal raised inside an
    implementation is reported, and a valid call is seen to run the implementation."""
    from hetlab.core import registry

    entry = ENTRIES["fps"]
    kw = entry.example()
    assert check_call(entry, "numpy", kw, "points", Bad("ok", kw["points"], EITHER),
                      monkeypatch) is None
    assert _last_ok[0]

    def refusing(**_: Any) -> Any:
        raise InvalidInputError("fps: points refused late")

    monkeypatch.setitem(registry._IMPLS, ("fps", "numpy"), refusing)
    problem = check_call(entry, "numpy", kw, "points", Bad("late", kw["points"], REFUSE),
                         monkeypatch)
    assert problem is not None and "inside the backend" in problem


def test_table_covers_every_public_kernel() -> None:
    """Every registry kernel (so every ``hetlab.<kernel>``) and its every array argument."""
    covered = {(n, a) for _, n, a in PAIRS}
    for name in kernel_names():
        for arr in get_kernel(name).arrays:
            assert (name, arr) in covered, (name, arr)
    assert {"fps", "knn", "fps_knn", "voxel_downsample", "spmv", "spmm", "sparse_conv3d",
            "gemv_q", "gemm_q", "gemv_w4a8", "attention", "quantize"} <= set(ENTRIES)


if __name__ == "__main__":  # a findings table: python -m tests.test_input_contract_fuzz [dev]
    mp = pytest.MonkeyPatch()
    devs = sys.argv[1:] or ["numpy"]
    n_bad = 0
    for d, n, a in PAIRS:
        if d in devs:
            for line in failures(d, n, a, mp):
                n_bad += 1
                print(line, flush=True)
    print(f"{n_bad} broken contract(s)")
