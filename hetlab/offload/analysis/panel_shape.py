"""How a triangular bound behaves over a panel of rows ``[_hbr0, _hbr1)`` (:mod:`.panels`): the
union of the rows' ranges (the *hull*), the part every row shares (*common*), a row's
*remainder*, and the rows whose range holds a given index (for :mod:`.masked`). All as source
text reading ``_hbr0``, ``_hbr1`` and the row variable.

>>> sh = Shape(("i + 1", "n"), "i")  # k in range(i + 1, n)
>>> sh.hull(), sh.common(), sh.remainder(), sh.by_k("k")
(('_hbr0 + 1', 'n'), ('_hbr1', 'n'), ('i + 1', 'min(n, _hbr1)'), ('_hbr0', 'min(_hbr1, k)'))
"""

from __future__ import annotations

from .refs_text import names_in, row_offset

__all__ = ["Shape"]

_R0, _R1 = "_hbr0", "_hbr1"


def _plus(name: str, c: int) -> str:
    return name if c == 0 else (f"{name} + {c}" if c > 0 else f"{name} - {-c}")


class Shape:
    """How one bound pair behaves over a panel: ``lo`` = ``row + c`` (``hi`` invariant) or
    ``hi`` = ``row + c`` (``lo`` invariant)."""

    def __init__(self, bounds: tuple[str, str], row: str) -> None:
        self.lo, self.hi = bounds
        self.lo_c, self.hi_c = row_offset(self.lo, row), row_offset(self.hi, row)
        self.row = row

    @property
    def ok(self) -> bool:
        lo_dep, hi_dep = self.row in names_in(self.lo), self.row in names_in(self.hi)
        return (self.lo_c is not None and not hi_dep) or (self.hi_c is not None and not lo_dep)

    def hull(self) -> tuple[str, str]:
        if self.lo_c is not None:
            return _plus(_R0, self.lo_c), self.hi
        return self.lo, _plus(_R1, self.hi_c - 1)  # type: ignore[operator]

    def common(self) -> tuple[str, str]:
        if self.lo_c is not None:
            return _plus(_R1, self.lo_c - 1), self.hi
        return self.lo, _plus(_R0, self.hi_c)  # type: ignore[arg-type]

    def by_k(self, k: str) -> tuple[str, str]:
        """The panel's rows whose range holds ``k`` (``k`` in :meth:`hull`)."""
        if self.lo_c is not None:  # k >= row + c: rows up to k - c
            return _R0, f"min({_R1}, {_plus(k, 1 - self.lo_c)})"
        return f"max({_R0}, {_plus(k, 1 - self.hi_c)})", _R1  # type: ignore[operator]

    def remainder(self) -> tuple[str, str]:
        if self.lo_c is not None:
            return self.lo, f"min({self.hi}, {_plus(_R1, self.lo_c - 1)})"
        start = _plus(_R0, self.hi_c)  # type: ignore[arg-type]
        return (start if self.lo == "0" else f"max({self.lo}, {start})"), self.hi
