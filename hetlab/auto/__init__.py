"""``device="auto"``: a calibrated cost model per machine, risk-aware choice, ``hl.explain``.

Importing this package installs its chooser in :mod:`hetlab.core.registry` (so
``core.dispatch`` handles ``device="auto"`` without importing it); nothing is measured until
the first ``device="auto"`` call or :func:`explain` of a kernel. See docs/auto.md.

- :func:`calibrate` — measure (or load) the cost model; cache at :func:`cache_path`
  (``$HETLAB_CACHE`` or ``~/.cache/hetlab``); ``calibrate(refresh=True)`` measures again.
- :func:`explain` — per device: predicted compute, transfers, launch, JIT, margin, choice.
- :func:`history` — auto's own calls, measured: in ambiguous cases (another device predicted
  within the margin) auto explores once per size bucket and then picks by measured times
  (:mod:`hetlab.auto.history`); :func:`forget_history`, :func:`configure_history`.
- :class:`Objective` — rank devices or plans by time, energy or a price per resource-second.
- :func:`configure_threads` — opt in to numba's workqueue layer and one BLAS thread (never
  done silently; see :mod:`hetlab.auto.threads`).
"""

from ..core.registry import set_device_chooser
from .calibrate import cache_path, calibrate
from .chooser import Prediction, choose, decide, last_choice, observe, predict
from .explain import explain
from .history import configure_history, forget_history, history
from .model import DeviceFit
from .objective import Objective
from .threads import configure_threads

__all__ = ["calibrate", "cache_path", "explain", "choose", "decide", "predict", "Prediction",
           "DeviceFit", "Objective", "configure_threads", "history", "forget_history",
           "configure_history", "last_choice"]

set_device_chooser(choose, observe)
