"""The ``hetlab`` logger: every run-time choice hetlab makes, silent unless asked for.

hetlab chooses things at run time that change speed but never results: which W4 code path a CPU
runs (AMX, VNNI, float32), which dataflow a sparse convolution takes, which compatibility patch
it applies to a GPU toolchain. Each choice is logged at ``INFO`` on the ``hetlab`` logger (a
child logger per module, e.g. ``hetlab.kernels.quant``), which has a ``NullHandler`` and so
prints nothing until a program configures logging:

>>> import logging
>>> logging.getLogger("hetlab").setLevel(logging.INFO)
>>> logging.basicConfig()                                     # doctest: +SKIP

or, in a notebook, :func:`show_choices` (``hl.log.show_choices()``).
"""

from __future__ import annotations

import logging

__all__ = ["get_logger", "show_choices", "log_once"]

ROOT = "hetlab"
logging.getLogger(ROOT).addHandler(logging.NullHandler())


def get_logger(module: str) -> logging.Logger:
    """The logger of a hetlab module (``__name__``), a child of the ``hetlab`` logger."""
    return logging.getLogger(module if module.startswith(ROOT) else f"{ROOT}.{module}")


def show_choices(level: int = logging.INFO) -> logging.Handler:
    """Print hetlab's run-time choices to stderr from now on; returns the handler added.

    Remove it again with ``logging.getLogger("hetlab").removeHandler(handler)``.
    """
    root = logging.getLogger(ROOT)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("hetlab: %(message)s"))
    root.addHandler(handler)
    root.setLevel(level)
    return handler


_seen: set[tuple[str, object]] = set()


def log_once(logger: logging.Logger, key: object, msg: str, *args: object) -> None:
    """Log ``msg`` at INFO the first time ``key`` is seen by ``logger`` in this process.

    For choices made on a hot path (a kernel call): the first call logs what was chosen, later
    calls with the same choice cost one set lookup.
    """
    k = (logger.name, key)
    if k not in _seen:
        _seen.add(k)
        logger.info(msg, *args)
