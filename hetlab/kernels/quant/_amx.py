"""Intel AMX tile instructions for the W4 kernels, as numba ``@intrinsic`` s.

What AMX gives a quantized GEMV
-------------------------------
An AMX core holds eight 2-D *tile* registers (up to 16 rows × 64 bytes) and a matrix unit:
``tdpbusd C, A, B`` adds to the int32 tile ``C`` (M × N) the products of the unsigned bytes
of ``A`` (M × K, K ≤ 64) with the signed bytes of ``B`` (K/4 rows × N·4 bytes, "VNNI
layout": four consecutive K values of one column side by side). One instruction does up to
16 × 16 × 64 = 16,384 multiply-adds, where one ``vpdpbusd`` on a ``zmm`` register does 64.

The W4 kernels use it this way (:mod:`._numba_w4_amx`):

- ``A``: 16 output rows × 64 code bytes — the low nibbles of a row's 16 words of one
  128-weight block (codes 0, 2, 4, 6 of each word) in one tile, the high nibbles in another.
  :func:`decode_row` unpacks one row with three vector operations and two 64-byte stores;
  the codes are read straight from the canonical packing (no repacked copy of the weights).
- ``B``: the activations of that block in 28-bit fixed point, split exactly into four signed
  int8 *limbs* (weights 2^21, 2^14, 2^7, 1), one column per limb and activation row — four
  columns for a GEMV, up to sixteen (four activation rows) for a flat GEMM.
- ``C``: 16 output rows × (4 limbs × rows) exact int32 sums. :func:`tile_load_a` loads a
  block's A tiles once, :func:`tile_dot` runs the two ``tdpbusd`` of one column tile; a
  ``combine`` intrinsic turns C into float32 and adds it, times the group scale of each
  output row and the fixed-point step of each limb, into a float32 accumulator.

The group scale differs per output row and group, so C is stored and combined after every
128-weight block: per 2,048 weights one tile store and 4–16 vector multiply-adds, against 96
``vpdpbusd`` (three limbs) on the VNNI path. Measured on this machine (4096×4096 W4 g128,
one core, 2026-11-30): tile work alone 0.24 ms, unpacking (memory-bound) 0.50 ms, the
combine alone 0.15 ms; all three in sequence 0.73 ms, and 0.61 ms once the kernel decodes
block k+1 before the tile work of block k and combines block k−1 after it. The VNNI kernel
took 0.80–0.86 ms in those runs but 0.66–0.74 ms in later ones, where the two came out even
(0.83–1.16× in ``benchmarks/quant.py``): for one vector the tile unit mostly waits on the
unpacking and the per-group combine, so the GEMV keeps VNNI by default. With many activation
rows each decoded block feeds up to four activation rows per C tile and the unit pays off:
the flat GEMM of 16 rows takes a third of VNNI's time. Tried and dropped: 32 output rows per
step (two A-tile pairs sharing the B tiles: slower), reading the packed bytes straight into
A with the high nibbles split off by the activations' side (``x_odd − 16·x_even``: no
faster, and less precise), a copy of the weights repacked so that a block's 16 rows are
adjacent (no faster).

Using AMX from Linux
--------------------
A process must ask the kernel for the tile state once (``arch_prctl(ARCH_REQ_XCOMP_PERM,
XFEATURE_XTILEDATA)``); without it the first tile instruction raises SIGILL. Each thread
loads a tile configuration (``ldtilecfg``: rows and bytes per row of each tile) before its
first tile instruction and releases the state after its last (``tilerelease``).
:data:`HAS_AMX` is True only where numba compiles for this CPU, the CPU reports AMX-INT8,
and the permission was granted (checked with ``ARCH_GET_XCOMP_PERM``). The intrinsics emit
the LLVM intrinsics ``llvm.x86.tileloadd64``/``tdpbusd``/``tilestored64`` with fixed tile
numbers (as clang's ``_tile_*`` macros do); they are x86-only and must not be compiled
elsewhere.
"""

from __future__ import annotations

import ctypes
import platform
import sys

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._simd import _I32, _I64, _VF, _VI, LANES, _fma, _load, _splat_i

__all__ = ["HAS_AMX", "CFG_BYTES", "tile_config", "tile_release", "decode_row", "tile_load_a",
           "tile_dot",
           "combine1", "combine2", "combine4", "COMBINE_ROWS"]

#: size of the tile configuration block of ``ldtilecfg`` (bytes)
CFG_BYTES = 64
#: words (4 bytes each) read ahead of the current block by :func:`decode_row`, a software
#: prefetch: 16 rows are read side by side, more streams than the hardware prefetchers
#: follow well (4096×4096 on one core: 0.54 ms with 32, 0.63 with 64 and 0.67 with 128
#: words ahead, against 0.61–0.65 ms without)
PREFETCH_WORDS = 32

_ARCH_GET_XCOMP_PERM = 0x1022
_ARCH_REQ_XCOMP_PERM = 0x1023
_XFEATURE_XTILEDATA = 18
_SYS_ARCH_PRCTL = 158  # x86-64


def _request_tile_permission() -> bool:
    """Ask Linux for the AMX tile state for this process; True if it is granted."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall(_SYS_ARCH_PRCTL, _ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA)
        mask = ctypes.c_uint64(0)
        if libc.syscall(_SYS_ARCH_PRCTL, _ARCH_GET_XCOMP_PERM, ctypes.byref(mask)) != 0:
            return False
        return bool(mask.value >> _XFEATURE_XTILEDATA & 1)
    except (OSError, AttributeError):
        return False


def _host_has_amx() -> bool:
    """Whether numba compiles for this CPU, the CPU has AMX-INT8 and Linux grants its state."""
    import llvmlite.binding as llvm
    import numba

    if numba.config.CPU_NAME not in (None, "host") or numba.config.CPU_FEATURES is not None:
        return False  # a portable (cached for another CPU) build: keep to generic IR
    feats = llvm.get_host_cpu_features()
    if not (feats.get("amx-tile") and feats.get("amx-int8") and feats.get("avx512bw")):
        return False
    return _request_tile_permission()


#: the AMX kernels are compiled (and used) only where this is True
HAS_AMX = _host_has_amx()

_I8 = ir.IntType(8)
_PTR = _I8.as_pointer()
_VOID = ir.VoidType()


def _fn(builder, name, args):  # pragma: no cover - compile time
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(_VOID, args), name)


def _addr(context, builder, arrty, arr, index):  # pragma: no cover - compile time
    """i8* to ``arr[index]`` (no bounds check)."""
    data = context.make_array(arrty)(context, builder, arr).data
    return builder.bitcast(builder.gep(data, [index], inbounds=True), _PTR)


def _tile(i: int):  # pragma: no cover - compile time
    return ir.Constant(_I8, i)


def _i64(v: int):  # pragma: no cover - compile time
    return ir.Constant(_I64, v)


@intrinsic
def tile_config(typingctx, cfg):
    """``ldtilecfg`` from ``cfg`` (uint8 1-D of :data:`CFG_BYTES`): configure this thread's
    tiles (palette 1; bytes 16 + 2t: bytes per row of tile t, uint16; byte 48 + t: rows)."""
    if not (isinstance(cfg, types.Array) and cfg.dtype == types.uint8):
        return None

    def codegen(context, builder, signature, args):  # pragma: no cover - compile time
        ptr = _addr(context, builder, signature.args[0], args[0], _i64(0))
        builder.call(_fn(builder, "llvm.x86.ldtilecfg", [_PTR]), [ptr])
        return context.get_dummy_value()

    return types.void(cfg), codegen


@intrinsic
def tile_release(typingctx):
    """``tilerelease``: return this thread's tile state to its initial (unused) state."""

    def codegen(context, builder, signature, args):  # pragma: no cover - compile time
        builder.call(_fn(builder, "llvm.x86.tilerelease", []), [])
        return context.get_dummy_value()

    return types.void(), codegen


@intrinsic
def decode_row(typingctx, q, wb, buf, at):
    """Unpack one row's 16 words ``q[wb:wb + 16]`` (128 4-bit codes) into one row of each A
    tile: low nibbles (as bytes) at ``buf[at:at + 64]``, high nibbles at ``buf[at + 1024:]``.

    ``q`` uint32 1-D, ``buf`` uint8 1-D, ``wb``/``at`` int64 (``at`` = 64 × the tile row,
    plus the buffer's offset); also prefetches the words :data:`PREFETCH_WORDS` ahead
    (a prefetch never faults). No bounds checks.
    """
    if not (isinstance(q, types.Array) and q.dtype == types.uint32
            and isinstance(buf, types.Array) and buf.dtype == types.uint8):
        return None

    def codegen(context, builder, signature, args):  # pragma: no cover - compile time
        q_, wb_, buf_, at_ = args
        words, _ = _load(context, builder, signature.args[0], q_, wb_, _VI)
        ahead = _addr(context, builder, signature.args[0], q_,
                      builder.add(wb_, _i64(PREFETCH_WORDS)))
        prefetch = _fn(builder, "llvm.prefetch.p0", [_PTR, _I32, _I32, _I32])
        builder.call(prefetch, [ahead, ir.Constant(_I32, 0), ir.Constant(_I32, 3),
                                ir.Constant(_I32, 1)])
        lo = builder.and_(words, _splat_i(0x0F0F0F0F))
        hi = builder.and_(builder.lshr(words, _splat_i(4)), _splat_i(0x0F0F0F0F))
        for value, base in ((lo, 0), (hi, 1024)):
            ptr = _addr(context, builder, signature.args[2], buf_, builder.add(at_, _i64(base)))
            builder.store(value, builder.bitcast(ptr, _VI.as_pointer()), align=1)
        return context.get_dummy_value()

    return types.void(q, types.int64, buf, types.int64), codegen


@intrinsic
def tile_load_a(typingctx, buf, ao):
    """Load the A tiles of one 128-weight block of 16 output rows: tile 0 the low nibbles
    (16 × 64 bytes at ``buf[ao]``), tile 1 the high ones (at ``buf[ao + 1024]``), as written
    by :func:`decode_row`. They stay for every :func:`tile_dot` of the block."""
    if not (isinstance(buf, types.Array) and buf.dtype == types.uint8):
        return None

    def codegen(context, builder, signature, args):  # pragma: no cover - compile time
        buf_, ao_ = args
        load = _fn(builder, "llvm.x86.tileloadd64", [_I8, _PTR, _I64])
        at = signature.args[0]
        builder.call(load, [_tile(0), _addr(context, builder, at, buf_, ao_), _i64(64)])
        builder.call(load, [_tile(1), _addr(context, builder, at, buf_,
                                             builder.add(ao_, _i64(1024))), _i64(64)])
        return context.get_dummy_value()

    return types.void(buf, types.int64), codegen


@intrinsic
def tile_dot(typingctx, b, bo, bstride, c, co, cstride):
    """``C = A_lo · B_lo + A_hi · B_hi`` for the block in tiles 0/1 (:func:`tile_load_a`).

    ``B_lo``/``B_hi``: 16 rows of ``bstride`` limb bytes at ``b[bo]`` and
    ``b[bo + 16·bstride]`` (tiles 2/3); ``C`` (int32, tile 4: 16 rows × ``cstride`` bytes)
    is stored at ``c[co]``. The tile configuration must match these shapes.
    """
    ok = (isinstance(b, types.Array) and b.dtype == types.int8
          and isinstance(c, types.Array) and c.dtype == types.int32)
    if not ok:
        return None
    sig = types.void(b, types.int64, types.int64, c, types.int64, types.int64)

    def codegen(context, builder, signature, args):  # pragma: no cover - compile time
        b_, bo_, bst_, c_, co_, cst_ = args
        load = _fn(builder, "llvm.x86.tileloadd64", [_I8, _PTR, _I64])
        dot = _fn(builder, "llvm.x86.tdpbusd", [_I8, _I8, _I8])
        bt = signature.args
        builder.call(load, [_tile(2), _addr(context, builder, bt[0], b_, bo_), bst_])
        hi = builder.add(bo_, builder.mul(bst_, _i64(16)))
        builder.call(load, [_tile(3), _addr(context, builder, bt[0], b_, hi), bst_])
        builder.call(_fn(builder, "llvm.x86.tilezero", [_I8]), [_tile(4)])
        builder.call(dot, [_tile(4), _tile(0), _tile(2)])
        builder.call(dot, [_tile(4), _tile(1), _tile(3)])
        builder.call(_fn(builder, "llvm.x86.tilestored64", [_I8, _PTR, _I64]),
                     [_tile(4), _addr(context, builder, bt[3], c_, co_), cst_])
        return context.get_dummy_value()

    return sig, codegen


def _shuffle(builder, v, index):  # pragma: no cover - compile time
    return builder.shuffle_vector(v, v, ir.Constant(_VI, [ir.Constant(_I32, i) for i in index]))


#: output rows of one C tile (the A tiles' rows)
COMBINE_ROWS = 16


def _combine_intrinsic(nact: int):
    """``combine`` for C tiles of ``nact`` activation rows (4·nact int32 columns a row)."""
    cols = 4 * nact

    def impl(typingctx, c, co, s, so, f, fo, acc, ao):
        ok = (isinstance(c, types.Array) and c.dtype == types.int32
              and isinstance(s, types.Array) and s.dtype == types.float32
              and isinstance(f, types.Array) and f.dtype == types.float32
              and isinstance(acc, types.Array) and acc.dtype == types.float32)
        if not ok:
            return None
        sig = types.void(c, types.int64, s, types.int64, f, types.int64, acc, types.int64)

        def codegen(context, builder, signature, args):  # pragma: no cover - compile time
            c_, co_, s_, so_, f_, fo_, acc_, ao_ = args
            bt = signature.args
            sv, _ = _load(context, builder, bt[2], s_, so_, _VF)
            fv, _ = _load(context, builder, bt[4], f_, fo_, _VF)
            for v in range(cols):  # 16·cols int32 = cols vectors of 16
                flat = [LANES * v + i for i in range(LANES)]
                scale = builder.fmul(_shuffle(builder, sv, [e // cols for e in flat]),
                                     _shuffle(builder, fv, [e % cols for e in flat]))
                cv, _ = _load(context, builder, bt[0], c_, builder.add(co_, _i64(LANES * v)),
                              _VI)
                av, aptr = _load(context, builder, bt[6], acc_,
                                 builder.add(ao_, _i64(LANES * v)), _VF)
                builder.store(_fma(builder, scale, builder.sitofp(cv, _VF), av), aptr, align=4)
            return context.get_dummy_value()

        return sig, codegen

    impl.__name__ = impl.__qualname__ = f"combine{nact}"
    impl.__doc__ = f"""\
``acc[ao + e] += s[so + e // {cols}] · f[fo + e % {cols}] · float(c[co + e])`` for the
{16 * cols} entries ``e`` of one C tile of {nact} activation row(s) (16 rows × {cols} int32
columns: column ``4a + l`` is limb ``l`` of activation row ``a``). ``s``: the 16 rows' group
scales; ``f``: per column, the fixed-point step of that row's block times 2^(7·(3 − l)) (16
floats are read). The int32 sums convert exactly (|c| < 2^24); one float32 multiply and one
FMA follow.
"""
    return intrinsic(impl)


combine1 = _combine_intrinsic(1)
combine2 = _combine_intrinsic(2)
combine4 = _combine_intrinsic(4)
