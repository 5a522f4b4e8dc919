"""The no-alias assumption of a generated variant, checked at every call.

The analysis proves loops parallel (and function blocks replaceable) on the assumption that an
array the function writes shares no memory with another argument. A compiled variant or plan
therefore checks, per call, every array among its arguments (also inside tuples, lists and
dicts) and the global arrays the function reads: when a written one may overlap another (or
itself, a stride-0 or overlapping view), the call is refused with
:class:`~hetlab.errors.InvalidInputError`, or, when asked (``on_alias="serial"``), the
original function runs instead. The check is a few ``np.may_share_memory`` bound comparisons
per pair of array arguments: it does not grow with array sizes.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import InvalidInputError

__all__ = ["AliasGuard", "ON_ALIAS", "check_on_alias", "array_leaves", "overlap",
           "self_overlaps", "untypable", "python_when_untypable"]

#: what a compiled variant does when written arguments share memory
ON_ALIAS = ("raise", "serial")
_MAX_DEPTH = 16
#: list items numba types as numbers
_NUMBERS = (bool, int, float, complex, np.number, np.bool_)
_TOO_HARD = getattr(getattr(np, "exceptions", np), "TooHardError", Exception)


def untypable(exc: BaseException) -> bool:
    """Whether ``exc`` says numba could not type or compile a call for its arguments (an
    empty or nested list, an object numba has no type for): raised before any compiled code
    ran, so the original function may run instead with nothing done twice. An exception the
    compiled code itself raised (``IndexError``, ``ZeroDivisionError``) is not one."""
    if isinstance(exc, ValueError) and "cannot compute fingerprint" in str(exc):
        return True  # the dispatcher's typeof of an empty list or set
    errors = sys.modules.get("numba.core.errors")
    return errors is not None and isinstance(exc, errors.NumbaError)


def python_when_untypable(impl: Callable[..., Any], original: Callable[..., Any],
                          name: str) -> Callable[..., Any]:
    """``impl`` that runs ``original`` (with a RuntimeWarning) on arguments numba cannot
    type or compile for (:func:`untypable`): a plan's callable. Variants keep raising, so
    the search counts such a candidate as failed instead of timing Python."""
    @functools.wraps(impl)
    def call(*args: Any) -> Any:
        try:
            return impl(*args)
        except Exception as exc:
            if not untypable(exc):
                raise
            first = (str(exc).strip().splitlines() or [""])[0]
            warnings.warn(f"offload ({name}): numba cannot compile the plan for these "
                          f"arguments ({type(exc).__name__}: {first}); the original function "
                          "ran instead.", RuntimeWarning, stacklevel=2)
            return original(*args)

    return call


def check_on_alias(on_alias: str, where: str) -> str:
    if on_alias not in ON_ALIAS:
        raise InvalidInputError(f"{where}: on_alias must be one of {ON_ALIAS}; got "
                                f"{on_alias!r} ('raise' refuses aliased arguments, 'serial' "
                                "runs the original function on them).")
    return on_alias


def array_leaves(value: Any, path: str, out: list[tuple[str, np.ndarray]],
                 depth: int = 0) -> bool:
    """Append ``(path, array)`` for every NumPy array in ``value`` (itself, or inside tuples,
    lists and dict values). False when nesting is deeper than the walk follows."""
    if isinstance(value, np.ndarray):
        out.append((path, value))
        return not value.dtype.hasobject  # arrays of objects may hold arrays: not followed
    if isinstance(value, (tuple, list, dict)):
        if depth >= _MAX_DEPTH:
            return False
        if isinstance(value, list) and value and isinstance(value[0], _NUMBERS):
            return True  # numba types a list by its first item: all numbers (or no call)
        items = value.items() if isinstance(value, dict) else enumerate(value)
        ok = True
        for k, v in items:
            ok &= array_leaves(v, f"{path}[{k!r}]", out, depth + 1)
        return ok
    return True


def overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays may share an element (bounds first; exact on small problems)."""
    if a.size == 0 or b.size == 0:
        return False
    if a is b:
        return True
    if not np.may_share_memory(a, b):
        return False
    try:
        return bool(np.shares_memory(a, b, max_work=1000))
    except _TOO_HARD:
        return True


def self_overlaps(a: np.ndarray) -> bool:
    """Whether two different indices of ``a`` may reach the same element (a stride-0 broadcast
    or an ``as_strided`` view): strides sorted by size must each step past the extent of the
    dimensions below them. An empty array has no element to share (NumPy gives ``(0, 4)`` the
    strides ``(0, 0)``)."""
    if a.size == 0 or a.flags.c_contiguous or a.flags.f_contiguous:
        return False  # contiguous: every index its own element (checked per call: be quick)
    dims = sorted((abs(st), n) for st, n in zip(a.strides, a.shape, strict=True) if n > 1)
    extent = a.itemsize
    for st, n in dims:
        if st < extent:
            return True
        extent += st * (n - 1)
    return False


def _clear_check(params: tuple[str, ...], written: frozenset[str]) -> Callable[[tuple], bool]:
    """A check, unrolled for these parameters, that is True when the arguments are plain
    arrays and other values (no tuple, list, dict or object array), every written array is
    contiguous (no self-overlap) and no written array's memory bounds meet another array
    argument's: the common call, in a few hundred nanoseconds. False sends the call to the
    full check of :meth:`AliasGuard.problem`, which also finds the reason.

    >>> import numpy as np
    >>> clear = _clear_check(("x", "y"), frozenset({"y"}))
    >>> x = np.zeros(4)
    >>> clear((x, np.zeros(4))), clear((x, x)), clear((x, x[::-1].copy(), 3))
    (True, False, False)
    """
    n = len(params)
    lines = ["def _clear(args, nd=_nd, msm=_msm, cont=_cont):",
             f"    if len(args) != {n}:", "        return False"]
    if n:
        lines.append(f"    {', '.join(f'a{k}' for k in range(n))}, = args")
    for k, p in enumerate(params):
        lines += [f"    t{k} = type(a{k}) is nd",
                  f"    if t{k}:",
                  f"        if a{k}.dtype.hasobject:",
                  "            return False"]
        if p in written:
            lines += [f"        if not (a{k}.flags.c_contiguous or a{k}.flags.f_contiguous):",
                      "            return False"]
        lines += [f"    elif isinstance(a{k}, cont):", "        return False"]
    for i in range(n):
        for j in range(i + 1, n):
            if params[i] in written or params[j] in written:
                lines += [f"    if t{i} and t{j} and a{i}.size and a{j}.size and "
                          f"(a{i} is a{j} or msm(a{i}, a{j})):", "        return False"]
    lines.append("    return True")
    scope: dict[str, Any] = {"_nd": np.ndarray, "_msm": np.may_share_memory,
                             "_cont": (np.ndarray, tuple, list, dict)}
    exec("\n".join(lines), scope)
    return scope["_clear"]


@dataclass(frozen=True)
class AliasGuard:
    """What one variant assumes: which parameters may be written, which globals it reads."""

    name: str
    params: tuple[str, ...]
    written: frozenset[str]
    namespace: dict[str, Any]
    globals_read: tuple[str, ...]
    original: Callable[..., Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "_clear", _clear_check(self.params, self.written))

    def problem(self, args: tuple) -> str | None:
        """Why ``args`` break the no-alias assumption, or None."""
        if not self.globals_read and self._clear(args):  # type: ignore[attr-defined]
            return None
        leaves: list[tuple[str, np.ndarray, bool]] = []
        for k, value in enumerate(args):
            pname = self.params[k] if k < len(self.params) else f"argument {k}"
            found: list[tuple[str, np.ndarray]] = []
            complete = array_leaves(value, pname, found)
            writes = pname in self.written or k >= len(self.params)
            if not complete and writes:
                return (f"{pname} nests containers deeper than the check follows (or is an "
                        "object array), so sharing of its arrays cannot be ruled out")
            leaves += [(p, a, writes) for p, a in found]
        for i, (pa, a, wa) in enumerate(leaves):
            if wa and self_overlaps(a):
                return (f"{pa} is written and is a view whose elements overlap one another "
                        f"(strides {a.strides} for shape {a.shape})")
            for pb, b, wb in leaves[i + 1:]:
                if (wa or wb) and overlap(a, b):
                    w = pa if wa else pb
                    return f"arguments {pa} and {pb} share memory and {w} is written"
            if wa:
                for g in self.globals_read:
                    value = self.namespace.get(g)
                    if isinstance(value, np.ndarray) and overlap(a, value):
                        return (f"argument {pa} shares memory with the global array {g} the "
                                f"function reads, and {pa} is written")
        return None

    def wrap(self, impl: Callable[..., Any], on_alias: str) -> Callable[..., Any]:
        """``impl`` behind the per-call check."""
        check_on_alias(on_alias, f"offload ({self.name})")
        guard = self

        @functools.wraps(impl)
        def call(*args: Any) -> Any:
            why = guard.problem(args)
            if why is None:
                return impl(*args)
            if on_alias == "serial":
                return guard.original(*args)
            raise InvalidInputError(
                f"offload ({guard.name}): {why}; the compiled variant assumes that arrays it "
                "writes share no memory with other arguments (its parallel loops or library "
                "calls would give a different result). Pass distinct arrays (e.g. a .copy()), "
                "or compile with on_alias='serial' to run the original function on such calls.")

        return call
