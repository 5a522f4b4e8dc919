"""The FPGA variant: HLS C++ kernels for chosen nests, run through the emulator's C-simulation,
timed by the FPGA timing model (**modeled**, never measured).

There is no board here. A variant is

* ``source``: the Vitis-HLS-style C++ of each chosen nest (:mod:`hetlab.offload.targets.fpga.hls`);
* ``host_source``: the function as a numba ``@njit`` (``prange`` on the CPU plan's loops outside
  the nests) in which each nest is replaced by a bounds check of its affine subscripts (a
  Python negative index or an overrun raises, it never reaches C) and a ctypes call of the
  kernel's C-simulation — the kernel source compiled by g++ through
  :mod:`hetlab.fpga.csim`, the emulator's C-simulation path. That compiled kernel is the
  functional model, verified against the original like every candidate.

Time of one call = the host part (measured: the call's wall time minus the C-simulation's
own time, timed inside the library) + for each nest, calls × the modeled kernel time from
:func:`hetlab.fpga.timing.model` on a manifest describing the kernel as the overlays'
manifests do: ``load_<A>`` / ``store_<A>`` loops (``m_axi`` bursts, one element per cycle,
bounded by the port bandwidth of the board: ``min(data_bits · f, HP port, DDR)``), the nest's
loops (pipelined innermost loop: ``depth + II·(⌈trip/U⌉ − 1)`` cycles; an outer loop:
``trip · (overhead + inner)``), and the MMIO cost of the launch (2 writes per pointer, 1 per
scalar, ap_start, one ap_done poll). On the modeled boards (PYNQ-Z2, KV260) the card reads
the host's DDR, so the host↔card transfer of a nest's arrays *is* the load/store bursts.
Board figures (clock, HP port, DDR, MMIO cost, DSP and BRAM counts) come from the overlays'
manifests. Estimates of this module, each labelled in the docs: pipeline depth ``3 + 4 ·``
(arithmetic depth of the innermost body), outer-loop overhead 4 cycles, DSPs per float
operator. Every figure it returns says ``source="modeled"``.
"""

from __future__ import annotations

import ast
import ctypes
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ....errors import InvalidInputError
from ...analysis.report import Report
from ...front.loops import build_tree
from ..base import Variant, alias_guard, for_nodes, numba_source
from .hls import CARRIED_II, harness_source, kernel_name, kernel_source, param_names
from .nests import Nest

__all__ = ["FpgaVariant", "fpga_variant", "model_nest", "fits", "BOARD_OVERLAY"]

#: the overlay whose manifest supplies the board figures and m_axi latency
BOARD_OVERLAY = "spmv"
#: estimates (labelled in docs/offload.md)
OUTER_OVERHEAD = 4
_DSP = {"double": (11, 3), "float": (3, 2), "int64_t": (4, 0), "int32_t": (3, 0)}
_BRAM_BYTES = 36 * 1024 // 8
_ITEM = {"double": 8, "float": 4, "int64_t": 8, "int32_t": 4}


def _ids(report: Report) -> dict[int, str]:
    return {id(n): report.loops[k].id for k, n in enumerate(for_nodes(report.source.tree.body))}


def _verdicts(report: Report) -> dict[str, str]:
    return {lp.id: lp.verdict for lp in report.loops}


def _leaves(node: ast.For) -> bool:
    return not any(isinstance(n, ast.For) for b in node.body for n in ast.walk(b))


def _height(node: ast.AST) -> int:
    kids = [_height(c) for c in ast.iter_child_nodes(node) if not isinstance(c, ast.Subscript)]
    own = 1 if isinstance(node, (ast.BinOp, ast.Call, ast.AugAssign)) else 0
    return own + max(kids, default=0)


def _ops(node: ast.AST) -> tuple[int, int]:
    muls = sum(isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Mult, ast.Div))
               for n in ast.walk(node))
    adds = sum((isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub)))
               or isinstance(n, ast.AugAssign) for n in ast.walk(node))
    return muls, adds


def _loop_spec(node: ast.For, nest: Nest, ids: dict[int, str], verdicts: dict[str, str],
               unroll: int) -> dict[str, Any]:
    lid = ids[id(node)]
    trip = nest.trips[lid]
    if _leaves(node):
        par = verdicts[lid] == "parallel"
        u = unroll if par else 1
        depth = 3 + 4 * max((_height(s) for s in node.body), default=0)
        return {"name": lid, "phase": "compute", "pipelined": True,
                "trip": math.ceil(trip / u), "ii": 1 if par else CARRIED_II, "depth": depth}
    inner = [_loop_spec(n, nest, ids, verdicts, unroll) for b in node.body
             for n in ast.walk(b) if isinstance(n, ast.For) and _parent_for(node, n)]
    return {"name": lid, "phase": "compute", "pipelined": False, "trip": trip,
            "overhead": OUTER_OVERHEAD, "inner": inner}


def _parent_for(outer: ast.For, node: ast.For) -> bool:
    """Whether ``node`` is a loop directly inside ``outer`` (no loop between them)."""
    def search(stmts: list[ast.stmt]) -> bool:
        for s in stmts:
            if s is node:
                return True
            if isinstance(s, ast.If) and (search(s.body) or search(s.orelse)):
                return True
        return False

    return search(outer.body)


def _manifest(report: Report, nest: Nest, unroll: int) -> Any:
    from ....fpga.manifest import Manifest, load_manifest

    base = load_manifest(BOARD_OVERLAY)
    lat = int(base.data["m_axi"]["latency_cycles"])
    item = max(_ITEM[c] for c, *_r in nest.arrays.values())
    loads, stores = [], []
    for k, (a, (c, shape, _r, written)) in enumerate(nest.arrays.items()):
        size = int(np.prod(shape))
        nbytes = size * _ITEM[c]
        spec = {"pipelined": True, "trip": size, "ii": 1, "depth": lat + 2,
                "port": f"gmem{k}", "bytes": nbytes}
        loads.append({"name": f"load_{a}", "phase": "transfer_in", **spec})
        if written:
            stores.append({"name": f"store_{a}", "phase": "transfer_out", **spec})
    compute = _loop_spec(nest.node, nest, _ids(report), _verdicts(report), unroll)
    pointers = len(nest.arrays) + len(nest.reductions)
    scalars = sum(len(sh) for _c, sh, *_r in nest.arrays.values()) + len(nest.shapes) \
        + len(nest.scalars)
    data = {"overlay": {"name": kernel_name(report.name, nest)}, "limits": {},
            "m_axi": {"data_bits": 8 * item, "latency_cycles": lat},
            "loops": [*loads, compute, *stores],
            "launch": {"mmio_writes": 2 * pointers + scalars + 1, "mmio_reads": 1},
            "boards": base.data["boards"]}
    return Manifest(Path("."), data)


def model_nest(report: Report, nest: Nest, unroll: int, board: str) -> Any:
    """The modeled time of one call of ``nest``'s kernel on ``board`` (``ModeledTime``)."""
    from ....fpga import timing

    return timing.model(_manifest(report, nest, unroll), board)


def fits(report: Report, nest: Nest, unroll: int, board: str) -> str:
    """Why the kernel does not fit ``board`` (BRAM for the buffers, DSPs for the unrolled
    innermost loops); "" when it fits (resource estimates, not synthesized)."""
    from ....fpga.manifest import load_manifest

    b = load_manifest(BOARD_OVERLAY).board(board)
    need = sum(int(np.prod(sh)) * _ITEM[c] for c, sh, *_r in nest.arrays.values())
    have = int(b["bram36"]) * _BRAM_BYTES
    if need > have:
        return (f"buffers {need / 1024:.0f} KiB exceed the {have / 1024:.0f} KiB of BRAM on "
                f"{board}")
    ctype = next(iter(nest.arrays.values()))[0]
    mul, add = _DSP.get(ctype, (11, 3))
    dsp = 0
    for n in ast.walk(nest.node):
        if isinstance(n, ast.For) and _leaves(n):
            m, a = _ops(ast.Module(body=n.body, type_ignores=[]))
            par = _verdicts(report)[_ids(report)[id(n)]] == "parallel"
            dsp += (unroll if par else 1) * (m * mul + a * add)
    if dsp > int(b["dsp"]):
        return f"about {dsp} DSPs (estimate) exceed the {b['dsp']} of {board}"
    return ""


# -- host code -----------------------------------------------------------------------------
def _checks(report: Report, nest: Nest) -> list[str]:
    """njit lines: trip counts of the nest's loops and a range check of every subscript."""
    nodes = list(for_nodes(report.source.tree.body))
    tree = build_tree(report.source.tree, report.source.namespace, report.source.first_line)
    idx = {report.loop(k).index for k in nest.loops}
    var_of = {report.loop(k).var: k for k in nest.loops}
    lines = []
    for k in nest.loops:
        it = nodes[report.loop(k).index].iter
        args = [ast.unparse(a) for a in it.args]  # type: ignore[attr-defined]
        lo = args[0] if len(args) > 1 else "0"
        step = args[2] if len(args) == 3 else "1"
        lines += [f"_lo_{k} = {lo}", f"_tr_{k} = len(range({', '.join(args)}))",
                  f"_la_{k} = _lo_{k} + ({step}) * (_tr_{k} - 1)"]
    seen = set()
    for a in tree.accesses:
        if not a.loops or a.loops[-1] not in idx or (a.array, a.text) in seen:
            continue
        seen.add((a.array, a.text))
        around = [report.loops[i].id for i in a.loops if i in idx]
        for d, aff in enumerate(a.subs):
            lo_t, hi_t = [str(aff.const)] * bool(aff.const), [str(aff.const)] * bool(aff.const)
            for key, c in aff.coefs.items():
                m = "" if c == 1 else f"{c} * "
                if key in var_of:
                    k = var_of[key]
                    if c > 0:
                        lo_t.append(f"{m}_lo_{k}" if report.loop(k).var and _up(nodes, report,
                                                                                k) else
                                    f"min({m}_lo_{k}, {m}_la_{k})")
                    else:
                        lo_t.append(f"min({m}_lo_{k}, {m}_la_{k})")
                    hi_t.append(f"max({m}_lo_{k}, {m}_la_{k})")
                else:
                    lo_t.append(f"{m}({key})")
                    hi_t.append(f"{m}({key})")
            lo_t, hi_t = lo_t or ["0"], hi_t or ["0"]
            cond = " and ".join(f"_tr_{k} > 0" for k in around) or "True"
            lines += [f"if {cond}:",
                      f"    if {' + '.join(lo_t)} < 0 or {' + '.join(hi_t)} >= "
                      f"{a.array}.shape[{d}]:",
                      f"        raise IndexError('offload fpga: nest {nest.root} would index "
                      f"{a.array} out of range (or wrap a negative index)')"]
    return lines


def _up(nodes: list[ast.For], report: Report, k: str) -> bool:
    """Whether loop ``k`` counts up (step 1 or a positive constant)."""
    it = nodes[report.loop(k).index].iter
    args = it.args  # type: ignore[attr-defined]
    return len(args) < 3 or (isinstance(args[2], ast.Constant) and args[2].value > 0)


def _call(report: Report, nest: Nest) -> str:
    lines = _checks(report, nest)
    for s in nest.reductions:
        lines += [f"_io_{s} = _np.empty(1)", f"_io_{s}[0] = {s}"]
    lines.append(f"_hl_{kernel_name(report.name, nest)}({', '.join(param_names(nest))})")
    lines += [f"{s} = _io_{s}[0]" for s in nest.reductions]
    return "\n".join(lines)


@dataclass
class FpgaVariant(Variant):
    """A variant whose chosen nests run as FPGA kernels (C-simulation + modeled time)."""

    host_source: str = ""
    nests: list[Nest] = field(default_factory=list, repr=False)
    unroll: dict[str, int] = field(default_factory=dict)
    board: str = "pynq-z2"
    #: loops the host code runs with ``prange`` (the CPU plan's, outside the nests)
    cpu_loops: tuple[str, ...] = ()
    _lib: Any = field(default=None, repr=False)

    def library(self) -> ctypes.CDLL:
        """The C-simulation library of the kernels (+ harness), built by g++ and cached."""
        if self._lib is None:
            from ....fpga import csim
            from ....fpga.manifest import Manifest

            text = self.functional_source() + "\n" + harness_source(self.name, self.nests)
            h = hashlib.sha256(text.encode()).hexdigest()[:16]
            root = csim.cache_dir() / "offload" / h
            root.mkdir(parents=True, exist_ok=True)
            (root / "kernels.cpp").write_text(text)
            m = Manifest(root, {"overlay": {
                "name": f"offload_{self.name}", "hls_sources": ["kernels.cpp"],
                "cflags": ["-std=c++14", "-O2", "-fPIC", "-ffp-contract=off", "-Wall",
                           "-Wno-unknown-pragmas", "-Wno-unused-label",
                           "-Wno-unused-variable", "-Wno-unused-function"]}})
            self._lib = csim.load_library(m)
        return self._lib

    def functional_source(self) -> str:
        """The kernels with unroll factor 1 (g++ ignores the pragma: the same C++ as
        :attr:`source` apart from the ``UNROLL`` lines)."""
        report_ids, verdicts = self.namespace["_hl_ids"], self.namespace["_hl_verdicts"]
        return "\n".join(kernel_source(self.name, n, report_ids, verdicts, 1)
                         for n in self.nests)

    def _build(self) -> Any:
        if self._compiled is None:
            lib = self.library()
            ns = self.namespace
            for n in self.nests:
                kn = kernel_name(self.name, n)
                f = getattr(lib, f"hl_call_{kn}")
                types = [ctypes.c_void_p] * (len(n.arrays) + len(n.reductions))
                types += [ctypes.c_int64] * (sum(len(sh) for _c, sh, *_r in n.arrays.values())
                                             + len(n.shapes))
                types += [ctypes.c_int64 if k == "i" else ctypes.c_double
                          for k in n.scalars.values()]
                f.argtypes, f.restype = types, None
                ns[f"_hl_{kn}"] = f
            ns["_np"] = np
            exec(compile(self.host_source, f"<hetlab.offload fpga {self.name}>", "exec"), ns)
            jitted = ns[self.name]
            guards = _guards(self.nests)

            def call(*args: Any) -> Any:
                bound = dict(zip(ns["_hl_params"], args, strict=False))
                for name, (dtype, size) in guards.items():
                    a = bound.get(name)
                    if not (isinstance(a, np.ndarray) and str(a.dtype) == dtype
                            and a.flags.c_contiguous and a.size <= size):
                        raise InvalidInputError(
                            f"offload fpga: {name} must be a C-contiguous {dtype} array of at "
                            f"most {size} elements (what the kernel was generated for); got "
                            f"{getattr(a, 'dtype', type(a).__name__)} "
                            f"{getattr(a, 'shape', '')}.")
                return jitted(*args)

            self._compiled = call
        return self._compiled

    def stats(self) -> tuple[float, list[int]]:
        """C-simulation seconds and calls per nest since the last :meth:`reset`."""
        out = (ctypes.c_double * (len(self.nests) + 1))()
        self.library().hl_stats(out)
        return out[0], [int(x) for x in out[1:]]

    def reset(self) -> None:
        self.library().hl_reset()

    def models(self) -> dict[str, Any]:
        """Modeled time of one kernel call per nest (``ModeledTime``, source="modeled")."""
        rep = self.namespace["_hl_report"]
        return {n.root: model_nest(rep, n, self.unroll.get(n.root, 1), self.board)
                for n in self.nests}


_CT = {"double": "float64", "float": "float32", "int64_t": "int64", "int32_t": "int32"}


def _guards(nests: list[Nest]) -> dict[str, tuple[str, int]]:
    out: dict[str, tuple[str, int]] = {}
    for n in nests:
        for a, (c, shape, *_r) in n.arrays.items():
            out[a] = (_CT[c], int(np.prod(shape)))
    return out


def fpga_variant(report: Report, nests: list[Nest], unroll: dict[str, int], *,
                 cpu_loops: tuple[str, ...] = (), blocks: tuple[str, ...] = (),
                 board: str = "pynq-z2") -> FpgaVariant:
    """The FPGA variant running ``nests`` as kernels (``unroll``: factor per nest root) and
    the rest as the numba variant with ``prange`` on ``cpu_loops`` and ``blocks`` replaced."""
    ids, verdicts = _ids(report), _verdicts(report)
    source = "\n".join(kernel_source(report.name, n, ids, verdicts, unroll.get(n.root, 1))
                       for n in nests)
    header = (f"# hetlab.offload: FPGA host code of {report.name}; kernels for "
              f"{', '.join(n.root for n in nests)} (C-simulation; time modeled)")
    host = numba_source(report, cpu_loops, blocks=blocks, header=header,
                        replace={n.root: _call(report, n) for n in nests})
    ns = dict(report.source.namespace)
    ns.update(_hl_ids=ids, _hl_verdicts=verdicts, _hl_report=report,
              _hl_params=list(report.params))
    return FpgaVariant(report.name, "fpga", tuple(n.root for n in nests), source, ns,
                       blocks=blocks, host_source=host, nests=list(nests),
                       unroll=dict(unroll), board=board, cpu_loops=tuple(cpu_loops),
                       guard=alias_guard(report))
