"""Declared kernel parameters: what each argument of a public kernel is, stated once.

A :class:`~hetlab.core.spec.KernelSpec` lists its parameters as :class:`Param` objects, in the
order of the public function's signature. The declaration is what the rest of hetlab checks
against, so the facts about an argument cannot drift apart:

* the public function's signature and the spec's ``validate`` must name exactly these
  parameters, in this order, with these defaults (the conformance suite checks);
* every declared parameter is fed every bad-input class of its kind (:func:`bad_values`) and
  must be refused with an :class:`~hetlab.errors.InvalidInputError` naming it;
* the ``device`` line of each public docstring is filled from the registry
  (:func:`device_line`), never typed.

Kinds
-----
``"points"``  array-like of shape (n, 3), real, finite
``"array"``   a real array-like; ``ndim`` gives its rank (shapes that couple arguments are
              the validator's business)
``"int"``     a Python/NumPy integer (not bool) in ``[lo, hi]``; bounds may depend on the other
              arguments, so ``lo``/``hi`` are the *static* bounds (None: none)
``"float"``   a real number; ``positive`` adds ``> 0``; always finite
``"choice"``  one of ``choices``
``"bool"``    a Python/NumPy bool (not an int, not a string)
``"csr"``     a sparse matrix (CSR, or anything :func:`hetlab.sparse.csr` converts)
``"quantized"`` a :class:`hetlab.quant.QuantizedMatrix`
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Param", "KINDS", "bad_values", "device_line", "REQUIRED"]

KINDS = ("points", "array", "int", "float", "choice", "bool", "csr", "quantized")


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: the default of a parameter that has none
REQUIRED: Any = _Required()


@dataclass(frozen=True)
class Param:
    """One parameter of a kernel's public function.

    Attributes
    ----------
    name : str
        The keyword, as in the public signature.
    kind : str
        One of :data:`KINDS`.
    doc : str
        One line: shape, dtype and unit (what the docstring says of it).
    default : Any
        The default value, or :data:`REQUIRED`.
    lo, hi : int or float, optional
        Static inclusive bounds of an ``"int"`` (or ``"float"``) parameter.
    positive : bool
        A ``"float"`` that must be > 0.
    ndim : int, optional
        The rank of an ``"array"``.
    choices : tuple of str
        The values of a ``"choice"``.
    empty_ok : bool
        Whether an array of length 0 is valid (queries, centres).
    none_ok : bool
        Whether ``None`` is a valid value (an optional argument, e.g. ``bits=None``: no
        quantization); the ``type:None`` bad-input class is then not fed to it.
    """

    name: str
    kind: str
    doc: str = ""
    default: Any = REQUIRED
    lo: float | None = None
    hi: float | None = None
    positive: bool = False
    ndim: int | None = None
    choices: tuple[str, ...] = ()
    empty_ok: bool = False
    none_ok: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"Param {self.name}: kind must be one of {KINDS}; got {self.kind!r}")
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"Param {self.name}: a choice needs choices")

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


def _array_bad(p: Param, good: np.ndarray) -> Iterator[tuple[str, Any]]:
    yield "type:None", None
    yield "type:str", "abc"
    yield "dtype:complex", good.astype(np.complex128)
    yield "dtype:str", good.astype(str)
    yield "shape:extra-axis", good[..., None]
    if good.ndim > 1:
        yield "shape:ravel", good.ravel()
    if good.size:
        for label, v in (("value:nan", np.nan), ("value:inf", np.inf)):
            bad = good.astype(np.float64)
            bad.flat[0] = v
            yield label, bad
    if not p.empty_ok and good.ndim:
        yield "empty", good[:0]


def bad_values(p: Param, good: Any) -> Iterator[tuple[str, Any]]:
    """``(input class, value)`` pairs every validator must refuse for parameter ``p``.

    ``good`` is a valid value of the parameter (from the spec's generated case), from which
    the array classes are derived (wrong rank, dtype, NaN/inf, empty).
    """
    for label, value in _bad_values(p, good):
        if not (p.none_ok and value is None):
            yield label, value


def _bad_values(p: Param, good: Any) -> Iterator[tuple[str, Any]]:
    if p.kind in ("points", "array"):
        yield from _array_bad(p, np.asarray(good))
        if p.kind == "points":
            yield "shape:two-columns", np.asarray(good)[:, :2]
    elif p.kind == "int":
        yield "type:float", 2.5
        yield "type:bool", True
        yield "type:None", None
        yield "type:str", "3"
        if p.lo is not None:
            yield "range:below", int(p.lo) - 1
        if p.hi is not None:
            yield "range:above", int(p.hi) + 1
        yield "range:huge", 2**62
    elif p.kind == "float":
        yield "value:nan", float("nan")
        yield "value:inf", float("inf")
        yield "type:None", None
        yield "type:str", "1"
        yield "type:bool", True
        if p.positive:
            yield "range:zero", 0.0
            yield "range:negative", -1.0
    elif p.kind == "choice":
        yield "choice:unknown", "no-such-choice"
        yield "type:None", None
        yield "type:int", 3
    elif p.kind == "bool":
        yield "type:None", None
        yield "type:int", 1
        yield "type:str", "True"
    elif p.kind == "csr":  # dense arrays and lists convert: not bad input
        yield "type:None", None
        yield "type:str", "matrix"
    elif p.kind == "quantized":
        yield "type:None", None
        yield "type:str", "matrix"
        yield "type:dense", np.ones((2, 32), np.float32)


def device_line(backends: Sequence[str]) -> str:
    """The ``device`` entry's type line of a public docstring, from the registered backends."""
    return "{" + ", ".join(f'"{b}"' for b in backends) + "} or Backend, optional"
