"""Writing a model to the slow tier: one blob per item, in the streamed format.

>>> import numpy as np
>>> from .model import Model
>>> m = Model.decoder(d_model=64, n_heads=4, d_ff=128, n_layers=2, vocab=50)
>>> store = write_store(m, bits=4)
>>> sorted(store.names()), store.nbytes("L0") % 4096
(['L0', 'L1', 'embed.tok', 'final'], 0)
>>> store.close()
"""

from __future__ import annotations

import os
import tempfile

from .budget import BudgetError, format_bytes
from .model import Model, to_blob
from .tiers import TierFile

__all__ = ["write_store"]


def write_store(model: Model, bits: int, group_size: int = 128, directory: str | None = None,
                io: str = "auto", limit: int | None = None) -> TierFile:
    """Write ``model`` in the ``bits`` format to a new file on the slow tier.

    The embedding table goes to blob ``"embed.tok"`` (read by rows), the encoder's other
    embedding tables to ``"embed.misc"``, each layer to ``"L{i}"``, the final norm to
    ``"final"``. If ``limit`` is given, an item whose buffer exceeds it raises
    :class:`BudgetError` as soon as it is met.
    """
    d = directory or tempfile.gettempdir()
    fd, path = tempfile.mkstemp(prefix=f"hetlab-offload-w{bits}-", suffix=".bin", dir=d)
    os.close(fd)
    store = TierFile(path, io=io)
    try:
        for item in model.items:
            tensors = to_blob(model.tensors(item, bits, group_size))
            if item == "embed":
                store.write("embed.tok", {"tok": tensors.pop("tok")})
                if tensors:
                    store.write("embed.misc", tensors)
                continue
            store.write(item, tensors)
            if limit is not None and store.nbytes(item) > limit:
                raise BudgetError(
                    f"budget: item {item!r} of {model.name} needs "
                    f"{format_bytes(store.nbytes(item))}"
                    f" at bits={bits} but the weights share of the budget is "
                    f"{format_bytes(limit)}; one layer alone must fit: raise the budget or use "
                    "fewer bits."
                )
    except BaseException:
        store.close()
        raise
    store.bits, store.group_size = bits, group_size  # type: ignore[attr-defined]
    return store
