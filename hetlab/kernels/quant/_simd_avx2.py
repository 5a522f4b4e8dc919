"""AVX2 integer block dots of the quantized GEMV (numba ``@intrinsic``s emitting LLVM IR).

The AVX2 path of the W4 kernels (and of W2/W3/W8 with group sizes that are multiples of 128)
multiplies unsigned code bytes by signed int8 activation *limbs* with ``vpmaddubsw``
(``llvm.x86.avx2.pmadd.ub.sw``: u8 × s8, adjacent pairs summed into int16) and widens with
``vpmaddwd`` (``llvm.x86.avx2.pmadd.wd``: int16 × int16, pairs summed into int32), the
llama.cpp-style AVX2 integer dot, on 256-bit ``ymm`` vectors. It needs AVX2 only (no
AVX-512, no VNNI): this is the path for CPUs such as AMD EPYC (Zen 2/3) without AVX-512.

One call handles one 128-weight block of one row: its codes become four ``<32 x i8>``
vectors ``c0…c3`` (decoded in registers from the packed words), and vector ``c`` meets the
32 limb bytes at ``xl[xb + 128·l + 32·c]`` for limb ``l`` (the layout of
:func:`~hetlab.kernels.quant._numba_avx2.prepare_limbs`: for each limb, the block's
activations split by ``i % nsplit``):

========  ======================================================  ======  =========
kind      code vector c (bytes)                                    nsplit  top limb
========  ======================================================  ======  =========
``w4``    c0, c1: low nibbles of words 0–7, 8–15; c2, c3: high     2       ±127
``w3``    field c of every byte of the 8 low-plane words, plus     4       ±127
          bit 2 from the 4 high-plane words
``w2``    field c (bits 2c, 2c+1) of every byte of 8 words          4       ±127
``w8``    words 8c … 8c+7 as bytes                                 1       ±64
========  ======================================================  ======  =========

Exactness: every integer step is exact. A ``vpmaddubsw`` lane is ≤ 2·15·127 (w4), 2·7·127
(w3), 2·255·64 = 32640 (w8) < 2^15, so it never saturates; w2/w3/w4 add the four code
vectors' lanes in int16 (≤ 15240) and weight the limbs in the ``vpmaddwd`` (2^14, 2^7, 1:
int32 lanes ≤ 5·10^8). W8 widens each product vector apart (two would overflow int16) and
joins its limbs as ``float(2^7·a0 + a1)·2^7 + float(a2)``. Only the int→float conversion of
each block's lane sums (values up to ~2^29, a relative rounding of 2^-24) and the float32
scale-and-add round — the contract of the VNNI path (:mod:`._simd`), with the activations
in the same 22-bit fixed point (21-bit for w8, whose top limb stays within ±64).
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ._simd import PREFETCH_WORDS, _prefetch

__all__ = ["KINDS", "avx2_dot"]

_I8 = ir.IntType(8)
_I16 = ir.IntType(16)
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_V8I = ir.VectorType(_I32, 8)
_V4I = ir.VectorType(_I32, 4)
_V32B = ir.VectorType(_I8, 32)
_V16S = ir.VectorType(_I16, 16)
_V8F = ir.VectorType(ir.FloatType(), 8)

#: block kinds: (limb layout split, limbs) — see the module docstring
KINDS = {"w4": (2, 3), "w3": (4, 3), "w2": (4, 3), "w8": (1, 3), "w4a8": (2, 1)}


def _splat(vty, elty, value):  # pragma: no cover - compile time
    return ir.Constant(vty, [ir.Constant(elty, value)] * vty.count)


def _ptr(context, builder, arrty, arr, index, vty):  # pragma: no cover - compile time
    data = context.make_array(arrty)(context, builder, arr).data
    return builder.bitcast(builder.gep(data, [index], inbounds=True), vty.as_pointer())


def _load(context, builder, arrty, arr, index, vty, align):  # pragma: no cover
    return builder.load(_ptr(context, builder, arrty, arr, index, vty), align=align)


def _fn(builder, name, ret, args):  # pragma: no cover - compile time
    return cgutils.get_or_insert_function(builder.module, ir.FunctionType(ret, args), name)


def _decode(kind, context, builder, qty, q, wb, wh):  # pragma: no cover - compile time
    """The block's codes as four <32 x i8> vectors (module docstring's table)."""
    def words(off, vty=_V8I):
        return _load(context, builder, qty, q, builder.add(wb if vty is _V8I else wh,
                                                           ir.Constant(_I64, off)), vty, 4)

    def bits(v, shift, mask):
        v = builder.lshr(v, _splat(_V8I, _I32, shift)) if shift else v
        return builder.and_(v, _splat(_V8I, _I32, mask))

    if kind in ("w4", "w4a8"):
        w0, w1 = words(0), words(8)
        vecs = [bits(w0, 0, 0x0F0F0F0F), bits(w1, 0, 0x0F0F0F0F),
                bits(w0, 4, 0x0F0F0F0F), bits(w1, 4, 0x0F0F0F0F)]
    elif kind == "w8":
        vecs = [words(8 * c) for c in range(4)]
    else:
        w = words(0)
        vecs = [bits(w, 2 * f, 0x03030303) for f in range(4)]
        if kind == "w3":
            # low-plane word i needs bits 16(i%2)… of high-plane word i//2; spread its 16
            # bits a nibble per byte, so bit f of byte b is the high bit of code 4b + f
            h4 = words(0, _V4I)
            h = builder.shuffle_vector(h4, h4, ir.Constant(_V8I, [0, 0, 1, 1, 2, 2, 3, 3]))
            h = builder.lshr(h, ir.Constant(_V8I, [0, 16] * 4))
            t = bits(h, 0, 0xF)
            for k in (1, 2, 3):
                part = builder.and_(h, _splat(_V8I, _I32, 0xF << (4 * k)))
                t = builder.or_(t, builder.shl(part, _splat(_V8I, _I32, 4 * k)))
            vecs = [builder.or_(v, builder.shl(bits(t, f, 0x01010101), _splat(_V8I, _I32, 2)))
                    for f, v in enumerate(vecs)]
    return [builder.bitcast(v, _V32B) for v in vecs]


def _make(kind: str, prefetch: int = 0):
    """The block-dot intrinsic of ``kind``; ``prefetch`` > 0: also prefetch the codes that many
    words ahead (as :data:`._simd.PREFETCH_WORDS`)."""
    nlimbs = KINDS[kind][1]

    def impl(typingctx, q, wb, wh, xl, xb, acc, f):
        ok = (isinstance(q, types.Array) and q.dtype == types.uint32
              and isinstance(xl, types.Array) and xl.dtype == types.int8
              and isinstance(acc, types.Array) and acc.dtype == types.float32)
        if not ok:
            return None
        sig = types.void(q, types.int64, types.int64, xl, types.int64, acc, types.float32)

        def codegen(context, builder, signature, args):  # pragma: no cover - compile time
            q_, wb_, wh_, xl_, xb_, acc_, f_ = args
            codes = _decode(kind, context, builder, signature.args[0], q_, wb_, wh_)
            if prefetch:
                _prefetch(context, builder, signature.args[0], q_,
                          builder.add(wb_, ir.Constant(_I64, prefetch)))
            maddubs = _fn(builder, "llvm.x86.avx2.pmadd.ub.sw", _V16S, [_V32B, _V32B])
            maddwd = _fn(builder, "llvm.x86.avx2.pmadd.wd", _V8I, [_V16S, _V16S])
            per_limb = []
            for limb in range(nlimbs):
                prods = []
                for c, cv in enumerate(codes):
                    off = builder.add(xb_, ir.Constant(_I64, 128 * limb + 32 * c))
                    x = _load(context, builder, signature.args[3], xl_, off, _V32B, 1)
                    prods.append(builder.call(maddubs, [cv, x]))
                if kind == "w8":  # each product vector widened apart (int16 would overflow)
                    ones = _splat(_V16S, _I16, 1)
                    w = [builder.call(maddwd, [p, ones]) for p in prods]
                    per_limb.append(builder.add(builder.add(w[0], w[1]),
                                                builder.add(w[2], w[3])))
                else:
                    s = builder.add(builder.add(prods[0], prods[1]),
                                    builder.add(prods[2], prods[3]))
                    weight = _splat(_V16S, _I16, 1 << (7 * (nlimbs - 1 - limb)))
                    per_limb.append(builder.call(maddwd, [s, weight]))
            if kind == "w8":
                hi = builder.add(builder.shl(per_limb[0], _splat(_V8I, _I32, 7)), per_limb[1])
                d = builder.fadd(builder.fmul(builder.sitofp(hi, _V8F),
                                              ir.Constant(_V8F, [128.0] * 8)),
                                 builder.sitofp(per_limb[2], _V8F))
            else:
                d = per_limb[0]
                for a in per_limb[1:]:
                    d = builder.add(d, a)
                d = builder.sitofp(d, _V8F)
            aptr = _ptr(context, builder, signature.args[5], acc_, ir.Constant(_I64, 0), _V8F)
            a = builder.load(aptr, align=4)
            fv = builder.insert_element(ir.Constant(_V8F, ir.Undefined), f_,
                                        ir.Constant(_I32, 0))
            fv = builder.shuffle_vector(fv, fv, ir.Constant(_V8I, [0] * 8))
            fma = _fn(builder, "llvm.fma.v8f32", _V8F, [_V8F, _V8F, _V8F])
            builder.store(builder.call(fma, [fv, d, a]), aptr, align=4)
            return context.get_dummy_value()

        return sig, codegen

    impl.__name__ = impl.__qualname__ = f"dot_{kind}_avx2"
    impl.__doc__ = (f"``acc[:8] += f · float(Σ codes · limbs)`` over one 128-weight {kind} "
                    "block: words at ``q[wb:]`` (w3: high plane at ``q[wh:]``; ``wh`` unused "
                    "otherwise), limbs at ``xl[xb:]``. AVX2 only; no bounds checks.")
    return intrinsic(impl)


#: the block-dot intrinsic of each kind, ``f(q, wb, wh, xl, xb, acc, scale)``, prefetching the
#: codes 2 KB ahead as the VNNI dots do (the W4 GEMV forced onto this path on an AVX-512 Xeon,
#: 4096×4096, 2 threads: 366 → 340 µs, in-process A/B,
#: ``benchmarks/results/quiet-2026-12-02-s7/w4_avx2_prefetch_ab.txt``; not measured on an
#: AVX2-only CPU)
avx2_dot = {kind: _make(kind, PREFETCH_WORDS) for kind in KINDS}
