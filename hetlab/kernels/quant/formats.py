"""Group-wise integer weight formats: :class:`QuantizedMatrix` and :func:`quantize`.

Layout
------
A weight matrix ``w`` of shape ``(out, in)`` is cut along ``in`` into groups of
``group_size`` weights (a multiple of 32). Each group has one float16 scale ``s`` and, when
asymmetric, one float16 zero point ``z`` (an integer stored in float16, exact up to 2048).
A weight's integer *code* ``q`` (``0 ≤ q < 2**bits``) dequantizes to ``(q - z) * s``;
symmetric formats use the fixed zero point ``z = 2**(bits-1)``.

Packing into uint32 words (bit order)
-------------------------------------
Every group occupies ``group_size * bits / 32`` whole words of its row, so a kernel streams
groups without a value straddling two groups. Within a group the code is split into *bit
planes* of ``pb`` bits (8-, 4- and 2-bit formats: one plane of ``pb = bits``; 3-bit: a
2-bit plane holding ``q & 3`` followed by a 1-bit plane holding ``q >> 2``, so 32 weights
take 2 + 1 = 3 words and no value straddles a word). In a plane with ``per = 32 // pb``
values per word, value ``k`` of the group lives in that plane's word ``k // per``, bits
``[pb * (k % per), pb * (k % per) + pb)`` — least-significant bits first. The planes follow
each other: group ``g`` of row ``r`` is ``qweight[r, g*wpg:(g+1)*wpg]`` with
``wpg = group_size * bits // 32``, its first plane first.

Rows whose length is not a multiple of ``group_size`` are padded with zero weights up to
one (documented choice: pad, not refuse); ``in_features`` keeps the true length and
:meth:`QuantizedMatrix.dequantize` drops the padding. Because every group's range includes
0, zero is exact in every format, so the padding never changes a result.
"""

from __future__ import annotations

import numbers
import os
import zipfile
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...core.aligned import aligned_copy, aligned_empty, is_aligned
from ...core.owned import OwnsArrays
from ...core.validation import (
    array_module,
    as_array,
    cast_finite,
    check_allocation,
    owned_copy,
    read_only,
)
from ...errors import InvalidInputError

__all__ = [
    "BITS",
    "QuantizedMatrix",
    "quantize",
    "save",
    "load",
    "planes",
    "pack_codes",
    "unpack_codes",
    "check_bits",
    "check_group_size",
    "F16_TO_F32",
]

#: supported code widths
BITS = (2, 3, 4, 8)
#: float16 bit pattern (uint16) → float32 value, exact: how kernels without a float16 type (numba
#: on the CPU, numba.cuda) decode the stored scales and zero points
F16_TO_F32 = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
#: largest group (2**24 weights: far beyond any row a kernel streams)
MAX_GROUP_SIZE = 1 << 24
#: rows quantized at once (bounds temporary memory to ~ROW_BLOCK × in float64)
_ROW_BLOCK = 512
#: what :meth:`QuantizedMatrix.save` writes as ``format`` and ``packing`` (checked on load)
FILE_FORMAT = "hetlab.QuantizedMatrix"
FILE_VERSION = 1
PACKING = "uint32-words/lsb-first/bit-planes/word-aligned-groups"
_FIELDS = ("qweight", "scales", "zeros", "bits", "group_size", "in_features")


class _MissingFileError(InvalidInputError, FileNotFoundError):
    """A file to load does not exist (caught by ``except FileNotFoundError`` too)."""


def planes(bits: int) -> tuple[tuple[int, int], ...]:
    """Bit planes of a format as ``(plane_bits, shift)`` pairs, in storage order."""
    return ((2, 0), (1, 2)) if bits == 3 else ((bits, 0),)


def check_bits(where: str, bits: Any) -> int:
    """Return ``bits`` after checking it is one of :data:`BITS`."""
    if isinstance(bits, bool) or not isinstance(bits, numbers.Integral) or int(bits) not in BITS:
        raise InvalidInputError(f"{where}: bits must be one of {BITS}; got {bits!r}.")
    return int(bits)


def check_group_size(where: str, group_size: Any) -> int:
    """Return ``group_size`` after checking it is a positive multiple of 32."""
    ok = isinstance(group_size, numbers.Integral) and not isinstance(group_size, bool)
    if not ok or not 32 <= int(group_size) <= MAX_GROUP_SIZE or int(group_size) % 32:
        raise InvalidInputError(
            f"{where}: group_size must be a positive multiple of 32 (32, 64, 128, …, at most "
            f"{MAX_GROUP_SIZE}) so every group fills whole 32-bit words; got {group_size!r}."
        )
    return int(group_size)


def pack_codes(codes: np.ndarray, bits: int, group_size: int) -> np.ndarray:
    """Pack integer codes of shape (out, n), n a multiple of ``group_size``, into uint32 words.

    Returns an array of shape (out, n * bits // 32), uint32, in the layout of the module
    docstring. Codes must already lie in ``[0, 2**bits)``.

    Raises
    ------
    InvalidInputError
        bits/group_size invalid; codes not a 2-D integer array whose rows are whole groups,
        or values outside ``[0, 2**bits)``.
    """
    bits = check_bits("pack_codes", bits)
    group_size = check_group_size("pack_codes", group_size)
    codes = _host(as_array("pack_codes", "codes", codes))
    if (codes.dtype.kind not in "iu" or codes.ndim != 2 or codes.shape[1] % group_size
            or codes.size == 0):
        raise InvalidInputError(
            f"pack_codes: codes must be a non-empty 2-D integer array of shape (out, n_groups * "
            f"{group_size}); got {codes.dtype} of shape {codes.shape}. Convert with "
            "codes.astype(np.uint8) and pad rows to whole groups."
        )
    if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= 2**bits):
        raise InvalidInputError(
            f"pack_codes: codes must lie in [0, {2**bits}) for bits={bits}; got "
            f"[{codes.min()}, {codes.max()}]."
        )
    out, n = codes.shape
    ng = n // group_size
    q = codes.astype(np.uint32).reshape(out, ng, group_size)
    parts = []
    for pb, shift in planes(bits):
        per = 32 // pb
        v = ((q >> shift) & ((1 << pb) - 1)).reshape(out, ng, group_size // per, per)
        words = np.zeros(v.shape[:3], dtype=np.uint32)
        for j in range(per):
            words |= v[..., j] << np.uint32(pb * j)
        parts.append(words)
    return np.ascontiguousarray(np.concatenate(parts, axis=2).reshape(out, -1))


def unpack_codes(qweight: np.ndarray, bits: int, group_size: int) -> np.ndarray:
    """Inverse of :func:`pack_codes`: uint32 (out, w) → uint8 codes (out, w * 32 // bits).

    ``qweight`` must be a 2-D uint32 array whose rows hold whole groups
    (``group_size * bits // 32`` words each); InvalidInputError otherwise.
    """
    bits = check_bits("unpack_codes", bits)
    group_size = check_group_size("unpack_codes", group_size)
    qweight = _host(as_array("unpack_codes", "qweight", qweight))
    wpg = group_size * bits // 32
    if qweight.dtype != np.uint32 or qweight.ndim != 2 or qweight.shape[1] % wpg:
        raise InvalidInputError(
            f"unpack_codes: qweight must be a 2-D uint32 array with a multiple of {wpg} words "
            f"per row (bits={bits}, group_size={group_size}); got {qweight.dtype} of shape "
            f"{qweight.shape}. Pass the packed words of pack_codes or QuantizedMatrix.qweight."
        )
    out = qweight.shape[0]
    ng = qweight.shape[1] // wpg
    words = np.asarray(qweight).reshape(out, ng, wpg)
    codes = np.zeros((out, ng, group_size), dtype=np.uint8)
    start = 0
    for pb, shift in planes(bits):
        per = 32 // pb
        n_words = group_size // per
        w = words[..., start : start + n_words]
        vals = np.empty((out, ng, n_words, per), dtype=np.uint8)
        for j in range(per):
            vals[..., j] = (w >> np.uint32(pb * j)) & np.uint32((1 << pb) - 1)
        codes |= vals.reshape(out, ng, group_size) << np.uint8(shift)
        start += n_words
    return codes.reshape(out, ng * group_size)


def _line_aligned(qw: Any, own: bool) -> Any:
    """The codes to keep, read-only: host codes on a cache-line boundary (the W4 kernels load
    them 64 bytes at a time; :mod:`hetlab.core.aligned` says what a split line costs), copied
    when ``own`` or when they start elsewhere; device arrays as :func:`owned_copy` keeps them."""
    if not isinstance(qw, np.ndarray):
        return owned_copy(qw) if own else qw
    if own or not is_aligned(qw) or not qw.flags.c_contiguous:
        qw = aligned_copy(qw)
    return read_only(qw)


@dataclass(frozen=True, eq=False)
class QuantizedMatrix(OwnsArrays):
    """A weight matrix of shape ``(out_features, in_features)`` in a group-wise integer format.

    Attributes
    ----------
    qweight : ndarray of shape (out, n_groups * group_size * bits // 32), uint32
        Packed codes (layout and bit order: module docstring).
    scales : ndarray of shape (out, n_groups), float16
    zeros : ndarray of shape (out, n_groups), float16, or None
        Zero points (integer-valued) of an asymmetric format; None when symmetric.
    bits : int
        Code width: 2, 3, 4 or 8.
    group_size : int
        Weights per group along ``in`` (a multiple of 32).
    in_features : int
        True row length (the last group may be padded with zeros).

    Arrays may be NumPy or CuPy (the GPU backend moves them with :meth:`map_arrays`).

    Validation (at construction; :class:`~hetlab.errors.InvalidInputError` otherwise):
    shapes and dtypes as above; scales finite and ``>= 0`` (0: a group of zeros); zero
    points whole numbers in ``[0, 2**bits - 1]``, the code range.

    Ownership: the matrix keeps private copies of the arrays it is given, NumPy ones
    read-only, so later writes to the caller's arrays cannot change it (CuPy arrays are
    copied on their device). :func:`quantize` and :meth:`map_arrays` hand over fresh arrays
    that are adopted without a copy. NumPy codes are kept on a 64-byte (cache-line) boundary,
    copied there when they start elsewhere (the W4 kernels read them 64 bytes at a time).

    :meth:`save` / :meth:`load` store it in a ``.npz`` file (exact round trip).
    """

    qweight: Any
    scales: Any
    zeros: Any
    bits: int
    group_size: int
    in_features: int

    def __post_init__(self) -> None:
        self._validate(own=True)

    @classmethod
    def _adopt(cls, qweight: Any, scales: Any, zeros: Any, bits: int, group_size: int,
               in_features: int) -> QuantizedMatrix:
        """Validate and keep arrays that nobody else holds (hetlab's own), without a copy."""
        self = object.__new__(cls)
        for name, value in zip(_FIELDS, (qweight, scales, zeros, bits, group_size,
                                         in_features), strict=True):
            object.__setattr__(self, name, value)
        self._validate(own=False)
        return self

    def _validate(self, *, own: bool) -> None:
        where = "QuantizedMatrix"
        bits = check_bits(where, self.bits)
        gs = check_group_size(where, self.group_size)
        qw, sc, z = self.qweight, self.scales, self.zeros
        if getattr(qw, "dtype", None) != np.uint32 or getattr(qw, "ndim", 0) != 2:
            raise InvalidInputError(
                f"{where}: qweight must be a 2-D uint32 array; got "
                f"{getattr(qw, 'dtype', type(qw).__name__)} of shape {getattr(qw, 'shape', ())}."
            )
        out, n_words = qw.shape
        wpg = gs * bits // 32
        if n_words % wpg or n_words == 0:
            raise InvalidInputError(
                f"{where}: qweight must have a positive multiple of {wpg} words per row for "
                f"bits={bits}, group_size={gs}; got {n_words}."
            )
        ng = n_words // wpg
        for name, arr in (("scales", sc), ("zeros", z)):
            if arr is None and name == "zeros":
                continue
            if getattr(arr, "dtype", None) != np.float16 or tuple(arr.shape) != (out, ng):
                raise InvalidInputError(
                    f"{where}: {name} must be a float16 array of shape {(out, ng)}; got "
                    f"{getattr(arr, 'dtype', type(arr).__name__)} of shape "
                    f"{tuple(getattr(arr, 'shape', ()))}."
                )
        n_in = self.in_features
        if (isinstance(n_in, bool) or not isinstance(n_in, numbers.Integral)
                or not ng * gs - gs < n_in <= ng * gs):
            raise InvalidInputError(
                f"{where}: in_features must be an int in ({ng * gs - gs}, {ng * gs}] for "
                f"{ng} groups of {gs}; got {n_in!r}."
            )
        xp = array_module(sc)
        s32 = sc.astype(xp.float32)
        bad = ~xp.isfinite(s32) | (s32 < 0)
        if bool(bad.any()):
            r, g = (int(i) for i in xp.argwhere(bad)[0])
            raise InvalidInputError(
                f"{where}: scales must be finite and >= 0 (a group's step size); got "
                f"{float(s32[r, g])} at [{r}, {g}] ({int(bad.sum())} bad value(s))."
            )
        if z is not None:
            qmax = 2**bits - 1
            z32 = z.astype(xp.float32)
            bad = ~xp.isfinite(z32) | (z32 < 0) | (z32 > qmax) | (z32 != xp.rint(z32))
            if bool(bad.any()):
                r, g = (int(i) for i in xp.argwhere(bad)[0])
                raise InvalidInputError(
                    f"{where}: zeros must be whole numbers in [0, {qmax}] (the code range of "
                    f"{bits} bits); got {float(z32[r, g])} at [{r}, {g}] ({int(bad.sum())} bad "
                    "value(s))."
                )
        keep = owned_copy if own else read_only
        for name, value in (("qweight", _line_aligned(qw, own)), ("scales", keep(sc)),
                            ("zeros", None if z is None else keep(z)), ("bits", bits),
                            ("group_size", gs), ("in_features", int(n_in))):
            object.__setattr__(self, name, value)

    # --- shape and size -----------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, int]:
        """``(out_features, in_features)`` of the matrix represented."""
        return (int(self.qweight.shape[0]), int(self.in_features))

    @property
    def out_features(self) -> int:
        return int(self.qweight.shape[0])

    @property
    def n_groups(self) -> int:
        return int(self.scales.shape[1])

    @property
    def padded_in(self) -> int:
        """Row length including the zero padding of the last group."""
        return self.n_groups * self.group_size

    @property
    def symmetric(self) -> bool:
        return self.zeros is None

    @property
    def nbytes(self) -> int:
        """Bytes of packed codes, scales and zero points."""
        return int(self.qweight.nbytes + self.scales.nbytes
                   + (0 if self.zeros is None else self.zeros.nbytes))

    @property
    def bits_per_weight(self) -> float:
        """Storage bits per real weight, scales, zero points and padding included.

        4-bit g128: 4.25 asymmetric (fp16 scale + fp16 zero per 128 weights), 4.125 symmetric.
        """
        out, n_in = self.shape
        return 8.0 * self.nbytes / (out * n_in)

    # --- conversions --------------------------------------------------------------------

    def codes(self) -> np.ndarray:
        """Unpacked integer codes, shape (out, padded_in), uint8 (host)."""
        return unpack_codes(_host(self.qweight), self.bits, self.group_size)

    def zero_points(self) -> np.ndarray:
        """Zero points of shape (out, n_groups), float32 (the fixed 2**(bits-1) if symmetric)."""
        if self.zeros is None:
            return np.full(self.scales.shape, 2.0 ** (self.bits - 1), dtype=np.float32)
        return _host(self.zeros).astype(np.float32)

    def dequantize(self, dtype: Any = np.float32, rows: slice | None = None) -> np.ndarray:
        """The represented weights ``(q - z) * s``, shape (out, in_features), on the host.

        Exact in float32: ``q - z`` is an integer below 2**8 in magnitude (for integer zero
        points) and ``s`` has an 11-bit significand. ``rows`` selects a row slice.
        """
        rows = rows if rows is not None else slice(None)
        q = unpack_codes(_host(self.qweight[rows]), self.bits, self.group_size)
        out = q.shape[0]
        s = _host(self.scales[rows]).astype(np.float32)[:, :, None]
        z = self.zero_points()[rows][:, :, None]
        w = (q.reshape(out, self.n_groups, self.group_size).astype(np.float32) - z) * s
        return w.reshape(out, -1)[:, : self.in_features].astype(dtype, copy=False)

    def arrays(self) -> tuple[Any, ...]:
        """Its arrays (codes, scales and, if asymmetric, zero points): what dispatch inspects
        to find where the matrix lives, without building a copy (:meth:`map_arrays` would
        re-validate one on every call)."""
        return (self.qweight, self.scales) + (() if self.zeros is None else (self.zeros,))

    def map_arrays(self, fn: Any) -> QuantizedMatrix:
        """A copy with ``fn`` applied to every array (e.g. ``cupy.asarray``), validated.

        ``fn`` must return fresh arrays (or the matrix's own): they are adopted without a
        further copy."""
        return QuantizedMatrix._adopt(
            fn(self.qweight), fn(self.scales), None if self.zeros is None else fn(self.zeros),
            self.bits, self.group_size, self.in_features,
        )

    @classmethod
    def from_codes(cls, codes: np.ndarray, scales: np.ndarray, zeros: np.ndarray | None,
                   bits: int, group_size: int, in_features: int | None = None
                   ) -> QuantizedMatrix:
        """Pack codes of shape (out, n_groups * group_size) (integers in [0, 2**bits)).

        ``scales`` and ``zeros`` are converted to float16 (values beyond its range refused).
        """
        where = "QuantizedMatrix.from_codes"
        bits = check_bits(where, bits)
        group_size = check_group_size(where, group_size)
        codes = as_array(where, "codes", codes)
        if codes.ndim != 2 or codes.shape[1] % group_size:
            raise InvalidInputError(
                f"{where}: codes must have shape (out, n_groups * {group_size}); got "
                f"{codes.shape}."
            )
        if codes.size and codes.dtype.kind not in "iu":
            raise InvalidInputError(
                f"{where}: codes must hold integers; got dtype {codes.dtype}."
            )
        if codes.size and (int(codes.min()) < 0 or int(codes.max()) >= 2**bits):
            raise InvalidInputError(
                f"{where}: codes must lie in [0, {2**bits}); got "
                f"[{codes.min()}, {codes.max()}]."
            )
        packed = pack_codes(codes, bits, group_size)

        def f16(name: str, a: Any) -> np.ndarray:
            arr = as_array(where, name, a)
            if arr.dtype.kind not in "fiu":
                raise InvalidInputError(
                    f"{where}: {name} must hold real numbers; got dtype {arr.dtype}."
                )
            return cast_finite(where, name, arr, np.float16)

        return cls(packed, f16("scales", scales), None if zeros is None else f16("zeros", zeros),
                   bits, group_size, codes.shape[1] if in_features is None else in_features)

    # --- files --------------------------------------------------------------------------

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the matrix to ``path`` as a ``.npz`` file (exactly that path; no suffix is
        added), readable by :meth:`load`. ``path`` is a str or ``os.PathLike``.

        Stores the arrays as they are (uint32 codes, float16 scales and zero points) and
        ``bits``, ``group_size``, ``in_features``, the packing layout and a format tag, so
        :meth:`load` returns an identical matrix. Device arrays are copied to the host.
        """
        fields: dict[str, Any] = {
            "format": np.array(FILE_FORMAT), "version": np.int64(FILE_VERSION),
            "packing": np.array(PACKING), "bits": np.int64(self.bits),
            "group_size": np.int64(self.group_size), "in_features": np.int64(self.in_features),
            "qweight": _host(self.qweight), "scales": _host(self.scales),
            "has_zeros": np.bool_(self.zeros is not None),
        }
        if self.zeros is not None:
            fields["zeros"] = _host(self.zeros)
        with open(_check_save_path(path), "wb") as fh:
            np.savez(fh, **fields)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> QuantizedMatrix:
        """Read a matrix written by :meth:`save`.

        Raises
        ------
        InvalidInputError
            ``path`` is missing (also a ``FileNotFoundError``), not an ``.npz`` file, or not
            one :meth:`save` wrote (format tag, version, packing, a missing or malformed
            field), or its contents fail the constructor's validation.
        """
        where = "QuantizedMatrix.load"
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidInputError(
                f"{where}: path must be a str or os.PathLike; got {type(path).__name__}."
            )
        p = os.fspath(path)
        if not isinstance(p, str):
            raise InvalidInputError(f"{where}: path must be a text path; got {p!r}.")
        if not os.path.isfile(p):
            raise _MissingFileError(f"{where}: path must be an existing file; got {p!r}.")
        try:
            data = np.load(p, allow_pickle=False)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise InvalidInputError(
                f"{where}: path must be a .npz file written by QuantizedMatrix.save; got {p!r} "
                f"({type(exc).__name__}: {exc})."
            ) from None
        if not isinstance(data, np.lib.npyio.NpzFile):
            raise InvalidInputError(
                f"{where}: path must be a .npz file written by QuantizedMatrix.save; got {p!r} "
                "(a single .npy array)."
            )
        try:
            with data:
                fields = {k: data[k] for k in data.files}
        except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as exc:
            raise InvalidInputError(
                f"{where}: path {p!r} is not a readable .npz file ({type(exc).__name__}: {exc})."
            ) from None
        return cls._from_fields(where, p, fields)

    @classmethod
    def _from_fields(cls, where: str, p: str, f: dict[str, np.ndarray]) -> QuantizedMatrix:
        def scalar(key: str, kind: str) -> Any:
            if key not in f:
                raise InvalidInputError(
                    f"{where}: {p!r} is not a QuantizedMatrix file: field {key!r} is missing. "
                    "Write it with QuantizedMatrix.save."
                )
            v = f[key]
            if v.shape != () or v.dtype.kind not in kind:
                raise InvalidInputError(
                    f"{where}: {p!r} is not a QuantizedMatrix file: field {key!r} must be a "
                    f"scalar of kind {kind!r}; got {v.dtype} of shape {v.shape}."
                )
            return v.item()

        if scalar("format", "U") != FILE_FORMAT:
            raise InvalidInputError(
                f"{where}: {p!r} is not a QuantizedMatrix file (format tag {f['format']!r}, "
                f"expected {FILE_FORMAT!r})."
            )
        version = scalar("version", "iu")
        if version != FILE_VERSION:
            raise InvalidInputError(
                f"{where}: {p!r} has file version {version}; this hetlab reads version "
                f"{FILE_VERSION}."
            )
        packing = scalar("packing", "U")
        if packing != PACKING:
            raise InvalidInputError(
                f"{where}: {p!r} uses packing {packing!r}; this hetlab reads {PACKING!r}."
            )
        has_zeros = scalar("has_zeros", "b")
        for key in ("qweight", "scales") + (("zeros",) if has_zeros else ()):
            if key not in f:
                raise InvalidInputError(
                    f"{where}: {p!r} is not a QuantizedMatrix file: field {key!r} is missing."
                )
        return cls._adopt(f["qweight"], f["scales"], f["zeros"] if has_zeros else None,
                          scalar("bits", "iu"), scalar("group_size", "iu"),
                          scalar("in_features", "iu"))

    def __repr__(self) -> str:
        kind = "sym" if self.symmetric else "asym"
        return (f"QuantizedMatrix(shape={self.shape}, bits={self.bits}, group_size="
                f"{self.group_size}, {kind}, {self.bits_per_weight:.3f} bits/weight)")


def save(qw: QuantizedMatrix, path: str | os.PathLike[str]) -> None:
    """Write ``qw`` to ``path`` (``.npz``): :meth:`QuantizedMatrix.save`."""
    if not isinstance(qw, QuantizedMatrix):
        raise InvalidInputError(
            f"quant.save: qw must be a QuantizedMatrix; got {type(qw).__name__}."
        )
    qw.save(path)


def load(path: str | os.PathLike[str]) -> QuantizedMatrix:
    """Read a matrix written by :func:`save`: :meth:`QuantizedMatrix.load`."""
    return QuantizedMatrix.load(path)


def _host(a: Any) -> np.ndarray:
    return a if isinstance(a, np.ndarray) else a.get()


def _check_save_path(path: Any) -> str:
    from ...core.args import path_arg

    return path_arg("QuantizedMatrix.save", "path", path)


def check_weights(where: str, w: Any) -> np.ndarray:
    """Validate a weight matrix: 2-D, non-empty, float16/32/64, finite (wider floats are
    narrowed to float64, refused when a value would overflow it)."""
    arr = as_array(where, "w", w)
    if array_module(arr) is not np:
        arr = arr.get()
    if arr.dtype.kind != "f":
        raise InvalidInputError(
            f"{where}: w must be a float16/float32/float64 array; got dtype {arr.dtype} "
            f"(convert with w.astype(np.float32))."
        )
    if arr.ndim != 2 or 0 in arr.shape:
        raise InvalidInputError(
            f"{where}: w must be a non-empty 2-D array (out_features, in_features); got shape "
            f"{arr.shape}."
        )
    finite = np.isfinite(arr)
    if not finite.all():
        r, c = np.argwhere(~finite)[0]
        raise InvalidInputError(
            f"{where}: w must be finite; got {int((~finite).sum())} NaN/inf value(s), first at "
            f"[{r}, {c}]."
        )
    if arr.dtype.itemsize > 8:
        arr = cast_finite(where, "w", arr, np.float64)
    return arr


def _scales_and_codes(g: np.ndarray, bits: int, symmetric: bool
                      ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Round-to-nearest of groups ``g`` (rows, n_groups, group_size), float64.

    Returns (scales fp16, zeros fp16 or None, codes uint8). The scale is rounded to float16
    first and the codes computed with the rounded scale; a group whose scale is 0 (all zero,
    or too small for float16) gets codes equal to its zero point, i.e. dequantizes to 0.
    """
    qmax = 2**bits - 1
    if symmetric:
        half = 2 ** (bits - 1)
        s = np.abs(g).max(axis=2) / (half - 1)
        z = np.full(s.shape, float(half))
    else:
        lo = np.minimum(g.min(axis=2), 0.0)
        hi = np.maximum(g.max(axis=2), 0.0)
        s = (hi - lo) / qmax
    with np.errstate(over="ignore"):
        s16 = s.astype(np.float16)
    if not np.isfinite(s16).all():
        raise InvalidInputError(
            f"quantize: w must keep group scales within float16 (|w| below about "
            f"{65504 * (qmax if not symmetric else 2 ** (bits - 1) - 1):g} for {bits} bits); "
            f"got a group range of {float(s[~np.isfinite(s16)].max() * qmax):g}."
        )
    sd = s16.astype(np.float64)
    safe = np.where(sd > 0, sd, 1.0)
    if not symmetric:
        z = np.where(sd > 0, np.clip(np.rint(-lo / safe), 0, qmax), 0.0)
    q = np.rint(g / safe[:, :, None]) + z[:, :, None]
    q = np.where(sd[:, :, None] > 0, np.clip(q, 0, qmax), z[:, :, None])
    zeros = None if symmetric else z.astype(np.float16)
    return s16, zeros, q.astype(np.uint8)


def quantize(w: Any, bits: int = 4, group_size: int = 128, *, symmetric: bool = False
             ) -> QuantizedMatrix:
    """Round-to-nearest group-wise quantization of a weight matrix.

    Parameters
    ----------
    w : array-like of shape (out_features, in_features), float16/float32/float64
        Finite weights. Rows are padded with zeros to a multiple of ``group_size``.
    bits : {2, 3, 4, 8}, default 4
    group_size : int, default 128
        Weights per scale along ``in``; a positive multiple of 32.
    symmetric : bool, default False
        Symmetric: ``s = max|w| / (2**(bits-1) - 1)``, codes ``rint(w/s) + 2**(bits-1)``.
        Asymmetric: the group range ``[min(w, 0), max(w, 0)]`` maps onto ``[0, 2**bits - 1]``
        with an integer zero point ``z = rint(-min / s)``; codes ``clip(rint(w/s) + z)``.
        ``rint`` rounds half to even; scales are rounded to float16 before the codes are
        computed, so dequantization reproduces exactly what was rounded against.

    Returns
    -------
    QuantizedMatrix

    Raises
    ------
    InvalidInputError
        bits not in {2, 3, 4, 8}; group_size not a positive multiple of 32; w not a non-empty
        2-D float array; NaN/inf in w; a group range beyond float16 scales.

    Examples
    --------
    >>> import numpy as np
    >>> from hetlab import quant
    >>> w = np.linspace(-1, 1, 256, dtype=np.float32).reshape(2, 128)
    >>> qw = quant.quantize(w, bits=4, group_size=64)
    >>> qw
    QuantizedMatrix(shape=(2, 128), bits=4, group_size=64, asym, 4.500 bits/weight)
    >>> float(np.abs(qw.dequantize() - w).max()) < 0.5 * 1 / 15 + 1e-3
    True
    """
    bits = check_bits("quantize", bits)
    group_size = check_group_size("quantize", group_size)
    if not isinstance(symmetric, (bool, np.bool_)):
        raise InvalidInputError(
            f"quantize: symmetric must be True or False; got {symmetric!r} "
            f"({type(symmetric).__name__})."
        )
    arr = check_weights("quantize", w)
    out, n_in = arr.shape
    ng = -(-n_in // group_size)
    n_pad = ng * group_size
    # packed words for every row, plus a float64 block and its temporaries
    check_allocation("quantize", float(out) * n_pad * bits / 8
                     + 4.0 * min(_ROW_BLOCK, out) * n_pad * 8,
                     f"quantizing a ({out}, {n_in}) matrix in groups of {group_size}",
                     "Use a smaller group_size (rows are padded to a multiple of it).")
    scales = np.empty((out, ng), dtype=np.float16)
    zeros = None if symmetric else np.empty((out, ng), dtype=np.float16)
    qweight = aligned_empty((out, n_pad * bits // 32), np.uint32)
    for r0 in range(0, out, _ROW_BLOCK):  # packed block by block: temporaries stay block-sized
        blk = np.zeros((min(_ROW_BLOCK, out - r0), n_pad))
        blk[:, :n_in] = arr[r0 : r0 + _ROW_BLOCK]
        s, z, q = _scales_and_codes(blk.reshape(blk.shape[0], ng, group_size), bits,
                                    bool(symmetric))
        rows = slice(r0, r0 + blk.shape[0])
        scales[rows] = s
        if zeros is not None:
            zeros[rows] = z
        qweight[rows] = pack_codes(q.reshape(blk.shape[0], n_pad), bits, group_size)
    return QuantizedMatrix._adopt(qweight, scales, zeros, bits, group_size, n_in)
