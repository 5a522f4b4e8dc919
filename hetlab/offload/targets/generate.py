"""``offload.transform``: the variant of a function offloading chosen loops to a target."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..analysis.report import Report, analyze
from .base import Variant, alias_guard
from .registry import get_target

__all__ = ["transform"]


def transform(fn: Callable[..., Any] | Report, loops: Iterable[str | int] = (), *,
              target: str = "numba", parallel: bool | None = None,
              transfers: str = "reduced", blocks: Iterable[str | int] = (),
              array_module: Any = None, args: Any = None, unroll: int | dict[str, int] = 1,
              board: str | None = None) -> Variant:
    """Generate the variant of ``fn`` that offloads ``loops`` to ``target``.

    Parameters
    ----------
    fn : function or Report
        The function (or its :func:`analyze` report).
    loops : iterable of str or int
        Loop ids (``"L2"``) or indices to run in parallel; each must be parallelizable.
        Empty: the serial ``njit`` variant. numba also takes option genes here: tile sizes
        (``"L1:t1"``) and ``"fp:reassoc"`` (compile with ``fastmath={'contract',
        'reassoc'}``: sums reordered and vectorized, results differ in the last bits).
    target : {"numba", "cupy", "fpga"} (aliases "cuda", "gpu" for "cupy")
        ``"numba"``: ``njit(parallel=True)`` with ``prange`` on the chosen loops (many-core
        CPU). ``"cupy"`` (the GPU; recorded as ``"cuda"`` in ``variant.target``): a numba.cuda
        kernel per chosen nest (parallel loops; reductions and array updates with atomics),
        launched from the host Python code on CuPy arrays, or in numba's simulator under
        ``NUMBA_ENABLE_CUDASIM=1`` (see :mod:`hetlab.offload.targets.cuda.kernels`).
        ``"fpga"``: ``loops`` are nest roots (outermost parallelizable loops); each nest becomes
        a Vitis-HLS-style C++ kernel run through the emulator's C-simulation from an ``njit``
        host, its time modeled (:mod:`hetlab.offload.targets.fpga.variant`); ``variant.source``
        is the C++, ``variant.host_source`` the host code, ``variant.models()`` the modeled times.
    parallel : bool, optional
        numba only: force ``parallel=`` (``True`` with no loops gives numba's own automatic
        parallelization, a baseline).
    transfers : {"reduced", "naive"}
        cuda only: arrays kept on the device across a region of offloaded nests (copied in
        once, out once), or copied around every launch; ``variant.transfers`` counts them.
    blocks : iterable of str or int
        Function blocks (``report.blocks`` ids ``"B1"``, or the id of the nest) whose nest is
        replaced by a library call. numba: its NumPy/BLAS statement (``C[:, :] += A @ B``,
        ``s += np.dot(x, y)``; ``+=`` and ``=`` kept as in the loops) inside the same
        ``njit`` (float arrays: numba's ``@`` has no integer version). cuda: the same
        statement on the device arrays through the array module ``_xp`` (CuPy: cuBLAS for
        ``@`` and ``dot``), inside the variant's transfer plan
        (:mod:`hetlab.offload.targets.cuda.blocks`). A loop inside a chosen block cannot be in
        ``loops``.
    args : tuple, optional
        fpga only (required): arguments the kernels are generated for (dtypes, sizes).
    unroll : int or dict, default 1
        fpga only: ``UNROLL`` factor of the innermost parallel loop, for every nest or per
        nest root id.
    board : str, optional
        fpga only: the board whose figures the timing model uses (default
        ``$HETLAB_FPGA_BOARD`` or pynq-z2).
    array_module : module, optional
        cuda only: the module bound as ``_xp`` and whose arrays stand for device arrays.
        None: CuPy on a GPU (numba's simulated device arrays under
        ``NUMBA_ENABLE_CUDASIM=1``; with blocks chosen, NumPy stands in there, since the
        simulator has no cuBLAS). ``numpy``: the array-code check — the generated code runs
        on NumPy copies; it checks the code, not the GPU.

    Returns
    -------
    Variant
        ``variant.source`` is the generated code; ``variant.compile()`` the callable, with
        ``fn``'s signature. Variants assume (as the analysis does) that arrays ``fn`` writes
        share no memory with its other arguments; the callable checks that at every call
        and raises :class:`~hetlab.errors.InvalidInputError` naming the two arguments
        (``variant.compile(on_alias="serial")`` runs the original function instead).
    """
    report = fn if isinstance(fn, Report) else analyze(fn)
    variant = get_target(target, where="offload.transform").generate(
        report, loops, parallel=parallel, transfers=transfers, blocks=blocks,
        array_module=array_module, args=args, unroll=unroll, board=board)
    variant.guard = alias_guard(report)  # the analysis behind every variant assumed it
    return variant
