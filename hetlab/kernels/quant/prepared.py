"""``GemvPlan``: one quantized matrix's GEMV prepared once, for calls in a loop (decode).

Why
---
``hl.gemv_q(qw, x, device="numba")`` goes through hetlab's dispatch on every call: it finds
where each array lives, validates ``qw`` and ``x``, picks the backend and the W4 path, and
builds the kernel's arguments. That is about 15 µs of Python on a warm interpreter, but a
W4 GEMV streams the whole matrix through the caches, and right after it the same Python
steps took 60–90 µs (measured on this project's 2-core Xeon: a tiny ``gemv_q`` call after a
4096×4096 W4 GEMV or after a 16 MB NumPy sum, against 15 µs after nothing): the
interpreter's code and objects were evicted. At 4096×4096 that is a fifth of the call. A
plan checks ``qw`` once and keeps the kernel's arguments; each call checks only the type,
dtype and shape of ``x`` and makes one numba call, which is how a decode loop calls the same
matrices again and again. Cold, every Python step counts: ``x.sum()`` for the NaN/inf check
took 7–9 µs after an 8 MB stream (2 µs warm), so NaN/inf are found on the output instead
(one element, see ``__call__``).

Results are those of ``hl.gemv_q(qw, x, device="numba")`` (the same kernels on the same
arguments; the W4 path is looked up at each call, so :func:`~.numba.use_w4_path` applies).
``hl.gemv_q(qw, x, device="numba")`` itself takes the same route (:func:`w4_call`, kept per
matrix) when ``x`` is already a C-contiguous float32 vector of the right length; any other
``x``, and a NaN/inf in it, go through the dispatch and its checks.
"""

from __future__ import annotations

import math
import weakref
from typing import Any

import numpy as np

from ...errors import InvalidInputError
from .formats import QuantizedMatrix
from .spec import _check_activations, _check_qw

__all__ = ["GemvPlan", "W4Call", "w4_call"]


class W4Call:
    """The W4 fast kernel's call for one matrix: its arguments, kept (no reference to the
    matrix itself, so a cache keyed by the matrix can let it go).

    ``self(x, y)`` runs ``y = W @ x`` for a C-contiguous float32 ``x`` of shape
    :attr:`xshape` (the caller checks) into float32 ``y`` (out,) and returns whether
    ``y`` is free of NaN/inf as far as one output tells: every W4 kernel subtracts
    ``Σ_g s·z·Σ x`` from every output row, so a non-finite ``x`` makes every ``y[r]``
    non-finite (no fastmath flag assumes finite values; ``tests/test_quant_gemv_plan.py``
    checks it on every path). A non-finite ``y[0]`` from finite ``x`` (overflow) also
    returns False; the caller's checks then decide.
    """

    __slots__ = ("_default", "_gs", "_head", "_kernels", "_qn", "out_features", "xshape")

    def __init__(self, qw: QuantizedMatrix) -> None:
        from . import numba as qn  # here: importing hetlab must not import numba

        self._qn = qn
        self._head, _ = qn._common(qw)
        self._gs = qw.group_size
        self.out_features = qw.out_features
        self.xshape = (qw.in_features,)
        self._kernels = qn._W4_KERNELS["gemv"]
        self._default = qn._W4_DEFAULT["gemv"]
        qn.w4_path("gemv")  # logs the default path (once per process)

    def __call__(self, x: np.ndarray, y: np.ndarray) -> bool:
        qn = self._qn
        # the path as qn.w4_path("gemv") picks it, without its logging call
        kernel = self._kernels[qn._w4_forced or self._default]
        kernel(*self._head, x, qn._F16, self._gs, y, qn._chunks(self.out_features))
        return not self.out_features or math.isfinite(y[0])


#: one :class:`W4Call` (or None: not a W4 fast format) per host matrix, for hl.gemv_q
_CALLS: weakref.WeakKeyDictionary[QuantizedMatrix, W4Call | None] = weakref.WeakKeyDictionary()


def w4_call(qw: Any) -> W4Call | None:
    """The kept :class:`W4Call` of a host :class:`~.formats.QuantizedMatrix` in a W4 fast
    format (group size a multiple of 128, rows unpadded), built on first use; None for
    anything else (other formats, CuPy arrays, other types). Needs numba (the caller has
    chosen the numba backend)."""
    if type(qw) is not QuantizedMatrix or type(qw.qweight) is not np.ndarray:
        return None
    try:
        return _CALLS[qw]
    except KeyError:
        pass
    from . import numba as qn

    call = W4Call(qw) if qn._w4_fast(qw) and qw.padded_in == qw.in_features else None
    _CALLS[qw] = call
    return call


class GemvPlan:
    """``y = W @ x`` for one :class:`~.formats.QuantizedMatrix` ``W``, on the numba backend.

    Parameters
    ----------
    qw : QuantizedMatrix
        Checked once, here. It must not be changed afterwards (its arrays are kept).

    Attributes
    ----------
    qw : QuantizedMatrix
    in_features, out_features : int

    Examples
    --------
    >>> import numpy as np
    >>> import hetlab as hl
    >>> from hetlab import quant
    >>> rng = np.random.default_rng(0)
    >>> qw = quant.quantize(rng.normal(0, 0.05, (64, 256)).astype(np.float32), 4, 128)
    >>> run = quant.GemvPlan(qw)
    >>> x = rng.standard_normal(256).astype(np.float32)
    >>> bool(np.array_equal(run(x), hl.gemv_q(qw, x, device="numba")))
    True
    """

    def __init__(self, qw: QuantizedMatrix) -> None:
        from . import numba as qn  # here: importing hetlab must not import numba

        self._qn = qn
        self.qw = _check_qw("GemvPlan", qw)
        self.in_features, self.out_features = qw.in_features, qw.out_features
        self._call = w4_call(qw)

    def __call__(self, x: Any, out: np.ndarray | None = None) -> np.ndarray:
        """``y`` (out_features,) float32 for ``x`` (in_features,) float16/32/64.

        ``out``: an optional float32 C-contiguous (out_features,) array to write ``y`` into
        (returned). Raises :class:`~hetlab.errors.InvalidInputError` for a wrong shape or
        dtype, NaN/inf in ``x``, or a bad ``out`` (when ``x`` holds NaN/inf, ``out`` may have
        been written before the error is raised).
        """
        call = self._call
        if not (call is not None and type(x) is np.ndarray and x.dtype == np.float32
                and x.shape == call.xshape and x.flags.c_contiguous):
            x = _check_activations("GemvPlan", "x", x, self.qw, 1)
            if call is None:
                return self._into(self._qn.gemv_q(self.qw, x), out)
        y = self._out(out)
        # NaN/inf found on the output (W4Call's doc); a non-finite y[0] from finite x
        # (overflow) passes the check below and is returned
        if not call(x, y):
            _check_activations("GemvPlan", "x", x, self.qw, 1)  # raises, naming x
        return y

    def _out(self, out: np.ndarray | None) -> np.ndarray:
        if out is None:
            return np.empty(self.out_features, np.float32)
        if not (type(out) is np.ndarray and out.dtype == np.float32
                and out.shape == (self.out_features,) and out.flags.c_contiguous
                and out.flags.writeable):
            raise InvalidInputError(
                f"GemvPlan: out must be a writeable C-contiguous float32 array of shape "
                f"({self.out_features},); got {type(out).__name__} "
                f"{getattr(out, 'dtype', '')} {getattr(out, 'shape', '')}.")
        return out

    def _into(self, y: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        if out is None:
            return y
        self._out(out)[:] = y
        return out

    def __repr__(self) -> str:
        return (f"GemvPlan(W{self.qw.bits} g{self.qw.group_size}, "
                f"{self.out_features}×{self.in_features})")
