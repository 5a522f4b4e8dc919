"""Memory offloading: run a model that does not fit its memory budget by streaming it.

Weights (and a decoder's KV cache) live on a slower tier — a file read with direct I/O — and
are read layer by layer into an explicit, enforced byte budget, the next layers prefetched on
a reader thread while numba kernels (which release the GIL) compute the current one.
W8/W4 streaming (hetlab's group-wise formats and fused kernels) moves fewer bytes.

>>> import numpy as np
>>> from hetlab import offload_memory as om
>>> model = om.Model.decoder(d_model=64, n_heads=4, d_ff=128, n_layers=2, vocab=50)
>>> with om.stream(model, budget="1MB", prefetch=2, bits=4) as run:
...     y = run.forward(np.array([3, 1, 4]))
...     run.report.io_mode in om.IO_MODES, y.shape
(True, (3, 64))

Modules: :mod:`.tiers` (the slow tier, direct I/O), :mod:`.budget` (the accountant),
:mod:`.model` (decoder with seeded weights; MiniLM), :mod:`.kernels` (nogil compute),
:mod:`.blocks` (one layer's forward), :mod:`.kvcache` (the spilling KV cache),
:mod:`.executor` (``stream``), :mod:`.report`, :mod:`.costmodel`, :mod:`.sweep`, :mod:`.gpu`.
"""

from .budget import Budget, BudgetError, parse_budget
from .costmodel import break_even_budget, predict
from .executor import TIERS, StreamRun, stream
from .model import BITS, PRESETS, Model
from .report import Report
from .sweep import sweep
from .tiers import IO_MODES

__all__ = [
    "Model", "PRESETS", "BITS", "stream", "StreamRun", "TIERS", "Report", "sweep", "predict",
    "break_even_budget", "Budget", "BudgetError", "parse_budget", "IO_MODES",
]
