"""Weight quantization: group-wise integer formats (W8/W4/W3/W2), calibration, mixed precision.

>>> import numpy as np
>>> from hetlab import quant
>>> qw = quant.quantize(np.ones((4, 128), np.float32), bits=4, group_size=128)
>>> qw.shape, qw.bits_per_weight
((4, 128), 4.25)

The fused kernels that use these formats are ``hl.gemv_q`` and ``hl.gemm_q``. A matrix is
stored with ``qw.save(path)`` / ``quant.save(qw, path)`` and read back with
``QuantizedMatrix.load(path)`` / ``quant.load(path)`` (``.npz``, exact round trip).

The code lives with the quantized kernels, in :mod:`hetlab.kernels.quant` (formats, gptq,
calibrate, mixed, minilm, minilm_eval); this module is its public face.
"""

from ..kernels.quant.calibrate import (
    ScaledQuantizedMatrix,
    calibrate_awq,
    mbq_token_weights,
    output_error,
)
from ..kernels.quant.formats import (
    BITS,
    QuantizedMatrix,
    load,
    pack_codes,
    quantize,
    save,
    unpack_codes,
)
from ..kernels.quant.gptq import gptq
from ..kernels.quant.mixed import BitPlan, FusedPlan, allocate_bits, channel_importance
from ..kernels.quant.prepared import GemvPlan

__all__ = [
    "BITS", "QuantizedMatrix", "quantize", "pack_codes", "unpack_codes", "save", "load",
    "ScaledQuantizedMatrix", "calibrate_awq", "gptq", "mbq_token_weights", "output_error",
    "BitPlan", "FusedPlan", "allocate_bits", "channel_importance", "GemvPlan",
]
