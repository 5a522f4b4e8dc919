"""The GPU variant: numba.cuda kernels for the chosen loop nests, with data-transfer reduction.

Each chosen loop not inside another chosen loop becomes a kernel: one thread per iteration
(a 2-D grid when the loop's whole body is a second chosen loop whose bounds do not depend on
the first); inner loops run inside the thread. Reductions (``s += …``, min/max) and
array-element updates (``h[b] += 1``) run with atomics
(:mod:`hetlab.offload.targets.cuda.atomics`); a reduction scalar lives in a 1-element device
array for the launch. Chosen function blocks (matmul, dot, …) become CuPy calls on the device
arrays (:mod:`hetlab.offload.targets.cuda.blocks`), inside the same transfer plan. The rest of
the function stays Python on the host and launches the kernels. On a machine with a GPU the
arrays are CuPy arrays (numba.cuda kernels take them through ``__cuda_array_interface__``);
with ``NUMBA_ENABLE_CUDASIM=1`` the same code runs in numba's CUDA simulator on NumPy arrays.

Data-transfer reduction (Yamato 2018): consecutive top-level statements that contain kernels
form a region; an array used by the region's kernels and by no host code of the region is
copied to the device once before it and back once after it (if written), instead of around
every launch. ``transfers="naive"`` generates the per-launch copies, for comparison; both count
transfers and bytes in :class:`Transfers`.
"""

from __future__ import annotations

import ast
import copy
import os
from dataclasses import dataclass
from typing import Any

from ...analysis.report import Report
from ..base import for_nodes
from .atomics import Atomics, atomic_plan, gpu_offloadable, rewrite_kernel_body

__all__ = ["Transfers", "cuda_source", "cuda_ready", "gpu_loops"]

_TPB, _TILE = 128, 16
_SKIP = frozenset({"range", "prange", "min", "max", "abs", "int", "float", "len", "bool",
                   "round", "pow", "cuda"})


def cuda_ready() -> str | None:
    """Why numba.cuda kernels cannot run here (None when a GPU or the simulator is there)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return None
    from ....core.registry import get_backend

    return get_backend("cupy").why_not()


@dataclass
class Transfers:
    """Host↔device copies made by a GPU variant: counts and bytes each way.

    ``array_module``: the module whose arrays are the "device" arrays. None (default): CuPy
    on a GPU, numba's simulated device arrays under ``NUMBA_ENABLE_CUDASIM=1``. ``numpy``:
    NumPy copies stand in for device arrays (the array-code check of function blocks: it
    checks the generated code, not the GPU).
    """

    copies_in: int = 0
    copies_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    array_module: Any = None

    def reset(self) -> None:
        self.copies_in = self.copies_out = self.bytes_in = self.bytes_out = 0

    @property
    def copies(self) -> int:
        return self.copies_in + self.copies_out

    @property
    def bytes(self) -> int:
        return self.bytes_in + self.bytes_out

    def to_device(self, host: Any) -> Any:
        self.copies_in += 1
        self.bytes_in += int(host.nbytes)
        if self.array_module is not None:
            return self.array_module.array(host, copy=True)
        if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
            from numba import cuda

            return cuda.to_device(host)
        import cupy

        return cupy.asarray(host)

    def to_host(self, dev: Any, host: Any) -> None:
        self.copies_out += 1
        self.bytes_out += int(host.nbytes)
        if self.array_module is not None:
            host[...] = dev
        elif hasattr(dev, "copy_to_host"):
            host[...] = dev.copy_to_host()
        else:
            import cupy

            host[...] = cupy.asnumpy(dev)

    def scalar_to_device(self, value: Any) -> Any:
        """A reduction scalar as a 1-element device array (initialised from the host value)."""
        import numpy as np

        return self.to_device(np.array([value]))

    def scalar_to_host(self, dev: Any) -> Any:
        """The reduction's result: element 0 of a 1-element device array, copied back once."""
        import numpy as np

        host = np.empty(1, dtype=dev.dtype)
        self.to_host(dev, host)
        return host[0]

    def to_scalar(self, dev: Any) -> Any:
        """A 0-d device result (``xp.dot``) as a host scalar: one copy back."""
        self.copies_out += 1
        self.bytes_out += int(dev.dtype.itemsize)
        return dev.item()


def gpu_loops(report: Report) -> list[str]:
    """Loops a kernel can be made of: parallel loops, ``+``/min/max reductions and loops whose
    only carried dependences are array-element updates (both run with atomics)."""
    return list(gpu_offloadable(report))


def _loads(node: ast.AST) -> list[str]:
    seen: list[str] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in seen:
            seen.append(n.id)
    return seen


def _host_uses(node: ast.AST, skip: set[int]) -> set[str]:
    """Names the host code under ``node`` uses as values (``x.shape`` excepted), kernels skipped."""
    out: set[str] = set()

    def visit(n: ast.AST) -> None:
        if id(n) in skip:
            return
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                and n.attr in ("shape", "size", "ndim", "dtype"):
            return
        if isinstance(n, ast.Name):
            out.add(n.id)
        for c in ast.iter_child_nodes(n):
            visit(c)

    visit(node)
    return out


class _Kernel:
    def __init__(self, k: int, root: ast.For, inner: ast.For | None, report: Report,
                 prefix: str, ids: dict[int, str]) -> None:
        self.k, self.root, self.inner = k, root, inner
        self.name = f"_hetlab_{prefix}_k{k}"
        nest = inner if inner is not None else root
        self.atomics = Atomics()
        for node in (root, inner):
            if node is not None:
                got = atomic_plan(report, ids[id(node)])
                self.atomics = self.atomics.merge(got or Atomics())
        self.body = rewrite_kernel_body(nest.body, self.atomics) if self.atomics \
            else list(nest.body)
        body_mod = ast.Module(body=self.body, type_ignores=[])
        stores = {n.id for n in ast.walk(body_mod) if isinstance(n, ast.Name)
                  and isinstance(n.ctx, ast.Store)}
        ns = report.source.namespace
        loop_vars = {root.target.id} | ({inner.target.id} if inner else set())  # type: ignore
        self.params = [n for n in _loads(body_mod) if n not in stores | loop_vars | _SKIP
                       and not (n in ns and type(ns[n]).__name__ == "module")]
        self.arrays = sorted(({n.value.id for n in ast.walk(body_mod)
                               if isinstance(n, (ast.Subscript, ast.Attribute))
                               and isinstance(n.value, ast.Name)}
                              | set(self.atomics.arrays)) & set(self.params)
                             - {f"_r_{s}" for s in self.atomics.scalars})
        self.written = sorted({t.value.id for n in ast.walk(body_mod)
                               for t in _targets(n) if isinstance(t, ast.Subscript)
                               and isinstance(t.value, ast.Name)} | set(self.atomics.arrays))

    def kernel_def(self) -> str:
        loops = [self.root] + ([self.inner] if self.inner else [])
        extra = [f"_lo{d}, _n{d}" for d in range(len(loops))]
        head = f"@cuda.jit\ndef {self.name}({', '.join([*self.params, *extra])}):\n"
        if len(loops) == 1:
            lines = ["    _g0 = cuda.grid(1)", "    if _g0 < _n0:"]
        else:
            lines = ["    _g0, _g1 = cuda.grid(2)", "    if _g0 < _n0 and _g1 < _n1:"]
        for d, lp in enumerate(loops):
            lines.append(f"        {lp.target.id} = _lo{d} + _g{d} * {_step(lp)}")  # type: ignore
        body = ast.unparse(ast.Module(body=self.body, type_ignores=[]))
        lines += ["        " + ln for ln in body.splitlines()]
        return head + "\n".join(lines) + "\n"

    def launch(self, resident: set[str]) -> list[ast.stmt]:
        loops = [self.root] + ([self.inner] if self.inner else [])
        src = []
        for d, lp in enumerate(loops):
            args = lp.iter.args  # type: ignore[attr-defined]
            lo = ast.unparse(args[0]) if len(args) > 1 else "0"
            src.append(f"_lo{d}_{self.k} = {lo}")
            src.append(f"_n{d}_{self.k} = len(range({', '.join(ast.unparse(a) for a in args)}))")
        sizes = [f"_n{d}_{self.k}" for d in range(len(loops))]
        call_args = []
        naive = [a for a in self.arrays if a not in resident]
        for p in self.params:
            call_args.append(f"_d_{p}" if p in resident else f"_t_{p}" if p in naive else p)
        call_args += [f"_lo{d}_{self.k}, _n{d}_{self.k}" for d in range(len(loops))]
        if len(loops) == 1:
            cfg = f"[({sizes[0]} + {_TPB - 1}) // {_TPB}, {_TPB}]"
        else:
            cfg = (f"[(({sizes[0]} + {_TILE - 1}) // {_TILE}, ({sizes[1]} + {_TILE - 1}) // "
                   f"{_TILE}), ({_TILE}, {_TILE})]")
        body = [f"_t_{a} = _rt.to_device({a})" for a in naive]
        body += [f"_r_{s} = _rt.scalar_to_device({s})" for s in self.atomics.scalars]
        body.append(f"{self.name}{cfg}({', '.join(call_args)})")
        body += [f"{s} = _rt.scalar_to_host(_r_{s})" for s in self.atomics.scalars]
        body += [f"_rt.to_host(_t_{a}, {a})" for a in naive if a in self.written]
        src.append(f"if {' > 0 and '.join(sizes)} > 0:")
        src += ["    " + b for b in body]
        return ast.parse("\n".join(src)).body


def _targets(n: ast.AST) -> list[ast.AST]:
    if isinstance(n, ast.Assign):
        return list(n.targets)
    if isinstance(n, (ast.AugAssign, ast.AnnAssign)):
        return [n.target]
    return []


def _step(lp: ast.For) -> str:
    args = lp.iter.args  # type: ignore[attr-defined]
    return ast.unparse(args[2]) if len(args) == 3 else "1"


def _two_d(root: ast.For, chosen_nodes: set[int]) -> ast.For | None:
    if len(root.body) != 1 or not isinstance(root.body[0], ast.For):
        return None
    inner = root.body[0]
    if id(inner) not in chosen_nodes:
        return None
    uses = {n.id for a in inner.iter.args for n in ast.walk(a)  # type: ignore[attr-defined]
            if isinstance(n, ast.Name)}
    return None if root.target.id in uses else inner  # type: ignore[attr-defined]


def _expand(stmts: list[ast.stmt], sentinel: dict[str, list[ast.stmt]]) -> None:
    k = 0
    while k < len(stmts):
        s = stmts[k]
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) \
                and s.value.value in sentinel:
            new = sentinel[s.value.value]
            stmts[k:k + 1] = new
            k += len(new)
            continue
        for field_ in ("body", "orelse"):
            _expand(getattr(s, field_, []) or [], sentinel)
        k += 1


def cuda_source(report: Report, chosen: tuple[str, ...], transfers: str = "reduced",
                blocks: tuple[str, ...] = ()) -> str:
    """Source of the CUDA variant offloading the nests rooted at ``chosen`` loops, with the
    function ``blocks`` replaced by array-module (CuPy) calls."""
    from .blocks import BlockLaunch

    tree = copy.deepcopy(report.source.tree)
    nodes = {report.loops[k].id: node for k, node in enumerate(for_nodes(tree.body))}
    ids = {id(node): key for key, node in nodes.items()}
    chosen_nodes = {id(nodes[c]) for c in chosen}
    block_at = {id(nodes[report.block(b).nest]): report.block(b) for b in blocks}
    kernels: list[Any] = []
    parent_of: dict[int, tuple[list[ast.stmt], int]] = {}

    def collect(stmts: list[ast.stmt]) -> None:
        for i, s in enumerate(stmts):
            if isinstance(s, ast.For) and id(s) in block_at:
                kernels.append(BlockLaunch(len(kernels) + 1, s, block_at[id(s)]))
                parent_of[id(s)] = (stmts, i)
                continue
            if isinstance(s, ast.For) and id(s) in chosen_nodes:
                kernels.append(_Kernel(len(kernels) + 1, s, _two_d(s, chosen_nodes), report,
                                       report.name, ids))
                parent_of[id(s)] = (stmts, i)
                continue
            for field_ in ("body", "orelse"):
                collect(getattr(s, field_, []) or [])

    collect(tree.body)
    # regions: runs of consecutive top-level statements holding kernels
    roots = {id(k.root): k for k in kernels}
    holds = [[k for k in kernels if any(id(n) == id(k.root) for n in ast.walk(s))]
             for s in tree.body]
    regions: list[tuple[int, int]] = []
    for i, ks in enumerate(holds):
        if ks and regions and regions[-1][1] == i - 1:
            regions[-1] = (regions[-1][0], i)
        elif ks:
            regions.append((i, i))
    resident_of: dict[int, set[str]] = {}
    plan: list[tuple[int, int, list[str], list[str]]] = []
    for a, b in regions:
        ks = [k for i in range(a, b + 1) for k in holds[i]]
        host: set[str] = set()
        for s in tree.body[a:b + 1]:
            host |= _host_uses(s, set(roots))
        arrays = sorted({x for k in ks for x in k.arrays})
        resident = [] if transfers == "naive" else [x for x in arrays if x not in host]
        written = [x for x in resident if any(x in k.written for k in ks)]
        for k in ks:
            resident_of[k.k] = set(resident)
        plan.append((a, b, resident, written))
    sentinel = {}
    for k in kernels:  # one statement for one: region indices stay valid
        stmts, i = parent_of[id(k.root)]
        stmts[i] = ast.Expr(ast.Constant(f"__hetlab_kernel_{k.k}__"))
        sentinel[f"__hetlab_kernel_{k.k}__"] = k.launch(resident_of[k.k])
    for a, b, resident, written in reversed(plan):
        tree.body[b + 1:b + 1] = ast.parse("\n".join(
            f"_rt.to_host(_d_{x}, {x})" for x in written)).body
        tree.body[a:a] = ast.parse("\n".join(
            f"_d_{x} = _rt.to_device({x})" for x in resident)).body
    _expand(tree.body, sentinel)
    tree.decorator_list = []
    host_src = ast.unparse(ast.fix_missing_locations(tree))
    desc = ", ".join(chosen) or "none"
    head = f"# hetlab.offload: CUDA variant of {report.name}; kernels for {desc}; "
    if blocks:
        head += "function blocks " + ", ".join(
            f"{b} ({report.block(b).pattern} at {report.block(b).nest})" for b in blocks) + \
            " as array-module calls (_xp: cupy on a GPU); "
    head += f"transfers: {transfers}\nfrom numba import cuda\n\n\n"
    defs = [d for d in (k.kernel_def() for k in kernels) if d]
    return head + "\n\n".join(defs) + "\n\n" + host_src + "\n"
