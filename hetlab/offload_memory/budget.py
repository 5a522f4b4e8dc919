"""The fast-memory budget: byte strings parsed, every held buffer accounted, the limit enforced.

A :class:`Budget` is split into named pools (the executor uses ``"weights"`` for the layers it
reads and prefetches, ``"kv"`` for the KV cache and its read-back), each with its own limit;
the limits add up to at most the total, so the total can never be exceeded. ``acquire`` either
blocks until bytes are released (the reader thread waiting for compute to free a layer) or
raises :class:`BudgetError` (a buffer that could never fit). Every acquire and release updates
the peak, which the tests read: ``budget.peak <= budget.total`` always.

>>> parse_budget("256MB"), parse_budget("1.5GiB"), parse_budget(4096)
(256000000, 1610612736, 4096)
>>> b = Budget(1000, {"weights": 600, "kv": 400})
>>> b.pool("weights").acquire(500)
>>> b.pool("kv").acquire(300)
>>> b.peak, b.held
(800, 800)
"""

from __future__ import annotations

import math
import numbers
import re
import threading
from typing import Any

from ..errors import InvalidInputError

__all__ = ["parse_budget", "format_bytes", "Budget", "Pool", "BudgetError"]

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
          "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}
_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


class BudgetError(InvalidInputError):
    """A buffer does not fit the memory budget (one layer, or the KV cache, is too large)."""


def parse_budget(value: Any, name: str = "budget") -> int:
    """Bytes of a budget given as an int or a string such as ``"256MB"`` or ``"1.5GiB"``.

    Decimal units (KB, MB, GB, TB: powers of 1000) and binary ones (KiB, MiB, GiB, TiB: powers
    of 1024), case-insensitive; a bare number is bytes.

    Raises
    ------
    InvalidInputError
        Not an int/str, unparsable, an unknown unit, or not positive.
    """
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, str)):
        raise InvalidInputError(
            f"{name} must be a byte count (int) or a string such as '256MB' or '1.5GiB'; got "
            f"{value!r} ({type(value).__name__})."
        )
    if isinstance(value, str):
        m = _PATTERN.match(value)
        unit = m.group(2).upper() if m else ""
        if m is None or unit not in _UNITS:
            raise InvalidInputError(
                f"{name} must look like '256MB', '1.5GiB' or '4096' (units B, KB, MB, GB, TB, "
                f"KiB, MiB, GiB, TiB); got {value!r}."
            )
        value_f = float(m.group(1)) * _UNITS[unit]
        if not math.isfinite(value_f) or value_f >= 2**63:
            raise InvalidInputError(f"{name} is too large; got {value!r}.")
        nbytes = int(value_f)
    else:
        nbytes = int(value)
    if nbytes <= 0:
        raise InvalidInputError(f"{name} must be positive; got {value!r}. Give e.g. '256MB'.")
    return nbytes


def format_bytes(n: float) -> str:
    """``1536000`` → ``'1.54 MB'`` (decimal units, as :func:`parse_budget` reads them)."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} B"


class Pool:
    """One named share of a :class:`Budget`; use through ``budget.pool(name)``."""

    def __init__(self, budget: Budget, name: str, limit: int) -> None:
        self.budget, self.name, self.limit = budget, name, int(limit)
        self.held = 0
        self.peak = 0

    def acquire(self, nbytes: int, *, block: bool = False, what: str = "buffer") -> None:
        """Account ``nbytes`` more; wait for releases if ``block``, else raise if over."""
        nbytes = int(nbytes)
        if nbytes > self.limit:
            raise BudgetError(
                f"budget: {what} needs {format_bytes(nbytes)} but the {self.name!r} share of the "
                f"budget is {format_bytes(self.limit)} (of {format_bytes(self.budget.total)}); "
                "raise the budget to at least "
                f"{format_bytes(nbytes + self.budget.total - self.limit)} or use fewer bits."
            )
        with self.budget._cond:
            while self.held + nbytes > self.limit:
                if not block:
                    raise BudgetError(
                        f"budget: {what} needs {format_bytes(nbytes)} more but the {self.name!r} "
                        f"share holds {format_bytes(self.held)} of {format_bytes(self.limit)}; "
                        "raise the budget (or kv_budget for the KV cache)."
                    )
                self.budget._cond.wait()
            self.held += nbytes
            self.peak = max(self.peak, self.held)
            self.budget._update()

    def release(self, nbytes: int) -> None:
        """Give back ``nbytes`` acquired before."""
        with self.budget._cond:
            if int(nbytes) > self.held:
                raise RuntimeError(
                    f"budget pool {self.name!r}: releasing {nbytes} > held {self.held}")
            self.held -= int(nbytes)
            self.budget._update()
            self.budget._cond.notify_all()


class Budget:
    """A byte budget split into pools whose limits add up to at most ``total``.

    Parameters
    ----------
    total : int
        Bytes of fast memory (weights and KV cache) the executor may hold.
    shares : dict of str → int
        Pool name → limit in bytes; the sum must not exceed ``total``.

    Attributes
    ----------
    held, peak : int
        Bytes held now in all pools, and the most ever held at once.
    """

    def __init__(self, total: int, shares: dict[str, int]) -> None:
        if isinstance(total, bool) or not isinstance(total, numbers.Integral) or total < 1:
            raise InvalidInputError(f"Budget: total must be a positive int (bytes); got {total!r}.")
        ok = isinstance(shares, dict) and all(
            isinstance(k, str) and isinstance(v, numbers.Integral) and not isinstance(v, bool)
            for k, v in shares.items())
        if not ok or sum(shares.values()) > total or any(v < 0 for v in shares.values()):
            raise InvalidInputError(
                f"Budget: shares must map pool names (str) to ints >= 0 that add up to at most "
                f"total ({total} bytes); got {shares!r}."
            )
        total = int(total)
        shares = {k: int(v) for k, v in shares.items()}
        self.total = int(total)
        self._cond = threading.Condition()
        self._pools = {k: Pool(self, k, v) for k, v in shares.items()}
        self.held = 0
        self.peak = 0

    @property
    def cond(self) -> threading.Condition:
        """The accountant's lock and condition (re-entrant): held while checking that bytes
        fit and acquiring them, notified on every release."""
        return self._cond

    def pool(self, name: str) -> Pool:
        return self._pools[name]

    @property
    def pools(self) -> dict[str, Pool]:
        return dict(self._pools)

    def _update(self) -> None:  # called with the lock held
        self.held = sum(p.held for p in self._pools.values())
        self.peak = max(self.peak, self.held)
