"""A software-prefetch intrinsic for numba kernels (``llvm.prefetch``: ``prefetcht0`` on x86).

Numba has no prefetch of its own. Sparse kernels stream their arrays through short loops whose
trip counts vary row by row; the hardware prefetchers follow each stream only within a 4 KiB
page and restart at every page boundary, so a core keeps few misses in flight. Asking for lines
a few KiB ahead keeps more of them in flight (measured on the 3-D Laplacian SpMV: +30%, see
:mod:`hetlab.kernels.sparse.numba`).

A prefetch never faults, so ``prefetch(a, i)`` takes any ``i``, past the end of ``a`` too (the
address is computed without a bounds check or a negative-index wraparound); it changes no value
and has no effect on results.
"""

from __future__ import annotations

from typing import Any

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

__all__ = ["prefetch"]


@intrinsic
def prefetch(typingctx: Any, arr: Any, index: Any) -> Any:  # pragma: no cover - compiled
    """Prefetch the cache line holding ``arr[index]`` into all cache levels (read access).

    Parameters
    ----------
    arr : 1-D numba array
    index : integer (an unsigned one avoids sign extension)
    """
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(index, types.Integer)):
        return None
    sig = types.void(arr, index)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        aryty, idxty = signature.args
        ary = context.make_array(aryty)(context, builder, args[0])
        # to intp first: zero-extends an unsigned index (get_item_pointer sign-extends)
        idx = context.cast(builder, args[1], idxty, types.intp)
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [idx], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0i8")
        # read (0), keep in all levels (locality 3), data cache (1)
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()

    return sig, codegen
