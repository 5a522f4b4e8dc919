"""Kernel families: each is one folder, ``hetlab/kernels/<family>/``, holding its formats, specs,
numpy reference, numba, cupy/CUDA and FPGA implementations and public functions, and
registering its specs and implementations in one place (its ``api.py``).

Adding a family is that folder plus its name in :data:`FAMILIES`: importing this package
imports every family (so every kernel is registered), and ``hetlab.<kernel>`` finds each
registered kernel's public function through :func:`kernel_function`.

>>> from hetlab.kernels import kernel_function
>>> kernel_function("spmv").__module__
'hetlab.kernels.sparse.api'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

#: the kernel families, each a subpackage that exports its public kernel functions
FAMILIES = ("pointcloud", "sparse", "quant", "sparseconv", "attention")

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")


def kernel_function(name: str) -> Callable[..., Any]:
    """The public function of the registered kernel ``name`` (what ``hetlab.<name>`` is).

    Raises
    ------
    AttributeError
        When no family exports a kernel function of that name.
    """
    for family in FAMILIES:
        fn = getattr(importlib.import_module(f"{__name__}.{family}"), name, None)
        if callable(fn) and getattr(getattr(fn, "spec", None), "name", None) == name:
            return fn
    raise AttributeError(f"no kernel family exports a kernel function {name!r}")


__all__ = ["FAMILIES", "kernel_function"]
