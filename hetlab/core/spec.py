"""KernelSpec: a kernel declared once — validation, reference, checker, cases, cost model."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .params import Param

__all__ = ["Cost", "KernelSpec"]


@dataclass(frozen=True)
class Cost:
    """Algorithmic work of one call: floating-point operations and bytes that must move.

    ``bytes`` counts compulsory DRAM traffic of the straightforward algorithm (inputs read once,
    outputs written once, plus any pass the algorithm cannot avoid); it is what a roofline is
    drawn against, not what a clever implementation happens to touch.
    """

    flops: float
    bytes: float


@dataclass(frozen=True)
class KernelSpec:
    """Everything hetlab knows about one kernel, independent of any backend.

    Attributes
    ----------
    name
        Public name, e.g. ``"fps"``; the registry key.
    validate
        ``validate(**user_kwargs) -> dict``: checks and normalizes the user's arguments (host
        or device arrays) and returns the keyword arguments every implementation receives.
        Raises :class:`~hetlab.errors.InvalidInputError` naming the argument.
    reference
        The NumPy implementation, called with the validated keywords; the ground truth.
    error
        ``error(result, expected) -> float``: 0.0 means identical; compared with ``tolerance``.
    tolerance
        Largest ``error`` a verified result may have (0.0 for exact kernels).
    make_case
        ``make_case(size, rng) -> dict``: user keyword arguments for a generated case of
        ``size`` items (points, rows, …), deterministic for a given ``rng``.
    cost
        ``cost(validated_kwargs) -> Cost``: the roofline model of one call.
    arrays
        Names of the keyword arguments that are arrays (moved to and from devices).
    size_unit
        What ``size`` counts, for axis labels and throughput units ("points").
    params
        The public function's parameters (:class:`~hetlab.core.params.Param`), in signature
        order, ``device``/``keep_on_device`` excepted: declared once, checked by the
        conformance suite against the signature, the validator and bad input.
    """

    name: str
    validate: Callable[..., dict[str, Any]]
    reference: Callable[..., Any]
    error: Callable[[Any, Any], float]
    make_case: Callable[[int, np.random.Generator], dict[str, Any]]
    cost: Callable[[Mapping[str, Any]], Cost]
    arrays: tuple[str, ...]
    tolerance: float = 0.0
    size_unit: str = "items"
    description: str = ""
    params: tuple[Param, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def verified(self, result: Any, expected: Any) -> tuple[float, bool]:
        """Return ``(error, error <= tolerance)`` for a host result against the reference's."""
        err = float(self.error(result, expected))
        return err, bool(err <= self.tolerance)
