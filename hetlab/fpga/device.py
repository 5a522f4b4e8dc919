"""The FPGA device every overlay implementation shares, and what they need to use it.

The implementations themselves live with their kernel families
(``hetlab/kernels/<family>/fpga.py``, each beside its overlay driver ``fpga_driver.py``) and
are registered by their family like any other backend's. Each returns its plain result (what
``hl.fps(..., device="fpga")`` gives the user); its ``.modeled`` entry returns
:class:`hetlab.core.modeled.ModeledRun` with the timing model's figures
(:func:`modeled_run`), and is what :mod:`hetlab.bench` calls when the FPGA backend's timing is
modeled.

The device is chosen once per process: a PYNQ board when one is present, else the emulator
of ``$HETLAB_FPGA_BOARD`` (default ``"pynq-z2"``).

Threads: the implementations may be called from any number of threads. There is one device
and one driver per overlay per process (created once, under a lock: :func:`once`); every call
holds the device's lock from its first buffer write to its last read (see
:mod:`hetlab.fpga.protocol`), so concurrent calls run one after another and each returns its
own result, on the emulator and on a board alike.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeVar

from ..backends.fpga import board_present
from ..core.modeled import ModeledRun
from .timing import ModeledTime

__all__ = ["default_board", "default_device", "once", "modeled_run", "overlay_modules"]


def default_board() -> str:
    """The board modeled or driven: ``$HETLAB_FPGA_BOARD`` or ``"pynq-z2"``."""
    return os.environ.get("HETLAB_FPGA_BOARD", "pynq-z2")


_T = TypeVar("_T")
_create_lock = threading.RLock()


def once(make: Callable[[], _T]) -> Callable[[], _T]:
    """``make`` called once per process, thread-safely (``functools.cache`` may call it twice
    when two threads race on the first call)."""
    made: list[_T] = []

    def get() -> _T:
        if not made:
            with _create_lock:
                if not made:
                    made.append(make())
        return made[0]

    get.cache_clear = made.clear  # type: ignore[attr-defined]
    get.__doc__, get.__name__ = make.__doc__, make.__name__
    return get


@once
def default_device() -> Any:
    """A :class:`PynqDevice` on a board, else an :class:`Emulator` (strict coherency)."""
    if board_present():
        from .pynq_adapter import PynqDevice

        return PynqDevice(default_board())
    from .emulator import Emulator

    return Emulator(default_board())


def modeled_run(result: Any, t: ModeledTime) -> ModeledRun:
    """``result`` with the modeled times ``t`` (launch counted as compute), in seconds."""
    return ModeledRun(result, compute_s=t.compute_s + t.launch_s,
                      transfer_in_s=t.transfer_in_s, transfer_out_s=t.transfer_out_s)


def overlay_modules() -> dict[str, ModuleType]:
    """Overlay name → the family module implementing it (``hetlab.kernels.<family>.fpga``).

    Found through the registry: every kernel with an ``fpga`` implementation names its module,
    which defines ``OVERLAY`` (the overlay's name in ``overlays/``), ``Driver`` (its driver
    class), ``REPORT_SIZES`` (for :mod:`hetlab.fpga.report`) and ``selftest_cases(sizes)``
    (for :mod:`hetlab.fpga.selftest`). Nothing here lists the families.
    """
    import hetlab.kernels  # noqa: F401  (every family registers its implementations)

    from ..core.registry import get_impl, kernel_names, supported_backends

    found: dict[str, ModuleType] = {}
    for kernel in kernel_names():
        if "fpga" in supported_backends(kernel):
            module = importlib.import_module(get_impl(kernel, "fpga").__module__)
            found[module.OVERLAY] = module
    return found


def overlay_kernel(name: str, driver: Callable[[Any], Any],
                   scalars: Callable[..., dict[str, int]]) -> Callable[..., Any]:
    """The ``device="fpga"`` implementation of one overlay, and its ``.modeled`` twin.

    Parameters
    ----------
    name : str
        The kernel's name (the implementation's ``__name__``).
    driver : callable
        The overlay's driver class (``hetlab.kernels.<family>.fpga_driver``): ``driver(device)``
        makes one; it is made once per process, on the default device (a board, else the
        emulator), on first call. The implementation reports the family's ``fpga`` module as
        its ``__module__``, where :func:`overlay_modules` finds the overlay's facts.
    scalars : callable
        ``scalars(*args, **kwargs)``: the timing model's scalars of a call with these
        validated arguments, e.g. ``{"n": 4096, "n_samples": 512, "start": 0}``.

    Returns
    -------
    callable
        ``impl(...)`` runs the overlay and returns its result; ``impl.modeled(...)`` also
        returns the modeled timing as a :class:`~hetlab.core.modeled.ModeledRun` (seconds);
        ``impl.driver()`` is the process's driver.
    """
    from .timing import model

    get = once(lambda: driver(default_device()))

    def impl(*args: Any, **kwargs: Any) -> Any:
        return get()(*args, **kwargs)

    def modeled(*args: Any, **kwargs: Any) -> ModeledRun:
        drv = get()
        result = drv(*args, **kwargs)
        t = model(drv.manifest, drv.device.board, **scalars(*args, **kwargs))
        return modeled_run(result, t)

    impl.__name__ = impl.__qualname__ = name
    impl.__module__ = driver.__module__.rpartition(".")[0] + ".fpga"  # the family's fpga module
    impl.modeled = modeled  # type: ignore[attr-defined]
    impl.driver = get  # type: ignore[attr-defined]
    return impl
