"""Sparse kernel family: SpMV, SpMM and SDDMM on CSR matrices (see :mod:`hetlab.sparse`)."""

from .api import sddmm, spmm, spmv

__all__ = ["spmv", "spmm", "sddmm"]
