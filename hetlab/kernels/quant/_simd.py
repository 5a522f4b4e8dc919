"""Explicit LLVM vector code for the hot loop of the W4 GEMV (a numba ``@intrinsic``).

Why not plain numba
-------------------
Numba hands a plain loop to LLVM's loop vectorizer, which on this machine (Intel with
AVX-512, LLVM tuned "prefer 256-bit vectors") picks 8-lane ``ymm`` code and, for the group
dot, one serial chain of FMAs followed by a horizontal reduction per group (measured ~5.5
weights per cycle per core). On Sapphire-Rapids-class cores 512-bit integer/float ops run on
two ports (p0, p5), so 16-lane ``zmm`` code halves the instruction count of the decode.

The intrinsic below writes the group dot as LLVM IR on ``<16 x i32>`` / ``<16 x float>``
values: one 64-byte load of 16 packed words, then for each of the 8 nibble positions an
``and`` (masked in place), an unsigned int→float conversion and an FMA with a 16-float
load of the permuted activations; the result is added, times the group scale, into a
16-float accumulator that LLVM keeps in a register across groups (its store is kept, the
reload is not). A 512-bit vector type is legal for the X86 backend whatever the vectorizer
prefers (no ``min-legal-vector-width`` attribute), so this becomes ``zmm`` code on AVX-512
and is split into ``ymm``/``xmm`` halves by LLVM elsewhere — it is portable IR, not an ISA
intrinsic. Check with ``fn.inspect_asm(fn.signatures[0])``: ``vpandd``/``vandps``,
``vcvtdq2ps``/``vcvtudq2ps`` and ``vfmadd…ps`` on ``%zmm`` registers, no spills in the loop.

Exactness: every masked field is an integer below 2**32 with at most 4 significant bits, so
its conversion to float32 is exact (as in :func:`~hetlab.kernels.quant.numba._m`); only the
float32 products and sums round.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["LANES", "HAS_VNNI", "HAS_AVX2", "HAS_F16C", "host_features", "has_vnni", "has_avx2",
           "gdot4_acc", "gdot4_vnni_acc", "idot4_vnni_acc", "f16x16_to_f32", "fetch_add",
           "empty64_u8", "empty64_i8", "empty64_i32", "empty64_f32"]

#: words per vector: one 64-byte cache line of packed codes
LANES = 16

_I32 = ir.IntType(32)
_I64 = ir.IntType(64)
_VI = ir.VectorType(_I32, LANES)
_VF = ir.VectorType(ir.FloatType(), LANES)


def _load(context, builder, arrty, arr, index, vty, align=4):  # pragma: no cover
    """(vector loaded from ``arr[index:index + LANES]``, its pointer)."""
    data = context.make_array(arrty)(context, builder, arr).data
    ptr = builder.bitcast(builder.gep(data, [index], inbounds=True), vty.as_pointer())
    return builder.load(ptr, align=align), ptr


def _fma(builder, a, b, c):  # pragma: no cover - compile time
    fnty = ir.FunctionType(_VF, [_VF, _VF, _VF])
    return builder.call(cgutils.get_or_insert_function(builder.module, fnty, "llvm.fma.v16f32"),
                        [a, b, c])


def _splat(builder, value, vty):  # pragma: no cover - compile time
    zero = ir.Constant(_I32, 0)
    v = builder.insert_element(ir.Constant(vty, ir.Undefined), value, zero)
    return builder.shuffle_vector(v, v, ir.Constant(_VI, [zero] * LANES))


@intrinsic
def gdot4_acc(typingctx, q, wb, xp, xb, nwp, acc, s):
    """``acc[:16] += s · Σ_j float(q[wb:wb+16] & (0xF << 4j)) · xp[xb + j·nwp : … + 16]``.

    ``q`` uint32 1-D (packed 4-bit codes, 8 per word), ``xp`` float32 1-D (activations in
    the permuted, pre-scaled order of :func:`~hetlab.kernels.quant.numba._permuted_x`:
    value ``j`` of word ``i`` of a group at ``j · nwp + i``), ``acc`` float32 1-D of ≥ 16,
    ``s`` float32; ``wb``, ``xb``, ``nwp`` int64. No bounds checks: the caller keeps
    ``wb + 16 ≤ len(q)`` and ``xb + 7·nwp + 16 ≤ len(xp)``.
    """
    ok = (isinstance(q, types.Array) and q.dtype == types.uint32
          and isinstance(xp, types.Array) and xp.dtype == types.float32
          and isinstance(acc, types.Array) and acc.dtype == types.float32)
    if not ok:
        return None
    sig = types.void(q, types.int64, xp, types.int64, types.int64, acc, types.float32)

    def codegen(context, builder, signature, args):  # pragma: no cover - compile time
        q_, wb_, xp_, xb_, nwp_, acc_, s_ = args
        words, _ = _load(context, builder, signature.args[0], q_, wb_, _VI)
        partial = []
        for j in range(8):
            mask = ir.Constant(_VI, [ir.Constant(_I32, (0xF << (4 * j)) & 0xFFFFFFFF)] * LANES)
            f = builder.uitofp(builder.and_(words, mask), _VF)
            off = builder.add(xb_, builder.mul(nwp_, ir.Constant(_I64, j)))
            x, _ = _load(context, builder, signature.args[2], xp_, off, _VF)
            # two independent chains (even and odd fields) halve the FMA latency chain
            partial.append(builder.fmul(f, x) if j < 2 else _fma(builder, f, x, partial[j - 2]))
        d = builder.fadd(partial[-2], partial[-1])
        a, aptr = _load(context, builder, signature.args[5], acc_, ir.Constant(_I64, 0), _VF)
        builder.store(_fma(builder, _splat(builder, s_, _VF), d, a), aptr, align=4)
        return context.get_dummy_value()

    return sig, codegen


# --- AVX512-VNNI: integer dot products of 4-bit codes with int8 activation limbs ----------
# Per 128 codes: one 64-byte load, the low nibbles (``and``), the high nibbles, 2 × limbs
# ``vpdpbusd``, the limb combine, one conversion and one FMA. 512-bit shifts, ``vpdpbusd`` and
# conversions all issue on port 0 on Intel cores, so on CPUs with AVX512-VBMI the high nibbles
# come from ``vpmultishiftqb`` (port 5) instead of a shift (measured ~2% faster, identical).

_VNNI = "llvm.x86.avx512.vpdpbusd.512"


def host_features() -> frozenset[str]:
    """The CPU features numba may use here (llvmlite's host features that are on); empty when
    numba does not compile for this CPU (a portable build, cached for another CPU: keep to
    generic IR there)."""
    import llvmlite.binding as llvm
    import numba

    if numba.config.CPU_NAME not in (None, "host") or numba.config.CPU_FEATURES is not None:
        return frozenset()
    return frozenset(k for k, on in llvm.get_host_cpu_features().items() if on)


def has_vnni(features: frozenset[str] | set[str]) -> bool:
    """Whether a CPU with these (llvmlite-named) features runs the VNNI kernels (vpdpbusd)."""
    return {"avx512vnni", "avx512bw", "avx512f"} <= set(features)


def has_avx2(features: frozenset[str] | set[str]) -> bool:
    """Whether a CPU with these features runs the AVX2 integer kernels (vpmaddubsw, FMA)."""
    return {"avx2", "fma"} <= set(features)


#: the VNNI kernels are compiled (and used) only where this is True
HAS_VNNI = has_vnni(host_features())
#: the AVX2 integer kernels (:mod:`._simd_avx2`) likewise
HAS_AVX2 = has_avx2(host_features())


def _splat_i(value: int):  # pragma: no cover - compile time
    return ir.Constant(_VI, [ir.Constant(_I32, value)] * LANES)


_I8X64 = ir.VectorType(ir.IntType(8), 64)
#: ``vpmultishiftqb`` control: byte j of each qword takes bits 8j+4 … 8j+11 (rotating), so
#: its low nibble is the high nibble of byte j
_NIBBLE_SHIFT = ir.Constant(_I8X64, [ir.Constant(ir.IntType(8), 8 * (i % 8) + 4)
                                     for i in range(64)])


def _high_nibbles(builder, words):  # pragma: no cover - compile time
    """``(words >> 4) & 0x0F0F0F0F`` per lane: ``vpmultishiftqb`` (a shuffle-port op) where
    the CPU has AVX512-VBMI, else a shift (port 0 for 512-bit vectors, as ``vpdpbusd``)."""
    if "avx512vbmi" in host_features():
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(_I8X64, [_I8X64, _I8X64]),
            "llvm.x86.avx512.pmultishift.qb.512")
        picked = builder.call(fn, [_NIBBLE_SHIFT, builder.bitcast(words, _I8X64)])
        return builder.and_(builder.bitcast(picked, _VI), _splat_i(0x0F0F0F0F))
    return builder.and_(builder.lshr(words, _splat_i(4)), _splat_i(0x0F0F0F0F))


#: how far ahead of each block's codes the VNNI block dots prefetch (uint32 words: 2 KB).
#: Our reading of why it helps (not measured: no counters here): the hardware prefetchers
#: do not cross 4 KB pages, and a prefetch 2 KB ahead keeps lines in flight across each
#: page's restart. In-process A/B
#: (2026-12-02, 2 threads, medians of the best of 10 calls over 10–15 rounds; script and
#: output: ``benchmarks/results/quiet-2026-12-02-s7/w4_prefetch_ab*``): 4096 rows × 11008
#: inputs 690 → 633 µs (no prefetch → 512 words; 384 words 645, 256 words 663), 4096×4096
#: 273 → 265 µs (256 words 261; the floor, reading the codes alone: 204 and 517 µs).
PREFETCH_WORDS = 512


def _prefetch(context, builder, arrty, arr, index):  # pragma: no cover - compile time
    """``prefetcht0`` of ``arr``'s element ``index`` (a hint: never faults, even past the
    end of the array)."""
    i8p = ir.IntType(8).as_pointer()
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(ir.VoidType(), [i8p, _I32, _I32, _I32]),
        "llvm.prefetch.p0i8")
    data = context.make_array(arrty)(context, builder, arr).data
    ptr = builder.bitcast(builder.gep(data, [index]), i8p)
    # read (0), keep in all levels (3), data cache (1)
    builder.call(fn, [ptr, ir.Constant(_I32, 0), ir.Constant(_I32, 3), ir.Constant(_I32, 1)])


def _vnni_intrinsic(nlimbs: int, name: str, doc: str):
    """An intrinsic ``f(q, wb, xl, xb, acc, f)`` for ``nlimbs`` int8 limbs (see below)."""

    def impl(typingctx, q, wb, xl, xb, acc, f):
        ok = (isinstance(q, types.Array) and q.dtype == types.uint32
              and isinstance(xl, types.Array) and xl.dtype == types.int8
              and isinstance(acc, types.Array) and acc.dtype == types.float32)
        if not ok:
            return None
        sig = types.void(q, types.int64, xl, types.int64, acc, types.float32)

        def codegen(context, builder, signature, args):  # pragma: no cover - compile time
            q_, wb_, xl_, xb_, acc_, f_ = args
            words, _ = _load(context, builder, signature.args[0], q_, wb_, _VI)
            _prefetch(context, builder, signature.args[0], q_,
                      builder.add(wb_, ir.Constant(_I64, PREFETCH_WORDS)))
            lo = builder.and_(words, _splat_i(0x0F0F0F0F))
            hi = _high_nibbles(builder, words)
            dp = cgutils.get_or_insert_function(builder.module,
                                                ir.FunctionType(_VI, [_VI, _VI, _VI]), _VNNI)
            # Horner through one accumulator: d = ((dots of L0) << 7 + dots of L1) << 7 + …,
            # the same integer as Σ 2^(7·(n−1−l)) · dots of l (exact in int32); no adds, one
            # zeroing (2026-12-01: 3.5–5% faster than shift-and-add in L2 on one thread, ~2% on
            # 4096×4096, bit-identical; before the flat g128 rows of _w4_driver it measured no gain)
            d = ir.Constant(_VI, None)
            for limb in range(nlimbs):
                if limb:
                    d = builder.shl(d, _splat_i(7))
                for k, codes in enumerate((lo, hi)):
                    off = builder.add(xb_, ir.Constant(_I64, 128 * limb + 64 * k))
                    x, _ = _load(context, builder, signature.args[2], xl_, off, _VI, align=1)
                    d = builder.call(dp, [d, codes, x])
            a, aptr = _load(context, builder, signature.args[4], acc_, ir.Constant(_I64, 0), _VF)
            builder.store(_fma(builder, _splat(builder, f_, _VF), builder.sitofp(d, _VF), a),
                          aptr, align=4)
            return context.get_dummy_value()

        return sig, codegen

    impl.__name__ = impl.__qualname__ = name
    impl.__doc__ = doc
    return intrinsic(impl)


gdot4_vnni_acc = _vnni_intrinsic(3, "gdot4_vnni_acc", """\
``acc[:16] += f · float(Σ_l 2^(7·(2−l)) · Σ codes · limb_l)`` over 16 words (128 codes).

``q`` uint32 1-D (4-bit codes), ``xl`` int8 1-D: at ``xb`` the 3 × 128 limb bytes of one
128-activation block — limb ``l`` (weights 2^14, 2^7, 1) as 64 bytes for the even
activations then 64 for the odd ones (:func:`~hetlab.kernels.quant._numba_w4.prepare_limbs`),
matching the low and high nibbles of each code byte. ``vpdpbusd`` multiplies unsigned code
bytes by signed limb bytes and adds groups of 4 into int32 lanes: exact (each lane sums 8
products ≤ 15·127 per limb; the combined value stays below 2^28). One int→float conversion
and one FMA per block follow. Only for ``HAS_VNNI`` machines (this is an x86 intrinsic).
""")

idot4_vnni_acc = _vnni_intrinsic(1, "idot4_vnni_acc", """\
``acc[:16] += f · float(Σ codes · xq)`` over 16 words (128 codes): W4A8's exact integer dot.

``xl`` holds the int8 activations of one 128-block at ``xb``, even ones then odd ones (64 +
64 bytes). Each lane's sum (8 products ≤ 15·127) is exact in int32 and in float32.
""")


# --- float16 → float32, 16 at a time -------------------------------------------------------

#: whether this CPU converts float16 vectors in hardware (``vcvtph2ps``; every AVX2 CPU has it)
HAS_F16C = "f16c" in host_features()

_VH = ir.VectorType(ir.IntType(16), LANES)


@intrinsic
def f16x16_to_f32(typingctx, src, i, dst, j):
    """``dst[j:j + 16] = float32(src.flat[i:i + 16] viewed as float16)``: one ``vcvtph2ps``.

    ``src`` uint16 (the bits of float16 values, C-contiguous, any ndim, ``i`` a flat index),
    ``dst`` float32 1-D. Exact (every float16 is a float32). No bounds checks: the caller keeps
    ``i + 16 ≤ src.size`` and ``j + 16 ≤ len(dst)``. Only where ``HAS_F16C`` (elsewhere LLVM
    would call a conversion routine numba does not link).
    """
    ok = (isinstance(src, types.Array) and src.dtype == types.uint16
          and isinstance(dst, types.Array) and dst.dtype == types.float32)
    if not ok:
        return None
    sig = types.void(src, types.int64, dst, types.int64)

    def codegen(context, builder, signature, args):  # pragma: no cover - compile time
        src_, i_, dst_, j_ = args
        bits, _ = _load(context, builder, signature.args[0], src_, i_, _VH, align=2)
        wide = builder.fpext(builder.bitcast(bits, ir.VectorType(ir.HalfType(), LANES)), _VF)
        data = context.make_array(signature.args[2])(context, builder, dst_).data
        ptr = builder.bitcast(builder.gep(data, [j_], inbounds=True), _VF.as_pointer())
        builder.store(wide, ptr, align=4)
        return context.get_dummy_value()

    return sig, codegen


# --- dynamic scheduling -------------------------------------------------------------------

@intrinsic
def fetch_add(typingctx, counter, value):
    """Atomically ``counter[0] += value``; returns the old value (int64 1-D array).

    Lets the threads of a ``prange`` take row blocks from a shared counter (dynamic
    scheduling, which numba's static split lacks): a thread that starts late — a sleeping
    worker woken by the OS, ~30–100 µs on this VM — or that is preempted by another process
    simply takes fewer blocks instead of delaying the whole call.
    """
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
        return None
    sig = types.int64(counter, types.int64)

    def codegen(context, builder, signature, args):  # pragma: no cover - compile time
        arr = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.atomic_rmw("add", arr.data, args[1], "monotonic")

    return sig, codegen


# --- scratch on a cache line ----------------------------------------------------------------

#: bytes per cache line (as :data:`hetlab.core.aligned.CACHE_LINE`)
_LINE = 64


def _empty64(dtype):
    """An njit ``empty(n)``: an uninitialized 1-D C array of ``n`` ``dtype`` values whose
    data start on a 64-byte boundary (a slice of a byte buffer 64 bytes longer, kept alive
    by the view)."""
    itemsize = np.dtype(dtype).itemsize

    @numba.njit(cache=True, nogil=True)
    def empty(n):  # pragma: no cover - compiled
        raw = np.empty(n * itemsize + _LINE, np.uint8)
        off = (_LINE - raw.ctypes.data % _LINE) % _LINE
        return raw[off:off + n * itemsize].view(dtype)

    return empty


#: Scratch for the vector kernels' 64-byte loads and stores (activation limbs, permuted
#: activations, accumulators, tile buffers). numba's ``np.empty`` starts an array on a 32-byte
#: boundary, so half the time every 64-byte access to it touched two cache lines — in the W4
#: VNNI GEMV, all six limb loads of every block and the accumulator's store (which half
#: depended on the process's allocation history). Measured (2026-12-02, 2 threads;
#: ``benchmarks/results/quiet-2026-12-02-s7/quant_gemv_ab.txt``, three ``benchmarks/quant.py
#: --gemv-only`` runs alternating with the code before): ``hl.gemv_q`` at 54–57% → 71–75% of
#: the floor at 4096×11008, 67–69% → 69–80% at 4096×4096; the flat GEMM of 8 rows 2.5–3.3 →
#: 2.5–2.6 ms at 4096×4096 (``w4_scratch_ab.txt``).
empty64_u8 = _empty64(np.uint8)
empty64_i8 = _empty64(np.int8)
empty64_i32 = _empty64(np.int32)
empty64_f32 = _empty64(np.float32)
