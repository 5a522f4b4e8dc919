"""Registries: backends by name, kernels by name, implementations by (kernel, backend).

Implementations are registered as ``"module:function"`` strings and imported on first use,
so ``import hetlab`` never imports numba kernels, cupy or pynq.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import BackendUnavailable, InvalidInputError, KernelNotSupported
from .spec import KernelSpec

if TYPE_CHECKING:  # the contract lives one layer up (hetlab.backends.base); core never imports it
    from ..backends.base import Backend

__all__ = [
    "register_backend",
    "get_backend",
    "resolve_name",
    "ALIASES",
    "backend_names",
    "available_backends",
    "register_kernel",
    "get_kernel",
    "kernel_names",
    "register_impl",
    "get_impl",
    "supported_backends",
    "AUTO",
    "set_device_chooser",
    "observe_device",
    "choose_device",
]

_BACKENDS: dict[str, Backend] = {}
_KERNELS: dict[str, KernelSpec] = {}
_IMPLS: dict[tuple[str, str], str | Callable[..., Any]] = {}


def register_backend(backend: Backend) -> Backend:
    """Add a backend instance under its ``name``; returns it."""
    _BACKENDS[backend.name] = backend
    return backend


def backend_names() -> list[str]:
    """Names of every registered backend, in registration order."""
    return list(_BACKENDS)


def available_backends() -> list[str]:
    """Names of the registered backends that can run here now."""
    return [name for name, b in _BACKENDS.items() if b.is_available()]


#: other words users type for a device → the backend name hetlab uses for it. The one place
#: GPU names are resolved: the kernel API, ``hl.compare`` and the offload targets all ask here.
ALIASES: dict[str, str] = {"cuda": "cupy", "gpu": "cupy"}
#: words that name no single device: the error lists what they could mean
_AMBIGUOUS: dict[str, str] = {
    "cpu": "'numpy' (the reference, one thread) or 'numba' (compiled, multithreaded)",
}


def resolve_name(device: str) -> str:
    """The backend name for ``device``: itself, or what an alias (``"cuda"``, ``"gpu"``)
    stands for; unknown and ambiguous names raise an error that names the right words."""
    if isinstance(device, str):
        name = ALIASES.get(device.lower(), device)
        if name in _BACKENDS:
            return name
        if device.lower() in _AMBIGUOUS:
            raise InvalidInputError(
                f"device {device!r} is ambiguous: say {_AMBIGUOUS[device.lower()]}."
            )
    aliases = ", ".join(f"{a!r} for {b!r}" for a, b in ALIASES.items())
    raise InvalidInputError(
        f"device must be one of {', '.join(map(repr, _BACKENDS))} (or {aliases}); "
        f"got {device!r}."
    )


def get_backend(device: str | Backend) -> Backend:
    """Return the backend for a name, an alias (``"cuda"``/``"gpu"`` → ``"cupy"``) or an
    instance; unknown names list the valid choices."""
    if not isinstance(device, str) and callable(getattr(device, "why_not", None)):
        return device  # a Backend instance
    return _BACKENDS[resolve_name(device)]


def register_kernel(spec: KernelSpec) -> KernelSpec:
    """Add a kernel spec under its ``name``; the numpy backend gets its reference."""
    _KERNELS[spec.name] = spec
    _IMPLS[(spec.name, "numpy")] = spec.reference
    return spec


def kernel_names() -> list[str]:
    """Names of every registered kernel."""
    return list(_KERNELS)


def get_kernel(kernel: str | KernelSpec | Callable[..., Any]) -> KernelSpec:
    """Return a spec from its name, itself, or a public kernel function (``hl.fps``)."""
    if isinstance(kernel, KernelSpec):
        return kernel
    spec = getattr(kernel, "spec", None)
    if isinstance(spec, KernelSpec):
        return spec
    try:
        return _KERNELS[kernel]  # type: ignore[index]
    except (KeyError, TypeError):
        raise InvalidInputError(
            f"kernel must be one of {', '.join(map(repr, _KERNELS))} or a hetlab kernel "
            f"function; got {kernel!r}."
        ) from None


def register_impl(kernel: str, backend: str, impl: str | Callable[..., Any]) -> None:
    """Register ``impl`` (a callable, or ``"module:function"`` imported lazily) for a pair."""
    _IMPLS[(kernel, backend)] = impl


def supported_backends(kernel: str) -> list[str]:
    """Backends with an implementation of ``kernel`` (available here or not)."""
    return [b for (k, b) in _IMPLS if k == kernel]


def get_impl(kernel: str, backend: str) -> Callable[..., Any]:
    """Return the implementation callable, importing it on first use."""
    try:
        impl = _IMPLS[(kernel, backend)]
    except KeyError:
        extra = ""
        if backend == "fpga":
            extra = "no overlay for this kernel yet; "
        raise KernelNotSupported(
            f"{backend}: {extra}{kernel} is not implemented on this backend; supported: "
            f"{', '.join(supported_backends(kernel))}"
        ) from None
    if isinstance(impl, str):
        module, _, attr = impl.partition(":")
        try:
            impl = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise BackendUnavailable(
                f"{backend}: the implementation of {kernel} ({impl}) failed to import: {exc}"
            ) from exc
        _IMPLS[(kernel, backend)] = impl
    return impl


#: the device name that asks hetlab to choose (``device="auto"``)
AUTO = "auto"
_CHOOSER: Callable[[KernelSpec, dict[str, Any], str], str] | None = None
_OBSERVER: Callable[[KernelSpec, dict[str, Any], str, float], None] | None = None


def set_device_chooser(fn: Callable[[KernelSpec, dict[str, Any], str], str] | None,
                       observer: Callable[[KernelSpec, dict[str, Any], str, float], None]
                       | None = None) -> None:
    """Install the function behind ``device="auto"`` (``hetlab.auto`` installs its chooser).

    ``fn(spec, validated_kwargs, home)`` returns a backend name; ``home`` is where the array
    arguments live (``"host"``, ``"cupy"``, …). ``None`` removes it. ``observer(spec,
    validated_kwargs, device, seconds)``, if given, is told the wall time of each
    ``device="auto"`` call that returned (its history).
    """
    global _CHOOSER, _OBSERVER
    for what, f in (("fn", fn), ("observer", observer)):
        if f is not None and not callable(f):
            raise InvalidInputError(
                f"set_device_chooser: {what} must be callable or None; got "
                f"{type(f).__name__}."
            )
    _CHOOSER, _OBSERVER = fn, observer


def observe_device(spec: KernelSpec, validated: dict[str, Any], device: str,
                   seconds: float) -> None:
    """Tell the installed observer how long a ``device="auto"`` call took (s)."""
    if _OBSERVER is not None:
        _OBSERVER(spec, validated, device, seconds)


def choose_device(spec: KernelSpec, validated: dict[str, Any], home: str) -> str:
    """The backend name the installed chooser picks for one call of ``spec``.

    Raises
    ------
    InvalidInputError
        No chooser is installed (``import hetlab`` or ``import hetlab.auto`` installs one).
    """
    if _CHOOSER is None:
        raise InvalidInputError(
            f"{spec.name}: device='auto' needs hetlab.auto, which chooses the device; got "
            "device='auto' with no chooser installed. Import hetlab (or hetlab.auto) first, "
            "or name a device."
        )
    return _CHOOSER(spec, validated, home)
