"""How the Numba CUDA kernels of every family are launched on CuPy arrays.

Shared by :mod:`hetlab.kernels.pointcloud.cupy`, :mod:`hetlab.kernels.sparse.cupy` and
:mod:`hetlab.kernels.quant.cupy`. Never imports CuPy itself: the array namespace comes from
the caller, and under Numba's CUDA simulator (NumPy arrays) arguments pass through unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["launch_setup"]


def launch_setup(xp: Any) -> tuple[Any, Any]:
    """Return ``(stream, to_kernel_arg)`` for launches on arrays of namespace ``xp``.

    On CuPy arrays the kernels run on CuPy's current stream, and each array is handed to
    Numba with ``as_cuda_array(a, sync=False)``: same stream, so already ordered, without the
    stream synchronization Numba's array-interface import does by default for every argument.
    On NumPy arrays (the simulator) a read-only array (a container's own, e.g. a CSR's
    indices) is handed over as a device copy: Numba copies every host argument back after a
    launch, which a read-only array refuses; inputs need no copy back.
    """
    if xp is np:
        def host_arg(a: Any) -> Any:
            if isinstance(a, np.ndarray) and not a.flags.writeable:
                from numba import cuda

                return cuda.to_device(a)
            return a

        return 0, host_arg
    from numba import cuda

    ptr = xp.cuda.get_current_stream().ptr
    stream = cuda.external_stream(ptr) if ptr else 0
    return stream, lambda a: cuda.as_cuda_array(a, sync=False)
