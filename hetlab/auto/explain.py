"""``hl.explain(kernel, *args, **kwargs)``: where ``device="auto"`` would run a call, and why."""

from __future__ import annotations

import inspect
import math
from typing import Any

from ..core.dispatch import data_home
from ..core.registry import get_kernel
from ..errors import InvalidInputError
from .calibrate import variant_of
from .chooser import decide_call
from .history import HISTORY

__all__ = ["explain"]

_COLUMNS = ["available", "source", "compute_s", "transfer_s", "launch_s", "total_s", "jit_s",
            "margin", "history_s", "samples", "chosen", "reason"]


def _bind(kernel: Any, spec: Any, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "keep_on_device")}
    if callable(kernel) and getattr(kernel, "spec", None) is spec:
        sig = inspect.signature(kernel)
        params = [p for p in sig.parameters.values()
                  if p.name not in ("device", "keep_on_device")]
        sig = sig.replace(parameters=params)
    else:
        sig = inspect.Signature([inspect.Parameter(p.name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                 for p in spec.params])
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as exc:
        raise InvalidInputError(f"explain: the arguments do not fit {spec.name}({sig}) "
                                f"({exc}); pass them as for the kernel itself.") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def explain(kernel: Any, *args: Any, **kwargs: Any) -> Any:
    """Per device: what ``device="auto"`` predicts for this call, and which it would choose.

    Calibrates ``kernel`` on first use (:func:`hetlab.auto.calibrate`); validates the
    arguments like the kernel does.

    Parameters
    ----------
    kernel : hetlab kernel function (``hl.spmv``), name or KernelSpec
    *args, **kwargs
        The call's arguments (``device``/``keep_on_device`` are ignored).

    Returns
    -------
    pandas.DataFrame
        Index ``device``; columns ``available``, ``source`` (of the model: measured,
        recorded, modeled or none), ``compute_s``, ``transfer_s`` (host↔device copies; 0 for
        resident data), ``launch_s`` (fixed cost per call), ``total_s`` (their sum, what is
        compared), ``jit_s`` (first call's extra, not counted), ``margin`` (the model's
        held-out relative error near this call's size, ``exp(sigma) - 1``), ``history_s``
        (the predicted time corrected by the median observed/predicted ratio of auto's own
        calls in this size bucket, NaN without any), ``samples`` (those calls), ``chosen``
        and ``reason``.
        ``attrs["choice"]`` and ``attrs["reason"]`` repeat the decision, ``attrs["decided_by"]``
        says by what: ``"model"``, ``"exploring"`` (the next auto call would explore an
        ambiguous case) or ``"history"`` (measured times decided); ``attrs["variant"]``
        names the calibrated variant of the call (its flag and choice arguments).

    Raises
    ------
    InvalidInputError
        An unknown kernel, arguments that do not fit it, or invalid arguments.

    Examples
    --------
    >>> import numpy as np, hetlab as hl
    >>> from hetlab import sparse
    >>> A = sparse.csr(np.eye(4))
    >>> table = hl.explain(hl.spmv, A, np.ones(4))              # doctest: +SKIP
    >>> table.loc["numpy", "chosen"]                            # doctest: +SKIP
    True
    """
    import pandas as pd

    spec = get_kernel(kernel)
    user = _bind(kernel, spec, args, kwargs)
    home = data_home(spec, user)
    validated = spec.validate(**user)
    preds, d, key = decide_call(spec, validated, home, commit=False)
    device, reason = d.device, d.reason
    rows = []
    for p in preds:
        n = HISTORY.samples(key, p.device)
        rows.append({"device": p.device, "available": p.available, "source": p.source,
                     "compute_s": p.compute_s, "transfer_s": p.transfer_s,
                     "launch_s": p.launch_s, "total_s": p.total_s, "jit_s": p.jit_s,
                     "margin": math.expm1(p.sigma) if math.isfinite(p.sigma) else math.nan,
                     "history_s": p.total_s * HISTORY.ratio(key, p.device) if n else math.nan,
                     "samples": n, "chosen": p.device == device,
                     "reason": reason if p.device == device else (p.why_not or "slower")})
    df = pd.DataFrame(rows, columns=["device", *_COLUMNS]).set_index("device")
    df.attrs.update(choice=device, reason=reason, kernel=spec.name, decided_by=d.by,
                    variant=variant_of(spec, validated))
    return df
