"""Attention: flash attention, split-KV decode with two softmax schemes, PARO reordering and
block-sparse, block-quantized attention — one spec and float64 reference per kernel."""

from .api import (
    attention,
    attention_reorder,
    block_sparse_attention,
    calibrate_block_mask,
    decode_attention,
    decode_attention_info,
)

__all__ = ["attention", "decode_attention", "decode_attention_info", "attention_reorder",
           "block_sparse_attention", "calibrate_block_mask"]
