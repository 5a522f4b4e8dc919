"""The hetlab error hierarchy.

Every error also subclasses the builtin a caller would expect, so ``except ValueError``
keeps working. Messages follow one shape: what was wrong, what was given, how to fix it.
"""

from __future__ import annotations

__all__ = [
    "HetlabError",
    "InvalidInputError",
    "DeviceMismatchError",
    "BackendUnavailable",
    "KernelNotSupported",
    "VerificationError",
]


class HetlabError(Exception):
    """Base class of every error hetlab raises on purpose."""


class InvalidInputError(HetlabError, ValueError):
    """An argument has the wrong shape, dtype, range or values (NaN/inf)."""


class DeviceMismatchError(InvalidInputError):
    """An array lives on another device than the one the call runs on."""


class BackendUnavailable(HetlabError, ImportError):
    """A backend was asked for but cannot run here; the message says why."""


class KernelNotSupported(HetlabError, NotImplementedError):
    """The backend exists but has no implementation of this kernel."""


class VerificationError(HetlabError, AssertionError):
    """A result differed from the numpy reference beyond the kernel's tolerance."""
