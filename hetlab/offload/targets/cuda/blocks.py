"""Function blocks on the GPU: a recognized nest becomes one CuPy call on device arrays.

In the cuda variant a chosen block (:mod:`hetlab.offload.analysis.blocks`) is treated like a kernel
by the transfer plan (its arrays join the region's device-resident set, copied in once and out
once), and its NumPy statement is rewritten for the device: every array name becomes the
device array (``_d_A`` when resident, ``_t_A`` when copied around the call), ``np.`` becomes
the array module ``_xp``:

========== ================================= ==========================================
pattern    generated statement               on CuPy
========== ================================= ==========================================
matmul     ``_d_C[:, :] += _d_A @ _d_B``     ``cupy.matmul`` → cuBLAS GEMM
matvec     ``_d_y[:] += _d_A @ _d_x``        cuBLAS GEMV
dot        ``s += _rt.to_scalar(_xp.dot(…))`` ``cupy.dot`` (cuBLAS), one 0-d result copied back
axpy       ``_d_y[:n] += a * _d_x``          one elementwise kernel
transpose  ``_d_B[:, :] = _d_A.T``           a transposing copy on the device
others     the numba block's NumPy code      ``_xp.outer``/``_xp.sum``/``reshape`` + ``@``
========== ================================= ==========================================

Every catalogue entry (:mod:`hetlab.offload.analysis.catalogue`) is NumPy code, so the same
rewrite serves all: GEMM with β is ``*=`` then ``+= … @ …`` (two cuBLAS-backed calls), a
GEMV pair two ``@``. A batched product or an epilogue keeps a host-side ``for`` loop over
device arrays: correct, and slow on a GPU (its per-element steps are device calls).

``_xp`` is a name the variant's namespace binds: ``cupy`` on a GPU. Bound to ``numpy`` (with
:class:`~hetlab.offload.targets.cuda.kernels.Transfers` handing out NumPy copies as the
"device" arrays), the same generated code runs on the CPU: an array-code check of the
generated statements and of the transfer plan around them, not a GPU run (its timings say
nothing about a GPU).
"""

from __future__ import annotations

import ast

from ...analysis.blocks import Block

__all__ = ["BlockLaunch"]


class _Device(ast.NodeTransformer):
    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == "np":
            return ast.copy_location(ast.Name("_xp", node.ctx), node)
        if node.id in self.names:
            return ast.copy_location(ast.Name(self.names[node.id], node.ctx), node)
        return node


def _target(stmt: ast.stmt) -> ast.AST | None:
    if isinstance(stmt, ast.AugAssign):
        return stmt.target
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        return stmt.targets[0]
    return None


class BlockLaunch:
    """One chosen function block in the cuda variant: arrays, written arrays, host statements.

    Has the attributes the transfer plan of
    :func:`~hetlab.offload.targets.cuda.kernels.cuda_source` reads from a kernel (``root``,
    ``arrays``, ``written``, ``launch``) and no kernel definition. A block of several
    statements (a GEMM with β, a GEMV pair, a product and its epilogue loop) keeps them in
    order; its temporaries (``_hb…``) stay on the device.
    """

    def __init__(self, k: int, root: ast.For, block: Block) -> None:
        self.k, self.root, self.block = k, root, block
        self.stmts = ast.parse(block.call).body
        self.arrays = sorted({n.value.id for n in ast.walk(root)
                              if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name)})
        self.scalars: set[str] = set()
        written: set[str] = set()
        for st in self.stmts:
            for node in ast.walk(st):
                t = _target(node) if isinstance(node, ast.stmt) else None
                if isinstance(t, ast.Name) and t.id in {n.id for n in ast.walk(root)
                                                        if isinstance(n, ast.Name)}:
                    self.scalars.add(t.id)  # a host scalar summed into (dot, sum)
                elif isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) \
                        and t.value.id in self.arrays:
                    written.add(t.value.id)
        self.written = sorted(written)
        self.scalar = next(iter(sorted(self.scalars)), None)

    def kernel_def(self) -> str:
        return ""

    def launch(self, resident: set[str]) -> list[ast.stmt]:
        naive = [a for a in self.arrays if a not in resident]
        names = {a: (f"_d_{a}" if a in resident else f"_t_{a}") for a in self.arrays}
        src = [f"_t_{a} = _rt.to_device({a})" for a in naive]
        for st in ast.parse(self.block.call).body:
            stmt = _Device(names).visit(st)
            t = _target(stmt)
            if isinstance(t, ast.Name) and t.id in self.scalars:
                # the 0-d device result comes back as a host scalar
                stmt.value = ast.Call(ast.Attribute(ast.Name("_rt", ast.Load()), "to_scalar",
                                                    ast.Load()), [stmt.value], [])
            src.append(ast.unparse(ast.fix_missing_locations(stmt)))
        src += [f"_rt.to_host(_t_{a}, {a})" for a in naive if a in self.written]
        return ast.parse("\n".join(src)).body
