"""Q8_K / Q4_K blocks (docs/kir.md): quantize, dequantize and quantized_dot, following the
float32 operation sequences of llama.cpp's reference code exactly as the interpreter
(`intentc/interp/quant.py`) does, so every byte and every f32 rounding agrees.

Records live in u8 tensors [B, bytes]; multi-byte fields are little-endian. Q4_K
quantization (make_qkx2_quants) is in `quant_q4k.py`.
"""
from __future__ import annotations

from collections.abc import Callable

from llvmlite import ir

from ...ir import errors
from ...ir.nodes import Op
from .contraction import _settled
from .emitter import CheckSite, Emitter
from .lowfloat import decode
from .types import F32, I8, I16, I32, I64
from .values import Lazy, Memory, Scalar, Tensor
from .lowering import LOWERINGS

QK_K = 256
Q8_K_BYTES, Q4_K_BYTES = 292, 144
Q8_QS, Q8_BSUMS = 4, 4 + QK_K
Q4_SCALES, Q4_QS = 4, 16


def c64(value: int) -> ir.Constant:
    return ir.Constant(I64, value)


def f32c(value: float) -> ir.Constant:
    return ir.Constant(F32, value)


def count_loop(em: Emitter, count: int, body: Callable[[ir.Value], None]) -> None:
    em.loop(c64(0), c64(count), body)


class Slot:
    """A scalar accumulator in an entry-block alloca (promoted to a register by LLVM)."""

    def __init__(self, em: Emitter, type_: ir.Type, init: float | ir.Value):
        self.em, self.ptr = em, em.entry_alloca(type_)
        self.set(ir.Constant(type_, init) if not isinstance(init, ir.Value) else init)

    def get(self) -> ir.Value:
        return self.em.b.load(self.ptr)

    def set(self, value: ir.Value) -> None:
        self.em.b.store(value, self.ptr)


# ---- fields of a record ------------------------------------------------------------------------
def byte(em: Emitter, records: Tensor, block: ir.Value, offset: int | ir.Value) -> ir.Value:
    offset = c64(offset) if isinstance(offset, int) else offset
    return records.at(em, [block, offset])


def le_word(em: Emitter, records: Tensor, block: ir.Value, offset: int, nbytes: int) -> ir.Value:
    b = em.b
    word_type = ir.IntType(8 * nbytes)
    word = ir.Constant(word_type, 0)
    for i in range(nbytes):
        part = b.zext(byte(em, records, block, offset + i), word_type)
        word = b.or_(word, b.shl(part, ir.Constant(word_type, 8 * i)) if i else part)
    return word


def put_le(em: Emitter, memory: Memory, block: ir.Value, offset: int | ir.Value, word: ir.Value) -> None:
    b = em.b
    offset = c64(offset) if isinstance(offset, int) else offset
    for i in range(word.type.width // 8):
        part = b.trunc(b.lshr(word, ir.Constant(word.type, 8 * i)) if i else word, I8)
        b.store(part, memory.address(em, [block, b.add(offset, c64(i))]))


def f16_field(em: Emitter, records: Tensor, block: ir.Value, offset: int) -> ir.Value:
    """A record's f16 scale as f32 (exact). Every use multiplies it, and IEEE arithmetic's NaN
    results are fresh NaNs (§5.2, `nan_payloads.py`): its NaN bits need not be kept."""
    return em.b.fptrunc(decode(em, le_word(em, records, block, offset, 2), "f16", nan_bits=False), F32)


def f32_field(em: Emitter, records: Tensor, block: ir.Value, offset: int) -> ir.Value:
    return em.b.bitcast(le_word(em, records, block, offset, 4), F32)


def nearest_int(em: Emitter, x: ir.Value) -> ir.Value:
    """np.rint(x).astype(int32) on the host: round half to even, INT_MIN outside the range."""
    b = em.b
    rounded = em.call_intrinsic("roundeven", x)
    inside = b.and_(b.fcmp_ordered(">=", rounded, f32c(-2.0 ** 31)), b.fcmp_ordered("<", rounded, f32c(2.0 ** 31)))
    safe = b.select(inside, rounded, f32c(0.0))
    return b.select(inside, b.fptosi(safe, I32), ir.Constant(I32, -2 ** 31))


def imin(em: Emitter, x: ir.Value, limit: int) -> ir.Value:
    constant = ir.Constant(x.type, limit)
    return em.b.select(em.b.icmp_signed("<", x, constant), x, constant)


def scale_min_k4(em: Emitter, records: Tensor, block: ir.Value, j: ir.Value) -> tuple[ir.Value, ir.Value]:
    """get_scale_min_k4(j) of a Q4_K record: (sc, m) as i32, for a dynamic j in 0..7."""
    b = em.b
    low = b.and_(j, c64(3))
    first, second, third = (byte(em, records, block, b.add(low, c64(Q4_SCALES + 4 * part))) for part in range(3))
    i8c = lambda v: ir.Constant(I8, v)
    sc_low, m_low = b.and_(first, i8c(63)), b.and_(second, i8c(63))
    sc_high = b.or_(b.and_(third, i8c(15)), b.shl(b.lshr(first, i8c(6)), i8c(4)))
    m_high = b.or_(b.lshr(third, i8c(4)), b.shl(b.lshr(second, i8c(6)), i8c(4)))
    upper = b.icmp_unsigned(">=", j, c64(4))
    return (b.zext(b.select(upper, sc_high, sc_low), I32), b.zext(b.select(upper, m_high, m_low), I32))


def q4_nibble(em: Emitter, records: Tensor, block: ir.Value, j: ir.Value, l: ir.Value) -> ir.Value:
    """Level l of sub-block j (j = 2 * chunk + half) as i32."""
    b = em.b
    chunk, half = b.lshr(j, c64(1)), b.and_(j, c64(1))
    packed = byte(em, records, block, b.add(b.add(b.mul(chunk, c64(32)), l), c64(Q4_QS)))
    shift = b.trunc(b.shl(half, c64(2)), I8)
    return b.zext(b.and_(b.lshr(packed, shift), ir.Constant(I8, 15)), I32)


# ---- Q8_K ------------------------------------------------------------------------------------------
def quantize_q8_k(em: Emitter, x: Tensor, blocks: ir.Value) -> Memory:
    """quantize_row_q8_K_ref on each row of x [B, 256] f32."""
    out, finish = em.hooks.shared_temporary(em, "u8", (blocks, c64(Q8_K_BYTES)))
    b = em.b

    def block(blk):
        amax, peak = Slot(em, F32, -1.0), Slot(em, F32, 0.0)

        def scan(i):
            value = x.at(em, [blk, i])
            magnitude, best = em.call_intrinsic("fabs", value), amax.get()
            nan_first = b.and_(b.fcmp_unordered("uno", magnitude, magnitude), b.fcmp_ordered("ord", best, best))
            take = b.or_(b.fcmp_ordered(">", magnitude, best), nan_first)   # np.argmax: first max, NaN wins
            amax.set(b.select(take, magnitude, best))
            peak.set(b.select(take, value, peak.get()))
        count_loop(em, QK_K, scan)
        iscale = b.fdiv(f32c(-127.0), peak.get())
        empty = b.not_(b.fcmp_ordered(">", amax.get(), f32c(0.0)))
        d = b.select(empty, f32c(0.0), b.fdiv(f32c(1.0), iscale))
        put_le(em, out, blk, 0, em.hooks.float_bits(em, d))

        def group(g):
            total = Slot(em, I32, 0)

            def member(l):
                i = b.add(b.mul(g, c64(16)), l)
                level = imin(em, nearest_int(em, b.fmul(iscale, x.at(em, [blk, i]))), 127)
                q = b.trunc(b.select(empty, ir.Constant(I32, 0), level), I8)
                b.store(q, out.address(em, [blk, b.add(i, c64(Q8_QS))]))
                total.set(b.add(total.get(), b.sext(q, I32)))
            count_loop(em, 16, member)
            put_le(em, out, blk, b.add(b.mul(g, c64(2)), c64(Q8_BSUMS)), b.trunc(total.get(), I16))
        count_loop(em, QK_K // 16, group)
    em.for_each((blocks,), lambda idx: block(idx[0]))
    finish()
    return out


def dequantize_q8_k(em: Emitter, q: Tensor, blocks: ir.Value) -> Lazy:
    def at(e, idx):
        blk, i = idx
        level = e.b.sitofp(byte(e, q, blk, e.b.add(i, c64(Q8_QS))), F32)
        return e.b.fmul(f32_field(e, q, blk, 0), level)
    return Lazy("f32", (blocks, c64(QK_K)), at, costly=True)


# ---- Q4_K ------------------------------------------------------------------------------------------
def dequantize_q4_k(em: Emitter, q: Tensor, blocks: ir.Value) -> Lazy:
    def at(e, idx):
        b = e.b
        blk, i = idx
        j, l = b.lshr(i, c64(5)), b.and_(i, c64(31))
        sc, m = scale_min_k4(e, q, blk, j)
        scale = b.fmul(f16_field(e, q, blk, 0), b.uitofp(sc, F32))
        offset = b.fmul(f16_field(e, q, blk, 2), b.uitofp(m, F32))
        return b.fsub(b.fmul(scale, b.uitofp(q4_nibble(e, q, blk, j, l), F32)), offset)
    return Lazy("f32", (blocks, c64(QK_K)), at, costly=True)


def quantized_dot_q4_k_q8_k(em: Emitter, op: Op, lhs: Tensor, rhs: Tensor) -> Scalar:
    """ggml_vec_dot_q4_K_q8_K's scalar reference: eight f32 lane sums, block after block."""
    b = em.b
    em.check(CheckSite(op, errors.SHAPE_MISMATCH, "quantized_dot: Q4_K and Q8_K block counts differ"),
             b.icmp_unsigned("!=", lhs.shape[0], rhs.shape[0]))
    blocks = b.select(b.icmp_unsigned("<", lhs.shape[0], rhs.shape[0]), lhs.shape[0], rhs.shape[0])
    sums = [Slot(em, F32, 0.0) for _ in range(8)]
    sumf = Slot(em, F32, 0.0)

    def block(blk):
        aux = [Slot(em, I32, 0) for _ in range(8)]
        sumi = Slot(em, I32, 0)

        def sub_block(j):
            sc, m = scale_min_k4(em, lhs, blk, j)
            bsum = ir.Constant(I32, 0)
            for half in range(2):
                offset = b.add(b.mul(j, c64(4)), c64(Q8_BSUMS + 2 * half))
                low, high = byte(em, rhs, blk, offset), byte(em, rhs, blk, b.add(offset, c64(1)))
                word = b.or_(b.zext(low, I16), b.shl(b.zext(high, I16), ir.Constant(I16, 8)))
                bsum = b.add(bsum, b.sext(word, I32))
            sumi.set(b.add(sumi.get(), b.mul(bsum, m)))

            def quarter(t):
                for lane in range(8):
                    l = b.add(b.mul(t, c64(8)), c64(lane))
                    q8 = b.sext(byte(em, rhs, blk, b.add(b.add(b.mul(j, c64(32)), l), c64(Q8_QS))), I32)
                    product = b.mul(q4_nibble(em, lhs, blk, j, l), q8)
                    aux[lane].set(b.add(aux[lane].get(), b.mul(sc, product)))
            count_loop(em, 4, quarter)
        count_loop(em, 8, sub_block)
        d8 = f32_field(em, rhs, blk, 0)
        d = b.fmul(f16_field(em, lhs, blk, 0), d8)
        dmin = b.fmul(f16_field(em, lhs, blk, 2), d8)
        for lane in range(8):
            sums[lane].set(b.fadd(sums[lane].get(), b.fmul(d, b.sitofp(aux[lane].get(), F32))))
        sumf.set(b.fsub(sumf.get(), b.fmul(dmin, b.sitofp(sumi.get(), F32))))
    em.loop(c64(0), blocks, block)
    total = sumf.get()
    for lane in range(8):
        total = b.fadd(total, sums[lane].get())
    return Scalar("f32", (), total)


# ---- ops ---------------------------------------------------------------------------------------------
@LOWERINGS.register("quantize")
def _quantize_op(em, op):
    from .quant_q4k import quantize_q4_k
    (x,) = (_settled(em, em.env[n]) for n in op.operands)
    encoder = {"q8_k": quantize_q8_k, "q4_k": quantize_q4_k}[op.attributes["format"].name]
    return encoder(em, x, x.shape[0])


@LOWERINGS.register("dequantize")
def _dequantize_op(em, op):
    (q,) = (_settled(em, em.env[n]) for n in op.operands)
    decoder = {"q8_k": dequantize_q8_k, "q4_k": dequantize_q4_k}[op.attributes["format"].name]
    return decoder(em, q, q.shape[0])


@LOWERINGS.register("quantized_dot")
def _quantized_dot_op(em, op):
    lhs, rhs = (_settled(em, em.env[n]) for n in op.operands)
    return quantized_dot_q4_k_q8_k(em, op, lhs, rhs)
