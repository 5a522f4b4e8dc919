"""Quantized kernel family: fused dequantize + GEMV / flat GEMM over group-wise formats."""

from .api import gemm_q, gemv_q, gemv_w4a8

__all__ = ["gemv_q", "gemm_q", "gemv_w4a8"]
