"""The targets ``transform`` and ``search`` can generate for, found by name.

A target is registered under its ``device`` (the name a user gives the device, the kernel
API's backend name: ``"numba"``, ``"cupy"``, ``"fpga"``) and also answers to its ``name``
(what plans record: the GPU target's is ``"cuda"``). Other words for a device (``"gpu"``) are
resolved by the one table the whole library uses, :data:`hetlab.core.registry.ALIASES`.
Registration order is the search order (the 2020 paper's: CPU, GPU,
then FPGA). Adding a target: a module implementing :class:`~.base.Target` and one
``register_target`` line below.
"""

from __future__ import annotations

from ...core.registry import ALIASES as DEVICE_ALIASES
from ...errors import InvalidInputError
from .base import Target
from .cuda.target import CudaTarget
from .fpga.target import FpgaTarget
from .numba import NumbaTarget

__all__ = ["register_target", "get_target", "target_names", "describe_names"]

_TARGETS: dict[str, Target] = {}
_ALIASES: dict[str, str] = {}


def register_target(target: Target, aliases: tuple[str, ...] = ()) -> Target:
    """Add ``target`` under its ``device``; its ``name``, its ``aliases`` attribute and
    ``aliases`` resolve to it. Registering a device again replaces it (same place in the
    order)."""
    if not isinstance(target, Target):
        raise InvalidInputError("offload: register_target needs an object with name, device, "
                                f"ready(), generate() and synchronize(); got {target!r}.")
    device = target.device
    _TARGETS[device] = target
    for alias in (target.name, *getattr(target, "aliases", ()), *aliases):
        if alias != device:
            _ALIASES[alias] = device
    return target


def target_names() -> tuple[str, ...]:
    """Registered devices in search order."""
    return tuple(_TARGETS)


def describe_names() -> str:
    """``"numba, cupy, fpga (aliases: cuda → cupy, gpu → cupy)"``: for error messages."""
    known = {**{a: d for a, d in DEVICE_ALIASES.items() if d in _TARGETS}, **_ALIASES}
    aliases = ", ".join(f"{a} → {d}" for a, d in known.items())
    return ", ".join(_TARGETS) + (f" (aliases: {aliases})" if aliases else "")


def get_target(name: str, *, where: str = "offload",
               what: str = "target must be one of") -> Target:
    """The target registered as (or aliased to) ``name``; an error listing the valid names
    and aliases otherwise."""
    if isinstance(name, str):
        name = DEVICE_ALIASES.get(name.lower(), name)  # "gpu", "cuda" → "cupy"
        found = _TARGETS.get(_ALIASES.get(name, name))
        if found is not None:
            return found
    raise InvalidInputError(f"{where}: {what} {describe_names()}; got {name!r}.")


register_target(NumbaTarget())
register_target(CudaTarget())
register_target(FpgaTarget())
