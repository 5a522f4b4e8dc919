"""Differential fuzzing of the offload engine on generated kernels (``offload_programs``).

For each kernel: the plain Python function runs on random inputs of several sizes (a size on
which Python raises is skipped); the serial ``njit`` variant (``transform(report, [])``) must
compile and agree; then every loop the report calls parallelizable, every privatizable one, and
the set of all of them (or of the outermost ones, when some are nested in others) is offloaded
with ``offload.transform(report, loops=ids).compile()`` under ``numba.set_num_threads(2)`` and
every output (each array argument, the return value) is compared with Python's (``allclose``
rtol 1e-9 for floats, NaN/inf positions equal; exact for ints). On a subset ``offload.search``
(budget 4) picks a plan whose ``compile()`` is checked on fresh inputs of another size.

Findings (kinds, worst first): ``wrong`` (a parallel variant differs from Python), ``search``
(a plan differs), ``serial`` (the serial njit differs), ``crash`` (analyze/transform/compile
raised something other than numba's typing error), ``typing`` (a variant does not type while
the serial njit does). Each is printed with the kernel source, loop ids, input seed and max
error, then minimized by deleting statements and saved under ``--out``.

    python -m tests.fuzz.offload_differential --seed 0 --count 200
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field

import numpy as np

from hetlab import offload
from tests.fuzz.offload_programs import Program, generate, inputs, load, removals

SIZES = (0, 1, 2, 3, 17, 30)

#: engine bugs already reported (see tests/test_offload_fuzz_programs.py): findings whose detail
#: matches are counted as ``known`` and not minimized again
KNOWN_DETAILS = {
    "two updates of one reduction": r"Use of reduction variable '\w+' other than in a supported",
    "two updates of one reduction, one under an if": r"UnsupportedRewriteError",
    "reduction variable as second operand (s = e + s)": r"ParforsUnexpectedReduceNodeError",
}


def known(f: Finding) -> str | None:
    """The name of the reported bug ``f`` is an instance of, if any."""
    for name, pat in KNOWN_DETAILS.items():
        if re.search(pat, f.detail):
            return name
    return None
KINDS = ("wrong", "search", "serial", "crash", "typing")


@dataclass
class Finding:
    kind: str
    seed: int
    loops: tuple[str, ...]
    size: int = -1
    input_seed: int = -1
    err: float = 0.0
    detail: str = ""
    source: str = ""

    def text(self) -> str:
        return (f"FINDING {self.kind} kernel seed={self.seed} loops={list(self.loops)} "
                f"n={self.size} input_seed={self.input_seed} max_err={self.err:.3g}\n"
                f"  {self.detail}\n{self.source}")


@dataclass
class Stats:
    kernels: int = 0
    loops: int = 0
    parallel: int = 0
    privatizable: int = 0
    variants: int = 0
    calls: int = 0
    serial_untyped: int = 0
    no_valid_size: int = 0
    searches: int = 0
    findings: list[Finding] = field(default_factory=list)

    def add(self, other: Stats) -> None:
        for k in ("kernels", "loops", "parallel", "privatizable", "variants", "calls",
                  "serial_untyped", "no_valid_size", "searches"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.findings += other.findings


def _is_typing(exc: BaseException) -> bool:
    """numba's own compile errors (a TypingError, or a ValueError raised in its parfor pass)."""
    if type(exc).__module__.startswith("numba"):
        return True
    tb = exc.__traceback__
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        if f"numba{os.sep}core" in fname or f"numba{os.sep}parfors" in fname:
            return True
        tb = tb.tb_next
    return False


def compare(ref, got) -> float | None:
    """Max error between Python's outputs and a variant's; None when they agree."""
    worst = 0.0
    bad = False
    for a, b in zip(ref, got, strict=True):
        if isinstance(a, np.ndarray):
            b = np.asarray(b)
            if a.shape != b.shape:
                return float("inf")
            if not np.allclose(a, b, rtol=1e-9, atol=1e-12, equal_nan=True):
                bad = True
                with np.errstate(invalid="ignore"):
                    d = np.abs(a - b)
                d = d[~(np.isnan(a) & np.isnan(b))]
                worst = max(worst, float(np.nanmax(d)) if d.size else float("nan"))
        elif isinstance(a, (int, np.integer)) and not isinstance(a, bool) and \
                isinstance(b, (int, np.integer)):
            if int(a) != int(b):
                bad, worst = True, max(worst, abs(float(a) - float(b)))
        else:
            fa, fb = float(a), float(b)
            if not (np.isnan(fa) and np.isnan(fb)) and not np.isclose(fa, fb, rtol=1e-9,
                                                                       atol=1e-12):
                bad = True
                worst = max(worst, abs(fa - fb) if np.isfinite(fa - fb) else float("inf"))
    return worst if bad else None


def run(fn, args) -> list:
    args = copy.deepcopy(args)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        ret = fn(*args)
    return [ret, *args[1:]]


def references(fn, seed: int, sizes) -> dict[int, tuple[list, list]]:
    """Per size on which Python does not raise: the inputs and Python's outputs."""
    refs = {}
    for n in sizes:
        args = inputs(n, seed * 1000 + n)
        try:
            refs[n] = (args, run(fn, args))
        except Exception:
            continue
    return refs


def _nested(report, a: str, b: str) -> bool:
    """Whether loop ``b`` lies inside ``a`` or ``a`` inside ``b``."""
    def ancestors(key: str) -> set[int]:
        out, p = set(), report.loop(key).parent
        while p is not None:
            out.add(p)
            p = report.loop(p).parent
        return out
    ia, ib = report.loop(a).index, report.loop(b).index
    return ia in ancestors(b) or ib in ancestors(a)


def candidate_sets(report) -> tuple[list[tuple[str, ...]], int, int]:
    par = [lp.id for lp in report.loops if lp.parallelizable]
    priv = [k for k in report.transforms.privatizable() if k not in par]
    ids = par + priv
    sets = [(k,) for k in ids]
    if len(ids) > 1:
        outer = [k for k in ids if not any(o != k and _nested(report, o, k) and
                                           report.loop(o).depth < report.loop(k).depth
                                           for o in ids)]
        if len(outer) > 1:
            sets.append(tuple(outer))
    return sets, len(par), len(priv)


def check(prog: Program, seed: int, sizes=SIZES, search: bool = False,
          minimal: bool = False, serial_first: bool = True, max_sets: int = 0) -> Stats:
    """Run one kernel; findings in ``Stats.findings`` (``minimal``: stop at the first).

    ``serial_first=False`` compiles the serial njit only when a variant fails to type (it then
    tells a typing finding from a kernel numba cannot compile at all); ``max_sets`` > 0 checks
    only that many loop sets, the largest first (the pytest's time budget)."""
    st = Stats(kernels=1)
    src = prog.source()
    fn = load(prog)
    refs = references(fn, seed, sizes)
    if not refs:
        st.no_valid_size = 1
        return st

    def finding(kind, loops, n=-1, err=0.0, detail=""):
        st.findings.append(Finding(kind, seed, tuple(loops), n,
                                   seed * 1000 + n if n >= 0 else -1, err, detail, src))

    try:
        report = offload.analyze(fn)
        sets, npar, npriv = candidate_sets(report)
    except Exception as exc:
        finding("crash", (), detail=f"analyze: {type(exc).__name__}: {exc}")
        return st
    st.loops, st.parallel, st.privatizable = len(report.loops), npar, npriv

    def variant(ids):
        try:
            return offload.transform(report, loops=list(ids)).compile(), None
        except Exception as exc:
            return None, exc

    def serial_ok() -> bool:
        """Checks the serial njit; False when it does not type (or crashed: a finding)."""
        serial, exc = variant(())
        if exc is not None:
            finding("crash", (), detail=f"transform serial: {type(exc).__name__}: {exc}")
            return False
        try:
            for n, (args, ref) in refs.items():
                err = compare(ref, run(serial, args))
                if err is not None:
                    finding("serial", (), n, err, "serial njit differs from Python")
                    break
        except Exception as exc:
            if _is_typing(exc):
                st.serial_untyped = 1
                return False
            finding("crash", (), detail=f"serial call: {type(exc).__name__}: {exc}")
            return False
        return True

    if serial_first and (not serial_ok() or (minimal and st.findings)):
        return st
    if max_sets:
        sets = sorted(sets, key=len, reverse=True)[:max_sets]
    for ids in sets:
        fnv, exc = variant(ids)
        if exc is not None:
            finding("crash", ids, detail=f"transform: {type(exc).__name__}: "
                    f"{str(exc).splitlines()[0][:300]}")
            continue
        st.variants += 1
        for n, (args, ref) in refs.items():
            try:
                got = run(fnv, args)
            except Exception as exc:
                kind = "typing" if _is_typing(exc) else "crash"
                if kind == "typing" and not serial_first and not serial_ok():
                    return st  # numba cannot compile the function at all: no finding
                finding(kind, ids, n, detail=f"call: {type(exc).__name__}: "
                        f"{str(exc).splitlines()[0][:300] if str(exc) else ''}")
                break
            st.calls += 1
            err = compare(ref, got)
            if err is not None:
                finding("wrong", ids, n, err, "parallel variant differs from Python")
                break
        if minimal and st.findings:
            return st

    if search and st.parallel + st.privatizable:
        st.searches = 1
        n0 = max(refs)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                plan = offload.search(fn, copy.deepcopy(refs[n0][0]), budget=4,
                                      progress=False)
                pf = plan.compile()
            n1 = n0 + 3
            args = inputs(n1, seed * 1000 + n1)
            ref = run(fn, args)
            err = compare(ref, run(pf, args))
            if err is not None:
                finding("search", (str(getattr(plan, "loops", "?")),), n1, err,
                        "plan.compile() differs from Python")
        except Exception as exc:
            finding("crash", ("search",), detail=f"search: {type(exc).__name__}: {exc}")
    return st


def _signature(f: Finding) -> str:
    """The exception's class in a finding's detail ('' for wrong results)."""
    m = re.search(r"(\w+(Error|Exception))", f.detail)
    return m.group(1) if m else ""


def minimize(prog: Program, seed: int, kind: str, budget_s: float = 90.0,
             signature: str = "") -> Program:
    """Delete nodes while a finding of ``kind`` (with an exception of class ``signature``)
    remains (greedy, within ``budget_s``)."""
    t0 = time.time()
    changed = True
    while changed and time.time() - t0 < budget_s:
        changed = False
        for cand in removals(prog):
            if time.time() - t0 > budget_s:
                break
            try:
                st = check(cand, seed, minimal=True)
            except Exception:
                continue
            if any(f.kind == kind and _signature(f) == signature for f in st.findings):
                prog, changed = cand, True
                break
    return prog


def save(out: str, prog: Program, f: Finding) -> str:
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, f"{f.kind}_seed{f.seed}.py")
    with open(path, "w") as fh:
        fh.write(f"# {f.kind}: loops {list(f.loops)} n={f.size} input_seed={f.input_seed} "
                 f"max_err={f.err:.3g}\n# {f.detail}\n"
                 f"# inputs: tests.fuzz.offload_programs.inputs(n, input_seed)\n"
                 "import numpy as np\n\n\n" + prog.source())
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--search-every", type=int, default=40,
                    help="run offload.search on every k-th kernel (0: never)")
    ap.add_argument("--minimize", type=float, default=60.0,
                    help="seconds to spend minimizing each finding (0: none)")
    ap.add_argument("--out", default="/tmp/hetlab-offload-fuzz")
    ap.add_argument("--serial", action="store_true",
                    help="check every serial njit first (else only when a variant fails to type)")
    ap.add_argument("--time-limit", type=float, default=0.0, help="stop after this many s")
    a = ap.parse_args(argv)
    import numba

    numba.set_num_threads(2)
    total = Stats()
    signatures: set[tuple[str, str]] = set()  # findings minimized already (kind, detail)
    t0 = time.time()
    for seed in range(a.seed, a.seed + a.count):
        if a.time_limit and time.time() - t0 > a.time_limit:
            break
        prog = generate(seed)
        try:
            st = check(prog, seed, search=bool(a.search_every) and seed % a.search_every == 0,
                       serial_first=a.serial)
        except Exception:
            traceback.print_exc()
            st = Stats(kernels=1, findings=[Finding("crash", seed, (), detail="driver",
                                                    source=prog.source())])
        total.add(st)
        for f in st.findings:
            print(f.text() if not known(f) else f.text().split("\n")[0], flush=True)
            small = prog
            sig = (f.kind, re.sub(r"[0-9]+", "#", f.detail))
            if known(f):
                print(f"  known: {known(f)}\n", flush=True)
                continue
            if a.minimize and sig not in signatures:
                signatures.add(sig)
                small = minimize(prog, seed, f.kind, a.minimize, _signature(f))
            print(f"  minimal reproducer: {save(a.out, small, f)}\n{small.source()}",
                  flush=True)
    kinds = {k: sum(f.kind == k and not known(f) for f in total.findings) for k in KINDS}
    kinds["known"] = sum(bool(known(f)) for f in total.findings)
    print(f"kernels {total.kernels} (seeds {a.seed}..{a.seed + total.kernels - 1}), "
          f"loops {total.loops}, parallel {total.parallel}, privatizable-only "
          f"{total.privatizable}, variants {total.variants}, variant calls {total.calls}, "
          f"searches {total.searches}, serial untyped {total.serial_untyped}, no valid size "
          f"{total.no_valid_size}, findings {kinds}, {time.time() - t0:.0f} s", flush=True)
    return 1 if total.findings else 0


if __name__ == "__main__":
    sys.exit(main())
