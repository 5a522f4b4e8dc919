"""Dispatch: validate once, pick the backend, move arrays explicitly, call, move back.

Policy (docs/ARCHITECTURE.md): host inputs run on the host unless a device is asked for;
device inputs run on their device; a device array never moves silently to another device;
results come back as the caller's array type unless ``keep_on_device=True``.

An argument or result may also be a *container of arrays* (a sparse matrix): any object with a
``map_arrays(fn)`` method returning a copy with ``fn`` applied to each of its arrays. Dispatch
locates, moves and returns containers part by part. ``scipy.sparse`` objects count as host
data and ``cupyx.scipy.sparse`` ones as cupy data.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import BackendUnavailable, DeviceMismatchError, InvalidInputError
from .registry import AUTO, choose_device, get_backend, get_impl, observe_device
from .spec import KernelSpec
from .validation import check_bool

if TYPE_CHECKING:
    from ..backends.base import Backend

__all__ = ["run", "resolve_backend", "data_home", "map_arrays", "move_arrays"]

_HOST = "host"


_FAMILIES = {"scipy": _HOST, "cupyx": "cupy"}


def _owner(value: Any) -> str:
    """Return "host" for NumPy arrays and array-likes, else the module family ("cupy", …).

    A container (``map_arrays`` method: a sparse matrix, a ``QuantizedMatrix``) is owned by
    the family of its arrays (listed by its ``arrays()`` method where it has one, which
    builds no copy); one whose arrays live on different devices is refused.
    """
    if isinstance(value, np.ndarray):
        return _HOST
    if callable(getattr(value, "map_arrays", None)):
        found: set[str] = set()
        if callable(getattr(value, "arrays", None)):  # a container that lists its arrays
            found.update(_owner(a) for a in value.arrays())
        else:
            value.map_arrays(lambda a: found.add(_owner(a)) or a)
        if len(found) > 1:
            raise DeviceMismatchError(
                f"{type(value).__name__}: its arrays live on different devices "
                f"({', '.join(sorted(found))}); build it from arrays on one device."
            )
        return found.pop() if found else _HOST
    if not hasattr(value, "shape"):
        return _HOST
    family = type(value).__module__.split(".")[0]
    return _FAMILIES.get(family, family)


def _owners(spec: KernelSpec, kwargs: Mapping[str, Any]) -> dict[str, str]:
    return {name: _owner(kwargs[name]) for name in spec.arrays if name in kwargs}


def data_home(spec: KernelSpec, kwargs: Mapping[str, Any]) -> str:
    """Where a call's array arguments live: ``"host"`` or a device family (``"cupy"``).

    Raises
    ------
    DeviceMismatchError
        The arrays live on different devices.
    """
    return _place(spec, _owners(spec, kwargs))


def _place(spec: KernelSpec, owners: Mapping[str, str]) -> str:
    """:func:`data_home` from the owners already found (each container is listed once)."""
    places = set(owners.values())
    if len(places) > 1:
        listing = ", ".join(f"{n} on {o}" for n, o in owners.items())
        raise DeviceMismatchError(
            f"{spec.name}: array arguments live on different devices ({listing}); move them to "
            "one device first (e.g. cupy.asarray or cupy.asnumpy)."
        )
    return places.pop() if places else _HOST


def resolve_backend(
    spec: KernelSpec, device: str | Backend | None, kwargs: Mapping[str, Any]
) -> tuple[Backend, bool]:
    """Return ``(backend, inputs_on_host)`` for a call, refusing mixed or misplaced arrays."""
    owners = _owners(spec, kwargs)
    place = _place(spec, owners)
    if device is None:
        backend = get_backend("numpy" if place == _HOST else place)
    else:
        try:
            backend = get_backend(device)
        except InvalidInputError as exc:  # an unknown device: the message names the kernel
            raise InvalidInputError(f"{spec.name}: {exc}") from None
    if place != _HOST and place != backend.name:
        name = next(iter(owners))
        raise DeviceMismatchError(
            f"{spec.name}: {name} is a {place} array but device={backend.name!r}; pass "
            f"device={place!r} or copy it to the host first (e.g. cupy.asnumpy({name}))."
        )
    return backend, place == _HOST


def map_arrays(fn: Any, result: Any) -> Any:
    """Apply ``fn`` to every array in a result (an array, a container, or a tuple of them)."""
    if isinstance(result, tuple):
        return tuple(map_arrays(fn, r) for r in result)
    if callable(getattr(result, "map_arrays", None)):
        return result.map_arrays(fn)
    if hasattr(result, "shape"):
        return fn(result)
    return result


def move_arrays(
    spec: KernelSpec, backend: Backend, kwargs: Mapping[str, Any]
) -> dict[str, Any]:
    """Return ``kwargs`` with the spec's array arguments copied to ``backend``'s device."""
    moved = dict(kwargs)
    for name in spec.arrays:
        if name in moved and moved[name] is not None:
            moved[name] = map_arrays(backend.to_device, moved[name])
    return moved


def run(
    spec: KernelSpec,
    device: str | Backend | None,
    keep_on_device: bool,
    **kwargs: Any,
) -> Any:
    """Run ``spec`` on ``device`` with user ``kwargs``; the body of every public kernel.

    ``device="auto"`` validates first, then asks the installed chooser
    (:func:`~hetlab.core.registry.choose_device`, set by :mod:`hetlab.auto`) where to run.
    """
    keep_on_device = check_bool(spec.name, "keep_on_device", keep_on_device)
    validated = None
    auto = isinstance(device, str) and device.lower() == AUTO
    if auto:
        home = data_home(spec, kwargs)
        validated = spec.validate(**kwargs)
        device = choose_device(spec, validated, home)
    backend, on_host = resolve_backend(spec, device, kwargs)
    try:
        backend.require()
    except BackendUnavailable as exc:  # the message names the kernel and the argument
        raise BackendUnavailable(
            f"{spec.name}: device={backend.name!r} cannot run here: {exc}"
        ) from None
    impl = get_impl(spec.name, backend.name)
    if validated is None:
        validated = spec.validate(**kwargs)
    t0 = time.perf_counter() if auto else 0.0
    if on_host and backend.kind != "cpu":
        result = impl(**move_arrays(spec, backend, validated))
        if not keep_on_device:
            result = map_arrays(backend.from_device, result)
    else:
        result = impl(**validated)
    if auto:  # auto's history: the call's time, transfers included, finished on the device
        backend.synchronize()
        observe_device(spec, validated, backend.name, time.perf_counter() - t0)
    return result
