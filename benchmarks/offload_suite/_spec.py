"""The record every suite kernel is: the plain loops, its inputs, its hand-written answer key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SuiteKernel", "rng"]


def rng(seed: int) -> np.random.Generator:
    """The generator every ``make_args`` draws from (``numpy.random.default_rng(seed)``)."""
    return np.random.default_rng(seed)


@dataclass(frozen=True)
class SuiteKernel:
    """One kernel of the offload evaluation suite.

    Attributes
    ----------
    name : str
        Unique name (the ``--kernels`` key of ``benchmarks/offload.py --suite``).
    family : str
        ``"linalg"``, ``"blas"``, ``"datamining"``, ``"stencil"`` or ``"dynprog"``.
    fn : callable
        The plain Python function: ``for`` loops over NumPy arrays, written the way a scientist
        writes them (not for the tool). Works in place on its output arguments and/or returns
        a value; numba.njit compiles it as written.
    make_args : callable
        ``make_args(size, seed) -> tuple``: fresh float64 (or int64) inputs; ``size`` is the
        kernel's one size parameter (a matrix side, a vector length, …).
    hand : callable
        The expert's numba version (``numba.njit``-decorated: array expressions, ``@``,
        ``prange``), same signature and same effect on the arguments; its ``py_func`` runs as
        Python.
    full : int
        Benchmark size: a serial ``njit`` run of ``fn`` takes roughly 5–50 ms on one core.
    tiny : int
        Test size: the plain function runs in Python in well under a second.
    parallel : tuple of str
        The loops an expert would run in parallel (loop variables in source order, for
        information; the analysis decides for itself).
    has_parallel : bool
        Whether the kernel has a loop whose iterations are independent as written (or a
        reduction), i.e. whether an offload plan can beat serial njit without rewriting the
        algorithm. Kernels that must stay serial (Gauss-Seidel, dynamic programming, scans)
        are ``False``; they are measured but left out of the geometric means.
    note : str
        What the kernel exercises (writing style, the trap it holds for the tool).
    """

    name: str
    family: str
    fn: Callable[..., Any]
    make_args: Callable[[int, int], tuple]
    hand: Callable[..., Any]
    full: int
    tiny: int
    parallel: tuple[str, ...]
    has_parallel: bool
    note: str = ""
